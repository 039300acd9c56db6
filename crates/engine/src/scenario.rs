//! Scenarios as the engine runs them: a [`Program`] compiled before the run (by pelt-load's
//! `scenario` module, from a scenario file) of steps whose request texts are cut into literals
//! and `{{variables}}`, with captures and checks compiled once; and how a capture or a check
//! reads a response.

use regex::Regex;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Duration;

/// A row per virtual user, or per iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    User,
    Iteration,
}

/// The order rows are taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataOrder {
    Sequential,
    /// Drawn at random (seeded).
    Random,
    /// Each row at most once in the run.
    Unique,
}

/// A scenario file, compiled.
#[derive(Debug)]
pub struct Program {
    /// `config.target`: the origin relative URLs resolve against, unless the run gives one.
    pub target: Option<String>,
    /// Every variable by name; a [`Part::Var`] is an index here.
    pub variables: Vec<String>,
    /// The data files, their columns as variables.
    pub data: Vec<Feeder>,
    pub scenarios: Vec<Scenario>,
    /// Each step's name, by [`Step::id`] (the file's order): per-step figures are kept under
    /// these names, so two steps of one name (a `home` in two scenarios) count together.
    pub steps: Vec<String>,
    /// Every check's name; a [`Check::id`] is an index here (checks are counted by name).
    pub checks: Vec<String>,
    /// Every capture's name (`step: variable`); a [`Capture::id`] is an index here.
    pub captures: Vec<String>,
    /// How many captures the file has (each [`Capture::slot`] is below).
    pub capture_slots: u32,
}

/// A data file's rows, each giving its columns' variables.
#[derive(Debug)]
pub struct Feeder {
    pub path: PathBuf,
    /// The variable of each column.
    pub columns: Vec<u16>,
    pub rows: Vec<Vec<String>>,
    pub per: Per,
    pub order: DataOrder,
}

/// One scenario of the file.
#[derive(Debug)]
pub struct Scenario {
    pub name: String,
    /// Its share of the users (or arrivals) against the others'.
    pub weight: f64,
    /// Run once per virtual user, before its first iteration.
    pub once: Vec<Op>,
    /// The iteration, repeated.
    pub flow: Vec<Op>,
}

#[derive(Debug)]
pub enum Op {
    Request(Box<Step>),
    Think(Think),
}

/// A pause between steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    Fixed(Duration),
    /// Uniform between the two.
    Uniform(Duration, Duration),
    /// Exponential with this mean.
    Exponential(Duration),
}

impl Think {
    /// The pause for a draw `u` uniform in [0, 1).
    pub fn sample(&self, u: f64) -> Duration {
        match *self {
            Think::Fixed(d) => d,
            Think::Uniform(a, b) => a + (b - a).mul_f64(u),
            Think::Exponential(mean) => mean.mul_f64(-(1.0 - u).ln()),
        }
    }
}

/// A request step.
#[derive(Debug)]
pub struct Step {
    /// Its index in [`Program::steps`]: every step has its own (its request's entry in the
    /// run's request set), whatever its name.
    pub id: u32,
    pub method: String,
    /// The path and query (on the program's origin), or a whole URL.
    pub url: Text,
    pub headers: Vec<(String, Text)>,
    pub body: Option<Text>,
    pub captures: Vec<Capture>,
    pub checks: Vec<Check>,
    /// A failed check or capture ends the iteration.
    pub stop_on_failure: bool,
    /// A gRPC step: the method it calls, as written (`package.Service/Method`); its request
    /// is the call (`body` the message's JSON), its status the call's gRPC status, and its
    /// body, for captures and checks, the reply as JSON.
    pub grpc: Option<String>,
}

impl Step {
    /// Whether the response's body must be kept (a capture or check reads it); other steps
    /// skip bodies as plain runs do.
    pub fn keeps_body(&self) -> bool {
        self.captures
            .iter()
            .any(|c| matches!(c.from, Source::Json(_) | Source::Regex { .. }))
            || self
                .checks
                .iter()
                .any(|c| matches!(c.subject, Subject::Json(_) | Subject::Body))
    }
}

