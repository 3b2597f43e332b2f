//! Settings from the environment, typed and validated once at start-up.
//!
//! Variables are read through a lookup function ([`Settings::from_env`] uses the process
//! environment, tests pass a map to [`Settings::from_lookup`]). Surrounding whitespace is
//! trimmed from plain values and an empty value counts as unset. Every bad value becomes a
//! [`ConfigError`] naming the variable, the value (never for secrets) and what is accepted.

use crate::secrets::Secret;
use reqwest::Url;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// `LLM_BASE_URL` when unset.
pub const DEFAULT_LLM_BASE_URL: &str = "https://api.openai.com/v1";
/// `LLM_MODEL` when unset.
pub const DEFAULT_LLM_MODEL: &str = "gpt-4o-mini";
/// `STATE_DIR` when unset (relative to the working directory).
pub const DEFAULT_STATE_DIR: &str = ".bounded-rag/runs";

/// Host that always needs an API key.
const OPENAI_HOST: &str = "api.openai.com";

/// Which chat model backend answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmProvider {
    /// An OpenAI-compatible chat-completions server at `LLM_BASE_URL`.
    OpenAi,
    /// The built-in deterministic model: no network, no key.
    Offline,
}

impl LlmProvider {
    /// The value as written in `LLM_PROVIDER`.
    pub fn as_str(self) -> &'static str {
        match self {
            LlmProvider::OpenAi => "openai",
            LlmProvider::Offline => "offline",
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
    /// Wall-clock budgets.
    pub budgets: Budgets,
    /// AWS resources.
    pub aws: AwsSettings,
    /// `KB_PATH`: knowledge base to load instead of the bundled one.
    pub kb_path: Option<PathBuf>,
    /// `KB_URI`: a bundle published to S3 (`s3://BUCKET/PREFIX`); wins over `KB_PATH`.
    pub kb_uri: Option<crate::retrieval::s3::S3Location>,
    /// `KB_REFRESH_SECONDS`: how often a warm instance re-checks `KB_URI` (0..=86400 s,
    /// default 300; 0 = never).
    pub kb_refresh: Option<Duration>,
    /// `KB_MAX_PASSAGES_PER_DOCUMENT`: most passages of one document in a result list
    /// (0..=100, default 2; 0 = no cap).
    pub kb_max_passages_per_document: usize,
    /// Embeddings endpoint; `None` when `EMBEDDINGS_BASE_URL` is unset.
    pub embeddings: Option<EmbeddingsSettings>,
    /// `STATE_DIR`: folder of the local file store (default `.bounded-rag/runs`).
    pub state_dir: PathBuf,
    /// `MAX_BODY_BYTES`: largest accepted request body (1024..=1048576, default 65536).
    pub max_body_bytes: usize,
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
}

/// OpenAI-compatible embeddings settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingsSettings {
    /// `EMBEDDINGS_BASE_URL`: the client posts to `{base_url}/embeddings`.
    pub base_url: Url,
    /// `EMBEDDINGS_MODEL` (required with a base URL).
    pub model: String,
    /// `EMBEDDINGS_API_KEY`; may also come later from the `SECRETS_ID` secret.
    pub api_key: Option<Secret>,
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
    pub max_retries: u32,
    /// `MAX_REGENERATIONS`: regenerations of an ungrounded answer (0..=10, default 3).
    pub max_regenerations: u32,
    /// `WORKFLOW_RECURSION_LIMIT`: steps per run across resumes (1..=1000, default 50).
    pub recursion_limit: u32,
    /// `MAX_TOKENS_PER_RUN`: tokens per run across resumes (0..=100000000, 0 or unset =
    /// unbounded); a request's `max_tokens` can only lower it.
    pub max_tokens_per_run: Option<u64>,
    /// `MAX_ACTIVE_RUNS_PER_CALLER`: unfinished (`running` / `suspended`) runs one caller may
    /// have (0..=10000, 0 or unset = unlimited); past it, new runs get 429.
    pub max_active_runs_per_caller: Option<u32>,
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
}

