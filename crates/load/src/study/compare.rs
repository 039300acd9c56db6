//! `compare`: the same load against several targets and settings, interleaved and repeated.
//! Every target x combination of `vary` settings is a cell: the shared run options with the
//! cell's settings and the target's URL, read by the option table and prepared before any
//! traffic. Runs go round-robin over the cells `repeat` times; each row of the document has
//! the medians of its runs.

use crate::options::{self, Form, OptionError};
use crate::{prepare, Prepared, SpecError};
use pelt_stats::Report;
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};

/// The most runs one round may have.
pub const MAX_CELLS: usize = 1000;

/// Run options that belong to the comparison itself, not to a cell: they cannot vary.
const NOT_VARIABLE: &[&str] = &["url", "expect", "io", "sampleEvery"];

/// How the comparison goes (`pelt compare`'s own flags; the runs' are options by name).
#[derive(Debug, Clone)]
pub struct CompareSettings {
    /// `NAME=URL` (or a URL, named by its host and port).
    pub targets: Vec<String>,
    /// `KEY=V1,V2,...`: a run option by its long flag or name (`keepalive=on,off` and
    /// `http=1.1,2` too).
    pub vary: Vec<String>,
    pub repeat: usize,
}

impl Default for CompareSettings {
    fn default() -> Self {
        CompareSettings {
            targets: Vec::new(),
            vary: Vec::new(),
            repeat: 1,
        }
    }
}

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
    /// With `--monitor`: the server's CPU-microseconds per request and its peak RSS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_peak_bytes: Option<u64>,
    /// With `--monitor`: the verdict, as `server-cpu` or `server-cpu+pelt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<String>,
}

impl RunFigures {
    pub fn of(r: &Report) -> RunFigures {
        let server = r.resources.as_ref().and_then(|x| x.server.as_ref());
        RunFigures {
            rps: r.rps,
            p50_us: r.latency_us.p50_us,
            p99_us: r.latency_us.p99_us,
            sent: r.requests.sent,
            completed: r.requests.completed,
            errors: r.requests.errors,
            // A gRPC call's failure is its status: a call that did not end OK counts as a
            // JSON gateway's 503 would.
            non_2xx: match &r.grpc {
                Some(g) => g.calls - g.ok,
                None => r
                    .status
                    .iter()
                    .filter(|(code, _)| !code.starts_with('2'))
                    .map(|(_, n)| n)
                    .sum(),
            },
            duration_s: r.duration_s,
            server_cpu_us_per_request: server.map(|s| s.cpu_us_per_request),
            server_rss_peak_bytes: server.map(|s| s.rss_peak_bytes),
            bottleneck: r.resources.as_ref().map(|x| x.verdict.label()),
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

/// The document `pelt compare` writes with --json (and Node.js's `compare()` resolves to).
#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct NamedTarget {
    pub name: String,
    pub url: String,
}

/// A setting that varies, and its values.
#[derive(Debug, Clone, Serialize)]
pub struct Vary {
    pub key: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SharedSettings {
    pub duration_s: Option<f64>,
    pub requests: Option<u64>,
    pub warmup_s: f64,
    pub load_model: pelt_stats::LoadModel,
    pub method: String,
}

/// A target under one combination of settings.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub target: String,
    pub url: String,
    pub settings: Settings,
    pub median: Median,
    /// With `--monitor`: what limited the row's runs (the verdict most of them gave, the
    /// first of those on a tie), as `server-cpu` or `server-cpu+pelt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<String>,
    pub runs: Vec<RunFigures>,
}

/// A row's settings (key, value), in the order of `vary`; written as a JSON object.
#[derive(Debug, Clone)]
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
    /// With `--monitor`: medians of the server's CPU-microseconds per request and peak RSS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_peak_bytes: Option<f64>,
}

impl CompareDoc {
    /// The keys that vary, in order: the table's setting columns.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.vary.iter().map(|v| v.key.as_str())
    }
}

/// One target under one combination of settings, prepared.
struct Cell {
    target: String,
    url: String,
    settings: Vec<(String, String)>,
    prepared: Prepared,
}

impl Cell {
    /// `target key=value ...`, as progress lines name it.
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

