//! The sync function (`src/bin/sync.rs`) black-box through `cargo lambda watch`, fed S3 event
//! notifications (from `events/`) and its own messages over a moto SQS queue, recording in
//! moto's DynamoDB, reading and publishing on moto's S3, embedding at the scripted
//! embeddings server that counts every passage. A first sync, a modify and a delete with
//! exact counts; a duplicate event and a redelivered message that change nothing; a crash in
//! the middle of a document and a publisher that died holding the publish lease, both recovered; a poisoned file failed while the rest publish; a
//! burst of 200 events over four concurrent function instances ending in a few publishes,
//! never overlapping; a full sync fanned out over the queue.
use crate::support;

use aws_sdk_dynamodb::types::AttributeValue;
use bounded_rag::embed::{EmbeddingsClient, EmbeddingsConfig};
use bounded_rag::ingest::sync::job::{reason_of, summary_of};
use bounded_rag::ingest::sync::FailReason;
use bounded_rag::ingest::{ingest, IngestOptions};
use bounded_rag::store::{DocPhase, JobRecord, SyncControl};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use support::embeddings_server::{EmbedReply, ScriptedEmbeddings};
use support::lambda_watch::LambdaWatch;
use support::moto::moto;
use support::scripted_http::Hold;
use support::sync_stack::{SyncStack, MODEL};

const TEST_EVENT: &str = include_str!("../events/s3-test-event.json");

/// A section of 90 words (a passage closes at 80 words and a new heading).
fn section(heading: &str, words: &str) -> String {
    let body: Vec<&str> = words.split(' ').cycle().take(90).collect();
    format!("## {heading}\n\n{}.\n\n", body.join(" "))
}

/// Three sections: three passages.
fn guide(drainage: &str) -> String {
    format!(
        "# Durian guide\n\n{}{}{}",
        section("Canker", "dark lesions form on the trunk bark"),
        section("Mealybugs", "white insects cluster on fruit stalks"),
        section("Drainage", drainage),
    )
}

/// The version `ingest` gives `docs` (embedded at a server of its own, same model).
async fn ingest_version(docs: &[(String, Vec<u8>)]) -> String {
    let server = ScriptedEmbeddings::start([]).await;
    let embedder = EmbeddingsClient::new(EmbeddingsConfig {
        base_url: server.base_url(),
        model: MODEL.into(),
        api_key: None,
    })
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    for (name, body) in docs {
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    let options = IngestOptions {
        embedder: Some(&embedder),
        ..IngestOptions::default()
    };
    let out = ingest(&src, &work.path().join("kb"), &options)
        .await
        .unwrap();
    out.manifest.content_hash
}

fn no_overlap(jobs: &[JobRecord]) {
    let mut spans: Vec<(u64, u64)> = jobs.iter().map(|j| (j.started_at, j.finished_at)).collect();
    spans.sort_unstable();
    for pair in spans.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "two publishes overlapped: {spans:?}"
        );
    }
}

