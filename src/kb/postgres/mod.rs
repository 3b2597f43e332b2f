//! PostgreSQL with pgvector as the knowledge store (`KB_URI=postgres://...` or
//! `rds-data://...`): the passages live in the database, so a function holds none of them in
//! memory and a knowledge base can grow past what one function could load.
//!
//! Both transports ([`direct`], [`data_api`]) run the same statements ([`query`]) behind one
//! seam ([`sql::Sql`]). A search is one statement: full text, or full text fused with the
//! nearest vectors by reciprocal rank fusion, filtered in SQL ([`filter`]), then capped per
//! source document and marked for clear matches here, as a bundle does (a clear full-text lead
//! is never ranked out by the fusion, nor is the vector ranking's first: [`keep_leads`]). When
//! the hits hold an entity of a graph file, one more statement reads its relations and
//! communities ([`neighbours`]), merged in as a bundle merges them.
//!
//! Writing (ingest, sync) is [`write`]'s; the tables are [`schema`]'s.

#[cfg(test)]
mod bench;
mod common;
mod connect;
pub(crate) mod data_api;
pub(crate) mod direct;
mod filter;
mod neighbours;
mod query;
pub(crate) mod schema;
pub(crate) mod sql;
mod tls;
pub(crate) mod write;

use crate::kb::bundle::format::EmbeddingInfo;
use crate::kb::retriever::Retriever;
use crate::search::cap::{per_source, source_key};
use crate::search::document::{DocKind, Document};
use crate::search::hybrid::{
    keep_leads, near_sources, rank_of, CommonDirection, BM25_LEAD, CLEAR_TOP,
};
use crate::search::knowledge_graph::{strong_by_rank, strong_count};
use crate::search::options::RetrievalOptions;
use crate::search::RetrievalError;
use async_trait::async_trait;
pub(crate) use connect::{connect, enable_direct, SqlLocation};
use query::col;
use sql::{Row, SqlValue};
pub(crate) use sql::{Sql, SqlError};
use std::sync::Arc;

