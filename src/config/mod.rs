//! Settings from the environment, typed and validated once at start-up.
//!
//! Variables are read through a lookup function ([`Settings::from_env`] uses the process
//! environment, tests pass a map to [`Settings::from_lookup`]). Surrounding whitespace is
//! trimmed from plain values and an empty value counts as unset. Every bad value becomes a
//! [`ConfigError`] naming the variable, the value (never for secrets) and what is accepted.

//!
//! Every default lives here, also those a client or loader applies when built without
//! settings (the OpenAI client's timeouts; the knowledge defaults in `config/knowledge.rs`:
//! refresh, per-document cap, bundle memory limit, ingest batches and retries). Config depends
//! on no room that uses it: the rooms take values, or these defaults.

mod env;
mod error;

pub use error::ConfigError;
mod interrupts;
mod kb_location;
mod knowledge;
mod model_window;
mod reasoning;
mod speculation;
mod sql_location;

pub use interrupts::{Gated, Interrupts, DEFAULT_INTERRUPT_TIMEOUT};
pub use kb_location::{BedrockKbLocation, BedrockSearch, KbLocation};
pub(crate) use knowledge::{
    kb_description_text, DEFAULT_INGEST_RETRY, DEFAULT_KB_CACHE_DIR, DEFAULT_KB_MEMORY_LIMIT,
    DEFAULT_KB_REFRESH, DEFAULT_MAX_DOCUMENT_BYTES, DEFAULT_MAX_PASSAGES_PER_DOCUMENT,
    DEFAULT_TENANT_INDEX_ROWS,
};
pub use knowledge::{
    EmbeddingsProvider, EmbeddingsSettings, EmbeddingsTuning, RerankProvider, RerankSettings,
};
pub(crate) use model_window::ModelWindow;
pub use reasoning::ReasoningEffort;
pub use speculation::Speculation;
pub use sql_location::{PgLocation, PgTls, RdsDataLocation};
mod thread_settings;
pub use thread_settings::ThreadSettings;

use crate::secrets::Secret;
use env::{Env, Num};
use reqwest::Url;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// `LLM_BASE_URL` when unset.
pub(crate) const DEFAULT_LLM_BASE_URL: &str = "https://api.openai.com/v1";
/// `LLM_MODEL` when unset.
pub(crate) const DEFAULT_LLM_MODEL: &str = "gpt-4o-mini";
/// `STATE_DIR` when unset (relative to the working directory).
pub(crate) const DEFAULT_STATE_DIR: &str = ".bounded-rag/runs";
/// `LLM_TIMEOUT_MS` when unset, and the OpenAI client's own default.
pub(crate) const DEFAULT_LLM_TIMEOUT: Duration = Duration::from_millis(30_000);
/// The OpenAI client's connect timeout (no variable sets it).
pub(crate) const DEFAULT_LLM_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// `SECRETS_TTL_SECONDS` when unset.
pub(crate) const DEFAULT_SECRETS_TTL: Duration = Duration::from_secs(300);

/// Host that always needs an API key.
const OPENAI_HOST: &str = "api.openai.com";

/// Which chat model backend answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmProvider {
    /// An OpenAI-compatible chat-completions server at `LLM_BASE_URL`.
    OpenAi,
    /// The built-in deterministic model: no network, no key.
    Offline,
    /// Amazon Bedrock (`Converse` / `ConverseStream`), credentials from the AWS environment
    /// (the function role): no key.
    Bedrock,
}

impl LlmProvider {
    /// The value as written in `LLM_PROVIDER`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LlmProvider::OpenAi => "openai",
            LlmProvider::Offline => "offline",
            LlmProvider::Bedrock => "bedrock",
        }
    }
}

