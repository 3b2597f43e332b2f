//! `bounded-rag eval QUESTIONS.jsonl`: runs every question through the workflow and reports
//! recall@k of the expected sources (what the first knowledge-base retrieval returned), the
//! share of answers citing an expected source, the share containing the expected text, the
//! answers' scores (the share of their sentences a passage supports, whether a citation of an
//! expected source supports one, and ALCE's citation recall and precision of the citations the
//! model wrote itself; lexical, as [`crate::rag`]'s attribution judges), routes, limits hit and
//! model calls per question. `--json` prints the whole report. `--compare` runs
//! the set once per retrieval the configuration allows (BM25 always; hybrid when an embedding
//! model matches the knowledge base's vectors) and prints one row each.
//!
//! Each line: `{"question", "expected_sources"?: [...], "expected_answer"?: "..."}`, and the
//! fields `runs export` adds for a person (`answer`, `run_id`, `status`, `created_at`), read and
//! not scored. A source matches a retrieved document as [`source_matches`] says (its `kb://`
//! path, path and fragment, full URL, or the same file of another release). A question without
//! expected sources counts in no recall or cited share.

use super::args::ModeArg;
use super::eval_answers::AnswerScores;
pub(crate) use super::eval_sources::expected_source;
pub use super::eval_sources::source_matches;
use super::output::fail;
use crate::entry::App;
use crate::rag::{Mode, RagNode, RunRequest, RunResponse, RunStatus};
use crate::runs::Runs;
use crate::store::MemoryStore;
use clap::Args;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// `eval` arguments.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// JSONL file of questions.
    pub file: PathBuf,
    /// Print the full report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Documents retrieved per question (the k of recall@k, 1..=10).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub k: u32,
    /// Grade retrieved documents (true/false); default: the mode's.
    #[arg(long)]
    pub grading: Option<bool>,
    /// Checking preset.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Run the set with every available retrieval (BM25, hybrid) and print one table.
    #[arg(long)]
    pub compare: bool,
}

/// One labelled question. The fields after `expected_answer` are written by `runs export` for a
/// person correcting the set and are not scored; any other field is refused (a typo).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalCase {
    /// The question.
    pub question: String,
    /// Sources that should be retrieved and cited (`kb://` paths, with or without fragment).
    #[serde(default)]
    pub(crate) expected_sources: Vec<String>,
    /// Text the answer should contain (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expected_answer: Option<String>,
    /// The answer of the run the question was exported from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<String>,
    /// That run's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run_id: Option<String>,
    /// How that run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<RunStatus>,
    /// When that run was created (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) created_at: Option<String>,
}

/// The outcome of one question.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// The question.
    pub question: String,
    /// Run status.
    pub status: String,
    /// Route chosen.
    pub route: String,
    /// Limits that shaped the answer.
    pub limits_hit: Vec<String>,
    /// Model calls of the run.
    pub model_calls: u32,
    /// URLs the first knowledge-base retrieval returned, best first.
    pub retrieved: Vec<String>,
    /// URLs cited by the answer.
    pub cited: Vec<String>,
    /// Share of the expected sources among the first k retrieved.
    pub recall: Option<f64>,
    /// Whether the answer cites an expected source.
    pub(crate) cites_expected: Option<bool>,
    /// Whether the answer contains the expected text.
    pub(crate) contains_expected: Option<bool>,
    /// Whether a citation of an expected source (of any source, when the set names none)
    /// supports a sentence of the answer.
    pub(crate) cites_supporting: Option<bool>,
    /// The answer's scores, as attribution judged its sentences against its passages.
    #[serde(flatten)]
    pub(crate) answer_scores: AnswerScores,
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// Documents retrieved per question.
    pub k: u32,
    /// Whether retrieved documents were graded.
    pub grading: bool,
    /// Knowledge-base version.
    pub kb_version: Option<String>,
    /// Retrieval used (`bm25`, `hybrid`).
    pub retrieval: Option<String>,
    /// Questions run.
    pub questions: usize,
    /// Mean recall@k over the questions with expected sources.
    pub recall_at_k: Option<f64>,
    /// Share of answers citing an expected source (questions with expected sources).
    pub cited_share: Option<f64>,
    /// Share of answers containing the expected text (questions with one).
    pub(crate) answer_share: Option<f64>,
    /// Share of answers with a citation of an expected source that supports a sentence.
    pub(crate) supported_citation_share: Option<f64>,
    /// Means of the answers' scores (over the answers that have each).
    pub(crate) answer_scores: AnswerScores,
    /// Questions per route.
    pub routes: BTreeMap<String, usize>,
    /// Questions per limit hit.
    pub limits_hit: BTreeMap<String, usize>,
    /// Mean model calls per question.
    pub(crate) model_calls_per_question: f64,
    /// Every question.
    pub cases: Vec<CaseResult>,
}