/// Longest wait for one statement of a write (ingest or sync: a document's transaction).
pub(crate) const WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Candidates ranked per search, enough to fill the list under the per-document cap (as the
/// bundle's `FUSION_CANDIDATES`).
const CANDIDATES: usize = 50;

/// A knowledge base in PostgreSQL. Built once at init; cheap to call.
pub struct PgKnowledge {
    sql: Arc<dyn Sql>,
    info: schema::StoreInfo,
    max_per_document: usize,
    /// The stored vectors' common direction (hubness correction), when there are vectors.
    common: Option<CommonDirection>,
}

/// A ranked row: the document, its source key, and whether it is a clear match.
#[derive(Clone)]
struct Ranked {
    doc: Document,
    source: u64,
    clear: bool,
}

impl PgKnowledge {
    /// The knowledge base in `sql`: its tables checked, its description and embedding read.
    pub(crate) async fn open(sql: Arc<dyn Sql>) -> Result<Self, RetrievalError> {
        let info = schema::read(sql.as_ref())
            .await
            .map_err(|e| schema_error(sql.name(), e))?;
        let common = match info.embedding {
            Some(_) => common::read(sql.as_ref())
                .await
                .map_err(|e| store_error(sql.name(), e))?,
            None => None,
        };
        Ok(Self {
            sql,
            info,
            max_per_document: crate::config::DEFAULT_MAX_PASSAGES_PER_DOCUMENT,
            common,
        })
    }

    /// Caps the passages of one source document in every result list (0: no cap).
    pub(crate) fn with_max_passages_per_document(mut self, max: usize) -> Self {
        self.max_per_document = max;
        self
    }

    fn error(&self, e: SqlError) -> RetrievalError {
        store_error(self.sql.name(), e)
    }

    /// `direct` with the neighbourhood of `seeds` merged in ([`graph`]); `direct` itself, with
    /// no statement, when no entity matched.
    async fn expanded(
        &self,
        direct: Vec<Document>,
        seeds: &[(String, String)],
        strong: usize,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        if seeds.is_empty() {
            return Ok(direct);
        }
        let statement = neighbours::neighbours(seeds, options, self.info.tenant_key.as_deref());
        let found = self
            .rows(&statement)
            .await?
            .iter()
            .map(|row| document(row).map(|(doc, _)| doc))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(neighbours::merge(direct, found, strong, options.limit))
    }

    async fn rows(&self, statement: &sql::Statement) -> Result<Vec<Row>, RetrievalError> {
        self.sql.query(statement).await.map_err(|e| self.error(e))
    }

    /// The first `limit` of `ranked`, capped per source document, with the `leads` (the clear
    /// full-text lead, the vector ranking's first) kept among them ([`keep_leads`]).
    fn finish(
        &self,
        ranked: Vec<Ranked>,
        leads: impl IntoIterator<Item = Ranked>,
        limit: usize,
    ) -> Vec<Document> {
        let kept = per_source(ranked, |r| r.source, self.max_per_document, limit);
        keep_leads(kept, leads, |r| r.source, limit)
            .into_iter()
            .map(|r| {
                let mut doc = r.doc;
                doc.clear_match = r.clear;
                doc
            })
            .collect()
    }
}

fn store_error(store: &str, e: SqlError) -> RetrievalError {
    RetrievalError::Store {
        store: store.to_owned(),
        message: e.message,
        class: e.class,
    }
}

pub(crate) fn schema_error(store: &str, e: schema::SchemaError) -> RetrievalError {
    match e {
        schema::SchemaError::Sql(e) => store_error(store, e),
        other => RetrievalError::Store {
            store: store.to_owned(),
            message: other.to_string(),
            class: crate::error::ErrorClass::Permanent,
        },
    }
}

/// The source documents of the hybrid rows the vector ranking holds (passages only), in its
/// order.
fn by_vector_rank(rows: &[Row]) -> Vec<u64> {
    let mut ranked: Vec<(i64, u64)> = rows
        .iter()
        .filter_map(|row| {
            let rank = row.get(col::VEC_RANK).and_then(SqlValue::int)?;
            let document = row.get(col::DOCUMENT).and_then(SqlValue::text)?;
            Some((rank, source_key(document)))
        })
        .collect();
    ranked.sort_by_key(|(rank, _)| *rank);
    ranked.into_iter().map(|(_, source)| source).collect()
}

/// A result row as a document and its source key.
fn document(row: &Row) -> Result<(Document, u64), RetrievalError> {
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

#[async_trait]
impl Retriever for PgKnowledge {
    async fn retrieve(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        if options.limit == 0 {
            return Ok(Vec::new());
        }
        let rows = self
            .rows(&query::fulltext(
                query,
                options,
                CANDIDATES.max(options.limit + 1),
                self.info.tenant_key.as_deref(),
            ))
            .await?;
        let mut ranked = Vec::with_capacity(rows.len());
        for row in &rows {
            let (doc, source) = document(row)?;
            ranked.push(Ranked {
                doc,
                source,
                clear: false,
            });
        }
        // The first hit is a clear match when it leads the best hit of another document.
        if let Some(first) = ranked.first() {
            let other = ranked.iter().find(|r| r.source != first.source);
            let lead = other.is_none_or(|o| first.doc.score >= BM25_LEAD * o.doc.score);
            ranked[0].clear = lead;
        }
        let direct = self.finish(ranked, None, options.limit);
        let seeds = neighbours::seeds(&direct, options);
        let strong = strong_count(direct.iter().map(|d| d.score));
        self.expanded(direct, &seeds, strong, options).await
    }

    async fn retrieve_hybrid(
        &self,
        query: &str,
        vector: &[f32],
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        let dims = self.info.embedding.as_ref().map(|e| e.dimensions);
        if dims.is_none() || options.limit == 0 {
            return self.retrieve(query, options).await;
        }
        if dims != Some(vector.len()) {
            return Err(self.error(SqlError::permanent(format!(
                "the query vector has {} dimensions; the stored vectors have {}",
                vector.len(),
                dims.unwrap_or_default()
            ))));
        }
        let adjusted = self.common.as_ref().map(|c| c.adjust(vector));
        let rows = self
            .rows(&query::hybrid(
                query,
                adjusted.as_deref().unwrap_or(vector),
                options,
                CANDIDATES.max(options.limit),
                self.info.tenant_key.as_deref(),
            ))
            .await?;
        let near = near_sources(by_vector_rank(&rows));
        let mut ranked = Vec::with_capacity(rows.len());
        // The first full-text hit when it leads clearly, and the vector ranking's first: never
        // ranked out by the fusion.
        let mut lead_row = None;
        let mut nearest_row = None;
        // The entities among the full-text candidates, by their full-text rank: the seeds.
        let mut entities = Vec::new();
        for row in &rows {
            let (mut doc, source) = document(row)?;
            let rank = |i: usize| row.get(i).and_then(SqlValue::int);
            doc.vector_rank = rank_of(&near, source).filter(|_| doc.kind == DocKind::Episode);
            let top = |r: Option<i64>| r.is_some_and(|r| r <= CLEAR_TOP as i64);
            let fts = rank(col::FTS_RANK);
            if let (Some(r), DocKind::Node) = (fts, doc.kind) {
                entities.push((r, doc.clone()));
            }
            let lead = fts == Some(1)
                && match row.get(col::FTS_SECOND).and_then(SqlValue::float) {
                    None => true,
                    Some(second) => row
                        .get(col::FTS_SCORE)
                        .and_then(SqlValue::float)
                        .is_some_and(|s| s >= f64::from(BM25_LEAD) * second),
                };
            let row = Ranked {
                doc,
                source,
                clear: lead || (top(fts) && top(rank(col::VEC_RANK))),
            };
            if lead {
                lead_row = Some(row.clone());
            }
            if rank(col::VEC_RANK) == Some(1) {
                nearest_row = Some(row.clone());
            }
            ranked.push(row);
        }
        entities.sort_by_key(|(r, _)| *r);
        let seeds = neighbours::seeds(entities.iter().map(|(_, d)| d), options);
        let leads = lead_row.into_iter().chain(nearest_row);
        let direct = self.finish(ranked, leads, options.limit);
        self.expanded(direct, &seeds, strong_by_rank(options.limit), options)
            .await
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn embedding(&self) -> Option<EmbeddingInfo> {
        self.info.embedding.clone()
    }

    fn description(&self) -> Option<String> {
        self.info.description.clone()
    }
}
