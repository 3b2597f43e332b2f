//! Bounded fuzzing of the document readers' entry points (a fixed number of cases each):
//! random bytes, and real files (the fixtures of `scripts/make-format-fixtures.sh`) with bytes
//! flipped, cut or spliced. Every input must give text or a typed skip, never a panic; a
//! reader that hung would hold the test past its time-out.
use super::{csv, docx, man, pdf, rst};
use crate::knowledge::SkipReason;
use proptest::prelude::*;

const GUIDE_PDF: &[u8] = include_bytes!("../../../tests/fixtures/formats/good/field-guide.pdf");
const LOG_PDF: &[u8] = include_bytes!("../../../tests/fixtures/formats/good/orchard-log.pdf");
const HANDBOOK_DOCX: &[u8] = include_bytes!("../../../tests/fixtures/formats/good/handbook.docx");
const NOTES_RST: &str = include_str!("../../../tests/fixtures/formats/good/release-notes.rst");
const VARIETIES_CSV: &str = include_str!("../../../tests/fixtures/formats/good/varieties.csv");

/// `base` with up to 16 bytes replaced, then cut at `cut` (a fraction of its length).
fn mutate(base: &[u8], flips: &[(usize, u8)], cut: f64) -> Vec<u8> {
    let mut bytes = base.to_vec();
    for (at, byte) in flips {
        let at = at % bytes.len();
        bytes[at] = *byte;
    }
    let keep = ((bytes.len() as f64) * cut) as usize;
    bytes.truncate(keep.max(1));
    bytes
}

fn flips() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((any::<usize>(), any::<u8>()), 0..16)
}

/// A reader's result is text or a skip; either way it returned.
fn settled<T>(result: Result<T, SkipReason>) -> bool {
    match result {
        Ok(_) => true,
        Err(reason) => !reason.to_string().is_empty(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn pdf_reader_never_panics(
        which in any::<bool>(),
        flips in flips(),
        cut in 0.5f64..=1.0,
        noise in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let base = if which { GUIDE_PDF } else { LOG_PDF };
        prop_assert!(settled(pdf::pages(&mutate(base, &flips, cut))));
        // The body of a real PDF replaced by noise, the %%EOF kept.
        let mut spliced = base[..base.len() / 3].to_vec();
        spliced.extend_from_slice(&noise);
        spliced.extend_from_slice(&base[base.len() - 64..]);
        prop_assert!(settled(pdf::pages(&spliced)));
        let mut random = b"%PDF-1.5\n".to_vec();
        random.extend_from_slice(&noise);
        random.extend_from_slice(b"\n%%EOF\n");
        prop_assert!(settled(pdf::pages(&random)));
    }

    #[test]
    fn docx_reader_never_panics(
        flips in flips(),
        cut in 0.3f64..=1.0,
        noise in prop::collection::vec(any::<u8>(), 0..2048),
    ) {
        prop_assert!(settled(docx::to_text(&mutate(HANDBOOK_DOCX, &flips, cut))));
        prop_assert!(settled(docx::to_text(&noise)));
    }

    #[test]
    fn csv_rst_and_man_readers_never_panic(
        flips in flips(),
        cut in 0.0f64..=1.0,
        text in "\\PC{0,400}",
    ) {
        let csv_text = String::from_utf8_lossy(&mutate(VARIETIES_CSV.as_bytes(), &flips, cut)).into_owned();
        prop_assert!(settled(csv::rows(&csv_text, b',')));
        prop_assert!(settled(csv::rows(&text, b'\t')));
        let rst_text = String::from_utf8_lossy(&mutate(NOTES_RST.as_bytes(), &flips, cut)).into_owned();
        let _ = rst::to_markdown(&rst_text);
        let _ = rst::to_markdown(&text);
        let _ = man::to_markdown(&text);
    }
}
