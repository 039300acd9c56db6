//! Scenarios as the engine runs them: a [`Program`] compiled before the run (by pelt-load's
//! `scenario` module, from a scenario file) of steps whose request texts are cut into literals
//! and `{{variables}}`, with captures and checks compiled once; and how a capture or a check
//! reads a response.

use regex::Regex;
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
    pub var: u16,
    pub from: Source,
}

/// Where a capture reads its value.
#[derive(Debug)]
pub enum Source {
    /// The value at a JSON pointer (a string as it is, anything else as its JSON text).
    Json(String),
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

    fn json(&self, pointer: &str) -> Option<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_slice(self.body).ok()?;
        v.pointer(pointer).cloned()
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
    /// the capture counts as missing).
    pub fn take(&self, r: &Response) -> Option<String> {
        match &self.from {
            Source::Json(pointer) => Some(json_text(&r.json(pointer)?)),
            Source::Regex { re, group } => {
                let text = std::str::from_utf8(r.body).ok()?;
                let m = re.captures(text)?.get(*group)?;
                Some(m.as_str().to_string())
            }
            Source::Header(name) => Some(r.header(name)?.to_string()),
            Source::Status => Some(r.status.to_string()),
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
    Json(String),
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
        let value: Option<String> = match &self.subject {
            Subject::Status => {
                return match &self.test {
                    Test::StatusIn(codes) => codes.contains(&r.status),
                    _ => false,
                }
            }
            Subject::Header(name) => r.header(name).map(str::to_string),
            Subject::Json(pointer) => r.json(pointer).map(|v| json_text(&v)),
            Subject::Body => Some(String::from_utf8_lossy(r.body).into_owned()),
        };
        match (&self.test, value) {
            (Test::Exists(want), v) => v.is_some() == *want,
            (_, None) => false,
            (Test::Equals(want), Some(v)) => &v == want,
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

/// A virtual user: its scenario, its place in it, its variables, its cookie jar (RFC 6265,
/// cookie_store: domain, path, expiry, Secure, HttpOnly), never shared with another user.
/// Sans-I/O: the worker asks it for the next step and hands it each response.
#[derive(Debug)]
pub struct User {
    pub scenario: usize,
    place: Place,
    vars: Vec<String>,
    jar: cookie_store::CookieStore,
    cookie_header: String,
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
            cookie_header: String::new(),
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
                let _ = self.jar.parse(value, url);
            }
        }
        let mut outcome = Outcome::default();
        for check in &step.checks {
            let passed = check.passes(r);
            counts.checks[check.id as usize][usize::from(!passed)] += 1;
            outcome.failed_checks += u32::from(!passed);
        }
        for capture in &step.captures {
            let value = capture.take(r);
            counts.captures[capture.id as usize][usize::from(value.is_none())] += 1;
            match value {
                Some(value) => self.vars[capture.var as usize] = value,
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
        &self.cookie_header
    }

    /// The `Cookie` header's value for a request to `url` (empty: send none).
    pub fn cookie_header(&mut self, url: &url::Url) -> &str {
        self.cookie_header.clear();
        for (name, value) in self.jar.get_request_values(url) {
            if !self.cookie_header.is_empty() {
                self.cookie_header.push_str("; ");
            }
            self.cookie_header.push_str(name);
            self.cookie_header.push('=');
            self.cookie_header.push_str(value);
        }
        &self.cookie_header
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
