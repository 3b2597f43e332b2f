//! The knowledge-store conformance corpus and its CLI helpers: six documents with metadata
//! (tenant, region, year, updated, pinned), each mentioning "orchard", written as Markdown
//! with front matter, the filter cases with the documents each lets through (computed from
//! the metadata), and `ingest` / `kb search` through the `bounded-rag` binary (also of a
//! test's own pages into a bundle and PostgreSQL: [`in_bundle_and_postgres`]).

use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;

/// The corpus: name, tenant, region, year, updated, pinned. Every document mentions "orchard",
/// so a search for it returns every document its filter lets through.
pub type Doc = (
    &'static str,
    &'static str,
    &'static str,
    i64,
    &'static str,
    bool,
);
pub const DOCS: &[Doc] = &[
    ("drainage", "alice", "my", 2019, "2023-05-01", false),
    ("pruning", "alice", "th", 2021, "2024-02-10", true),
    ("mulching", "bob", "my", 2022, "2024-07-30", false),
    ("grafting", "bob", "vn", 2023, "2022-11-11", true),
    ("pollination", "carol", "th", 2024, "2025-01-15", false),
    ("harvest", "carol", "id", 2025, "2025-06-01", false),
];

pub fn write_corpus(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, tenant, region, year, updated, pinned) in DOCS {
        let text = format!(
            "---\ntenant: {tenant}\nregion: {region}\nyear: {year}\nupdated: {updated}\n\
             pinned: {pinned}\n---\n# {name} in the orchard\n\nNotes on {name} for the durian \
             orchard: when and how {name} is done, and what it changes for the trees.\n"
        );
        std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
    }
}

/// A temporary folder holding the corpus (in `corpus/`) and the test's state.
pub fn corpus_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    write_corpus(&corpus);
    (dir, corpus)
}

/// `ingest CORPUS --out TARGET` with `env`, which must succeed.
pub fn ingest(state: &Path, env: &[(&str, String)], corpus: &Path, target: &str) -> String {
    ok(run(
        state,
        env,
        &["-q", "ingest", corpus.to_str().unwrap(), "--out", target],
    ))
}

/// Where `kb search` and `ask` read a store: one variable and its value.
pub type Location = (&'static str, String);

/// `pages` (file name, text) written into `STATE/corpus` and ingested with `env` (the
/// embeddings) into a bundle (`STATE/bundle`) and into a PostgreSQL database `db`: each store's
/// name and where it is.
pub async fn in_bundle_and_postgres(
    state: &Path,
    env: &[(&str, String)],
    pages: &[(&str, String)],
    db: &str,
) -> [(&'static str, Location); 2] {
    let corpus = state.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    for (name, text) in pages {
        std::fs::write(corpus.join(name), format!("{text}\n")).unwrap();
    }
    let bundle = state.join("bundle");
    ingest(state, env, &corpus, bundle.to_str().unwrap());
    let pg = super::postgres::database(db).await;
    ingest(state, env, &corpus, &pg);
    [
        ("bundle", ("KB_PATH", bundle.to_str().unwrap().to_owned())),
        ("postgres", ("KB_URI", pg)),
    ]
}

pub fn run(state: &Path, env: &[(&str, String)], args: &[&str]) -> Output {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    super::bin::run(state, &[], &env, args)
}

pub fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `kb search QUERY --json --limit LIMIT --passages-only` with `filters` on the store `env`
/// names: the whole answer (`mode` and `documents`).
pub fn search_passages(
    state: &Path,
    env: &[(&str, String)],
    query: &str,
    limit: usize,
    filters: Option<&Value>,
) -> Value {
    let limit = limit.to_string();
    let mut args = vec![
        "kb",
        "search",
        query,
        "--json",
        "--limit",
        &limit,
        "--passages-only",
    ];
    let text;
    if let Some(f) = filters {
        text = f.to_string();
        args.extend(["--filters-json", &text]);
    }
    serde_json::from_str(&ok(run(state, env, &args))).unwrap()
}

/// `kb search QUERY --json` (ten passages) with `filters` on the store `env` names: the
/// documents.
pub fn search(
    state: &Path,
    env: &[(&str, String)],
    query: &str,
    filters: Option<&Value>,
) -> Vec<Value> {
    search_passages(state, env, query, 10, filters)["documents"]
        .as_array()
        .unwrap()
        .clone()
}

/// The corpus names of `docs`, sorted: `drainage` for `kb://drainage.md#...` (a bundle or
/// PostgreSQL) and for `s3://docs/drainage.md` (a Bedrock knowledge base).
pub fn names(docs: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = docs
        .iter()
        .map(|d| {
            let url = d["url"].as_str().unwrap();
            url.rsplit('/')
                .next()
                .unwrap()
                .split(['.', '#'])
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    names.sort();
    names
}

/// The filter cases and the documents each lets through, computed from [`DOCS`].
pub fn cases() -> Vec<(Value, Vec<String>)> {
    let pick = |keep: &dyn Fn(&Doc) -> bool| {
        let mut v: Vec<String> = DOCS
            .iter()
            .filter(|d| keep(d))
            .map(|d| d.0.to_owned())
            .collect();
        v.sort();
        v
    };
    vec![
        (
            json!({"equals": {"key": "tenant", "value": "alice"}}),
            pick(&|d| d.1 == "alice"),
        ),
        (
            json!({"in": {"key": "region", "values": ["my", "th"]}}),
            pick(&|d| d.2 == "my" || d.2 == "th"),
        ),
        (
            json!({"range": {"key": "year", "gte": 2020, "lt": 2024}}),
            pick(&|d| (2020..2024).contains(&d.3)),
        ),
        (
            json!({"range": {"key": "updated", "gte": "2024-01-01", "lte": "2025-01-15"}}),
            pick(&|d| ("2024-01-01"..="2025-01-15").contains(&d.4)),
        ),
        // Loose equality: the string "2021" equals the number 2021, "true" the boolean.
        (
            json!({"equals": {"key": "year", "value": "2021"}}),
            pick(&|d| d.3 == 2021),
        ),
        (
            json!({"equals": {"key": "pinned", "value": "true"}}),
            pick(&|d| d.5),
        ),
        (
            json!({"equals": {"key": "pinned", "value": false}}),
            pick(&|d| !d.5),
        ),
        (
            json!({"or": [{"equals": {"key": "tenant", "value": "bob"}},
                          {"range": {"key": "year", "gte": 2025}}]}),
            pick(&|d| d.1 == "bob" || d.3 >= 2025),
        ),
        (
            json!({"and": [{"equals": {"key": "tenant", "value": "carol"}},
                           {"in": {"key": "year", "values": [2024, "2030"]}}]}),
            pick(&|d| d.1 == "carol" && d.3 == 2024),
        ),
        (json!({"equals": {"key": "missing", "value": "x"}}), vec![]),
    ]
}
