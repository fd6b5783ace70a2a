//! The usage pages (issue 64 part 2): calls, errors and p50/p95 latency
//! over the last hour, day or 30 days, as a chart with the numbers beside
//! it. Admins see everyone's, per member, tool and upstream
//! (`/portal/admin/usage`); each member sees only their own, per tool
//! (`/portal/usage`). The figures are the store's rollups (`store/usage.rs`),
//! never audit rows read per view.

use std::sync::Arc;

use axum::{
    extract::{Query, State},
    response::Html,
};
use maud::{Markup, html};
use serde::Deserialize;

use super::{Portal, PortalError, chart, pages::page, session::Member};
use crate::store::{Dimension, Grain, Tally, UsageRow};

/// The ranges a page offers: its query value, its words, its grain and
/// how many buckets of it it draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    Hour,
    Day,
    Month,
}

impl Range {
    const ALL: [Range; 3] = [Range::Hour, Range::Day, Range::Month];

    fn parse(text: &str) -> Result<Self, PortalError> {
        match text {
            "hour" => Ok(Self::Hour),
            "" | "day" => Ok(Self::Day),
            "30d" => Ok(Self::Month),
            other => Err(PortalError::BadRequest(format!(
                "range {other:?} is none of hour, day, 30d"
            ))),
        }
    }

