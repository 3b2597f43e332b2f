//! The `bounded-rag` command line: `ask`, `ingest`, `kb`, `eval`, `thread`, `status`, `cancel`.
//! This file is the top of the CLI: it parses the command and dispatches to the sub-command
//! files, which share only what lies below them (`args`, `output`).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the commands, and `ask`, `status`, `cancel` |
//! | `args.rs` | `ask`'s arguments and the run request they make |
//! | `output.rs` | what the CLI prints, and exit codes |
//! | `stream.rs` | `ask --stream`: events printed as they come |
//! | `thread.rs` | `thread show / list / delete` |
//! | `kb.rs` | `ingest` and `kb publish / list / use / sync` |
//! | `eval.rs` | `eval`: a labelled question set through the workflow |

mod args;
pub mod eval;
mod kb;
mod output;
mod stream;
mod thread;

pub use args::{AskArgs, ModeArg};
use kb::{ingest_command, kb_command, KbCommand};
use output::{exit_code, fail, fail_engine, print_response};
use stream::Job;
use thread::{thread_command, ThreadCommand};
use eval::{eval_command, EvalArgs};
use super::App;
use crate::rag::Caller;
use crate::runs::Cancel;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Adaptive RAG that always terminates.
#[derive(Debug, Parser)]
#[command(name = "bounded-rag", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Hide per-step progress on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

/// Sub-commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Answer a question, or continue a stopped run with --resume.
    Ask(AskArgs),
    /// Build a knowledge-base bundle from a folder of Markdown, text, HTML, PDF, Word,
    /// reStructuredText and CSV/TSV documents and JSONL entities; embeds every passage when
    /// EMBEDDINGS_BASE_URL (or EMBEDDINGS_PROVIDER=bedrock) is set.
    Ingest {
        /// Folder with .md/.txt/.html/.pdf/.docx/.rst/.csv/.tsv documents and optional
        /// nodes.jsonl / edges.jsonl / communities.jsonl.
        source: PathBuf,
        /// Where to write the bundle (use it with KB_PATH, or publish it).
        #[arg(long, default_value = ".bounded-rag/kb")]
        out: PathBuf,
        /// Passages per embeddings call (default: EMBEDDINGS_BATCH_SIZE, else 64).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=2048))]
        batch_size: Option<u16>,
        /// Fail (exit 2, nothing written) when any file is skipped, for CI pipelines.
        #[arg(long)]
        strict: bool,
    },
    /// Publish, list and roll back bundles on S3.
    #[command(subcommand)]
    Kb(KbCommand),
    /// Run a labelled question set through the workflow and report retrieval and answer
    /// quality.
    Eval(EvalArgs),
    /// Read, list or delete conversation threads (`ask --thread ID`).
    #[command(subcommand)]
    Thread(ThreadCommand),
    /// Show a stored run.
    Status {
        /// Run id.
        run_id: String,
        /// Print the full JSON response.
        #[arg(long)]
        json: bool,
    },
    /// Cancel a queued, suspended or running run (it keeps its answer so far).
    Cancel {
        /// Run id.
        run_id: String,
        /// Print the full JSON response.
        #[arg(long)]
        json: bool,
    },
}

