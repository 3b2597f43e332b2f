//! `bounded-rag runs export`: the local caller's runs (the CLI asks as the anonymous caller) as
//! an eval set that `bounded-rag eval` reads as it is, from the store the other commands use (the
//! local `STATE_DIR`, or the DynamoDB table of `CHECKPOINT_TABLE`).

use super::eval::{expected_source, EvalCase};
use super::output::{fail, fail_refusal};
use crate::entry::App;
use crate::rag::{Caller, RunStatus};
use crate::runs::{parse_status, ExportedRun, RunFilter};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// `runs` sub-commands.
#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// Write runs as JSON Lines that `bounded-rag eval` reads as they are, newest first: per run
    /// `question`, `expected_sources` (the documents its answer cited, as labelled sets name
    /// them) and, for a person to check and correct, `answer`, `run_id`, `status` and
    /// `created_at` (eval reads and ignores these). A run that cited nothing is written with
    /// `"expected_sources": []`: eval accepts it and counts it in no recall or cited share until
    /// sources are added.
    Export(ExportArgs),
}

/// `runs export` arguments; every filter given must hold.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// Only runs with this status (running, completed, best_effort, suspended, failed,
    /// cancelled).
    #[arg(long, value_name = "STATUS", value_parser = status_arg)]
    status: Option<RunStatus>,
    /// Only runs created at or after this moment (RFC 3339, e.g. 2026-05-01T00:00:00Z).
    #[arg(long, value_name = "RFC3339", value_parser = since_arg)]
    since: Option<u64>,
    /// Only runs that are turns of this thread (`ask --thread ID`).
    #[arg(long, value_name = "THREAD_ID")]
    thread: Option<String>,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// `--status`: a run status by its wire name.
fn status_arg(text: &str) -> Result<RunStatus, String> {
    parse_status(text).ok_or_else(|| {
        let names: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
        format!("unknown status `{text}`: use one of {}", names.join(", "))
    })
}

/// `--since`: an RFC 3339 moment as the first epoch millisecond at or after it.
fn since_arg(text: &str) -> Result<u64, String> {
    let moment = OffsetDateTime::parse(text, &Rfc3339).map_err(|e| {
        format!("`{text}` is not an RFC 3339 time such as 2026-05-01T00:00:00Z ({e})")
    })?;
    let nanos = moment.unix_timestamp_nanos();
    let ms = nanos.div_euclid(1_000_000) + i128::from(nanos.rem_euclid(1_000_000) != 0);
    Ok(u64::try_from(ms).unwrap_or(0))
}

/// The eval line of an exported run.
fn eval_case(run: ExportedRun) -> EvalCase {
    let response = run.response;
    let mut expected_sources: Vec<String> = Vec::new();
    for citation in &response.citations {
        let source = expected_source(&citation.url);
        if !expected_sources.iter().any(|s| s == source) {
            expected_sources.push(source.to_owned());
        }
    }
    EvalCase {
        question: response.question,
        expected_sources,
        expected_answer: None,
        answer: Some(response.answer),
        run_id: Some(response.run_id),
        status: Some(response.status),
        created_at: Some(run.created_at),
    }
}

