//! Options by name, as a program gives them (the Node.js package's `run({...})`): the CLI's
//! long flags in camelCase, each value a JSON string, number, boolean, array or object,
//! checked by the CLI's own parsers into a [`LoadSpec`], with the CLI's one-line messages
//! (`invalid value 'abc' for '--rate <RATE>': ...`, `the argument '--body <TEXT>' cannot be
//! used with '--body-file <PATH>'`), so a bad option reads the same wherever it was typed.
//!
//! A value of the wrong JSON type, or a name that is no option, is a [`Kind::Type`] error; a
//! value of the right type that does not parse or is out of range is [`Kind::Range`]
//! (JavaScript's `TypeError` and `RangeError`).

use crate::sources::{TargetEntry, TargetsFormat, TargetsSource};
use crate::spec::{Body, IoChoice, LoadSpec, Requests, TargetOrder, TlsVersion};
use crate::SpecError;
use crate::{expect, values};
use pelt_engine::{Arrival, Stage};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// What kind of mistake an option holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An unknown name or a value of the wrong type.
    Type,
    /// A value that does not parse, is out of range, or conflicts with another.
    Range,
}

/// A bad option: its kind and the one line that says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    pub kind: Kind,
    pub message: String,
}

impl std::fmt::Display for OptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OptionError {}

/// Every option: its name, the CLI flag and the flag's value name (empty: a switch).
pub const OPTIONS: &[(&str, &str, &str)] = &[
    ("url", "URL", ""),
    ("connections", "connections", "N"),
    ("duration", "duration", "TIME"),
    ("requests", "requests", "N"),
    ("threads", "threads", "N"),
    ("method", "method", "METHOD"),
    ("headers", "header", "HEADER"),
    ("body", "body", "TEXT"),
    ("bodyFile", "body-file", "PATH"),
    ("targets", "targets", "FILE"),
    ("targetsFormat", "targets-format", "FORMAT"),
    ("bodies", "bodies", "FILE"),
    ("order", "order", "ORDER"),
    ("seed", "seed", "N"),
    ("unixSocket", "unix-socket", "PATH"),
    ("keepAlive", "keepalive", ""),
    ("timeout", "timeout", "TIME"),
    ("connectTimeout", "connect-timeout", "TIME"),
    ("rate", "rate", "RATE"),
    ("stages", "stages", "STAGES"),
    ("arrival", "arrival", "KIND"),
    ("maxConnections", "max-connections", "N"),
    ("batchWindow", "batch-window", "TIME"),
    ("pipeline", "pipeline", "D"),
    ("http2", "http2", ""),
    ("streams", "streams", "N"),
    ("connectRate", "connect-rate", "N"),
    ("cacert", "cacert", "FILE"),
    ("insecure", "insecure", ""),
    ("tlsFullHandshake", "tls-full-handshake", ""),
    ("tlsVersion", "tls-version", "VERSION"),
    ("sni", "sni", "NAME"),
    ("cert", "cert", "FILE"),
    ("key", "key", "FILE"),
    ("io", "io", "BACKEND"),
    ("warmup", "warmup", "TIME"),
    ("grace", "grace", "TIME"),
    ("expect", "expect", "EXPR"),
    // Library options with no CLI flag: keep every N-th request that ends, per thread; a
    // body that is not text (what a fleet's coordinator sends its agents for --body-file).
    ("sampleEvery", "", "N"),
    ("bodyBase64", "", "BASE64"),
];

/// The flag as clap shows it in messages: `--rate <RATE>`, `--http2`.
fn shown(name: &str) -> String {
    match OPTIONS.iter().find(|o| o.0 == name) {
        Some((name, "", _)) => name.to_string(),
        Some((_, flag, "")) => format!("--{flag}"),
        Some((_, "URL", _)) => "<URL>".into(),
        Some((_, flag, value)) => format!("--{flag} <{value}>"),
        None => name.to_string(),
    }
}

fn type_error(message: String) -> OptionError {
    OptionError {
        kind: Kind::Type,
        message,
    }
}

fn range_error(message: impl Into<String>) -> OptionError {
    OptionError {
        kind: Kind::Range,
        message: message.into(),
    }
}

/// The JSON type's name, for messages.
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One option's value, with what it is for messages.
struct Opt<'a> {
    name: &'a str,
    value: &'a Value,
}