/// A variable with a bad value. Messages name the variable and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not a whole number.
    #[error("{var}={value:?} is not a whole number; expected {expected}")]
    NotANumber {
        /// Variable name.
        var: &'static str,
        /// The value as given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A number outside the accepted range.
    #[error("{var}={value} is out of range; expected {expected}")]
    OutOfRange {
        /// Variable name.
        var: &'static str,
        /// The value as given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// Any other malformed value.
    #[error("{var}={value:?} is invalid; expected {expected}")]
    Invalid {
        /// Variable name.
        var: &'static str,
        /// The value as given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A malformed value that must not be printed (a key, or a URL carrying credentials).
    #[error("{var} is invalid (value not shown); expected {expected}")]
    InvalidSecret {
        /// Variable name.
        var: &'static str,
        /// What is accepted.
        expected: String,
    },
    /// The process environment holds bytes that are not UTF-8 (value not shown).
    #[error("{var} is not valid UTF-8")]
    NotUnicode {
        /// Variable name.
        var: String,
    },
    /// `openai` against OpenAI itself without any way to get a key.
    #[error(
        "LLM_PROVIDER=openai with LLM_BASE_URL={base_url} needs an API key; expected LLM_API_KEY \
         or SECRETS_ID to be set (or LLM_PROVIDER=offline, or LLM_BASE_URL of a server that \
         needs no key)"
    )]
    MissingApiKey {
        /// The OpenAI base URL in use.
        base_url: String,
    },
}

impl ConfigError {
    /// The variable at fault.
    pub fn var(&self) -> &str {
        match self {
            ConfigError::NotANumber { var, .. }
            | ConfigError::OutOfRange { var, .. }
            | ConfigError::Invalid { var, .. }
            | ConfigError::InvalidSecret { var, .. } => var,
            ConfigError::NotUnicode { var } => var,
            ConfigError::MissingApiKey { .. } => "LLM_API_KEY",
        }
    }
}

/// Accepted range and default of a numeric variable.
struct Num {
    min: u64,
    max: u64,
    default: u64,
    unit: &'static str,
}

impl Num {
    const fn new(min: u64, max: u64, default: u64, unit: &'static str) -> Self {
        Self {
            min,
            max,
            default,
            unit,
        }
    }

    fn expected(&self) -> String {
        match self.unit {
            "" => format!("a whole number in {}..={}", self.min, self.max),
            unit => format!("a whole number of {unit} in {}..={}", self.min, self.max),
        }
    }
}

/// Accepted ranges and defaults of the numeric variables.
const LLM_TIMEOUT: Num = Num::new(1_000, 300_000, 30_000, "milliseconds");
const LLM_CACHE_TTL: Num = Num::new(0, 2_592_000, 0, "seconds");
const DEADLINE_MARGIN: Num = Num::new(0, 60_000, 1_500, "milliseconds");
const RUN_TIMEOUT: Num = Num::new(1_000, 900_000, 120_000, "milliseconds");
const MAX_RETRIES: Num = Num::new(0, 10, 3, "");
const MAX_REGENERATIONS: Num = Num::new(0, 10, 3, "");
const RECURSION_LIMIT: Num = Num::new(1, 1000, 50, "");
const SECRETS_TTL: Num = Num::new(0, 86_400, 300, "seconds");
const RUN_TTL: Num = Num::new(60, 31_536_000, 604_800, "seconds");
const MAX_BODY_BYTES: Num = Num::new(1_024, 1_048_576, 65_536, "bytes");
const MAX_TOKENS_PER_RUN: Num = Num::new(0, 100_000_000, 0, "tokens (0 = unbounded)");
const MAX_ACTIVE_RUNS: Num = Num::new(0, 10_000, 0, "runs (0 = unlimited)");
const KB_REFRESH: Num = Num::new(0, 86_400, 300, "seconds (0 = never)");
const KB_MAX_PER_DOCUMENT: Num = Num::new(
    0,
    100,
    crate::retrieval::DEFAULT_MAX_PASSAGES_PER_DOCUMENT as u64,
    "passages (0 = no cap)",
);

