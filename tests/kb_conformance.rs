//! The knowledge-store conformance cases: one corpus (`support::kb_corpus`) in every store —
//! a bundle, PostgreSQL directly and through the Data API (the shim executes on a real
//! database), and a Bedrock knowledge base (the scripted runtime applies the `RetrievalFilter`
//! it is sent with Bedrock's typed semantics) — searched with the same queries and filters
//! (equality, `in`, number and date ranges, loose equality, booleans, `or`, a tenant pin), with
//! exact results: the documents each filter lets through, computed from the metadata. Where a
//! store cannot express a filter (dates on Bedrock), the search is refused naming it.

use crate::support;

use serde_json::{json, Value};
use support::agent_server::{knowledge_base, Passage, ScriptedAgent};
use support::embeddings_server::{EmbedReply, ScriptedEmbeddings};
use support::kb_corpus::{
    cases, corpus_dir, ingest, names, ok, run, search, search_passages, DOCS,
};
use support::postgres::{database, DataApiShim};

/// The corpus as a Bedrock knowledge base holds it: each document at `s3://docs/NAME.md`,
/// with its metadata typed as a metadata file would give it (year a number, pinned a boolean).
fn bedrock_passages() -> Vec<Passage> {
    DOCS.iter()
        .map(|(name, tenant, region, year, updated, pinned)| {
            let text = format!("Notes on {name} for the durian orchard.");
            Passage::new(&format!("s3://docs/{name}.md"), &text, 0.5)
                .with("tenant", json!(tenant))
                .with("region", json!(region))
                .with("year", json!(year))
                .with("updated", json!(updated))
                .with("pinned", json!(pinned))
        })
        .collect()
}

/// Whether `filter` holds a date range (which a Bedrock knowledge base cannot express).
fn ranges_dates(filter: &Value) -> bool {
    match filter {
        Value::Object(map) => map.iter().any(|(op, arg)| {
            (op == "range"
                && arg.as_object().is_some_and(|range| {
                    ["gte", "gt", "lte", "lt"]
                        .iter()
                        .any(|b| range.get(*b).is_some_and(Value::is_string))
                }))
                || ranges_dates(arg)
        }),
        Value::Array(items) => items.iter().any(ranges_dates),
        _ => false,
    }
}

