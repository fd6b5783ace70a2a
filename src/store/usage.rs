//! Usage rolled up as the audit is written (issue 64 part 2): what the
//! portal's usage pages read, so a page view never scans audit rows.
//!
//! Each audit batch adds, in its own transaction, one upsert row per
//! (grain, bucket, dimension, key) the batch touches: calls, errors and a
//! latency histogram. Three grains, each kept as long as a page reads it:
//! minutes for ~2 hours, hours for ~2 days, days for ~400 days. What is
//! counted and what is an error is `counted` and `is_error` below; the rows
//! written and read are `usage_rows.rs`.

use std::collections::{BTreeMap, HashMap};

use super::AuditRecord;

/// The latency histogram's upper bounds in ms, 1-2-5 steps; a call slower
/// than the last falls in one more bucket ("over 60 s").
pub const LATENCY_BOUNDS_MS: [i64; 15] = [
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 60_000,
];
/// Histogram buckets: one per bound and one above them all.
pub const LATENCY_BUCKETS: usize = LATENCY_BOUNDS_MS.len() + 1;

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// How wide a bucket is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grain {
    Minute,
    Hour,
    Day,
}

impl Grain {
    pub const ALL: [Grain; 3] = [Grain::Minute, Grain::Hour, Grain::Day];

    pub fn ms(self) -> i64 {
        match self {
            Self::Minute => MINUTE,
            Self::Hour => HOUR,
            Self::Day => DAY,
        }
    }

    /// How long its buckets are kept: a little more than the longest range
    /// a page reads at this grain (an hour, a day, 30 days; a year of days).
    pub fn kept_ms(self) -> i64 {
        match self {
            Self::Minute => 2 * HOUR,
            Self::Hour => 48 * HOUR,
            Self::Day => 400 * DAY,
        }
    }

    /// The start of the bucket `at_ms` falls in (UTC).
    pub fn bucket(self, at_ms: i64) -> i64 {
        at_ms.div_euclid(self.ms()) * self.ms()
    }
}

/// What a rollup row counts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dimension {
    /// The member who called (`key`).
    Member,
    /// The tool called (`key`; `tools/call` only: resource URIs are as many
    /// as a client likes).
    Tool,
    /// The upstream server that served the call (`key`).
    Upstream,
    /// A member's calls of one tool (`key` the member, `sub` the tool): what
    /// a member's own page lists.
    MemberTool,
}

impl Dimension {
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Member => "member",
            Self::Tool => "tool",
            Self::Upstream => "upstream",
            Self::MemberTool => "member_tool",
        }
    }
}

/// Calls, the errors among them and their latencies, over some buckets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub calls: i64,
    pub errors: i64,
    /// Calls per latency bucket (`LATENCY_BOUNDS_MS`).
    pub latency: [i64; LATENCY_BUCKETS],
}

impl Tally {
    fn add(&mut self, record: &AuditRecord) {
        self.calls += 1;
        self.errors += i64::from(is_error(&record.outcome));
        self.latency[latency_bucket(record.latency_ms)] += 1;
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &Tally) {
        self.calls += other.calls;
        self.errors += other.errors;
        for (mine, theirs) in self.latency.iter_mut().zip(other.latency) {
            *mine += theirs;
        }
    }

    /// The latency bucket the `percent`th percentile call falls in (its
    /// upper bound is `LATENCY_BOUNDS_MS[i]`, none for the last); `None`
    /// without calls.
    pub fn percentile(&self, percent: i64) -> Option<usize> {
        let total: i64 = self.latency.iter().sum();
        if total == 0 {
            return None;
        }
        // The rank of that call, 1-based, rounded up.
        let rank = (total * percent + 99) / 100;
        let mut seen = 0;
        self.latency.iter().position(|count| {
            seen += count;
            seen >= rank.max(1)
        })
    }
}

fn latency_bucket(latency_ms: i64) -> usize {
    LATENCY_BOUNDS_MS
        .iter()
        .position(|bound| latency_ms <= *bound)
        .unwrap_or(LATENCY_BOUNDS_MS.len())
}

/// Whether a record is a call the usage pages count: `tools/call`,
/// `resources/read` or `prompts/get` by an authenticated caller (a request
/// refused before authentication is no member's call). A call that became a
/// task counts once, when it was created.
pub fn counted(record: &AuditRecord) -> bool {
    matches!(
        record.method.as_str(),
        "tools/call" | "resources/read" | "prompts/get"
    ) && !record.outcome.starts_with("unauthenticated")
}

/// Whether a counted call's outcome is an error: anything but a result
/// (`ok`), a question back to the client (`input_required`) or a task made
/// (`task`). So a tool's own error result (`tool_error`), a refusal for
/// lack of scope (`denied: ...`) and a JSON-RPC error (`error <code>`) are.
/// What guardrails noted after it (`ok; guardrails: ...`) does not count.
pub fn is_error(outcome: &str) -> bool {
    let outcome = outcome
        .split_once("; guardrails: ")
        .map_or(outcome, |(o, _)| o);
    !matches!(outcome, "ok" | "input_required" | "task")
}

