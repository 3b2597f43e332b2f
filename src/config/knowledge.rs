//! The knowledge settings and every knowledge default: where the knowledge base comes from
//! (`KB_URI`, `KB_REFRESH_SECONDS`, `KB_MAX_PASSAGES_PER_DOCUMENT`), the embeddings backend
//! (`EMBEDDINGS_PROVIDER`, `EMBEDDINGS_BASE_URL`, `EMBEDDINGS_MODEL`, ...), how ingest talks to
//! it (`EMBEDDINGS_BATCH_SIZE`, `EMBEDDINGS_TIMEOUT_MS`, `EMBEDDINGS_CONCURRENCY`, the query and
//! passage prefixes), the optional rerank stage (`RERANK_*`) and per-caller tenant pinning
//! (`KB_TENANT_KEY`). Kept apart from the other groups so each reads on its own.
//!
//! The `DEFAULT_*` values are also what the knowledge rooms (`search`, `ingest`) apply when
//! they are built without settings (tests, benches): the rooms take values, config holds the
//! defaults.

use super::env::{Env, Num};
use super::error::ConfigError;
use super::kb_location::KbLocation;
use crate::retry::RetryPolicy;
use crate::secrets::Secret;
use reqwest::Url;
use std::time::Duration;

/// `KB_REFRESH_SECONDS` when unset, and the knowledge loader's own default.
pub(crate) const DEFAULT_KB_REFRESH: Duration = Duration::from_secs(300);
/// `KB_MAX_PASSAGES_PER_DOCUMENT` when unset, and the knowledge base's own default.
pub(crate) const DEFAULT_MAX_PASSAGES_PER_DOCUMENT: usize = 2;
/// `KB_TENANT_INDEX_ROWS` when unset: the rows from which a tenant of a PostgreSQL store gets a
/// vector index of its own. Below it a pinned search computes the exact distance to each of the
/// tenant's rows (BENCHMARKS.md "Tenants at a million passages").
pub(crate) const DEFAULT_TENANT_INDEX_ROWS: u64 = 5_000;
/// Bundles of at most this many bytes are loaded from S3 into memory; larger ones to disk.
pub(crate) const DEFAULT_KB_MEMORY_LIMIT: u64 = 256 * 1024 * 1024;
/// Folder (under the temporary folder, Lambda's `/tmp`) of bundles too large for memory.
pub(crate) const DEFAULT_KB_CACHE_DIR: &str = "bounded-rag-kb";
/// `MAX_DOCUMENT_BYTES` when unset: 50 MB, as Bedrock Knowledge Bases.
pub(crate) const DEFAULT_MAX_DOCUMENT_BYTES: u64 = 50 * 1024 * 1024;
/// Retries of an ingest's embeddings batch after a transient failure (then the ingest stops,
/// resumable).
pub(crate) const DEFAULT_INGEST_RETRY: RetryPolicy = RetryPolicy {
    max_retries: 4,
    base_delay: Duration::from_millis(500),
    max_delay: Duration::from_secs(10),
};

const KB_REFRESH: Num = Num::new(
    0,
    86_400,
    DEFAULT_KB_REFRESH.as_secs(),
    "seconds (0 = never)",
);
const KB_MAX_PER_DOCUMENT: Num = Num::new(
    0,
    100,
    DEFAULT_MAX_PASSAGES_PER_DOCUMENT as u64,
    "passages (0 = no cap)",
);

const KB_TENANT_INDEX_ROWS: Num = Num::new(
    0,
    1_000_000_000,
    DEFAULT_TENANT_INDEX_ROWS,
    "rows (0 = no tenant indexes)",
);

const EMBEDDINGS_BATCH_SIZE: Num = Num::new(1, 2048, 64, "passages per call");
const EMBEDDINGS_TIMEOUT: Num = Num::new(1_000, 3_600_000, 60_000, "milliseconds");
const EMBEDDINGS_CONCURRENCY: Num = Num::new(1, 32, 1, "calls in flight");
/// Longest accepted instruction prefix, in characters.
const MAX_PREFIX_CHARS: usize = 200;

