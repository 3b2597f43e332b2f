//! The run request (the body of `POST /workflow/run`), validated into typed options.

use super::integral;
use crate::search::{Filter, RetrievalOptions};
use serde::de::{DeserializeOwned, Deserializer, IntoDeserializer};
use serde::{Deserialize, Serialize};

/// Longest accepted question, in characters.
pub(crate) const MAX_QUESTION_CHARS: usize = 2000;

/// How much checking a request wants; explicit `enable_*` fields override it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// No grading: retrieve and answer.
    Speed,
    /// Grade documents and check grounding.
    Balanced,
    /// Every check, answer quality included.
    #[default]
    Quality,
}

/// A request as sent by callers. Unknown fields are rejected so typos are not silently ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The question (1..=2000 characters).
    pub question: String,
    /// Knowledge-base documents to retrieve (1..=10, default 3).
    #[serde(default = "default_three", deserialize_with = "integral::unsigned")]
    pub n_retrieved_documents: u32,
    /// Web results to fetch (1..=10, default 3).
    #[serde(default = "default_three", deserialize_with = "integral::unsigned")]
    pub n_web_searches: u32,
    /// Search entities (default true).
    #[serde(default = "yes")]
    pub(crate) node_retrieval: bool,
    /// Search relations (default true).
    #[serde(default = "yes")]
    pub(crate) edge_retrieval: bool,
    /// Search text passages (default true).
    #[serde(default = "yes")]
    pub(crate) episode_retrieval: bool,
    /// Search community summaries (default false).
    #[serde(default)]
    pub(crate) community_retrieval: bool,
    /// Checking preset (default `quality`).
    #[serde(default, deserialize_with = "named")]
    pub mode: Mode,
    /// Grade retrieved documents (default from `mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) enable_retrieved_documents_grading: Option<bool>,
    /// Check the answer is grounded (default from `mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) enable_hallucination_checking: Option<bool>,
    /// Check the answer resolves the question (default from `mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) enable_answer_quality_checking: Option<bool>,
    /// Most tokens the run may use (1..=100000000), capped by `MAX_TOKENS_PER_RUN`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "integral::optional_unsigned"
    )]
    pub max_tokens: Option<u64>,
    /// Metadata filter of knowledge-base documents (see [`Filter`]); boxed, as few requests
    /// carry one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Box<Filter>>,
    /// `off` turns speculation off for this run (`on`, the default, leaves it to
    /// `SPECULATION`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_named"
    )]
    pub speculation: Option<crate::config::Speculation>,
    /// The conversation this run is a turn of (see [`super::thread`]); none: a single turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

/// A minimal valid body, quoted in messages about malformed ones.
const EXAMPLE_BODY: &str = r#"{"question": "What causes patch canker in durian?"}"#;

/// Largest accepted `max_tokens`.
pub(crate) const MAX_TOKENS_LIMIT: u64 = 100_000_000;

fn default_three() -> u32 {
    3
}
fn yes() -> bool {
    true
}

/// An enum field read from its name. serde_json reports a value of another JSON type for an
/// enum (`"mode": null`, `"mode": 1`) as a syntax error of the whole body; read as a string
/// first, it is a type error of this field, which the `400` then names.
fn named<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<T, D::Error> {
    T::deserialize(String::deserialize(d)?.into_deserializer())
}

/// [`named`] for an optional field: `null` is absent.
fn optional_named<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|name| T::deserialize(name.into_deserializer()))
        .transpose()
}

/// A request field that failed validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[error("invalid field `{field}`: {message}")]
pub struct ValidationError {
    /// The field name (or `body` when the JSON itself is malformed).
    pub field: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl ValidationError {
    pub(crate) fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

impl RunRequest {
    /// A request with defaults for everything but the question.
    pub fn new(question: impl Into<String>) -> Self {
        Self {
            question: question.into(),
            n_retrieved_documents: 3,
            n_web_searches: 3,
            node_retrieval: true,
            edge_retrieval: true,
            episode_retrieval: true,
            community_retrieval: false,
            mode: Mode::default(),
            enable_retrieved_documents_grading: None,
            enable_hallucination_checking: None,
            enable_answer_quality_checking: None,
            max_tokens: None,
            filters: None,
            speculation: None,
            thread_id: None,
        }
    }

    /// Parses and validates a JSON body; errors name the offending field.
    pub(crate) fn from_json(body: &[u8]) -> Result<Self, ValidationError> {
        let de = &mut serde_json::Deserializer::from_slice(body);
        let request: RunRequest = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let message = inner.to_string();
            let missing = missing_field(&message);
            let field = unknown_field(&message)
                .or_else(|| missing.clone())
                .unwrap_or(
                    // serde_json reports a filter of the wrong shape (`[1]`) as a syntax error
                    // at the filter's path: name the filter, not the body.
                    if matches!(path.as_str(), "." | "?" | "")
                        || (inner.is_syntax() && !path.starts_with("filters"))
                        || inner.is_eof()
                    {
                        "body".to_owned()
                    } else {
                        path
                    },
                );
            // serde says what it expected; add what to send instead.
            let message = if field == "body" {
                format!("{message}; send a JSON object such as {EXAMPLE_BODY}")
            } else if missing.is_some() {
                format!("{message}; it is required, e.g. {EXAMPLE_BODY}")
            } else if unknown_field(&message).is_some() {
                format!("{message}; remove it or fix its spelling")
            } else {
                message
            };
            ValidationError::new(&field, message)
        })?;
        request.validate()?;
        Ok(request)
    }

