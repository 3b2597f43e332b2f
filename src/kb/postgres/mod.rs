//! PostgreSQL with pgvector as the knowledge store (`KB_URI=postgres://...` or
//! `rds-data://...`): the passages live in the database, so a function holds none of them in
//! memory and a knowledge base can grow past what one function could load.
//!
//! Both transports ([`direct`], [`data_api`]) run the same statements ([`query`]) behind one
//! seam ([`sql::Sql`]). A search is one statement: full text, or full text fused with the
//! nearest vectors' candidates side by side, filtered in SQL ([`filter_sql`]), then fused, capped per
//! source document and marked for clear matches by the bundle's own fusion and keep rules
//! ([`rank`]: a clear full-text lead is never ranked out, nor is the vector ranking's first). When
//! the hits hold an entity of a graph file, one more statement reads its relations and
//! communities ([`neighbours`]), merged in as a bundle merges them.
//!
//! Writing (ingest, sync) goes through [`PgMirror`] (`mirror`), whose rows are [`write`]'s;
//! the tables are [`schema`]'s.

#[cfg(test)]
mod bench;
mod common;
mod connect;
pub(crate) mod data_api;
pub(crate) mod direct;
mod filter_sql;
mod mirror;
mod neighbours;
mod query;
mod rank;
pub(crate) mod schema;
pub(crate) mod sql;
mod tls;
pub(crate) mod write;

use crate::kb::retriever::{Explained, Retriever};
use crate::knowledge::Document;
use crate::knowledge::EmbeddingInfo;
use crate::search::CommonDirection;
use crate::search::Ranking;
use crate::search::RetrievalError;
use crate::search::RetrievalOptions;
use crate::search::{strong_by_rank, strong_count};
use async_trait::async_trait;
pub(crate) use connect::{connect, enable_direct, SqlLocation};
pub(crate) use mirror::PgMirror;
use sql::Row;
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
            .map(|row| rank::document(row).map(|(doc, _)| doc))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(neighbours::merge(direct, found, strong, options.limit))
    }

    async fn rows(&self, statement: &sql::Statement) -> Result<Vec<Row>, RetrievalError> {
        self.sql.query(statement).await.map_err(|e| self.error(e))
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

impl PgKnowledge {
    /// A full-text search (`vector` `None`, or a store without vectors) or a hybrid one, each
    /// document with how it ranked; graph neighbours merged in.
    async fn search(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        options: &RetrievalOptions,
    ) -> Result<Vec<Explained>, RetrievalError> {
        if options.limit == 0 {
            return Ok(Vec::new());
        }
        let dims = self.info.embedding.as_ref().map(|e| e.dimensions);
        let (direct, seeds, strong) = match vector.filter(|_| dims.is_some()) {
            None => {
                let rows = self
                    .rows(&query::fulltext(
                        query,
                        options,
                        CANDIDATES.max(options.limit + 1),
                        self.info.tenant_key.as_deref(),
                    ))
                    .await?;
                let direct = rank::fulltext(&rows, options.limit, self.max_per_document)?;
                let docs = direct.iter().map(|e| &e.document);
                let seeds = neighbours::seeds(docs, options);
                let strong = strong_count(direct.iter().map(|e| e.document.score));
                (direct, seeds, strong)
            }
            Some(vector) => {
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
                let (direct, entities) = rank::hybrid(&rows, options.limit, self.max_per_document)?;
                let seeds = neighbours::seeds(entities.iter(), options);
                (direct, seeds, strong_by_rank(options.limit))
            }
        };
        let rankings: Vec<(String, Option<Ranking>)> = direct
            .iter()
            .map(|e| (e.document.id.clone(), e.ranking.clone()))
            .collect();
        let docs = direct.into_iter().map(|e| e.document).collect();
        let merged = self.expanded(docs, &seeds, strong, options).await?;
        Ok(merged
            .into_iter()
            .map(|document| {
                let ranking = match rankings.iter().find(|(id, _)| *id == document.id) {
                    Some((_, ranking)) if !document.from_graph => ranking.clone(),
                    _ => Some(Ranking::graph_neighbour(document.score)),
                };
                Explained { document, ranking }
            })
            .collect())
    }
}

#[async_trait]
impl Retriever for PgKnowledge {
    async fn retrieve(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        let found = self.search(query, None, options).await?;
        Ok(found.into_iter().map(|e| e.document).collect())
    }

    async fn retrieve_hybrid(
        &self,
        query: &str,
        vector: &[f32],
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        let found = self.search(query, Some(vector), options).await?;
        Ok(found.into_iter().map(|e| e.document).collect())
    }

    async fn explain(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        options: &RetrievalOptions,
    ) -> Result<Vec<Explained>, RetrievalError> {
        self.search(query, vector, options).await
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