/// Runs `runs export`: exit 0 when every run was written, 1 when the store or the output
/// failed, 2 on bad configuration.
pub(crate) async fn runs_command(command: RunsCommand) -> ExitCode {
    let RunsCommand::Export(args) = command;
    let app = match App::from_env().await {
        Ok(app) => app,
        Err(e) => return fail(2, &e.to_string()),
    };
    let mut out: Box<dyn Write> = match &args.out {
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Box::new(std::io::BufWriter::new(file)),
            Err(e) => return fail(1, &format!("{}: {e}", path.display())),
        },
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let filter = RunFilter {
        status: args.status,
        since_ms: args.since,
        thread_id: args.thread,
    };
    let (mut written, mut uncited, mut cursor) = (0usize, 0usize, None);
    loop {
        let page = match app
            .runs()
            .export(&Caller::Anonymous, &filter, cursor.as_deref())
            .await
        {
            Ok(page) => page,
            Err(e) => return fail_refusal(&e),
        };
        for run in page.runs {
            let case = eval_case(run);
            uncited += usize::from(case.expected_sources.is_empty());
            let line = serde_json::to_string(&case).map_err(|e| e.to_string());
            if let Err(e) = line.and_then(|l| writeln!(out, "{l}").map_err(|e| e.to_string())) {
                return fail(1, &e);
            }
            written += 1;
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    if let Err(e) = out.flush() {
        return fail(1, &e.to_string());
    }
    let to = args
        .out
        .map_or("standard output".to_owned(), |p| p.display().to_string());
    let runs = if written == 1 { "run" } else { "runs" };
    eprintln!(
        "exported {written} {runs} to {to}; {uncited} cited nothing (empty expected_sources: \
         add sources for eval to score them)"
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_times_are_read_or_named_as_wrong() {
        assert_eq!(status_arg("best_effort"), Ok(RunStatus::BestEffort));
        let err = status_arg("done").unwrap_err();
        assert!(
            err.contains("`done`") && err.contains("best_effort, suspended"),
            "{err}"
        );
        assert_eq!(since_arg("2027-01-15T08:00:00.123Z"), Ok(1_800_000_000_123));
        assert_eq!(
            since_arg("2027-01-15T09:00:00.123+01:00"),
            Ok(1_800_000_000_123)
        );
        // A moment inside a millisecond starts at the next one.
        assert_eq!(
            since_arg("2027-01-15T08:00:00.1231Z"),
            Ok(1_800_000_000_124)
        );
        assert_eq!(since_arg("1960-01-01T00:00:00Z"), Ok(0));
        let err = since_arg("yesterday").unwrap_err();
        assert!(
            err.contains("`yesterday`") && err.contains("RFC 3339"),
            "{err}"
        );
    }

    #[test]
    fn an_uncited_run_is_a_line_eval_reads_with_no_sources_and_typos_are_still_refused() {
        use crate::engine::Checkpoint;
        use crate::rag::{Citation, RagNode, RagState, RunRequest, RunResponse};
        let state = RagState::new(RunRequest::new("Why?"));
        let checkpoint = Checkpoint::new("r-1", RagNode::RouteQuestion, state);
        let mut response = RunResponse::from_checkpoint(&checkpoint, "offline");
        response.answer = "Because.".into();
        response.status = RunStatus::BestEffort;
        let run = |response: RunResponse| ExportedRun {
            created_at: "2027-01-15T08:00:00.123Z".into(),
            response,
        };
        let uncited = serde_json::to_string(&eval_case(run(response.clone()))).unwrap();
        assert_eq!(
            uncited,
            r#"{"question":"Why?","expected_sources":[],"answer":"Because.","run_id":"r-1","status":"best_effort","created_at":"2027-01-15T08:00:00.123Z"}"#
        );
        response.citations = [
            "kb://a.md#1",
            "kb://a.md#2",
            "https://x.test/p#q",
            "kb://g.pdf#page=3",
        ]
        .into_iter()
        .map(|url| Citation {
            title: "t".into(),
            url: url.into(),
            attributed: false,
            sentences: Vec::new(),
        })
        .collect();
        let cited = eval_case(run(response.clone()));
        assert_eq!(
            cited.expected_sources,
            ["a.md", "https://x.test/p#q", "g.pdf"]
        );
        for (expected, citation) in cited.expected_sources.iter().zip([0, 2, 3]) {
            assert!(super::super::eval::source_matches(
                expected,
                &response.citations[citation].url
            ));
        }

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("set.jsonl");
        let cited = serde_json::to_string(&cited).unwrap();
        std::fs::write(&file, format!("{uncited}\n{cited}\n")).unwrap();
        let cases = super::super::eval::read_cases(&file).unwrap();
        assert_eq!(cases.len(), 2);
        assert!(cases[0].expected_sources.is_empty());
        assert_eq!(cases[1].run_id.as_deref(), Some("r-1"));
        std::fs::write(&file, r#"{"question":"Why?","expected_source":["a.md"]}"#).unwrap();
        let err = super::super::eval::read_cases(&file).unwrap_err();
        assert!(err.contains("expected_source"), "{err}");
    }
}
