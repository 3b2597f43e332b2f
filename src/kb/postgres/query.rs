//! The two searches as statements: full text alone, and the full-text and nearest-vector
//! candidates side by side (fused in Rust, by the bundle's fusion), both in one round trip. Filters come in as a
//! [`Condition`] on `p`; the query, the kinds, the vector and the limit are parameters.
//!
//! Full text ranks by BM25 computed in SQL ([`RANK`]): the inverse document frequencies come
//! from `bounded_rag_terms`, kept by every write, the length norm from the store's average.
use super::filter_sql::{condition, Condition};
use super::schema;
use super::sql::{SqlValue, Statement};
use crate::knowledge::DocKind;
use crate::search::Filter;
use crate::search::RetrievalOptions;

/// The selected columns, in order, of both statements.
pub(crate) mod col {
    pub const ID: usize = 0;
    pub const TITLE: usize = 1;
    pub const URL: usize = 2;
    pub const CONTENT: usize = 3;
    pub const KIND: usize = 4;
    pub const DOCUMENT: usize = 5;
    pub const SCORE: usize = 6;
    /// Hybrid only: rank in the full-text list and in the vector list (from 1; null when not
    /// in it), the full-text score and the cosine similarity to the query vector.
    pub const FTS_RANK: usize = 7;
    pub const VEC_RANK: usize = 8;
    pub const FTS_SCORE: usize = 9;
    pub const VEC_SCORE: usize = 10;
}

/// The query's terms and the full-text query that finds candidates.
///
/// `terms`: each distinct lexeme of `$1` (English stemming, stop words dropped, as the stored
/// column), as a one-lexeme `tsquery` (quoted by the database's own tsvector output), with its
/// BM25 inverse document frequency from `bounded_rag_terms` and the store's row count. `q`:
/// the OR of the rarest terms, taken by ascending document frequency while the rows they hold
/// add up to at most 5,000 (`CANDIDATE_ROWS`; the rarest always), so a query's candidates stay few on a
/// large store: a passage that holds only the query's common words scores too low to rank.
/// Below that many rows every term is a candidate term, and the ranking is exact BM25.
const QUERY: &str = "stats AS (SELECT GREATEST(CAST(passages AS float8), 1) AS n, \
       avg_lengths FROM bounded_rag_store), \
     words AS (SELECT DISTINCT lexeme FROM \
       unnest(tsvector_to_array(to_tsvector('english', CAST($1 AS text)))) AS lexeme), \
     terms AS (SELECT CAST(CAST(array_to_tsvector(ARRAY[w.lexeme]) AS text) AS tsquery) AS q, \
       ln(1 + (s.n - COALESCE(t.df, 0) + 0.5) / (COALESCE(t.df, 0) + 0.5)) AS idf, \
       (sum(COALESCE(t.df, 0)) OVER (ORDER BY COALESCE(t.df, 0), w.lexeme) <= 5000 \
         OR sum(COALESCE(t.df, 0)) OVER (ORDER BY COALESCE(t.df, 0), w.lexeme) = COALESCE(t.df, 0)) \
         AS rare \
       FROM words w CROSS JOIN stats s LEFT JOIN bounded_rag_terms t ON t.lexeme = w.lexeme), \
     q AS (SELECT COALESCE(\
       (SELECT CAST(string_agg(CAST(q AS text), ' | ') AS tsquery) FROM terms WHERE rare), \
       (SELECT CAST(string_agg(CAST(q AS text), ' | ') AS tsquery) FROM terms), \
       CAST('' AS tsquery)) AS query)";
/// The candidate-term budget of [`QUERY`], in rows (written out in its text; a test keeps the
/// two equal).
#[cfg(test)]
const CANDIDATE_ROWS: usize = 5_000;
/// The kinds searched: `$2`, a JSON array.
const KINDS: &str = "p.kind IN (SELECT jsonb_array_elements_text(CAST($2 AS jsonb)))";
/// BM25 with each term counted once per passage (k1 1.2, b 0.75): the sum of the idf of the
/// query's terms the passage holds, damped by its length against the average of its kind
/// (a relation of five words is not a better match than a passage for being short). Term counts
/// within one passage of a few hundred words matter little next to which terms it holds.
const RANK: &str = "((SELECT COALESCE(sum(t.idf), 0) FROM terms t WHERE p.tsv @@ t.q) \
     * 2.2 / (1 + 1.2 * (0.25 + 0.75 * length(p.tsv) / \
       GREATEST(CAST((SELECT avg_lengths FROM stats) ->> p.kind AS float8), 1))))";

