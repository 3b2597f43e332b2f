//! A clear lexical match on a real corpus with weak vectors, on every store: a few hundred
//! crate READMEs from the cargo registry (documents nobody here wrote), one of them given a
//! sentence naming a protocol by two invented words, embedded with weak vectors (the scripted
//! 64-dimension hashed embedding: every word shares its axis with many others). BM25 finds the
//! README first and clearly; the vectors find it nowhere near the top, and share few of BM25's
//! documents, so BM25's fusion weight falls to about 0 and the README's fused score with it,
//! below fifty vector hits: it was cut from the list the keep rules saw and lost. Now fusion
//! ranks every candidate (so the BM25-lead rule would keep it in the last place), and the clear
//! lead's own term is not discounted by the agreement (so fusion ranks it first itself). On a
//! bundle from `ingest`, a bundle published by `kb sync` to S3 (moto) and read back through
//! `KB_URI`, and PostgreSQL directly and through the Data API: `kb search` at limits 3, 2 and
//! 1 returns it first, `--explain` shows why, and `ask` (offline model) ends `completed`
//! citing it.
use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use support::embeddings_server::{EmbedReply, ScriptedEmbeddings};
use support::kb_corpus::{ingest, ok, run};
use support::moto::{moto, unique_name};
use support::postgres::DataApiShim;

/// Documents in the corpus (the registry's READMEs in name order, `reqwest` among them).
const DOCUMENTS: usize = 1000;
/// The README given the invented sentence: a dependency of this project, so in every
/// registry that built it.
const TARGET: &str = "reqwest";
const SENTENCE: &str = "\n\nIt also speaks the Vorplex Quandrel protocol over zintered links.\n";
const QUESTION: &str = "Which crate supports the vorplex quandrel protocol?";
const MODEL: &str = "hashed-64";

/// The registry's unpacked crates (`$CARGO_HOME/registry/src/*/NAME-VERSION`).
fn registry() -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let mut crates = Vec::new();
    for index in std::fs::read_dir(home.join("registry/src"))
        .unwrap()
        .flatten()
    {
        crates.extend(
            std::fs::read_dir(index.path())
                .unwrap()
                .flatten()
                .map(|e| e.path()),
        );
    }
    crates.sort();
    crates
}

/// The crate name of `NAME-VERSION`.
fn crate_name(dir: &Path) -> String {
    let base = dir.file_name().unwrap().to_string_lossy();
    match base.rsplit_once('-') {
        Some((name, version)) if version.starts_with(|c: char| c.is_ascii_digit()) => {
            name.to_owned()
        }
        _ => base.into_owned(),
    }
}

