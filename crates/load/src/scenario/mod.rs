//! Scenarios: user journeys from a file (`--scenario shop.yaml`), compiled once, before the
//! run, into a [`Program`]: per scenario, the steps a virtual user runs once (a login) and the
//! steps of its iteration, each request's text cut into literals and `{{variables}}`, its
//! captures (JSON pointer, regex, header, status) and checks compiled, and every mistake in the
//! file found here, as one line naming the file, line and column, before any traffic.
//!
//! The format is Artillery's shape (what its and drill's users already write): a `config`
//! (the target, headers every request sends, data files), and `scenarios`, each a `flow` of
//! requests by method (`- get: {url: /products}`) and think times, with a `once` list beside it.
//! The compiled types, and how captures and checks read a response, are the engine's
//! (`pelt_engine::scenario`): the engine runs them.

mod file;

use crate::ScenarioSource;
use file::{CaptureDef, CheckDef, Code, GrpcDef, Item, OnFailure, RequestDef, StatusDef, ThinkDef};
pub use pelt_engine::scenario::*;
use regex::Regex;
use serde_saphyr::{Location, Spanned};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// pelt's own template names, which `{{...}}` keeps for the request's template.
const BUILTINS: &[&str] = &["seq", "uuid", "now_ms", "rand", "line"];

/// Compiles the scenario file at `path`: every mistake is one line, `FILE:LINE:COL: what`.
pub fn load(path: &Path) -> Result<Program, String> {
    load_source(&ScenarioSource::File(path.to_path_buf())).map(|(program, _)| program)
}

/// Compiles a scenario from where it comes. Returns the program and every file it read (data
/// and body files, by the names the scenario gives them): with the text, what another process
/// needs to compile it (a fleet's agents).
pub fn load_source(source: &ScenarioSource) -> Result<(Program, BTreeMap<String, String>), String> {
    match source {
        ScenarioSource::File(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the scenario file {}: {e}", path.display()))?;
            let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            compile_from(&text, path, Files::Dir(dir))
        }
        ScenarioSource::Inline { name, text, files } => {
            let from = match files {
                Some(files) => Files::Shipped(files),
                None => Files::Dir(PathBuf::from(".")),
            };
            compile_from(text, Path::new(name), from)
        }
    }
}

/// A scenario as another process compiles it: its text and the files it read, inline
/// (`{"file", "text", "files"}`, the form the options read back as a [`ScenarioSource`]).
pub fn inline(source: &ScenarioSource) -> Result<serde_json::Value, String> {
    let (_, files) = load_source(source)?;
    let text = match source {
        ScenarioSource::File(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the scenario file {}: {e}", path.display()))?,
        ScenarioSource::Inline { text, .. } => text.clone(),
    };
    Ok(serde_json::json!({"file": source.name(), "text": text, "files": files}))
}

/// Where a scenario's data and body files are read from.
enum Files<'a> {
    /// This folder.
    Dir(PathBuf),
    /// Only these (shipped with the scenario).
    Shipped(&'a BTreeMap<String, String>),
}

/// Compiles a scenario file's text (`path` names it in messages and anchors data files).
pub fn compile(text: &str, path: &Path) -> Result<Program, String> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    compile_from(text, path, Files::Dir(dir)).map(|(program, _)| program)
}

fn compile_from(
    text: &str,
    path: &Path,
    files: Files,
) -> Result<(Program, BTreeMap<String, String>), String> {
    let file: file::File = serde_saphyr::from_str(text).map_err(|e| {
        let message = e.without_snippet().to_string();
        // The message ends with its place; the line says it first.
        let message = match message.rfind(" at line ") {
            Some(at) => message[..at].to_string(),
            None => message,
        };
        match e.location() {
            Some(l) => format!("{}:{}:{}: {message}", path.display(), l.line(), l.column()),
            None => format!("{}: {message}", path.display()),
        }
    })?;
    let compiler = Compiler {
        path,
        files,
        read: BTreeMap::new(),
        program: Program {
            target: None,
            variables: Vec::new(),
            data: Vec::new(),
            scenarios: Vec::new(),
            steps: Vec::new(),
            checks: Vec::new(),
            captures: Vec::new(),
            capture_slots: 0,
        },
        known: Vec::new(),
        headers: Vec::new(),
    };
    compiler.file(file)
}

