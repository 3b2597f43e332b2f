//! Writing knowledge-base bundles: `bounded-rag ingest DIR --out PATH` writes one (its format is
//! `search::format`'s), search opens it, `bounded-rag kb publish` ships it to S3.
//!
//! Writing is all-or-nothing for readers: the bundle is built in a staging folder beside the
//! target (`.NAME.partial/`) and renamed into place only when complete, manifest last. The
//! staging folder also keeps the vectors embedded so far, so an interrupted ingest resumes
//! without embedding them again.
//!
//! | module | owns |
//! |---|---|
//! | `plan` | the sources read and checked, the target checked, the staging folder named |
//! | `embedding` | every passage embedded in batches, resumable from the staging folder |
//! | `index` | the BM25 index built (in memory, or into the bundle folder) |
//! | `hash` | the content hash: a knowledge base's version |
//! | `write` | the bundle written in staging, then moved into place |

pub(crate) mod embedding;
pub(crate) mod hash;
pub(crate) mod index;
pub(crate) mod plan;
pub(crate) mod write;
