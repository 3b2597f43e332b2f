//! A TLS-only PostgreSQL front on loopback, for `sslmode`: it plays the server's half of
//! PostgreSQL's TLS negotiation (the client's `SSLRequest`, answered `S`, then the handshake)
//! with a certificate for `127.0.0.1` signed by a throwaway CA, then relays the decrypted
//! stream to the real test server. A client that starts in plain text is turned away, as a
//! server with `hostssl` lines only (or RDS's `rds.force_ssl`) does. (The PyPI PostgreSQL of
//! scripts/pg.sh is built without OpenSSL, so it cannot be the TLS server itself.)

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// PostgreSQL's `SSLRequest`: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// A running front; stops with the test's runtime.
pub struct TlsFront {
    /// Where clients connect.
    pub addr: SocketAddr,
    /// The CA's certificate (PEM), what `sslrootcert=` names.
    pub ca: PathBuf,
    handshakes: Arc<AtomicUsize>,
    plain: Arc<AtomicUsize>,
    _dir: tempfile::TempDir,
}

impl TlsFront {
    /// A front for the server at `upstream` (`host:port`).
    pub async fn start(upstream: String) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        ca.distinguished_name
            .push(DnType::CommonName, "bounded-rag test CA");
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = leaf.signed_by(&key, &ca).unwrap();
        let ca_path = dir.path().join("ca.pem");
        std::fs::write(&ca_path, ca.pem()).unwrap();

        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handshakes = Arc::new(AtomicUsize::new(0));
        let plain = Arc::new(AtomicUsize::new(0));
        let (done, refused) = (Arc::clone(&handshakes), Arc::clone(&plain));
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
                let (done, refused) = (Arc::clone(&done), Arc::clone(&refused));
                tokio::spawn(async move {
                    let mut head = [0u8; 8];
                    if client.read_exact(&mut head).await.is_err() {
                        return;
                    }
                    if head != SSL_REQUEST {
                        refused.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    if client.write_all(b"S").await.is_err() {
                        return;
                    }
                    let Ok(mut tls) = acceptor.accept(client).await else {
                        return;
                    };
                    done.fetch_add(1, Ordering::SeqCst);
                    if let Ok(mut server) = TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut server).await;
                    }
                });
            }
        });
        Self {
            addr,
            ca: ca_path,
            handshakes,
            plain,
            _dir: dir,
        }
    }

    /// TLS handshakes completed.
    pub fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }

    /// Clients turned away for starting in plain text.
    pub fn plain(&self) -> usize {
        self.plain.load(Ordering::SeqCst)
    }
}
