//! Every HTTP client teamgate builds toward another party (an identity
//! provider, an authorization server, an HTTP tool's API, a JWKS, an OTLP
//! collector) starts here: reqwest 0.13, the one version in the build (rmcp's
//! client is on it), over rustls with the ring provider, checking
//! certificates against Mozilla's roots as teamgate always has. reqwest 0.13
//! would otherwise use the platform's verifier, and, built without a provider
//! of its own, panic when none is installed.
//!
//! The upstream MCP links (upstream/) build theirs on the same reqwest with
//! the platform's verifier, as they always have.

use std::{future::Future, pin::Pin, sync::LazyLock};

use openidconnect::{AsyncHttpClient, HttpClientError, HttpRequest, HttpResponse};
use reqwest::Certificate;

use crate::body::{CappedError, read_capped};

/// Mozilla's root certificates (webpki-root-certs), parsed once.
static ROOTS: LazyLock<Vec<Certificate>> = LazyLock::new(|| {
    (webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter())
        .filter_map(|der| Certificate::from_der(der).ok())
        .collect()
});

/// The process's TLS provider: ring, as sqlx and the vault use. Already set
/// (by this or by the upstream links) is fine.
pub fn install_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client builder trusting Mozilla's roots only.
pub fn builder() -> reqwest::ClientBuilder {
    install_provider();
    reqwest::Client::builder().tls_certs_only(ROOTS.iter().cloned())
}

/// A client with no more settings than [`builder`]'s.
pub fn client() -> reqwest::Client {
    builder()
        .build()
        .expect("a client with built-in settings builds")
}

/// The blocking client of the OTLP exporters, as [`builder`] builds it. Built
/// on a thread of its own, as the exporter builds its default one: reqwest's
/// blocking client may not be built on an async runtime's thread.
pub fn blocking(timeout: std::time::Duration) -> anyhow::Result<reqwest::blocking::Client> {
    install_provider();
    let build = move || {
        reqwest::blocking::Client::builder()
            .tls_certs_only(ROOTS.iter().cloned())
            .timeout(timeout)
            .build()
    };
    let built = std::thread::spawn(build).join();
    let built = built.map_err(|_| anyhow::anyhow!("building the HTTP client panicked"))?;
    Ok(built?)
}

/// The longest answer an OAuth or OpenID provider is read for (metadata, a
/// key set, a token): far above any real one.
const MAX_PROVIDER_ANSWER: usize = 1024 * 1024;

/// A reqwest client as `openidconnect`'s (and `oauth2`'s) HTTP client: their
/// own reqwest support is for 0.12, and reads answers whole.
pub struct OAuthHttp {
    client: reqwest::Client,
    /// The longest answer read.
    max: usize,
}

impl OAuthHttp {
    /// `client`, reading answers up to any provider's.
    pub fn new(client: reqwest::Client) -> Self {
        Self::capped(client, MAX_PROVIDER_ANSWER)
    }

    /// `client`, reading answers up to `max` bytes.
    pub fn capped(client: reqwest::Client, max: usize) -> Self {
        Self { client, max }
    }
}

type OAuthError = HttpClientError<reqwest::Error>;

impl<'c> AsyncHttpClient<'c> for OAuthHttp {
    type Error = OAuthError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, OAuthError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let request = reqwest::Request::try_from(request).map_err(Box::new)?;
            let response = self.client.execute(request).await.map_err(Box::new)?;
            let (parts, body) = http::Response::from(response).into_parts();
            let body = match read_capped(body, self.max).await {
                Ok(body) => body,
                Err(CappedError::Read(e)) => match e.downcast::<reqwest::Error>() {
                    Ok(e) => return Err(HttpClientError::Reqwest(e)),
                    Err(e) => return Err(HttpClientError::Other(e.to_string())),
                },
                Err(e @ CappedError::TooLarge(_)) => {
                    return Err(HttpClientError::Other(e.to_string()));
                }
            };
            Ok(http::Response::from_parts(parts, body.to_vec()))
        })
    }
}

/// `t=<unix>,sha256=<hex>` of `body` under `secret`, sent at `unix`: the
/// signature of the bodies teamgate posts to the team's webhooks (audit
/// shipping, guardrail filters), the time inside so a body cannot be
/// replayed later as new.
pub fn signature(secret: &[u8], unix: u64, body: &[u8]) -> String {
    use hmac::Mac;
    let mut mac =
        hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(unix.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let mac = mac.finalize().into_bytes();
    format!("t={unix},sha256={}", hex::encode(mac))
}