/// A text with `{{variables}}`: pelt's own templates (`{{seq}}`, `{{uuid}}`...) stay in the
/// literals, for the request's template to fill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub Vec<Part>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Lit(String),
    Var(u16),
}

impl Text {
    /// The text with each variable's value (`vars[v]`) in its place, appended to `out`.
    pub fn render_into(&self, vars: &[String], out: &mut String) {
        for part in &self.0 {
            match part {
                Part::Lit(s) => out.push_str(s),
                Part::Var(v) => out.push_str(&vars[*v as usize]),
            }
        }
    }

    /// The variables it reads.
    pub fn vars(&self) -> impl Iterator<Item = u16> + '_ {
        self.0.iter().filter_map(|p| match p {
            Part::Var(v) => Some(*v),
            Part::Lit(_) => None,
        })
    }
}

/// A capture: its name's index in [`Program::captures`] (`step: variable`, counted found or
/// missing by name), the variable it sets and where it reads.
#[derive(Debug)]
pub struct Capture {
    pub id: u32,
    /// Its own index among all the program's captures (`id`s may repeat).
    pub slot: u32,
    pub var: u16,
    pub from: Source,
}

/// Where a capture reads its value.
#[derive(Debug)]
pub enum Source {
    /// The value at a JSON pointer (a string as it is, anything else as its JSON text).
    Json(Pointer),
    /// A regex's group on the body.
    Regex {
        re: Regex,
        group: usize,
    },
    /// A header's value (name lower-cased).
    Header(String),
    Status,
}

/// A response, as captures and checks read it.
pub struct Response<'a> {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

impl Response<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The text of the JSON value at `pointer` in the body (see [`raw_text`]).
    fn json(&self, pointer: &Pointer) -> Option<Cow<'_, str>> {
        pointer.find(self.body).map(raw_text)
    }
}

/// A JSON pointer (RFC 6901: `/items/0/id`), its tokens unescaped once, before the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    pub text: String,
    tokens: Vec<String>,
}

impl Pointer {
    /// `text` is empty (the whole document) or starts with `/`.
    pub fn new(text: &str) -> Pointer {
        let tokens = match text.strip_prefix('/') {
            None => Vec::new(),
            Some(rest) => rest
                .split('/')
                .map(|t| t.replace("~1", "/").replace("~0", "~"))
                .collect(),
        };
        Pointer {
            text: text.to_string(),
            tokens,
        }
    }

    /// The JSON text of the value at this pointer in `body` (`None`: the body is not JSON, or
    /// holds nothing there). The body is walked once, building nothing: serde_json's
    /// `Value::pointer` would build the whole document first, an allocation per member, on
    /// every response of a step that captures.
    pub fn find<'b>(&self, body: &'b [u8]) -> Option<&'b RawValue> {
        let mut de = serde_json::Deserializer::from_slice(body);
        let found = Walk(&self.tokens).deserialize(&mut de).ok()?;
        de.end().ok()?;
        found
    }
}

/// Descends along the pointer's tokens, skipping everything else unbuilt.
struct Walk<'p>(&'p [String]);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = Option<&'de RawValue>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        match self.0.split_first() {
            None => <&RawValue as serde::Deserialize>::deserialize(d).map(Some),
            Some((head, rest)) => d.deserialize_any(Member { head, rest }),
        }
    }
}

/// One level of the walk: the member (or element) named `head`.
struct Member<'p> {
    head: &'p str,
    rest: &'p [String],
}

