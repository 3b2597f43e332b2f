//! Unit length: the one normalization the vectors and the hubness correction share.

/// A unit-length copy of `v` (a zero or non-finite vector becomes all zeros).
pub(super) fn normalized(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return vec![0.0; v.len()];
    }
    v.iter().map(|x| x / norm).collect()
}
