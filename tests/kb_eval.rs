//! `bounded-rag eval` on the bundled sample's labelled set, offline: the retrieval finds the
//! expected sources and the answers cite them, with the document grader on and off.
use bounded_rag::config::Settings;
use bounded_rag::entry::cli::eval::{evaluate, read_cases, source_matches, EvalReport};
use bounded_rag::entry::App;
use std::path::Path;

fn questions() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/eval/durian.jsonl"))
}

async fn run(grading: bool) -> EvalReport {
    let state = tempfile::tempdir().unwrap();
    let settings = Settings {
        state_dir: state.path().to_path_buf(),
        ..Settings::default()
    };
    let app = App::build(settings).await.unwrap();
    let cases = read_cases(questions()).unwrap();
    evaluate(&app, &cases, 5, Some(grading), None)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_labelled_sample_set_meets_its_targets_with_and_without_the_grader() {
    for grading in [true, false] {
        let report = run(grading).await;
        assert_eq!(report.grading, grading);
        assert_eq!(report.questions, 30);
        assert_eq!(report.retrieval.as_deref(), Some("bm25"));
        let recall = report.recall_at_k.unwrap();
        let cited = report.cited_share.unwrap();
        assert!(recall >= 0.9, "recall@5 {recall} (grading {grading})");
        assert!(cited >= 0.85, "cited {cited} (grading {grading})");
        assert_eq!(report.routes.get("kg_retrieval"), Some(&30));
        // Every question's retrieval returned five documents.
        assert!(report.cases.iter().all(|c| c.retrieved.len() == 5));
    }
}

#[test]
fn sources_match_by_path_fragment_or_url_and_bad_lines_are_named() {
    assert!(source_matches("patch-canker.md", "kb://patch-canker.md#2"));
    assert!(source_matches(
        "patch-canker.md#2",
        "kb://patch-canker.md#2"
    ));
    assert!(source_matches(
        "kb://patch-canker.md#2",
        "kb://patch-canker.md#2"
    ));
    assert!(!source_matches("patch-canker.md", "kb://pink-disease.md#1"));
    // A PDF passage cites its page (RFC 8118); the document name still matches.
    assert!(source_matches("guide.pdf", "kb://guide.pdf#page=3"));
    assert!(source_matches("guide.pdf#page=3", "kb://guide.pdf#page=3"));
    assert!(!source_matches("guide", "kb://guide.pdf#page=3"));
    assert!(!source_matches("patch", "kb://patch-canker.md#1"));
    // A release's folder matches another version of the same release, and nothing else.
    assert!(source_matches(
        "moto-5.2.5/README.md",
        "kb://moto-5.2.6/README.md#1"
    ));
    assert!(source_matches(
        "python-dateutil-2.9.0/README.txt",
        "kb://python-dateutil-2.9.0.post0/README.txt#3"
    ));
    assert!(!source_matches(
        "moto-5.2.5/README.md",
        "kb://motor-5.2.5/README.md#1"
    ));
    assert!(!source_matches(
        "moto-5.2.5/README.md",
        "kb://moto-5.2.6/CHANGES.md#1"
    ));
    assert!(!source_matches(
        "moto-5.2.5/README.md#2",
        "kb://moto-5.2.6/README.md#2"
    ));
    assert!(!source_matches("docs/README.md", "kb://docs-2/README.md#1"));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("q.jsonl");
    std::fs::write(&file, "{\"question\": \"a\"}\n\n{\"questions\": \"b\"}\n").unwrap();
    let err = read_cases(&file).unwrap_err();
    assert!(err.contains("q.jsonl:3:"), "{err}");
}

#[tokio::test]
async fn the_compare_table_has_one_row_per_retrieval() {
    let report = run(true).await;
    let table = bounded_rag::entry::cli::eval::render_compare(&[report.clone(), report]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[0].starts_with("retrieval"), "{table}");
    assert!(
        lines[1].starts_with("bm25 ") && lines[1].contains(" 30 "),
        "{table}"
    );
    assert!(lines[3].starts_with("k 5 · grading on · kb "), "{table}");
}
