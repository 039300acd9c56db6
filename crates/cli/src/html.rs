//! `--html`: one self-contained HTML file per result (and per comparison) that opens offline.
//!
//! The tables are rendered here, in Rust, so they read without JavaScript; the charts are drawn
//! by Chart.js (MIT, vendored in `assets/`, inlined into every report) from a JSON block that
//! carries only what the charts need. Chart.js rather than an SVG plotting crate: it gives
//! tooltips, log axes and grouped bars in one well-kept file of 210 KB, and the browser does
//! the layout for any screen.

use crate::output::{latency, rate, thousands};
use pelt_load::study::CompareDoc;
use pelt_load::study::FindMaxDoc;
use pelt_stats::{Arrival, LatencyFrom, LatencySummary, Report};
use serde_json::{json, Value};
use std::fmt::Write;

const CHART_JS: &str = include_str!("../assets/chart.umd.min.js");

const STYLE: &str = include_str!("../assets/report.css");

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON for a `<script type="application/json">` block: `<` only occurs inside strings there,
/// and as `\u003c` it cannot close the script element whatever a URL or message contains.
fn script_json(v: &Value) -> String {
    v.to_string().replace('<', "\\u003c")
}

/// `2026-11-22 17:15:51 UTC` from milliseconds since the epoch.
pub fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The page around `body`: head, style, Chart.js, the data block and the drawing script.
pub fn page(title: &str, body: &str, data: &Value, script: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"pelt {ver}\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}\
         <footer>Made by pelt {ver}. Charts: Chart.js (MIT), inlined; this file needs no network.</footer>\n\
         </main>\n<script>{CHART_JS}</script>\n<script type=\"application/json\" id=\"pelt-data\">{data}</script>\n\
         <script>(function () {{{COMMON_JS}{script}}})();</script>\n</body>\n</html>\n",
        ver = env!("CARGO_PKG_VERSION"),
        title = esc(title),
        data = script_json(data),
    )
}

/// Shared by every page: read the data, format microseconds, the chart defaults.
const COMMON_JS: &str = include_str!("../assets/common.js");

/// The charts of one run.
const REPORT_JS: &str = include_str!("../assets/report.js");

/// A box per chart: its title and a canvas the page's script draws into.
fn chart_boxes(out: &mut String, charts: &[(&str, &str)]) {
    for (id, title) in charts {
        let _ = writeln!(
            out,
            "<section class=\"box\"><h2>{title}</h2><div class=\"chart\"><canvas id=\"{id}\" \
             role=\"img\" aria-label=\"{title}\"></canvas></div></section>"
        );
    }
}

fn card(out: &mut String, key: &str, value: &str) {
    let _ = write!(
        out,
        "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{}</div></div>",
        esc(key),
        esc(value)
    );
}

fn row(out: &mut String, cells: &[&str]) {
    out.push_str("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let _ = write!(
            out,
            "<td{}>{}</td>",
            if i > 0 { " class=\"n\"" } else { "" },
            esc(c)
        );
    }
    out.push_str("</tr>\n");
}

fn kv(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(key), esc(value));
}

fn latency_rows(out: &mut String, name: &str, l: &LatencySummary) {
    let us = |v: u64| latency(v as f64);
    row(
        out,
        &[
            name,
            &us(l.min_us),
            &latency(l.mean_us),
            &us(l.p50_us),
            &us(l.p90_us),
            &us(l.p99_us),
            &us(l.p99_9_us),
            &us(l.max_us),
        ],
    );
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0%".into()
    } else {
        format!("{:.2}%", part as f64 * 100.0 / whole as f64)
    }
}