impl<'de> Visitor<'de> for Member<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(here) = map.next_key_seed(Key(self.head))? {
            if here && found.is_none() {
                found = map.next_value_seed(Walk(self.rest))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // An index is digits without a leading zero (RFC 6901).
        let canonical = self.head == "0" || !self.head.starts_with('0');
        let index = self
            .head
            .parse::<usize>()
            .ok()
            .filter(|_| canonical && self.head.bytes().all(|b| b.is_ascii_digit()));
        let mut found = None;
        let mut k = 0;
        loop {
            if Some(k) == index {
                match seq.next_element_seed(Walk(self.rest))? {
                    Some(v) => found = v,
                    None => break,
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            k += 1;
        }
        Ok(found)
    }

    // A scalar has no members: the pointer finds nothing.
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// Whether an object's key is the one sought (compared where it lies, unescaped keys
/// borrowed, escaped ones in serde_json's scratch buffer).
struct Key<'p>(&'p str);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

/// A JSON value's text as a variable or a check takes it: a string's contents, an integer,
/// `true`, `false` or `null` as written (borrowed from the body: no allocation), other numbers,
/// objects and arrays as serde_json writes them (compact).
pub fn raw_text(raw: &RawValue) -> Cow<'_, str> {
    let t = raw.get();
    let whole = || match serde_json::from_str::<serde_json::Value>(t) {
        Ok(v) => Cow::Owned(json_text(&v)),
        Err(_) => Cow::Borrowed(t),
    };
    match t.as_bytes().first() {
        Some(b'"') if !t.contains('\\') => Cow::Borrowed(&t[1..t.len() - 1]),
        Some(b'"' | b'{' | b'[') => whole(),
        _ if t.contains(['.', 'e', 'E']) => whole(),
        _ => Cow::Borrowed(t),
    }
}

/// A JSON value as a variable or a check compares it: a string as it is, else its JSON text.
pub fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Capture {
    /// The value this capture takes from `r`; `None`: it found nothing (the step fails, and
    /// the capture counts as missing). A regex capture finds its group's place in `groups`
    /// (made by [`Regex::capture_locations`]; reused, no allocation), or in its own.
    pub fn take<'r>(
        &self,
        r: &'r Response,
        groups: Option<&mut regex::CaptureLocations>,
    ) -> Option<Cow<'r, str>> {
        match &self.from {
            Source::Json(pointer) => r.json(pointer),
            Source::Regex { re, group } => {
                let text = std::str::from_utf8(r.body).ok()?;
                let mut own;
                let groups = match groups {
                    Some(g) => g,
                    None => {
                        own = re.capture_locations();
                        &mut own
                    }
                };
                re.captures_read(groups, text)?;
                let (start, end) = groups.get(*group)?;
                Some(Cow::Borrowed(&text[start..end]))
            }
            Source::Header(name) => r.header(name).map(Cow::Borrowed),
            Source::Status => Some(Cow::Owned(r.status.to_string())),
        }
    }
}

/// A check: its name's index in [`Program::checks`], what it looks at and the test.
#[derive(Debug)]
pub struct Check {
    pub id: u32,
    pub subject: Subject,
    pub test: Test,
}

#[derive(Debug)]
pub enum Subject {
    Status,
    Header(String),
    Json(Pointer),
    Body,
}

#[derive(Debug)]
pub enum Test {
    /// The status is one of these.
    StatusIn(Vec<u16>),
    Equals(String),
    Contains(String),
    Matches(Regex),
    Exists(bool),
}

impl Check {
    pub fn passes(&self, r: &Response) -> bool {
        let value: Option<Cow<str>> = match &self.subject {
            Subject::Status => {
                return match &self.test {
                    Test::StatusIn(codes) => codes.contains(&r.status),
                    _ => false,
                }
            }
            Subject::Header(name) => r.header(name).map(Cow::Borrowed),
            Subject::Json(pointer) => r.json(pointer),
            Subject::Body => Some(String::from_utf8_lossy(r.body)),
        };
        match (&self.test, value) {
            (Test::Exists(want), v) => v.is_some() == *want,
            (_, None) => false,
            (Test::Equals(want), Some(v)) => *v == **want,
            (Test::Contains(want), Some(v)) => v.contains(want.as_str()),
            (Test::Matches(re), Some(v)) => re.is_match(&v),
            (Test::StatusIn(_), Some(_)) => false,
        }
    }
}

/// A scenario run as the engine gets it: the program, each step's URL (for the cookie jar's
/// domain and path matching; variables left as written), and the seed of its random draws.
#[derive(Debug)]
pub struct ScenarioRun {
    pub program: Program,
    pub urls: Vec<url::Url>,
    pub seed: u64,
}