#[tokio::test]
async fn every_store_returns_the_same_filtered_documents() {
    let (dir, corpus) = corpus_dir();
    let state = dir.path();
    let bundle = dir.path().join("bundle");
    ingest(state, &[], &corpus, bundle.to_str().unwrap());
    let direct_url = database("conformance_direct").await;
    let api_url = database("conformance_api").await;
    // The tenant key's equalities use the indexed `tenant` column: the same documents.
    let tenant = ("KB_TENANT_KEY", "tenant".to_owned());
    ingest(state, std::slice::from_ref(&tenant), &corpus, &direct_url);
    let shim = DataApiShim::start(&api_url);
    let api_env = shim.env();
    let uri = shim.kb_uri();
    ingest(
        state,
        &[api_env.clone(), vec![tenant]].concat(),
        &corpus,
        &uri,
    );
    let agent = ScriptedAgent::retrieve([knowledge_base(bedrock_passages())]);
    let mut bedrock_env = agent.env();
    bedrock_env.push(("KB_URI", "bedrock-kb://KBCONFORM1".to_owned()));

    let stores: Vec<(&str, Vec<(&str, String)>)> = vec![
        (
            "bundle",
            vec![("KB_PATH", bundle.to_str().unwrap().to_owned())],
        ),
        ("postgres", vec![("KB_URI", direct_url.clone())]),
        ("rds-data", api_env.clone()),
        ("bedrock-kb", bedrock_env.clone()),
    ];
    for (store, env) in &stores {
        let all = names(&search(state, env, "orchard", None));
        assert_eq!(
            all.len(),
            DOCS.len(),
            "{store}: every document mentions the orchard"
        );
    }
    let mut refused = 0;
    for (filter, expected) in cases() {
        let mut lists = Vec::new();
        for (store, env) in &stores {
            if *store == "bedrock-kb" && ranges_dates(&filter) {
                let text = filter.to_string();
                let args = ["kb", "search", "orchard", "--json", "--filters-json", &text];
                let out = run(state, env, &args);
                let says = String::from_utf8_lossy(&out.stderr).into_owned();
                assert!(!out.status.success(), "{filter}: {says}");
                assert!(says.contains("numbers only"), "{filter}: {says}");
                refused += 1;
                continue;
            }
            let docs = search(state, env, "orchard", Some(&filter));
            assert_eq!(names(&docs), expected, "{store}, filter {filter}");
            lists.push(docs);
        }
        // One database, two transports: the same documents, order and scores.
        assert_eq!(
            lists[1], lists[2],
            "direct and Data API differ for {filter}"
        );
    }
    assert_eq!(refused, 1, "one case ranges over dates");
    // Bedrock was asked once per search (4 + 10 cases, one of them refused before asking),
    // every filter in a form it accepts (an invalid one would have been a 400).
    assert_eq!(agent.recorded().len(), 1 + cases().len() - refused);
    // A tenant pin is a filter like any other: the pinned caller sees only its documents.
    for (store, env) in &stores {
        let pinned = search(
            state,
            env,
            "pruning orchard",
            Some(&json!({"equals": {"key": "tenant", "value": "bob"}})),
        );
        assert_eq!(names(&pinned), ["grafting", "mulching"], "{store}");
    }
}
/// Hybrid on every store: vectors from the scripted embeddings server (a word's concept
/// counts), fused with full text by reciprocal rank fusion in the bundle and in one SQL
/// statement in PostgreSQL. A query none of the documents words matches but whose concept one
/// holds ("waterlogged" is the concept of "drainage") finds it on every store, and the filters
/// let through exactly the same documents as in full text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hybrid_search_finds_the_same_documents_on_every_store() {
    let embeddings = ScriptedEmbeddings::start([EmbedReply::vectors()]).await;
    let vectors = vec![
        ("EMBEDDINGS_BASE_URL", embeddings.base_url()),
        ("EMBEDDINGS_MODEL", "concepts".to_owned()),
    ];
    let (dir, corpus) = corpus_dir();
    let state = dir.path();
    let bundle = dir.path().join("bundle");
    ingest(state, &vectors, &corpus, bundle.to_str().unwrap());
    let direct_url = database("hybrid_direct").await;
    ingest(state, &vectors, &corpus, &direct_url);
    let api_url = database("hybrid_api").await;
    let shim = DataApiShim::start(&api_url);
    let mut api_env = shim.env();
    api_env.extend(vectors.clone());
    ingest(state, &api_env, &corpus, &shim.kb_uri());
    let with = |mut env: Vec<(&'static str, String)>| {
        env.extend(vectors.clone());
        env
    };
    let stores = [
        (
            "bundle",
            with(vec![("KB_PATH", bundle.to_str().unwrap().to_owned())]),
        ),
        ("postgres", with(vec![("KB_URI", direct_url.clone())])),
        ("rds-data", api_env),
    ];
    for (store, env) in &stores {
        let out = search_passages(state, env, "waterlogged", 3, None);
        assert_eq!(out["mode"], "hybrid", "{store}");
        let first = out["documents"][0]["url"].as_str().unwrap_or_default();
        assert!(first.starts_with("kb://drainage.md"), "{store}: {out}");
        // The passages of the vector ranking's first three documents (one passage each here)
        // carry their rank, the first being the fused first, on every store.
        let docs = out["documents"].as_array().unwrap();
        let ranked = |r: u64| -> Vec<&str> {
            docs.iter()
                .filter(|d| d["vector_rank"] == r)
                .filter_map(|d| d["url"].as_str())
                .collect()
        };
        assert_eq!(ranked(1), [first], "{store}: {out}");
        let marked = docs
            .iter()
            .filter(|d| d.get("vector_rank").is_some())
            .count();
        let within = (1..=3).map(|r| ranked(r).len()).sum::<usize>();
        assert_eq!(
            marked, within,
            "ranks 1 to 3 only, each once: {store}: {out}"
        );
        assert!((1..=3).all(|r| ranked(r).len() <= 1), "{store}: {out}");
        for (filter, expected) in cases() {
            let docs = search(state, env, "orchard", Some(&filter));
            assert_eq!(names(&docs), expected, "{store}, hybrid, filter {filter}");
        }
    }
}

