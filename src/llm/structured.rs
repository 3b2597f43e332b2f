//! Typed structured calls with a bounded re-ask on malformed JSON.
use super::{ChatModel, ChatRequest, LlmError};
use serde::de::DeserializeOwned;

/// How many times a malformed reply is re-asked before giving up (permanent error).
pub const MAX_REASKS: u32 = 1;

/// Calls the model and parses its reply as `T`, re-asking at most [`MAX_REASKS`] times.
pub async fn ask<T: DeserializeOwned>(
    model: &dyn ChatModel,
    request: &ChatRequest<'_>,
) -> Result<T, LlmError> {
    let _ = (model, request);
    Err(LlmError::Unimplemented("ask"))
}
