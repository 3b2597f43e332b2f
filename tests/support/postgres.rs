//! A real PostgreSQL with pgvector for the tests (scripts/pg.sh: PostgreSQL 16 and pgvector 0.8
//! from a PyPI wheel), and the RDS Data API shim in front of it (rds_data_shim.py).
//!
//! One server serves every test binary: it lives in `CARGO_TARGET_TMPDIR/pg` and is started by
//! the first test that needs it (starts of a running one only print its URL; scripts/test.sh
//! stops it at the end). Each test gets a database of its own ([`database`]), created from
//! `template1`, which holds pgvector. `BOUNDED_RAG_PG_URL` points the tests at another server.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The URL of the server's `bounded_rag` database, the server started when needed.
pub fn server_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("BOUNDED_RAG_PG_URL") {
            return url;
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pg");
        let out = Command::new("bash")
            .arg(root().join("scripts/pg.sh"))
            .arg("start")
            .arg(&dir)
            .stderr(Stdio::inherit())
            .output()
            .expect("scripts/pg.sh runs");
        assert!(out.status.success(), "scripts/pg.sh start failed");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// A fresh database named after `name` (dropped first when a previous run left it), with
/// pgvector; returns its URL.
pub async fn database(name: &str) -> String {
    let base = server_url();
    let (client, connection) = tokio_postgres::connect(base, tokio_postgres::NoTls)
        .await
        .expect("connects to the test server");
    tokio::spawn(connection);
    let db = format!("t_{}", name.replace('-', "_"));
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .await
        .expect("drops the test database");
    // Databases created at once from one template can find it busy: try again shortly.
    for attempt in 1.. {
        match client.batch_execute(&format!("CREATE DATABASE {db}")).await {
            Ok(()) => break,
            Err(e) if attempt < 20 && e.to_string().contains("accessed by other users") => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("creates the test database: {e}"),
        }
    }
    let (prefix, _) = base.rsplit_once('/').expect("a URL with a database");
    format!("{prefix}/{db}")
}

/// Runs one SQL text on `url` (test set-up and inspection); returns the first column of each
/// row as text.
pub async fn sql(url: &str, text: &str) -> Vec<String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connects");
    tokio::spawn(connection);
    let rows = client.simple_query(text).await.expect("the statement runs");
    rows.iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// The cluster and secret ARNs the shim accepts.
pub const CLUSTER_ARN: &str = "arn:aws:rds:us-east-1:123456789012:cluster:bounded-rag-test";
pub const SECRET_ARN: &str =
    "arn:aws:secretsmanager:us-east-1:123456789012:secret:bounded-rag-db-AbCdEf";

/// The RDS Data API shim, executing on one database; killed on drop.
pub struct DataApiShim {
    child: Child,
    database: String,
    /// Its endpoint (`AWS_ENDPOINT_URL`).
    pub endpoint: String,
}

impl DataApiShim {
    /// Starts the shim in front of `database_url`.
    pub fn start(database_url: &str) -> Self {
        let python = root().join(".local/venv-pg/bin/python");
        let mut child = Command::new(python)
            .arg(root().join("tests/support/rds_data_shim.py"))
            .args(["--database-url", database_url])
            .args(["--resource-arn", CLUSTER_ARN, "--secret-arn", SECRET_ARN])
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the shim starts (scripts/pg.sh install puts pg8000 in .local/venv-pg)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the shim prints its port");
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from the shim: {line}"));
        let database = database_url
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        Self {
            child,
            database,
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    }

    /// `KB_URI` for this shim's database.
    pub fn kb_uri(&self) -> String {
        format!(
            "rds-data://{CLUSTER_ARN}/{}?secret={SECRET_ARN}",
            self.database
        )
    }

    /// The environment a client of the shim needs.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
            ("KB_URI", self.kb_uri()),
        ]
    }

    /// Requests received per operation (`Execute`, `BeginTransaction`, ...).
    pub async fn calls(&self) -> serde_json::Value {
        http()
            .get(format!("{}/_shim/calls", self.endpoint))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The requests received, oldest first (`[{"op", "body"}]`).
    pub async fn requests(&self) -> Vec<serde_json::Value> {
        http()
            .get(format!("{}/_shim/requests", self.endpoint))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Makes `times` calls of `op`, after the next `after`, fail with HTTP `status` and the
    /// Data API error `error`.
    pub async fn fail(&self, op: &str, status: u16, error: &str, times: u32, after: u32) {
        self.fail_when(op, status, error, times, after, "").await;
    }

    /// As [`Self::fail`], counting only the requests whose SQL holds `sql`.
    pub async fn fail_when(
        &self,
        op: &str,
        status: u16,
        error: &str,
        times: u32,
        after: u32,
        sql: &str,
    ) {
        let response = http()
            .post(format!(
                "{}/_shim/fail?op={op}&status={status}&error={error}&times={times}&after={after}\
                 &sql={}",
                self.endpoint,
                percent_encoding::utf8_percent_encode(sql, percent_encoding::NON_ALPHANUMERIC)
            ))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success());
    }

    /// Forgets the counts and requests so far.
    pub async fn reset(&self) {
        let response = http()
            .post(format!("{}/_shim/reset", self.endpoint))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success());
    }
}

impl Drop for DataApiShim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http() -> reqwest::Client {
    bounded_rag::tls::reqwest_builder().build().unwrap()
}
