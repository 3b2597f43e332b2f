//! Attribution: an answer drawn from documents cites the passages that support it, whatever
//! the model wrote. The answer is cut into sentences; each sentence that makes a claim (three
//! content words or more, one of them beyond the question's) is matched to the passages that
//! support it, lexically: a passage supports a sentence when it holds at least [`MIN_SUPPORT`]
//! of the sentence's own content stems (those the question does not already hold), its title
//! and source included; a sentence that joins several passages' claims is supported by up to
//! three of them together. Then, sentence by sentence:
//!
//! - a citation the model wrote that supports its sentence is kept (`written`), and one beside
//!   it that does not is taken out;
//! - a sentence whose citations all miss is **re-pointed** to the passage that supports it best;
//! - a sentence the model cited nothing for is **attributed**: the best passage's number is
//!   added at its end;
//! - a sentence no passage supports keeps no citation and is reported as **unsupported**; it
//!   counts against the answer's groundedness ([`Report::mostly_unsupported`]).
//!
//! Code blocks and sentences too short to judge keep what the model wrote; but an answer made
//! only of short units and code that cites nothing ("Use thiserror.", or "Answer:" over a code
//! block) cites the passage that supports it best, as a sentence would: at its last short
//! unit, or on a line after the code when it is only code. The markers are then numbered in the order the answer first cites them, so `[n]` is the response's n-th
//! citation, and the citations are only the passages the answer stands on, each with the
//! sentences it supports. Deterministic, and needs no model.

use super::markers::{dedup, renumber, with_markers};
use super::sentences::units;
use crate::knowledge::Document;
use crate::llm::{citation_markers, stems};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// The share of a sentence's own content stems a passage must hold to support it.
pub(super) const MIN_SUPPORT: f64 = 0.5;
/// The most passages one sentence is attributed to together.
const MAX_JOINED: usize = 3;
/// Content stems a sentence needs before it is judged (fewer: a label, a greeting).
const MIN_SENTENCE_STEMS: usize = 3;

/// A source the answer cites: the passage, whether the service added the citation, and the
/// answer's sentences it supports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// Title.
    pub title: String,
    /// URL, or `kb://` path for the knowledge base.
    pub url: String,
    /// True when the model did not cite this passage where the answer now does: the service
    /// attributed (or re-pointed) the citation.
    #[serde(default)]
    pub attributed: bool,
    /// The answer's sentences that cite this passage, citation markers taken out (read off
    /// the answer, not stored: [`with_sentences`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sentences: Vec<String>,
}

/// What attribution found in an answer (`metadata.attribution`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Sentences judged (those that make a claim; code and short labels are not judged).
    pub sentences: u32,
    /// Judged sentences a passage supports (each now cites one).
    pub supported: u32,
    /// Judged sentences no passage supports, as written (markers taken out).
    pub unsupported: Vec<String>,
    /// Supported sentences whose own citation (as the model wrote it) supports them.
    pub written: u32,
    /// Supported sentences the model cited nothing for: a citation was added.
    pub attributed: u32,
    /// Supported sentences whose citations all missed: re-pointed to a supporting passage.
    pub repointed: u32,
    /// Citations the model wrote on judged sentences (one per sentence and number).
    pub model_citations: u32,
    /// Of those, the ones whose passage supports their sentence (ALCE's citation precision
    /// is this over `model_citations`; its recall is `written` over `sentences`).
    pub model_citations_supporting: u32,
}

impl Report {
    /// True when most judged sentences have no supporting passage.
    pub(crate) fn mostly_unsupported(&self) -> bool {
        self.sentences > 0 && self.supported * 2 < self.sentences
    }
}

/// An answer with its citations settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Attributed {
    /// The answer with its markers kept, re-pointed, added or taken out, and renumbered (the
    /// run's answer: not stored twice).
    #[serde(skip)]
    pub(crate) text: String,
    /// The passages it stands on, in the order it first cites them (`[n]` is the n-th).
    pub(crate) citations: Vec<Citation>,
    /// What was found.
    pub(crate) report: Report,
}

/// A unit as the output has it.
struct Piece {
    span: Range<usize>,
    /// The unit's text without markers, when its markers are set anew (else it is kept as
    /// written, renumbered).
    rebuilt: Option<String>,
    /// A fenced code block (a marker set anew goes on a line after it).
    code: bool,
    /// The passages it cites.
    cites: Vec<Cite>,
}

/// A marker of the output: the passage (index into the documents) and who wrote it.
#[derive(Clone, Copy)]
struct Cite {
    doc: usize,
    attributed: bool,
}

/// The passages' stems, titles and sources included (what the prompt showed of each).
fn passage_stems(documents: &[Document]) -> Vec<HashSet<String>> {
    documents
        .iter()
        .map(|doc| {
            let mut all = stems(&doc.content);
            all.extend(stems(&doc.title));
            all.extend(stems(&doc.url));
            all
        })
        .collect()
}

/// Judges only: the report of `answer` against `documents`, without rewriting it.
pub(crate) fn judge(answer: &str, question: &str, documents: &[Document]) -> Report {
    attribute(answer, question, documents).report
}

