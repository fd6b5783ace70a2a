//! The two token requests teamgate makes as an upstream's OAuth client
//! (issue 29): the code exchanged with its PKCE verifier (RFC 6749 §4.1.3,
//! RFC 7636) and a refresh (§6), both asking for the upstream's RFC 8707
//! resource, on the `oauth2` crate over the client the caller built for the
//! addresses `oauth_reach` checked (its timeout, no redirects), answers read
//! capped (`outbound::OAuthHttp`).

use std::borrow::Cow;

use oauth2::{
    AuthType, AuthorizationCode, ClientId, HttpClientError, PkceCodeVerifier, RedirectUrl,
    RefreshToken, RequestTokenError, TokenUrl,
    basic::{BasicClient, BasicErrorResponse, BasicTokenResponse},
};

use crate::outbound::OAuthHttp;

/// The longest token endpoint answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// What is traded at the token endpoint.
pub enum Grant<'a> {
    /// The authorization code, its PKCE verifier and the redirect URI it was sent to.
    Code {
        code: &'a str,
        verifier: &'a str,
        redirect: &'a str,
    },
    /// A refresh token.
    Refresh(&'a str),
}

impl Grant<'_> {
    fn name(&self) -> &'static str {
        match self {
            Self::Code { .. } => "code",
            Self::Refresh(_) => "refresh",
        }
    }
}

/// Why no token came; never the request's or the answer's secrets.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    #[error("the redirect URI {0} is not a URL")]
    Redirect(String),
    #[error("the authorization server did not answer: {0}")]
    NoAnswer(String),
    #[error("the authorization server refused the {grant}: {code}")]
    Refused { grant: &'static str, code: String },
    #[error("the authorization server answered no token response")]
    NoTokenResponse,
    #[error("the authorization server's answer was refused: {0}")]
    Unexpected(String),
}

/// The token endpoint's answer to `grant` for the public client
/// `client_id` (its ID in the form, no secret), asking for `resource`.
/// `http` sends to the addresses `endpoint` was checked at.
pub async fn request(
    http: reqwest::Client,
    endpoint: url::Url,
    (client_id, resource): (&str, &str),
    grant: Grant<'_>,
) -> Result<BasicTokenResponse, GrantError> {
    let client = BasicClient::new(ClientId::new(client_id.to_owned()))
        .set_token_uri(TokenUrl::from_url(endpoint))
        .set_auth_type(AuthType::RequestBody);
    let http = OAuthHttp::capped(http, MAX_ANSWER_BYTES);
    let name = grant.name();
    let answer = match grant {
        Grant::Code {
            code,
            verifier,
            redirect,
        } => {
            let redirect = RedirectUrl::new(redirect.to_owned())
                .map_err(|_| GrantError::Redirect(redirect.to_owned()))?;
            (client.exchange_code(AuthorizationCode::new(code.to_owned())))
                .set_pkce_verifier(PkceCodeVerifier::new(verifier.to_owned()))
                .set_redirect_uri(Cow::Owned(redirect))
                .add_extra_param("resource", resource)
                .request_async(&http)
                .await
        }
        Grant::Refresh(refresh) => {
            let refresh = RefreshToken::new(refresh.to_owned());
            (client.exchange_refresh_token(&refresh))
                .add_extra_param("resource", resource)
                .request_async(&http)
                .await
        }
    };
    answer.map_err(|e| refused(name, e))
}

type Failure = RequestTokenError<HttpClientError<reqwest::Error>, BasicErrorResponse>;

fn refused(grant: &'static str, error: Failure) -> GrantError {
    match error {
        RequestTokenError::ServerResponse(answer) => GrantError::Refused {
            grant,
            // The server's words, short and printable.
            code: (answer.error().to_string().chars())
                .filter(char::is_ascii_graphic)
                .take(64)
                .collect(),
        },
        // The URL named in reqwest's error is the token endpoint's; left out
        // as the hand-written posts did.
        RequestTokenError::Request(HttpClientError::Reqwest(e)) => {
            GrantError::NoAnswer((*e).without_url().to_string())
        }
        RequestTokenError::Request(other) => GrantError::NoAnswer(other.to_string()),
        // The unparsed answer may hold tokens: never shown.
        RequestTokenError::Parse(..) => GrantError::NoTokenResponse,
        RequestTokenError::Other(why) => GrantError::Unexpected(why),
    }
}
