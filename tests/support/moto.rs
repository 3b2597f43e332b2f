//! A real moto server (DynamoDB, Secrets Manager, SQS wire APIs) on loopback: one per test
//! binary, started on first use and shared by every test in it.
//!
//! `moto_server` is looked up in `MOTO_SERVER_BIN`, then `infra/local/moto-server` (moto's
//! server with atomic DynamoDB item writes, as DynamoDB has them, run by the venv that
//! `scripts/setup-test-tools.sh` installs), then `.local/venv/bin/moto_server`, then `PATH`.
//! Missing means the tests fail.
//!
//! Lifetime: the server runs under a small `sh` wrapper whose stdin is a pipe held by this
//! process. When the test process exits, however it exits, the pipe closes and the wrapper kills
//! the server. Its output goes to a log file, never to inherited pipes, so nothing keeps
//! `cargo test` (or CI) waiting after the tests are done.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::{Credentials, SharedCredentialsProvider};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};
use bounded_rag::store::{LEASE_INDEX, LEASE_SHARD, OWNER, OWNER_INDEX, OWNER_SORT};

/// How long a starting server may take to answer HTTP.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Attempts with a fresh port if the chosen one is taken between probing and binding.
const START_ATTEMPTS: usize = 3;

/// Kills the server when this process's end of its stdin closes (at exit): `$1` is the log
/// file, the rest is the command.
const WRAPPER: &str = r#"log=$1; shift
exec 3<&0
"$@" </dev/null >"$log" 2>&1 &
pid=$!
(cat <&3 >/dev/null; kill "$pid" 2>/dev/null) &
wait "$pid""#;

/// A running moto server.
pub struct Moto {
    endpoint: String,
    /// The wrapper; its stdin is the lifeline. Never dropped: statics live until exit.
    _wrapper: Mutex<Child>,
}

static MOTO: OnceLock<Moto> = OnceLock::new();
static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// The shared server of this test binary, started on first call.
pub async fn moto() -> &'static Moto {
    MOTO.get_or_init(Moto::start)
}

/// A name no other test of this process uses (`prefix-<pid>-<n>`).
pub fn unique_name(prefix: &str) -> String {
    let n = UNIQUE.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

impl Moto {
    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The environment that points a function process at this server: endpoint, region,
    /// static test credentials, no instance metadata.
    pub fn function_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ]
    }

    /// SDK configuration for this server: region us-east-1, static test credentials, the
    /// server's endpoint. Built from scratch, so no developer profile or env var leaks in.
    pub async fn sdk_config(&self) -> SdkConfig {
        let credentials = Credentials::new("testing", "testing", None, None, "moto");
        SdkConfig::builder()
            .http_client(bounded_rag::tls::aws_http_client())
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(SharedCredentialsProvider::new(credentials))
            .endpoint_url(&self.endpoint)
            .build()
    }

    /// [`Moto::sdk_config`] with another endpoint (a proxy in front of this server) and the
    /// SDK's standard retries, as `aws_config::load_defaults` gives the functions.
    pub async fn sdk_config_at(&self, endpoint: &str) -> SdkConfig {
        self.sdk_config()
            .await
            .into_builder()
            .endpoint_url(endpoint)
            .retry_config(aws_config::retry::RetryConfig::standard())
            .build()
    }

    /// A DynamoDB client for this server.
    pub async fn dynamodb(&self) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::new(&self.sdk_config().await)
    }

    /// A Secrets Manager client for this server.
    pub async fn secretsmanager(&self) -> aws_sdk_secretsmanager::Client {
        aws_sdk_secretsmanager::Client::new(&self.sdk_config().await)
    }

    /// Creates a fresh checkpoint table as `template.yaml` has it (pk S, sk S, on-demand, TTL
    /// on `expires_at`, the sparse lease index the sweeper queries, the owner index run and
    /// thread lists query); returns its name.
    pub async fn create_table(&self) -> String {
        let name = unique_name("checkpoints");
        let client = self.dynamodb().await;
        let typed = |name: &str, kind| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(kind)
                .build()
                .expect("attribute definition")
        };
        let attribute = |name: &str| typed(name, ScalarAttributeType::S);
        let key = |name: &str, key_type| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(key_type)
                .build()
                .expect("key schema element")
        };
        let leases = GlobalSecondaryIndex::builder()
            .index_name(LEASE_INDEX)
            .key_schema(key(LEASE_SHARD, KeyType::Hash))
            .key_schema(key("lease_expires_at", KeyType::Range))
            .projection(
                Projection::builder()
                    .projection_type(ProjectionType::Include)
                    .non_key_attributes("lease_owner")
                    .non_key_attributes("requeued_for")
                    .non_key_attributes("requeued_at")
                    .build(),
            )
            .build()
            .expect("lease index");
        let by_owner = GlobalSecondaryIndex::builder()
            .index_name(OWNER_INDEX)
            .key_schema(key(OWNER, KeyType::Hash))
            .key_schema(key(OWNER_SORT, KeyType::Range))
            .projection(
                Projection::builder()
                    .projection_type(ProjectionType::All)
                    .build(),
            )
            .build()
            .expect("owner index");
        client
            .create_table()
            .table_name(&name)
            .attribute_definitions(attribute("pk"))
            .attribute_definitions(attribute("sk"))
            .attribute_definitions(attribute(LEASE_SHARD))
            .attribute_definitions(typed("lease_expires_at", ScalarAttributeType::N))
            .attribute_definitions(attribute(OWNER))
            .attribute_definitions(attribute(OWNER_SORT))
            .key_schema(key("pk", KeyType::Hash))
            .key_schema(key("sk", KeyType::Range))
            .global_secondary_indexes(leases)
            .global_secondary_indexes(by_owner)
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await
            .expect("CreateTable on moto");
        let ttl = TimeToLiveSpecification::builder()
            .attribute_name("expires_at")
            .enabled(true)
            .build()
            .expect("ttl specification");
        client
            .update_time_to_live()
            .table_name(&name)
            .time_to_live_specification(ttl)
            .send()
            .await
            .expect("UpdateTimeToLive on moto");
        name
    }

    /// An SQS client for this server.
    pub async fn sqs(&self) -> aws_sdk_sqs::Client {
        aws_sdk_sqs::Client::new(&self.sdk_config().await)
    }

    /// Creates a fresh standard queue; returns its URL.
    pub async fn create_queue(&self) -> String {
        self.sqs()
            .await
            .create_queue()
            .queue_name(unique_name("work"))
            .send()
            .await
            .expect("CreateQueue on moto")
            .queue_url
            .expect("queue url")
    }

    /// Creates a fresh secret holding `secret_string`; returns its name.
    pub async fn create_secret(&self, secret_string: &str) -> String {
        let name = unique_name("bounded-rag/test");
        self.secretsmanager()
            .await
            .create_secret()
            .name(&name)
            .secret_string(secret_string)
            .send()
            .await
            .expect("CreateSecret on moto");
        name
    }

    fn start() -> Moto {
        let binary = find_binary();
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            match try_start(&binary) {
                Ok(moto) => return moto,
                Err(failure) => failures.push(failure),
            }
        }
        panic!(
            "moto_server ({}) did not start:\n{}",
            binary.display(),
            failures.join("\n")
        );
    }
}

