//! The summary's head: what ran, over TLS or not, from which requests, on which load model and
//! stages, and how it ended.

use crate::html::{card, chart_boxes, esc, kv, percent, utc};
use crate::output::{
    batch_window, bytes, latency, plural, rate, rate_plain, skipped, stages, thousands, title,
};
use pelt_stats::{Arrival, Report};
use std::fmt::Write as _;

/// What ran and how it ended, before the figures.
pub fn text(s: &mut String, r: &Report) {
    what_ran(s, r);
    requests_from(s, r);
    load_model(s, r);
    ended(s, r);
}

/// What ran, and over TLS how.
fn what_ran(s: &mut String, r: &Report) {
    let i = &r.info;
    let fleet = r.fleet.as_ref().map(|f| (f.agents.len(), true));
    let _ = writeln!(s, "{}", title(i, fleet));
    if let Some(tls) = &i.tls {
        let verified = if tls.insecure {
            "certificate NOT verified (--insecure)".to_string()
        } else if let Some(ca) = &tls.cacert {
            format!("certificate verified (Mozilla roots and {ca})")
        } else {
            "certificate verified".to_string()
        };
        let handshakes = r.tls_handshakes.as_ref().map_or(String::new(), |h| {
            format!(
                ", {} full and {} resumed handshakes (p50 {}, p99 {})",
                thousands(h.full),
                thousands(h.resumed),
                latency(h.time_us.p50_us as f64),
                latency(h.time_us.p99_us as f64)
            )
        });
        let resumption = if tls.resumption {
            ""
        } else {
            ", resumption off"
        };
        let _ = writeln!(s, "TLS: {verified}{resumption}{handshakes}");
    }
}

/// Where the requests came from (a template, a scenario, a file).
fn requests_from(s: &mut String, r: &Report) {
    let i = &r.info;
    if let Some(set) = &i.request_set {
        let file = set
            .file
            .as_deref()
            .map_or(String::new(), |f| format!(" {f}"));
        let seed = set.seed.map_or(String::new(), |s| format!(" (--seed {s})"));
        if set.from == pelt_stats::SetFrom::Url {
            let _ = writeln!(s, "request: a template, rendered per request{seed}");
        } else if set.from == pelt_stats::SetFrom::Scenario {
            let _ = writeln!(
                s,
                "scenario:{file}, {} steps, each connection a virtual user{seed}",
                thousands(set.entries as u64),
            );
        } else {
            let _ = writeln!(
                s,
                "requests: {} from --{}{file}, {} order{seed}, {} encoded",
                thousands(set.entries as u64),
                set.from.name(),
                set.order,
                bytes(set.encoded_bytes as f64),
            );
        }
        if let Some(k) = &set.skipped {
            let _ = writeln!(s, "skipped: {}", skipped(k));
        }
    }
}

/// The open loop's rate (or a replay's), and the stages.
fn load_model(s: &mut String, r: &Report) {
    let i = &r.info;
    if let Some(r) = &i.replay {
        let _ = writeln!(
            s,
            "open loop: replay of {} recorded over {:.2}s, at {}x{} (mean {}/s), up to {} \
             connections{}",
            thousands(r.recorded),
            r.span_s,
            r.speed,
            if r.laps { ", looped" } else { "" },
            rate_plain(i.rate.unwrap_or_default()),
            i.max_connections.unwrap_or(i.connections),
            batch_window(i)
        );
    } else if let Some(rate) = i.rate {
        let peak = if i.stages.is_some() { "peak " } else { "" };
        let _ = writeln!(
            s,
            "open loop: {peak}{}/s, {} arrivals, up to {} connections{}",
            rate_plain(rate),
            i.arrival.unwrap_or(Arrival::Constant),
            i.max_connections.unwrap_or(i.connections),
            batch_window(i)
        );
    }
    if let Some(st) = &i.stages {
        let _ = writeln!(s, "stages: {}", stages(st));
    }
}

/// How long it ran, after which warm-up, and why it stopped.
fn ended(s: &mut String, r: &Report) {
    let i = &r.info;
    let limit = match (i.duration_limit_s, i.requests_limit) {
        (Some(d), Some(n)) => format!("limit {d}s or {} requests", thousands(n)),
        (Some(d), None) => format!("limit {d}s"),
        (None, Some(n)) => format!("limit {} requests", thousands(n)),
        (None, None) => String::new(),
    };
    let lost = r.fleet.as_ref().map_or(0, |f| f.lost.len());
    let stopped = if r.interrupted && lost > 0 {
        format!("stopped early: {} lost", plural(lost, "agent"))
    } else if r.interrupted {
        "interrupted (Ctrl-C or SIGTERM)".to_string()
    } else {
        format!("stopped by {}", r.stopped_by)
    };
    let warm = if i.warmup_s > 0.0 {
        format!(" after a {}s warm-up", i.warmup_s)
    } else {
        String::new()
    };
    let _ = writeln!(s, "ran {:.2}s{warm}, {stopped} ({limit})\n", r.duration_s);
}