impl ScenarioRun {
    /// The scenario user number `n` of the run runs: the scenarios take users in proportion to
    /// their weights, spread over the user numbers (a golden-ratio sequence, so any run of
    /// consecutive users is close to the proportions).
    pub fn scenario_of(&self, n: u64) -> usize {
        let scenarios = &self.program.scenarios;
        let total: f64 = scenarios.iter().map(|s| s.weight).sum();
        let at = (n as f64 * 0.618_033_988_749_894_9).fract() * total;
        let mut sum = 0.0;
        for (k, s) in scenarios.iter().enumerate() {
            sum += s.weight;
            if at < sum {
                return k;
            }
        }
        scenarios.len() - 1
    }
}

/// What a run's users did: iterations started, completed and failed, the completed ones'
/// durations (microseconds; open loop: from the arrival), each check's `[passed, failed]` by
/// [`Check::id`] and each capture's `[found, missing]` by [`Capture::id`].
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ScenarioCounts {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    pub duration: pelt_stats::LatencyHistogram,
    pub checks: Vec<[u64; 2]>,
    pub captures: Vec<[u64; 2]>,
}

impl ScenarioCounts {
    /// Counts for `program`'s checks and captures, all zero.
    pub fn new(program: &Program) -> ScenarioCounts {
        ScenarioCounts {
            checks: vec![[0; 2]; program.checks.len()],
            captures: vec![[0; 2]; program.captures.len()],
            ..ScenarioCounts::default()
        }
    }

    pub fn merge(&mut self, other: &ScenarioCounts) {
        self.started += other.started;
        self.completed += other.completed;
        self.failed += other.failed;
        self.duration.merge(&other.duration);
        add_pairs(&mut self.checks, &other.checks);
        add_pairs(&mut self.captures, &other.captures);
    }
}

fn add_pairs(to: &mut Vec<[u64; 2]>, from: &[[u64; 2]]) {
    if to.len() < from.len() {
        to.resize(from.len(), [0; 2]);
    }
    for (a, b) in to.iter_mut().zip(from) {
        a[0] += b[0];
        a[1] += b[1];
    }
}

/// Which data row each user or iteration takes, per worker: worker `offset` of `stride`
/// takes rows `offset`, `offset + stride`, ... of each file, so sequential rows go round the
/// file and unique rows are never taken twice in the run, with no lock between workers.
#[derive(Debug)]
pub struct Rows {
    offset: u64,
    stride: u64,
    taken: Vec<u64>,
    rng: fastrand::Rng,
}

impl Rows {
    pub fn new(program: &Program, offset: u64, stride: u64, seed: u64) -> Rows {
        Rows {
            offset,
            stride: stride.max(1),
            taken: vec![0; program.data.len()],
            rng: fastrand::Rng::with_seed(seed ^ offset.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        }
    }

    /// The next row of data file `f`; `None`: a unique file has no row left.
    pub fn take(&mut self, program: &Program, f: usize) -> Option<usize> {
        let feeder = &program.data[f];
        let len = feeder.rows.len() as u64;
        let k = self.taken[f];
        self.taken[f] += 1;
        let at = self.offset + k * self.stride;
        match feeder.order {
            DataOrder::Sequential => Some((at % len) as usize),
            DataOrder::Random => Some(self.rng.usize(..feeder.rows.len())),
            DataOrder::Unique => (at < len).then_some(at as usize),
        }
    }
}

/// Where a user is in its scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Once(usize),
    Flow(usize),
}

/// What a user does next.
#[derive(Debug)]
pub enum Next<'p> {
    /// Send this step's request (with [`User::vars`] and [`User::cookie_header`]).
    Request(&'p Step),
    /// Wait this long first; a think time at the end of the flow ends the iteration
    /// (`Some(failed)`).
    Think {
        pause: Duration,
        iteration_ended: Option<bool>,
    },
    /// A unique data file ran out: the user has nothing more to do.
    Done,
}