impl fmt::Display for LlmProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every setting, grouped by the layer that uses it. `Debug` never shows a key.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Chat model.
    pub llm: LlmSettings,
    /// Web search; `None` when `WEB_SEARCH_BASE_URL` is unset.
    pub web: Option<WebSettings>,
    /// Workflow loop limits.
    pub limits: Limits,
    /// `SPECULATION`: `on` (default) or `off`.
    pub speculation: Speculation,
    /// `CLARIFY`, `APPROVE_STEPS`, `INTERRUPT_TIMEOUT_SECONDS`: when a run waits for a person.
    pub interrupts: Interrupts,
    /// Wall-clock budgets.
    pub budgets: Budgets,
    /// AWS resources.
    pub aws: AwsSettings,
    /// `KB_PATH`: knowledge base to load instead of the bundled one.
    pub kb_path: Option<PathBuf>,
    /// `KB_URI`: a bundle published to S3 (`s3://BUCKET/PREFIX`) or an Amazon Bedrock
    /// knowledge base (`bedrock-kb://ID`); wins over `KB_PATH`.
    pub kb_uri: Option<KbLocation>,
    /// `KB_REFRESH_SECONDS`: how often a warm instance re-checks `KB_URI` (0..=86400 s,
    /// default 300; 0 = never).
    pub kb_refresh: Option<Duration>,
    /// `KB_MAX_PASSAGES_PER_DOCUMENT`: most passages of one document in a result list
    /// (0..=100, default 2; 0 = no cap).
    pub kb_max_passages_per_document: usize,
    /// Embeddings backend; `None` when neither `EMBEDDINGS_BASE_URL` nor
    /// `EMBEDDINGS_PROVIDER=bedrock` is set.
    pub embeddings: Option<EmbeddingsSettings>,
    /// `EMBEDDINGS_BATCH_SIZE`, `EMBEDDINGS_TIMEOUT_MS`, `EMBEDDINGS_CONCURRENCY` and the
    /// `EMBEDDINGS_*_PREFIX` instructions.
    pub embeddings_tuning: EmbeddingsTuning,
    /// The rerank stage; `None` when `RERANK_BASE_URL` is unset.
    pub rerank: Option<RerankSettings>,
    /// `KB_TENANT_KEY`: the metadata key whose value must equal the caller's id.
    pub kb_tenant_key: Option<String>,
    /// `KB_TENANT_INDEX_ROWS`: the rows from which a tenant of a PostgreSQL store gets a
    /// vector index of its own, made by ingest and sync (0..=1000000000, default 5000; 0 =
    /// none).
    pub kb_tenant_index_rows: u64,
    /// `KB_DESCRIPTION`: what the knowledge base covers, for the router (1..=2000
    /// characters); wins over the description recorded in the bundle.
    pub kb_description: Option<String>,
    /// `STATE_DIR`: folder of the local file store (default `.bounded-rag/runs`).
    pub state_dir: PathBuf,
    /// `MAX_BODY_BYTES`: largest accepted request body (1024..=1048576, default 65536).
    pub max_body_bytes: usize,
    /// `THREAD_HISTORY_TURNS`, `THREAD_HISTORY_TOKENS`, `THREAD_TTL_SECONDS`.
    pub threads: ThreadSettings,
}

/// Chat model settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmSettings {
    /// `LLM_PROVIDER`: `openai` by default when a key, base URL or secret id is configured,
    /// `offline` otherwise.
    pub provider: LlmProvider,
    /// `LLM_BASE_URL`: OpenAI-compatible base URL up to `/v1` (default OpenAI's).
    pub base_url: Url,
    /// `LLM_MODEL` (default `gpt-4o-mini`).
    pub model: String,
    /// `LLM_API_KEY`; may also come later from the `SECRETS_ID` secret.
    pub api_key: Option<Secret>,
    /// `LLM_TIMEOUT_MS`: per-call timeout (1000..=300000 ms, default 30000).
    pub timeout: Duration,
    /// `LLM_CACHE_TTL_SECONDS`: how long model replies are cached in the checkpoint store
    /// (0..=2592000 s); `None` when 0, the default: no response cache.
    pub cache_ttl: Option<Duration>,
    /// `LLM_REASONING_EFFORT`: how hard a reasoning model thinks; `None` (unset) sends none.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// `LLM_CONTEXT_TOKENS`, `LLM_MAX_ANSWER_TOKENS` and `LLM_REASONING_TOKENS`.
    pub(crate) window: ModelWindow,
}

/// Tavily-compatible web search settings.
#[derive(Debug, Clone, PartialEq)]
pub struct WebSettings {
    /// `WEB_SEARCH_BASE_URL`: the client posts to `{base_url}/search`.
    pub base_url: Url,
    /// `WEB_SEARCH_API_KEY`; may also come later from the `SECRETS_ID` secret.
    pub api_key: Option<Secret>,
}

