//! The run loop: the one place that enforces the step limit, the deadline budget, the token
//! budget and checkpointing after every step.

use super::admit::{admit, stop, InFlight};
use super::branches::{self, Flow};
use super::wait::{go_on, millis, save};
use super::{
    Budget, Checkpoint, EngineError, FailedAt, Graph, Limit, NodeFailure, NodeId, Persist, Phase,
    StepCtx, StepOutput, StepRecord,
};
use crate::clock::Clock;
use crate::error::Classify;
use crate::usage::Usage;
use tracing::Instrument;

/// Advances a run until it ends, a limit stops it, or a node fails; the checkpoint is saved
/// after every step and once more (releasing the lease) when the loop stops.
///
/// Returns `Err` only when persistence fails or another invocation took the run; node
/// failures and limits are recorded in the checkpoint.
pub async fn advance<G, P>(
    graph: &G,
    cp: &mut Checkpoint<G::State, G::Node>,
    budget: &Budget,
    clock: &dyn Clock,
    persist: &mut P,
) -> Result<(), EngineError>
where
    G: Graph,
    P: Persist<Checkpoint<G::State, G::Node>> + ?Sized,
{
    if !cp.can_advance(budget) {
        return Ok(());
    }
    if cp.phase != Phase::Running {
        tracing::info!(steps = cp.steps, "resuming run");
        cp.phase = Phase::Running;
        cp.failure = None;
    }
    loop {
        let Some(node) = cp.next else {
            cp.phase = Phase::Finished;
            break;
        };
        cp.trail_begin();
        if branches::forks_at(graph, cp, node) {
            match branches::run_fork(graph, cp, node, budget, clock, persist).await? {
                Flow::Continue => continue,
                Flow::Finished => return Ok(()),
                Flow::Stopped => break,
            }
        }
        if let Err(limit) = admit(graph, cp, node, budget, clock, InFlight::default()) {
            stop(graph, cp, limit);
            break;
        }

        let started = clock.now_micros();
        let ctx = StepCtx::new(
            node.name(),
            &cp.run_id,
            clock,
            budget,
            graph.retry_policy(node),
        );
        // One span per step: the how-many-th run of this node in the run, its tokens, outcome.
        let attempt = cp.records.iter().filter(|r| r.name == node).count() + 1;
        let span = crate::spans::step(node.name(), &cp.run_id, attempt);
        let result = graph
            .step(node, &mut cp.state, &ctx)
            .instrument(span.clone())
            .await;
        cp.infra_retries += ctx.retries();
        let used = ctx.usage();
        cp.usage.add(&used);
        span.record("tokens", used.total());
        span.record("outcome", crate::error::outcome(&result));
        match result {
            Ok(out) => {
                let elapsed = clock.now_micros().saturating_sub(started);
                let wait_until = clock.now_ms().saturating_add(millis(graph.wait_limit()));
                let last = record_step(cp, node, out, (started, elapsed), used, wait_until);
                cp.trail_step();
                save(persist, cp, last).await?;
                if last {
                    return Ok(());
                }
            }
            Err(error) if error.is_transient() && ctx.ran_out_of_budget() => {
                tracing::warn!(node = node.name(), %error, "deadline reached while retrying");
                stop(graph, cp, Limit::Deadline);
                break;
            }
            Err(error) if graph.on_unavailable(&mut cp.state, node, &error) => {
                tracing::warn!(node = node.name(), %error, "unavailable after its retries: ending with the best answer so far");
                cp.next = None;
                cp.phase = Phase::Finished;
                break;
            }
            Err(error) => {
                tracing::error!(node = node.name(), %error, class = ?error.class(), "node failed");
                cp.phase = Phase::Failed;
                cp.failure = Some(NodeFailure {
                    node: FailedAt::Node(node),
                    class: error.class(),
                    message: error.to_string(),
                });
                break;
            }
        }
    }
    persist.save(cp, true).await
}