/// A histogram's percentile spectrum as the charts draw it: `[x, value, percentile]`, x being
/// 1/(1-q) capped at the count (the max is "one in N").
fn spectrum_points(hist: &pelt_stats::LatencyHistogram) -> Vec<Value> {
    let count = hist.count().max(1) as f64;
    hist.spectrum()
        .into_iter()
        .map(|(p, v)| {
            let q = p / 100.0;
            let x = if q >= 1.0 {
                count
            } else {
                (1.0 / (1.0 - q)).min(count)
            };
            json!([x, v, (p * 1e4).round() / 1e4])
        })
        .collect()
}

/// The chart data of a result: its timeline and the percentile spectrum of its histogram
/// (and of its iterations', on a scenario run).
fn report_data(r: &Report) -> Value {
    let hist = r
        .histograms
        .as_ref()
        .map(|h| h.latency_us.clone())
        .unwrap_or_default();
    let spectrum = spectrum_points(&hist);
    let iterations = r
        .histograms
        .as_ref()
        .and_then(|h| h.iteration_us.as_ref())
        .filter(|h| r.scenario.is_some() && h.count() > 0)
        .map(spectrum_points);
    let timeline: Vec<Value> = r
        .timeline
        .iter()
        .map(|p| {
            json!({
                "second": p.second, "warmup": p.warmup, "rps": p.rps, "errors": p.errors,
                "status_classes": p.status_classes, "latency_us": p.latency_us,
                "sent_rate": p.sent as f64 / p.length_s.max(1e-9), "length_s": p.length_s,
                "connections": p.connections, "target": p.target,
                "resources": p.resources.as_ref().map(|r| json!({
                    "server": r.server.as_ref().map(|s| s.cpu()),
                    "pelt": r.pelt.cpu(),
                    "worker": r.pelt.workers.iter().copied().fold(None, |m: Option<f64>, w| Some(m.map_or(w, |m| m.max(w)))),
                    "host": r.host.cpu_busy(),
                    "softirq": r.host.cpu_softirq,
                    "rx": r.host.net_rx_bytes as f64 / p.length_s.max(1e-9),
                    "tx": r.host.net_tx_bytes as f64 / p.length_s.max(1e-9),
                })),
            })
        })
        .collect();
    // The busiest targets (the summary's rows), for the per-target latency chart.
    let targets: Vec<Value> = pelt_stats::busiest(&r.targets, TARGET_ROWS)
        .0
        .iter()
        .map(|t| {
            // A replayed recording's own latencies, drawn beside the replayed ones.
            let then = t.recorded_us.as_ref();
            json!({ "name": t.name, "p50": t.latency_us.p50_us, "p99": t.latency_us.p99_us,
                    "recorded_p50": then.map(|r| r.p50_us), "recorded_p99": then.map(|r| r.p99_us) })
        })
        .collect();
    let stages = r
        .info
        .stages
        .as_ref()
        .map(|s| json!({ "of": s.of, "start": s.start }));
    json!({ "timeline": timeline, "spectrum": spectrum, "targets": targets, "stages": stages,
            "iterations": iterations })
}

/// Targets shown in the HTML table and chart (the rest are summed in one row).
const TARGET_ROWS: usize = 20;

