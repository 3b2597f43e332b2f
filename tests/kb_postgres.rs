//! PostgreSQL with pgvector as the knowledge store, for real: scripts/pg.sh's PostgreSQL 16 with
//! pgvector 0.8, written by `bounded-rag ingest --out postgres://...` and searched by
//! `bounded-rag kb search` and `ask`, directly and through the RDS Data API (the shim executes
//! on the same database, so `aws-sdk-rdsdata` and its typed fields run for real).
//!
//! What only a database has (the cases every store shares are in `kb_conformance.rs`): hostile
//! filter values that leave it untouched, the tenant column and per-tenant vector indexes,
//! re-ingest that deletes what left the folder and keeps what did not change, the schema
//! version, and `kb sync` into PostgreSQL. How it is reached (TLS, the Data API, Secrets
//! Manager, the functions' refusal of `postgres://`) is in `kb_postgres_access.rs`.

use crate::support;

use serde_json::{json, Value};
use support::embeddings_server::{EmbedReply, ScriptedEmbeddings};
use support::kb_corpus::{corpus_dir, ingest, names, ok, run, search, DOCS};
use support::postgres::{database, sql, DataApiShim};

#[tokio::test]
async fn hostile_filter_values_leave_the_database_untouched() {
    let (dir, corpus) = corpus_dir();
    let url = database("hostile").await;
    let shim = DataApiShim::start(&url);
    let state = dir.path();
    ingest(state, &[], &corpus, &url);
    let count = "SELECT count(*) FROM bounded_rag_passages";
    let before = sql(&url, count).await;
    let hostile = [
        "x'); DROP TABLE bounded_rag_passages; --",
        "' OR '1'='1",
        "\"; DELETE FROM bounded_rag_passages; --",
        "$1) OR true --",
        ":p1 OR 1=1",
        "tenant') OR ('a'='a",
    ];
    for text in hostile {
        let filters = [
            json!({"equals": {"key": text, "value": text}}),
            json!({"equals": {"key": "tenant", "value": text}}),
            json!({"in": {"key": text, "values": [text, "alice"]}}),
            json!({"in": {"key": "tenant", "values": [text, "' OR 'x'='x"]}}),
            json!({"range": {"key": text, "gte": 0}}),
            json!({"or": [{"equals": {"key": text, "value": true}},
                          {"range": {"key": text, "lt": "2030-01-01"}}]}),
        ];
        for filter in &filters {
            for env in [vec![("KB_URI", url.clone())], shim.env()] {
                let docs = search(state, &env, text, Some(filter));
                assert!(docs.is_empty(), "{filter} let documents through: {docs:?}");
            }
        }
    }
    assert_eq!(sql(&url, count).await, before, "the rows are all there");
    // Through the Data API the hostile text only ever travelled as a parameter value.
    for request in shim.requests().await {
        if let Some(statement) = request["body"]["sql"].as_str() {
            for text in hostile {
                assert!(!statement.contains(text), "spliced into SQL: {statement}");
            }
            assert!(
                !statement.contains("DROP")
                    && !statement.contains("DELETE FROM bounded_rag_passages;")
            );
        }
    }
}

/// `KB_TENANT_KEY` at the first ingest names the metadata key of the indexed `tenant` column:
/// it holds each row's string value under that key, a pin on it is a lookup of that column
/// (the statement the Data API received says so), and a write with another key is refused.
#[tokio::test]
async fn the_tenant_key_fills_the_tenant_column_that_pins_use() {
    let (dir, corpus) = corpus_dir();
    let url = database("tenant_column").await;
    let shim = DataApiShim::start(&url);
    let state = dir.path();
    ingest(state, &[("KB_TENANT_KEY", "tenant".into())], &corpus, &url);
    let per_tenant = "SELECT tenant || ' ' || count(*) FROM bounded_rag_passages \
                      GROUP BY tenant ORDER BY tenant";
    assert_eq!(sql(&url, per_tenant).await, ["alice 2", "bob 2", "carol 2"]);
    let pin = json!({"equals": {"key": "tenant", "value": "bob"}});
    let docs = search(state, &shim.env(), "orchard", Some(&pin));
    assert_eq!(names(&docs), ["grafting", "mulching"]);
    let statements: Vec<String> = shim
        .requests()
        .await
        .iter()
        .filter_map(|r| r["body"]["sql"].as_str().map(str::to_owned))
        .filter(|s| s.contains("bounded_rag_passages p"))
        .collect();
    assert_eq!(statements.len(), 1, "one search statement");
    assert!(
        statements[0].contains("p.tenant = ") && !statements[0].contains("meta_norm @>"),
        "{}",
        statements[0]
    );
    // Another key is refused naming both; no key writes with the store's.
    let other = run(
        state,
        &[("KB_TENANT_KEY", "region".into())],
        &["-q", "ingest", corpus.to_str().unwrap(), "--out", &url],
    );
    let says = String::from_utf8_lossy(&other.stderr).into_owned();
    assert!(!other.status.success());
    assert!(
        says.contains("`tenant`") && says.contains("KB_TENANT_KEY is region"),
        "{says}"
    );
    std::fs::write(
        corpus.join("pruning.md"),
        "---\ntenant: dave\n---\n# pruning in the orchard\n\nPruning, for dave.\n",
    )
    .unwrap();
    ingest(state, &[], &corpus, &url);
    assert_eq!(
        sql(&url, per_tenant).await,
        ["alice 1", "bob 2", "carol 2", "dave 1"]
    );
}