/// Workflow loop limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `MAX_RETRIES`: query rewrites before falling back to web search (0..=10, default 3).
    pub max_query_rewrites: u32,
    /// `MAX_REGENERATIONS`: regenerations of an ungrounded answer (0..=10, default 3).
    pub max_regenerations: u32,
    /// `WORKFLOW_RECURSION_LIMIT`: steps per run across resumes (1..=1000, default 50).
    pub recursion_limit: u32,
    /// `MAX_TOKENS_PER_RUN`: tokens per run across resumes (0..=100000000, 0 or unset =
    /// unbounded); a request's `max_tokens` can only lower it.
    pub(crate) max_tokens_per_run: Option<u64>,
    /// `MAX_ACTIVE_RUNS_PER_CALLER`: unfinished (`running` / `suspended`) runs one caller may
    /// have (0..=10000, 0 or unset = unlimited); past it, new runs get 429.
    pub max_active_runs_per_caller: Option<u32>,
    /// `MAX_REQUESTS_PER_CALLER_PER_MINUTE`: run requests one caller may make in a minute
    /// (0..=100000, 0 or unset = unlimited); past it, 429 until the minute ends.
    pub max_requests_per_caller_per_minute: Option<u32>,
}

/// Wall-clock budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// `DEADLINE_MARGIN_MS`: kept free before the Lambda deadline (0..=60000 ms, default 1500).
    pub deadline_margin: Duration,
    /// `RUN_TIMEOUT_MS`: budget when there is no usable deadline (1000..=900000 ms,
    /// default 120000).
    pub run_timeout: Duration,
}

/// AWS resources; unset ones mean "run locally".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsSettings {
    /// `SECRETS_ID`: Secrets Manager secret whose JSON holds `LLM_API_KEY` / `WEB_SEARCH_API_KEY`.
    pub secrets_id: Option<String>,
    /// `SECRETS_TTL_SECONDS`: how long a fetched secret is cached (0..=86400 s, default 300).
    pub secrets_ttl: Duration,
    /// `CHECKPOINT_TABLE`: DynamoDB table name or ARN; unset means a local store.
    pub checkpoint_table: Option<String>,
    /// `WORK_QUEUE_URL`: SQS queue for asynchronous runs and continuations.
    pub work_queue_url: Option<String>,
    /// `RUN_TTL_SECONDS`: how long checkpoints are kept (60..=31536000 s, default 604800).
    pub run_ttl: Duration,
    /// `EVENT_BUS_NAME`: EventBridge bus (name or ARN) that gets one `Run Finished` event per
    /// run reaching a final status; unset means none is sent.
    pub event_bus_name: Option<String>,
}

/// Accepted ranges and defaults of the numeric variables.
const LLM_TIMEOUT: Num = Num::new(1_000, 300_000, millis(DEFAULT_LLM_TIMEOUT), "milliseconds");
const LLM_CACHE_TTL: Num = Num::new(0, 2_592_000, 0, "seconds");
const DEADLINE_MARGIN: Num = Num::new(0, 60_000, 1_500, "milliseconds");
const RUN_TIMEOUT: Num = Num::new(1_000, 900_000, 120_000, "milliseconds");
const MAX_RETRIES: Num = Num::new(0, 10, 3, "");
const MAX_REGENERATIONS: Num = Num::new(0, 10, 3, "");
/// Default of `MAX_RETRIES` (query rewrites), for workflows built without settings.
pub(crate) const DEFAULT_MAX_QUERY_REWRITES: u32 = MAX_RETRIES.default as u32;
/// Default of `MAX_REGENERATIONS`, for workflows built without settings.
pub(crate) const DEFAULT_MAX_REGENERATIONS: u32 = MAX_REGENERATIONS.default as u32;
const RECURSION_LIMIT: Num = Num::new(1, 1000, 50, "");
const SECRETS_TTL: Num = Num::new(0, 86_400, DEFAULT_SECRETS_TTL.as_secs(), "seconds");
const RUN_TTL: Num = Num::new(60, 31_536_000, 604_800, "seconds");
const MAX_BODY_BYTES: Num = Num::new(1_024, 1_048_576, 65_536, "bytes");
const MAX_TOKENS_PER_RUN: Num = Num::new(0, 100_000_000, 0, "tokens (0 = unbounded)");
const MAX_ACTIVE_RUNS: Num = Num::new(0, 10_000, 0, "runs (0 = unlimited)");
const MAX_REQUESTS_PER_MINUTE: Num = Num::new(0, 100_000, 0, "requests (0 = unlimited)");

