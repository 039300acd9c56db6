//! Renderers: the human summary, and the JSON result written atomically.

use anyhow::{Context, Result};
use pelt_engine::Config;
use pelt_stats::{Arrival, ErrorKind, LatencyFrom, LatencySummary, Report, RunInfo, StagesInfo};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

pub use pelt_load::fmt::{bytes, latency, rate, thousands};

/// The line on stderr that says what is about to run: the summary's first line (the same
/// words, so one run has one description) and how long it will run.
pub fn start_line(info: &RunInfo, c: &Config) -> String {
    start_line_of(info, c, None)
}

/// The start line of a fleet's coordinator: the agents send, their threads are not known yet.
pub fn fleet_start_line(info: &RunInfo, c: &Config, agents: u32) -> String {
    start_line_of(info, c, Some(agents as usize))
}

fn start_line_of(info: &RunInfo, c: &Config, agents: Option<usize>) -> String {
    let mut line = title(info, agents.map(|n| (n, false)));
    match (c.duration, c.requests) {
        (Some(d), Some(n)) => line.push_str(&format!(
            ", for {d:?} or {} requests, whichever comes first",
            thousands(n)
        )),
        (Some(d), None) => line.push_str(&format!(", for {d:?}")),
        (None, Some(n)) => line.push_str(&format!(", {} requests", thousands(n))),
        (None, None) => {}
    }
    match (&info.stages, info.rate) {
        (Some(st), Some(_)) => line.push_str(&format!(", open loop in stages: {}", stages(st))),
        (Some(st), None) => line.push_str(&format!(", in stages: {}", stages(st))),
        (None, Some(rate)) => line.push_str(&format!(", open loop at {}/s", rate_plain(rate))),
        (None, None) => {}
    }
    if !c.warmup.is_zero() {
        line.push_str(&format!(", after a {:?} warm-up", c.warmup));
    }
    line
}

/// `, batch window 100us` for an open loop that batches, else nothing.
pub fn batch_window(i: &RunInfo) -> String {
    match i.batch_window_us {
        Some(0) | None => String::new(),
        Some(us) => format!(", batch window {}", latency(us as f64)),
    }
}

