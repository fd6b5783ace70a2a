//! The page frame every portal page shares (navigation, sign-out form), the
//! problem page, the one stylesheet, and small formatting helpers. Pages
//! are maud templates: every value is escaped; no script anywhere.

use axum::{
    http::{StatusCode, header},
    response::{Html, IntoResponse, Response},
};
use maud::{DOCTYPE, Markup, html};

use super::{PortalError, session::Member};

const STYLESHEET: &str = r#"
:root { color-scheme: light dark; --line: #8884; --accent: #2b6cb0; --bad: #c53030; }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; }
header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center;
  padding: .75rem 1rem; border-bottom: 1px solid var(--line); }
header strong { margin-right: auto; }
header form { margin: 0; }
nav { display: flex; flex-wrap: wrap; gap: .25rem .75rem; }
main { max-width: 64rem; margin: 0 auto; padding: 1rem; }
a { color: var(--accent); }
table { border-collapse: collapse; width: 100%; display: block; overflow-x: auto; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line);
  vertical-align: top; }
form.stack { display: grid; gap: .6rem; max-width: 32rem; }
form.inline { display: inline; margin: 0; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; }
label { display: grid; gap: .2rem; }
input, select, button { font: inherit; padding: .35rem .5rem; }
button { cursor: pointer; }
button.danger { color: var(--bad); }
fieldset { border: 1px solid var(--line); }
pre { overflow-x: auto; padding: .75rem; border: 1px solid var(--line); white-space: pre; }
code.secret { word-break: break-all; font-size: 1.05rem; }
.note { padding: .5rem .75rem; border-left: 4px solid var(--accent); }
.error { padding: .5rem .75rem; border-left: 4px solid var(--bad); }
.muted { opacity: .7; }
section.endpoint, section.toolset { margin: 2rem 0 2.5rem; }
table.endpoint, table.toolset { display: table; }
table.endpoint th, table.toolset th { width: 11rem; white-space: nowrap; }
td.tools ul { columns: 22rem; column-gap: 2.5rem; margin: .25rem 0; padding-left: 1.25rem; }
td.tools li { overflow-wrap: anywhere; }
details { margin: .5rem 0; }
nav.ranges { margin: 0 0 1rem; }
figure.usage { margin: 0 0 1rem; }
svg.chart { display: block; width: 100%; max-width: 720px; height: auto; }
svg .calls, .legend-calls { fill: var(--accent); color: var(--accent); }
svg .errors, .legend-errors { fill: var(--bad); color: var(--bad); }
svg .axis, svg .grid { stroke: currentColor; stroke-opacity: .4; }
svg .grid { stroke-dasharray: 4 4; }
svg .label { fill: currentColor; font-size: 11px; }
svg g.bar:hover rect { opacity: .75; }
table.usage td.calls, table.usage td.errors { text-align: right; }
table.usage th:nth-child(2), table.usage th:nth-child(4) { text-align: right; }
section.pin { margin: 1.5rem 0 2rem; padding-top: .5rem; border-top: 1px solid var(--line); }
section.pin h3 { margin: 0 0 .5rem; }
.diff h4 { margin: .75rem 0 .25rem; }
pre.diff { padding: .5rem 0; }
pre.diff > * { display: block; padding: 0 .75rem; }
.diff ins { text-decoration: none; background: #2f855a33; color: inherit; }
.diff del { text-decoration: none; background: #c5303033; color: inherit; }
table.hints { display: table; width: auto; }
"#;

/// `GET /portal/style.css`.
pub(super) async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        STYLESHEET,
    )
        .into_response()
}

/// A whole page: the frame around `body`.
pub(super) fn page(title: &str, member: Option<&Member>, body: Markup) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) " · teamgate" }
                    link rel="stylesheet" href="/portal/style.css";
                }
                body {
                    header {
                        strong { "teamgate" }
                        @if let Some(member) = member {
                            nav {
                                a href="/portal/" { "Tokens" }
                                a href="/portal/endpoints" { "Endpoints" }
                                a href="/portal/activity" { "Activity" }
                                a href="/portal/usage" { "Usage" }
                                a href="/portal/approvals" { "Approvals" }
                                a href="/portal/connections" { "Connections" }
                                @if member.clients_page {
                                    a href="/portal/clients" { "Clients" }
                                }
                                @if member.admin {
                                    a href="/portal/admin" { "Admin" }
                                    a href="/portal/admin/members" { "Members" }
                                    a href="/portal/admin/sessions" { "Sessions" }
                                    a href="/portal/admin/audit" { "Audit" }
                                    a href="/portal/admin/usage" { "Team usage" }
                                    a href="/portal/admin/upstreams" { "Upstreams" }
                                    a href="/portal/admin/toolsets" { "Toolsets" }
                                    a href="/portal/admin/config" { "Config" }
                                    a href="/portal/admin/grants" { "Grants" }
                                }
                            }
                            span.muted { (member.name()) }
                            form.inline method="post" action="/portal/logout" {
                                (csrf(member))
                                button type="submit" { "Sign out" }
                            }
                        }
                    }
                    main {
                        h1 { (title) }
                        (body)
                    }
                }
            }
        }
        .into_string(),
    )
}

/// The hidden CSRF field every form carries.
pub(super) fn csrf(member: &Member) -> Markup {
    html! { input type="hidden" name="csrf" value=(member.session.csrf); }
}

/// A refusal or failure as a page.
pub(super) fn problem(status: StatusCode, message: &str) -> Html<String> {
    let title = status.canonical_reason().unwrap_or("Error");
    page(
        title,
        None,
        html! {
            p.error { (message) }
            @if status == StatusCode::UNAUTHORIZED {
                p { a href="/portal/login" { "Sign in" } }
            } @else {
                p { a href="/portal/" { "Back to the portal" } }
            }
        },
    )
}

/// A refusal or failure reaches the browser as the problem page; its
/// details go to the log only. Here rather than in `error.rs`, so the error
/// does not reach back up to the frame, which reads the session.
impl IntoResponse for PortalError {
    fn into_response(self) -> Response {
        match &self {
            Self::Store(error) => tracing::error!(%error, "portal: database error"),
            Self::Provider(error) => tracing::warn!(%error, "portal: identity provider error"),
            Self::Upstream(error) => tracing::warn!(%error, "portal: an upstream's OAuth refused"),
            Self::Config(error) => tracing::error!(%error, "portal: configuration"),
            _ => {}
        }
        let status = self.status();
        let body = problem(status, &self.to_string());
        (status, body).into_response()
    }
}

/// A time in RFC 3339 (UTC, seconds), or "-".
pub(super) fn time(ms: Option<i64>) -> String {
    match ms {
        Some(ms) if ms >= 0 => humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64),
        )
        .to_string(),
        _ => "-".into(),
    }
}
