//! Forks: concurrency, one checkpoint per branch, admission and resume.

use super::*;
use crate::clock::FakeClock;
use crate::engine::{advance, Transition};
use crate::error::ErrorClass;
use crate::retry::RetryPolicy;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{Barrier, Semaphore};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum N {
    Fork,
    A,
    B,
    C,
    After,
}

impl NodeId for N {
    fn name(self) -> &'static str {
        match self {
            N::Fork => "fork",
            N::A => "a",
            N::B => "b",
            N::C => "c",
            N::After => "after",
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("boom")]
struct Boom(ErrorClass);
impl Classify for Boom {
    fn class(&self) -> ErrorClass {
        self.0
    }
}

/// `fork` splits into `a`, `b`, `c` (each adds its name to the state), then `after` ends.
/// With `barrier`, no branch finishes until all three are in flight; with `c_first`, `a` and
/// `b` wait until `c` has finished.
struct ForkToy {
    calls: Mutex<Vec<N>>,
    barrier: Option<Barrier>,
    c_first: Option<Semaphore>,
    tokens: u64,
    /// `b` fails with a transient error while this is set (then clears it).
    b_fails: Mutex<bool>,
}

impl ForkToy {
    fn new() -> Self {
        Self {
            calls: Mutex::new(Vec::new()),
            barrier: None,
            c_first: None,
            tokens: 0,
            b_fails: Mutex::new(false),
        }
    }

    fn calls(&self, branch: N) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|b| **b == branch)
            .count()
    }
}

#[async_trait]
impl Graph for ForkToy {
    type State = Vec<String>;
    type Node = N;
    type Error = Boom;
    type Merge = &'static str;

    fn start(&self, _: &Vec<String>) -> N {
        N::Fork
    }
    fn retry_policy(&self, _: N) -> RetryPolicy {
        RetryPolicy::NONE
    }
    fn estimate(&self, _: N) -> Duration {
        Duration::from_millis(10)
    }
    fn token_estimate(&self, node: N, _: &Vec<String>) -> u64 {
        match node {
            N::C => self.tokens * 10,
            _ => self.tokens,
        }
    }
    fn branches(&self, node: N, _: &Vec<String>) -> Vec<N> {
        match node {
            N::Fork => vec![N::A, N::B, N::C],
            _ => Vec::new(),
        }
    }
    async fn step(
        &self,
        node: N,
        _: &mut Vec<String>,
        _: &StepCtx<'_>,
    ) -> Result<StepOutput, Boom> {
        match node {
            N::After => Ok(crate::engine::StepOutput::end(serde_json::json!({}))),
            _ => Err(Boom(ErrorClass::Permanent)),
        }
    }
    async fn branch(
        &self,
        branch: N,
        state: &Vec<String>,
        ctx: &StepCtx<'_>,
    ) -> Result<BranchOutput<&'static str>, Boom> {
        self.calls.lock().unwrap().push(branch);
        if let Some(barrier) = &self.barrier {
            barrier.wait().await;
        }
        if let Some(gate) = &self.c_first {
            if branch == N::C {
                gate.add_permits(2);
            } else {
                let permit = gate.acquire().await;
                permit.map_err(|_| Boom(ErrorClass::Permanent))?.forget();
            }
        }
        if branch == N::B && std::mem::take(&mut *self.b_fails.lock().unwrap()) {
            return Err(Boom(ErrorClass::Transient));
        }
        ctx.meter().charge(&Usage {
            prompt_tokens: self.token_estimate(branch, state),
            model_calls: 1,
            ..Usage::default()
        });
        Ok(BranchOutput {
            merge: branch.name(),
            details: serde_json::json!({ "saw": state.len() }),
        })
    }
    fn merge(&self, state: &mut Vec<String>, merge: &'static str) {
        state.push(merge.to_owned());
    }
    fn join(&self, _: N, state: &mut Vec<String>) -> Transition<N> {
        state.push("joined".into());
        Transition::Next(N::After)
    }
}

type StepOutput = crate::engine::StepOutput<N>;
type Cp = Checkpoint<Vec<String>, N>;

/// Keeps every write: steps, release, the latest record's name and the checkpoint; the
/// write numbered `crash_at` fails instead (the process died before it).
#[derive(Default)]
struct Saves {
    writes: Vec<(u32, bool, &'static str)>,
    stored: Option<Cp>,
    crash_at: Option<usize>,
}

#[async_trait]
impl Persist<Cp> for Saves {
    async fn save(&mut self, cp: &Cp, release: bool) -> Result<(), EngineError> {
        if self.crash_at == Some(self.writes.len() + 1) {
            return Err(EngineError::Lost {
                run_id: cp.run_id.clone(),
            });
        }
        let latest = cp.latest_record().map_or("", |r| r.name.name());
        self.writes.push((cp.steps, release, latest));
        self.stored = Some(cp.clone());
        Ok(())
    }
}

fn budget(clock: &FakeClock) -> Budget {
    Budget::new(50, clock.now_ms() + 60_000)
}

fn names(cp: &Cp) -> Vec<&'static str> {
    cp.records.iter().map(|r| r.name.name()).collect()
}

