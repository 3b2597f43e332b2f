//! The knowledge base through the public API: the embedded sample, kind toggles, limits,
//! loading user folders, ingest, and the errors a user sees.
use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::ingest::{ingest_dir, IngestError};
use bounded_rag::kb::Retriever;
use bounded_rag::knowledge::DocKind;
use bounded_rag::search::{RetrievalError, RetrievalOptions};
use std::fs;
use std::path::Path;

const PATCH_CANKER: &str = "What causes patch canker in durian?";

fn options(limit: usize, kinds: &[DocKind]) -> RetrievalOptions {
    RetrievalOptions {
        limit,
        nodes: kinds.contains(&DocKind::Node),
        edges: kinds.contains(&DocKind::Edge),
        episodes: kinds.contains(&DocKind::Episode),
        communities: kinds.contains(&DocKind::Community),
        filter: None,
    }
}

const ALL: [DocKind; 4] = [
    DocKind::Episode,
    DocKind::Node,
    DocKind::Edge,
    DocKind::Community,
];

fn kb_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kb"))
}

#[tokio::test]
async fn embedded_kb_answers_patch_canker_with_its_passage_first() {
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    let docs = kb
        .retrieve(PATCH_CANKER, &RetrievalOptions::default())
        .await
        .unwrap();
    assert_eq!(docs.len(), RetrievalOptions::default().limit);
    let top = &docs[0];
    assert_eq!(top.kind, DocKind::Episode);
    assert!(top.url.starts_with("kb://patch-canker.md#"), "{}", top.url);
    assert!(top.title.starts_with("Patch canker"), "{}", top.title);
    assert!(top.content.contains("Phytophthora palmivora"));
    assert!(docs.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(docs
        .iter()
        .all(|d| d.url.starts_with("kb://") && d.score > 0.0));

    let all = kb.search(PATCH_CANKER, &options(10, &ALL)).unwrap();
    assert_eq!(all[0], *top, "communities on or off, the passage leads");
}

#[test]
fn toggles_select_kinds_exactly() {
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    let query = "patch canker phosphonate drainage Phytophthora";
    for kind in ALL {
        let docs = kb.search(query, &options(10, &[kind])).unwrap();
        assert!(!docs.is_empty(), "{kind:?}");
        assert!(docs.iter().all(|d| d.kind == kind), "{kind:?}: {docs:?}");
    }
    let pair = [DocKind::Node, DocKind::Edge];
    let docs = kb.search(query, &options(10, &pair)).unwrap();
    assert!(docs.iter().all(|d| pair.contains(&d.kind)));
    assert!(docs.iter().any(|d| d.kind == DocKind::Node));
    assert!(docs.iter().any(|d| d.kind == DocKind::Edge));
    assert!(kb.search(query, &options(10, &[])).unwrap().is_empty());
}

#[test]
fn limit_is_respected() {
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    for limit in [1, 2, 5, 10] {
        let docs = kb
            .search("durian fruit borer", &options(limit, &ALL))
            .unwrap();
        assert_eq!(docs.len(), limit);
    }
    assert!(kb.search("durian", &options(0, &ALL)).unwrap().is_empty());
    let huge = kb.search("durian", &options(usize::MAX, &ALL)).unwrap();
    assert!(huge.len() <= kb.len());
}

#[test]
fn user_punctuation_never_breaks_a_query() {
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    for q in [
        "patch canker: AND OR NOT (title:\"x",
        "-durian +borer ^2 ~ * ? [a TO b} {",
        "what?!",
        "",
        "  ",
        "ドリアン 病気",
    ] {
        kb.search(q, &options(5, &ALL)).unwrap();
    }
}

#[test]
fn stats_describe_the_embedded_kb() {
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    let stats = kb.stats();
    assert_eq!(stats.documents, 11);
    assert_eq!(kb.len(), stats.indexed());
    assert!(
        stats.nodes >= 20 && stats.edges >= 30 && stats.communities >= 3,
        "{stats}"
    );
    assert!(stats.to_string().contains("11 documents"));
}

#[test]
fn loading_the_kb_folder_matches_the_embedded_kb() {
    let embedded = bounded_rag::ingest::sample_kb().unwrap();
    let loaded = bounded_rag::ingest::load_kb(kb_dir()).unwrap();
    assert_eq!(loaded.stats(), embedded.stats());
    let opts = options(5, &ALL);
    assert_eq!(
        loaded.search(PATCH_CANKER, &opts).unwrap(),
        embedded.search(PATCH_CANKER, &opts).unwrap()
    );
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn user_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "mango/anthracnose.md",
        "# Mango anthracnose\n\nBlack spots on mango fruit are caused by Colletotrichum.\n",
    );
    write(
        root,
        "mango/hoppers.txt",
        "Mango hoppers suck sap from flower panicles.\n",
    );
    write(
        root,
        "notes.markdown",
        "# Citrus canker\n\nCitrus canker is a bacterial disease spread by rain.\n",
    );
    write(root, "graph/nodes.jsonl", "{\"id\":\"c\",\"name\":\"Colletotrichum\",\"type\":\"pathogen\",\"summary\":\"A fungus.\"}\n{\"id\":\"m\",\"name\":\"Mango\",\"type\":\"crop\",\"summary\":\"A fruit tree.\"}\n");
    write(root, "graph/edges.jsonl", "{\"source\":\"c\",\"target\":\"m\",\"relation\":\"infects\",\"fact\":\"Colletotrichum infects mango fruit.\"}\n");
    write(root, "photo.jpg", "not text");
    dir
}

