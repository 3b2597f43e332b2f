//! An ingest from start to end: the sources read and checked ([`Plan`]), every passage
//! embedded when an embedder is given, and the corpus handed to the bundle folder's writer
//! ([`BundleFolder`]), which builds the bundle and moves it into place.
use super::describe;
use super::embedding::{embed_passages, Embedded};
use super::options::IngestOptions;
use super::plan::{canonical, Plan};
use super::sources::enable_parsers;
use super::summary::IngestSummary;
use crate::ingest::IngestError;
use crate::kb::{BundleFolder, BundleVectors};
use crate::knowledge::{NoProgress, Progress};
use std::path::Path;

/// Ingests `source` into a bundle at `target` without vectors (BM25 only).
pub fn ingest_dir(source: &Path, target: &Path) -> Result<IngestSummary, IngestError> {
    enable_parsers();
    let source = canonical(source)?;
    let folder = BundleFolder::new(target, &source)?;
    let plan = Plan::read(source, folder.staging().to_path_buf(), false)?;
    write(plan, &folder, None, &NoProgress, None)
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
) -> Result<IngestSummary, IngestError> {
    enable_parsers();
    let source = canonical(source)?;
    let folder = BundleFolder::new(target, &source)?;
    let plan = Plan::read(source, folder.staging().to_path_buf(), options.strict)?;
    let embedded = match options.embedder {
        Some(embedder) => Some(embed_passages(&plan, embedder, options).await?),
        None => None,
    };
    let description = options.description.as_deref();
    write(plan, &folder, embedded, options.progress, description)
}

/// Hands `plan`'s corpus (with its vectors) to the writer of `folder`; what it wrote.
pub(crate) fn write(
    plan: Plan,
    folder: &BundleFolder,
    embedded: Option<Embedded>,
    progress: &dyn Progress,
    description: Option<&str>,
) -> Result<IngestSummary, IngestError> {
    let corpus = &plan.corpus;
    let vectors = embedded.as_ref().map(|e| BundleVectors {
        vectors: &e.vectors,
        info: &e.info,
    });
    let description = describe::given_or_derived(description, &corpus.docs);
    let manifest = folder.write(corpus, vectors, description, progress)?;
    Ok(IngestSummary {
        stats: corpus.stats,
        skipped_files: corpus.skipped.len(),
        skipped: plan.corpus.skipped,
        source: plan.source,
        target: folder.target().to_path_buf(),
        manifest,
        embedded: embedded.as_ref().map_or(0, |e| e.embedded),
        embedding_calls: embedded.as_ref().map_or(0, |e| e.calls),
    })
}
