//! Black-box tests of `Settings::from_lookup`: every variable's default, valid values, bad
//! values and the exact error text. The process environment is never touched.

use bounded_rag::config::{ConfigError, LlmProvider, Settings};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

fn settings(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Settings::from_lookup(|name| map.get(name).cloned())
}

fn error(vars: &[(&str, &str)]) -> String {
    settings(vars).expect_err("should be rejected").to_string()
}

/// A numeric variable: range, default and how to read it back.
struct NumCase {
    var: &'static str,
    min: u64,
    max: u64,
    default: u64,
    expected: &'static str,
    read: fn(&Settings) -> u64,
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

const NUMERIC: &[NumCase] = &[
    NumCase {
        var: "LLM_TIMEOUT_MS",
        min: 1_000,
        max: 300_000,
        default: 30_000,
        expected: "a whole number of milliseconds in 1000..=300000",
        read: |s| ms(s.llm.timeout),
    },
    NumCase {
        var: "LLM_CACHE_TTL_SECONDS",
        min: 0,
        max: 2_592_000,
        default: 0,
        expected: "a whole number of seconds in 0..=2592000",
        read: |s| s.llm.cache_ttl.map_or(0, |ttl| ttl.as_secs()),
    },
    NumCase {
        var: "SECRETS_TTL_SECONDS",
        min: 0,
        max: 86_400,
        default: 300,
        expected: "a whole number of seconds in 0..=86400",
        read: |s| s.aws.secrets_ttl.as_secs(),
    },
    NumCase {
        var: "MAX_RETRIES",
        min: 0,
        max: 10,
        default: 3,
        expected: "a whole number in 0..=10",
        read: |s| s.limits.max_query_rewrites.into(),
    },
    NumCase {
        var: "MAX_REGENERATIONS",
        min: 0,
        max: 10,
        default: 3,
        expected: "a whole number in 0..=10",
        read: |s| s.limits.max_regenerations.into(),
    },
    NumCase {
        var: "WORKFLOW_RECURSION_LIMIT",
        min: 1,
        max: 1000,
        default: 50,
        expected: "a whole number in 1..=1000",
        read: |s| s.limits.recursion_limit.into(),
    },
    NumCase {
        var: "DEADLINE_MARGIN_MS",
        min: 0,
        max: 60_000,
        default: 1_500,
        expected: "a whole number of milliseconds in 0..=60000",
        read: |s| ms(s.budgets.deadline_margin),
    },
    NumCase {
        var: "RUN_TIMEOUT_MS",
        min: 1_000,
        max: 900_000,
        default: 120_000,
        expected: "a whole number of milliseconds in 1000..=900000",
        read: |s| ms(s.budgets.run_timeout),
    },
    NumCase {
        var: "RUN_TTL_SECONDS",
        min: 60,
        max: 31_536_000,
        default: 604_800,
        expected: "a whole number of seconds in 60..=31536000",
        read: |s| s.aws.run_ttl.as_secs(),
    },
    NumCase {
        var: "MAX_BODY_BYTES",
        min: 1_024,
        max: 1_048_576,
        default: 65_536,
        expected: "a whole number of bytes in 1024..=1048576",
        read: |s| s.max_body_bytes as u64,
    },
    NumCase {
        var: "MAX_ACTIVE_RUNS_PER_CALLER",
        min: 0,
        max: 10_000,
        default: 0,
        expected: "a whole number of runs (0 = unlimited) in 0..=10000",
        read: |s| s.limits.max_active_runs_per_caller.map_or(0, u64::from),
    },
    NumCase {
        var: "MAX_REQUESTS_PER_CALLER_PER_MINUTE",
        min: 0,
        max: 100_000,
        default: 0,
        expected: "a whole number of requests (0 = unlimited) in 0..=100000",
        read: |s| {
            s.limits
                .max_requests_per_caller_per_minute
                .map_or(0, u64::from)
        },
    },
];

#[test]
fn numeric_variables_have_defaults_ranges_and_clear_errors() {
    for case in NUMERIC {
        let var = case.var;
        let read = |value: &str| settings(&[(var, value)]).map(|s| (case.read)(&s));
        assert_eq!(read(""), Ok(case.default), "{var} unset");
        assert_eq!((case.read)(&settings(&[]).unwrap()), case.default, "{var}");
        assert_eq!(read(&case.min.to_string()), Ok(case.min), "{var} min");
        assert_eq!(read(&case.max.to_string()), Ok(case.max), "{var} max");
        assert_eq!(
            read(&format!(" {} ", case.max)),
            Ok(case.max),
            "{var} trimmed"
        );
        assert_eq!(
            read(&format!("+{}", case.max)),
            Ok(case.max),
            "{var} signed"
        );

        let mut too_far = vec![(case.max + 1).to_string(), "-1".into(), "1".repeat(50)];
        if case.min > 0 {
            too_far.push((case.min - 1).to_string());
        }
        for value in too_far {
            let err = read(&value).unwrap_err();
            assert_eq!(err.var(), var);
            let text = format!("{var}={value} is out of range; expected {}", case.expected);
            assert_eq!(err.to_string(), text);
        }
        for value in ["abc", "1.5", "1e3", "10s", "0x10", "1_0", "+", "-"] {
            let text = format!(
                "{var}=\"{value}\" is not a whole number; expected {}",
                case.expected
            );
            assert_eq!(read(value).unwrap_err().to_string(), text);
        }
    }
}

#[test]
fn the_response_cache_is_off_unless_given_a_ttl() {
    assert_eq!(settings(&[]).unwrap().llm.cache_ttl, None);
    assert_eq!(
        settings(&[("LLM_CACHE_TTL_SECONDS", "0")])
            .unwrap()
            .llm
            .cache_ttl,
        None
    );
    assert_eq!(
        settings(&[("LLM_CACHE_TTL_SECONDS", "86400")])
            .unwrap()
            .llm
            .cache_ttl,
        Some(Duration::from_secs(86_400))
    );
}

#[test]
fn active_runs_are_unlimited_unless_given_a_cap() {
    let cap = |value: &str| {
        settings(&[("MAX_ACTIVE_RUNS_PER_CALLER", value)])
            .unwrap()
            .limits
            .max_active_runs_per_caller
    };
    assert_eq!(
        settings(&[]).unwrap().limits.max_active_runs_per_caller,
        None
    );
    assert_eq!(cap("0"), None);
    assert_eq!(cap("5"), Some(5));
}

#[test]
fn defaults_are_offline_and_local() {
    let s = settings(&[]).unwrap();
    assert_eq!(s.llm.provider, LlmProvider::Offline);
    assert_eq!(s.llm.base_url.as_str(), "https://api.openai.com/v1");
    assert_eq!(s.llm.model, "gpt-4o-mini");
    assert_eq!(s.llm.api_key, None);
    assert_eq!(s.web, None);
    assert_eq!(s.aws.secrets_id, None);
    assert_eq!(s.aws.checkpoint_table, None);
    assert_eq!(s.aws.work_queue_url, None);
    assert_eq!(s.kb_path, None);
    assert_eq!(s.state_dir, PathBuf::from(".bounded-rag/runs"));
    assert_eq!(s, Settings::default());
}

#[test]
fn provider_is_chosen_or_inferred() {
    let local = ("LLM_BASE_URL", "http://127.0.0.1:8089/v1");
    let cases: &[(&[(&str, &str)], LlmProvider)] = &[
        (&[], LlmProvider::Offline),
        (&[("LLM_PROVIDER", "")], LlmProvider::Offline),
        (&[("LLM_API_KEY", "sk-1")], LlmProvider::OpenAi),
        (&[local], LlmProvider::OpenAi),
        (&[("SECRETS_ID", "prod/bounded-rag")], LlmProvider::OpenAi),
        (
            &[("LLM_PROVIDER", "offline"), ("LLM_API_KEY", "sk-1")],
            LlmProvider::Offline,
        ),
        (&[("LLM_PROVIDER", "OpenAI"), local], LlmProvider::OpenAi),
        (&[("LLM_PROVIDER", " Offline ")], LlmProvider::Offline),
    ];
    for (vars, provider) in cases {
        assert_eq!(settings(vars).unwrap().llm.provider, *provider, "{vars:?}");
    }
    assert_eq!(
        error(&[("LLM_PROVIDER", "anthropic")]),
        "LLM_PROVIDER=\"anthropic\" is invalid; expected one of: openai, offline, bedrock"
    );
}

#[test]
fn bedrock_needs_a_model_and_no_key() {
    let model = "us.anthropic.claude-3-5-haiku-20241022-v1:0";
    let s = settings(&[("LLM_PROVIDER", "Bedrock"), ("LLM_MODEL", model)]).unwrap();
    assert_eq!(s.llm.provider, LlmProvider::Bedrock);
    assert_eq!(s.llm.model, model);
    assert!(s.llm.api_key.is_none());
    let err = settings(&[("LLM_PROVIDER", "bedrock")]).unwrap_err();
    assert_eq!(err.var(), "LLM_MODEL");
    assert!(
        err.to_string()
            .contains("Bedrock model id or inference profile"),
        "{err}"
    );
}

#[test]
fn openai_itself_needs_a_key_or_a_secret() {
    let text = "LLM_PROVIDER=openai with LLM_BASE_URL=https://api.openai.com/v1 needs an API key; \
                expected LLM_API_KEY or SECRETS_ID to be set (or LLM_PROVIDER=offline, or \
                LLM_BASE_URL of a server that needs no key)";
    assert_eq!(error(&[("LLM_PROVIDER", "openai")]), text);
    assert_eq!(
        error(&[("LLM_BASE_URL", "https://api.openai.com/v1")]),
        text
    );
    assert_eq!(
        settings(&[("LLM_PROVIDER", "openai")]).unwrap_err().var(),
        "LLM_API_KEY"
    );
    for ok in [
        &[("LLM_PROVIDER", "openai"), ("LLM_API_KEY", "sk-1")][..],
        &[("LLM_PROVIDER", "openai"), ("SECRETS_ID", "bounded-rag")],
        &[
            ("LLM_PROVIDER", "openai"),
            ("LLM_BASE_URL", "http://localhost:11434/v1"),
        ],
    ] {
        assert_eq!(
            settings(ok).unwrap().llm.provider,
            LlmProvider::OpenAi,
            "{ok:?}"
        );
    }
}

#[test]
fn urls_must_be_absolute_http() {
    for var in ["LLM_BASE_URL", "WEB_SEARCH_BASE_URL", "WORK_QUEUE_URL"] {
        for bad in [
            "not a url",
            "ftp://example.com/x",
            "/v1",
            "localhost:8089",
            "http://",
        ] {
            let text =
                format!("{var}=\"{bad}\" is invalid; expected an absolute http:// or https:// URL");
            assert_eq!(error(&[(var, bad)]), text);
        }
        let leaky = "https://user:hunter2@example.com/v1";
        let text = error(&[(var, leaky)]);
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.starts_with(&format!("{var} is invalid (value not shown)")),
            "{text}"
        );
    }
    let s = settings(&[
        ("LLM_BASE_URL", "http://127.0.0.1:8089/v1"),
        ("WEB_SEARCH_BASE_URL", "http://127.0.0.1:9000"),
        ("WEB_SEARCH_API_KEY", "tvly-1"),
        ("WORK_QUEUE_URL", "http://localhost:5000/123456789012/runs"),
    ])
    .unwrap();
    assert_eq!(s.llm.base_url.as_str(), "http://127.0.0.1:8089/v1");
    let web = s.web.unwrap();
    assert_eq!(web.base_url.as_str(), "http://127.0.0.1:9000/");
    assert_eq!(web.api_key.unwrap().expose(), "tvly-1");
    assert_eq!(
        s.aws.work_queue_url.as_deref(),
        Some("http://localhost:5000/123456789012/runs")
    );
}

