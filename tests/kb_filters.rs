//! Metadata filters on every retriever, applied before the top k: BM25, the vector scan of a
//! hybrid search and graph expansion; metadata from front matter, `.meta.json` sidecars and
//! JSONL `metadata`, kept through a bundle; and `KB_TENANT_KEY` isolating two callers through
//! the HTTP handler whatever filter they send.
use crate::support;

use bounded_rag::config::Settings;
use bounded_rag::embed::{EmbeddingsClient, EmbeddingsConfig};
use bounded_rag::entry::{api, App};
use bounded_rag::ingest::{ingest, ingest_dir, IngestOptions};
use bounded_rag::kb::format::Manifest;
use bounded_rag::knowledge::Document;
use bounded_rag::llm::OfflineModel;
use bounded_rag::rag::{RagGraph, RagLimits};
use bounded_rag::search::{Filter, RetrievalOptions};
use bounded_rag::store::MemoryStore;
use lambda_http::Body;
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::sync::Arc;
use support::embeddings_server::{concept_vector, ScriptedEmbeddings};

/// Six durian passages that say "canker" three times, six mango ones that say it once: the
/// unfiltered top five are all durian.
fn write_corpus(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    for i in 0..6 {
        fs::write(
            dir.join(format!("durian-{i}.md")),
            format!(
                "---\nproduct: durian\nyear: {}\nupdated: 2024-0{}-01\n---\n# Durian note {i}\n\n\
                 Canker canker canker on the trunk, report {i}.",
                2020 + i,
                i + 1
            ),
        )
        .unwrap();
        fs::write(
            dir.join(format!("mango-{i}.md")),
            format!("# Mango note {i}\n\nA canker seen once in orchard {i}."),
        )
        .unwrap();
        fs::write(
            dir.join(format!("mango-{i}.md.meta.json")),
            r#"{"product": "mango", "year": 2019}"#,
        )
        .unwrap();
    }
}

fn options(limit: usize, filter: Option<Filter>) -> RetrievalOptions {
    RetrievalOptions {
        limit,
        filter,
        ..RetrievalOptions::default()
    }
}

fn filter(value: Value) -> Filter {
    let f: Filter = serde_json::from_value(value).unwrap();
    f.validate("filters").unwrap();
    f
}

fn urls(docs: &[Document]) -> Vec<&str> {
    docs.iter().map(|d| d.url.as_str()).collect()
}

#[test]
fn a_bm25_filter_applies_before_the_top_k_in_folders_and_bundles() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write_corpus(&src);
    let out = work.path().join("bundle");
    let summary = ingest_dir(&src, &out).unwrap();
    assert_eq!(
        summary.manifest.metadata_keys,
        ["product", "updated", "year"]
    );
    assert_eq!(summary.stats.documents, 12, "sidecars are not documents");
    for kb in [
        bounded_rag::ingest::load_kb(&src).unwrap(),
        bounded_rag::ingest::load_kb(&out).unwrap(),
    ] {
        let all = kb.search("canker trunk", &options(5, None)).unwrap();
        assert!(
            urls(&all).iter().all(|u| u.contains("durian")),
            "{:?}",
            urls(&all)
        );
        let mango = Some(Filter::equals("product", "mango"));
        let docs = kb.search("canker trunk", &options(5, mango)).unwrap();
        assert_eq!(docs.len(), 5, "k results when k documents match");
        assert!(
            urls(&docs).iter().all(|u| u.contains("mango")),
            "{:?}",
            urls(&docs)
        );
        let recent = filter(json!({"and": [
            {"range": {"key": "year", "gte": 2022}},
            {"range": {"key": "updated", "lt": "2024-06-01"}}
        ]}));
        let docs = kb.search("canker", &options(10, Some(recent))).unwrap();
        let mut got = urls(&docs);
        got.sort_unstable();
        assert_eq!(
            got,
            [
                "kb://durian-2.md#1",
                "kb://durian-3.md#1",
                "kb://durian-4.md#1"
            ]
        );
        let nobody = Some(Filter::equals("product", "kiwi"));
        assert!(kb.search("canker", &options(5, nobody)).unwrap().is_empty());
    }
    // The front matter is metadata, not text.
    let kb = bounded_rag::ingest::load_kb(&out).unwrap();
    let docs = kb.search("product durian", &options(3, None)).unwrap();
    assert!(
        docs.iter().all(|d| !d.content.contains("product:")),
        "{docs:?}"
    );
}

