//! What the CLI prints: a run's answer for a person (answer, sources, a one-line summary) or
//! as JSON, the exit code of a run, and errors on stderr. Every sub-command prints through here.

use crate::clock::{Clock, SystemClock};
use crate::engine::EngineError;
use crate::entry::messages::{self, Surface};
use crate::rag::{RunResponse, RunStatus};
use crate::runs::Refusal;
use std::process::ExitCode;

/// Prints `response` (as JSON with `json`); returns the run's exit code.
pub(crate) fn print_response(response: &RunResponse, json: bool) -> ExitCode {
    if json {
        match serde_json::to_string_pretty(response) {
            Ok(text) => println!("{text}"),
            Err(e) => return fail(1, &e.to_string()),
        }
    } else {
        println!("{}", render(response));
    }
    exit_code(response)
}

/// 1 for a failed run, 0 otherwise.
pub(crate) fn exit_code(response: &RunResponse) -> ExitCode {
    match response.status {
        RunStatus::Failed => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}

/// Human-readable answer, sources and a one-line summary.
pub(crate) fn render(r: &RunResponse) -> String {
    let mut out = String::new();
    if let Some(error) = &r.error {
        out.push_str(&format!(
            "error in {}: {} ({:?})\nwhat to do: {}\n",
            error.node, error.message, error.class, error.hint
        ));
    }
    if !r.answer.is_empty() {
        out.push_str(&r.answer);
        out.push('\n');
    }
    if let Some(waiting) = &r.interrupt {
        out.push_str(&asks(&r.run_id, waiting));
    }
    if !r.citations.is_empty() {
        out.push_str("\nSources:\n");
        for (i, c) in r.citations.iter().enumerate() {
            let by = if c.attributed { " (attributed)" } else { "" };
            out.push_str(&format!("  [{}] {} <{}>{by}\n", i + 1, c.title, c.url));
        }
    }
    let unsupported = r.metadata.attribution.as_ref().map(|a| &a.unsupported);
    if let Some(unsupported) = unsupported.filter(|u| !u.is_empty()) {
        out.push_str("\nNot supported by any source:\n");
        for sentence in unsupported {
            out.push_str(&format!("  - {sentence}\n"));
        }
    }
    let m = &r.metadata;
    let status = serde_json::to_value(r.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let route = m.route.map(|d| d.as_str()).unwrap_or("-");
    let limits = if m.limits_hit.is_empty() {
        "none".to_owned()
    } else {
        let names: Vec<&str> = m.limits_hit.iter().map(|l| l.as_str()).collect();
        names.join(",")
    };
    let estimated = if m.tokens.estimated {
        " (estimated)"
    } else {
        ""
    };
    let kb = match (&m.retrieval, &m.kb_version) {
        (Some(mode), Some(version)) => {
            format!(
                " · {} on kb {}",
                mode.as_str(),
                &version[..version.len().min(12)]
            )
        }
        _ => String::new(),
    };
    out.push_str(&format!(
        "\n{status} · {} steps · route {route} · rewrites {} · regenerations {} · limits {limits} · {:.3}s · {} model calls · {} tokens{estimated}{kb} · provider {} · run {}",
        m.total_steps,
        m.query_transformation_retry_count,
        m.hallucination_retry_count,
        m.total_processing_time,
        m.model_calls,
        m.tokens.total,
        m.provider,
        r.run_id,
    ));
    out
}

/// Exit 1 with the engine error as a person should read it (UTC times, what to do next).
pub(crate) fn fail_engine(e: &EngineError) -> ExitCode {
    fail(
        1,
        &messages::engine_error(e, SystemClock.now_ms(), Surface::Cli),
    )
}

/// Exit with a refusal of the run life cycle as a person should read it: 2 for input that
/// cannot be read, 1 otherwise.
pub(crate) fn fail_refusal(refusal: &Refusal) -> ExitCode {
    let now_ms = SystemClock.now_ms();
    match refusal {
        Refusal::Run(e) => fail_engine(e),
        Refusal::Invalid(e) => fail(2, &e.to_string()),
        Refusal::ThreadBusy { run_id, .. } => fail(
            1,
            &format!(
                "{refusal}: wait for it to finish (bounded-rag status {run_id}), then ask again"
            ),
        ),
        Refusal::RateLimited { limit, retry_at_ms } => fail(
            1,
            &format!(
                "the limit of {limit} run requests per caller and minute is reached \
                 (MAX_REQUESTS_PER_CALLER_PER_MINUTE): retry in {} s",
                messages::wait_secs(*retry_at_ms, now_ms)
            ),
        ),
        Refusal::TooManyActive {
            limit,
            active,
            retry_at_ms,
            ..
        } => fail(
            1,
            &format!(
                "{} unfinished runs and the limit is {limit} per caller \
                 (MAX_ACTIVE_RUNS_PER_CALLER): retry in {} s, or once one of them finishes \
                 (bounded-rag status RUN_ID: {})",
                active.len(),
                messages::wait_secs(*retry_at_ms, now_ms),
                active.join(", ")
            ),
        ),
        Refusal::NotForkable(e) if e.is_bad_step() => fail(2, &e.to_string()),
        Refusal::ThreadNotFound { .. }
        | Refusal::NotForkable(_)
        | Refusal::NotResumable(_)
        | Refusal::NoThreads { .. }
        | Refusal::KeyReused
        | Refusal::NoQueue
        | Refusal::Queue(_) => fail(1, &refusal.to_string()),
    }
}

/// Exit `code` with `message` on stderr.
pub(crate) fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("bounded-rag: {message}");
    ExitCode::from(code)
}

/// What a waiting run asks, and how to answer it.
fn asks(run_id: &str, waiting: &crate::rag::WaitingFor) -> String {
    let until = &waiting.expires_at;
    match &waiting.interrupt {
        crate::rag::Interrupt::Clarify { question, options } => {
            let mut out = format!("The run asks: {question}\n");
            if !options.is_empty() {
                out.push_str(&format!("  perhaps: {}\n", options.join("; ")));
            }
            out.push_str(&format!(
                "Answer by {until}: bounded-rag resume {run_id} --answer \"...\"\n"
            ));
            out
        }
        crate::rag::Interrupt::Approve { step, what } => format!(
            "The run waits for your approval to run {}: {what}\nAnswer by {until}: \
             bounded-rag resume {run_id} --approve (or --deny)\n",
            step.as_str()
        ),
    }
}
