//! Documents as people keep them: PDF (groff and pdfTeX), Word (pandoc), reStructuredText and
//! CSV fixtures made by real tools (`scripts/make-format-fixtures.sh`), ingested through the
//! library and the `bounded-rag` binary: formats and pages in the manifest, page-exact
//! citations, every unreadable file named with its reason, `--strict`, `MAX_DOCUMENT_BYTES`,
//! and bundles written before these fields still opening.
use bounded_rag::ingest::ingest_dir;
use bounded_rag::kb::KnowledgeBase;
use bounded_rag::knowledge::DocKind;
use bounded_rag::knowledge::{Format, SkipReason, SkippedFile};
use bounded_rag::search::RetrievalOptions;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats")
        .join(kind)
}

/// A folder holding copies of the fixtures of `kinds` (flat), and one `.png`.
fn folder(kinds: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for kind in kinds {
        for entry in fs::read_dir(fixtures(kind)).unwrap() {
            let path = entry.unwrap().path();
            fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    fs::write(dir.path().join("photo.png"), [0x89, b'P', b'N', b'G']).unwrap();
    dir
}

fn passages() -> RetrievalOptions {
    RetrievalOptions {
        limit: 1,
        nodes: false,
        edges: false,
        episodes: true,
        communities: false,
        filter: None,
    }
}

fn top(kb: &KnowledgeBase, query: &str) -> bounded_rag::knowledge::Document {
    let docs = kb.search(query, &passages()).unwrap();
    assert_eq!(docs[0].kind, DocKind::Episode);
    docs.into_iter().next().unwrap_or_else(|| panic!("{query}"))
}

#[test]
fn every_format_is_read_with_its_structure_and_pdf_passages_cite_their_page() {
    let source = folder(&["good"]);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("kb");
    let summary = ingest_dir(source.path(), &target).unwrap();
    assert_eq!(summary.stats.documents, 5);
    let formats: Vec<(&str, Format, Option<usize>)> = summary
        .manifest
        .documents
        .iter()
        .map(|d| (d.path.as_str(), d.format, d.pages))
        .collect();
    assert_eq!(
        formats,
        [
            ("field-guide.pdf", Format::Pdf, Some(3)),
            ("handbook.docx", Format::Docx, None),
            ("orchard-log.pdf", Format::Pdf, Some(4)),
            ("release-notes.rst", Format::Rst, None),
            ("varieties.csv", Format::Csv, None),
        ]
    );
    assert_eq!(
        summary.skipped,
        [SkippedFile {
            path: "photo.png".into(),
            reason: SkipReason::UnknownExtension
        }]
    );

    let kb = bounded_rag::ingest::load_kb(&target).unwrap();
    // groff: the answer is on page 2; the running footer and the "-2-" page number are gone.
    let doc = top(&kb, "phosphonic acid trunk injection for patch canker");
    assert_eq!(doc.url, "kb://field-guide.pdf#page=2");
    assert!(
        doc.content.contains("twenty millilitres per tree"),
        "{doc:?}"
    );
    assert!(
        !doc.content.contains("-2-") && !doc.content.contains("Durian Field Guide"),
        "{doc:?}"
    );
    // pdfTeX: one fact per page, each cited on its own page.
    for (query, page) in [
        ("irrigation pump replaced bearings", 1),
        ("zinc sulphate foliar spray", 2),
        ("hand-pollinated flowers nectar bats", 3),
        ("mealybugs ladybird Cryptolaemus", 4),
    ] {
        let doc = top(&kb, query);
        assert_eq!(
            doc.url,
            format!("kb://orchard-log.pdf#page={page}"),
            "{query}"
        );
    }
    // Word: headings from the paragraph styles, tables as rows.
    let doc = top(&kb, "cleft grafted rootstock pencil");
    assert!(doc.url.starts_with("kb://handbook.docx#"), "{doc:?}");
    // Short sections merge as in Markdown, their headings kept as lines.
    assert_eq!(doc.title, "Nursery Handbook");
    assert!(
        doc.content
            .contains("\n\nGrafting\nSeedlings are cleft grafted")
            && doc
                .content
                .contains("\n\nAftercare\nWater the grafted plants"),
        "{doc:?}"
    );
    let doc = top(&kb, "rice husk charcoal potting mix");
    assert!(
        doc.content
            .contains("Component: Rice husk charcoal; Share: 30%; Purpose: drainage and aeration"),
        "{doc:?}"
    );
    // reStructuredText: titles are headings, roles and references read as their text.
    let doc = top(&kb, "plan_harvest abscission ring");
    assert_eq!(doc.title, "Release notes — Version 2.1");
    let words = doc.content.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.starts_with("New in version 2.1: The plan_harvest helper.")
            && words.contains("plan_harvest schedules a tree")
            && words.contains("see the harvest guide and Orchard Planner docs")
            && words.contains(
                "```\norchard-planner migrate --from 2.0\n```"
                    .replace('\n', " ")
                    .as_str()
            )
            && !words.contains(":func:"),
        "{doc:?}"
    );
    // CSV: a row reads `column: value; ...`.
    let doc = top(&kb, "Black Thorn durian variety");
    assert!(
        doc.content.contains(
            "variety: Black Thorn; origin: Penang; flesh: orange-red, creamy; season: July to August"
        ),
        "{doc:?}"
    );
}

#[test]
fn unreadable_files_are_named_with_their_reason_and_the_rest_is_ingested() {
    let source = folder(&["good", "bad"]);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("kb");
    let summary = ingest_dir(source.path(), &target).unwrap();
    assert_eq!(summary.stats.documents, 5);
    let reasons: Vec<(&str, &SkipReason)> = summary
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), &s.reason))
        .collect();
    let [corrupt, empty, encrypted, photo, ragged, random, scan, truncated] = reasons[..] else {
        panic!("{reasons:?}");
    };
    assert!(
        matches!(corrupt, ("corrupt.pdf", SkipReason::Corrupt { .. })),
        "{corrupt:?}"
    );
    assert_eq!(empty, ("empty.pdf", &SkipReason::Empty));
    assert_eq!(encrypted, ("encrypted.pdf", &SkipReason::Encrypted));
    assert_eq!(photo, ("photo.png", &SkipReason::UnknownExtension));
    assert_eq!(
        ragged,
        (
            "ragged.csv",
            &SkipReason::RaggedRows {
                line: 4,
                expected: 3,
                found: 4
            }
        )
    );
    assert!(
        matches!(random, ("random.docx", SkipReason::Corrupt { detail }) if detail.starts_with("not a zip archive")),
        "{random:?}"
    );
    assert_eq!(scan, ("scan.pdf", &SkipReason::NoTextLayer));
    assert_eq!(truncated, ("truncated.pdf", &SkipReason::Truncated));
    // Named in the summary and in the manifest.
    let text = summary.to_string();
    assert!(text.contains("; 8 files skipped:"), "{text}");
    assert!(
        text.contains("\n  skipped scan.pdf: scanned? no text to index"),
        "{text}"
    );
    assert!(
        text.contains("\n  skipped encrypted.pdf: encrypted PDF"),
        "{text}"
    );
    assert_eq!(summary.manifest.skipped, summary.skipped);
    let on_disk: Value =
        serde_json::from_slice(&fs::read(target.join("kb-manifest.json")).unwrap()).unwrap();
    assert_eq!(
        on_disk["skipped"][7],
        serde_json::json!({"path": "truncated.pdf", "reason": "truncated"})
    );
    assert_eq!(
        on_disk["documents"][0],
        serde_json::json!({"path": "field-guide.pdf", "format": "pdf", "pages": 3, "passages": 3})
    );
}

