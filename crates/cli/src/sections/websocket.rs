//! A WebSocket run: upgrades, sockets, messages, pings and close codes.

use crate::html::row;
use crate::output::{rate, thousands};
use pelt_stats::Report;
use std::fmt::Write as _;

/// A WebSocket run: upgrades, sockets held and dropped, messages received (replies and
/// pushes), pings and pongs, the server's close codes, and the upgrade time.
pub fn text(s: &mut String, r: &Report) {
    let Some(w) = &r.websocket else {
        return;
    };
    let _ = writeln!(
        s,
        "\n  WebSocket    {:>12} upgraded  {} held at the end  {} dropped by the server",
        thousands(w.upgrades),
        thousands(w.held),
        thousands(w.drops),
    );
    let _ = writeln!(
        s,
        "               {:>12} messages received ({}/s, {} pushed)  pings: {} sent, {} \
         pongs, {} received",
        thousands(w.messages_received),
        rate(w.messages_received_per_s),
        thousands(w.pushed),
        thousands(w.pings_sent),
        thousands(w.pongs),
        thousands(w.pings_received),
    );
    if !w.close_codes.is_empty() {
        let codes: Vec<String> = w
            .close_codes
            .iter()
            .map(|(c, n)| format!("{c}: {}", thousands(*n)))
            .collect();
        let _ = writeln!(
            s,
            "               the server's close codes: {}",
            codes.join(", ")
        );
    }
    if w.upgrades > 0 {
        let _ = writeln!(
            s,
            "\n               min      mean     stdev    p50      p90      p99      p99.9    max"
        );
        super::latency::row(s, "Upgrade", &w.upgrade_us);
        let _ = writeln!(
            s,
            "               (from the upgrade request written to the 101 read)"
        );
    }
}

/// The WebSocket counts.
pub fn html(b: &mut String, r: &Report) {
    if let Some(w) = &r.websocket {
        b.push_str("<h2>WebSocket</h2><table>\n");
        for (k, v) in [
            ("upgrades", w.upgrades),
            ("sockets held at the end", w.held),
            ("sockets dropped by the server", w.drops),
            ("messages received", w.messages_received),
            ("of them pushed (no message awaiting)", w.pushed),
            ("bytes received in messages", w.received_bytes),
            ("pings sent", w.pings_sent),
            ("pongs received", w.pongs),
            ("pings received (answered)", w.pings_received),
        ] {
            row(b, &[k, &thousands(v)]);
        }
        for (code, n) in &w.close_codes {
            row(b, &[&format!("the server's close {code}"), &thousands(*n)]);
        }
        b.push_str("</table>\n");
    }
}
