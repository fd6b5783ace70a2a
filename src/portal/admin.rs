//! The admin pages (403 for everyone else): health, members and their
//! tokens (revoke any), live MCP sessions (end any), each toolset's endpoint
//! (its tools, who may connect), and the effective configuration with
//! secrets masked. The audit trail's page is `trail.rs`; upstream
//! definitions awaiting approval, `pin_review.rs`. Every action is audited, and each
//! is also a CLI command (`teamgate token revoke`, `sessions end`,
//! `upstreams approve` and `reject`).

use std::{collections::BTreeMap, sync::Arc};

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{Html, IntoResponse, Response},
};
use maud::html;

use super::{
    Portal, PortalError, endpoints,
    pages::{csrf, page, time},
    session::{Checked, CsrfOnly, Member},
};
use crate::store::{Grain, SessionRepo};

pub(super) fn back_to(location: &'static str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}

/// `GET /portal/admin`: health at a glance.
pub(super) async fn overview(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    member.require_admin()?;
    let database = portal.store.ping().await;
    let sessions = portal.store.count(None).await?;
    let tokens = portal.store.tokens(None).await?;
    let active = tokens.iter().filter(|t| t.revoked_ms.is_none()).count();
    let audit = portal.store.audit_count().await?;
    let now = portal.store.now_ms();
    let calls: i64 = portal
        .store
        .usage_series(
            Grain::Minute,
            Grain::Minute.bucket(now) - 59 * Grain::Minute.ms(),
            None,
        )
        .await?
        .iter()
        .map(|(_, tally)| tally.calls)
        .sum();
    let registry = (portal.registry)();
    Ok(page(
        "Health",
        Some(&member),
        html! {
            table id="health" { tbody {
                tr { th { "Database" } td { @if database { "answers" } @else { "NOT answering" } } }
                tr { th { "Live MCP sessions" } td { (sessions) } }
                tr { th { "Active tokens" } td { (active) " of " (tokens.len()) } }
                tr { th { "Audit records" } td { (audit) } }
                tr { th { "Calls in the last hour" } td { a id="usage-link" href="/portal/admin/usage?range=hour" { (calls) } } }
                tr { th { "Tools / prompts / resources" }
                     td { (registry.tools().len()) " / " (registry.prompts().len()) " / " (registry.resources().len()) } }
                tr { th { "Upstream servers" } td { (portal.config.upstreams.len()) } }
                tr { th { "Toolsets" } td { a href="/portal/admin/toolsets" { (registry.toolsets().count()) } } }
            } }
        },
    ))
}

/// `GET /portal/admin/members`: every member who has a token, and the tokens.
pub(super) async fn members(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    member.require_admin()?;
    let mut by_member: BTreeMap<String, Vec<crate::store::TokenRow>> = BTreeMap::new();
    for token in portal.store.tokens(None).await? {
        by_member
            .entry(token.user_name.clone())
            .or_default()
            .push(token);
    }
    Ok(page(
        "Members",
        Some(&member),
        html! {
            @for (name, tokens) in &by_member {
                h2 { (name) }
                table.members { tbody {
                    @for t in tokens { tr {
                        td { code { (t.id) } } td { (t.label) } td { (t.scopes.join(" ")) }
                        td { "expires " (time(t.expires_ms)) } td { "last used " (time(t.last_used_ms)) }
                        td { @if t.revoked_ms.is_some() { "revoked" } @else {
                            form.inline method="post" action={ "/portal/admin/tokens/" (t.id) "/revoke" } {
                                (csrf(&member)) button.danger type="submit" { "Revoke" }
                            }
                        } }
                    } }
                } }
            }
            @if by_member.is_empty() { p.muted { "No tokens yet." } }
        },
    ))
}

/// `POST /portal/admin/tokens/{id}/revoke`: any member's token.
pub(super) async fn revoke(
    State(portal): State<Arc<Portal>>,
    Path(id): Path<String>,
    Checked(member, _): Checked<CsrfOnly>,
) -> Result<Response, PortalError> {
    member.require_admin()?;
    if !portal.tokens.revoke(&id).await? {
        return Err(PortalError::NotFound);
    }
    portal
        .audit(&member, "portal/admin/tokens/revoke", &id, &id)
        .await;
    Ok(back_to("/portal/admin/members"))
}

/// `GET /portal/admin/sessions`: live MCP sessions, oldest first.
pub(super) async fn sessions(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    member.require_admin()?;
    let rows = portal.store.list(1000).await?;
    Ok(page(
        "Live sessions",
        Some(&member),
        html! {
            table id="sessions" {
                thead { tr { th { "Session" } th { "Owner" } th { "Client" } th { "Version" } th { "Last seen" } th {} } }
                tbody { @for s in &rows { tr {
                    td { code { (s.id) } } td { (s.owner) } td { (s.client_name) " " (s.client_version) }
                    td { (s.protocol_version) } td { (time(Some(s.last_seen_ms))) }
                    td { form.inline method="post" action={ "/portal/admin/sessions/" (s.id) "/end" } {
                        (csrf(&member)) button.danger type="submit" { "End" }
                    } }
                } } }
            }
            @if rows.is_empty() { p.muted { "No live sessions." } }
        },
    ))
}

/// `POST /portal/admin/sessions/{id}/end`: the row goes; within the engine's presence check
/// (5 s, `mcp/sessions.rs`) every replica answers the session 404.
pub(super) async fn end_session(
    State(portal): State<Arc<Portal>>,
    Path(id): Path<String>,
    Checked(member, _): Checked<CsrfOnly>,
) -> Result<Response, PortalError> {
    member.require_admin()?;
    if !portal.store.delete(&id).await? {
        return Err(PortalError::NotFound);
    }
    portal
        .audit(&member, "portal/admin/sessions/end", &id, "")
        .await;
    Ok(back_to("/portal/admin/sessions"))
}

/// `GET /portal/admin/toolsets`: each toolset's endpoint, who may connect,
/// and the tools the current registry offers there.
pub(super) async fn toolsets(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    member.require_admin()?;
    let registry = (portal.registry)();
    let listed: Vec<_> = (registry.toolsets())
        .map(|t| (t.clone(), endpoints::offered(&registry, Some(&t.name))))
        .collect();
    let all = registry.tools().len();
    Ok(page(
        "Toolsets",
        Some(&member),
        html! {
            p.muted { code { (portal.endpoint_url(None)) } " offers all " (all) " tools to every caller their scopes admit." }
            @if listed.is_empty() { p.muted { "No toolsets are configured ([[toolsets]])." } } @else {
                table id="toolsets" {
                    thead { tr { th { "Toolset" } th { "Who may connect" } th { "Discovery" } th { "Tools" } } }
                    tbody { @for (toolset, tools) in &listed { tr {
                        td { a href={ "#toolset-" (toolset.name) } { code { (portal.endpoint_path(Some(&toolset.name))) } } }
                        td { @if toolset.groups.is_empty() { "everyone" } @else { (toolset.groups.join(", ")) } }
                        td { (endpoints::mode(toolset.discovery)) }
                        td { (tools.len()) }
                    } } }
                }
            }
            @for (toolset, tools) in &listed {
                section.toolset id={ "toolset-" (toolset.name) } {
                    h2 { (toolset.name) }
                    table.toolset { tbody {
                        tr { th { "URL" } td { code { (portal.endpoint_url(Some(&toolset.name))) } } }
                        tr { th { "Description" } td { @if toolset.description.is_empty() { span.muted { "none" } } @else { (toolset.description) } } }
                        tr { th { "Discovery" } td { (endpoints::discovery(Some(toolset), tools)) } }
                        tr { th { "Who may connect" } td.groups {
                            @if toolset.groups.is_empty() { "everyone" } @else { "groups " (toolset.groups.join(", ")) }
                            span.muted { "; and tokens with the scope toolset:" (toolset.name) " or *" }
                        } }
                        tr { th { "Tools offered" } td.tools {
                            strong.count { (tools.len()) } " of " (all)
                            @if !tools.is_empty() {
                                ul { @for tool in tools { li { code { (tool) }
                                    @if toolset.always_listed(tool) && toolset.discovery == crate::config::Discovery::Search { " " span.muted { "(pinned)" } }
                                } } }
                            }
                        } }
                    } }
                }
            }
        },
    ))
}

/// `GET /portal/admin/config`: the effective configuration; secrets print
/// as `<redacted>` and the database password is masked.
pub(super) async fn effective_config(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    member.require_admin()?;
    let text = toml::to_string_pretty(&portal.config)
        .unwrap_or_else(|e| format!("# cannot print the configuration: {e}"));
    Ok(page(
        "Effective configuration",
        Some(&member),
        html! { pre id="config" { (text) } },
    ))
}