impl Opt<'_> {
    fn wrong(&self, wanted: &str) -> OptionError {
        type_error(format!(
            "option '{}' must be {wanted}, not {}",
            self.name,
            type_of(self.value)
        ))
    }

    /// A string as typed, or a number as its decimal text (the CLI's input either way).
    fn text(&self) -> Result<String, OptionError> {
        match self.value {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            _ => Err(self.wrong("a string or a number")),
        }
    }

    /// A string only.
    fn string(&self) -> Result<String, OptionError> {
        match self.value {
            Value::String(s) => Ok(s.clone()),
            _ => Err(self.wrong("a string")),
        }
    }

    fn boolean(&self) -> Result<bool, OptionError> {
        self.value.as_bool().ok_or_else(|| self.wrong("a boolean"))
    }

    /// Parses the text with the CLI's parser; its error reads as clap's.
    fn parse<T>(&self, parser: impl Fn(&str) -> Result<T, String>) -> Result<T, OptionError> {
        let text = self.text()?;
        parser(&text).map_err(|e| {
            range_error(format!(
                "invalid value '{text}' for '{}': {e}",
                shown(self.name)
            ))
        })
    }

    /// One of `choices`, as clap's value enums.
    fn choice<T: Copy>(&self, choices: &[(&str, T)]) -> Result<T, OptionError> {
        let text = self.text()?;
        choices
            .iter()
            .find(|c| c.0 == text)
            .map(|c| c.1)
            .ok_or_else(|| {
                let names: Vec<&str> = choices.iter().map(|c| c.0).collect();
                range_error(format!(
                    "invalid value '{text}' for '{}' [possible values: {}]",
                    shown(self.name),
                    names.join(", ")
                ))
            })
    }

    /// A list: an array of strings (or numbers), or one string.
    fn list(&self) -> Result<Vec<String>, OptionError> {
        match self.value {
            Value::Array(items) => items
                .iter()
                .map(|v| {
                    Opt {
                        name: self.name,
                        value: v,
                    }
                    .text()
                })
                .collect::<Result<_, _>>()
                .map_err(|_| self.wrong("a string or an array of strings")),
            Value::String(s) => Ok(vec![s.clone()]),
            _ => Err(self.wrong("a string or an array of strings")),
        }
    }
}

/// `headers`: `{"Name": "value"}`, or `["Name: value", ...]`, or one `"Name: value"`.
fn headers(o: &Opt) -> Result<Vec<String>, OptionError> {
    match o.value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok(format!("{k}: {s}")),
                Value::Number(n) => Ok(format!("{k}: {n}")),
                _ => Err(type_error(format!(
                    "header '{k}' must be a string or a number, not {}",
                    type_of(v)
                ))),
            })
            .collect(),
        _ => o
            .list()
            .map_err(|_| o.wrong("an object of names and values, or an array of 'Name: value'")),
    }
}

/// `stages`: `"30s:1k,1m:10k"`, or `[{"duration": "30s", "target": 1000}, ...]`.
fn stages(o: &Opt) -> Result<Vec<Stage>, OptionError> {
    let Value::Array(items) = o.value else {
        return o.parse(values::stages);
    };
    let typed = "an array of {duration, target} objects";
    let text: Vec<String> = items
        .iter()
        .map(|item| {
            let field = |k: &str| {
                item.get(k).map(|v| {
                    Opt {
                        name: o.name,
                        value: v,
                    }
                    .text()
                })
            };
            match (field("duration"), field("target")) {
                (Some(Ok(d)), Some(Ok(t))) => Ok(format!("{d}:{t}")),
                _ => Err(o.wrong(typed)),
            }
        })
        .collect::<Result<_, _>>()?;
    let joined = Value::String(text.join(","));
    Opt {
        name: o.name,
        value: &joined,
    }
    .parse(values::stages)
}

/// `targets`: a file's path, or the targets themselves as JSON-lines objects.
fn targets(o: &Opt) -> Result<TargetsSource, OptionError> {
    match o.value {
        Value::String(path) => Ok(TargetsSource::File(PathBuf::from(path))),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(k, item)| {
                let at = format!("option 'targets' entry {}", k + 1);
                crate::sources::json_entry(item, &at, k + 1).map_err(range_error)
            })
            .collect::<Result<Vec<TargetEntry>, _>>()
            .map(TargetsSource::List),
        _ => Err(o.wrong("a file's path or an array of targets")),
    }
}