/// One-hop graph expansion on every store that holds graph files: an entity matched by words
/// only its summary holds brings in its relations (either end), then its communities (by member
/// name), below it and marked as from the graph; a bundle and PostgreSQL (directly and through
/// the Data API) list the same items in the same order. A filter the graph items cannot pass
/// (they carry no metadata) leaves them out everywhere.
#[tokio::test]
async fn graph_neighbours_are_the_same_on_every_store() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let corpus = state.join("graph");
    std::fs::create_dir_all(&corpus).unwrap();
    let lines = |rows: &[Value]| {
        rows.iter()
            .map(|r| r.to_string() + "\n")
            .collect::<String>()
    };
    let nodes = [
        json!({"id": "zorblax", "name": "Zorblax", "type": "pest",
               "summary": "A beetle with glittering elytra."}),
        json!({"id": "quimby", "name": "Quimby tree", "type": "crop", "summary": "A tree."}),
        json!({"id": "frell", "name": "Frell, the wasp", "type": "predator",
               "summary": "A wasp."}),
    ];
    let edges = [
        json!({"source": "zorblax", "target": "quimby", "relation": "attacks",
               "fact": "It bores into the bark."}),
        json!({"source": "frell", "target": "quimby", "relation": "nests in",
               "fact": "Nests high."}),
        json!({"source": "frell", "target": "zorblax", "relation": "eats",
               "fact": "It hunts larvae."}),
    ];
    let communities = [
        json!({"id": "bark_pests", "name": "Bark pests", "summary": "Pests of bark.",
               "members": ["zorblax", "frell"]}),
        json!({"id": "trees", "name": "Trees", "summary": "Trees.", "members": ["quimby"]}),
    ];
    std::fs::write(corpus.join("nodes.jsonl"), lines(&nodes)).unwrap();
    std::fs::write(corpus.join("edges.jsonl"), lines(&edges)).unwrap();
    std::fs::write(corpus.join("communities.jsonl"), lines(&communities)).unwrap();
    std::fs::write(
        corpus.join("notes.md"),
        "# Notes\n\nNothing about beetles here.\n",
    )
    .unwrap();
    let bundle = state.join("bundle");
    ingest(state, &[], &corpus, bundle.to_str().unwrap());
    let url = database("graph_direct").await;
    ingest(state, &[], &corpus, &url);
    let api_url = database("graph_api").await;
    let shim = DataApiShim::start(&api_url);
    ingest(state, &shim.env(), &corpus, &shim.kb_uri());
    let stores = [
        (
            "bundle",
            vec![("KB_PATH", bundle.to_str().unwrap().to_owned())],
        ),
        ("postgres", vec![("KB_URI", url.clone())]),
        ("rds-data", shim.env()),
    ];
    let listed = |env: &[(&str, String)], filters: Option<&Value>, communities: bool| {
        let mut args = vec![
            "kb",
            "search",
            "glittering elytra",
            "--json",
            "--limit",
            "10",
        ];
        if communities {
            args.push("--communities");
        }
        let text = filters.map(Value::to_string);
        if let Some(text) = &text {
            args.extend(["--filters-json", text]);
        }
        let out: Value = serde_json::from_str(&ok(run(state, env, &args))).unwrap();
        out["documents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let graph = if d["from_graph"] == json!(true) {
                    " (graph)"
                } else {
                    ""
                };
                format!(
                    "{} {}{graph}",
                    d["kind"].as_str().unwrap(),
                    d["id"].as_str().unwrap()
                )
            })
            .collect::<Vec<String>>()
    };
    let expected = [
        "node zorblax",
        "edge zorblax|attacks|quimby (graph)",
        "edge frell|eats|zorblax (graph)",
        "community bark_pests (graph)",
    ];
    let pin = json!({"equals": {"key": "tenant", "value": "acme"}});
    for (store, env) in &stores {
        assert_eq!(listed(env, None, true), expected, "{store}");
        assert!(listed(env, Some(&pin), true).is_empty(), "{store}");
        // Without communities searched, the relations alone.
        assert_eq!(listed(env, None, false), expected[..3], "{store}");
    }
    // Through the Data API: the search, then the neighbours, one statement each.
    shim.reset().await;
    listed(&stores[2].1, None, true);
    assert_eq!(
        shim.calls().await["Execute"],
        json!(3),
        "schema row, search, neighbours"
    );
}