    fn slug(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Month => "30d",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Self::Hour => "Last hour",
            Self::Day => "Last day",
            Self::Month => "Last 30 days",
        }
    }

    fn grain(self) -> Grain {
        match self {
            Self::Hour => Grain::Minute,
            Self::Day => Grain::Hour,
            Self::Month => Grain::Day,
        }
    }

    fn buckets(self) -> i64 {
        match self {
            Self::Hour => 60,
            Self::Day => 24,
            Self::Month => 30,
        }
    }

    /// The first bucket's start: the range ends with the bucket now is in.
    fn since(self, now_ms: i64) -> i64 {
        let grain = self.grain();
        grain.bucket(now_ms) - (self.buckets() - 1) * grain.ms()
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Chosen {
    #[serde(default)]
    range: String,
}

/// Every bucket of the range, those without calls at zero.
fn every_bucket(range: Range, since: i64, series: Vec<(i64, Tally)>) -> Vec<(i64, Tally)> {
    let mut given = series.into_iter().peekable();
    (0..range.buckets())
        .map(|i| {
            let at = since + i * range.grain().ms();
            let tally = given
                .next_if(|(bucket, _)| *bucket == at)
                .map(|(_, t)| t)
                .unwrap_or_default();
            (at, tally)
        })
        .collect()
}

/// The range links, the chart and the totals: what both pages start with.
async fn overview(
    portal: &Portal,
    path: &str,
    range: Range,
    member: Option<&str>,
) -> Result<Markup, PortalError> {
    let since = range.since(portal.store.now_ms());
    let series = portal
        .store
        .usage_series(range.grain(), since, member)
        .await?;
    let mut total = Tally::default();
    for (_, tally) in &series {
        total.merge(tally);
    }
    let points = every_bucket(range, since, series);
    let per = match range.grain() {
        Grain::Minute => "minute",
        Grain::Hour => "hour",
        Grain::Day => "day",
    };
    let caption = format!(
        "Calls and errors per {per}, {}",
        range.words().to_lowercase()
    );
    Ok(html! {
        nav.ranges id="ranges" {
            @for choice in Range::ALL {
                @if choice == range {
                    strong aria-current="page" { (choice.words()) }
                } @else {
                    a href={ (path) "?range=" (choice.slug()) } { (choice.words()) }
                }
            }
        }
        figure.usage {
            (chart::calls_over_time("usage-chart", &caption, &points))
            figcaption { (caption) ": " span.legend-calls { "calls" } ", " span.legend-errors { "errors" } }
        }
        table id="usage-total" { tbody {
            tr { th { "Calls" } td { (total.calls) } }
            tr { th { "Errors" } td { (errors(&total)) } }
            tr { th { "p50 latency" } td { (chart::latency(total.percentile(50))) } }
            tr { th { "p95 latency" } td { (chart::latency(total.percentile(95))) } }
        } }
    })
}

fn errors(tally: &Tally) -> String {
    if tally.calls == 0 || tally.errors == 0 {
        return tally.errors.to_string();
    }
    let percent = tally.errors as f64 * 100.0 / tally.calls as f64;
    format!("{} ({percent:.1} %)", tally.errors)
}

/// A table of one dimension: name, calls (with a bar), errors, p50, p95.
fn table(
    (id, heading, column): (&str, &str, &str),
    rows: &[UsageRow],
    name: impl Fn(&UsageRow) -> String,
) -> Markup {
    let most = rows.iter().map(|r| r.tally.calls).max().unwrap_or(0);
    html! {
        h2 { (heading) }
        @if rows.is_empty() {
            p.muted id={ (id) "-none" } { "No calls in this range." }
        } @else {
            table.usage id=(id) {
                thead { tr { th { (column) } th { "Calls" } th {} th { "Errors" } th { "p50" } th { "p95" } } }
                tbody { @for row in rows { tr {
                    td.name { (name(row)) }
                    td.calls { (row.tally.calls) }
                    td { (chart::share(&row.tally, most)) }
                    td.errors { (errors(&row.tally)) }
                    td.p50 { (chart::latency(row.tally.percentile(50))) }
                    td.p95 { (chart::latency(row.tally.percentile(95))) }
                } } }
            }
        }
    }
}

/// A member as the tables name them (an unauthenticated server's calls
/// have none).
fn member_name(row: &UsageRow) -> String {
    if row.key.is_empty() {
        "(anonymous)".into()
    } else {
        row.key.clone()
    }
}

const NOTE: &str = "Latencies are read from a histogram in 1-2-5 steps: \"≤ 50 ms\" means \
    at most 50 ms. Errors are calls that gave no result: a tool's error result, a refusal \
    for lack of scope, a JSON-RPC error.";

/// `GET /portal/admin/usage`: everyone's calls, per member, tool and upstream.
pub(super) async fn team(
    State(portal): State<Arc<Portal>>,
    member: Member,
    Query(chosen): Query<Chosen>,
) -> Result<Html<String>, PortalError> {
    member.require_admin()?;
    let range = Range::parse(&chosen.range)?;
    let (grain, since) = (range.grain(), range.since(portal.store.now_ms()));
    let top = overview(&portal, "/portal/admin/usage", range, None).await?;
    let read = |dimension| portal.store.usage_table(grain, since, dimension, None);
    let members = read(Dimension::Member).await?;
    let tools = read(Dimension::Tool).await?;
    let upstreams = read(Dimension::Upstream).await?;
    Ok(page(
        "Team usage",
        Some(&member),
        html! {
            (top)
            (table(("usage-members", "Per member", "Member"), &members, member_name))
            (table(("usage-tools", "Per tool", "Tool"), &tools, |r| r.key.clone()))
            (table(("usage-upstreams", "Per upstream", "Upstream"), &upstreams, |r| r.key.clone()))
            p.muted { (NOTE) " Resource reads and prompts count per member and upstream, not per tool." }
        },
    ))
}

/// `GET /portal/usage`: the signed-in member's own calls, per tool.
pub(super) async fn own(
    State(portal): State<Arc<Portal>>,
    member: Member,
    Query(chosen): Query<Chosen>,
) -> Result<Html<String>, PortalError> {
    let range = Range::parse(&chosen.range)?;
    let (grain, since) = (range.grain(), range.since(portal.store.now_ms()));
    let me = Some(member.name());
    let top = overview(&portal, "/portal/usage", range, me).await?;
    let tools = portal
        .store
        .usage_table(grain, since, Dimension::MemberTool, me)
        .await?;
    Ok(page(
        "Your usage",
        Some(&member),
        html! {
            (top)
            (table(("usage-tools", "Per tool", "Tool"), &tools, |r| r.sub.clone()))
            p.muted { (NOTE) " Resource reads and prompts count in your totals, not per tool." }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_ends_with_the_bucket_now_is_in() {
        let now = 10 * 86_400_000 + 3_723_000; // day 10, 01:02:03
        assert_eq!(
            Range::Hour.since(now),
            10 * 86_400_000 + 3_720_000 - 59 * 60_000
        );
        assert_eq!(
            Range::Day.since(now),
            10 * 86_400_000 + 3_600_000 - 23 * 3_600_000
        );
        assert_eq!(Range::Month.since(now), 86_400_000 - 20 * 86_400_000);
        assert!(Range::parse("week").is_err());
    }

    #[test]
    fn missing_buckets_are_drawn_at_zero() {
        let one = Tally {
            calls: 3,
            ..Tally::default()
        };
        let points = every_bucket(Range::Hour, 0, vec![(120_000, one.clone())]);
        assert_eq!(points.len(), 60);
        assert_eq!(points[2], (120_000, one));
        assert_eq!(points[0].1.calls + points[3].1.calls, 0);
    }
}