/// The per-target table (`--targets`): the busiest names, and the rest summed.
fn targets_section(b: &mut String, r: &Report) {
    if r.targets.is_empty() {
        return;
    }
    let (rows, rest) = pelt_stats::busiest(&r.targets, TARGET_ROWS);
    b.push_str("<div class=\"grid\">\n");
    let title = match r.targets.iter().any(|t| t.recorded_us.is_some()) {
        true => "Latency by target (p50, p99; recorded beside replayed)",
        false => "Latency by target (p50, p99)",
    };
    chart_boxes(b, &[("chart-targets", title)]);
    // A replayed recording with its own latencies: they go beside the replayed ones.
    let recorded = rows.iter().any(|t| t.recorded_us.is_some());
    b.push_str("<section class=\"box\"><h2>Targets</h2><table>\n<tr><th>target</th>");
    let mut heads = vec![
        "sent",
        "completed",
        "errors",
        "p50",
        "p99",
        "max",
        "TTFB p99",
    ];
    if recorded {
        heads.extend(["recorded p50", "recorded p99"]);
    }
    for h in &heads {
        let _ = write!(b, "<th class=\"n\">{h}</th>");
    }
    b.push_str("</tr>\n");
    let us = |v: u64| latency(v as f64);
    for t in rows {
        let l = &t.latency_us;
        let mut cells = vec![
            t.name.clone(),
            thousands(t.sent),
            thousands(t.completed),
            thousands(t.errors),
            us(l.p50_us),
            us(l.p99_us),
            us(l.max_us),
            t.ttfb_us.as_ref().map_or(String::new(), |s| us(s.p99_us)),
        ];
        if recorded {
            let then = t.recorded_us.as_ref();
            cells.push(then.map_or(String::new(), |r| us(r.p50_us)));
            cells.push(then.map_or(String::new(), |r| us(r.p99_us)));
        }
        row(b, &cells.iter().map(String::as_str).collect::<Vec<_>>());
    }
    if let Some(rest) = rest {
        let mut cells = vec![
            format!("({} more)", rest.names),
            thousands(rest.sent),
            thousands(rest.completed),
            thousands(rest.errors),
        ];
        cells.resize(heads.len() + 1, String::new());
        row(b, &cells.iter().map(String::as_str).collect::<Vec<_>>());
    }
    b.push_str("</table></section>\n</div>\n");
}

/// `--monitor`: the verdict, a table of the server's, pelt's and the host's figures, and their
/// charts: the server's CPU beside requests/s on one time axis, pelt's CPU, the network.
fn resources_section(b: &mut String, r: &Report) {
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

/// A scenario run: its iterations and their time (a chart by percentile), its checks and
/// captures (its steps are the targets above).
fn scenario_section(b: &mut String, r: &Report) {
    let Some(sc) = &r.scenario else {
        return;
    };
    b.push_str("<div class=\"grid\">\n");
    if sc.iterations.completed > 0 {
        chart_boxes(b, &[("chart-iterations", "Iteration time by percentile")]);
    }
    let _ = writeln!(
        b,
        "<section class=\"box\"><h2>Scenario: {}</h2><table>",
        esc(&sc.file)
    );
    let it = &sc.iterations;
    b.push_str("<tr><th>iterations</th><th class=\"n\">started</th><th class=\"n\">completed</th><th class=\"n\">failed</th><th class=\"n\">p50</th><th class=\"n\">p99</th><th class=\"n\">max</th></tr>\n");
    let d = &it.duration_us;
    let (p50, p99, max) = if it.completed > 0 {
        let us = |v: u64| latency(v as f64);
        (us(d.p50_us), us(d.p99_us), us(d.max_us))
    } else {
        Default::default()
    };
    row(
        b,
        &[
            "",
            &thousands(it.started),
            &thousands(it.completed),
            &thousands(it.failed),
            &p50,
            &p99,
            &max,
        ],
    );
    b.push_str("</table>\n");
    let tables = [
        (
            ["check", "passed", "failed"],
            sc.checks
                .iter()
                .map(|c| (&c.name, c.passed, c.failed))
                .collect::<Vec<_>>(),
        ),
        (
            ["capture", "found", "missing"],
            sc.captures
                .iter()
                .map(|c| (&c.name, c.found, c.missing))
                .collect(),
        ),
    ];
    for ([what, a, z], rows) in tables {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            b,
            "<table><tr><th>{what}</th><th class=\"n\">{a}</th><th class=\"n\">{z}</th></tr>"
        );
        for (name, x, y) in rows {
            row(b, &[name, &thousands(x), &thousands(y)]);
        }
        b.push_str("</table>\n");
    }
    b.push_str("</section>\n</div>\n");
}

