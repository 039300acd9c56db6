//! wrk's Lua scripting API (its `SCRIPTING` document) on LuaJIT, as wrk embeds it: the global
//! `wrk` table (`scheme`, `host`, `port`, `method`, `path`, `headers`, `body`, `thread`),
//! `wrk.format()`, `wrk.lookup()`, `wrk.connect()`; `setup(thread)` with `thread.addr`,
//! `thread:get()`, `thread:set()`; `init(args)` in each thread's own state; and
//! `done(summary, latency, requests)` with wrk's summary table and statistics objects, fed
//! the figures of every thread.
//!
//! As in wrk, the setup and done phases run in a state of their own, and each thread has its
//! own state, where `init` runs. Lua states are not `Send`: they all live on one thread of
//! this crate's (`pelt-script`), which the run talks to through [`Scripted`] before the run
//! (the request the script leaves in the `wrk` table) and after it (`done`); nothing of it is
//! on the per-request path.
//!
//! The API is pelt's own code (wrk's `wrk.lua` and `script.c` are not copied): `wrk.format`
//! writes the same request line, headers and body, its headers in name order instead of a
//! Lua table's hash order.
//!
//! No error is ever raised from Rust: pelt is built with `panic = "abort"`, and LuaJIT raises
//! an error by unwinding the stack, which aborts the process when it crosses a Rust frame. So
//! each Rust function answers `ok, value` (never failing to read its arguments: it takes them
//! as they come) and a Lua wrapper (`guard`, in [`PRELUDE`]) raises the error from Lua; the
//! thread and statistics objects are Lua tables, not userdata.

use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value, WeakLua};
use pelt_engine::hooks::{HookMaker, Hooks, Made, Offer, Uses, UNNAMED};
use pelt_stats::{LatencyHistogram, ScriptMetrics};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// A call of a per-request hook (`request()`, `response()`, `delay()`) runs at most this
/// many of LuaJIT's instructions (a tenth of a second's worth or so), so a loop that never
/// ends is cut with an error that names its line, and the run still ends at its time. LuaJIT
/// checks a count hook only in code it interprets, so the states run with the JIT compiler
/// off: a hook's time goes mostly to the functions it calls (`wrk.format`, strings), which
/// the JIT compiler does not compile across anyway.
const HOOK_INSTRUCTIONS: u64 = 1 << 26;
/// The same for the script's body, `setup`, `init` and `done`, which may build tables or
/// read statistics at length (some seconds' worth).
const PHASE_INSTRUCTIONS: u64 = 1 << 34;
/// How often the count hook runs (instructions).
const HOOK_EVERY: u32 = 1 << 20;
/// The most memory one Lua state may hold, in KiB (checked where the count hook runs).
pub const STATE_MEMORY_KIB: u64 = 512 * 1024;

/// A script and the arguments its `init(args)` gets (those after `--` on wrk's command line).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Script {
    /// As errors name it (the file's path).
    pub name: String,
    pub source: Vec<u8>,
    pub args: Vec<String>,
}

/// What the `wrk` table starts from: the run's URL and request.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    /// The URL as given (`init`'s `args[0]`, as wrk passes it).
    pub url: String,
    pub scheme: String,
    pub host: String,
    /// The port when the URL names one (wrk's `wrk.port` is nil otherwise).
    pub port: Option<u16>,
    /// The path and query.
    pub path: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// The address the run connects to (`thread.addr` before `setup` changes it).
    pub addr: SocketAddr,
}

/// The request the script leaves in each thread's `wrk` table after `init`: what every
/// request of the run sends when the script has no `request()`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// As the script left them, `Host` among them; never `Content-Length` (pelt adds it).
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

/// The run's figures, as `done(summary, latency, requests)` reads them.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// The run's measured duration, microseconds.
    pub duration_us: u64,
    /// Responses completed.
    pub requests: u64,
    /// Bytes received.
    pub bytes: u64,
    pub errors: Errors,
    /// Every measured request's latency, microseconds.
    pub latency: LatencyHistogram,
    /// Requests per second, one value per thread and second (wrk samples each thread's rate).
    pub rates: Vec<u64>,
    /// The script's counters and histograms, every thread's (every agent's in a fleet):
    /// what `pelt.counter` and `pelt.histogram` read in `done`.
    pub metrics: ScriptMetrics,
}

/// wrk's error counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Errors {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    /// Responses with a status over 399.
    pub status: u64,
    pub timeout: u64,
}

/// A script started: its setup done and each thread's `init` run. Dropping it ends its
/// thread (and its Lua states).
pub struct Scripted {
    /// The script, as given.
    pub file: String,
    /// The request the threads' `wrk` tables say (the first thread's, when they differ).
    pub request: Request,
    /// Per thread, where it connects (`thread.addr`, as `setup` left it); empty when every
    /// thread connects to the URL's address.
    pub addrs: Vec<SocketAddr>,
    /// The script defines `done`.
    pub has_done: bool,
    /// The script defines `request()`, `response()` or `delay()`: each worker makes its
    /// own state and calls them per request. Or the threads' `init` left different requests
    /// in their `wrk` tables: each worker sends its own thread's.
    pub hooks: Option<Arc<dyn HookMaker>>,
    workers: Option<Arc<Workers>>,
    /// `print` and `io.write` go to stderr (stdout carries the JSON result).
    stderr: Arc<AtomicBool>,
    jobs: mpsc::Sender<Job>,
    thread: Option<std::thread::JoinHandle<()>>,
}

enum Job {
    Done(Box<Figures>, bool, mpsc::Sender<Result<(), String>>),
    Metrics(mpsc::Sender<ScriptMetrics>),
    Values(usize, mpsc::Sender<Vec<serde_json::Value>>),
    Fleet(usize, mpsc::Sender<Result<(), String>>),
    Ended(Vec<serde_json::Value>, mpsc::Sender<Vec<String>>),
}

impl Scripted {
    /// The script's `print` and `io.write` go to stderr from now on (`busy`: stdout carries
    /// the JSON result), else to stdout.
    pub fn output_to_stderr(&self, busy: bool) {
        self.stderr.store(busy, Ordering::Relaxed);
    }

    /// Why the workers could not make their states (their `init` or first `request()`
    /// failed): the run sent nothing.
    pub fn failure(&self) -> Option<String> {
        let w = self.workers.as_ref()?;
        w.error.lock().ok()?.clone()
    }

    /// What the script's `pelt.counter(name)` and `pelt.histogram(name)` objects held, every
    /// thread's together (asked once the run has ended).
    pub fn metrics(&self) -> ScriptMetrics {
        let (tx, rx) = mpsc::channel();
        if self.jobs.send(Job::Metrics(tx)).is_err() {
            return ScriptMetrics::default();
        }
        rx.recv().unwrap_or_default()
    }

    /// A fleet agent's: each of its threads' global values at the thread's end (the
    /// libraries, functions and values that cannot pass between states left out), for the
    /// coordinator's `done` (`thread:get`), in at most about `budget` bytes of JSON: a
    /// thread's values past its share go as their size alone, and read nil there.
    pub fn thread_values(&self, budget: usize) -> Vec<serde_json::Value> {
        let (tx, rx) = mpsc::channel();
        if self.jobs.send(Job::Values(budget, tx)).is_err() {
            return Vec::new();
        }
        rx.recv().unwrap_or_default()
    }

    /// A fleet coordinator's (a script started with no threads of its own): calls
    /// `setup(thread)` once for each of the fleet's `threads` (its agents run their own
    /// threads' setup), so that `done` holds every thread of the fleet.
    pub fn fleet(&self, threads: usize) -> Result<(), String> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(Job::Fleet(threads, tx))
            .map_err(|_| "the script's thread has ended".to_string())?;
        rx.recv()
            .unwrap_or_else(|_| Err("the script's thread has ended".into()))
    }

    /// A fleet coordinator's: the fleet's threads' values at their end, in the fleet's
    /// thread order (each agent's [`Scripted::thread_values`]; null for a thread whose agent
    /// sent none), for `thread:get` in `done`. Returns the values left out for their size,
    /// in words (`name (size)`).
    pub fn ended(&self, values: Vec<serde_json::Value>) -> Vec<String> {
        let (tx, rx) = mpsc::channel();
        if self.jobs.send(Job::Ended(values, tx)).is_err() {
            return Vec::new();
        }
        rx.recv().unwrap_or_default()
    }

    /// Calls the script's `done` with the run's figures (its output to stderr when
    /// `stdout_busy`: stdout carries the JSON result). An error is one line.
    pub fn done(&self, figures: Figures, stdout_busy: bool) -> Result<(), String> {
        if !self.has_done {
            return Ok(());
        }
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(Job::Done(Box::new(figures), stdout_busy, tx))
            .map_err(|_| "the script's thread has ended".to_string())?;
        rx.recv()
            .unwrap_or_else(|_| Err("the script's thread has ended".into()))
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        // Closing the channel ends the thread.
        let (tx, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.jobs, tx));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Loads `script` for a run of `threads` threads from `origin`: runs it in the setup state,
/// calls `setup(thread)` for each thread, and then each thread's `init(args)` — in its own
/// state here, or, when the script has per-request hooks, in the state each worker makes
/// (`exact`: the run counts its requests, `-n` or `--rate`). A Lua error is one line, with
/// the script's file and line.
pub fn start(
    script: &Script,
    origin: &Origin,
    threads: usize,
    exact: bool,
) -> Result<Scripted, String> {
    let (name, source) = (script.name.clone(), script.source.clone());
    let script_name = name.clone();
    let (script, origin) = (script.clone(), origin.clone());
    let (jobs, rx) = mpsc::channel::<Job>();
    let (ready_tx, ready) = mpsc::channel();
    let stderr = Arc::new(AtomicBool::new(false));
    let out = stderr.clone();
    let thread = std::thread::Builder::new()
        .name("pelt-script".into())
        .spawn(move || {
            let load = Load {
                name,
                source,
                args: script.args,
                origin,
                threads,
                exact,
                stderr: out,
            };
            let mut host = match Host::new(load) {
                Ok((host, started)) => {
                    let _ = ready_tx.send(Ok((started, host.has("done"))));
                    host
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(one_line(&e)));
                    return;
                }
            };
            for job in rx {
                match job {
                    Job::Done(figures, busy, answer) => {
                        let _ = answer.send(host.done(&figures, busy).map_err(|e| one_line(&e)));
                    }
                    Job::Metrics(answer) => {
                        let _ = answer.send(host.metrics());
                    }
                    Job::Values(budget, answer) => {
                        let _ = answer.send(host.values(budget));
                    }
                    Job::Fleet(threads, answer) => {
                        let _ = answer.send(host.fleet(threads).map_err(|e| one_line(&e)));
                    }
                    Job::Ended(values, answer) => {
                        let _ = answer.send(host.ended(values));
                    }
                }
            }
        })
        .map_err(|e| format!("cannot start the script's thread: {e}"))?;
    let started = ready
        .recv()
        .unwrap_or_else(|_| Err("the script's thread ended".into()));
    match started {
        Ok((started, has_done)) => Ok(Scripted {
            file: script_name,
            request: started.request,
            addrs: started.addrs,
            has_done,
            hooks: started.hooks,
            workers: started.workers,
            stderr,
            jobs,
            thread: Some(thread),
        }),
        Err(e) => {
            let _ = thread.join();
            Err(e)
        }
    }
}

