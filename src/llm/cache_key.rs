//! The response cache's key and what it stores: [`cache_key`] of a request, and whether a
//! reply is [`well_formed`] enough to keep (see [`super::cache`]).

use super::{BinaryScore, ChatRequest, Refined, Role, RouteDecision, Task};
use crate::store::StoreKey;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Changes whenever the key derivation changes, so old items are simply never found again.
/// (v2: the answer is plain text, and the output cap is part of the key.)
const KEY_FORMAT: &str = "bounded-rag llm-cache v2";

/// The cache key of `request` to a model whose [`ChatModel::cache_scope`] is `scope`:
/// `cache#` and 64 lower-case hex digits.
pub(crate) fn cache_key(scope: &str, request: &ChatRequest<'_>) -> String {
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(bytes);
    };
    field(KEY_FORMAT.as_bytes());
    field(scope.as_bytes());
    field(request.task.schema_name().as_bytes());
    field(request.task.schema().to_string().as_bytes());
    field(&request.max_tokens.to_be_bytes());
    // Only a request with stop sequences hashes them, so keys of requests without stay as
    // they were.
    for stop in request.stop {
        field(b"stop");
        field(stop.as_bytes());
    }
    for message in &request.messages {
        field(role_name(message.role).as_bytes());
        field(message.content.as_bytes());
    }
    let mut digest = String::with_capacity(64);
    for byte in hash.finalize() {
        let _ = write!(digest, "{byte:02x}");
    }
    StoreKey::Cache(&digest).to_string()
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// True when `content` is, as it stands, a JSON object of `task`'s reply type (for a decision),
/// or some text (for the answer).
pub(crate) fn well_formed(task: Task, content: &str) -> bool {
    if !task.is_structured() {
        return !content.trim().is_empty();
    }
    fn is<T: DeserializeOwned>(value: Value) -> bool {
        serde_json::from_value::<T>(value).is_ok()
    }
    let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(content) else {
        return false;
    };
    match task {
        Task::RouteQuery => is::<RouteDecision>(value),
        Task::GradeDocuments | Task::GradeHallucinations | Task::GradeAnswer => {
            is::<BinaryScore>(value)
        }
        Task::RefineQuery => is::<Refined>(value),
        Task::GenerateAnswer => false,
        Task::ContextualizeQuestion => is::<super::Contextualized>(value),
    }
}
