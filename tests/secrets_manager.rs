//! `SecretsProvider` against a real Secrets Manager wire API (moto on loopback): values, caching
//! with a TTL (one call for concurrent cold-start callers), malformed secrets, redaction.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use bounded_rag::clock::FakeClock;
use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::secrets::{SecretsError, SecretsProvider};
use support::moto::moto;

const KEYS: &str = r#"{"LLM_API_KEY":"sk-llm-0123456789","WEB_SEARCH_API_KEY":"tvly-9876543210"}"#;

async fn provider_for(secret_string: &str, ttl: Duration) -> (SecretsProvider, String) {
    let moto = moto().await;
    let secret_id = moto.create_secret(secret_string).await;
    let provider = SecretsProvider::new(moto.secretsmanager().await, secret_id.clone(), ttl);
    (provider, secret_id)
}

#[tokio::test]
async fn reads_the_keys_once_within_the_ttl() {
    let (provider, _) = provider_for(KEYS, Duration::from_secs(300)).await;
    let bundle = provider.get_json().await.unwrap();
    assert_eq!(
        bundle.llm_api_key.as_ref().unwrap().expose(),
        "sk-llm-0123456789"
    );
    assert_eq!(
        bundle.web_search_api_key.as_ref().unwrap().expose(),
        "tvly-9876543210"
    );
    assert_eq!(provider.get_json().await.unwrap(), bundle);
    assert_eq!(provider.fetch_count(), 1);

    for shown in [
        format!("{bundle:?}"),
        bundle.to_string(),
        format!("{provider:?}"),
    ] {
        assert!(
            !shown.contains("sk-llm") && !shown.contains("tvly-"),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn concurrent_cold_callers_share_one_call() {
    let (provider, _) = provider_for(KEYS, Duration::from_secs(300)).await;
    let results = futures::future::join_all((0..16).map(|_| provider.get_json())).await;
    assert!(results.iter().all(|r| r.is_ok()));
    assert_eq!(provider.fetch_count(), 1);
}

#[tokio::test]
async fn reads_again_after_the_ttl_and_sees_a_rotated_value() {
    let moto = moto().await;
    let (provider, secret_id) = provider_for(KEYS, Duration::from_secs(60)).await;
    let clock = Arc::new(FakeClock::at_ms(1_700_000_000_000));
    let provider = provider.with_clock(clock.clone());

    provider.get_json().await.unwrap();
    moto.secretsmanager()
        .await
        .put_secret_value()
        .secret_id(&secret_id)
        .secret_string(r#"{"LLM_API_KEY":"sk-rotated"}"#)
        .send()
        .await
        .unwrap();

    clock.advance(Duration::from_secs(59));
    let cached = provider.get_json().await.unwrap();
    assert_eq!(cached.llm_api_key.unwrap().expose(), "sk-llm-0123456789");
    assert_eq!(provider.fetch_count(), 1);

    clock.advance(Duration::from_secs(2));
    let fresh = provider.get_json().await.unwrap();
    assert_eq!(fresh.llm_api_key.unwrap().expose(), "sk-rotated");
    assert_eq!(fresh.web_search_api_key, None, "a missing key is None");
    assert_eq!(provider.fetch_count(), 2);
}

#[tokio::test]
async fn a_non_json_secret_is_a_clear_error_without_the_value() {
    let (provider, secret_id) =
        provider_for("sk-plain-text-not-json", Duration::from_secs(60)).await;
    let err = provider.get_json().await.unwrap_err();
    let shown = format!("{err} / {err:?}");
    assert!(matches!(err, SecretsError::Malformed { .. }), "{shown}");
    assert!(
        shown.contains(&secret_id) && shown.contains("not JSON"),
        "{shown}"
    );
    assert!(!shown.contains("sk-plain"), "{shown}");
    assert_eq!(err.class(), ErrorClass::Permanent);
}

#[tokio::test]
async fn a_missing_secret_is_permanent_and_not_cached() {
    let moto = moto().await;
    let provider = SecretsProvider::new(
        moto.secretsmanager().await,
        "bounded-rag/does-not-exist",
        Duration::from_secs(60),
    );
    let err = provider.get_json().await.unwrap_err();
    assert!(matches!(err, SecretsError::Permanent(_)), "{err:?}");
    assert!(err.to_string().contains("does-not-exist"), "{err}");
    provider.get_json().await.unwrap_err();
    assert_eq!(
        provider.fetch_count(),
        2,
        "failures are retried by the next caller"
    );
}
