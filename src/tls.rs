//! One TLS stack for every outbound connection: rustls with the *ring* crypto provider, for the
//! AWS SDK clients and for `reqwest` (the model, web search, embeddings, span export) alike.
//!
//! Both would otherwise pull in their default provider, aws-lc (a C library of ~0.5 MB in the
//! arm64 bootstrap, BENCHMARKS.md "Bootstrap size"); with one provider chosen here, neither
//! does. Certificates are the system's, as before.

use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use std::sync::Once;

/// A `reqwest` client builder, after making *ring* the process's rustls provider (`reqwest`
/// is built without one of its own, so every client is built through here).
pub fn reqwest_builder() -> reqwest::ClientBuilder {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err only when a provider is already installed, which is then the one used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}

/// The HTTPS client of every AWS SDK client (hyper and rustls on *ring*), set once on the
/// `SdkConfig`.
pub fn aws_http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// The AWS configuration of this process, as the SDK reads it from the environment, with the
/// client of [`aws_http_client`].
pub(crate) async fn aws_sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(aws_http_client())
        .load()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_the_process_provider_once_a_client_is_built() {
        reqwest_builder().build().expect("a client");
        let provider = rustls::crypto::CryptoProvider::get_default().expect("installed");
        let ring = rustls::crypto::ring::default_provider();
        assert_eq!(
            provider.cipher_suites.len(),
            ring.cipher_suites.len(),
            "the installed provider is ring's"
        );
    }
}