/// A fleet run's agents: each one's part, start and state.
fn fleet_section(b: &mut String, r: &Report) {
    let Some(f) = &r.fleet else {
        return;
    };
    let spread = f
        .start_spread_ms
        .map_or(String::new(), |s| format!(", started within {s:.1} ms"));
    let _ = write!(
        b,
        "<section class=\"box\"><h2>Agents ({}{spread})</h2><table>\n<tr><th>agent (host, address)</th><th class=\"n\">threads</th><th class=\"n\">completed</th><th class=\"n\">errors</th><th class=\"n\">req/s</th><th class=\"n\">p99</th><th class=\"n\">start</th><th class=\"n\">clock</th><th>state</th></tr>\n",
        f.agents.len()
    );
    for a in &f.agents {
        let state = match &a.problem {
            Some(p) => format!("lost: {p}"),
            None => "finished".into(),
        };
        row(
            b,
            &[
                &format!("{}: {} ({})", a.rank, a.host, a.address),
                &a.threads.to_string(),
                &thousands(a.requests.completed),
                &thousands(a.requests.errors),
                &rate(a.rps),
                &a.latency_us
                    .map_or(String::new(), |l| latency(l.p99_us as f64)),
                &a.start_skew_ms
                    .map_or(String::new(), |k| format!("{k:+.1} ms")),
                &format!("{:+.2} ms", a.clock_offset_ms),
                &state,
            ],
        );
    }
    b.push_str("</table></section>\n");
}

