//! Per target (`--targets` names, a scenario's steps): the busiest, one row each.

use crate::html::{chart_boxes, row};
use crate::output::{latency, thousands};
use pelt_stats::{LatencySummary, Report};
use std::fmt::Write as _;

/// Targets shown one per row, in the summary, the HTML table and its chart (the rest are
/// folded into one).
pub const ROWS: usize = 20;

/// Per-target figures (`--targets`): the busiest names, one row each.
pub fn text(s: &mut String, r: &Report) {
    if r.targets.is_empty() {
        return;
    }
    let (rows, rest) = pelt_stats::busiest(&r.targets, ROWS);
    let width = rows
        .iter()
        .map(|t| t.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 40);
    // A replayed recording with its own latencies: they go beside the replayed ones.
    let recorded = rows.iter().any(|t| t.recorded_us.is_some());
    let mut header = format!(
        "  {:<width$}  {:>10} {:>10} {:>8}  {:<8} {:<8} {:<8} {:<8}",
        "Target", "sent", "completed", "errors", "p50", "p99", "max", "TTFB p99"
    );
    if recorded {
        header.push_str(" recorded p50/p99");
    }
    let _ = writeln!(s, "\n{}", header.trim_end());
    let row = |s: &mut String,
               name: &str,
               counts: [u64; 3],
               l: Option<&LatencySummary>,
               ttfb: Option<&LatencySummary>,
               then: Option<&LatencySummary>| {
        let name: String = name.chars().take(width).collect();
        let lat = l.map_or_else(
            || format!("{:<8} {:<8} {:<8}", "-", "-", "-"),
            |l| {
                format!(
                    "{:<8} {:<8} {:<8}",
                    latency(l.p50_us as f64),
                    latency(l.p99_us as f64),
                    latency(l.max_us as f64)
                )
            },
        );
        let ttfb = ttfb.map_or_else(|| "-".to_string(), |t| latency(t.p99_us as f64));
        let mut lat = format!("{lat} {ttfb:<8}");
        if let Some(r) = then {
            let _ = write!(
                lat,
                " {} / {}",
                latency(r.p50_us as f64),
                latency(r.p99_us as f64)
            );
        }
        let lat = lat.trim_end();
        let [sent, done, errors] = counts.map(thousands);
        let _ = writeln!(
            s,
            "  {name:<width$}  {sent:>10} {done:>10} {errors:>8}  {lat}"
        );
    };
    for t in &rows {
        let counts = [t.sent, t.completed, t.errors];
        let ttfb = t.ttfb_us.as_ref();
        row(
            s,
            &t.name,
            counts,
            Some(&t.latency_us),
            ttfb,
            t.recorded_us.as_ref(),
        );
    }
    if let Some(rest) = rest {
        let label = format!("({} more)", rest.names);
        row(
            s,
            &label,
            [rest.sent, rest.completed, rest.errors],
            None,
            None,
            None,
        );
    }
}

/// The per-target table (`--targets`): the busiest names, and the rest summed.
pub fn html(b: &mut String, r: &Report) {
    if r.targets.is_empty() {
        return;
    }
    let (rows, rest) = pelt_stats::busiest(&r.targets, ROWS);
    b.push_str("<div class=\"grid\">\n");
    let title = match r.targets.iter().any(|t| t.recorded_us.is_some()) {
        true => "Latency by target (p50, p99; recorded beside replayed)",
        false => "Latency by target (p50, p99)",
    };
    chart_boxes(b, &[("chart-targets", title)]);
    // A replayed recording with its own latencies: they go beside the replayed ones.
    let recorded = rows.iter().any(|t| t.recorded_us.is_some());
    b.push_str("<section class=\"box\"><h2>Targets</h2><table>\n<tr><th>target</th>");
    let mut heads = vec![
        "sent",
        "completed",
        "errors",
        "p50",
        "p99",
        "max",
        "TTFB p99",
    ];
    if recorded {
        heads.extend(["recorded p50", "recorded p99"]);
    }
    for h in &heads {
        let _ = write!(b, "<th class=\"n\">{h}</th>");
    }
    b.push_str("</tr>\n");
    let us = |v: u64| latency(v as f64);
    for t in rows {
        let l = &t.latency_us;
        let mut cells = vec![
            t.name.clone(),
            thousands(t.sent),
            thousands(t.completed),
            thousands(t.errors),
            us(l.p50_us),
            us(l.p99_us),
            us(l.max_us),
            t.ttfb_us.as_ref().map_or(String::new(), |s| us(s.p99_us)),
        ];
        if recorded {
            let then = t.recorded_us.as_ref();
            cells.push(then.map_or(String::new(), |r| us(r.p50_us)));
            cells.push(then.map_or(String::new(), |r| us(r.p99_us)));
        }
        row(b, &cells.iter().map(String::as_str).collect::<Vec<_>>());
    }
    if let Some(rest) = rest {
        let mut cells = vec![
            format!("({} more)", rest.names),
            thousands(rest.sent),
            thousands(rest.completed),
            thousands(rest.errors),
        ];
        cells.resize(heads.len() + 1, String::new());
        row(b, &cells.iter().map(String::as_str).collect::<Vec<_>>());
    }
    b.push_str("</table></section>\n</div>\n");
}
