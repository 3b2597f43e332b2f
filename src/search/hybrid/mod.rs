//! Hybrid ranking: the passages' vectors ([`Vectors`], int8-quantized, scanned flat) and
//! reciprocal rank fusion of the vector ranking with the BM25 ranking ([`fuse`]).

mod fusion;
mod vectors;

pub(crate) use fusion::{
    bm25_clear_lead, fuse, keep_lead, Fused, BM25_DEPTH, BM25_LEAD, CLEAR_TOP, K,
};
pub(crate) use vectors::Vectors;
