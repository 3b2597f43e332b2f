//! Secret values that can never be logged, and Secrets Manager access with caching.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_secretsmanager::error::DisplayErrorContext;
use tokio::sync::Mutex;

use crate::clock::{Clock, SystemClock};
use crate::error::{Classify, ErrorClass};

/// A secret string: `Debug` and `Display` print `[redacted]`; read it with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that must send it (an `Authorization` header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The API keys held in the Secrets Manager secret named by `SECRETS_ID` (a JSON object).
///
/// A missing, `null` or empty key is `None`. `Debug` and `Display` never show a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretBundle {
    /// `LLM_API_KEY`.
    pub llm_api_key: Option<Secret>,
    /// `WEB_SEARCH_API_KEY`.
    pub web_search_api_key: Option<Secret>,
    /// `EMBEDDINGS_API_KEY`.
    pub embeddings_api_key: Option<Secret>,
    /// `RERANK_API_KEY`.
    pub(crate) rerank_api_key: Option<Secret>,
}

impl fmt::Display for SecretBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = |s: &Option<Secret>| if s.is_some() { "set" } else { "unset" };
        write!(
            f,
            "LLM_API_KEY {}, WEB_SEARCH_API_KEY {}",
            state(&self.llm_api_key),
            state(&self.web_search_api_key)
        )
    }
}

/// Reading the secret failed. Messages name the secret, never its value.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// Throttling, timeouts, connection errors, 5xx (after the SDK's own retries).
    #[error("secrets manager temporarily unavailable: {0}")]
    Transient(String),
    /// Missing secret, access denied, validation.
    #[error("cannot read secret: {0}")]
    Permanent(String),
    /// The secret is not a JSON object of strings.
    #[error("secret {secret_id} is malformed: {reason}")]
    Malformed {
        /// The secret's name or ARN.
        secret_id: String,
        /// What is wrong, without the value.
        reason: String,
    },
}

impl Classify for SecretsError {
    fn class(&self) -> ErrorClass {
        match self {
            SecretsError::Transient(_) => ErrorClass::Transient,
            SecretsError::Permanent(_) | SecretsError::Malformed { .. } => ErrorClass::Permanent,
        }
    }
}

/// Reads the `SECRETS_ID` secret through Secrets Manager and caches it for a TTL.
///
/// Concurrent callers on a cold cache wait for one `GetSecretValue` call instead of each making
/// their own. A failed read is not cached: the next caller tries again. Give the client an
/// operation timeout (as for DynamoDB): callers wait on it while the one call is in flight.
pub struct SecretsProvider {
    client: aws_sdk_secretsmanager::Client,
    secret_id: String,
    ttl: Duration,
    clock: Arc<dyn Clock>,
    /// The bundle last read, and when (epoch milliseconds).
    cache: Mutex<Option<(u64, SecretBundle)>>,
    fetches: AtomicU64,
}

impl fmt::Debug for SecretsProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretsProvider")
            .field("secret_id", &self.secret_id)
            .field("ttl", &self.ttl)
            .field("fetches", &self.fetch_count())
            .finish_non_exhaustive()
    }
}

impl SecretsProvider {
    /// A provider for `secret_id` (name or ARN), serving a read value for `ttl`.
    pub fn new(
        client: aws_sdk_secretsmanager::Client,
        secret_id: impl Into<String>,
        ttl: Duration,
    ) -> Self {
        Self {
            client,
            secret_id: secret_id.into(),
            ttl,
            clock: Arc::new(SystemClock),
            cache: Mutex::new(None),
            fetches: AtomicU64::new(0),
        }
    }

    /// Replaces the clock used for the TTL (tests advance a fake one instead of sleeping).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The secret's keys: from the cache while it is younger than the TTL, else read once.
    pub async fn get_json(&self) -> Result<SecretBundle, SecretsError> {
        let mut cache = self.cache.lock().await;
        let now_ms = self.clock.now_ms();
        if let Some((fetched_at_ms, bundle)) = cache.as_ref() {
            let age = Duration::from_millis(now_ms.saturating_sub(*fetched_at_ms));
            if age < self.ttl {
                return Ok(bundle.clone());
            }
        }
        let bundle = self.fetch().await?;
        *cache = Some((now_ms, bundle.clone()));
        Ok(bundle)
    }

