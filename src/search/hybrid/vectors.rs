//! The passages' vectors: unit-normalized, then quantized to one signed byte per dimension
//! with one `f32` scale per vector (symmetric scalar quantization), and ranked by a flat scan.
//!
//! Why flat and int8: at 100,000 passages of 384 dimensions the whole matrix is 38 MB, a scan
//! is one pass of integer multiply-adds (SimSIMD's int8 dot product: AVX2, AVX-512 or NEON,
//! picked at run time, whatever the crate's own `opt-level`), it needs no index build at
//! ingest, no graph to load at cold start, and it is exact up to quantization (BENCHMARKS.md
//! has the figures). The order of the rows is the order of the passages in the index.
//!
//! File layout (`vectors.bin`, little-endian): `rows * dims` bytes of `i8`, then `rows` `f32`
//! scales.
//!
//! The query is compared after [`CommonDirection::adjust`] (the corpus's common direction,
//! computed once when the vectors are read: one pass, no file change).
use super::hubness::CommonDirection;
use super::unit::normalized;
use crate::search::allowed::Allowed;
use crate::search::bm25::Hit;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use tantivy::directory::OwnedBytes;

/// Vectors of the passages, ready to scan.
pub(crate) struct Vectors {
    dims: usize,
    data: OwnedBytes,
    scales: Vec<f32>,
    common: CommonDirection,
}

/// `v` normalized and quantized: the bytes and the scale that maps them back.
pub(crate) fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let unit = normalized(v);
    let max = unit.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; v.len()], 0.0);
    }
    let scale = max / 127.0;
    let bytes = unit
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (bytes, scale)
}

/// Integer dot product of two equally long vectors (exact: integers below 2^53).
fn dot(a: &[i8], b: &[i8]) -> f32 {
    <i8 as simsimd::SpatialSimilarity>::dot(a, b).unwrap_or(0.0) as f32
}

/// A scored row for the top-k heap (smallest score on top, ties: larger row on top).
#[derive(PartialEq)]
struct Scored(f32, u32);

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .total_cmp(&self.0)
            .then_with(|| self.1.cmp(&other.1))
    }
}

impl Vectors {
    /// Encodes vectors (all of `dims` values) as a `vectors.bin` file.
    pub(crate) fn encode(vectors: &[Vec<f32>], dims: usize) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(vectors.len() * (dims + 4));
        let mut scales = Vec::with_capacity(vectors.len());
        for v in vectors {
            let (q, scale) = quantize(v);
            bytes.extend(q.iter().map(|b| *b as u8));
            scales.push(scale);
        }
        for scale in scales {
            bytes.extend_from_slice(&scale.to_le_bytes());
        }
        bytes
    }

    /// Reads a `vectors.bin` of `rows` vectors of `dims` values; `None` when its size is not
    /// exactly that.
    pub(crate) fn decode(bytes: OwnedBytes, dims: usize, rows: usize) -> Option<Self> {
        let matrix = rows.checked_mul(dims)?;
        if dims == 0 || bytes.len() != matrix.checked_add(rows.checked_mul(4)?)? {
            return None;
        }
        let scales: Vec<f32> = bytes.as_slice()[matrix..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let data = bytes.slice(0..matrix);
        let common = CommonDirection::of_quantized(bytemuck_i8(data.as_slice()), &scales, dims);
        Some(Self {
            dims,
            data,
            scales,
            common,
        })
    }

    /// Dimensions of every vector.
    #[cfg(test)]
    fn dims(&self) -> usize {
        self.dims
    }

    /// Number of vectors.
    #[cfg(test)]
    fn rows(&self) -> usize {
        self.scales.len()
    }

    /// The `k` rows most similar to `query` (cosine similarity to the query less part of its
    /// common component, see [`CommonDirection`]), best first, among the `allowed` rows when
    /// given (rows are passage positions).
    pub(crate) fn top(&self, query: &[f32], k: usize, allowed: Option<&Allowed>) -> Vec<Hit> {
        if query.len() != self.dims || k == 0 {
            return Vec::new();
        }
        let (q, q_scale) = quantize(&self.common.adjust(query));
        let data: &[i8] = bytemuck_i8(self.data.as_slice());
        let mut heap: BinaryHeap<Scored> = BinaryHeap::with_capacity(k + 1);
        for (row, (v, scale)) in data.chunks_exact(self.dims).zip(&self.scales).enumerate() {
            if !Allowed::permits(allowed, row as u32) {
                continue;
            }
            let score = dot(&q, v) * scale * q_scale;
            if heap.len() < k {
                heap.push(Scored(score, row as u32));
            } else if heap.peek().is_some_and(|worst| score > worst.0) {
                heap.pop();
                heap.push(Scored(score, row as u32));
            }
        }
        let mut hits: Vec<Hit> = heap.into_iter().map(|Scored(s, r)| (r, s)).collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits
    }
}

