//! PostgreSQL as a mirror of a source (`ingest --out postgres://...`, `kb sync SOURCE
//! postgres://...`): the tables ensured for the vectors' model, each document written in one
//! transaction, the documents the source no longer holds deleted, the counts and description
//! restated; for sync, which passages still need a vector and the last sync's state. Ingest
//! and sync hand it a [`Corpus`]; the rows, tables and statements are [`write`]'s and
//! [`schema`]'s.
use super::sql::{first_text, Sql, SqlError, Statement};
use super::{schema, schema_error, write, SqlLocation};
use crate::kb::Mirror;
use crate::knowledge::{hex, Corpus, DocKind, EmbeddingInfo, Group, Progress};
use crate::search::RetrievalError;
use async_trait::async_trait;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A PostgreSQL store opened for writing.
pub(crate) struct PgMirror {
    sql: Arc<dyn Sql>,
    location: SqlLocation,
}

impl PgMirror {
    pub(crate) fn new(sql: Arc<dyn Sql>, location: SqlLocation) -> Self {
        Self { sql, location }
    }

    /// A statement's failure as the store's error.
    fn fail(&self, e: SqlError) -> RetrievalError {
        schema_error(self.sql.name(), schema::SchemaError::Sql(e))
    }
}

#[async_trait]
impl Mirror for PgMirror {
    fn location(&self) -> String {
        self.location.to_string()
    }

    fn name(&self) -> &str {
        self.sql.name()
    }

    /// A folder of the temporary directory named by the source and the store.
    fn staging_for(&self, source: &Path) -> PathBuf {
        let key = format!("{}\n{}", source.display(), self.sql.name());
        std::env::temp_dir().join(format!(
            "bounded-rag-ingest-{}",
            &hex(&Sha256::digest(key.as_bytes()))[..16]
        ))
    }

    /// Creates the tables when missing.
    async fn prepare(
        &self,
        embedding: Option<&EmbeddingInfo>,
        tenant_key: Option<&str>,
    ) -> Result<(), RetrievalError> {
        schema::ensure(self.sql.as_ref(), embedding, tenant_key)
            .await
            .map(drop)
            .map_err(|e| schema_error(self.sql.name(), e))
    }

    /// Each document in one transaction.
    async fn write<'v>(
        &self,
        corpus: &Corpus,
        groups: &[Group],
        vector: &(dyn Fn(usize) -> Option<&'v [f32]> + Sync),
        progress: &dyn Progress,
        tenant_index_rows: u64,
        description: Option<&str>,
    ) -> Result<i64, RetrievalError> {
        let sql = self.sql.as_ref();
        progress.stage("writing", groups.len() as u64);
        for (document, positions) in groups {
            let items: Vec<write::Item<'_>> = positions
                .iter()
                .map(|i| write::Item {
                    doc: &corpus.docs[*i],
                    meta: corpus.meta.get(*i as u32),
                    vector: vector(*i),
                })
                .collect();
            write::write_document(sql, document, &items)
                .await
                .map_err(|e| self.fail(e))?;
            progress.advance(1);
        }
        progress.finish();
        let names: Vec<String> = corpus.groups(|_| true).into_iter().map(|g| g.0).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let rows_deleted = write::keep_only(sql, &names)
            .await
            .map_err(|e| self.fail(e))?;
        write::restate(sql, tenant_index_rows)
            .await
            .map_err(|e| self.fail(e))?;
        write::describe(sql, description)
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows_deleted)
    }

    /// All of them in a store not written yet.
    async fn passages_without_vectors(
        &self,
        corpus: &Corpus,
        groups: &[Group],
    ) -> Result<(Vec<usize>, usize), RetrievalError> {
        let mut keyed = Vec::new();
        for (document, positions) in groups {
            let docs = positions.iter().map(|i| &corpus.docs[*i]);
            keyed.extend(
                positions
                    .iter()
                    .copied()
                    .zip(write::row_hashes(document, docs)),
            );
        }
        let keyed: Vec<(usize, String)> = keyed
            .into_iter()
            .filter(|(i, _)| corpus.docs[*i].kind == DocKind::Episode)
            .collect();
        let hashes: Vec<String> = keyed.iter().map(|k| k.1.clone()).collect();
        let sql = self.sql.as_ref();
        // A store not written yet holds no vectors.
        let have = match schema::read(sql).await {
            Ok(_) => write::with_vectors(sql, &hashes)
                .await
                .map_err(|e| self.fail(e))?,
            Err(_) => Default::default(),
        };
        let todo = keyed
            .iter()
            .filter(|(_, h)| !have.contains(h))
            .map(|(i, _)| *i)
            .collect();
        Ok((todo, keyed.len()))
    }

    /// In `bounded_rag_sync`, base64.
    async fn sync_state(&self) -> Result<Option<Vec<u8>>, RetrievalError> {
        use base64::Engine as _;
        let rows = match self
            .sql
            .query(&Statement::new(
                "SELECT state FROM bounded_rag_sync",
                vec![],
            ))
            .await
        {
            Err(e) if e.code.as_deref() == Some(schema::UNDEFINED_TABLE) => return Ok(None),
            other => other.map_err(|e| self.fail(e))?,
        };
        let Some(text) = first_text(&rows) else {
            return Ok(None);
        };
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(Some)
            .map_err(|e| self.fail(SqlError::permanent(format!("bounded_rag_sync.state: {e}"))))
    }

    async fn save_sync_state(&self, state: &[u8]) -> Result<(), RetrievalError> {
        use base64::Engine as _;
        let text = base64::engine::general_purpose::STANDARD.encode(state);
        self.sql
            .transaction(&[
                Statement::new(
                    "CREATE TABLE IF NOT EXISTS bounded_rag_sync (\
                       singleton bool PRIMARY KEY DEFAULT true CHECK (singleton), \
                       state text NOT NULL, \
                       updated_at timestamptz NOT NULL DEFAULT now())",
                    vec![],
                ),
                Statement::new(
                    "INSERT INTO bounded_rag_sync (state) VALUES (CAST($1 AS text)) \
                     ON CONFLICT (singleton) DO UPDATE SET state = EXCLUDED.state, \
                     updated_at = now()",
                    vec![text.into()],
                ),
            ])
            .await
            .map_err(|e| self.fail(e))
    }

    fn invalid_sync_state(&self, why: &str) -> RetrievalError {
        self.fail(SqlError::permanent(format!(
            "bounded_rag_sync.state: {why}"
        )))
    }
}