    /// How many `GetSecretValue` calls this provider has made.
    pub fn fetch_count(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    async fn fetch(&self) -> Result<SecretBundle, SecretsError> {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let out = self
            .client
            .get_secret_value()
            .secret_id(&self.secret_id)
            .send()
            .await
            .map_err(|err| {
                let message = format!(
                    "GetSecretValue {}: {}",
                    self.secret_id,
                    DisplayErrorContext(&err)
                );
                match crate::aws::sdk_error_class(&err) {
                    ErrorClass::Transient => SecretsError::Transient(message),
                    ErrorClass::Permanent => SecretsError::Permanent(message),
                }
            })?;
        let text = out.secret_string().ok_or_else(|| {
            malformed(
                &self.secret_id,
                "no SecretString (binary secrets are not supported)",
            )
        })?;
        parse_bundle(&self.secret_id, text)
    }
}

/// Parses the secret's JSON object. Errors describe the shape, never the content.
fn parse_bundle(secret_id: &str, text: &str) -> Result<SecretBundle, SecretsError> {
    let map = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => map,
        Ok(_) => return Err(malformed(secret_id, "not a JSON object")),
        Err(e) => {
            let reason = format!(
                "not JSON (error at line {}, column {})",
                e.line(),
                e.column()
            );
            return Err(malformed(secret_id, &reason));
        }
    };
    let field = |name: &str| match map.get(name) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(value)) if value.trim().is_empty() => Ok(None),
        Some(serde_json::Value::String(value)) => Ok(Some(Secret::new(value.trim()))),
        Some(_) => Err(malformed(secret_id, &format!("{name} is not a string"))),
    };
    Ok(SecretBundle {
        llm_api_key: field("LLM_API_KEY")?,
        web_search_api_key: field("WEB_SEARCH_API_KEY")?,
        embeddings_api_key: field("EMBEDDINGS_API_KEY")?,
        rerank_api_key: field("RERANK_API_KEY")?,
    })
}

fn malformed(secret_id: &str, reason: &str) -> SecretsError {
    SecretsError::Malformed {
        secret_id: secret_id.to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keys_and_treats_missing_null_and_empty_as_unset() {
        let bundle = parse_bundle(
            "id",
            r#"{"LLM_API_KEY":" sk-1 ","WEB_SEARCH_API_KEY":null}"#,
        )
        .unwrap();
        assert_eq!(
            bundle.llm_api_key.as_ref().map(Secret::expose),
            Some("sk-1")
        );
        assert_eq!(bundle.web_search_api_key, None);
        let empty = parse_bundle("id", r#"{"LLM_API_KEY":"","OTHER":1}"#).unwrap();
        assert_eq!(empty, SecretBundle::default());
    }

    #[test]
    fn malformed_secrets_never_echo_the_value() {
        for text in [
            "sk-plain-text-key",
            r#""sk-json-string""#,
            r#"{"LLM_API_KEY": 12345678}"#,
            r#"{"LLM_API_KEY": "sk-trunc"#,
        ] {
            let err = parse_bundle("id", text).unwrap_err();
            let shown = format!("{err} {err:?}");
            assert!(
                !shown.contains("sk-") && !shown.contains("12345678"),
                "{shown}"
            );
            assert_eq!(err.class(), ErrorClass::Permanent);
        }
    }

    #[test]
    fn bundle_display_and_debug_hide_values() {
        let bundle = SecretBundle {
            llm_api_key: Some(Secret::new("sk-very-secret")),
            web_search_api_key: None,
            embeddings_api_key: None,
            rerank_api_key: None,
        };
        assert_eq!(
            bundle.to_string(),
            "LLM_API_KEY set, WEB_SEARCH_API_KEY unset"
        );
        assert!(!format!("{bundle:?}").contains("sk-very-secret"));
    }
}
