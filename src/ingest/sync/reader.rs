//! Reading one fetched file so that no file can stop a sync: the format's reader (the same
//! seam ingest reads through, `sources::read_bytes`) runs on a thread of its own under
//! `catch_unwind`, with a time limit and a bound on the text it may make. A panic, a hang or a
//! runaway becomes that file's typed [`FailReason`]; a hung reader is left behind on its
//! thread (it ends with the process).
//!
//! Panics unwind in debug and test builds and with the opt-in `release-sync` profile
//! (`SYNC_PROFILE=release-sync scripts/build-lambda.sh`). The release profile, which `sam build`
//! builds the deployed function with, aborts on panic (small bootstraps: unwinding costs the
//! sync bootstrap 1.8 MB); there a reader's panic ends the invocation instead, its message comes
//! back, and after `SYNC_MAX_ATTEMPTS` deliveries the file is marked failed
//! ([`FailReason::Abandoned`]): it still never blocks the others.
use super::state::{DocStatus, FailReason};
use crate::ingest::sources::{read_bytes, Outcome, ReadLimits};
use crate::knowledge::Format;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

/// How much text (bytes) a reader may make of one file, as a multiple of `MAX_DOCUMENT_BYTES`.
const RUNAWAY_FACTOR: u64 = 4;

/// Reads `bytes` of `rel` (fetched from `path`) as `format`, bounded.
pub(crate) fn read_bounded(
    path: PathBuf,
    rel: String,
    format: Option<Format>,
    bytes: Vec<u8>,
    limits: ReadLimits,
) -> DocStatus {
    let limit = limits.max_document_bytes.saturating_mul(RUNAWAY_FACTOR);
    let read = move || read_bytes(path, rel, format, bytes, &limits);
    match guard(read, limits.parse_timeout) {
        Err(reason) => DocStatus::Failed { reason },
        Ok(Err(e)) => DocStatus::Failed {
            reason: FailReason::Unreadable {
                detail: e.to_string(),
            },
        },
        Ok(Ok(Outcome::Skipped(skip))) => DocStatus::Skipped {
            reason: skip.reason,
        },
        Ok(Ok(Outcome::Read(file))) => {
            let made = file.text.len() + file.pages.iter().map(String::len).sum::<usize>();
            if made as u64 > limit {
                return DocStatus::Failed {
                    reason: FailReason::Runaway {
                        bytes: made as u64,
                        limit,
                    },
                };
            }
            DocStatus::Read {
                format: file.format,
                text: file.text,
                pages: file.pages,
            }
        }
    }
}

/// Runs `read` on its own thread: a panic or a run past `timeout` is a [`FailReason`].
pub(crate) fn guard<T: Send + 'static>(
    read: impl FnOnce() -> T + Send + 'static,
    timeout: Duration,
) -> Result<T, FailReason> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("sync-read".into())
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read));
            let _ = tx.send(result);
        })
        .map_err(|e| FailReason::Unreadable {
            detail: format!("no thread to read on: {e}"),
        })?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(panic)) => Err(FailReason::Panicked {
            message: panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default(),
        }),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(FailReason::TimedOut {
            seconds: timeout.as_secs(),
        }),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(FailReason::Panicked {
            message: String::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: u64) -> ReadLimits {
        ReadLimits {
            max_document_bytes: max,
            parse_timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn a_panic_or_a_hang_is_a_typed_failure() {
        assert_eq!(
            guard::<()>(|| panic!("hostile"), Duration::from_secs(5)),
            Err(FailReason::Panicked {
                message: "hostile".into()
            })
        );
        let (_hold, rx) = mpsc::channel::<()>();
        let hangs = guard(move || rx.recv().is_ok(), Duration::from_millis(20));
        assert_eq!(hangs, Err(FailReason::TimedOut { seconds: 0 }));
        assert_eq!(guard(|| 7, Duration::from_secs(5)), Ok(7));
    }

    #[test]
    fn text_over_the_bound_is_a_runaway_and_bad_utf8_unreadable() {
        let read = |bytes: &[u8], max| {
            read_bounded(
                PathBuf::from("x.md"),
                "x.md".into(),
                Some(Format::Markdown),
                bytes.to_vec(),
                limits(max),
            )
        };
        assert_eq!(
            read(b"# T\n\nbody", 100),
            DocStatus::Read {
                format: Some(Format::Markdown),
                text: "# T\n\nbody".into(),
                pages: vec![]
            }
        );
        assert_eq!(
            read(b"0123456789", 2),
            DocStatus::Failed {
                reason: FailReason::Runaway {
                    bytes: 10,
                    limit: 8
                }
            }
        );
        assert!(matches!(
            read(&[0xff, 0xfe, b'a'], 100),
            DocStatus::Failed {
                reason: FailReason::Unreadable { .. }
            }
        ));
        assert_eq!(
            read(b"  \n", 100),
            DocStatus::Skipped {
                reason: crate::knowledge::SkipReason::Empty
            }
        );
    }
}
