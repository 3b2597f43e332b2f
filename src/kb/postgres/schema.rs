//! The tables, created and versioned by this tool.
//!
//! - `bounded_rag_store`: one row, the schema version, the router's description of the
//!   knowledge and the embedding model of the stored vectors (JSON, as in a bundle's manifest);
//! - `bounded_rag_terms`: how many rows hold each word (its document frequency, for BM25's
//!   idf), kept by every write; the store row also keeps the row count and the average length of each kind (passages,
//!   entities, relations: BM25 normalises each against its own kind, as a bundle's fields do);
//! - `bounded_rag_passages`: one row per passage (and per entity, relation or community of a
//!   graph file), keyed by a hash of what it says. A generated full-text column with a GIN
//!   index, a pgvector column with an HNSW index (cosine), the source's metadata as `jsonb` and
//!   normalised for filters (its own GIN index), and a `tenant` column (B-tree index): the
//!   metadata value under the store's tenant key (`KB_TENANT_KEY` when the store was created;
//!   kept in `bounded_rag_store.tenant_key`), when it is a string. A pin on that key is then an
//!   index lookup, and row-level security policies can be written on the column. A tenant of
//!   many rows also gets a vector index of its own ([`tenant_indexes`]), which a pinned hybrid
//!   search uses.
//!
//! Another version than [`VERSION`] is refused with what to do. Put the tables in a schema of
//! their own with the URL's `options=-c search_path=NAME` to keep several knowledge bases in one
//! database.
use super::sql::{Sql, SqlError, SqlValue, Statement};
use crate::knowledge::EmbeddingInfo;

/// The schema this build reads and writes.
pub(crate) const VERSION: i64 = 1;
/// The SQLSTATE of a missing table.
pub(crate) const UNDEFINED_TABLE: &str = "42P01";

/// What the store row says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StoreInfo {
    pub description: Option<String>,
    pub embedding: Option<EmbeddingInfo>,
    /// The metadata key the `tenant` column holds, fixed when the tables were created.
    pub tenant_key: Option<String>,
}

/// Why the tables cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SchemaError {
    /// No tables: nothing was ingested here yet.
    #[error("{store} holds no knowledge base yet: write one with `bounded-rag ingest DIR --out {store}`")]
    Missing { store: String },
    /// Tables of another version.
    #[error("{store} holds knowledge tables of schema version {found}; this build uses version {VERSION}: {advice}")]
    Version {
        store: String,
        found: i64,
        advice: &'static str,
    },
    /// The database failed.
    #[error(transparent)]
    Sql(#[from] SqlError),
}

/// The vector index (cosine), created when missing after every write; a no-op once it exists.
/// Only on a sized vector column: a store without vectors has none.
pub(crate) const VECTOR_INDEX: &str = "DO $$ BEGIN \
    IF (SELECT atttypmod FROM pg_attribute \
        WHERE attrelid = to_regclass('bounded_rag_passages') AND attname = 'embedding') > 0 THEN \
      CREATE INDEX IF NOT EXISTS bounded_rag_passages_embedding ON bounded_rag_passages \
        USING hnsw (embedding vector_cosine_ops); \
    END IF; END $$";

/// The name of a tenant's own vector index, in SQL, of the tenant text `tenant` (an expression):
/// a fixed prefix and a digest, so any tenant value makes a valid, bounded name.
fn tenant_index_name(tenant: &str) -> String {
    format!("'bounded_rag_t_' || left(md5({tenant}), 24)")
}

/// Whether the tenant `$n` (`placeholder`) has a vector index of its own: an uncorrelated
/// subquery, evaluated once per statement.
pub(crate) fn tenant_index_exists(placeholder: &str) -> String {
    format!(
        "(SELECT to_regclass({}) IS NOT NULL)",
        tenant_index_name(&format!("CAST({placeholder} AS text)"))
    )
}

