//! Latency: its percentiles, with time to first byte, and in the open loop service time and
//! pelt's lag beside it.

use crate::html::{esc, latency_rows};
use crate::output::{latency, thousands};
use pelt_stats::{LatencyFrom, LatencySummary, Report};
use std::fmt::Write as _;

/// The latency rows (none for sockets held without a message: only their upgrades).
pub fn text(s: &mut String, r: &Report) {
    // Sockets held without a message: no latency to show but the upgrades' (below).
    let messages = r.websocket.is_none() || r.requests.sent > 0;
    if messages {
        table(s, r);
    }
}

/// The latency rows: latency and TTFB, and in open loop service time and lag.
fn table(s: &mut String, r: &Report) {
    let _ = writeln!(
        s,
        "\n               min      mean     stdev    p50      p90      p99      p99.9    max"
    );
    row(s, "Latency", &r.latency_us);
    if let Some(t) = &r.ttfb_us {
        row(s, "TTFB", t);
    }
    if let Some(o) = &r.open_loop {
        row(s, "Service time", &o.service_time_us);
        row(s, "Lag", &o.lag_us);
        let _ = writeln!(
            s,
            "               latency: due time to last byte read; TTFB: due time to first byte \
             read;\n               service time: first byte written to last byte read; lag: due \
             time to start (pelt's own\n               delay). {} requests started over {} late.",
            thousands(o.late_requests),
            latency(o.late_threshold_us as f64)
        );
    } else {
        let _ = writeln!(
            s,
            "               (from the first byte written to the last byte read; TTFB: to the \
             first byte read)"
        );
    }
}

/// One row of latency figures, aligned under the header of [`summary`].
pub(super) fn row(s: &mut String, label: &str, l: &LatencySummary) {
    let _ = writeln!(
        s,
        "  {label:<13}{:<8} {:<8} {:<8} {:<8} {:<8} {:<8} {:<8} {}",
        latency(l.min_us as f64),
        latency(l.mean_us),
        latency(l.stdev_us),
        latency(l.p50_us as f64),
        latency(l.p90_us as f64),
        latency(l.p99_us as f64),
        latency(l.p99_9_us as f64),
        latency(l.max_us as f64),
    );
}

/// The latency table: every latency the run has, one row each.
pub fn html(b: &mut String, r: &Report) {
    b.push_str("<h2>Latency</h2><table>\n<tr><th></th><th class=\"n\">min</th><th class=\"n\">mean</th><th class=\"n\">p50</th><th class=\"n\">p90</th><th class=\"n\">p99</th><th class=\"n\">p99.9</th><th class=\"n\">max</th></tr>\n");
    latency_rows(b, "latency", &r.latency_us);
    if let Some(t) = &r.ttfb_us {
        latency_rows(b, "time to first byte", t);
    }
    if let Some(o) = &r.open_loop {
        latency_rows(b, "service time", &o.service_time_us);
        latency_rows(b, "lag (pelt)", &o.lag_us);
    }
    if let Some(h) = &r.tls_handshakes {
        latency_rows(b, "TLS handshake", &h.time_us);
    }
    if let Some(st) = &r.event_streams {
        latency_rows(b, "time to first event (TTFT)", &st.ttft_us);
        latency_rows(b, "gap between events", &st.gap_us);
        latency_rows(b, "time per event, per stream", &st.time_per_event_us);
        latency_rows(b, "stream duration", &st.duration_us);
    }
    if let Some(w) = r.websocket.as_ref().filter(|w| w.upgrades > 0) {
        latency_rows(b, "WebSocket upgrade", &w.upgrade_us);
    }
    let from = if r.latency_from == LatencyFrom::Due {
        "Latency counts from when each request was due (open loop, no coordinated omission)."
    } else {
        "Latency counts from each request's first byte written (closed loop)."
    };
    let _ = writeln!(b, "</table><p class=\"note\">{}</p>", esc(from));
}
