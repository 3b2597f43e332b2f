//! PostgreSQL with pgvector as the knowledge store, for real: scripts/pg.sh's PostgreSQL 16 with
//! pgvector 0.8, written by `bounded-rag ingest --out postgres://...` and searched by
//! `bounded-rag kb search` and `ask`, directly and through the RDS Data API (the shim executes
//! on the same database, so `aws-sdk-rdsdata` and its typed fields run for real).
//!
//! What only a database has (the cases every store shares are in `kb_conformance.rs`): hostile
//! filter values that leave it untouched, re-ingest that deletes what left the folder and keeps
//! what did not change, the schema version, exact Data API calls, a resuming database retried
//! by the workflow, credentials from Secrets Manager, and `kb sync` into PostgreSQL.

use crate::support;

use serde_json::{json, Value};
use support::embeddings_server::{EmbedReply, ScriptedEmbeddings};
use support::kb_corpus::{corpus_dir, ingest, names, ok, run, search, DOCS};
use support::pg_tls::TlsFront;
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

/// libpq's `sslmode` against a TLS-only server (`support::pg_tls`, a front whose certificate
/// names 127.0.0.1 only): `verify-full` with the CA in `sslrootcert` and `require` connect over
/// TLS; `verify-full` by another name or without the CA, and `disable`, are start-up errors
/// that say why; `verify-ca` accepts the other name. Exact handshakes and refusals counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_is_libpqs_against_a_tls_only_server() {
    let (dir, corpus) = corpus_dir();
    let state = dir.path();
    let url = database("tls").await;
    ingest(state, &[], &corpus, &url);
    // postgres://USER:PASSWORD@127.0.0.1:PORT/DB
    let (head, rest) = url.rsplit_once('@').unwrap();
    let (upstream, db) = rest.split_once('/').unwrap();
    let front = TlsFront::start(upstream.to_owned()).await;
    let port = front.addr.port();
    let ca = front.ca.to_str().unwrap().to_owned();
    let at = |host: &str, query: String| {
        vec![
            ("KB_URI", format!("{head}@{host}:{port}/{db}?{query}")),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ]
    };
    for env in [
        at("127.0.0.1", format!("sslmode=verify-full&sslrootcert={ca}")),
        at("127.0.0.1", "sslmode=require".into()),
        at("localhost", format!("sslmode=verify-ca&sslrootcert={ca}")),
    ] {
        let docs = search(state, &env, "orchard", None);
        assert_eq!(docs.len(), DOCS.len(), "{env:?}");
    }
    assert_eq!(front.handshakes(), 3);
    for (query, host, says) in [
        (
            format!("sslmode=verify-full&sslrootcert={ca}"),
            "localhost",
            "not valid for name",
        ),
        (
            "sslmode=verify-full".to_owned(),
            "127.0.0.1",
            "UnknownIssuer",
        ),
        ("sslmode=disable".to_owned(), "127.0.0.1", "KB_URI"),
    ] {
        let out = run(
            state,
            &at(host, query.clone()),
            &["kb", "search", "orchard"],
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{query} on {host}");
        assert!(stderr.contains(says), "{query} on {host}: {stderr}");
        assert!(
            !stderr.contains(head.rsplit(':').next().unwrap()),
            "no password: {stderr}"
        );
    }
    assert_eq!(front.handshakes(), 3, "failed checks complete no handshake");
    assert_eq!(front.plain(), 1, "sslmode=disable starts in plain text");
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

#[tokio::test]
async fn the_data_api_path_makes_exact_calls_and_the_workflow_retries_a_resuming_database() {
    let (dir, corpus) = corpus_dir();
    let url = database("data_api_calls").await;
    let shim = DataApiShim::start(&url);
    let state = dir.path();
    let uri = shim.kb_uri();
    ingest(state, &shim.env(), &corpus, &uri);
    let calls = shim.calls().await;
    // The tables in one transaction, then one per document; never a rollback.
    assert_eq!(calls["BeginTransaction"], json!(1 + DOCS.len()), "{calls}");
    assert_eq!(calls["CommitTransaction"], json!(1 + DOCS.len()), "{calls}");
    assert_eq!(
        calls
            .get("RollbackTransaction")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        0
    );

    // The vector index is built with continueAfterTimeout: the Data API's 45-second limit
    // (StatementTimeoutException) leaves it building on the database, and the ingest succeeds.
    let index = shim
        .requests()
        .await
        .into_iter()
        .find(|r| {
            r["body"]["sql"]
                .as_str()
                .is_some_and(|s| s.contains("USING hnsw"))
        })
        .expect("the vector index statement");
    assert_eq!(index["body"]["continueAfterTimeout"], json!(true));
    shim.fail_when(
        "Execute",
        400,
        "StatementTimeoutException",
        1,
        0,
        "USING hnsw",
    )
    .await;
    ingest(state, &shim.env(), &corpus, &uri);
    shim.reset().await;
    search(state, &shim.env(), "orchard", None);
    // The schema row at start-up, then the search: two statements.
    assert_eq!(shim.calls().await["Execute"], json!(2));

    // An Aurora cluster waking from zero: the search's first attempt is refused with
    // DatabaseResumingException (a 400 the SDK does not retry); the workflow's node policy
    // retries it once and the run completes.
    shim.reset().await;
    shim.fail("Execute", 400, "DatabaseResumingException", 1, 1)
        .await;
    let mut env = shim.env();
    env.push(("SPECULATION", "off".into()));
    let out = ok(run(
        state,
        &env,
        &["-q", "ask", "How is pruning done in the orchard?", "--json"],
    ));
    let response: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(response["status"], "completed", "{response}");
    let retries = response["metadata"]["infrastructure_retries"].as_u64();
    assert_eq!(retries, Some(1), "{response}");
    let execute = shim.calls().await["Execute"].as_u64().unwrap();
    // Start-up read, the refused search, its retry, and the searches of the rest of the run.
    assert!(execute >= 3, "{execute}");
}

/// `postgres://USER@HOST/DB?secret=ID`: the user name and password come from a Secrets
/// Manager secret (moto's server here), never from the URL; the password never reaches a
/// message, and a secret of the wrong shape is refused naming the secret only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_come_from_secrets_manager() {
    let moto = support::moto::moto().await;
    let (dir, corpus) = corpus_dir();
    let state = dir.path();
    let url = database("secret").await;
    ingest(state, &[], &corpus, &url);
    // postgres://bounded_rag:PASSWORD@HOST:PORT/t_secret
    let rest = url.strip_prefix("postgres://").unwrap();
    let (credentials, at) = rest.split_once('@').unwrap();
    let (user, password) = credentials.split_once(':').unwrap();
    let secret = json!({"username": user, "password": password, "engine": "postgres"});
    let secret_id = moto.create_secret(&secret.to_string()).await;
    let mut env = moto.function_env();
    env.push((
        "KB_URI",
        format!("postgres://nobody@{at}?secret={secret_id}"),
    ));
    let docs = search(state, &env, "orchard", None);
    assert_eq!(
        docs.len(),
        DOCS.len(),
        "signed in with the secret's user and password"
    );

    let bad = moto
        .create_secret(&json!({"password": password}).to_string())
        .await;
    let mut env = moto.function_env();
    env.push(("KB_URI", format!("postgres://nobody@{at}?secret={bad}")));
    let out = run(state, &env, &["kb", "search", "orchard"]);
    let says = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    assert!(
        says.contains(&bad) && says.contains("username and password"),
        "{says}"
    );
    assert!(
        !says.contains(password),
        "the password is never printed: {says}"
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

/// The Lambda functions do not link the wire protocol (`postgres://`): the stack reaches
/// PostgreSQL through the Data API. A function started with a `postgres://` store refuses to
/// start and names the transport it has; the CLI reaches the same database directly.
#[tokio::test]
async fn a_function_refuses_postgres_urls_and_names_the_data_api() {
    let (dir, corpus) = corpus_dir();
    let url = database("function_direct").await;
    let state = dir.path();
    ingest(state, &[], &corpus, &url);
    // The CLI enables the direct transport: it finds every document.
    let env = vec![("KB_URI", url.clone())];
    assert_eq!(search(state, &env, "orchard", None).len(), DOCS.len());
    // In this process, as in the `api`, `stream` and `worker` functions, nothing enabled it.
    let lookup = |name: &str| (name == "KB_URI").then(|| url.clone());
    let settings = bounded_rag::config::Settings::from_lookup(lookup).unwrap();
    let error = match bounded_rag::entry::App::build(settings).await {
        Ok(_) => panic!("a function started on postgres://"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("rds-data://"), "{error}");
    assert!(
        error.contains("not built into the Lambda functions"),
        "{error}"
    );
    let userinfo = url
        .split_once("://")
        .unwrap()
        .1
        .split_once('@')
        .map(|(u, _)| u);
    if let Some((_, password)) = userinfo.and_then(|u| u.split_once(':')) {
        assert!(!error.contains(password), "the message shows the password");
    }
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