/// The kinds `options` searches, as stored.
fn kinds(options: &RetrievalOptions) -> String {
    let mut kinds = Vec::new();
    for (on, kind) in [
        (options.episodes, DocKind::Episode),
        (options.nodes, DocKind::Node),
        (options.edges, DocKind::Edge),
        (options.communities, DocKind::Community),
    ] {
        if on {
            kinds.push(kind_name(kind));
        }
    }
    serde_json::to_string(&kinds).expect("serializes")
}

/// A kind as the `kind` column stores it.
pub(crate) fn kind_name(kind: DocKind) -> &'static str {
    match kind {
        DocKind::Episode => "episode",
        DocKind::Node => "node",
        DocKind::Edge => "edge",
        DocKind::Community => "community",
        DocKind::Web => "web",
    }
}

/// ` AND (filter)` with its parameters numbered after `already`, or nothing (`tenant_key`: the
/// store's, see [`condition`]).
pub(crate) fn filtered(
    filter: Option<&Filter>,
    already: usize,
    tenant_key: Option<&str>,
) -> Condition {
    match filter {
        Some(f) => {
            let mut c = condition(f, already, tenant_key);
            c.sql = format!(" AND {}", c.sql);
            c
        }
        None => Condition {
            sql: String::new(),
            params: Vec::new(),
            tenant: None,
        },
    }
}

/// The best `candidates` by full text.
pub(crate) fn fulltext(
    query: &str,
    options: &RetrievalOptions,
    candidates: usize,
    tenant_key: Option<&str>,
) -> Statement {
    let filter = filtered(options.filter.as_ref(), 3, tenant_key);
    let sql = format!(
        "WITH {QUERY} \
         SELECT p.id, p.title, p.url, p.content, p.kind, p.document, CAST({RANK} AS float8) AS score \
         FROM bounded_rag_passages p, q \
         WHERE p.tsv @@ q.query AND {KINDS}{filter} \
         ORDER BY score DESC, p.hash LIMIT CAST($3 AS int8)",
        filter = filter.sql
    );
    let mut params = vec![
        SqlValue::from(query),
        SqlValue::Text(kinds(options)),
        SqlValue::Int(candidates as i64),
    ];
    params.extend(filter.params);
    Statement::new(sql, params)
}

/// The candidates of a hybrid search, unfused: the best `candidates` by full text and the
/// `candidates` passages nearest to `vector` (cosine distance), each row with its rank and score
/// in each ranking that holds it; the fusion and the keep rules are the bundle's, in Rust
/// (`super::rank::hybrid`), so no candidate is cut before they see it. The nearest come through
/// the HNSW index, or, for a search pinned to one tenant, through that tenant's own index
/// ([`schema::tenant_indexes`]) or, when it has none, exactly over its rows ([`nearest`]).
pub(crate) fn hybrid(
    query: &str,
    vector: &[f32],
    options: &RetrievalOptions,
    candidates: usize,
    tenant_key: Option<&str>,
) -> Statement {
    let filter = filtered(options.filter.as_ref(), 5, tenant_key);
    let vec = nearest(&filter);
    // The full-text half scores each candidate once, in a subquery kept apart (`OFFSET 0`):
    // written in both the select list and the window's order, BM25 was computed twice per
    // candidate row, the bulk of a slow query's time at a million rows.
    let sql = format!(
        "WITH {QUERY}, \
         fts AS (SELECT hash, s, row_number() OVER (ORDER BY s DESC, hash) AS r FROM (\
                   SELECT p.hash, CAST({RANK} AS float8) AS s \
                   FROM bounded_rag_passages p, q \
                   WHERE p.tsv @@ q.query AND {KINDS}{filter} OFFSET 0) scored \
                 ORDER BY r LIMIT CAST($3 AS int8)), \
         vec AS ({vec}) \
         SELECT p.id, p.title, p.url, p.content, p.kind, p.document, \
           CAST(COALESCE(fts.s, 0) AS float8) AS score, \
           CAST(fts.r AS int8), CAST(vec.r AS int8), fts.s, CAST(1 - vec.d AS float8) \
         FROM fts FULL OUTER JOIN vec ON fts.hash = vec.hash \
         JOIN bounded_rag_passages p ON p.hash = COALESCE(fts.hash, vec.hash) \
         ORDER BY fts.r NULLS LAST, vec.r, p.hash",
        filter = filter.sql
    );
    let mut params = vec![
        SqlValue::from(query),
        SqlValue::Text(kinds(options)),
        SqlValue::Int(candidates as i64),
        SqlValue::Text(vector_text(vector)),
        SqlValue::Bool(options.episodes),
    ];
    params.extend(filter.params);
    Statement::new(sql, params)
}