/// How ingest sends passages to the embeddings server, and the instructions models such as E5
/// or BGE expect before queries and passages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingsTuning {
    /// `EMBEDDINGS_BATCH_SIZE`: passages per embeddings call at ingest (1..=2048, default 64).
    pub batch_size: usize,
    /// `EMBEDDINGS_TIMEOUT_MS`: timeout of one embeddings call at ingest (default 60 s).
    pub timeout: Duration,
    /// `EMBEDDINGS_CONCURRENCY`: batches in flight at once at ingest (1..=32, default 1).
    pub concurrency: usize,
    /// `EMBEDDINGS_QUERY_PREFIX`: put before every query (e.g. `query: `); recorded in the
    /// bundle, whose recorded prefix wins at query time.
    pub query_prefix: String,
    /// `EMBEDDINGS_PASSAGE_PREFIX`: put before every passage at ingest (e.g. `passage: `).
    pub passage_prefix: String,
}

impl Default for EmbeddingsTuning {
    fn default() -> Self {
        embeddings_tuning(&Env(&|_| None)).expect("the defaults are valid")
    }
}

/// The rerank stage: a Cohere/Jina/TEI-compatible endpoint, or Amazon Bedrock's `Rerank`.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankSettings {
    /// `RERANK_PROVIDER` (`http`, the default, or `bedrock`) and what it needs.
    pub provider: RerankProvider,
    /// `RERANK_MODEL`: sent as `model` (optional over HTTP: TEI serves one model and ignores
    /// it); with Bedrock, the model id (`amazon.rerank-v1:0`, `cohere.rerank-v3-5:0`) or ARN.
    pub model: Option<String>,
    /// `RERANK_API_KEY`; may also come later from the `SECRETS_ID` secret (HTTP only).
    pub api_key: Option<Secret>,
}

/// Who reranks (`RERANK_PROVIDER`).
#[derive(Debug, Clone, PartialEq)]
pub enum RerankProvider {
    /// `POST {base_url}/rerank` (`RERANK_BASE_URL`).
    Http {
        /// `RERANK_BASE_URL`.
        base_url: Url,
    },
    /// Amazon Bedrock `Rerank` (Agents for Bedrock runtime), credentials from the AWS
    /// environment; the endpoint follows `AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME`.
    Bedrock,
}

pub(super) fn embeddings_tuning(env: &Env) -> Result<EmbeddingsTuning, ConfigError> {
    Ok(EmbeddingsTuning {
        batch_size: env.count("EMBEDDINGS_BATCH_SIZE", EMBEDDINGS_BATCH_SIZE)? as usize,
        timeout: env.millis("EMBEDDINGS_TIMEOUT_MS", EMBEDDINGS_TIMEOUT)?,
        concurrency: env.count("EMBEDDINGS_CONCURRENCY", EMBEDDINGS_CONCURRENCY)? as usize,
        query_prefix: prefix(env, "EMBEDDINGS_QUERY_PREFIX")?,
        passage_prefix: prefix(env, "EMBEDDINGS_PASSAGE_PREFIX")?,
    })
}

/// A prefix is taken as given, untrimmed: `query: ` ends with the space the model expects.
fn prefix(env: &Env, var: &'static str) -> Result<String, ConfigError> {
    let value = (env.0)(var).unwrap_or_default();
    if value.chars().count() > MAX_PREFIX_CHARS || value.chars().any(char::is_control) {
        return Err(ConfigError::Invalid {
            var,
            value,
            expected: format!(
                "an instruction of at most {MAX_PREFIX_CHARS} characters without control \
                 characters, e.g. `query: `"
            ),
        });
    }
    Ok(value)
}

pub(super) fn rerank(env: &Env) -> Result<Option<RerankSettings>, ConfigError> {
    let api_key = env.secret("RERANK_API_KEY")?;
    let base_url = env.url("RERANK_BASE_URL")?;
    let model = env.text("RERANK_MODEL");
    match env.text("RERANK_PROVIDER").as_deref() {
        None | Some("http") => Ok(base_url.map(|base_url| RerankSettings {
            provider: RerankProvider::Http { base_url },
            model,
            api_key,
        })),
        Some("bedrock") => {
            if base_url.is_some() {
                return Err(ConfigError::Invalid {
                    var: "RERANK_BASE_URL",
                    value: "(set)".into(),
                    expected: "unset with RERANK_PROVIDER=bedrock (Bedrock's endpoint follows \
                               AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME)"
                        .into(),
                });
            }
            let Some(model) = model else {
                return Err(ConfigError::Invalid {
                    var: "RERANK_MODEL",
                    value: String::new(),
                    expected: "a Bedrock rerank model id (amazon.rerank-v1:0, \
                               cohere.rerank-v3-5:0) or its ARN, with RERANK_PROVIDER=bedrock"
                        .into(),
                });
            };
            Ok(Some(RerankSettings {
                provider: RerankProvider::Bedrock,
                model: Some(model),
                api_key: None,
            }))
        }
        Some(other) => Err(ConfigError::Invalid {
            var: "RERANK_PROVIDER",
            value: other.to_owned(),
            expected: "http or bedrock".into(),
        }),
    }
}

