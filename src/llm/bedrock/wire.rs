//! The Converse request of a [`ChatRequest`] and the content of a Converse reply. Private to
//! the Bedrock client; callers see [`ChatRequest`] and [`Completion`].
//!
//! Structured output is a forced tool: the request carries one tool named after the task's
//! schema, whose input schema is the task's JSON schema, and `toolChoice` names it, so the
//! model answers with that tool's input (a JSON object). The answer (`generate_answer`) is
//! plain text: no tool. Every call carries its output cap as `inferenceConfig.maxTokens`, and
//! its stop sequences, if any, as `inferenceConfig.stopSequences`. System messages go to `system`;
//! consecutive messages of one role are merged into one message (Converse wants user and
//! assistant turns to alternate); empty messages are left out (Converse refuses empty text
//! blocks). A reply without the tool call (text only) is handed on as
//! text: [`crate::llm::ask`] finds it malformed and re-asks, as for any other provider.
//! `reasoningContent` blocks are what the model thought: kept apart from the content, like a
//! leading `<think>` block of the text (`llm::reasoning`).

use crate::llm::reasoning::{self, Thought};
use crate::llm::{ChatRequest, Finish, LlmError, Role, TokenCount};
use aws_sdk_bedrockruntime::types::{
    AutoToolChoice, ContentBlock, ConversationRole, InferenceConfiguration, Message,
    ReasoningContentBlock, SpecificToolChoice, SystemContentBlock, TokenUsage, Tool, ToolChoice,
    ToolConfiguration, ToolInputSchema, ToolSpecification,
};
use aws_smithy_types::{Document, Number};
use serde_json::{json, Value};

/// What a Converse or ConverseStream call sends besides the model id.
pub(super) struct Parts {
    pub system: Vec<SystemContentBlock>,
    pub messages: Vec<Message>,
    /// The forced tool of a structured task; `None` for the plain-text answer.
    pub tools: Option<ToolConfiguration>,
    pub inference: InferenceConfiguration,
    /// `additionalModelRequestFields`: Claude's `thinking`, when it thinks.
    pub model_fields: Option<Document>,
}

