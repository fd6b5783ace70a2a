//! The admin's audit page: filters (member, tool, outcome, time range) and
//! the same selection as CSV.

use std::sync::Arc;

use axum::{
    extract::{Query, State},
    http::header,
    response::{Html, IntoResponse, Response},
};
use maud::html;
use serde::Deserialize;

use super::{
    Portal, PortalError,
    pages::{page, time},
    session::Member,
};
use crate::store::{AuditFilter, AuditRecord};

const PAGE_ROWS: i64 = 500;
const CSV_ROWS: i64 = 50_000;

#[derive(Debug, Default, Deserialize)]
pub(super) struct Filters {
    #[serde(default)]
    member: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    outcome: String,
    /// `24h`-style (that long ago) or an RFC 3339 time; default 24h.
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
}

/// A time filter: a duration back from now, or an RFC 3339 time.
fn moment(text: &str, now_ms: i64) -> Result<Option<i64>, PortalError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if let Ok(back) = humantime::parse_duration(text) {
        return Ok(Some(now_ms - back.as_millis() as i64));
    }
    let at = humantime::parse_rfc3339_weak(text).map_err(|_| {
        PortalError::BadRequest(format!(
            "{text:?} is neither a duration (24h) nor a time (2026-12-01T09:00:00Z)"
        ))
    })?;
    let ms = at
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    Ok(Some(ms))
}

impl Filters {
    fn to_filter(&self, now_ms: i64, limit: i64) -> Result<AuditFilter, PortalError> {
        let some = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_owned());
        Ok(AuditFilter {
            user: some(&self.member),
            target: some(&self.tool),
            outcome: some(&self.outcome),
            since_ms: moment(&self.since, now_ms)?.unwrap_or(now_ms - 86_400_000),
            until_ms: moment(&self.until, now_ms)?,
            limit,
        })
    }

    fn query(&self) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("member", &self.member),
                ("tool", &self.tool),
                ("outcome", &self.outcome),
                ("since", &self.since),
                ("until", &self.until),
            ])
            .finish()
    }
}

/// `GET /portal/admin/audit`.
pub(super) async fn audit(
    State(portal): State<Arc<Portal>>,
    member: Member,
    Query(filters): Query<Filters>,
) -> Result<Html<String>, PortalError> {
    member.require_admin()?;
    let filter = filters.to_filter(portal.store.now_ms(), PAGE_ROWS)?;
    let records = portal.store.audit_search(&filter).await?;
    Ok(page(
        "Audit trail",
        Some(&member),
        html! {
            form.filters method="get" action="/portal/admin/audit" {
                label { "Member" input name="member" value=(filters.member); }
                label { "Tool" input name="tool" value=(filters.tool); }
                label { "Outcome" input name="outcome" value=(filters.outcome) placeholder="ok, denied, ..."; }
                label { "Since" input name="since" value=(filters.since) placeholder="24h"; }
                label { "Until" input name="until" value=(filters.until) placeholder="2026-12-01T09:00:00Z"; }
                button type="submit" id="filter" { "Filter" }
            }
            p { a id="csv" href={ "/portal/admin/audit.csv?" (filters.query()) } { "Download as CSV" }
                " " span.muted { (records.len()) " records (newest first, at most " (PAGE_ROWS) ")" } }
            table id="audit" {
                thead { tr { th { "Time" } th { "Member" } th { "Method" } th { "Target" } th { "Credential" } th { "Outcome" } th { "Latency" } th { "From" } } }
                tbody { @for r in &records { tr {
                    td { (time(Some(r.at_ms))) } td { (r.user) } td { (r.method) } td { (r.target) }
                    td { (r.credential) } td { (r.outcome) } td { (r.latency_ms) " ms" } td { (r.address) }
                } } }
            }
        },
    ))
}

/// `GET /portal/admin/audit.csv`: the filtered records as CSV.
pub(super) async fn csv(
    State(portal): State<Arc<Portal>>,
    member: Member,
    Query(filters): Query<Filters>,
) -> Result<Response, PortalError> {
    member.require_admin()?;
    let filter = filters.to_filter(portal.store.now_ms(), CSV_ROWS)?;
    let records = portal.store.audit_search(&filter).await?;
    let mut out = String::from(
        "time,member,token_id,method,target,upstream,credential,outcome,latency_ms,address,trace_id\n",
    );
    for r in &records {
        out.push_str(&row(r));
    }
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"audit.csv\"",
            ),
        ],
        out,
    )
        .into_response())
}

fn row(r: &AuditRecord) -> String {
    let cells = [
        time(Some(r.at_ms)),
        r.user.clone(),
        r.token_id.clone(),
        r.method.clone(),
        r.target.clone(),
        r.upstream.clone(),
        r.credential.clone(),
        r.outcome.clone(),
        r.latency_ms.to_string(),
        r.address.clone(),
        r.trace_id.clone(),
    ];
    let mut line = cells.iter().map(|c| cell(c)).collect::<Vec<_>>().join(",");
    line.push('\n');
    line
}

/// One CSV cell, quoted; a leading `=`, `+`, `-`, `@`, TAB or CR is
/// defused so a spreadsheet does not run a member-chosen name as a formula
/// (spreadsheets strip a leading TAB or CR and read what follows).
fn cell(text: &str) -> String {
    let defused = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    format!("\"{}\"", defused.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    #[test]
    fn cells_are_quoted_and_formulas_defused() {
        assert_eq!(super::cell("a\"b"), "\"a\"\"b\"");
        assert_eq!(super::cell("=cmd()"), "\"'=cmd()\"");
        assert_eq!(super::cell("\t=cmd()"), "\"'\t=cmd()\"");
        assert_eq!(super::cell("\r=cmd()"), "\"'\r=cmd()\"");
    }
}
