//! Reading a knowledge-base folder into documents: which files count, in which order, and how
//! they become passages and graph documents.
//!
//! Text documents are `*.md`, `*.markdown`, `*.txt`, `*.html` and `*.htm` at any depth (HTML
//! is reduced to its text first, see [`html`]), cleaned of badges, link targets, URLs and HTML
//! ([`clean`]) and split at headings ([`passages`]); the graph files are
//! `nodes.jsonl`, `edges.jsonl` and `communities.jsonl` at any depth. Hidden entries, symlinked
//! folders and folders written by ingest are skipped; everything else is ignored and counted.
mod clean;
mod html;
mod jsonl;
mod metadata;
pub(crate) mod passages;

use crate::retrieval::layout::MANIFEST;
use crate::retrieval::metadata::MetaTable;
use crate::retrieval::stats::KbStats;
use crate::retrieval::{DocKind, Document, RetrievalError};
use jsonl::JsonlFile;
use std::fs;
use std::path::{Path, PathBuf};

/// One source file: its path for errors, its `kb://` path (relative, `/`-separated), its text.
pub(crate) struct SourceFile {
    pub path: PathBuf,
    pub rel: String,
    pub text: String,
}

/// The documents of a knowledge base, ready to index.
pub(crate) struct Corpus {
    pub docs: Vec<Document>,
    pub stats: KbStats,
    /// The documents' metadata, by corpus position.
    pub meta: MetaTable,
    /// Files found but not used (other extensions).
    pub skipped_files: usize,
}

/// Whether a file is part of a knowledge base.
fn is_source(path: &Path) -> bool {
    let sidecar = metadata::is_sidecar(&path.to_string_lossy());
    if sidecar || jsonl::graph_kind(path).is_some() || html::is_html(path) {
        return true;
    }
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    ["md", "markdown", "txt"]
        .iter()
        .any(|known| ext.eq_ignore_ascii_case(known))
}

/// Reads every source file under `root`, sorted by relative path.
pub(crate) fn read_dir(root: &Path) -> Result<(Vec<SourceFile>, usize), RetrievalError> {
    let mut files = Vec::new();
    let mut skipped = 0;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| RetrievalError::io(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| RetrievalError::io(&dir, e))?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let file_type = entry
                .file_type()
                .map_err(|e| RetrievalError::io(&path, e))?;
            if file_type.is_dir() {
                // A folder written by ingest holds an index, not sources.
                if !path.join(MANIFEST).exists() {
                    pending.push(path);
                }
                continue;
            }
            // Symlinked files are followed; symlinked folders are not (no cycles).
            if !path.is_file() {
                continue;
            }
            if !is_source(&path) {
                skipped += 1;
                continue;
            }
            let bytes = fs::read(&path).map_err(|e| RetrievalError::io(&path, e))?;
            let text = if html::is_html(&path) {
                html::to_text(&path, &bytes)?
            } else {
                String::from_utf8(bytes).map_err(|_| RetrievalError::Invalid {
                    path: path.clone(),
                    message: "not valid UTF-8 text".into(),
                })?
            };
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let rel: Vec<_> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            files.push(SourceFile {
                rel: rel.join("/"),
                path,
                text,
            });
        }
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok((files, skipped))
}

