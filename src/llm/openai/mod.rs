//! OpenAI-compatible chat-completions client (OpenAI, Ollama, vLLM, llama.cpp server).
//!
//! One `reqwest::Client` is built per model and reused, so calls share a connection pool.
//! Backends differ by base URL (and key) only, and reasoning models by their configured effort
//! (`LLM_REASONING_EFFORT`). The wire structs are private to this module (`wire`); callers see
//! [`ChatRequest`] in and a [`Completion`] out, its content without what the model thought
//! (`<think>` blocks, `reasoning_content`; see `llm::reasoning`). A streamed call (`stream`)
//! sends the same body plus `"stream": true` and is classified the same way up to the first
//! byte of the stream.

mod sse;
mod wire;

use super::error::excerpt;
use super::{ChatModel, ChatRequest, Completion, DeltaSink, LlmError};
use crate::clock::{Clock, SystemClock};
use crate::config::ReasoningEffort;
use crate::outbound::{self, error_chain, Transport};
use crate::secrets::Secret;
use async_trait::async_trait;
use reqwest::header::{HeaderValue, AUTHORIZATION};
use reqwest::{Client, Response, Url};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use wire::{Dialect, WireRequest, WireResponse};

/// Settings of the OpenAI-compatible client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL up to `/v1`, e.g. `http://127.0.0.1:8089/v1`; the client posts to
    /// `{base_url}/chat/completions`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Bearer key, if the server wants one (local servers usually do not).
    pub api_key: Option<Secret>,
    /// Cap on one call; a request's own `timeout` is used when shorter.
    pub request_timeout: Duration,
    /// Cap on establishing a connection.
    pub connect_timeout: Duration,
    /// `LLM_REASONING_EFFORT`: sent as `reasoning_effort` when set, with the cap as
    /// `max_completion_tokens` and neither `temperature` nor `stop` (OpenAI's reasoning models
    /// refuse both).
    pub reasoning_effort: Option<ReasoningEffort>,
}

impl OpenAiConfig {
    /// Default [`OpenAiConfig::request_timeout`]: `LLM_TIMEOUT_MS`'s default.
    pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = crate::config::DEFAULT_LLM_TIMEOUT;
    /// Default [`OpenAiConfig::connect_timeout`].
    pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = crate::config::DEFAULT_LLM_CONNECT_TIMEOUT;

    /// A keyless configuration with the default timeouts.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            reasoning_effort: None,
        }
    }

    /// The same configuration with a bearer key.
    pub fn with_api_key(mut self, key: Secret) -> Self {
        self.api_key = Some(key);
        self
    }
}

