//! Hubness correction for the vector ranking: the query loses part of its component along the
//! corpus's common direction (the mean of the passages' unit vectors) before it is compared.
//!
//! Why: small embedding models place every passage of a corpus in a narrow cone (the mean of
//! multilingual-e5-small's unit vectors has length 0.92 on each evaluation corpus, all-mpnet's
//! about 0.5). Inside it, a few long, generic passages ("hubs") sit near every question and
//! crowd the specific passage out of the top ranks; on the man-page set the same pages came
//! back for unrelated questions. Ranking by `q·p − share·(q·c)(c·p)` (`c` the common direction)
//! discounts exactly that shared part, in proportion to how much of it the query carries, and
//! leaves the rest of the similarity as it was. It is the query-side form of mean centring, so
//! it needs no second pass over the corpus per query, no index change and nothing at ingest.
//! Measured (BENCHMARKS.md, "Hubness correction"): top-5 pages of the vector ranking on the
//! man-page set 0.575 → 0.700 with e5-small, every other set and model within one question.

use super::unit::normalized;

/// Share of the query's component along the common direction that is removed.
pub(crate) const COMMON_SHARE: f32 = 0.25;

/// Most rows the common direction is averaged over: larger corpora are sampled at an even
/// stride (the mean of 65,536 unit vectors is within about 0.004 of the whole's), so reading a
/// million passages' vectors costs about what 65,536 cost, 63 to 75 ms at the release profile's
/// `opt-level = "z"` (all rows: 99 ms at 100,000, 950 ms at 1,000,000).
const MAX_ROWS: usize = 65_536;

/// The corpus's common direction (unit length; all zeros for an empty corpus).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommonDirection(Vec<f32>);

impl CommonDirection {
    /// The normalized mean of the quantized unit vectors (`dims` bytes each, row `i` scaled
    /// by `scales[i]`), over at most [`MAX_ROWS`] rows at an even stride.
    pub(crate) fn of_quantized(data: &[i8], scales: &[f32], dims: usize) -> Self {
        let mut sum = vec![0f64; dims];
        let mut block = vec![0f32; dims];
        let stride = scales.len().div_ceil(MAX_ROWS).max(1);
        let rows = data.chunks_exact(dims).zip(scales).step_by(stride);
        for (i, (row, scale)) in rows.enumerate() {
            for (b, x) in block.iter_mut().zip(row) {
                *b += f32::from(*x) * scale;
            }
            // f32 sums over short blocks, f64 across them: exact enough at millions of rows.
            if i % 1024 == 1023 {
                flush(&mut sum, &mut block);
            }
        }
        flush(&mut sum, &mut block);
        let norm = sum.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 || !norm.is_finite() {
            return Self(vec![0.0; dims]);
        }
        Self(sum.iter().map(|x| (x / norm) as f32).collect())
    }

    /// The direction of `mean` (a store's mean of unit vectors); all zeros for a zero mean.
    pub(crate) fn of_mean(mean: &[f32]) -> Self {
        Self(normalized(mean))
    }

    /// `query` with `COMMON_SHARE` of its component along the common direction removed
    /// (unchanged when the dimensions differ).
    pub(crate) fn adjust(&self, query: &[f32]) -> Vec<f32> {
        if query.len() != self.0.len() {
            return query.to_vec();
        }
        let unit = normalized(query);
        let along: f32 = unit.iter().zip(&self.0).map(|(q, c)| q * c).sum();
        unit.iter()
            .zip(&self.0)
            .map(|(q, c)| q - COMMON_SHARE * along * c)
            .collect()
    }
}

fn flush(sum: &mut [f64], block: &mut [f32]) {
    for (s, b) in sum.iter_mut().zip(block.iter_mut()) {
        *s += f64::from(*b);
        *b = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_direction_is_the_normalized_mean() {
        // Two unit rows at ±45° around the first axis, quantized exactly (scale 1/127).
        let data: Vec<i8> = vec![90, 90, 90, -90];
        let scales = [1.0 / 127.0; 2];
        let c = CommonDirection::of_quantized(&data, &scales, 2);
        assert!((c.0[0] - 1.0).abs() < 1e-6 && c.0[1].abs() < 1e-6, "{c:?}");
        assert_eq!(
            CommonDirection::of_quantized(&[], &[], 3),
            CommonDirection(vec![0.0; 3])
        );
    }

    #[test]
    fn a_large_corpus_is_sampled_evenly() {
        // Three times MAX_ROWS unit rows spread evenly over the first quadrant: the sampled
        // mean still points at 45°.
        let rows = 3 * MAX_ROWS;
        let mut data = Vec::with_capacity(rows * 2);
        for i in 0..rows {
            let angle = (i as f64 * 0.618_034).fract() * std::f64::consts::FRAC_PI_2;
            data.push((angle.cos() * 127.0).round() as i8);
            data.push((angle.sin() * 127.0).round() as i8);
        }
        let c = CommonDirection::of_quantized(&data, &vec![1.0 / 127.0; rows], 2);
        let half = std::f32::consts::FRAC_1_SQRT_2;
        assert!(
            (c.0[0] - half).abs() < 1e-3 && (c.0[1] - half).abs() < 1e-3,
            "{c:?}"
        );
    }

    #[test]
    fn a_quarter_of_the_common_component_is_removed() {
        let c = CommonDirection(vec![1.0, 0.0]);
        // A unit query at 60° (its common component 0.5) keeps 0.5 - 0.25 * 0.5.
        let q = [0.5, 0.75f32.sqrt()];
        let adjusted = c.adjust(&[q[0] * 4.0, q[1] * 4.0]); // any length: normalized first
        assert!((adjusted[0] - 0.375).abs() < 1e-6, "{adjusted:?}");
        assert!(
            (adjusted[1] - q[1]).abs() < 1e-6,
            "the rest is kept: {adjusted:?}"
        );
        assert_eq!(c.adjust(&[1.0]), vec![1.0], "other dimensions: unchanged");
        assert_eq!(
            CommonDirection::of_mean(&[0.0, 2.0]),
            CommonDirection(vec![0.0, 1.0])
        );
        let none = CommonDirection::of_mean(&[0.0, 0.0]);
        assert_eq!(
            none.adjust(&[3.0, 4.0]),
            vec![0.6, 0.8],
            "no corpus: only normalized"
        );
    }
}