/// Receives (and deletes) every message visible on `url`, in batches of 10, until a receive
/// comes back empty (at most 1,000 batches).
pub async fn drain(client: &aws_sdk_sqs::Client, url: &str) -> Vec<aws_sdk_sqs::types::Message> {
    let mut all = Vec::new();
    for _ in 0..1_000 {
        let batch = receive(client, url, 10).await;
        if batch.is_empty() {
            return all;
        }
        all.extend(batch);
    }
    panic!("queue {url} never ran dry");
}

/// Receives (and deletes) up to `max` (1..=10) visible messages of `url`.
pub async fn receive(
    client: &aws_sdk_sqs::Client,
    url: &str,
    max: i32,
) -> Vec<aws_sdk_sqs::types::Message> {
    let messages = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(max)
        .send()
        .await
        .expect("ReceiveMessage on moto")
        .messages
        .unwrap_or_default();
    for m in &messages {
        client
            .delete_message()
            .queue_url(url)
            .receipt_handle(m.receipt_handle().expect("receipt handle"))
            .send()
            .await
            .expect("DeleteMessage on moto");
    }
    messages
}

/// The Lambda SQS event a poller would build from `messages`.
pub fn sqs_event(
    messages: &[aws_sdk_sqs::types::Message],
) -> aws_lambda_events::event::sqs::SqsEvent {
    let records: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            serde_json::json!({
                "messageId": m.message_id().expect("message id"),
                "receiptHandle": m.receipt_handle().expect("receipt handle"),
                "body": m.body().expect("body"),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "Records": records })).expect("SQS event")
}

fn try_start(binary: &Path) -> Result<Moto, String> {
    let port = free_port();
    let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("moto-{port}.log"));
    let mut wrapper = Command::new("sh")
        .arg("-c")
        .arg(WRAPPER)
        .arg("sh")
        .arg(&log)
        .arg(binary)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot spawn sh: {e}"))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if answers_http(addr) {
            let endpoint = format!("http://{addr}");
            let _wrapper = Mutex::new(wrapper);
            return Ok(Moto { endpoint, _wrapper });
        }
        let exited = wrapper.try_wait().ok().flatten();
        if exited.is_some() || Instant::now() > deadline {
            let _ = wrapper.kill(); // closes nothing else: the server dies with the lifeline
            drop(wrapper.stdin.take());
            let _ = wrapper.wait();
            let why = match exited {
                Some(status) => format!("exited with {status}"),
                None => format!("did not answer within {START_TIMEOUT:?}"),
            };
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: String = output.lines().rev().take(20).collect::<Vec<_>>().join("\n");
            return Err(format!(
                "port {port}: {why}; log {}:\n{tail}",
                log.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `MOTO_SERVER_BIN`, else the repo venv, else `PATH`; panics with the fix when absent.
fn find_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("MOTO_SERVER_BIN") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "MOTO_SERVER_BIN={} does not exist",
            path.display()
        );
        return path;
    }
    // moto with atomic DynamoDB item operations, as DynamoDB has them (see the script).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if root.join(".local/venv/bin/python").is_file() {
        return root.join("infra/local/moto-server");
    }
    let venv = root.join(".local/venv/bin/moto_server");
    if venv.is_file() {
        return venv;
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("moto_server"))
            .find(|candidate| candidate.is_file())
    });
    on_path.unwrap_or_else(|| {
        panic!(
            "moto_server not found. Run scripts/setup-test-tools.sh (installs it into \
             .local/venv), or set MOTO_SERVER_BIN. These tests need a real moto server."
        )
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("bind a loopback port")
}

/// True once something on `addr` answers an HTTP request.
fn answers_http(addr: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET /moto-api/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    let mut head = [0u8; 5];
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_exact(&mut head).is_ok()
        && &head == b"HTTP/"
}