/// What every state of a script is made from.
#[derive(Debug, Clone)]
struct Load {
    /// The script's file, as errors name it.
    name: String,
    source: Vec<u8>,
    args: Vec<String>,
    origin: Origin,
    threads: usize,
    exact: bool,
    stderr: Arc<AtomicBool>,
}

/// A Lua state with the standard libraries and the debug library, which the prelude uses and
/// takes away (see [`install`]).
fn new_state() -> Lua {
    // SAFETY: the debug library is loaded only for the prelude to set the count hook
    // (`HOOK_INSTRUCTIONS`) from Lua, whose error then unwinds through LuaJIT's frames
    // alone (a hook set from Rust would raise it through Rust's, which aborts under
    // `panic = "abort"`); the prelude takes `debug` out of the script's reach before the
    // script runs. The script itself is the user's code, trusted as wrk trusts it.
    unsafe { Lua::unsafe_new_with(StdLib::ALL_SAFE | StdLib::DEBUG, LuaOptions::new()) }
}

impl Shared {
    /// A call into the script begins: it may run `instructions`.
    fn begin(&self, instructions: u64) {
        self.ticks.set(instructions / u64::from(HOOK_EVERY));
    }
}

impl Load {
    /// A state with the script's API and the script run in it, as thread `me` (`None`: the
    /// setup state); returns the prelude's constructors.
    fn state(&self, shared: &Shared) -> mlua::Result<(Lua, Table)> {
        let lua = new_state();
        let made = install(&lua, &self.origin, shared)?;
        shared.begin(PHASE_INSTRUCTIONS);
        lua.load(&self.source[..])
            .set_name(format!("@{}", self.name))
            .exec()?;
        Ok((lua, made))
    }

    fn shared(&self) -> Shared {
        Shared {
            slots: Rc::new(RefCell::new(Vec::with_capacity(self.threads))),
            stderr: self.stderr.clone(),
            ..Shared::default()
        }
    }
}

/// A Lua error as one line: its message, the traceback left out.
fn one_line(e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::CallbackError { cause, .. } => return one_line(cause),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        e => e.to_string(),
    };
    text.lines().next().unwrap_or_default().to_string()
}

/// The states: the setup state (setup, done) and each thread's (init), when they live here.
struct Host {
    setup: Lua,
    /// The setup state's constructors (the prelude's).
    made: Table,
    shared: Shared,
    /// The threads' states when they live here (kept alive for `thread:get()` in `done`),
    /// with their constructors.
    threads: Vec<(Lua, Table)>,
    /// What the workers' states counted, each added at its end.
    workers: Arc<Mutex<ScriptMetrics>>,
    /// Every state's counters and histograms, once the run has ended.
    all: RefCell<Option<ScriptMetrics>>,
    /// Where threads connect unless `setup` says otherwise.
    addr: SocketAddr,
}

/// The functions wrk calls per request.
const HOOKS: [&str; 3] = ["request", "response", "delay"];

/// What the run takes from a started script.
struct Started {
    request: Request,
    addrs: Vec<SocketAddr>,
    hooks: Option<Arc<dyn HookMaker>>,
    /// The per-request hooks' maker (when the script has them).
    workers: Option<Arc<Workers>>,
}

impl Host {
    fn new(load: Load) -> mlua::Result<(Host, Started)> {
        let (origin, threads) = (&load.origin, load.threads);
        let shared = load.shared();
        let (setup, made) = load.state(&shared)?;
        for _ in 0..threads {
            shared.slots.borrow_mut().push(Slot {
                lua: None,
                addr: origin.addr,
                seed: Vec::new(),
            });
        }
        let uses = Uses {
            response: function(&setup, "response")?.is_some(),
            delay: function(&setup, "delay")?.is_some(),
        };
        let hooked = HOOKS
            .iter()
            .any(|h| matches!(function(&setup, h), Ok(Some(_))));
        // Per-request hooks: each worker makes its thread's state (`Workers`), and `setup`
        // leaves its values for them; else the threads' states live here.
        let mut states = Vec::with_capacity(threads);
        if !hooked {
            for i in 0..threads {
                let (lua, own) = load.state(&shared)?;
                shared.slots.borrow_mut()[i].lua = Some(lua.weak());
                states.push((lua, own));
            }
        }
        // setup(thread), once per thread, in the setup state.
        if let Some(f) = function(&setup, "setup")? {
            for i in 0..threads {
                shared.begin(PHASE_INSTRUCTIONS);
                f.call::<()>(made.get::<Function>("thread")?.call::<Table>(i)?)?;
            }
        }
        let addrs: Vec<SocketAddr> = shared.slots.borrow().iter().map(|s| s.addr).collect();
        let addrs = match addrs.iter().all(|a| *a == origin.addr) {
            true => Vec::new(),
            false => addrs,
        };
        let setup_request = || left_request(&setup.globals().get("wrk")?);
        if hooked {
            let slots = shared.slots.borrow();
            let after = Arc::new(Mutex::new(vec![None; threads]));
            let counted = Arc::new(Mutex::new(ScriptMetrics::default()));
            let workers = Arc::new(Workers {
                gathered: counted.clone(),
                seeds: slots.iter().map(|s| s.seed.clone()).collect(),
                load: load.clone(),
                uses,
                failed: AtomicBool::new(false),
                error: Mutex::new(None),
                after: after.clone(),
                steps: Arc::default(),
            });
            drop(slots);
            let mut shared = shared;
            shared.after = Some(after);
            setup.set_app_data(shared.clone());
            let started = Started {
                request: setup_request()?,
                addrs,
                hooks: Some(workers.clone()),
                workers: Some(workers),
            };
            let host = Host {
                setup,
                made,
                shared,
                threads: Vec::new(),
                workers: counted,
                all: RefCell::new(None),
                addr: origin.addr,
            };
            return Ok((host, started));
        }
        // init(args), in each thread's own state, its Host header set first.
        let mut requests = Vec::with_capacity(threads);
        for (i, (lua, own)) in states.iter().enumerate() {
            init(lua, own, i, &load)?;
            requests.push(left_request(&lua.globals().get("wrk")?)?);
        }
        // Threads that left different requests each send their own, as wrk's do.
        let hooks = match requests.windows(2).all(|w| w[0] == w[1]) {
            true => None,
            false => {
                let mut sent = Vec::with_capacity(threads);
                for (lua, _) in &states {
                    sent.push(formatted(lua).map_err(mlua::Error::runtime)?);
                }
                Some(Arc::new(Own { sent }) as Arc<dyn HookMaker>)
            }
        };
        let request = match requests.into_iter().next() {
            Some(r) => r,
            None => setup_request()?,
        };
        let host = Host {
            setup,
            made,
            shared,
            threads: states,
            workers: Arc::default(),
            all: RefCell::new(None),
            addr: origin.addr,
        };
        let started = Started {
            request,
            addrs,
            hooks,
            workers: None,
        };
        Ok((host, started))
    }

    /// Every state's `pelt.counter` and `pelt.histogram` values together (asked once the
    /// run has ended; the same answer after `done`). The states here share one list of
    /// histograms.
    fn metrics(&self) -> ScriptMetrics {
        if let Some(all) = self.all.borrow().as_ref() {
            return all.clone();
        }
        let mut all = gathered(&self.made, &self.shared.histograms.borrow());
        for (_, made) in &self.threads {
            all.merge(&gathered(made, &[]));
        }
        if let Ok(workers) = self.workers.lock() {
            all.merge(&workers);
        }
        *self.all.borrow_mut() = Some(all.clone());
        all
    }

    /// Each thread's globals at its end, as JSON, each thread's in its share of `budget`
    /// bytes (see [`Scripted::thread_values`]).
    fn values(&self, budget: usize) -> Vec<serde_json::Value> {
        let ended: Vec<Option<Plain>> = match &self.shared.after {
            Some(after) => after.lock().map(|a| a.clone()).unwrap_or_default(),
            None => self
                .threads
                .iter()
                .map(|(lua, _)| Some(Plain::globals(lua)))
                .collect(),
        };
        let share = budget / ended.len().max(1);
        ended
            .into_iter()
            .map(|globals| globals.map_or(serde_json::Value::Null, |g| g.to_json_within(share)))
            .collect()
    }

    /// `setup(thread)` for each of a fleet's `threads`, whose values at their end come
    /// later ([`Host::ended`]).
    fn fleet(&mut self, threads: usize) -> mlua::Result<()> {
        let first = {
            let mut slots = self.shared.slots.borrow_mut();
            let first = slots.len();
            for _ in 0..threads {
                slots.push(Slot {
                    lua: None,
                    addr: self.addr,
                    seed: Vec::new(),
                });
            }
            first
        };
        let mut after = vec![None; first + threads];
        if let Some(a) = self.shared.after.as_ref().and_then(|a| a.lock().ok()) {
            for (mine, was) in after.iter_mut().zip(a.iter()) {
                mine.clone_from(was);
            }
        }
        self.shared.after = Some(Arc::new(Mutex::new(after)));
        self.setup.set_app_data(self.shared.clone());
        if let Some(f) = function(&self.setup, "setup")? {
            for i in first..first + threads {
                self.shared.begin(PHASE_INSTRUCTIONS);
                f.call::<()>(self.made.get::<Function>("thread")?.call::<Table>(i)?)?;
            }
        }
        Ok(())
    }

