//! Typed structured calls with a bounded re-ask on malformed JSON.
//!
//! [`ask`] is the only place a model call is repeated inside the `llm` layer, and only for a
//! reply the model itself got wrong: transport errors go straight back to the engine, which
//! owns infrastructure retries (DESIGN.md: no layer retries what another already retried).

use super::call::call;
use super::error::excerpt;
use super::{ChatModel, ChatRequest, DeltaSink, LlmError, Message, Role};
use crate::usage::Meter;
use serde::de::DeserializeOwned;
use std::time::Instant;

/// How many times a malformed reply is re-asked before giving up (permanent error).
pub(crate) const MAX_REASKS: u32 = 1;

/// Calls the model and parses its reply as `T`, re-asking at most [`MAX_REASKS`] times;
/// the calls' usage is discarded (see [`ask_metered`]).
///
/// # Errors
///
/// As [`ask_metered`].
pub async fn ask<T: DeserializeOwned>(
    model: &dyn ChatModel,
    request: &ChatRequest<'_>,
) -> Result<T, LlmError> {
    ask_metered(model, request, &Meter::default(), None).await
}

/// Calls the model and parses its reply as `T`, re-asking at most [`MAX_REASKS`] times, and
/// charges every reply's tokens to `meter` (estimated, and marked so, when the provider
/// reports none).
///
/// With `on_delta`, the first call streams its content to it as it is generated; a re-ask is
/// not streamed (its reply replaces a malformed one the caller has already been shown).
///
/// A re-ask appends the bad reply as an assistant turn and a user turn naming the schema and
/// the parse error; it costs one more model call. `request.timeout` bounds the whole call,
/// re-asks included. Replies wrapped in Markdown code fences are accepted.
///
/// # Errors
///
/// [`LlmError::Malformed`] (permanent) when the last reply still does not parse; any error of
/// [`ChatModel::complete`] unchanged; [`LlmError::Timeout`] when no time is left for a re-ask.
pub(crate) async fn ask_metered<T: DeserializeOwned>(
    model: &dyn ChatModel,
    request: &ChatRequest<'_>,
    meter: &Meter,
    on_delta: Option<DeltaSink<'_>>,
) -> Result<T, LlmError> {
    ask_metered_once(model, request, meter, on_delta).await
}

