//! Amazon Bedrock embeddings (`EMBEDDINGS_PROVIDER=bedrock`): Titan Text Embeddings v2 through
//! `InvokeModel`, one call per text (the model takes one `inputText`), with
//! `{"inputText", "dimensions", "normalize": true}`; the answer `{"embedding": [...],
//! "inputTextTokenCount"}` is checked (the configured dimensions, finite numbers).
//!
//! A batch's texts are sent [`CALLS_PER_BATCH`] at a time, all within the batch's timeout; the
//! batch fails on its first failed call, classified once (`crate::bedrock`), and its caller
//! retries it (the engine's policy during a run, the ingest loop at ingest). Credentials come
//! from the AWS environment (the function role): no key.

use super::embedder::{Embedder, Embeddings};
use super::error::EmbedError;
use crate::bedrock_client::{self, Failure, Purpose};
use crate::error::ErrorClass;
use crate::outbound::status_is_transient;
use crate::usage::Usage;
use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_bedrockruntime::primitives::Blob;
use aws_sdk_bedrockruntime::Client;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `InvokeModel` calls of one batch in flight at once.
pub(crate) const CALLS_PER_BATCH: usize = 8;

/// The Bedrock embeddings client. Build once; clones share the SDK client.
#[derive(Debug, Clone)]
pub(crate) struct BedrockEmbeddings {
    client: Client,
    model: String,
    dimensions: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Request<'a> {
    input_text: &'a str,
    dimensions: u32,
    normalize: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    embedding: Vec<f32>,
    #[serde(default)]
    input_text_token_count: Option<u64>,
}

impl BedrockEmbeddings {
    /// Builds the client once from the process's AWS configuration `sdk`, for `model` (e.g.
    /// `amazon.titan-embed-text-v2:0`) returning `dimensions` (256, 512 or 1024) per vector.
    pub(crate) fn new(sdk: &SdkConfig, model: &str, dimensions: u32) -> Result<Self, EmbedError> {
        if model.trim().is_empty() {
            return Err(EmbedError::Config("the Bedrock model id is empty".into()));
        }
        if ![256, 512, 1024].contains(&dimensions) {
            return Err(EmbedError::Config(format!(
                "{dimensions} dimensions: Titan Text Embeddings v2 returns 256, 512 or 1024"
            )));
        }
        Ok(Self {
            client: bedrock_client::client(sdk, crate::config::DEFAULT_LLM_CONNECT_TIMEOUT),
            model: model.trim().to_owned(),
            dimensions,
        })
    }

    /// One text's vector and its reported tokens.
    async fn embed_one(&self, text: &str) -> Result<(Vec<f32>, Option<u64>), EmbedError> {
        let body = serde_json::to_vec(&Request {
            input_text: text,
            dimensions: self.dimensions,
            normalize: true,
        })
        .map_err(|e| EmbedError::Config(e.to_string()))?;
        let reply = self
            .client
            .invoke_model()
            .model_id(&self.model)
            .content_type("application/json")
            .accept("application/json")
            .body(Blob::new(body))
            .send()
            .await
            .map_err(|e| embed_error(bedrock_client::failure(&e, Purpose::Embeddings)))?;
        let parsed: Response = serde_json::from_slice(reply.body().as_ref()).map_err(|e| {
            EmbedError::InvalidResponse(format!("not a Titan embeddings answer: {e}"))
        })?;
        if parsed.embedding.len() != self.dimensions as usize {
            return Err(EmbedError::InvalidResponse(format!(
                "a vector of {} dimensions, {} asked",
                parsed.embedding.len(),
                self.dimensions
            )));
        }
        if parsed.embedding.iter().any(|x| !x.is_finite()) {
            return Err(EmbedError::InvalidResponse(
                "a vector holds a non-finite number".into(),
            ));
        }
        Ok((parsed.embedding, parsed.input_text_token_count))
    }
}

#[async_trait]
impl Embedder for BedrockEmbeddings {
    async fn embed(&self, inputs: &[String], timeout: Duration) -> Result<Embeddings, EmbedError> {
        // The futures are made first: a closure over the borrowed texts would not be `Send`.
        let calls: Vec<_> = inputs.iter().map(|text| self.embed_one(text)).collect();
        let calls = futures::stream::iter(calls)
            .buffered(CALLS_PER_BATCH)
            .try_collect::<Vec<_>>();
        let answers = tokio::time::timeout(timeout, calls)
            .await
            .map_err(|_| EmbedError::Timeout { after: timeout })??;
        let reported: Option<u64> = answers.iter().map(|(_, tokens)| *tokens).sum();
        let usage = Usage {
            prompt_tokens: reported.unwrap_or_else(|| {
                inputs
                    .iter()
                    .map(|t| crate::usage::estimate_tokens(t))
                    .sum()
            }),
            estimated: reported.is_none(),
            model_calls: u32::try_from(answers.len()).unwrap_or(u32::MAX),
            ..Usage::default()
        };
        Ok(Embeddings {
            vectors: answers.into_iter().map(|(vector, _)| vector).collect(),
            usage,
        })
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &'static str {
        "bedrock"
    }

    fn dimensions(&self) -> Option<usize> {
        Some(self.dimensions as usize)
    }
}

/// A classified Bedrock failure as an [`EmbedError`] of the same class.
fn embed_error(failure: Failure) -> EmbedError {
    match failure {
        Failure::Timeout => EmbedError::Connect("the Bedrock call timed out".into()),
        Failure::Connect(m) | Failure::Broken(m) => EmbedError::Connect(m),
        Failure::Config(m) => EmbedError::Config(m),
        Failure::Service {
            status,
            message,
            class,
            ..
        } => match class {
            ErrorClass::Transient if status_is_transient(status) => EmbedError::Http {
                status,
                message,
                retry_after: None,
            },
            ErrorClass::Transient => EmbedError::Connect(message),
            ErrorClass::Permanent if status_is_transient(status) || status < 400 => {
                EmbedError::InvalidResponse(message)
            }
            ErrorClass::Permanent => EmbedError::Http {
                status,
                message,
                retry_after: None,
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Classify;

    fn service(code: &str, status: u16, class: ErrorClass) -> EmbedError {
        embed_error(Failure::Service {
            code: code.into(),
            status,
            message: code.into(),
            class,
        })
    }

    #[test]
    fn failures_keep_their_class() {
        use ErrorClass::{Permanent, Transient};
        assert_eq!(
            service("ThrottlingException", 429, Transient).class(),
            Transient
        );
        assert_eq!(
            service("ThrottlingException", 400, Transient).class(),
            Transient
        );
        assert_eq!(
            service("ValidationException", 400, Permanent).class(),
            Permanent
        );
        assert_eq!(service("Odd", 503, Permanent).class(), Permanent);
        assert_eq!(embed_error(Failure::Timeout).class(), Transient);
        assert_eq!(embed_error(Failure::Config("x".into())).class(), Permanent);
    }

    #[test]
    fn only_titan_v2_dimensions_are_accepted() {
        let sdk = SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        assert!(BedrockEmbeddings::new(&sdk, "amazon.titan-embed-text-v2:0", 512).is_ok());
        assert!(BedrockEmbeddings::new(&sdk, "amazon.titan-embed-text-v2:0", 300).is_err());
        assert!(BedrockEmbeddings::new(&sdk, " ", 256).is_err());
    }
}