/// A default in the unit of its variable.
const fn millis(duration: Duration) -> u64 {
    duration.as_millis() as u64
}

impl Settings {
    /// Reads the process environment.
    pub(crate) fn from_env() -> Result<Self, ConfigError> {
        let not_unicode = std::cell::Cell::new(None);
        let settings = Self::from_lookup(|name| match std::env::var(name) {
            Ok(value) => Some(value),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(_)) => {
                not_unicode.set(Some(name.to_owned()));
                None
            }
        });
        match not_unicode.take() {
            Some(var) => Err(ConfigError::NotUnicode { var }),
            None => settings,
        }
    }

    /// Reads variables through `lookup` (name to value; `None` or `""` means unset).
    ///
    /// Variables are read, and so checked, in a fixed order: the first bad one is reported.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env(&lookup);
        // These three decide together whether a key can be had (now or from the secret).
        let api_key = env.secret("LLM_API_KEY")?;
        let explicit_base_url = env.url("LLM_BASE_URL")?;
        let secrets_id = env.secrets_id("SECRETS_ID")?;
        let llm = llm(&env, api_key, explicit_base_url, secrets_id.as_deref())?;
        let web = web(&env)?;
        let limits = Limits {
            max_query_rewrites: env.count("MAX_RETRIES", MAX_RETRIES)?,
            max_regenerations: env.count("MAX_REGENERATIONS", MAX_REGENERATIONS)?,
            recursion_limit: env.count("WORKFLOW_RECURSION_LIMIT", RECURSION_LIMIT)?,
            max_tokens_per_run: Some(env.number("MAX_TOKENS_PER_RUN", MAX_TOKENS_PER_RUN)?)
                .filter(|n| *n > 0),
            max_active_runs_per_caller: Some(
                env.count("MAX_ACTIVE_RUNS_PER_CALLER", MAX_ACTIVE_RUNS)?,
            )
            .filter(|n| *n > 0),
            max_requests_per_caller_per_minute: Some(env.count(
                "MAX_REQUESTS_PER_CALLER_PER_MINUTE",
                MAX_REQUESTS_PER_MINUTE,
            )?)
            .filter(|n| *n > 0),
        };
        let budgets = Budgets {
            deadline_margin: env.millis("DEADLINE_MARGIN_MS", DEADLINE_MARGIN)?,
            run_timeout: env.millis("RUN_TIMEOUT_MS", RUN_TIMEOUT)?,
        };
        let aws = aws(&env, secrets_id)?;
        let max_body_bytes = env.number("MAX_BODY_BYTES", MAX_BODY_BYTES)?;
        let kb_uri = knowledge::kb_uri(&env)?;
        let embeddings = knowledge::embeddings(&env)?;
        Ok(Settings {
            llm,
            web,
            limits,
            speculation: speculation::from_env(&env)?,
            interrupts: interrupts::from_env(&env)?,
            budgets,
            aws,
            kb_path: env.text("KB_PATH").map(PathBuf::from),
            kb_uri,
            kb_refresh: knowledge::kb_refresh(&env)?,
            kb_max_passages_per_document: knowledge::max_passages_per_document(&env)?,
            embeddings,
            embeddings_tuning: knowledge::embeddings_tuning(&env)?,
            rerank: knowledge::rerank(&env)?,
            kb_tenant_key: knowledge::tenant_key(&env)?,
            kb_tenant_index_rows: knowledge::tenant_index_rows(&env)?,
            kb_description: knowledge::kb_description(&env)?,
            state_dir: PathBuf::from(
                env.text("STATE_DIR")
                    .unwrap_or_else(|| DEFAULT_STATE_DIR.to_owned()),
            ),
            max_body_bytes: usize::try_from(max_body_bytes).unwrap_or(usize::MAX),
            threads: thread_settings::threads(&env)?,
        })
    }
}