/// Per-tenant vector indexes, brought in line with the rows (run by `restate`): a partial HNSW
/// index (`WHERE tenant = ...`) for every tenant of at least `rows` rows, kept until the tenant
/// falls under half of that (so a tenant near the line is not indexed and dropped by turns),
/// dropped when it does or is gone. `rows` 0: none, and any there are dropped.
///
/// The tenant values are the stored rows', quoted by the database (`format`'s `%L`, the index
/// name's `%I`); no text of this statement comes from outside this crate.
pub(crate) fn tenant_indexes(rows: u64) -> Statement {
    let (create, keep) = match rows {
        0 => (i64::MAX, i64::MAX),
        n => (n as i64, (n as i64 + 1) / 2),
    };
    let name = tenant_index_name("tenants[i]");
    // The tenants and the index names are read into arrays first: an index cannot be created
    // on a table a loop of the same session is still reading.
    Statement::maintenance(format!(
        "DO $$ DECLARE tenants text[]; counts int8[]; drop text[]; keep text[] := '{{}}'; \
          name text; BEGIN \
          IF (SELECT atttypmod FROM pg_attribute \
              WHERE attrelid = to_regclass('bounded_rag_passages') AND attname = 'embedding') > 0 THEN \
            SELECT COALESCE(array_agg(tenant), '{{}}'), COALESCE(array_agg(n), '{{}}') \
              INTO tenants, counts FROM (SELECT tenant, count(*) AS n FROM bounded_rag_passages \
                WHERE tenant IS NOT NULL GROUP BY tenant HAVING count(*) >= {keep}) t; \
            FOR i IN 1 .. COALESCE(array_length(tenants, 1), 0) LOOP \
              name := {name}; \
              IF counts[i] >= {create} THEN \
                EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON bounded_rag_passages \
                  USING hnsw (embedding vector_cosine_ops) WHERE tenant = %L', name, tenants[i]); \
              END IF; \
              keep := keep || name; \
            END LOOP; \
          END IF; \
          SELECT COALESCE(array_agg(c.relname::text), '{{}}') INTO drop \
            FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid \
            WHERE x.indrelid = to_regclass('bounded_rag_passages') \
              AND c.relname LIKE 'bounded\\_rag\\_t\\_%' AND NOT c.relname = ANY(keep); \
          FOR i IN 1 .. COALESCE(array_length(drop, 1), 0) LOOP \
            EXECUTE format('DROP INDEX %I', drop[i]); \
          END LOOP; \
        END $$"
    ))
}

/// Session settings of every connection: pgvector 0.8's iterative index scans, so a filtered
/// or long nearest-neighbour list keeps scanning the HNSW graph until it has its rows, in
/// exact order; and a candidate list of 100 in the graph walk (`hnsw.ef_search`, default 40),
/// twice the 50 nearest a search asks for. With a list shorter than the rows asked for, every
/// search resumed the walk iteratively to fill them: at a million rows that was a p99 of 43 ms
/// for the vector half against 4.8 ms with 100 (BENCHMARKS.md "Tenants at a million
/// passages"). Older pgvector ignores an unknown setting.
pub(crate) const SESSION: &str = "SET hnsw.iterative_scan = strict_order; SET hnsw.ef_search = 100";

/// [`SESSION`] as the database's defaults (its name quoted by the database: `%I`).
/// (A vector cast first loads pgvector, which defines the settings as ones any owner may set.)
const DATABASE_SETTING: &str = "DO $$ BEGIN PERFORM CAST('[1]' AS vector); \
    EXECUTE format('ALTER DATABASE %I SET hnsw.iterative_scan = strict_order', current_database()); \
    EXECUTE format('ALTER DATABASE %I SET hnsw.ef_search = 100', current_database()); END $$";

/// Reads the store row, checking the version.
pub(crate) async fn read(sql: &dyn Sql) -> Result<StoreInfo, SchemaError> {
    let rows = match sql
        .query(&Statement::new(
            "SELECT CAST(schema_version AS int8), description, CAST(embedding AS text), \
             tenant_key FROM bounded_rag_store",
            vec![],
        ))
        .await
    {
        Err(e) if e.code.as_deref() == Some(UNDEFINED_TABLE) => {
            return Err(SchemaError::Missing {
                store: sql.name().to_owned(),
            })
        }
        other => other?,
    };
    let Some(row) = rows.first() else {
        return Err(SchemaError::Missing {
            store: sql.name().to_owned(),
        });
    };
    let found = row.first().and_then(SqlValue::int).unwrap_or(0);
    if found != VERSION {
        return Err(SchemaError::Version {
            store: sql.name().to_owned(),
            found,
            advice: if found > VERSION {
                "it was written by a newer bounded-rag; upgrade this one"
            } else {
                "re-ingest into an empty database or schema (`ingest DIR --out URL`) to migrate"
            },
        });
    }
    let embedding = row
        .get(2)
        .and_then(SqlValue::text)
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| SqlError::permanent(format!("bounded_rag_store.embedding: {e}")))?;
    Ok(StoreInfo {
        description: row.get(1).and_then(SqlValue::text).map(str::to_owned),
        embedding,
        tenant_key: row.get(3).and_then(SqlValue::text).map(str::to_owned),
    })
}