#[test]
fn web_search_is_off_without_a_base_url() {
    let s = settings(&[("WEB_SEARCH_API_KEY", "tvly-1")]).unwrap();
    assert_eq!(s.web, None);
    let s = settings(&[("WEB_SEARCH_BASE_URL", "https://api.tavily.com")]).unwrap();
    assert_eq!(s.web.unwrap().api_key, None);
}

#[test]
fn keys_are_secrets_and_never_echoed() {
    let s = settings(&[
        ("LLM_API_KEY", "sk-live-abc"),
        ("WEB_SEARCH_API_KEY", "tvly-xyz"),
        ("WEB_SEARCH_BASE_URL", "https://api.tavily.com"),
    ])
    .unwrap();
    assert_eq!(s.llm.api_key.as_ref().unwrap().expose(), "sk-live-abc");
    for debug in [format!("{s:?}"), format!("{s:#?}")] {
        assert!(
            !debug.contains("sk-live-abc") && !debug.contains("tvly-xyz"),
            "{debug}"
        );
        assert!(debug.contains("redacted"), "{debug}");
    }
    for var in ["LLM_API_KEY", "WEB_SEARCH_API_KEY"] {
        for bad in ["sk-live abc", "sk-live-abc\n", " "] {
            let text = error(&[(var, bad), ("LLM_PROVIDER", "offline")]);
            assert_eq!(
                text,
                format!(
                    "{var} is invalid (value not shown); expected a key without whitespace or \
                     control characters"
                )
            );
        }
    }
}

