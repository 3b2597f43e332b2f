//! Completion events, black-box: the `api`, `worker` and `sweeper` binaries under `cargo lambda
//! watch`, moto's DynamoDB, SQS and EventBridge (a rule on the bus delivers every `bounded-rag`
//! event to an SQS queue, which the test reads), and the scripted model. One run is killed
//! mid-step (a crash), re-queued by the sweeper, finished by a worker whose event put fails,
//! redelivered, delivered again as a duplicate and swept again: exactly one `Run Finished`.
//!
//! Needs `scripts/setup-test-tools.sh` (moto_server and cargo-lambda in `.local/venv`).

use crate::support;

use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::happy_path::{schedule, QUESTION};
use support::lambda_watch::{alive, LambdaWatch};
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::moto::{drain, moto, receive, sqs_event, unique_name, Moto};
use support::scripted_http::Hold;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A bus whose `bounded-rag` events go to a fresh SQS queue; returns (bus, queue URL).
async fn bus_to_queue(moto: &Moto) -> (String, String) {
    let events = aws_sdk_eventbridge::Client::new(&moto.sdk_config().await);
    let sqs = moto.sqs().await;
    let bus = unique_name("runs");
    events
        .create_event_bus()
        .name(&bus)
        .send()
        .await
        .expect("CreateEventBus on moto");
    let queue_url = moto.create_queue().await;
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("GetQueueAttributes on moto")
        .attributes()
        .and_then(|a| {
            a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn)
                .cloned()
        })
        .expect("queue ARN");
    events
        .put_rule()
        .name("run-finished")
        .event_bus_name(&bus)
        .event_pattern(r#"{"source":["bounded-rag"],"detail-type":["Run Finished"]}"#)
        .send()
        .await
        .expect("PutRule on moto");
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id("queue")
        .arn(arn)
        .build()
        .expect("target");
    events
        .put_targets()
        .rule("run-finished")
        .event_bus_name(&bus)
        .targets(target)
        .send()
        .await
        .expect("PutTargets on moto");
    (bus, queue_url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_finished_event_across_a_crash_a_failed_put_a_duplicate_and_sweeps() {
    let moto = moto().await;
    let hold = Hold::new();
    let llm = ScriptedLlm::start(Script::defaults().on(
        "generate_answer",
        [
            Reply::answer("Scripted answer [1].").held(&hold),
            Reply::answer("Scripted answer [1]."),
        ],
    ))
    .await;
    let table = moto.create_table().await;
    let work_url = moto.create_queue().await;
    let sqs = moto.sqs().await;
    let (bus, events_url) = bus_to_queue(moto).await;
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table.clone()),
        ("WORK_QUEUE_URL", work_url.clone()),
        ("EVENT_BUS_NAME", bus.clone()),
        ("LLM_PROVIDER", "openai".to_owned()),
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", "scripted-model".to_owned()),
        ("LLM_API_KEY", "sk-test".to_owned()),
        ("RUN_TIMEOUT_MS", "3000".to_owned()),
        ("DEADLINE_MARGIN_MS", "500".to_owned()),
        ("RUST_LOG", "bounded_rag=info,warn".to_owned()),
    ]);

    // 1. An asynchronous run; its worker is killed inside `generate` (a crash).
    let first = LambdaWatch::start(&env).await;
    let started = first
        .url_request(
            "api",
            "POST",
            "/workflow/runs",
            Some(&json!({ "question": QUESTION }).to_string()),
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(started.status, 202, "{started:?}");
    let run_id = started.json()["run_id"].as_str().unwrap().to_owned();
    let original = drain(&sqs, &work_url).await;
    assert_eq!(original.len(), 1);
    let original = serde_json::to_value(sqs_event(&original)).unwrap();
    let pending = first.invoke_in_background("worker", original.clone());
    support::wait_until(|| llm.calls("generate_answer") == 1).await;
    assert_eq!(llm.calls("generate_answer"), 1, "{}", first.logs());
    let worker = first.function_pid("worker").expect("the worker process");
    // SAFETY: kill(2) on a pid this test's emulator started; no memory is involved.
    assert_eq!(unsafe { libc::kill(worker as i32, libc::SIGKILL) }, 0);
    for _ in 0..500 {
        if !alive(worker) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!alive(worker), "worker {worker} survived SIGKILL");
    pending.abort();
    hold.release();

    // 2. The sweeper re-queues it once its lease lapsed (3 s budget + 0.5 s margin).
    let lapse = now_ms() + 4_000;
    tokio::time::sleep(Duration::from_millis(lapse.saturating_sub(now_ms()))).await;
    let swept = first.invoke("sweeper", &schedule()).await;
    assert_eq!(swept["requeued"], 1, "{swept}");
    let requeued = drain(&sqs, &work_url).await;
    assert_eq!(requeued.len(), 1);
    let requeued = serde_json::to_value(sqs_event(&requeued)).unwrap();
    drop(first);

    // 3. A worker whose event put fails (EventBridge unreachable) finishes the run: the record
    //    comes back for another delivery, and nothing is sent.
    let mut unreachable = env.clone();
    unreachable.push((
        "AWS_ENDPOINT_URL_EVENTBRIDGE",
        "http://127.0.0.1:9".to_owned(),
    ));
    let cut_off = LambdaWatch::start(&unreachable).await;
    let outcome = cut_off.invoke("worker", &requeued).await;
    assert_eq!(
        outcome["batchItemFailures"].as_array().map(Vec::len),
        Some(1),
        "{outcome}\n{}",
        cut_off.logs()
    );
    drop(cut_off);
    assert!(receive(&sqs, &events_url, 10).await.is_empty());

    // 4. The redelivery sends it; a duplicate of the original message and two sweeps send
    //    nothing more.
    let second = LambdaWatch::start(&env).await;
    let outcome = second.invoke("worker", &requeued).await;
    assert_eq!(
        outcome,
        json!({"batchItemFailures": []}),
        "{}",
        second.logs()
    );
    let outcome = second.invoke("worker", &original).await;
    assert_eq!(
        outcome,
        json!({"batchItemFailures": []}),
        "{}",
        second.logs()
    );
    for _ in 0..2 {
        let swept = second.invoke("sweeper", &schedule()).await;
        assert_eq!(swept["lapsed"], 0, "{swept}");
    }
    assert!(drain(&sqs, &work_url).await.is_empty());

    let events: Vec<Value> = drain(&sqs, &events_url)
        .await
        .iter()
        .map(|m| serde_json::from_str(m.body().unwrap()).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{events:#?}");
    let event = &events[0];
    assert_eq!(event["source"], "bounded-rag", "{event:#}");
    assert_eq!(event["detail-type"], "Run Finished", "{event:#}");
    let detail = &event["detail"];
    assert_eq!(detail["run_id"], run_id.as_str(), "{event:#}");
    assert_eq!(detail["status"], "completed", "{event:#}");
    assert_eq!(detail["thread_id"], Value::Null, "{event:#}");
    assert_eq!(detail["steps"], 6, "{event:#}");
    assert_eq!(detail["model_calls"], 7, "{event:#}");
    assert_eq!(detail["tokens"]["total"], 7 * 110, "{event:#}");
    assert_eq!(detail["limits_hit"], json!([]), "{event:#}");
    assert_eq!(
        detail["caller_hash"].as_str().map(str::len),
        Some(64),
        "{event:#}"
    );
    let text = event.to_string();
    assert!(
        !text.contains(QUESTION) && !text.contains("Scripted answer"),
        "{text}"
    );
}
