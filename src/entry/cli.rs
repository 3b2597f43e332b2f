//! The `bounded-rag` command line: `ask`, `ingest`, `kb`, `eval`, `status`.

use super::cli_kb::{ingest_command, kb_command, KbCommand};
use super::cli_stream::Job;
use super::eval::{eval_command, EvalArgs};
use super::messages::{self, Surface};
use super::App;
use crate::engine::{Clock, EngineError, SystemClock};
use crate::rag::{Mode, RunRequest, RunResponse, RunStatus};
use crate::retrieval::Filter;
use clap::{Args, Parser, Subcommand, ValueEnum};
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
    /// Build a knowledge-base bundle from a folder of Markdown, text and HTML documents and
    /// JSONL entities; embeds every passage when EMBEDDINGS_BASE_URL is set.
    Ingest {
        /// Folder with .md/.txt/.html documents and optional nodes.jsonl / edges.jsonl /
        /// communities.jsonl.
        source: PathBuf,
        /// Where to write the bundle (use it with KB_PATH, or publish it).
        #[arg(long, default_value = ".bounded-rag/kb")]
        out: PathBuf,
        /// Passages per embeddings call (default: EMBEDDINGS_BATCH_SIZE, else 64).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=2048))]
        batch_size: Option<u16>,
    },
    /// Publish, list and roll back bundles on S3.
    #[command(subcommand)]
    Kb(KbCommand),
    /// Run a labelled question set through the workflow and report retrieval and answer
    /// quality.
    Eval(EvalArgs),
    /// Show a stored run.
    Status {
        /// Run id.
        run_id: String,
        /// Print the full JSON response.
        #[arg(long)]
        json: bool,
    },
}

/// Checking preset.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// No grading.
    Speed,
    /// Grade documents and check grounding.
    Balanced,
    /// Every check.
    Quality,
}

impl ModeArg {
    /// The request mode.
    pub fn mode(self) -> Mode {
        match self {
            ModeArg::Speed => Mode::Speed,
            ModeArg::Balanced => Mode::Balanced,
            ModeArg::Quality => Mode::Quality,
        }
    }
}

/// `ask` arguments; the flags mirror the request fields of the HTTP API.
#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question (1..=2000 characters).
    #[arg(required_unless_present = "resume")]
    pub question: Option<String>,
    /// Continue a stopped run instead of starting one.
    #[arg(long, value_name = "RUN_ID", conflicts_with = "question")]
    pub resume: Option<String>,
    /// Print the full JSON response (the HTTP API's body); with --stream, every event as a
    /// JSON line.
    #[arg(long)]
    pub json: bool,
    /// Print the answer as it is generated (steps on stderr).
    #[arg(long)]
    pub stream: bool,
    /// Most tokens the run may use (capped by MAX_TOKENS_PER_RUN).
    #[arg(long)]
    pub max_tokens: Option<u64>,
    /// Knowledge-base documents to retrieve (1..=10).
    #[arg(long)]
    pub n_retrieved_documents: Option<u32>,
    /// Web results to fetch (1..=10).
    #[arg(long)]
    pub n_web_searches: Option<u32>,
    /// Search entities (true/false).
    #[arg(long)]
    pub node_retrieval: Option<bool>,
    /// Search relations (true/false).
    #[arg(long)]
    pub edge_retrieval: Option<bool>,
    /// Search text passages (true/false).
    #[arg(long)]
    pub episode_retrieval: Option<bool>,
    /// Search community summaries (true/false).
    #[arg(long)]
    pub community_retrieval: Option<bool>,
    /// Checking preset.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Grade retrieved documents (true/false).
    #[arg(long)]
    pub enable_retrieved_documents_grading: Option<bool>,
    /// Check the answer is grounded (true/false).
    #[arg(long)]
    pub enable_hallucination_checking: Option<bool>,
    /// Check the answer resolves the question (true/false).
    #[arg(long)]
    pub enable_answer_quality_checking: Option<bool>,
    /// Only knowledge-base documents whose metadata KEY equals VALUE; repeat to require all.
    #[arg(long = "filter", value_name = "KEY=VALUE", value_parser = parse_filter)]
    pub filters: Vec<(String, String)>,
}

