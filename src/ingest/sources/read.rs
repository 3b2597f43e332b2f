//! The one seam every ingest path reads a file through: the size limit checked before a byte
//! is read, then the format's reader, with the third-party parsers (PDF, Word) run on a
//! thread of their own so a malformed file cannot panic the ingest or hang it.
//!
//! The PDF, Word, CSV/TSV and HTML readers are reached through [`Parsers`] and [`HTML`],
//! installed by [`enable_parsers`]: ingest (the sync function's included) and the CLI call it,
//! the API, stream and worker functions never do, so the parsers are not linked into their
//! bootstraps (they read bundles or a store; a `KB_PATH` folder of sources there reads
//! Markdown, text and reStructuredText, and names the other files as skipped with
//! [`SkipReason::NoReader`]).
//!
//! A panic is caught only where panics unwind (debug and test builds; `cargo run`): release
//! builds abort on panic to keep the Lambda bootstraps small, and the parsers are chosen and
//! bounded so none is expected. A parser that runs past [`PARSE_TIMEOUT`] is left behind
//! (its thread ends with the process) and its file skipped.
use super::source_file::SourceFile;
use super::{html, man, rst};
use crate::config::DEFAULT_MAX_DOCUMENT_BYTES;
use crate::ingest::IngestError;
use crate::knowledge::{Format, SkipReason, SkippedFile};
use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// The readers that need third-party parsers.
#[derive(Clone, Copy)]
struct Parsers {
    pdf: fn(&[u8]) -> Result<Vec<String>, SkipReason>,
    docx: fn(&[u8]) -> Result<String, SkipReason>,
    table: fn(&str, u8) -> Result<Vec<String>, SkipReason>,
}

static PARSERS: OnceLock<Parsers> = OnceLock::new();

/// The HTML reader (html2text and its HTML parser), installed with the others whatever the
/// features.
static HTML: OnceLock<HtmlReader> = OnceLock::new();

/// Renders an HTML file's bytes to text ([`html::to_text`]).
type HtmlReader = fn(&std::path::Path, &[u8]) -> Result<String, IngestError>;

/// Makes HTML readable in this process, and PDF, Word and CSV/TSV with the `formats` feature.
/// Called by ingest and the CLI, never by the API, stream and worker functions.
pub(crate) fn enable_parsers() {
    HTML.get_or_init(|| html::to_text);
    #[cfg(feature = "formats")]
    PARSERS.get_or_init(|| Parsers {
        pdf: super::pdf::pages,
        docx: super::docx::to_text,
        table: super::csv::rows,
    });
}

/// How long one file's parser may run.
pub(crate) const PARSE_TIMEOUT: Duration = Duration::from_secs(120);

/// Limits on reading one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadLimits {
    /// Larger files are skipped unread.
    pub(crate) max_document_bytes: u64,
    /// How long a binary format's parser may run.
    pub(crate) parse_timeout: Duration,
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            max_document_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
            parse_timeout: PARSE_TIMEOUT,
        }
    }
}

impl ReadLimits {
    /// The defaults, with `MAX_DOCUMENT_BYTES` (a positive number of bytes) when set.
    pub(crate) fn from_env() -> Result<Self, IngestError> {
        let mut limits = Self::default();
        if let Ok(value) = std::env::var("MAX_DOCUMENT_BYTES") {
            limits.max_document_bytes = value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| IngestError::Invalid {
                    path: PathBuf::from("MAX_DOCUMENT_BYTES"),
                    message: format!("must be a positive number of bytes, got {value:?}"),
                })?;
        }
        Ok(limits)
    }
}

/// A file read, or why not.
pub(crate) enum Outcome {
    Read(SourceFile),
    Skipped(SkippedFile),
}

/// Reads `path` as `format` (`None`: a graph file or metadata sidecar, read as text). An I/O
/// error, a text file that is not UTF-8 and a malformed HTML file fail the ingest, as before;
/// what a document reader rejects is a skip.
pub(crate) fn read_file(
    path: PathBuf,
    rel: String,
    format: Option<Format>,
    limits: &ReadLimits,
) -> Result<Outcome, IngestError> {
    let skip = |rel: String, reason| Ok(Outcome::Skipped(SkippedFile { path: rel, reason }));
    if format.is_some_and(no_reader) {
        return skip(rel, SkipReason::NoReader);
    }
    let size = fs::metadata(&path)
        .map_err(|e| IngestError::io(&path, e))?
        .len();
    if let Some(reason) = unread_skip(format, size, limits) {
        return skip(rel, reason);
    }
    let bytes = fs::read(&path).map_err(|e| IngestError::io(&path, e))?;
    read_bytes(path, rel, format, bytes, limits)
}

/// Whether this process has no reader for `format` (see [`enable_parsers`]).
fn no_reader(format: Format) -> bool {
    (format.needs_parser() && PARSERS.get().is_none())
        || (format == Format::Html && HTML.get().is_none())
}

