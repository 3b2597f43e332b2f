//! The rows of a search statement ranked into the documents a request gets, with how each
//! ranked: full text alone ([`fulltext`]), or the full-text and vector candidates the hybrid
//! statement returns, unfused, fused here by the bundle's own fusion and keep rules
//! (`search::hybrid`) so the two stores rank the same candidates alike ([`hybrid`]).
use super::query::col;
use super::sql::{Row, SqlValue};
use crate::kb::retriever::Explained;
use crate::knowledge::{DocKind, Document};
use crate::search::per_source;
use crate::search::source_key;
use crate::search::Ranking;
use crate::search::RetrievalError;
use crate::search::{clear_lead, fuse, near_sources, rank_of};

/// The documents of full-text `rows` (best first): capped per source document to `limit`, the
/// first a clear match when it leads the best hit of another document clearly.
pub(crate) fn fulltext(
    rows: &[Row],
    limit: usize,
    max_per_document: usize,
) -> Result<Vec<Explained>, RetrievalError> {
    let mut ranked = Vec::with_capacity(rows.len());
    for row in rows {
        ranked.push(document(row)?);
    }
    let hits: Vec<(usize, f32)> = ranked
        .iter()
        .enumerate()
        .map(|(i, (d, _))| (i, d.score))
        .collect();
    let lead = clear_lead(&hits, |i| ranked[i].1);
    let kept = per_source(0..ranked.len(), |i| ranked[*i].1, max_per_document, limit);
    Ok(kept
        .into_iter()
        .zip(1..)
        .map(|(i, rank)| {
            let mut doc = ranked[i].0.clone();
            doc.clear_match = lead == Some(i);
            Explained {
                ranking: Some(Ranking::bm25(rank, doc.score)),
                document: doc,
            }
        })
        .collect())
}

/// The hybrid statement's candidate rows (each in the full-text ranking, the vector ranking or
/// both, with its rank and score in each): fused, at most `limit` of them, capped per source
/// document, the leads kept. Also returns the entities among the full-text candidates, by
/// their full-text rank (the graph's seeds).
pub(crate) fn hybrid(
    rows: &[Row],
    limit: usize,
    max_per_document: usize,
) -> Result<(Vec<Explained>, Vec<crate::knowledge::Document>), RetrievalError> {
    let mut docs = Vec::with_capacity(rows.len());
    let mut bm25: Vec<(i64, usize, f32)> = Vec::new();
    let mut vector: Vec<(i64, usize, f32)> = Vec::new();
    let mut entities = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let (doc, source) = document(row)?;
        let float = |c: usize| row.get(c).and_then(SqlValue::float).unwrap_or(0.0) as f32;
        if let Some(r) = row.get(col::FTS_RANK).and_then(SqlValue::int) {
            bm25.push((r, i, float(col::FTS_SCORE)));
            if doc.kind == DocKind::Node {
                entities.push((r, doc.clone()));
            }
        }
        if let Some(r) = row.get(col::VEC_RANK).and_then(SqlValue::int) {
            vector.push((r, i, float(col::VEC_SCORE)));
        }
        docs.push((doc, source));
    }
    let ranking = |mut list: Vec<(i64, usize, f32)>| -> Vec<(usize, f32)> {
        list.sort_by_key(|(r, i, _)| (*r, *i));
        list.into_iter().map(|(_, i, s)| (i, s)).collect()
    };
    let (bm25, vector) = (ranking(bm25), ranking(vector));
    let near = near_sources(
        vector
            .iter()
            .filter(|(i, _)| docs[*i].0.kind == DocKind::Episode)
            .map(|(i, _)| docs[*i].1),
    );
    let fusion = fuse(&bm25, &vector, |i| docs[i].1);
    let direct = fusion
        .select(limit, max_per_document)
        .into_iter()
        .map(|s| {
            let (doc, source) = &docs[s.candidate.key];
            let mut doc = doc.clone();
            doc.score = s.candidate.score;
            doc.clear_match = s.candidate.clear;
            doc.vector_rank = rank_of(&near, *source).filter(|_| doc.kind == DocKind::Episode);
            Explained {
                ranking: Some(s.ranking(&fusion)),
                document: doc,
            }
        })
        .collect();
    entities.sort_by_key(|(r, _)| *r);
    Ok((direct, entities.into_iter().map(|(_, d)| d).collect()))
}

