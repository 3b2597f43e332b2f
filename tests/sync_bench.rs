//! Figures for BENCHMARKS.md (ignored: run by hand, they print and assert nothing about time).
//!
//! - `bench_lambda_sync`: the sync function through `cargo lambda watch` on moto, with 1, 4 and 8
//!   concurrent instances: an initial full sync (documents per second, from the `full_sync`
//!   message to the end of the last publish), then changes one document at a time: the
//!   passages embedded and publishes per change (counted at the scripted server and in the
//!   records), and the time from the S3 event to a search citing the change (p50, p95).
//! - `bench_cli_resync`: `kb sync` of a folder to moto S3, then one document of N modified.
//!
//! `BENCH_DOCS` (default 2000) sizes the synthetic corpus; `BENCH_CORPUS=DIR` syncs the files
//! of a folder instead; `BENCH_INSTANCES` (default `1,4,8`); `BENCH_CHANGES` (default 10).
use crate::support;

use aws_sdk_s3::primitives::ByteStream;
use bounded_rag::embed::{EmbeddingsClient, EmbeddingsConfig};
use bounded_rag::ingest::sync::{sync, SyncSource};
use bounded_rag::ingest::IngestOptions;
use bounded_rag::kb::s3::{self, BundleStore};
use bounded_rag::kb::{LiveKnowledge, LoadOptions, Retriever};
use futures::StreamExt;
use std::time::{Duration, Instant, SystemTime};
use support::embeddings_server::ScriptedEmbeddings;
use support::lambda_watch::LambdaWatch;
use support::moto::{moto, unique_name};
use support::sync_pump::pump;
use support::sync_stack::SyncStack;

