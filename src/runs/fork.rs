//! Forking a run from one of its steps (`POST /workflow/runs/{run_id}/fork`, `bounded-rag
//! fork`): a new run that starts from the state the step left, rebuilt from the original
//! run's trail ([`crate::engine::Checkpoint::rewind`]) without running or paying for any step
//! again, and runs only the steps after it. The original run is only read.
//!
//! A fork is admitted like a new run (the caller's request rate and active-run slots); it is
//! not a turn of the original's thread. An `Idempotency-Key` makes a retried fork request
//! answer with the fork the first one made (keys are scoped to the original run, so a key
//! reused for another run's fork, or for a new run, makes its own).

use super::queue::WorkQueue;
use super::ran::{Answer, Ran};
use super::refusal::{ForkRefusal, Invalid, Refusal};
use super::service::Runs;
use super::start::Claimed;
use crate::engine::{Budget, Checkpoint};
use crate::rag::{fork_state, status_of, Caller, ForkChanges, ForkedFrom, Mode, ValidationError};
use serde::de::IntoDeserializer;
use serde::Deserialize;

/// What a fork asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ForkInput {
    /// The step to fork after (`0`: before the first).
    pub(crate) from_step: u32,
    /// What changes from the original.
    pub(crate) changes: ForkChanges,
}

/// A fork request's JSON body (`{"from_step": 3, "question": "…", "mode": "speed"}`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ForkBody {
    from_step: u32,
    #[serde(default)]
    question: Option<String>,
    #[serde(default)]
    mode: Option<String>,
}

/// A minimal valid fork body, quoted in messages about malformed ones.
const EXAMPLE_FORK: &str = r#"{"from_step": 3}"#;

impl ForkInput {
    /// Reads a fork request's JSON body; an error names the field at fault.
    pub(crate) fn from_json(body: &[u8]) -> Result<Self, ValidationError> {
        let de = &mut serde_json::Deserializer::from_slice(body);
        let body: ForkBody = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().to_string();
            // `unknown field `x`, expected …` and `missing field `x`` name their field.
            let named = (message.starts_with("unknown field") || message.starts_with("missing"))
                .then(|| message.split('`').nth(1))
                .flatten();
            let field = match named {
                Some(name) => name,
                None if ["from_step", "question", "mode"].contains(&path.as_str()) => &path,
                None => "body",
            };
            ValidationError::new(
                field,
                format!("{message}; send a JSON object such as {EXAMPLE_FORK}"),
            )
        })?;
        let mode = body
            .mode
            .map(|name| {
                Mode::deserialize(name.as_str().into_deserializer()).map_err(
                    |_: serde::de::value::Error| {
                        ValidationError::new(
                            "mode",
                            format!("unknown mode `{name}`: use speed, balanced or quality"),
                        )
                    },
                )
            })
            .transpose()?;
        Ok(Self {
            from_step: body.from_step,
            changes: ForkChanges {
                question: body.question,
                mode,
            },
        })
    }
}

impl Runs {
    /// Forks `run_id` (of `caller`; the operator's view when `None`) after step
    /// `input.from_step` and runs the fork within `budget`.
    pub(crate) async fn fork(
        &self,
        caller: Option<&Caller>,
        run_id: &str,
        input: Result<ForkInput, Invalid>,
        key: (Result<Option<&str>, Invalid>, &[u8]),
        budget: &Budget,
        queue: Option<&dyn WorkQueue>,
    ) -> Result<Answer, Refusal> {
        self.count_request(caller.unwrap_or(&Caller::Anonymous))
            .await?;
        let input = input?;
        let (key, body) = key;
        let key = key?.map(|key| format!("fork:{run_id}:{key}"));
        let original = self.workflow_for(caller).read(run_id).await?;
        let status = status_of(&original);
        if !status.is_final() {
            return Err(ForkRefusal::StillRunning {
                run_id: run_id.to_owned(),
                status: status.as_str(),
            }
            .into());
        }
        self.graph()
            .versioning
            .check(original.workflow_version.as_ref())
            .map_err(ForkRefusal::OtherVersion)?;
        let mut rewound = original
            .rewind(input.from_step)
            .map_err(ForkRefusal::Step)?;
        input
            .changes
            .validate(&rewound.state)
            .map_err(Invalid::Field)?;
        let owner = original.state.caller.clone();
        let fork_id = match self.claim_run(&owner, key.as_deref(), body).await? {
            Claimed::New(id) => id,
            Claimed::Repeat(id) => {
                // A retried fork request: the fork its first try made, as it stands.
                let response = self.workflow_for(caller).status(&id).await?;
                return Ok(Answer::Ran(Box::new(Ran {
                    response,
                    continuation: None,
                    event_unsent: None,
                })));
            }
        };
        let from = ForkedFrom {
            run_id: run_id.to_owned(),
            step: input.from_step,
        };
        let now_ms = self.clock().now_ms();
        rewound.next = fork_state(
            &mut rewound.state,
            rewound.next,
            from,
            input.changes,
            now_ms,
        );
        let cp = Checkpoint::from_rewound(fork_id.clone(), rewound);
        tracing::info!(
            run_id = fork_id,
            forked_from = run_id,
            step = input.from_step,
            "run forked"
        );
        let response = self
            .workflow()
            .for_caller(&owner)
            .run_forked(cp, budget)
            .await?;
        Ok(Answer::Ran(Box::new(self.finish(response, queue).await)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_body_is_read_with_its_optional_question_and_mode() {
        let input = ForkInput::from_json(br#"{"from_step": 2, "question": "q?", "mode": "speed"}"#)
            .unwrap();
        assert_eq!(input.from_step, 2);
        assert_eq!(input.changes.question.as_deref(), Some("q?"));
        assert_eq!(input.changes.mode, Some(Mode::Speed));
        let plain = ForkInput::from_json(br#"{"from_step": 0}"#).unwrap();
        assert_eq!(plain.changes, ForkChanges::default());
    }

    #[test]
    fn a_bad_fork_body_names_its_field() {
        let field = |body: &str| ForkInput::from_json(body.as_bytes()).unwrap_err().field;
        assert_eq!(field("{}"), "from_step");
        assert_eq!(field(r#"{"from_step": -1}"#), "from_step");
        assert_eq!(field(r#"{"from_step": "3"}"#), "from_step");
        assert_eq!(field(r#"{"from_step": 1, "mode": "fast"}"#), "mode");
        assert_eq!(field(r#"{"from_step": 1, "question": 4}"#), "question");
        assert_eq!(field(r#"{"from_step": 1, "extra": 4}"#), "extra");
        assert_eq!(field("not json"), "body");
    }
}
