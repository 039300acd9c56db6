//! A fleet run's agents.

use crate::html::row;
use crate::output::{latency, rate, thousands};
use pelt_stats::Report;
use std::fmt::Write as _;

/// A fleet run's agents, one line each: what each sent, and how it started.
pub fn text(s: &mut String, r: &Report) {
    let Some(f) = &r.fleet else {
        return;
    };
    let _ = writeln!(s);
    for (n, a) in f.agents.iter().enumerate() {
        let label = if n == 0 { "  Agents" } else { "" };
        let figures = match &a.latency_us {
            Some(l) => format!(
                "{:>12} completed  {:>10}/s  p99 {:<8}",
                thousands(a.requests.completed),
                rate(a.rps),
                latency(l.p99_us as f64)
            ),
            None => format!(
                "{:>12} completed before it was LOST: {}",
                thousands(a.requests.completed),
                a.problem.as_deref().unwrap_or("")
            ),
        };
        let start = a
            .start_skew_ms
            .map_or(String::new(), |k| format!("  start {k:+.1}ms"));
        let _ = writeln!(
            s,
            "{label:<15}{:<3}{:<22}{figures}{start}",
            a.rank,
            format!("{} ({}t)", a.host, a.threads)
        );
    }
}

/// A fleet run's agents: each one's part, start and state.
pub fn html(b: &mut String, r: &Report) {
    let Some(f) = &r.fleet else {
        return;
    };
    let spread = f
        .start_spread_ms
        .map_or(String::new(), |s| format!(", started within {s:.1} ms"));
    let _ = write!(
        b,
        "<section class=\"box\"><h2>Agents ({}{spread})</h2><table>\n<tr><th>agent (host, address)</th><th class=\"n\">threads</th><th class=\"n\">completed</th><th class=\"n\">errors</th><th class=\"n\">req/s</th><th class=\"n\">p99</th><th class=\"n\">start</th><th class=\"n\">clock</th><th>state</th></tr>\n",
        f.agents.len()
    );
    for a in &f.agents {
        let state = match &a.problem {
            Some(p) => format!("lost: {p}"),
            None => "finished".into(),
        };
        row(
            b,
            &[
                &format!("{}: {} ({})", a.rank, a.host, a.address),
                &a.threads.to_string(),
                &thousands(a.requests.completed),
                &thousands(a.requests.errors),
                &rate(a.rps),
                &a.latency_us
                    .map_or(String::new(), |l| latency(l.p99_us as f64)),
                &a.start_skew_ms
                    .map_or(String::new(), |k| format!("{k:+.1} ms")),
                &format!("{:+.2} ms", a.clock_offset_ms),
                &state,
            ],
        );
    }
    b.push_str("</table></section>\n");
}
