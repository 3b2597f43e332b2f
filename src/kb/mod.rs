//! Knowledge stores: the [`Retriever`] seam a run searches through, and every store behind it
//! with both its sides (reading, and the writing ingest and sync do through it) in one place.
//! Ranking itself (BM25, vectors and fusion, filters, graph hops, the per-source cap) is
//! [`crate::search`]'s; reading source documents is [`crate::ingest`]'s. The arrows go
//! ingest → kb → search.
//!
//! | module | owns |
//! |---|---|
//! | `retriever` | the [`Retriever`] trait: what a run asks of any store |
//! | [`bundle`] | a bundle in a folder or on S3: format, open, in memory, index build, publish, live refresh |
//! | `postgres` | PostgreSQL with pgvector (`postgres://`, `rds-data://`): read, write, schema, bench |
//! | `bedrock` | an Amazon Bedrock knowledge base (`bedrock-kb://ID`): `Retrieve`, our filters as Bedrock's |
//! | `open` | the store named by the settings (`KB_URI`, else `KB_PATH`, else the sample), opened at start-up |
//! | `mirror` | the [`Mirror`] trait: a store ingest and sync keep as a mirror of a source, document by document |
//! | `writer` | [`open_writer`]: the place a location names (a bundle folder, bundles on S3, PostgreSQL), opened to write |

mod bedrock;
pub mod bundle;
mod mirror;
mod open;
pub(crate) mod postgres;
mod retriever;
mod writer;

pub use bedrock::BedrockKnowledgeBase;
pub use bundle::format::{Manifest, Published, MANIFEST};
pub use bundle::s3::{client as s3_client, BundleStore};
pub(crate) use bundle::InMemory;
pub use bundle::{check_compatible, KnowledgeBase, LiveKnowledge, LoadOptions, RefreshOutcome};
pub use bundle::{format, s3};
pub(crate) use bundle::{holds_bundle, remove_dir_if_exists, BundleFolder, BundleVectors};
pub(crate) use mirror::Mirror;
pub(crate) use open::{open_store, serve_local, OpenError};
pub(crate) use postgres::enable_direct;
pub use postgres::PgKnowledge;
pub use retriever::{Explained, Retriever};
pub(crate) use writer::{open_writer, WriteLocation, Writer, WriterError};
