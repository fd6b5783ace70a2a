//! A test identity provider: a P-256 key pair the test generates, its JWKS
//! served on a loopback port, and JWTs minted with any claims or header.

use std::net::SocketAddr;

use axum::{Json, Router, routing::get};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey;
use serde_json::{Value, json};

pub(crate) struct Idp {
    pub issuer: String,
    key: EncodingKey,
    /// The public key's JWK, for alg-confusion attempts.
    pub public_jwk: Value,
}

pub(crate) const KID: &str = "test-key-1";

impl Idp {
    pub(crate) async fn start() -> Self {
        let secret = p256::SecretKey::random(&mut rand_core::OsRng);
        let der = secret.to_pkcs8_der().unwrap();
        let key = EncodingKey::from_ec_der(der.as_bytes());
        let mut public_jwk: Value =
            serde_json::from_str(&secret.public_key().to_jwk_string()).unwrap();
        public_jwk["kid"] = json!(KID);
        public_jwk["alg"] = json!("ES256");
        public_jwk["use"] = json!("sig");
        let jwks = json!({"keys": [public_jwk.clone()]});
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let issuer = format!("http://{addr}");
        let discovery = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks.json")});
        let app = Router::new()
            .route("/jwks.json", get(move || async move { Json(jwks.clone()) }))
            .route(
                "/.well-known/openid-configuration",
                get(move || async move { Json(discovery.clone()) }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            issuer,
            key,
            public_jwk,
        }
    }

    /// Claims valid for an hour for `audience`, with `scope`.
    pub(crate) fn claims(&self, audience: &str, user: &str, scope: &str) -> Value {
        let now = jsonwebtoken::get_current_timestamp() as i64;
        json!({"iss": self.issuer, "aud": audience, "sub": format!("sub-{user}"), "preferred_username": user,
            "scope": scope, "iat": now, "nbf": now - 5, "exp": now + 3600})
    }

    pub(crate) fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(KID.into());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }

    pub(crate) fn sign_with_kid(&self, claims: &Value, kid: &str) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.into());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }

    /// `alg: none`, unsigned.
    pub(crate) fn unsigned(&self, claims: &Value) -> String {
        let header =
            URL_SAFE_NO_PAD.encode(json!({"alg": "none", "typ": "JWT", "kid": KID}).to_string());
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        format!("{header}.{payload}.")
    }

    /// HS256 keyed with the public key: the classic algorithm confusion.
    pub(crate) fn confused(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(KID.into());
        let secret = self.public_jwk.to_string();
        jsonwebtoken::encode(
            &header,
            claims,
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    }
}
