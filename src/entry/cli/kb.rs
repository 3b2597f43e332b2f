//! `bounded-rag ingest` and `bounded-rag kb publish | list | use | sync`: building a bundle (with a
//! progress bar on a terminal) and shipping it to S3.

use crate::aws::S3Location;
use crate::config::Settings;
use crate::entry::app::{build_embedder, load_secrets};
use crate::ingest::IngestError;
use crate::ingest::{ingest, ingest_into_store, IngestOptions};
use crate::kb::{open_writer, s3_client, BundleStore, Published, WriteLocation, WriterError};
use crate::knowledge::Format;
use crate::knowledge::Progress;
use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `kb` sub-commands.
#[derive(Debug, Subcommand)]
pub(crate) enum KbCommand {
    /// Upload a bundle under its content hash, then point readers at it.
    Publish {
        /// The bundle folder (written by `ingest`).
        bundle: PathBuf,
        /// Where: s3://BUCKET/PREFIX.
        uri: S3Location,
    },
    /// List the published bundles, the current one marked.
    List {
        /// Where: s3://BUCKET/PREFIX.
        uri: S3Location,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Sync a source to a published knowledge base: read and embed only what changed since
    /// the last sync of DEST, then publish one version (none when nothing changed).
    Sync {
        /// A folder, or s3://BUCKET/PREFIX.
        source: String,
        /// Where the bundles are (s3://BUCKET/PREFIX), or a PostgreSQL store
        /// (postgres://... or rds-data://...).
        dest: String,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the sync function's records for DEST (needs SYNC_TABLE): documents by phase, the
    /// failed ones with their reasons, and the jobs with their statistics.
    SyncStatus {
        /// Where the bundles are: s3://BUCKET/PREFIX.
        dest: S3Location,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search the knowledge store the functions use (KB_URI, KB_PATH or the bundled sample)
    /// directly, without the workflow or a model: hybrid when embeddings are configured and
    /// the store has vectors.
    Search(super::search::SearchArgs),
    /// Point readers at an already published version (a rollback).
    Use {
        /// Where: s3://BUCKET/PREFIX.
        uri: S3Location,
        /// The version (content hash) to serve.
        version: String,
    },
}

/// A progress bar on stderr, drawn only on a terminal.
struct Bar(Mutex<Option<ProgressBar>>);

impl Progress for Bar {
    fn stage(&self, name: &'static str, total: u64) {
        let bar = ProgressBar::new(total);
        if let Ok(style) =
            ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({per_sec}, {eta} left)")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(name);
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(bar);
        }
    }

    fn advance(&self, n: u64) {
        if let Ok(slot) = self.0.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.inc(n);
            }
        }
    }

    fn resumed(&self, n: u64) {
        if let Ok(slot) = self.0.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.inc(n);
                // The rate and ETA count this run's work only.
                bar.reset_eta();
            }
        }
    }

    fn finish(&self) {
        if let Ok(mut slot) = self.0.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        }
    }
}

/// `ingest SOURCE --out PATH`: embeds passages when `EMBEDDINGS_BASE_URL` (or
/// `EMBEDDINGS_PROVIDER=bedrock`) is set, in batches
/// of `--batch-size` (else `EMBEDDINGS_BATCH_SIZE`), with the `EMBEDDINGS_*` tuning.
pub(crate) async fn ingest_command(
    source: &Path,
    out: &Path,
    batch_size: Option<usize>,
    strict: bool,
    description: Option<String>,
) -> Result<String, String> {
    let store = match WriteLocation::parse(&out.to_string_lossy()) {
        Ok(WriteLocation::Folder(_)) => None,
        Ok(WriteLocation::Store(at)) => Some(at),
        Ok(WriteLocation::Bundles(_)) => return Err(not_a_folder(out, "s3")),
        Err(WriterError::Scheme { scheme }) => return Err(not_a_folder(out, &scheme)),
        Err(e) => return Err(format!("--out: {e}")),
    };
    let settings = Settings::from_env().map_err(|e| e.to_string())?;
    let secrets = load_secrets(&settings).await.map_err(|e| e.to_string())?;
    let embedder = build_embedder(&settings, &secrets, None)
        .await
        .map_err(|e| e.to_string())?;
    let tuning = &settings.embeddings_tuning;
    let bar = Bar(Mutex::new(None));
    let options = IngestOptions {
        embedder: embedder.as_deref(),
        batch_size: batch_size.unwrap_or(tuning.batch_size),
        progress: &bar,
        strict,
        description,
        tenant_key: settings.kb_tenant_key.clone(),
        tenant_index_rows: settings.kb_tenant_index_rows,
        ..IngestOptions::tuned(tuning)
    };
    if let Some(at) = store {
        let store = at
            .open(None)
            .await
            .map_err(|e| format!("ingest failed: {e}"))?;
        let result = ingest_into_store(source, store.as_ref(), &options).await;
        bar.finish();
        let summary = result.map_err(|e| format!("ingest failed: {e}"))?;
        return Ok(format!(
            "{summary}\nuse it with: KB_URI={}",
            store.location()
        ));
    }
    let result = ingest(source, out, &options).await;
    bar.finish();
    let summary = result.map_err(|e| match e {
        // The sources are fine: the message says which setting to change and how to resume.
        IngestError::Interrupted { .. } => format!("ingest stopped: {e}"),
        IngestError::Skipped { .. } => format!("ingest failed: {e}"),
        e => format!(
            "ingest failed: {e}; SOURCE must be a folder of documents ({}; and optional \
             nodes/edges/communities .jsonl), and --out a folder you can write",
            Format::all_extensions()
        ),
    })?;
    Ok(format!(
        "{summary}\nuse it with: KB_PATH={} (or publish it: bounded-rag kb publish {} s3://BUCKET/PREFIX)",
        out.display(),
        out.display()
    ))
}

