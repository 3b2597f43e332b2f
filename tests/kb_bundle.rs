//! Bundles through the public API: what `ingest` writes, that the content hash only follows
//! the content, HTML sources, and that a failed ingest leaves nothing a reader could load.
use bounded_rag::ingest::ingest_dir;
use bounded_rag::kb::format::{Manifest, FORMAT_VERSION, MANIFEST};
use bounded_rag::search::RetrievalOptions;
use std::fs;
use std::path::Path;

fn kb_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kb"))
}

fn manifest(dir: &Path) -> Manifest {
    let path = dir.join(MANIFEST);
    Manifest::parse(&fs::read(&path).unwrap(), &path).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn ingest_writes_a_self_describing_bundle_whose_hash_follows_the_content() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    copy_dir(kb_dir(), &src);
    let out = work.path().join("bundle");
    let first = ingest_dir(&src, &out).unwrap();
    let m = manifest(&out);
    assert_eq!(m.format_version, FORMAT_VERSION);
    assert_eq!(m, first.manifest);
    assert_eq!(m.counts, bounded_rag::ingest::sample_kb().unwrap().stats());
    assert_eq!(m.counts.documents, 11);
    assert!(m.counts.nodes > 0 && m.counts.edges > 0 && m.counts.communities > 0);
    assert!(m.embedding.is_none(), "no embeddings endpoint, no vectors");
    assert!(m.created_at.starts_with("20"), "{}", m.created_at);
    assert!(m.files.iter().any(|f| f.path == "index/meta.json"));
    assert!(m.files.iter().all(|f| !f.path.ends_with(".lock")));
    for file in &m.files {
        assert_eq!(
            fs::metadata(out.join(&file.path)).unwrap().len(),
            file.bytes
        );
    }

    // The bundle's version is the embedded sample's: same content, same hash.
    let kb = bounded_rag::ingest::load_kb(&out).unwrap();
    assert_eq!(kb.version(), m.content_hash);
    assert_eq!(
        kb.version(),
        bounded_rag::ingest::sample_kb().unwrap().version()
    );

    // Re-ingesting the unchanged folder gives the same hash (the build time differs).
    let again = ingest_dir(&src, &out).unwrap();
    assert_eq!(again.manifest.content_hash, m.content_hash);
    // Any change to a source changes it.
    fs::write(src.join("notes.txt"), "Durian flowers open at dusk.").unwrap();
    let changed = ingest_dir(&src, &out).unwrap();
    assert_ne!(changed.manifest.content_hash, m.content_hash);
    assert_eq!(changed.stats.documents, 12);
    // Nothing is left beside the bundle.
    let names: Vec<String> = fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn html_pages_are_indexed_as_text() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(
        src.join("canker.html"),
        "<html><head><title>x</title><script>var hidden = 'phosphonate';</script></head>\
         <body><h1>Patch canker</h1><p>Inject <em>potassium phosphite</em> into the trunk \
         after <a href='/rain'>heavy rain</a>.</p></body></html>",
    )
    .unwrap();
    let out = work.path().join("bundle");
    ingest_dir(&src, &out).unwrap();
    let kb = bounded_rag::ingest::load_kb(&out).unwrap();
    let hits = kb
        .search("potassium phosphite trunk", &RetrievalOptions::default())
        .unwrap();
    assert_eq!(hits[0].url, "kb://canker.html#1");
    assert_eq!(hits[0].title, "Patch canker");
    assert_eq!(
        hits[0].content,
        "Inject potassium phosphite into the trunk after heavy rain."
    );
    assert!(kb
        .search("phosphonate", &RetrievalOptions::default())
        .unwrap()
        .is_empty());
}

#[test]
fn an_unreadable_file_is_named_and_the_previous_bundle_stays() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    copy_dir(kb_dir(), &src);
    let out = work.path().join("bundle");
    let good = ingest_dir(&src, &out).unwrap().manifest.content_hash;

    fs::write(src.join("broken.md"), [0xff, 0xfe, 0x00]).unwrap();
    let err = ingest_dir(&src, &out).unwrap_err().to_string();
    assert!(err.contains("broken.md") && err.contains("UTF-8"), "{err}");
    assert_eq!(bounded_rag::ingest::load_kb(&out).unwrap().version(), good);

    fs::remove_file(src.join("broken.md")).unwrap();
    fs::write(src.join("edges.jsonl"), "{\"source\": 1}\n").unwrap();
    let err = ingest_dir(&src, &out).unwrap_err().to_string();
    assert!(err.contains("edges.jsonl:1:"), "{err}");
    assert_eq!(bounded_rag::ingest::load_kb(&out).unwrap().version(), good);

    // A fresh target is never created by a failed ingest.
    let fresh = work.path().join("fresh");
    assert!(ingest_dir(&src, &fresh).is_err());
    assert!(!fresh.exists());
}

#[test]
fn a_bundle_cut_short_is_refused_at_load() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("bundle");
    ingest_dir(kb_dir(), &out).unwrap();
    let m = manifest(&out);
    let biggest = m.files.iter().max_by_key(|f| f.bytes).unwrap();
    let path = out.join(&biggest.path);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = bounded_rag::ingest::load_kb(&out).unwrap_err().to_string();
    assert!(err.contains("the bundle is incomplete"), "{err}");
}
