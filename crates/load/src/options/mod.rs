//! Every option, defined once. A table row ([`Flag`]) holds an option's camelCase name (the
//! Node.js package's and the fleet's), its CLI flag (long, short, value name), its help, its
//! TypeScript type, the rules it takes part in (conflicts, requires), how a value is read
//! into the spec (with the CLI's parsers and messages) and how the spec's value is written
//! back. Its default is the library's (`LoadSpec::new`, `ServeSpec::default`), shown by writing
//! the default spec.
//!
//! From the tables come: the CLI's arguments (`pelt-cli` builds its clap arguments from them
//! and hands what was typed to [`read`]), the options object of Node.js and the fleet's
//! run spec ([`spec`] and its inverse [`inline`]), the conflict and range rules (checked once,
//! in [`read`], whatever front end gave the options), the TypeScript types of the Node.js
//! package ([`typescript`]) and the flag tables of the docs ([`markdown`]); tests check the
//! generated files against the tables.
//!
//! A value of the wrong JSON type, or a name that is no option, is a [`Kind::Type`] error; a
//! value of the right type that does not parse, is out of range, or breaks a rule is
//! [`Kind::Range`] (JavaScript's `TypeError` and `RangeError`). Messages read as clap's
//! (`invalid value 'abc' for '--rate <RATE>': ...`, `the argument '--body <TEXT>' cannot be
//! used with '--body-file <PATH>'`), so a bad option reads the same wherever it was typed.

mod compare;
mod find_max;
mod run;
mod serve;

pub use compare::{compare, COMPARE};
pub use find_max::{find_max, FIND_MAX};
pub use run::RUN;
pub use serve::{serve, ServeSpec, SERVE};

use crate::spec::LoadSpec;
use crate::SpecError;
use serde_json::{Map, Value};

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

/// How an option is given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `--flag VALUE`.
    Value,
    /// `--flag VALUE`, repeatable; a list in JSON.
    Many,
    /// `--flag`: `true` in JSON.
    Switch,
    /// `--no-flag`: `false` in JSON (the option is `true` by default).
    Negated,
    /// The positional argument.
    Positional,
    /// The values after `--` (a script's arguments); a list in JSON.
    Trailing,
    /// No CLI flag: library and Node.js only.
    Library,
}

/// A rule an option takes part in, checked when it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Not together with this option.
    Conflicts(&'static str),
    /// Only with this option.
    Requires(&'static str),
}

/// One option of a table, for a spec of type `S`.
pub struct Flag<S: 'static> {
    /// The camelCase name (Node.js, the fleet's spec, the JSON reader).
    pub name: &'static str,
    /// The long flag without `--` (for `Negated`, the whole `no-...` flag).
    pub long: &'static str,
    pub short: Option<char>,
    /// A visible alias of the long flag (`h2` for `http2`).
    pub alias: &'static str,
    /// The value's name in help and messages (`N`, `TIME`); empty for switches.
    pub value: &'static str,
    pub form: Form,
    pub help: &'static str,
    /// The TypeScript type of the Node.js option (empty: derived from the form and choices).
    pub ts: &'static str,
    /// A valid value, as JSON text (for the table's tests and the docs).
    pub example: &'static str,
    /// The values it takes, each with its help (empty: any).
    pub choices: &'static [(&'static str, &'static str)],
    pub rules: &'static [Rule],
    /// An environment variable that gives it on the command line.
    pub env: &'static str,
    /// Whether the CLI takes values that start with `-` (so `-c -5` says why it is wrong).
    pub hyphen: bool,
    /// Reads a given value into the spec.
    pub read: fn(&mut S, &Given) -> Result<(), OptionError>,
    /// The spec's value, as [`read`] takes it back (`None`: not set). May read files the
    /// spec names (the fleet's spec carries their contents).
    pub write: fn(&S) -> Result<Option<Value>, String>,
}

/// The defaults of a row: fill in the rest with `..Flag::BASE`.
impl<S> Flag<S> {
    pub const BASE: Flag<S> = Flag {
        name: "",
        long: "",
        short: None,
        alias: "",
        value: "",
        form: Form::Value,
        help: "",
        ts: "",
        example: "",
        choices: &[],
        rules: &[],
        env: "",
        hyphen: false,
        read: |_, _| Ok(()),
        write: |_| Ok(None),
    };

