//! The usage pages' charts: inline SVG drawn on the server (maud), styled
//! by the portal's one stylesheet, so the page needs no script and the CSP
//! stays as strict as every other page's. Each bar has a `<title>`: the
//! browser shows its figures on hover, still without script.

use maud::{Markup, html};

use super::pages::time;
use crate::store::{LATENCY_BOUNDS_MS, Tally};

const WIDTH: i64 = 720;
const HEIGHT: i64 = 180;
/// Room for the value axis on the left and the time axis below.
const LEFT: i64 = 44;
const BOTTOM: i64 = 22;
const TOP: i64 = 8;

/// Calls (and the errors among them, drawn over them) per bucket: `points`
/// are each bucket's start and tally, oldest first, every bucket present.
pub(super) fn calls_over_time(id: &str, caption: &str, points: &[(i64, Tally)]) -> Markup {
    let most = points
        .iter()
        .map(|(_, t)| t.calls)
        .max()
        .unwrap_or(0)
        .max(1);
    let plot_w = WIDTH - LEFT;
    let plot_h = HEIGHT - BOTTOM - TOP;
    let slot = plot_w as f64 / points.len().max(1) as f64;
    let bar = (slot * 0.8).max(1.0);
    let height = |n: i64| n as f64 * plot_h as f64 / most as f64;
    let base = (HEIGHT - BOTTOM) as f64;
    let first = points.first().map(|(at, _)| *at);
    let last = points.last().map(|(at, _)| *at);
    html! {
        svg id=(id) class="chart" viewBox={ "0 0 " (WIDTH) " " (HEIGHT) }
            width=(WIDTH) height=(HEIGHT) role="img" aria-label=(caption)
            xmlns="http://www.w3.org/2000/svg" {
            title { (caption) }
            line.axis x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(base) {}
            line.axis x1=(LEFT) y1=(base) x2=(WIDTH) y2=(base) {}
            line.grid x1=(LEFT) y1=(TOP) x2=(WIDTH) y2=(TOP) {}
            text.label x=(LEFT - 6) y=(TOP + 10) text-anchor="end" { (most) }
            text.label x=(LEFT - 6) y=(base) text-anchor="end" { "0" }
            @if let (Some(first), Some(last)) = (first, last) {
                text.label x=(LEFT) y=(HEIGHT - 6) { (time(Some(first))) }
                text.label x=(WIDTH) y=(HEIGHT - 6) text-anchor="end" { (time(Some(last))) }
            }
            @for (i, (at, tally)) in points.iter().enumerate() {
                @let x = LEFT as f64 + i as f64 * slot + (slot - bar) / 2.0;
                g.bar {
                    title { (time(Some(*at))) ": " (tally.calls) " calls, " (tally.errors) " errors" }
                    @if tally.calls > 0 {
                        rect.calls x=(fmt(x)) y=(fmt(base - height(tally.calls)))
                            width=(fmt(bar)) height=(fmt(height(tally.calls))) {}
                    }
                    @if tally.errors > 0 {
                        rect.errors x=(fmt(x)) y=(fmt(base - height(tally.errors)))
                            width=(fmt(bar)) height=(fmt(height(tally.errors))) {}
                    }
                }
            }
        }
    }
}

/// A small bar for a table row: `calls` of `most`, errors over them.
pub(super) fn share(tally: &Tally, most: i64) -> Markup {
    const W: f64 = 120.0;
    let width = |n: i64| (n as f64 * W / most.max(1) as f64).max(if n > 0 { 1.0 } else { 0.0 });
    html! {
        svg class="share" viewBox="0 0 120 10" width="120" height="10" aria-hidden="true"
            xmlns="http://www.w3.org/2000/svg" {
            rect.calls x="0" y="0" width=(fmt(width(tally.calls))) height="10" {}
            @if tally.errors > 0 {
                rect.errors x="0" y="0" width=(fmt(width(tally.errors))) height="10" {}
            }
        }
    }
}

/// A percentile as the histogram knows it: at most its bucket's bound.
pub(super) fn latency(bucket: Option<usize>) -> String {
    match bucket.map(|i| LATENCY_BOUNDS_MS.get(i)) {
        None => "-".into(),
        Some(None) => format!("> {}", ms(*LATENCY_BOUNDS_MS.last().expect("bounds"))),
        Some(Some(bound)) => format!("≤ {}", ms(*bound)),
    }
}

fn ms(value: i64) -> String {
    if value >= 1_000 {
        format!("{} s", value / 1_000)
    } else {
        format!("{value} ms")
    }
}

fn fmt(value: f64) -> String {
    format!("{value:.1}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_read_as_the_bucket_bound() {
        assert_eq!(latency(None), "-");
        assert_eq!(latency(Some(2)), "≤ 5 ms");
        assert_eq!(latency(Some(10)), "≤ 2 s");
        assert_eq!(latency(Some(15)), "> 60 s");
    }

    #[test]
    fn a_chart_draws_a_bar_per_bucket_with_calls() {
        let tally = |calls, errors| Tally {
            calls,
            errors,
            ..Tally::default()
        };
        let svg =
            calls_over_time("c", "Calls", &[(0, tally(4, 1)), (60_000, tally(0, 0))]).into_string();
        assert_eq!(svg.matches("<rect class=\"calls\"").count(), 1, "{svg}");
        assert_eq!(svg.matches("<rect class=\"errors\"").count(), 1, "{svg}");
        assert_eq!(svg.matches("<title>").count(), 3, "{svg}");
    }
}