#[tokio::test]
async fn reingest_deletes_what_left_the_folder_and_keeps_unchanged_rows() {
    let (dir, corpus) = corpus_dir();
    let url = database("reingest").await;
    let state = dir.path();
    ingest(state, &[], &corpus, &url);
    let ctids = "SELECT document || ' ' || xmin::text FROM bounded_rag_passages ORDER BY document";
    let first = sql(&url, ctids).await;
    assert_eq!(first.len(), DOCS.len());
    // One document removed, one changed, the others as they were.
    std::fs::remove_file(corpus.join("harvest.md")).unwrap();
    let pruning = corpus.join("pruning.md");
    let changed = std::fs::read_to_string(&pruning)
        .unwrap()
        .replace("trees", "young trees");
    std::fs::write(&pruning, changed).unwrap();
    let out = ingest(state, &[], &corpus, &url);
    assert!(out.contains("1 rows of removed documents deleted"), "{out}");
    let docs = names(&search(state, &[("KB_URI", url.clone())], "orchard", None));
    assert!(!docs.contains(&"harvest".to_owned()));
    assert_eq!(docs.len(), DOCS.len() - 1);
    let young = search(state, &[("KB_URI", url.clone())], "young", None);
    assert_eq!(names(&young), ["pruning"]);
    assert_eq!(
        sql(
            &url,
            "SELECT count(*) FROM bounded_rag_passages WHERE document = 'pruning.md'"
        )
        .await,
        ["1"],
        "the changed passage replaced, not added"
    );
}

#[tokio::test]
async fn tables_of_another_schema_version_are_refused_naming_what_to_do() {
    let (dir, corpus) = corpus_dir();
    let url = database("version").await;
    let state = dir.path();
    let env = vec![("KB_URI", url.clone())];
    let empty = run(state, &env, &["kb", "search", "orchard"]);
    assert!(!empty.status.success());
    let says = String::from_utf8_lossy(&empty.stderr).into_owned();
    assert!(
        says.contains("holds no knowledge base yet") && says.contains("ingest DIR --out"),
        "{says}"
    );
    ingest(state, &[], &corpus, &url);
    sql(&url, "UPDATE bounded_rag_store SET schema_version = 2").await;
    let newer = run(state, &env, &["kb", "search", "orchard"]);
    let says = String::from_utf8_lossy(&newer.stderr).into_owned();
    assert!(!newer.status.success());
    assert!(
        says.contains("schema version 2") && says.contains("upgrade"),
        "{says}"
    );
    let again = run(
        state,
        &[],
        &["-q", "ingest", corpus.to_str().unwrap(), "--out", &url],
    );
    assert!(
        !again.status.success(),
        "ingest refuses to write into another version"
    );
}

/// `kb sync SOURCE postgres://...`: the first sync writes everything; the next reads and
/// writes only what changed, embeds only the passages the store holds no vector for, deletes
/// what left the folder; a sync with nothing new writes and embeds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kb_sync_into_postgres_writes_and_embeds_only_what_changed() {
    let embeddings = ScriptedEmbeddings::start([EmbedReply::vectors()]).await;
    let env = vec![
        ("EMBEDDINGS_BASE_URL", embeddings.base_url()),
        ("EMBEDDINGS_MODEL", "concepts".to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
    ];
    let (dir, corpus) = corpus_dir();
    let state = dir.path();
    let url = database("sync").await;
    let source = corpus.to_str().unwrap();
    let sync = |env: &[(&str, String)]| -> Value {
        serde_json::from_str(&ok(run(
            state,
            env,
            &["-q", "kb", "sync", source, &url, "--json"],
        )))
        .unwrap()
    };
    let embedded = |e: &ScriptedEmbeddings| e.batches().iter().map(Vec::len).sum::<usize>();

    let first = sync(&env);
    assert_eq!(first["new"], json!(DOCS.len()), "{first}");
    assert_eq!(first["embedded_passages"], json!(DOCS.len()));
    assert_eq!(embedded(&embeddings), DOCS.len());

    // One changed, one removed, one added (files written more than the racy window apart
    // from the listing are told by fingerprint).
    std::fs::remove_file(corpus.join("harvest.md")).unwrap();
    let pruning = corpus.join("pruning.md");
    let changed = std::fs::read_to_string(&pruning)
        .unwrap()
        .replace("trees", "young trees");
    std::fs::write(&pruning, changed).unwrap();
    std::fs::write(
        corpus.join("irrigation.md"),
        "# irrigation in the orchard\n\nDrip irrigation keeps the orchard soil moist.\n",
    )
    .unwrap();
    let second = sync(&env);
    assert_eq!(
        (&second["new"], &second["modified"], &second["deleted"]),
        (&json!(1), &json!(1), &json!(1)),
        "{second}"
    );
    assert_eq!(
        second["embedded_passages"],
        json!(2),
        "only the two new passages"
    );
    assert_eq!(embedded(&embeddings), DOCS.len() + 2);
    // Full text (no embeddings configured for the search): what the words say.
    let reader = [("KB_URI", url.clone())];
    let docs = names(&search(state, &reader, "orchard", None));
    assert!(docs.contains(&"irrigation".to_owned()) && !docs.contains(&"harvest".to_owned()));
    assert_eq!(names(&search(state, &reader, "young", None)), ["pruning"]);

    let third = sync(&env);
    assert_eq!(third["embedded_passages"], json!(0), "{third}");
    assert_eq!(
        third["new"].as_u64().unwrap() + third["modified"].as_u64().unwrap(),
        0
    );
    assert_eq!(embedded(&embeddings), DOCS.len() + 2, "no embeddings call");
}