/// The Converse request for `request`: its messages, its task as a forced tool (none for the
/// plain-text answer), its output cap and stop sequences. With a `thinking` budget, Claude
/// thinks: the budget goes in `additionalModelRequestFields`, the tool is offered rather than
/// forced and no temperature is sent (Claude refuses both while thinking).
pub(super) fn parts(request: &ChatRequest<'_>, thinking: Option<u32>) -> Result<Parts, LlmError> {
    let build = |e: aws_smithy_types::error::operation::BuildError| {
        LlmError::Config(format!("cannot build the Converse request: {e}"))
    };
    let mut system = Vec::new();
    let mut turns: Vec<(ConversationRole, Vec<ContentBlock>)> = Vec::new();
    for message in &request.messages {
        // Converse refuses empty text blocks; an empty turn says nothing anyway.
        if message.content.trim().is_empty() {
            continue;
        }
        let role = match message.role {
            Role::System => {
                system.push(SystemContentBlock::Text(message.content.clone()));
                continue;
            }
            Role::User => ConversationRole::User,
            Role::Assistant => ConversationRole::Assistant,
        };
        let block = ContentBlock::Text(message.content.clone());
        match turns.last_mut() {
            Some((last, blocks)) if *last == role => blocks.push(block),
            _ => turns.push((role, vec![block])),
        }
    }
    let messages = turns
        .into_iter()
        .map(|(role, content)| {
            Message::builder()
                .role(role)
                .set_content(Some(content))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(build)?;
    let tools = if request.task.is_structured() {
        Some(task_tool(request, thinking.is_none()).map_err(build)?)
    } else {
        None
    };
    let max_tokens = i32::try_from(request.max_tokens).unwrap_or(i32::MAX);
    let stop =
        (!request.stop.is_empty()).then(|| request.stop.iter().map(|s| (*s).to_owned()).collect());
    Ok(Parts {
        system,
        messages,
        tools,
        inference: InferenceConfiguration::builder()
            .set_temperature(thinking.is_none().then_some(0.0))
            .max_tokens(max_tokens)
            .set_stop_sequences(stop)
            .build(),
        model_fields: thinking.map(|budget| {
            to_document(&json!({"thinking": {"type": "enabled", "budget_tokens": budget}}))
        }),
    })
}

/// The task's schema as the one tool the model must call (`forced`), or may.
fn task_tool(
    request: &ChatRequest<'_>,
    forced: bool,
) -> Result<ToolConfiguration, aws_smithy_types::error::operation::BuildError> {
    let name = request.task.schema_name();
    let spec = ToolSpecification::builder()
        .name(name)
        .description(format!("Reply with the {name} result."))
        .input_schema(ToolInputSchema::Json(to_document(&request.task.schema())))
        .build()?;
    let choice = if forced {
        ToolChoice::Tool(SpecificToolChoice::builder().name(name).build()?)
    } else {
        ToolChoice::Auto(AutoToolChoice::builder().build())
    };
    ToolConfiguration::builder()
        .tools(Tool::ToolSpec(spec))
        .tool_choice(choice)
        .build()
}

/// The stop reason as a [`Finish`]: `max_tokens` is a reply cut at its cap.
pub(super) fn finish(stop_reason: &str) -> Finish {
    match stop_reason {
        "max_tokens" => Finish::Length,
        _ => Finish::Stop,
    }
}

/// The reply's content: the task tool's input as JSON text, else the reply's text (its
/// leading `<think>` block taken off); and what the model thought (`reasoningContent`).
///
/// # Errors
///
/// [`LlmError::InvalidResponse`] when the reply has none of them (permanent, like a reply
/// without choices from an OpenAI-compatible server). A reply that only thought (cut at its cap
/// before it answered) has empty content.
pub(super) fn content(
    blocks: &[ContentBlock],
    tool: &str,
    stop_reason: &str,
) -> Result<Thought, LlmError> {
    let mut text = String::new();
    let mut thought = String::new();
    let mut input = None;
    for block in blocks {
        match block {
            ContentBlock::ToolUse(call) if call.name() == tool && input.is_none() => {
                input = Some(to_json(call.input()).to_string());
            }
            ContentBlock::Text(piece) => text.push_str(piece),
            ContentBlock::ReasoningContent(ReasoningContentBlock::ReasoningText(block)) => {
                thought.push_str(block.text());
            }
            // Encrypted thinking (`redactedContent`) took tokens but has no text to keep.
            _ => {}
        }
    }
    let mut split = reasoning::split(&text, &thought);
    if let Some(input) = input {
        // Text beside the tool call is neither the decision nor thinking.
        split.answer = input;
        return Ok(split);
    }
    let thought_only = blocks
        .iter()
        .any(|b| matches!(b, ContentBlock::ReasoningContent(_)));
    if text.is_empty() && !thought_only {
        return Err(no_content(stop_reason));
    }
    Ok(split)
}

/// A reply with neither the tool call nor text.
pub(super) fn no_content(stop_reason: &str) -> LlmError {
    LlmError::InvalidResponse(format!(
        "the Bedrock reply has no tool call and no text (stop reason {stop_reason})"
    ))
}

/// Converse's `usage`.
pub(super) fn tokens(usage: &TokenUsage) -> TokenCount {
    // Converse does not report reasoning tokens apart: `outputTokens` includes them.
    TokenCount {
        prompt: u64::try_from(usage.input_tokens()).unwrap_or(0),
        completion: u64::try_from(usage.output_tokens()).unwrap_or(0),
        reasoning: 0,
    }
}

/// A JSON value as a smithy document.
pub(crate) fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Number::PosInt(u),
            (None, Some(i)) => Number::NegInt(i),
            _ => Number::Float(n.as_f64().unwrap_or(0.0)),
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        Value::Object(map) => Document::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), to_document(v)))
                .collect(),
        ),
    }
}

