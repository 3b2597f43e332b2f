//! Writing a bundle (its target checked by `plan`) through the bundle's writing
//! pieces ([`crate::kb::bundle`]: the BM25 index build, the content hash, the format): build everything in a staging folder beside
//! the target, write the manifest last, then rename the finished folder into place.
use super::embedding::Embedded;
use super::plan::Plan;
use crate::ingest::describe;
use crate::ingest::options::Progress;
use crate::ingest::summary::IngestSummary;
use crate::kb::bundle::build_index::build_in_dir;
use crate::kb::bundle::format::{
    now_rfc3339, BundleFile, Manifest, ANALYZER, FORMAT, FORMAT_VERSION, INDEX_DIR, MANIFEST,
    METADATA_FILE, VECTORS_FILE,
};
use crate::kb::bundle::hash::{content_hash, with_metadata};
use crate::search::hybrid::Vectors;
use crate::search::RetrievalError;
use std::fs;
use std::path::Path;

impl Plan {
    /// Writes the bundle (with `vectors` when given) and moves it into place.
    pub(crate) fn finish(
        self,
        vectors: Option<Embedded>,
        progress: &dyn Progress,
        (embedded, embedding_calls): (usize, usize),
        description: Option<&str>,
    ) -> Result<IngestSummary, RetrievalError> {
        fs::create_dir_all(&self.staging).map_err(|e| RetrievalError::io(&self.staging, e))?;
        let build = self.staging.join("bundle");
        remove_dir_if_exists(&build)?;
        let index_dir = build.join(INDEX_DIR);
        fs::create_dir_all(&index_dir).map_err(|e| RetrievalError::io(&index_dir, e))?;

        let docs = &self.corpus.docs;
        progress.stage("indexing", docs.len() as u64);
        drop(build_in_dir(&index_dir, docs)?);
        progress.advance(docs.len() as u64);
        progress.finish();

        let embedding = vectors.as_ref().map(|v| v.info.clone());
        if let Some(embedded) = &vectors {
            let bytes = Vectors::encode(&embedded.vectors, embedded.info.dimensions);
            write(&build.join(VECTORS_FILE), &bytes)?;
        }
        let meta = &self.corpus.meta;
        if !meta.is_empty() {
            let json = serde_json::to_vec(meta).expect("metadata serializes");
            write(&build.join(METADATA_FILE), &json)?;
        }
        let manifest = Manifest {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            content_hash: with_metadata(content_hash(docs, embedding.as_ref()), meta),
            created_at: now_rfc3339(),
            counts: self.corpus.stats,
            embedding,
            analyzer: ANALYZER.into(),
            files: describe_files(&build)?,
            metadata_keys: meta.keys(),
            documents: self.corpus.documents.clone(),
            skipped: self.corpus.skipped.clone(),
            description: description
                .map(str::to_owned)
                .or_else(|| describe::derive(docs)),
        };
        let json = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
        write(&build.join(MANIFEST), &json)?;

        // Into place: the old bundle aside, the new one in, then the staging folder away.
        if self.target.exists() {
            let old = self.staging.join("old");
            remove_dir_if_exists(&old)?;
            fs::rename(&self.target, &old).map_err(|e| RetrievalError::io(&self.target, e))?;
        }
        fs::rename(&build, &self.target).map_err(|e| RetrievalError::io(&self.target, e))?;
        remove_dir_if_exists(&self.staging)?;

        Ok(IngestSummary {
            stats: self.corpus.stats,
            skipped_files: self.corpus.skipped.len(),
            skipped: self.corpus.skipped,
            source: self.source,
            target: self.target,
            manifest,
            embedded,
            embedding_calls,
        })
    }
}

/// Every file under `dir` (sorted, `/`-separated relative paths) with size and SHA-256.
fn describe_files(dir: &Path) -> Result<Vec<BundleFile>, RetrievalError> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder).map_err(|e| RetrievalError::io(&folder, e))? {
            let path = entry.map_err(|e| RetrievalError::io(&folder, e))?.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            // tantivy's lock files guard writers; readers of a finished bundle need none.
            if path.extension().is_some_and(|e| e == "lock") {
                fs::remove_file(&path).map_err(|e| RetrievalError::io(&path, e))?;
                continue;
            }
            let bytes = fs::read(&path).map_err(|e| RetrievalError::io(&path, e))?;
            let rel = path.strip_prefix(dir).unwrap_or(&path);
            let rel: Vec<_> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            out.push(BundleFile::describe(&rel.join("/"), &bytes));
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), RetrievalError> {
    fs::write(path, bytes).map_err(|e| RetrievalError::io(path, e))
}

pub(crate) fn remove_dir_if_exists(dir: &Path) -> Result<(), RetrievalError> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RetrievalError::io(dir, e)),
        _ => Ok(()),
    }
}
