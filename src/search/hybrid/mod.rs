//! Hybrid ranking: the passages' vectors ([`Vectors`], int8-quantized, scanned flat, unit
//! length by `unit`) and reciprocal rank fusion of the vector ranking with the BM25 ranking
//! ([`fuse`], with each ranking's lead kept: `leads`); the vector ranking discounts the
//! corpus's common direction (`hubness`), and its first documents are the question's nearest
//! by meaning (`near`).

mod fusion;
mod hubness;
mod leads;
mod near;
#[cfg(test)]
pub(crate) mod properties;
mod unit;
mod vectors;

pub(crate) use fusion::{clear_lead, fuse, Fusion};
pub(crate) use hubness::CommonDirection;
pub(crate) use near::{near_sources, rank_of};
pub(crate) use vectors::Vectors;