/// A smithy document as a JSON value (a non-finite float, which JSON cannot hold, as null).
pub(crate) fn to_json(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Document::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Task;
    use crate::llm::{Message as ChatMessage, TaskInputs};
    use aws_sdk_bedrockruntime::types::ToolUseBlock;
    use serde_json::json;
    use std::time::Duration;

    fn request(messages: Vec<ChatMessage>) -> ChatRequest<'static> {
        ChatRequest {
            task: Task::GradeDocuments,
            messages,
            inputs: TaskInputs {
                question: "q",
                documents: &[],
                answer: None,
            },
            timeout: Duration::from_secs(1),
            max_tokens: 32,
            stop: &[],
        }
    }

    #[test]
    fn the_task_is_a_forced_tool_and_turns_alternate() {
        let parts = parts(
            &request(vec![
                ChatMessage::new(Role::System, "grade"),
                ChatMessage::new(Role::User, "question"),
                ChatMessage::new(Role::Assistant, "maybe?"),
                ChatMessage::new(Role::User, "again"),
                ChatMessage::new(Role::Assistant, " "),
                ChatMessage::new(Role::User, "as JSON"),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(parts.system, [SystemContentBlock::Text("grade".into())]);
        let roles: Vec<_> = parts.messages.iter().map(|m| m.role().clone()).collect();
        assert_eq!(
            roles,
            [
                ConversationRole::User,
                ConversationRole::Assistant,
                ConversationRole::User
            ]
        );
        assert_eq!(
            parts.messages[2].content().len(),
            2,
            "an empty turn left out, the user turns around it merged"
        );
        assert_eq!(parts.inference.max_tokens(), Some(32));
        let tools = parts.tools.expect("a structured task has its tool");
        let Tool::ToolSpec(spec) = &tools.tools()[0] else {
            panic!("a tool spec")
        };
        assert_eq!(spec.name(), "grade_documents");
        let schema = spec.input_schema().unwrap().as_json().unwrap();
        assert_eq!(to_json(schema), Task::GradeDocuments.schema());
        assert_eq!(
            tools.tool_choice(),
            Some(&ToolChoice::Tool(
                SpecificToolChoice::builder()
                    .name("grade_documents")
                    .build()
                    .unwrap()
            ))
        );
    }

    #[test]
    fn the_answer_is_plain_text_with_its_own_cap() {
        let mut answer = request(vec![ChatMessage::new(Role::User, "question")]);
        answer.task = Task::GenerateAnswer;
        answer.max_tokens = 1024;
        let parts = parts(&answer, None).unwrap();
        assert!(parts.tools.is_none(), "no forced tool for the answer");
        assert_eq!(parts.inference.max_tokens(), Some(1024));
        assert_eq!(finish("max_tokens"), Finish::Length);
        assert_eq!(finish("end_turn"), Finish::Stop);
    }

    #[test]
    fn the_tool_input_is_the_content_and_text_is_the_fallback() {
        let call = ContentBlock::ToolUse(
            ToolUseBlock::builder()
                .tool_use_id("t1")
                .name("grade_documents")
                .input(to_document(&json!({"binary_score": "yes"})))
                .build()
                .unwrap(),
        );
        let text = ContentBlock::Text("Sure: ".into());
        assert_eq!(
            content(&[text.clone(), call], "grade_documents", "tool_use")
                .unwrap()
                .answer,
            r#"{"binary_score":"yes"}"#
        );
        assert_eq!(
            content(&[text], "grade_documents", "end_turn")
                .unwrap()
                .answer,
            "Sure: "
        );
        assert!(matches!(
            content(&[], "grade_documents", "max_tokens"),
            Err(LlmError::InvalidResponse(m)) if m.contains("max_tokens")
        ));
    }

    #[test]
    fn thinking_sends_the_budget_offers_the_tool_and_sends_no_temperature() {
        let mut grade = request(vec![ChatMessage::new(Role::User, "question")]);
        grade.stop = &["\n\nQuestion:"];
        let plain = parts(&grade, None).unwrap();
        assert_eq!(plain.inference.temperature(), Some(0.0));
        assert_eq!(plain.inference.stop_sequences(), ["\n\nQuestion:"]);
        assert!(plain.model_fields.is_none());

        grade.max_tokens = 2_080;
        let thinking = parts(&grade, Some(2_048)).unwrap();
        assert_eq!(thinking.inference.temperature(), None);
        assert_eq!(thinking.inference.max_tokens(), Some(2_080));
        assert_eq!(
            to_json(&thinking.model_fields.unwrap()),
            json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})
        );
        assert!(matches!(
            thinking.tools.unwrap().tool_choice(),
            Some(ToolChoice::Auto(_))
        ));
        grade.stop = &[];
        assert!(parts(&grade, None)
            .unwrap()
            .inference
            .stop_sequences()
            .is_empty());
    }

    #[test]
    fn reasoning_blocks_are_thought_not_content() {
        use aws_sdk_bedrockruntime::types::ReasoningTextBlock;
        let thought = ContentBlock::ReasoningContent(ReasoningContentBlock::ReasoningText(
            ReasoningTextBlock::builder()
                .text("The passage names the fungus.")
                .signature("sig")
                .build()
                .unwrap(),
        ));
        let text = ContentBlock::Text("\n\nIt is a fungus.".into());
        let reply = content(&[thought.clone(), text], "generate_answer", "end_turn").unwrap();
        assert_eq!(reply.answer, "\n\nIt is a fungus.");
        assert_eq!(reply.reasoning, "The passage names the fungus.");
        // Cut at the cap while thinking: empty content, not a reply without any.
        let reply = content(&[thought], "generate_answer", "max_tokens").unwrap();
        assert_eq!(
            (reply.answer.as_str(), reply.reasoning.is_empty()),
            ("", false)
        );
        let redacted = ContentBlock::ReasoningContent(ReasoningContentBlock::RedactedContent(
            aws_smithy_types::Blob::new("x"),
        ));
        assert_eq!(content(&[redacted], "t", "max_tokens").unwrap().answer, "");
    }

    #[test]
    fn documents_round_trip_json() {
        let value = json!({"a": [1, -2, 2.5, "x", null, true], "b": {"c": {}}});
        assert_eq!(to_json(&to_document(&value)), value);
    }
}