/// The CLI's `the argument 'A' cannot be used with 'B'`, when both are given.
fn conflict(given: &Map<String, Value>, a: &str, b: &str) -> Result<(), OptionError> {
    let set = |k: &str| {
        given
            .get(k)
            .is_some_and(|v| !v.is_null() && *v != Value::Bool(false))
    };
    if set(a) && set(b) {
        return Err(range_error(format!(
            "the argument '{}' cannot be used with '{}'",
            shown(a),
            shown(b)
        )));
    }
    Ok(())
}

/// The CLI's `the following required arguments were not provided: B`, when `a` is given
/// without `b`.
fn requires(given: &Map<String, Value>, a: &str, b: &str) -> Result<(), OptionError> {
    let set = |k: &str| given.get(k).is_some_and(|v| !v.is_null());
    if set(a) && !set(b) {
        return Err(range_error(format!(
            "the following required arguments were not provided: {}",
            shown(b)
        )));
    }
    Ok(())
}

/// Builds the spec of `options` (names as in [`OPTIONS`]; `null` is the same as absent).
/// Checks names, types and values, and the CLI's conflicts; [`crate::prepare`] checks the
/// rest, as it does for the CLI.
pub fn spec(options: &Map<String, Value>) -> Result<LoadSpec, OptionError> {
    for name in options.keys() {
        if !OPTIONS.iter().any(|o| o.0 == name) {
            return Err(type_error(format!("unknown option '{name}'")));
        }
    }
    for (a, b) in [
        ("body", "bodyFile"),
        ("body", "bodyBase64"),
        ("bodyBase64", "bodyFile"),
        ("bodies", "bodyBase64"),
        ("bodies", "body"),
        ("bodies", "bodyFile"),
        ("bodies", "targets"),
        ("http2", "pipeline"),
        ("cacert", "insecure"),
    ] {
        conflict(options, a, b)?;
    }
    if options.get("http2") == Some(&Value::Bool(true))
        && options.get("keepAlive") == Some(&Value::Bool(false))
    {
        return Err(range_error(
            "the argument '--http2' cannot be used with '--no-keepalive'",
        ));
    }
    for (a, b) in [
        ("arrival", "rate"),
        ("maxConnections", "rate"),
        ("batchWindow", "rate"),
        ("streams", "http2"),
        ("cert", "key"),
        ("key", "cert"),
        ("targetsFormat", "targets"),
    ] {
        requires(options, a, b)?;
    }
    let url = match options.get("url") {
        Some(Value::String(u)) => u.clone(),
        Some(v) if !v.is_null() => {
            return Err(Opt {
                name: "url",
                value: v,
            }
            .wrong("a string"))
        }
        _ if options.get("targets").is_some_and(|v| !v.is_null()) => String::new(),
        _ => {
            return Err(type_error(
                "option 'url' is required (or give 'targets')".into(),
            ))
        }
    };
    let mut s = LoadSpec::new(url);
    let mut targets_format = TargetsFormat::Auto;
    for (name, value) in options {
        if value.is_null() || name == "url" {
            continue;
        }
        let o = Opt { name, value };
        match name.as_str() {
            "connections" => s.connections = o.parse(values::connections)?,
            "duration" => s.duration = Some(o.parse(values::duration)?),
            "requests" => s.requests = Some(o.parse(values::count)?),
            "threads" => s.threads = Some(o.parse(values::threads)?),
            "method" => s.method = o.string()?,
            "headers" => s.headers = headers(&o)?,
            "body" => {
                s.body = match value {
                    Value::String(b) => Body::Bytes(b.clone().into_bytes()),
                    _ => return Err(o.wrong("a string")),
                }
            }
            "bodyFile" => s.body = Body::File(PathBuf::from(o.string()?)),
            "bodyBase64" => {
                use base64::Engine as _;
                let text = o.string()?;
                s.body = Body::Bytes(
                    base64::engine::general_purpose::STANDARD
                        .decode(text.trim())
                        .map_err(|e| range_error(format!("option 'bodyBase64': {e}")))?,
                )
            }
            "targets" => {
                s.requests_from = Requests::Targets {
                    source: targets(&o)?,
                    format: TargetsFormat::Auto,
                }
            }
            "targetsFormat" => {
                targets_format = o.choice(&[
                    ("auto", TargetsFormat::Auto),
                    ("http", TargetsFormat::Http),
                    ("json", TargetsFormat::Json),
                ])?
            }
            "bodies" => s.requests_from = Requests::Bodies(PathBuf::from(o.string()?)),
            "order" => {
                s.order = o.choice(&[
                    ("sequential", TargetOrder::Sequential),
                    ("random", TargetOrder::Random),
                ])?
            }
            "seed" => s.seed = Some(o.parse(|t| t.parse::<u64>().map_err(|e| e.to_string()))?),
            "unixSocket" => s.unix_socket = Some(PathBuf::from(o.string()?)),
            "keepAlive" => s.keep_alive = o.boolean()?,
            "timeout" => s.timeout = o.parse(values::duration)?,
            "connectTimeout" => s.connect_timeout = o.parse(values::duration)?,
            "rate" => s.rate = Some(o.parse(values::rate_or_zero)?),
            "stages" => s.stages = stages(&o)?,
            "arrival" => {
                s.arrival = o.choice(&[
                    ("constant", Arrival::Constant),
                    ("poisson", Arrival::Poisson),
                ])?
            }
            "maxConnections" => s.max_connections = Some(o.parse(values::connections)?),
            "batchWindow" => s.batch_window = o.parse(values::batch_window)?,
            "pipeline" => s.pipeline = o.parse(values::pipeline)?,
            "http2" => s.http2 = o.boolean()?,
            "streams" => s.streams = Some(o.parse(values::streams)?),
            "connectRate" => s.connect_rate = Some(o.parse(values::per_second)?),
            "cacert" => s.tls.cacert = Some(PathBuf::from(o.string()?)),
            "insecure" => s.tls.insecure = o.boolean()?,
            "tlsFullHandshake" => s.tls.full_handshake = o.boolean()?,
            "tlsVersion" => {
                s.tls.version =
                    Some(o.choice(&[("1.2", TlsVersion::V1_2), ("1.3", TlsVersion::V1_3)])?)
            }
            "sni" => s.tls.sni = Some(o.string()?),
            "cert" => s.tls.cert = Some(PathBuf::from(o.string()?)),
            "key" => s.tls.key = Some(PathBuf::from(o.string()?)),
            "io" => {
                s.io = o.choice(&[
                    ("auto", IoChoice::Auto),
                    ("uring", IoChoice::Uring),
                    ("epoll", IoChoice::Epoll),
                ])?
            }
            "warmup" => s.warmup = Some(o.parse(values::duration)?),
            "grace" => s.grace = o.parse(values::duration_or_zero)?,
            "sampleEvery" => s.sample_every = Some(o.parse(values::count)?),
            "expect" => {
                s.expect = o
                    .list()?
                    .iter()
                    .map(|e| {
                        let one = Value::String(e.clone());
                        Opt { name, value: &one }.parse(expect::parse)
                    })
                    .collect::<Result<_, _>>()?
            }
            _ => unreachable!("every name was checked against OPTIONS"),
        }
    }
    if let Requests::Targets { format, .. } = &mut s.requests_from {
        *format = targets_format;
    }
    Ok(s)
}

