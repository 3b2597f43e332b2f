//! The knowledge store the functions search, opened at start-up from the settings: `KB_URI`
//! (a Bedrock knowledge base, PostgreSQL directly or through the Data API, or an S3 bundle,
//! refreshed), else `KB_PATH`, else the bundled sample.

use super::startup_error::StartupError;
use crate::config::{EmbeddingsProvider, KbLocation, Settings};
use crate::search::postgres::SqlLocation;
use crate::search::s3::{self, BundleStore};
use crate::search::{
    BedrockKnowledgeBase, KnowledgeBase, LiveKnowledge, LoadOptions, PgKnowledge, Retriever,
};
use std::sync::Arc;

/// Longest wait for one search of a remote knowledge store (a Bedrock knowledge base); the
/// node's retry policy retries a timeout within the run's budget.
const KB_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The knowledge base: `KB_URI` (a Bedrock knowledge base, or S3, refreshed), else `KB_PATH`, else the bundled sample. Search
/// opens an S3 or `KB_PATH` bundle; ingest reads a `KB_PATH` folder of sources or the compiled-in
/// sample and indexes it in memory (`KnowledgeBase::load` / `embedded`), then search opens that.
pub(crate) async fn build_kb(
    settings: &Settings,
    aws: Option<&aws_config::SdkConfig>,
) -> Result<Arc<dyn Retriever>, StartupError> {
    let model = settings.embeddings.as_ref().map(|e| e.model.clone());
    let provider = settings.embeddings.as_ref().map(|e| match e.provider {
        EmbeddingsProvider::OpenAi { .. } => ("openai".to_owned(), None),
        EmbeddingsProvider::Bedrock { dimensions } => {
            ("bedrock".to_owned(), Some(dimensions as usize))
        }
    });
    if let (Some(KbLocation::BedrockKb(location)), Some(sdk)) = (&settings.kb_uri, aws) {
        let client = crate::bedrock::agent_client(sdk, crate::config::DEFAULT_LLM_CONNECT_TIMEOUT);
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
        let failed = |source| StartupError::KbStore {
            uri: location.to_string(),
            source,
        };
        let db = crate::search::postgres::connect(&location, aws, KB_CALL_TIMEOUT)
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
        crate::search::check_vectors(
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
        return Ok(Arc::new(live.map_err(|source| StartupError::KbUri {
            uri: location.to_string(),
            source,
        })?));
    }
    let kb = match &settings.kb_path {
        Some(path) => KnowledgeBase::load(path)?,
        None => KnowledgeBase::embedded()?,
    }
    .with_max_passages_per_document(settings.kb_max_passages_per_document);
    let (provider, dimensions) = match &provider {
        Some((provider, dimensions)) => (Some(provider.as_str()), *dimensions),
        None => (None, None),
    };
    crate::search::check_embedding(&kb, provider, model.as_deref(), dimensions)?;
    Ok(Arc::new(kb))
}