/// Reads a JSONL question file; errors name the file and line.
pub fn read_cases(path: &std::path::Path) -> Result<Vec<EvalCase>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cases = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: EvalCase =
            serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(format!("{}: no questions", path.display()));
    }
    Ok(cases)
}

/// Runs `cases` through the workflow of `runs` (an [`App`] gives them); the runs are kept in
/// memory only.
pub async fn evaluate(
    runs: &impl AsRef<Runs>,
    cases: &[EvalCase],
    k: u32,
    grading: Option<bool>,
    mode: Option<Mode>,
) -> Result<EvalReport, String> {
    let runs = runs.as_ref();
    let store = MemoryStore::new();
    let workflow = runs.workflow().with_store(&store).with_continuation(false);
    let mut results = Vec::new();
    let (mut kb_version, mut retrieval, mut grading_used) = (None, None, false);
    for (n, case) in cases.iter().enumerate() {
        let mut request = RunRequest::new(&case.question);
        request.n_retrieved_documents = k;
        if let Some(mode) = mode {
            request.mode = mode;
        }
        request.enable_retrieved_documents_grading = grading;
        request
            .validate()
            .map_err(|e| format!("question {}: {}: {}", n + 1, e.field, e.message))?;
        grading_used = request.grade_documents();
        let response = workflow
            .run_new(&format!("eval-{n}"), request, &runs.budget(None))
            .await
            .map_err(|e| format!("question {}: {e}", n + 1))?;
        kb_version = kb_version.or(response.metadata.kb_version.clone());
        retrieval = retrieval.or(response.metadata.retrieval.map(|r| r.as_str().to_owned()));
        results.push(score(case, &response, k));
    }
    Ok(report(results, k, grading_used, kb_version, retrieval))
}

