//! Reading a knowledge-base folder into documents: which files count, in which order, and how
//! they become passages and graph documents.
//!
//! Documents are told by extension (`Format`): Markdown and text (a rendered manual page read
//! as one, see [`man`]), HTML (reduced to its text first, see [`html`]), reStructuredText
//! ([`rst`]), Word ([`docx`]), PDF ([`pdf`], page by page) and CSV/TSV ([`csv`], row by row), at
//! any depth. Every file goes through one seam,
//! `read::read_file`, whatever calls ingest (a folder ingest, the embedding ingest, `eval`, a
//! `KB_PATH` of sources). Text is cleaned of badges, link targets, URLs and HTML ([`clean`])
//! and split at headings ([`passages`]); the graph files are `nodes.jsonl`, `edges.jsonl` and
//! `communities.jsonl` at any depth. Hidden entries, symlinked folders and folders written by
//! ingest are passed over; every other file that is not ingested is named with a typed reason
//! (`SkippedFile`, recorded in the manifest).
mod clean;
mod corpus;
#[cfg(feature = "formats")]
mod csv;
#[cfg(feature = "formats")]
mod docx;
#[cfg(all(test, feature = "formats"))]
mod fuzz_tests;
mod html;
mod jsonl;
mod man;
mod metadata;
pub(crate) mod passages;
#[cfg(feature = "formats")]
mod pdf;
mod read;
mod rst;
mod source_file;
mod walk;

pub(crate) use corpus::{build, load_dir};
pub(crate) use jsonl::graph_kind;
pub(crate) use metadata::is_sidecar;
pub(crate) use read::{enable_parsers, read_bytes, unread_skip, Outcome, ReadLimits};
pub(crate) use source_file::SourceFile;
#[cfg(test)]
pub(crate) use walk::read_dir;
pub(crate) use walk::{files_under, reading_format};