/// The guard only turns a hang into a failure; nothing is asserted about time.
async fn run(g: &ForkToy, cp: &mut Cp, b: &Budget, clock: &FakeClock, saves: &mut Saves) {
    let run = advance(g, cp, b, clock, saves);
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("branches deadlocked: they did not run concurrently")
        .unwrap();
}

#[tokio::test]
async fn branches_are_in_flight_together_and_recorded_in_declared_order() {
    let clock = FakeClock::at_ms(0);
    let mut g = ForkToy::new();
    // Each branch waits until all three have started: only concurrent branches get past.
    g.barrier = Some(Barrier::new(3));
    // And `c` finishes first, so completion order differs from the declared one.
    g.c_first = Some(Semaphore::new(0));
    let mut cp = Checkpoint::new("r", N::Fork, Vec::new());
    let mut saves = Saves::default();
    run(&g, &mut cp, &budget(&clock), &clock, &mut saves).await;
    assert_eq!(cp.phase, Phase::Finished);
    assert_eq!([g.calls(N::A), g.calls(N::B), g.calls(N::C)], [1, 1, 1]);
    assert_eq!(names(&cp), ["a", "b", "c", "after"]);
    // one write per branch as it finished (c first), then the step after the join
    assert_eq!(saves.writes.len(), 4);
    assert_eq!(saves.writes[0], (1, false, "c"));
    assert_eq!(saves.writes[3], (4, true, "after"));
    assert_eq!(cp.state.last().map(String::as_str), Some("joined"));
    assert_eq!(cp.state.len(), 4, "three merges and the join");
    assert!(cp.branching.is_none());
    assert_eq!(cp.usage.model_calls, 3);
    // every branch read the state as it was when the fork started
    assert!(cp.records[..3].iter().all(|r| r.details["saw"] == 0));
}