/// How a step's response went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// Checks that failed (each counted under its name by the caller).
    pub failed_checks: u32,
    /// A capture found nothing.
    pub capture_failed: bool,
    /// The step failed and says `on_failure: stop`: the iteration ended here.
    pub stopped: bool,
    /// The response ended an iteration (its last step, or a stop): `Some(failed)`.
    pub iteration_ended: Option<bool>,
}

/// A Cookie value made for a step: the jar's version it was made from, and until when (Unix
/// seconds) it holds.
#[derive(Debug, Default)]
struct MadeCookie {
    version: u64,
    until: i64,
    value: String,
}

/// A virtual user: its scenario, its place in it, its variables, its cookie jar (RFC 6265,
/// cookie_store: domain, path, expiry, Secure, HttpOnly), never shared with another user.
/// Sans-I/O: the worker asks it for the next step and hands it each response.
#[derive(Debug)]
pub struct User {
    pub scenario: usize,
    place: Place,
    vars: Vec<String>,
    jar: cookie_store::CookieStore,
    /// Counts the cookies the jar has taken (0: none yet).
    jar_version: u64,
    /// By step id: the Cookie value last made for its URL (made again when the jar changes or
    /// one of its cookies expires, so a request allocates nothing for it in steady state).
    cookies: Vec<MadeCookie>,
    /// The step whose Cookie value [`User::cookie`] gives (`None`: send none).
    cookie_for: Option<usize>,
    /// By capture slot: where a regex capture's groups were found (reused across responses).
    groups: Vec<Option<regex::CaptureLocations>>,
    /// The iteration under way had a failure.
    failed: bool,
    /// An iteration is under way (its first flow step was handed out).
    in_iteration: bool,
    /// An iteration began since [`User::started`] last said so.
    started: bool,
    rng: fastrand::Rng,
}

impl User {
    /// A user of `scenario`, with its per-user data rows taken from `rows` (`None`: a unique
    /// data file has no row left for it).
    pub fn new(program: &Program, scenario: usize, rows: &mut Rows, seed: u64) -> Option<User> {
        let mut user = User {
            scenario,
            place: Place::Once(0),
            vars: vec![String::new(); program.variables.len()],
            jar: cookie_store::CookieStore::new(),
            jar_version: 0,
            cookies: Vec::new(),
            cookie_for: None,
            groups: program
                .scenarios
                .iter()
                .flat_map(|s| s.once.iter().chain(&s.flow))
                .filter_map(|op| match op {
                    Op::Request(step) => Some(&step.captures),
                    Op::Think(_) => None,
                })
                .flatten()
                .fold(vec![None; program.capture_slots as usize], |mut all, c| {
                    if let Source::Regex { re, .. } = &c.from {
                        all[c.slot as usize] = Some(re.capture_locations());
                    }
                    all
                }),
            failed: false,
            in_iteration: false,
            started: false,
            rng: fastrand::Rng::with_seed(seed),
        };
        user.feed(program, rows, Per::User)?;
        Some(user)
    }

    /// Sets the variables of the data files taken `per` user or iteration.
    fn feed(&mut self, program: &Program, rows: &mut Rows, per: Per) -> Option<()> {
        for (f, feeder) in program.data.iter().enumerate() {
            if feeder.per != per {
                continue;
            }
            let row = &feeder.rows[rows.take(program, f)?];
            for (column, &var) in feeder.columns.iter().enumerate() {
                let v = &mut self.vars[var as usize];
                v.clear();
                v.push_str(row.get(column).map_or("", String::as_str));
            }
        }
        Some(())
    }

    /// Whether [`User::next`] began an iteration since this was last asked (the worker times
    /// iterations from there).
    pub fn started(&mut self) -> bool {
        std::mem::take(&mut self.started)
    }

    /// Between iterations: none under way and no `once` step begun (a new user, one whose
    /// login failed, or one whose iteration ended). In the open loop such a user waits for an
    /// arrival.
    pub fn between(&self) -> bool {
        !self.in_iteration && matches!(self.place, Place::Once(0) | Place::Flow(0))
    }

    /// Its `once` steps start over: it is new, or its login failed.
    pub fn logged_out(&self) -> bool {
        self.place == Place::Once(0)
    }