#[tokio::test]
async fn the_vector_scan_of_a_hybrid_search_is_filtered_too() {
    let server = ScriptedEmbeddings::start([]).await;
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write_corpus(&src);
    // A mango passage no BM25 query word reaches, only its vector.
    fs::write(
        src.join("mango-bark.md"),
        "# Mango bark\n\nLesions ooze on the bark.",
    )
    .unwrap();
    fs::write(src.join("mango-bark.meta.json"), r#"{"product": "mango"}"#).unwrap();
    let embedder = EmbeddingsClient::new(EmbeddingsConfig {
        base_url: server.base_url(),
        model: "concepts-7".into(),
        api_key: None,
    })
    .unwrap();
    let out = work.path().join("bundle");
    let ingest_options = IngestOptions {
        embedder: Some(&embedder),
        ..IngestOptions::default()
    };
    ingest(&src, &out, &ingest_options).await.unwrap();
    let kb = bounded_rag::ingest::load_kb(&out).unwrap();
    let question = "phytophthora phosphonate";
    let vector = concept_vector(question);
    let all = kb
        .search_hybrid(question, &vector, &options(10, None))
        .unwrap();
    assert!(
        urls(&all).contains(&"kb://mango-bark.md#1"),
        "found by its vector"
    );
    let durian = Some(Filter::equals("product", "durian"));
    let docs = kb
        .search_hybrid(question, &vector, &options(4, durian))
        .unwrap();
    assert_eq!(docs.len(), 4);
    assert!(
        urls(&docs).iter().all(|u| u.contains("durian")),
        "{:?}",
        urls(&docs)
    );
    let mango = Some(Filter::equals("product", "mango"));
    let docs = kb
        .search_hybrid(question, &vector, &options(10, mango))
        .unwrap();
    assert_eq!(docs.len(), 7, "every mango passage, nothing else");
    assert!(
        urls(&docs).iter().all(|u| u.contains("mango")),
        "{:?}",
        urls(&docs)
    );
}

fn write_graph(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    fs::write(
        dir.join("nodes.jsonl"),
        [
            json!({"id": "pp", "name": "Phytophthora palmivora", "summary": "A water mould.", "metadata": {"tenant": "a"}}),
            json!({"id": "pc", "name": "Patch canker", "summary": "A bark disease.", "metadata": {"tenant": "a"}}),
            json!({"id": "rr", "name": "Root rot", "summary": "A root disease.", "metadata": {"tenant": "a"}}),
        ]
        .map(|v| v.to_string())
        .join("\n"),
    )
    .unwrap();
    fs::write(
        dir.join("edges.jsonl"),
        [
            json!({"source": "pp", "target": "pc", "relation": "causes", "fact": "It causes patch canker.", "metadata": {"tenant": "a"}}),
            json!({"source": "pp", "target": "rr", "relation": "causes", "fact": "It causes root rot.", "metadata": {"tenant": "b"}}),
        ]
        .map(|v| v.to_string())
        .join("\n"),
    )
    .unwrap();
}

#[test]
fn graph_expansion_adds_only_allowed_neighbours() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write_graph(&src);
    let out = work.path().join("bundle");
    ingest_dir(&src, &out).unwrap();
    let kb = bounded_rag::ingest::load_kb(&out).unwrap();
    // Only the entity's summary says "water mould": its relations come by graph expansion.
    let question = "Which water mould?";
    let from_graph = |docs: &[Document]| -> Vec<String> {
        docs.iter()
            .filter(|d| d.from_graph)
            .map(|d| d.content.clone())
            .collect()
    };
    let all = kb.search(question, &options(5, None)).unwrap();
    assert_eq!(urls(&all)[0], "kb://nodes.jsonl#pp");
    assert_eq!(
        from_graph(&all),
        ["It causes patch canker.", "It causes root rot."]
    );
    let a = kb
        .search(question, &options(5, Some(Filter::equals("tenant", "a"))))
        .unwrap();
    assert_eq!(urls(&a)[0], "kb://nodes.jsonl#pp");
    assert_eq!(from_graph(&a), ["It causes patch canker."]);
    let b = kb
        .search(question, &options(5, Some(Filter::equals("tenant", "b"))))
        .unwrap();
    assert!(
        b.is_empty(),
        "the entity is hidden, so nothing expands from it: {b:?}"
    );
}

