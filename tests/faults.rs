//! 200 runs with 20 % of their DynamoDB and SQS calls failing on the wire.
//!
//! A fault-injecting proxy ([`support::fault_proxy`]) sits between the application's AWS SDK
//! clients and moto: throttling errors, 500s, answers slower than the client waits and
//! slightly slower ones, connections dropped before and after moto applied the request. The
//! clients are built exactly as the functions build them (standard SDK retries, each call
//! bounded by half of `DEADLINE_MARGIN_MS`), and nothing else retries an AWS call.
//!
//! The runs: 80 synchronous ones (the API's service call, with an ample budget), 40
//! synchronous ones whose budget runs out so a worker continues them (continuations), and 80
//! asynchronous ones (stored, then queued). The test plays the callers (a caller whose run
//! was never stored tries again with the same run id), Lambda's SQS event source (delete on
//! success, redeliver a failure, dead-letter after 3 receives) and the EventBridge schedule
//! (sweeps, with time moved past every lease). The worker and the sweeper go through the
//! faulty proxy too.
//!
//! Then, for every run: it ended `completed` with its six steps exactly once each, and every
//! model call it made is accounted for: the fault-free calls its checkpoint records, plus the
//! calls of steps whose checkpoint write failed (at most one step per failed write).

use crate::support;

use bounded_rag::aws;
use bounded_rag::clock::{Clock, FakeClock, SystemClock};
use bounded_rag::config::Settings;
use bounded_rag::engine::EngineError;
use bounded_rag::entry::sweeper::Sweeper;
use bounded_rag::entry::{work_queue, App};
use bounded_rag::rag::{RunRequest, RunStatus};
use bounded_rag::runs::{WorkMessage, WorkQueue};
use bounded_rag::store::{CheckpointStore, DynamoStore};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use support::app::timed_graph;
use support::counted::{Counted, CountedQueue};
use support::event_source::EventSource;
use support::fault_proxy::{Fault, FaultPlan, FaultProxy, Service};
use support::happy_path::{schedule, STEPS};
use support::llm_server::{Script, ScriptedLlm};
use support::moto::moto;

const SYNC: usize = 80;
const SUSPENDING: usize = 40;
const ASYNC: usize = 80;
const RUNS: usize = SYNC + SUSPENDING + ASYNC;
/// Each DynamoDB or SQS call (SDK retries included) may take half of it: 1 s.
const MARGIN: Duration = Duration::from_secs(2);
/// Runs started at once.
const CONCURRENCY: usize = 16;

fn run_id(i: usize) -> String {
    format!("fault-{i:03}")
}

fn question(i: usize) -> String {
    format!("Run {i:03}: what causes patch canker in durian?")
}