    /// The fleet's threads' values at their end (see [`Scripted::ended`]).
    fn ended(&self, values: Vec<serde_json::Value>) -> Vec<String> {
        let mut left_out = Vec::new();
        let Some(after) = &self.shared.after else {
            return left_out;
        };
        let Ok(mut after) = after.lock() else {
            return left_out;
        };
        for (slot, v) in after.iter_mut().zip(values) {
            if !v.is_null() {
                *slot = Some(Plain::from_json(&v, &mut left_out));
            }
        }
        left_out.sort();
        left_out.dedup();
        left_out
    }

    fn has(&self, name: &str) -> bool {
        matches!(function(&self.setup, name), Ok(Some(_)))
    }

    fn done(&self, figures: &Figures, stdout_busy: bool) -> mlua::Result<()> {
        let Some(done) = function(&self.setup, "done")? else {
            return Ok(());
        };
        let lua = &self.setup;
        self.shared.stderr.store(stdout_busy, Ordering::Relaxed);
        let summary = lua.create_table()?;
        summary.set("duration", figures.duration_us)?;
        summary.set("requests", figures.requests)?;
        summary.set("bytes", figures.bytes)?;
        let e = &figures.errors;
        let errors = lua.create_table()?;
        for (k, v) in [
            ("connect", e.connect),
            ("read", e.read),
            ("write", e.write),
            ("status", e.status),
            ("timeout", e.timeout),
        ] {
            errors.set(k, v)?;
        }
        summary.set("errors", errors)?;
        let latency = Stats::of_histogram(&figures.latency);
        let requests = Stats::of_values(&figures.rates);
        let objects = (
            latency.object(lua, &self.made, 0)?,
            requests.object(lua, &self.made, 1)?,
        );
        *self.shared.stats.borrow_mut() = vec![latency, requests];
        self.shared.begin(PHASE_INSTRUCTIONS);
        hold(&self.made, &self.shared, &figures.metrics)?;
        let result = done.call::<()>((summary, objects.0, objects.1));
        let _ = std::io::stdout().flush();
        result
    }
}

/// Thread `i`'s `init(args)` in its state `lua` (`own`: its constructors), with `wrk.thread`
/// and the Host header set first.
fn init(lua: &Lua, own: &Table, i: usize, load: &Load) -> mlua::Result<()> {
    let wrk: Table = lua.globals().get("wrk")?;
    wrk.set("thread", own.get::<Function>("thread")?.call::<Table>(i)?)?;
    let headers: Table = wrk.get("headers")?;
    if headers.get::<Value>("Host")?.is_nil() {
        headers.set("Host", host_header(&load.origin))?;
    }
    if let Some(init) = function(lua, "init")? {
        let list = lua.create_sequence_from(load.args.iter().map(String::as_str))?;
        list.raw_set(0, load.origin.url.as_str())?;
        if let Some(shared) = lua.app_data_ref::<Shared>() {
            shared.begin(PHASE_INSTRUCTIONS);
        }
        init.call::<()>(list)?;
    }
    Ok(())
}

/// A script with per-request hooks: each worker makes its thread's state on its own thread
/// (`HookMaker::make`), seeded with what `setup` set on the thread, and runs `init` there;
/// at the worker's end the state's plain global values are kept for `thread:get()` in
/// `done`.
#[derive(Debug)]
struct Workers {
    load: Load,
    /// Per thread: the values `setup` set (`thread:set`).
    seeds: Vec<Vec<(Plain, Plain)>>,
    uses: Uses,
    failed: AtomicBool,
    /// The first worker's error.
    error: Mutex<Option<String>>,
    /// Per thread: its globals at its end.
    after: Arc<Mutex<Vec<Option<Plain>>>>,
    /// What the threads' `pelt.counter` and `pelt.histogram` objects held at their end.
    gathered: Arc<Mutex<ScriptMetrics>>,
    /// The steps' names `request()` gave, numbered in the order any thread first gave them.
    steps: Arc<Mutex<Vec<String>>>,
}

impl HookMaker for Workers {
    fn uses(&self) -> Uses {
        self.uses
    }

    fn make(&self, worker: usize, offer: Offer<'_>) -> Result<Made, String> {
        let made = self.thread(worker, offer);
        if let Err(e) = &made {
            self.failed.store(true, Ordering::Relaxed);
            if let Ok(mut error) = self.error.lock() {
                error.get_or_insert_with(|| e.clone());
            }
        }
        made
    }

    fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    fn names(&self) -> Vec<String> {
        self.steps.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Workers {
    fn thread(&self, i: usize, offer: Offer<'_>) -> Result<Made, String> {
        let load = &self.load;
        if i >= load.threads {
            return Err(format!("{}: no thread {i} of {}", load.name, load.threads));
        }
        let shared = load.shared();
        for _ in 0..load.threads {
            shared.slots.borrow_mut().push(Slot {
                lua: None,
                addr: load.origin.addr,
                seed: Vec::new(),
            });
        }
        let (lua, own) = load.state(&shared).map_err(|e| one_line(&e))?;
        let set_up = || -> mlua::Result<Thread> {
            shared.slots.borrow_mut()[i].lua = Some(lua.weak());
            let globals = lua.globals();
            for (k, v) in self.seeds.get(i).into_iter().flatten() {
                globals.raw_set(k.clone().into_lua(&lua)?, v.clone().into_lua(&lua)?)?;
            }
            shared.begin(PHASE_INSTRUCTIONS);
            init(&lua, &own, i, load)?;
            let meta = lua.create_table()?;
            meta.set("__index", own.get::<Function>("any_case")?)?;
            Ok(Thread {
                request: function(&lua, "request")?,
                response: function(&lua, "response")?,
                delay: function(&lua, "delay")?,
                next: Vec::new(),
                next_step: UNNAMED,
                first: true,
                steps: self.steps.clone(),
                known: HashMap::new(),
                name: load.name.clone(),
                meta,
                index: i,
                shared: shared.clone(),
                after: self.after.clone(),
                gathered: self.gathered.clone(),
                made: own.clone(),
                lua: lua.clone(),
            })
        };
        let mut thread = set_up().map_err(|e| one_line(&e))?;
        // The first request, as the script makes it: how many requests a call sends. A
        // script that reads what the run offers (`pelt.next()`) read a preview: its request
        // is not sent (as wrk sends none of this call's).
        let mut first = Vec::new();
        thread.next_step = thread.call_request(&mut first, offer)?;
        if thread.request.is_none() || thread.shared.offer.borrow().read {
            thread.first = false;
        }
        let batch = count_requests(&first).map_err(|e| format!("{}: {e}", load.name))?;
        if batch > 1 && load.exact {
            return Err(format!(
                "{}: request() sends {batch} requests at once (pipelined), which pelt runs only \
                 in a closed loop for a duration (not with -n or --rate)",
                load.name
            ));
        }
        thread.next = first;
        Ok(Made {
            hooks: Box::new(thread),
            batch,
        })
    }
}

/// One worker's state and its hooks.
struct Thread {
    lua: Lua,
    request: Option<Function>,
    response: Option<Function>,
    delay: Option<Function>,
    /// The first `request()`'s bytes, sent first; without `request()`, the request the
    /// `wrk` table says after `init`, sent every time.
    next: Vec<u8>,
    /// The step `next` plays.
    next_step: u32,
    first: bool,
    /// Every thread's steps' names (`Workers::steps`), and the numbers of those this thread
    /// has given (up to `KNOWN_STEPS` of them; past that the shared list is read).
    steps: Arc<Mutex<Vec<String>>>,
    known: HashMap<Vec<u8>, u32>,
    /// The script's file, as errors name it.
    name: String,
    /// The response headers' metatable: names are found in any case.
    meta: Table,
    index: usize,
    shared: Shared,
    after: Arc<Mutex<Vec<Option<Plain>>>>,
    gathered: Arc<Mutex<ScriptMetrics>>,
    /// The state's constructors (its counters among them).
    made: Table,
}

impl Thread {
    /// Appends `request()`'s bytes (or, without it, the `wrk` table's request) to `out`;
    /// returns the step they play (`request()`'s second value).
    fn call_request(&mut self, out: &mut Vec<u8>, offer: Offer<'_>) -> Result<u32, String> {
        self.shared.begin(HOOK_INSTRUCTIONS);
        let (made, step) = match &self.request {
            Some(f) => {
                self.shared.offer.borrow_mut().hold(offer);
                let made = f.call::<(Value, Value)>(());
                self.shared.offer.borrow_mut().bytes.clear();
                made.map_err(|e| one_line(&e))?
            }
            None => (format(&self.lua, &[])?, Value::Nil),
        };
        let step = self.step(&step)?;
        match made {
            Value::String(s) => {
                out.extend_from_slice(&s.as_bytes());
                Ok(step)
            }
            v => Err(format!(
                "{}: request() returned {}, not a request (wrk.format() makes one)",
                self.name,
                v.type_name()
            )),
        }
    }

    /// The number of the step named `name` (nil: none), numbered on its first use by any
    /// thread; past [`pelt_stats::MAX_TARGET_NAMES`] names, the rest are one step,
    /// [`pelt_stats::OTHER`].
    fn step(&mut self, name: &Value) -> Result<u32, String> {
        let name = match name {
            Value::Nil => return Ok(UNNAMED),
            Value::String(s) => s.as_bytes(),
            v => {
                return Err(format!(
                    "{}: request()'s second value names the request's step: a string, not {}",
                    self.name,
                    v.type_name()
                ))
            }
        };
        if let Some(&k) = self.known.get(&name[..]) {
            return Ok(k);
        }
        let text = String::from_utf8_lossy(&name).into_owned();
        let mut all = self.steps.lock().map_err(|_| "the steps' names are lost")?;
        let k = match all.iter().position(|n| *n == text) {
            Some(k) => k,
            None if all.len() < pelt_stats::MAX_TARGET_NAMES => {
                all.push(text);
                all.len() - 1
            }
            None => match all.iter().position(|n| n == pelt_stats::OTHER) {
                Some(k) => k,
                None => {
                    all.push(pelt_stats::OTHER.into());
                    all.len() - 1
                }
            },
        };
        if self.known.len() < KNOWN_STEPS {
            self.known.insert(name.to_vec(), k as u32);
        }
        Ok(k as u32)
    }
}

/// The most step names a thread remembers the numbers of (a script that names every request
/// differently reads the shared list for the rest).
const KNOWN_STEPS: usize = 4 * pelt_stats::MAX_TARGET_NAMES;

impl Hooks for Thread {
    fn request(&mut self, out: &mut Vec<u8>, offer: Offer<'_>) -> Result<u32, String> {
        if self.request.is_none() || self.first {
            self.first = false;
            out.extend_from_slice(&self.next);
            return Ok(self.next_step);
        }
        self.call_request(out, offer)
    }

    fn response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(), String> {
        let Some(f) = &self.response else {
            return Ok(());
        };
        let lua = &self.lua;
        let call = || -> mlua::Result<()> {
            let t = lua.create_table_with_capacity(0, headers.len())?;
            for (n, v) in headers {
                t.raw_set(n.as_str(), v.as_str())?;
            }
            t.set_metatable(Some(self.meta.clone()))?;
            self.shared.begin(HOOK_INSTRUCTIONS);
            f.call::<()>((status, t, lua.create_string(body)?))
        };
        call().map_err(|e| one_line(&e))
    }

    fn delay(&mut self) -> Result<Duration, String> {
        let Some(f) = &self.delay else {
            return Ok(Duration::ZERO);
        };
        self.shared.begin(HOOK_INSTRUCTIONS);
        let ms = match f.call::<Value>(()).map_err(|e| one_line(&e))? {
            Value::Integer(ms) => ms as f64,
            Value::Number(ms) => ms,
            Value::Nil => 0.0,
            v => {
                return Err(format!(
                    "{}: delay() returned {}, not a number",
                    self.name,
                    v.type_name()
                ))
            }
        };
        Ok(Duration::from_secs_f64((ms / 1e3).clamp(0.0, 86_400.0)))
    }

    fn stopped(&self) -> bool {
        self.shared.stopped.get()
    }

    fn end(&mut self) {
        let kept = Plain::globals(&self.lua);
        if let Ok(mut after) = self.after.lock() {
            if let Some(slot) = after.get_mut(self.index) {
                *slot = Some(kept);
            }
        }
        let mine = gathered(&self.made, &self.shared.histograms.borrow());
        if let Ok(mut all) = self.gathered.lock() {
            all.merge(&mine);
        }
    }
}

/// Threads whose `init` left different requests in their `wrk` tables, and no per-request
/// hook: each worker sends its own thread's request, written once (no Lua per request).
#[derive(Debug)]
struct Own {
    /// Per thread, its request as `wrk.format()` writes it.
    sent: Vec<Vec<u8>>,
}

impl HookMaker for Own {
    fn uses(&self) -> Uses {
        Uses::default()
    }

    fn make(&self, worker: usize, _: Offer<'_>) -> Result<Made, String> {
        let sent = self.sent.get(worker).ok_or("no such thread")?.clone();
        Ok(Made {
            hooks: Box::new(Sends(sent)),
            batch: 1,
        })
    }

    fn failed(&self) -> bool {
        false
    }
}

/// One thread's request, sent every time.
struct Sends(Vec<u8>);

impl Hooks for Sends {
    fn request(&mut self, out: &mut Vec<u8>, _: Offer<'_>) -> Result<u32, String> {
        out.extend_from_slice(&self.0);
        Ok(UNNAMED)
    }

    fn response(&mut self, _: u16, _: &[(String, String)], _: &[u8]) -> Result<(), String> {
        Ok(())
    }

    fn delay(&mut self) -> Result<Duration, String> {
        Ok(Duration::ZERO)
    }

    fn stopped(&self) -> bool {
        false
    }

    fn end(&mut self) {}
}

/// The request a state's `wrk` table says, as `wrk.format()` writes it.
fn formatted(lua: &Lua) -> Result<Vec<u8>, String> {
    match format(lua, &[])? {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        v => Err(format!("wrk.format() made {}", v.type_name())),
    }
}

/// How many HTTP/1.1 requests `bytes` hold, one after another (their bodies by
/// `Content-Length`).
fn count_requests(mut bytes: &[u8]) -> Result<usize, String> {
    let mut n = 0;
    while !bytes.is_empty() {
        let length = pelt_codec::request::request_len(bytes)
            .ok_or("request() returned bytes that are not HTTP/1.1 requests")?;
        bytes = bytes.get(length..).unwrap_or_default();
        n += 1;
    }
    if n == 0 {
        return Err("request() returned an empty string".into());
    }
    Ok(n)
}

/// The global function `name`, if the script defines one.
fn function(lua: &Lua, name: &str) -> mlua::Result<Option<Function>> {
    match lua.globals().get::<Value>(name)? {
        Value::Function(f) => Ok(Some(f)),
        _ => Ok(None),
    }
}

/// wrk's default Host header: the host (bracketed when IPv6), with the port the URL names.
fn host_header(origin: &Origin) -> String {
    let host = if origin.host.contains(':') {
        format!("[{}]", origin.host)
    } else {
        origin.host.clone()
    };
    match origin.port {
        Some(p) => format!("{host}:{p}"),
        None => host,
    }
}

/// The request a `wrk` table says.
fn left_request(wrk: &Table) -> mlua::Result<Request> {
    let headers: Table = wrk.get("headers")?;
    Ok(Request {
        method: wrk.get("method")?,
        path: wrk.get("path")?,
        headers: header_list(&headers)?
            .into_iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case("content-length"))
            .collect(),
        body: wrk
            .get::<Option<mlua::LuaString>>("body")?
            .map(|b| b.as_bytes().to_vec()),
    })
}

/// The offered request (`pelt.next()`) as a table: `method`, `path`, `headers` (as sent,
/// `Content-Length` left out: `wrk.format` writes it), `body` (nil without one) and `name`
/// (the entry's, nil without one).
fn offer_table(lua: &Lua, bytes: &[u8], name: &str) -> Result<Value, String> {
    let mut fields = [httparse::EMPTY_HEADER; 128];
    let mut head = httparse::Request::new(&mut fields);
    let Ok(httparse::Status::Complete(length)) = head.parse(bytes) else {
        return Err("the offered request is not an HTTP/1.1 request".into());
    };
    let make = || -> mlua::Result<Table> {
        let t = lua.create_table()?;
        t.set("method", head.method.unwrap_or_default())?;
        t.set("path", head.path.unwrap_or_default())?;
        let headers = lua.create_table()?;
        for h in head.headers.iter() {
            if !h.name.eq_ignore_ascii_case("content-length") {
                headers.set(h.name, lua.create_string(h.value)?)?;
            }
        }
        t.set("headers", headers)?;
        let body = &bytes[length..];
        if !body.is_empty() {
            t.set("body", lua.create_string(body)?)?;
        }
        if !name.is_empty() {
            t.set("name", name)?;
        }
        Ok(t)
    };
    make().map(Value::Table).map_err(lua_err)
}

/// A headers table as `(name, value)` pairs in name order (numbers and booleans written as
/// Lua writes them; nil and other values left out).
fn header_list(t: &Table) -> mlua::Result<Vec<(String, String)>> {
    let mut list = Vec::new();
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair?;
        let Some(name) = text(&k) else { continue };
        if let Some(value) = text(&v) {
            list.push((name, value));
        }
    }
    list.sort();
    Ok(list)
}

/// A string, number or boolean as text.
fn text(v: &Value) -> Option<String> {
    if let Value::String(s) = v {
        return Some(s.to_string_lossy());
    }
    let mut out = Vec::new();
    // Numbers and booleans are ASCII: the bytes are valid UTF-8.
    put_text(&mut out, v).then(|| String::from_utf8_lossy(&out).into_owned())
}

/// pelt's own Lua around the Rust functions (`raw`): `guard` raises a Rust function's error
/// from Lua; the thread objects (`setup(thread)`, `wrk.thread`) and the statistics objects
/// (`done`'s `latency` and `requests`) are tables with metatables. Returns the constructors.
const PRELUDE: &str = r#"
local raw = ...
-- The count hook ends a call that runs too long or a state that holds too much (errors from
-- Lua, never from Rust); compiled code would not run it, so the JIT compiler is off.
jit.off()
local tick, memory, over = raw.tick, collectgarbage, raw.memory_kib
debug.sethook(function()
   local _, late = tick()
   if late then error(late, 2) end
   if memory("count") > over then
      memory("collect")
      if memory("count") > over then
         error("the script's state holds more than " .. math.floor(over / 1024) .. " MiB", 2)
      end
   end
end, "", raw.every)
debug = nil
package.loaded.debug = nil
local function guard(f)
   return function(...)
      local ok, a, b = f(...)
      if not ok then error(a, 2) end
      return a, b
   end
end
wrk.format = guard(raw.format)
wrk.lookup = guard(raw.lookup)
wrk.connect = guard(raw.connect)
wrk.request = function() return wrk.format() end
print = raw.print
io.write = raw.write
os.exit = function()
   error("os.exit() is not allowed: a script cannot end the run", 2)
end

local ids = setmetatable({}, { __mode = "k" })
local get, set = guard(raw.thread_get), guard(raw.thread_set)
local addr, set_addr = guard(raw.thread_addr), guard(raw.thread_set_addr)
local stop = guard(raw.thread_stop)
local methods = {
   get = function(self, name) return get(ids[self], name) end,
   set = function(self, name, value) return set(ids[self], name, value) end,
   stop = function(self) return stop(ids[self]) end,
}
local thread_meta = {
   __index = function(t, k)
      if k == "addr" then return addr(ids[t]) end
      return methods[k]
   end,
   __newindex = function(t, k, v)
      if k == "addr" then set_addr(ids[t], v) else rawset(t, k, v) end
   end,
}
local function thread(i)
   local t = setmetatable({}, thread_meta)
   ids[t] = i
   return t
end

local counts = setmetatable({}, { __mode = "k" })
local percentile = guard(raw.percentile)
local stats_meta = {
   __index = { percentile = function(self, p) return percentile(ids[self], p) end },
   __call = function(self, i) return rawget(self, i), counts[self][i] end,
}
local function stats(t, c, i)
   ids[t], counts[t] = i, c
   return setmetatable(t, stats_meta)
