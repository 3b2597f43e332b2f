//! Source files into a corpus: passages of every document (PDF pages apart, CSV rows as
//! records), the graph documents, the metadata spans and the counts, in index order.
#[cfg(feature = "formats")]
use super::csv;
use super::jsonl::{self, JsonlFile};
use super::passages::{self, Passage};
use super::read::ReadLimits;
use super::source_file::SourceFile;
use super::walk::read_dir;
use super::{clean, metadata};
use crate::ingest::IngestError;
use crate::knowledge::{Corpus, KbStats, MetaTable};
use crate::knowledge::{DocKind, Document};
use crate::knowledge::{DocumentInfo, Format, SkipReason, SkippedFile};
use std::path::Path;

/// A document's passages, each with the PDF page it is on (`None` for other formats).
fn document_passages(file: &SourceFile, text: &str) -> Vec<(Option<usize>, Passage)> {
    let fallback = passages::title_from_path(&file.rel);
    let name = passages::folder_name(&file.rel);
    match file.format {
        Some(Format::Pdf) => {
            let mut out = Vec::new();
            // Passages never span pages: each page is split on its own.
            for (n, page) in file.pages.iter().enumerate() {
                let text = clean::clean(page);
                let (_, parts) = passages::split_named(&text, &fallback, name.as_deref());
                out.extend(parts.into_iter().map(|p| (Some(n + 1), p)));
            }
            out
        }
        #[cfg(feature = "formats")]
        Some(Format::Csv | Format::Tsv) => {
            let rows: Vec<String> = text.lines().map(str::to_owned).collect();
            csv::passages(&rows, &fallback)
                .into_iter()
                .map(|p| (None, p))
                .collect()
        }
        _ => {
            let text = clean::clean(text);
            let (_, parts) = passages::split_named(&text, &fallback, name.as_deref());
            parts.into_iter().map(|p| (None, p)).collect()
        }
    }
}

/// Turns source files into documents. `root` is named in the "no documents" error; text
/// documents without a passage are added to `skipped` ([`SkipReason::Empty`]).
pub(crate) fn build(
    root: &Path,
    files: &[SourceFile],
    mut skipped: Vec<SkippedFile>,
) -> Result<Corpus, IngestError> {
    let mut docs = Vec::new();
    let mut documents = Vec::new();
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
                let (doc_meta, text) = metadata::of_document(file, &sidecars);
                let parts = document_passages(file, text);
                if parts.is_empty() {
                    skipped.push(SkippedFile {
                        path: file.rel.clone(),
                        reason: SkipReason::Empty,
                    });
                    continue;
                }
                stats.documents += 1;
                documents.push(DocumentInfo {
                    path: file.rel.clone(),
                    format: file.format.unwrap_or(Format::Text),
                    pages: (!file.pages.is_empty()).then_some(file.pages.len()),
                    passages: parts.len(),
                });
                meta.push(docs.len(), parts.len(), doc_meta);
                for (n, (page, passage)) in parts.into_iter().enumerate() {
                    let id = format!("{}#{}", file.rel, n + 1);
                    // RFC 8118: a PDF passage cites its page.
                    let url = match page {
                        Some(page) => format!("kb://{}#page={page}", file.rel),
                        None => format!("kb://{id}"),
                    };
                    docs.push(Document {
                        url,
                        id,
                        title: passage.title,
                        content: passage.text,
                        score: 0.0,
                        kind: DocKind::Episode,
                        clear_match: false,
                        from_graph: false,
                        vector_rank: None,
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
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    if docs.is_empty() {
        return Err(IngestError::NoDocuments {
            path: root.to_path_buf(),
            skipped,
        });
    }
    Ok(Corpus {
        docs,
        stats,
        meta,
        documents,
        skipped,
    })
}

fn jsonl(file: &SourceFile) -> JsonlFile<'_> {
    JsonlFile {
        path: file.path.clone(),
        rel: file.rel.clone(),
        text: &file.text,
    }
}

/// Reads and builds the corpus of a folder, with `MAX_DOCUMENT_BYTES` from the environment.
pub(crate) fn load_dir(root: &Path) -> Result<Corpus, IngestError> {
    load_dir_with(root, &ReadLimits::from_env()?)
}

/// [`load_dir`] with explicit limits.
pub(crate) fn load_dir_with(root: &Path, limits: &ReadLimits) -> Result<Corpus, IngestError> {
    let (files, skipped) = read_dir(root, limits)?;
    build(root, &files, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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
        assert_eq!(
            corpus.skipped,
            [SkippedFile {
                path: "image.png".into(),
                reason: SkipReason::UnknownExtension
            }]
        );
        let stats = corpus.stats;
        assert_eq!((stats.documents, stats.passages, stats.nodes), (2, 2, 1));
    }

    #[test]
    fn empty_and_non_utf8_folders_fail_clearly() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("notes.csv"), "a,b").unwrap();
        fs::write(dir.path().join("empty.md"), "").unwrap();
        let err = load_dir(dir.path()).err().unwrap();
        assert!(matches!(err, IngestError::NoDocuments { .. }), "{err}");
        // Every skipped file is named with its reason.
        let text = err.to_string();
        assert!(text.contains("all 2 files found were skipped"), "{text}");
        assert!(
            text.contains("empty.md: ") && text.contains("notes.csv: "),
            "{text}"
        );
        fs::write(dir.path().join("bad.txt"), [0xffu8, 0xfe]).unwrap();
        let err = load_dir(dir.path()).err().unwrap();
        assert!(
            err.to_string().ends_with("bad.txt: not valid UTF-8 text"),
            "{err}"
        );
        let err = load_dir(&dir.path().join("missing")).err().unwrap();
        assert!(matches!(err, IngestError::Io { .. }), "{err}");
    }
}
