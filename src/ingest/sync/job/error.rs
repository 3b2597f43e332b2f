//! The sync function's one error type, classified once: a transient failure is delivered
//! again (SQS), a permanent one is not retried.
use crate::error::{Classify, ErrorClass};
use crate::ingest::IngestError;

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

    /// An AWS SDK failure, classified as every AWS failure is ([`crate::aws::sdk_error_class`]).
    pub(crate) fn sdk<E>(
        what: &str,
        e: aws_smithy_runtime_api::client::result::SdkError<
            E,
            aws_smithy_runtime_api::http::Response,
        >,
    ) -> Self
    where
        E: aws_smithy_types::error::metadata::ProvideErrorMetadata
            + std::error::Error
            + Send
            + Sync
            + 'static,
    {
        let message = format!("{what}: {}", crate::outbound::error_chain(&e));
        match crate::aws::sdk_error_class(&e) {
            ErrorClass::Transient => Self::Transient(message),
            ErrorClass::Permanent => Self::Permanent(message),
        }
    }
}

impl From<IngestError> for JobError {
    fn from(e: IngestError) -> Self {
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
