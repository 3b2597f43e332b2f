//! Typed, validated readers over a variable lookup: trimmed text, keys, numbers within a
//! range (with their default), URLs, and names checked against a pattern.

use super::error::ConfigError;
use crate::secrets::Secret;
use reqwest::Url;
use std::time::Duration;

/// Accepted range and default of a numeric variable.
pub(super) struct Num {
    min: u64,
    max: u64,
    pub(super) default: u64,
    unit: &'static str,
}

impl Num {
    pub(super) const fn new(min: u64, max: u64, default: u64, unit: &'static str) -> Self {
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

/// Typed readers over a lookup function.
pub(super) struct Env<'a>(pub(super) &'a dyn Fn(&str) -> Option<String>);

impl Env<'_> {
    /// Trimmed value; `None` when unset or blank.
    pub(super) fn text(&self, var: &str) -> Option<String> {
        let value = (self.0)(var)?;
        let value = value.trim();
        (!value.is_empty()).then(|| value.to_owned())
    }

    /// A key: never trimmed and never echoed in errors.
    pub(super) fn secret(&self, var: &'static str) -> Result<Option<Secret>, ConfigError> {
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

    pub(super) fn number(&self, var: &'static str, num: Num) -> Result<u64, ConfigError> {
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

    pub(super) fn count(&self, var: &'static str, num: Num) -> Result<u32, ConfigError> {
        // Every count range is far below u32::MAX.
        self.number(var, num)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    pub(super) fn millis(&self, var: &'static str, num: Num) -> Result<Duration, ConfigError> {
        self.number(var, num).map(Duration::from_millis)
    }

    pub(super) fn seconds(&self, var: &'static str, num: Num) -> Result<Duration, ConfigError> {
        self.number(var, num).map(Duration::from_secs)
    }

    /// An absolute http(s) URL without credentials.
    pub(super) fn url(&self, var: &'static str) -> Result<Option<Url>, ConfigError> {
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
    pub(super) fn secrets_id(&self, var: &'static str) -> Result<Option<String>, ConfigError> {
        self.checked(
            var,
            "a secret name or ARN of 1..=2048 characters without whitespace",
            |v| v.len() <= 2048 && !v.chars().any(char::is_whitespace),
        )
    }

    /// A DynamoDB table name or table ARN.
    pub(super) fn table_name(&self, var: &'static str) -> Result<Option<String>, ConfigError> {
        let expected = "a DynamoDB table name (3..=255 of A-Z a-z 0-9 _ - .) or a table ARN";
        self.checked(var, expected, |v| {
            let name_ok = (3..=255).contains(&v.len())
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
            let arn_ok = v.starts_with("arn:") && v.contains(":table/") && v.len() <= 1024;
            name_ok || arn_ok
        })
    }

    pub(super) fn checked(
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