/// `N thing` or `N things`.
fn plural(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// What ran: `GET URL with 32 connections on 1 thread (io_uring, keep-alive)`.
/// What ran how. `fleet`: the agents, and whether their threads are known (the result's).
fn title(i: &RunInfo, fleet: Option<(usize, bool)>) -> String {
    let how = if let Some(n) = i.streams {
        format!("HTTP/2, {} per connection", plural(n, "stream"))
    } else if i.pipeline > 1 {
        format!("keep-alive, pipelining {}", i.pipeline)
    } else if i.keep_alive {
        "keep-alive".to_string()
    } else {
        "new connection per request".to_string()
    };
    let via = i
        .unix_socket
        .as_ref()
        .map_or(String::new(), |p| format!(" via unix:{p}"));
    let on = match fleet {
        None => format!("on {} ({}, {how})", plural(i.threads, "thread"), i.io),
        Some((n, false)) => format!("sent by {} ({how})", plural(n, "agent")),
        Some((n, true)) => format!(
            "on {} of {} ({}, {how})",
            plural(i.threads, "thread"),
            plural(n, "agent"),
            i.io
        ),
    };
    format!(
        "{} {}{via} with {} {on}",
        i.method,
        i.target,
        plural(i.connections, "connection"),
    )
}

/// A fleet run's agents, one line each: what each sent, and how it started.
fn fleet_table(s: &mut String, r: &Report) {
    let Some(f) = &r.fleet else {
        return;
    };
    let _ = writeln!(s);
    for (n, a) in f.agents.iter().enumerate() {
        let label = if n == 0 { "  Agents" } else { "" };
        let figures = match &a.latency_us {
            Some(l) => format!(
                "{:>12} completed  {:>10}/s  p99 {:<8}",
                thousands(a.requests.completed),
                rate(a.rps),
                latency(l.p99_us as f64)
            ),
            None => format!(
                "{:>12} completed before it was LOST: {}",
                thousands(a.requests.completed),
                a.problem.as_deref().unwrap_or("")
            ),
        };
        let start = a
            .start_skew_ms
            .map_or(String::new(), |k| format!("  start {k:+.1}ms"));
        let _ = writeln!(
            s,
            "{label:<15}{:<3}{:<22}{figures}{start}",
            a.rank,
            format!("{} ({}t)", a.host, a.threads)
        );
    }
}

/// A rate without forced decimals: `20,000`, `0.5`.
/// `--stages` in words: `rate 0/s, to 1,000/s over 30s, to 0/s over 30s`.
pub fn stages(s: &StagesInfo) -> String {
    let rate = s.of == "rate";
    let value = |v: f64| {
        if rate {
            format!("{}/s", rate_plain(v))
        } else {
            thousands(v as u64)
        }
    };
    let mut text = format!("{} {}", s.of, value(s.start));
    for st in &s.stages {
        let over = if st.duration_s == 0.0 {
            "at once".to_string()
        } else {
            format!("over {}", seconds(st.duration_s))
        };
        let _ = write!(text, ", to {} {over}", value(st.target));
    }
    text
}

/// A stage's length as typed: `30s`, `2m`, `1m30s`, `0.5s`.
fn seconds(s: f64) -> String {
    if s.fract() != 0.0 {
        return format!("{s}s");
    }
    let s = s as u64;
    match (s / 60, s % 60) {
        (0, r) => format!("{r}s"),
        (m, 0) => format!("{m}m"),
        (m, r) => format!("{m}m{r}s"),
    }
}

fn rate_plain(r: f64) -> String {
    if r.fract() == 0.0 {
        thousands(r as u64)
    } else {
        format!("{r}")
    }
}

/// One row of latency figures, aligned under the header of [`summary`].
fn latency_row(s: &mut String, label: &str, l: &LatencySummary) {
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

/// Names shown one per row in the summary; the rest are folded into one.
const TARGET_ROWS: usize = 20;

/// Per-target figures (`--targets`): the busiest names, one row each.
fn targets_table(s: &mut String, r: &Report) {
    if r.targets.is_empty() {
        return;
    }
    let (rows, rest) = pelt_stats::busiest(&r.targets, TARGET_ROWS);
    let width = rows
        .iter()
        .map(|t| t.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 40);
    // A replayed recording with its own latencies: they go beside the replayed ones.
    let recorded = rows.iter().any(|t| t.recorded_us.is_some());
    let mut header = format!(
        "  {:<width$}  {:>10} {:>10} {:>8}  {:<8} {:<8} {:<8} {:<8}",
        "Target", "sent", "completed", "errors", "p50", "p99", "max", "TTFB p99"
    );
    if recorded {
        header.push_str(" recorded p50/p99");
    }
    let _ = writeln!(s, "\n{}", header.trim_end());
    let row = |s: &mut String,
               name: &str,
               counts: [u64; 3],
               l: Option<&LatencySummary>,
               ttfb: Option<&LatencySummary>,
               then: Option<&LatencySummary>| {
        let name: String = name.chars().take(width).collect();
        let lat = l.map_or_else(
            || format!("{:<8} {:<8} {:<8}", "-", "-", "-"),
            |l| {
                format!(
                    "{:<8} {:<8} {:<8}",
                    latency(l.p50_us as f64),
                    latency(l.p99_us as f64),
                    latency(l.max_us as f64)
                )
            },
        );
        let ttfb = ttfb.map_or_else(|| "-".to_string(), |t| latency(t.p99_us as f64));
        let mut lat = format!("{lat} {ttfb:<8}");
        if let Some(r) = then {
            let _ = write!(
                lat,
                " {} / {}",
                latency(r.p50_us as f64),
                latency(r.p99_us as f64)
            );
        }
        let lat = lat.trim_end();
        let [sent, done, errors] = counts.map(thousands);
        let _ = writeln!(
            s,
            "  {name:<width$}  {sent:>10} {done:>10} {errors:>8}  {lat}"
        );
    };
    for t in &rows {
        let counts = [t.sent, t.completed, t.errors];
        let ttfb = t.ttfb_us.as_ref();
        row(
            s,
            &t.name,
            counts,
            Some(&t.latency_us),
            ttfb,
            t.recorded_us.as_ref(),
        );
    }
    if let Some(rest) = rest {
        let label = format!("({} more)", rest.names);
        row(
            s,
            &label,
            [rest.sent, rest.completed, rest.errors],
            None,
            None,
            None,
        );
    }
}

/// A scenario run: its iterations and their durations, each check passed and failed, each
/// capture found and missing.
fn scenario_table(s: &mut String, r: &Report) {
    let Some(sc) = &r.scenario else {
        return;
    };
    let it = &sc.iterations;
    let _ = writeln!(
        s,
        "\n  Iterations     {} started, {} completed, {} failed",
        thousands(it.started),
        thousands(it.completed),
        thousands(it.failed)
    );
    if it.completed > 0 {
        let d = &it.duration_us;
        let from = match r.latency_from {
            pelt_stats::LatencyFrom::Due => "from the arrival",
            pelt_stats::LatencyFrom::Send => "from the first request",
        };
        let _ = writeln!(
            s,
            "  Iteration time p50 {}, p90 {}, p99 {}, max {} (completed, {from})",
            latency(d.p50_us as f64),
            latency(d.p90_us as f64),
            latency(d.p99_us as f64),
            latency(d.max_us as f64),
        );
    }
    let checks = sc.checks.iter().map(|c| (&c.name, c.passed, c.failed));
    pairs_table(
        s,
        ["Check", "passed", "failed"],
        &checks.collect::<Vec<_>>(),
    );
    let captures = sc.captures.iter().map(|c| (&c.name, c.found, c.missing));
    pairs_table(
        s,
        ["Capture", "found", "missing"],
        &captures.collect::<Vec<_>>(),
    );
}

/// Streamed responses (server-sent events): what LLM users read, events as tokens: time to
/// first token, the gaps between tokens, time per token per stream, tokens/s.
fn streams_table(s: &mut String, r: &Report) {
    let Some(st) = &r.event_streams else {
        return;
    };
    let _ = writeln!(
        s,
        "\n  Streams      {:>12} ended ({} cut at --stream-limit, {} at --stream-end, {} \
         without events)",
        thousands(st.streams),
        thousands(st.cut),
        thousands(st.ended_by_marker),
        thousands(st.without_events),
    );
    let e = &st.events_per_stream;
    let _ = writeln!(
        s,
        "  Events       {:>12} received  {:>12}/s   per stream: mean {}, p50 {}, max {}",
        thousands(st.events),
        rate(st.events_per_s),
        trim_number((e.mean_us * 10.0).round() / 10.0),
        thousands(e.p50_us),
        thousands(e.max_us),
    );
    let _ = writeln!(
        s,
        "\n               min      mean     stdev    p50      p90      p99      p99.9    max"
    );
    latency_row(s, "First event", &st.ttft_us);
    latency_row(s, "Gap", &st.gap_us);
    latency_row(s, "Per event", &st.time_per_event_us);
    latency_row(s, "Stream", &st.duration_us);
    let (p50, slow) = (st.stream_rate_at(0.5), st.stream_rate_at(0.01));
    let _ = writeln!(
        s,
        "               first event: {} to the first event (TTFT); gap: between events \
         (inter-token\n               latency); per event: a stream's time per event after its \
         first (TPOT); stream:\n               {} to its end. Per stream {} events/s at p50, {} \
         at the slowest 1 %.",
        latency_start(r),
        latency_start(r),
        rate(p50),
        rate(slow),
    );
}

/// The latency rows: latency and TTFB, and in open loop service time and lag.
fn latency_table(s: &mut String, r: &Report) {
    let _ = writeln!(
        s,
        "\n               min      mean     stdev    p50      p90      p99      p99.9    max"
    );
    latency_row(s, "Latency", &r.latency_us);
    if let Some(t) = &r.ttfb_us {
        latency_row(s, "TTFB", t);
    }
    if let Some(o) = &r.open_loop {
        latency_row(s, "Service time", &o.service_time_us);
        latency_row(s, "Lag", &o.lag_us);
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

/// A WebSocket run: upgrades, sockets held and dropped, messages received (replies and
/// pushes), pings and pongs, the server's close codes, and the upgrade time.
fn websocket_table(s: &mut String, r: &Report) {
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
        latency_row(s, "Upgrade", &w.upgrade_us);
        let _ = writeln!(
            s,
            "               (from the upgrade request written to the 101 read)"
        );
    }
}

/// Where latency starts, in words.
fn latency_start(r: &Report) -> &'static str {
    match r.latency_from {
        pelt_stats::LatencyFrom::Due => "due time",
        pelt_stats::LatencyFrom::Send => "first byte written",
    }
}

/// Rows of a name and two counts under `header`; nothing without rows.
fn pairs_table(s: &mut String, header: [&str; 3], rows: &[(&String, u64, u64)]) {
    if rows.is_empty() {
        return;
    }
    let width = rows
        .iter()
        .map(|(name, _, _)| name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 40);
    let [what, a, b] = header;
    let _ = writeln!(s, "  {what:<width$}  {a:>10} {b:>10}");
    for (name, x, y) in rows {
        let name: String = name.chars().take(width).collect();
        let (x, y) = (thousands(*x), thousands(*y));
        let _ = writeln!(s, "  {name:<width$}  {x:>10} {y:>10}");
    }
}

/// The human summary printed on stdout.
pub fn summary(r: &Report) -> String {
    let mut s = String::new();
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
    let limit = match (i.duration_limit_s, i.requests_limit) {
        (Some(d), Some(n)) => format!("limit {d}s or {} requests", thousands(n)),
        (Some(d), None) => format!("limit {d}s"),
        (None, Some(n)) => format!("limit {} requests", thousands(n)),
        (None, None) => String::new(),
    };
    if let Some(set) = &i.request_set {
        let file = set
            .file
            .as_deref()
            .map_or(String::new(), |f| format!(" {f}"));
        let seed = set.seed.map_or(String::new(), |s| format!(" (--seed {s})"));
        if set.from == "url" {
            let _ = writeln!(s, "request: a template, rendered per request{seed}");
        } else if set.from == "scenario" {
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
                set.from,
                set.order,
                bytes(set.encoded_bytes as f64),
            );
        }
        if let Some(k) = &set.skipped {
            let _ = writeln!(s, "skipped: {}", skipped(k));
        }
    }
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
    // Sockets held without a message: no latency to show but the upgrades' (below).
    let messages = r.websocket.is_none() || q.sent > 0;
    if messages {
        latency_table(&mut s, r);
    }
    streams_table(&mut s, r);
    websocket_table(&mut s, r);
    if !r.status.is_empty() {
        let _ = writeln!(s);
        for (n, (code, count)) in r.status.iter().enumerate() {
            let label = if n == 0 { "  Status" } else { "" };
            let _ = writeln!(s, "{label:<15}{code}  {:>12}", thousands(*count));
        }
    }
    targets_table(&mut s, r);
    scenario_table(&mut s, r);
    fleet_table(&mut s, r);
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
            if let Some(hint) = kind.hint() {
                let _ = writeln!(s, "{:<15}{:<18} {:>10}  hint: {hint}", "", "", "");
            }
        }
    }
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
    resources_table(&mut s, r);
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
    if !r.thresholds.is_empty() {
        let _ = writeln!(s);
        for (n, t) in r.thresholds.iter().enumerate() {
            let label = if n == 0 { "  Thresholds" } else { "" };
            let actual = match t.actual {
                Some(v) if t.unit == "count" => thousands(v.round() as u64),
                Some(v) => format!("{} {}", trim_number(v), t.unit),
                None => "no complete response".to_string(),
            };
            let verdict = if t.passed { "ok    " } else { "FAILED" };
            let _ = writeln!(s, "{label:<15}{verdict}  {:<24} actual {actual}", t.expect);
        }
    }
    for note in &r.notes {
        let _ = writeln!(s, "\n  Note: {note}");
    }
    s
}