/// A duration as the options read it back, to the microsecond.
fn duration_text(d: std::time::Duration) -> Value {
    Value::String(format!("{}us", d.as_micros()))
}

/// The options of `spec` (the inverse of [`spec`]), with every file it names read and
/// inlined: the body, the targets or bodies (as a list of targets), so another process can
/// run it without them. TLS files (`cacert`, `cert`, `key`) and `unixSocket` stay paths: they
/// belong to the machine that connects. Thresholds are left out (they judge a whole run).
/// `seed` is the one to give (the spec's, or one the caller chose for it).
pub fn inline(spec: &LoadSpec, seed: Option<u64>) -> Result<Map<String, Value>, SpecError> {
    use base64::Engine as _;
    let b64 = |b: &[u8]| Value::String(base64::engine::general_purpose::STANDARD.encode(b));
    let d = LoadSpec::new("");
    let mut o = Map::new();
    let mut put = |k: &str, v: Value| {
        o.insert(k.to_string(), v);
    };
    put("url", Value::String(spec.url.clone()));
    let body = match &spec.body {
        Body::None => Vec::new(),
        Body::Bytes(b) => b.clone(),
        Body::File(p) => std::fs::read(p)
            .map_err(|e| SpecError(format!("cannot read --body-file {}: {e}", p.display())))?,
    };
    // A bodies file's entries carry the body; the command line's is for targets that have none.
    let bodies = matches!(spec.requests_from, Requests::Bodies(_));
    match std::str::from_utf8(&body) {
        _ if body.is_empty() || bodies => {}
        Ok(text) => put("body", Value::String(text.into())),
        Err(_) => put("bodyBase64", b64(&body)),
    }
    if !matches!(spec.requests_from, Requests::One) {
        let (list, _) = crate::prepare::entries(spec, &body)?.unwrap_or_default();
        let targets = list
            .iter()
            .map(|t| {
                let mut e = Map::new();
                e.insert("url".into(), Value::String(t.url.clone()));
                if let Some(m) = &t.method {
                    e.insert("method".into(), Value::String(m.clone()));
                }
                if !t.headers.is_empty() {
                    e.insert("headers".into(), serde_json::json!(t.headers));
                }
                if let Some(b) = &t.body {
                    e.insert("body_base64".into(), b64(b));
                }
                if let Some(n) = &t.name {
                    e.insert("name".into(), Value::String(n.clone()));
                }
                Value::Object(e)
            })
            .collect();
        put("targets", Value::Array(targets));
    }
    if spec.order == TargetOrder::Random {
        put("order", "random".into());
    }
    if let Some(seed) = seed.or(spec.seed) {
        put("seed", seed.into());
    }
    if let Some(p) = &spec.unix_socket {
        put("unixSocket", p.display().to_string().into());
    }
    put("method", spec.method.clone().into());
    if !spec.headers.is_empty() {
        put("headers", serde_json::json!(spec.headers));
    }
    if !spec.keep_alive {
        put("keepAlive", false.into());
    }
    put("connections", spec.connections.into());
    if let Some(t) = spec.threads {
        put("threads", t.into());
    }
    if let Some(dur) = spec.duration {
        put("duration", duration_text(dur));
    }
    if let Some(n) = spec.requests {
        put("requests", n.into());
    }
    put("timeout", duration_text(spec.timeout));
    put("connectTimeout", duration_text(spec.connect_timeout));
    if let Some(r) = spec.rate {
        put("rate", r.into());
        put(
            "arrival",
            match spec.arrival {
                Arrival::Constant => "constant",
                Arrival::Poisson => "poisson",
            }
            .into(),
        );
        if let Some(m) = spec.max_connections {
            put("maxConnections", m.into());
        }
        put("batchWindow", duration_text(spec.batch_window));
    }
    if !spec.stages.is_empty() {
        let stages = spec
            .stages
            .iter()
            .map(|st| serde_json::json!({"duration": duration_text(st.duration), "target": st.target}))
            .collect();
        put("stages", Value::Array(stages));
    }
    if let Some(n) = spec.sample_every {
        put("sampleEvery", n.into());
    }
    if spec.pipeline != d.pipeline {
        put("pipeline", spec.pipeline.into());
    }
    if spec.http2 {
        put("http2", true.into());
        if let Some(n) = spec.streams {
            put("streams", n.into());
        }
    }
    if let Some(r) = spec.connect_rate {
        put("connectRate", r.into());
    }
    let t = &spec.tls;
    let path = |p: &std::path::Path| Value::String(p.display().to_string());
    if let Some(p) = &t.cacert {
        put("cacert", path(p));
    }
    if t.insecure {
        put("insecure", true.into());
    }
    if t.full_handshake {
        put("tlsFullHandshake", true.into());
    }
    if let Some(v) = t.version {
        put("tlsVersion", v.name().into());
    }
    if let Some(n) = &t.sni {
        put("sni", n.clone().into());
    }
    if let (Some(c), Some(k)) = (&t.cert, &t.key) {
        put("cert", path(c));
        put("key", path(k));
    }
    put(
        "io",
        match spec.io {
            IoChoice::Auto => "auto",
            IoChoice::Uring => "uring",
            IoChoice::Epoll => "epoll",
        }
        .into(),
    );
    if let Some(w) = spec.warmup {
        put("warmup", duration_text(w));
    }
    put("grace", duration_text(spec.grace));
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn spec_of(v: Value) -> Result<LoadSpec, OptionError> {
        spec(v.as_object().unwrap())
    }

    fn err(v: Value) -> OptionError {
        spec_of(v).unwrap_err()
    }

    #[test]
    fn names_and_values_become_the_spec() {
        let s = spec_of(json!({
            "url": "http://127.0.0.1:1/", "connections": 8, "duration": "2s", "requests": "10k",
            "threads": 2, "method": "POST", "headers": {"X-A": "1", "X-N": 2},
            "body": "{}", "keepAlive": true, "timeout": 3, "rate": "20k",
            "stages": [{"duration": "1s", "target": 100}, {"duration": 0, "target": "1k"}],
            "arrival": "poisson", "maxConnections": 64, "expect": ["p99<20ms", "errors<1%"],
            "io": "epoll", "seed": 7, "grace": 0, "connectRate": "1k", "batchWindow": "250us",
        }))
        .unwrap();
        assert_eq!(s.connections, 8);
        assert_eq!(s.duration, Some(Duration::from_secs(2)));
        assert_eq!(s.requests, Some(10_000));
        assert_eq!(s.threads, Some(2));
        assert_eq!(s.headers, ["X-A: 1", "X-N: 2"]);
        assert_eq!(s.timeout, Duration::from_secs(3));
        assert_eq!(s.rate, Some(20_000.0));
        assert_eq!(s.stages.len(), 2);
        assert_eq!(s.stages[1].target, 1000.0);
        assert_eq!(s.arrival, Arrival::Poisson);
        assert_eq!(s.expect.len(), 2);
        assert_eq!((s.seed, s.grace), (Some(7), Duration::ZERO));
        assert_eq!(s.io, IoChoice::Epoll);
        assert_eq!(s.batch_window, Duration::from_micros(250));
        assert!(matches!(s.body, Body::Bytes(ref b) if b == b"{}"));
        let s = spec_of(json!({"url": "http://x/", "keepAlive": false, "stages": "1s:5"})).unwrap();
        assert!(!s.keep_alive);
        assert_eq!(s.stages.len(), 1);
        // Targets in the options themselves.
        let s = spec_of(
            json!({"targets": [{"url": "http://x/a"}, {"method": "POST", "url": "http://x/b"}]}),
        )
        .unwrap();
        assert!(matches!(
            s.requests_from,
            Requests::Targets { source: TargetsSource::List(ref l), .. } if l.len() == 2
        ));
    }

    #[test]
    fn mistakes_read_as_the_cli_says_them() {
        let url = "http://127.0.0.1:1/";
        for (v, kind, says) in [
            (json!({"url": url, "bogus": 1}), Kind::Type, "unknown option 'bogus'"),
            (json!({"connections": 2}), Kind::Type, "option 'url' is required"),
            (json!({"url": url, "connections": true}), Kind::Type, "option 'connections' must be a string or a number, not a boolean"),
            (json!({"url": url, "rate": "abc"}), Kind::Range, "invalid value 'abc' for '--rate <RATE>': expected requests per second like 500, 20k or 0.5"),
            (json!({"url": url, "connections": 0}), Kind::Range, "invalid value '0' for '--connections <N>': must be greater than zero"),
            (json!({"url": url, "arrival": "burst", "rate": 1}), Kind::Range, "invalid value 'burst' for '--arrival <KIND>' [possible values: constant, poisson]"),
            (json!({"url": url, "body": "a", "bodyFile": "b"}), Kind::Range, "the argument '--body <TEXT>' cannot be used with '--body-file <PATH>'"),
            (json!({"url": url, "arrival": "poisson"}), Kind::Range, "the following required arguments were not provided: --rate <RATE>"),
            (json!({"url": url, "http2": true, "pipeline": 4}), Kind::Range, "the argument '--http2' cannot be used with '--pipeline <D>'"),
            (json!({"url": url, "headers": 5}), Kind::Type, "option 'headers' must be an object"),
            (json!({"url": url, "stages": [{"duration": "1s"}]}), Kind::Type, "an array of {duration, target} objects"),
            (json!({"url": url, "expect": "p99"}), Kind::Range, "invalid value 'p99' for '--expect <EXPR>'"),
            (json!({"url": url, "duration": "10x"}), Kind::Range, "invalid value '10x' for '--duration <TIME>'"),
        ] {
            let e = err(v.clone());
            assert_eq!(e.kind, kind, "{v}: {e}");
            assert!(e.message.contains(says), "{v}: {e}");
            assert!(!e.message.contains('\n'));
        }
    }

    /// The spec as a comparable text (Expectation has no equality; thresholds are not
    /// inlined anyway).
    fn shape(s: &LoadSpec) -> String {
        let mut s = s.clone();
        s.expect.clear();
        // A target's line is where it was read (a list given back numbers them afresh).
        if let Requests::Targets {
            source: TargetsSource::List(list),
            ..
        } = &mut s.requests_from
        {
            list.iter_mut().for_each(|t| t.line = 0);
        }
        format!("{s:?}")
    }

    #[test]
    fn inlined_options_give_back_the_same_spec() {
        let url = "http://127.0.0.1:1/x";
        for v in [
            json!({"url": url}),
            json!({"url": url, "connections": 7, "threads": 3, "duration": "1500ms",
                   "requests": "20k", "method": "PUT", "headers": ["A: b", "C: d"],
                   "body": "hello", "keepAlive": false, "timeout": "3s",
                   "connectTimeout": "250ms", "warmup": "2s", "grace": "0", "io": "epoll"}),
            json!({"url": url, "rate": 1234.5, "arrival": "poisson", "maxConnections": 50,
                   "batchWindow": "1ms", "stages": "10s:2k,5s:0", "connectRate": 100,
                   "order": "random", "seed": 42, "sampleEvery": 10,
                   "targets": [{"url": url, "method": "POST", "body": "b", "name": "n"}, {"url": url}]}),
            json!({"url": "https://127.0.0.1:1/", "http2": true, "streams": 20, "insecure": true,
                   "tlsVersion": "1.3", "sni": "example.com", "tlsFullHandshake": true}),
            json!({"url": url, "pipeline": 8, "unixSocket": "/tmp/x.sock"}),
        ] {
            let given = spec_of(v.clone()).unwrap();
            let back = spec(&inline(&given, None).unwrap()).unwrap();
            assert_eq!(shape(&back), shape(&given), "{v}");
        }
    }

    #[test]
    fn inlining_reads_the_files_another_machine_lacks() {
        let dir = std::env::temp_dir().join(format!("pelt-inline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = "http://127.0.0.1:1/";
        // A binary body file travels as base64.
        let body = dir.join("body.bin");
        std::fs::write(&body, [0u8, 159, 146, 150, 10]).unwrap();
        let s = spec_of(json!({"url": url, "bodyFile": body.display().to_string()})).unwrap();
        let o = inline(&s, None).unwrap();
        assert_eq!(o["bodyBase64"], "AJ+Slgo=");
        assert!(
            matches!(spec(&o).unwrap().body, Body::Bytes(ref b) if b == &[0, 159, 146, 150, 10])
        );
        // A targets file and a bodies file travel as the targets they hold.
        let targets = dir.join("targets.txt");
        std::fs::write(&targets, format!("GET {url}a\n\nPOST {url}b\nX-Y: z\n")).unwrap();
        let s = spec_of(json!({"url": url, "targets": targets.display().to_string()})).unwrap();
        let o = inline(&s, Some(7)).unwrap();
        assert_eq!(o["seed"], 7);
        assert_eq!(
            o["targets"],
            json!([{"url": format!("{url}a"), "method": "GET"},
                   {"url": format!("{url}b"), "method": "POST", "headers": ["X-Y: z"]}])
        );
        let bodies = dir.join("bodies.txt");
        std::fs::write(&bodies, "{\"a\":1}\n{\"a\":2}\n").unwrap();
        let s = spec_of(json!({"url": url, "bodies": bodies.display().to_string()})).unwrap();
        let o = inline(&s, None).unwrap();
        assert_eq!(o["targets"][1]["body_base64"], "eyJhIjoyfQ==");
        assert!(o.get("body").is_none() && o.get("bodies").is_none());
        // A file that cannot be read is the CLI's one line.
        let s = spec_of(json!({"url": url, "bodyFile": dir.join("nope").display().to_string()}))
            .unwrap();
        assert!(inline(&s, None)
            .unwrap_err()
            .0
            .starts_with("cannot read --body-file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
