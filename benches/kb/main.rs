//! The knowledge-base benchmark at scale: a generated corpus of 100,000 passages with
//! 384-dimension vectors. Measures ingest time (embeddings from a local server), bundle size,
//! publishing to and cold-loading from moto's S3 on loopback, BM25 and hybrid query latency,
//! and the `api` function's start-up and peak RSS serving from that bundle.
//!
//! `cargo bench --bench kb -- [--passages N] [--queries N] [--api PATH] [--out FILE]`
//! (`scripts/bench.sh` runs it as its own step; BENCHMARKS.md has the figures).

mod corpus;
mod lambda;
// Shared with the suite bench, which also reads the response times.
#[allow(dead_code)]
#[path = "../common/runtime_server.rs"]
mod runtime_server;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use bounded_rag::embed::{EmbeddingsClient, EmbeddingsConfig};
use bounded_rag::ingest::{ingest, IngestOptions};
use bounded_rag::kb::s3::{self, BundleStore};
use bounded_rag::kb::{KnowledgeBase, LiveKnowledge, LoadOptions};
use bounded_rag::search::RetrievalOptions;
use corpus::Words;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MODEL: &str = "bench-384";

struct Options {
    passages: usize,
    queries: usize,
    api: Option<PathBuf>,
    api_events: usize,
    out: Option<PathBuf>,
}

fn options() -> Options {
    let mut o = Options {
        passages: 100_000,
        queries: 1_000,
        api: None,
        api_events: 20,
        out: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--passages" => o.passages = value().parse().expect("--passages N"),
            "--queries" => o.queries = value().parse().expect("--queries N"),
            "--api" => o.api = Some(value().into()),
            "--api-events" => o.api_events = value().parse().expect("--api-events N"),
            "--out" => o.out = Some(value().into()),
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

fn log(message: &str) {
    eprintln!("kb bench: {message}");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

fn quantile(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let i = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[i]
}

/// The local embeddings server: `POST /v1/embeddings` with the corpus embedding.
async fn embeddings_server(words: Arc<Words>) -> String {
    async fn handle(State(words): State<Arc<Words>>, Json(body): Json<Value>) -> Json<Value> {
        let index = words.index();
        let inputs: Vec<String> = serde_json::from_value(body["input"].clone()).unwrap_or_default();
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"index": i, "embedding": words.embed(&index, t)}))
            .collect();
        Json(json!({"data": data, "usage": {"prompt_tokens": 0}}))
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/v1/embeddings", post(handle))
        .with_state(words);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// moto's server on a free loopback port; killed when dropped.
struct Moto {
    child: Child,
    endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto() -> Moto {
    let bin = std::env::var_os("MOTO_SERVER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(".local/venv/bin/moto_server")
        });
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (set MOTO_SERVER_BIN)", bin.display()));
    let endpoint = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "moto did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Moto { child, endpoint }
}

fn sdk(endpoint: &str) -> aws_config::SdkConfig {
    use aws_sdk_s3::config::{Credentials, SharedCredentialsProvider};
    aws_config::SdkConfig::builder()
        .http_client(bounded_rag::tls::aws_http_client())
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "bench", "bench", None, None, "bench",
        )))
        .endpoint_url(endpoint)
        .build()
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            if path.is_dir() {
                dir_size(&path)
            } else {
                path.metadata().unwrap().len()
            }
        })
        .sum()
}

/// This process's current and peak RSS, from /proc.
fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.trim_start_matches(name).trim().to_owned())
            .unwrap_or_default()
    };
    format!("RSS {}, peak {}", field("VmRSS:"), field("VmHWM:"))
}

/// `--api`, else the release `api` of the target folder, if built.
fn api_binary(o: &Options) -> Option<PathBuf> {
    o.api.clone().or_else(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
        let bin = target.join("release/api");
        bin.is_file().then_some(bin)
    })
}

