//! `MAX_REQUESTS_PER_CALLER_PER_MINUTE`: run requests of one caller arriving at once are
//! admitted exactly up to the limit in each one-minute window; the rest get 429 with
//! `Retry-After` until the window ends, and reads are never counted.

use crate::support;

use bounded_rag::clock::Clock;
use bounded_rag::entry::api;
use bounded_rag::runs::MemoryQueue;
use bounded_rag::store::MemoryStore;
use std::sync::Arc;
use std::time::Duration;
use support::app::timed_app_on;
use support::llm_server::{Script, ScriptedLlm};

const RUNS_START: &str = include_str!("../events/apigw-runs-start.json");
const RUNS_GET: &str = include_str!("../events/apigw-runs-get.json");
const RUN_JWT: &str = include_str!("../events/apigw-run-jwt.json");
const LIMIT: u32 = 4;

fn request(event: &str) -> lambda_http::Request {
    lambda_http::request::from_str(event).expect("event parses")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_the_limit_is_admitted_per_window_under_concurrent_requests() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let (app, clock) = timed_app_on(
        &llm,
        Duration::ZERO,
        Duration::from_secs(60),
        Arc::new(MemoryStore::new()),
    );
    let app = Arc::new(app.with_max_requests_per_caller_per_minute(Some(LIMIT)));
    let queue = Arc::new(MemoryQueue::default());
    // 10 s into a minute: 50 s of the window are left.
    let now = clock.now_ms();
    clock.advance(Duration::from_millis(60_000 - now % 60_000 + 10_000));

    let send_all = |count: usize| {
        let tasks: Vec<_> = (0..count)
            .map(|_| {
                let (app, queue) = (app.clone(), queue.clone());
                tokio::spawn(async move {
                    let response =
                        api::handle(&app, Some(queue.as_ref()), request(RUNS_START)).await;
                    let retry_after = response
                        .headers()
                        .get("retry-after")
                        .map(|v| v.to_str().unwrap().to_owned());
                    (
                        response.status().as_u16(),
                        api::body_json(&response),
                        retry_after,
                    )
                })
            })
            .collect::<Vec<_>>();
        async move {
            let mut answers = Vec::new();
            for task in tasks {
                answers.push(task.await.unwrap());
            }
            answers
        }
    };

    let answers = send_all(3 * LIMIT as usize).await;
    let admitted = answers.iter().filter(|(status, ..)| *status == 202).count();
    assert_eq!(admitted, LIMIT as usize, "{answers:?}");
    for (status, body, retry_after) in answers.iter().filter(|(s, ..)| *s != 202) {
        assert_eq!(*status, 429, "{body}");
        assert_eq!(body["error"], "too_many_requests");
        assert_eq!(body["limit"], LIMIT);
        assert_eq!(retry_after.as_deref(), Some("50"));
        assert_eq!(body["retry_after_seconds"], 50);
        assert!(body["message"].as_str().unwrap().contains("retry in 50 s"));
    }
    assert_eq!(
        queue.sent().len(),
        LIMIT as usize,
        "refused runs were not queued"
    );

    // Reads are not counted; another caller has its own window.
    let (_, first, _) = answers.iter().find(|(s, ..)| *s == 202).unwrap();
    let get = RUNS_GET.replace(
        "00000000-0000-4000-8000-000000000001",
        first["run_id"].as_str().unwrap(),
    );
    for _ in 0..LIMIT + 1 {
        let response = api::handle(&app, Some(queue.as_ref()), request(&get)).await;
        assert_eq!(response.status().as_u16(), 200);
    }
    let response = api::handle(&app, Some(queue.as_ref()), request(RUN_JWT)).await;
    assert_eq!(response.status().as_u16(), 200);

    // 49.9 s later the window still refuses; at its end a new one admits the limit again.
    clock.advance(Duration::from_millis(49_900));
    let answers = send_all(1).await;
    assert_eq!(answers[0].0, 429);
    assert_eq!(answers[0].2.as_deref(), Some("1"));
    clock.advance(Duration::from_millis(100));
    let answers = send_all(2 * LIMIT as usize).await;
    let admitted = answers.iter().filter(|(status, ..)| *status == 202).count();
    assert_eq!(admitted, LIMIT as usize);
    assert_eq!(
        llm.total_calls(),
        7,
        "only the JWT caller's synchronous run called the model"
    );
}
