//! `bounded-rag kb sync SOURCE DEST [--json]`: the embedder built as `ingest` builds it, the
//! source parsed (`s3://` or a folder), one call into `ingest::sync`, the summary printed.
use crate::config::Settings;
use crate::entry::app::{build_embedder, load_secrets};
use crate::ingest::sync::{sync, SyncSource};
use crate::ingest::IngestOptions;
use crate::search::s3::{self, BundleStore};
use std::path::PathBuf;

/// Runs `kb sync`; returns what to print.
pub(crate) async fn sync_command(
    sdk: &aws_config::SdkConfig,
    source: &str,
    dest: BundleStore,
    json: bool,
) -> Result<String, String> {
    let source = if source.starts_with("s3://") {
        SyncSource::S3 {
            client: s3::client(sdk),
            location: source.parse().map_err(|e| format!("SOURCE: {e}"))?,
        }
    } else {
        SyncSource::Folder(PathBuf::from(source))
    };
    let settings = Settings::from_env().map_err(|e| e.to_string())?;
    let secrets = load_secrets(&settings).await.map_err(|e| e.to_string())?;
    let embedder = build_embedder(&settings, &secrets, None)
        .await
        .map_err(|e| e.to_string())?;
    let tuning = &settings.embeddings_tuning;
    let options = IngestOptions {
        embedder: embedder.as_deref(),
        batch_size: tuning.batch_size,
        call_timeout: tuning.timeout,
        concurrency: tuning.concurrency,
        passage_prefix: tuning.passage_prefix.clone(),
        query_prefix: tuning.query_prefix.clone(),
        ..IngestOptions::default()
    };
    let summary = sync(&source, &dest, &options)
        .await
        .map_err(|e| format!("sync failed: {e}"))?;
    if json {
        return serde_json::to_string_pretty(&summary).map_err(|e| e.to_string());
    }
    Ok(format!("synced to {}: {summary}", dest.location()))
}
