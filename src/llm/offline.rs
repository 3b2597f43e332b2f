//! The embedded offline provider: extractive answers and lexical grading, no network.
use super::{ChatModel, ChatRequest, LlmError};
use async_trait::async_trait;

/// Answers from the retrieved passages without any model.
#[derive(Debug, Clone, Default)]
pub struct OfflineModel;

#[async_trait]
impl ChatModel for OfflineModel {
    async fn complete(&self, _request: &ChatRequest<'_>) -> Result<String, LlmError> {
        Err(LlmError::Unimplemented("offline"))
    }
    fn name(&self) -> &'static str {
        "offline"
    }
}