#[tokio::main]
async fn main() {
    let o = options();
    let work = tempfile::tempdir().unwrap();
    // A private copy: the shared target folder's `api` may be rebuilt by another checkout
    // while the corpus is ingested.
    let api = api_binary(&o).map(|bin| {
        let copy = work.path().join("api");
        std::fs::copy(&bin, &copy).unwrap();
        copy
    });
    let words = Arc::new(Words::new());
    let index = words.index();

    log(&format!("generating {} passages", o.passages));
    let src = work.path().join("corpus");
    let files = corpus::write(&src, &words, o.passages).unwrap();
    let corpus_bytes = dir_size(&src);

    let base_url = embeddings_server(words.clone()).await;
    let embedder = EmbeddingsClient::new(EmbeddingsConfig {
        base_url,
        model: MODEL.into(),
        api_key: None,
    })
    .unwrap();
    log(&format!("ingesting with embeddings ({})", memory()));
    let bundle = work.path().join("bundle");
    let started = Instant::now();
    let summary = ingest(
        &src,
        &bundle,
        &IngestOptions {
            embedder: Some(&embedder),
            batch_size: 256,
            ..IngestOptions::default()
        },
    )
    .await
    .unwrap();
    let ingest_time = started.elapsed();
    let bundle_bytes = summary.manifest.total_bytes();
    let vector_bytes = summary.manifest.file("vectors.bin").map_or(0, |f| f.bytes);
    log(&format!("{summary}"));

    log(&format!("publishing to moto's S3 ({})", memory()));
    let moto = moto();
    let sdk = sdk(&moto.endpoint);
    let client = s3::client(&sdk);
    client
        .create_bucket()
        .bucket("bench-kb")
        .send()
        .await
        .unwrap();
    let store = BundleStore::new(client, "s3://bench-kb/kb".parse().unwrap());
    let started = Instant::now();
    store.publish(&bundle).await.unwrap();
    let publish_time = started.elapsed();

    log("cold loads from S3");
    let mut loads = Vec::new();
    let mut live = None;
    for _ in 0..3 {
        let started = Instant::now();
        let loaded = LiveKnowledge::open(
            store.clone(),
            LoadOptions {
                embedding_model: Some(MODEL.into()),
                refresh_every: None,
                ..LoadOptions::default()
            },
        )
        .await
        .unwrap();
        loads.push(ms(started.elapsed()));
        live = Some(loaded);
    }
    log(&format!("after the cold loads: {}", memory()));
    let kb: Arc<KnowledgeBase> = live.unwrap().current();
    assert_eq!(kb.stats().passages, summary.stats.passages);

    log("queries");
    let mut rng = StdRng::seed_from_u64(3);
    let queries: Vec<String> = (0..o.queries)
        .map(|_| {
            (0..4)
                .map(|_| words.query_word(&mut rng).to_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let vectors: Vec<Vec<f32>> = queries.iter().map(|q| words.embed(&index, q)).collect();
    let opts = RetrievalOptions {
        limit: 5,
        ..RetrievalOptions::default()
    };
    for q in queries.iter().take(50) {
        kb.search(q, &opts).unwrap(); // warm-up
    }
    let mut bm25 = Vec::new();
    for q in &queries {
        let started = Instant::now();
        assert!(!kb.search(q, &opts).unwrap().is_empty());
        bm25.push(ms(started.elapsed()));
    }
    let mut hybrid = Vec::new();
    for (q, v) in queries.iter().zip(&vectors) {
        let started = Instant::now();
        assert_eq!(kb.search_hybrid(q, v, &opts).unwrap().len(), 5);
        hybrid.push(ms(started.elapsed()));
    }
    let mut scan = Vec::new();
    let no_bm25 = RetrievalOptions {
        nodes: false,
        edges: false,
        ..opts
    };
    for v in vectors.iter().take(200) {
        // The vector half alone: a query with no BM25 words.
        let started = Instant::now();
        kb.search_hybrid("", v, &no_bm25).unwrap();
        scan.push(ms(started.elapsed()));
    }
    drop(kb);

    let function = api.map(|bin| {
        log(&format!("api function {} on the bundle", bin.display()));
        let template: Value =
            serde_json::from_str(include_str!("../../events/apigw-run.json")).unwrap();
        let events: Vec<String> = queries
            .iter()
            .take(o.api_events)
            .map(|q| {
                let mut e = template.clone();
                e["body"] = json!({"question": q, "n_retrieved_documents": 5})
                    .to_string()
                    .into();
                e.to_string()
            })
            .collect();
        let state = work.path().join("state");
        let mut cmd = Command::new(bin);
        cmd.env_clear()
            .env("LLM_PROVIDER", "offline")
            .env("STATE_DIR", &state)
            .env("KB_URI", "s3://bench-kb/kb")
            .env("KB_REFRESH_SECONDS", "0")
            .env(
                "EMBEDDINGS_BASE_URL",
                embedder.endpoint().trim_end_matches("/embeddings"),
            )
            .env("EMBEDDINGS_MODEL", MODEL)
            .env("AWS_ENDPOINT_URL", &moto.endpoint)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "bench")
            .env("AWS_SECRET_ACCESS_KEY", "bench")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("TMPDIR", work.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let served = lambda::serve(cmd, events, Duration::from_secs(120));
        for body in &served.responses {
            let v: Value = serde_json::from_str(body).unwrap();
            let answer: Value = serde_json::from_str(v["body"].as_str().unwrap()).unwrap();
            assert_eq!(answer["metadata"]["retrieval"], "hybrid", "{answer}");
        }
        assert_eq!(served.responses.len(), o.api_events);
        served
    });

    let mut table = String::new();
    let mut row = |what: &str, value: String| table.push_str(&format!("| {what} | {value} |\n"));
    row(
        "corpus",
        format!(
            "{} passages in {files} Markdown files, {:.0} MB; {}",
            summary.stats.passages,
            corpus_bytes as f64 / 1e6,
            summary.stats
        ),
    );
    row(
        "ingest (read, embed via loopback server, index, write)",
        format!(
            "{:.1} s, {} embeddings calls of 256",
            ingest_time.as_secs_f64(),
            summary.embedding_calls
        ),
    );
    row(
        "bundle size",
        format!(
            "{:.1} MB (vectors {:.1} MB: int8, {} dims)",
            bundle_bytes as f64 / 1e6,
            vector_bytes as f64 / 1e6,
            corpus::DIMS
        ),
    );
    row(
        "publish to moto S3",
        format!("{:.2} s", publish_time.as_secs_f64()),
    );
    row(
        "cold load from moto S3 (pointer, manifest, download + SHA-256, open)",
        format!(
            "{} ms (3 loads: {})",
            format_args!("{:.0}", quantile(&mut loads.clone(), 0.5)),
            loads
                .iter()
                .map(|l| format!("{l:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    row(
        "BM25 query, top 5",
        format!(
            "p50 {:.2} ms, p99 {:.2} ms ({} queries)",
            quantile(&mut bm25, 0.5),
            quantile(&mut bm25, 0.99),
            bm25.len()
        ),
    );
    row(
        "hybrid query, top 5 (BM25 50 + flat int8 scan 50, RRF)",
        format!(
            "p50 {:.2} ms, p99 {:.2} ms",
            quantile(&mut hybrid, 0.5),
            quantile(&mut hybrid, 0.99)
        ),
    );
    row(
        "of which the flat vector scan alone",
        format!(
            "p50 {:.2} ms, p99 {:.2} ms",
            quantile(&mut scan, 0.5),
            quantile(&mut scan, 0.99)
        ),
    );
    if let Some(f) = &function {
        row(
            "`api` start-up incl. KB load from S3 (to first poll)",
            format!("{:.0} ms", ms(f.to_first_poll)),
        );
        row(
            "`api` peak RSS (start-up + 20 hybrid runs)",
            format!("{:.0} MB", f.max_rss_kib as f64 / 1024.0),
        );
    } else {
        row(
            "`api` peak RSS",
            "not measured (no release `api` binary; pass --api)".into(),
        );
    }
    println!("{table}");
    if let Some(out) = &o.out {
        std::fs::write(out, &table).unwrap();
    }
}
