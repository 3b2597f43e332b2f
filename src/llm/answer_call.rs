//! The answer call: one plain-text completion, streamed as written when someone listens.
//!
//! Unlike the decisions ([`super::ask_metered`]), an answer cannot be malformed: any text is an
//! answer. An empty reply is the one unusable answer; it is re-asked once (not streamed), like
//! a malformed decision, and stays [`LlmError::Malformed`] (permanent) when the re-ask is empty
//! too. A reply cut at its output cap is kept: [`Written::finish`] says so, and the workflow
//! marks the run.

use super::call::call;
use super::structured::MAX_REASKS;
use super::{ChatModel, ChatRequest, DeltaSink, Finish, LlmError, Message, Role};
use crate::usage::Meter;
use std::time::Instant;

/// A written answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The answer text, as the model wrote it.
    pub text: String,
    /// [`Finish::Length`] when the model reached the answer's cap (`LLM_MAX_ANSWER_TOKENS`).
    pub(crate) finish: Finish,
}

/// The user turn that asks again after an empty answer.
const EMPTY_REASK: &str =
    "Your previous reply was empty. Answer the question now, in plain text, using the context \
     documents.";

/// Asks `model` for the answer of `request` (plain text), charging every call to `meter`; with
/// `on_delta`, the first call streams its text as it is written.
///
/// # Errors
///
/// [`LlmError::Malformed`] (permanent) when the answer is still empty after
/// [`MAX_REASKS`] re-asks; any error of the model call unchanged; [`LlmError::Timeout`] when no
/// time is left for a re-ask.
pub async fn write_answer(
    model: &dyn ChatModel,
    request: &ChatRequest<'_>,
    meter: &Meter,
    on_delta: Option<DeltaSink<'_>>,
) -> Result<Written, LlmError> {
    write_once(model, request, meter, on_delta).await
}

async fn write_once(
    model: &dyn ChatModel,
    request: &ChatRequest<'_>,
    meter: &Meter,
    on_delta: Option<DeltaSink<'_>>,
) -> Result<Written, LlmError> {
    let started = Instant::now();
    let mut reply = call(model, request, meter, on_delta).await?;
    let mut next = request.clone();
    for _ in 0..MAX_REASKS {
        if !reply.content.trim().is_empty() {
            break;
        }
        let remaining = request.timeout.saturating_sub(started.elapsed());
        if remaining.is_zero() {
            return Err(LlmError::Timeout {
                after: request.timeout,
            });
        }
        next.timeout = remaining;
        next.messages.push(Message::new(Role::User, EMPTY_REASK));
        reply = call(model, &next, meter, None).await?;
    }
    if reply.content.trim().is_empty() {
        return Err(LlmError::Malformed {
            schema: request.task.schema_name(),
            attempts: 1 + MAX_REASKS,
            error: "the answer is empty".into(),
            excerpt: String::new(),
        });
    }
    Ok(Written {
        text: reply.content,
        finish: reply.finish,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Completion, Task, TaskInputs};
    use async_trait::async_trait;
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use std::time::Duration;

    /// Plays a list of replies and counts the calls.
    struct Replies(Mutex<VecDeque<Completion>>, Mutex<u32>);

    #[async_trait]
    impl ChatModel for Replies {
        async fn complete(&self, _: &ChatRequest<'_>) -> Result<Completion, LlmError> {
            *self.1.lock().unwrap() += 1;
            Ok(self.0.lock().unwrap().pop_front().expect("a reply"))
        }
        fn name(&self) -> &'static str {
            "replies"
        }
    }

    fn model(replies: impl IntoIterator<Item = Completion>) -> Replies {
        Replies(Mutex::new(replies.into_iter().collect()), Mutex::new(0))
    }

    fn request() -> ChatRequest<'static> {
        ChatRequest {
            task: Task::GenerateAnswer,
            messages: vec![Message::new(Role::User, "q")],
            inputs: TaskInputs {
                question: "q",
                documents: &[],
                answer: None,
            },
            timeout: Duration::from_secs(5),
            max_tokens: 8,
            stop: &[],
        }
    }

    #[tokio::test]
    async fn any_text_is_an_answer_and_a_cut_one_is_kept_and_marked() {
        let cut = Completion {
            finish: Finish::Length,
            ..Completion::new("It is caused by Phytophthora palmi")
        };
        let m = model([cut]);
        let written = write_answer(&m, &request(), &Meter::default(), None)
            .await
            .unwrap();
        assert_eq!(written.text, "It is caused by Phytophthora palmi");
        assert_eq!(written.finish, Finish::Length);
        assert_eq!(*m.1.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn an_empty_answer_is_asked_again_once_then_is_malformed() {
        let m = model([Completion::new(" "), Completion::new("Now an answer.")]);
        let meter = Meter::default();
        let written = write_answer(&m, &request(), &meter, None).await.unwrap();
        assert_eq!(written.text, "Now an answer.");
        assert_eq!(meter.usage().model_calls, 2);

        let m = model([Completion::new(""), Completion::new("\n")]);
        let error = write_answer(&m, &request(), &Meter::default(), None)
            .await
            .unwrap_err();
        assert!(
            matches!(error, LlmError::Malformed { attempts: 2, .. }),
            "{error:?}"
        );
        assert_eq!(*m.1.lock().unwrap(), 2);
    }
}
