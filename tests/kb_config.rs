//! The knowledge-base and embeddings variables: parsed, validated, and named in errors.
use bounded_rag::config::{ConfigError, EmbeddingsProvider, Settings};
use std::collections::HashMap;
use std::time::Duration;

fn settings(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Settings::from_lookup(|name| map.get(name).cloned())
}

#[test]
fn kb_uri_refresh_and_embeddings_are_read_and_checked() {
    let s = settings(&[]).unwrap();
    assert_eq!(
        (s.kb_uri, s.kb_refresh),
        (None, Some(Duration::from_secs(300)))
    );
    assert!(s.embeddings.is_none());

    let s = settings(&[
        ("KB_URI", "s3://my-kb/team/durian/"),
        ("KB_REFRESH_SECONDS", "0"),
        ("EMBEDDINGS_BASE_URL", "http://127.0.0.1:11434/v1"),
        ("EMBEDDINGS_MODEL", "all-minilm"),
        ("EMBEDDINGS_API_KEY", "ek-secret"),
    ])
    .unwrap();
    let Some(bounded_rag::config::KbLocation::S3(uri)) = s.kb_uri else {
        panic!("an S3 location: {:?}", s.kb_uri)
    };
    assert_eq!(
        (uri.bucket.as_str(), uri.prefix.as_str()),
        ("my-kb", "team/durian")
    );
    assert_eq!(s.kb_refresh, None, "0 = never re-check");
    let e = s.embeddings.unwrap();
    assert_eq!(e.model, "all-minilm");
    assert_eq!(e.api_key.unwrap().expose(), "ek-secret");

    let err = settings(&[("KB_URI", "https://my-kb/x")]).unwrap_err();
    assert_eq!(err.var(), "KB_URI");
    assert!(err.to_string().contains("s3://BUCKET/PREFIX"), "{err}");
    let err = settings(&[("KB_REFRESH_SECONDS", "90000")]).unwrap_err();
    assert_eq!(err.var(), "KB_REFRESH_SECONDS");
    let err = settings(&[("EMBEDDINGS_BASE_URL", "http://127.0.0.1:1/v1")]).unwrap_err();
    assert_eq!(err.var(), "EMBEDDINGS_MODEL");
    let err = settings(&[("EMBEDDINGS_BASE_URL", "ftp://x")]).unwrap_err();
    assert_eq!(err.var(), "EMBEDDINGS_BASE_URL");
    let err = settings(&[("EMBEDDINGS_API_KEY", "a b")]).unwrap_err();
    assert!(
        !err.to_string().contains("a b"),
        "keys are never echoed: {err}"
    );
}

#[test]
fn bedrock_embeddings_need_a_model_and_take_titan_dimensions() {
    let model = "amazon.titan-embed-text-v2:0";
    let e = settings(&[
        ("EMBEDDINGS_PROVIDER", "bedrock"),
        ("EMBEDDINGS_MODEL", model),
    ])
    .unwrap()
    .embeddings
    .unwrap();
    assert_eq!(e.provider, EmbeddingsProvider::Bedrock { dimensions: 1024 });
    assert_eq!(e.model, model);
    let e = settings(&[
        ("EMBEDDINGS_PROVIDER", "bedrock"),
        ("EMBEDDINGS_MODEL", model),
        ("EMBEDDINGS_DIMENSIONS", "256"),
    ])
    .unwrap()
    .embeddings
    .unwrap();
    assert_eq!(e.provider, EmbeddingsProvider::Bedrock { dimensions: 256 });
    for (vars, var) in [
        (
            &[("EMBEDDINGS_PROVIDER", "bedrock")][..],
            "EMBEDDINGS_MODEL",
        ),
        (
            &[
                ("EMBEDDINGS_PROVIDER", "bedrock"),
                ("EMBEDDINGS_MODEL", model),
                ("EMBEDDINGS_DIMENSIONS", "384"),
            ],
            "EMBEDDINGS_DIMENSIONS",
        ),
        (&[("EMBEDDINGS_PROVIDER", "cohere")], "EMBEDDINGS_PROVIDER"),
        (&[("EMBEDDINGS_PROVIDER", "openai")], "EMBEDDINGS_PROVIDER"),
    ] {
        assert_eq!(settings(vars).unwrap_err().var(), var, "{vars:?}");
    }
    let e = settings(&[
        ("EMBEDDINGS_PROVIDER", "openai"),
        ("EMBEDDINGS_BASE_URL", "http://127.0.0.1:11434/v1"),
        ("EMBEDDINGS_MODEL", "all-minilm"),
    ])
    .unwrap()
    .embeddings
    .unwrap();
    assert!(matches!(e.provider, EmbeddingsProvider::OpenAi { .. }));
}