/// `KEY=VALUE` of `--filter`.
fn parse_filter(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err(format!(
            "`{text}` is not KEY=VALUE (e.g. --filter product=durian)"
        )),
    }
}

impl AskArgs {
    /// The request these flags describe, validated.
    pub fn request(&self, question: &str) -> Result<RunRequest, String> {
        let mut r = RunRequest::new(question);
        if let Some(v) = self.n_retrieved_documents {
            r.n_retrieved_documents = v;
        }
        if let Some(v) = self.n_web_searches {
            r.n_web_searches = v;
        }
        r.node_retrieval = self.node_retrieval.unwrap_or(r.node_retrieval);
        r.edge_retrieval = self.edge_retrieval.unwrap_or(r.edge_retrieval);
        r.episode_retrieval = self.episode_retrieval.unwrap_or(r.episode_retrieval);
        r.community_retrieval = self.community_retrieval.unwrap_or(r.community_retrieval);
        if let Some(mode) = self.mode {
            r.mode = mode.mode();
        }
        r.enable_retrieved_documents_grading = self.enable_retrieved_documents_grading;
        r.enable_hallucination_checking = self.enable_hallucination_checking;
        r.enable_answer_quality_checking = self.enable_answer_quality_checking;
        r.max_tokens = self.max_tokens;
        r.filters = self
            .filters
            .iter()
            .map(|(key, value)| Filter::equals(key, value))
            .reduce(Filter::and)
            .map(Box::new);
        r.validate().map_err(|e| {
            let flag = e.field.replace('_', "-");
            format!("invalid --{flag}: {}", e.message)
        })?;
        Ok(r)
    }
}

/// Runs the CLI; returns the process exit code (0 answered, 1 failed, 2 bad input).
pub async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Ingest {
            source,
            out,
            batch_size,
        } => match ingest_command(&source, &out, batch_size.map(usize::from)).await {
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
    let budget = app.budget(None);
    if args.stream {
        let job = match (request, args.resume) {
            (Some(request), _) => Job::New(uuid::Uuid::new_v4().to_string(), request),
            (None, Some(run_id)) => Job::Resume(run_id),
            (None, None) => return fail(2, NO_QUESTION),
        };
        return match super::cli_stream::run(&app, job, &budget, args.json).await {
            Ok(response) => exit_code(&response),
            Err(e) => fail_engine(&e),
        };
    }
    let workflow = app.workflow();
    let result = match (request, &args.resume) {
        (Some(request), _) => {
            let run_id = uuid::Uuid::new_v4().to_string();
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

fn print_response(response: &RunResponse, json: bool) -> ExitCode {
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

fn exit_code(response: &RunResponse) -> ExitCode {
    match response.status {
        RunStatus::Failed => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}

/// Human-readable answer, sources and a one-line summary.
pub fn render(r: &RunResponse) -> String {
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
    if !r.citations.is_empty() {
        out.push_str("\nSources:\n");
        for (i, c) in r.citations.iter().enumerate() {
            out.push_str(&format!("  [{}] {} <{}>\n", i + 1, c.title, c.url));
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
        m.limits_hit.join(",")
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

const NO_QUESTION: &str =
    "a question or --resume RUN_ID is required, e.g. bounded-rag ask \"What causes patch canker in durian?\"";

/// Exit 1 with the engine error as a person should read it (UTC times, what to do next).
fn fail_engine(e: &EngineError) -> ExitCode {
    fail(
        1,
        &messages::engine_error(e, SystemClock.now_ms(), Surface::Cli),
    )
}

pub(crate) fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("bounded-rag: {message}");
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

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
