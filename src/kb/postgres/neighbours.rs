//! One-hop graph expansion in PostgreSQL, by the bundle's rule ([`crate::search::knowledge_graph`]):
//! the best matched entities' relations, then their communities, merged below the strong direct
//! hits. The graph is read where it lies, by one more statement when a search matched an
//! entity, so it is as current as the rows and no function holds it.
//!
//! A relation's id is `source|relation|target` (entity ids); a community's content ends with
//! `Members: name, name, ...`, its members matched by an entity's name or id as a whole item
//! of that list. Neighbours pass the search's filter like any row (graph items have no
//! metadata, so a tenant pin leaves them out, as in a bundle).
use super::filter_sql::Condition;
use super::query::{filtered, kind_name};
use super::sql::{SqlValue, Statement};
use crate::knowledge::{DocKind, Document};
use crate::search::RetrievalOptions;
use crate::search::SEEDS;
use serde_json::json;
use std::collections::HashSet;

/// The neighbours of the seeds (`$1`: `[{ord, id, title}]`), seed by seed, relations before
/// communities, each in corpus order; `$2` / `$3`: whether relations / communities are searched.
/// The columns are those of a search ([`super::query::col`]); only what they and the filter
/// read is taken from the rows (not their vectors).
const NEIGHBOURS: &str = "WITH s AS (SELECT * FROM jsonb_to_recordset(CAST($1 AS jsonb)) \
       AS s(ord int, id text, title text)), \
     n AS (SELECT p.id, p.title, p.url, p.content, p.kind, p.document, p.position, p.hash, p.meta_norm, p.tenant, s.ord, 0 AS part FROM bounded_rag_passages p JOIN s \
         ON split_part(p.id, '|', 1) = s.id OR regexp_replace(p.id, '^.*[|]', '') = s.id \
       WHERE CAST($2 AS bool) AND p.kind = 'edge' \
       UNION ALL \
       SELECT p.id, p.title, p.url, p.content, p.kind, p.document, p.position, p.hash, p.meta_norm, p.tenant, s.ord, 1 AS part FROM bounded_rag_passages p JOIN s \
         ON strpos(', ' || rtrim(split_part(p.content, E'\\nMembers: ', 2), '.') || ', ', \
              ', ' || s.title || ', ') > 0 \
         OR strpos(', ' || rtrim(split_part(p.content, E'\\nMembers: ', 2), '.') || ', ', \
              ', ' || s.id || ', ') > 0 \
       WHERE CAST($3 AS bool) AND p.kind = 'community') \
     SELECT p.id, p.title, p.url, p.content, p.kind, p.document, CAST(0 AS float8) \
     FROM n p WHERE true";

/// The entities a search expands: the first [`SEEDS`] entities of `matched` (best first), as
/// `(id, title)`; none when entities are not searched.
pub(crate) fn seeds<'a>(
    matched: impl IntoIterator<Item = &'a Document>,
    options: &RetrievalOptions,
) -> Vec<(String, String)> {
    if !options.nodes || !(options.edges || options.communities) {
        return Vec::new();
    }
    matched
        .into_iter()
        .filter(|d| d.kind == DocKind::Node)
        .take(SEEDS)
        .map(|d| (d.id.clone(), d.title.clone()))
        .collect()
}

/// The statement reading the neighbours of `seeds` that pass `options.filter`.
pub(crate) fn neighbours(
    seeds: &[(String, String)],
    options: &RetrievalOptions,
    tenant_key: Option<&str>,
) -> Statement {
    let seeds: Vec<_> = seeds
        .iter()
        .enumerate()
        .map(|(ord, (id, title))| json!({"ord": ord, "id": id, "title": title}))
        .collect();
    let Condition { sql, params, .. } = filtered(options.filter.as_ref(), 3, tenant_key);
    let mut all = vec![
        SqlValue::Text(json!(seeds).to_string()),
        SqlValue::Bool(options.edges),
        SqlValue::Bool(options.communities),
    ];
    all.extend(params);
    Statement::new(
        format!("{NEIGHBOURS}{sql} ORDER BY p.ord, p.part, p.position, p.hash"),
        all,
    )
}

/// `direct` (best first, at most the limit) with `found` neighbours merged in by the rule of
/// [`crate::search::knowledge_graph`]: the first `strong` direct hits, then each neighbour not
/// already listed (scored as the weakest strong hit, marked `from_graph`), then the other
/// direct hits, cut to `limit`.
pub(crate) fn merge(
    direct: Vec<Document>,
    found: Vec<Document>,
    strong: usize,
    limit: usize,
) -> Vec<Document> {
    let key = |d: &Document| (kind_name(d.kind), d.id.clone());
    let mut taken: HashSet<_> = direct.iter().map(key).collect();
    let strong = strong.min(direct.len());
    let floor = strong.checked_sub(1).map_or(0.0, |last| direct[last].score);
    let mut direct = direct.into_iter();
    let mut out: Vec<Document> = direct.by_ref().take(strong).collect();
    for mut doc in found {
        if taken.insert(key(&doc)) {
            doc.score = floor;
            doc.from_graph = true;
            doc.clear_match = false;
            out.push(doc);
        }
    }
    out.extend(direct);
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::fixtures::{all, doc};

    fn scored(id: &str, kind: DocKind, score: f32) -> Document {
        let mut d = doc(id, id, "text", kind);
        d.score = score;
        d
    }

    #[test]
    fn neighbours_follow_the_strong_hits_once_and_the_list_keeps_its_limit() {
        let direct = vec![
            scored("a", DocKind::Node, 10.0),
            scored("p1", DocKind::Episode, 9.0),
            scored("p2", DocKind::Episode, 1.0),
        ];
        let found = vec![
            scored("a|r|b", DocKind::Edge, 0.0),
            scored("a|r|b", DocKind::Edge, 0.0),
            scored("c", DocKind::Community, 0.0),
        ];
        let merged = merge(direct.clone(), found.clone(), 2, 10);
        let ids: Vec<(&str, bool, f32)> = merged
            .iter()
            .map(|d| (d.id.as_str(), d.from_graph, d.score))
            .collect();
        assert_eq!(
            ids,
            [
                ("a", false, 10.0),
                ("p1", false, 9.0),
                ("a|r|b", true, 9.0),
                ("c", true, 9.0),
                ("p2", false, 1.0)
            ]
        );
        assert_eq!(merge(direct, found, 2, 3).len(), 3);
    }

    #[test]
    fn seeds_are_the_best_entities_when_entities_are_searched() {
        let hits = [
            scored("p1", DocKind::Episode, 9.0),
            scored("a", DocKind::Node, 8.0),
            scored("b", DocKind::Node, 7.0),
            scored("c", DocKind::Node, 6.0),
        ];
        let ids: Vec<String> = seeds(&hits, &all(5)).into_iter().map(|s| s.0).collect();
        assert_eq!(ids, ["a", "b"]);
        let no_nodes = RetrievalOptions {
            nodes: false,
            ..all(5)
        };
        assert!(seeds(&hits, &no_nodes).is_empty());
    }

    #[test]
    fn seeds_and_the_filter_are_parameters() {
        let hostile = "x'); DROP TABLE bounded_rag_passages; --";
        let seeds = vec![(hostile.to_owned(), hostile.to_owned())];
        let options = RetrievalOptions {
            filter: Some(crate::search::Filter::equals(hostile, hostile)),
            ..all(5)
        };
        let statement = neighbours(&seeds, &options, None);
        assert!(!statement.sql.contains("DROP"), "{}", statement.sql);
        assert!(statement.sql.contains("$4"), "{}", statement.sql);
    }
}
