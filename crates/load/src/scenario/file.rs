//! A scenario file as written: YAML (JSON is YAML too), read by serde-saphyr, which keeps the
//! line and column of every value a later check may need to point at (`Spanned`). Every struct
//! refuses unknown keys, so a typo is an error at its own line.

use serde::Deserialize;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    #[serde(default)]
    pub config: Config,
    pub scenarios: Vec<Spanned<ScenarioDef>>,
}

/// What applies to every scenario.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The origin relative URLs resolve against (the URL argument takes its place when given).
    pub target: Option<Spanned<String>>,
    /// Headers every request sends (a step's own headers take their place by name).
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<String>>,
    /// Data files whose columns become variables.
    #[serde(default)]
    pub data: Vec<Spanned<DataDef>>,
}

/// One scenario: a virtual user's journey.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioDef {
    pub name: Option<String>,
    /// Its share of the users or arrivals, against the other scenarios' (default 1).
    pub weight: Option<Spanned<f64>>,
    /// Steps each virtual user runs once, before its first iteration (a login).
    #[serde(default)]
    pub once: Vec<Spanned<Item>>,
    /// The iteration's steps, in order, repeated.
    pub flow: Vec<Spanned<Item>>,
}

/// One entry of a flow: a request by its method, or a think time.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Item {
    Get(RequestDef),
    Post(RequestDef),
    Put(RequestDef),
    Patch(RequestDef),
    Delete(RequestDef),
    Head(RequestDef),
    Options(RequestDef),
    /// A gRPC call (the run's target is grpc:// or grpcs://).
    Grpc(GrpcDef),
    /// A pause: `2s`, a uniform range `1s..3s`, or an exponential one with its mean,
    /// `exp(2s)`; a bare number is seconds.
    Think(Spanned<ThinkDef>),
}

/// A think time as written: seconds, or a text.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ThinkDef {
    Seconds(f64),
    Text(String),
}

/// A request step.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestDef {
    /// A path (`/cart`), or a URL on the run's origin; templates and `{{variables}}`.
    pub url: Spanned<String>,
    /// The step's name in the report (default: the method and the URL as written).
    pub name: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<String>>,
    /// A text body.
    pub body: Option<Spanned<String>>,
    /// A JSON body, written as YAML (sent as JSON, `Content-Type: application/json`).
    pub json: Option<Spanned<serde_json::Value>>,
    /// A body read from a file (relative to the scenario file).
    pub body_file: Option<Spanned<String>>,
    #[serde(default)]
    pub capture: Vec<Spanned<CaptureDef>>,
    #[serde(default)]
    pub check: Vec<Spanned<CheckDef>>,
    /// What a failed check or capture does: `continue` (the default) or `stop` (ends the
    /// iteration; the next starts from the first flow step).
    pub on_failure: Option<OnFailure>,
}

/// A gRPC step: a call of one method, its message from JSON (protobuf's canonical mapping).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcDef {
    /// The method: `package.Service/Method`.
    pub call: Spanned<String>,
    /// The step's name in the report (default: the call as written).
    pub name: Option<String>,
    /// The call's metadata (`-bin` keys base64).
    #[serde(default, alias = "headers")]
    pub metadata: BTreeMap<String, Spanned<String>>,
    /// The message, written as YAML (a client stream's messages: a list).
    pub json: Option<Spanned<serde_json::Value>>,
    /// The message as JSON text.
    pub body: Option<Spanned<String>>,
    /// Captures read the reply as JSON (`json`), its metadata and trailers (`header`), and its
    /// gRPC status's number (`status`).
    #[serde(default)]
    pub capture: Vec<Spanned<CaptureDef>>,
    /// Checks: `status` takes gRPC codes, by name (`OK`, `NOT_FOUND`) or number.
    #[serde(default)]
    pub check: Vec<Spanned<CheckDef>>,
    pub on_failure: Option<OnFailure>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    Continue,
    Stop,
}

/// A capture: one source (`json`, `regex`, `header` or `status`) into the variable `as`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureDef {
    /// A JSON pointer (`/items/0/id`) or a JSONPath of names and indexes (`$.items[0].id`).
    pub json: Option<Spanned<String>>,
    /// A regular expression on the body: its first group (or `group`), else the whole match.
    pub regex: Option<Spanned<String>>,
    pub group: Option<usize>,
    /// A response header, by name.
    pub header: Option<Spanned<String>>,
    /// The status code (`status: true`).
    pub status: Option<bool>,
    #[serde(rename = "as")]
    pub name: Spanned<String>,
}

/// A check: what it looks at (`status`, `header`, `json` or `body`), and for the last three
/// how it matches (`equals`, `contains`, `matches`, `exists`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckDef {
    /// Its name in the report (default: what it checks, as written).
    pub name: Option<String>,
    /// The status: one code, or a list.
    pub status: Option<Spanned<StatusDef>>,
    /// A response header, by name.
    pub header: Option<Spanned<String>>,
    /// A JSON value, by pointer or JSONPath (as a capture's).
    pub json: Option<Spanned<String>>,
    /// The body (`body: true`).
    pub body: Option<bool>,
    /// The value, exactly (a JSON value's text for `json`).
    pub equals: Option<serde_json::Value>,
    pub contains: Option<String>,
    /// A regular expression.
    pub matches: Option<Spanned<String>>,
    /// The header or JSON value is there (true) or not (false).
    pub exists: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum StatusDef {
    One(Code),
    Many(Vec<Code>),
}

/// A status as written: a number, or (a gRPC step's) a code's name.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Code {
    Number(u16),
    Name(String),
}

/// A data file: CSV with a header row, or JSON lines (one object per line), by extension.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataDef {
    pub file: Spanned<String>,
    /// A row per virtual user (the default) or per iteration.
    pub per: Option<Per>,
    /// `sequential` (the default), `random` (with --seed), or `unique` (each row at most
    /// once in the run: running out ends the run).
    pub order: Option<DataOrder>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    User,
    Iteration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataOrder {
    Sequential,
    Random,
    Unique,
}
