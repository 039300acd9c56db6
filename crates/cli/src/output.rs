//! Renderers: the human summary, and the JSON result written atomically.

use anyhow::{Context, Result};
use pelt_engine::Config;
use pelt_stats::{LatencyFrom, LatencySummary, Report, RunInfo, StagesInfo};
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
pub(crate) fn plural(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// What ran: `GET URL with 32 connections on 1 thread (io_uring, keep-alive)`.
/// What ran how. `fleet`: the agents, and whether their threads are known (the result's).
pub(crate) fn title(i: &RunInfo, fleet: Option<(usize, bool)>) -> String {
    let how = if let Some(n) = i.streams {
        format!("HTTP/{}, {} per connection", i.http, plural(n, "stream"))
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

pub(crate) fn rate_plain(r: f64) -> String {
    if r.fract() == 0.0 {
        thousands(r as u64)
    } else {
        format!("{r}")
    }
}

/// The human summary printed on stdout: its sections in order.
pub fn summary(r: &Report) -> String {
    let mut s = String::new();
    for section in crate::sections::TEXT {
        section(&mut s, r);
    }
    s
}

/// A measured value with at most 3 decimals and no trailing zeros: `12.5`, `0.013`, `3`.
pub(crate) fn trim_number(v: f64) -> String {
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
    s.push_str(&format!(",{}", WS_COLUMNS.join(",")));
    // Then gRPC's (empty but in a grpc:// run), then QUIC's (empty but over HTTP/3).
    s.push_str(",grpc_calls,grpc_ok");
    s.push_str(&format!(",{}", QUIC_COLUMNS.join(",")));
    // Then the tokens servers counted for the streams that ended in the second (empty without
    // usage), and those of them that met --goodput's targets.
    s.push_str(",stream_input_tokens,stream_output_tokens,tpot_p50_us,tpot_p99_us,goodput\n");
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
                let _ = write!(
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
            None => s.push_str(&",".repeat(WS_COLUMNS.len())),
        }
        match &p.grpc {
            Some(g) => {
                let _ = write!(s, ",{},{}", g.calls, g.ok);
            }
            None => s.push_str(",,"),
        }
        match &p.quic {
            Some(q) => {
                let _ = write!(
                    s,
                    ",{},{},{},{},{},{},{}",
                    q.datagrams_sent,
                    q.datagrams_received,
                    q.packets_sent,
                    q.packets_lost,
                    q.congestion_events,
                    q.blocked_by_server,
                    q.blocked_by_pelt
                );
            }
            None => s.push_str(&",".repeat(QUIC_COLUMNS.len())),
        }
        match &p.event_streams {
            Some(e) => {
                let tpot = e
                    .tpot_us
                    .map_or(",".to_string(), |t| format!("{},{}", t.p50, t.p99));
                let usage = |n: u64| {
                    if e.tpot_us.is_some() {
                        n.to_string()
                    } else {
                        String::new()
                    }
                };
                let _ = writeln!(
                    s,
                    ",{},{},{tpot},{}",
                    usage(e.input_tokens),
                    usage(e.output_tokens),
                    e.met
                );
            }
            None => s.push_str(",,,,,\n"),
        }
    }
    s
}

/// `--csv`'s QUIC columns: each second's counts (`TimelinePoint::quic`), over HTTP/3.
const QUIC_COLUMNS: [&str; 7] = [
    "quic_datagrams_sent",
    "quic_datagrams_received",
    "quic_packets_sent",
    "quic_packets_lost",
    "quic_congestion_events",
    "quic_blocked_by_server",
    "quic_blocked_by_pelt",
];

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
/// A path that is not a file (`/dev/null`, a FIFO, `/dev/stdout`) is written as it is: a
/// rename would replace the device or pipe itself.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(data))
            .with_context(|| format!("cannot write {}", path.display()));
    }
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
    use std::os::unix::fs::FileTypeExt;
    // A device (`/dev/null`) is written as it is; a FIFO is not opened before its reader.
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_fifo() => return Ok(()),
        Ok(m) if !m.is_file() && !m.is_dir() => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        _ => {}
    }
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
pub(crate) fn skipped(k: &pelt_stats::SkippedInfo) -> String {
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