/// Creates the tables when missing (vector column sized for `dimensions`, the `tenant` column
/// holding `tenant_key`'s values), then checks the version, that stored vectors, if any, are of
/// the same model and size, and that a tenant key asked for is the store's.
pub(crate) async fn ensure(
    sql: &dyn Sql,
    embedding: Option<&EmbeddingInfo>,
    tenant_key: Option<&str>,
) -> Result<StoreInfo, SchemaError> {
    match read(sql).await {
        Ok(info) => {
            if let Some(want) = tenant_key.filter(|k| info.tenant_key.as_deref() != Some(k)) {
                return Err(SchemaError::Sql(SqlError::permanent(format!(
                    "{} keeps tenants under {}; KB_TENANT_KEY is {want}: write with the store's \
                     key, or re-ingest into an empty database or schema to change it",
                    sql.name(),
                    info.tenant_key
                        .as_deref()
                        .map_or_else(|| "no key".to_owned(), |k| format!("`{k}`")),
                ))));
            }
            if let (Some(have), Some(want)) = (&info.embedding, embedding) {
                if have.model != want.model || have.dimensions != want.dimensions {
                    return Err(SchemaError::Sql(SqlError::permanent(format!(
                        "{} holds vectors of {} ({} dimensions); this ingest embeds with {} ({}): \
                         re-ingest into an empty database or schema",
                        sql.name(),
                        have.model,
                        have.dimensions,
                        want.model,
                        want.dimensions
                    ))));
                }
            }
            return Ok(info);
        }
        Err(SchemaError::Missing { .. }) => {}
        Err(e) => return Err(e),
    }
    // The vector size is a number of this crate, not text from anywhere.
    let vector = match embedding {
        Some(e) => format!("vector({})", e.dimensions),
        None => "vector".to_owned(),
    };
    let ddl = vec![
        "CREATE EXTENSION IF NOT EXISTS vector".to_owned(),
        "CREATE TABLE IF NOT EXISTS bounded_rag_store (\
           singleton bool PRIMARY KEY DEFAULT true CHECK (singleton), \
           schema_version int NOT NULL, \
           description text, \
           embedding jsonb, \
           tenant_key text, \
           passages int8 NOT NULL DEFAULT 0, \
           avg_lengths jsonb NOT NULL DEFAULT '{}', \
           updated_at timestamptz NOT NULL DEFAULT now())"
            .to_owned(),
        "CREATE TABLE IF NOT EXISTS bounded_rag_terms (\
           lexeme text PRIMARY KEY, \
           df int8 NOT NULL)"
            .to_owned(),
        format!(
            "CREATE TABLE IF NOT EXISTS bounded_rag_passages (\
               hash text PRIMARY KEY, \
               document text NOT NULL, \
               position int NOT NULL, \
               kind text NOT NULL, \
               id text NOT NULL, \
               title text NOT NULL, \
               url text NOT NULL, \
               content text NOT NULL, \
               meta jsonb NOT NULL DEFAULT '{{}}', \
               meta_norm jsonb NOT NULL DEFAULT '{{}}', \
               tenant text, \
               tsv tsvector GENERATED ALWAYS AS (\
                 setweight(to_tsvector('english', title), 'A') || \
                 to_tsvector('english', content)) STORED, \
               embedding {vector})"
        ),
        "CREATE INDEX IF NOT EXISTS bounded_rag_passages_tsv ON bounded_rag_passages USING gin (tsv)"
            .to_owned(),
        "CREATE INDEX IF NOT EXISTS bounded_rag_passages_meta ON bounded_rag_passages \
         USING gin (meta_norm jsonb_path_ops)"
            .to_owned(),
        "CREATE INDEX IF NOT EXISTS bounded_rag_passages_document ON bounded_rag_passages (document)"
            .to_owned(),
        "CREATE INDEX IF NOT EXISTS bounded_rag_passages_tenant ON bounded_rag_passages (tenant)"
            .to_owned(),
        // The graph items, for the neighbours of a matched entity (`graph.rs`).
        "CREATE INDEX IF NOT EXISTS bounded_rag_passages_graph ON bounded_rag_passages (kind) \
         WHERE kind <> 'episode'"
            .to_owned(),
    ];
    // The HNSW index comes after the first load ([`VECTOR_INDEX`], run by `restate`): built
    // once over the rows, it is several times faster than kept up row by row.
    let mut statements: Vec<Statement> =
        ddl.into_iter().map(|s| Statement::new(s, vec![])).collect();
    statements.push(Statement::new(
        "INSERT INTO bounded_rag_store (schema_version, embedding, tenant_key) \
         VALUES (CAST($1 AS int), CAST($2 AS jsonb), CAST($3 AS text)) \
         ON CONFLICT (singleton) DO NOTHING",
        vec![
            SqlValue::Int(VERSION),
            match embedding {
                Some(e) => SqlValue::Text(serde_json::to_string(e).expect("serializes")),
                None => SqlValue::Null,
            },
            tenant_key.map_or(SqlValue::Null, SqlValue::from),
        ],
    ));
    sql.transaction(&statements).await?;
    // The Data API keeps no session: the setting goes on the database, for every connection
    // (the owner may; another user's warning says what the searches miss).
    if let Err(e) = sql.query(&Statement::new(DATABASE_SETTING, vec![])).await {
        tracing::warn!(error = %e, "could not set pgvector's search settings for the database; \
            filtered vector searches may return fewer rows, and long ones take longer");
    }
    read(sql).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The candidate list of a connection and of the database is one number, at least the
    /// nearest a search asks for (below it every search resumes the graph walk).
    #[test]
    fn the_candidate_list_is_the_same_everywhere_and_covers_a_search() {
        let of = |text: &str| -> usize {
            let at = text.find("hnsw.ef_search = ").expect("set") + "hnsw.ef_search = ".len();
            text[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert_eq!(of(SESSION), of(DATABASE_SETTING));
        assert!(of(SESSION) >= super::super::CANDIDATES);
    }
}
