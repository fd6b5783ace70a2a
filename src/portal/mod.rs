//! The portal: team sign-in through the identity provider (OpenID Connect,
//! `oidc.rs`, what it reads from the ID token in `claims.rs`) and server-rendered pages under `/portal` where members make,
//! list and revoke their own tokens (`member.rs`), see the endpoints they may
//! connect to (`endpoints.rs`), set their own credentials
//! for the tools that act as them upstream (`connections.rs`), and admins see the team
//! (`admin.rs`) and review changed upstream tool definitions (`pin_review.rs`,
//! the diff in `pin_diff.rs`). Browser sessions are store rows behind an opaque cookie
//! (`session.rs`); the pages are maud templates with one stylesheet and no
//! script (`pages.rs`, `setup.rs`, the audit page in `trail.rs`, the usage
//! pages in `usage.rs` with their inline SVG charts in `chart.rs`).
//!
//! The portal uses the same store, personal tokens and audit trail as the
//! CLI: a token made here is the same row `teamgate token create` makes.

mod admin;
mod approvals;
mod chart;
mod claims;
mod connections;
mod endpoints;
mod error;
mod member;
mod oauth;
mod oauth_client;
mod oidc;
mod pages;
mod pin_diff;
mod pin_review;
mod reach;
mod session;
mod setup;
mod trail;
mod upstream_oauth;
mod usage;

use std::sync::Arc;

use axum::{
    Router,
    extract::{DefaultBodyLimit, Request, State},
    http::{HeaderValue, header},
    middleware::{self, Next},
    response::Response,
    routing::{get, post},
};

use crate::{
    audit::Auditor,
    auth::{OwnIssuer, PersonalTokens},
    config::{Config, PortalConfig},
    registry::{Registry, oauth::MemberOauth},
    store::{Store, Vault},
};

pub use error::PortalError;

/// The largest form body the portal reads.
const MAX_FORM_BYTES: usize = 16 * 1024;

/// Where the portal's pages are.
const PREFIX: &str = "/portal";

