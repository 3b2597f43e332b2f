//! Answering a run that waits for a person (`POST /workflow/runs/{run_id}/resume`, CLI
//! `bounded-rag resume RUN_ID`): the answer read from its body, the `Idempotency-Key` that
//! makes a retried answer a repeat, and the typed refusals (see `waiting.rs` for the run
//! side).
//!
//! A key is kept in the run's own checkpoint, in the write that takes the answer, so whatever
//! fails when, an answer is taken once: a retry with the same key and body gets the run as it
//! stands; the same key with another body is refused.

use super::queue::WorkQueue;
use super::ran::Answer;
use super::refusal::{Invalid, Refusal, ResumeRefusal};
use super::service::Runs;
use super::waiting::Answered;
use crate::engine::Budget;
use crate::rag::KeyedAnswer;
use crate::rag::{Caller, Reply, ReplyError, ValidationError};
use sha2::{Digest, Sha256};

/// A resume request's JSON body: `{"answer": "…"}` for a clarifying question,
/// `{"approve": true}` or `{"approve": false}` for an approval.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ResumeBody {
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    approve: Option<bool>,
}

/// A minimal valid resume body, quoted in messages about malformed ones.
const EXAMPLE: &str = r#"{"answer": "the tokio crate"} or {"approve": true}"#;

/// Reads a resume request's body; an error names the field at fault.
pub(crate) fn reply_from_json(body: &[u8]) -> Result<Reply, ValidationError> {
    // `{"answer": null}` is an answer of the wrong type, not a missing one.
    if let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice(body) {
        if let Some((name, _)) = fields
            .iter()
            .find(|(k, v)| v.is_null() && ["answer", "approve"].contains(&k.as_str()))
        {
            let expected = if name == "answer" {
                "a string"
            } else {
                "true or false"
            };
            return Err(ValidationError::new(
                name,
                format!("must be {expected}, not null; send {EXAMPLE}"),
            ));
        }
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    let body: ResumeBody = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        let field = match path.as_str() {
            "answer" | "approve" => path.as_str(),
            _ => "body",
        };
        ValidationError::new(field, format!("{message}; send {EXAMPLE}"))
    })?;
    match (body.answer, body.approve) {
        (Some(answer), None) => Ok(Reply::Answer(answer)),
        (None, Some(approve)) => Ok(Reply::Approve(approve)),
        (Some(_), Some(_)) => Err(ValidationError::new(
            "body",
            format!("send either an answer or an approval, not both: {EXAMPLE}"),
        )),
        (None, None) => Err(ValidationError::new(
            "body",
            format!("nothing to answer with: send {EXAMPLE}"),
        )),
    }
}

/// An answer as an entry point read it.
pub(crate) struct ResumeInput<'a> {
    /// The answer, or why it is not one.
    pub(crate) reply: Result<Reply, Invalid>,
    /// The `Idempotency-Key` (`None`: none given), or why it is malformed.
    pub(crate) key: Result<Option<&'a str>, Invalid>,
    /// The raw body the key is bound to.
    pub(crate) body: &'a [u8],
}

/// SHA-256 hex of `bytes`.
fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The field of a resume body an unfitting answer is about.
fn reply_field(e: &ReplyError) -> &'static str {
    match e {
        ReplyError::Kind { expected, .. } if expected.contains("approve") => "approve",
        ReplyError::Kind { .. } | ReplyError::Length { .. } => "answer",
        ReplyError::NothingAsked => "body",
    }
}

impl Runs {
    /// Answers the run `run_id` (of `caller`; the operator's view when `None`), waiting for a
    /// person, with `input`, and advances it within `budget`.
    pub(crate) async fn answer(
        &self,
        caller: Option<&Caller>,
        run_id: &str,
        input: ResumeInput<'_>,
        budget: &Budget,
        queue: Option<&dyn WorkQueue>,
    ) -> Result<Answer, Refusal> {
        self.count_request(caller.unwrap_or(&Caller::Anonymous))
            .await?;
        let reply = input.reply?;
        let body = input.body;
        let keyed = input.key?.map(|key| KeyedAnswer {
            key: digest(key.as_bytes()),
            body: digest(body),
        });
        let workflow = self.workflow_for(caller);
        let response = match workflow.answer(run_id, reply, keyed, budget).await? {
            Answered::Ran(response) | Answered::Repeat(response) => response,
            Answered::KeyReused => return Err(Refusal::KeyReused),
            Answered::NotWaiting(response) => {
                return Err(ResumeRefusal::NotWaiting {
                    run_id: run_id.to_owned(),
                    status: response.status.as_str(),
                }
                .into())
            }
            Answered::TimedOut => {
                return Err(ResumeRefusal::TimedOut {
                    run_id: run_id.to_owned(),
                }
                .into())
            }
            Answered::Reply(e) => {
                let field = reply_field(&e);
                return Err(Invalid::Field(ValidationError::new(field, e.to_string())).into());
            }
        };
        Ok(Answer::Ran(Box::new(self.finish(response, queue).await)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_body_is_an_answer_or_an_approval_and_a_bad_one_names_its_field() {
        assert_eq!(
            reply_from_json(br#"{"answer": "tokio"}"#).unwrap(),
            Reply::Answer("tokio".into())
        );
        assert_eq!(
            reply_from_json(br#"{"approve": false}"#).unwrap(),
            Reply::Approve(false)
        );
        let field = |body: &str| reply_from_json(body.as_bytes()).unwrap_err().field;
        assert_eq!(field(r#"{"answer": 3}"#), "answer");
        assert_eq!(field(r#"{"answer": null}"#), "answer");
        assert_eq!(field(r#"{"approve": null}"#), "approve");
        assert_eq!(field(r#"{"approve": "yes"}"#), "approve");
        assert_eq!(field(r#"{"answer": "a", "approve": true}"#), "body");
        assert_eq!(field("{}"), "body");
        assert_eq!(field(r#"{"other": 1}"#), "body");
        assert_eq!(field("not json"), "body");
    }
}
