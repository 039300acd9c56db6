//! The coordinator: waits for the agents, splits the run, starts it, merges what they send.

use super::wire::{
    nonce, now_us, send, Channel, FromAgent, ReadError, Reader, Side, ToAgent, Token, PROTOCOL,
};
use crate::{fmt, options, LoadSpec, Prepared};
use pelt_stats::{
    AgentReport, AgentState, FleetInfo, Report, RequestsReport, StopReason, TimelinePoint,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How a coordinator waits and judges.
#[derive(Debug, Clone)]
pub struct CoordinatorOptions {
    /// The fleet's size: ranks 0 .. agents.
    pub agents: u32,
    pub token: Token,
    /// How long to wait for every agent to join.
    pub join_timeout: Duration,
    /// An agent that sends nothing for this long is lost.
    pub silence: Duration,
}

/// A fleet run that ran: the merged result (with each agent's part in `fleet`).
#[derive(Debug)]
pub struct FleetRun {
    pub report: Report,
    /// Some agent was lost (named in `report.fleet.lost`).
    pub lost: bool,
}

/// Why a fleet run did not run, or has no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetError {
    /// Not every agent joined in time (or the coordinator was interrupted while waiting):
    /// nothing was sent.
    Join(String),
    /// The run cannot be split over the agents that joined: nothing was sent.
    Split(String),
    /// The run started, but no agent delivered a result.
    NoResult(String),
}

