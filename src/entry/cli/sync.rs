//! `bounded-rag kb sync SOURCE DEST [--json]`: the embedder built as `ingest` builds it, the
//! source parsed (`s3://` or a folder), one call into `ingest::sync`, the summary printed.
//! `bounded-rag kb sync-status DEST [--json]`: the sync function's records of DEST.
use crate::config::Settings;
use crate::entry::app::{build_embedder, load_secrets};
use crate::ingest::IngestOptions;
use crate::ingest::{sync, sync_into_store, SyncSource};
use crate::kb::{s3_client, Writer};
use std::path::PathBuf;

/// Runs `kb sync`; returns what to print.
pub(crate) async fn sync_command(
    sdk: &aws_config::SdkConfig,
    source: &str,
    dest: Writer,
    json: bool,
) -> Result<String, String> {
    let source = if source.starts_with("s3://") {
        SyncSource::S3 {
            client: s3_client(sdk),
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
    let options = IngestOptions {
        embedder: embedder.as_deref(),
        tenant_key: settings.kb_tenant_key.clone(),
        tenant_index_rows: settings.kb_tenant_index_rows,
        ..IngestOptions::tuned(&settings.embeddings_tuning)
    };
    let (summary, at) = match dest {
        Writer::Bundles(dest) => (
            sync(&source, &dest, &options).await,
            dest.location().to_string(),
        ),
        Writer::Store(store) => (
            sync_into_store(&source, store.as_ref(), &options).await,
            store.location(),
        ),
        Writer::Folder(path) => return Err(format!("DEST {}: not a location", path.display())),
    };
    let summary = summary.map_err(|e| format!("sync failed: {e}"))?;
    if json {
        return serde_json::to_string_pretty(&summary).map_err(|e| e.to_string());
    }
    Ok(format!("synced to {at}: {summary}"))
}

/// Runs `kb sync-status`; returns what to print.
pub(crate) async fn sync_status_command(
    sdk: &aws_config::SdkConfig,
    dest: &crate::aws::S3Location,
    json: bool,
) -> Result<String, String> {
    use crate::ingest::{reason_of, summary_of, Ledger};
    use crate::store::{DocPhase, DynamoStore};
    let table = std::env::var("SYNC_TABLE")
        .ok()
        .filter(|t| !t.is_empty())
        .ok_or("SYNC_TABLE must name the sync function's table (the SyncTableName output)")?;
    let records = DynamoStore::for_sync(aws_sdk_dynamodb::Client::new(sdk), table);
    let ledger = Ledger::new(std::sync::Arc::new(records), &dest.to_string());
    let failed = |e: crate::ingest::JobError| format!("kb sync-status failed: {e}");
    let docs = ledger.docs().await.map_err(failed)?;
    let jobs = ledger.jobs().await.map_err(failed)?;
    let count = |phase| docs.iter().filter(|d| d.phase == phase).count();
    let counts = [
        ("processing", count(DocPhase::Processing)),
        ("done", count(DocPhase::Done)),
        ("failed", count(DocPhase::Failed)),
        ("deleted", count(DocPhase::Deleted)),
    ];
    let failures: Vec<serde_json::Value> = docs
        .iter()
        .filter(|d| d.phase == DocPhase::Failed)
        .map(|d| serde_json::json!({"path": d.rel, "reason": reason_of(d), "attempts": d.attempts}))
        .collect();
    if json {
        let jobs: Vec<serde_json::Value> = jobs
            .iter()
            .map(|j| {
                serde_json::json!({"job": j.number, "started_at_ms": j.started_at,
                    "finished_at_ms": j.finished_at, "statistics": summary_of(j)})
            })
            .collect();
        let documents: serde_json::Map<String, serde_json::Value> = counts
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).into()))
            .collect();
        let out = serde_json::json!({"documents": documents, "failed": failures, "jobs": jobs});
        return serde_json::to_string_pretty(&out).map_err(|e| e.to_string());
    }
    let mut out = format!("sync of {dest}: documents");
    for (phase, n) in counts {
        out.push_str(&format!(" {n} {phase},"));
    }
    out.pop();
    for d in docs.iter().filter(|d| d.phase == DocPhase::Failed) {
        let reason = reason_of(d).map_or(String::new(), |r| r.to_string());
        out.push_str(&format!("\n  failed {}: {reason}", d.rel));
    }
    for j in jobs.iter().rev().take(10) {
        out.push_str(&format!(
            "\njob {} ({} ms): {}",
            j.number,
            j.finished_at.saturating_sub(j.started_at),
            summary_of(j).map_or(String::new(), |s| s.to_string())
        ));
    }
    Ok(out)
}