/// `--monitor`: the server's, pelt's and the host's resources, and what limited the run.
fn resources_table(s: &mut String, r: &Report) {
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

/// A measured value with at most 3 decimals and no trailing zeros: `12.5`, `0.013`, `3`.
fn trim_number(v: f64) -> String {
    let t = format!("{v:.3}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    t.to_string()
}

/// The timeline CSV's `--monitor` columns (CPU in cores, sizes and network in bytes).
const RESOURCE_COLUMNS: [&str; 12] = [
    "server_cpu",
    "server_rss",
    "server_threads",
    "server_fds",
    "pelt_cpu",
    "host_cpu_busy",
    "host_softirq",
    "net_rx_bytes",
    "net_tx_bytes",
    "tcp_retransmits",
    "listen_overflows",
    "listen_drops",
];

/// `--csv`: the timeline, one row per second, with a header row.
pub fn timeline_csv(points: &[pelt_stats::TimelinePoint]) -> String {
    const CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "other"];
    let mut s = String::from(
        "second,length_s,warmup,sent,completed,errors,rps,p50_us,p90_us,p99_us,max_us",
    );
    for c in CLASSES {
        let _ = write!(s, ",{c}");
    }
    // After the classes, so the earlier columns keep their places; target is empty without
    // --stages, the resources' columns without --monitor, time to first byte in results from
    // before pelt measured it.
    s.push_str(",connections,target,");
    s.push_str(RESOURCE_COLUMNS.join(",").as_str());
    // Then the event streams' (empty in a second without any), then WebSocket's (empty but
    // in a ws:// run).
    s.push_str(
        ",ttfb_p50_us,ttfb_p99_us,stream_events,ttft_p50_us,ttft_p99_us,gap_p50_us,gap_p99_us",
    );
    s.push_str(&format!(",{}\n", WS_COLUMNS.join(",")));
    for p in points {
        let l = &p.latency_us;
        let _ = write!(
            s,
            "{},{:.3},{},{},{},{},{:.1},{},{},{},{}",
            p.second,
            p.length_s,
            p.warmup,
            p.sent,
            p.completed,
            p.errors,
            p.rps,
            l.p50,
            l.p90,
            l.p99,
            l.max
        );
        for c in CLASSES {
            let _ = write!(s, ",{}", p.status_classes.get(c).copied().unwrap_or(0));
        }
        let target = p.target.map_or(String::new(), trim_number);
        let _ = write!(s, ",{},{target}", p.connections);
        match &p.resources {
            Some(r) => {
                let server = r.server.as_ref();
                let cpu = |c: Option<f64>| c.map_or(String::new(), |c| format!("{c:.3}"));
                let n = |c: Option<u64>| c.map_or(String::new(), |c| c.to_string());
                let h = &r.host;
                let _ = write!(
                    s,
                    ",{},{},{},{},{:.3},{:.3},{:.3},{},{},{},{},{}",
                    cpu(server.map(|p| p.cpu())),
                    n(server.map(|p| p.rss_bytes)),
                    n(server.map(|p| p.threads)),
                    n(server.map(|p| p.fds)),
                    r.pelt.cpu(),
                    h.cpu_busy(),
                    h.cpu_softirq,
                    h.net_rx_bytes,
                    h.net_tx_bytes,
                    h.tcp_retransmits,
                    h.listen_overflows,
                    h.listen_drops,
                );
            }
            None => s.push_str(&",".repeat(RESOURCE_COLUMNS.len())),
        }
        match &p.ttfb_us {
            Some(t) => {
                let _ = write!(s, ",{},{}", t.p50, t.p99);
            }
            None => s.push_str(",,"),
        }
        match &p.event_streams {
            Some(e) => {
                let (t, g) = (&e.ttft_us, &e.gap_us);
                let _ = write!(s, ",{},{},{},{},{}", e.events, t.p50, t.p99, g.p50, g.p99);
            }
            None => s.push_str(",,,,,"),
        }
        match &p.websocket {
            Some(w) => {
                let _ = writeln!(
                    s,
                    ",{},{},{},{},{},{},{}",
                    w.upgrades,
                    w.messages_received,
                    w.received_bytes,
                    w.pushed,
                    w.pings_sent,
                    w.pongs,
                    w.drops
                );
            }
            None => s.push_str(&format!("{}\n", ",".repeat(WS_COLUMNS.len()))),
        }
    }
    s
}

/// `--csv`'s WebSocket columns: each second's counts (`TimelinePoint::websocket`).
const WS_COLUMNS: [&str; 7] = [
    "ws_upgrades",
    "ws_messages_received",
    "ws_received_bytes",
    "ws_pushed",
    "ws_pings_sent",
    "ws_pongs",
    "ws_drops",
];

/// `--csv-targets`: one row per target (a `--targets` name, a scenario's step), in the
/// report's order, with a header row. A run without per-target figures has the header only.
pub fn targets_csv(r: &Report) -> Result<Vec<u8>> {
    const CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "other"];
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut head = vec![
        "name",
        "sent",
        "completed",
        "errors",
        "in_flight",
        "rps",
        "mean_us",
        "p50_us",
        "p90_us",
        "p99_us",
        "max_us",
    ];
    head.extend(CLASSES);
    head.extend(["ttfb_p50_us", "ttfb_p99_us"]);
    // A replayed recording's own latencies (empty without).
    head.extend(["recorded_p50_us", "recorded_p99_us"]);
    w.write_record(&head)?;
    for t in &r.targets {
        let l = &t.latency_us;
        let rps = if r.duration_s > 0.0 {
            t.completed as f64 / r.duration_s
        } else {
            0.0
        };
        let mut row = vec![
            t.name.clone(),
            t.sent.to_string(),
            t.completed.to_string(),
            t.errors.to_string(),
            t.in_flight.to_string(),
            format!("{rps:.1}"),
            format!("{:.1}", l.mean_us),
            l.p50_us.to_string(),
            l.p90_us.to_string(),
            l.p99_us.to_string(),
            l.max_us.to_string(),
        ];
        let mut classes = [0u64; 6];
        for (code, n) in &t.status {
            let k = match code.as_bytes().first() {
                Some(c @ b'1'..=b'5') if code.len() == 3 => (c - b'1') as usize,
                _ => 5,
            };
            classes[k] += n;
        }
        row.extend(classes.iter().map(u64::to_string));
        let of = |l: Option<&LatencySummary>, f: fn(&LatencySummary) -> u64| {
            l.map_or(String::new(), |s| f(s).to_string())
        };
        let (ttfb, then) = (t.ttfb_us.as_ref(), t.recorded_us.as_ref());
        row.extend([of(ttfb, |s| s.p50_us), of(ttfb, |s| s.p99_us)]);
        row.extend([of(then, |s| s.p50_us), of(then, |s| s.p99_us)]);
        w.write_record(&row)?;
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

/// `--hdr-log`: the measured seconds' latency histograms as an HdrHistogram interval log
/// (the format of Java's HistogramLogWriter: StartTime and BaseTime headers, a legend, one
/// line per second with its start offset, length, max and compressed histogram).
pub fn hdr_log(r: &Report) -> Result<Vec<u8>> {
    use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
    use hdrhistogram::serialization::V2DeflateSerializer;
    let start = std::time::UNIX_EPOCH + std::time::Duration::from_millis(r.started_unix_ms);
    let mut out = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "pelt {}: {} {}; latency in microseconds, one interval per second of the measured \
             part (warm-up excluded), measured from {}",
            env!("CARGO_PKG_VERSION"),
            r.info.method,
            r.info.target.replace('\n', " "),
            if r.latency_from == LatencyFrom::Due {
                "each request's due time"
            } else {
                "each request's first byte written"
            }
        ))
        .with_start_time(start)
        .with_base_time(start)
        .begin_log_with(&mut out, &mut ser)?;
    out.extend_from_slice(
        b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    );
    let mut log = IntervalLogWriterBuilder::new().begin_log_with(&mut out, &mut ser)?;
    for p in r.timeline.iter().filter(|p| !p.warmup) {
        let Some(encoded) = &p.histogram else {
            anyhow::bail!("the result has no per-second histograms (written by pelt < 0.2)");
        };
        let h = pelt_stats::LatencyHistogram::decode(encoded).map_err(anyhow::Error::msg)?;
        log.write_histogram(
            h.hdr(),
            std::time::Duration::from_secs(p.second),
            std::time::Duration::from_secs_f64(p.length_s),
            None,
        )
        .map_err(|e| anyhow::anyhow!("cannot write the interval log: {e}"))?;
    }
    Ok(out)
}

