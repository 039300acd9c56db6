//! `pelt compare`: the same load against several targets and settings, interleaved and
//! repeated, as one table (the seeds' "krps per tool per scenario" tables, made by pelt).
//!
//! The comparison is the library's (`pelt_load::study::compare`): every cell is the run's
//! options as typed plus the cell's settings, read by the option table (so `--vary
//! pipeline=2` with `--no-keepalive` is refused exactly as on a plain run) and prepared before
//! any traffic. Runs go round-robin over the cells `--repeat` times, so drift on the machine
//! lands on every cell alike; the table shows each figure's median. This file adds
//! `--config`, the progress lines and the renderers.

use crate::args::{Cli, Command, CompareArgs};
use crate::output::{latency, thousands};
use crate::{bad, html};
use anyhow::{anyhow, Result};
use clap::Parser;
use pelt_load::study::CompareDoc;
use std::ffi::OsString;
use std::fmt::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Checks and prepares every run before any traffic, then runs them.
pub fn compare(first: &CompareArgs, raw: &[OsString], stop: &AtomicBool) -> Result<ExitCode> {
    // A --config file: its flags first, the command line's after them (they override).
    let from_file;
    let a = match &first.config {
        None => first,
        Some(path) => {
            let mut args = file_flags(path)?;
            let mut it = raw.iter();
            while let Some(x) = it.next() {
                if x == "--config" {
                    it.next();
                } else if !x.to_string_lossy().starts_with("--config=") {
                    args.push(x.clone());
                }
            }
            let source = format!("in {} or on the command line", path.display());
            from_file = parse(&args, &source)?;
            &from_file
        }
    };
    let load = &a.load;
    crate::files::check_study_outputs(load, "pelt compare writes --json, --html and --csv")?;
    let study = pelt_load::study::prepare_compare(&load.given, &a.settings.0).map_err(bad)?;
    let quiet = load.quiet;
    if !quiet {
        let total = study.total();
        let about = study.run_s().map_or(String::new(), |s| {
            format!(", about {:.1}s", s * total as f64)
        });
        let n = |k: usize, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
        eprintln!(
            "pelt compare: {} x {} x {} = {}{about}",
            n(study.targets(), "target"),
            n(study.combinations(), "setting"),
            n(study.repeat(), "repeat"),
            n(total, "run")
        );
    }
    let doc = study.run(stop, &mut |r| {
        if !quiet {
            let f = &r.figures;
            eprintln!(
                "[{}/{}] {} (round {}): {:.1} krps, p50 {}, p99 {}, {} errors",
                r.done,
                r.total,
                r.cell,
                r.round,
                f.rps / 1000.0,
                latency(f.p50_us as f64),
                latency(f.p99_us as f64),
                thousands(f.errors)
            );
        }
    });
    let table = markdown(&doc);
    crate::files::write_study(
        &load.out,
        &doc,
        &table,
        || csv(&doc),
        || html::compare(&doc, &table),
    )?;
    Ok(if stop.load(Ordering::Relaxed) {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The `--config` TOML file as flags: `key = value` is `--key value`, `key = true` is
/// `--key`, an array repeats the flag; `[targets]` and `[vary]` become --target and --vary.
fn file_flags(path: &std::path::Path) -> Result<Vec<OsString>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad(anyhow!("cannot read --config {}: {e}", path.display())))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        bad(anyhow!(
            "{} is not valid TOML: {}",
            path.display(),
            e.message()
        ))
    })?;
    let scalar = |key: &str, v: &toml::Value| -> Result<String> {
        match v {
            toml::Value::String(s) => Ok(s.clone()),
            toml::Value::Integer(i) => Ok(i.to_string()),
            toml::Value::Float(f) => Ok(f.to_string()),
            toml::Value::Boolean(b) => Ok(if *b { "on" } else { "off" }.into()),
            _ => Err(bad(anyhow!(
                "{}: {key} must be a string, a number or true/false",
                path.display()
            ))),
        }
    };
    let mut out: Vec<OsString> = Vec::new();
    for (key, value) in &table {
        match (key.as_str(), value) {
            ("targets", toml::Value::Table(t)) => {
                for (name, url) in t {
                    out.push("--target".into());
                    out.push(format!("{name}={}", scalar(name, url)?).into());
                }
            }
            ("vary", toml::Value::Table(t)) => {
                for (k, v) in t {
                    let values = match v {
                        toml::Value::Array(a) => {
                            a.iter().map(|x| scalar(k, x)).collect::<Result<Vec<_>>>()?
                        }
                        x => vec![scalar(k, x)?],
                    };
                    out.push("--vary".into());
                    out.push(format!("{k}={}", values.join(",")).into());
                }
            }
            ("targets" | "vary", _) => {
                return Err(bad(anyhow!(
                    "{}: {key} must be a table ([{key}])",
                    path.display()
                )))
            }
            (_, toml::Value::Boolean(true)) => out.push(format!("--{key}").into()),
            (_, toml::Value::Boolean(false)) => {}
            (_, toml::Value::Array(a)) => {
                for x in a {
                    out.push(format!("--{key}").into());
                    out.push(scalar(key, x)?.into());
                }
            }
            (_, v) => {
                out.push(format!("--{key}").into());
                out.push(scalar(key, v)?.into());
            }
        }
    }
    Ok(out)
}