impl Settings {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
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
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env(&lookup);
        let api_key = env.secret("LLM_API_KEY")?;
        let explicit_base_url = env.url("LLM_BASE_URL")?;
        let secrets_id = env.secrets_id("SECRETS_ID")?;
        let provider = match env.text("LLM_PROVIDER") {
            Some(value) if value.eq_ignore_ascii_case("openai") => LlmProvider::OpenAi,
            Some(value) if value.eq_ignore_ascii_case("offline") => LlmProvider::Offline,
            Some(value) => {
                return Err(ConfigError::Invalid {
                    var: "LLM_PROVIDER",
                    value,
                    expected: "one of: openai, offline".into(),
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
        let llm = LlmSettings {
            provider,
            base_url,
            model: env
                .text("LLM_MODEL")
                .unwrap_or_else(|| DEFAULT_LLM_MODEL.to_owned()),
            api_key,
            timeout: env.millis("LLM_TIMEOUT_MS", LLM_TIMEOUT)?,
            cache_ttl: Some(env.seconds("LLM_CACHE_TTL_SECONDS", LLM_CACHE_TTL)?)
                .filter(|ttl| !ttl.is_zero()),
        };
        let web_key = env.secret("WEB_SEARCH_API_KEY")?;
        let web = env.url("WEB_SEARCH_BASE_URL")?.map(|base_url| WebSettings {
            base_url,
            api_key: web_key,
        });
        let limits = Limits {
            max_retries: env.count("MAX_RETRIES", MAX_RETRIES)?,
            max_regenerations: env.count("MAX_REGENERATIONS", MAX_REGENERATIONS)?,
            recursion_limit: env.count("WORKFLOW_RECURSION_LIMIT", RECURSION_LIMIT)?,
            max_tokens_per_run: Some(env.number("MAX_TOKENS_PER_RUN", MAX_TOKENS_PER_RUN)?)
                .filter(|n| *n > 0),
            max_active_runs_per_caller: Some(
                env.count("MAX_ACTIVE_RUNS_PER_CALLER", MAX_ACTIVE_RUNS)?,
            )
            .filter(|n| *n > 0),
        };
        let budgets = Budgets {
            deadline_margin: env.millis("DEADLINE_MARGIN_MS", DEADLINE_MARGIN)?,
            run_timeout: env.millis("RUN_TIMEOUT_MS", RUN_TIMEOUT)?,
        };
        let aws = AwsSettings {
            secrets_id,
            secrets_ttl: env.seconds("SECRETS_TTL_SECONDS", SECRETS_TTL)?,
            checkpoint_table: env.table_name("CHECKPOINT_TABLE")?,
            work_queue_url: env.url("WORK_QUEUE_URL")?.map(String::from),
            run_ttl: env.seconds("RUN_TTL_SECONDS", RUN_TTL)?,
        };
        let max_body_bytes = env.number("MAX_BODY_BYTES", MAX_BODY_BYTES)?;
        let kb_uri = match env.text("KB_URI") {
            None => None,
            Some(value) => Some(
                value
                    .parse()
                    .map_err(|reason: String| ConfigError::Invalid {
                        var: "KB_URI",
                        value,
                        expected: format!("s3://BUCKET/PREFIX ({reason})"),
                    })?,
            ),
        };
        let embeddings_key = env.secret("EMBEDDINGS_API_KEY")?;
        let embeddings = match env.url("EMBEDDINGS_BASE_URL")? {
            None => None,
            Some(base_url) => Some(EmbeddingsSettings {
                base_url,
                model: env.text("EMBEDDINGS_MODEL").ok_or(ConfigError::Invalid {
                    var: "EMBEDDINGS_MODEL",
                    value: String::new(),
                    expected: "the embedding model's name when EMBEDDINGS_BASE_URL is set".into(),
                })?,
                api_key: embeddings_key,
            }),
        };
        Ok(Settings {
            llm,
            web,
            limits,
            budgets,
            aws,
            kb_path: env.text("KB_PATH").map(PathBuf::from),
            kb_uri,
            kb_refresh: Some(env.seconds("KB_REFRESH_SECONDS", KB_REFRESH)?)
                .filter(|d| !d.is_zero()),
            kb_max_passages_per_document: env
                .count("KB_MAX_PASSAGES_PER_DOCUMENT", KB_MAX_PER_DOCUMENT)?
                as usize,
            embeddings,
            state_dir: PathBuf::from(
                env.text("STATE_DIR")
                    .unwrap_or_else(|| DEFAULT_STATE_DIR.to_owned()),
            ),
            max_body_bytes: usize::try_from(max_body_bytes).unwrap_or(usize::MAX),
        })
    }
}

impl Default for Settings {
    /// Every default: offline provider, local store, no web search.
    fn default() -> Self {
        Self::from_lookup(|_| None).expect("the defaults are valid")
    }
}

/// Typed readers over a lookup function.
struct Env<'a>(&'a dyn Fn(&str) -> Option<String>);

impl Env<'_> {
    /// Trimmed value; `None` when unset or blank.
    fn text(&self, var: &str) -> Option<String> {
        let value = (self.0)(var)?;
        let value = value.trim();
        (!value.is_empty()).then(|| value.to_owned())
    }

    /// A key: never trimmed and never echoed in errors.
    fn secret(&self, var: &'static str) -> Result<Option<Secret>, ConfigError> {
        match (self.0)(var) {
            None => Ok(None),
            Some(value) if value.is_empty() => Ok(None),
            Some(value) if value.chars().any(|c| c.is_whitespace() || c.is_control()) => {
                Err(ConfigError::InvalidSecret {
                    var,
                    expected: "a key without whitespace or control characters".into(),
                })
            }
            Some(value) => Ok(Some(Secret::new(value))),
        }
    }

    fn number(&self, var: &'static str, num: Num) -> Result<u64, ConfigError> {
        let Some(value) = self.text(var) else {
            return Ok(num.default);
        };
        let digits = value.strip_prefix(['+', '-']).unwrap_or(&value);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ConfigError::NotANumber {
                var,
                value,
                expected: num.expected(),
            });
        }
        // Negative and overlong numbers fail to parse: they are in no range.
        let unsigned = value.strip_prefix('+').unwrap_or(&value);
        match unsigned.parse::<u64>() {
            Ok(n) if (num.min..=num.max).contains(&n) => Ok(n),
            _ => Err(ConfigError::OutOfRange {
                var,
                value,
                expected: num.expected(),
            }),
        }
    }

    fn count(&self, var: &'static str, num: Num) -> Result<u32, ConfigError> {
        // Every count range is far below u32::MAX.
        self.number(var, num)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    fn millis(&self, var: &'static str, num: Num) -> Result<Duration, ConfigError> {
        self.number(var, num).map(Duration::from_millis)
    }

    fn seconds(&self, var: &'static str, num: Num) -> Result<Duration, ConfigError> {
        self.number(var, num).map(Duration::from_secs)
    }

    /// An absolute http(s) URL without credentials.
    fn url(&self, var: &'static str) -> Result<Option<Url>, ConfigError> {
        let Some(value) = self.text(var) else {
            return Ok(None);
        };
        const EXPECTED: &str = "an absolute http:// or https:// URL";
        let url = match Url::parse(&value) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => url,
            _ => {
                return Err(ConfigError::Invalid {
                    var,
                    value,
                    expected: EXPECTED.into(),
                })
            }
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(ConfigError::InvalidSecret {
                var,
                expected: format!(
                    "{EXPECTED} without user or password (use the *_API_KEY variable)"
                ),
            });
        }
        Ok(Some(url))
    }

    /// A Secrets Manager secret name or ARN.
    fn secrets_id(&self, var: &'static str) -> Result<Option<String>, ConfigError> {
        self.checked(
            var,
            "a secret name or ARN of 1..=2048 characters without whitespace",
            |v| v.len() <= 2048 && !v.chars().any(char::is_whitespace),
        )
    }

    /// A DynamoDB table name or table ARN.
    fn table_name(&self, var: &'static str) -> Result<Option<String>, ConfigError> {
        let expected = "a DynamoDB table name (3..=255 of A-Z a-z 0-9 _ - .) or a table ARN";
        self.checked(var, expected, |v| {
            let name_ok = (3..=255).contains(&v.len())
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
            let arn_ok = v.starts_with("arn:") && v.contains(":table/") && v.len() <= 1024;
            name_ok || arn_ok
        })
    }

    fn checked(
        &self,
        var: &'static str,
        expected: &str,
        valid: impl Fn(&str) -> bool,
    ) -> Result<Option<String>, ConfigError> {
        match self.text(var) {
            Some(value) if !valid(&value) => Err(ConfigError::Invalid {
                var,
                value,
                expected: expected.into(),
            }),
            other => Ok(other),
        }
    }
}
