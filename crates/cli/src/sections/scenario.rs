//! A scenario run: iterations, checks and captures.

use crate::html::{chart_boxes, esc, row};
use crate::output::{latency, thousands};
use pelt_stats::Report;
use std::fmt::Write as _;

/// A scenario run: its iterations and their durations, each check passed and failed, each
/// capture found and missing.
pub fn text(s: &mut String, r: &Report) {
    let Some(sc) = &r.scenario else {
        return;
    };
    let it = &sc.iterations;
    let _ = writeln!(
        s,
        "\n  Iterations     {} started, {} completed, {} failed",
        thousands(it.started),
        thousands(it.completed),
        thousands(it.failed)
    );
    if it.completed > 0 {
        let d = &it.duration_us;
        let from = match r.latency_from {
            pelt_stats::LatencyFrom::Due => "from the arrival",
            pelt_stats::LatencyFrom::Send => "from the first request",
        };
        let _ = writeln!(
            s,
            "  Iteration time p50 {}, p90 {}, p99 {}, max {} (completed, {from})",
            latency(d.p50_us as f64),
            latency(d.p90_us as f64),
            latency(d.p99_us as f64),
            latency(d.max_us as f64),
        );
    }
    let checks = sc.checks.iter().map(|c| (&c.name, c.passed, c.failed));
    pairs_table(
        s,
        ["Check", "passed", "failed"],
        &checks.collect::<Vec<_>>(),
    );
    let captures = sc.captures.iter().map(|c| (&c.name, c.found, c.missing));
    pairs_table(
        s,
        ["Capture", "found", "missing"],
        &captures.collect::<Vec<_>>(),
    );
}

/// Rows of a name and two counts under `header`; nothing without rows.
fn pairs_table(s: &mut String, header: [&str; 3], rows: &[(&String, u64, u64)]) {
    if rows.is_empty() {
        return;
    }
    let width = rows
        .iter()
        .map(|(name, _, _)| name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 40);
    let [what, a, b] = header;
    let _ = writeln!(s, "  {what:<width$}  {a:>10} {b:>10}");
    for (name, x, y) in rows {
        let name: String = name.chars().take(width).collect();
        let (x, y) = (thousands(*x), thousands(*y));
        let _ = writeln!(s, "  {name:<width$}  {x:>10} {y:>10}");
    }
}

/// A scenario run: its iterations and their time (a chart by percentile), its checks and
/// captures (its steps are the targets above).
pub fn html(b: &mut String, r: &Report) {
    let Some(sc) = &r.scenario else {
        return;
    };
    b.push_str("<div class=\"grid\">\n");
    if sc.iterations.completed > 0 {
        chart_boxes(b, &[("chart-iterations", "Iteration time by percentile")]);
    }
    let _ = writeln!(
        b,
        "<section class=\"box\"><h2>Scenario: {}</h2><table>",
        esc(&sc.file)
    );
    let it = &sc.iterations;
    b.push_str("<tr><th>iterations</th><th class=\"n\">started</th><th class=\"n\">completed</th><th class=\"n\">failed</th><th class=\"n\">p50</th><th class=\"n\">p99</th><th class=\"n\">max</th></tr>\n");
    let d = &it.duration_us;
    let (p50, p99, max) = if it.completed > 0 {
        let us = |v: u64| latency(v as f64);
        (us(d.p50_us), us(d.p99_us), us(d.max_us))
    } else {
        Default::default()
    };
    row(
        b,
        &[
            "",
            &thousands(it.started),
            &thousands(it.completed),
            &thousands(it.failed),
            &p50,
            &p99,
            &max,
        ],
    );
    b.push_str("</table>\n");
    let tables = [
        (
            ["check", "passed", "failed"],
            sc.checks
                .iter()
                .map(|c| (&c.name, c.passed, c.failed))
                .collect::<Vec<_>>(),
        ),
        (
            ["capture", "found", "missing"],
            sc.captures
                .iter()
                .map(|c| (&c.name, c.found, c.missing))
                .collect(),
        ),
    ];
    for ([what, a, z], rows) in tables {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            b,
            "<table><tr><th>{what}</th><th class=\"n\">{a}</th><th class=\"n\">{z}</th></tr>"
        );
        for (name, x, y) in rows {
            row(b, &[name, &thousands(x), &thousands(y)]);
        }
        b.push_str("</table>\n");
    }
    b.push_str("</section>\n</div>\n");
}
