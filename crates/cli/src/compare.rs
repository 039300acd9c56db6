//! `pelt compare`: the same load against several targets and settings, interleaved and
//! repeated, as one table (the seeds' "krps per tool per scenario" tables, made by pelt).
//!
//! Every cell is a plain run: its flags are the compare command line plus the cell's
//! settings, parsed again by the same clap definition (so `--vary pipeline=2` with
//! `--no-keepalive` is refused exactly as on a plain run), then validated by `prepare` before
//! any traffic. Runs go round-robin over the cells `--repeat` times, so drift on the machine
//! lands on every cell alike; the table shows each figure's median.

use crate::args::{Cli, Command, CompareArgs, LoadArgs};
use crate::output::{latency, thousands};
use crate::run::{prepare, Prepared};
use crate::{bad, html};
use anyhow::{anyhow, Result};
use clap::{CommandFactory, Parser};
use pelt_stats::Report;
use serde::Serialize;
use std::ffi::OsString;
use std::fmt::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Flags that belong to the comparison itself, not to each run.
const NOT_VARIABLE: &[&str] = &[
    "target", "vary", "repeat", "config", "json", "jsonl", "csv", "html", "hdr-log", "expect",
    "quiet", "io",
];

/// One run's figures.
#[derive(Debug, Clone, Serialize)]
pub struct RunFigures {
    pub rps: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub non_2xx: u64,
    pub duration_s: f64,
}

impl RunFigures {
    pub fn of(r: &Report) -> RunFigures {
        RunFigures {
            rps: r.rps,
            p50_us: r.latency_us.p50_us,
            p99_us: r.latency_us.p99_us,
            sent: r.requests.sent,
            completed: r.requests.completed,
            errors: r.requests.errors,
            non_2xx: r
                .status
                .iter()
                .filter(|(code, _)| !code.starts_with('2'))
                .map(|(_, n)| n)
                .sum(),
            duration_s: r.duration_s,
        }
    }

    /// Transport errors, per cent of the requests sent.
    fn errors_pct(&self) -> f64 {
        pct(self.errors, self.sent)
    }

