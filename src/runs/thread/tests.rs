//! Unit tests of the thread head and the thread service over the memory store.

use super::head::{ThreadHead, TurnRecord};
use super::{ThreadError, Threads};
use crate::clock::FakeClock;
use crate::config::ThreadSettings;
use crate::engine::{run_key, Checkpoint, Phase};
use crate::rag::RunStatus;
use crate::rag::ThreadContext;
use crate::rag::{Caller, Outcome, RagCheckpoint, RagNode, RagState, RunRequest};
use crate::runs::active::CREATE_GRACE;
use crate::store::{CheckpointStore, MemoryStore};
use std::sync::Arc;

fn turn(n: u32) -> TurnRecord {
    TurnRecord {
        turn: n,
        run_id: format!("r{n}"),
        status: RunStatus::Completed,
        question: format!("q{n}"),
        standalone_question: format!("q{n}"),
        answer: format!("a{n}"),
        citations: Vec::new(),
        started_at_ms: 0,
        finished_at_ms: 0,
    }
}

#[test]
fn the_head_keeps_a_bounded_window_of_turns() {
    let mut head = ThreadHead::new("t", 0);
    for n in 1..=1_000 {
        head.append(turn(n), 6, n.into());
    }
    assert_eq!(head.turns, 1_000);
    let kept: Vec<u32> = head.recent.iter().map(|t| t.turn).collect();
    assert_eq!(kept, [995, 996, 997, 998, 999, 1_000]);
    // Recording a turn again (a retried finish) does not duplicate it.
    head.append(turn(1_000), 6, 1_001);
    assert_eq!(head.recent.len(), 6);
    assert_eq!(head.turns, 1_000);
}

const NOW: u64 = 1_800_000_000_000;

/// A finished run of turn `context`, stored without its turn being recorded (the invocation
/// died between its last checkpoint and the thread write).
async fn store_finished_run(store: &MemoryStore, run_id: &str, context: &ThreadContext) {
    let mut state = RagState::new(RunRequest::new(context.question.clone()));
    state.thread = Some(context.clone());
    state.finish(
        Outcome::Completed,
        "It is caused by Phytophthora palmivora.".into(),
    );
    let mut cp: RagCheckpoint = Checkpoint::new(run_id, RagNode::RouteQuestion, state);
    cp.phase = Phase::Finished;
    let body = serde_json::to_vec(&cp).unwrap();
    store.put(&run_key(run_id), 0, &body, None).await.unwrap();
}

#[tokio::test]
async fn an_ended_turn_left_unrecorded_is_recorded_by_the_next_start() {
    let clock = FakeClock::at_ms(NOW);
    let store = MemoryStore::new();
    let threads = Threads::new(&store, &clock, ThreadSettings::default());
    let me = Caller::Anonymous;
    let first = threads
        .begin(&me, "t", "run-a", "What causes patch canker?")
        .await
        .unwrap();
    assert_eq!((first.turn, first.history.len()), (1, 0));
    store_finished_run(&store, "run-a", &first).await;
    let second = threads
        .begin(&me, "t", "run-b", "How is it treated?")
        .await
        .unwrap();
    assert_eq!(second.turn, 2);
    assert_eq!(second.history.len(), 1);
    assert_eq!(second.history[0].question, "What causes patch canker?");
    let (head, turns) = threads.show(&me, "t", 0, 10).await.unwrap();
    assert_eq!((head.turns, head.active_run()), (1, Some("run-b")));
    assert_eq!(turns.len(), 1);
    assert_eq!((turns[0].turn, turns[0].run_id.as_str()), (1, "run-a"));
    // Starting the same run again is a no-op.
    assert_eq!(
        threads
            .begin(&me, "t", "run-b", "How is it treated?")
            .await
            .unwrap(),
        second
    );
}

#[tokio::test]
async fn a_turn_whose_run_never_got_stored_is_busy_for_the_grace_period_only() {
    let clock = Arc::new(FakeClock::at_ms(NOW));
    let store = MemoryStore::new();
    let threads = Threads::new(&store, clock.as_ref(), ThreadSettings::default());
    let me = Caller::Anonymous;
    threads.begin(&me, "t", "lost", "q").await.unwrap();
    match threads.begin(&me, "t", "next", "q").await {
        Err(ThreadError::Busy {
            run_id,
            retry_at_ms,
            ..
        }) => {
            assert_eq!(run_id, "lost");
            assert_eq!(retry_at_ms, NOW + 30_000);
        }
        other => panic!("{other:?}"),
    }
    clock.advance(CREATE_GRACE);
    let next = threads.begin(&me, "t", "next", "q").await.unwrap();
    assert_eq!(next.turn, 1);
    // Deleting an idle thread; then it is gone.
    store_finished_run(&store, "next", &next).await;
    threads.delete(&me, "t").await.unwrap();
    assert!(matches!(
        threads.show(&me, "t", 0, 10).await,
        Err(ThreadError::NotFound { .. })
    ));
    assert!(store.get(&run_key("next")).await.unwrap().is_none());
}