pub(super) fn tenant_key(env: &Env) -> Result<Option<String>, ConfigError> {
    env.checked(
        "KB_TENANT_KEY",
        "a metadata key of 1..=64 of A-Z a-z 0-9 _ - .",
        |v| {
            v.len() <= 64
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        },
    )
}

/// Most characters of a knowledge-base description (`KB_DESCRIPTION`, `ingest --description`).
pub(crate) const MAX_KB_DESCRIPTION_CHARS: usize = 2000;

/// A knowledge-base description as given: trimmed, 1..=[`MAX_KB_DESCRIPTION_CHARS`] characters.
pub(crate) fn kb_description_text(text: &str) -> Result<String, String> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars == 0 {
        return Err("the knowledge-base description is empty".into());
    }
    if chars > MAX_KB_DESCRIPTION_CHARS {
        return Err(format!(
            "the knowledge-base description has {chars} characters; at most \
             {MAX_KB_DESCRIPTION_CHARS}"
        ));
    }
    Ok(text.to_owned())
}

/// `KB_DESCRIPTION`: what the knowledge base covers, for the router; wins over the one
/// recorded in the bundle.
pub(super) fn kb_description(env: &Env) -> Result<Option<String>, ConfigError> {
    env.text("KB_DESCRIPTION")
        .map(|text| {
            kb_description_text(&text).map_err(|_| ConfigError::OutOfRange {
                var: "KB_DESCRIPTION",
                value: format!("({} characters)", text.chars().count()),
                expected: format!("1..={MAX_KB_DESCRIPTION_CHARS} characters"),
            })
        })
        .transpose()
}

/// Which embeddings backend turns texts into vectors (`EMBEDDINGS_PROVIDER`).
#[derive(Debug, Clone, PartialEq)]
pub enum EmbeddingsProvider {
    /// An OpenAI-compatible server: `POST {base_url}/embeddings` (`EMBEDDINGS_BASE_URL`).
    OpenAi {
        /// `EMBEDDINGS_BASE_URL`.
        base_url: Url,
    },
    /// Amazon Bedrock `InvokeModel` (Titan Text Embeddings v2), credentials from the AWS
    /// environment.
    Bedrock {
        /// `EMBEDDINGS_DIMENSIONS`: 256, 512 or 1024 (default 1024).
        dimensions: u32,
    },
}

impl EmbeddingsProvider {}

/// Embeddings settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingsSettings {
    /// `EMBEDDINGS_PROVIDER` (`openai`, the default, or `bedrock`) and what it needs.
    pub provider: EmbeddingsProvider,
    /// `EMBEDDINGS_MODEL` (required with a base URL or `EMBEDDINGS_PROVIDER=bedrock`).
    pub model: String,
    /// `EMBEDDINGS_API_KEY`; may also come later from the `SECRETS_ID` secret.
    pub api_key: Option<Secret>,
}

/// `KB_URI`: a knowledge store, by its scheme (see [`KbLocation`]).
pub(super) fn kb_uri(env: &Env<'_>) -> Result<Option<KbLocation>, ConfigError> {
    let Some(value) = env.text("KB_URI") else {
        return Ok(None);
    };
    value
        .parse()
        .map(Some)
        .map_err(|reason: String| ConfigError::Invalid {
            var: "KB_URI",
            value,
            expected: reason,
        })
}