/// How many publishes a burst takes depends on how fast the machine works through it; what
/// the debounce promises does not: each publish starts a debounce (1 s) or more after the one
/// before, covers changes of its own, and the last covers all `changes` (`control`). The last
/// publish that wrote a version may have taken its number just before the last change was
/// counted and still read that document done; the publish the change then schedules finds
/// nothing new and writes no job, only the changes it covered.
fn debounced(jobs: &[JobRecord], control: &SyncControl, changes: u64) {
    let mut jobs = jobs.to_vec();
    jobs.sort_by_key(|j| j.started_at);
    for pair in jobs.windows(2) {
        assert!(
            pair[1].started_at >= pair[0].started_at + 1_000,
            "publishes closer than the debounce: {jobs:?}"
        );
        assert!(pair[1].number > pair[0].number, "{jobs:?}");
    }
    let last = jobs.last().map_or(0, |j| j.number);
    assert!(last > 0 && last <= changes, "{jobs:?}");
    assert_eq!(control.changes, changes, "{control:?}");
    assert_eq!(
        control.published_changes, changes,
        "every change published: {control:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_sync_add_modify_delete_and_duplicates_or_redeliveries_do_nothing_twice() {
    let stack = SyncStack::new(vec![]).await;
    let watch = LambdaWatch::start(&stack.env(&[])).await;
    let borer = "# Stem borer\n\nLarvae dig tunnels inside branches.";
    let guide_v1 = guide("raised beds keep roots out of standing water");
    let e1 = stack.put("guide.md", guide_v1.clone()).await;
    let e2 = stack.put("borer.md", borer).await;
    let first_guide = stack.created("guide.md", &e1);
    stack.send(TEST_EVENT).await;
    stack.send(&first_guide).await;
    stack.send(&stack.created("borer.md", &e2)).await;
    stack.pump(&[&watch]).await;

    // Both documents recorded, 3 + 1 passages embedded, one publish for the burst.
    let docs = stack.ledger.docs().await.unwrap();
    assert_eq!(docs.len(), 2);
    assert!(docs.iter().all(|d| d.phase == DocPhase::Done), "{docs:?}");
    assert_eq!(stack.embedded(), 4);
    let jobs = stack.jobs().await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let first = &summary_of(&jobs[0]).unwrap();
    assert_eq!((first.new, first.modified, first.deleted), (2, 0, 0));
    assert_eq!((first.embedded_passages, first.cached_passages), (4, 0));
    let expected = ingest_version(&[
        ("borer.md".into(), borer.into()),
        ("guide.md".into(), guide_v1.clone().into_bytes()),
    ])
    .await;
    assert_eq!(first.version.as_deref(), Some(expected.as_str()));
    assert_eq!(stack.store().pointer().await.unwrap().version, expected);
    let control = stack.ledger.control().await.unwrap();
    assert_eq!((control.changes, control.publishes), (2, 1));

    // The same event twice more (a duplicate from S3 and a redelivered message): nothing.
    stack.send(&first_guide).await;
    stack.send(&first_guide).await;
    assert_eq!(stack.pump(&[&watch]).await, 2);
    assert_eq!(stack.embedded(), 4);
    assert_eq!(stack.jobs().await.len(), 1);
    assert_eq!(stack.ledger.control().await.unwrap().changes, 2);

    // One paragraph changes: one passage embedded, two from the cache, one publish.
    let guide_v2 = guide("raised beds keep roots out of puddles");
    let e3 = stack.put("guide.md", guide_v2.clone()).await;
    stack.send(&stack.created("guide.md", &e3)).await;
    stack.pump(&[&watch]).await;
    assert_eq!(stack.embedded(), 5);
    let jobs = stack.jobs().await;
    assert_eq!(jobs.len(), 2);
    let modified = &summary_of(&jobs[1]).unwrap();
    assert_eq!(
        (modified.new, modified.modified, modified.unchanged),
        (0, 1, 1)
    );
    assert_eq!(
        (modified.embedded_passages, modified.cached_passages),
        (1, 2)
    );

    // A delete: its passages leave the next version; an older event for it is stale.
    stack
        .s3
        .delete_object()
        .bucket(&stack.source)
        .key("docs/borer.md")
        .send()
        .await
        .unwrap();
    stack.send(&stack.removed("borer.md")).await;
    stack.pump(&[&watch]).await;
    stack
        .send(
            &stack
                .created("borer.md", &e2)
                .replace("0055AED6DCD9", "0000"),
        )
        .await;
    stack.pump(&[&watch]).await;
    let jobs = stack.jobs().await;
    assert_eq!(jobs.len(), 3, "{jobs:?}");
    let deleted = &summary_of(&jobs[2]).unwrap();
    assert_eq!(
        (
            deleted.deleted,
            deleted.unchanged,
            deleted.embedded_passages
        ),
        (1, 1, 0)
    );
    let expected = ingest_version(&[("guide.md".into(), guide_v2.into_bytes())]).await;
    assert_eq!(deleted.version.as_deref(), Some(expected.as_str()));
    let current = stack.store().list().await.unwrap();
    let current = current.iter().find(|p| p.current).unwrap();
    let paths: Vec<&str> = current
        .manifest
        .documents
        .iter()
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(paths, ["guide.md"]);
    assert_eq!(stack.embedded(), 5);
    no_overlap(&stack.jobs().await);

    // The CLI shows the records: documents by phase and every job.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bounded-rag"));
    cmd.args(["kb", "sync-status", &stack.dest.to_string(), "--json"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SYNC_TABLE", &stack.table);
    for (key, value) in moto().await.function_env() {
        cmd.env(key, value);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        status["documents"],
        serde_json::json!({"processing": 0, "done": 1, "failed": 0, "deleted": 1})
    );
    assert_eq!(status["jobs"].as_array().unwrap().len(), 3);
    assert_eq!(status["jobs"][2]["statistics"]["deleted"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_document_is_recovered_and_a_poisoned_file_fails_alone() {
    let hold = Hold::new();
    let stack = SyncStack::new(vec![
        EmbedReply::vectors().held(&hold),
        EmbedReply::vectors(),
    ])
    .await;
    let env = stack.env(&[]);
    let tunnels = "# Stem borer\n\nLarvae dig tunnels inside branches.";
    let etag = stack.put("borer.md", tunnels).await;
    stack.send(&stack.created("borer.md", &etag)).await;

    // The first invocation claims the document, then dies while its passages are embedded.
    let doomed = Arc::new(LambdaWatch::start(&env).await);
    let message = stack
        .sqs
        .receive_message()
        .queue_url(&stack.queue)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap()
        .remove(0);
    let event = serde_json::json!({"Records": [{
        "messageId": message.message_id().unwrap(),
        "receiptHandle": message.receipt_handle().unwrap(),
        "body": message.body().unwrap(),
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
    }]});
    let invoking = {
        let doomed = doomed.clone();
        tokio::spawn(async move { doomed.invoke_raw("sync", &event).await })
    };
    for _ in 0..200 {
        if stack.server.total_calls() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stack.server.total_calls(), 1, "the embeddings call is held");
    let pid = doomed.function_pid("sync").unwrap();
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    // The harness notices the process died before answering.
    assert!(invoking.await.is_err());
    let claimed = stack.ledger.doc("borer.md").await.unwrap().unwrap();
    assert_eq!((claimed.phase, claimed.attempts), (DocPhase::Processing, 1));

    // A publisher that died holding the publish lease (for 8 more seconds).
    let crashed_until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 8_000;
    moto()
        .await
        .dynamodb()
        .await
        .update_item()
        .table_name(&stack.table)
        .key("pk", AttributeValue::S(format!("sync#{}", stack.dest)))
        .key("sk", AttributeValue::S("control".into()))
        .update_expression("SET lease_until = :u, lease_owner = :o")
        .expression_attribute_values(":u", AttributeValue::N(crashed_until.to_string()))
        .expression_attribute_values(":o", AttributeValue::S("crashed-publisher".into()))
        .send()
        .await
        .unwrap();

    // A poisoned file arrives meanwhile; another instance picks everything up.
    let poison = stack.put("bad.txt", vec![0xff, 0xfe, b'x']).await;
    stack.send(&stack.created("bad.txt", &poison)).await;
    let rescuer = LambdaWatch::start(&env).await;
    stack.pump(&[&rescuer]).await;
    let borer = stack.ledger.doc("borer.md").await.unwrap().unwrap();
    assert_eq!((borer.phase, borer.attempts), (DocPhase::Done, 2));
    let bad = stack.ledger.doc("bad.txt").await.unwrap().unwrap();
    assert_eq!(bad.phase, DocPhase::Failed);
    assert!(
        matches!(reason_of(&bad), Some(FailReason::Unreadable { .. })),
        "{bad:?}"
    );
    // The held call and its retry after the crash: the one passage, twice; nothing more.
    let batches = stack.server.batches();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0], batches[1]);
    let jobs = stack.jobs().await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    // The publish waited for the dead publisher's lease to lapse, then took it over.
    assert!(jobs[0].started_at >= crashed_until, "{jobs:?}");
    assert_eq!(stack.ledger.control().await.unwrap().publishes, 1);
    let summary = &summary_of(&jobs[0]).unwrap();
    assert_eq!(summary.failed.len(), 1);
    assert_eq!(summary.failed[0].path, "bad.txt");
    let expected = ingest_version(&[("borer.md".into(), tunnels.into())]).await;
    assert_eq!(summary.version.as_deref(), Some(expected.as_str()));
    drop(doomed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_200_events_ends_in_a_few_publishes_never_concurrent() {
    let stack = SyncStack::new(vec![]).await;
    // Leases as long as production's outlast any step of a loaded machine: nothing here is
    // taken over, so every passage is embedded once and no two publishes overlap.
    let env = stack.env(&[("SYNC_LEASE_SECONDS", "120".into())]);
    let mut docs = Vec::new();
    let mut bodies = Vec::new();
    for i in 0..200 {
        let name = format!("notes/doc-{i:03}.md");
        let body = format!("# Note {i}\n\nNote number {i} is about orchard block {i}.");
        let etag = stack.put(&name, body.clone()).await;
        bodies.push(stack.created(&name, &etag));
        docs.push((name, body.into_bytes()));
    }
    let sends = bodies.iter().map(|b| stack.send(b));
    futures::future::join_all(sends).await;
    let watches = [
        LambdaWatch::start(&env).await,
        LambdaWatch::start(&env).await,
        LambdaWatch::start(&env).await,
        LambdaWatch::start(&env).await,
    ];
    let refs: Vec<&LambdaWatch> = watches.iter().collect();
    stack.pump(&refs).await;
    let records = stack.ledger.docs().await.unwrap();
    assert_eq!(records.len(), 200);
    assert!(records.iter().all(|d| d.phase == DocPhase::Done));
    assert_eq!(stack.embedded(), 200, "every passage embedded exactly once");
    let jobs = stack.jobs().await;
    eprintln!("burst of 200: {} publishes, {} changes", jobs.len(), 200);
    no_overlap(&jobs);
    let control = stack.ledger.control().await.unwrap();
    debounced(&jobs, &control, 200);
    assert_eq!(control.changes, 200);
    assert!(control.publishes as usize <= jobs.len());
    let expected = ingest_version(&docs).await;
    assert_eq!(stack.store().pointer().await.unwrap().version, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_sync_fans_out_over_the_queue_and_finds_deletions() {
    let stack = SyncStack::new(vec![]).await;
    let env = stack.env(&[("SYNC_LEASE_SECONDS", "120".into())]);
    let mut docs = Vec::new();
    for i in 0..20 {
        let name = format!("doc-{i:02}.md");
        let body = format!("# Doc {i}\n\nDocument {i} names tree {i}.");
        stack.put(&name, body.clone()).await;
        docs.push((name, body.into_bytes()));
    }
    let watches = [
        LambdaWatch::start(&env).await,
        LambdaWatch::start(&env).await,
    ];
    let refs: Vec<&LambdaWatch> = watches.iter().collect();
    stack.send("{\"full_sync\":{}}").await;
    // One full-sync message, 20 documents, then the publish(es).
    let deliveries = stack.pump(&refs).await;
    assert!(deliveries >= 22, "{deliveries}");
    assert_eq!(stack.embedded(), 20);
    let jobs = stack.jobs().await;
    no_overlap(&jobs);
    debounced(&jobs, &stack.ledger.control().await.unwrap(), 20);
    let expected = ingest_version(&docs).await;
    assert_eq!(stack.store().pointer().await.unwrap().version, expected);

    // Unchanged objects are not queued again; a deleted one is found and removed.
    stack
        .s3
        .delete_object()
        .bucket(&stack.source)
        .key("docs/doc-07.md")
        .send()
        .await
        .unwrap();
    stack.send("{\"full_sync\":{}}").await;
    stack.pump(&refs).await;
    assert_eq!(stack.embedded(), 20);
    let jobs = stack.jobs().await;
    let last = &summary_of(jobs.last().unwrap()).unwrap();
    assert_eq!((last.deleted, last.unchanged, last.new), (1, 19, 0));
    docs.remove(7);
    let expected = ingest_version(&docs).await;
    assert_eq!(last.version.as_deref(), Some(expected.as_str()));
}