/// Writes `data` to `path` atomically: a temp file in the same directory, synced, renamed.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .context("the output path has no file name")?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// Checks, before any traffic, that a result file can be created at `path`.
pub fn check_writable(path: &Path) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if path.is_dir() {
        return Err("is a directory".into());
    }
    if !dir.is_dir() {
        return Err(format!("directory {} does not exist", dir.display()));
    }
    let probe = dir.join(format!(".pelt-write-check-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!("directory {} is not writable ({e})", dir.display())),
    }
}

/// What a targets file held that the run left out, in words.
fn skipped(k: &pelt_stats::SkippedInfo) -> String {
    let mut parts = Vec::new();
    if k.other_origins > 0 {
        parts.push(format!(
            "{} on other origins than {}",
            thousands(k.other_origins),
            k.origin.as_deref().unwrap_or("the one replayed")
        ));
    }
    if k.bad_lines > 0 {
        parts.push(format!(
            "{} that did not parse (the first: {})",
            thousands(k.bad_lines),
            k.first_bad.as_deref().unwrap_or("?")
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(rate(121933.64), "121,933.6");
        assert_eq!(latency(87.0), "87us");
        assert_eq!(latency(1240.0), "1.24ms");
        assert_eq!(latency(2_500_000.0), "2.50s");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1536.0), "1.50 KiB");
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let dir = std::env::temp_dir().join(format!("pelt-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "temp file left behind"
        );
        assert!(check_writable(&p).is_ok());
        assert!(check_writable(&dir.join("missing/r.json")).is_err());
        assert!(check_writable(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