/// The query of the vector ranking: `(hash, d, r)` of the `$3` passages nearest to `$4` (`d`
/// the cosine distance, `r` the rank from 1).
///
/// Unpinned, the HNSW index over every row. Pinned to a tenant (`filter.tenant`), one of two
/// branches runs, chosen once per statement by whether the tenant has an index of its own: the
/// same ordering, which the planner serves from the tenant's partial HNSW index (its predicate
/// is implied by the pin), or the exact distance over the tenant's rows (`cosine_distance`, a
/// function no index serves, so the rows come from the `tenant` B-tree). Walking the whole
/// graph and dropping other tenants' rows is what made a pinned search slow (BENCHMARKS.md).
fn nearest(filter: &Condition) -> String {
    const ROWS: &str = "FROM bounded_rag_passages p \
        WHERE CAST($5 AS bool) AND p.kind = 'episode' AND p.embedding IS NOT NULL";
    const TO: &str = "CAST(CAST($4 AS text) AS vector)";
    let Some(tenant) = &filter.tenant else {
        return format!(
            "SELECT hash, d, row_number() OVER (ORDER BY d, hash) AS r FROM (\
               SELECT p.hash, p.embedding <=> {TO} AS d {ROWS}{filter} \
               ORDER BY p.embedding <=> {TO} LIMIT CAST($3 AS int8)) nearest",
            filter = filter.sql
        );
    };
    let indexed = schema::tenant_index_exists(tenant);
    format!(
        "SELECT hash, d, row_number() OVER (ORDER BY d, hash) AS r FROM (\
           (SELECT p.hash, p.embedding <=> {TO} AS d {ROWS}{filter} AND {indexed} \
            ORDER BY p.embedding <=> {TO} LIMIT CAST($3 AS int8)) \
           UNION ALL \
           (SELECT p.hash, cosine_distance(p.embedding, {TO}) AS d {ROWS}{filter} AND NOT {indexed} \
            ORDER BY cosine_distance(p.embedding, {TO}) LIMIT CAST($3 AS int8))) nearest",
        filter = filter.sql
    )
}

/// A vector as pgvector reads it: `[0.1,0.2,...]`.
pub(crate) fn vector_text(vector: &[f32]) -> String {
    let mut out = String::with_capacity(vector.len() * 10 + 2);
    out.push('[');
    for (i, x) in vector.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&x.to_string());
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_candidate_budget_is_the_one_in_the_statement() {
        assert!(QUERY.contains(&format!("<= {CANDIDATE_ROWS} ")));
    }

    #[test]
    fn user_text_is_a_parameter_of_both_statements() {
        let hostile = "x'); DROP TABLE bounded_rag_passages; --";
        let options = RetrievalOptions::default();
        for statement in [
            fulltext(hostile, &options, 10, Some(hostile)),
            hybrid(hostile, &[0.5, 0.5], &options, 10, Some(hostile)),
        ] {
            assert!(!statement.sql.contains("DROP"));
            assert_eq!(statement.params[0], SqlValue::Text(hostile.into()));
        }
    }
}
