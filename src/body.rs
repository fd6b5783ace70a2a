//! The one way teamgate reads a body it did not write: up to a byte limit,
//! so another party's answer (a client's POST, an upstream API, an
//! authorization server, a metadata document) cannot fill memory first.
//! Below every layer that reads one; it knows no teamgate type.

use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};

/// An error of the body itself, as its transport gave it.
pub type ReadError = Box<dyn std::error::Error + Send + Sync>;

/// Why a body was not read whole.
#[derive(Debug, thiserror::Error)]
pub enum CappedError {
    #[error("the body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the body could not be read: {0}")]
    Read(ReadError),
}

impl CappedError {
    /// Whether the transport gave up on time (a client's own timeout, as
    /// reqwest reports it; `T` is the transport's error type).
    pub fn is<T: std::error::Error + 'static>(&self, test: impl Fn(&T) -> bool) -> bool {
        matches!(self, Self::Read(e) if e.downcast_ref::<T>().is_some_and(test))
    }
}

/// All of `body`, or [`CappedError::TooLarge`] as soon as more than `max`
/// bytes arrive (a body of exactly `max` bytes is read).
pub async fn read_capped<B>(body: B, max: usize) -> Result<Bytes, CappedError>
where
    B: http_body::Body,
    B::Error: Into<ReadError>,
{
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(CappedError::TooLarge(max)),
        Err(e) => Err(CappedError::Read(e)),
    }
}

/// The body of a client's response (reqwest's converts into an
/// `http::Response`), read as [`read_capped`] does.
pub async fn read_response<R, B>(response: R, max: usize) -> Result<Bytes, CappedError>
where
    R: Into<http::Response<B>>,
    B: http_body::Body,
    B::Error: Into<ReadError>,
{
    read_capped(response.into().into_body(), max).await
}

#[cfg(test)]
mod tests {
    use http_body_util::Full;

    use super::*;

    #[tokio::test]
    async fn a_body_at_the_limit_is_read_and_one_byte_more_is_not() {
        let body = read_capped(Full::new(Bytes::from_static(b"abcd")), 4).await;
        assert_eq!(body.unwrap(), Bytes::from_static(b"abcd"));
        let over = read_capped(Full::new(Bytes::from_static(b"abcde")), 4).await;
        assert!(matches!(over, Err(CappedError::TooLarge(4))), "{over:?}");
    }
}
