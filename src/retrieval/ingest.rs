//! `bounded-rag ingest DIR`: builds a knowledge base from a folder of documents.
use super::RetrievalError;
use std::path::Path;

/// Ingests `source` into a knowledge base at `target`.
pub fn ingest_dir(_source: &Path, _target: &Path) -> Result<(), RetrievalError> {
    Err(RetrievalError::Unimplemented("ingest"))
}