/// The whole HTML report of one result.
pub fn report(r: &Report) -> String {
    let i = &r.info;
    let mut b = String::new();
    let _ = writeln!(b, "<h1>pelt report</h1>");
    let when = if r.started_unix_ms > 0 {
        utc(r.started_unix_ms)
    } else {
        "start time unknown".into()
    };
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
    card(&mut b, "requests/s", &rate(r.rps));
    card(&mut b, "completed", &thousands(q.completed));
    card(&mut b, "errors", &percent(q.errors, q.sent));
    let non_2xx: u64 = r
        .status
        .iter()
        .filter(|(code, _)| !code.starts_with('2'))
        .map(|(_, n)| n)
        .sum();
    card(&mut b, "non-2xx", &percent(non_2xx, q.completed));
    card(&mut b, "p50", &latency(r.latency_us.p50_us as f64));
    card(&mut b, "p99", &latency(r.latency_us.p99_us as f64));
    card(&mut b, "max", &latency(r.latency_us.max_us as f64));
    b.push_str("</div>\n");

    b.push_str("<div class=\"grid\">\n");
    chart_boxes(
        &mut b,
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
    if let Some(st) = &i.stages {
        let title = if st.of == "rate" {
            "Stages: the arrival rate asked for and sent"
        } else {
            "Stages: the connections asked for and open"
        };
        chart_boxes(&mut b, &[("chart-stages", title)]);
    }
    b.push_str("</div>\n<div class=\"grid\">\n");

    // Latency table.
    b.push_str("<section class=\"box\"><h2>Latency</h2><table>\n<tr><th></th><th class=\"n\">min</th><th class=\"n\">mean</th><th class=\"n\">p50</th><th class=\"n\">p90</th><th class=\"n\">p99</th><th class=\"n\">p99.9</th><th class=\"n\">max</th></tr>\n");
    latency_rows(&mut b, "latency", &r.latency_us);
    if let Some(t) = &r.ttfb_us {
        latency_rows(&mut b, "time to first byte", t);
    }
    if let Some(o) = &r.open_loop {
        latency_rows(&mut b, "service time", &o.service_time_us);
        latency_rows(&mut b, "lag (pelt)", &o.lag_us);
    }
    if let Some(h) = &r.tls_handshakes {
        latency_rows(&mut b, "TLS handshake", &h.time_us);
    }
    if let Some(st) = &r.event_streams {
        latency_rows(&mut b, "time to first event (TTFT)", &st.ttft_us);
        latency_rows(&mut b, "gap between events", &st.gap_us);
        latency_rows(&mut b, "time per event, per stream", &st.time_per_event_us);
        latency_rows(&mut b, "stream duration", &st.duration_us);
    }
    if let Some(w) = r.websocket.as_ref().filter(|w| w.upgrades > 0) {
        latency_rows(&mut b, "WebSocket upgrade", &w.upgrade_us);
    }
    let from = if r.latency_from == LatencyFrom::Due {
        "Latency counts from when each request was due (open loop, no coordinated omission)."
    } else {
        "Latency counts from each request's first byte written (closed loop)."
    };
    let _ = writeln!(b, "</table><p class=\"note\">{}</p>", esc(from));

    // Requests, status codes, errors.
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
        row(&mut b, &[k, &thousands(v)]);
    }
    for (code, n) in &r.status {
        row(&mut b, &[&format!("status {code}"), &thousands(*n)]);
    }
    b.push_str("</table>\n");
    if let Some(st) = &r.event_streams {
        b.push_str("<h2>Event streams</h2><table>\n");
        for (k, v) in [
            ("streams ended", thousands(st.streams)),
            ("events", thousands(st.events)),
            ("events per second", rate(st.events_per_s)),
            ("cut at --stream-limit", thousands(st.cut)),
            ("ended at --stream-end", thousands(st.ended_by_marker)),
            ("without events", thousands(st.without_events)),
            (
                "events per stream (p50, max)",
                format!(
                    "{}, {}",
                    thousands(st.events_per_stream.p50_us),
                    thousands(st.events_per_stream.max_us)
                ),
            ),
            (
                "a stream's events/s (p50, slowest 1 %)",
                format!(
                    "{}, {}",
                    rate(st.stream_rate_at(0.5)),
                    rate(st.stream_rate_at(0.01))
                ),
            ),
        ] {
            row(&mut b, &[k, &v]);
        }
        b.push_str("</table>\n");
    }
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
            row(&mut b, &[k, &thousands(v)]);
        }
        for (code, n) in &w.close_codes {
            row(
                &mut b,
                &[&format!("the server's close {code}"), &thousands(*n)],
            );
        }
        b.push_str("</table>\n");
    }
    if !r.errors.is_empty() {
        b.push_str("<h2>Errors</h2><table>\n<tr><th>kind</th><th class=\"n\">count</th><th>first message</th></tr>\n");
        for (k, n) in &r.errors {
            let _ = writeln!(
                b,
                "<tr><td>{}</td><td class=\"n\">{}</td><td>{}{}</td></tr>",
                esc(k),
                thousands(*n),
                esc(r.error_examples.get(k).map_or("", String::as_str)),
                r.error_hints
                    .get(k)
                    .map_or(String::new(), |h| format!("<br><i>hint: {}</i>", esc(h)))
            );
        }
        b.push_str("</table>\n");
    }
    b.push_str("</section>\n");

    // Configuration.
    b.push_str("<section class=\"box\"><h2>Configuration</h2><table>\n");
    kv(&mut b, "target", &i.target);
    kv(&mut b, "method", &i.method);
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
    kv(&mut b, "load model", &model);
    if let Some(st) = &i.stages {
        kv(&mut b, "stages", &crate::output::stages(st));
    }
    kv(&mut b, "connections", &i.connections.to_string());
    kv(&mut b, "threads", &i.threads.to_string());
    let http = match i.streams {
        Some(n) => format!("HTTP/2, {n} streams per connection"),
        None if i.pipeline > 1 => format!("HTTP/1.1, pipelining {}", i.pipeline),
        None if i.keep_alive => "HTTP/1.1, keep-alive".into(),
        None => "HTTP/1.1, new connection per request".into(),
    };
    kv(&mut b, "protocol", &http);
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
        kv(&mut b, "TLS", &format!("{verify}, {resume}"));
    }
    kv(&mut b, "I/O", i.io.name());
    let limit = match (i.duration_limit_s, i.requests_limit) {
        (Some(d), Some(n)) => format!("{d}s or {} requests", thousands(n)),
        (Some(d), None) => format!("{d}s"),
        (None, Some(n)) => format!("{} requests", thousands(n)),
        (None, None) => "none".into(),
    };
    kv(&mut b, "limit", &limit);
    kv(&mut b, "warm-up", &format!("{}s", i.warmup_s));
    kv(&mut b, "timeout", &format!("{}s", i.timeout_s));
    kv(&mut b, "stopped by", r.stopped_by.name());
    kv(&mut b, "started", &when);
    if !r.merged_from.is_empty() {
        kv(&mut b, "merged from", &r.merged_from.join(", "));
    }
    kv(&mut b, "pelt", &r.pelt_version);
    b.push_str("</table>\n");
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
    for n in &r.notes {
        let _ = writeln!(b, "<p class=\"note\">Note: {}</p>", esc(n));
    }
    let _ = writeln!(
        b,
        "<details><summary>Text summary</summary><pre>{}</pre></details>",
        esc(&crate::output::summary(r))
    );
    b.push_str("</section>\n</div>\n");
    targets_section(&mut b, r);
    scenario_section(&mut b, r);
    resources_section(&mut b, r);
    fleet_section(&mut b, r);
    page(
        &format!("pelt: {}", i.target),
        &b,
        &report_data(r),
        REPORT_JS,
    )
}

