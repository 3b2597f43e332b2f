//! What the Amazon Bedrock chat model (`llm::bedrock`) and embeddings client
//! (`embed::bedrock`) share: the runtime client, built once, and the classification
//! of its failures, done once, here.
//!
//! The client is built from the process's AWS configuration (region and credentials from the
//! environment, the function role on Lambda; the endpoint follows `AWS_ENDPOINT_URL` and
//! `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, as for every SDK client). The SDK's own retries are
//! off: the engine's retry policy (during a run) and the ingest loop retry transient failures,
//! and no layer retries what another already retried.
//!
//! Failures: `ThrottlingException`, `ServiceUnavailableException`, `ModelNotReadyException`,
//! `InternalServerException`, `ModelTimeoutException`, 429 and 5xx are transient, as are
//! timeouts and connection errors; `ValidationException`, `AccessDeniedException` and the rest
//! are permanent, and carry a hint saying what to fix.

use crate::aws;
use crate::error::ErrorClass;
use crate::outbound::error_chain;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::SdkConfig;
use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::Client;
use std::time::Duration;

/// Bedrock error codes worth retrying (besides what [`aws::sdk_error_class`] already retries).
pub(crate) const TRANSIENT_CODES: &[&str] = &[
    "ThrottlingException",
    "ServiceUnavailableException",
    "ModelNotReadyException",
    "InternalServerException",
    "ModelTimeoutException",
];

/// The Bedrock runtime client of `sdk`, without SDK retries, connecting within
/// `connect_timeout` (each call is bounded by its caller's timeout).
pub(crate) fn client(sdk: &SdkConfig, connect_timeout: Duration) -> Client {
    let config = aws_sdk_bedrockruntime::config::Builder::from(sdk)
        .retry_config(RetryConfig::disabled())
        .timeout_config(timeouts(sdk, connect_timeout))
        .build();
    Client::from_conf(config)
}

/// `sdk`'s timeouts, connecting within `connect_timeout`.
fn timeouts(sdk: &SdkConfig, connect_timeout: Duration) -> TimeoutConfig {
    sdk.timeout_config()
        .map(|t| t.to_builder())
        .unwrap_or_else(TimeoutConfig::builder)
        .connect_timeout(connect_timeout)
        .build()
}

/// The Agents for Bedrock runtime client of `sdk` (knowledge-base `Retrieve`, `Rerank`), as
/// [`client`]: no SDK retries; the endpoint follows `AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME`.
pub(crate) fn agent_client(
    sdk: &SdkConfig,
    connect_timeout: Duration,
) -> aws_sdk_bedrockagentruntime::Client {
    let config = aws_sdk_bedrockagentruntime::config::Builder::from(sdk)
        .retry_config(RetryConfig::disabled())
        .timeout_config(timeouts(sdk, connect_timeout))
        .build();
    aws_sdk_bedrockagentruntime::Client::from_conf(config)
}

/// Which setting names the model a failure is about, for the hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// `LLM_MODEL` (the SAM parameter `BedrockModelId`).
    Chat,
    /// `EMBEDDINGS_MODEL` (the SAM parameter `BedrockEmbeddingModelId`).
    Embeddings,
    /// `KB_URI=bedrock-kb://ID` (the SAM parameter `BedrockKnowledgeBaseId`).
    Knowledge,
    /// `RERANK_MODEL` with `RERANK_PROVIDER=bedrock` (the SAM parameter `BedrockRerankModelId`).
    Rerank,
}

impl Purpose {
    fn variable(self) -> &'static str {
        match self {
            Purpose::Chat => "LLM_MODEL",
            Purpose::Embeddings => "EMBEDDINGS_MODEL",
            Purpose::Knowledge => "KB_URI",
            Purpose::Rerank => "RERANK_MODEL",
        }
    }

    fn parameter(self) -> &'static str {
        match self {
            Purpose::Chat => "BedrockModelId",
            Purpose::Embeddings => "BedrockEmbeddingModelId",
            Purpose::Knowledge => "BedrockKnowledgeBaseId",
            Purpose::Rerank => "BedrockRerankModelId",
        }
    }

    /// The IAM actions a function role needs for this purpose.
    fn actions(self) -> &'static str {
        match self {
            Purpose::Chat | Purpose::Embeddings => {
                "bedrock:InvokeModel and bedrock:InvokeModelWithResponseStream"
            }
            Purpose::Knowledge => "bedrock:Retrieve",
            Purpose::Rerank => "bedrock:Rerank and bedrock:InvokeModel",
        }
    }
}

/// A failed Bedrock call, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The SDK's operation timeout expired.
    Timeout,
    /// The endpoint could not be reached, or the connection broke.
    Connect(String),
    /// The reply could not be read (cut, or not Bedrock's format): worth another try.
    Broken(String),
    /// The request cannot be made as configured (no region, no credentials, bad endpoint).
    Config(String),
    /// Bedrock answered with an error.
    Service {
        /// The error code, e.g. `ValidationException`.
        code: String,
        /// The HTTP status.
        status: u16,
        /// Bedrock's message and what to fix.
        message: String,
        /// Whether the same request may succeed later.
        class: ErrorClass,
    },
}

