//! Knowledge bases read from sources and indexed in memory: the sample compiled into the
//! binary ([`sample_kb`]) and a `KB_PATH` folder ([`load_kb`]: sources read and indexed at
//! load, or a bundle opened as is). Ingest reads the sources; the knowledge base is
//! [`crate::kb`]'s.
use super::describe;
use super::sources::{self, SourceFile};
use crate::ingest::IngestError;
use crate::kb::InMemory;
use crate::kb::KnowledgeBase;
use crate::knowledge::Corpus;
use std::path::{Path, PathBuf};

/// The `kb/` sample, compiled in: (relative path, text).
const EMBEDDED: &[(&str, &str)] = &[
    (
        "communities.jsonl",
        include_str!("../../kb/communities.jsonl"),
    ),
    ("edges.jsonl", include_str!("../../kb/edges.jsonl")),
    ("fruit-borer.md", include_str!("../../kb/fruit-borer.md")),
    ("fruit-rot.md", include_str!("../../kb/fruit-rot.md")),
    (
        "integrated-pest-management.md",
        include_str!("../../kb/integrated-pest-management.md"),
    ),
    (
        "leaf-spot-and-anthracnose.md",
        include_str!("../../kb/leaf-spot-and-anthracnose.md"),
    ),
    ("mealybugs.md", include_str!("../../kb/mealybugs.md")),
    ("nodes.jsonl", include_str!("../../kb/nodes.jsonl")),
    ("patch-canker.md", include_str!("../../kb/patch-canker.md")),
    ("pink-disease.md", include_str!("../../kb/pink-disease.md")),
    ("psyllid.md", include_str!("../../kb/psyllid.md")),
    (
        "root-rot-and-stem-canker.md",
        include_str!("../../kb/root-rot-and-stem-canker.md"),
    ),
    ("seed-borer.md", include_str!("../../kb/seed-borer.md")),
    ("stem-borer.md", include_str!("../../kb/stem-borer.md")),
];

/// The sample knowledge base compiled into the binary (durian pests and diseases).
pub fn sample_kb() -> Result<KnowledgeBase, IngestError> {
    let root = Path::new("<embedded kb>");
    let files: Vec<SourceFile> = EMBEDDED
        .iter()
        .map(|(rel, text)| SourceFile::text(root.join(rel), rel, (*text).to_owned()))
        .collect();
    let corpus = sources::build(root, &files, Vec::new())?;
    from_corpus(corpus, None)
}

/// Loads a folder: a previous `bounded-rag ingest` output (a bundle) is opened as is (no
/// re-indexing); any other folder is read and indexed in memory.
pub fn load_kb(path: &Path) -> Result<KnowledgeBase, IngestError> {
    let meta = std::fs::metadata(path).map_err(|e| IngestError::io(path, e))?;
    if !meta.is_dir() {
        return Err(IngestError::Invalid {
            path: path.to_path_buf(),
            message: "not a folder".into(),
        });
    }
    if crate::kb::holds_bundle(path) {
        return Ok(KnowledgeBase::open(path)?);
    }
    let corpus = sources::load_dir(path)?;
    from_corpus(corpus, Some(path.to_path_buf()))
}

/// The corpus indexed in memory; `origin` is the folder it was read from.
fn from_corpus(corpus: Corpus, origin: Option<PathBuf>) -> Result<KnowledgeBase, IngestError> {
    Ok(KnowledgeBase::index_in_memory(InMemory {
        docs: &corpus.docs,
        meta: corpus.meta,
        stats: corpus.stats,
        description: describe::derive(&corpus.docs),
        origin,
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_list_matches_the_kb_folder() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kb");
        let (files, skipped) = sources::read_dir(&dir, &Default::default()).unwrap();
        let on_disk: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        let embedded: Vec<&str> = EMBEDDED.iter().map(|(rel, _)| *rel).collect();
        assert_eq!(on_disk, embedded, "add new kb/ files to EMBEDDED");
        assert!(skipped.is_empty(), "{skipped:?}");
    }

    #[test]
    fn embedded_kb_indexes_every_kind() {
        let kb = sample_kb().unwrap();
        let stats = kb.stats();
        assert_eq!(stats.documents, 11);
        assert!(stats.passages >= stats.documents * 2, "{stats}");
        assert!(stats.nodes > 0 && stats.edges > 0 && stats.communities > 0);
        assert_eq!(kb.len(), stats.indexed());
        assert!(kb.origin().is_none());
        assert!(format!("{kb:?}").contains("stats"));
    }
}
