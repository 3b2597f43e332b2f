//! How the knowledge store reaches PostgreSQL, for real (scripts/pg.sh's PostgreSQL 16 with
//! pgvector 0.8): libpq's `sslmode` against a TLS-only server, the RDS Data API path (exact
//! calls, a resuming database retried by the workflow), credentials from Secrets Manager, and
//! the Lambda functions that refuse `postgres://` and name the Data API.

use crate::support;

use serde_json::{json, Value};
use support::kb_corpus::{corpus_dir, ingest, ok, run, search, DOCS};
use support::pg_tls::TlsFront;
use support::postgres::{database, DataApiShim};

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