/// Turns source files into documents. `root` is named in the "no documents" error.
pub(crate) fn build(root: &Path, files: &[SourceFile]) -> Result<Corpus, RetrievalError> {
    let mut docs = Vec::new();
    let mut stats = KbStats::default();
    let (mut nodes, mut edges, mut communities) = (Vec::new(), Vec::new(), Vec::new());
    let sidecars = metadata::sidecars(files)?;
    let mut meta = MetaTable::default();
    for file in files.iter().filter(|f| !metadata::is_sidecar(&f.rel)) {
        match jsonl::graph_kind(Path::new(&file.rel)) {
            Some(DocKind::Node) => nodes.push(jsonl(file)),
            Some(DocKind::Edge) => edges.push(jsonl(file)),
            Some(_) => communities.push(jsonl(file)),
            None => {
                let fallback = passages::title_from_path(&file.rel);
                let (doc_meta, text) = metadata::of_document(file, &sidecars);
                let name = passages::folder_name(&file.rel);
                let text = clean::clean(text);
                let (_, parts) = passages::split_named(&text, &fallback, name.as_deref());
                if parts.is_empty() {
                    continue;
                }
                stats.documents += 1;
                meta.push(docs.len(), parts.len(), doc_meta);
                for (n, passage) in parts.into_iter().enumerate() {
                    let id = format!("{}#{}", file.rel, n + 1);
                    docs.push(Document {
                        url: format!("kb://{id}"),
                        id,
                        title: passage.title,
                        content: passage.text,
                        score: 0.0,
                        kind: DocKind::Episode,
                        clear_match: false,
                        from_graph: false,
                    });
                }
            }
        }
    }
    let graph_docs = jsonl::documents(&nodes, &edges, &communities)?;
    let records = metadata::of_records(&[&nodes, &edges, &communities])?;
    for (at, record) in (docs.len()..).zip(records) {
        meta.push(at, 1, record);
    }
    docs.extend(graph_docs);
    for doc in &docs {
        match doc.kind {
            DocKind::Episode => stats.passages += 1,
            DocKind::Node => stats.nodes += 1,
            DocKind::Edge => stats.edges += 1,
            DocKind::Community => stats.communities += 1,
            DocKind::Web => {}
        }
    }
    if docs.is_empty() {
        return Err(RetrievalError::NoDocuments {
            path: root.to_path_buf(),
        });
    }
    Ok(Corpus {
        docs,
        stats,
        meta,
        skipped_files: 0,
    })
}

fn jsonl(file: &SourceFile) -> JsonlFile<'_> {
    JsonlFile {
        path: file.path.clone(),
        rel: file.rel.clone(),
        text: &file.text,
    }
}

/// Reads and builds the corpus of a folder.
pub(crate) fn load_dir(root: &Path) -> Result<Corpus, RetrievalError> {
    let (files, skipped_files) = read_dir(root)?;
    let mut corpus = build(root, &files)?;
    corpus.skipped_files = skipped_files;
    Ok(corpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_walked_recursively_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("sub/deeper")).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join("b.md"), "# B\n\nbee text").unwrap();
        fs::write(root.join("sub/deeper/a.TXT"), "ay text").unwrap();
        fs::write(
            root.join("sub/nodes.jsonl"),
            "{\"id\":\"n\",\"name\":\"N\"}\n",
        )
        .unwrap();
        fs::write(root.join("image.png"), [0u8, 159]).unwrap();
        fs::write(root.join(".git/x.md"), "hidden").unwrap();
        let corpus = load_dir(root).unwrap();
        let urls: Vec<&str> = corpus.docs.iter().map(|d| d.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "kb://b.md#1",
                "kb://sub/deeper/a.TXT#1",
                "kb://sub/nodes.jsonl#n"
            ]
        );
        assert_eq!(corpus.docs[1].title, "A");
        assert_eq!(corpus.skipped_files, 1);
        let stats = corpus.stats;
        assert_eq!((stats.documents, stats.passages, stats.nodes), (2, 2, 1));
    }

    #[test]
    fn empty_and_non_utf8_folders_fail_clearly() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("notes.csv"), "a,b").unwrap();
        fs::write(dir.path().join("empty.md"), "").unwrap();
        let err = load_dir(dir.path()).err().unwrap();
        assert!(matches!(err, RetrievalError::NoDocuments { .. }), "{err}");
        fs::write(dir.path().join("bad.txt"), [0xffu8, 0xfe]).unwrap();
        let err = load_dir(dir.path()).err().unwrap();
        assert!(
            err.to_string().ends_with("bad.txt: not valid UTF-8 text"),
            "{err}"
        );
        let err = load_dir(&dir.path().join("missing")).err().unwrap();
        assert!(matches!(err, RetrievalError::Io { .. }), "{err}");
    }
}