    /// Checks every range; the error names the first bad field.
    pub(crate) fn validate(&self) -> Result<(), ValidationError> {
        let chars = self.question.trim().chars().count();
        if chars == 0 {
            return Err(ValidationError::new(
                "question",
                "must not be empty: ask a question of 1..=2000 characters",
            ));
        }
        if self.question.chars().count() > MAX_QUESTION_CHARS {
            return Err(ValidationError::new(
                "question",
                format!("must be at most {MAX_QUESTION_CHARS} characters: shorten it"),
            ));
        }
        for (field, value) in [
            ("n_retrieved_documents", self.n_retrieved_documents),
            ("n_web_searches", self.n_web_searches),
        ] {
            if !(1..=10).contains(&value) {
                return Err(ValidationError::new(
                    field,
                    format!("must be between 1 and 10, got {value}"),
                ));
            }
        }
        if let Some(max) = self.max_tokens {
            if !(1..=MAX_TOKENS_LIMIT).contains(&max) {
                return Err(ValidationError::new(
                    "max_tokens",
                    format!("must be between 1 and {MAX_TOKENS_LIMIT}, got {max}"),
                ));
            }
        }
        if let Some(id) = &self.thread_id {
            super::thread::validate_id(id).map_err(|m| ValidationError::new("thread_id", m))?;
        }
        if let Some(filter) = &self.filters {
            filter
                .validate("filters")
                .map_err(|e| ValidationError::new(&e.path, e.message))?;
        }
        if !(self.node_retrieval
            || self.edge_retrieval
            || self.episode_retrieval
            || self.community_retrieval)
        {
            return Err(ValidationError::new(
                "episode_retrieval",
                "at least one of node_retrieval, edge_retrieval, episode_retrieval, community_retrieval must be true",
            ));
        }
        Ok(())
    }

    /// The run's token budget: the lower of the request's `max_tokens` and `cap`
    /// (`MAX_TOKENS_PER_RUN`), either of which may be absent.
    pub(crate) fn token_budget(&self, cap: Option<u64>) -> Option<u64> {
        match (self.max_tokens, cap) {
            (Some(asked), Some(cap)) => Some(asked.min(cap)),
            (asked, cap) => asked.or(cap),
        }
    }

    /// Whether retrieved documents are graded.
    pub(crate) fn grade_documents(&self) -> bool {
        self.enable_retrieved_documents_grading
            .unwrap_or(self.mode != Mode::Speed)
    }

    /// Whether the answer's grounding is checked.
    pub(crate) fn check_hallucinations(&self) -> bool {
        self.enable_hallucination_checking
            .unwrap_or(self.mode != Mode::Speed)
    }

    /// Whether the answer's usefulness is checked.
    pub(crate) fn check_answer(&self) -> bool {
        self.enable_answer_quality_checking
            .unwrap_or(self.mode == Mode::Quality)
    }

    /// Knowledge-base search options.
    pub(crate) fn retrieval_options(&self) -> RetrievalOptions {
        RetrievalOptions {
            limit: self.n_retrieved_documents as usize,
            nodes: self.node_retrieval,
            edges: self.edge_retrieval,
            episodes: self.episode_retrieval,
            communities: self.community_retrieval,
            filter: self.filters.as_deref().cloned(),
        }
    }
}

/// serde reports unknown and missing fields without a path; pull the name out of the message.
fn unknown_field(message: &str) -> Option<String> {
    message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next())
        .map(str::to_owned)
}

