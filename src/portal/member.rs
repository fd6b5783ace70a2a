//! A member's own pages: sign-in, their tokens (create, optionally limited
//! to one toolset they may connect to, shown once with the client setups;
//! list; revoke), and their activity (recent audit records
//! and what their scopes give them).

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{Html, IntoResponse, Response},
};
use maud::html;
use serde::Deserialize;

use super::{
    Portal, PortalError, claims, endpoints,
    pages::{csrf, page, time},
    session::{Checked, CsrfOnly, Member, Posted},
    setup,
};
use crate::{
    registry::{Kind, TOOLSET_SCOPE, scope_covers},
    store::{Actor, AuditFilter, AuditRecord},
};

/// Lifetimes offered for a new token, in days.
const LIFETIMES: [u64; 5] = [7, 30, 90, 180, 365];

/// The new-token form.
#[derive(Default, Deserialize)]
#[serde(default)]
pub(super) struct NewToken {
    csrf: String,
    label: String,
    /// Repeated: one per box ticked.
    scope: Vec<String>,
    toolset: String,
    days: String,
}

impl Posted for NewToken {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl Portal {
    /// Writes one audit record of a portal action by `member`.
    pub(super) async fn audit(&self, member: &Member, method: &str, target: &str, token: &str) {
        let (user, address) = (member.name(), member.address.as_str());
        self.record(user, token, address, (method, target)).await;
    }

    /// One audit record of a portal or authorization-server action by
    /// `user` from `address` (never a secret in it).
    pub(super) async fn record(
        &self,
        user: &str,
        token: &str,
        address: &str,
        (method, target): (&str, &str),
    ) {
        let actor = Actor {
            user: user.to_owned(),
            token_id: token.to_owned(),
            issuer: self.portal.issuer.clone(),
            ..Actor::default()
        };
        let now = self.store.now_ms();
        let record = AuditRecord::portal(now, actor, address, (method, target));
        self.auditor.record(record).await;
    }
}

/// `GET /portal/`: the sign-in page, or the member's tokens.
pub(super) async fn home(
    State(portal): State<Arc<Portal>>,
    member: Result<Member, PortalError>,
) -> Result<Html<String>, PortalError> {
    let member = match member {
        Ok(member) => member,
        Err(PortalError::NotSignedIn) => {
            return Ok(page(
                "Sign in",
                None,
                html! {
                    p { "Sign in with your team account to make personal tokens for your MCP clients." }
                    p { a href="/portal/login" { "Sign in" } }
                },
            ));
        }
        Err(error) => return Err(error),
    };
    tokens_page(&portal, &member, None).await
}

async fn tokens_page(
    portal: &Portal,
    member: &Member,
    message: Option<maud::Markup>,
) -> Result<Html<String>, PortalError> {
    let rows = portal.store.tokens(Some(member.name())).await?;
    let grantable = portal.grantable(member);
    let toolsets = endpoints::open_to(&(portal.registry)(), member);
    let max_days = portal.portal.max_token_lifetime.as_secs() / 86_400;
    let lifetimes: Vec<u64> = LIFETIMES
        .into_iter()
        .filter(|d| *d <= max_days.max(1))
        .collect();
    Ok(page(
        "Your tokens",
        Some(member),
        html! {
            @if let Some(message) = message { (message) }
            h2 { "New token" }
            @if grantable.is_empty() {
                p.error id="no-scopes" {
                    "Your sign-in grants no token scopes, so you cannot make a token here: "
                    (claims::explain(&portal.portal, &member.session.groups, &member.session.claims)) ". "
                    "Ask an admin to map one of your groups in [[portal.grants]] "
                    "(the provider recipes: docs/identity-providers.md)."
                }
            } @else {
                form.stack method="post" action="/portal/tokens" {
                    (csrf(member))
                    label { "Label" input name="label" required maxlength="64" placeholder="laptop"; }
                    label { "Expires in"
                        select name="days" {
                            @for days in &lifetimes { option value=(days) selected[*days == 90] { (days) " days" } }
                        }
                    }
                    fieldset {
                        legend { "Scopes" }
                        @for scope in &grantable {
                            label { span { input type="checkbox" name="scope" value=(scope) checked; " " code { (scope) } } }
                        }
                    }
                    @if !toolsets.is_empty() {
                        label { "Endpoint"
                            select name="toolset" {
                                option value="" selected { "not limited to a toolset" }
                                @for t in &toolsets { option value=(t.name) { "only the toolset " (t.name) " (" (portal.endpoint_url(Some(&t.name))) ")" } }
                            }
                        }
                    }
                    button type="submit" id="create" { "Create token" }
                }
            }
            h2 { "Your tokens" }
            table id="tokens" {
                thead { tr { th { "ID" } th { "Label" } th { "Scopes" } th { "Created" } th { "Expires" } th { "Last used" } th { "State" } th {} } }
                tbody {
                    @for t in &rows {
                        tr {
                            td { code { (t.id) } } td { (t.label) } td { (t.scopes.join(" ")) }
                            td { (time(Some(t.created_ms))) } td { (time(t.expires_ms)) } td { (time(t.last_used_ms)) }
                            td { @if t.revoked_ms.is_some() { "revoked" } @else { "active" } }
                            td { @if t.revoked_ms.is_none() {
                                form.inline method="post" action={ "/portal/tokens/" (t.id) "/revoke" } {
                                    (csrf(member)) button.danger type="submit" { "Revoke" }
                                }
                            } }
                        }
                    }
                }
            }
        },
    ))
}

/// `POST /portal/tokens`: a token for the member, with scopes their groups
/// allow only; shown once, with the client setups.
pub(super) async fn create(
    State(portal): State<Arc<Portal>>,
    Checked(member, form): Checked<NewToken>,
) -> Result<Response, PortalError> {
    let grantable = portal.grantable(&member);
    if grantable.is_empty() {
        let session = &member.session;
        return Err(PortalError::BadRequest(format!(
            "your sign-in grants no token scopes ({}); ask an admin to map one of your groups \
             in [[portal.grants]]",
            claims::explain(&portal.portal, &session.groups, &session.claims)
        )));
    }
    let label = form.label.trim();
    if label.is_empty() || label.chars().count() > 64 {
        return Err(PortalError::BadRequest(
            "a label of 1 to 64 characters is needed".into(),
        ));
    }
    let mut scopes = form.scope;
    if scopes.is_empty() || scopes.iter().any(|s| !grantable.contains(s)) {
        return Err(PortalError::BadRequest(format!(
            "choose scopes among those your groups allow: {}",
            grantable.join(", ")
        )));
    }
    let limit = portal.token_limit(&member, &form.toolset)?;
    let days: u64 = form.days.parse().unwrap_or(0);
    let lifetime = Duration::from_secs(days * 86_400);
    if days == 0 || lifetime > portal.portal.max_token_lifetime {
        return Err(PortalError::BadRequest(
            "choose one of the offered lifetimes".into(),
        ));
    }
    let limit = limit.as_ref().map(|t| t.name.as_str());
    if let Some(name) = limit {
        scopes.push(format!("{TOOLSET_SCOPE}{name}"));
    }
    let created = portal
        .tokens
        .create(member.name(), label, scopes, Some(lifetime))
        .await?;
    portal
        .audit(
            &member,
            "portal/tokens/create",
            &created.row.id,
            &created.row.id,
        )
        .await;
    // A limited token's setups are for the one endpoint where it works.
    let url = portal.endpoint_url(limit);
    let shown = html! {
        div.note id="new-token" {
            p { "Token " code { (created.row.id) } " is shown once; copy it now:" }
            p { code.secret id="token-secret" { (created.token) } }
            @if let Some(name) = limit { p { "It works only at the toolset " (name) "'s endpoint, " code { (url) } "." } }
            (setup::render(&endpoints::server_name(limit), &url, &created.token))
        }
    };
    Ok((
        StatusCode::OK,
        tokens_page(&portal, &member, Some(shown)).await?,
    )
        .into_response())
}

/// `POST /portal/tokens/{id}/revoke`: only the member's own token (the
/// store's query checks the owner).
pub(super) async fn revoke(
    State(portal): State<Arc<Portal>>,
    Path(id): Path<String>,
    Checked(member, _): Checked<CsrfOnly>,
) -> Result<Response, PortalError> {
    if !portal.store.revoke_own_token(&id, member.name()).await? {
        return Err(PortalError::NotFound);
    }
    portal.tokens.forget(&id).await;
    portal
        .audit(&member, "portal/tokens/revoke", &id, &id)
        .await;
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, "/portal/")]).into_response())
}

