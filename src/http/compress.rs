//! Response compression, applied only to responses that will be compressed.
//!
//! tower-http's `CompressionLayer` wraps every response body in its
//! `CompressionBody`, which holds every encoder's state inline (about 5.7 KiB
//! here), and axum boxes that once more: an allocation and a copy of that
//! size on every request, kept for as long as a `subscriptions/listen` or GET
//! stream stays open. Here the predicate is asked first, with the checks
//! tower-http makes before it encodes, and only a response it would compress
//! goes through tower-http (which still negotiates the encoding from
//! `Accept-Encoding`, sets `Vary`, encodes, and answers 406 when no encoding
//! the client allows is left); every other response, SSE among them, passes
//! through untouched.

use std::{convert::Infallible, future::Future};

use axum::{body::Body, extract::Request, http::header, response::Response};
use tower::{Layer, ServiceExt, service_fn};
use tower_http::compression::{
    CompressionLayer, DefaultPredicate, Predicate,
    predicate::{And, SizeAbove},
};

type Rule = And<DefaultPredicate, SizeAbove>;

/// What is compressed: tower-http's default rule (never SSE, gRPC or
/// images) and a minimum size.
pub struct Compression {
    rule: Rule,
}

impl Compression {
    pub fn new(min_bytes: u16) -> Self {
        Self {
            rule: DefaultPredicate::new().and(SizeAbove::new(min_bytes.into())),
        }
    }

    /// The test tower-http applies before it encodes anything.
    fn applies(&self, response: &Response) -> bool {
        let headers = response.headers();
        !headers.contains_key(header::CONTENT_ENCODING)
            && !headers.contains_key(header::CONTENT_RANGE)
            && self.rule.should_compress(response)
    }
}

/// Runs `next` and compresses its response when the rule says so. A plain
/// function rather than a layer of its own: the edge step calls it, which
/// saves a boxed service and future per request.
pub async fn compress<F: Future<Output = Response>>(
    compression: &Compression,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let accept = request.headers().get(header::ACCEPT_ENCODING).cloned();
    let response = next(request).await;
    if !compression.applies(&response) {
        return response;
    }
    // tower-http reads only the request's Accept-Encoding.
    let mut negotiation = Request::new(Body::empty());
    if let Some(accept) = accept {
        negotiation
            .headers_mut()
            .insert(header::ACCEPT_ENCODING, accept);
    }
    let mut response = Some(response);
    let encoder = CompressionLayer::new()
        .compress_when(compression.rule.clone())
        .layer(service_fn(move |_: Request| {
            let response = response.take().unwrap_or_default();
            async move { Ok::<_, Infallible>(response) }
        }));
    match encoder.oneshot(negotiation).await {
        Ok(compressed) => compressed.map(Body::new),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::{Router, routing::get};
    use http_body_util::BodyExt;

    fn app() -> Router {
        let big = "x".repeat(4096);
        Router::new()
            .route("/json", get(move || async move { big.clone() }))
            .route("/small", get(|| async { "tiny" }))
            .route(
                "/sse",
                get(|| async {
                    Response::builder()
                        .header(header::CONTENT_TYPE, "text/event-stream")
                        .body(Body::from("data: {}\n\n".repeat(500)))
                        .unwrap()
                }),
            )
            .layer(axum::middleware::from_fn(
                |request: Request, next: axum::middleware::Next| async move {
                    compress(&Compression::new(1024), request, |r| next.run(r)).await
                },
            ))
    }

    async fn get_with(path: &str, accept: Option<&str>) -> Response {
        let mut request = Request::get(path).body(Body::empty()).unwrap();
        if let Some(accept) = accept {
            request
                .headers_mut()
                .insert(header::ACCEPT_ENCODING, accept.parse().unwrap());
        }
        app().oneshot(request).await.unwrap()
    }

    #[tokio::test]
    async fn large_replies_are_compressed_when_the_client_accepts_it() {
        let response = get_with("/json", Some("gzip")).await;
        assert_eq!(response.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(response.headers()[header::VARY], "accept-encoding");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert!(
            body.len() < 4096,
            "gzip shrank 4 KiB of x to {}",
            body.len()
        );
    }

    #[tokio::test]
    async fn without_accept_encoding_the_reply_is_plain_but_varies() {
        let response = get_with("/json", None).await;
        assert!(!response.headers().contains_key(header::CONTENT_ENCODING));
        assert_eq!(response.headers()[header::VARY], "accept-encoding");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body.len(), 4096);
    }

    #[tokio::test]
    async fn small_replies_and_streams_pass_through() {
        for path in ["/small", "/sse"] {
            let response = get_with(path, Some("gzip, br")).await;
            assert!(!response.headers().contains_key(header::CONTENT_ENCODING));
            assert!(!response.headers().contains_key(header::VARY), "{path}");
        }
    }
}