#[tokio::test]
async fn each_branch_is_checkpointed_with_the_fork_until_it_joins() {
    let clock = FakeClock::at_ms(0);
    let g = ForkToy::new();
    let mut cp = Checkpoint::new("r", N::Fork, Vec::new());
    let mut saves = Saves {
        crash_at: Some(3),
        ..Saves::default()
    };
    let out = advance(&g, &mut cp, &budget(&clock), &clock, &mut saves).await;
    assert!(out.is_err(), "the third write failed");
    let stored = saves.stored.clone().unwrap();
    assert_eq!(saves.writes.iter().map(|w| w.0).collect::<Vec<_>>(), [1, 2]);
    assert_eq!((stored.steps, stored.records.len()), (2, 2));
    let fork = stored.branching.as_ref().expect("fork kept until it joins");
    assert_eq!(fork.done.len(), 2);
    assert_eq!(stored.next, Some(N::Fork));
    // the fork survives a store round trip
    let text = serde_json::to_string(&stored).unwrap();
    let back: Cp = serde_json::from_str(&text).unwrap();
    assert_eq!(back.branching, stored.branching);
    // stored under the name checkpoints written before the rename used
    assert!(text.contains(r#""fork":{"branches":["#), "{text}");
}

#[tokio::test]
async fn a_crash_between_branches_resumes_only_the_unrecorded_ones() {
    let clock = FakeClock::at_ms(0);
    let g = ForkToy::new();
    let mut cp = Checkpoint::new("r", N::Fork, Vec::new());
    // The process dies at the second write: one branch is recorded, the others are lost.
    let mut saves = Saves {
        crash_at: Some(2),
        ..Saves::default()
    };
    assert!(advance(&g, &mut cp, &budget(&clock), &clock, &mut saves)
        .await
        .is_err());
    let mut cp = saves.stored.take().unwrap();
    assert_eq!(cp.records.len(), 1);
    let recorded = cp.records[0].name;
    let before: Vec<usize> = [N::A, N::B, N::C].map(|b| g.calls(b)).to_vec();

    let mut saves = Saves::default();
    run(&g, &mut cp, &budget(&clock), &clock, &mut saves).await;
    assert_eq!(cp.phase, Phase::Finished);
    assert_eq!(names(&cp), ["a", "b", "c", "after"]);
    assert_eq!(cp.steps, 4);
    assert_eq!(
        g.calls(recorded),
        1,
        "the recorded branch did not run again"
    );
    for (i, b) in [N::A, N::B, N::C].into_iter().enumerate() {
        if b != recorded {
            assert_eq!(g.calls(b), before[i] + 1, "{b:?} re-ran once");
        }
    }
    // two branch writes and the step after the join
    assert_eq!(saves.writes.len(), 3);
    assert_eq!(cp.state.iter().filter(|s| *s == "joined").count(), 1);
}

#[tokio::test]
async fn a_branch_that_cannot_fit_the_token_budget_is_not_started() {
    let clock = FakeClock::at_ms(0);
    let mut g = ForkToy::new();
    g.tokens = 10; // a and b expect 10 each, c expects 100
    let mut cp = Checkpoint::new("r", N::Fork, Vec::new());
    let mut saves = Saves::default();
    // 10 + 10 fit in 50; with them promised, c's 100 does not.
    let b = budget(&clock).with_max_tokens(Some(50));
    run(&g, &mut cp, &b, &clock, &mut saves).await;
    assert_eq!([g.calls(N::A), g.calls(N::B), g.calls(N::C)], [1, 1, 0]);
    assert_eq!((cp.phase, cp.steps), (Phase::Stopped, 2));
    assert_eq!(cp.limits_hit, vec![Limit::TokenBudget]);
    assert_eq!(names(&cp), ["a", "b"]);
    assert_eq!(cp.usage.total(), 20);
    // one write per started branch and the final one
    assert_eq!(
        saves.writes.iter().map(|w| (w.0, w.1)).collect::<Vec<_>>(),
        [(1, false), (2, false), (2, true)]
    );
}

#[tokio::test]
async fn the_step_limit_counts_branches_started_together_and_a_resume_finishes_the_fork() {
    let clock = FakeClock::at_ms(0);
    let g = ForkToy::new();
    let mut cp = Checkpoint::new("r", N::Fork, Vec::new());
    let b = Budget::new(2, clock.now_ms() + 60_000);
    run(&g, &mut cp, &b, &clock, &mut Saves::default()).await;
    assert_eq!([g.calls(N::A), g.calls(N::B), g.calls(N::C)], [1, 1, 0]);
    assert_eq!((cp.phase, cp.steps), (Phase::Stopped, 2));
    assert_eq!(cp.limits_hit, vec![Limit::StepLimit]);
    // a higher limit lets the same fork finish: only `c` runs
    let b = Budget::new(10, clock.now_ms() + 60_000);
    assert!(cp.can_advance(&b));
    run(&g, &mut cp, &b, &clock, &mut Saves::default()).await;
    assert_eq!([g.calls(N::A), g.calls(N::B), g.calls(N::C)], [1, 1, 1]);
    assert_eq!(names(&cp), ["a", "b", "c", "after"]);
    assert_eq!(cp.phase, Phase::Finished);
}

#[tokio::test]
async fn a_branch_that_cannot_fit_the_deadline_is_not_started() {
    let clock = FakeClock::at_ms(0);
    let g = ForkToy::new();
    let mut cp = Checkpoint::new("r", N::Fork, Vec::new());
    // 5 ms left, every branch needs 10 ms: none starts
    let b = Budget::new(50, 5);
    run(&g, &mut cp, &b, &clock, &mut Saves::default()).await;
    assert_eq!(g.calls.lock().unwrap().len(), 0);
    assert_eq!((cp.phase, cp.steps), (Phase::Stopped, 0));
    assert_eq!(cp.limits_hit, vec![Limit::Deadline]);
}

#[tokio::test]
async fn a_failed_branch_lets_its_siblings_finish_and_a_resume_runs_it_alone() {
    let clock = FakeClock::at_ms(0);
    let g = ForkToy::new();
    *g.b_fails.lock().unwrap() = true;
    let mut cp = Checkpoint::new("r", N::Fork, Vec::new());
    let mut saves = Saves::default();
    run(&g, &mut cp, &budget(&clock), &clock, &mut saves).await;
    assert_eq!(cp.phase, Phase::Failed);
    assert_eq!(cp.failure.as_ref().unwrap().node, "b");
    assert_eq!(names(&cp), ["a", "c"], "the siblings are recorded");
    assert_eq!(cp.steps, 2);
    assert!(
        cp.can_advance(&budget(&clock)),
        "a transient failure resumes"
    );
    run(&g, &mut cp, &budget(&clock), &clock, &mut Saves::default()).await;
    assert_eq!(cp.phase, Phase::Finished);
    assert_eq!([g.calls(N::A), g.calls(N::B), g.calls(N::C)], [1, 2, 1]);
    assert_eq!(names(&cp), ["a", "b", "c", "after"]);
}

#[test]
fn only_records_ahead_of_every_running_branch_are_settled() {
    let fork = |done: Vec<N>| Branching {
        branches: vec![N::A, N::B, N::C],
        done,
        first_record: 2,
    };
    // b finished first: its record sits where it will stay only once a is recorded before it.
    assert_eq!(fork(vec![]).settled(), 2);
    assert_eq!(fork(vec![N::B]).settled(), 2);
    assert_eq!(fork(vec![N::B, N::A]).settled(), 4);
    assert_eq!(fork(vec![N::C, N::A]).settled(), 3);
    assert_eq!(fork(vec![N::C, N::A, N::B]).settled(), 5);
}
