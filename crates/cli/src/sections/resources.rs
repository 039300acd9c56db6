//! `--monitor`: the server's, pelt's and the host's resources, and what limited the run.

use crate::html::{chart_boxes, esc, row};
use crate::output::{bytes, thousands, trim_number};
use pelt_stats::Report;
use std::fmt::Write as _;

/// `--monitor`: the server's, pelt's and the host's resources, and what limited the run.
pub fn text(s: &mut String, r: &Report) {
    let Some(res) = &r.resources else {
        return;
    };
    let cores = |n: f64| format!("{n:.2}");
    let _ = writeln!(s);
    let process = |s: &mut String, label: &str, what: &str, p: &pelt_stats::ProcessSummary| {
        let _ = writeln!(
            s,
            "{label:<15}{what}CPU {} cores mean, {} peak (of {} it may use), {:.1} us per \
             request; RSS peak {}",
            cores(p.cpu_mean),
            cores(p.cpu_peak),
            trim_number(p.cpu_capacity),
            p.cpu_us_per_request,
            bytes(p.rss_peak_bytes as f64),
        );
    };
    if let Some(server) = &res.server {
        let what = res
            .monitored
            .as_ref()
            .map_or(String::new(), |m| format!("{m}; "));
        process(s, "  Server", &what, server);
        let _ = writeln!(
            s,
            "{:<15}threads {}, open files {}, {} context switches",
            "",
            thousands(server.threads_peak),
            thousands(server.fds_peak),
            thousands(server.ctx_switches)
        );
    }
    // A fleet's coordinator sends nothing itself: no pelt line.
    if res.pelt.rss_peak_bytes > 0 {
        process(s, "  pelt", "", &res.pelt);
    }
    if let Some(w) = res.pelt.worker_peak {
        let _ = writeln!(
            s,
            "{:<15}busiest worker {:.0}% of a core in its busiest second",
            "",
            w * 100.0
        );
    }
    let host = |s: &mut String, label: &str, h: &pelt_stats::HostSummary| {
        let _ = writeln!(
            s,
            "{label:<15}{} cores, {} busy mean ({} softirq), {} peak; network {} in, {} out; \
             {} retransmits, {} listen overflows, {} SYN drops",
            h.cores,
            cores(h.cpu_busy_mean),
            cores(h.cpu_softirq_mean),
            cores(h.cpu_busy_peak),
            bytes(h.net_rx_bytes as f64),
            bytes(h.net_tx_bytes as f64),
            thousands(h.tcp_retransmits),
            thousands(h.listen_overflows),
            thousands(h.listen_drops),
        );
    };
    host(s, "  Host", &res.host);
    if let Some(h) = &res.server_host {
        host(s, "  Server host", h);
    }
    let v = &res.verdict;
    let _ = writeln!(s, "  Bottleneck   {}: {}", v.headline(), v.evidence);
}

/// `--monitor`: the verdict, a table of the server's, pelt's and the host's figures, and their
/// charts: the server's CPU beside requests/s on one time axis, pelt's CPU, the network.
pub fn html(b: &mut String, r: &Report) {
    let Some(res) = &r.resources else {
        return;
    };
    let what = res.verdict.headline();
    let _ = writeln!(
        b,
        "<section class=\"box\"><h2>Bottleneck: {}</h2><p>{}</p>",
        esc(&what),
        esc(&res.verdict.evidence)
    );
    b.push_str("<table>\n<tr><th></th><th class=\"n\">CPU mean (cores)</th><th class=\"n\">CPU peak</th><th class=\"n\">could use</th><th class=\"n\">CPU-us per request</th><th class=\"n\">RSS peak</th></tr>\n");
    let mut group = |name: &str, p: &pelt_stats::ProcessSummary| {
        row(
            b,
            &[
                name,
                &format!("{:.2}", p.cpu_mean),
                &format!("{:.2}", p.cpu_peak),
                &format!("{:.2}", p.cpu_capacity),
                &format!("{:.1}", p.cpu_us_per_request),
                &crate::output::bytes(p.rss_peak_bytes as f64),
            ],
        )
    };
    if let Some(server) = &res.server {
        let name = format!("server ({})", res.monitored.as_deref().unwrap_or(""));
        group(&name, server);
    }
    group("pelt", &res.pelt);
    let h = &res.host;
    let _ = writeln!(
        b,
        "</table><p class=\"note\">Host: {} cores, {:.2} busy on average ({:.2} softirq); {} in, \
         {} out; {} TCP retransmits, {} listen overflows, {} SYN drops.</p></section>",
        h.cores,
        h.cpu_busy_mean,
        h.cpu_softirq_mean,
        crate::output::bytes(h.net_rx_bytes as f64),
        crate::output::bytes(h.net_tx_bytes as f64),
        thousands(h.tcp_retransmits),
        thousands(h.listen_overflows),
        thousands(h.listen_drops)
    );
    b.push_str("<div class=\"grid\">\n");
    chart_boxes(
        b,
        &[
            ("chart-server", "Server CPU beside requests per second"),
            ("chart-pelt", "pelt's CPU and the host's"),
            ("chart-net", "Network, every interface"),
        ],
    );
    b.push_str("</div>\n");
}