/// Parses `pelt compare ARGS` with the real definition; errors are one line.
fn parse(args: &[OsString], source: &str) -> Result<CompareArgs> {
    let argv = ["pelt".into(), "compare".into()]
        .into_iter()
        .chain(args.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Some(Command::Compare(a)),
            ..
        }) => Ok(*a),
        Ok(_) => unreachable!("parsed as pelt compare"),
        Err(e) => Err(bad(anyhow!("{source}: {}", crate::clap_line(&e)))),
    }
}

fn pct_text(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v < 0.01 {
        "<0.01%".into()
    } else {
        format!("{v:.2}%")
    }
}

/// The table: rows target x setting; columns krps, p50, p99, errors, non-2xx (medians).
pub fn markdown(doc: &CompareDoc) -> String {
    let repeat = doc.repeat;
    let keys: Vec<&str> = doc.keys().collect();
    let mut s = String::new();
    let mut header = vec!["target"];
    header.extend(&keys);
    header.extend(["krps", "p50", "p99", "errors", "non-2xx"]);
    // --monitor: the HTTP.SYS matrix's two columns, the server's CPU per request and memory.
    let monitored = doc
        .rows
        .iter()
        .any(|r| r.median.server_cpu_us_per_request.is_some());
    if monitored {
        header.extend(["server CPU/req", "server RSS", "bottleneck"]);
    }
    if repeat > 1 {
        header.push("krps range");
    }
    let _ = writeln!(s, "| {} |", header.join(" | "));
    let align: Vec<&str> = header
        .iter()
        .enumerate()
        .map(|(i, _)| if i <= keys.len() { "---" } else { "---:" })
        .collect();
    let _ = writeln!(s, "|{}|", align.join("|"));
    for row in &doc.rows {
        let m = &row.median;
        let mut cells = vec![row.target.clone()];
        cells.extend(keys.iter().map(|k| row.settings.get(k).to_string()));
        cells.push(format!("{:.1}", m.rps / 1000.0));
        cells.push(latency(m.p50_us));
        cells.push(latency(m.p99_us));
        cells.push(pct_text(m.errors_pct));
        cells.push(pct_text(m.non_2xx_pct));
        if monitored {
            cells.push(
                m.server_cpu_us_per_request
                    .map_or("-".to_string(), |us| format!("{us:.1}us")),
            );
            cells.push(
                m.server_rss_peak_bytes
                    .map_or("-".to_string(), crate::output::bytes),
            );
            cells.push(row.bottleneck.clone().unwrap_or_else(|| "-".into()));
        }
        if repeat > 1 {
            cells.push(format!(
                "{:.1}-{:.1}",
                m.rps_min / 1000.0,
                m.rps_max / 1000.0
            ));
        }
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
    let _ = writeln!(
        s,
        "\n{} of {} run{}; {}errors: requests that failed (per cent of those sent); non-2xx: \
         complete responses outside 2xx.",
        if repeat > 1 { "medians" } else { "figures" },
        doc.runs,
        if doc.runs == 1 { "" } else { "s" },
        if repeat > 1 {
            "krps range: lowest and highest run; "
        } else {
            ""
        }
    );
    s
}

/// `--csv` for a comparison: one row per target x setting, medians, then every run's req/s.
fn csv(doc: &CompareDoc) -> String {
    let mut s = String::from("target,url");
    for k in doc.keys() {
        let _ = write!(s, ",{k}");
    }
    s.push_str(",rps,p50_us,p99_us,errors_pct,non_2xx_pct,rps_min,rps_max,runs");
    s.push_str(",server_cpu_us_per_request,server_rss_peak_bytes,bottleneck\n");
    let field = |v: &str| {
        if v.contains([',', '"', '\n']) {
            format!("\"{}\"", v.replace('"', "\"\""))
        } else {
            v.to_string()
        }
    };
    for row in &doc.rows {
        let m = &row.median;
        let _ = write!(s, "{},{}", field(&row.target), field(&row.url));
        for k in doc.keys() {
            let _ = write!(s, ",{}", field(row.settings.get(k)));
        }
        let _ = write!(
            s,
            ",{:.1},{},{},{:.4},{:.4},{:.1},{:.1},{}",
            m.rps,
            m.p50_us,
            m.p99_us,
            m.errors_pct,
            m.non_2xx_pct,
            m.rps_min,
            m.rps_max,
            row.runs.len()
        );
        let opt =
            |v: Option<f64>, digits: usize| v.map_or(String::new(), |v| format!("{v:.digits$}"));
        let _ = writeln!(
            s,
            ",{},{},{}",
            opt(m.server_cpu_us_per_request, 2),
            opt(m.server_rss_peak_bytes, 0),
            row.bottleneck.as_deref().unwrap_or("")
        );
    }
    s
}
