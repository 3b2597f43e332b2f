//! An ingest from start to end: the sources read and checked ([`Plan`]), every passage
//! embedded when an embedder is given, the bundle written and moved into place.
use super::embedding::embed_passages;
use super::options::{IngestOptions, NoProgress};
use super::plan::Plan;
use super::sources::enable_parsers;
use super::summary::IngestSummary;
use crate::search::RetrievalError;
use std::path::Path;

/// Ingests `source` into a bundle at `target` without vectors (BM25 only).
pub fn ingest_dir(source: &Path, target: &Path) -> Result<IngestSummary, RetrievalError> {
    enable_parsers();
    let plan = Plan::new(source, target, false)?;
    plan.finish(None, &NoProgress, (0, 0), None)
}

/// Ingests `source` (walked recursively) into a bundle at `target`, embedding every passage
/// when `options.embedder` is set.
///
/// `target` must be missing, empty, or a previous bundle (which is replaced). Nothing is
/// written to `target` unless every source file is valid and every passage is embedded; an
/// ingest stopped by an embeddings failure resumes where it stopped when run again.
pub async fn ingest(
    source: &Path,
    target: &Path,
    options: &IngestOptions<'_>,
) -> Result<IngestSummary, RetrievalError> {
    enable_parsers();
    let plan = Plan::new(source, target, options.strict)?;
    let Some(embedder) = options.embedder else {
        return plan.finish(
            None,
            options.progress,
            (0, 0),
            options.description.as_deref(),
        );
    };
    let embedded = embed_passages(&plan, embedder, options).await?;
    let counts = (embedded.embedded, embedded.calls);
    plan.finish(
        Some(embedded),
        options.progress,
        counts,
        options.description.as_deref(),
    )
}