/// Bytes seen as signed bytes (same size and alignment).
fn bytemuck_i8(bytes: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size, alignment and validity (every bit pattern).
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantized_dot_products_track_cosine_similarity() {
        let a = [0.3f32, -0.2, 0.9, 0.1];
        let b = [0.25f32, -0.1, 0.8, 0.3];
        let cos = {
            let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            a.iter().zip(&b).map(|(x, y)| x * y).sum::<f32>() / (n(&a) * n(&b))
        };
        let (qa, sa) = quantize(&a);
        let (qb, sb) = quantize(&b);
        let approx = dot(&qa, &qb) * sa * sb;
        assert!((approx - cos).abs() < 0.01, "{approx} vs {cos}");
        // The SIMD kernel is exact, whatever the length (19: not a multiple of any lane width).
        let a: Vec<i8> = (0..19).map(|i| (i * 37 % 255 - 127) as i8).collect();
        let b: Vec<i8> = (0..19).map(|i| (i * 91 % 255 - 127) as i8).collect();
        let exact: i32 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum();
        assert_eq!(dot(&a, &b), exact as f32);
        assert_eq!(quantize(&[0.0, 0.0]), (vec![0, 0], 0.0));
    }

    #[test]
    fn encoded_vectors_round_trip_and_rank_by_similarity() {
        let rows: Vec<Vec<f32>> = (0..40)
            .map(|i| {
                // A full circle: no common direction but the constant tail's.
                let angle = i as f32 * std::f32::consts::TAU / 40.0;
                let mut v = vec![angle.cos(), angle.sin()];
                v.extend(std::iter::repeat_n(0.01, 17)); // 19 dims: exercises the tail
                v
            })
            .collect();
        let bytes = Vectors::encode(&rows, 19);
        assert_eq!(bytes.len(), 40 * 19 + 40 * 4);
        let vectors = Vectors::decode(OwnedBytes::new(bytes.clone()), 19, 40).unwrap();
        assert_eq!((vectors.dims(), vectors.rows()), (19, 40));
        let hits = vectors.top(&rows[10], 3, None);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>()[0], 10);
        assert!(hits[1].0 == 9 || hits[1].0 == 11, "{hits:?}");
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
        assert!(vectors.top(&[1.0], 3, None).is_empty(), "wrong dimensions");
        assert!(Vectors::decode(OwnedBytes::new(bytes), 19, 41).is_none());
    }

    #[test]
    fn a_generic_passage_near_the_corpus_centre_gives_way_to_the_specific_one() {
        // Row 0 points where the whole corpus points (a hub); row 1 is the specific passage.
        let rows = vec![
            vec![1.0, 0.0, 0.0],
            vec![0.6, 0.8, 0.0],
            vec![0.95, 0.0, 0.312],
            vec![0.95, 0.0, -0.312],
        ];
        let query = [0.9, 0.436, 0.0];
        let cos = |v: &[f32]| v.iter().zip(&query).map(|(a, b)| a * b).sum::<f32>();
        assert!(
            cos(&rows[0]) > cos(&rows[1]),
            "by plain cosine the hub leads"
        );
        let vectors = Vectors::decode(OwnedBytes::new(Vectors::encode(&rows, 3)), 3, 4).unwrap();
        let ranked: Vec<u32> = vectors.top(&query, 2, None).iter().map(|h| h.0).collect();
        assert_eq!(ranked, vec![1, 0]);
    }
}