/// A tenant of at least `KB_TENANT_INDEX_ROWS` rows gets a vector index of its own at ingest
/// (a partial HNSW index named from a digest of its value), kept while it holds at least half
/// of that, dropped below; a pinned hybrid search reads the same documents through the
/// tenant's index as through the exact scan of a tenant without one, directly and through the
/// Data API, and the statement carries the tenant only as a parameter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_get_vector_indexes_of_their_own_from_a_row_count() {
    let embeddings = ScriptedEmbeddings::start([EmbedReply::vectors()]).await;
    let embed = vec![
        ("EMBEDDINGS_BASE_URL", embeddings.base_url()),
        ("EMBEDDINGS_MODEL", "concepts".to_owned()),
    ];
    let (dir, corpus) = corpus_dir();
    let state = dir.path();
    let url = database("tenant_indexes").await;
    let shim = DataApiShim::start(&url);
    let ingest_with = |rows: &str| {
        let mut env = embed.clone();
        env.extend([
            ("KB_TENANT_KEY", "tenant".to_owned()),
            ("KB_TENANT_INDEX_ROWS", rows.to_owned()),
        ]);
        ingest(state, &env, &corpus, &url);
    };
    let indexes = "SELECT indexname FROM pg_indexes \
                   WHERE tablename = 'bounded_rag_passages' AND indexname LIKE 'bounded\\_rag\\_t\\_%' \
                   ORDER BY indexname";
    // The names each tenant's index should have (by the database's own md5).
    let named = |tenants: &'static str| {
        let url = url.clone();
        async move {
            sql(
                &url,
                &format!(
                    "SELECT 'bounded_rag_t_' || left(md5(t), 24) FROM \
                     unnest(string_to_array('{tenants}', ' ')) t ORDER BY 1"
                ),
            )
            .await
        }
    };
    let pin = json!({"equals": {"key": "tenant", "value": "bob"}});
    let pinned = |env: Vec<(&'static str, String)>| {
        let mut env = env;
        env.extend(embed.clone());
        names(&search(state, &env, "orchard trees", Some(&pin)))
    };
    let direct = vec![("KB_URI", url.clone())];

    // Two rows each (alice, bob, carol): every tenant reaches 2.
    ingest_with("2");
    assert_eq!(sql(&url, indexes).await, named("alice bob carol").await);
    let through_index = pinned(direct.clone());
    assert_eq!(through_index, ["grafting", "mulching"]);
    assert_eq!(pinned(shim.env()), through_index);
    // 4: nobody reaches it, and 2 is half of it, so the indexes stay.
    ingest_with("4");
    assert_eq!(sql(&url, indexes).await, named("alice bob carol").await);
    // 5: under half (3); the indexes go, and the pinned search computes exact distances.
    ingest_with("5");
    assert!(sql(&url, indexes).await.is_empty());
    assert_eq!(pinned(direct.clone()), through_index);
    shim.reset().await;
    assert_eq!(pinned(shim.env()), through_index);
    let statement = shim
        .requests()
        .await
        .iter()
        .filter_map(|r| r["body"]["sql"].as_str().map(str::to_owned))
        .find(|s| s.contains("cosine_distance"))
        .expect("the pinned hybrid statement");
    assert!(statement.contains("to_regclass") && !statement.contains("'bob'"));
    // A tenant that grows past the line gets its index at the next ingest; 0: none at all.
    std::fs::write(
        corpus.join("thinning.md"),
        "---\ntenant: bob\n---\n# thinning in the orchard\n\nThinning the fruit, for bob.\n",
    )
    .unwrap();
    ingest_with("3");
    assert_eq!(sql(&url, indexes).await, named("bob").await);
    ingest_with("0");
    assert!(sql(&url, indexes).await.is_empty());
}