/// The charts of a comparison: one grouped bar chart per figure, a group per setting and a
/// bar per target (the seeds' "krps per tool per scenario" charts).
const COMPARE_JS: &str = include_str!("../assets/compare.js");

/// The HTML page of `pelt compare`: the table and grouped bar charts.
pub fn compare(doc: &CompareDoc, table_text: &str) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>pelt compare</h1>");
    let run = &doc.run;
    let limit = match (run.duration_s, run.requests) {
        (Some(d), _) => format!("{d}s per run"),
        (None, Some(n)) => format!("{} requests per run", thousands(n)),
        _ => String::new(),
    };
    let _ = writeln!(
        b,
        "<p class=\"sub\">{} &middot; {} &middot; {} loop &middot; {} run(s), {} repeat(s), interleaved</p>",
        esc(&run.method),
        esc(&limit),
        run.load_model,
        doc.runs,
        doc.repeat
    );
    b.push_str("<section class=\"box\" style=\"margin-bottom:14px\"><h2>Results</h2><table>\n<tr><th>target</th>");
    for k in doc.keys() {
        let _ = write!(b, "<th>{}</th>", esc(k));
    }
    b.push_str("<th class=\"n\">krps</th><th class=\"n\">p50</th><th class=\"n\">p99</th><th class=\"n\">errors</th><th class=\"n\">non-2xx</th><th class=\"n\">krps range</th><th>url</th></tr>\n");
    for row in &doc.rows {
        let m = &row.median;
        let _ = write!(b, "<tr><td>{}</td>", esc(&row.target));
        for k in doc.keys() {
            let _ = write!(b, "<td>{}</td>", esc(row.settings.get(k)));
        }
        let _ = writeln!(
            b,
            "<td class=\"n\">{:.1}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2}%</td><td class=\"n\">{:.2}%</td><td class=\"n\">{:.1}-{:.1}</td><td>{}</td></tr>",
            m.rps / 1000.0,
            latency(m.p50_us),
            latency(m.p99_us),
            m.errors_pct,
            m.non_2xx_pct,
            m.rps_min / 1000.0,
            m.rps_max / 1000.0,
            esc(&row.url)
        );
    }
    let _ = writeln!(
        b,
        "</table><p class=\"note\">Medians of the repeats. errors: failed requests, per cent of \
         those sent; non-2xx: complete responses outside 2xx.</p><details><summary>Markdown</summary>\
         <pre>{}</pre></details></section>",
        esc(table_text)
    );
    b.push_str("<div class=\"grid\">\n");
    chart_boxes(
        &mut b,
        &[
            ("chart-krps", "Requests per second (thousands)"),
            ("chart-p50", "p50 latency"),
            ("chart-p99", "p99 latency"),
        ],
    );
    b.push_str("</div>\n");
    let keys: Vec<&str> = doc.keys().collect();
    let data = json!({ "rows": doc.rows, "keys": keys });
    page("pelt compare", &b, &data, COMPARE_JS)
}