    /// The flag as clap shows it in messages: `--rate <RATE>`, `--http2`, `<URL>`; a
    /// library option by its name.
    pub fn shown(&self) -> String {
        match self.form {
            Form::Library => self.name.to_string(),
            Form::Positional => format!("<{}>", self.value),
            Form::Trailing => format!("-- <{}>...", self.value),
            Form::Switch | Form::Negated => format!("--{}", self.long),
            Form::Value | Form::Many => format!("--{} <{}>", self.long, self.value),
        }
    }

    /// Whether `v` gives this option, for its rules: a switch when it is on (`Negated`: off),
    /// anything else when it is not null.
    fn is_set(&self, v: &Value) -> bool {
        match self.form {
            Form::Switch => *v == Value::Bool(true),
            Form::Negated => *v == Value::Bool(false),
            _ => !v.is_null(),
        }
    }

    /// The TypeScript type of the option.
    pub fn ts_type(&self) -> String {
        if !self.ts.is_empty() {
            return self.ts.to_string();
        }
        if !self.choices.is_empty() {
            let names: Vec<String> = self.choices.iter().map(|c| format!("'{}'", c.0)).collect();
            return names.join(" | ");
        }
        match self.form {
            Form::Switch | Form::Negated => "boolean".into(),
            Form::Many => "string | string[]".into(),
            Form::Trailing => "string[]".into(),
            _ => "string".into(),
        }
    }
}

fn find<'t, S>(table: &'t [Flag<S>], name: &str) -> Option<&'t Flag<S>> {
    table.iter().find(|f| f.name == name)
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

/// One option's given value, with what it is for messages.
pub struct Given<'a> {
    pub name: &'a str,
    /// The flag as messages name it (`--rate <RATE>`).
    pub shown: String,
    pub value: &'a Value,
}

impl Given<'_> {
    /// The same option with another value (an item of a list).
    pub fn with<'b>(&'b self, value: &'b Value) -> Given<'b> {
        Given {
            name: self.name,
            shown: self.shown.clone(),
            value,
        }
    }

    pub fn wrong(&self, wanted: &str) -> OptionError {
        type_error(format!(
            "option '{}' must be {wanted}, not {}",
            self.name,
            type_of(self.value)
        ))
    }

    /// A string as typed, or a number as its decimal text (the CLI's input either way).
    pub fn text(&self) -> Result<String, OptionError> {
        match self.value {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            _ => Err(self.wrong("a string or a number")),
        }
    }

    /// A string only.
    pub fn string(&self) -> Result<String, OptionError> {
        match self.value {
            Value::String(s) => Ok(s.clone()),
            _ => Err(self.wrong("a string")),
        }
    }

    pub fn path(&self) -> Result<std::path::PathBuf, OptionError> {
        self.string().map(Into::into)
    }

    pub fn boolean(&self) -> Result<bool, OptionError> {
        self.value.as_bool().ok_or_else(|| self.wrong("a boolean"))
    }

    /// Parses the text with the CLI's parser; its error reads as clap's.
    pub fn parse<T>(&self, parser: impl Fn(&str) -> Result<T, String>) -> Result<T, OptionError> {
        let text = self.text()?;
        parser(&text).map_err(|e| {
            range_error(format!(
                "invalid value {} for '{}': {e}",
                crate::values::quote(&text),
                self.shown
            ))
        })
    }

    /// One of `choices` (by name, in order with `names`), as clap's value enums.
    pub fn choice<T: Copy>(&self, names: &[&str], choices: &[T]) -> Result<T, OptionError> {
        let text = self.text()?;
        match names.iter().position(|n| *n == text) {
            Some(i) => Ok(choices[i]),
            None => Err(range_error(format!(
                "invalid value {} for '{}' [possible values: {}]",
                crate::values::quote(&text),
                self.shown,
                names.join(", ")
            ))),
        }
    }

    /// A list: an array of strings (or numbers), or one string.
    pub fn list(&self) -> Result<Vec<String>, OptionError> {
        match self.value {
            Value::Array(items) => items
                .iter()
                .map(|v| self.with(v).text())
                .collect::<Result<_, _>>()
                .map_err(|_| self.wrong("a string or an array of strings")),
            Value::String(s) => Ok(vec![s.clone()]),
            _ => Err(self.wrong("a string or an array of strings")),
        }
    }
}