/// `DOCUMENTS` READMEs as `NAME.md` in `dir` (one version of each crate), the target's with the
/// invented sentence; returns the target's file name.
fn write_corpus(dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let mut written = Vec::new();
    for krate in registry() {
        let name = crate_name(&krate);
        let Ok(text) = std::fs::read_to_string(krate.join("README.md")) else {
            continue;
        };
        if written.contains(&name) || text.split_whitespace().count() < 30 {
            continue;
        }
        if written.len() >= DOCUMENTS - 1 && name != TARGET {
            continue;
        }
        let text = if name == TARGET {
            format!("{}{SENTENCE}", text.trim_end())
        } else {
            text
        };
        std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
        written.push(name);
    }
    assert!(
        written.contains(&TARGET.to_owned()),
        "{TARGET} is in the registry"
    );
    assert!(
        written.len() >= 150,
        "a few hundred READMEs: {}",
        written.len()
    );
    format!("{TARGET}.md")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_match_in_a_real_corpus_with_weak_vectors_is_kept_and_cited_on_every_store() {
    let embeddings = ScriptedEmbeddings::start([EmbedReply::vectors()]).await;
    let vectors = embeddings.env(MODEL);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let corpus = state.join("corpus");
    let target = write_corpus(&corpus);

    // A bundle from ingest; PostgreSQL, read directly and through the Data API.
    let bundle = state.join("bundle");
    ingest(state, &vectors, &corpus, bundle.to_str().unwrap());
    let pg = support::postgres::database("clear_match_corpus").await;
    ingest(state, &vectors, &corpus, &pg);
    let shim = DataApiShim::start(&pg);
    // A bundle kept by `kb sync` in S3, read back through KB_URI.
    let moto_env = moto().await.function_env();
    let bucket = unique_name("clear").to_lowercase();
    let s3 = bounded_rag::kb::s3::client(&moto().await.sdk_config().await);
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    let published = format!("s3://{bucket}/readmes");
    let mut sync_env = vectors.clone();
    sync_env.extend(moto_env.clone());
    let corpus_arg = corpus.to_str().unwrap().to_owned();
    ok(run(
        state,
        &sync_env,
        &["-q", "kb", "sync", &corpus_arg, &published, "--json"],
    ));
    let mut synced = moto_env.clone();
    synced.push(("KB_URI", published.clone()));

    let stores: [(&str, Vec<(&str, String)>); 4] = [
        (
            "bundle",
            vec![("KB_PATH", bundle.to_str().unwrap().to_owned())],
        ),
        ("kb sync", synced),
        ("postgres", vec![("KB_URI", pg.clone())]),
        ("rds-data", shim.env()),
    ];
    let is_target = |d: &Value| {
        d["url"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("kb://{target}#")))
    };
    for (store, location) in &stores {
        let mut env = location.clone();
        env.extend(vectors.clone());
        env.push(("LLM_PROVIDER", "offline".to_owned()));

        // BM25 alone finds it first, a clear match.
        let bm25_env: Vec<(&str, String)> = location.clone();
        let bm25 = search(state, &bm25_env, 3);
        assert_eq!(bm25["mode"], "bm25", "{store}");
        let first = &bm25["documents"][0];
        assert!(
            is_target(first) && first["clear_match"] == true,
            "{store}: {bm25}"
        );

        // Hybrid, with the weak vectors: first at every limit, its own rank keeping it, which
        // `--explain` shows with the fusion's weights.
        for limit in [3, 2, 1] {
            let out = search(state, &env, limit);
            assert_eq!(out["mode"], "hybrid", "{store}");
            let docs = out["documents"].as_array().unwrap();
            assert_eq!(docs.len(), limit, "{store}: {out}");
            let kept = docs
                .iter()
                .find(|d| is_target(d))
                .unwrap_or_else(|| panic!("{store} --limit {limit} lost it: {out}"));
            assert_eq!(kept["clear_match"], true, "{store}");
            // First: the clear lead's own term is not discounted by the agreement.
            assert!(is_target(&docs[0]), "{store} --limit {limit}: {out}");
            let ranking = &kept["ranking"];
            assert_eq!(ranking["bm25"]["rank"], 1, "{store}: {ranking}");
            assert_eq!(ranking["rank"], 1, "{store}: {ranking}");
            assert_eq!(ranking["kept_by"], "rank", "{store}: {ranking}");
            let weights = &ranking["weights"];
            assert_eq!(weights["vector"], 1.0, "{store}: {weights}");
            let product =
                weights["bm25_lead"].as_f64().unwrap() * weights["agreement"].as_f64().unwrap();
            assert!(
                (weights["bm25"].as_f64().unwrap() - product).abs() < 1e-4,
                "{weights}"
            );
        }

        let asked: Value =
            serde_json::from_str(&ok(run(state, &env, &["ask", QUESTION, "--json"]))).unwrap();
        assert_eq!(asked["status"], "completed", "{store}: {asked}");
        let cited = asked["citations"].as_array().unwrap();
        assert!(cited.iter().any(is_target), "{store}: {asked}");
    }
    drop(shim);
}

/// `kb search QUESTION --json --explain --limit LIMIT --passages-only` on the store `env` names.
fn search(state: &Path, env: &[(&str, String)], limit: usize) -> Value {
    let limit = limit.to_string();
    let args = [
        "kb",
        "search",
        QUESTION,
        "--json",
        "--explain",
        "--limit",
        &limit,
        "--passages-only",
    ];
    serde_json::from_str(&ok(run(state, env, &args))).unwrap()
}