end
-- pelt's own figures (the result's `script` section): counters and HDR histograms, kept per
-- state and added up over every thread. A counter lives in Lua (an add is a table write); a
-- histogram's values go to Rust.
local counters, histograms = {}, {}
local function whole(n, what)
   if type(n) ~= "number" or n < 0 or n % 1 ~= 0 or n ~= n then
      error(what .. ": a whole number, 0 or more (got " .. tostring(n) .. ")", 3)
   end
end
local counter_meta = { __index = {
   add = function(self, n)
      if n == nil then n = 1 else whole(n, "counter:add(n)") end
      self.n = self.n + n
   end,
   value = function(self) return self.n end,
} }
local function named(name, what)
   if type(name) ~= "string" or name == "" then error(what .. "(name): a name", 3) end
end
local function counter(name)
   named(name, "pelt.counter")
   local c = counters[name]
   if c == nil then
      c = setmetatable({ n = 0 }, counter_meta)
      counters[name] = c
   end
   return c
end
local record, stat = raw.record, raw.histogram_stat
local function ask(id, what, p)
   local ok, v = stat(id, what, p)
   if not ok then error(v, 3) end
   return v
end
local histogram_meta = { __index = {
   record = function(self, v)
      whole(v, "histogram:record(v)")
      record(self.id, v)
   end,
   count = function(self) return ask(self.id, "count") end,
   min = function(self) return ask(self.id, "min") end,
   max = function(self) return ask(self.id, "max") end,
   mean = function(self) return ask(self.id, "mean") end,
   stdev = function(self) return ask(self.id, "stdev") end,
   percentile = function(self, p) return ask(self.id, "percentile", p) end,
} }
local new_histogram = guard(raw.histogram)
local function histogram(name)
   named(name, "pelt.histogram")
   local h = histograms[name]
   if h == nil then
      h = setmetatable({ id = new_histogram(name) }, histogram_meta)
      histograms[name] = h
   end
   return h
end
pelt = { counter = counter, histogram = histogram, next = guard(raw.next) }
-- Response headers: found by any case of their names (they come lower-cased).
local lower = string.lower
local function any_case(t, k)
   if type(k) == "string" then return rawget(t, lower(k)) end
end
return {
   thread = thread, stats = stats, any_case = any_case, counters = counters, counter = counter,
   histogram = histogram,
}
"#;

/// What the Rust functions of a state reach: the threads (from every state) and, in the setup
/// state at `done`, the statistics.
#[derive(Clone, Default)]
struct Shared {
    slots: Rc<RefCell<Vec<Slot>>>,
    stats: Rc<RefCell<Vec<Stats>>>,
    /// `pelt.histogram(name)`: this state's histograms, by the number their objects carry.
    histograms: Rc<RefCell<Vec<(String, LatencyHistogram)>>>,
    /// `print` and `io.write` go to stderr (stdout carries the JSON result).
    stderr: Arc<AtomicBool>,
    /// The count hook's runs left to the current call (see `HOOK_INSTRUCTIONS`).
    ticks: Rc<Cell<u64>>,
    /// A thread's state: its script called `thread:stop()`.
    stopped: Rc<Cell<bool>>,
    /// The setup state of a script with per-request hooks: each thread's globals at its end.
    after: Option<Arc<Mutex<Vec<Option<Plain>>>>>,
    /// A worker's state: the request the run offers the current `request()` call
    /// (`pelt.next()`).
    offer: Rc<RefCell<Offered>>,
}

/// The request offered to a `request()` call (empty outside one), and whether the script
/// has read one (`pelt.next()`).
#[derive(Default)]
struct Offered {
    bytes: Vec<u8>,
    name: String,
    read: bool,
}

impl Offered {
    fn hold(&mut self, offer: Offer<'_>) {
        self.bytes.clear();
        self.bytes.extend_from_slice(offer.bytes);
        self.name.clear();
        self.name.push_str(offer.name);
    }
}

/// What a state knows of a thread: its state when it lives here, its address, and the values
/// `setup` set on it when its state is made elsewhere (a worker's).
struct Slot {
    lua: Option<WeakLua>,
    addr: SocketAddr,
    seed: Vec<(Plain, Plain)>,
}

/// A Rust function as the prelude's `guard` takes it: it answers `true, value` or `false,
/// message`, whatever its arguments.
fn raw<F>(lua: &Lua, f: F) -> mlua::Result<Function>
where
    F: Fn(&Lua, &Shared, Vec<Value>) -> Result<Value, String> + 'static,
{
    lua.create_function(move |lua, args: MultiValue| {
        let shared = lua.app_data_ref::<Shared>().map(|s| s.clone());
        let answer = match shared {
            Some(shared) => f(lua, &shared, args.into_iter().collect()),
            None => Err("pelt's script state is gone".into()),
        };
        Ok(match answer {
            Ok(v) => (true, v),
            Err(e) => (false, Value::String(lua.create_string(e)?)),
        })
    })
}

/// Argument `i` as bytes (strings and numbers, as Lua coerces them).
fn bytes_arg(args: &[Value], i: usize) -> Option<Vec<u8>> {
    match args.get(i)? {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        v => text(v).map(String::into_bytes),
    }
}

fn lua_err(e: mlua::Error) -> String {
    one_line(&e)
}

/// The `wrk` table, the functions wrk's scripts may call, the thread and statistics
/// objects; `print` and `io.write` write through Rust's stdout (so they keep their place
/// beside pelt's own output); `os.exit` is an error, not an exit in the middle of a run.
/// Returns the prelude's constructors.
fn install(lua: &Lua, origin: &Origin, shared: &Shared) -> mlua::Result<Table> {
    lua.set_app_data(shared.clone());
    let wrk = lua.create_table()?;
    wrk.set("scheme", origin.scheme.as_str())?;
    wrk.set("host", origin.host.as_str())?;
    wrk.set("port", origin.port)?;
    wrk.set("method", origin.method.as_str())?;
    wrk.set("path", origin.path.as_str())?;
    let headers = lua.create_table()?;
    for (n, v) in &origin.headers {
        headers.set(n.as_str(), v.as_str())?;
    }
    wrk.set("headers", headers)?;
    if let Some(b) = &origin.body {
        wrk.set("body", lua.create_string(b)?)?;
    }
    lua.globals().set("wrk", wrk)?;
    let r = lua.create_table()?;
    // Called once a request by many scripts: its arguments are not collected into a Vec.
    r.set(
        "format",
        lua.create_function(|lua, args: MultiValue| {
            let mut a = [Value::Nil, Value::Nil, Value::Nil, Value::Nil];
            for (slot, v) in a.iter_mut().zip(args) {
                *slot = v;
            }
            Ok(match format(lua, &a) {
                Ok(v) => (true, v),
                Err(e) => (false, Value::String(lua.create_string(e)?)),
            })
        })?,
    )?;
    r.set(
        "lookup",
        raw(lua, |lua, _, a| {
            let host = bytes_arg(&a, 0).ok_or("wrk.lookup(host, service): a host")?;
            let list = lookup(&String::from_utf8_lossy(&host), a.get(1))?;
            let t = lua
                .create_sequence_from(list.iter().map(|a| a.to_string()))
                .map_err(lua_err)?;
            Ok(Value::Table(t))
        })?,
    )?;
    r.set(
        "connect",
        raw(lua, |_, _, a| {
            let addr = address(&a, 0)?;
            Ok(Value::Boolean(
                TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok(),
            ))
        })?,
    )?;
    r.set(
        "thread_addr",
        raw(lua, |lua, s, a| {
            let slots = s.slots.borrow();
            let slot = slot_of(&slots, &a)?;
            Ok(Value::String(
                lua.create_string(slot.addr.to_string()).map_err(lua_err)?,
            ))
        })?,
    )?;
    r.set(
        "thread_set_addr",
        raw(lua, |_, s, a| {
            let addr = address(&a, 1)?;
            let mut slots = s.slots.borrow_mut();
            let i = index_of(&slots, &a)?;
            slots[i].addr = addr;
            Ok(Value::Nil)
        })?,
    )?;
    // A value crosses from one state to another as a copy: booleans, numbers, strings and
    // tables of them, as in wrk.
    r.set(
        "thread_get",
        raw(lua, |lua, s, a| {
            let name = bytes_arg(&a, 1).ok_or("thread:get(name): a name")?;
            let slots = s.slots.borrow();
            let i = index_of(&slots, &a)?;
            let plain = match &slots[i].lua {
                Some(weak) => {
                    let state = weak.try_upgrade().ok_or("the thread has ended")?;
                    let key = state.create_string(&name).map_err(lua_err)?;
                    let v: Value = state.globals().raw_get(key).map_err(lua_err)?;
                    Plain::of(&v)?
                }
                // A worker's thread: its values at its end, else those setup set.
                None => {
                    let after = s
                        .after
                        .as_ref()
                        .and_then(|a| a.lock().ok()?.get(i).cloned());
                    match after.flatten() {
                        Some(globals) => globals.field(&name),
                        None => Plain::Table(slots[i].seed.clone()).field(&name),
                    }
                }
            };
            plain.into_lua(lua).map_err(lua_err)
        })?,
    )?;
    r.set(
        "thread_set",
        raw(lua, |_, s, a| {
            let name = bytes_arg(&a, 1).ok_or("thread:set(name, value): a name")?;
            let value = Plain::of(a.get(2).unwrap_or(&Value::Nil))?;
            let mut slots = s.slots.borrow_mut();
            let i = index_of(&slots, &a)?;
            match &slots[i].lua {
                Some(weak) => {
                    let state = weak.try_upgrade().ok_or("the thread has ended")?;
                    let v = value.into_lua(&state).map_err(lua_err)?;
                    let name = state.create_string(name).map_err(lua_err)?;
                    state.globals().raw_set(name, v).map_err(lua_err)?;
                }
                None => {
                    let seed = &mut slots[i].seed;
                    seed.retain(|(k, _)| !matches!(k, Plain::Str(k) if *k == name));
                    seed.push((Plain::Str(name), value));
                }
            }
            Ok(Value::Nil)
        })?,
    )?;
    r.set(
        "histogram",
        raw(lua, |_, s, a| {
            let name = bytes_arg(&a, 0).ok_or("pelt.histogram(name): a name")?;
            let name = String::from_utf8_lossy(&name).into_owned();
            let mut all = s.histograms.borrow_mut();
            let id = match all.iter().position(|(n, _)| *n == name) {
                Some(id) => id,
                None => {
                    all.push((name, LatencyHistogram::new()));
                    all.len() - 1
                }
            };
            Ok(Value::Integer(id as i64))
        })?,
    )?;
    r.set(
        "next",
        raw(lua, |lua, s, _| {
            let mut offered = s.offer.borrow_mut();
            offered.read = true;
            if offered.bytes.is_empty() {
                return Err(
                    "pelt.next() reads the request the run offers to request(), \
                            in request() only"
                        .into(),
                );
            }
            offer_table(lua, &offered.bytes, &offered.name)
        })?,
    )?;
    // The prelude has checked the value (a whole number, 0 or more).
    r.set(
        "record",
        // Its arguments are taken as they come (an error raised from Rust would abort).
        lua.create_function(|lua, args: MultiValue| {
            let number = |v: Option<&Value>| match v {
                Some(Value::Integer(i)) => *i as f64,
                Some(Value::Number(n)) => *n,
                _ => -1.0,
            };
            let (id, v) = (number(args.front()), number(args.get(1)));
            if id < 0.0 || v < 0.0 {
                return Ok(());
            }
            if let Some(s) = lua.app_data_ref::<Shared>() {
                if let Some((_, h)) = s.histograms.borrow_mut().get_mut(id as usize) {
                    h.record_value(v as u64);
                }
            }
            Ok(())
        })?,
    )?;
    r.set(
        "histogram_stat",
        raw(lua, |_, s, a| {
            let all = s.histograms.borrow();
            let id = match a.first() {
                Some(Value::Integer(i)) => *i as usize,
                Some(Value::Number(i)) => *i as usize,
                _ => usize::MAX,
            };
            let (_, h) = all.get(id).ok_or("not a histogram")?;
            let what = bytes_arg(&a, 1).unwrap_or_default();
            let sum = h.summary();
            Ok(match &what[..] {
                b"count" => Value::Number(h.count() as f64),
                b"min" => Value::Number(sum.min_us as f64),
                b"max" => Value::Number(sum.max_us as f64),
                b"mean" => Value::Number(sum.mean_us),
                b"stdev" => Value::Number(sum.stdev_us),
                _ => {
                    let p = match a.get(2) {
                        Some(Value::Integer(p)) => *p as f64,
                        Some(Value::Number(p)) => *p,
                        _ => return Err("histogram:percentile(p): a number".into()),
                    };
                    Value::Number(h.quantile_us((p / 100.0).clamp(0.0, 1.0)) as f64)
                }
            })
        })?,
    )?;
    r.set("memory_kib", STATE_MEMORY_KIB)?;
    r.set("every", HOOK_EVERY)?;
    r.set(
        "tick",
        raw(lua, |lua, s, _| {
            let left = s.ticks.get();
            if left > 0 {
                s.ticks.set(left - 1);
                return Ok(Value::Nil);
            }
            let text = "the script ran too long in one call (an endless loop?)";
            Ok(Value::String(lua.create_string(text).map_err(lua_err)?))
        })?,
    )?;
    r.set(
        "thread_stop",
        raw(lua, |_, s, a| {
            let slots = s.slots.borrow();
            let i = index_of(&slots, &a)?;
            match &slots[i].lua {
                // Only a thread's own state runs while it sends.
                Some(_) if s.after.is_none() => {
                    s.stopped.set(true);
                    Ok(Value::Nil)
                }
                _ => Err(
                    "thread:stop() stops a thread from its own request(), response() or \
                          delay()"
                        .into(),
                ),
            }
        })?,
    )?;
    r.set(
        "percentile",
        raw(lua, |_, s, a| {
            let stats = s.stats.borrow();
            let i = match a.first() {
                Some(Value::Integer(i)) => *i as usize,
                _ => usize::MAX,
            };
            let st = stats.get(i).ok_or("not a statistics object")?;
            let p = match a.get(1) {
                Some(Value::Integer(p)) => *p as f64,
                Some(Value::Number(p)) => *p,
                _ => return Err("percentile(p): a number".into()),
            };
            Ok(Value::Integer(st.percentile(p) as i64))
        })?,
    )?;
    let print = lua.create_function(|lua, args: MultiValue| {
        let mut line = Vec::new();
        for (i, v) in args.iter().enumerate() {
            if i > 0 {
                line.push(b'\t');
            }
            match v {
                Value::String(s) => line.extend_from_slice(&s.as_bytes()),
                v => line.extend_from_slice(
                    text(v)
                        .or_else(|| v.to_string().ok())
                        .unwrap_or_default()
                        .as_bytes(),
                ),
            }
        }
        line.push(b'\n');
        write_out(lua, &line);
        Ok(())
    })?;
    r.set("print", print)?;
    let write = lua.create_function(|lua, args: MultiValue| {
        for v in &args {
            match v {
                Value::String(s) => write_out(lua, &s.as_bytes()),
                v => write_out(lua, text(v).unwrap_or_default().as_bytes()),
            }
        }
        Ok(())
    })?;
    r.set("write", write)?;
    lua.load(PRELUDE).set_name("=pelt").call::<Table>(r)
}

