//! `pelt ghz`: ghz's command line (v0.120.0's common flags) over pelt's engine, printing ghz's
//! summary layout, so a ghz user switches by changing the command's name.
//!
//! The flags become the options of a plain grpc:// run (by the run table's names, so every
//! check and message is the plain run's): `HOST:PORT` and `--call` the URL, `-c` calls at a time
//! over `--connections` connections (pelt's `--streams` per connection), `-n`/`-z` the count or
//! duration, `--rps` the open loop's rate, `-d`/`-D` the message, `-m` the metadata, TLS unless
//! `--insecure` (`--skipTLS`: not verified). Where pelt differs on purpose the output says so:
//! with `--rps` latency counts from each call's due time, so a stalled server shows.

use crate::args::GhzArgs;
use crate::bad;
use anyhow::{anyhow, Result};
use pelt_stats::{LatencyHistogram, Report};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::process::ExitCode;

/// The percentiles ghz's latency distribution lists.
const PERCENTILES: [u32; 7] = [10, 25, 50, 75, 90, 95, 99];

pub fn ghz(a: &GhzArgs) -> Result<ExitCode> {
    let format = a.format.as_str();
    if !["summary", "json", "pretty", "html"].contains(&format) {
        return Err(bad(anyhow!(
            "-O {format}: pelt ghz writes summary, json, pretty or html (for CSV, run pelt \
             grpc://... --csv)"
        )));
    }
    let spec = pelt_load::options::read(&options(a)?).map_err(|e| bad(anyhow!("{e}")))?;
    let prepared = pelt_load::prepare(&spec).map_err(bad)?;
    let stop = crate::run::stop_flag()?;
    let report = pelt_load::run(&prepared, &stop, &mut |_| {});
    let text = match format {
        "summary" => summary(&report, a.rps.is_some()),
        "html" => crate::html::report(&report),
        "pretty" => serde_json::to_string_pretty(&as_ghz_json(&report, a))? + "\n",
        _ => serde_json::to_string(&as_ghz_json(&report, a))? + "\n",
    };
    match &a.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| anyhow!("cannot write -o {}: {e}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(if stop.load(std::sync::atomic::Ordering::Relaxed) {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

/// ghz's flags as the run table's options.
fn options(a: &GhzArgs) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    let scheme = if a.insecure { "grpc" } else { "grpcs" };
    let call = a.call.trim_start_matches('/');
    // ghz takes package.Service.Method and package.Service/Method.
    let call = match call.contains('/') {
        true => call.to_string(),
        false => match call.rsplit_once('.') {
            Some((service, method)) => format!("{service}/{method}"),
            None => {
                return Err(bad(anyhow!(
                    "--call {call}: a call is package.Service.Method"
                )))
            }
        },
    };
    put("url", json!(format!("{scheme}://{}/{call}", a.host)));
    // ghz sends a bidirectional call's messages without waiting for replies.
    put("grpcSendAll", json!(true));
    if let Some(p) = &a.proto {
        put("proto", json!(p));
    }
    if let Some(p) = &a.protoset {
        put("protoset", json!(p));
    }
    if !a.import_paths.is_empty() {
        put("importPaths", json!(a.import_paths));
    }
    match (&a.data, &a.data_file) {
        (Some(_), Some(_)) => return Err(bad(anyhow!("-d and -D: give the message once"))),
        (Some(d), None) => put("body", json!(d)),
        (None, Some(f)) => put("bodyFile", json!(f)),
        (None, None) => {}
    }
    if let Some(meta) = &a.metadata {
        let v: Value = serde_json::from_str(meta)
            .map_err(|e| bad(anyhow!("-m {meta}: not a JSON object of metadata: {e}")))?;
        let Value::Object(fields) = v else {
            return Err(bad(anyhow!("-m {meta}: not a JSON object of metadata")));
        };
        put("headers", Value::Object(fields));
    }
    if a.concurrency == 0 || a.connections == 0 {
        return Err(bad(anyhow!("-c and --connections must be at least 1")));
    }
    // ghz's -c workers share --connections connections.
    let connections = a.connections.min(a.concurrency);
    put("connections", json!(connections));
    put("streams", json!(a.concurrency.div_ceil(connections)));
    match &a.duration {
        Some(z) => put("duration", json!(z)),
        None => put("requests", json!(a.total)),
    }
    if let Some(r) = a.rps {
        put("rate", json!(r));
    }
    put("timeout", json!(a.timeout));
    if let Some(cpus) = a.cpus {
        put("threads", json!(cpus));
    }
    if a.skip_tls {
        put("insecure", json!(true));
    }
    if let Some(ca) = &a.cacert {
        put("cacert", json!(ca));
    }
    Ok(m)
}

/// ghz's durations: `2.32 ms`, `4.99 s`.
fn nano_unit(us: f64) -> String {
    let ns = us * 1e3;
    let (v, unit) = match ns {
        n if n >= 1e9 => (n / 1e9, "s"),
        n if n >= 1e6 => (n / 1e6, "ms"),
        n if n >= 1e3 => (n / 1e3, "μs"),
        n => (n, "ns"),
    };
    format!("{v:4.2} {unit}")
}

/// The latency histogram behind the result.
fn latencies(r: &Report) -> LatencyHistogram {
    r.histograms
        .as_ref()
        .map(|h| h.latency_us.clone())
        .unwrap_or_default()
}

/// ghz's response-time histogram: ten buckets of equal width from the fastest to the slowest
/// (milliseconds), each with its count.
fn buckets(r: &Report) -> Vec<(f64, u64)> {
    let h = latencies(r);
    let (lo, hi) = (r.latency_us.min_us as f64, r.latency_us.max_us as f64);
    let width = (hi - lo) / 10.0;
    let mut below = 0;
    (0..=10)
        .map(|i| {
            let mark = lo + width * i as f64;
            let upto = if i == 10 { u64::MAX } else { mark as u64 };
            let n = h.hdr().count_between(0, upto);
            let count = n.saturating_sub(below);
            below = n;
            (mark / 1e3, count)
        })
        .collect()
}

/// ghz's summary layout.
fn summary(r: &Report, rps: bool) -> String {
    let mut s = String::new();
    let calls = r.requests.completed + r.requests.errors;
    let l = &r.latency_us;
    let _ = writeln!(s, "\nSummary:");
    let _ = writeln!(s, "  Count:\t{calls}");
    let _ = writeln!(s, "  Total:\t{}", nano_unit(r.duration_s * 1e6));
    let _ = writeln!(s, "  Slowest:\t{}", nano_unit(l.max_us as f64));
    let _ = writeln!(s, "  Fastest:\t{}", nano_unit(l.min_us as f64));
    let _ = writeln!(s, "  Average:\t{}", nano_unit(l.mean_us));
    let _ = writeln!(
        s,
        "  Requests/sec:\t{:.2}",
        calls as f64 / r.duration_s.max(1e-9)
    );
    let _ = writeln!(s, "\nResponse time histogram:");
    let marks = buckets(r);
    let most = marks.iter().map(|m| m.1).max().unwrap_or(0).max(1);
    for (mark, n) in &marks {
        let bar = "∎".repeat((n * 40 / most) as usize);
        let _ = writeln!(s, "  {mark:<7.3} [{n}]\t|{bar}");
    }
    let _ = write!(s, "\nLatency distribution:");
    let h = latencies(r);
    for p in PERCENTILES {
        let us = h.quantile_us(p as f64 / 100.0);
        let _ = write!(s, "\n  {p} % in {} ", nano_unit(us as f64));
    }
    let _ = writeln!(s, "\n");
    if let Some(g) = r.grpc.as_ref().filter(|g| !g.status.is_empty()) {
        let _ = write!(s, "Status code distribution:");
        for (status, n) in &g.status {
            let _ = write!(s, "\n  [{status}]\t{n} responses");
        }
        let _ = writeln!(s, "\n");
    }
    let errors: Vec<(String, u64)> = error_distribution(r);
    if !errors.is_empty() {
        let _ = write!(s, "Error distribution:");
        for (e, n) in &errors {
            let _ = write!(s, "\n  [{n}]\t{e}");
        }
        let _ = writeln!(s, "\n");
    }
    if rps {
        let _ = writeln!(
            s,
            "Note (pelt): with --rps, latency counts from each call's due time (an open loop), \
             so calls that waited on a stalled server show it; ghz counts from the send."
        );
    }
    s
}

/// Calls that ended without a status (pelt's errors, by their first message) and with one
/// that is not OK (by their first grpc-message), as ghz lists its errors.
fn error_distribution(r: &Report) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = r
        .errors
        .iter()
        .map(|(kind, n)| {
            let example = r.error_examples.get(kind).map_or("", String::as_str);
            (format!("{kind}: {example}"), *n)
        })
        .collect();
    if let Some(g) = &r.grpc {
        for (status, n) in g.status.iter().filter(|(s, _)| *s != "OK") {
            let m = g.messages.get(status).map_or("", String::as_str);
            out.push((format!("rpc error: code = {status} desc = {m}"), *n));
        }
    }
    out
}

