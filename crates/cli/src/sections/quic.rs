//! An HTTP/3 run: what QUIC counted underneath the requests (datagrams, packets sent and lost,
//! congestion events, flow-control blocks each way, 0-RTT taken and refused).

use crate::html::{chart_boxes, row};
use crate::output::thousands;
use pelt_stats::Report;
use std::fmt::Write as _;

/// Two lines: packets and their losses, then datagrams and flow control.
pub fn text(s: &mut String, r: &Report) {
    let Some(q) = &r.quic else {
        return;
    };
    let _ = writeln!(
        s,
        "\n  QUIC         {:>12} packets sent, {} lost ({:.2}%, {} bytes), {} congestion events",
        thousands(q.packets_sent),
        thousands(q.packets_lost),
        q.loss_percent(),
        thousands(q.bytes_lost),
        thousands(q.congestion_events),
    );
    let _ = writeln!(
        s,
        "{:<15}{:>12} datagrams sent, {} received; flow control held pelt back {} times, the \
         server {}",
        "",
        thousands(q.datagrams_sent),
        thousands(q.datagrams_received),
        thousands(q.blocked_by_server),
        thousands(q.blocked_by_pelt),
    );
    if q.early_accepted + q.early_refused > 0 {
        let _ = writeln!(
            s,
            "{:<15}{:>12} connections' 0-RTT requests taken, {} refused ({} requests sent again)",
            "",
            thousands(q.early_accepted),
            thousands(q.early_refused),
            thousands(q.early_resent),
        );
    }
}

/// QUIC's counts.
pub fn html(b: &mut String, r: &Report) {
    let Some(q) = &r.quic else {
        return;
    };
    b.push_str("<h2>QUIC</h2><table>\n");
    let loss = format!("{:.2}%", q.loss_percent());
    row(b, &["packets sent", &thousands(q.packets_sent), ""]);
    row(b, &["packets lost", &thousands(q.packets_lost), &loss]);
    row(b, &["bytes lost", &thousands(q.bytes_lost), ""]);
    row(
        b,
        &["congestion events", &thousands(q.congestion_events), ""],
    );
    row(b, &["datagrams sent", &thousands(q.datagrams_sent), ""]);
    row(
        b,
        &["datagrams received", &thousands(q.datagrams_received), ""],
    );
    let by_server = "pelt held back by the server's flow control";
    row(b, &[by_server, &thousands(q.blocked_by_server), ""]);
    let by_pelt = "the server held back by pelt's flow control";
    row(b, &[by_pelt, &thousands(q.blocked_by_pelt), ""]);
    if q.early_accepted + q.early_refused > 0 {
        let taken = "connections whose 0-RTT requests the server took";
        row(b, &[taken, &thousands(q.early_accepted), ""]);
        let refused = "connections whose 0-RTT requests it refused";
        let resent = format!("{} requests sent again", thousands(q.early_resent));
        row(b, &[refused, &thousands(q.early_refused), &resent]);
    }
    b.push_str("</table>\n");
}

/// An HTTP/3 run's chart: what QUIC counted each second (`report.js` draws it).
pub fn chart(b: &mut String, r: &Report) {
    if r.quic.is_some() {
        chart_boxes(
            b,
            &[(
                "chart-quic",
                "QUIC per second: packets, losses, congestion, flow control",
            )],
        );
    }
}