#[test]
fn bundles_without_the_new_manifest_fields_still_open() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.md"), "# A\n\nPlain text about canker.").unwrap();
    let out = work.path().join("bundle");
    ingest_dir(&src, &out).unwrap();
    let text = fs::read_to_string(out.join("kb-manifest.json")).unwrap();
    assert!(!text.contains("metadata_keys") && !out.join("metadata.json").exists());
    let kb = bounded_rag::ingest::load_kb(&out).unwrap();
    assert!(kb.metadata_keys().is_empty());
    let filtered = Some(Filter::equals("tenant", "a"));
    assert!(kb
        .search("canker", &options(3, filtered))
        .unwrap()
        .is_empty());
    // An older manifest with vectors: no prefixes recorded.
    let mut old: Value = serde_json::from_str(&text).unwrap();
    old["embedding"] = json!({"model": "m", "dimensions": 3, "quantization": "int8"});
    let parsed = Manifest::parse(old.to_string().as_bytes(), &out).unwrap();
    let embedding = parsed.embedding.unwrap();
    assert_eq!(
        (
            embedding.query_prefix.as_str(),
            embedding.passage_prefix.as_str()
        ),
        ("", "")
    );
    assert!(parsed.metadata_keys.is_empty());
}

// ---- tenant isolation through the HTTP handler ----

const RUN_IAM: &str = include_str!("../events/apigw-run.json");
const RUN_JWT: &str = include_str!("../events/apigw-run-jwt.json");
const ALICE: &str = "arn:aws:sts::123456789012:assumed-role/bounded-rag-caller/alice";
const BOB: &str = "7d3f6a2c-90b1-4e58-a4c7-2b9e1f0d6c35";

fn with_body(event: &str, body: &Value) -> String {
    let body = body.to_string();
    let mut v: Value = serde_json::from_str(event).unwrap();
    v["body"] = Value::String(body.clone());
    v["headers"]["content-length"] = Value::String(body.len().to_string());
    v.to_string()
}

async fn sources(app: &App, event: &str, body: Value) -> (u16, Vec<String>) {
    let request = lambda_http::request::from_str(&with_body(event, &body)).unwrap();
    let response = api::handle(app, None, request).await;
    let status = response.status().as_u16();
    let Body::Text(text) = response.body() else {
        panic!("unexpected body")
    };
    let json: Value = serde_json::from_str(text).unwrap();
    let found = json["workflow_steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["name"] == "kg_retrieval")
        .flat_map(|s| {
            s["details"]["sources"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    (status, found)
}

#[tokio::test]
async fn a_tenant_key_pins_each_caller_to_its_own_documents() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    for (name, tenant) in [
        ("alice-1", ALICE),
        ("alice-2", ALICE),
        ("bob-1", BOB),
        ("bob-2", BOB),
    ] {
        fs::write(
            src.join(format!("{name}.md")),
            format!("# Canker notes {name}\n\nPatch canker on the durian trunk, notes {name}."),
        )
        .unwrap();
        fs::write(
            src.join(format!("{name}.meta.json")),
            json!({"tenant": tenant}).to_string(),
        )
        .unwrap();
    }
    fs::write(src.join("shared.md"), "# Canker\n\nPatch canker, untagged.").unwrap();
    let kb = Arc::new(bounded_rag::ingest::load_kb(&src).unwrap());
    let graph = RagGraph::new(Arc::new(OfflineModel), kb, None, RagLimits::default())
        .with_tenant_key(Some("tenant".into()));
    let app = App::from_parts(
        Settings::default(),
        graph,
        Arc::new(MemoryStore::new()),
        Arc::new(bounded_rag::clock::SystemClock),
    );
    let ask = json!({"question": "What causes patch canker on the trunk?", "mode": "speed", "n_retrieved_documents": 10});

    let (status, alice) = sources(&app, RUN_IAM, ask.clone()).await;
    assert_eq!(status, 200);
    let mut alice = alice;
    alice.sort_unstable();
    assert_eq!(alice, ["kb://alice-1.md#1", "kb://alice-2.md#1"]);
    let (_, mut bob) = sources(&app, RUN_JWT, ask.clone()).await;
    bob.sort_unstable();
    assert_eq!(bob, ["kb://bob-1.md#1", "kb://bob-2.md#1"]);

    // Asking for the other tenant's documents widens nothing.
    let mut sneaky = ask.clone();
    sneaky["filters"] = json!({"or": [
        {"equals": {"key": "tenant", "value": BOB}},
        {"in": {"key": "tenant", "values": [ALICE, BOB]}}
    ]});
    let (status, seen) = sources(&app, RUN_IAM, sneaky).await;
    assert_eq!(status, 200);
    assert!(seen.iter().all(|u| u.contains("alice")), "{seen:?}");
    assert_eq!(seen.len(), 2);

    // A bad filter is a 400 naming its part.
    let mut bad = ask;
    bad["filters"] = json!({"range": {"key": "year"}});
    let request = lambda_http::request::from_str(&with_body(RUN_JWT, &bad)).unwrap();
    let response = api::handle(&app, None, request).await;
    assert_eq!(response.status().as_u16(), 400);
    let Body::Text(text) = response.body() else {
        panic!("unexpected body")
    };
    assert!(text.contains("filters.range"), "{text}");
}