    /// Responses outside 2xx, per cent of the complete responses.
    fn non_2xx_pct(&self) -> f64 {
        pct(self.non_2xx, self.completed)
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// The median of `v` (the mean of the middle two for an even count); 0 when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One row of the table: a target under one combination of settings.
struct Cell {
    target: String,
    url: String,
    settings: Vec<(String, String)>,
    prepared: Prepared,
    runs: Vec<RunFigures>,
}

impl Cell {
    fn label(&self) -> String {
        let s: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if s.is_empty() {
            self.target.clone()
        } else {
            format!("{} {}", self.target, s.join(" "))
        }
    }

    fn median(&self) -> Median {
        let m = |f: fn(&RunFigures) -> f64| median(self.runs.iter().map(f).collect());
        Median {
            rps: m(|r| r.rps),
            p50_us: m(|r| r.p50_us as f64),
            p99_us: m(|r| r.p99_us as f64),
            errors_pct: m(RunFigures::errors_pct),
            non_2xx_pct: m(RunFigures::non_2xx_pct),
            rps_min: self
                .runs
                .iter()
                .map(|r| r.rps)
                .fold(f64::INFINITY, f64::min),
            rps_max: self.runs.iter().map(|r| r.rps).fold(0.0, f64::max),
        }
    }

    fn row(&self) -> Row {
        Row {
            target: self.target.clone(),
            url: self.url.clone(),
            settings: Settings(self.settings.clone()),
            median: self.median(),
            runs: self.runs.clone(),
        }
    }
}

/// The document `pelt compare` writes with --json, and renders as the table, CSV and HTML.
#[derive(Debug, Serialize)]
pub struct CompareDoc {
    pub pelt_version: &'static str,
    pub repeat: usize,
    /// Runs done (all of them unless interrupted).
    pub runs: usize,
    pub interrupted: bool,
    pub targets: Vec<NamedTarget>,
    pub vary: Vec<Vary>,
    /// The settings every cell shares.
    pub run: SharedSettings,
    /// One per target x combination of settings, in the order they ran.
    pub rows: Vec<Row>,
}

#[derive(Debug, Serialize)]
pub struct NamedTarget {
    pub name: String,
    pub url: String,
}

/// A setting that varies, and its values.
#[derive(Debug, Serialize)]
pub struct Vary {
    pub key: String,
    pub values: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct SharedSettings {
    pub duration_s: Option<f64>,
    pub requests: Option<u64>,
    pub warmup_s: f64,
    pub load_model: pelt_stats::LoadModel,
    pub method: String,
}

/// A target under one combination of settings.
#[derive(Debug, Serialize)]
pub struct Row {
    pub target: String,
    pub url: String,
    pub settings: Settings,
    pub median: Median,
    pub runs: Vec<RunFigures>,
}

/// A row's settings (key, value), in the order of `--vary`; written as a JSON object.
#[derive(Debug)]
pub struct Settings(pub Vec<(String, String)>);

impl Settings {
    /// The value of `key` ("" when the row has none).
    pub fn get(&self, key: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map_or("", |(_, v)| v.as_str())
    }
}

impl Serialize for Settings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Medians over a row's runs, and the range of its requests/s.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Median {
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub errors_pct: f64,
    pub non_2xx_pct: f64,
    pub rps_min: f64,
    pub rps_max: f64,
}

impl CompareDoc {
    /// The keys that vary, in order: the table's setting columns.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.vary.iter().map(|v| v.key.as_str())
    }
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

/// `NAME=URL` or `URL`.
fn target(spec: &str) -> Result<(String, String)> {
    let (name, url) = match spec.split_once('=') {
        Some((n, u)) if !n.contains('/') && !n.contains(':') => (n.trim().to_string(), u),
        _ => (String::new(), spec),
    };
    let parsed = url::Url::parse(url).map_err(|e| {
        bad(anyhow!(
            "invalid --target {}: {e} (expected NAME=URL)",
            crate::values::quote(spec)
        ))
    })?;
    let name = if name.is_empty() {
        format!(
            "{}:{}",
            parsed.host_str().unwrap_or("?"),
            parsed.port_or_known_default().unwrap_or(0)
        )
    } else {
        name
    };
    Ok((name, url.to_string()))
}

/// The flags that set `key` to `value` on one run.
fn setting_flags(key: &str, value: &str) -> Result<Vec<OsString>> {
    let on_off = |v: &str| match v {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        _ => Err(bad(anyhow!(
            "invalid --vary {key}={value}: {key} takes on or off"
        ))),
    };
    match key {
        "keepalive" => {
            return Ok(if on_off(value)? {
                vec![]
            } else {
                vec!["--no-keepalive".into()]
            })
        }
        "http" => {
            return match value {
                "1.1" | "1" => Ok(vec![]),
                "2" => Ok(vec!["--http2".into()]),
                _ => Err(bad(anyhow!(
                    "invalid --vary http={value}: http takes 1.1 or 2"
                ))),
            }
        }
        _ => {}
    }
    let cmd = Cli::command();
    let sub = cmd
        .find_subcommand("compare")
        .expect("compare is a subcommand");
    let arg = sub
        .get_arguments()
        .filter(|a| !NOT_VARIABLE.contains(&a.get_long().unwrap_or("")))
        .find(|a| {
            a.get_long() == Some(key)
                || a.get_short()
                    .is_some_and(|c| key.len() == 1 && key.starts_with(c))
        });
    let Some(arg) = arg else {
        return Err(bad(anyhow!(
            "cannot --vary {key}: not a load flag (try connections, threads, rate, pipeline, \
             streams, method, keepalive, http)"
        )));
    };
    let long = format!("--{}", arg.get_long().unwrap_or(key));
    if arg.get_action().takes_values() {
        Ok(vec![long.into(), value.into()])
    } else if on_off(value)? {
        Ok(vec![long.into()])
    } else {
        Ok(vec![])
    }
}

/// Every combination of the `--vary` settings, in the order given (the last varies fastest).
fn combinations(vary: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut out = vec![vec![]];
    for (key, values) in vary {
        out = out
            .into_iter()
            .flat_map(|prefix: Vec<(String, String)>| {
                values.iter().map(move |v| {
                    let mut c = prefix.clone();
                    c.push((key.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    out
}

/// Checks and prepares every run before any traffic, then runs them.
pub fn compare(first: &CompareArgs, raw: &[OsString], stop: &AtomicBool) -> Result<ExitCode> {
    // A --config file: its flags first, the command line's after them (they override).
    let (a, raw) = match &first.config {
        None => (None, raw.to_vec()),
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
            (Some(parse(&args, &source)?), args)
        }
    };
    let a = a.as_ref().unwrap_or(first);
    let load = &a.load;
    if load.has_url() {
        return Err(bad(anyhow!(
            "pelt compare takes its targets as --target NAME=URL, not as a plain URL"
        )));
    }
    if a.targets.is_empty() {
        return Err(bad(anyhow!(
            "no targets: give at least one --target NAME=URL (or a [targets] table in --config)"
        )));
    }
    crate::files::check_study_outputs(load, "pelt compare writes --json, --html and --csv")?;
    let mut targets: Vec<(String, String)> = Vec::new();
    for spec in &a.targets {
        let t = target(spec)?;
        if targets.iter().any(|(n, _)| *n == t.0) {
            return Err(bad(anyhow!(
                "two targets are named {}; name them: --target NAME=URL",
                crate::values::quote(&t.0)
            )));
        }
        targets.push(t);
    }
    let mut vary: Vec<(String, Vec<String>)> = Vec::new();
    for spec in &a.vary {
        let (key, values) = spec.split_once('=').ok_or_else(|| {
            bad(anyhow!(
                "invalid --vary {}: expected KEY=V1,V2",
                crate::values::quote(spec)
            ))
        })?;
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if key.is_empty() || values.iter().any(String::is_empty) {
            return Err(bad(anyhow!(
                "invalid --vary {}: expected KEY=V1,V2 with no empty value",
                crate::values::quote(spec)
            )));
        }
        if vary.iter().any(|(k, _)| k == key) {
            return Err(bad(anyhow!("--vary {key} is given twice")));
        }
        vary.push((key.to_string(), values));
    }
    let combos = combinations(&vary);
    if combos.len() * targets.len() > 1000 {
        return Err(bad(anyhow!(
            "{} runs per round is more than pelt compare takes (1000)",
            combos.len() * targets.len()
        )));
    }

    // Build and check every cell before any traffic.
    let mut cells: Vec<Cell> = Vec::new();
    for settings in &combos {
        for (name, url) in &targets {
            let mut args = raw.clone();
            for (k, v) in settings {
                args.extend(setting_flags(k, v)?);
            }
            args.push("--".into());
            args.push(url.into());
            let what = if settings.is_empty() {
                format!("target {name}")
            } else {
                let s: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("target {name} with {}", s.join(" "))
            };
            let mut cell_load: LoadArgs = parse(&args, &what)?.load;
            cell_load.quiet = true;
            cell_load.out = Default::default();
            let prepared = prepare(&cell_load).map_err(|e| bad(anyhow!("{what}: {e:#}")))?;
            cells.push(Cell {
                target: name.clone(),
                url: url.clone(),
                settings: settings.clone(),
                prepared,
                runs: Vec::new(),
            });
        }
    }

    let total = cells.len() * a.repeat;
    let quiet = load.quiet;
    if !quiet {
        let info = &cells[0].prepared.run.info;
        let about = info.duration_limit_s.map_or(String::new(), |d| {
            format!(", about {:.1}s", (d + info.warmup_s) * total as f64)
        });
        let n = |k: usize, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
        eprintln!(
            "pelt compare: {} x {} x {} = {}{about}",
            n(targets.len(), "target"),
            n(combos.len(), "setting"),
            n(a.repeat, "repeat"),
            n(total, "run")
        );
    }
    let mut done = 0;
    'rounds: for round in 0..a.repeat {
        for cell in cells.iter_mut() {
            if stop.load(Ordering::Relaxed) {
                break 'rounds;
            }
            let report = pelt_load::run(&cell.prepared.run, stop, &mut |_| {});
            let f = RunFigures::of(&report);
            done += 1;
            if !quiet {
                eprintln!(
                    "[{done}/{total}] {} (round {}): {:.1} krps, p50 {}, p99 {}, {} errors",
                    cell.label(),
                    round + 1,
                    f.rps / 1000.0,
                    latency(f.p50_us as f64),
                    latency(f.p99_us as f64),
                    thousands(f.errors)
                );
            }
            cell.runs.push(f);
        }
    }
    let info = &cells[0].prepared.run.info;
    let doc = CompareDoc {
        pelt_version: env!("CARGO_PKG_VERSION"),
        repeat: a.repeat,
        runs: done,
        interrupted: stop.load(Ordering::Relaxed),
        targets: targets
            .iter()
            .map(|(name, url)| NamedTarget {
                name: name.clone(),
                url: url.clone(),
            })
            .collect(),
        vary: vary
            .iter()
            .map(|(key, values)| Vary {
                key: key.clone(),
                values: values.clone(),
            })
            .collect(),
        run: SharedSettings {
            duration_s: info.duration_limit_s,
            requests: info.requests_limit,
            warmup_s: info.warmup_s,
            load_model: info.load_model,
            method: info.method.clone(),
        },
        rows: cells.iter().map(Cell::row).collect(),
    };
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
    s.push_str(",rps,p50_us,p99_us,errors_pct,non_2xx_pct,rps_min,rps_max,runs\n");
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
        let _ = writeln!(
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
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn combinations_cover_every_setting_once() {
        let v =
            |k: &str, vals: &[&str]| (k.to_string(), vals.iter().map(|s| s.to_string()).collect());
        let c = combinations(&[
            v("connections", &["16", "256"]),
            v("keepalive", &["on", "off"]),
        ]);
        let labels: Vec<String> = c
            .iter()
            .map(|s| {
                s.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        assert_eq!(
            labels,
            [
                "connections=16 keepalive=on",
                "connections=16 keepalive=off",
                "connections=256 keepalive=on",
                "connections=256 keepalive=off"
            ]
        );
        assert_eq!(combinations(&[]), vec![vec![]]);
    }

    #[test]
    fn targets_and_settings() {
        assert_eq!(
            target("nginx=http://127.0.0.1:8080/").unwrap(),
            ("nginx".into(), "http://127.0.0.1:8080/".into())
        );
        assert_eq!(
            target("http://127.0.0.1:8080/?a=b").unwrap(),
            ("127.0.0.1:8080".into(), "http://127.0.0.1:8080/?a=b".into())
        );
        assert!(target("x=not a url").is_err());
        assert_eq!(
            setting_flags("keepalive", "off").unwrap(),
            ["--no-keepalive"]
        );
        assert!(setting_flags("keepalive", "on").unwrap().is_empty());
        assert_eq!(setting_flags("http", "2").unwrap(), ["--http2"]);
        assert_eq!(setting_flags("c", "16").unwrap(), ["--connections", "16"]);
        assert_eq!(setting_flags("insecure", "on").unwrap(), ["--insecure"]);
        assert!(setting_flags("json", "x").is_err());
        assert!(setting_flags("nosuch", "1").is_err());
        assert!(setting_flags("insecure", "maybe").is_err());
    }
}
