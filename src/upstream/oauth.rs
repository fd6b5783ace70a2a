//! A member's own access token for an upstream with `auth = "oauth"`
//! (issue 29): read from the vault where the portal's flow stored it,
//! refreshed ahead of expiry, dropped when the authorization server
//! refuses the refresh; a member with none is sent to the portal page that
//! connects them, through the same path as an empty credential slot.

use std::time::Duration;

use oauth2::basic::BasicTokenResponse;

use crate::{
    protocol::{CallToolResponse, text_result},
    registry::{
        CallContext, CredentialKind, MemberSecrets, SecretsError, Slots,
        oauth::{TokenSet, token_slot},
        oauth_grant::{self, Grant, GrantError},
        oauth_reach::{Reach, ReachError, Reached},
    },
};

/// Why a member's stored tokens do not serve; said to the member and logged
/// (never a token: the grant's and the reach's errors name none).
#[derive(Debug, thiserror::Error)]
pub(super) enum TokenError {
    #[error("not connected")]
    NotConnected,
    #[error("the access token expired and came with no refresh token")]
    NoRefreshToken,
    #[error("no HTTP client")]
    NoClient,
    #[error(transparent)]
    Secrets(#[from] SecretsError),
    #[error(transparent)]
    Reach(#[from] ReachError),
    #[error(transparent)]
    Grant(#[from] GrantError),
}

/// A token ending within this is refreshed first.
const REFRESH_AHEAD_SECS: i64 = 60;
/// How long the authorization server may take to refresh.
const REFRESH_TIMEOUT: Duration = Duration::from_secs(10);

/// The caller's current token set for `upstream`, refreshed if needed;
/// else what the call answers instead.
pub(super) async fn tokens(
    (upstream, reach): (&str, &Reach),
    slots: &Slots,
    tool: &str,
    cx: &CallContext,
) -> Result<TokenSet, CallToolResponse> {
    let start = slots.oauth_start(upstream);
    let error = |text: String| CallToolResponse::from(text_result(text, true));
    let connect = || {
        error(format!(
            "`{tool}` acts on the upstream server {upstream} as you, and you have not connected \
             your account there. Connect it at {start}, then call the tool again."
        ))
    };
    let secrets = cx
        .member_secrets()
        .ok_or_else(|| error(format!("`{tool}` needs a member's OAuth connection")))?;
    let user = cx.caller().user.clone();
    let slot = token_slot(upstream);
    let unreadable = |why: SecretsError| {
        error(format!(
            "your connection to {upstream} cannot be read ({why}); connect again at {start}"
        ))
    };
    let read = |value: Option<String>| value.and_then(|v| TokenSet::read(&v));
    let mut set = read(secrets.value(&user, &slot).await.map_err(unreadable)?);
    if set.is_none() {
        let message = format!(
            "`{tool}` acts on {upstream} as you. Open the page to connect your account; \
             the call goes on once it is connected."
        );
        if let Some(answer) = slots.ask_to_set(&slot, (&message, &start), tool, cx).await {
            return Err(answer);
        }
        set = read(secrets.value(&user, &slot).await.map_err(unreadable)?);
    }
    let set = set.ok_or_else(connect)?;
    match fresh((upstream, reach), secrets.as_ref(), &user, set).await {
        Ok(set) => {
            cx.credential().report(CredentialKind::MemberOauth);
            Ok(set)
        }
        Err(why) => Err(error(format!(
            "your connection to {upstream} ended ({why}). Connect it again at {start}, \
             then call the tool again."
        ))),
    }
}

/// `user`'s stored token set for `upstream`, refreshed if needed (to list
/// the upstream over their connection); why not.
pub(super) async fn stored(
    (upstream, reach): (&str, &Reach),
    secrets: &dyn MemberSecrets,
    user: &str,
) -> Result<TokenSet, TokenError> {
    let value = secrets.value(user, &token_slot(upstream)).await?;
    let set = value.and_then(|v| TokenSet::read(&v));
    let set = set.ok_or(TokenError::NotConnected)?;
    fresh((upstream, reach), secrets, user, set).await
}

/// `set`, refreshed first when it ends within the margin; a refresh the
/// authorization server refuses drops the member's tokens, and says why.
async fn fresh(
    (upstream, reach): (&str, &Reach),
    secrets: &dyn MemberSecrets,
    user: &str,
    set: TokenSet,
) -> Result<TokenSet, TokenError> {
    if !set.expiring(now(), REFRESH_AHEAD_SECS) {
        return Ok(set);
    }
    let slot = token_slot(upstream);
    let read = |value: Option<String>| value.and_then(|v| TokenSet::read(&v));
    let refreshed = match &set.refresh_token {
        Some(refresh) => refresh_at(&set, refresh, reach).await,
        None => Err(TokenError::NoRefreshToken),
    };
    match refreshed.map(|answer| set.updated(&answer, now())) {
        Ok(new) => {
            // A failed write still serves this call; the next refreshes again.
            let _ = secrets.set(user, &slot, &new.write()).await;
            Ok(new)
        }
        Err(why) => {
            // Another replica (or call) may have refreshed first (the old
            // refresh token is then spent): its tokens serve.
            let now_stored = secrets.value(user, &slot).await.ok().flatten();
            if let Some(other) = read(now_stored).filter(|o| o.access_token != set.access_token) {
                return Ok(other);
            }
            let _ = secrets.delete(user, &slot).await;
            tracing::info!(upstream, member = %user, %why, "a member's OAuth refresh failed");
            Err(why)
        }
    }
}

/// The token endpoint's answer to a refresh (RFC 6749 §6), or why not.
async fn refresh_at(
    set: &TokenSet,
    refresh: &str,
    reach: &Reach,
) -> Result<BasicTokenResponse, TokenError> {
    // Checked again: the name may resolve elsewhere than when it was found.
    let reached = reach.check(&set.token_endpoint).await?;
    let client = client_to(&reached, REFRESH_TIMEOUT).ok_or(TokenError::NoClient)?;
    let grant = Grant::Refresh(refresh);
    let ids = (set.client_id.as_str(), set.resource.as_str());
    Ok(oauth_grant::request(client, reached.url, ids, grant).await?)
}

/// A client sending to the addresses `reached` was checked at, following
/// no redirect.
pub(super) fn client_to(reached: &Reached, timeout: Duration) -> Option<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout);
    if let Some(domain) = &reached.domain {
        builder = builder.resolve_to_addrs(domain, &reached.addrs);
    }
    builder.build().ok()
}

fn now() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