/// Counts a successful step, records it and moves to its transition; `true` when it was the
/// last of this invocation (the run is finished, or waits for a person until `wait_until_ms`).
fn record_step<S, N: NodeId>(
    cp: &mut Checkpoint<S, N>,
    node: N,
    out: StepOutput<N>,
    (started_micros, elapsed_micros): (u64, u64),
    used: Usage,
    wait_until_ms: u64,
) -> bool {
    let seconds = elapsed_micros as f64 / 1e6;
    cp.steps += 1;
    cp.records.push(StepRecord::new(
        node,
        started_micros,
        seconds,
        out.details,
        used,
    ));
    cp.latest = Some(cp.records.len() - 1);
    tracing::info!(node = node.name(), step = cp.steps, seconds, "step done");
    go_on(cp, out.next, wait_until_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::engine::Transition;
    use crate::error::ErrorClass;
    use crate::retry::RetryPolicy;
    use async_trait::async_trait;
    use serde::{Deserialize, Serialize};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    enum N {
        Start,
        Loop,
    }
    impl NodeId for N {
        fn name(self) -> &'static str {
            match self {
                N::Start => "start",
                N::Loop => "loop",
            }
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("boom ({0:?})")]
    struct Boom(ErrorClass);
    impl Classify for Boom {
        fn class(&self) -> ErrorClass {
            self.0
        }
    }

    /// `start` then `loop` until the counter reaches `loops`; each step takes `step_time` on
    /// the fake clock; `fail_at` makes the step with that (1-based) call number fail.
    struct Toy {
        clock: Arc<FakeClock>,
        loops: u32,
        step_time: Duration,
        calls: AtomicU32,
        fail_at: Option<(u32, ErrorClass)>,
        tokens_per_step: u64,
        /// The state value at which a step waits for a person instead of going on.
        wait_at: Option<u32>,
    }

    impl Toy {
        fn new(clock: Arc<FakeClock>, loops: u32) -> Self {
            Self {
                clock,
                loops,
                step_time: Duration::from_millis(100),
                calls: AtomicU32::new(0),
                fail_at: None,
                tokens_per_step: 0,
                wait_at: None,
            }
        }
    }

    #[async_trait]
    impl Graph for Toy {
        type State = u32;
        type Node = N;
        type Error = Boom;
        type Merge = ();
        fn start(&self, _: &u32) -> N {
            N::Start
        }
        fn retry_policy(&self, _: N) -> RetryPolicy {
            RetryPolicy::NONE
        }
        fn estimate(&self, _: N) -> Duration {
            Duration::from_millis(10)
        }
        async fn step(
            &self,
            node: N,
            state: &mut u32,
            ctx: &StepCtx<'_>,
        ) -> Result<StepOutput<N>, Boom> {
            let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            self.clock.advance(self.step_time);
            if self.tokens_per_step > 0 {
                ctx.meter().charge(&Usage {
                    prompt_tokens: self.tokens_per_step - 1,
                    completion_tokens: 1,
                    model_calls: 1,
                    ..Usage::default()
                });
            }
            if let Some((at, class)) = self.fail_at {
                if at == call {
                    return Err(Boom(class));
                }
            }
            if node == N::Loop {
                *state += 1;
            }
            Ok(if self.wait_at == Some(*state) {
                StepOutput::wait(N::Loop, serde_json::json!({ "asked": *state }))
            } else if *state >= self.loops {
                StepOutput::end(serde_json::json!({}))
            } else {
                StepOutput::next(N::Loop, serde_json::json!({ "count": *state }))
            })
        }
        fn on_limit(&self, state: &mut u32, _: Limit) {
            *state += 1000;
        }
        fn token_estimate(&self, _: N, _: &u32) -> u64 {
            self.tokens_per_step / 2
        }
        async fn branch(
            &self,
            _: N,
            _: &u32,
            _: &StepCtx<'_>,
        ) -> Result<crate::engine::BranchOutput<()>, Boom> {
            Err(Boom(ErrorClass::Permanent))
        }
        fn merge(&self, _: &mut u32, _: ()) {}
        fn join(&self, _: N, _: &mut u32) -> Transition<N> {
            Transition::End
        }
    }

    #[derive(Default)]
    struct Saves(Vec<(u32, bool)>, Vec<u64>);
    #[async_trait]
    impl<S: Send + Sync, Nn: Send + Sync> Persist<Checkpoint<S, Nn>> for Saves {
        async fn save(&mut self, cp: &Checkpoint<S, Nn>, release: bool) -> Result<(), EngineError> {
            self.0.push((cp.steps, release));
            Ok(())
        }
        async fn park_until(
            &mut self,
            cp: &Checkpoint<S, Nn>,
            until: u64,
        ) -> Result<(), EngineError> {
            self.1.push(until);
            self.save(cp, true).await
        }
    }

    fn budget(clock: &FakeClock, max_steps: u32, secs: u64) -> Budget {
        Budget::new(max_steps, clock.now_ms() + secs * 1_000)
    }

    #[tokio::test]
    async fn runs_to_the_end_with_one_save_per_step() {
        let clock = Arc::new(FakeClock::at_ms(1_000_000));
        let g = Toy::new(clock.clone(), 3);
        let mut cp = Checkpoint::new("r", N::Start, 0);
        let mut saves = Saves::default();
        advance(&g, &mut cp, &budget(&clock, 50, 60), &*clock, &mut saves)
            .await
            .unwrap();
        assert_eq!(cp.phase, Phase::Finished);
        assert_eq!(cp.steps, 4);
        assert_eq!(g.calls.load(Ordering::SeqCst), 4);
        // one write per step, the last one releasing the lease; no extra write
        assert_eq!(saves.0, vec![(1, false), (2, false), (3, false), (4, true)]);
        let names: Vec<_> = cp.records.iter().map(|r| r.name.name()).collect();
        assert_eq!(names, ["start", "loop", "loop", "loop"]);
        assert_eq!(cp.records[1].processing_time, 0.1);
    }

    #[tokio::test]
    async fn step_limit_stops_gracefully_and_counts_across_resumes() {
        let clock = Arc::new(FakeClock::at_ms(0));
        let g = Toy::new(clock.clone(), 100);
        let mut cp = Checkpoint::new("r", N::Start, 0);
        let b = budget(&clock, 5, 60);
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!((cp.phase, cp.steps), (Phase::Stopped, 5));
        assert_eq!(cp.limits_hit, vec![Limit::StepLimit]);
        assert_eq!(cp.state, 1004, "on_limit ran once");
        assert!(!cp.can_advance(&b));
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!(g.calls.load(Ordering::SeqCst), 5, "no step after the limit");
        // a higher limit lets it continue; the count is not reset
        assert!(cp.can_advance(&budget(&clock, 7, 60)));
        cp.state -= 1000; // undo the toy's on_limit marker
        let b = budget(&clock, 7, 60);
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!((cp.steps, g.calls.load(Ordering::SeqCst)), (7, 7));
        assert_eq!(cp.limits_hit, vec![Limit::StepLimit, Limit::StepLimit]);
    }

    #[tokio::test]
    async fn deadline_stops_before_a_step_that_cannot_fit_and_resume_continues() {
        let clock = Arc::new(FakeClock::at_ms(0));
        let g = Toy::new(clock.clone(), 6);
        let mut cp = Checkpoint::new("r", N::Start, 0);
        // 350 ms: steps of 100 ms; after 3 steps 50 ms remain < longest step (100 ms)
        let b = Budget::new(50, 350);
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!((cp.phase, cp.steps), (Phase::Stopped, 3));
        assert!(clock.now_ms() <= 350, "never ran past the deadline");
        assert_eq!(cp.limits_hit, vec![Limit::Deadline]);
        assert!(cp.can_advance(&budget(&clock, 50, 60)));
        cp.state -= 1000; // undo the toy's on_limit marker
        let b = budget(&clock, 50, 60);
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!((cp.phase, cp.steps), (Phase::Finished, 7));
        assert_eq!(
            g.calls.load(Ordering::SeqCst),
            7,
            "no completed step re-run"
        );
    }

    #[tokio::test]
    async fn token_budget_stops_before_a_node_that_cannot_fit_and_is_final() {
        let clock = Arc::new(FakeClock::at_ms(0));
        let mut g = Toy::new(clock.clone(), 100);
        g.tokens_per_step = 100;
        let mut cp = Checkpoint::new("r", N::Start, 0);
        // start: never run, estimate 50 fits (0 + 50 <= 250); uses 100.
        // loop: never run, estimate 50 fits (100 + 50); uses 100.
        // loop again: its largest use so far is 100 and 200 + 100 > 250: stop.
        let b = budget(&clock, 50, 60).with_max_tokens(Some(250));
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!((cp.phase, cp.steps), (Phase::Stopped, 2));
        assert_eq!(g.calls.load(Ordering::SeqCst), 2);
        assert_eq!(cp.limits_hit, vec![Limit::TokenBudget]);
        assert_eq!((cp.usage.total(), cp.usage.model_calls), (200, 2));
        assert_eq!(cp.records[1].details["tokens"]["total"], 100);
        assert_eq!(cp.records[1].details["model_calls"], 1);
        assert!(
            !cp.can_advance(&budget(&clock, 50, 60)),
            "a token-budget stop is final"
        );
    }

    #[tokio::test]
    async fn a_wait_ends_the_invocation_and_an_answer_goes_on_without_rerunning_its_step() {
        let clock = Arc::new(FakeClock::at_ms(0));
        let mut g = Toy::new(clock.clone(), 3);
        g.wait_at = Some(1);
        let mut cp = Checkpoint::new("r", N::Start, 0);
        let mut saves = Saves::default();
        let b = budget(&clock, 50, 60);
        advance(&g, &mut cp, &b, &*clock, &mut saves).await.unwrap();
        // start, loop (state 1: asks). One write per step; the last parks until the wait's end.
        assert_eq!(
            (cp.phase, cp.steps, cp.next),
            (Phase::Waiting, 2, Some(N::Loop))
        );
        assert_eq!(saves.0, vec![(1, false), (2, true)]);
        let day = 24 * 60 * 60 * 1_000;
        assert_eq!(
            saves.1,
            vec![200 + day],
            "the wait's limit, from when it started"
        );
        assert!(!cp.can_advance(&b), "only an answer moves a waiting run");
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!(
            g.calls.load(Ordering::SeqCst),
            2,
            "nothing ran while waiting"
        );
        assert!(!cp.wait_expired(200 + day - 1) && cp.wait_expired(200 + day));

        g.wait_at = None;
        cp.answer_wait(N::Loop);
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!((cp.phase, cp.steps, cp.state), (Phase::Finished, 4, 3));
        assert_eq!(
            g.calls.load(Ordering::SeqCst),
            4,
            "the asking step was not run again"
        );
    }

    #[tokio::test]
    async fn a_wait_nobody_answers_ends_with_its_limit_and_the_best_answer_so_far() {
        let clock = Arc::new(FakeClock::at_ms(0));
        let mut g = Toy::new(clock.clone(), 3);
        g.wait_at = Some(1);
        let mut cp = Checkpoint::new("r", N::Start, 0);
        let b = budget(&clock, 50, 60);
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        crate::engine::end_wait(&g, &mut cp);
        assert_eq!(cp.phase, Phase::Stopped);
        assert_eq!(cp.limits_hit, vec![Limit::InterruptTimeout]);
        assert_eq!(cp.state, 1001, "on_limit left the best answer");
        assert!(!cp.can_advance(&b), "final");
    }

    #[tokio::test]
    async fn permanent_failure_is_recorded_not_resumable() {
        let clock = Arc::new(FakeClock::at_ms(0));
        let mut g = Toy::new(clock.clone(), 5);
        g.fail_at = Some((2, ErrorClass::Permanent));
        let mut cp = Checkpoint::new("r", N::Start, 0);
        let mut saves = Saves::default();
        advance(&g, &mut cp, &budget(&clock, 50, 60), &*clock, &mut saves)
            .await
            .unwrap();
        assert_eq!(cp.phase, Phase::Failed);
        assert_eq!(cp.failure.as_ref().unwrap().node, "loop");
        assert_eq!(cp.next, Some(N::Loop), "failed node kept");
        assert!(!cp.can_advance(&budget(&clock, 50, 60)));
        assert_eq!(saves.0, vec![(1, false), (1, true)]);
    }

    #[tokio::test]
    async fn transient_failure_can_be_resumed_without_rerunning_steps() {
        let clock = Arc::new(FakeClock::at_ms(0));
        let mut g = Toy::new(clock.clone(), 3);
        g.fail_at = Some((3, ErrorClass::Transient));
        let mut cp = Checkpoint::new("r", N::Start, 0);
        let b = budget(&clock, 50, 60);
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!((cp.phase, cp.steps), (Phase::Failed, 2));
        assert!(cp.can_advance(&budget(&clock, 50, 60)));
        advance(&g, &mut cp, &b, &*clock, &mut Saves::default())
            .await
            .unwrap();
        assert_eq!((cp.phase, cp.steps, cp.state), (Phase::Finished, 4, 3));
    }
}