const MODEL: &str = "concepts-7";

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// (relative path, bytes) of the corpus.
fn corpus() -> Vec<(String, Vec<u8>)> {
    if let Ok(dir) = std::env::var("BENCH_CORPUS") {
        let root = std::path::PathBuf::from(dir);
        let mut out = Vec::new();
        let mut pending = vec![root.clone()];
        while let Some(d) = pending.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    pending.push(p);
                } else {
                    let rel = p
                        .strip_prefix(&root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    out.push((rel, std::fs::read(&p).unwrap()));
                }
            }
        }
        return out;
    }
    let n: usize = env_or("BENCH_DOCS", "2000").parse().unwrap();
    (0..n)
        .map(|i| {
            let body = format!(
                "# Note {i}\n\nOrchard block {i} holds tree row {i}; soil batch {i} was limed in \
                 week {}.",
                i % 52
            );
            (
                format!("notes/{:02}/note-{i:05}.md", i % 100),
                body.into_bytes(),
            )
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "benchmark: prints figures for BENCHMARKS.md"]
async fn bench_lambda_sync() {
    let docs = corpus();
    let instances: Vec<usize> = env_or("BENCH_INSTANCES", "1,4,8")
        .split(',')
        .map(|n| n.trim().parse().unwrap())
        .collect();
    let changes: usize = env_or("BENCH_CHANGES", "10").parse().unwrap();
    let moto = moto().await;
    let sdk = moto.sdk_config().await;
    let s3c = s3::client(&sdk);
    let sqs = moto.sqs().await;
    for &n in &instances {
        let SyncStack {
            source,
            dest,
            table,
            queue,
            ledger,
            server,
            ..
        } = SyncStack::create(Vec::new(), "30", "kb").await;
        let store = BundleStore::new(s3c.clone(), dest.clone());
        futures::stream::iter(&docs)
            .map(|(rel, body)| {
                let s3c = s3c.clone();
                let source = source.clone();
                async move {
                    s3c.put_object()
                        .bucket(&source)
                        .key(format!("docs/{rel}"))
                        .body(ByteStream::from(body.clone()))
                        .send()
                        .await
                        .unwrap();
                }
            })
            .buffer_unordered(32)
            .collect::<Vec<_>>()
            .await;
        let mut env = moto.function_env();
        env.extend([
            ("SYNC_TABLE", table.clone()),
            ("SYNC_QUEUE_URL", queue.clone()),
            ("SYNC_SOURCE_URI", format!("s3://{source}/docs")),
            ("SYNC_DEST_URI", dest.to_string()),
            ("SYNC_DEBOUNCE_SECONDS", "1".into()),
            ("EMBEDDINGS_BASE_URL", server.base_url()),
            ("EMBEDDINGS_MODEL", MODEL.into()),
            ("RUST_LOG", "warn".into()),
        ]);
        let mut watches = Vec::new();
        for _ in 0..n {
            watches.push(LambdaWatch::start(&env).await);
        }
        let refs: Vec<&LambdaWatch> = watches.iter().collect();
        let started = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        sqs.send_message()
            .queue_url(&queue)
            .message_body("{\"full_sync\":{}}")
            .send()
            .await
            .unwrap();
        pump(
            &sqs,
            &queue,
            &refs,
            Duration::from_secs(4),
            Duration::from_secs(3600),
        )
        .await;
        let jobs = ledger.jobs().await.unwrap();
        let end = jobs.iter().map(|j| j.finished_at).max().unwrap();
        let seconds = (end - started) as f64 / 1000.0;
        let done = ledger.docs().await.unwrap().len();
        println!(
            "initial sync, {n} instance(s): {done} documents in {seconds:.1} s = {:.1} docs/s; \
             {} publishes; {} passages embedded",
            done as f64 / seconds,
            jobs.len(),
            server.batches().iter().map(Vec::len).sum::<usize>()
        );
        if n != instances[0] {
            continue;
        }
        // One document at a time: event to a search citing it.
        let mut latencies = Vec::new();
        for c in 0..changes {
            let (rel, body) = &docs[c * 7 % docs.len()];
            let word = format!("zanthorix{c}");
            let mut body = body.clone();
            body.extend_from_slice(format!("\n\nA {word} weevil was seen here.").as_bytes());
            let out = s3c
                .put_object()
                .bucket(&source)
                .key(format!("docs/{rel}"))
                .body(ByteStream::from(body))
                .send()
                .await
                .unwrap();
            let etag = out.e_tag().unwrap().trim_matches('"').to_owned();
            let event = serde_json::json!({"Records": [{
                "eventVersion": "2.1", "eventSource": "aws:s3", "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": source}, "object": {"key": format!("docs/{rel}"),
                       "eTag": etag, "sequencer": format!("00FFFF{c:010X}")}}}]});
            let (embedded_before, publishes_before) = (
                server.batches().iter().map(Vec::len).sum::<usize>(),
                ledger.jobs().await.unwrap().len(),
            );
            let t0 = Instant::now();
            sqs.send_message()
                .queue_url(&queue)
                .message_body(event.to_string())
                .send()
                .await
                .unwrap();
            let search = async {
                loop {
                    let kb = LiveKnowledge::open(
                        store.clone(),
                        LoadOptions {
                            refresh_every: None,
                            ..LoadOptions::default()
                        },
                    )
                    .await;
                    if let Ok(kb) = kb {
                        let hits = kb
                            .retrieve(&format!("{word} weevil"), &Default::default())
                            .await
                            .unwrap_or_default();
                        if hits.first().is_some_and(|h| h.url.contains(rel.as_str())) {
                            return t0.elapsed();
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            };
            let (_, latency) = tokio::join!(
                pump(
                    &sqs,
                    &queue,
                    &refs,
                    Duration::from_secs(3),
                    Duration::from_secs(600)
                ),
                search
            );
            let embedded = server.batches().iter().map(Vec::len).sum::<usize>() - embedded_before;
            let publishes = ledger.jobs().await.unwrap().len() - publishes_before;
            println!(
                "change {c}: {rel}: {embedded} passage(s) embedded, {publishes} publish(es), \
                 searchable after {:.2} s",
                latency.as_secs_f64()
            );
            latencies.push(latency.as_secs_f64());
        }
        if !latencies.is_empty() {
            latencies.sort_by(f64::total_cmp);
            println!(
                "time to searchable over {} changes (SYNC_DEBOUNCE_SECONDS=1): p50 {:.2} s, p95 {:.2} s",
                latencies.len(),
                percentile(&latencies, 0.5),
                percentile(&latencies, 0.95)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "benchmark: prints figures for BENCHMARKS.md"]
async fn bench_cli_resync() {
    let docs = corpus();
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for (rel, body) in &docs {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(an_hour_ago)
            .unwrap();
    }
    let server = ScriptedEmbeddings::start([]).await;
    let embedder = EmbeddingsClient::new(EmbeddingsConfig {
        base_url: server.base_url(),
        model: MODEL.into(),
        api_key: None,
    })
    .unwrap();
    let options = IngestOptions {
        embedder: Some(&embedder),
        ..IngestOptions::default()
    };
    let s3c = s3::client(&moto().await.sdk_config().await);
    let bucket = unique_name("kb").to_lowercase();
    s3c.create_bucket().bucket(&bucket).send().await.unwrap();
    let store = BundleStore::new(s3c, format!("s3://{bucket}/kb").parse().unwrap());
    let source = SyncSource::Folder(src.clone());
    let t = Instant::now();
    let first = sync(&source, &store, &options).await.unwrap();
    println!(
        "kb sync, first: {} files, {} passages embedded in {} calls... {:.1} s ({:.1} docs/s)",
        first.scanned,
        first.embedded_passages,
        server.total_calls(),
        t.elapsed().as_secs_f64(),
        first.scanned as f64 / t.elapsed().as_secs_f64()
    );
    let (rel, body) = &docs[docs.len() / 2];
    let mut body = body.clone();
    body.extend_from_slice(b"\n\nA zanthorix weevil was seen here.");
    std::fs::write(src.join(rel), body).unwrap();
    let calls = server.total_calls();
    let t = Instant::now();
    let again = sync(&source, &store, &options).await.unwrap();
    println!(
        "kb sync, 1 of {} modified: new {} modified {} unchanged {}, {} passage(s) embedded in {} \
         call(s), {} cached, published {}: {:.1} s",
        again.scanned,
        again.new,
        again.modified,
        again.unchanged,
        again.embedded_passages,
        server.total_calls() - calls,
        again.cached_passages,
        again.published,
        t.elapsed().as_secs_f64()
    );
}