    fn row(&self, runs: Vec<RunFigures>) -> Row {
        let m = |f: fn(&RunFigures) -> f64| median(runs.iter().map(f).collect());
        let median = Median {
            rps: m(|r| r.rps),
            p50_us: m(|r| r.p50_us as f64),
            p99_us: m(|r| r.p99_us as f64),
            errors_pct: m(RunFigures::errors_pct),
            non_2xx_pct: m(RunFigures::non_2xx_pct),
            rps_min: runs.iter().map(|r| r.rps).fold(f64::INFINITY, f64::min),
            rps_max: runs.iter().map(|r| r.rps).fold(0.0, f64::max),
            server_cpu_us_per_request: runs
                .iter()
                .all(|r| r.server_cpu_us_per_request.is_some())
                .then(|| m(|r| r.server_cpu_us_per_request.unwrap_or(0.0))),
            server_rss_peak_bytes: runs
                .iter()
                .all(|r| r.server_rss_peak_bytes.is_some())
                .then(|| m(|r| r.server_rss_peak_bytes.unwrap_or(0) as f64)),
        };
        // The verdict most runs gave (the first of those on a tie).
        let labels: Vec<&String> = runs.iter().filter_map(|r| r.bottleneck.as_ref()).collect();
        let bottleneck = labels
            .iter()
            .rev()
            .max_by_key(|l| labels.iter().filter(|x| x == l).count())
            .map(|l| (*l).clone());
        Row {
            target: self.target.clone(),
            url: self.url.clone(),
            settings: Settings(self.settings.clone()),
            median,
            bottleneck,
            runs,
        }
    }
}

/// A run that ended: which, of how many, and its figures (for progress lines and events).
#[derive(Debug, Clone, Serialize)]
pub struct RunDone {
    pub done: usize,
    pub total: usize,
    /// The round, from 1.
    pub round: usize,
    /// `target key=value ...`.
    pub cell: String,
    pub figures: RunFigures,
}

/// A comparison checked and ready: every cell prepared before any traffic.
pub struct Compare {
    settings: CompareSettings,
    targets: Vec<(String, String)>,
    vary: Vec<(String, Vec<String>)>,
    cells: Vec<Cell>,
}

fn bad(m: impl Into<String>) -> SpecError {
    SpecError(m.into())
}

