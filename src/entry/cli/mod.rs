//! The `bounded-rag` command line: `ask`, `ingest`, `kb`, `eval`, `thread`, `runs`, `status`,
//! `fork`, `cancel`, `serve`, `graph`.
//! This file is the top of the CLI: it parses the command and dispatches to the sub-command
//! files, which share only what lies below them (`args`, `output`).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the commands, and `ask`, `status`, `cancel` |
//! | `args.rs` | `ask`'s arguments and the run request they make |
//! | `output.rs` | what the CLI prints, and exit codes |
//! | `ask_stream.rs` | `ask --stream`: events printed as they come |
//! | `threads.rs` | `thread show / list / delete` |
//! | `kb.rs`, `sync.rs` | `ingest` and `kb publish / list / use / sync`; `kb sync-status` |
//! | `search.rs` | `kb search`: the knowledge store searched directly |
//! | `eval.rs` | `eval`: a labelled question set through the workflow |
//! | `eval_answers.rs` | `eval`'s answer scores: sentences supported, citation recall and precision |
//! | `fork_command.rs` | `fork`: a new run from a step of a stored run |
//! | `resume_command.rs` | `resume`: answering a run that waits for a person; `ask` asking at a terminal |
//! | `runs.rs` | `runs export`: stored runs as an eval set |
//! | `serve.rs` | `serve` (the local server and playground) and `graph` (the workflow diagram) |

mod args;
mod ask_stream;
pub mod eval;
mod eval_answers;
mod eval_sources;
mod fork_command;
mod kb;
mod output;
mod resume_command;
mod runs;
mod search;
mod serve;
mod sync;
mod threads;

use super::App;
use crate::rag::{Caller, Events, RunRequest};
use crate::runs::{Answer, Cancel, Continuation, RunInput};
pub(crate) use args::AskArgs;
use clap::{Parser, Subcommand};
use eval::{eval_command, EvalArgs};
use fork_command::{fork_command, ForkArgs};
use kb::{ingest_command, kb_command, KbCommand};
use output::{exit_code, fail, fail_refusal, print_response};
use resume_command::ResumeArgs;
use runs::{runs_command, RunsCommand};
use serve::{graph_command, serve_command, GraphFormat, ServeArgs};
use std::path::PathBuf;
use std::process::ExitCode;
use threads::{thread_command, ThreadCommand};

/// Adaptive RAG that always terminates.
#[derive(Debug, Parser)]
#[command(name = "bounded-rag", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
    /// Hide per-step progress on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

/// Sub-commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
        /// What the knowledge base covers, in a sentence or two (1..=2000 characters), for the
        /// router that decides which questions go to it. Default: derived from the documents'
        /// titles and headings. KB_DESCRIPTION overrides it at run time.
        #[arg(long, value_parser = crate::config::kb_description_text)]
        description: Option<String>,
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
    /// Export stored runs (`runs export`) as an eval set for `bounded-rag eval`.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Show a stored run.
    Status {
        /// Run id.
        run_id: String,
        /// Print the full JSON response.
        #[arg(long)]
        json: bool,
    },
    /// Fork an ended run from one of its steps: a new run starts from the state that step
    /// left and runs only the steps after it (optionally with another question or mode).
    Fork(ForkArgs),
    /// Answer a run that waits for a person: its clarifying question (--answer), or the step
    /// it waits to run (--approve / --deny); it goes on from its checkpoint.
    Resume(ResumeArgs),
    /// Cancel a queued, suspended or running run (it keeps its answer so far).
    Cancel {
        /// Run id.
        run_id: String,
        /// Print the full JSON response.
        #[arg(long)]
        json: bool,
    },
    /// Serve the HTTP API, the SSE stream and a playground page on a local port, from the
    /// handlers the Lambda functions run (127.0.0.1:8080 by default; Ctrl-C stops).
    Serve(ServeArgs),
    /// Print the workflow graph (nodes, edges, the fork, the bounded loops and their counters).
    Graph {
        /// Diagram format.
        #[arg(long, value_enum, default_value = "mermaid")]
        format: GraphFormat,
    },
}

/// Runs the CLI; returns the process exit code (0 answered, 1 failed, 2 bad input). The
/// command's spans are exported when it ends, if export is on ([`crate::otlp::flush`]).
pub async fn run(cli: Cli) -> ExitCode {
    let code = run_command(cli).await;
    crate::otlp::flush().await;
    code
}

