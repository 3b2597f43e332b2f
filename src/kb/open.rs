//! The knowledge store the functions search, opened at start-up from the settings: `KB_URI`
//! (a Bedrock knowledge base, PostgreSQL directly or through the Data API, or an S3 bundle,
//! refreshed), else `KB_PATH`, else the bundled sample.
//!
//! A `KB_PATH` folder of sources and the sample are read by ingest, which the caller does when
//! [`open_store`] finds no `KB_URI`, then hands the knowledge base to [`serve_local`]: this room
//! never reads a source document.

use super::bedrock::BedrockKnowledgeBase;
use super::bundle::s3::{self, BundleStore};
use super::bundle::{check_embedding, check_vectors, KnowledgeBase, LiveKnowledge, LoadOptions};
use super::postgres::{PgKnowledge, SqlLocation};
use super::retriever::Retriever;
use crate::config::{EmbeddingsProvider, KbLocation, Settings};
use crate::search::RetrievalError;
use std::sync::Arc;

/// Why the knowledge store at `KB_URI` could not be opened, by what it is.
#[derive(Debug)]
pub(crate) enum OpenError {
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

/// Longest wait for one search of a remote knowledge store (a Bedrock knowledge base); the
/// node's retry policy retries a timeout within the run's budget.
const KB_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The knowledge store at `KB_URI` (a Bedrock knowledge base, PostgreSQL, or S3, refreshed);
/// `None` when the settings name a local one (`KB_PATH`, else the sample; see [`serve_local`]).
pub(crate) async fn open_store(
    settings: &Settings,
    aws: Option<&aws_config::SdkConfig>,
) -> Result<Option<Arc<dyn Retriever>>, OpenError> {
    let (provider, model, dimensions) = expected_vectors(settings);
    if let (Some(KbLocation::BedrockKb(location)), Some(sdk)) = (&settings.kb_uri, aws) {
        let client =
            crate::bedrock_client::agent_client(sdk, crate::config::DEFAULT_LLM_CONNECT_TIMEOUT);
        let kb = BedrockKnowledgeBase::new(client, location.clone(), KB_CALL_TIMEOUT)
            .with_max_passages_per_document(settings.kb_max_passages_per_document);
        return Ok(Some(Arc::new(kb)));
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
        let origin = std::path::PathBuf::from(location.to_string());
        let recorded = kb.embedding();
        check_vectors(recorded.as_ref(), &origin, provider, model, dimensions).map_err(failed)?;
        return Ok(Some(Arc::new(kb)));
    }
    if let (Some(KbLocation::S3(location)), Some(sdk)) = (&settings.kb_uri, aws) {
        let store = BundleStore::new(s3::client(sdk), location.clone());
        let options = LoadOptions {
            embedding_model: model.map(str::to_owned),
            embedding_provider: provider.map(|p| (p.to_owned(), dimensions)),
            refresh_every: settings.kb_refresh,
            max_passages_per_document: settings.kb_max_passages_per_document,
            ..LoadOptions::default()
        };
        let live = LiveKnowledge::open(store, options).await;
        return Ok(Some(Arc::new(live.map_err(|source| {
            OpenError::Bundle {
                uri: location.to_string(),
                source,
            }
        })?)));
    }
    Ok(None)
}

/// A local knowledge base (ingest's reading of `KB_PATH`, or the sample) as the store a run
/// searches: the per-source cap of the settings applied, its vectors checked against the
/// embeddings model they name.
pub(crate) fn serve_local(
    kb: KnowledgeBase,
    settings: &Settings,
) -> Result<Arc<dyn Retriever>, RetrievalError> {
    let kb = kb.with_max_passages_per_document(settings.kb_max_passages_per_document);
    let (provider, model, dimensions) = expected_vectors(settings);
    check_embedding(&kb, provider, model, dimensions)?;
    Ok(Arc::new(kb))
}

/// The embeddings the settings name, as a store's vectors are checked against them: provider,
/// model and (Bedrock's) dimensions, each `None` without embeddings.
fn expected_vectors(settings: &Settings) -> (Option<&'static str>, Option<&str>, Option<usize>) {
    let Some(embeddings) = &settings.embeddings else {
        return (None, None, None);
    };
    let (provider, dimensions) = match embeddings.provider {
        EmbeddingsProvider::OpenAi { .. } => ("openai", None),
        EmbeddingsProvider::Bedrock { dimensions } => ("bedrock", Some(dimensions as usize)),
    };
    (Some(provider), Some(embeddings.model.as_str()), dimensions)
}