/// A result row as a document and its source key.
pub(super) fn document(row: &Row) -> Result<(Document, u64), RetrievalError> {
    let text = |i: usize| {
        row.get(i)
            .and_then(SqlValue::text)
            .unwrap_or_default()
            .to_owned()
    };
    let kind = match row.get(col::KIND).and_then(SqlValue::text) {
        Some("episode") => DocKind::Episode,
        Some("node") => DocKind::Node,
        Some("edge") => DocKind::Edge,
        Some("community") => DocKind::Community,
        other => {
            return Err(RetrievalError::Store {
                store: "postgres".into(),
                message: format!("a passage of unknown kind {other:?}"),
                class: crate::error::ErrorClass::Permanent,
            })
        }
    };
    let id = text(col::ID);
    // Passages are capped per source document; graph items each stand alone.
    let source = match kind {
        DocKind::Episode => source_key(&text(col::DOCUMENT)),
        _ => source_key(&id),
    };
    let doc = Document {
        id,
        title: text(col::TITLE),
        url: text(col::URL),
        content: text(col::CONTENT),
        score: row.get(col::SCORE).and_then(SqlValue::float).unwrap_or(0.0) as f32,
        kind,
        clear_match: false,
        from_graph: false,
        vector_rank: None,
    };
    Ok((doc, source))
}

#[cfg(test)]
mod properties {
    //! The promises of `search::hybrid`'s keep rules, over rows as the hybrid statement returns
    //! them (full-text rank and score, vector rank and similarity, nulls where a ranking does
    //! not hold a row), in the order it returns them: generated rankings, limits and caps.
    use super::*;
    use crate::search::hybrid::properties::{case, check, Case};
    use proptest::prelude::*;

    /// The statement's rows for `case`: one per candidate, BM25's first, then the vectors' own.
    fn rows(case: &Case) -> Vec<Row> {
        let mut keys: Vec<u32> = case.bm25.iter().map(|h| h.0).collect();
        for (key, _) in &case.vector {
            if !keys.contains(key) {
                keys.push(*key);
            }
        }
        keys.iter()
            .map(|key| {
                let place = |list: &[(u32, f32)]| {
                    let at = list.iter().position(|h| h.0 == *key)?;
                    Some((at as i64 + 1, f64::from(list[at].1)))
                };
                let (fts, vec) = (place(&case.bm25), place(&case.vector));
                let or_null = |v: Option<SqlValue>| v.unwrap_or(SqlValue::Null);
                vec![
                    SqlValue::Text(key.to_string()),
                    SqlValue::Text(format!("Passage {key}")),
                    SqlValue::Text(format!("kb://doc{}.md#{key}", case.source(*key))),
                    SqlValue::Text(format!("text of passage {key}")),
                    SqlValue::Text("episode".into()),
                    SqlValue::Text(format!("doc{}.md", case.source(*key))),
                    SqlValue::Float(fts.map_or(0.0, |f| f.1)),
                    or_null(fts.map(|f| SqlValue::Int(f.0))),
                    or_null(vec.map(|v| SqlValue::Int(v.0))),
                    or_null(fts.map(|f| SqlValue::Float(f.1))),
                    or_null(vec.map(|v| SqlValue::Float(v.1))),
                ]
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn the_statements_rows_keep_both_leads(case in case()) {
            let (found, _) = hybrid(&rows(&case), case.limit, case.cap).unwrap();
            let kept: Vec<u32> = found.iter().map(|e| e.document.id.parse().unwrap()).collect();
            if let Err(broken) = check(&case, &kept) {
                return Err(TestCaseError::fail(broken));
            }
            // Each kept row says which rule kept it, and its clear flag is the fusion's.
            for e in &found {
                let ranking = e.ranking.as_ref().unwrap();
                prop_assert!(ranking.rank.is_some() && ranking.weights.is_some());
                prop_assert!((ranking.score - e.document.score).abs() < 1e-9);
            }
        }
    }
}
