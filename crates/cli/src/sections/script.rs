//! A run with a script (`-s`): what its `pelt.counter(name)` and `pelt.histogram(name)` kept,
//! every thread's together.

use crate::html::row;
use crate::output::thousands;
use pelt_stats::{Report, ScriptHistogram};
use std::fmt::Write as _;

/// The figures of a histogram, in the script's own unit: count, min, mean, p50, p90, p99,
/// p99.9, max.
fn figures(h: &ScriptHistogram) -> [String; 8] {
    let s = &h.summary;
    [
        thousands(h.count),
        thousands(s.min_us),
        format!("{:.1}", s.mean_us),
        thousands(s.p50_us),
        thousands(s.p90_us),
        thousands(s.p99_us),
        thousands(s.p99_9_us),
        thousands(s.max_us),
    ]
}

/// The script's counters, then its histograms (nothing when it kept none).
pub fn text(s: &mut String, r: &Report) {
    let Some(sc) = &r.script else {
        return;
    };
    if sc.counters.is_empty() && sc.histograms.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n  Script       {}", sc.file);
    for (name, n) in &sc.counters {
        let _ = writeln!(s, "    {name:<24} {:>14}", thousands(*n));
    }
    if !sc.histograms.is_empty() {
        let _ = writeln!(
            s,
            "    {:<24} {:>10} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "histogram", "count", "min", "mean", "p50", "p90", "p99", "p99.9", "max"
        );
        for (name, h) in &sc.histograms {
            let f = figures(h);
            let _ = writeln!(
                s,
                "    {name:<24} {:>10} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
                f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]
            );
        }
    }
}

/// The script's counters and histograms.
pub fn html(b: &mut String, r: &Report) {
    let Some(sc) = &r.script else {
        return;
    };
    if sc.counters.is_empty() && sc.histograms.is_empty() {
        return;
    }
    b.push_str("<h2>Script</h2><table>\n");
    row(b, &["script", &sc.file]);
    for (name, n) in &sc.counters {
        row(b, &[name, &thousands(*n)]);
    }
    b.push_str("</table>\n");
    if !sc.histograms.is_empty() {
        b.push_str("<table>\n<tr><th></th>");
        for h in ["count", "min", "mean", "p50", "p90", "p99", "p99.9", "max"] {
            let _ = write!(b, "<th class=\"n\">{h}</th>");
        }
        b.push_str("</tr>\n");
        for (name, h) in &sc.histograms {
            let f = figures(h);
            let mut cells: Vec<&str> = vec![name];
            cells.extend(f.iter().map(String::as_str));
            row(b, &cells);
        }
        b.push_str("</table>\n");
    }
}
