//! TLS to PostgreSQL on the process's one rustls stack (*ring*, as [`crate::tls`]): libpq's
//! `sslmode` ([`PgTls`]) as the connector tokio-postgres negotiates with.
//!
//! - `prefer` and `require` encrypt without checking the certificate (what libpq does: they
//!   guard against eavesdropping, not against a server in the middle);
//! - `verify-ca` checks that it chains to a trusted certificate, `verify-full` also that it
//!   names the host connected to. Trusted: `sslrootcert`'s file (RDS's `global-bundle.pem`),
//!   else the system's certificates.
use super::sql::SqlError;
use crate::config::PgTls;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, Error, RootCertStore};
use rustls::{SignatureScheme, SupportedProtocolVersion};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connector for `tls`, trusting `root_cert`'s certificates (a PEM file) or the system's.
/// A file that cannot be read, or no certificate to trust, is a permanent error naming it.
pub(crate) fn connector(
    tls: PgTls,
    root_cert: Option<&str>,
) -> Result<MakeRustlsConnect, SqlError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&SupportedProtocolVersion] = rustls::DEFAULT_VERSIONS;
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions)
        .map_err(|e| SqlError::permanent(format!("TLS to PostgreSQL: {e}")))?;
    let chain = match tls {
        PgTls::Disable | PgTls::Prefer | PgTls::Require => None,
        PgTls::VerifyCa | PgTls::VerifyFull => Some(
            WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots(root_cert)?),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|e| SqlError::permanent(format!("TLS to PostgreSQL: {e}")))?,
        ),
    };
    let verifier = Arc::new(Verifier {
        chain,
        check_name: tls == PgTls::VerifyFull,
        provider,
    });
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The certificates to trust: `file`'s, else the system's.
fn roots(file: Option<&str>) -> Result<RootCertStore, SqlError> {
    let mut roots = RootCertStore::empty();
    let certs = match file {
        Some(path) => CertificateDer::pem_file_iter(path)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| SqlError::permanent(format!("sslrootcert={path}: {e}")))?,
        None => rustls_native_certs::load_native_certs().certs,
    };
    roots.add_parsable_certificates(certs);
    if roots.is_empty() {
        return Err(SqlError::permanent(match file {
            Some(path) => format!("sslrootcert={path}: no certificate in it"),
            None => "sslmode=verify-ca/verify-full: no system certificates to trust; name the \
                     server's CA with sslrootcert=PATH"
                .to_owned(),
        }));
    }
    Ok(roots)
}

/// What of the server's certificate `sslmode` checks: its chain (`chain`, when verifying) and
/// its name (`check_name`, `verify-full`); the handshake's signatures always.
#[derive(Debug)]
struct Verifier {
    chain: Option<Arc<WebPkiServerVerifier>>,
    check_name: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_file_that_is_not_there_or_holds_no_certificate_is_named() {
        let missing = connector(PgTls::VerifyFull, Some("/nonexistent/rds.pem")).err();
        assert!(missing
            .unwrap()
            .message
            .contains("sslrootcert=/nonexistent/rds.pem"));
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let err = connector(PgTls::VerifyCa, empty.to_str()).err().unwrap();
        assert!(
            err.message.contains("no certificate in it"),
            "{}",
            err.message
        );
        assert!(connector(PgTls::Require, None).is_ok());
    }
}