/// Runs the CLI; returns the process exit code (0 answered, 1 failed, 2 bad input).
pub async fn run(cli: Cli) -> ExitCode {
    // Every CLI command reads PDF, Word and CSV sources (a KB_PATH folder, eval, ingest); the
    // Lambda functions never get here, so the parsers stay out of their bootstraps.
    crate::retrieval::enable_parsers();
    match cli.command {
        Command::Ingest {
            source,
            out,
            batch_size,
            strict,
        } => match ingest_command(&source, &out, batch_size.map(usize::from), strict).await {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(2, &e),
        },
        Command::Kb(command) => match kb_command(command).await {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(1, &e),
        },
        Command::Eval(args) => eval_command(args).await,
        Command::Thread(command) => thread_command(command).await,
        Command::Status { run_id, json } => {
            let app = match App::from_env().await {
                Ok(app) => app,
                Err(e) => return fail(2, &e.to_string()),
            };
            match app.workflow().status(&run_id).await {
                Ok(response) => print_response(&response, json),
                Err(e) => fail_engine(&e),
            }
        }
        Command::Cancel { run_id, json } => {
            let app = match App::from_env().await {
                Ok(app) => app,
                Err(e) => return fail(2, &e.to_string()),
            };
            match app.workflow().cancel(&run_id).await {
                Ok(Cancel::Cancelled(response) | Cancel::AlreadyCancelled(response)) => {
                    print_response(&response, json)
                }
                Ok(Cancel::Finished(response)) => fail(
                    1,
                    &format!(
                        "run {run_id} already ended ({}) and cannot be cancelled; see \
                         `bounded-rag status {run_id}`",
                        response.status.as_str()
                    ),
                ),
                Err(e) => fail_engine(&e),
            }
        }
        Command::Ask(args) => ask(args).await,
    }
}

async fn ask(args: AskArgs) -> ExitCode {
    let request = match &args.question {
        Some(q) => match args.request(q) {
            Ok(r) => Some(r),
            Err(message) => return fail(2, &message),
        },
        None => None,
    };
    let app = match App::from_env().await {
        Ok(app) => app,
        Err(e) => return fail(2, &e.to_string()),
    };
    let runs = app.runs();
    let budget = runs.budget(None);
    let run_id = uuid::Uuid::new_v4().to_string();
    // A thread's turn is started before its run (the CLI asks as the anonymous caller).
    let thread = match request.as_ref().and_then(|r| r.thread_id.as_deref()) {
        Some(thread_id) => {
            let question = request.as_ref().map_or("", |r| r.question.as_str());
            match runs
                .threads()
                .begin(&Caller::Anonymous, thread_id, &run_id, question)
                .await
            {
                Ok(context) => Some(context),
                Err(e) => return thread::fail_thread(&e),
            }
        }
        None => None,
    };
    if args.stream {
        let job = match (request, args.resume) {
            (Some(request), _) => Job::New(run_id, Box::new(request), thread),
            (None, Some(run_id)) => Job::Resume(run_id),
            (None, None) => return fail(2, NO_QUESTION),
        };
        return match stream::run(runs, job, &budget, args.json).await {
            Ok(response) => exit_code(&response),
            Err(e) => fail_engine(&e),
        };
    }
    let workflow = runs.workflow();
    let result = match (request, &args.resume) {
        (Some(request), _) => {
            let workflow = workflow.in_thread(thread.as_ref());
            workflow.run_new(&run_id, request, &budget).await
        }
        (None, Some(run_id)) => workflow.resume(run_id, &budget).await,
        (None, None) => return fail(2, NO_QUESTION),
    };
    match result {
        Ok(response) => print_response(&response, args.json),
        Err(e) => fail_engine(&e),
    }
}

const NO_QUESTION: &str =
    "a question or --resume RUN_ID is required, e.g. bounded-rag ask \"What causes patch canker in durian?\"";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rag::RunRequest;
    use crate::retrieval::Filter;

    fn ask(args: &[&str]) -> Result<RunRequest, String> {
        let cli = Cli::try_parse_from(["bounded-rag", "ask", "q"].iter().chain(args))
            .map_err(|e| e.to_string())?;
        match cli.command {
            Command::Ask(a) => a.request("q"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn repeated_filters_must_all_hold() {
        assert_eq!(ask(&[]).unwrap().filters, None);
        let one = ask(&["--filter", "product=durian"]).unwrap();
        assert_eq!(
            one.filters.as_deref(),
            Some(&Filter::equals("product", "durian"))
        );
        let two = ask(&["--filter", "product=durian", "--filter", "year = 2024"]).unwrap();
        assert_eq!(
            two.filters.as_deref(),
            Some(&Filter::And(vec![
                Filter::equals("product", "durian"),
                Filter::equals("year", "2024"),
            ]))
        );
        let err = ask(&["--filter", "durian"]).unwrap_err();
        assert!(err.contains("KEY=VALUE"), "{err}");
    }
}
