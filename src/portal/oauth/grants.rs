//! The portal's page of granted clients: a member sees the MCP clients they
//! allowed and revokes them; an admin sees every member's. A revoked
//! grant's refresh tokens stop at once and so do its access tokens (each
//! names its grant). Every revocation is audited.

use std::sync::Arc;

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{Html, IntoResponse, Response},
};
use maud::html;

use crate::{
    portal::{
        Portal, PortalError,
        pages::{csrf, page, time},
        session::{Checked, CsrfOnly, Member},
    },
    store::OAuthRepo,
};

/// `GET /portal/clients`.
pub(super) async fn list(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    if portal.authz.is_none() {
        return Err(PortalError::NotFound);
    }
    let whose = (!member.admin).then(|| member.name());
    let grants = portal.store.oauth_grants(whose).await?;
    Ok(page(
        "Connected clients",
        Some(&member),
        html! {
            p { "MCP clients signed in as " @if member.admin { "members (you see everyone's)" } @else { "you" } " through this teamgate. Revoking one signs it out at once." }
            @if grants.is_empty() { p.muted { "No client is connected." } } @else {
                table id="clients" {
                    thead { tr { th { "Client" } th { "Member" } th { "Scopes" } th { "Allowed" } th { "Last used" } th {} } }
                    tbody { @for g in &grants { tr {
                        td { (g.client_name) br; code.muted { (g.client_id) } }
                        td { (g.member) }
                        td { (g.scopes.join(" ")) }
                        td { (time(Some(g.created_ms))) }
                        td { (time(Some(g.last_used_ms))) }
                        td { form.inline method="post" action=(format!("/portal/clients/{}/revoke", g.id)) {
                            (csrf(&member))
                            button.danger type="submit" { "Revoke" }
                        } }
                    } } }
                }
            }
        },
    ))
}

/// `POST /portal/clients/{id}/revoke`: the member's own grant, or any for an admin.
pub(super) async fn revoke(
    State(portal): State<Arc<Portal>>,
    Path(id): Path<String>,
    Checked(member, _): Checked<CsrfOnly>,
) -> Result<Response, PortalError> {
    let whose = (!member.admin).then(|| member.name());
    if !portal.store.revoke_oauth_grant(&id, whose).await? {
        return Err(PortalError::NotFound);
    }
    portal
        .audit(&member, "portal/clients/revoke", &id, "")
        .await;
    Ok((
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/portal/clients")],
    )
        .into_response())
}