/// What the state's `pelt.counter` objects hold (`made`: its constructors), and
/// `histograms` (its `pelt.histogram` objects').
fn gathered(made: &Table, histograms: &[(String, LatencyHistogram)]) -> ScriptMetrics {
    let mut m = ScriptMetrics::default();
    if let Ok(counters) = made.get::<Table>("counters") {
        for (name, c) in counters.pairs::<String, Table>().flatten() {
            let n = match c.raw_get::<Value>("n") {
                Ok(Value::Integer(n)) => n.max(0) as u64,
                Ok(Value::Number(n)) if n.is_finite() && n > 0.0 => n as u64,
                _ => 0,
            };
            m.counters.insert(name, n);
        }
    }
    for (name, h) in histograms {
        m.histograms.insert(name.clone(), h.clone());
    }
    m
}

/// Makes the state's `pelt.counter` and `pelt.histogram` objects hold `all` (every thread's,
/// for `done`).
fn hold(made: &Table, shared: &Shared, all: &ScriptMetrics) -> mlua::Result<()> {
    let counter: Function = made.get("counter")?;
    for (name, n) in &all.counters {
        counter.call::<Table>(name.as_str())?.raw_set("n", *n)?;
    }
    let histogram: Function = made.get("histogram")?;
    for (name, h) in &all.histograms {
        let id: usize = histogram.call::<Table>(name.as_str())?.raw_get("id")?;
        if let Some(slot) = shared.histograms.borrow_mut().get_mut(id) {
            slot.1 = h.clone();
        }
    }
    Ok(())
}

fn write_out(lua: &Lua, bytes: &[u8]) {
    let stderr = lua
        .app_data_ref::<Shared>()
        .is_some_and(|s| s.stderr.load(Ordering::Relaxed));
    if stderr {
        let _ = std::io::stderr().write_all(bytes);
    } else {
        let _ = std::io::stdout().write_all(bytes);
    }
}

/// Argument `i` as an address (`127.0.0.1:8080`, as `wrk.lookup` gives them).
fn address(args: &[Value], i: usize) -> Result<SocketAddr, String> {
    let text = bytes_arg(args, i).ok_or("an address from wrk.lookup()")?;
    let text = String::from_utf8_lossy(&text);
    text.parse()
        .map_err(|_| format!("'{text}' is not an address from wrk.lookup()"))
}

/// The thread the first argument numbers.
fn index_of(slots: &[Slot], args: &[Value]) -> Result<usize, String> {
    match args.first() {
        Some(Value::Integer(i)) if (*i as usize) < slots.len() => Ok(*i as usize),
        _ => Err("not a thread".into()),
    }
}

fn slot_of<'s>(slots: &'s [Slot], args: &[Value]) -> Result<&'s Slot, String> {
    Ok(&slots[index_of(slots, args)?])
}

/// `wrk.format(method, path, headers, body)`: the request line, the headers (`Host` first,
/// then by name; `Content-Length` when there is a body), a blank line and the body; each
/// part not given is the `wrk` table's.
///
/// It runs once a request in a script whose `request()` calls it (wrk's `counter.lua`,
/// `setup.lua`), so it writes into this thread's scratch buffers (grown once, then reused)
/// and allocates nothing but the Lua string it returns.
fn format(lua: &Lua, a: &[Value]) -> Result<Value, String> {
    thread_local! {
        static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
    }
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        scratch.format(lua, a)?;
        let s = lua.create_string(&scratch.out).map_err(lua_err)?;
        Ok(Value::String(s))
    })
}

/// `wrk.format()`'s buffers: the request it writes, and the headers' names and values (their
/// bytes one after another, and where each lies) for sorting by name.
#[derive(Default)]
struct Scratch {
    out: Vec<u8>,
    header_bytes: Vec<u8>,
    /// Each header's name and value: `(name start, value start, value end)` in `header_bytes`.
    headers: Vec<(usize, usize, usize)>,
    body: Vec<u8>,
}

