//! Lambda's SQS event source for the sync function, played on a moto queue against one or
//! more `cargo lambda watch` emulators at once (each runs its own sync process: concurrent
//! invocations). Each emulator's loop receives up to 10 messages, invokes `sync` with the SQS
//! event, deletes what succeeded and leaves the failures to come back after the queue's
//! visibility timeout. The pump stops once every receive has come back empty for `idle`.

use super::lambda_watch::LambdaWatch;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What a pump did.
#[derive(Debug, Default)]
pub struct Pumped {
    /// Messages handed to the function, redeliveries included.
    pub deliveries: AtomicUsize,
    /// Records the function reported as failed.
    pub failures: AtomicUsize,
}

/// Feeds `url` to the `sync` function of every emulator in `watches` until the queue stays
/// empty for `idle` (at most `limit` in all).
pub async fn pump(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    watches: &[&LambdaWatch],
    idle: Duration,
    limit: Duration,
) -> Pumped {
    let pumped = Pumped::default();
    let shared = Shared {
        sqs,
        url,
        pumped: &pumped,
        last_seen: std::sync::Mutex::new(Instant::now()),
        idle,
        start: Instant::now(),
        limit,
    };
    futures::future::join_all(watches.iter().map(|w| lane(&shared, w))).await;
    pumped
}

struct Shared<'a> {
    sqs: &'a aws_sdk_sqs::Client,
    url: &'a str,
    pumped: &'a Pumped,
    last_seen: std::sync::Mutex<Instant>,
    idle: Duration,
    start: Instant,
    limit: Duration,
}

/// One function instance's poller.
async fn lane(s: &Shared<'_>, watch: &LambdaWatch) {
    loop {
        let quiet = s.last_seen.lock().unwrap().elapsed();
        if quiet > s.idle {
            return;
        }
        assert!(
            s.start.elapsed() < s.limit,
            "the sync queue never went quiet"
        );
        let messages = s
            .sqs
            .receive_message()
            .queue_url(s.url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
            )
            .send()
            .await
            .expect("ReceiveMessage on moto")
            .messages
            .unwrap_or_default();
        if messages.is_empty() {
            continue;
        }
        *s.last_seen.lock().unwrap() = Instant::now();
        s.pumped
            .deliveries
            .fetch_add(messages.len(), Ordering::SeqCst);
        let answer = watch.invoke("sync", &event(&messages)).await;
        let failed: Vec<String> = answer["batchItemFailures"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["itemIdentifier"].as_str().map(str::to_owned))
            .collect();
        s.pumped.failures.fetch_add(failed.len(), Ordering::SeqCst);
        for m in &messages {
            if failed.iter().any(|id| Some(id.as_str()) == m.message_id()) {
                continue;
            }
            // An invocation longer than the visibility timeout lets the message be received
            // again meanwhile; its old receipt handle is then refused, as SQS does.
            let _ = s
                .sqs
                .delete_message()
                .queue_url(s.url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await;
        }
        *s.last_seen.lock().unwrap() = Instant::now();
    }
}

/// The Lambda SQS event of `messages`, with their receive counts.
fn event(messages: &[aws_sdk_sqs::types::Message]) -> Value {
    let records: Vec<Value> = messages
        .iter()
        .map(|m| {
            let receives = m
                .attributes()
                .and_then(|a| {
                    a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
                })
                .cloned()
                .unwrap_or_else(|| "1".into());
            json!({
                "messageId": m.message_id().unwrap(),
                "receiptHandle": m.receipt_handle().unwrap(),
                "body": m.body().unwrap(),
                "attributes": {"ApproximateReceiveCount": receives},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    json!({ "Records": records })
}
