//! The answer scores of `eval`: how an answer stands on its passages, read from the run's
//! `metadata.attribution` (lexical, as the workflow's attribution judges it).

use serde::Serialize;

/// How an answer stands on its passages (`metadata.attribution`), lexically: the share of its
/// judged sentences some passage supports, and ALCE's citation recall and precision of the
/// citations the model itself wrote (before the service attributed any).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct AnswerScores {
    /// Judged sentences a passage supports, over the judged sentences.
    pub(crate) supported_share: Option<f64>,
    /// Sentences whose own citations support them, over the judged sentences.
    pub(crate) citation_recall: Option<f64>,
    /// The model's citations that support their sentence, over all it wrote.
    pub(crate) citation_precision: Option<f64>,
}

impl AnswerScores {
    pub(super) fn of(report: Option<&crate::rag::AttributionReport>) -> Self {
        let Some(r) = report else {
            return Self::default();
        };
        let over = |n: u32, d: u32| (d > 0).then(|| f64::from(n) / f64::from(d));
        Self {
            supported_share: over(r.supported, r.sentences),
            citation_recall: over(r.written, r.sentences),
            citation_precision: over(r.model_citations_supporting, r.model_citations),
        }
    }
}