impl Scratch {
    fn format(&mut self, lua: &Lua, a: &[Value]) -> Result<(), String> {
        let wrk: Table = lua.globals().raw_get("wrk").map_err(lua_err)?;
        let arg = |i: usize| a.get(i).unwrap_or(&Value::Nil);
        let field = |name: &str| wrk.raw_get::<Value>(name).map_err(lua_err);
        let out = &mut self.out;
        out.clear();
        if !put_text(out, arg(0)) && !put_text(out, &field("method")?) {
            return Err("wrk.method is not a string".into());
        }
        out.push(b' ');
        if !put_text(out, arg(1)) && !put_text(out, &field("path")?) {
            return Err("wrk.path is not a string".into());
        }
        out.extend_from_slice(b" HTTP/1.1\r\n");
        let defaults: Table = wrk.raw_get("headers").map_err(lua_err)?;
        let headers = match arg(2) {
            Value::Table(t) => t,
            Value::Nil => &defaults,
            _ => return Err("wrk.format: headers are a table".into()),
        };
        self.body.clear();
        let body = put_text(&mut self.body, arg(3)) || put_text(&mut self.body, &field("body")?);
        // The headers, sorted by name, then value.
        let (bytes, list) = (&mut self.header_bytes, &mut self.headers);
        bytes.clear();
        list.clear();
        for pair in headers.pairs::<Value, Value>() {
            let (k, v) = pair.map_err(lua_err)?;
            let start = bytes.len();
            if !put_text(bytes, &k) {
                continue;
            }
            let mid = bytes.len();
            if put_text(bytes, &v) {
                list.push((start, mid, bytes.len()));
            } else {
                bytes.truncate(start);
            }
        }
        let bytes = &self.header_bytes;
        let name = |&(n, v, _): &(usize, usize, usize)| &bytes[n..v];
        let value = |&(_, v, e): &(usize, usize, usize)| &bytes[v..e];
        list.sort_unstable_by(|x, y| (name(x), value(x)).cmp(&(name(y), value(y))));
        let host = list.iter().find(|h| name(h) == b"Host");
        match host {
            Some(h) => {
                out.extend_from_slice(b"Host: ");
                out.extend_from_slice(value(h));
                out.extend_from_slice(b"\r\n");
            }
            None => {
                let mark = out.len();
                out.extend_from_slice(b"Host: ");
                let default = defaults.raw_get::<Value>("Host").map_err(lua_err)?;
                if put_text(out, &default) {
                    out.extend_from_slice(b"\r\n");
                } else {
                    out.truncate(mark);
                }
            }
        }
        for h in list.iter() {
            let n = name(h);
            if n == b"Host" || n.eq_ignore_ascii_case(b"content-length") {
                continue;
            }
            out.extend_from_slice(n);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value(h));
            out.extend_from_slice(b"\r\n");
        }
        if body {
            let _ = write!(out, "Content-Length: {}\r\n", self.body.len());
        }
        out.extend_from_slice(b"\r\n");
        if body {
            out.extend_from_slice(&self.body);
        }
        Ok(())
    }
}

/// Appends a string, number or boolean as text (as [`text`] writes it; a string's bytes as
/// they are); false for any other value.
fn put_text(out: &mut Vec<u8>, v: &Value) -> bool {
    match v {
        Value::String(s) => out.extend_from_slice(&s.as_bytes()),
        Value::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => {
            let _ = write!(out, "{}", *n as i64);
        }
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Boolean(b) => {
            let _ = write!(out, "{b}");
        }
        _ => return false,
    }
    true
}

/// `wrk.lookup(host, service)`: the addresses `host` resolves to, for a port number or a
/// service name (`http`, `https`).
fn lookup(host: &str, service: Option<&Value>) -> Result<Vec<SocketAddr>, String> {
    let port = match service {
        Some(Value::Integer(p)) => *p as u16,
        Some(Value::Number(p)) => *p as u16,
        Some(Value::String(s)) => match &*s.to_string_lossy() {
            "http" => 80,
            "https" => 443,
            p => p
                .parse()
                .map_err(|_| format!("wrk.lookup: unknown service '{p}'"))?,
        },
        _ => 80,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .map(|a| a.collect())
        .map_err(|e| format!("wrk.lookup: cannot resolve {host}: {e}"))
}

/// A value that may cross between states.
#[derive(Debug, Clone)]
enum Plain {
    Nil,
    Bool(bool),
    Int(i64),
    Num(f64),
    Str(Vec<u8>),
    Table(Vec<(Plain, Plain)>),
}

/// How deep tables may nest in a value that crosses between states (a table that holds
/// itself would never end).
const PLAIN_DEPTH: usize = 32;

/// The global tables every state has, which a thread's values leave out.
const LIBRARIES: [&str; 13] = [
    "_G",
    "wrk",
    "string",
    "table",
    "math",
    "io",
    "os",
    "coroutine",
    "package",
    "jit",
    "bit",
    "debug",
    "arg",
];

impl Plain {
    fn of(v: &Value) -> Result<Plain, String> {
        Plain::nested(v, 0)
    }

    fn nested(v: &Value, depth: usize) -> Result<Plain, String> {
        Ok(match v {
            Value::Nil => Plain::Nil,
            Value::Boolean(b) => Plain::Bool(*b),
            Value::Integer(i) => Plain::Int(*i),
            Value::Number(n) => Plain::Num(*n),
            Value::String(s) => Plain::Str(s.as_bytes().to_vec()),
            Value::Table(_) if depth >= PLAIN_DEPTH => {
                return Err(format!(
                    "a table nested more than {PLAIN_DEPTH} deep (one that holds itself?) \
                     cannot pass between threads"
                ))
            }
            Value::Table(t) => {
                let mut pairs = Vec::new();
                for p in t.clone().pairs::<Value, Value>() {
                    let (k, v) = p.map_err(lua_err)?;
                    pairs.push((Plain::nested(&k, depth + 1)?, Plain::nested(&v, depth + 1)?));
                }
                Plain::Table(pairs)
            }
            v => {
                return Err(format!(
                    "a {} cannot pass between threads (only nil, booleans, numbers, strings and \
                     tables of them)",
                    v.type_name()
                ))
            }
        })
    }

    /// A state's global values that can pass between states (the libraries left out).
    fn globals(lua: &Lua) -> Plain {
        let mut kept = Vec::new();
        for (k, v) in lua.globals().pairs::<Value, Value>().flatten() {
            if let Value::String(name) = &k {
                if LIBRARIES.iter().any(|l| name.as_bytes() == l.as_bytes()) {
                    continue;
                }
            }
            if let (Ok(k), Ok(v)) = (Plain::of(&k), Plain::of(&v)) {
                kept.push((k, v));
            }
        }
        Plain::Table(kept)
    }

    /// A table's field `name` (nil when there is none).
    fn field(self, name: &[u8]) -> Plain {
        let Plain::Table(pairs) = self else {
            return Plain::Nil;
        };
        pairs
            .into_iter()
            .find(|(k, _)| matches!(k, Plain::Str(k) if k == name))
            .map_or(Plain::Nil, |(_, v)| v)
    }

    /// As JSON, keeping what Lua tells apart: integers and floats (written with a point),
    /// strings (those not UTF-8 as `{"bytes": [...]}`), tables as lists of `[key, value]`
    /// pairs (their keys need not be strings); infinities and NaN as `{"num": "inf"}`.
    fn to_json(&self) -> serde_json::Value {
        use serde_json::{json, Value as J};
        match self {
            Plain::Nil => J::Null,
            Plain::Bool(b) => J::Bool(*b),
            Plain::Int(i) => json!(i),
            Plain::Num(n) => match serde_json::Number::from_f64(*n) {
                Some(n) => J::Number(n),
                None => json!({ "num": n.to_string() }),
            },
            Plain::Str(s) => match std::str::from_utf8(s) {
                Ok(text) => J::String(text.into()),
                Err(_) => json!({ "bytes": s }),
            },
            Plain::Table(pairs) => J::Array(
                pairs
                    .iter()
                    .map(|(k, v)| J::Array(vec![k.to_json(), v.to_json()]))
                    .collect(),
            ),
        }
    }

    /// A table (a thread's globals) as [`Plain::to_json`] writes it, in about `budget`
    /// bytes: past them, its largest values go as `{"left_out": size}` instead.
    fn to_json_within(&self, budget: usize) -> serde_json::Value {
        let Plain::Table(pairs) = self else {
            return self.to_json();
        };
        let mut pairs: Vec<(serde_json::Value, serde_json::Value, usize)> = pairs
            .iter()
            .map(|(k, v)| {
                let v = v.to_json();
                let size = v.to_string().len();
                (k.to_json(), v, size)
            })
            .collect();
        let mut total: usize = pairs.iter().map(|p| p.2).sum();
        let mut largest: Vec<usize> = (0..pairs.len()).collect();
        largest.sort_by_key(|&i| std::cmp::Reverse(pairs[i].2));
        for i in largest {
            if total <= budget {
                break;
            }
            total -= pairs[i].2;
            pairs[i].1 = serde_json::json!({ "left_out": pairs[i].2 });
        }
        serde_json::Value::Array(
            pairs
                .into_iter()
                .map(|(k, v, _)| serde_json::Value::Array(vec![k, v]))
                .collect(),
        )
    }

    /// What [`Plain::to_json`] wrote; the names of values left out for their size go to
    /// `left_out`, in words.
    fn from_json(v: &serde_json::Value, left_out: &mut Vec<String>) -> Plain {
        use serde_json::Value as J;
        match v {
            J::Null => Plain::Nil,
            J::Bool(b) => Plain::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) if !n.is_f64() => Plain::Int(i),
                _ => Plain::Num(n.as_f64().unwrap_or(f64::NAN)),
            },
            J::String(s) => Plain::Str(s.clone().into_bytes()),
            J::Array(pairs) => Plain::Table(
                pairs
                    .iter()
                    .filter_map(|p| match p.as_array().map(Vec::as_slice) {
                        Some([k, v]) => {
                            let k = Plain::from_json(k, left_out);
                            if let Some(size) = v.get("left_out").and_then(J::as_u64) {
                                let name = match &k {
                                    Plain::Str(s) => String::from_utf8_lossy(s).into_owned(),
                                    k => format!("{k:?}"),
                                };
                                left_out.push(format!("{name} ({size} bytes)"));
                                return Some((k, Plain::Nil));
                            }
                            Some((k, Plain::from_json(v, left_out)))
                        }
                        _ => None,
                    })
                    .collect(),
            ),
            J::Object(o) => match (o.get("num"), o.get("bytes")) {
                (Some(n), _) => {
                    Plain::Num(n.as_str().and_then(|n| n.parse().ok()).unwrap_or(f64::NAN))
                }
                (_, Some(J::Array(b))) => Plain::Str(
                    b.iter()
                        .filter_map(|b| b.as_u64().map(|b| b as u8))
                        .collect(),
                ),
                _ => Plain::Nil,
            },
        }
    }

    fn into_lua(self, lua: &Lua) -> mlua::Result<Value> {
        Ok(match self {
            Plain::Nil => Value::Nil,
            Plain::Bool(b) => Value::Boolean(b),
            Plain::Int(i) => Value::Integer(i),
            Plain::Num(n) => Value::Number(n),
            Plain::Str(s) => Value::String(lua.create_string(s)?),
            Plain::Table(pairs) => {
                let t = lua.create_table()?;
                for (k, v) in pairs {
                    t.raw_set(k.into_lua(lua)?, v.into_lua(lua)?)?;
                }
                Value::Table(t)
            }
        })
    }
}

