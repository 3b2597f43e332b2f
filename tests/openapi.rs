//! `openapi.yaml` stays true: answers of the real handlers (`entry::api::handle`, and
//! `entry::stream_function::handle` for the streamed variant), driven with the events of `events/`
//! through every documented outcome, are checked against the operation they hit — status code
//! documented, content type listed, body valid against the schema (`$ref`s into
//! `components` resolved, formats checked), required headers present and well-formed. Finally
//! every documented status code of every operation must have been produced by some answer,
//! so the document cannot describe responses that no longer exist. The checker is
//! `tests/support/openapi.rs`; the answers of the fork and resume routes, of failures and of the
//! thread routes come from `openapi_fork.rs`, `openapi_resume.rs`, `openapi_faults.rs` and
//! `openapi_threads.rs`.

use crate::support;

use bounded_rag::entry::App;
use bounded_rag::runs::MemoryQueue;
use bounded_rag::runs::RunIndexer;
use bounded_rag::store::MemoryStore;
use lambda_http::http::HeaderMap;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::api_event::{
    cancel_event, get_event, get_path_event, list_event, steps_event, with_body, with_header,
    with_method,
};
use support::app::{app, timed_app};
use support::llm_server::{Script, ScriptedLlm};
use support::openapi::{call, call_stream, json_of, Exchange, Spec};

const RUN: &str = include_str!("../events/apigw-run.json");
const RUN_BAD: &str = include_str!("../events/apigw-run-bad.json");
const RUNS_START: &str = include_str!("../events/apigw-runs-start.json");
const NOT_FOUND: &str = include_str!("../events/apigw-not-found.json");
const URL_RUN_ANONYMOUS: &str = include_str!("../events/apigw-url-run-anonymous.json");

#[test]
fn every_answer_of_the_handlers_fits_openapi_yaml_and_every_documented_one_occurs() {
    // One long conversation with the handlers: its futures nest deep in a debug build (boxed,
    // it still overflowed the 2 MB test thread's stack once the run state grew its
    // attribution), so it runs on a thread of its own with room for them.
    let conversation = std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(Box::pin(every_answer_fits_and_every_documented_one_occurs()));
        })
        .expect("thread");
    if let Err(panic) = conversation.join() {
        std::panic::resume_unwind(panic);
    }
}

