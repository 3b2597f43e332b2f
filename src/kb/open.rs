//! The knowledge store the functions search, opened at start-up from the settings: `KB_URI`
//! (a Bedrock knowledge base, PostgreSQL directly or through the Data API, or an S3 bundle,
//! refreshed), else `KB_PATH`, else the bundled sample.
//!
//! A `KB_PATH` folder of sources and the sample are read by ingest, which the caller passes in
//! as `local`: this room never reads a source document.

use super::bedrock::BedrockKnowledgeBase;
use super::bundle::s3::{self, BundleStore};
use super::bundle::{check_embedding, check_vectors, KnowledgeBase, LiveKnowledge, LoadOptions};
use super::postgres::{PgKnowledge, SqlLocation};
use super::retriever::Retriever;
use crate::config::{EmbeddingsProvider, KbLocation, Settings};
use crate::search::RetrievalError;
use std::path::Path;
use std::sync::Arc;

/// Why the knowledge store could not be opened, by where it was to come from.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// `KB_PATH` or the sample.
    Local(RetrievalError),
    /// The S3 bundle at `KB_URI`.
    Bundle {
        /// `KB_URI` as set.
        uri: String,
        /// What failed, naming the `s3://bucket/key` tried.
        source: RetrievalError,
    },
    /// The database at `KB_URI`.
    Store {
        /// `KB_URI`, without its password.
        uri: String,
        /// What failed.
        source: RetrievalError,
    },
}

impl From<RetrievalError> for OpenError {
    fn from(e: RetrievalError) -> Self {
        Self::Local(e)
    }
}

/// Longest wait for one search of a remote knowledge store (a Bedrock knowledge base); the
/// node's retry policy retries a timeout within the run's budget.
const KB_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The knowledge base: `KB_URI` (a Bedrock knowledge base, PostgreSQL, or S3, refreshed), else
/// `local` with `KB_PATH` (a bundle or a folder of sources), else `local` with none (the
/// bundled sample).
pub(crate) async fn open_store(
    settings: &Settings,
    aws: Option<&aws_config::SdkConfig>,
    local: impl FnOnce(Option<&Path>) -> Result<KnowledgeBase, RetrievalError>,
) -> Result<Arc<dyn Retriever>, OpenError> {
    let model = settings.embeddings.as_ref().map(|e| e.model.clone());
    let provider = settings.embeddings.as_ref().map(|e| match e.provider {
        EmbeddingsProvider::OpenAi { .. } => ("openai".to_owned(), None),
        EmbeddingsProvider::Bedrock { dimensions } => {
            ("bedrock".to_owned(), Some(dimensions as usize))
        }
    });
    if let (Some(KbLocation::BedrockKb(location)), Some(sdk)) = (&settings.kb_uri, aws) {
        let client =
            crate::bedrock_client::agent_client(sdk, crate::config::DEFAULT_LLM_CONNECT_TIMEOUT);
        let kb = BedrockKnowledgeBase::new(client, location.clone(), KB_CALL_TIMEOUT)
            .with_max_passages_per_document(settings.kb_max_passages_per_document);
        return Ok(Arc::new(kb));
    }
    let sql = match &settings.kb_uri {
        Some(KbLocation::Postgres(at)) => Some(SqlLocation::Postgres(at.clone())),
        Some(KbLocation::RdsData(at)) => Some(SqlLocation::RdsData(at.clone())),
        _ => None,
    };
    if let Some(location) = sql {
        let failed = |source| OpenError::Store {
            uri: location.to_string(),
            source,
        };
        let db = super::postgres::connect(&location, aws, KB_CALL_TIMEOUT)
            .await
            .map_err(failed)?;
        let kb = PgKnowledge::open(db)
            .await
            .map_err(failed)?
            .with_max_passages_per_document(settings.kb_max_passages_per_document);
        let (provider, dimensions) = match &provider {
            Some((provider, dimensions)) => (Some(provider.as_str()), *dimensions),
            None => (None, None),
        };
        let origin = std::path::PathBuf::from(location.to_string());
        let recorded = kb.embedding();
        check_vectors(
            recorded.as_ref(),
            &origin,
            provider,
            model.as_deref(),
            dimensions,
        )?;
        return Ok(Arc::new(kb));
    }
    if let (Some(KbLocation::S3(location)), Some(sdk)) = (&settings.kb_uri, aws) {
        let store = BundleStore::new(s3::client(sdk), location.clone());
        let options = LoadOptions {
            embedding_model: model,
            embedding_provider: provider,
            refresh_every: settings.kb_refresh,
            max_passages_per_document: settings.kb_max_passages_per_document,
            ..LoadOptions::default()
        };
        let live = LiveKnowledge::open(store, options).await;
        return Ok(Arc::new(live.map_err(|source| OpenError::Bundle {
            uri: location.to_string(),
            source,
        })?));
    }
    let kb = local(settings.kb_path.as_deref())?
        .with_max_passages_per_document(settings.kb_max_passages_per_document);
    let (provider, dimensions) = match &provider {
        Some((provider, dimensions)) => (Some(provider.as_str()), *dimensions),
        None => (None, None),
    };
    check_embedding(&kb, provider, model.as_deref(), dimensions)?;
    Ok(Arc::new(kb))
}