#[test]
fn a_bundle_written_without_formats_and_skips_still_opens() {
    let source = folder(&["good", "bad"]);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("kb");
    ingest_dir(source.path(), &target).unwrap();
    let path = target.join("kb-manifest.json");
    let mut manifest: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let fields = manifest.as_object_mut().unwrap();
    assert!(fields.remove("documents").is_some() && fields.remove("skipped").is_some());
    fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let kb = bounded_rag::ingest::load_kb(&target).unwrap();
    assert_eq!(kb.stats().documents, 5);
    let doc = top(&kb, "phosphonic acid trunk injection for patch canker");
    assert_eq!(doc.url, "kb://field-guide.pdf#page=2");
}

fn cli(state: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bounded-rag"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("STATE_DIR", state)
        .env("RUST_LOG", "error")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_cli_ingests_every_format_names_skips_fails_strict_and_cites_the_pdf_page() {
    let source = folder(&["good", "bad"]);
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    let (src, out) = (source.path().to_str().unwrap(), kb.to_str().unwrap());

    // --strict: any skip fails with exit 2, naming each file, and writes nothing.
    let run = cli(dir.path(), &[], &["ingest", src, "--out", out, "--strict"]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run.stdout));
    let err = text(&run.stderr);
    assert!(err.contains("8 files skipped (--strict)"), "{err}");
    assert!(
        err.contains("ragged.csv: ragged rows: line 4 has 4 fields, the header 3"),
        "{err}"
    );
    assert!(!kb.exists());

    // A small MAX_DOCUMENT_BYTES skips the larger PDF unread; the rest is ingested.
    let limit = [("MAX_DOCUMENT_BYTES", "20000")];
    let run = cli(dir.path(), &limit, &["ingest", src, "--out", out]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let summary = text(&run.stdout);
    assert!(summary.contains("4 documents"), "{summary}");
    assert!(
        summary
            .contains("\n  skipped orchard-log.pdf: 31618 bytes, over MAX_DOCUMENT_BYTES (20000)"),
        "{summary}"
    );
    assert!(summary.contains("; 9 files skipped:"), "{summary}");
    let bad = [("MAX_DOCUMENT_BYTES", "lots")];
    let run = cli(dir.path(), &bad, &["ingest", src, "--out", out]);
    assert_eq!(run.status.code(), Some(2));
    assert!(text(&run.stderr).contains("MAX_DOCUMENT_BYTES: must be a positive number"));

    // Without --strict and the limit: ingested, and a question about page 2 cites page 2.
    let run = cli(dir.path(), &[], &["ingest", src, "--out", out]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let run = cli(
        dir.path(),
        &[("KB_PATH", out)],
        &["ask", "What is the treatment for patch canker?", "--json"],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    let v: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        v["citations"][0]["url"], "kb://field-guide.pdf#page=2",
        "{v}"
    );
    assert!(
        v["answer"].as_str().unwrap().contains("phosphonic acid"),
        "{v}"
    );
}