/// The chat model: `LLM_PROVIDER` (defaulting on whether a key can be had), then the model,
/// timeout and cache. OpenAI itself without any way to get a key is refused.
fn llm(
    env: &Env<'_>,
    api_key: Option<Secret>,
    explicit_base_url: Option<Url>,
    secrets_id: Option<&str>,
) -> Result<LlmSettings, ConfigError> {
    let provider = match env.text("LLM_PROVIDER") {
        Some(value) if value.eq_ignore_ascii_case("openai") => LlmProvider::OpenAi,
        Some(value) if value.eq_ignore_ascii_case("offline") => LlmProvider::Offline,
        Some(value) if value.eq_ignore_ascii_case("bedrock") => LlmProvider::Bedrock,
        Some(value) => {
            return Err(ConfigError::Invalid {
                var: "LLM_PROVIDER",
                value,
                expected: "one of: openai, offline, bedrock".into(),
            })
        }
        None if api_key.is_some() || explicit_base_url.is_some() || secrets_id.is_some() => {
            LlmProvider::OpenAi
        }
        None => LlmProvider::Offline,
    };
    let base_url = match explicit_base_url {
        Some(url) => url,
        None => Url::parse(DEFAULT_LLM_BASE_URL).expect("the default base URL is valid"),
    };
    if provider == LlmProvider::OpenAi
        && base_url.host_str() == Some(OPENAI_HOST)
        && api_key.is_none()
        && secrets_id.is_none()
    {
        return Err(ConfigError::MissingApiKey {
            base_url: base_url.to_string(),
        });
    }
    let model = match env.text("LLM_MODEL") {
        Some(model) => model,
        // No Bedrock model is enabled in every account: the operator names one.
        None if provider == LlmProvider::Bedrock => {
            return Err(ConfigError::Invalid {
                var: "LLM_MODEL",
                value: String::new(),
                expected: "a Bedrock model id or inference profile (e.g. \
                           us.anthropic.claude-3-5-haiku-20241022-v1:0) with LLM_PROVIDER=bedrock"
                    .into(),
            })
        }
        None => DEFAULT_LLM_MODEL.to_owned(),
    };
    Ok(LlmSettings {
        provider,
        base_url,
        model,
        api_key,
        timeout: env.millis("LLM_TIMEOUT_MS", LLM_TIMEOUT)?,
        cache_ttl: Some(env.seconds("LLM_CACHE_TTL_SECONDS", LLM_CACHE_TTL)?)
            .filter(|ttl| !ttl.is_zero()),
        reasoning_effort: reasoning::reasoning_effort(env)?,
        window: model_window::model_window(env)?,
    })
}

/// Web search, when `WEB_SEARCH_BASE_URL` is set (the key is checked either way).
fn web(env: &Env<'_>) -> Result<Option<WebSettings>, ConfigError> {
    let web_key = env.secret("WEB_SEARCH_API_KEY")?;
    Ok(env.url("WEB_SEARCH_BASE_URL")?.map(|base_url| WebSettings {
        base_url,
        api_key: web_key,
    }))
}

/// AWS resources: the secret (its id read earlier), the checkpoint table, the work queue.
fn aws(env: &Env<'_>, secrets_id: Option<String>) -> Result<AwsSettings, ConfigError> {
    Ok(AwsSettings {
        secrets_id,
        secrets_ttl: env.seconds("SECRETS_TTL_SECONDS", SECRETS_TTL)?,
        checkpoint_table: env.table_name("CHECKPOINT_TABLE")?,
        work_queue_url: env.url("WORK_QUEUE_URL")?.map(String::from),
        run_ttl: env.seconds("RUN_TTL_SECONDS", RUN_TTL)?,
        event_bus_name: env.checked(
            "EVENT_BUS_NAME",
            "an EventBridge bus name (1..=256 of A-Z a-z 0-9 . _ - /) or a bus ARN",
            |v| {
                let name_ok = (1..=256).contains(&v.len())
                    && v.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b));
                let arn_ok = v.starts_with("arn:") && v.contains(":event-bus/") && v.len() <= 1600;
                name_ok || arn_ok
            },
        )?,
    })
}

impl Default for Settings {
    /// Every default: offline provider, local store, no web search.
    fn default() -> Self {
        Self::from_lookup(|_| None).expect("the defaults are valid")
    }
}