impl std::fmt::Display for FleetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FleetError::Join(m) | FleetError::Split(m) | FleetError::NoResult(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for FleetError {}

/// A fleet's coordinator, bound to its control address.
pub struct Coordinator {
    listener: TcpListener,
    opts: CoordinatorOptions,
}

/// What the agents' reader threads hand the main loop: (member index, message or why none).
type Events = mpsc::Receiver<(usize, Result<FromAgent, ReadError>)>;

/// An agent that passed the handshake.
struct Joined {
    rank: u32,
    host: String,
    address: SocketAddr,
    threads: usize,
    offset_us: i64,
    rtt_us: u64,
    reader: Reader,
}

enum Joining {
    Joined(Box<Joined>),
    /// A connection that was refused, with the line that says why.
    Refused(String),
}

enum State {
    Running,
    /// Its result, and why it stopped early when a signal on its machine stopped it.
    Done(Box<Report>, Option<String>),
    Lost(String),
}

/// An agent taking part in the run.
struct Member {
    rank: u32,
    host: String,
    address: SocketAddr,
    threads: usize,
    first: usize,
    offset_us: i64,
    rtt_us: u64,
    /// With a script: its threads' values at their end, for `thread:get` in `done`.
    script_values: Vec<serde_json::Value>,
    writer: Channel,
    /// When it started, on the coordinator's clock.
    started_us: Option<i64>,
    /// The last second it reported.
    last_second: Option<u64>,
    /// When it was found lost, on the coordinator's clock.
    lost_us: Option<i64>,
    /// Its counts over the seconds it reported (what is kept of a lost agent).
    seen: RequestsReport,
    seconds: f64,
    state: State,
}

impl Member {
    fn running(&self) -> bool {
        matches!(self.state, State::Running)
    }

    fn name(&self) -> String {
        format!("agent {} ({}, {})", self.rank, self.host, self.address)
    }
}

/// Validates a fleet run's spec as [`crate::prepare`] does, for a coordinator that opens no
/// connection itself: every problem is bad input before any agent is asked to send anything.
pub fn validate(spec: &LoadSpec) -> Result<Prepared, crate::SpecError> {
    crate::prepare::prepare_here(spec, crate::prepare::Here::Coordinates)
}

/// Validates a fleet run's spec on a machine that only describes it (`pelt k8s`): as
/// [`validate`], but the host is not resolved (it may resolve only where the fleet runs).
pub fn validate_elsewhere(spec: &LoadSpec) -> Result<Prepared, crate::SpecError> {
    crate::prepare::prepare_here(spec, crate::prepare::Here::Describes)
}

impl Coordinator {
    /// Listens on `addr` for agents.
    pub fn bind(addr: SocketAddr, opts: CoordinatorOptions) -> std::io::Result<Coordinator> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        Ok(Coordinator { listener, opts })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener")
    }

    /// Waits for the agents, runs `spec` (prepared by [`validate`]) over them, and returns the
    /// merged result. `on_second` gets the fleet's merged seconds as they complete (`None`),
    /// and each agent's own as it arrives (`Some(rank)`, for per-agent views); `log`
    /// gets one line per event worth telling (an agent joined, refused, lost).
    pub fn run(
        &self,
        spec: &LoadSpec,
        prepared: &Prepared,
        stop: &AtomicBool,
        on_second: &mut dyn FnMut(Option<u32>, &TimelinePoint),
        log: &mut dyn FnMut(&str),
    ) -> Result<FleetRun, FleetError> {
        let joined = self.join(stop, log)?;
        let (mut members, start_us, rx) = self.start(spec, prepared, joined)?;
        let remote = prepared
            .remote_monitor
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let monitor = &Monitor::default();
        std::thread::scope(|s| {
            // `--monitor-remote`: the monitor starts at the fleet's start instant, and its
            // samples join the merged seconds.
            let follower = remote.map(|r| {
                let silence = self.opts.silence;
                s.spawn(move || {
                    let wait = (start_us - now_us()).max(0) as u64;
                    std::thread::sleep(Duration::from_micros(wait));
                    let lost = r.follow(&monitor.samples, silence, &monitor.ended, &monitor.writer);
                    monitor.lost.store(lost.is_some(), Ordering::Relaxed);
                    lost
                })
            });
            // A live page's changes: on the fleet's clock, passed to every agent.
            let control = prepared.config.control.clone();
            if let Some(c) = &control {
                let ahead = Duration::from_micros((start_us - now_us()).max(0) as u64);
                let behind = Duration::from_micros((now_us() - start_us).max(0) as u64);
                c.started(Instant::now() + ahead - behind);
            }
            let mut run = Running {
                control,
                forwarded: 0,
                members: &mut members,
                pending: BTreeMap::new(),
                aborted: None,
                grace: prepared.config.grace,
                interrupted: false,
                monitor: follower.is_some().then_some(monitor),
            };
            run.events(&rx, stop, self.opts.silence, on_second, log);
            let interrupted = run.interrupted;
            monitor.ended.store(true, Ordering::Relaxed);
            crate::fleet::monitor::stop_monitor(&monitor.writer);
            let lost = follower.and_then(|t| t.join().ok().flatten());
            let mut seconds =
                std::mem::take(&mut *monitor.seconds.lock().unwrap_or_else(|e| e.into_inner()));
            // The samples not shown yet, the last second's (sent after the stop) among them:
            // all in, once the follower has ended.
            while let Some(sample) = monitor.samples.take(seconds.next, Duration::ZERO) {
                seconds.add(sample);
            }
            let mut fleet = finish(prepared, &members, start_us, interrupted)?;
            // The agents carry the changes they followed; a stop is the coordinator's own.
            if let Some(c) = &prepared.config.control {
                let changes = &mut fleet.report.changes;
                for change in c.changes() {
                    if !changes.contains(&change) {
                        changes.push(change);
                    }
                }
                changes.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
            }
            if follower_ran(&seconds) {
                attach(
                    prepared,
                    &mut fleet.report,
                    seconds.timeline.into_points(),
                    lost,
                );
            }
            Ok(fleet)
        })
    }

    /// Accepts agents until every rank has joined.
    fn join(
        &self,
        stop: &AtomicBool,
        log: &mut dyn FnMut(&str),
    ) -> Result<Vec<Joined>, FleetError> {
        let n = self.opts.agents;
        let (tx, rx) = mpsc::channel();
        let deadline = Instant::now() + self.opts.join_timeout;
        let mut joined: BTreeMap<u32, Joined> = BTreeMap::new();
        let mut beat = Instant::now();
        loop {
            self.accept(&tx, log);
            while let Ok(j) = rx.try_recv() {
                admit(&mut joined, j, log);
            }
            if joined.len() == n as usize {
                return Ok(joined.into_values().collect());
            }
            let why = if stop.load(Ordering::Relaxed) {
                Some(format!(
                    "interrupted while waiting for agents: {}",
                    missing(n, &joined)
                ))
            } else if Instant::now() >= deadline {
                Some(format!(
                    "not every agent joined within {}s: {}",
                    self.opts.join_timeout.as_secs_f64(),
                    missing(n, &joined)
                ))
            } else {
                None
            };
            let streams = || joined.values().map(|a| a.reader.channel());
            if let Some(why) = why {
                tell(
                    streams(),
                    &ToAgent::Refused {
                        reason: why.clone(),
                    },
                );
                return Err(FleetError::Join(why));
            }
            if beat.elapsed() >= Duration::from_secs(1) {
                beat = Instant::now();
                tell(streams(), &ToAgent::Heartbeat);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Takes every connection waiting, each to its handshake on a thread of its own.
    fn accept(&self, tx: &mpsc::Sender<Joining>, log: &mut dyn FnMut(&str)) {
        loop {
            match self.listener.accept() {
                Ok((stream, addr)) => {
                    let (tx, token) = (tx.clone(), self.opts.token.clone());
                    let n = self.opts.agents;
                    std::thread::spawn(move || {
                        let _ = tx.send(handshake(stream, addr, &token, n));
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    log(&format!("accepting an agent failed: {e}"));
                    return;
                }
            }
        }
    }

    /// Splits the run over the agents (in rank order) and sends each its part and the start
    /// instant; their messages then come on the returned channel.
    fn start(
        &self,
        spec: &LoadSpec,
        prepared: &Prepared,
        joined: Vec<Joined>,
    ) -> Result<(Vec<Member>, i64, Events), FleetError> {
        // A script's done() holds every thread of the fleet: its setup runs for each.
        let split = split(spec, prepared, &joined).and_then(|(options, threads)| {
            prepared.script_fleet(threads.iter().sum())?;
            Ok((options, threads))
        });
        let (options, threads) = match split {
            Ok(split) => split,
            Err(why) => {
                let streams = joined.iter().map(|a| a.reader.channel());
                tell(
                    streams,
                    &ToAgent::Refused {
                        reason: why.clone(),
                    },
                );
                return Err(FleetError::Split(why));
            }
        };
        let workers: usize = threads.iter().sum();
        // The agents start together, once the slowest round trip has surely delivered this.
        let slowest = joined.iter().map(|a| a.rtt_us).max().unwrap_or(0) as i64;
        let start_us = now_us() + 500_000 + 4 * slowest;
        let (tx, rx) = mpsc::channel();
        let mut members = Vec::with_capacity(joined.len());
        let mut first = 0;
        for (i, (a, t)) in joined.into_iter().zip(threads).enumerate() {
            let writer = a.reader.channel().clone();
            let _ = writer.tcp().set_write_timeout(Some(Duration::from_secs(5)));
            let part = ToAgent::Run {
                options: options.clone(),
                threads: t,
                first,
                workers,
                start_us,
            };
            let mut m = Member::of(&a, t, first, writer);
            first += t;
            match send(&m.writer, &part) {
                Err(e) => m.state = State::Lost(format!("could not be sent its part: {e}")),
                Ok(()) => {
                    let _ = a.reader.stream().set_read_timeout(Some(self.opts.silence));
                    listen(i, a.reader, tx.clone());
                }
            }
            members.push(m);
        }
        Ok((members, start_us, rx))
    }
}

/// Sends `message` on each of `streams`; an agent that cannot take it is found out by its
/// reader (or its silence).
fn tell<'a>(streams: impl IntoIterator<Item = &'a Channel>, message: &ToAgent) {
    for w in streams {
        let _ = send(w, message);
    }
}

/// Takes an agent that finished its handshake into `joined`, or refuses it (its rank is taken).
fn admit(joined: &mut BTreeMap<u32, Joined>, j: Joining, log: &mut dyn FnMut(&str)) {
    let a = match j {
        Joining::Refused(line) => return log(&line),
        Joining::Joined(a) => a,
    };
    if let Some(b) = joined.get(&a.rank) {
        let why = format!("rank {} already joined from {}", a.rank, b.address);
        log(&format!("refused the agent at {}: {why}", a.address));
        tell([a.reader.channel()], &ToAgent::Refused { reason: why });
        return;
    }
    log(&format!(
        "agent {} joined from {} ({}, {} thread{}; clock {:+.3} ms, round trip {:.3} ms)",
        a.rank,
        a.address,
        a.host,
        a.threads,
        if a.threads == 1 { "" } else { "s" },
        a.offset_us as f64 / 1000.0,
        a.rtt_us as f64 / 1000.0
    ));
    joined.insert(a.rank, *a);
}

/// The ranks not joined yet, in words.
fn missing(n: u32, joined: &BTreeMap<u32, Joined>) -> String {
    let ranks: Vec<String> = (0..n)
        .filter(|r| !joined.contains_key(r))
        .map(|r| r.to_string())
        .collect();
    format!(
        "{} of {n} agents missing (rank{} {})",
        ranks.len(),
        if ranks.len() == 1 { "" } else { "s" },
        ranks.join(", ")
    )
}

/// The run as every agent gets it, and each agent's threads (-t on the coordinator gives
/// every agent that many; else each its own); the line that says why it cannot be split.
fn split(
    spec: &LoadSpec,
    prepared: &Prepared,
    joined: &[Joined],
) -> Result<(Map<String, Value>, Vec<usize>), String> {
    let threads: Vec<usize> = joined
        .iter()
        .map(|a| spec.threads.unwrap_or(a.threads))
        .collect();
    let workers: usize = threads.iter().sum();
    let connections = prepared.config.connections;
    if connections < workers {
        let each: Vec<String> = threads.iter().map(|t| t.to_string()).collect();
        return Err(format!(
            "-c {connections} is fewer connections than the fleet's {workers} worker threads \
             ({}); give -c {workers} or more, or fewer threads per agent with -t",
            each.join(" + ")
        ));
    }
    let seed = prepared.info.request_set.as_ref().and_then(|s| s.seed);
    let mut options = options::inline(spec, seed).map_err(|e| e.0)?;
    // Each agent gets its own threads; the thresholds judge the merged result; the coordinator
    // takes the remote monitor's samples itself.
    options.remove("threads");
    options.remove("expect");
    options.remove("monitorRemote");
    Ok((options, threads))
}

/// Hands agent `i`'s messages to the main loop, from a thread of its own, until its
/// connection ends.
fn listen(i: usize, mut reader: Reader, tx: mpsc::Sender<(usize, Result<FromAgent, ReadError>)>) {
    std::thread::spawn(move || loop {
        let msg = reader.read::<FromAgent>();
        let end = msg.is_err();
        if tx.send((i, msg)).is_err() || end {
            break;
        }
    });
}

impl Member {
    fn of(a: &Joined, threads: usize, first: usize, writer: Channel) -> Member {
        Member {
            rank: a.rank,
            host: a.host.clone(),
            address: a.address,
            threads,
            first,
            offset_us: a.offset_us,
            rtt_us: a.rtt_us,
            script_values: Vec::new(),
            writer,
            started_us: None,
            lost_us: None,
            last_second: None,
            seen: RequestsReport {
                sent: 0,
                completed: 0,
                errors: 0,
                in_flight: 0,
            },
            seconds: 0.0,
            state: State::Running,
        }
    }
}

/// Answers one connection: the agent's hello, the proofs both ways, its clock pings.
fn handshake(stream: TcpStream, address: SocketAddr, token: &Token, agents: u32) -> Joining {
    let refused = |why: String| Joining::Refused(format!("refused the agent at {address}: {why}"));
    let setup = (|| {
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        Channel::accept(stream)
    })();
    let w = match setup {
        Ok(w) => w,
        Err(e) => return refused(e.to_string()),
    };
    let mut r = Reader::new(w.clone());
    match greet(&w, &mut r, token, agents) {
        Ok(h) => Joining::Joined(Box::new(Joined {
            rank: h.rank,
            host: h.host,
            address,
            threads: h.threads,
            offset_us: h.offset_us,
            rtt_us: h.rtt_us,
            reader: r,
        })),
        Err(Refusal::Tell(why)) => {
            tell(
                [&w],
                &ToAgent::Refused {
                    reason: why.clone(),
                },
            );
            refused(why)
        }
        Err(Refusal::Gone(why)) => refused(why),
    }
}

/// Why an agent is not taken: a line to tell it, or its connection failed.
enum Refusal {
    Tell(String),
    Gone(String),
}

fn gone(e: impl std::fmt::Display) -> Refusal {
    Refusal::Gone(e.to_string())
}

/// Why an agent's hello cannot join this fleet, if it cannot.
fn wrong_hello(
    protocol: u32,
    version: &str,
    rank: u32,
    told: Option<u32>,
    threads: usize,
    agents: u32,
) -> Option<String> {
    let ours = env!("CARGO_PKG_VERSION");
    if protocol != PROTOCOL || version != ours {
        Some(format!("it is pelt {version} (control protocol {protocol}); this coordinator is pelt {ours} (protocol {PROTOCOL})"))
    } else if rank >= agents {
        Some(format!(
            "rank {rank} is not below the fleet's {agents} agents"
        ))
    } else if let Some(n) = told.filter(|&n| n != agents) {
        Some(format!(
            "it was told the fleet has {n} agents; this coordinator waits for {agents}"
        ))
    } else if threads == 0 || threads > 4096 {
        Some(format!("{threads} threads is no worker count"))
    } else {
        None
    }
}

/// What an agent said of itself, and its clock.
struct Hello {
    rank: u32,
    host: String,
    threads: usize,
    offset_us: i64,
    rtt_us: u64,
}

/// The agent's hello checked, the proofs exchanged, its clock pings answered.
fn greet(w: &Channel, r: &mut Reader, token: &Token, agents: u32) -> Result<Hello, Refusal> {
    let FromAgent::Hello {
        protocol,
        version,
        rank,
        agents: told,
        threads,
        host,
        nonce: agent_nonce,
    } = r.read::<FromAgent>().map_err(gone)?
    else {
        return Err(Refusal::Tell("it did not begin with a hello".into()));
    };
    if let Some(why) = wrong_hello(protocol, &version, rank, told, threads, agents) {
        return Err(Refusal::Tell(why));
    }
    let own = nonce();
    let challenge = ToAgent::Challenge {
        proof: token.proof(Side::Coordinator, w.session(), &agent_nonce, &own),
        nonce: own.clone(),
    };
    send(w, &challenge).map_err(gone)?;
    match r.read::<FromAgent>().map_err(gone)? {
        FromAgent::Auth { proof }
            if token.check(Side::Agent, w.session(), &own, &agent_nonce, &proof) => {}
        FromAgent::Auth { .. } => return Err(Refusal::Tell("wrong token".into())),
        _ => return Err(Refusal::Tell("it did not answer the challenge".into())),
    }
    loop {
        match r.read::<FromAgent>().map_err(gone)? {
            FromAgent::Ping { sent_us } => {
                let pong = ToAgent::Pong {
                    sent_us,
                    at_us: now_us(),
                };
                send(w, &pong).map_err(gone)?;
            }
            FromAgent::Ready { offset_us, rtt_us } => {
                return Ok(Hello {
                    rank,
                    host,
                    threads,
                    offset_us,
                    rtt_us,
                })
            }
            _ => {
                let why = "a message out of turn while syncing clocks";
                return Err(Refusal::Tell(why.into()));
            }
        }
    }
}

/// A remote monitor's samples as the coordinator takes them: by second, kept as a timeline
/// of their own (coarsened as any timeline, so flat in the run's length) until the merged
/// result takes them.
#[derive(Default)]
struct Monitor {
    samples: crate::monitor::Samples,
    writer: std::sync::Mutex<Option<Channel>>,
    ended: std::sync::atomic::AtomicBool,
    lost: std::sync::atomic::AtomicBool,
    seconds: std::sync::Mutex<Seconds>,
}

/// The samples taken so far, and the next second to take.
#[derive(Default)]
struct Seconds {
    timeline: pelt_stats::Timeline,
    next: u64,
}

impl Seconds {
    fn add(&mut self, sample: pelt_stats::ResourceSample) {
        let mut resources = None;
        crate::monitor::join_remote(&mut resources, Some(sample));
        let mut point = pelt_stats::Interval::new(self.next).point(1.0, false);
        point.histogram = None;
        point.resources = resources;
        self.timeline.push(point);
        self.next += 1;
    }
}

fn follower_ran(seconds: &Seconds) -> bool {
    seconds.next > 0
}

/// The merged result's seconds take the monitor's samples of the same span, and its summary
/// and verdict are computed from them; a lost monitor is named.
fn attach(
    prepared: &Prepared,
    report: &mut Report,
    samples: Vec<TimelinePoint>,
    lost: Option<String>,
) {
    for p in &mut report.timeline {
        let (from, to) = (p.second as f64, p.second as f64 + p.length_s.max(1e-9));
        let within: Vec<(&pelt_stats::ResourceSample, f64)> = samples
            .iter()
            .filter(|s| (s.second as f64) >= from && (s.second as f64) < to)
            .filter_map(|s| s.resources.as_ref().map(|r| (r, s.length_s)))
            .collect();
        p.resources = match within.as_slice() {
            [] => None,
            [(one, _)] => Some((*one).clone()),
            many => Some(pelt_stats::ResourceSample::coarsen(many)),
        };
    }
    report.resources = prepared.resources(report);
    if let Some(why) = lost {
        if let Some(r) = report.resources.as_mut() {
            r.lost = Some(why.clone());
        }
        report.notes.push(why);
    }
    report.thresholds = prepared.expect.iter().map(|e| e.check(report)).collect();
}

/// The run as the coordinator follows it.
struct Running<'a> {
    /// The live page's changes (`--dashboard`), and how many were passed to the agents.
    control: Option<Arc<pelt_engine::Control>>,
    forwarded: usize,
    members: &'a mut Vec<Member>,
    /// Seconds reported by some agents, not yet by all.
    pending: BTreeMap<u64, Vec<TimelinePoint>>,
    /// When the agents were told to stop, and how long they have to answer.
    aborted: Option<Instant>,
    grace: Duration,
    interrupted: bool,
    /// `--monitor-remote`: its samples join the merged seconds as they are shown.
    monitor: Option<&'a Monitor>,
}

impl Running<'_> {
    fn events(
        &mut self,
        rx: &Events,
        stop: &AtomicBool,
        silence: Duration,
        on_second: &mut dyn FnMut(Option<u32>, &TimelinePoint),
        log: &mut dyn FnMut(&str),
    ) {
        let mut beat = Instant::now();
        for i in 0..self.members.len() {
            if let State::Lost(why) = &self.members[i].state {
                let line = format!("{} lost: {why}", self.members[i].name());
                log(&line);
                self.abort(format!("agent {} was lost", self.members[i].rank));
            }
        }
        while self.members.iter().any(Member::running) {
            if stop.load(Ordering::Relaxed) && !self.interrupted {
                self.interrupted = true;
                log("interrupted: stopping every agent");
                self.abort("the coordinator was interrupted".into());
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok((i, Ok(msg))) => self.message(i, msg, on_second, log),
                Ok((i, Err(e))) => {
                    let why = match e {
                        ReadError::Silent => format!("sent nothing for {}s", silence.as_secs_f64()),
                        e => e.to_string(),
                    };
                    self.lose(i, why, log);
                }
                Err(_) => {}
            }
            if let Some(t) = self.aborted {
                // After a stop the agents have their grace period, and a few seconds more.
                if t.elapsed() > self.grace + Duration::from_secs(5) {
                    for i in 0..self.members.len() {
                        if self.members[i].running() {
                            let why = format!(
                                "sent no result within {:.0}s of the stop",
                                t.elapsed().as_secs_f64()
                            );
                            self.lose(i, why, log);
                        }
                    }
                }
            }
            if beat.elapsed() >= Duration::from_secs(1) {
                beat = Instant::now();
                tell(self.running(), &ToAgent::Heartbeat);
            }
            self.forward();
            self.emit(on_second, log);
        }
        self.emit(on_second, log);
    }

    fn message(
        &mut self,
        i: usize,
        msg: FromAgent,
        on_second: &mut dyn FnMut(Option<u32>, &TimelinePoint),
        log: &mut dyn FnMut(&str),
    ) {
        let m = &mut self.members[i];
        if matches!(msg, FromAgent::Done { .. }) {
            // Its last message: the agent closes once this side has (see `close_write`), lost
            // or not.
            m.writer.close();
        }
        if !m.running() {
            return;
        }
        match msg {
            FromAgent::Heartbeat => {}
            FromAgent::Started { at_us } => m.started_us = Some(at_us),
            FromAgent::Second { mut point, detail } => {
                point.detail = *detail;
                on_second(Some(m.rank), &point);
                let m = &mut self.members[i];
                m.last_second = Some(point.second);
                m.seen.sent += point.sent;
                m.seen.completed += point.completed;
                m.seen.errors += point.errors;
                if !point.warmup {
                    m.seconds += point.length_s;
                }
                self.pending.entry(point.second).or_default().push(*point);
                self.emit(on_second, log);
            }
            FromAgent::Done {
                report,
                signalled,
                threads,
            } => {
                m.script_values = threads;
                if !signalled || self.aborted.is_some() {
                    m.state = State::Done(report, None);
                    return;
                }
                // Disrupted where it runs (an eviction, a drain, a preemption): the run is cut
                // short, as if it had been lost, though its result counts.
                let at = m
                    .last_second
                    .map_or(String::from("before its first second"), |s| {
                        format!("after second {s}")
                    });
                let why = format!(
                    "stopped by a signal on its machine {at} (an eviction, a node drain, a \
                     preemption, or Ctrl-C there), having sent {} requests",
                    report.requests.sent
                );
                log(&format!("{} {why}", m.name()));
                let rank = m.rank;
                m.state = State::Done(report, Some(why));
                self.abort(format!("agent {rank} was stopped by a signal"));
            }
            FromAgent::Failed { message } => self.lose(i, format!("failed: {message}"), log),
            other => {
                let kind = serde_json::to_value(&other)
                    .ok()
                    .and_then(|v| v.get("type").and_then(|t| t.as_str().map(String::from)))
                    .unwrap_or_default();
                self.lose(i, format!("sent a '{kind}' message out of turn"), log);
            }
        }
    }

    /// Marks agent `i` lost and stops the others.
    fn lose(&mut self, i: usize, why: String, log: &mut dyn FnMut(&str)) {
        let m = &mut self.members[i];
        if !m.running() {
            return;
        }
        let at = m
            .last_second
            .map_or(String::from("before its first second"), |s| {
                format!("after second {s}")
            });
        log(&format!("{} lost {at}: {why}", m.name()));
        m.lost_us = Some(now_us());
        let rank = m.rank;
        m.state = State::Lost(format!("{why} ({at})"));
        self.abort(format!("agent {rank} was lost"));
    }

    /// Passes the live page's new changes to every running agent (a stop goes as an abort).
    fn forward(&mut self) {
        let Some(c) = &self.control else {
            return;
        };
        let changes = c.changes();
        for change in &changes[self.forwarded.min(changes.len())..] {
            if change.what != pelt_stats::Steer::Stop {
                tell(self.running(), &ToAgent::Change { change: *change });
            }
        }
        self.forwarded = changes.len();
    }

    /// Tells every running agent to stop (once).
    fn abort(&mut self, reason: String) {
        if self.aborted.is_some() {
            return;
        }
        self.aborted = Some(Instant::now());
        tell(self.running(), &ToAgent::Abort { reason });
    }

    /// The monitor's samples up to second `k` (waiting a moment for `k`'s unless the monitor
    /// is lost), kept for the result; `k`'s joins the merged point shown.
    fn take_samples(&self, m: &Monitor, k: u64, point: &mut TimelinePoint) {
        let mut seconds = m.seconds.lock().unwrap_or_else(|e| e.into_inner());
        while seconds.next <= k {
            let wait = if m.lost.load(Ordering::Relaxed) {
                Duration::ZERO
            } else {
                crate::MONITOR_WAIT
            };
            let next = seconds.next;
            match m.samples.take(next, wait) {
                Some(sample) => {
                    if next == k {
                        crate::monitor::join_remote(&mut point.resources, Some(sample.clone()));
                    }
                    seconds.add(sample);
                }
                None => break,
            }
        }
    }

    /// The connections of the agents still running.
    fn running(&self) -> impl Iterator<Item = &Channel> {
        self.members
            .iter()
            .filter(|m| m.running())
            .map(|m| &m.writer)
    }

    /// Shows every second that all agents still running have reported.
    fn emit(
        &mut self,
        on_second: &mut dyn FnMut(Option<u32>, &TimelinePoint),
        log: &mut dyn FnMut(&str),
    ) {
        while let Some((&k, _)) = self.pending.first_key_value() {
            let all_in = self
                .members
                .iter()
                .all(|m| !m.running() || m.last_second.is_some_and(|s| s >= k));
            if !all_in {
                return;
            }
            let points = self.pending.remove(&k).unwrap_or_default();
            match pelt_stats::merge_points(k, &points) {
                Ok(mut p) => {
                    if let Some(m) = self.monitor {
                        self.take_samples(m, k, &mut p);
                    }
                    on_second(None, &p)
                }
                Err(e) => log(&format!(
                    "second {k}: an agent's histogram does not decode: {e}"
                )),
            }
        }
    }
}

/// What an agent did, as its entry in the result says.
struct Part {
    state: AgentState,
    problem: Option<String>,
    requests: RequestsReport,
    rps: f64,
    latency: Option<pelt_stats::LatencySummary>,
    /// A lost agent: the most requests it may have sent unreported (`None`: nothing bounds it).
    unreported_max: Option<u64>,
}

/// A lost agent's part: its counts over the seconds it reported, and the most it may have
/// sent after them: its part of the schedule (and of `-n`) from its start to when it was found
/// lost (or now, for one still running at the end), less what it reported.
fn lost_part(m: &Member, why: &str, config: &pelt_engine::Config, workers: usize) -> Part {
    let slice = pelt_engine::Slice {
        first: m.first,
        workers,
    };
    let unreported_max = m.started_us.map_or(Some(0), |start| {
        let until = m.lost_us.unwrap_or_else(now_us);
        let elapsed = Duration::from_micros((until - start).max(0) as u64);
        slice
            .started_at_most(config, m.threads, elapsed)
            .map(|n| n.saturating_sub(m.seen.sent))
    });
    let mut seen = m.seen.clone();
    seen.in_flight = seen.sent.saturating_sub(seen.completed + seen.errors);
    let rps = if m.seconds > 0.0 {
        seen.completed as f64 / m.seconds
    } else {
        0.0
    };
    Part {
        state: AgentState::Lost,
        problem: Some(why.to_string()),
        requests: seen,
        rps,
        latency: None,
        unreported_max,
    }
}

/// The merged result of the agents that delivered theirs, with each agent's part.
fn finish(
    prepared: &Prepared,
    members: &[Member],
    start_us: i64,
    interrupted: bool,
) -> Result<FleetRun, FleetError> {
    let (reports, agents, lost) = parts(members, start_us, &prepared.config);
    if reports.is_empty() {
        return Err(FleetError::NoResult(format!(
            "no agent delivered a result: {}",
            lost.iter()
                .map(|(l, _)| l.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    let mut merged = pelt_stats::merge_figures(&reports).map_err(FleetError::NoResult)?;
    let io = merged.info.io;
    merged.info = prepared.info.clone();
    merged.info.io = io;
    merged.info.threads = members.iter().map(|m| m.threads).sum();
    let starts: Vec<i64> = members.iter().filter_map(|m| m.started_us).collect();
    let spread = match (starts.iter().min(), starts.iter().max()) {
        (Some(a), Some(b)) => Some((b - a) as f64 / 1000.0),
        _ => None,
    };
    let skew = starts
        .iter()
        .map(|s| (s - start_us).abs() as f64 / 1000.0)
        .reduce(f64::max);
    fleet_notes(&mut merged, members.len(), spread, &lost);
    merged.notes.extend(script_values(prepared, members));
    merged.notes.extend(unreported_note(&merged, &agents));
    if interrupted {
        merged.interrupted = true;
        merged.stopped_by = StopReason::Signal;
    }
    merged.fleet = Some(FleetInfo {
        agents,
        start_spread_ms: spread,
        start_skew_max_ms: skew,
        lost: lost.iter().map(|(l, _)| l.clone()).collect(),
    });
    merged.thresholds = prepared.expect.iter().map(|e| e.check(&merged)).collect();
    Ok(FleetRun {
        report: merged,
        lost: !lost.is_empty(),
    })
}

/// Hands the script the fleet's threads' values at their end, each agent's at its threads'
/// place (a lost agent's read as `setup` left them); the note on those left out.
fn script_values(prepared: &Prepared, members: &[Member]) -> Option<String> {
    prepared.script.as_ref()?;
    let workers = members
        .iter()
        .map(|m| m.first + m.threads)
        .max()
        .unwrap_or(0);
    let mut values = vec![serde_json::Value::Null; workers];
    for m in members
        .iter()
        .filter(|m| matches!(m.state, State::Done(..)))
    {
        for (k, v) in m.script_values.iter().take(m.threads).enumerate() {
            values[m.first + k] = v.clone();
        }
    }
    prepared.script_ended(values)
}

/// An agent lost or interrupted, in words, and which of the two.
type Lost = (String, AgentState);

/// The reports the agents delivered (on the coordinator's clock), every agent's entry, and
/// the agents lost or interrupted, in words.
fn parts(
    members: &[Member],
    start_us: i64,
    config: &pelt_engine::Config,
) -> (Vec<Report>, Vec<AgentReport>, Vec<Lost>) {
    let workers = members.iter().map(|m| m.threads).sum();
    let mut reports = Vec::new();
    let mut agents = Vec::new();
    let mut lost = Vec::new();
    for m in members {
        let part = match &m.state {
            State::Done(r, disrupted) => {
                // Timelines align on the coordinator's clock.
                let mut r = (**r).clone();
                r.started_unix_ms = (r.started_unix_ms as i64 - m.offset_us / 1000).max(0) as u64;
                let part = Part {
                    state: if disrupted.is_some() {
                        AgentState::Interrupted
                    } else {
                        AgentState::Finished
                    },
                    problem: disrupted.clone(),
                    requests: r.requests.clone(),
                    rps: r.rps,
                    latency: Some(r.latency_us),
                    unreported_max: None,
                };
                reports.push(r);
                part
            }
            State::Lost(why) => lost_part(m, why, config, workers),
            State::Running => lost_part(m, "still running at the end", config, workers),
        };
        if let Some(p) = &part.problem {
            lost.push((format!("{}: {p}", m.name()), part.state));
        }
        agents.push(agent_report(m, part, start_us));
    }
    (reports, agents, lost)
}

/// An agent's entry in the result.
fn agent_report(m: &Member, part: Part, start_us: i64) -> AgentReport {
    AgentReport {
        rank: m.rank,
        host: m.host.clone(),
        address: m.address.to_string(),
        threads: m.threads,
        first_worker: m.first,
        clock_offset_ms: m.offset_us as f64 / 1000.0,
        rtt_ms: m.rtt_us as f64 / 1000.0,
        start_skew_ms: m.started_us.map(|s| (s - start_us) as f64 / 1000.0),
        state: part.state,
        problem: part.problem,
        requests: part.requests,
        rps: part.rps,
        latency_us: part.latency,
        unreported_max: part.unreported_max,
    }
}

/// The lost agents' requests that are in no merged figure: those they reported before they
/// were lost, and the most they may have sent after (`unreported_max`), so a server's own
/// count of the run can be checked against the merged `sent` plus both.
fn unreported_note(merged: &Report, agents: &[AgentReport]) -> Option<String> {
    let lost: Vec<&AgentReport> = agents
        .iter()
        .filter(|a| a.state == AgentState::Lost)
        .collect();
    if lost.is_empty() {
        return None;
    }
    let reported: u64 = lost.iter().map(|a| a.requests.sent).sum();
    let bound: Option<u64> = lost.iter().map(|a| a.unreported_max).sum();
    let sent = merged.requests.sent;
    Some(match bound {
        Some(more) => format!(
            "The lost agents reported {} requests sent (under fleet.agents, not in these \
             figures) and may have sent up to {} more unreported (unreported_max: their part of \
             the schedule until they were found lost): the server saw at most {} + {} + {} = {} \
             requests of this run.",
            fmt::thousands(reported),
            fmt::thousands(more),
            fmt::thousands(sent),
            fmt::thousands(reported),
            fmt::thousands(more),
            fmt::thousands(sent + reported + more)
        ),
        None => format!(
            "The lost agents reported {} requests sent (under fleet.agents, not in these \
             figures) and may have sent more unreported, how many nothing bounds (a closed \
             loop without -n): the server saw at least what these figures completed.",
            fmt::thousands(reported)
        ),
    })
}

/// How the fleet's figures were made, and which agents are missing from them.
fn fleet_notes(merged: &mut Report, agents: usize, spread: Option<f64>, lost: &[Lost]) {
    merged.notes.push(format!(
        "Run by a fleet of {agents} agents ({} worker threads){}: counts are sums, latency \
         percentiles come from the merged histograms.",
        merged.info.threads,
        spread.map_or(String::new(), |s| format!(
            "; they started within {s:.1} ms of each other"
        ))
    ));
    for (l, state) in lost {
        merged.notes.push(match state {
            AgentState::Interrupted => format!(
                "Interrupted {l}. Its requests up to then are in these figures, and the run \
                 stopped there: it is shorter than asked."
            ),
            _ => format!(
                "Lost {l}. Its requests are not in these figures; what it reported before is \
                 under fleet.agents."
            ),
        });
    }
}