/// `NAME=URL` or `URL` (named by its host and port).
pub fn target(spec: &str) -> Result<(String, String), SpecError> {
    let (name, url) = match spec.split_once('=') {
        Some((n, u)) if !n.contains('/') && !n.contains(':') => (n.trim().to_string(), u),
        _ => (String::new(), spec),
    };
    let parsed = url::Url::parse(url).map_err(|e| {
        bad(format!(
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

/// Sets `key` to `value` in a cell's options: a run option by its long flag, its short one
/// or its name; switches take on/off; `keepalive`, `http` (1.1, 2, 3) and `tls` (resume,
/// full, 0rtt: HTTP/3's requests in 0-RTT) as their words say.
pub fn apply_setting(
    options: &mut Map<String, Value>,
    key: &str,
    value: &str,
) -> Result<(), SpecError> {
    let on_off = |v: &str| match v {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        _ => Err(bad(format!(
            "invalid --vary {key}={value}: {key} takes on or off"
        ))),
    };
    let (name, v) = match key {
        "keepalive" => ("keepAlive", Value::Bool(on_off(value)?)),
        "http" => {
            let (h2, h3) = match value {
                "1.1" | "1" => (false, false),
                "2" => (true, false),
                "3" => (false, true),
                _ => {
                    return Err(bad(format!(
                        "invalid --vary http={value}: http takes 1.1, 2 or 3"
                    )))
                }
            };
            options.insert("http3".to_string(), Value::Bool(h3));
            ("http2", Value::Bool(h2))
        }
        // The founding benchmark matrix's handshake modes: resumed sessions or full handshakes,
        // and (HTTP/3) requests in 0-RTT.
        "tls" => {
            let (full, early) = match value {
                "resume" | "resumed" => (false, false),
                "full" => (true, false),
                "0rtt" | "early" => (false, true),
                _ => {
                    return Err(bad(format!(
                        "invalid --vary tls={value}: tls takes resume, full or 0rtt"
                    )))
                }
            };
            options.insert("tlsEarlyData".to_string(), Value::Bool(early));
            ("tlsFullHandshake", Value::Bool(full))
        }
        _ => {
            let row = options::RUN.iter().find(|f| {
                !matches!(f.form, Form::Library | Form::Positional)
                    && !NOT_VARIABLE.contains(&f.name)
                    && (f.long == key
                        || f.name == key
                        || (key.len() == 1 && f.short.is_some_and(|c| key.starts_with(c))))
            });
            let Some(row) = row else {
                return Err(bad(format!(
                    "cannot --vary {key}: not a load flag (try connections, threads, rate, \
                     pipeline, streams, method, keepalive, http, tls)"
                )));
            };
            let v = match row.form {
                Form::Switch => Value::Bool(on_off(value)?),
                Form::Negated => Value::Bool(!on_off(value)?),
                _ => Value::String(value.to_string()),
            };
            (row.name, v)
        }
    };
    options.insert(name.to_string(), v);
    Ok(())
}

/// Every combination of the `vary` settings, in the order given (the last varies fastest).
pub fn combinations(vary: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
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

/// `KEY=V1,V2,...` as the key and its values.
fn vary_spec(spec: &str) -> Result<(String, Vec<String>), SpecError> {
    let quoted = crate::values::quote(spec);
    let (key, values) = spec
        .split_once('=')
        .ok_or_else(|| bad(format!("invalid --vary {quoted}: expected KEY=V1,V2")))?;
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if key.is_empty() || values.iter().any(String::is_empty) {
        return Err(bad(format!(
            "invalid --vary {quoted}: expected KEY=V1,V2 with no empty value"
        )));
    }
    Ok((key.to_string(), values))
}

/// Checks a comparison of the run `options` (by name, without a URL) with `settings`, and
/// prepares every cell before any traffic; the error is one line.
pub fn prepare_compare(
    options: &Map<String, Value>,
    settings: &CompareSettings,
) -> Result<Compare, SpecError> {
    if options.get("url").is_some_and(|u| !u.is_null()) {
        return Err(bad(
            "pelt compare takes its targets as --target NAME=URL, not as a plain URL",
        ));
    }
    if settings.targets.is_empty() {
        return Err(bad(
            "no targets: give at least one --target NAME=URL (or a [targets] table in --config)",
        ));
    }
    let mut targets: Vec<(String, String)> = Vec::new();
    for spec in &settings.targets {
        let t = target(spec)?;
        if targets.iter().any(|(n, _)| *n == t.0) {
            return Err(bad(format!(
                "two targets are named {}; name them: --target NAME=URL",
                crate::values::quote(&t.0)
            )));
        }
        targets.push(t);
    }
    let mut vary: Vec<(String, Vec<String>)> = Vec::new();
    for spec in &settings.vary {
        let (key, values) = vary_spec(spec)?;
        if vary.iter().any(|(k, _)| *k == key) {
            return Err(bad(format!("--vary {key} is given twice")));
        }
        vary.push((key, values));
    }
    let combos = combinations(&vary);
    if combos.len() * targets.len() > MAX_CELLS {
        return Err(bad(format!(
            "{} runs per round is more than pelt compare takes ({MAX_CELLS})",
            combos.len() * targets.len()
        )));
    }
    let mut cells = Vec::new();
    for settings in &combos {
        for (name, url) in &targets {
            cells.push(cell(options, name, url, settings)?);
        }
    }
    Ok(Compare {
        settings: settings.clone(),
        targets,
        vary,
        cells,
    })
}

/// The options only a grpc:// target takes: the other targets of a comparison go without.
const GRPC_ONLY: &[&str] = &["proto", "protoset", "importPaths", "reflect", "grpcSendAll"];

/// One cell: the shared options, its settings and its URL, read and prepared.
fn cell(
    options: &Map<String, Value>,
    name: &str,
    url: &str,
    settings: &[(String, String)],
) -> Result<Cell, SpecError> {
    let what = if settings.is_empty() {
        format!("target {name}")
    } else {
        let s: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("target {name} with {}", s.join(" "))
    };
    let mut o = options.clone();
    for (k, v) in settings {
        apply_setting(&mut o, k, v)?;
    }
    o.insert("url".into(), Value::String(url.to_string()));
    if !url.starts_with("grpc") {
        // The descriptors are the grpc:// targets' (one compared with its JSON gateway).
        for key in GRPC_ONLY {
            o.remove(*key);
        }
    }
    let spec = options::spec(&o).map_err(|e: OptionError| bad(format!("{what}: {e}")))?;
    let prepared = prepare(&spec).map_err(|e| bad(format!("{what}: {e}")))?;
    Ok(Cell {
        target: name.to_string(),
        url: url.to_string(),
        settings: settings.to_vec(),
        prepared,
    })
}

impl Compare {
    /// Runs in all: cells x repeat.
    pub fn total(&self) -> usize {
        self.cells.len() * self.settings.repeat
    }

    pub fn targets(&self) -> usize {
        self.targets.len()
    }

    /// Combinations of settings.
    pub fn combinations(&self) -> usize {
        self.cells.len() / self.targets.len().max(1)
    }

    pub fn repeat(&self) -> usize {
        self.settings.repeat
    }

    /// How long one run lasts (its duration and warm-up), seconds, when it has a duration.
    pub fn run_s(&self) -> Option<f64> {
        let info = &self.cells[0].prepared.info;
        info.duration_limit_s.map(|d| d + info.warmup_s)
    }

    /// Runs every cell `repeat` times, round-robin; `on_run` gets each run as it ends. `stop`
    /// ends it (the document is marked interrupted).
    pub fn run(&self, stop: &AtomicBool, on_run: &mut dyn FnMut(&RunDone)) -> CompareDoc {
        let total = self.total();
        let mut runs: Vec<Vec<RunFigures>> = vec![Vec::new(); self.cells.len()];
        let mut done = 0;
        'rounds: for round in 0..self.settings.repeat {
            for (cell, runs) in self.cells.iter().zip(runs.iter_mut()) {
                if stop.load(Ordering::Relaxed) {
                    break 'rounds;
                }
                let report = crate::run(&cell.prepared, stop, &mut |_| {});
                let figures = RunFigures::of(&report);
                done += 1;
                on_run(&RunDone {
                    done,
                    total,
                    round: round + 1,
                    cell: cell.label(),
                    figures: figures.clone(),
                });
                runs.push(figures);
            }
        }
        let info = &self.cells[0].prepared.info;
        CompareDoc {
            pelt_version: env!("CARGO_PKG_VERSION"),
            repeat: self.settings.repeat,
            runs: done,
            interrupted: stop.load(Ordering::Relaxed),
            targets: self
                .targets
                .iter()
                .map(|(name, url)| NamedTarget {
                    name: name.clone(),
                    url: url.clone(),
                })
                .collect(),
            vary: self
                .vary
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
            rows: self
                .cells
                .iter()
                .zip(runs)
                .map(|(c, runs)| c.row(runs))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
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
        let set = |k: &str, v: &str| {
            let mut o = Map::new();
            apply_setting(&mut o, k, v).map(|_| Value::Object(o))
        };
        assert_eq!(
            set("keepalive", "off").unwrap(),
            serde_json::json!({"keepAlive": false})
        );
        assert_eq!(
            set("keepalive", "on").unwrap(),
            serde_json::json!({"keepAlive": true})
        );
        assert_eq!(
            set("http", "2").unwrap(),
            serde_json::json!({"http2": true, "http3": false})
        );
        assert_eq!(
            set("http", "3").unwrap(),
            serde_json::json!({"http2": false, "http3": true})
        );
        assert_eq!(
            set("http", "1.1").unwrap(),
            serde_json::json!({"http2": false, "http3": false})
        );
        assert!(set("http", "4").is_err());
        assert_eq!(
            set("tls", "full").unwrap(),
            serde_json::json!({"tlsFullHandshake": true, "tlsEarlyData": false})
        );
        assert_eq!(
            set("tls", "resume").unwrap(),
            serde_json::json!({"tlsFullHandshake": false, "tlsEarlyData": false})
        );
        assert_eq!(
            set("tls", "0rtt").unwrap(),
            serde_json::json!({"tlsFullHandshake": false, "tlsEarlyData": true})
        );
        assert!(set("tls", "none").is_err());
        assert_eq!(
            set("c", "16").unwrap(),
            serde_json::json!({"connections": "16"})
        );
        assert_eq!(
            set("maxConnections", "9").unwrap(),
            serde_json::json!({"maxConnections": "9"})
        );
        assert_eq!(
            set("insecure", "on").unwrap(),
            serde_json::json!({"insecure": true})
        );
        assert_eq!(
            set("no-keepalive", "on").unwrap(),
            serde_json::json!({"keepAlive": false})
        );
        assert!(set("json", "x").is_err());
        assert!(set("io", "epoll").is_err());
        assert!(set("nosuch", "1").is_err());
        assert!(set("insecure", "maybe").is_err());
    }
}