/// Attributes `answer` (written to `question` from `documents`, numbered from 1).
pub(crate) fn attribute(answer: &str, question: &str, documents: &[Document]) -> Attributed {
    let asked = stems(question);
    let passages = passage_stems(documents);
    let mut report = Report::default();
    let mut pieces: Vec<Piece> = Vec::new();
    // Units not judged that cite nothing (short ones and code blocks).
    let mut short: Vec<Short> = Vec::new();
    for unit in units(answer) {
        let text = &answer[unit.span.clone()];
        let markers = citation_markers(text);
        let written: Vec<usize> = dedup(
            markers
                .iter()
                .flat_map(|m| m.numbers.iter())
                .filter(|n| **n >= 1 && (**n as usize) <= documents.len())
                .map(|n| *n as usize - 1),
        );
        let clean = crate::llm::strip_markers(text);
        let claim = sentence_of(&clean);
        let own = stems(&clean);
        let new: HashSet<&String> = own.iter().filter(|s| !asked.contains(*s)).collect();
        let judged = !unit.code && own.len() >= MIN_SENTENCE_STEMS && !new.is_empty();
        let keep = |docs: &[usize]| -> Vec<Cite> {
            docs.iter()
                .map(|&doc| Cite {
                    doc,
                    attributed: false,
                })
                .collect()
        };
        if !judged {
            if written.is_empty() && !new.is_empty() {
                short.push(Short {
                    piece: pieces.len(),
                    code: unit.code,
                    words: new.into_iter().cloned().collect(),
                });
            }
            pieces.push(Piece {
                span: unit.span,
                rebuilt: None,
                code: unit.code,
                cites: keep(&written),
            });
            continue;
        }
        report.sentences += 1;
        // The share of the sentence's own stems that some passage of `docs` holds.
        let share = |docs: &[usize]| {
            let held = new
                .iter()
                .filter(|s| docs.iter().any(|d| passages[*d].contains(**s)))
                .count();
            held as f64 / new.len() as f64
        };
        let helps = |doc: usize| new.iter().any(|s| passages[doc].contains(*s));
        report.model_citations += written.len() as u32;
        // The model's citations stand when together they support the sentence (a sentence
        // may join two passages' claims); one that adds nothing is taken out.
        let kept: Vec<usize> = written.iter().copied().filter(|d| helps(*d)).collect();
        let kept = if !kept.is_empty() && share(&kept) >= MIN_SUPPORT {
            kept
        } else {
            Vec::new()
        };
        report.model_citations_supporting += kept.len() as u32;
        let mut ranked: Vec<(usize, f64)> = (0..documents.len())
            .map(|doc| (doc, share(&[doc])))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        // Best supported first; among equals, the one the model cited, then the first given.
        ranked.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(written.contains(&b.0).cmp(&written.contains(&a.0)))
                .then(a.0.cmp(&b.0))
        });
        // Else the passage that supports it best, or the best few together (each adding
        // some of the sentence's words), at most [`MAX_JOINED`].
        let mut found: Vec<usize> = Vec::new();
        for (doc, _) in &ranked {
            if found.len() == MAX_JOINED || share(&found) >= MIN_SUPPORT {
                break;
            }
            let before = share(&found);
            found.push(*doc);
            if share(&found) <= before {
                found.pop();
            }
        }
        if share(&found) < MIN_SUPPORT {
            found.clear();
        }
        let cites = if !kept.is_empty() {
            report.written += 1;
            keep(&kept)
        } else if found.is_empty() {
            report.unsupported.push(claim);
            Vec::new()
        } else {
            if written.is_empty() {
                report.attributed += 1;
            } else {
                report.repointed += 1;
            }
            found
                .into_iter()
                .map(|doc| Cite {
                    doc,
                    attributed: true,
                })
                .collect()
        };
        if !cites.is_empty() {
            report.supported += 1;
        }
        // Cited as written: the model's own layout, renumbered. Else the markers are set anew.
        let as_written = kept.len() == written.len() && cites.iter().all(|c| !c.attributed);
        pieces.push(Piece {
            span: unit.span,
            rebuilt: (!as_written).then_some(clean),
            code: false,
            cites,
        });
    }
    if report.sentences == 0 && pieces.iter().all(|p| p.cites.is_empty()) {
        cite_short_answer(answer, &mut pieces, short, &passages);
    }
    // Numbers in order of first citation, one per source (passages sharing a URL share one).
    let mut number: HashMap<&str, usize> = HashMap::new();
    let mut citations: Vec<Citation> = Vec::new();
    for piece in &pieces {
        for cite in &piece.cites {
            let doc = &documents[cite.doc];
            let n = *number.entry(doc.url.as_str()).or_insert_with(|| {
                citations.push(Citation {
                    title: doc.title.clone(),
                    url: doc.url.clone(),
                    attributed: true,
                    sentences: Vec::new(),
                });
                citations.len()
            });
            citations[n - 1].attributed &= cite.attributed;
        }
    }
    let mut text = String::with_capacity(answer.len() + 16);
    let mut from = 0;
    for piece in &pieces {
        text.push_str(&answer[from..piece.span.start]);
        from = piece.span.end;
        match &piece.rebuilt {
            None => text.push_str(&renumber(&answer[piece.span.clone()], documents, &number)),
            Some(body) => {
                let numbers: Vec<usize> = dedup(
                    piece
                        .cites
                        .iter()
                        .map(|c| number[documents[c.doc].url.as_str()]),
                );
                if piece.code {
                    // After a fence, on a line of its own: the fence still closes the block.
                    let marks: Vec<String> = numbers.iter().map(|n| n.to_string()).collect();
                    text.push_str(&format!("{body}\n[{}]", marks.join(", ")));
                } else {
                    text.push_str(&with_markers(body, &numbers));
                }
            }
        }
    }
    text.push_str(&answer[from..]);
    with_sentences(&text, &mut citations);
    Attributed {
        text,
        citations,
        report,
    }
}

