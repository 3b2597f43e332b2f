//! What callers read when something goes wrong: every message says what happened and what to
//! do next, with times in UTC and waits in seconds (never epoch milliseconds). The HTTP API and
//! the CLI share these texts; only the "how to look at a run" part differs.

use crate::clock::utc_seconds;
use crate::engine::EngineError;
use crate::error::{Classify, ErrorClass};

/// Where the message is shown, which decides how a run is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Surface {
    /// The HTTP API: `GET /workflow/runs/{run_id}`.
    Http,
    /// The command line: `bounded-rag status RUN_ID`.
    Cli,
}

impl Surface {
    fn read_run(self, run_id: &str) -> String {
        match self {
            Surface::Http => format!("GET /workflow/runs/{run_id}"),
            Surface::Cli => format!("`bounded-rag status {run_id}`"),
        }
    }
}

/// Whole seconds from `now_ms` until `until_ms`, rounded up, at least 1.
pub(crate) fn wait_secs(until_ms: u64, now_ms: u64) -> u64 {
    until_ms.saturating_sub(now_ms).div_ceil(1_000).max(1)
}

/// "until 2026-11-24T06:40:12Z (in 37 s)".
pub(crate) fn until(until_ms: u64, now_ms: u64) -> String {
    format!(
        "{} (in {} s)",
        utc_seconds(until_ms),
        wait_secs(until_ms, now_ms)
    )
}

/// Another invocation holds the run's lease.
pub(crate) fn busy(run_id: &str, until_ms: u64, now_ms: u64, surface: Surface) -> String {
    format!(
        "run {run_id} is being advanced by another invocation until {}; retry after that, or \
         follow its progress with {}",
        until(until_ms, now_ms),
        surface.read_run(run_id)
    )
}

/// The caller-facing text of an engine error at `now_ms`.
///
/// Store failures are described without their internal detail on the HTTP surface (table
/// names, SDK messages): the handler logs that detail, the caller gets what to do.
pub(crate) fn engine_error(e: &EngineError, now_ms: u64, surface: Surface) -> String {
    match e {
        EngineError::NotFound { run_id } => match surface {
            Surface::Http => format!(
                "no run {run_id} for this caller: it never existed, was started by another \
                 caller, or expired (runs are kept for RUN_TTL_SECONDS). Check the id, or start \
                 a new run with POST /workflow/run"
            ),
            Surface::Cli => format!(
                "run {run_id} not found: check the id, and that STATE_DIR (or CHECKPOINT_TABLE) \
                 names the store it was run with; runs expire after RUN_TTL_SECONDS"
            ),
        },
        EngineError::Exists { run_id } => format!(
            "run {run_id} already exists; read it with {}",
            surface.read_run(run_id)
        ),
        EngineError::Busy { run_id, until_ms } => busy(run_id, *until_ms, now_ms, surface),
        EngineError::Lost { run_id } => format!(
            "run {run_id} was advanced by another invocation meanwhile, so this one stopped \
             without changing it; follow its progress with {}",
            surface.read_run(run_id)
        ),
        EngineError::Corrupt { run_id, message } => format!(
            "the stored checkpoint of run {run_id} cannot be read ({message}), so it cannot be \
             continued: start a new run, and report this to the operator"
        ),
        EngineError::Store(s) => match (surface, s.class()) {
            (Surface::Http, ErrorClass::Transient) => {
                "the checkpoint store is unavailable right now; retry in a few seconds".to_owned()
            }
            (Surface::Http, ErrorClass::Permanent) => {
                "the checkpoint store refused the request, and retrying will not help: report \
                 this to the operator (the function's log has the details)"
                    .to_owned()
            }
            (Surface::Cli, ErrorClass::Transient) => {
                format!("{s}; retry in a few seconds")
            }
            (Surface::Cli, ErrorClass::Permanent) => format!(
                "{s}; check STATE_DIR, or CHECKPOINT_TABLE and the AWS credentials and region"
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;

    const NOW: u64 = 1_795_480_794_074;

    #[test]
    fn lease_conflicts_name_the_utc_time_and_the_wait() {
        let e = EngineError::Busy {
            run_id: "r1".into(),
            until_ms: NOW + 36_100,
        };
        assert_eq!(
            engine_error(&e, NOW, Surface::Http),
            "run r1 is being advanced by another invocation until 2026-11-24T00:40:31Z (in 37 s); \
             retry after that, or follow its progress with GET /workflow/runs/r1"
        );
        assert!(engine_error(&e, NOW, Surface::Cli).ends_with("`bounded-rag status r1`"));
        assert_eq!(wait_secs(NOW, NOW), 1);
        assert_eq!(wait_secs(NOW - 5, NOW), 1);
    }

    #[test]
    fn store_details_stay_out_of_http_answers() {
        let e = EngineError::Store(StoreError::Permanent(
            "dynamodb GetItem on table secret-table".into(),
        ));
        let http = engine_error(&e, NOW, Surface::Http);
        assert!(
            !http.contains("secret-table") && http.contains("operator"),
            "{http}"
        );
        assert!(engine_error(&e, NOW, Surface::Cli).contains("secret-table"));
        let e = EngineError::Store(StoreError::Transient("timeout".into()));
        assert!(engine_error(&e, NOW, Surface::Http).contains("retry in a few seconds"));
    }
}