fn score(case: &EvalCase, response: &RunResponse, k: u32) -> CaseResult {
    let retrieved: Vec<String> = response
        .workflow_steps
        .iter()
        .find(|s| s.name == RagNode::KgRetrieval)
        .and_then(|s| s.details.get("sources"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let cited: Vec<String> = response.citations.iter().map(|c| c.url.clone()).collect();
    let expected = &case.expected_sources;
    let found_in = |urls: &[String], e: &String| urls.iter().any(|u| source_matches(e, u));
    let top: Vec<String> = retrieved.iter().take(k as usize).cloned().collect();
    let recall = (!expected.is_empty()).then(|| {
        expected.iter().filter(|e| found_in(&top, e)).count() as f64 / expected.len() as f64
    });
    let cites_expected =
        (!expected.is_empty()).then(|| expected.iter().any(|e| found_in(&cited, e)));
    let supporting: Vec<String> = (response.citations.iter())
        .filter(|c| !c.sentences.is_empty())
        .map(|c| c.url.clone())
        .collect();
    let cites_supporting = if expected.is_empty() {
        response
            .metadata
            .attribution
            .as_ref()
            .map(|_| !supporting.is_empty())
    } else {
        Some(expected.iter().any(|e| found_in(&supporting, e)))
    };
    let contains_expected = case.expected_answer.as_ref().map(|text| {
        response
            .answer
            .to_lowercase()
            .contains(&text.to_lowercase())
    });
    CaseResult {
        question: case.question.clone(),
        status: serde_json::to_value(response.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        route: response
            .metadata
            .route
            .map(|r| r.as_str().to_owned())
            .unwrap_or_else(|| "-".into()),
        limits_hit: (response.metadata.limits_hit.iter())
            .map(|l| l.as_str().to_owned())
            .collect(),
        model_calls: response.metadata.model_calls,
        retrieved,
        cited,
        recall,
        cites_expected,
        contains_expected,
        cites_supporting,
        answer_scores: AnswerScores::of(response.metadata.attribution.as_ref()),
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn report(
    cases: Vec<CaseResult>,
    k: u32,
    grading: bool,
    kb_version: Option<String>,
    retrieval: Option<String>,
) -> EvalReport {
    let share = |f: fn(&CaseResult) -> Option<bool>| {
        mean(
            cases
                .iter()
                .filter_map(f)
                .map(|b| if b { 1.0 } else { 0.0 }),
        )
    };
    let mut routes = BTreeMap::new();
    let mut limits = BTreeMap::new();
    for case in &cases {
        *routes.entry(case.route.clone()).or_insert(0) += 1;
        for limit in &case.limits_hit {
            *limits.entry(limit.clone()).or_insert(0) += 1;
        }
    }
    EvalReport {
        k,
        grading,
        kb_version,
        retrieval,
        questions: cases.len(),
        recall_at_k: mean(cases.iter().filter_map(|c| c.recall)),
        cited_share: share(|c| c.cites_expected),
        answer_share: share(|c| c.contains_expected),
        supported_citation_share: share(|c| c.cites_supporting),
        answer_scores: AnswerScores {
            supported_share: mean(cases.iter().filter_map(|c| c.answer_scores.supported_share)),
            citation_recall: mean(cases.iter().filter_map(|c| c.answer_scores.citation_recall)),
            citation_precision: mean(
                cases
                    .iter()
                    .filter_map(|c| c.answer_scores.citation_precision),
            ),
        },
        routes,
        limits_hit: limits,
        model_calls_per_question: mean(cases.iter().map(|c| f64::from(c.model_calls)))
            .unwrap_or(0.0),
        cases,
    }
}

/// The report as a table and a summary.
pub(crate) fn render(r: &EvalReport) -> String {
    let pct = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.1}%", v * 100.0));
    let yes = |v: Option<bool>| match v {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    };
    let share = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
    let mut out = format!(
        "{:>3}  {:>6}  {:>5}  {:>6}  {:>7}  {:>7}  {:<12}  {:>5}  {:<16}  question\n",
        "#", "recall", "cited", "answer", "support", "sources", "route", "calls", "limits"
    );
    for (i, c) in r.cases.iter().enumerate() {
        let limits = if c.limits_hit.is_empty() {
            "-".to_owned()
        } else {
            c.limits_hit.join(",")
        };
        out.push_str(&format!(
            "{:>3}  {:>6}  {:>5}  {:>6}  {:>7}  {:>7}  {:<12}  {:>5}  {:<16}  {}\n",
            i + 1,
            c.recall.map_or("-".into(), |v| format!("{v:.2}")),
            yes(c.cites_expected),
            yes(c.contains_expected),
            share(c.answer_scores.supported_share),
            yes(c.cites_supporting),
            c.route,
            c.model_calls,
            limits,
            c.question
        ));
    }
    let counts = |m: &BTreeMap<String, usize>| {
        if m.is_empty() {
            "none".to_owned()
        } else {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let a = &r.answer_scores;
    out.push_str(&format!(
        "\n{} questions · recall@{} {} · cited {} · expected text {} · grading {} · retrieval {} · {:.1} model calls/question\nanswers: sentences supported {} · a supporting citation of an expected source {} · the model's own citations: recall {} precision {}\nroutes: {} · limits hit: {} · kb {}",
        r.questions,
        r.k,
        pct(r.recall_at_k),
        pct(r.cited_share),
        pct(r.answer_share),
        if r.grading { "on" } else { "off" },
        r.retrieval.as_deref().unwrap_or("-"),
        r.model_calls_per_question,
        pct(a.supported_share),
        pct(r.supported_citation_share),
        pct(a.citation_recall),
        pct(a.citation_precision),
        counts(&r.routes),
        counts(&r.limits_hit),
        r.kb_version.as_deref().unwrap_or("-"),
    ));
    out
}

/// One row per report: retrieval, recall@k, cited, expected text, model calls.
pub fn render_compare(reports: &[EvalReport]) -> String {
    let pct = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
    let mut out = format!(
        "{:<10}  {:>9}  {:>6}  {:>6}  {:>7}  {:>5}\n",
        "retrieval", "questions", "recall", "cited", "answer", "calls"
    );
    for r in reports {
        out.push_str(&format!(
            "{:<10}  {:>9}  {:>6}  {:>6}  {:>7}  {:>5.1}\n",
            r.retrieval.as_deref().unwrap_or("-"),
            r.questions,
            pct(r.recall_at_k),
            pct(r.cited_share),
            pct(r.answer_share),
            r.model_calls_per_question
        ));
    }
    let first = reports.first();
    out.push_str(&format!(
        "k {} · grading {} · kb {}",
        first.map_or(0, |r| r.k),
        if first.is_some_and(|r| r.grading) {
            "on"
        } else {
            "off"
        },
        first.and_then(|r| r.kb_version.as_deref()).unwrap_or("-")
    ));
    out
}

/// The set run with the configured retrieval and, when that is hybrid, with BM25 alone.
async fn compare(
    runs: &Runs,
    cases: &[EvalCase],
    args: &EvalArgs,
) -> Result<Vec<EvalReport>, String> {
    let mode = args.mode.map(ModeArg::mode);
    let graph = runs.graph();
    let (embedder, reranker) = (graph.embedder.is_some(), graph.reranker.is_some());
    let mut reports = Vec::new();
    // BM25, BM25 + rerank, hybrid, hybrid + rerank: each that the configuration allows.
    for (embed, rerank) in [(false, false), (false, true), (true, false), (true, true)] {
        if (embed && !embedder) || (rerank && !reranker) {
            continue;
        }
        let subset = runs.retrieval_subset(embed, rerank);
        reports.push(evaluate(&subset, cases, args.k, args.grading, mode).await?);
    }
    Ok(reports)
}

/// `bounded-rag eval`: exit 0 when every question ran, 2 on bad input.
pub(crate) async fn eval_command(args: EvalArgs) -> ExitCode {
    let cases = match read_cases(&args.file) {
        Ok(cases) => cases,
        Err(e) => return fail(2, &e),
    };
    // Evaluation runs are not kept: `evaluate` runs them on a store of its own.
    let app = match App::from_env().await {
        Ok(app) => app,
        Err(e) => return fail(2, &e.to_string()),
    };
    if args.compare {
        let reports = compare(app.runs(), &cases, &args).await;
        return print_outcome(reports, args.json, |r| render_compare(r));
    }
    let mode = args.mode.map(ModeArg::mode);
    let report = evaluate(&app, &cases, args.k, args.grading, mode).await;
    print_outcome(report, args.json, render)
}

/// Prints an evaluation's outcome as JSON or as text (exit 0), or its error (exit 1).
fn print_outcome<T: Serialize>(
    outcome: Result<T, String>,
    json: bool,
    text: impl Fn(&T) -> String,
) -> ExitCode {
    let printed = match outcome {
        Ok(value) if json => serde_json::to_string_pretty(&value).map_err(|e| e.to_string()),
        Ok(value) => Ok(text(&value)),
        Err(e) => Err(e),
    };
    match printed {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(1, &e),
    }
}
