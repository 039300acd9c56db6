//! Requests: how many were sent and completed, at what rate, what they moved; their status
//! codes; and what the warm-up did beside them.

use crate::html::row;
use crate::output::{bytes, rate, thousands};
use pelt_stats::Report;
use std::fmt::Write as _;

/// Requests (a WebSocket run's messages) and bytes.
pub fn text(s: &mut String, r: &Report) {
    let q = &r.requests;
    // A WebSocket run's requests are its messages, and their responses the replies.
    let noun = if r.websocket.is_some() {
        "Messages "
    } else {
        "Requests "
    };
    let _ = writeln!(
        s,
        "  {noun}    {:>12} completed  {:>12}/s",
        thousands(q.completed),
        rate(r.rps)
    );
    let _ = writeln!(
        s,
        "               {:>12} sent  {} errors  {} in flight at the end",
        thousands(q.sent),
        thousands(q.errors),
        thousands(q.in_flight)
    );
    let _ = writeln!(
        s,
        "  Transfer     {:>12} read ({}/s)  {} written ({}/s)",
        bytes(r.bytes.received as f64),
        bytes(r.throughput_bytes_per_s.received as f64),
        bytes(r.bytes.sent as f64),
        bytes(r.throughput_bytes_per_s.sent as f64),
    );
}

/// Responses by status code.
pub fn status(s: &mut String, r: &Report) {
    if !r.status.is_empty() {
        let _ = writeln!(s);
        for (n, (code, count)) in r.status.iter().enumerate() {
            let label = if n == 0 { "  Status" } else { "" };
            let _ = writeln!(s, "{label:<15}{code}  {:>12}", thousands(*count));
        }
    }
}

/// The warm-up's own counts (not in the figures).
pub fn warmup(s: &mut String, r: &Report) {
    if let Some(w) = &r.warmup {
        let q = &w.requests;
        let _ = writeln!(
            s,
            "\n  Warm-up      {:>12} sent  {} completed  {} errors  {} in flight (not in the \
             figures above)",
            thousands(q.sent),
            thousands(q.completed),
            thousands(q.errors),
            thousands(q.in_flight)
        );
    }
}

/// Requests and status codes.
pub fn html(b: &mut String, r: &Report) {
    let i = &r.info;
    let q = &r.requests;
    b.push_str("<h2>Requests</h2><table>\n");
    for (k, v) in [
        ("sent", q.sent),
        ("completed", q.completed),
        ("errors", q.errors),
        ("in flight at the end", q.in_flight),
        ("connections opened", r.connections_opened),
    ] {
        let k = if k == "connections opened" && i.warmup_s > 0.0 {
            "connections opened after the warm-up"
        } else {
            k
        };
        row(b, &[k, &thousands(v)]);
    }
    for (code, n) in &r.status {
        row(b, &[&format!("status {code}"), &thousands(*n)]);
    }
    b.push_str("</table>\n");
}
