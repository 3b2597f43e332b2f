//! The sync function's one error type, classified once: a transient failure is delivered
//! again (SQS), a permanent one is not retried.
use crate::error::{Classify, ErrorClass};
use crate::search::RetrievalError;

/// A sync job step that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// Worth another delivery (throttling, a timeout, a lost race, a lease held elsewhere).
    #[error("{0}")]
    Transient(String),
    /// Will fail again the same way.
    #[error("{0}")]
    Permanent(String),
}

impl JobError {
    /// Whether another delivery may succeed.
    pub(crate) fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }

    /// An AWS SDK failure, classified as the crate classifies them.
    pub(crate) fn sdk<E, R>(
        what: &str,
        e: aws_smithy_runtime_api::client::result::SdkError<E, R>,
    ) -> Self
    where
        E: aws_sdk_dynamodb::error::ProvideErrorMetadata
            + std::error::Error
            + Send
            + Sync
            + 'static,
        R: std::fmt::Debug + Send + Sync + 'static,
    {
        let message = format!("{what}: {}", crate::outbound::error_chain(&e));
        let throttled = e
            .as_service_error()
            .and_then(|s| s.code())
            .is_some_and(|c| c.contains("Throttl") || c.contains("InternalServer"));
        let transient = throttled
            || matches!(
                e,
                aws_smithy_runtime_api::client::result::SdkError::TimeoutError(_)
                    | aws_smithy_runtime_api::client::result::SdkError::ResponseError(_)
                    | aws_smithy_runtime_api::client::result::SdkError::DispatchFailure(_)
            );
        if transient {
            Self::Transient(message)
        } else {
            Self::Permanent(message)
        }
    }
}

impl From<RetrievalError> for JobError {
    fn from(e: RetrievalError) -> Self {
        match e.class() {
            ErrorClass::Transient => Self::Transient(e.to_string()),
            ErrorClass::Permanent => Self::Permanent(e.to_string()),
        }
    }
}

impl From<crate::store::StoreError> for JobError {
    fn from(e: crate::store::StoreError) -> Self {
        match e.class() {
            ErrorClass::Transient => Self::Transient(e.to_string()),
            ErrorClass::Permanent => Self::Permanent(e.to_string()),
        }
    }
}
