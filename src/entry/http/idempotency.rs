//! Which run a request is about: the `Idempotency-Key` header (if any) of a caller maps a
//! repeated request to the run of its first one, never a second run; a new run is admitted
//! under the caller's active-run limit first.

use super::admission::admit;
use super::api::Api;
use super::status::{engine_error, error_field, ApiError};
use crate::engine::EngineError;
use crate::runs::idempotency::{self, Claim};
use crate::rag::Caller;
use lambda_http::http::StatusCode;
use lambda_http::Request;

/// Longest accepted `Idempotency-Key`.
const MAX_IDEMPOTENCY_KEY: usize = 255;

/// The run a request is about.
pub(crate) enum Run {
    /// A new run with this id (admitted under the caller's active-run limit).
    New(String),
    /// A repeat of an earlier request with the same `Idempotency-Key`, whose run exists.
    Repeat(String),
}

impl Run {
    /// The run's id.
    pub(crate) fn id(&self) -> &str {
        match self {
            Run::New(id) | Run::Repeat(id) => id,
        }
    }
}

/// Maps the `Idempotency-Key` header (if any) of `caller` to a run id, and admits a new run
/// under the caller's active-run limit (429 past it).
pub(super) async fn claim(
    api: Api<'_>,
    caller: &Caller,
    request: &Request,
    body: &[u8],
) -> Result<Run, ApiError> {
    let clock = api.runs.clock();
    let fresh = uuid::Uuid::new_v4().to_string();
    let run_id = match idempotency_key(request)? {
        None => fresh,
        Some(key) => match idempotency::claim(api.runs.store(), caller, key, body, &fresh)
            .await
            .map_err(|e| engine_error(clock, e))?
        {
            Claim::New(id) => id,
            Claim::Existing(id) => {
                // A repeat whose first request never got its run stored (refused by the
                // limit, or cut short) starts that run now, under the limit like a new one.
                match api.runs.workflow().for_caller(caller).status(&id).await {
                    Ok(_) => return Ok(Run::Repeat(id)),
                    Err(EngineError::NotFound { .. }) => id,
                    Err(e) => return Err(engine_error(clock, e)),
                }
            }
            Claim::Mismatch => {
                return Err(error_field(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Idempotency-Key",
                    "this key was already used with a different request body: send the \
                     original body to get its run, or use a new key for a new request",
                ))
            }
        },
    };
    admit(api, caller, &run_id).await?;
    Ok(Run::New(run_id))
}

/// The trimmed `Idempotency-Key` header, if any; 400 when it is malformed.
fn idempotency_key(request: &Request) -> Result<Option<&str>, ApiError> {
    let Some(header) = request.headers().get("idempotency-key") else {
        return Ok(None);
    };
    header
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| !k.is_empty() && k.len() <= MAX_IDEMPOTENCY_KEY)
        .map(Some)
        .ok_or_else(|| {
            error_field(
                StatusCode::BAD_REQUEST,
                "Idempotency-Key",
                "must be 1..=255 visible ASCII characters, e.g. a UUID; send one key per \
                 logical request",
            )
        })
}