/// Thresholds (`expect`, `slo`): one expression or a list, each parsed as `--expect` does.
fn expectations(g: &Given) -> Result<Vec<crate::expect::Expectation>, OptionError> {
    g.list()?
        .iter()
        .map(|e| {
            g.with(&Value::String(e.clone()))
                .parse(crate::expect::parse)
        })
        .collect()
}

/// Thresholds as [`expectations`] reads them back (`None`: none).
fn expectations_value(all: &[crate::expect::Expectation]) -> Option<Value> {
    let texts: Vec<&str> = all.iter().map(crate::expect::Expectation::text).collect();
    (!texts.is_empty()).then(|| serde_json::json!(texts))
}

/// Reads `options` (by name; `null` is the same as absent) into `spec` with `table`: names,
/// then each value in the table's order, then every rule of every option given. The one
/// reader of every front end: the CLI hands it what was typed, Node.js its options object,
/// an agent its coordinator's spec.
pub fn read_into<S>(
    table: &[Flag<S>],
    options: &Map<String, Value>,
    spec: &mut S,
) -> Result<(), OptionError> {
    for name in options.keys() {
        if find(table, name).is_none() {
            return Err(type_error(format!("unknown option '{name}'")));
        }
    }
    let given = |f: &Flag<S>| options.get(f.name).filter(|v| !v.is_null());
    for f in table {
        if let Some(value) = given(f) {
            let g = Given {
                name: f.name,
                shown: f.shown(),
                value,
            };
            (f.read)(spec, &g)?;
        }
    }
    for f in table {
        if !given(f).is_some_and(|v| f.is_set(v)) {
            continue;
        }
        for rule in f.rules {
            let (other, conflicts) = match rule {
                Rule::Conflicts(o) => (*o, true),
                Rule::Requires(o) => (*o, false),
            };
            let o = find(table, other).expect("a rule names an option of its table");
            let other_set = given(o).is_some_and(|v| o.is_set(v));
            if conflicts && other_set {
                return Err(range_error(format!(
                    "the argument '{}' cannot be used with '{}'",
                    f.shown(),
                    o.shown()
                )));
            }
            if !conflicts && !other_set {
                return Err(range_error(format!(
                    "the following required arguments were not provided: {}",
                    o.shown()
                )));
            }
        }
    }
    Ok(())
}

/// The run's spec of `options` (names as in [`RUN`]), the URL optional (empty when not
/// given): what the CLI reads what was typed with.
pub fn read(options: &Map<String, Value>) -> Result<LoadSpec, OptionError> {
    let mut s = LoadSpec::new("");
    read_into(RUN, options, &mut s)?;
    Ok(s)
}

/// Builds the spec of `options` (names as in [`RUN`]; `null` is the same as absent): the
/// Node.js package's `run({...})` and a fleet agent's. Checks names, types, values and the
/// rules; [`crate::prepare`] checks the rest, as it does for the CLI.
pub fn spec(options: &Map<String, Value>) -> Result<LoadSpec, OptionError> {
    let s = read(options)?;
    match options.get("url") {
        Some(Value::String(_)) => {}
        _ if options.get("targets").is_some_and(|v| !v.is_null()) => {}
        _ => {
            return Err(type_error(
                "option 'url' is required (or give 'targets')".into(),
            ))
        }
    }
    if let crate::spec::Requests::Prompts(p) = &s.requests_from {
        if p.file.is_none() && p.input.is_none() {
            return Err(range_error(
                "--output-tokens and --model shape the requests of --prompts FILE or \
                 --input-tokens N: give one"
                    .to_string(),
            ));
        }
    }
    Ok(s)
}

/// Every option of `spec` that differs from `default`, by name, as [`read_into`] takes it
/// back.
pub fn write<S>(table: &[Flag<S>], spec: &S, default: &S) -> Result<Map<String, Value>, String> {
    let mut o = Map::new();
    for f in table {
        let Some(v) = (f.write)(spec)? else { continue };
        if (f.write)(default).ok().flatten().as_ref() != Some(&v) {
            o.insert(f.name.to_string(), v);
        }
    }
    Ok(o)
}