async fn run_command(cli: Cli) -> ExitCode {
    // Every CLI command reads PDF, Word and CSV sources (a KB_PATH folder, eval, ingest) and
    // may reach PostgreSQL directly (`postgres://`); the Lambda functions never get here, so the
    // parsers and the wire protocol stay out of their bootstraps.
    crate::ingest::enable_parsers();
    crate::kb::enable_direct();
    match cli.command {
        Command::Ingest {
            source,
            out,
            batch_size,
            strict,
            description,
        } => match ingest_command(
            &source,
            &out,
            batch_size.map(usize::from),
            strict,
            description,
        )
        .await
        {
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
        Command::Runs(command) => runs_command(command).await,
        Command::Status { run_id, json } => {
            let app = match App::from_env().await {
                Ok(app) => app,
                Err(e) => return fail(2, &e.to_string()),
            };
            match app.runs().status(None, &run_id).await {
                Ok(response) => print_response(&response, json),
                Err(e) => fail_refusal(&e),
            }
        }
        Command::Cancel { run_id, json } => {
            let app = match App::from_env().await {
                Ok(app) => app,
                Err(e) => return fail(2, &e.to_string()),
            };
            match app.runs().cancel(None, &run_id).await {
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
                Err(e) => fail_refusal(&e),
            }
        }
        Command::Ask(args) => ask(args).await,
        Command::Fork(args) => fork_command(args).await,
        Command::Resume(args) => resume_command::resume_command(args).await,
        Command::Serve(args) => serve_command(args).await,
        Command::Graph { format } => graph_command(format),
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
    ask_with(&app, args, request).await
}

/// `ask` with `app`: a new run (of the anonymous caller, through the same admission and the same
/// call as `POST /workflow/run`), or the continuation of a stored one (`--resume`).
async fn ask_with(app: &App, args: AskArgs, request: Option<RunRequest>) -> ExitCode {
    let runs = app.runs();
    let budget = runs.budget(None);
    let queue = app.work_queue();
    let result = match (request, args.resume) {
        (Some(request), _) if args.stream => {
            match runs
                .admit(Caller::Anonymous, RunInput::request(request))
                .await
            {
                Ok(admitted) => {
                    let run = |events| runs.run(admitted, &budget, queue, events);
                    ask_stream::run(args.json, run).await
                }
                Err(refusal) => Err(refusal),
            }
        }
        (Some(request), _) => {
            let input = RunInput::request(request);
            runs.start(Caller::Anonymous, input, &budget, queue).await
        }
        (None, Some(run_id)) if args.stream => {
            let run = |events| async move {
                let ran = runs.continue_run(&run_id, &budget, queue, events).await;
                ran.map(|ran| Answer::Ran(Box::new(ran)))
            };
            ask_stream::run(args.json, run).await
        }
        (None, Some(run_id)) => runs
            .continue_run(&run_id, &budget, queue, Events::default())
            .await
            .map(|ran| Answer::Ran(Box::new(ran))),
        (None, None) => return fail(2, NO_QUESTION),
    };
    let ran = match result {
        Ok(Answer::Ran(ran)) => ran,
        Ok(Answer::Busy(run_id)) => {
            let message = format!(
                "run {run_id} is being advanced by another invocation; follow it with \
                 `bounded-rag status {run_id}`"
            );
            return fail(1, &message);
        }
        Err(refusal) => return fail_refusal(&refusal),
    };
    if let Some(Continuation::Failed(e)) = &ran.continuation {
        eprintln!(
            "bounded-rag: the run is suspended and its continuation could not be queued: {e}"
        );
    }
    if args.stream {
        return exit_code(&ran.response);
    }
    // A run that asks a person: asked here when one is at the terminal.
    let response = if args.json {
        ran.response
    } else {
        match resume_command::ask_on_terminal(app, ran.response).await {
            Ok(response) => response,
            Err(code) => return code,
        }
    };
    print_response(&response, args.json)
}

const NO_QUESTION: &str =
    "a question or --resume RUN_ID is required, e.g. bounded-rag ask \"What causes patch canker in durian?\"";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rag::RunRequest;
    use crate::search::Filter;

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

    /// A memory store that keeps threads but cannot write a run's checkpoint (a full disk, a
    /// throttled table): every run fails after its thread turn started.
    struct NoRunWrites(crate::store::MemoryStore);

    #[async_trait::async_trait]
    impl crate::store::CheckpointStore for NoRunWrites {
        async fn get(
            &self,
            key: &str,
        ) -> Result<Option<crate::store::Versioned>, crate::store::StoreError> {
            self.0.get(key).await
        }

        async fn put(
            &self,
            key: &str,
            expected: u64,
            body: &[u8],
            lease: Option<&crate::store::Lease>,
        ) -> Result<u64, crate::store::StoreError> {
            if key.starts_with("run#") {
                return Err(crate::store::StoreError::Transient("injected".into()));
            }
            self.0.put(key, expected, body, lease).await
        }

        fn name(&self) -> &'static str {
            "no-run-writes"
        }

        fn threads(&self) -> Option<&dyn crate::store::ThreadStore> {
            self.0.threads()
        }
    }

    #[tokio::test]
    async fn a_failed_ask_gives_its_thread_turn_back_as_http_does() {
        use crate::rag::{RagGraph, RagLimits};
        use std::sync::Arc;
        let kb = Arc::new(crate::ingest::sample_kb().unwrap());
        let model = Arc::new(crate::llm::OfflineModel);
        let graph = RagGraph::new(model, kb, None, RagLimits::default());
        let store = Arc::new(NoRunWrites(crate::store::MemoryStore::new()));
        let clock = Arc::new(crate::clock::SystemClock);
        let app = App::from_parts(crate::config::Settings::default(), graph, store, clock);
        let cli = Cli::try_parse_from(["bounded-rag", "ask", "q", "--thread", "chat"]).unwrap();
        let Command::Ask(args) = cli.command else {
            panic!("ask")
        };
        let request = args.request("q").unwrap();
        assert_eq!(ask_with(&app, args, Some(request)).await, ExitCode::from(1));
        // The thread is not left busy with a run that never started.
        let threads = app.runs().threads();
        let (head, turns) = threads
            .show(&Caller::Anonymous, "chat", 0, 10)
            .await
            .unwrap();
        assert_eq!((head.active_run(), turns.len()), (None, 0));
    }
}