struct Compiler<'a> {
    path: &'a Path,
    files: Files<'a>,
    /// The data and body files read, by the names the scenario gives them.
    read: BTreeMap<String, String>,
    program: Program,
    /// The variables a step may read at this point of the walk.
    known: Vec<bool>,
    /// config.headers, compiled.
    headers: Vec<(String, Text)>,
}

impl Compiler<'_> {
    fn at(&self, l: &Location, message: impl std::fmt::Display) -> String {
        format!(
            "{}:{}:{}: {message}",
            self.path.display(),
            l.line(),
            l.column()
        )
    }

    /// The file the scenario names `f` (a data or body file), read as `what`.
    fn read_file(&mut self, f: &Spanned<String>, what: &str) -> Result<String, String> {
        let name = &f.value;
        let text = match &self.files {
            Files::Dir(dir) => {
                let path = dir.join(name);
                std::fs::read_to_string(&path).map_err(|e| {
                    self.at(
                        &f.referenced,
                        format!("cannot read {what} {}: {e}", path.display()),
                    )
                })?
            }
            Files::Shipped(files) => files.get(name).cloned().ok_or_else(|| {
                self.at(
                    &f.referenced,
                    format!("{what} {name} was not sent with the scenario"),
                )
            })?,
        };
        self.read.insert(name.clone(), text.clone());
        Ok(text)
    }

    fn var(&mut self, name: &str) -> u16 {
        if let Some(i) = self.program.variables.iter().position(|v| v == name) {
            return i as u16;
        }
        self.program.variables.push(name.to_string());
        self.known.push(false);
        (self.program.variables.len() - 1) as u16
    }

    fn file(mut self, file: file::File) -> Result<(Program, BTreeMap<String, String>), String> {
        if let Some(t) = &file.config.target {
            let url = url::Url::parse(&t.value)
                .map_err(|e| self.at(&t.referenced, format!("target '{}': {e}", t.value)))?;
            if !matches!(url.scheme(), "http" | "https" | "grpc" | "grpcs") {
                return Err(self.at(
                    &t.referenced,
                    "target must be an http://, https://, grpc:// or grpcs:// URL",
                ));
            }
            self.program.target = Some(t.value.clone());
        }
        for d in &file.config.data {
            self.feeder(d)?;
        }
        let data_vars = self.known.clone();
        for (name, value) in &file.config.headers {
            let text = self.text(value)?;
            self.headers.push((name.to_ascii_lowercase(), text));
        }
        if file.scenarios.is_empty() {
            return Err(format!("{}: no scenarios", self.path.display()));
        }
        self.one_kind(&file)?;
        for (k, s) in file.scenarios.iter().enumerate() {
            // Each scenario's users start with the data's variables only.
            self.known.clone_from(&data_vars);
            self.known.resize(self.program.variables.len(), false);
            let def = &s.value;
            let name = def
                .name
                .clone()
                .unwrap_or_else(|| format!("scenario {}", k + 1));
            let weight = match &def.weight {
                None => 1.0,
                Some(w) if w.value.is_finite() && w.value > 0.0 => w.value,
                Some(w) => {
                    return Err(
                        self.at(&w.referenced, format!("weight {} must be above 0", w.value))
                    )
                }
            };
            if def.flow.is_empty() {
                return Err(self.at(
                    &s.referenced,
                    format!("scenario '{name}' has an empty flow"),
                ));
            }
            let once = self.ops(&def.once)?;
            let flow = self.ops(&def.flow)?;
            if !flow.iter().any(|op| matches!(op, Op::Request(_))) {
                return Err(self.at(
                    &s.referenced,
                    format!("scenario '{name}': its flow sends no request"),
                ));
            }
            self.program.scenarios.push(Scenario {
                name,
                weight,
                once,
                flow,
            });
        }
        Ok((self.program, self.read))
    }

    /// A file's steps are all HTTP requests or all gRPC calls, as its target is one or the
    /// other: the first step of the other kind is the error.
    fn one_kind(&self, file: &file::File) -> Result<(), String> {
        let target_grpc = file
            .config
            .target
            .as_ref()
            .map(|t| t.value.starts_with("grpc"));
        let mut first: Option<bool> = target_grpc;
        let items = file
            .scenarios
            .iter()
            .flat_map(|s| s.value.once.iter().chain(&s.value.flow));
        for item in items {
            let grpc = match &item.value {
                Item::Think(_) => continue,
                Item::Grpc(_) => true,
                _ => false,
            };
            match first {
                None => first = Some(grpc),
                Some(kind) if kind == grpc => {}
                Some(_) => {
                    return Err(self.at(
                        &item.referenced,
                        match (grpc, target_grpc) {
                            (true, Some(false)) => "a grpc step needs a grpc:// or grpcs:// target",
                            (false, Some(true)) => {
                                "a grpc:// target's steps are grpc calls (- grpc: {call: ...})"
                            }
                            _ => "a scenario file's steps are all HTTP requests or all grpc calls",
                        },
                    ))
                }
            }
        }
        Ok(())
    }

    fn ops(&mut self, items: &[Spanned<Item>]) -> Result<Vec<Op>, String> {
        items
            .iter()
            .map(|item| {
                Ok(match &item.value {
                    Item::Think(t) => Op::Think(self.think(t)?),
                    Item::Get(r) => self.request("GET", r)?,
                    Item::Post(r) => self.request("POST", r)?,
                    Item::Put(r) => self.request("PUT", r)?,
                    Item::Patch(r) => self.request("PATCH", r)?,
                    Item::Delete(r) => self.request("DELETE", r)?,
                    Item::Head(r) => self.request("HEAD", r)?,
                    Item::Options(r) => self.request("OPTIONS", r)?,
                    Item::Grpc(g) => self.call(g)?,
                })
            })
            .collect()
    }

    fn think(&self, t: &Spanned<ThinkDef>) -> Result<Think, String> {
        let bad = |why: String| self.at(&t.referenced, format!("think: {why}"));
        let duration = |s: &str| {
            crate::values::duration_or_zero(s.trim())
                .map_err(|e| bad(format!("'{}': {e}", s.trim())))
        };
        match &t.value {
            ThinkDef::Seconds(s) if s.is_finite() && *s >= 0.0 => {
                Ok(Think::Fixed(Duration::from_secs_f64(*s)))
            }
            ThinkDef::Seconds(s) => Err(bad(format!("{s} is not a pause"))),
            ThinkDef::Text(text) => {
                let text = text.trim();
                if let Some(mean) = text.strip_prefix("exp(").and_then(|s| s.strip_suffix(')')) {
                    return Ok(Think::Exponential(duration(mean)?));
                }
                if let Some((a, b)) = text.split_once("..") {
                    let (a, b) = (duration(a)?, duration(b)?);
                    if b < a {
                        return Err(bad(format!("the range {text} ends before it starts")));
                    }
                    return Ok(Think::Uniform(a, b));
                }
                Ok(Think::Fixed(duration(text)?))
            }
        }
    }

    fn request(&mut self, method: &str, r: &RequestDef) -> Result<Op, String> {
        let url = self.text(&r.url)?;
        if !(r.url.value.starts_with('/')
            || r.url.value.starts_with("http://")
            || r.url.value.starts_with("https://"))
        {
            return Err(self.at(
                &r.url.referenced,
                format!(
                    "url '{}' must be a path (/...) or an http(s):// URL",
                    r.url.value
                ),
            ));
        }
        let mut headers = self.headers.clone();
        for (name, value) in &r.headers {
            let name = name.to_ascii_lowercase();
            if let Err(e) = pelt_codec::request::validate_header(&name, &value.value) {
                return Err(self.at(&value.referenced, format!("header '{name}': {e}")));
            }
            let text = self.text(value)?;
            headers.retain(|(k, _)| *k != name);
            headers.push((name, text));
        }
        let bodies = [r.body.is_some(), r.json.is_some(), r.body_file.is_some()];
        if bodies.iter().filter(|b| **b).count() > 1 {
            return Err(self.at(
                &r.url.referenced,
                "a step has one of body, json and body_file",
            ));
        }
        let body = if let Some(b) = &r.body {
            Some(self.text(b)?)
        } else if let Some(j) = &r.json {
            if !headers.iter().any(|(k, _)| k == "content-type") {
                headers.push((
                    "content-type".into(),
                    Text(vec![Part::Lit("application/json".into())]),
                ));
            }
            let json = Spanned::new(j.value.to_string(), j.referenced, j.defined);
            Some(self.text(&json)?)
        } else if let Some(f) = &r.body_file {
            let content = self.read_file(f, "body_file")?;
            Some(self.text(&Spanned::new(content, f.referenced, f.defined))?)
        } else {
            None
        };
        let name = r
            .name
            .clone()
            .unwrap_or_else(|| format!("{method} {}", r.url.value));
        let step = Step {
            id: 0,
            method: method.to_string(),
            url,
            headers,
            body,
            captures: Vec::new(),
            checks: Vec::new(),
            stop_on_failure: r.on_failure == Some(OnFailure::Stop),
            grpc: None,
        };
        self.step(name, step, &r.check, &r.capture)
    }

    /// A gRPC step: a POST of the message to the method's path (prepare finds the method in
    /// the run's descriptors, makes it `/package.Service/Method`, and checks the message).
    fn call(&mut self, g: &GrpcDef) -> Result<Op, String> {
        let call = g.call.value.trim().trim_start_matches('/');
        let (service, method) = call
            .rsplit_once('/')
            .or_else(|| call.rsplit_once('.'))
            .unwrap_or_default();
        if service.is_empty() || method.is_empty() || call.contains(['{', '?', ' ']) {
            return Err(self.at(
                &g.call.referenced,
                format!("call '{call}' must name a method: package.Service/Method"),
            ));
        }
        let mut headers = self.headers.clone();
        for (name, value) in &g.metadata {
            let name = name.to_ascii_lowercase();
            if let Err(e) = pelt_codec::request::validate_header(&name, &value.value) {
                return Err(self.at(&value.referenced, format!("metadata '{name}': {e}")));
            }
            if ["content-type", "te", "grpc-timeout"].contains(&name.as_str()) {
                return Err(self.at(
                    &value.referenced,
                    format!("metadata '{name}': pelt sets it on a gRPC call"),
                ));
            }
            let text = self.text(value)?;
            headers.retain(|(k, _)| *k != name);
            headers.push((name, text));
        }
        let body = match (&g.json, &g.body) {
            (Some(_), Some(_)) => {
                return Err(self.at(&g.call.referenced, "a grpc step has one of json and body"))
            }
            (Some(j), None) => {
                let json = Spanned::new(j.value.to_string(), j.referenced, j.defined);
                self.text(&json)?
            }
            (None, Some(b)) => self.text(b)?,
            (None, None) => Text(vec![Part::Lit("{}".into())]),
        };
        let step = Step {
            id: 0,
            method: "POST".into(),
            url: Text(vec![Part::Lit(format!("/{call}"))]),
            headers,
            body: Some(body),
            captures: Vec::new(),
            checks: Vec::new(),
            stop_on_failure: g.on_failure == Some(OnFailure::Stop),
            grpc: Some(call.to_string()),
        };
        let name = g.name.clone().unwrap_or_else(|| call.to_string());
        self.step(name, step, &g.check, &g.capture)
    }

    /// `step` named `name`, numbered, with its checks and captures compiled.
    fn step(
        &mut self,
        name: String,
        mut step: Step,
        checks: &[Spanned<CheckDef>],
        captures: &[Spanned<CaptureDef>],
    ) -> Result<Op, String> {
        self.program.steps.push(name);
        step.id = (self.program.steps.len() - 1) as u32;
        // Checks first: they read the response as it came, before the step's captures set
        // anything.
        let grpc = step.grpc.is_some();
        step.checks = checks
            .iter()
            .map(|c| self.check(c, grpc))
            .collect::<Result<_, _>>()?;
        step.captures = captures
            .iter()
            .map(|c| self.capture(c, step.id))
            .collect::<Result<_, _>>()?;
        Ok(Op::Request(Box::new(step)))
    }

    /// A text's literals and variables; a variable nothing set before this point is an error
    /// at the text.
    fn text(&mut self, s: &Spanned<String>) -> Result<Text, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = s.value.as_str();
        while let Some(open) = rest.find("{{") {
            lit.push_str(&rest[..open]);
            let Some(close) = rest[open..].find("}}") else {
                return Err(self.at(&s.referenced, "'{{' without its '}}'"));
            };
            let inner = rest[open + 2..open + close].trim();
            let head = inner.split(':').next().unwrap_or("");
            if BUILTINS.contains(&head) {
                lit.push_str(&rest[open..open + close + 2]);
            } else {
                if !is_name(inner) {
                    return Err(self.at(&s.referenced, format!("'{{{{{inner}}}}}' is not a variable name (letters, digits, _) or one of pelt's templates (seq, uuid, now_ms, rand:A:B, line:FILE)")));
                }
                let v = self.var(inner);
                if !self.known[v as usize] {
                    return Err(self.at(&s.referenced, format!("variable '{inner}' is used before any step captures it, and no data file has a column of that name")));
                }
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                parts.push(Part::Var(v));
            }
            rest = &rest[open + close + 2..];
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Text(parts))
    }

    /// A new variable's name: not one of pelt's templates.
    fn name(&mut self, s: &Spanned<String>) -> Result<u16, String> {
        if !is_name(&s.value) || BUILTINS.contains(&s.value.as_str()) {
            return Err(self.at(&s.referenced, format!("'{}' cannot name a variable: use letters, digits and _, and none of pelt's template names (seq, uuid, now_ms, rand, line)", s.value)));
        }
        let v = self.var(&s.value);
        self.known[v as usize] = true;
        Ok(v)
    }

    /// A capture of step `step`, named `step: variable` for its count.
    fn capture(&mut self, c: &Spanned<CaptureDef>, step: u32) -> Result<Capture, String> {
        let d = &c.value;
        let sources = [
            d.json.is_some(),
            d.regex.is_some(),
            d.header.is_some(),
            d.status.is_some(),
        ];
        if sources.iter().filter(|s| **s).count() != 1 {
            return Err(self.at(
                &c.referenced,
                "a capture takes one of json, regex, header and status",
            ));
        }
        if d.group.is_some() && d.regex.is_none() {
            return Err(self.at(&c.referenced, "group is a regex capture's"));
        }
        let from = if let Some(j) = &d.json {
            Source::Json(Pointer::new(&self.pointer(j)?))
        } else if let Some(r) = &d.regex {
            let re = self.regex(r)?;
            let group = d.group.unwrap_or(if re.captures_len() > 1 { 1 } else { 0 });
            if group >= re.captures_len() {
                return Err(self.at(&r.referenced, format!("the regex has no group {group}")));
            }
            Source::Regex { re, group }
        } else if let Some(h) = &d.header {
            Source::Header(h.value.to_ascii_lowercase())
        } else if d.status == Some(true) {
            Source::Status
        } else {
            return Err(self.at(&c.referenced, "status: true captures the status"));
        };
        let var = self.name(&d.name)?;
        let name = format!("{}: {}", self.program.steps[step as usize], d.name.value);
        let id = match self.program.captures.iter().position(|n| *n == name) {
            Some(i) => i as u32,
            None => {
                self.program.captures.push(name);
                (self.program.captures.len() - 1) as u32
            }
        };
        let slot = self.program.capture_slots;
        self.program.capture_slots += 1;
        Ok(Capture {
            id,
            slot,
            var,
            from,
        })
    }

    /// A check; a gRPC step's (`grpc`) status is its call's gRPC code.
    fn check(&mut self, c: &Spanned<CheckDef>, grpc: bool) -> Result<Check, String> {
        let d = &c.value;
        let subjects = [
            d.status.is_some(),
            d.header.is_some(),
            d.json.is_some(),
            d.body == Some(true),
        ];
        if subjects.iter().filter(|s| **s).count() != 1 {
            return Err(self.at(
                &c.referenced,
                "a check looks at one of status, header, json and body",
            ));
        }
        let tests = [
            d.equals.is_some(),
            d.contains.is_some(),
            d.matches.is_some(),
            d.exists.is_some(),
        ];
        let (subject, test, written) = if let Some(s) = &d.status {
            if tests.iter().any(|t| *t) {
                return Err(self.at(
                    &c.referenced,
                    "a status check lists the codes it takes, nothing else",
                ));
            }
            let written = match &s.value {
                StatusDef::One(c) => vec![c.clone()],
                StatusDef::Many(cs) => cs.clone(),
            };
            let codes = self.codes(s, &written, grpc)?;
            let written = format!(
                "status {}",
                written
                    .iter()
                    .map(|c| match c {
                        Code::Number(n) if grpc => pelt_codec::grpc::code_name(u32::from(*n)),
                        Code::Number(n) => n.to_string().into(),
                        Code::Name(name) => name.to_ascii_uppercase().into(),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            );
            (Subject::Status, Test::StatusIn(codes), written)
        } else {
            if tests.iter().filter(|t| **t).count() != 1 {
                return Err(self.at(
                    &c.referenced,
                    "a check takes one of equals, contains, matches and exists",
                ));
            }
            let (subject, what) = if let Some(h) = &d.header {
                (
                    Subject::Header(h.value.to_ascii_lowercase()),
                    format!("header {}", h.value),
                )
            } else if let Some(j) = &d.json {
                (
                    Subject::Json(Pointer::new(&self.pointer(j)?)),
                    format!("json {}", j.value),
                )
            } else {
                (Subject::Body, "body".to_string())
            };
            let (test, how) = if let Some(v) = &d.equals {
                (
                    Test::Equals(json_text(v)),
                    format!("equals {}", json_text(v)),
                )
            } else if let Some(s) = &d.contains {
                (Test::Contains(s.clone()), format!("contains {s}"))
            } else if let Some(m) = &d.matches {
                (
                    Test::Matches(self.regex(m)?),
                    format!("matches {}", m.value),
                )
            } else {
                let e = d.exists == Some(true);
                (
                    Test::Exists(e),
                    if e { "exists" } else { "is absent" }.to_string(),
                )
            };
            (subject, test, format!("{what} {how}"))
        };
        let name = d.name.clone().unwrap_or(written);
        let id = match self.program.checks.iter().position(|n| *n == name) {
            Some(i) => i as u32,
            None => {
                self.program.checks.push(name);
                (self.program.checks.len() - 1) as u32
            }
        };
        Ok(Check { id, subject, test })
    }

    /// A status check's codes: HTTP's (100 to 999), or a gRPC step's (0 to 16, or names).
    fn codes(
        &self,
        s: &Spanned<StatusDef>,
        written: &[Code],
        grpc: bool,
    ) -> Result<Vec<u16>, String> {
        if written.is_empty() {
            return Err(self.at(&s.referenced, "a status check lists at least one code"));
        }
        written
            .iter()
            .map(|c| match c {
                Code::Number(n) if grpc && *n <= 16 => Ok(*n),
                Code::Number(_) if grpc => Err(self.at(
                    &s.referenced,
                    "a grpc step's status is a gRPC code: 0 to 16, or its name (OK, NOT_FOUND...)",
                )),
                Code::Number(n) if (100..=999).contains(n) => Ok(*n),
                Code::Number(_) => Err(self.at(&s.referenced, "status codes are 100 to 999")),
                Code::Name(name) if grpc => pelt_codec::grpc::code_of(name)
                    .filter(|c| *c <= 16)
                    .map(|c| c as u16)
                    .ok_or_else(|| {
                        self.at(
                            &s.referenced,
                            format!("'{name}' is not a gRPC status (OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ...)"),
                        )
                    }),
                Code::Name(name) => Err(self.at(
                    &s.referenced,
                    format!("status '{name}': an HTTP step's status is a number (names are a grpc step's)"),
                )),
            })
            .collect()
    }

    fn regex(&self, r: &Spanned<String>) -> Result<Regex, String> {
        Regex::new(&r.value).map_err(|e| {
            let first = e
                .to_string()
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_string();
            self.at(&r.referenced, format!("bad regex '{}': {first}", r.value))
        })
    }

    /// A JSON pointer, or a JSONPath of names and indexes made one.
    fn pointer(&self, p: &Spanned<String>) -> Result<String, String> {
        let text = p.value.trim();
        if text.is_empty() || text.starts_with('/') {
            return Ok(text.to_string());
        }
        jsonpath_pointer(text).ok_or_else(|| {
            self.at(&p.referenced, format!("'{text}' is neither a JSON pointer (/items/0/id) nor a JSONPath of names and indexes ($.items[0].id)"))
        })
    }

    fn feeder(&mut self, d: &Spanned<file::DataDef>) -> Result<(), String> {
        let f = &d.value.file;
        let text = self.read_file(f, "data file")?;
        let path = Path::new(&f.value);
        let (names, rows) = if f.value.ends_with(".jsonl") || f.value.ends_with(".ndjson") {
            json_lines(&text)
                .map_err(|e| self.at(&f.referenced, format!("{}: {e}", path.display())))?
        } else {
            csv_rows(&text)
                .map_err(|e| self.at(&f.referenced, format!("{}: {e}", path.display())))?
        };
        if rows.is_empty() {
            return Err(self.at(
                &f.referenced,
                format!("data file {} has no rows", path.display()),
            ));
        }
        let mut columns = Vec::new();
        for name in &names {
            let spanned = Spanned::new(name.clone(), f.referenced, f.defined);
            columns.push(self.name(&spanned)?);
        }
        self.program.data.push(Feeder {
            path: path.to_path_buf(),
            columns,
            rows,
            per: match d.value.per {
                None | Some(file::Per::User) => Per::User,
                Some(file::Per::Iteration) => Per::Iteration,
            },
            order: match d.value.order {
                None | Some(file::DataOrder::Sequential) => DataOrder::Sequential,
                Some(file::DataOrder::Random) => DataOrder::Random,
                Some(file::DataOrder::Unique) => DataOrder::Unique,
            },
        });
        Ok(())
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `$.items[0].id` (or `$['items'][0]['id']`) as the JSON pointer `/items/0/id`.
fn jsonpath_pointer(path: &str) -> Option<String> {
    let mut rest = path.strip_prefix('$')?;
    let mut out = String::new();
    let push = |token: &str, out: &mut String| {
        out.push('/');
        out.push_str(&token.replace('~', "~0").replace('/', "~1"));
    };
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            push(&r[..end], &mut out);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            let token = if let Some(q) = inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\''))
            {
                q
            } else if inner.chars().all(|c| c.is_ascii_digit()) && !inner.is_empty() {
                inner
            } else {
                return None;
            };
            push(token, &mut out);
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// A CSV file's header row and rows (the csv crate: quoting, CRLF).
fn csv_rows(text: &str) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let names = reader
        .headers()
        .map_err(|e| e.to_string())?
        .iter()
        .map(|h| h.trim().to_string())
        .collect::<Vec<_>>();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| e.to_string())?;
        rows.push(record.iter().map(str::to_string).collect());
    }
    Ok((names, rows))
}

/// JSON lines: one object per line; the first line's keys are the columns, and every line
/// has them.
fn json_lines(text: &str) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let mut names: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let object: BTreeMap<String, serde_json::Value> = serde_json::from_str(line)
            .map_err(|e| format!("line {}: not a JSON object: {e}", n + 1))?;
        let keys = names.get_or_insert_with(|| object.keys().cloned().collect());
        let mut row = Vec::with_capacity(keys.len());
        for k in keys.iter() {
            let v = object
                .get(k)
                .ok_or_else(|| format!("line {}: no '{k}'", n + 1))?;
            row.push(json_text(v));
        }
        rows.push(row);
    }
    Ok((names.unwrap_or_default(), rows))
}

#[cfg(test)]
mod tests;