fn missing_field(message: &str) -> Option<String> {
    message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(body: &str) -> String {
        RunRequest::from_json(body.as_bytes()).unwrap_err().field
    }

    #[test]
    fn defaults_fill_in() {
        let r = RunRequest::from_json(br#"{"question":"What causes patch canker?"}"#).unwrap();
        assert_eq!(r, RunRequest::new("What causes patch canker?"));
        assert!(r.grade_documents() && r.check_hallucinations() && r.check_answer());
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(field_of(r#"{"question":""}"#), "question");
        assert_eq!(field_of(r#"{"question":"   "}"#), "question");
        assert_eq!(
            field_of(&format!(r#"{{"question":"{}"}}"#, "a".repeat(2001))),
            "question"
        );
        assert_eq!(field_of(r#"{}"#), "question");
        assert_eq!(
            field_of(r#"{"question":"q","n_retrieved_documents":0}"#),
            "n_retrieved_documents"
        );
        assert_eq!(
            field_of(r#"{"question":"q","n_web_searches":11}"#),
            "n_web_searches"
        );
        assert_eq!(
            field_of(r#"{"question":"q","n_web_searches":"3"}"#),
            "n_web_searches"
        );
        assert_eq!(field_of(r#"{"question":"q","mode":"fast"}"#), "mode");
        // Another JSON type for an enum names the field, not the body.
        assert_eq!(field_of(r#"{"question":"q","mode":null}"#), "mode");
        assert_eq!(field_of(r#"{"question":"q","mode":1}"#), "mode");
        assert_eq!(
            field_of(r#"{"question":"q","speculation":1}"#),
            "speculation"
        );
        assert_eq!(
            field_of(r#"{"question":"q","speculation":[]}"#),
            "speculation"
        );
        let message = |body: &str| RunRequest::from_json(body.as_bytes()).unwrap_err().message;
        assert!(message(r#"{"question":"q","mode":null}"#)
            .starts_with("invalid type: null, expected a string"));
        assert!(message(r#"{"question":"q","mode":"fast"}"#)
            .contains("expected one of `speed`, `balanced`, `quality`"));
        assert_eq!(field_of(r#"{"question":"q","colour":1}"#), "colour");
        assert_eq!(field_of(r#"{"question":"q""#), "body");
        assert_eq!(field_of(r#"{"question":"q","max_tokens":0}"#), "max_tokens");
        assert_eq!(
            field_of(r#"{"question":"q","max_tokens":-5}"#),
            "max_tokens"
        );
        assert_eq!(
            field_of(r#"{"question":"q","filters":{"range":{"key":"year"}}}"#),
            "filters.range"
        );
        assert!(field_of(r#"{"question":"q","filters":{"like":{}}}"#).starts_with("filters"));
        assert!(field_of(r#"{"question":"q","filters":[1]}"#).starts_with("filters"));
        let ok = RunRequest::from_json(
            br#"{"question":"q","filters":{"equals":{"key":"tenant","value":"a"}}}"#,
        )
        .unwrap();
        assert_eq!(
            ok.retrieval_options().filter,
            Some(Filter::equals("tenant", "a"))
        );
    }

    #[test]
    fn integral_numbers_are_accepted_as_integers() {
        let r = RunRequest::from_json(
            br#"{"question":"q","n_web_searches":2.0,"n_retrieved_documents":5,"max_tokens":1e3}"#,
        )
        .unwrap();
        assert_eq!((r.n_web_searches, r.n_retrieved_documents), (2, 5));
        assert_eq!(r.max_tokens, Some(1000));
        assert_eq!(
            field_of(r#"{"question":"q","n_web_searches":2.5}"#),
            "n_web_searches"
        );
        assert_eq!(
            field_of(r#"{"question":"q","max_tokens":0.0}"#),
            "max_tokens"
        );
    }

    #[test]
    fn modes_set_checks_and_explicit_flags_win() {
        let mut r = RunRequest::new("q");
        r.mode = Mode::Speed;
        assert!(!r.grade_documents() && !r.check_hallucinations() && !r.check_answer());
        r.mode = Mode::Balanced;
        assert!(r.grade_documents() && r.check_hallucinations() && !r.check_answer());
        r.enable_answer_quality_checking = Some(true);
        r.enable_retrieved_documents_grading = Some(false);
        assert!(!r.grade_documents() && r.check_answer());
    }

    #[test]
    fn token_budget_is_the_lower_of_request_and_setting() {
        let mut r = RunRequest::new("q");
        assert_eq!(r.token_budget(None), None);
        assert_eq!(r.token_budget(Some(5000)), Some(5000));
        r.max_tokens = Some(800);
        assert_eq!(r.token_budget(None), Some(800));
        assert_eq!(r.token_budget(Some(5000)), Some(800));
        assert_eq!(r.token_budget(Some(300)), Some(300));
    }

    #[test]
    fn speculation_can_be_turned_off_per_request() {
        let off = RunRequest::from_json(br#"{"question": "q", "speculation": "off"}"#).unwrap();
        assert_eq!(off.speculation, Some(crate::config::Speculation::Off));
        assert_eq!(
            RunRequest::from_json(br#"{"question": "q"}"#)
                .unwrap()
                .speculation,
            None
        );
        let bad = RunRequest::from_json(br#"{"question": "q", "speculation": "maybe"}"#);
        assert_eq!(bad.unwrap_err().field, "speculation");
    }

    #[test]
    fn question_of_exactly_2000_chars_is_accepted() {
        let q = "é".repeat(2000);
        assert!(RunRequest::new(q).validate().is_ok());
    }
}