/// Classifies a failed Bedrock operation once (see the module docs).
pub(crate) fn failure<E>(err: &SdkError<E, HttpResponse>, purpose: Purpose) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    match err {
        SdkError::TimeoutError(_) => Failure::Timeout,
        SdkError::DispatchFailure(f) if f.is_timeout() => Failure::Timeout,
        SdkError::DispatchFailure(f) if f.is_io() => Failure::Connect(error_chain(err)),
        SdkError::DispatchFailure(f) if f.is_user() => Failure::Config(error_chain(err)),
        // Credentials or the region could not be resolved, or the request not signed.
        SdkError::DispatchFailure(_) | SdkError::ConstructionFailure(_) => {
            Failure::Config(format!(
                "{}; check the AWS credentials (the function role on Lambda) and AWS_REGION",
                error_chain(err)
            ))
        }
        SdkError::ResponseError(_) => Failure::Broken(error_chain(err)),
        SdkError::ServiceError(_) => {
            let code = err.code().unwrap_or("UnknownError").to_owned();
            let status = err.raw_response().map_or(0, |r| r.status().as_u16());
            let class = if TRANSIENT_CODES.contains(&code.as_str()) {
                ErrorClass::Transient
            } else {
                aws::sdk_error_class(err)
            };
            let text = err.message().unwrap_or("no message");
            Failure::Service {
                message: format!("{code}: {text}{}", hint(&code, purpose)),
                code,
                status,
                class,
            }
        }
        _ => Failure::Config(error_chain(err)),
    }
}

/// What to fix for a permanent error code.
pub(crate) fn hint(code: &str, purpose: Purpose) -> String {
    let (var, parameter) = (purpose.variable(), purpose.parameter());
    match code {
        "ValidationException" => match purpose {
            Purpose::Chat => format!(
                "; check that {var} is a Bedrock model id or inference profile available in \
                 this region that supports tool use with a forced tool choice (Converse)"
            ),
            Purpose::Embeddings => format!(
                "; check that {var} is a Titan Text Embeddings v2 model id available in this \
                 region and EMBEDDINGS_DIMENSIONS is 256, 512 or 1024"
            ),
            Purpose::Knowledge => format!(
                "; check {var}: the knowledge base's vector store may not support the search \
                 type asked for (?search=hybrid), or a filter names a value it cannot compare"
            ),
            Purpose::Rerank => format!(
                "; check that {var} is a Bedrock rerank model (amazon.rerank-v1:0, \
                 cohere.rerank-v3-5:0) offered in this region"
            ),
        },
        "AccessDeniedException" => format!(
            "; allow the function role {} on {var} (the stack's {parameter} parameter), and \
             enable access to the model in the Bedrock console",
            purpose.actions()
        ),
        "ResourceNotFoundException" => match purpose {
            Purpose::Knowledge => {
                format!("; check {var} and AWS_REGION: no such knowledge base there")
            }
            _ => format!("; check {var} and AWS_REGION: the model is not offered there"),
        },
        "UnrecognizedClientException" | "ExpiredTokenException" => {
            "; check the AWS credentials (the function role on Lambda)".to_owned()
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_bedrockruntime::error::ErrorMetadata;
    use aws_sdk_bedrockruntime::operation::converse::ConverseError;
    use aws_smithy_types::body::SdkBody;

    fn service(code: &str, status: u16) -> Failure {
        let meta = ErrorMetadata::builder()
            .code(code)
            .message("scripted")
            .build();
        let raw = HttpResponse::new(status.try_into().unwrap(), SdkBody::empty());
        let err = SdkError::service_error(ConverseError::generic(meta), raw);
        failure(&err, Purpose::Chat)
    }

    fn class(f: &Failure) -> ErrorClass {
        match f {
            Failure::Service { class, .. } => *class,
            other => panic!("not a service failure: {other:?}"),
        }
    }

    #[test]
    fn throttling_unavailable_not_ready_and_5xx_are_transient() {
        for (code, status) in [
            ("ThrottlingException", 429),
            ("ServiceUnavailableException", 503),
            ("ModelNotReadyException", 429),
            ("InternalServerException", 500),
            ("ModelTimeoutException", 408),
            ("SomethingNew", 502),
        ] {
            assert_eq!(
                class(&service(code, status)),
                ErrorClass::Transient,
                "{code}"
            );
        }
    }

    #[test]
    fn validation_and_access_denied_are_permanent_and_say_what_to_fix() {
        let validation = service("ValidationException", 400);
        assert_eq!(class(&validation), ErrorClass::Permanent);
        let Failure::Service { message, .. } = validation else {
            unreachable!()
        };
        assert!(message.starts_with("ValidationException: scripted; check that LLM_MODEL"));
        let denied = service("AccessDeniedException", 403);
        assert_eq!(class(&denied), ErrorClass::Permanent);
        let Failure::Service {
            message, status, ..
        } = denied
        else {
            unreachable!()
        };
        assert_eq!(status, 403);
        assert!(message.contains("bedrock:InvokeModel"), "{message}");
        assert!(message.contains("BedrockModelId"), "{message}");
        assert!(hint("AccessDeniedException", Purpose::Embeddings)
            .contains("EMBEDDINGS_MODEL (the stack's BedrockEmbeddingModelId"));
    }

    #[test]
    fn timeouts_are_timeouts() {
        type E = SdkError<ConverseError, HttpResponse>;
        assert_eq!(
            failure(&E::timeout_error("slow"), Purpose::Chat),
            Failure::Timeout
        );
        assert!(matches!(
            failure(&E::construction_failure("no region"), Purpose::Chat),
            Failure::Config(m) if m.contains("AWS_REGION")
        ));
    }
}
