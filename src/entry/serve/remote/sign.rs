//! SigV4 for the requests `serve --remote` sends, with the AWS SDK's own signer (`aws-sigv4`)
//! and the credentials of the default chain (environment, `AWS_PROFILE`, SSO, the instance
//! role...). The credentials are kept until five minutes before they expire, then asked for
//! again: the chain's provider has no cache of its own (an SDK client keeps one in its
//! identity cache, and this is no SDK client). Neither the credentials nor a signature is ever
//! logged or sent anywhere but in the signed request's headers.

use super::error::RemoteError;
use super::target::Target;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use std::time::{Duration, SystemTime};
use tokio::sync::Mutex;

/// How long before their expiry credentials are asked for again.
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(5 * 60);

/// Signs requests with the chain's credentials.
pub(super) struct Signer {
    provider: SharedCredentialsProvider,
    /// The credentials last provided (`Credentials`' `Debug` redacts the secret).
    current: Mutex<Option<Credentials>>,
}

impl Signer {
    pub(super) fn new(provider: SharedCredentialsProvider) -> Signer {
        Signer {
            provider,
            current: Mutex::new(None),
        }
    }

    /// The credentials to sign with, asked for when none are held or they are about to expire.
    pub(super) async fn credentials(&self) -> Result<Credentials, RemoteError> {
        let mut current = self.current.lock().await;
        let fresh = |c: &Credentials| {
            c.expiry()
                .is_none_or(|at| at > SystemTime::now() + REFRESH_BEFORE_EXPIRY)
        };
        if let Some(credentials) = current.as_ref().filter(|c| fresh(c)) {
            return Ok(credentials.clone());
        }
        let credentials = self
            .provider
            .provide_credentials()
            .await
            .map_err(|e| RemoteError::Credentials(crate::outbound::error_chain(&e)))?;
        *current = Some(credentials.clone());
        Ok(credentials)
    }

    /// The headers that sign a request (`authorization`, `x-amz-date`, `x-amz-content-sha256`,
    /// and `x-amz-security-token` for temporary credentials) of `method` to `url` with
    /// `headers` (each one signed) and `body`, for `target`'s service and region.
    pub(super) async fn sign(
        &self,
        target: &Target,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>, RemoteError> {
        let identity: Identity = self.credentials().await?.into();
        signed_headers(
            target,
            &identity,
            SystemTime::now(),
            method,
            url,
            headers,
            body,
        )
    }
}

/// The signing headers of one request, at `time`.
fn signed_headers(
    target: &Target,
    identity: &Identity,
    time: SystemTime,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<(String, String)>, RemoteError> {
    let mut settings = SigningSettings::default();
    // The body's hash as a header too: function URLs want it on requests with a body.
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    let params = v4::SigningParams::builder()
        .identity(identity)
        .region(target.region())
        .name(target.service().as_str())
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| RemoteError::Signing(e.to_string()))?
        .into();
    let signable = SignableRequest::new(
        method,
        url,
        headers.iter().copied(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| RemoteError::Signing(e.to_string()))?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|e| RemoteError::Signing(e.to_string()))?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::serve::remote::target::SigningService;

    #[test]
    fn a_request_is_signed_for_the_targets_service_and_region() {
        let target = Target::new(
            "https://abc123.lambda-url.eu-west-1.on.aws/",
            None,
            None,
            None,
        )
        .unwrap();
        assert_eq!(target.service(), SigningService::Lambda);
        let identity = Credentials::new("AKIDEXAMPLE", "secret", None, None, "test").into();
        // 2015-08-30T12:36:00Z, the SigV4 test suite's time.
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        let headers = signed_headers(
            &target,
            &identity,
            time,
            "POST",
            "https://abc123.lambda-url.eu-west-1.on.aws/workflow/run",
            &[("content-type", "application/json")],
            b"{}",
        )
        .unwrap();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
                .unwrap()
        };
        assert_eq!(get("x-amz-date"), "20150830T123600Z");
        // sha256("{}")
        assert_eq!(
            get("x-amz-content-sha256"),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        let authorization = get("authorization");
        assert!(
            authorization.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/eu-west-1/lambda/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature="
            ),
            "{authorization}"
        );
        assert!(!headers.iter().any(|(_, v)| v.contains("secret")));
    }
}