/// The embeddings backend: `EMBEDDINGS_PROVIDER=bedrock`, or an OpenAI-compatible endpoint when
/// `EMBEDDINGS_BASE_URL` is set (the key is checked either way); both need `EMBEDDINGS_MODEL`.
pub(super) fn embeddings(env: &Env<'_>) -> Result<Option<EmbeddingsSettings>, ConfigError> {
    let embeddings_key = env.secret("EMBEDDINGS_API_KEY")?;
    let base_url = env.url("EMBEDDINGS_BASE_URL")?;
    let provider = match (env.text("EMBEDDINGS_PROVIDER"), base_url) {
        (Some(value), _) if value.eq_ignore_ascii_case("bedrock") => EmbeddingsProvider::Bedrock {
            dimensions: bedrock_dimensions(env)?,
        },
        (Some(value), Some(base_url)) if value.eq_ignore_ascii_case("openai") => {
            EmbeddingsProvider::OpenAi { base_url }
        }
        (Some(value), _) => {
            return Err(ConfigError::Invalid {
                var: "EMBEDDINGS_PROVIDER",
                value,
                expected: "one of: openai (with EMBEDDINGS_BASE_URL), bedrock".into(),
            })
        }
        (None, Some(base_url)) => EmbeddingsProvider::OpenAi { base_url },
        (_, None) => return Ok(None),
    };
    let model = env
        .text("EMBEDDINGS_MODEL")
        .ok_or_else(|| ConfigError::Invalid {
            var: "EMBEDDINGS_MODEL",
            value: String::new(),
            expected: format!(
                "the embedding model's name with {} (e.g. {})",
                match provider {
                    EmbeddingsProvider::OpenAi { .. } => "EMBEDDINGS_BASE_URL",
                    EmbeddingsProvider::Bedrock { .. } => "EMBEDDINGS_PROVIDER=bedrock",
                },
                match provider {
                    EmbeddingsProvider::OpenAi { .. } => "text-embedding-3-small",
                    EmbeddingsProvider::Bedrock { .. } => "amazon.titan-embed-text-v2:0",
                }
            ),
        })?;
    Ok(Some(EmbeddingsSettings {
        provider,
        model,
        api_key: embeddings_key,
    }))
}

/// `EMBEDDINGS_DIMENSIONS`: the sizes Titan Text Embeddings v2 can return.
fn bedrock_dimensions(env: &Env<'_>) -> Result<u32, ConfigError> {
    const DIMENSIONS: Num = Num::new(256, 1024, 1024, "dimensions: 256, 512 or 1024");
    let n = env.count("EMBEDDINGS_DIMENSIONS", DIMENSIONS)?;
    match n {
        256 | 512 | 1024 => Ok(n),
        _ => Err(ConfigError::OutOfRange {
            var: "EMBEDDINGS_DIMENSIONS",
            value: n.to_string(),
            expected: "256, 512 or 1024".into(),
        }),
    }
}

/// `KB_REFRESH_SECONDS`; `None` when 0 (never).
pub(super) fn kb_refresh(env: &Env<'_>) -> Result<Option<Duration>, ConfigError> {
    Ok(Some(env.seconds("KB_REFRESH_SECONDS", KB_REFRESH)?).filter(|d| !d.is_zero()))
}

/// `KB_MAX_PASSAGES_PER_DOCUMENT` (0 = no cap).
pub(super) fn tenant_index_rows(env: &Env<'_>) -> Result<u64, ConfigError> {
    env.number("KB_TENANT_INDEX_ROWS", KB_TENANT_INDEX_ROWS)
}