/// The charts of a max-rate search: p99 by rate asked (passed and failed steps apart), and
/// the rate done against the rate asked.
const FIND_MAX_JS: &str = include_str!("../assets/find_max.js");

/// The HTML page of `pelt find-max`: the answer, the steps and two charts.
pub fn find_max(doc: &FindMaxDoc, answer: &str) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>pelt find-max</h1>");
    let _ = writeln!(
        b,
        "<p class=\"sub\">{} {} &middot; objectives {} &middot; {:?}s steps after a {:?}s warm-up, \
         {} connections at most</p>",
        esc(&doc.method),
        esc(&doc.target),
        esc(&doc.slo.join(" and ")),
        doc.step_duration_s,
        doc.warmup_s,
        doc.max_connections
    );
    b.push_str("<div class=\"cards\">");
    match &doc.answer {
        Some(a) => {
            card(
                &mut b,
                "max rate",
                &format!("{}/s", thousands(a.rate.round() as u64)),
            );
            card(&mut b, "p50 there", &latency(a.p50_us as f64));
            card(&mut b, "p99 there", &latency(a.p99_us as f64));
        }
        None => card(&mut b, "max rate", "none met the objectives"),
    }
    card(&mut b, "steps", &doc.steps.len().to_string());
    b.push_str("</div>\n<div class=\"grid\">\n");
    chart_boxes(
        &mut b,
        &[
            ("chart-p99", "p99 latency by rate"),
            ("chart-done", "Rate done by rate asked"),
        ],
    );
    b.push_str("</div>\n<section class=\"box\"><h2>Steps</h2><table>\n<tr><th class=\"n\">step</th><th>phase</th><th class=\"n\">rate/s</th><th class=\"n\">done/s</th><th class=\"n\">p50</th><th class=\"n\">p99</th><th class=\"n\">errors</th><th>result</th>");
    let monitored = doc.steps.iter().any(|st| st.server.is_some());
    b.push_str(if monitored {
        "<th>bottleneck</th></tr>\n"
    } else {
        "</tr>\n"
    });
    for st in &doc.steps {
        let mut cells = st.cells();
        if monitored {
            cells.push(st.bottleneck().unwrap_or_else(|| "-".into()));
        }
        b.push_str("<tr>");
        for (i, c) in cells.iter().enumerate() {
            let class = match i {
                1 => "",
                7 if c.starts_with("FAIL") => " class=\"failed\"",
                7 if c == "ok" => " class=\"passed\"",
                7 | 8 => "",
                _ => " class=\"n\"",
            };
            let _ = write!(b, "<td{class}>{}</td>", esc(c));
        }
        b.push_str("</tr>\n");
    }
    let _ = writeln!(
        b,
        "</table><p class=\"note\">{}</p><p class=\"note\">A step passes when every objective \
         holds and at least 95% of the requests asked for completed. Latency counts from each \
         request's due time.</p></section>",
        esc(answer)
    );
    let data = json!({ "steps": doc.steps, "answer": doc.answer });
    page("pelt find-max", &b, &data, FIND_MAX_JS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_script_endings() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let v = json!({"target": "http://h/</script><script>alert(1)</script>"});
        let s = script_json(&v);
        assert!(!s.contains("</script"), "{s}");
        assert_eq!(serde_json::from_str::<Value>(&s).unwrap(), v);
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_795_367_751_123), "2026-11-22 17:15:51 UTC");
    }
}
