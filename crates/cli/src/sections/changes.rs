//! What was changed while the run went (`--dashboard`'s page and control endpoint): when, and
//! what it set.

use crate::html::esc;
use pelt_stats::Report;
use std::fmt::Write as _;

/// One line per change.
pub fn text(s: &mut String, r: &Report) {
    for (n, c) in r.changes.iter().enumerate() {
        let label = if n == 0 { "  Changes" } else { "" };
        if n == 0 {
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "{label:<15}{c}");
    }
}

/// The changes' table.
pub fn html(b: &mut String, r: &Report) {
    if r.changes.is_empty() {
        return;
    }
    b.push_str("<h2>Changes during the run</h2><table id=\"changes\">\n<tr><th>at</th><th>change</th><th>value</th></tr>\n");
    for c in &r.changes {
        let value = match (c.what, c.value) {
            (pelt_stats::Steer::Rate, Some(v)) => format!("{}/s", pelt_stats::fmt::rate(v)),
            (_, Some(v)) => pelt_stats::fmt::thousands(v.round() as u64),
            (_, None) => String::new(),
        };
        let _ = writeln!(
            b,
            "<tr><td>{:.2} s</td><td>{}</td><td>{}</td></tr>",
            c.at_s,
            esc(c.what.name()),
            esc(&value)
        );
    }
    b.push_str("</table>\n");
}