#[test]
fn text_and_path_variables() {
    let s = settings(&[
        ("LLM_MODEL", " llama3.1:8b "),
        ("KB_PATH", "kb/sample"),
        ("STATE_DIR", "/tmp/runs"),
        (
            "SECRETS_ID",
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rag-AbCdEf",
        ),
        ("CHECKPOINT_TABLE", "bounded-rag.runs_v1"),
    ])
    .unwrap();
    assert_eq!(s.llm.model, "llama3.1:8b");
    assert_eq!(s.kb_path, Some(PathBuf::from("kb/sample")));
    assert_eq!(s.state_dir, PathBuf::from("/tmp/runs"));
    assert!(s.aws.secrets_id.unwrap().ends_with("secret:rag-AbCdEf"));
    assert_eq!(
        s.aws.checkpoint_table.as_deref(),
        Some("bounded-rag.runs_v1")
    );
    let arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/runs";
    let s = settings(&[("CHECKPOINT_TABLE", arn)]).unwrap();
    assert_eq!(s.aws.checkpoint_table.as_deref(), Some(arn));
    assert_eq!(
        settings(&[("LLM_MODEL", "  ")]).unwrap().llm.model,
        "gpt-4o-mini"
    );
}

#[test]
fn identifiers_are_validated() {
    let table = "a DynamoDB table name (3..=255 of A-Z a-z 0-9 _ - .) or a table ARN";
    for bad in ["ab", "runs table", "runs/1", &"t".repeat(256)] {
        let text = format!("CHECKPOINT_TABLE=\"{bad}\" is invalid; expected {table}");
        assert_eq!(error(&[("CHECKPOINT_TABLE", bad)]), text);
    }
    let secret = "a secret name or ARN of 1..=2048 characters without whitespace";
    assert_eq!(
        error(&[("SECRETS_ID", "my secret")]),
        format!("SECRETS_ID=\"my secret\" is invalid; expected {secret}")
    );
}

#[test]
fn speculation_is_on_unless_turned_off() {
    use bounded_rag::config::Speculation;
    assert_eq!(settings(&[]).unwrap().speculation, Speculation::On);
    let off = settings(&[("SPECULATION", "off")]).unwrap();
    assert_eq!(off.speculation, Speculation::Off);
    assert_eq!(
        settings(&[("SPECULATION", "on")]).unwrap().speculation,
        Speculation::On
    );
    let message = error(&[("SPECULATION", "yes")]);
    assert!(
        message.contains("SPECULATION") && message.contains("on or off"),
        "{message}"
    );
}
