//! Pin review for admins (issue 65 part 3): `GET /portal/admin/upstreams`
//! lists each upstream's pins, which tools members confirm, and the tools
//! withheld: each changed definition awaiting a decision with its diff
//! (`pin_diff.rs`) and Approve and Reject buttons, then the rejected ones
//! (withheld still, not proposed again) with Approve anyway. Both actions
//! are CSRF-checked forms, audited as the CLI's `teamgate upstreams
//! approve` and `reject` are; every replica notices within a couple of
//! seconds (`upstream/pins.rs` polls while it withholds).

use std::sync::Arc;

use axum::{extract::State, response::Html, response::Response};
use maud::{Markup, html};

use super::{
    Portal, PortalError,
    admin::back_to,
    pages::{csrf, page, time},
    pin_diff,
    session::{Checked, Fields, Member},
};
use crate::{
    config::UpstreamConfig,
    store::{PinRepo, PinRow},
};

/// `GET /portal/admin/upstreams`: each upstream's tools awaiting a decision
/// (a changed definition, or a name another upstream had first), and the
/// rejected ones.
pub(super) async fn upstreams(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    member.require_admin()?;
    let mut listed = Vec::new();
    for upstream in &portal.config.upstreams {
        listed.push((upstream, portal.store.pins(Some(&upstream.name)).await?));
    }
    Ok(page(
        "Upstream approvals",
        Some(&member),
        html! {
            @if listed.is_empty() { p.muted { "No upstream servers are configured." } }
            @for (upstream, pins) in &listed {
                h2 { (upstream.name) }
                p.muted { (pins.iter().filter(|r| r.claim.is_none()).count()) " tool definitions pinned" @if !upstream.pin { " (pin = false: changes pass through)" } }
                @let confirmed = crate::store::confirmed(upstream, pins);
                @if !confirmed.is_empty() {
                    p { "Confirmed by the member before each call: "
                        @for (i, (tool, why)) in confirmed.iter().enumerate() {
                            @if i > 0 { ", " }
                            code { (tool) } " (" (why.label()) ")"
                        }
                    }
                }
                @for row in pins.iter().filter(|r| r.awaiting()) {
                    (awaiting(&member, upstream, row))
                }
                @let rejected: Vec<&PinRow> = pins.iter().filter(|r| r.is_rejected()).collect();
                @if !rejected.is_empty() {
                    h3 { "Rejected (withheld, not proposed again)" }
                    @for row in rejected { (rejected_row(&member, upstream, row)) }
                }
            }
        },
    ))
}

/// A hidden upstream and tool, and the form's CSRF token.
fn fields(member: &Member, upstream: &str, tool: &str) -> Markup {
    html! {
        (csrf(member))
        input type="hidden" name="upstream" value=(upstream);
        input type="hidden" name="tool" value=(tool);
    }
}

fn pending_definition(row: &PinRow) -> &str {
    row.pending
        .as_ref()
        .map(|p| p.definition.as_str())
        .unwrap_or_default()
}

/// One tool awaiting a decision: what changed, the diff, Approve and Reject.
fn awaiting(member: &Member, upstream: &UpstreamConfig, row: &PinRow) -> Markup {
    let name = &upstream.name;
    html! {
        section.pin.awaiting id={ "pin-" (name) "-" (row.tool) } {
            h3 { code { (row.tool) } " "
                @if let Some(owner) = &row.claim {
                    "claims the name " code { (upstream.exposed(&row.tool)) } ", " (owner) "'s first, "
                } @else { "changed " }
                span.muted { (time(row.pending.as_ref().map(|p| p.changed_ms))) }
            }
            (pin_diff::render(&row.definition, pending_definition(row)))
            p {
                form.inline method="post" action="/portal/admin/upstreams/approve" {
                    (fields(member, name, &row.tool))
                    button.approve type="submit" { "Approve" }
                }
                " "
                form.inline method="post" action="/portal/admin/upstreams/reject" {
                    (fields(member, name, &row.tool))
                    button.danger.reject type="submit" { "Reject" }
                }
            }
            details { summary { "pinned and new definitions" }
                pre { (row.definition) } pre { (pending_definition(row)) } }
        }
    }
}

/// One rejected tool: withheld still; its diff folded, and Approve anyway.
fn rejected_row(member: &Member, upstream: &UpstreamConfig, row: &PinRow) -> Markup {
    let name = &upstream.name;
    html! {
        section.pin.rejected id={ "rejected-" (name) "-" (row.tool) } {
            p { code { (row.tool) } " changed " (time(row.pending.as_ref().map(|p| p.changed_ms)))
                "; rejected, members do not see it. "
                form.inline method="post" action="/portal/admin/upstreams/approve" {
                    (fields(member, name, &row.tool))
                    button.approve type="submit" { "Approve anyway" }
                }
            }
            details { summary { "what changed" }
                (pin_diff::render(&row.definition, pending_definition(row))) }
        }
    }
}

/// The configured upstream and the tool a form names; 404 otherwise.
fn named<'a>(portal: &Portal, form: &'a Fields) -> Result<(&'a str, &'a str), PortalError> {
    let (name, tool) = (form.get("upstream"), form.get("tool"));
    if !portal.config.upstreams.iter().any(|u| u.name == name) || tool.is_empty() {
        return Err(PortalError::NotFound);
    }
    Ok((name, tool))
}

/// `POST /portal/admin/upstreams/approve`: as `teamgate upstreams approve NAME TOOL`.
pub(super) async fn approve(
    State(portal): State<Arc<Portal>>,
    Checked(member, form): Checked<Fields>,
) -> Result<Response, PortalError> {
    member.require_admin()?;
    let (name, tool) = named(&portal, &form)?;
    for approved in portal.store.approve(name, Some(tool)).await? {
        let target = format!("{name}/{approved}");
        portal
            .audit(&member, "upstreams/approve", &target, "")
            .await;
    }
    Ok(back_to("/portal/admin/upstreams"))
}

/// `POST /portal/admin/upstreams/reject`: as `teamgate upstreams reject NAME TOOL`.
pub(super) async fn reject(
    State(portal): State<Arc<Portal>>,
    Checked(member, form): Checked<Fields>,
) -> Result<Response, PortalError> {
    member.require_admin()?;
    let (name, tool) = named(&portal, &form)?;
    if portal.store.reject(name, tool).await? {
        let target = format!("{name}/{tool}");
        portal.audit(&member, "upstreams/reject", &target, "").await;
    }
    Ok(back_to("/portal/admin/upstreams"))
}