#[test]
fn ingest_then_load_gives_the_same_results_as_the_raw_folder() {
    let source = user_folder();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("mango-kb");
    let summary = ingest_dir(source.path(), &target).unwrap();
    assert_eq!(summary.stats.documents, 3);
    assert_eq!((summary.stats.nodes, summary.stats.edges), (2, 1));
    assert_eq!(summary.skipped_files, 1);
    assert!(summary.to_string().contains("3 documents"));

    let raw = bounded_rag::ingest::load_kb(source.path()).unwrap();
    let ingested = bounded_rag::ingest::load_kb(&target).unwrap();
    assert_eq!(raw.stats(), ingested.stats());
    for query in [
        "What causes black spots on mango?",
        "citrus canker rain",
        "hoppers",
    ] {
        let opts = options(3, &ALL);
        let (a, b) = (
            raw.search(query, &opts).unwrap(),
            ingested.search(query, &opts).unwrap(),
        );
        assert!(!a.is_empty(), "{query}");
        assert_eq!(a[0], b[0], "{query}");
    }
    let top = &ingested
        .search("black spots mango", &options(1, &[DocKind::Episode]))
        .unwrap()[0];
    assert_eq!(top.url, "kb://mango/anthracnose.md#1");

    // The embedded KB ingests too, and keeps its answer.
    let kb_out = out.path().join("durian-kb");
    ingest_dir(kb_dir(), &kb_out).unwrap();
    let docs = bounded_rag::ingest::load_kb(&kb_out)
        .unwrap()
        .search(PATCH_CANKER, &options(1, &ALL))
        .unwrap();
    assert!(docs[0].url.starts_with("kb://patch-canker.md#"));
}

#[test]
fn a_bad_jsonl_line_is_reported_with_file_and_line() {
    let source = user_folder();
    write(source.path(), "graph/edges.jsonl", "{\"source\":\"c\",\"target\":\"m\",\"relation\":\"infects\",\"fact\":\"ok\"}\n\n{\"source\":\"c\",\"target\":\"m\",\"relation\":\"infects\"}\n");
    let out = tempfile::tempdir().unwrap();
    for err in [
        bounded_rag::ingest::load_kb(source.path()).unwrap_err(),
        ingest_dir(source.path(), &out.path().join("kb")).unwrap_err(),
    ] {
        let IngestError::Parse { path, line, .. } = &err else {
            panic!("expected a parse error, got {err}");
        };
        assert!(path.ends_with("graph/edges.jsonl"), "{path:?}");
        assert_eq!(*line, 3);
        assert!(
            err.to_string()
                .contains("edges.jsonl:3: missing field `fact`"),
            "{err}"
        );
        assert_eq!(err.class(), ErrorClass::Permanent);
    }
    assert!(
        !out.path().join("kb").exists(),
        "nothing written on invalid input"
    );
}

#[test]
fn an_empty_folder_is_an_error_saying_so() {
    let empty = tempfile::tempdir().unwrap();
    let err = bounded_rag::ingest::load_kb(empty.path()).unwrap_err();
    assert!(matches!(err, IngestError::NoDocuments { .. }), "{err}");
    assert!(err.to_string().starts_with("no documents in "), "{err}");
    let out = tempfile::tempdir().unwrap();
    let err = ingest_dir(empty.path(), &out.path().join("kb")).unwrap_err();
    assert!(matches!(err, IngestError::NoDocuments { .. }), "{err}");

    let err = bounded_rag::ingest::load_kb(&empty.path().join("missing")).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn ingest_refuses_a_foreign_non_empty_target() {
    let source = user_folder();
    let target = tempfile::tempdir().unwrap();
    write(target.path(), "important.txt", "do not delete");
    let err = ingest_dir(source.path(), target.path()).unwrap_err();
    assert!(
        matches!(err, IngestError::Kb(RetrievalError::Target { .. })),
        "{err}"
    );
    assert!(
        err.to_string().contains("not a previous ingest output"),
        "{err}"
    );
    assert!(target.path().join("important.txt").exists());
}

#[test]
fn loading_an_ingested_kb_writes_nothing() {
    // Deployed knowledge bases sit on read-only filesystems (e.g. /var/task on Lambda).
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("kb");
    ingest_dir(kb_dir(), &target).unwrap();
    let index = target.join("index");
    for entry in fs::read_dir(&index).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".lock") {
            fs::remove_file(path).unwrap();
        }
    }
    let listing = |dir: &Path| {
        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let (before, before_root) = (listing(&index), listing(&target));
    let kb = bounded_rag::ingest::load_kb(&target).unwrap();
    assert!(!kb
        .search(PATCH_CANKER, &options(3, &ALL))
        .unwrap()
        .is_empty());
    drop(kb);
    assert_eq!(listing(&index), before);
    assert_eq!(listing(&target), before_root);
}