/// wrk's statistics object: `min`, `max`, `mean`, `stdev`, `percentile(p)`, `#stats` (the
/// distinct values) and `stats(i)` (the i-th distinct value, ascending, and its count).
struct Stats {
    /// Distinct values ascending, with their counts.
    values: Vec<(u64, u64)>,
    min: u64,
    max: u64,
    mean: f64,
    stdev: f64,
    /// Percentiles come from here when the values are a histogram's.
    histogram: Option<LatencyHistogram>,
}

impl Stats {
    fn of_histogram(h: &LatencyHistogram) -> Stats {
        let s = h.summary();
        let values = h
            .hdr()
            .iter_recorded()
            .map(|v| {
                (
                    h.hdr().highest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            })
            .collect();
        Stats {
            values,
            min: s.min_us,
            max: s.max_us,
            mean: s.mean_us,
            stdev: s.stdev_us,
            histogram: Some(h.clone()),
        }
    }

    fn of_values(list: &[u64]) -> Stats {
        let mut sorted = list.to_vec();
        sorted.sort_unstable();
        let mut values: Vec<(u64, u64)> = Vec::new();
        for v in &sorted {
            match values.last_mut() {
                Some((last, n)) if last == v => *n += 1,
                _ => values.push((*v, 1)),
            }
        }
        let n = sorted.len().max(1) as f64;
        let mean = sorted.iter().sum::<u64>() as f64 / n;
        let var = sorted
            .iter()
            .map(|v| (*v as f64 - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0).max(1.0);
        Stats {
            values,
            min: sorted.first().copied().unwrap_or(0),
            max: sorted.last().copied().unwrap_or(0),
            mean,
            stdev: var.sqrt(),
            histogram: None,
        }
    }

    /// The value at percentile `p` (0..100).
    fn percentile(&self, p: f64) -> u64 {
        if let Some(h) = &self.histogram {
            return h.quantile_us((p / 100.0).clamp(0.0, 1.0));
        }
        let total: u64 = self.values.iter().map(|(_, n)| n).sum();
        let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (v, n) in &self.values {
            seen += n;
            if seen >= rank {
                return *v;
            }
        }
        self.max
    }

    /// As a Lua object (the prelude's `stats`), numbered `i` among the state's statistics.
    fn object(&self, lua: &Lua, made: &Table, i: usize) -> mlua::Result<Table> {
        let t = lua.create_table()?;
        t.raw_set("min", self.min)?;
        t.raw_set("max", self.max)?;
        t.raw_set("mean", self.mean)?;
        t.raw_set("stdev", self.stdev)?;
        let counts = lua.create_table()?;
        for (k, (v, n)) in self.values.iter().enumerate() {
            t.raw_set(k + 1, *v)?;
            counts.raw_set(k + 1, *n)?;
        }
        made.get::<Function>("stats")?.call((t, counts, i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin {
            url: "http://127.0.0.1:8080/".into(),
            scheme: "http".into(),
            host: "127.0.0.1".into(),
            port: Some(8080),
            path: "/".into(),
            method: "GET".into(),
            headers: vec![("X-A".into(), "1".into())],
            body: None,
            addr: "127.0.0.1:8080".parse().unwrap(),
        }
    }

    fn script(text: &str) -> Script {
        Script {
            name: "test.lua".into(),
            source: text.as_bytes().to_vec(),
            args: vec!["a".into(), "b".into()],
        }
    }

    /// A fleet: an agent's threads' values travel as JSON to the coordinator, whose
    /// `setup` saw every thread of the fleet and whose `done` reads them (`thread:get`),
    /// keeping what Lua tells apart; values past the budget read nil and are named.
    #[test]
    fn a_fleets_done_reads_every_agents_threads_values() {
        let text = "local threads, n = {}, 0\n\
             function setup(thread) n = n + 1; thread:set('id', n); table.insert(threads, thread) end\n\
             function init(args) float, int, inf, raw = 1.5, 7, math.huge, '\\255x'\n\
               nested = { [2] = { k = true } }; big = string.rep('b', 4000) end\n\
             function done()\n\
               local out = {}\n\
               for _, t in ipairs(threads) do\n\
                 table.insert(out, table.concat({ tostring(t:get('id')), \n\
                   tostring(t:get('float')), tostring(t:get('int')),\n\
                   tostring(t:get('inf')), tostring(#(t:get('raw') or '')),\n\
                   tostring(t:get('nested') and t:get('nested')[2].k),\n\
                   tostring(t:get('big') and #t:get('big')) }, ' '))\n\
               end\n\
               error(table.concat(out, ';'))\n\
             end\n";
        let agent = start(&script(text), &origin(), 2, false).unwrap();
        // Each thread's share of the budget holds all but `big`, in the second agent.
        let mut values = agent.thread_values(1 << 20);
        let small = agent.thread_values(2 * 1024);
        values.extend(small);
        let wire: Vec<serde_json::Value> =
            serde_json::from_str(&serde_json::to_string(&values).unwrap()).unwrap();
        let coordinator = start(&script(text), &origin(), 0, false).unwrap();
        coordinator.fleet(4).unwrap();
        let left_out = coordinator.ended(wire);
        assert_eq!(left_out.len(), 1, "{left_out:?}");
        assert!(left_out[0].starts_with("big ("), "{left_out:?}");
        let said = coordinator.done(Figures::default(), false).unwrap_err();
        let said = said.split_once(": ").unwrap().1;
        // The ids are the agent's setup's (1, 2 on each agent).
        assert_eq!(
            said,
            "1 1.5 7 inf 2 true 4000;2 1.5 7 inf 2 true 4000;1 1.5 7 inf 2 true nil;\
             2 1.5 7 inf 2 true nil"
        );
    }

    #[test]
    fn the_wrk_table_after_init_is_the_request() {
        let s = script(
            "wrk.method = 'POST'\nwrk.body = 'x=1'\nwrk.headers['Content-Type'] = 'a/b'\n\
             function init(args) wrk.path = '/' .. args[1] .. '/' .. #args end\n",
        );
        let r = start(&s, &origin(), 2, false).unwrap();
        assert_eq!(r.request.method, "POST");
        assert_eq!(r.request.path, "/a/2");
        assert_eq!(r.request.body.as_deref(), Some(&b"x=1"[..]));
        assert_eq!(
            r.request.headers,
            [
                ("Content-Type".to_string(), "a/b".to_string()),
                ("Host".into(), "127.0.0.1:8080".into()),
                ("X-A".into(), "1".into()),
            ]
        );
        assert!(!r.has_done);
    }

    #[test]
    fn errors_are_one_line_with_the_file_and_line() {
        let s = script("wrk.method = 'GET'\nlocal x = = 1\n");
        let e = start(&s, &origin(), 1, false).err().unwrap();
        assert!(e.contains(".lua:2:"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let s = script("function init(args)\n  error('no way')\nend\n");
        let e = start(&s, &origin(), 1, false).err().unwrap();
        assert!(e.contains(".lua:2: no way"), "{e}");
        let s = script("function init(args) os.exit(3) end\n");
        let e = start(&s, &origin(), 1, false).err().unwrap();
        assert!(e.contains("os.exit() is not allowed"), "{e}");
    }

    #[test]
    fn format_writes_wrks_request() {
        let s = script(
            "function init(args) req = wrk.format('PUT', '/p', {['X-B'] = 2}, 'hey') \
             plain = wrk.format() end\n\
             function setup(t) t:set('id', 7) end\n\
             function done(s, l, r) print(threads) end\n",
        );
        let r = start(&s, &origin(), 1, false).unwrap();
        assert!(r.has_done);
        drop(r);
        let lua = new_state();
        let shared = Shared::default();
        install(&lua, &origin(), &shared).unwrap();
        lua.load("wrk.headers.Host = 'h:1'").exec().unwrap();
        let text: String = lua
            .load("return wrk.format('PUT', '/p', {['X-B'] = 2}, 'hey')")
            .eval()
            .unwrap();
        assert_eq!(
            text,
            "PUT /p HTTP/1.1\r\nHost: h:1\r\nX-B: 2\r\nContent-Length: 3\r\n\r\nhey"
        );
        let text: String = lua.load("return wrk.format()").eval().unwrap();
        assert_eq!(text, "GET / HTTP/1.1\r\nHost: h:1\r\nX-A: 1\r\n\r\n");
        // Given headers: Host first, the rest by name, a given Content-Length replaced by the
        // body's, values that are not text left out; numbers as wrk writes them; the
        // scratch buffers of the call before leave nothing behind.
        let text: String = lua
            .load(
                "return wrk.format(nil, 12, {Zed = 1.5, ['content-length'] = 99, Host = 'x', \
                 Abc = true, Skip = {}}, 42)",
            )
            .eval()
            .unwrap();
        assert_eq!(
            text,
            "GET 12 HTTP/1.1\r\nHost: x\r\nAbc: true\r\nZed: 1.5\r\nContent-Length: 2\r\n\r\n42"
        );
        let text: String = lua
            .load("return wrk.format('HEAD', '/h', {})")
            .eval()
            .unwrap();
        assert_eq!(text, "HEAD /h HTTP/1.1\r\nHost: h:1\r\n\r\n");
    }

    #[test]
    fn a_rust_functions_error_is_raised_from_lua() {
        let s = script("function init(args)\n  wrk.connect('nowhere')\nend\n");
        let e = start(&s, &origin(), 1, false).err().unwrap();
        assert!(e.contains(".lua:2: 'nowhere' is not an address"), "{e}");
        let s = script("function setup(t)\n  t:set('f', print)\nend\n");
        let e = start(&s, &origin(), 1, false).err().unwrap();
        assert!(
            e.contains(".lua:2: a function cannot pass between threads"),
            "{e}"
        );
    }

    #[test]
    fn stats_read_as_wrks() {
        let mut h = LatencyHistogram::new();
        for v in [100, 100, 200, 300, 1000] {
            h.record(v);
        }
        let s = Stats::of_histogram(&h);
        assert_eq!((s.min, s.max, s.values.len()), (100, 1000, 4));
        assert_eq!(s.values[0], (100, 2));
        assert_eq!(s.percentile(50.0), 200);
        let r = Stats::of_values(&[10, 20, 20, 30]);
        assert_eq!(r.values, [(10, 1), (20, 2), (30, 1)]);
        assert_eq!(r.percentile(50.0), 20);
        assert_eq!(r.percentile(100.0), 30);
        assert!((r.mean - 20.0).abs() < 1e-9);
    }
}