async fn every_answer_fits_and_every_documented_one_occurs() {
    let mut spec = Spec::load();
    let mut answers = Vec::new();
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let queue = MemoryQueue::default();

    // Happy paths, bad input, idempotency, routes.
    let indexed = || Arc::new(MemoryStore::new().with_indexer(Arc::new(RunIndexer)));
    let main = app(&llm, indexed(), true);
    let done = call(&main, None, RUN).await;
    let run_id = json_of(&done)["run_id"].as_str().unwrap().to_owned();
    answers.push(done);
    answers.push(call(&main, None, &get_event(&run_id)).await);
    let started = call(&main, Some(&queue), RUNS_START).await;
    let queued_id = json_of(&started)["run_id"].as_str().unwrap().to_owned();
    answers.push(started);
    answers.push(call(&main, None, &get_event(&queued_id)).await);
    let keyed = with_header(RUNS_START, "idempotency-key", "k-1");
    answers.push(call(&main, Some(&queue), &keyed).await);
    answers.push(call(&main, Some(&queue), &keyed).await);
    let reused = with_body(&keyed, r#"{"question":"Another question?"}"#);
    answers.push(call(&main, Some(&queue), &reused).await);
    answers.push(call(&main, None, &with_header(RUN, "idempotency-key", "k-1")).await);
    answers.push(call(&main, None, RUN_BAD).await);
    answers.push(call(&main, Some(&queue), &with_body(RUNS_START, "[]")).await);
    let long_key = "k".repeat(300);
    answers.push(call(&main, None, &with_header(RUN, "idempotency-key", &long_key)).await);
    answers.push(call(&main, None, &get_event("not.a.run.id")).await);
    answers.push(
        call(
            &main,
            None,
            &get_event("00000000-0000-4000-8000-00000000dead"),
        )
        .await,
    );
    let big = format!(r#"{{"question":"{}"}}"#, "x".repeat(70_000));
    answers.push(call(&main, None, &with_body(RUN, &big)).await);
    answers.push(call(&main, Some(&queue), &with_body(RUNS_START, &big)).await);
    answers.push(call(&main, None, NOT_FOUND).await);
    answers.push(call(&main, None, &with_method(RUN, "GET")).await);
    answers.push(call(&main, None, &with_method(&get_event(&run_id), "DELETE")).await);

    // History: a run's steps, paged; the caller's runs, paged and filtered.
    let first = call(&main, None, &steps_event(&run_id, &[("limit", "2")])).await;
    assert_eq!(json_of(&first)["next_after"], 2, "{first:?}");
    answers.push(first);
    answers.push(call(&main, None, &steps_event(&run_id, &[("after", "2")])).await);
    answers.push(call(&main, None, &steps_event(&run_id, &[("after", "-1")])).await);
    answers.push(
        call(
            &main,
            None,
            &steps_event("00000000-0000-4000-8000-00000000dead", &[]),
        )
        .await,
    );
    let listed = call(&main, None, &list_event(&[("limit", "1")])).await;
    let cursor = json_of(&listed)["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    answers.push(listed);
    answers.push(
        call(
            &main,
            None,
            &list_event(&[("cursor", &cursor), ("status", "completed")]),
        )
        .await,
    );
    answers.push(call(&main, None, &list_event(&[("status", "done")])).await);
    answers.push(call(&main, None, &list_event(&[("cursor", "bm90LWEtY3Vyc29y")])).await);
    answers.push(
        call(
            &main,
            None,
            &with_method(&steps_event(&run_id, &[]), "POST"),
        )
        .await,
    );

    // Cancel: a queued run (200, and 200 again), a finished one (409), bad and unknown ids.
    for _ in 0..2 {
        let cancelled = call(&main, None, &cancel_event(&queued_id)).await;
        assert_eq!(json_of(&cancelled)["status"], "cancelled", "{cancelled:?}");
        answers.push(cancelled);
    }
    let refused = call(&main, None, &cancel_event(&run_id)).await;
    assert_eq!(refused.status, 409, "{refused:?}");
    answers.push(refused);
    answers.push(call(&main, None, &cancel_event("not.a.run.id")).await);
    answers.push(
        call(
            &main,
            None,
            &cancel_event("00000000-0000-4000-8000-00000000dead"),
        )
        .await,
    );
    answers.push(call(&main, None, &with_method(&cancel_event(&run_id), "GET")).await);

    // Forks: every documented answer of the fork route.
    let forks = tokio::spawn(crate::openapi_fork::fork_answers());
    answers.extend(forks.await.expect("the fork answers"));
    // Waiting runs and their answers: every documented answer of the resume route.
    let resumes = tokio::spawn(crate::openapi_resume::resume_answers());
    answers.extend(resumes.await.expect("the resume answers"));

    // No queue: asynchronous runs are 501.
    let no_queue = app(&llm, Arc::new(MemoryStore::new()), false);
    answers.push(call(&no_queue, None, RUNS_START).await);
    // A store that cannot list runs: 500.
    answers.push(call(&no_queue, None, &list_event(&[])).await);

    // The active-run cap, on both POST routes and before a stream starts.
    let capped =
        app(&llm, Arc::new(MemoryStore::new()), true).with_max_active_runs_per_caller(Some(1));
    let capped: &'static App = Box::leak(Box::new(capped));
    answers.push(call(capped, Some(&queue), RUNS_START).await);
    answers.push(call(capped, Some(&queue), RUNS_START).await);
    answers.push(call(capped, Some(&queue), RUN).await);
    let refused = call_stream(capped, RUN).await;
    assert_eq!(refused.status, 429, "{refused:?}");
    answers.push(refused);

    // The per-caller request rate, on both POST routes.
    let limited = app(&llm, Arc::new(MemoryStore::new()), true)
        .with_max_requests_per_caller_per_minute(Some(1));
    answers.push(call(&limited, Some(&queue), RUNS_START).await);
    for event in [RUNS_START, RUN] {
        let refused = call(&limited, Some(&queue), event).await;
        assert_eq!(
            json_of(&refused)["error"],
            "too_many_requests",
            "{refused:?}"
        );
        answers.push(refused);
    }

    // The streamed variant: text/event-stream, ending with the JSON body as `final`.
    let streaming: &'static App =
        Box::leak(Box::new(app(&llm, Arc::new(MemoryStore::new()), false)));
    let streamed = call_stream(streaming, URL_RUN_ANONYMOUS).await;
    let text = String::from_utf8(streamed.body.clone()).unwrap();
    let last = text.trim_end().rsplit("\n\n").next().unwrap();
    let data = last
        .strip_prefix("id: 6.end\nevent: final\ndata: ")
        .expect("ends with final");
    let final_body = Exchange {
        method: "POST".into(),
        path: "/workflow/run".into(),
        status: 200,
        headers: {
            let mut h = HeaderMap::new();
            h.insert("content-type", "application/json".parse().unwrap());
            h
        },
        body: data.as_bytes().to_vec(),
    };
    answers.push(streamed);
    answers.push(final_body);

    // A stream picked back up with Last-Event-ID: replayed steps and `final` (200), a bad
    // id (400), another caller's or no run (404).
    let mine = call_stream(streaming, RUN).await;
    let mine_id = mine.headers["x-run-id"].to_str().unwrap().to_owned();
    let events_path = format!("/workflow/runs/{mine_id}/events");
    let resume = |id: &str| {
        with_header(
            &get_path_event("/workflow/runs/{run_id}/events", &events_path, &[]),
            "last-event-id",
            id,
        )
    };
    let resumed = call_stream(streaming, &resume("4.2")).await;
    let text = String::from_utf8(resumed.body.clone()).unwrap();
    assert!(text.starts_with("id: 5\nevent: step\n"), "{text}");
    assert!(text.contains("id: 6.end\nevent: final\n"), "{text}");
    answers.push(resumed);
    answers.push(call_stream(streaming, &resume("four")).await);
    let unknown = "/workflow/runs/00000000-0000-4000-8000-00000000dead/events";
    answers.push(
        call_stream(
            streaming,
            &get_path_event("/workflow/runs/{run_id}/events", unknown, &[]),
        )
        .await,
    );

    // Out of budget with a queue: 202 suspended.
    let (timed, _clock) = timed_app(&llm, Duration::from_millis(200), Duration::from_millis(700));
    answers.push(call(&timed, Some(&queue), RUN).await);

    // Failed runs, store and queue faults: `openapi_faults.rs`.
    let faults = tokio::spawn(crate::openapi_faults::fault_answers());
    answers.extend(faults.await.expect("the fault answers"));
    // Threads: `openapi_threads.rs`.
    let threads = tokio::spawn(crate::openapi_threads::thread_answers());
    answers.extend(threads.await.expect("the thread answers"));

    for answer in &answers {
        spec.check(answer);
    }
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert!(
        statuses.contains(&429) && statuses.contains(&409),
        "{statuses:?}"
    );
    let missing = spec.never_seen();
    assert!(
        missing.is_empty(),
        "documented but never answered (a test is missing, or the document is stale): {missing:#?}"
    );
}

#[test]
fn the_checker_refuses_answers_that_do_not_fit() {
    let json_headers = || {
        let mut h = HeaderMap::new();
        h.insert("content-type", "application/json".parse().unwrap());
        h
    };
    let wrong = [
        // A run without its metadata.
        (
            200,
            json!({"success": true, "status": "completed", "run_id": "r"}),
        ),
        // An undocumented status code: it falls back to `default`, an Error.
        (418, json!({"run_id": "r"})),
        // An error kind that does not exist.
        (404, json!({"error": "gone", "message": "x"})),
    ];
    for (status, body) in wrong {
        let exchange = Exchange {
            method: "GET".into(),
            path: "/workflow/runs/r".into(),
            status,
            headers: json_headers(),
            body: body.to_string().into_bytes(),
        };
        let caught = std::panic::catch_unwind(move || Spec::load().check(&exchange));
        assert!(caught.is_err(), "{status} {body} was accepted");
    }
    // A 429 without Retry-After.
    let exchange = Exchange {
        method: "POST".into(),
        path: "/workflow/run".into(),
        status: 429,
        headers: json_headers(),
        body: json!({"error": "too_many_active_runs", "message": "m", "limit": 1,
                     "active_run_ids": [], "retry_after_seconds": 1,
                     "retry_at": "2026-01-01T00:00:00Z"})
        .to_string()
        .into_bytes(),
    };
    let caught = std::panic::catch_unwind(move || Spec::load().check(&exchange));
    assert!(caught.is_err(), "a 429 without Retry-After was accepted");
}