/// 20 faulty requests in every 100: 6 throttled, 4 answered 500, 4 slow (in time), 2 too slow,
/// 2 dropped before moto saw them, 2 dropped after moto applied them.
fn plan() -> FaultPlan {
    FaultPlan {
        per_hundred: 20,
        mix: vec![
            (Fault::Throttle, 6),
            (Fault::ServerError, 4),
            (Fault::SlowUnder, 4),
            (Fault::SlowOver, 2),
            (Fault::DropBefore, 2),
            (Fault::DropAfter, 2),
        ],
        seed: 20,
        slow_under: Duration::from_millis(50),
        slow_over: aws::run_call_timeout(MARGIN) + Duration::from_millis(300),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `POST /workflow/run` within an ample budget.
    Sync,
    /// `POST /workflow/run` whose budget runs out: suspended, continued by the worker.
    Suspending,
    /// `POST /workflow/runs`: stored, then queued.
    Async,
}

fn kind(i: usize) -> Kind {
    match i {
        i if i < SYNC => Kind::Sync,
        i if i < SYNC + SUSPENDING => Kind::Suspending,
        _ => Kind::Async,
    }
}

/// Moves every clock to the same instant, `ahead` past the latest of them.
fn jump(clocks: &[&FakeClock], ahead: Duration) {
    let target = clocks.iter().map(|c| c.now_ms()).max().unwrap() + ahead.as_millis() as u64;
    for clock in clocks {
        clock.advance(Duration::from_millis(target - clock.now_ms()));
    }
}

/// The run index a model request is about (its question is in the prompt).
fn run_of(body: &serde_json::Value) -> Option<usize> {
    let text = body["messages"].to_string();
    let at = text.find("Run ")?;
    text[at + 4..at + 7].parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_runs_under_twenty_percent_wire_faults_all_finish_none_advanced_twice() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let m = moto().await;
    let table = m.create_table().await;
    let url = m.create_queue().await;
    let proxy = FaultProxy::start(m.endpoint(), plan()).await;

    // The functions' own wiring, pointed at the proxy.
    let sdk = m.sdk_config_at(&proxy.endpoint()).await;
    let config = DynamoStore::client_config(&sdk, aws::run_call_timeout(MARGIN));
    let faulty = DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
        table.clone(),
        Duration::from_secs(3_600),
    );
    let store = Arc::new(Counted::new(faulty));
    let settings = |budget: Duration| {
        let mut settings = Settings::default();
        settings.aws.work_queue_url = Some(url.clone());
        settings.budgets.run_timeout = budget;
        settings.budgets.deadline_margin = MARGIN;
        settings
    };
    let start = SystemClock.now_ms();
    let (clock_a, clock_b, clock_s) = (
        Arc::new(FakeClock::at_ms(start)),
        Arc::new(FakeClock::at_ms(start)),
        Arc::new(FakeClock::at_ms(start)),
    );
    // The API (ample budget) doubles as the worker; the suspending API runs out of budget.
    let app = App::from_parts(
        settings(Duration::from_secs(600)),
        timed_graph(&llm, clock_a.clone(), Duration::from_millis(1)),
        store.clone(),
        clock_a.clone(),
    );
    let tight = App::from_parts(
        settings(Duration::from_millis(700)),
        timed_graph(&llm, clock_b.clone(), Duration::from_millis(200)),
        store.clone(),
        clock_b.clone(),
    );
    let queue = Arc::new(CountedQueue::new(
        work_queue(&settings(Duration::from_secs(600)), &sdk).expect("the app's SQS queue"),
    ));
    let sweeper = Sweeper::new(store.clone(), queue.clone(), clock_s.clone());
    // Reads and checks go around the proxy.
    let direct = App::from_parts(
        settings(Duration::from_secs(600)),
        timed_graph(&llm, clock_s.clone(), Duration::ZERO),
        Arc::new(DynamoStore::new(
            m.dynamodb().await,
            table.clone(),
            Duration::from_secs(3_600),
        )),
        clock_s.clone(),
    );

    // 1. The callers.
    let started = futures::stream::iter(0..RUNS)
        .map(|i| {
            let (app, tight, queue, direct) = (&app, &tight, queue.as_ref(), &direct);
            async move {
                let id = run_id(i);
                let request = RunRequest::new(question(i));
                for _ in 0..20 {
                    let result = match kind(i) {
                        Kind::Sync => {
                            app.workflow()
                                .run_new(&id, request.clone(), &app.budget(None))
                                .await
                        }
                        Kind::Suspending => {
                            tight
                                .workflow()
                                .run_new(&id, request.clone(), &tight.budget(None))
                                .await
                        }
                        Kind::Async => app.workflow().submit(&id, request.clone()).await,
                    };
                    match result {
                        Ok(response) => {
                            let message = match (kind(i), response.status) {
                                (Kind::Async, _) => Some(WorkMessage {
                                    run_id: id.clone(),
                                    request: Some(request),
                                }),
                                (_, RunStatus::Suspended) => Some(WorkMessage::continuation(&id)),
                                _ => None,
                            };
                            if let Some(message) = message {
                                // A failed send is the API's 5xx; the run's parked lease
                                // lets the sweeper queue it later.
                                let _ = queue.send(&message).await;
                            }
                            return;
                        }
                        // An earlier attempt's write landed after all: the run exists.
                        Err(EngineError::Exists { .. }) => return,
                        Err(_) => {
                            // Stored (and leased) before the failure: the sweeper's now.
                            if direct.workflow().status(&id).await.is_ok() {
                                return;
                            }
                        }
                    }
                }
                panic!("run {id} was never stored in 20 attempts");
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<()>>();
    started.await;

    // 2. Lambda's SQS event source; 3. the schedule, with time moved past every lease.
    let mut harness = EventSource::new(m.sqs().await, &url);
    harness.pump(&app, queue.as_ref(), &proxy).await;
    let schedule = schedule();
    let mut sweeps = Vec::new();
    for round in 0.. {
        assert!(round < 20, "still sweeping after 20 rounds: {sweeps:?}");
        proxy.settle().await;
        jump(
            &[&clock_a, &clock_b, &clock_s],
            Duration::from_secs(16 * 60),
        );
        let report = sweeper.handle(&schedule).await;
        sweeps.push(report.as_ref().ok().copied());
        harness.pump(&app, queue.as_ref(), &proxy).await;
        if report.is_ok_and(|r| r.lapsed == 0 && r.failed == 0 && r.unlisted == 0) {
            break;
        }
    }
    proxy.settle().await;

    // Every run finished, each of its steps checkpointed exactly once.
    let recorded = llm.recorded();
    let mut calls: Vec<BTreeMap<String, usize>> = vec![BTreeMap::new(); RUNS];
    for call in &recorded {
        let i = run_of(&call.body).expect("every model call is about one run");
        *calls[i].entry(call.name().to_owned()).or_default() += 1;
    }
    let (mut lost_steps, mut lost_calls, mut checkpointed) = (0, 0, 0);
    let mut interrupted = 0;
    for (i, calls) in calls.iter().enumerate() {
        let id = run_id(i);
        let done = direct.workflow().status(&id).await.unwrap();
        assert_eq!(done.status, RunStatus::Completed, "{id}: {done:?}");
        let names: Vec<&str> = done
            .workflow_steps
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, STEPS, "{id}: a step recorded twice or missing");
        let per_step = |name: &str| {
            done.workflow_steps
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| s.details["model_calls"].as_u64())
                .unwrap_or(0) as usize
        };
        let total: usize = calls.values().sum();
        let saved = done.metadata.model_calls as usize;
        checkpointed += saved;
        let failed_puts = store.failed_puts(&format!("run#{id}"));
        // Every reply the model gave is counted in the checkpoint, unless the write that
        // would have carried it failed (then the step in flight runs again), or the budget ran
        // out while the reply was on its way (a request abandoned at the deadline): at most
        // one step's calls (one, or one per graded document) each time.
        let graded = per_step("grade_documents");
        let lost = total.checked_sub(saved).unwrap_or_else(|| {
            panic!("{id}: the checkpoint counts {saved} calls, the model saw {total}")
        });
        let deadline_stops = done
            .metadata
            .limits_hit
            .iter()
            .filter(|l| *l == "deadline")
            .count();
        assert!(
            lost <= (failed_puts + deadline_stops) * graded.max(2),
            "{id}: {lost} calls lost, {failed_puts} checkpoint writes failed, \
             {deadline_stops} deadline stops: {calls:?}"
        );
        // One route, one grade per document, one answer, then both checks asked together.
        assert_eq!(per_step("grade_hallucinations"), 2, "{id}");
        if kind(i) == Kind::Suspending {
            // Out of budget mid-step: the calls of the stopped step are counted too.
            assert!(saved >= 1 + graded + 1 + 2, "{id}: {saved}");
        } else {
            assert_eq!(saved, 1 + graded + 1 + 2, "{id}");
            // Never stopped mid-step, so what was lost are whole steps.
            let count = |task: &str| calls.get(task).copied().unwrap_or(0);
            let extra = |task: &str, fault_free: usize| {
                count(task)
                    .checked_sub(fault_free)
                    .unwrap_or_else(|| panic!("{id}: fewer {task} calls than its steps: {calls:?}"))
            };
            let (route, grades, answers) = (
                extra("route_query", 1),
                extra("grade_documents", graded),
                extra("generate_answer", 1),
            );
            let (grounded, useful) = (extra("grade_hallucinations", 1), extra("grade_answer", 1));
            assert_eq!(
                grades % graded,
                0,
                "{id}: a partial grade_documents: {calls:?}"
            );
            assert_eq!(grounded, useful, "{id}: the checks go together: {calls:?}");
            let steps = route + grades / graded + answers + grounded;
            assert!(
                steps <= failed_puts,
                "{id}: {steps} steps ran again, {failed_puts} checkpoint writes failed: {calls:?}"
            );
            lost_steps += steps;
        }
        lost_calls += lost;
        interrupted += usize::from(failed_puts > 0);
    }

    // The SDK is the only retry layer: at most 3 attempts per call, and never another
    // attempt after a clean answer.
    let attempts = proxy.attempts();
    let expected_ops: BTreeMap<&str, usize> = BTreeMap::from([
        ("GetItem", store.gets.load(Ordering::SeqCst)),
        ("PutItem", store.puts.load(Ordering::SeqCst)),
        (
            "Query",
            store.lapsed.load(Ordering::SeqCst) * usize::from(bounded_rag::store::LEASE_SHARDS),
        ),
        (
            "UpdateItem",
            store.claims.load(Ordering::SeqCst) + store.releases.load(Ordering::SeqCst),
        ),
        ("SendMessage", queue.sends.load(Ordering::SeqCst)),
    ]);
    for (operation, ops) in &expected_ops {
        let of_op: Vec<_> = attempts
            .iter()
            .filter(|a| a.operation == *operation)
            .collect();
        let clean = of_op
            .iter()
            .filter(|a| matches!(a.fault, None | Some(Fault::SlowUnder)) && a.upstream.is_some())
            .count();
        assert!(
            of_op.len() <= 3 * ops,
            "{operation}: {} attempts for {ops} calls",
            of_op.len()
        );
        assert!(
            clean <= *ops,
            "{operation}: {clean} clean answers for {ops} calls"
        );
    }
    let unexpected: Vec<_> = attempts
        .iter()
        .filter(|a| !expected_ops.contains_key(a.operation.as_str()))
        .map(|a| (a.service, a.operation.clone()))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");

    // Exactly 20 faults in every full block of 100 requests, split as planned.
    let faults = proxy.faults();
    let full_blocks = attempts.len() / 100;
    let injected: usize = faults.values().sum();
    assert!(
        injected >= 20 * full_blocks && injected <= 20 * (full_blocks + 1),
        "{injected} faults in {} requests",
        attempts.len()
    );
    for (fault, per_block) in plan().mix {
        let n = faults.get(&fault).copied().unwrap_or(0);
        assert!(
            n >= per_block * full_blocks && n <= per_block * (full_blocks + 1),
            "{fault:?}: {n}"
        );
    }
    assert_eq!(recorded.len(), checkpointed + lost_calls);
    let by_service = |service| attempts.iter().filter(|a| a.service == service).count();
    eprintln!(
        "faults: {} requests ({} DynamoDB, {} SQS), injected {faults:?}; {} model calls for \
         {RUNS} runs ({checkpointed} in checkpoints, {lost_calls} lost and made again, {lost_steps} whole steps \
         re-run in sync and async runs, {interrupted} runs interrupted); {} deliveries, {} \
         dead-lettered; sweeps {sweeps:?}",
        attempts.len(),
        by_service(Service::DynamoDb),
        by_service(Service::Sqs),
        recorded.len(),
        harness.deliveries,
        harness.dead_lettered,
    );
}

/// The fault-free clients of the functions, behind a proxy answering every request with
/// `fault`; each call may take 5 s, room for the SDK's three attempts and their backoff.
async fn always(
    fault: Fault,
) -> (
    FaultProxy,
    DynamoStore,
    bounded_rag::entry::adapters::SqsQueue,
) {
    let m = moto().await;
    let (table, url) = (m.create_table().await, m.create_queue().await);
    let proxy = FaultProxy::start(
        m.endpoint(),
        FaultPlan {
            per_hundred: 100,
            mix: vec![(fault, 100)],
            ..plan()
        },
    )
    .await;
    let sdk = m.sdk_config_at(&proxy.endpoint()).await;
    let margin = Duration::from_secs(10);
    let config = DynamoStore::client_config(&sdk, aws::run_call_timeout(margin));
    let store = DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
        table,
        Duration::from_secs(3_600),
    );
    let mut settings = Settings::default();
    settings.aws.work_queue_url = Some(url);
    settings.budgets.deadline_margin = margin;
    let queue = work_queue(&settings, &sdk).expect("the app's SQS queue");
    (proxy, store, queue)
}

