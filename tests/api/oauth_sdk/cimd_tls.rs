//! A Client ID Metadata Document served over https on 127.0.0.1, as a
//! client's own web site would (the TypeScript SDK takes only https CIMD
//! URLs): a self-signed certificate made at test time with rcgen, served
//! with tokio-rustls. teamgate fetches it only under the testing-only
//! `cimd_testing_loopback` switch, which skips the certificate check for
//! loopback hosts.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};
use tokio_rustls::TlsAcceptor;

/// The document's server; stops on drop.
pub(super) struct CimdSite {
    /// The document's URL: the client's id.
    pub url: String,
    /// How many times the document was fetched.
    pub fetches: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CimdSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves a document naming the client `name`, redirecting to a loopback
/// `/callback` on any port (RFC 8252).
pub(super) async fn serve(name: &str) -> CimdSite {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://{}/clients/ts-oauth.json",
        listener.local_addr().unwrap()
    );
    let doc = json!({
        "client_id": url, "client_name": name, "client_uri": "https://example.com/ts-oauth",
        "redirect_uris": ["http://127.0.0.1/callback"],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
    .to_string();
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
    let cert: CertificateDer<'static> = made.cert.der().clone();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let fetches = Arc::new(AtomicUsize::new(0));
    let counted = fetches.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, doc, counted) = (acceptor.clone(), doc.clone(), counted.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16384 {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let found = request.starts_with(b"GET /clients/ts-oauth.json ");
                let (status, body) = if found {
                    counted.fetch_add(1, Ordering::SeqCst);
                    ("200 OK", doc.as_str())
                } else {
                    ("404 Not Found", "{}")
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    CimdSite { url, fetches, task }
}