/// `answer`, written from `documents`, when every passage it stands on is one `keep` marks:
/// its markers renumbered to the kept passages (in their order, from 1), those pointing at
/// the others taken out. None when it stands on no passage, mostly on none, or on one not
/// kept.
pub(crate) fn on_kept(
    answer: &str,
    question: &str,
    documents: &[Document],
    keep: &[bool],
) -> Option<String> {
    let attributed = attribute(answer, question, documents);
    if attributed.citations.is_empty() || attributed.report.mostly_unsupported() {
        return None;
    }
    let kept: Vec<&Document> = (documents.iter().zip(keep))
        .filter(|(_, keep)| **keep)
        .map(|(doc, _)| doc)
        .collect();
    let stands_on_kept = (attributed.citations.iter())
        .all(|citation| kept.iter().any(|doc| doc.url == citation.url));
    if !stands_on_kept {
        return None;
    }
    let mut number: HashMap<&str, usize> = HashMap::new();
    for (i, doc) in kept.iter().enumerate() {
        number.entry(doc.url.as_str()).or_insert(i + 1);
    }
    Some(renumber(answer, documents, &number))
}

/// A unit not judged (too short, or code) that cites nothing.
struct Short {
    /// Its index in the pieces.
    piece: usize,
    /// A fenced code block.
    code: bool,
    /// Its own stems, beyond the question's.
    words: HashSet<String>,
}

/// A short answer that cites nothing ("Use thiserror.", or a code block under "Answer:": no
/// sentence long enough to judge) is still drawn from its documents: it cites the passage
/// that holds most of the words its short units and code add to the question (at least
/// [`MIN_SUPPORT`] of them; among equals, the first given), as a sentence would: at its last
/// short unit, or, when it is only code, on a line after its last block. One that no passage
/// supports keeps no citation.
fn cite_short_answer(
    answer: &str,
    pieces: &mut [Piece],
    short: Vec<Short>,
    passages: &[HashSet<String>],
) {
    let words: HashSet<&String> = short.iter().flat_map(|unit| unit.words.iter()).collect();
    let share = |held: &HashSet<String>| {
        words.iter().filter(|w| held.contains(**w)).count() as f64 / words.len().max(1) as f64
    };
    // The best supporting passage; among equals, the first given.
    let Some((doc, best)) = passages
        .iter()
        .map(share)
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
    else {
        return;
    };
    if best < MIN_SUPPORT {
        return;
    }
    let at = short
        .iter()
        .rev()
        .find(|unit| !unit.code)
        .or(short.last())
        .map(|unit| unit.piece);
    if let Some(at) = at {
        let piece = &mut pieces[at];
        let written = &answer[piece.span.clone()];
        piece.rebuilt = Some(if piece.code {
            written.to_owned()
        } else {
            crate::llm::strip_markers(written)
        });
        piece.cites = vec![Cite {
            doc,
            attributed: true,
        }];
    }
}

/// Fills each citation's `sentences` with the sentences of `answer` that cite it (`[n]` for
/// the n-th), markers taken out; code blocks are not sentences.
pub(crate) fn with_sentences(answer: &str, citations: &mut [Citation]) {
    for citation in citations.iter_mut() {
        citation.sentences.clear();
    }
    for unit in units(answer).into_iter().filter(|u| !u.code) {
        let text = &answer[unit.span];
        let claim = sentence_of(&crate::llm::strip_markers(text));
        if claim.is_empty() {
            // A marker on a line of its own, after a code block.
            continue;
        }
        for n in citation_markers(text).iter().flat_map(|m| m.numbers.iter()) {
            if let Some(citation) = (*n as usize)
                .checked_sub(1)
                .and_then(|i| citations.get_mut(i))
            {
                if !citation.sentences.contains(&claim) {
                    citation.sentences.push(claim.clone());
                }
            }
        }
    }
}

/// A sentence as the response lists it: markers already taken out, the spaces they left
/// tidied, on one line.
fn sentence_of(clean: &str) -> String {
    let tidy = with_markers(clean, &[]);
    tidy.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "attribution_tests.rs"]
mod tests;