/// Why a file of `format` and `size` is skipped before a byte of it is read: no reader for
/// its format, or over `MAX_DOCUMENT_BYTES`.
pub(crate) fn unread_skip(
    format: Option<Format>,
    size: u64,
    limits: &ReadLimits,
) -> Option<SkipReason> {
    if format.is_some_and(no_reader) {
        return Some(SkipReason::NoReader);
    }
    let limit = limits.max_document_bytes;
    (format.is_some() && size > limit).then_some(SkipReason::TooLarge { bytes: size, limit })
}

/// What the readers make of `bytes` (a file's whole content, its size already checked): the
/// part of [`read_file`] after the read, shared with a sync that fetched the bytes from S3.
pub(crate) fn read_bytes(
    path: PathBuf,
    rel: String,
    format: Option<Format>,
    bytes: Vec<u8>,
    limits: &ReadLimits,
) -> Result<Outcome, IngestError> {
    let skip = |rel: String, reason| Ok(Outcome::Skipped(SkippedFile { path: rel, reason }));
    let parsers = PARSERS.get().copied();
    let Some(format) = format else {
        let text = utf8(&path, bytes)?;
        return Ok(Outcome::Read(SourceFile::text(path, &rel, text)));
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return skip(rel, SkipReason::Empty);
    }
    let mut file = SourceFile {
        format: Some(format),
        path,
        rel,
        text: String::new(),
        pages: Vec::new(),
    };
    let read = if let (true, Some(parsers)) = (format.is_binary(), parsers) {
        binary(parsers, format, bytes, limits)
    } else if format == Format::Html {
        match HTML.get() {
            Some(to_text) => Ok(Body::Text(to_text(&file.path, &bytes)?)),
            None => Err(SkipReason::NoReader),
        }
    } else {
        let text = utf8(&file.path, bytes)?;
        match format {
            Format::Markdown => Ok(text),
            Format::Text => Ok(man::to_markdown(&text).unwrap_or(text)),
            Format::Rst => Ok(rst::to_markdown(&text)),
            Format::Csv | Format::Tsv => {
                let delimiter = if format == Format::Csv { b',' } else { b'\t' };
                let rows =
                    parsers.map_or(Err(SkipReason::NoReader), |p| (p.table)(&text, delimiter));
                rows.map(|rows| rows.join("\n"))
            }
            Format::Html | Format::Pdf | Format::Docx => unreachable!("read above"),
        }
        .map(Body::Text)
    };
    match read {
        Ok(Body::Text(text)) => file.text = text,
        Ok(Body::Pages(pages)) => file.pages = pages,
        Err(reason) => return skip(file.rel, reason),
    }
    Ok(Outcome::Read(file))
}

/// What a reader made of a file.
enum Body {
    Text(String),
    Pages(Vec<String>),
}

fn utf8(path: &std::path::Path, bytes: Vec<u8>) -> Result<String, IngestError> {
    String::from_utf8(bytes).map_err(|_| IngestError::Invalid {
        path: path.to_path_buf(),
        message: "not valid UTF-8 text".into(),
    })
}

/// A PDF's pages or a Word document's text, parsed on a thread of its own.
fn binary(
    parsers: Parsers,
    format: Format,
    bytes: Vec<u8>,
    limits: &ReadLimits,
) -> Result<Body, SkipReason> {
    let parse = move || match format {
        Format::Pdf => (parsers.pdf)(&bytes).map(Body::Pages),
        _ => (parsers.docx)(&bytes).map(Body::Text),
    };
    guarded(parse, limits.parse_timeout)
}

/// Runs `parse` on its own thread: a panic is a corrupt file, a run past `timeout` a skip.
pub(crate) fn guarded<T: Send + 'static>(
    parse: impl FnOnce() -> Result<T, SkipReason> + Send + 'static,
    timeout: Duration,
) -> Result<T, SkipReason> {
    use std::sync::mpsc;
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("ingest-parse".into())
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse));
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return Err(SkipReason::Corrupt {
            detail: format!("no thread to parse on: {e}"),
        });
    }
    match rx.recv_timeout(timeout) {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(SkipReason::Corrupt {
                detail: format!("the parser failed: {message}"),
            })
        }
        Err(mpsc::RecvTimeoutError::Timeout) => Err(SkipReason::TimedOut {
            seconds: timeout.as_secs(),
        }),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(SkipReason::Corrupt {
            detail: "the parser failed".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_or_hanging_parser_is_a_skip() {
        let panics = guarded::<()>(|| panic!("boom"), Duration::from_secs(5));
        assert_eq!(
            panics,
            Err(SkipReason::Corrupt {
                detail: "the parser failed: boom".into()
            })
        );
        let (_hold, rx) = std::sync::mpsc::channel::<()>();
        let hangs = guarded::<()>(
            move || {
                let _ = rx.recv();
                Ok(())
            },
            Duration::from_millis(10),
        );
        assert_eq!(hangs, Err(SkipReason::TimedOut { seconds: 0 }));
        assert_eq!(guarded(|| Ok(7), Duration::from_secs(5)), Ok(7));
    }
}
