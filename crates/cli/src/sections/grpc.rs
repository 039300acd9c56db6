//! A gRPC run: calls by gRPC status, the first message of each, and the messages received.

use crate::html::row;
use crate::output::thousands;
use pelt_stats::Report;
use std::fmt::Write as _;

/// A gRPC run: calls by status (OK first), with the first `grpc-message` of each status that
/// had one, and the response messages read.
pub fn text(s: &mut String, r: &Report) {
    let Some(g) = &r.grpc else {
        return;
    };
    let _ = writeln!(
        s,
        "\n  gRPC         {:>12} calls with a status, {} OK; {} messages received",
        thousands(g.calls),
        thousands(g.ok),
        thousands(g.messages_received),
    );
    let ok = g.status.get_key_value("OK");
    for (name, n) in ok
        .into_iter()
        .chain(g.status.iter().filter(|(k, _)| *k != "OK"))
    {
        let line = format!("{:<15}{name:<18} {:>10}", "", thousands(*n));
        match g.messages.get(name) {
            Some(m) => writeln!(s, "{line}  {m}"),
            None => writeln!(s, "{line}"),
        }
        .ok();
    }
}

/// The calls by gRPC status.
pub fn html(b: &mut String, r: &Report) {
    if let Some(g) = &r.grpc {
        b.push_str("<h2>gRPC calls</h2><table>\n");
        row(b, &["calls with a status", &thousands(g.calls), ""]);
        row(
            b,
            &["messages received", &thousands(g.messages_received), ""],
        );
        for (name, n) in &g.status {
            let m = g.messages.get(name).map_or("", String::as_str);
            row(b, &[name, &thousands(*n), m]);
        }
        b.push_str("</table>\n");
    }
}