    /// The variables' values, by [`Program::variables`] index.
    pub fn vars(&self) -> &[String] {
        &self.vars
    }

    /// What the user does next: its `once` steps in order, then its flow, again and again.
    /// A new iteration takes its per-iteration data rows.
    pub fn next<'p>(&mut self, program: &'p Program, rows: &mut Rows) -> Next<'p> {
        let scenario = &program.scenarios[self.scenario];
        loop {
            let op = match self.place {
                Place::Once(k) if k < scenario.once.len() => &scenario.once[k],
                Place::Once(_) => {
                    self.place = Place::Flow(0);
                    continue;
                }
                Place::Flow(k) => {
                    if k == 0 && !self.in_iteration {
                        if self.feed(program, rows, Per::Iteration).is_none() {
                            return Next::Done;
                        }
                        self.in_iteration = true;
                        self.started = true;
                        self.failed = false;
                    }
                    &scenario.flow[k]
                }
            };
            match op {
                Op::Request(step) => return Next::Request(step),
                Op::Think(t) => {
                    let pause = t.sample(self.rng.f64());
                    let iteration_ended = self.advance(scenario);
                    return Next::Think {
                        pause,
                        iteration_ended,
                    };
                }
            }
        }
    }

    /// Moves past the current op; past the flow's last, back to its first.
    fn advance(&mut self, scenario: &Scenario) -> Option<bool> {
        match self.place {
            Place::Once(k) => self.place = Place::Once(k + 1),
            Place::Flow(k) if k + 1 < scenario.flow.len() => self.place = Place::Flow(k + 1),
            Place::Flow(_) => return Some(self.end_iteration()),
        }
        None
    }

    /// Ends the iteration under way; returns whether it failed.
    fn end_iteration(&mut self) -> bool {
        self.place = Place::Flow(0);
        self.in_iteration = false;
        std::mem::take(&mut self.failed)
    }

    /// The response to the step [`User::next`] gave, from `url`: its cookies go to the jar,
    /// checks and captures are counted into `counts`, captures set variables; a failure with
    /// `on_failure: stop` ends the iteration.
    pub fn respond(
        &mut self,
        program: &Program,
        url: &url::Url,
        r: &Response,
        counts: &mut ScenarioCounts,
    ) -> Outcome {
        let scenario = &program.scenarios[self.scenario];
        let (Place::Once(k) | Place::Flow(k)) = self.place;
        let op = match self.place {
            Place::Once(_) => &scenario.once[k],
            Place::Flow(_) => &scenario.flow[k],
        };
        let Op::Request(step) = op else {
            unreachable!("a response answers a request step")
        };
        for (name, value) in r.headers {
            if name == "set-cookie" {
                // A cookie the jar refuses (bad domain, bad syntax) is left out, as a browser
                // leaves it out.
                if self.jar.parse(value, url).is_ok() {
                    self.jar_version += 1;
                }
            }
        }
        let mut outcome = Outcome::default();
        for check in &step.checks {
            let passed = check.passes(r);
            counts.checks[check.id as usize][usize::from(!passed)] += 1;
            outcome.failed_checks += u32::from(!passed);
        }
        for capture in &step.captures {
            let value = capture.take(r, self.groups[capture.slot as usize].as_mut());
            counts.captures[capture.id as usize][usize::from(value.is_none())] += 1;
            match value {
                Some(value) => {
                    // Written over the old value: no allocation once it has grown.
                    let var = &mut self.vars[capture.var as usize];
                    var.clear();
                    var.push_str(&value);
                }
                None => outcome.capture_failed = true,
            }
        }
        let failed = outcome.failed_checks > 0 || outcome.capture_failed;
        let in_once = matches!(self.place, Place::Once(_));
        self.failed |= failed && !in_once;
        if failed && step.stop_on_failure {
            outcome.stopped = true;
            if in_once {
                // A failed login: the user starts over from its first once step.
                self.place = Place::Once(0);
            } else {
                outcome.iteration_ended = Some(self.end_iteration());
            }
            return outcome;
        }
        outcome.iteration_ended = self.advance(scenario);
        outcome
    }

    /// The request of the step [`User::next`] gave failed without a response (a transport
    /// error): the iteration ends as failed, and the next starts from the flow's first step.
    pub fn fail(&mut self) -> Option<bool> {
        match self.place {
            Place::Once(_) => {
                self.place = Place::Once(0);
                None
            }
            Place::Flow(_) => {
                self.failed = true;
                Some(self.end_iteration())
            }
        }
    }

    /// The `Cookie` value [`User::cookie_header`] last made.
    pub fn cookie(&self) -> &str {
        self.cookie_for
            .map_or("", |k| self.cookies[k].value.as_str())
    }

    /// The `Cookie` header's value for step `step`'s request, to `url` (empty: send none).
    pub fn cookie_header(&mut self, step: u32, url: &url::Url) -> &str {
        if self.jar_version == 0 {
            self.cookie_for = None;
            return "";
        }
        let k = step as usize;
        if self.cookies.len() <= k {
            self.cookies.resize_with(k + 1, MadeCookie::default);
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let made = &mut self.cookies[k];
        if made.version != self.jar_version || now >= made.until {
            made.value.clear();
            for (name, value) in self.jar.get_request_values(url) {
                if !made.value.is_empty() {
                    made.value.push_str("; ");
                }
                made.value.push_str(name);
                made.value.push('=');
                made.value.push_str(value);
            }
            // Good until the jar's first cookie with an expiry expires.
            made.until = i64::MAX;
            for c in self.jar.iter_unexpired() {
                if let cookie_store::CookieExpiration::AtUtc(at) = &c.expires {
                    made.until = made.until.min(at.unix_timestamp());
                }
            }
            made.version = self.jar_version;
        }
        self.cookie_for = Some(k);
        &self.cookies[k].value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pointer_finds_what_serde_json_value_pointer_finds() {
        let body = br#" {"a": {"b~/c": [10, {"id": "x\"y"}, 2.50, 1e2]}, "s": "plain",
            "n": null, "t": true, "o": {"k": [1, 2]}, "\u0061b": 5} "#;
        let whole: serde_json::Value = serde_json::from_slice(body).unwrap();
        for p in [
            "",
            "/a",
            "/a/b~0~1c",
            "/a/b~0~1c/0",
            "/a/b~0~1c/1/id",
            "/a/b~0~1c/2",
            "/a/b~0~1c/3",
            "/a/b~0~1c/4",
            "/a/b~0~1c/01",
            "/a/b~0~1c/-",
            "/s",
            "/n",
            "/t",
            "/o",
            "/o/k/1",
            "/ab",
            "/missing",
            "/s/0",
            "/t/x",
        ] {
            let mine = Pointer::new(p).find(body).map(|r| raw_text(r).into_owned());
            let theirs = whole.pointer(p).map(json_text);
            assert_eq!(mine, theirs, "{p}");
        }
        assert!(Pointer::new("/a").find(b"{\"a\": 1").is_none(), "not JSON");
        assert!(
            Pointer::new("/a").find(b"{\"a\": 1} x").is_none(),
            "trailing bytes"
        );
        // Strings and integers come borrowed from the body.
        let raw = Pointer::new("/s").find(body).unwrap();
        assert!(matches!(raw_text(raw), Cow::Borrowed("plain")));
    }

    #[test]
    fn think_times_draw_from_their_distribution() {
        let s = Duration::from_secs;
        assert_eq!(Think::Fixed(s(2)).sample(0.7), s(2));
        assert_eq!(Think::Uniform(s(1), s(3)).sample(0.5), s(2));
        assert_eq!(Think::Exponential(s(2)).sample(0.0), Duration::ZERO);
        let mean: f64 = (0..10_000)
            .map(|i| {
                Think::Exponential(s(2))
                    .sample((i as f64 + 0.5) / 10_000.0)
                    .as_secs_f64()
            })
            .sum::<f64>()
            / 10_000.0;
        assert!((mean - 2.0).abs() < 0.05, "{mean}");
    }
}
