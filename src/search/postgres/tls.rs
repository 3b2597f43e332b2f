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
    let verifier: Arc<dyn ServerCertVerifier> = match tls {
        PgTls::Disable | PgTls::Prefer | PgTls::Require => Arc::new(Unchecked(provider)),
        PgTls::VerifyCa | PgTls::VerifyFull => {
            let roots = Arc::new(roots(root_cert)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| SqlError::permanent(format!("TLS to PostgreSQL: {e}")))?;
            if tls == PgTls::VerifyFull {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            }
        }
    };
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

/// `verify-ca`: the chain checked, the name not.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let checked =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match checked {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` / `require`: encrypted, the certificate taken as it is (the handshake's signatures
/// are still checked against it).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
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