/// The options of `spec` (the inverse of [`spec`]), with every file it names read and
/// inlined: the body, the targets or bodies (as a list of targets), so another process can
/// run it without them. TLS files (`cacert`, `cert`, `key`) and `unixSocket` stay paths: they
/// belong to the machine that connects. `seed` is the one to give (the spec's, or one the
/// caller chose for it).
pub fn inline(spec: &LoadSpec, seed: Option<u64>) -> Result<Map<String, Value>, SpecError> {
    let mut o = write(RUN, spec, &LoadSpec::new("")).map_err(SpecError)?;
    o.insert("url".into(), Value::String(spec.url.clone()));
    if let Some(seed) = seed.or(spec.seed) {
        o.insert("seed".into(), seed.into());
    }
    Ok(o)
}

/// A duration as the options write it: whole seconds, milliseconds or microseconds.
pub fn duration_text(d: std::time::Duration) -> String {
    let us = d.as_micros();
    if us == 0 {
        "0".into()
    } else if us.is_multiple_of(1_000_000) {
        format!("{}s", us / 1_000_000)
    } else if us.is_multiple_of(1_000) {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}

/// A default as help shows it: the default spec's value, written.
pub fn default_text<S>(f: &Flag<S>, default: &S) -> Option<String> {
    if matches!(f.form, Form::Switch | Form::Negated) {
        return None;
    }
    match (f.write)(default).ok().flatten()? {
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s),
        Value::Array(a) if a.is_empty() => None,
        v => Some(v.to_string()),
    }
}

/// The help of a row with its default: `... [default: 10s]`.
pub fn help_text<S>(f: &Flag<S>, default: &S) -> String {
    match default_text(f, default) {
        Some(d) => format!("{} [default: {d}]", f.help),
        None => f.help.to_string(),
    }
}

/// The TypeScript interface of a table's options, as the Node.js package declares it.
pub fn typescript<S>(name: &str, table: &[Flag<S>], default: &S) -> String {
    let mut out = format!("export interface {name} {{\n");
    for f in table {
        let flag = match f.form {
            Form::Library | Form::Positional => String::new(),
            Form::Trailing => format!("-- {}...: ", f.value),
            _ => {
                let short = f.short.map_or(String::new(), |c| format!("-{c}, "));
                format!("{short}--{}: ", f.long)
            }
        };
        let doc = format!("{flag}{}", help_text(f, default));
        out.push_str("  /**\n");
        for line in wrap(&doc, 92) {
            out.push_str(&format!("   * {line}\n"));
        }
        out.push_str("   */\n");
        out.push_str(&format!("  {}?: {}\n", f.name, f.ts_type()));
    }
    out.push_str("}\n");
    out
}

/// A markdown table of a table's options: flag, Node.js name, meaning, default.
pub fn markdown<S>(table: &[Flag<S>], default: &S) -> String {
    let mut out = String::from("| flag | Node.js | meaning | default |\n|---|---|---|---|\n");
    for f in table {
        let flag = match f.form {
            Form::Library => String::new(),
            Form::Positional => f.value.to_string(),
            Form::Trailing => format!("-- {}...", f.value),
            _ => {
                let short = f.short.map_or(String::new(), |c| format!("-{c}, "));
                let value = match f.value {
                    "" => String::new(),
                    v => format!(" {v}"),
                };
                let alias = match f.alias {
                    "" => String::new(),
                    a => format!(" (`--{a}`)"),
                };
                format!("`{short}--{}{value}`{alias}", f.long)
            }
        };
        let mut help = f.help.replace('|', "\\|").replace('\n', " ");
        if !f.choices.is_empty() {
            let names: Vec<String> = f.choices.iter().map(|c| format!("`{}`", c.0)).collect();
            help = format!("{help} ({})", names.join(", "));
        }
        let default = default_text(f, default).map_or(String::new(), |d| format!("`{d}`"));
        out.push_str(&format!("| {flag} | `{}` | {help} | {default} |\n", f.name));
    }
    out
}

/// Words of `text` in lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// Replaces the text between the lines `begin` and `end` of `file` with `block`; `None` when
/// the markers are missing.
pub fn splice(file: &str, begin: &str, end: &str, block: &str) -> Option<String> {
    let start = file.find(begin)? + begin.len();
    let start = start + file[start..].find('\n')? + 1;
    let stop = start + file[start..].find(end)?;
    let stop = file[..stop].rfind('\n').map_or(stop, |i| i + 1);
    Some(format!("{}{block}{}", &file[..start], &file[stop..]))
}

#[cfg(test)]
mod tests;