/// The page's title, the run in one line, its cards and its charts (and opens the grid of
/// the tables).
pub fn html(b: &mut String, r: &Report) {
    let i = &r.info;
    let _ = writeln!(b, "<h1>pelt report</h1>");
    let when = started(r);
    let warm = if i.warmup_s > 0.0 {
        format!(" after a {}s warm-up (dashed in the charts)", i.warmup_s)
    } else {
        String::new()
    };
    let _ = writeln!(
        b,
        "<p class=\"sub\">{} {} &middot; {} &middot; {:.2}s measured{}</p>",
        esc(&i.method),
        esc(&i.target),
        esc(&when),
        r.duration_s,
        esc(&warm)
    );
    b.push_str("<div class=\"cards\">");
    let q = &r.requests;
    card(b, "requests/s", &rate(r.rps));
    card(b, "completed", &thousands(q.completed));
    card(b, "errors", &percent(q.errors, q.sent));
    let non_2xx: u64 = r
        .status
        .iter()
        .filter(|(code, _)| !code.starts_with('2'))
        .map(|(_, n)| n)
        .sum();
    card(b, "non-2xx", &percent(non_2xx, q.completed));
    card(b, "p50", &latency(r.latency_us.p50_us as f64));
    card(b, "p99", &latency(r.latency_us.p99_us as f64));
    card(b, "max", &latency(r.latency_us.max_us as f64));
    b.push_str("</div>\n");

    b.push_str("<div class=\"grid\">\n");
    chart_boxes(
        b,
        &[
            ("chart-rps", "Requests per second"),
            (
                "chart-latency",
                "Latency over time (p50, p90, p99, max per second)",
            ),
            ("chart-spectrum", "Latency by percentile"),
            ("chart-status", "Status classes and errors per second"),
        ],
    );
    for chart in crate::sections::CHARTS {
        chart(b, r);
    }
    b.push_str("</div>\n<div class=\"grid\">\n");
}

/// `--stages`: what the stages asked for beside what was reached, each second.
pub fn stages_chart(b: &mut String, r: &Report) {
    if let Some(st) = &r.info.stages {
        let title = if st.of == "rate" {
            "Stages: the arrival rate asked for and sent"
        } else {
            "Stages: the connections asked for and open"
        };
        chart_boxes(b, &[("chart-stages", title)]);
    }
}

/// The configuration table.
pub fn config(b: &mut String, r: &Report) {
    let i = &r.info;
    b.push_str("<h2>Configuration</h2><table>\n");
    kv(b, "target", &i.target);
    kv(b, "method", &i.method);
    let model = match (i.rate, &i.arrival) {
        (Some(rate), arrival) => format!(
            "open loop, {}/s, {} arrivals, up to {} connections{}",
            crate::output::rate(rate),
            arrival.unwrap_or(Arrival::Constant),
            i.max_connections.unwrap_or(i.connections),
            crate::output::batch_window(i)
        ),
        (None, _) => "closed loop".into(),
    };
    kv(b, "load model", &model);
    if let Some(st) = &i.stages {
        kv(b, "stages", &crate::output::stages(st));
    }
    kv(b, "connections", &i.connections.to_string());
    kv(b, "threads", &i.threads.to_string());
    let http = match i.streams {
        Some(n) => format!("HTTP/{}, {n} streams per connection", i.http),
        None if i.pipeline > 1 => format!("HTTP/1.1, pipelining {}", i.pipeline),
        None if i.keep_alive => "HTTP/1.1, keep-alive".into(),
        None => "HTTP/1.1, new connection per request".into(),
    };
    kv(b, "protocol", &http);
    if let Some(t) = &i.tls {
        let verify = if t.insecure {
            "certificate NOT verified"
        } else {
            "certificate verified"
        };
        let resume = if t.resumption {
            "resumption on"
        } else {
            "full handshakes"
        };
        kv(b, "TLS", &format!("{verify}, {resume}"));
    }
    kv(b, "I/O", i.io.name());
    let limit = match (i.duration_limit_s, i.requests_limit) {
        (Some(d), Some(n)) => format!("{d}s or {} requests", thousands(n)),
        (Some(d), None) => format!("{d}s"),
        (None, Some(n)) => format!("{} requests", thousands(n)),
        (None, None) => "none".into(),
    };
    kv(b, "limit", &limit);
    kv(b, "warm-up", &format!("{}s", i.warmup_s));
    kv(b, "timeout", &format!("{}s", i.timeout_s));
    kv(b, "stopped by", r.stopped_by.name());
    kv(b, "started", &started(r));
    if !r.merged_from.is_empty() {
        kv(b, "merged from", &r.merged_from.join(", "));
    }
    kv(b, "pelt", &r.pelt_version);
    b.push_str("</table>\n");
}

/// When the run started, as the report writes it.
fn started(r: &Report) -> String {
    if r.started_unix_ms > 0 {
        utc(r.started_unix_ms)
    } else {
        "start time unknown".into()
    }
}
