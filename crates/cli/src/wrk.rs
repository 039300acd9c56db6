//! `pelt wrk`: wrk's command line (4.2's flags, and wrk2's `-R` and `-U`) over pelt's engine,
//! printing wrk's report layout, so scripts, CI jobs and recipes written for wrk run with a
//! changed command name.
//!
//! The flags become the options of a plain run (by the run table's names, so every check and
//! message is the plain run's): `-c`, `-d`, `-t`, `-H`, `-s` with the script's arguments after
//! the URL (as wrk passes them), `--timeout`, and wrk2's `-R` (pelt's open loop: latency from
//! each request's due time, as wrk2's corrected latency). The report is wrk's: the thread
//! statistics (latency, and requests/s per thread and second), `--latency`'s distribution
//! (wrk2's, with its detailed percentile spectrum, under `-R`; `-U` adds the uncorrected one:
//! pelt's service time), the totals, socket errors and non-2xx or 3xx responses; then the
//! script's `done()`.

use crate::args::WrkArgs;
use crate::bad;
use anyhow::{anyhow, Result};
use pelt_stats::{LatencyHistogram, Report};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::process::ExitCode;

pub fn wrk(a: &WrkArgs) -> Result<ExitCode> {
    let spec = pelt_load::options::read(&options(a)?).map_err(|e| bad(anyhow!("{e}")))?;
    let prepared = pelt_load::prepare(&spec).map_err(bad)?;
    let stop = crate::run::stop_flag()?;
    println!("{}", header(a));
    prepared.script_output(false);
    let report = pelt_load::run(&prepared, &stop, &mut |_| {});
    if let Some(e) = prepared.script_failure() {
        return Err(bad(anyhow!(e)));
    }
    print!("{}", summary(&report, a));
    if let Err(e) = prepared.script_done(&report, false) {
        eprintln!("pelt: {e}");
        return Ok(ExitCode::from(crate::EXIT_FAILURE));
    }
    Ok(if stop.load(std::sync::atomic::Ordering::Relaxed) {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

/// wrk's flags as the run table's options.
fn options(a: &WrkArgs) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    if a.connections == 0 || a.threads == 0 {
        return Err(bad(anyhow!("-c and -t must be at least 1")));
    }
    if a.threads > a.connections {
        // wrk's own rule.
        return Err(bad(anyhow!(
            "number of connections must be >= threads (-c {} -t {})",
            a.connections,
            a.threads
        )));
    }
    put("url", json!(a.url));
    put("connections", json!(a.connections));
    put("threads", json!(a.threads));
    put("duration", json!(a.duration));
    put("timeout", json!(a.timeout));
    if !a.headers.is_empty() {
        put("headers", json!(a.headers));
    }
    if let Some(s) = &a.script {
        put("script", json!(s));
        put("scriptArgs", json!(a.script_args));
    } else if !a.script_args.is_empty() {
        return Err(bad(anyhow!(
            "{}: arguments after the URL go to a script's init(args): add -s",
            a.script_args.join(" ")
        )));
    }
    if let Some(r) = &a.rate {
        put("rate", json!(r));
    }
    Ok(m)
}

/// wrk's first two lines.
fn header(a: &WrkArgs) -> String {
    let secs = spec_duration(a);
    let shown = if secs >= 60.0 && secs % 60.0 == 0.0 {
        format!("{}m", secs / 60.0)
    } else {
        format!("{}s", (secs * 100.0).round() / 100.0)
    };
    format!(
        "Running {shown} test @ {}\n  {} threads and {} connections",
        a.url, a.threads, a.connections
    )
}

/// `-d` in seconds, as the run reads it.
fn spec_duration(a: &WrkArgs) -> f64 {
    let mut m = Map::new();
    m.insert("url".into(), json!(a.url));
    m.insert("duration".into(), json!(a.duration));
    pelt_load::options::read(&m)
        .ok()
        .and_then(|s| s.duration)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A time in microseconds as wrk writes it: `79.02us`, `2.68ms`, `1.10s`, `1.50m`.
fn time_us(us: f64) -> String {
    let (v, unit) = match us {
        u if u < 1e3 => (u, "us"),
        u if u < 1e6 => (u / 1e3, "ms"),
        u if u < 60e6 => (u / 1e6, "s"),
        u if u < 3600e6 => (u / 60e6, "m"),
        u => (u / 3600e6, "h"),
    };
    format!("{v:.2}{unit}")
}

/// A count as wrk writes it: `56.20k`.
fn metric(n: f64) -> String {
    let (v, unit) = match n {
        n if n < 1e3 => (n, ""),
        n if n < 1e6 => (n / 1e3, "k"),
        n if n < 1e9 => (n / 1e6, "M"),
        n => (n / 1e9, "G"),
    };
    format!("{v:.2}{unit}")
}

/// Bytes as wrk writes them (before its `B`): `4.31M`.
fn binary(n: f64) -> String {
    let (v, unit) = match n {
        n if n < 1024.0 => (n, ""),
        n if n < 1024.0 * 1024.0 => (n / 1024.0, "K"),
        n if n < 1024.0 * 1024.0 * 1024.0 => (n / 1024.0 / 1024.0, "M"),
        n => (n / 1024.0 / 1024.0 / 1024.0, "G"),
    };
    format!("{v:.2}{unit}")
}

/// wrk's columns: `text` right-aligned in `width`, less the room its unit's letters take.
fn column(text: &str, width: usize) -> String {
    let b = text.as_bytes();
    let letters = b
        .iter()
        .rev()
        .take(2)
        .filter(|c| c.is_ascii_alphabetic())
        .count();
    let pad = 2 - letters;
    format!("{text:>w$}{:pad$}", "", w = width - pad)
}

/// Mean, standard deviation, max and the share within one deviation of the mean (%).
struct Spread {
    mean: f64,
    stdev: f64,
    max: f64,
    within: f64,
}

impl Spread {
    fn of_histogram(h: &LatencyHistogram) -> Spread {
        let s = h.summary();
        let (lo, hi) = (s.mean_us - s.stdev_us, s.mean_us + s.stdev_us);
        let total = h.hdr().len().max(1) as f64;
        let inside: u64 = h
            .hdr()
            .iter_recorded()
            .filter(|v| {
                let x = v.value_iterated_to() as f64;
                x >= lo && x <= hi
            })
            .map(|v| v.count_at_value())
            .sum();
        Spread {
            mean: s.mean_us,
            stdev: s.stdev_us,
            max: s.max_us as f64,
            within: 100.0 * inside as f64 / total,
        }
    }

    fn of_values(v: &[f64]) -> Spread {
        let n = v.len().max(1) as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        let stdev = var.sqrt();
        let inside = v.iter().filter(|x| (*x - mean).abs() <= stdev).count();
        Spread {
            mean,
            stdev,
            max: v.iter().copied().fold(0.0, f64::max),
            within: 100.0 * inside as f64 / n,
        }
    }

    fn row(&self, name: &str, f: fn(f64) -> String) -> String {
        format!(
            "    {name:<10}{}{}{}{:8.2}%\n",
            column(&f(self.mean), 8),
            column(&f(self.stdev), 10),
            column(&f(self.max), 9),
            self.within
        )
    }
}

/// wrk's report of `r` (after its first two lines).
fn summary(r: &Report, a: &WrkArgs) -> String {
    let mut out = String::new();
    let empty = LatencyHistogram::new();
    let hist = r.histograms.as_ref();
    let latency = hist.map_or(&empty, |h| &h.latency_us);
    // wrk samples each thread's requests/s: here each measured second's, shared by the threads.
    let threads = r.info.threads.max(1) as f64;
    let rates: Vec<f64> = r
        .timeline
        .iter()
        .filter(|p| !p.warmup && p.length_s >= 0.999)
        .map(|p| p.rps / threads)
        .collect();
    out.push_str("  Thread Stats   Avg      Stdev     Max   +/- Stdev\n");
    out.push_str(&Spread::of_histogram(latency).row("Latency", time_us));
    out.push_str(&Spread::of_values(&rates).row("Req/Sec", metric));
    if a.latency {
        if a.rate.is_some() {
            distribution(&mut out, latency, "Recorded Latency");
            if a.u_latency {
                if let Some(s) = hist.and_then(|h| h.service_time_us.as_ref()) {
                    out.push('\n');
                    distribution(
                        &mut out,
                        s,
                        "Uncorrected Latency (measured without taking delayed starts into \
                         account)",
                    );
                }
            }
        } else {
            out.push_str("  Latency Distribution\n");
            for p in [50.0, 75.0, 90.0, 99.0] {
                let v = latency.quantile_us(p / 100.0) as f64;
                let _ = writeln!(out, "{p:7.0}%{}", column(&time_us(v), 10));
            }
        }
    }
    let _ = writeln!(
        out,
        "  {} requests in {}, {}B read",
        r.requests.completed,
        time_us(r.duration_s * 1e6),
        binary(r.bytes.received as f64)
    );
    let e = pelt_load::wrk_errors(r);
    if e.connect + e.read + e.write + e.timeout > 0 {
        let _ = writeln!(
            out,
            "  Socket errors: connect {}, read {}, write {}, timeout {}",
            e.connect, e.read, e.write, e.timeout
        );
    }
    // wrk's count: every status but 2xx and 3xx.
    let non_2xx: u64 = r
        .status
        .iter()
        .filter(|(code, _)| !(code.starts_with('2') || code.starts_with('3')))
        .map(|(_, n)| n)
        .sum();
    if non_2xx > 0 {
        let _ = writeln!(out, "  Non-2xx or 3xx responses: {non_2xx}");
    }
    let secs = r.duration_s.max(1e-9);
    let _ = writeln!(
        out,
        "Requests/sec: {:9.2}",
        r.requests.completed as f64 / secs
    );
    let _ = writeln!(
        out,
        "Transfer/sec: {:>10}B",
        binary(r.bytes.received as f64 / secs)
    );
    out
}

/// wrk2's `--latency` section of `h`: eight percentiles and HdrHistogram's percentile
/// spectrum (milliseconds), with its footer.
fn distribution(out: &mut String, h: &LatencyHistogram, what: &str) {
    let _ = writeln!(out, "  Latency Distribution (HdrHistogram - {what})");
    for p in [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0] {
        let v = h.quantile_us(p / 100.0) as f64;
        let _ = writeln!(out, "{p:7.3}%{}", column(&time_us(v), 10));
    }
    out.push_str("\n  Detailed Percentile spectrum:\n");
    out.push_str("       Value   Percentile   TotalCount 1/(1-Percentile)\n\n");
    let hdr = h.hdr();
    for v in hdr.iter_quantiles(5) {
        let q = v.quantile_iterated_to();
        let value = hdr.highest_equivalent(v.value_iterated_to()) as f64 / 1e3;
        let count = hdr.count_between(0, v.value_iterated_to());
        if q < 1.0 {
            let _ = writeln!(
                out,
                "{value:12.3} {q:12.6} {count:12} {:12.2}",
                1.0 / (1.0 - q)
            );
        } else {
            let _ = writeln!(out, "{value:12.3} {q:12.6} {count:12} {:>12}", "inf");
        }
    }
    let s = h.summary();
    let _ = writeln!(
        out,
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]",
        s.mean_us / 1e3,
        s.stdev_us / 1e3
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.3}, Total count    = {:12}]",
        s.max_us as f64 / 1e3,
        hdr.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        hdr.buckets(),
        hdr.distinct_values() / (hdr.buckets() as usize + 1).max(1) * 2
    );
    out.push_str("----------------------------------------------------------\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_units_are_wrks() {
        assert_eq!(time_us(79.02), "79.02us");
        assert_eq!(time_us(2680.0), "2.68ms");
        assert_eq!(metric(26830.0), "26.83k");
        assert_eq!(binary(4.31 * 1024.0 * 1024.0), "4.31M");
        // Two letters: no pad; one: one space after; none: two.
        assert_eq!(column("79.02us", 8), " 79.02us");
        assert_eq!(column("3.84k", 10), "    3.84k ");
        assert_eq!(column("0.00", 9), "   0.00  ");
        let s = Spread::of_values(&[10.0, 20.0, 30.0]);
        assert_eq!(s.mean, 20.0);
        assert!((s.within - 100.0).abs() < 1e-9);
    }
}
