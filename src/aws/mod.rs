//! How long one AWS call may take, SDK retries included.
//!
//! Checkpoint writes (DynamoDB) and continuation sends (SQS) can start right at a run's usable
//! deadline, which lies `DEADLINE_MARGIN_MS` before the Lambda deadline. Each such call gets
//! half the margin, so a last checkpoint write and a continuation send both end, answered or
//! failed, before Lambda would kill the invocation; a run's lease lasts exactly that long past
//! the usable deadline ([`lease_grace`]). Secrets Manager is read once at start-up,
//! outside any run budget, and gets a fixed timeout.
//!
//! What still fails after the SDK's own retries is classified once, here
//! ([`sdk_error_class`]), for every AWS client (DynamoDB, SQS, Secrets Manager).
//!
//! [`S3Location`] is the one parsed `s3://BUCKET/PREFIX` (`KB_URI`, the CLI's `kb` commands).

mod s3_location;

pub use s3_location::S3Location;

use crate::error::ErrorClass;
use aws_config::timeout::TimeoutConfig;
use aws_config::SdkConfig;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use std::time::Duration;

/// Error codes and transaction cancellation reasons worth retrying: throttling, server-side
/// trouble, concurrent transactions.
#[rustfmt::skip]
pub(crate) const TRANSIENT_CODES: &[&str] = &[
    "ThrottlingException", "Throttling", "ThrottledException", "ThrottlingError",
    "RequestThrottled", "RequestThrottledException", "TooManyRequestsException",
    "ProvisionedThroughputExceededException", "ProvisionedThroughputExceeded",
    "RequestLimitExceeded", "TransactionConflictException", "TransactionConflict",
    "TransactionInProgressException", "InternalServerError", "InternalServiceError",
    "InternalFailure", "ServiceUnavailable", "RequestTimeout", "RequestTimeoutException",
];

/// Shortest per-call timeout, whatever the margin: below it a healthy call could time out.
pub(crate) const MIN_RUN_CALL: Duration = Duration::from_millis(250);
/// Longest per-call timeout, whatever the margin.
pub(crate) const MAX_RUN_CALL: Duration = Duration::from_secs(5);
/// Per-call timeout of the start-up Secrets Manager read.
pub(crate) const STARTUP_CALL: Duration = Duration::from_secs(5);

/// The timeout of one DynamoDB or SQS call made during a run: half of `deadline_margin`,
/// within [`MIN_RUN_CALL`]..=[`MAX_RUN_CALL`].
pub fn run_call_timeout(deadline_margin: Duration) -> Duration {
    (deadline_margin / 2).clamp(MIN_RUN_CALL, MAX_RUN_CALL)
}

/// How long a run's lease outlasts the usable deadline: the last checkpoint write and the
/// continuation send, one [`run_call_timeout`] each. With the default margin this is the
/// margin itself, so a lease lapses when the Lambda invocation has certainly ended.
pub(crate) fn lease_grace(deadline_margin: Duration) -> Duration {
    2 * run_call_timeout(deadline_margin)
}

/// `sdk_config`'s timeouts with `operation` bounding each call, its retries included.
pub(crate) fn timeouts(sdk_config: &SdkConfig, operation: Duration) -> TimeoutConfig {
    sdk_config
        .timeout_config()
        .map(|t| t.to_builder())
        .unwrap_or_default()
        .operation_timeout(operation)
        .build()
}

/// Transient or permanent, for any AWS SDK error (every service's `SdkError` is the same
/// smithy type): timeouts, connection errors, 5xx, 429 and throttling codes are transient; the
/// rest (validation, access denied, missing resource) not. Unlike the HTTP clients, a 408 is
/// not retried here: the SDK has already retried what it could.
pub(crate) fn sdk_error_class<E: ProvideErrorMetadata>(
    err: &SdkError<E, HttpResponse>,
) -> ErrorClass {
    match err {
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => ErrorClass::Transient,
        SdkError::DispatchFailure(f) if f.is_user() => ErrorClass::Permanent,
        SdkError::DispatchFailure(_) => ErrorClass::Transient,
        SdkError::ServiceError(_) => {
            class_of(err.code(), err.raw_response().map(|r| r.status().as_u16()))
        }
        _ => ErrorClass::Permanent,
    }
}

fn class_of(code: Option<&str>, status: Option<u16>) -> ErrorClass {
    let transient_status = matches!(status, Some(429 | 500..=599));
    if transient_status || code.is_some_and(|c| TRANSIENT_CODES.contains(&c)) {
        ErrorClass::Transient
    } else {
        ErrorClass::Permanent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::error::ConnectorError;
    use aws_sdk_dynamodb::operation::get_item::GetItemError;

    #[test]
    fn a_run_call_gets_half_the_margin_within_bounds() {
        let ms = Duration::from_millis;
        assert_eq!(run_call_timeout(ms(1_500)), ms(750));
        assert_eq!(run_call_timeout(ms(4_000)), ms(2_000));
        assert_eq!(run_call_timeout(ms(0)), MIN_RUN_CALL);
        assert_eq!(run_call_timeout(ms(60_000)), MAX_RUN_CALL);
    }

    #[test]
    fn a_lease_outlasts_the_deadline_by_two_run_calls() {
        let ms = Duration::from_millis;
        assert_eq!(lease_grace(ms(1_500)), ms(1_500));
        assert_eq!(lease_grace(ms(0)), ms(500));
        assert_eq!(lease_grace(ms(60_000)), ms(10_000));
    }

    #[test]
    fn the_operation_timeout_is_set_and_other_timeouts_are_kept() {
        let sdk = SdkConfig::builder()
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_millis(300))
                    .build(),
            )
            .build();
        let t = timeouts(&sdk, Duration::from_millis(750));
        assert_eq!(t.operation_timeout(), Some(Duration::from_millis(750)));
        assert_eq!(t.connect_timeout(), Some(Duration::from_millis(300)));
    }

    #[test]
    fn classifies_sdk_errors_once() {
        use ErrorClass::{Permanent, Transient};
        assert_eq!(class_of(Some("ThrottlingException"), Some(400)), Transient);
        assert_eq!(
            class_of(Some("ProvisionedThroughputExceededException"), None),
            Transient
        );
        assert_eq!(class_of(None, Some(503)), Transient);
        assert_eq!(class_of(None, Some(429)), Transient);
        assert_eq!(class_of(Some("ValidationException"), Some(400)), Permanent);
        assert_eq!(
            class_of(Some("ResourceNotFoundException"), Some(400)),
            Permanent
        );
        assert_eq!(
            class_of(Some("AccessDeniedException"), Some(403)),
            Permanent
        );
        type E = SdkError<GetItemError, HttpResponse>;
        assert_eq!(sdk_error_class(&E::timeout_error("slow")), Transient);
        let io = ConnectorError::io("connection reset".into());
        assert_eq!(sdk_error_class(&E::dispatch_failure(io)), Transient);
        let user = ConnectorError::user("bad endpoint".into());
        assert_eq!(sdk_error_class(&E::dispatch_failure(user)), Permanent);
        assert_eq!(
            sdk_error_class(&E::construction_failure("no table")),
            Permanent
        );
    }
}