async fn ask_metered_once<T: DeserializeOwned>(
    model: &dyn ChatModel,
    request: &ChatRequest<'_>,
    meter: &Meter,
    on_delta: Option<DeltaSink<'_>>,
) -> Result<T, LlmError> {
    let started = Instant::now();
    let mut reply = call(model, request, meter, on_delta).await?.content;
    let mut error = match parse::<T>(&reply) {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    let mut reasked: Option<ChatRequest<'_>> = None;
    for _ in 0..MAX_REASKS {
        let remaining = request.timeout.saturating_sub(started.elapsed());
        if remaining.is_zero() {
            return Err(LlmError::Timeout {
                after: request.timeout,
            });
        }
        let mut next = reasked.take().unwrap_or_else(|| request.clone());
        next.timeout = remaining;
        next.messages.push(Message::new(Role::Assistant, reply));
        next.messages
            .push(Message::new(Role::User, reask_prompt(&next, &error)));
        reply = call(model, &next, meter, None).await?.content;
        match parse::<T>(&reply) {
            Ok(value) => return Ok(value),
            Err(e) => error = e,
        }
        reasked = Some(next);
    }
    Err(LlmError::Malformed {
        schema: request.task.schema_name(),
        attempts: 1 + MAX_REASKS,
        error: error.to_string(),
        excerpt: excerpt(&reply),
    })
}

/// The user turn that asks the model to try again.
fn reask_prompt(request: &ChatRequest<'_>, error: &serde_json::Error) -> String {
    format!(
        "Your previous reply was not valid JSON for schema {name}: {error}. \
         Reply again with only a JSON object matching this schema, no other text: {schema}",
        name = request.task.schema_name(),
        schema = request.task.schema(),
    )
}

/// Parses the reply, tolerating Markdown fences and text around one JSON object.
fn parse<T: DeserializeOwned>(reply: &str) -> Result<T, serde_json::Error> {
    let trimmed = reply.trim();
    let first = match serde_json::from_str(trimmed) {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    let unfenced = strip_fences(trimmed);
    if unfenced != trimmed {
        if let Ok(value) = serde_json::from_str(unfenced) {
            return Ok(value);
        }
    }
    // Some local models add a sentence before or after the object.
    if let (Some(start), Some(end)) = (unfenced.find('{'), unfenced.rfind('}')) {
        if start < end && (start, end) != (0, unfenced.len() - 1) {
            if let Ok(value) = serde_json::from_str(&unfenced[start..=end]) {
                return Ok(value);
            }
        }
    }
    Err(first)
}

/// Removes a leading ```` ``` ```` / ```` ```json ```` line and a trailing ```` ``` ````.
fn strip_fences(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let body = match rest.find('\n') {
        Some(newline) => &rest[newline + 1..],
        None => rest.trim_start_matches(|c: char| c.is_ascii_alphabetic()),
    };
    body.trim_end().trim_end_matches("```").trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Classify;
    use crate::llm::{BinaryScore, Completion, DataSource, RouteDecision, Task, TaskInputs};
    use crate::usage::estimate_tokens;
    use async_trait::async_trait;
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A fake model that plays a list of turns and records every request it saw.
    struct Scripted {
        turns: Mutex<VecDeque<Result<String, LlmError>>>,
        seen: Mutex<Vec<Vec<Message>>>,
    }

    impl Scripted {
        fn new(turns: impl IntoIterator<Item = Result<&'static str, LlmError>>) -> Self {
            Self {
                turns: Mutex::new(turns.into_iter().map(|t| t.map(String::from)).collect()),
                seen: Mutex::new(Vec::new()),
            }
        }
        fn calls(&self) -> usize {
            self.seen.lock().unwrap().len()
        }
    }

    #[async_trait]
    impl ChatModel for Scripted {
        async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
            self.seen.lock().unwrap().push(request.messages.clone());
            self.turns
                .lock()
                .unwrap()
                .pop_front()
                .expect("the fake model ran out of turns")
                .map(Completion::new)
        }
        fn name(&self) -> &'static str {
            "scripted"
        }
    }

    fn request(task: Task) -> ChatRequest<'static> {
        ChatRequest {
            task,
            messages: vec![
                Message::new(Role::System, "grade"),
                Message::new(Role::User, "question"),
            ],
            inputs: TaskInputs {
                question: "question",
                documents: &[],
                answer: None,
            },
            timeout: Duration::from_secs(5),
            max_tokens: 32,
            stop: &[],
        }
    }

    #[tokio::test]
    async fn valid_reply_takes_one_call() {
        let model = Scripted::new([Ok(r#"{"binary_score":"yes"}"#)]);
        let score: BinaryScore = ask(&model, &request(Task::GradeDocuments)).await.unwrap();
        assert!(score.yes());
        assert_eq!(model.calls(), 1);
    }

    #[tokio::test]
    async fn fenced_and_chatty_replies_are_accepted() {
        let model = Scripted::new([
            Ok("```json\n{\"data_source\": \"web_search\"}\n```"),
            Ok("Sure! {\"data_source\": \"llm_internal\"} Hope that helps."),
        ]);
        let first: RouteDecision = ask(&model, &request(Task::RouteQuery)).await.unwrap();
        let second: RouteDecision = ask(&model, &request(Task::RouteQuery)).await.unwrap();
        assert_eq!(first.data_source, DataSource::WebSearch);
        assert_eq!(second.data_source, DataSource::LlmInternal);
        assert_eq!(model.calls(), 2);
    }

    #[tokio::test]
    async fn malformed_reply_is_reasked_once_with_the_bad_reply_and_schema_name() {
        let model = Scripted::new([Ok("maybe?"), Ok(r#"{"binary_score":"no"}"#)]);
        let score: BinaryScore = ask(&model, &request(Task::GradeDocuments)).await.unwrap();
        assert!(!score.yes());
        assert_eq!(model.calls(), 2);
        let seen = model.seen.lock().unwrap();
        let reask = &seen[1];
        assert_eq!(reask.len(), 4);
        assert_eq!(reask[2], Message::new(Role::Assistant, "maybe?"));
        assert_eq!(reask[3].role, Role::User);
        assert!(reask[3]
            .content
            .contains("not valid JSON for schema grade_documents"));
    }

    #[tokio::test]
    async fn still_malformed_after_the_reask_is_permanent() {
        // A value outside the schema's enum is malformed too.
        let model = Scripted::new([Ok("nope"), Ok(r#"{"binary_score":"maybe"}"#)]);
        let error = ask::<BinaryScore>(&model, &request(Task::GradeDocuments))
            .await
            .unwrap_err();
        assert_eq!(model.calls(), 1 + MAX_REASKS as usize);
        assert!(!error.is_transient());
        match error {
            LlmError::Malformed {
                schema,
                attempts,
                excerpt,
                ..
            } => {
                assert_eq!(schema, "grade_documents");
                assert_eq!(attempts, 2);
                assert!(excerpt.contains("maybe"));
            }
            other => panic!("expected Malformed, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn transport_errors_are_returned_without_retry() {
        let model = Scripted::new([Err(LlmError::Connect("refused".into()))]);
        let error = ask::<BinaryScore>(&model, &request(Task::GradeAnswer))
            .await
            .unwrap_err();
        assert_eq!(error, LlmError::Connect("refused".into()));
        assert_eq!(model.calls(), 1);

        let model = Scripted::new([Ok("bad"), Err(LlmError::Connect("refused".into()))]);
        let error = ask::<BinaryScore>(&model, &request(Task::GradeAnswer))
            .await
            .unwrap_err();
        assert!(error.is_transient());
        assert_eq!(model.calls(), 2);
    }

    #[tokio::test]
    async fn usage_is_charged_per_reply_and_estimated_when_unreported() {
        let model = Scripted::new([Ok("maybe?"), Ok(r#"{"binary_score":"no"}"#)]);
        let meter = Meter::default();
        let _: BinaryScore = ask_metered(&model, &request(Task::GradeDocuments), &meter, None)
            .await
            .unwrap();
        let used = meter.usage();
        assert_eq!(used.model_calls, 2, "the re-ask is a second call");
        assert!(used.estimated);
        // "grade" + "question" prompts, then the same plus the bad reply and the re-ask turn
        assert!(used.prompt_tokens > 2 * (estimate_tokens("grade") + estimate_tokens("question")));
        assert_eq!(
            used.completion_tokens,
            estimate_tokens("maybe?") + estimate_tokens(r#"{"binary_score":"no"}"#)
        );
    }

    #[tokio::test]
    async fn streaming_hands_the_first_reply_to_the_sink() {
        let model = Scripted::new([Ok(r#"{"binary_score":"yes"}"#)]);
        let seen = Mutex::new(String::new());
        let sink = |delta: &str| seen.lock().unwrap().push_str(delta);
        let meter = Meter::default();
        let score: BinaryScore =
            ask_metered(&model, &request(Task::GradeAnswer), &meter, Some(&sink))
                .await
                .unwrap();
        assert!(score.yes());
        assert_eq!(*seen.lock().unwrap(), r#"{"binary_score":"yes"}"#);
        assert_eq!(meter.usage().model_calls, 1);
    }

    #[test]
    fn estimate_is_a_quarter_of_the_characters_plus_framing() {
        assert_eq!(estimate_tokens(""), 4);
        assert_eq!(estimate_tokens("abcd"), 5);
        assert_eq!(estimate_tokens("abcde"), 6);
    }

    #[test]
    fn fences_are_stripped() {
        assert_eq!(strip_fences("```json\n{}\n```"), "{}");
        assert_eq!(strip_fences("```\n{\"a\":1}```"), "{\"a\":1}");
        assert_eq!(strip_fences("```json{}```"), "{}");
        assert_eq!(strip_fences("{}"), "{}");
    }
}