/// `GET /portal/activity`: the member's recent audit records and what the
/// scopes their groups allow give them.
pub(super) async fn activity(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    let records = portal
        .store
        .audit_search(&AuditFilter {
            user: Some(member.name().to_owned()),
            limit: 50,
            ..AuditFilter::default()
        })
        .await?;
    let grantable = portal.grantable(&member);
    let registry = (portal.registry)();
    let covered = |kind: Kind, name: &str| {
        registry
            .required_scopes(kind, name)
            .iter()
            .all(|r| scope_covers(&grantable, r))
    };
    let tools: Vec<String> = registry
        .tools()
        .iter()
        .map(|t| t.name.to_string())
        .filter(|n| covered(Kind::Tool, n))
        .collect();
    let prompts: Vec<String> = registry
        .prompts()
        .iter()
        .map(|p| p.name.clone())
        .filter(|n| covered(Kind::Prompt, n))
        .collect();
    let resources: Vec<String> = registry
        .resources()
        .into_iter()
        .map(|r| r.uri.clone())
        .filter(|u| covered(Kind::Resource, u))
        .collect();
    Ok(page(
        "Your activity",
        Some(&member),
        html! {
            h2 { "What your scopes give you" }
            p.muted { "Scopes your groups allow: " (grantable.join(" ")) }
            @for (title, names) in [("Tools", &tools), ("Prompts", &prompts), ("Resources", &resources)] {
                h3 { (title) " (" (names.len()) ")" }
                @if names.is_empty() { p.muted { "none" } } @else {
                    ul { @for name in names.iter().take(200) { li { code { (name) } } } }
                }
            }
            h2 { "Your recent calls" }
            table id="audit" {
                thead { tr { th { "Time" } th { "Method" } th { "Target" } th { "Outcome" } th { "Latency" } } }
                tbody { @for r in &records { tr {
                    td { (time(Some(r.at_ms))) } td { (r.method) } td { (r.target) } td { (r.outcome) } td { (r.latency_ms) " ms" }
                } } }
            }
        },
    ))
}