/// A rollup row's identity; rows sort in this order, which every writer
/// follows, so concurrent batches lock shared rows in the same order.
pub(super) type RowKey = (i64, i64, Dimension, String, String);

/// What `records` add to the rollups, one entry per row they touch.
pub(super) fn rollup(records: &[AuditRecord]) -> BTreeMap<RowKey, Tally> {
    // First the batch's calls per minute, member, tool and upstream,
    // borrowed: a batch is mostly a few of those, so the rows below are
    // made (and their keys allocated) per group, not per record.
    type Group<'a> = (i64, &'a str, Option<&'a str>, &'a str);
    let mut groups: HashMap<Group<'_>, Tally> = HashMap::new();
    for record in records.iter().filter(|r| counted(r)) {
        let tool = (record.method == "tools/call").then_some(record.target.as_str());
        let minute = Grain::Minute.bucket(record.at_ms);
        groups
            .entry((minute, &record.user, tool, &record.upstream))
            .or_default()
            .add(record);
    }
    let mut rows: BTreeMap<RowKey, Tally> = BTreeMap::new();
    for ((minute, user, tool, upstream), tally) in groups {
        let mut keys = vec![(Dimension::Member, user, "")];
        if let Some(tool) = tool {
            keys.push((Dimension::Tool, tool, ""));
            keys.push((Dimension::MemberTool, user, tool));
        }
        if !upstream.is_empty() {
            keys.push((Dimension::Upstream, upstream, ""));
        }
        for grain in Grain::ALL {
            // A minute lies within one hour and one day.
            let bucket = grain.bucket(minute);
            for (dimension, key, sub) in &keys {
                rows.entry((grain.ms(), bucket, *dimension, clip(key), clip(sub)))
                    .or_default()
                    .merge(&tally);
            }
        }
    }
    rows
}

/// A key as stored: NUL replaced (PostgreSQL text holds none), at most 200
/// characters (tool names are at most 128; a client's made-up name is cut).
fn clip(text: &str) -> String {
    text.chars()
        .take(200)
        .map(|c| if c == '\0' { '\u{FFFD}' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_fall_in_their_bucket_and_percentiles_read_them() {
        assert_eq!(latency_bucket(0), 0);
        assert_eq!(latency_bucket(1), 0);
        assert_eq!(latency_bucket(2), 1);
        assert_eq!(latency_bucket(150), 7);
        assert_eq!(latency_bucket(60_001), 15);
        let mut tally = Tally::default();
        for latency_ms in [3, 3, 3, 3, 3, 3, 3, 3, 3, 400] {
            tally.add(&AuditRecord {
                latency_ms,
                ..AuditRecord::example("t")
            });
        }
        assert_eq!(tally.percentile(50), Some(2), "at most 5 ms");
        assert_eq!(tally.percentile(95), Some(8), "at most 500 ms");
        assert_eq!(Tally::default().percentile(50), None);
    }

    #[test]
    fn errors_are_every_outcome_but_a_result_a_question_or_a_task() {
        for ok in [
            "ok",
            "input_required",
            "task",
            "ok; guardrails: pii redacted result",
        ] {
            assert!(!is_error(ok), "{ok}");
        }
        let blocked = "tool_error; guardrails: no-cards blocked arguments";
        for bad in ["tool_error", "denied: tools:x", "error -32602", blocked] {
            assert!(is_error(bad), "{bad}");
        }
    }

    #[test]
    fn a_batch_is_one_row_per_grain_dimension_and_key() {
        let call = |user: &str, tool: &str, upstream: &str| AuditRecord {
            user: user.into(),
            upstream: upstream.into(),
            at_ms: 90 * MINUTE + 5,
            ..AuditRecord::example(tool)
        };
        let records = [
            call("ann", "a", ""),
            call("ann", "a", ""),
            call("bob", "b", "up"),
            AuditRecord {
                method: "portal/tokens/create".into(),
                ..call("ann", "x", "")
            },
            AuditRecord {
                outcome: "unauthenticated: no token".into(),
                ..call("", "a", "")
            },
        ];
        let rows = rollup(&records);
        // Per grain: member ann, bob; tool a, b; member_tool ann/a, bob/b; upstream up.
        assert_eq!(rows.len(), 3 * 7);
        let ann = &rows[&(
            MINUTE,
            90 * MINUTE,
            Dimension::Member,
            "ann".into(),
            String::new(),
        )];
        assert_eq!((ann.calls, ann.errors), (2, 0));
        let day = &rows[&(DAY, 0, Dimension::Upstream, "up".into(), String::new())];
        assert_eq!(day.calls, 1);
    }
}
