//! `/portal/connections` (issue 29): the credential slots the configuration
//! declares, and the member's own value of each: set, replace or delete.
//! A value goes into the vault sealed and is never shown again, not even to
//! its member; the page says only whether and when it was set.

use std::sync::Arc;

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{Html, IntoResponse, Response},
};
use maud::html;

use super::{
    Portal, PortalError,
    pages::{csrf, page, time},
    session::{Checked, CsrfOnly, Fields, Member},
};

/// The longest value accepted (an API token, a key in PEM fits).
const MAX_VALUE_BYTES: usize = 8 * 1024;

/// `GET /portal/connections`.
pub(super) async fn list(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    let set = match &portal.vault {
        Some(vault) => vault.slots(member.name()).await?,
        None => Vec::new(),
    };
    let slots = &portal.config.credentials.slots;
    Ok(page(
        "Your connections",
        Some(&member),
        html! {
            p { "Some tools act on other services as you. Put your own credential for each "
                "service here: it is stored encrypted, used only for your calls, and never shown again." }
            @if slots.is_empty() && super::upstream_oauth::oauth_upstreams(&portal).next().is_none() { p.muted { "No tool asks for a credential of yours." } }
            table id="connections" {
                thead { tr { th { "Connection" } th { "What to put" } th { "State" } th {} } }
                tbody {
                    @for slot in slots {
                        @let updated = set.iter().find(|(s, _)| *s == slot.name).map(|(_, at)| *at);
                        tr id={ "slot-" (slot.name) } {
                            td { code { (slot.name) } }
                            td { (slot.description) }
                            td.state { @match updated {
                                Some(at) => { "set " (time(Some(at))) },
                                None => { "not set" },
                            } }
                            td {
                                form.stack method="post" action={ "/portal/connections/" (slot.name) } {
                                    (csrf(&member))
                                    label { @if updated.is_some() { "Replace with" } @else { "Value" }
                                        input type="password" name="value" required autocomplete="off"; }
                                    button type="submit" { @if updated.is_some() { "Replace" } @else { "Set" } }
                                }
                                @if updated.is_some() {
                                    form.inline method="post" action={ "/portal/connections/" (slot.name) "/delete" } {
                                        (csrf(&member)) button.danger type="submit" { "Delete" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (super::upstream_oauth::section(&portal, &member, &set))
        },
    ))
}

/// The declared slot `name`, and the vault it is kept in.
fn slot<'p>(portal: &'p Portal, name: &str) -> Result<&'p crate::store::Vault, PortalError> {
    let declared = portal.config.credentials.slot(name).is_some();
    portal
        .vault
        .as_ref()
        .filter(|_| declared)
        .ok_or(PortalError::NotFound)
}

/// `POST /portal/connections/{slot}`: sets or replaces the member's value.
pub(super) async fn set(
    State(portal): State<Arc<Portal>>,
    Path(name): Path<String>,
    Checked(member, form): Checked<Fields>,
) -> Result<Response, PortalError> {
    let vault = slot(&portal, &name)?;
    // Pasted tokens often carry a line end.
    let value = form.get("value").trim();
    if value.is_empty() || value.len() > MAX_VALUE_BYTES || value.chars().any(char::is_control) {
        return Err(PortalError::BadRequest(format!(
            "a value of 1 to {MAX_VALUE_BYTES} bytes without control characters is needed"
        )));
    }
    vault.set(member.name(), &name, value).await?;
    portal
        .audit(&member, "portal/connections/set", &name, "")
        .await;
    Ok(back())
}

/// `POST /portal/connections/{slot}/delete`: only the member's own value.
pub(super) async fn delete(
    State(portal): State<Arc<Portal>>,
    Path(name): Path<String>,
    Checked(member, _): Checked<CsrfOnly>,
) -> Result<Response, PortalError> {
    let vault = slot(&portal, &name)?;
    if !vault.delete(member.name(), &name).await? {
        return Err(PortalError::NotFound);
    }
    portal
        .audit(&member, "portal/connections/delete", &name, "")
        .await;
    Ok(back())
}

fn back() -> Response {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/portal/connections")],
    )
        .into_response()
}
