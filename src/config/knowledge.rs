//! The retrieval-tuning variables: how ingest talks to an embeddings server
//! (`EMBEDDINGS_BATCH_SIZE`, `EMBEDDINGS_TIMEOUT_MS`, `EMBEDDINGS_CONCURRENCY`, the query and
//! passage prefixes), the optional rerank stage (`RERANK_*`) and per-caller tenant pinning
//! (`KB_TENANT_KEY`). Kept apart from the other groups so each reads on its own.

use super::{ConfigError, Env, Num};
use crate::secrets::Secret;
use reqwest::Url;
use std::time::Duration;

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

/// A Cohere/Jina/TEI-compatible rerank endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankSettings {
    /// `RERANK_BASE_URL`: the client posts to `{base_url}/rerank`.
    pub base_url: Url,
    /// `RERANK_MODEL`: sent as `model` (optional: TEI serves one model and ignores it).
    pub model: Option<String>,
    /// `RERANK_API_KEY`; may also come later from the `SECRETS_ID` secret.
    pub api_key: Option<Secret>,
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
    Ok(env.url("RERANK_BASE_URL")?.map(|base_url| RerankSettings {
        base_url,
        model: env.text("RERANK_MODEL"),
        api_key,
    }))
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
            (r.base_url.as_str(), r.model),
            ("http://127.0.0.1:8080/", None)
        );
        assert!(r.api_key.is_some());
        let err = with(&[("RERANK_BASE_URL", "ftp://x")], rerank).unwrap_err();
        assert_eq!(err.var(), "RERANK_BASE_URL");
        assert_eq!(
            with(&[("KB_TENANT_KEY", "tenant")], tenant_key).unwrap(),
            Some("tenant".into())
        );
        let err = with(&[("KB_TENANT_KEY", "a b")], tenant_key).unwrap_err();
        assert_eq!(err.var(), "KB_TENANT_KEY");
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
}
