//! The CLI's argument types below the command table: `ask`'s flags, and the checking preset
//! that `ask` and `eval` share.

use crate::rag::{Mode, RunRequest};
use crate::search::Filter;
use clap::{Args, ValueEnum};

/// Checking preset.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ModeArg {
    /// No grading.
    Speed,
    /// Grade documents and check grounding.
    Balanced,
    /// Every check.
    Quality,
}

impl ModeArg {
    /// The request mode.
    pub(crate) fn mode(self) -> Mode {
        match self {
            ModeArg::Speed => Mode::Speed,
            ModeArg::Balanced => Mode::Balanced,
            ModeArg::Quality => Mode::Quality,
        }
    }
}

/// `ask` arguments; the flags mirror the request fields of the HTTP API.
#[derive(Debug, Args)]
pub(crate) struct AskArgs {
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
    /// Ask as the next turn of this conversation (created on first use); a follow-up may
    /// refer to earlier turns ("How is it treated?").
    #[arg(long, value_name = "THREAD_ID", conflicts_with = "resume")]
    pub thread: Option<String>,
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
    pub(crate) node_retrieval: Option<bool>,
    /// Search relations (true/false).
    #[arg(long)]
    pub(crate) edge_retrieval: Option<bool>,
    /// Search text passages (true/false).
    #[arg(long)]
    pub(crate) episode_retrieval: Option<bool>,
    /// Search community summaries (true/false).
    #[arg(long)]
    pub(crate) community_retrieval: Option<bool>,
    /// Checking preset.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Grade retrieved documents (true/false).
    #[arg(long)]
    pub(crate) enable_retrieved_documents_grading: Option<bool>,
    /// Check the answer is grounded (true/false).
    #[arg(long)]
    pub(crate) enable_hallucination_checking: Option<bool>,
    /// Check the answer resolves the question (true/false).
    #[arg(long)]
    pub(crate) enable_answer_quality_checking: Option<bool>,
    /// Only knowledge-base documents whose metadata KEY equals VALUE; repeat to require all.
    #[arg(long = "filter", value_name = "KEY=VALUE", value_parser = parse_filter)]
    pub(crate) filters: Vec<(String, String)>,
}

impl AskArgs {
    /// The request these flags describe, validated.
    pub(crate) fn request(&self, question: &str) -> Result<RunRequest, String> {
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
        r.thread_id = self.thread.clone();
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

/// `KEY=VALUE` of `--filter`.
pub(super) fn parse_filter(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err(format!(
            "`{text}` is not KEY=VALUE (e.g. --filter product=durian)"
        )),
    }
}
