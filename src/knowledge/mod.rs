//! The vocabulary of knowledge, shared by every room that reads or writes it (search, kb,
//! ingest, llm, rag): what a passage is, which format a source was read from, why a file was
//! skipped, and which embedding model made the vectors. A leaf: it depends on no other room.
//!
//! | module | owns |
//! |---|---|
//! | `corpus` | the documents of a knowledge base ready to index or write ([`Corpus`]) |
//! | `document` | a passage as searched, cited and checkpointed ([`Document`], [`DocKind`]) |
//! | `source_format` | a source document's format and where it was read from ([`Format`], [`DocumentInfo`]) |
//! | `skipped_file` | a file ingest left out, and why ([`SkippedFile`], [`SkipReason`]) |
//! | `embedding_info` | the embedding model of a knowledge base's vectors ([`EmbeddingInfo`]) |
//! | `metadata` | one source's metadata ([`Meta`]) and a corpus's, by position ([`MetaTable`]) |
//! | `stats` | what a knowledge base holds, counted ([`KbStats`]) |
//! | `progress` | where a long write reports its stages ([`Progress`]) |
//! | `digest` | content hashes: SHA-256 in lowercase hex |
//! | `names` | what a source document is named: a folder without its version, names compared by letters and digits |

mod corpus;
mod digest;
mod document;
mod embedding_info;
mod metadata;
mod names;
mod progress;
mod skipped_file;
mod source_format;
mod stats;

pub(crate) use corpus::{Corpus, Group};
pub(crate) use digest::{hex, hex_digest, sha256_hex};
pub(crate) use document::{split_title, TITLE_SEPARATOR};
pub use document::{DocKind, Document};
pub use embedding_info::EmbeddingInfo;
pub(crate) use metadata::{Meta, MetaTable};
pub(crate) use names::{squashed, unversioned};
pub(crate) use progress::NoProgress;
pub use progress::Progress;
pub use skipped_file::{SkipReason, SkippedFile};
pub use source_format::{DocumentInfo, Format};
pub use stats::KbStats;