/// `ingest --out` names a folder, `postgres://...` or `rds-data://...`: any other location with
/// a scheme (`s3://...`) is refused with what to do instead, never written as a local folder
/// named `s3:`.
fn not_a_folder(out: &Path, scheme: &str) -> String {
    format!(
        "--out {}: ingest writes a bundle folder, postgres://... or rds-data://...; \
         `{scheme}://` locations are not accepted here. For S3, write a folder, then \
         publish it: bounded-rag ingest SOURCE --out FOLDER && bounded-rag kb publish \
         FOLDER s3://BUCKET/PREFIX",
        out.display()
    )
}

/// Runs a `kb` sub-command; returns what to print.
pub(crate) async fn kb_command(command: KbCommand) -> Result<String, String> {
    match command {
        KbCommand::Search(args) => super::search::search_command(args).await,
        other => bundle_command(other).await,
    }
}

/// The `kb` sub-commands on S3 bundles.
async fn bundle_command(command: KbCommand) -> Result<String, String> {
    let sdk = crate::tls::aws_sdk_config().await;
    let store = |uri: &S3Location| BundleStore::new(s3_client(&sdk), uri.clone());
    match command {
        KbCommand::Publish { bundle, uri } => {
            let published = store(&uri)
                .publish(&bundle)
                .await
                .map_err(|e| format!("publish failed: {e}"))?;
            Ok(format!(
                "published {} to {uri}: {}\nreaders now load version {}",
                bundle.display(),
                published.manifest.counts,
                published.version
            ))
        }
        KbCommand::Sync { source, dest, json } => {
            let refused = |e: &dyn std::fmt::Display| {
                format!(
                    "DEST: {e}; a sync writes to s3://BUCKET/PREFIX or a PostgreSQL store: \
                     postgres://USER@HOST:PORT/DATABASE or \
                     rds-data://CLUSTER_ARN/DATABASE?secret=SECRET_ARN"
                )
            };
            let dest = match WriteLocation::parse(&dest) {
                Ok(WriteLocation::Folder(path)) => {
                    return Err(refused(&format!("{}: not a location", path.display())))
                }
                Ok(location) => open_writer(location, Some(&sdk))
                    .await
                    .map_err(|e| format!("sync failed: {e}"))?,
                Err(e) => return Err(refused(&e)),
            };
            super::sync::sync_command(&sdk, &source, dest, json).await
        }
        KbCommand::SyncStatus { dest, json } => {
            super::sync::sync_status_command(&sdk, &dest, json).await
        }
        KbCommand::Use { uri, version } => {
            store(&uri)
                .point(&version)
                .await
                .map_err(|e| format!("kb use failed: {e}"))?;
            Ok(format!("{uri} now serves version {version}"))
        }
        KbCommand::Search(args) => super::search::search_command(args).await,
        KbCommand::List { uri, json } => {
            let list = store(&uri)
                .list()
                .await
                .map_err(|e| format!("kb list failed: {e}"))?;
            if json {
                return serde_json::to_string_pretty(&list).map_err(|e| e.to_string());
            }
            Ok(render_list(&uri, &list))
        }
    }
}

fn render_list(uri: &S3Location, list: &[Published]) -> String {
    if list.is_empty() {
        return format!("no bundles published at {uri}");
    }
    let mut out = format!("bundles at {uri} (newest first; * = current):\n");
    for p in list {
        let m = &p.manifest;
        let vectors = match &m.embedding {
            Some(e) => format!("{} x{}", e.model, e.dimensions),
            None => "bm25 only".into(),
        };
        out.push_str(&format!(
            "{} {}  {}  {}  {} MB  {}\n",
            if p.current { "*" } else { " " },
            p.version,
            m.created_at,
            m.counts,
            m.total_bytes().div_ceil(1_000_000),
            vectors
        ));
    }
    out.trim_end().to_owned()
}
