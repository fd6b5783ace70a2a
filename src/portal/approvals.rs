//! Approval by a second person (issue 65 part 2): `GET /portal/approvals`
//! shows a member the calls waiting for their group's decision, each with
//! the exact arguments it runs with, and their own requests;
//! `POST /portal/approvals/{id}` records Approve or Deny (CSRF-checked,
//! audited). Only a member of the request's group decides, never the
//! member who asked: the store refuses that too, on the same row.

use std::sync::Arc;

use axum::{
    extract::{Path, State},
    response::{Html, Response},
};
use maud::{Markup, html};

use super::{
    Portal, PortalError,
    admin::back_to,
    pages::{csrf, page, time},
    session::{Checked, Fields, Member},
};
use crate::store::{ApprovalRepo, ApprovalRow, Decision};

/// The most requests the page lists.
const LISTED: i64 = 200;
/// The longest reason kept with a decision.
const MAX_REASON: usize = 500;

/// `GET /portal/approvals`: waiting for the member's decision, their own
/// requests, and the rest decided lately.
pub(super) async fn list(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    let groups = &member.session.groups;
    let rows = (portal.store)
        .approvals_seen_by(member.name(), groups, LISTED)
        .await?;
    let now = portal.store.now_ms();
    let theirs = |r: &&ApprovalRow| r.requester != member.name() && groups.contains(&r.group);
    let waiting: Vec<&ApprovalRow> = rows
        .iter()
        .filter(|r| r.is_open(now))
        .filter(theirs)
        .collect();
    let own: Vec<&ApprovalRow> = rows
        .iter()
        .filter(|r| r.requester == member.name())
        .collect();
    let decided: Vec<&ApprovalRow> = (rows.iter().filter(theirs))
        .filter(|r| !r.is_open(now))
        .collect();
    Ok(page(
        "Approvals",
        Some(&member),
        html! {
            h2 { "Waiting for your decision" }
            @if waiting.is_empty() {
                p.muted { "No call is waiting for a group of yours (" (groups.join(", ")) ")." }
            }
            @for row in &waiting { (waiting_row(&member, row)) }
            h2 { "Your requests" }
            @if own.is_empty() { p.muted { "You have asked for no approval lately." } }
            @else { (table(&own, now, false)) }
            @if !decided.is_empty() {
                h2 { "Decided lately" }
                (table(&decided, now, true))
            }
        },
    ))
}

/// The arguments as the approver reads them: indented JSON.
fn arguments(row: &ApprovalRow) -> String {
    serde_json::from_str::<serde_json::Value>(&row.arguments)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| row.arguments.clone())
}

/// One call waiting: who asks, for what, the arguments, Approve and Deny.
fn waiting_row(member: &Member, row: &ApprovalRow) -> Markup {
    html! {
        section.approval id={ "approval-" (row.id) } {
            h3 { code { (row.tool) } " asked by " strong { (row.requester) } }
            p.muted { "Asked " (time(Some(row.created_ms))) "; for " (row.group)
                "; ends unrun unless decided by " (time(Some(row.expires_ms))) "." }
            p { "It runs with exactly these arguments:" }
            pre.arguments { (arguments(row)) }
            form method="post" action={ "/portal/approvals/" (row.id) } {
                (csrf(member))
                label { "Reason (optional) " input type="text" name="reason" maxlength="500"; }
                " "
                button.approve type="submit" name="decision" value="approve" { "Approve" }
                " "
                button.danger.deny type="submit" name="decision" value="deny" { "Deny" }
            }
        }
    }
}

/// What became of a request, as of `now`.
fn status(row: &ApprovalRow, now: i64) -> String {
    let by = row.decided_by.as_deref().unwrap_or_default();
    match row.status.as_str() {
        "pending" if row.is_open(now) => "waiting".into(),
        "pending" | "expired" => "expired undecided".into(),
        "approved" => format!("approved by {by}, not yet run"),
        "used" => format!("approved by {by}, run"),
        "denied" => format!("denied by {by}"),
        "withdrawn" => "cancelled by the caller".into(),
        other => other.into(),
    }
}

fn table(rows: &[&ApprovalRow], now: i64, requester: bool) -> Markup {
    html! {
        table.approvals {
            thead { tr {
                th { "Asked" } th { "Tool" } @if requester { th { "By" } } th { "Group" }
                th { "Status" } th { "Reason" } th { "Arguments" }
            } }
            tbody { @for row in rows { tr id={ "request-" (row.id) } {
                td { (time(Some(row.created_ms))) } td { code { (row.tool) } }
                @if requester { td { (row.requester) } } td { (row.group) }
                td.status { (status(row, now)) } td { (row.reason.as_deref().unwrap_or_default()) }
                td { details { summary { "show" } pre { (arguments(row)) } } }
            } } }
        }
    }
}

/// `POST /portal/approvals/{id}`: `decision` is `approve` or `deny`.
pub(super) async fn decide(
    State(portal): State<Arc<Portal>>,
    Path(id): Path<String>,
    Checked(member, form): Checked<Fields>,
) -> Result<Response, PortalError> {
    let approve = match form.get("decision") {
        "approve" => true,
        "deny" => false,
        _ => {
            return Err(PortalError::BadRequest(
                "decision must be approve or deny".into(),
            ));
        }
    };
    let row = portal
        .store
        .approval(&id)
        .await?
        .ok_or(PortalError::NotFound)?;
    if !member.session.groups.contains(&row.group) {
        let why = format!("only a member of {} decides on this call", row.group);
        return Err(PortalError::Forbidden(why));
    }
    let reason: String = form.get("reason").trim().chars().take(MAX_REASON).collect();
    let reason = (!reason.is_empty()).then_some(reason.as_str());
    let decided = portal
        .store
        .decide_approval(&id, member.name(), approve, reason)
        .await?;
    match decided {
        Decision::Recorded => {
            let method = if approve {
                "approvals/approve"
            } else {
                "approvals/deny"
            };
            let target = format!("{} {}", row.tool, row.id);
            portal.audit(&member, method, &target, "").await;
            Ok(back_to("/portal/approvals"))
        }
        Decision::OwnRequest => Err(PortalError::Forbidden(format!(
            "you asked for this call of {} yourself; another member of {} must decide",
            row.tool, row.group
        ))),
        Decision::Closed(status) => Err(PortalError::Forbidden(format!(
            "this request is no longer waiting (it is {status})"
        ))),
        Decision::Unknown => Err(PortalError::NotFound),
    }
}