/// `path`, a full portal path, as the nested router names it.
fn nested(path: &'static str) -> &'static str {
    path.strip_prefix(PREFIX)
        .expect("a portal path starts with /portal")
}

/// What the portal's handlers share.
pub struct Portal {
    pub(crate) config: Config,
    pub(crate) portal: PortalConfig,
    pub(crate) store: Store,
    pub(crate) tokens: Arc<PersonalTokens>,
    pub(crate) auditor: Auditor,
    /// The registry being served now (it changes on reload).
    pub(crate) registry: Arc<dyn Fn() -> Arc<Registry> + Send + Sync>,
    pub(crate) oidc: oidc::Oidc,
    /// Members' credential values, when slots are declared.
    pub(crate) vault: Option<Vault>,
    /// Upstreams found at run time to want members' OAuth (`auth = "auto"`).
    pub(crate) member_oauth: MemberOauth,
    /// `Secure` cookies: the public URL is https.
    pub(crate) secure: bool,
    /// The OAuth authorization server (`oauth/`), when `[authorization_server]` is on.
    pub(crate) authz: Option<oauth::AuthServer>,
}

impl Portal {
    /// The portal of `config`, or none when `[portal]` is absent or off.
    pub fn new(
        config: &Config,
        store: Store,
        tokens: Arc<PersonalTokens>,
        auditor: Auditor,
        registry: Arc<dyn Fn() -> Arc<Registry> + Send + Sync>,
        (vault, member_oauth): (Option<Vault>, MemberOauth),
        issuer: Option<Arc<OwnIssuer>>,
    ) -> Result<Option<Arc<Self>>, PortalError> {
        let Some(portal) = config.portal.clone().filter(|p| p.enabled) else {
            return Ok(None);
        };
        let oidc = oidc::Oidc::new(&portal, &config.server.public_url)?;
        let authz = match (config.authorization_server.clone(), issuer) {
            (Some(authz), Some(issuer)) if authz.enabled => {
                Some(oauth::AuthServer::new(authz, issuer)?)
            }
            _ => None,
        };
        Ok(Some(Arc::new(Self {
            secure: config.server.public_url.starts_with("https://"),
            config: config.clone(),
            portal,
            store,
            tokens,
            auditor,
            registry,
            oidc,
            vault,
            member_oauth,
            authz,
        })))
    }

    /// The portal's routes (and the authorization server's, when on), each
    /// page with the portal's headers. The pages are one router nested at
    /// `/portal` (sign-in apart, for the stack's per-address limit); the
    /// authorization server's endpoints stay at the root, where RFC 8414
    /// and clients look for them.
    pub fn router(self: &Arc<Self>) -> Routes {
        let (open, rest, authz_pages) = if self.authz.is_some() {
            (oauth::open_routes(), oauth::routes(), oauth::pages())
        } else {
            (Router::new(), Router::new(), Router::new())
        };
        let sign_in = Router::new().route("/login", get(oidc::login)).route(
            nested(crate::config::PORTAL_CALLBACK_PATH),
            get(oidc::callback),
        );
        let pages = Router::new()
            .route("/", get(member::home))
            .route("/style.css", get(pages::stylesheet))
            .route("/logout", post(oidc::logout))
            .route("/tokens", post(member::create))
            .route("/tokens/{id}/revoke", post(member::revoke))
            .route("/activity", get(member::activity))
            .route("/usage", get(usage::own))
            .route("/approvals", get(approvals::list))
            .route("/approvals/{id}", post(approvals::decide))
            .route("/endpoints", get(endpoints::list))
            .route("/connections", get(connections::list))
            .route("/connections/{slot}", post(connections::set))
            .route(
                nested(upstream_oauth::CALLBACK_PATH),
                get(upstream_oauth::callback),
            )
            .route(
                "/connections/oauth/{upstream}/start",
                get(upstream_oauth::start),
            )
            .route(
                "/connections/oauth/{upstream}/disconnect",
                post(upstream_oauth::disconnect),
            )
            .route("/connections/{slot}/delete", post(connections::delete))
            .route("/admin", get(admin::overview))
            .route("/admin/members", get(admin::members))
            .route("/admin/tokens/{id}/revoke", post(admin::revoke))
            .route("/admin/sessions", get(admin::sessions))
            .route("/admin/sessions/{id}/end", post(admin::end_session))
            .route("/admin/audit", get(trail::audit))
            .route("/admin/audit.csv", get(trail::csv))
            .route("/admin/usage", get(usage::team))
            .route("/admin/upstreams", get(pin_review::upstreams))
            .route("/admin/upstreams/approve", post(pin_review::approve))
            .route("/admin/upstreams/reject", post(pin_review::reject))
            .route("/admin/config", get(admin::effective_config))
            .route("/admin/grants", get(reach::grants))
            .route("/admin/toolsets", get(admin::toolsets))
            .merge(authz_pages);
        let open = open.nest(PREFIX, sign_in);
        // `nest` serves the inner `/` at `/portal` only; `/portal/` has
        // always been the home page too (links and bookmarks name either).
        let rest = rest
            .nest(PREFIX, pages)
            .route("/portal/", get(member::home));
        // Layered outside the nest: `sign_in_to_return` reads the whole path.
        Routes {
            open: self.finish(open),
            rest: self.finish(rest),
        }
    }

    fn finish(self: &Arc<Self>, routes: Router<Arc<Self>>) -> Router {
        routes
            .layer(middleware::from_fn_with_state(
                self.clone(),
                sign_in_to_return,
            ))
            .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
            .layer(middleware::from_fn(headers))
            .with_state(self.clone())
    }
}

/// The portal's routes as the HTTP stack mounts them.
pub struct Routes {
    /// What anyone can call before signing in, each call a store write or
    /// more: `/portal/login`, `/portal/callback` and the authorization
    /// server's `/authorize`, `/token`, `/revoke` and `/register`. The stack
    /// puts the per-address limit on unauthenticated traffic in front of them.
    pub open: Router,
    /// The rest: members' pages (behind their session), metadata, the stylesheet.
    pub rest: Router,
}

/// A page asked for before signing in (a deep link: the credential prompt's
/// Connections link, a bookmarked admin page) sends the browser to sign in
/// and, after it, back to that page instead of the portal's home.
async fn sign_in_to_return(
    State(portal): State<Arc<Portal>>,
    request: Request,
    next: Next,
) -> Response {
    let page = (request.method() == axum::http::Method::GET)
        .then(|| {
            request
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_owned())
        })
        .flatten()
        .filter(|path| path.starts_with("/portal/") && path != "/portal/")
        // An upstream's answer to a connection is no page to come back to.
        .filter(|path| !path.starts_with(upstream_oauth::CALLBACK_PATH));
    let response = next.run(request).await;
    match page {
        Some(path) if response.status() == axum::http::StatusCode::UNAUTHORIZED => {
            oauth::sign_in_then(&portal, &path)
        }
        _ => response,
    }
}

/// The headers of every portal response: no script, styles from here only,
/// never framed, no referrer, never cached.
async fn headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let set = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in set {
        // A page may widen its own policy (the consent page's form-action).
        if name != header::CONTENT_SECURITY_POLICY || !headers.contains_key(&name) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
    response
}