/// OpenAI-compatible client. Cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct OpenAiModel {
    client: Client,
    endpoint: Url,
    model: String,
    /// `Bearer …`, marked sensitive so it never shows in `Debug`.
    authorization: Option<HeaderValue>,
    /// Kept only to scrub it from error bodies a server might echo it in.
    api_key: Option<Secret>,
    request_timeout: Duration,
    /// Where this server reads a call's output cap, and the reasoning effort.
    dialect: Dialect,
    /// Reads "now" for an HTTP-date `Retry-After`.
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("endpoint", &self.endpoint.as_str())
            .field("model", &self.model)
            .field("api_key", &self.api_key)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    /// Builds the client once (connection pool reused across calls).
    ///
    /// # Errors
    ///
    /// [`LlmError::Config`] for a base URL that is not `http(s)://`, an empty model name, a
    /// key that cannot be sent in a header, or zero timeouts.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        let endpoint = endpoint(&config.base_url)?;
        if config.model.trim().is_empty() {
            return Err(LlmError::Config("the model name is empty".into()));
        }
        if config.request_timeout.is_zero() || config.connect_timeout.is_zero() {
            return Err(LlmError::Config(
                "timeouts must be greater than zero".into(),
            ));
        }
        let authorization = match &config.api_key {
            Some(key) if key.expose().is_empty() => {
                return Err(LlmError::Config("the API key is empty".into()))
            }
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                    .map_err(|_| {
                        LlmError::Config(
                            "the API key contains characters not allowed in a header".into(),
                        )
                    })?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        let client = crate::tls::reqwest_builder()
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            // A redirected POST is a misconfigured base URL; never send the key elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(outbound::USER_AGENT)
            .build()
            .map_err(|e| {
                LlmError::Config(format!("cannot build the HTTP client: {}", error_chain(&e)))
            })?;
        Ok(Self {
            dialect: Dialect::new(endpoint.host_str(), config.reasoning_effort),
            client,
            endpoint,
            model: config.model,
            authorization,
            api_key: config.api_key,
            request_timeout: config.request_timeout,
            clock: Arc::new(SystemClock),
        })
    }

    /// The URL every call is posted to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Posts `request` (as a stream of server-sent events when `stream`) and returns the 2xx
    /// response with the time limit that bounds it, body included.
    ///
    /// # Errors
    ///
    /// [`LlmError::Status`] for a non-2xx status, with the server's `Retry-After` and the start
    /// of its body (key redacted); transport errors as [`OpenAiModel::transport_error`].
    async fn send(
        &self,
        request: &ChatRequest<'_>,
        stream: bool,
    ) -> Result<(Response, Duration), LlmError> {
        let timeout = request.timeout.min(self.request_timeout);
        if timeout.is_zero() {
            return Err(LlmError::Timeout { after: timeout });
        }
        let body = WireRequest::new(&self.model, request, stream, self.dialect);
        // reqwest's per-request timeout runs until the body has been read to its end.
        let mut http = self
            .client
            .post(self.endpoint.clone())
            .timeout(timeout)
            .json(&body);
        if let Some(authorization) = &self.authorization {
            http = http.header(AUTHORIZATION, authorization.clone());
        }
        let response = http
            .send()
            .await
            .map_err(|e| self.transport_error(e, timeout))?;

        let status = response.status();
        if status.is_success() {
            return Ok((response, timeout));
        }
        let retry_after = outbound::retry_after(response.headers(), self.clock.now());
        // The body is only for diagnosis: a failure to read it must not hide the status.
        let text = response.text().await.unwrap_or_default();
        if status.is_client_error() && super::error::is_context_overflow(&text) {
            return Err(LlmError::ContextOverflow(excerpt(&self.redact(text))));
        }
        Err(LlmError::Status {
            status: status.as_u16(),
            body: excerpt(&self.redact(text)),
            retry_after,
        })
    }

    /// Parses a whole (non-streamed) chat-completions reply.
    fn parse_reply(&self, bytes: &[u8]) -> Result<Completion, LlmError> {
        let reply: WireResponse = serde_json::from_slice(bytes).map_err(|e| {
            LlmError::InvalidResponse(format!(
                "not a chat-completions reply ({e}): {}",
                excerpt(&self.redact(String::from_utf8_lossy(bytes).into_owned()))
            ))
        })?;
        reply.into_completion()
    }

    /// Maps a `reqwest` failure to a classified error, without the URL.
    fn transport_error(&self, error: reqwest::Error, timeout: Duration) -> LlmError {
        match Transport::of(error) {
            Transport::Timeout => LlmError::Timeout { after: timeout },
            Transport::Connect(chain) => {
                // The origin names the server without path, query or credentials.
                let origin = self.endpoint.origin().ascii_serialization();
                LlmError::Connect(self.redact(format!("{origin}: {chain}")))
            }
            Transport::Build(chain) => LlmError::Config(self.redact(chain)),
            Transport::Broken(chain) => LlmError::Transport(self.redact(chain)),
        }
    }

    /// Removes the key from text that came from the server or the network stack.
    fn redact(&self, text: String) -> String {
        outbound::scrub(&text, self.api_key.as_ref())
    }
}

#[async_trait]
impl ChatModel for OpenAiModel {
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
        let (response, timeout) = self.send(request, false).await?;
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(e, timeout))?;
        self.parse_reply(&bytes)
    }

    /// Streams the reply (`"stream": true`, usage in the last chunk); see the `sse` module.
    async fn complete_streaming(
        &self,
        request: &ChatRequest<'_>,
        on_delta: DeltaSink<'_>,
    ) -> Result<Completion, LlmError> {
        let (response, timeout) = self.send(request, true).await?;
        self.read_stream(response, timeout, on_delta).await
    }

    fn name(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint and model, and the reasoning effort when one is set (it changes replies).
    fn cache_scope(&self) -> String {
        match self.dialect.effort {
            Some(effort) => format!("openai {} {} effort {effort}", self.endpoint, self.model),
            None => format!("openai {} {}", self.endpoint, self.model),
        }
    }
}

/// `{base_url}/chat/completions`, validated.
fn endpoint(base_url: &str) -> Result<Url, LlmError> {
    let base = base_url.trim().trim_end_matches('/');
    let url = Url::parse(&format!("{base}/chat/completions"))
        .map_err(|e| LlmError::Config(format!("invalid LLM base URL: {e}")))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(LlmError::Config(format!(
            "LLM base URL must be http or https, not {other}"
        ))),
    }
}