#[tokio::test]
async fn a_transient_aws_error_is_tried_three_times_by_the_sdk_and_a_permanent_one_once() {
    for (fault, attempts, class) in [
        (
            Fault::Throttle,
            3,
            bounded_rag::error::ErrorClass::Transient,
        ),
        (
            Fault::ServerError,
            3,
            bounded_rag::error::ErrorClass::Transient,
        ),
        (
            Fault::DropBefore,
            3,
            bounded_rag::error::ErrorClass::Transient,
        ),
        (Fault::Invalid, 1, bounded_rag::error::ErrorClass::Permanent),
    ] {
        use bounded_rag::error::Classify;
        let (proxy, store, queue) = always(fault).await;
        let put = store.put("run#x", 0, b"{}", None).await.unwrap_err();
        assert_eq!(put.class(), class, "{fault:?}: {put}");
        let send = queue
            .send(&WorkMessage::continuation("x"))
            .await
            .unwrap_err();
        assert_eq!(send.class(), class, "{fault:?}: {send}");
        let seen: Vec<(Service, String)> = proxy
            .attempts()
            .into_iter()
            .map(|a| (a.service, a.operation))
            .collect();
        let mut expected = vec![(Service::DynamoDb, "PutItem".to_owned()); attempts];
        expected.extend(vec![(Service::Sqs, "SendMessage".to_owned()); attempts]);
        assert_eq!(seen, expected, "{fault:?}");
    }
}
