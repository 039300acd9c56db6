//! Errors by kind (with their first message, the protocol's codes they came with, and a
//! hint), and connection problems no request owned.

use crate::html::esc;
use crate::output::thousands;
use pelt_stats::{ErrorKind, Report};
use std::fmt::Write as _;

/// Errors by kind.
pub fn text(s: &mut String, r: &Report) {
    if !r.errors.is_empty() {
        let _ = writeln!(s);
        for (n, kind) in ErrorKind::ALL
            .iter()
            .filter(|k| r.errors.contains_key(k.name()))
            .enumerate()
        {
            let label = if n == 0 { "  Errors" } else { "" };
            let name = kind.name();
            let _ = writeln!(
                s,
                "{label:<15}{name:<18} {:>10}  {}",
                thousands(r.errors[name]),
                r.error_examples.get(name).map_or("", String::as_str)
            );
            if let Some(codes) = codes(r, name) {
                let _ = writeln!(s, "{:<15}{:<18} {:>10}  by code: {codes}", "", "", "");
            }
            if let Some(hint) = kind.hint() {
                let _ = writeln!(s, "{:<15}{:<18} {:>10}  hint: {hint}", "", "", "");
            }
        }
    }
}

/// The protocol's codes errors of kind `name` came with, most first: "H3_REQUEST_REJECTED
/// 40, H3_INTERNAL_ERROR 2" (`None`: none came with a code).
fn codes(r: &Report, name: &str) -> Option<String> {
    let mut codes: Vec<(&String, &u64)> = r.error_codes.get(name)?.iter().collect();
    codes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = codes
        .iter()
        .map(|(c, n)| format!("{c} {}", thousands(**n)))
        .collect();
    Some(list.join(", "))
}

/// Connection problems outside any request.
pub fn connections(s: &mut String, r: &Report) {
    if !r.connection_errors.is_empty() {
        let list: Vec<String> = r
            .connection_errors
            .iter()
            .map(|(k, n)| format!("{k} {}", thousands(*n)))
            .collect();
        let _ = writeln!(
            s,
            "\n  Connections  {} opened; problems outside any request: {}",
            thousands(r.connections_opened),
            list.join(", ")
        );
    }
}

/// Errors by kind, with their first message and hint.
pub fn html(b: &mut String, r: &Report) {
    if !r.errors.is_empty() {
        b.push_str("<h2>Errors</h2><table>\n<tr><th>kind</th><th class=\"n\">count</th><th>first message</th></tr>\n");
        for (k, n) in &r.errors {
            let _ = writeln!(
                b,
                "<tr><td>{}</td><td class=\"n\">{}</td><td>{}{}{}</td></tr>",
                esc(k),
                thousands(*n),
                esc(r.error_examples.get(k).map_or("", String::as_str)),
                codes(r, k).map_or(String::new(), |c| format!("<br>by code: {}", esc(&c))),
                r.error_hints
                    .get(k)
                    .map_or(String::new(), |h| format!("<br><i>hint: {}</i>", esc(h)))
            );
        }
        b.push_str("</table>\n");
    }
}