/// The result in ghz's JSON shape (`-O json`): its figures in nanoseconds, with pelt's whole
/// result under `pelt`.
fn as_ghz_json(r: &Report, a: &GhzArgs) -> Value {
    let ns = |us: f64| (us * 1e3).round() as u64;
    let l = &r.latency_us;
    let h = latencies(r);
    let calls = r.requests.completed + r.requests.errors;
    let marks = buckets(r);
    let total: u64 = marks.iter().map(|m| m.1).sum::<u64>().max(1);
    json!({
        "date": r.started_unix_ms,
        "endReason": if a.duration.is_some() { "timeout" } else { "normal" },
        "count": calls,
        "total": ns(r.duration_s * 1e6),
        "average": ns(l.mean_us),
        "fastest": ns(l.min_us as f64),
        "slowest": ns(l.max_us as f64),
        "rps": calls as f64 / r.duration_s.max(1e-9),
        "histogram": marks.iter().map(|(mark, n)| json!({
            "mark": mark / 1e3,
            "count": n,
            "frequency": *n as f64 / total as f64,
        })).collect::<Vec<_>>(),
        "latencyDistribution": PERCENTILES.iter().map(|p| json!({
            "percentage": p,
            "latency": ns(h.quantile_us(*p as f64 / 100.0) as f64),
        })).collect::<Vec<_>>(),
        "statusCodeDistribution": r.grpc.as_ref().map(|g| json!(g.status)).unwrap_or(json!({})),
        "errorDistribution": error_distribution(r)
            .into_iter()
            .map(|(e, n)| (e, json!(n)))
            .collect::<Map<String, Value>>(),
        "pelt": r,
    })
}
