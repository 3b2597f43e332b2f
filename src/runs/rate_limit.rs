//! The per-caller request rate (`MAX_REQUESTS_PER_CALLER_PER_MINUTE`): each run request (a
//! synchronous, asynchronous or streamed run) is counted in its caller's one-minute window
//! before anything else is done for it; past the limit it is refused until the window ends.
//! Reads (a run's status, steps, the list) are not counted, so polling a run never locks its
//! caller out.

use super::refusal::Refusal;
use crate::engine::EngineError;
use crate::rag::Caller;
use crate::store::{CheckpointStore, Window};

/// Counts a run request of `caller` at `now_ms` under `limit` per minute, or refuses it when
/// the caller's window is full.
pub(super) async fn count(
    store: &dyn CheckpointStore,
    caller: &Caller,
    limit: u32,
    now_ms: u64,
) -> Result<(), Refusal> {
    let window = Window::at(now_ms);
    let admitted = store
        .count_request(&caller.digest(), window, limit)
        .await
        .map_err(EngineError::Store)?;
    if admitted {
        return Ok(());
    }
    tracing::info!(caller = caller.kind(), limit, "request rate limit reached");
    Err(Refusal::RateLimited {
        limit,
        retry_at_ms: window.ends_at_ms(),
    })
}