pub(super) fn max_passages_per_document(env: &Env<'_>) -> Result<usize, ConfigError> {
    Ok(env.count("KB_MAX_PASSAGES_PER_DOCUMENT", KB_MAX_PER_DOCUMENT)? as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with<T>(vars: &[(&str, &str)], read: impl Fn(&Env) -> T) -> T {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let lookup = move |name: &str| map.get(name).cloned();
        read(&Env(&lookup))
    }

    fn read(vars: &[(&str, &str)]) -> Result<EmbeddingsTuning, ConfigError> {
        with(vars, embeddings_tuning)
    }

    #[test]
    fn rerank_and_tenant_settings_are_checked() {
        assert_eq!(with(&[], rerank).unwrap(), None);
        let r = with(
            &[
                ("RERANK_BASE_URL", "http://127.0.0.1:8080"),
                ("RERANK_API_KEY", "rk-1"),
            ],
            rerank,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (r.provider, r.model),
            (
                RerankProvider::Http {
                    base_url: "http://127.0.0.1:8080/".parse().unwrap()
                },
                None
            )
        );
        assert!(r.api_key.is_some());
        let err = with(&[("RERANK_BASE_URL", "ftp://x")], rerank).unwrap_err();
        assert_eq!(err.var(), "RERANK_BASE_URL");
        // Bedrock: a model is required, a base URL refused, another provider named.
        let bedrock = |extra: &[(&str, &str)]| {
            let mut vars = vec![("RERANK_PROVIDER", "bedrock")];
            vars.extend_from_slice(extra);
            with(&vars, rerank)
        };
        let r = bedrock(&[("RERANK_MODEL", "amazon.rerank-v1:0")])
            .unwrap()
            .unwrap();
        assert_eq!(r.provider, RerankProvider::Bedrock);
        assert_eq!(r.model.as_deref(), Some("amazon.rerank-v1:0"));
        assert_eq!(bedrock(&[]).unwrap_err().var(), "RERANK_MODEL");
        let both = [("RERANK_MODEL", "m"), ("RERANK_BASE_URL", "http://x")];
        assert_eq!(bedrock(&both).unwrap_err().var(), "RERANK_BASE_URL");
        let err = with(&[("RERANK_PROVIDER", "cohere")], rerank).unwrap_err();
        assert_eq!(err.var(), "RERANK_PROVIDER");
        assert_eq!(
            with(&[("KB_TENANT_KEY", "tenant")], tenant_key).unwrap(),
            Some("tenant".into())
        );
        let err = with(&[("KB_TENANT_KEY", "a b")], tenant_key).unwrap_err();
        assert_eq!(err.var(), "KB_TENANT_KEY");
        assert_eq!(
            with(&[], tenant_index_rows).unwrap(),
            DEFAULT_TENANT_INDEX_ROWS
        );
        assert_eq!(
            with(&[("KB_TENANT_INDEX_ROWS", "0")], tenant_index_rows).unwrap(),
            0
        );
        let err = with(&[("KB_TENANT_INDEX_ROWS", "-5")], tenant_index_rows).unwrap_err();
        assert_eq!(err.var(), "KB_TENANT_INDEX_ROWS");
    }

    #[test]
    fn defaults_and_errors_name_the_variable() {
        let d = read(&[]).unwrap();
        assert_eq!((d.batch_size, d.concurrency), (64, 1));
        assert_eq!(d.timeout, Duration::from_secs(60));
        assert_eq!(
            (d.query_prefix.as_str(), d.passage_prefix.as_str()),
            ("", "")
        );
        let t = read(&[
            ("EMBEDDINGS_BATCH_SIZE", "3"),
            ("EMBEDDINGS_CONCURRENCY", "4"),
            ("EMBEDDINGS_TIMEOUT_MS", "120000"),
            ("EMBEDDINGS_QUERY_PREFIX", "query: "),
        ])
        .unwrap();
        assert_eq!((t.batch_size, t.concurrency), (3, 4));
        assert_eq!(t.timeout, Duration::from_secs(120));
        assert_eq!(t.query_prefix, "query: ", "kept untrimmed");
        for (var, value) in [
            ("EMBEDDINGS_BATCH_SIZE", "0"),
            ("EMBEDDINGS_CONCURRENCY", "33"),
            ("EMBEDDINGS_TIMEOUT_MS", "fast"),
            ("EMBEDDINGS_PASSAGE_PREFIX", "a\nb"),
        ] {
            let err = read(&[(var, value)]).unwrap_err();
            assert_eq!(err.var(), var, "{err}");
        }
    }

    #[test]
    fn kb_description_is_trimmed_and_bounded() {
        let read = |v: &str| with(&[("KB_DESCRIPTION", v)], kb_description);
        assert_eq!(
            read("  Rust crates.  ").unwrap().as_deref(),
            Some("Rust crates.")
        );
        assert_eq!(read(" ").unwrap(), None);
        let long = "x".repeat(MAX_KB_DESCRIPTION_CHARS + 1);
        let err = read(&long).unwrap_err().to_string();
        assert!(
            err.contains("KB_DESCRIPTION") && err.contains("2001 characters"),
            "{err}"
        );
        assert!(kb_description_text("\n").unwrap_err().contains("empty"));
    }
}
