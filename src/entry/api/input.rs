//! Reading a run request off an HTTP request: its body (at most `MAX_BODY_BYTES`), the run
//! request the body holds, and the `Idempotency-Key` header. Only reading happens here; what an
//! unreadable request or a repeated key gets is the run life cycle's to decide (a request is
//! counted in its caller's rate window even when it turns out unreadable).

use crate::entry::App;
use crate::rag::{RunRequest, ValidationError};
use crate::runs::{Invalid, RunInput};
use lambda_http::Request;

/// Longest accepted `Idempotency-Key`.
const MAX_IDEMPOTENCY_KEY: usize = 255;

/// The run request `request` carries, as read.
pub(crate) fn read<'r>(app: &App, request: &'r Request) -> RunInput<'r> {
    let body = request.body().as_ref();
    RunInput {
        request: run_request(body, app.max_body_bytes()),
        key: idempotency_key(request),
        body,
    }
}

/// What `parse` reads off `body`, refused past `MAX_BODY_BYTES` (a fork's, a resume's).
pub(super) fn body_of<T>(
    app: &App,
    body: &[u8],
    parse: impl FnOnce(&[u8]) -> Result<T, ValidationError>,
) -> Result<T, Invalid> {
    if body.len() > app.max_body_bytes() {
        return Err(Invalid::TooLarge {
            bytes: body.len(),
            limit: app.max_body_bytes(),
        });
    }
    parse(body).map_err(Invalid::Field)
}

/// The run request of `body` (refused past `max` bytes, or naming the field at fault).
fn run_request(body: &[u8], max: usize) -> Result<RunRequest, Invalid> {
    if body.len() > max {
        return Err(Invalid::TooLarge {
            bytes: body.len(),
            limit: max,
        });
    }
    Ok(RunRequest::from_json(body)?)
}

/// The trimmed `Idempotency-Key` header, if any.
pub(super) fn idempotency_key(request: &Request) -> Result<Option<&str>, Invalid> {
    let Some(header) = request.headers().get("idempotency-key") else {
        return Ok(None);
    };
    header
        .to_str()
        .ok()
        .map(str::trim)
        // `to_str` also lets a tab through; the contract allows printable ASCII only (spaces
        // inside the key included).
        .filter(|k| {
            !k.is_empty()
                && k.len() <= MAX_IDEMPOTENCY_KEY
                && k.bytes().all(|b| (b' '..=b'~').contains(&b))
        })
        .map(Some)
        .ok_or_else(|| {
            Invalid::Field(ValidationError::new(
                "Idempotency-Key",
                "must be 1..=255 printable ASCII characters (no tab), e.g. a UUID; send one \
                 key per logical request",
            ))
        })
}
