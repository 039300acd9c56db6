//! `--expect`: each threshold, held or not, and the notes on how to read the figures.

use crate::html::esc;
use crate::output::{thousands, trim_number};
use pelt_stats::Report;
use std::fmt::Write as _;

/// Each threshold and its actual value.
pub fn text(s: &mut String, r: &Report) {
    if !r.thresholds.is_empty() {
        let _ = writeln!(s);
        for (n, t) in r.thresholds.iter().enumerate() {
            let label = if n == 0 { "  Thresholds" } else { "" };
            let actual = match t.actual {
                Some(v) if t.unit == "count" => thousands(v.round() as u64),
                Some(v) => format!("{} {}", trim_number(v), t.unit),
                None => "no complete response".to_string(),
            };
            let verdict = if t.passed { "ok    " } else { "FAILED" };
            let _ = writeln!(s, "{label:<15}{verdict}  {:<24} actual {actual}", t.expect);
        }
    }
}

/// The notes.
pub fn notes(s: &mut String, r: &Report) {
    for note in &r.notes {
        let _ = writeln!(s, "\n  Note: {note}");
    }
}

/// The thresholds table.
pub fn html(b: &mut String, r: &Report) {
    if !r.thresholds.is_empty() {
        b.push_str("<h2>Thresholds</h2><table>\n");
        for t in &r.thresholds {
            let actual = t
                .actual
                .map_or("none".into(), |v| format!("{v:.3} {}", t.unit));
            let _ = writeln!(
                b,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"{}\">{}</td></tr>",
                esc(&t.expect),
                esc(&actual),
                if t.passed { "passed" } else { "failed" },
                if t.passed { "passed" } else { "FAILED" }
            );
        }
        b.push_str("</table>\n");
    }
}

/// The notes.
pub fn notes_html(b: &mut String, r: &Report) {
    for n in &r.notes {
        let _ = writeln!(b, "<p class=\"note\">Note: {}</p>", esc(n));
    }
}
