//! An agent: joins its coordinator, runs its part of the run from the start instant, streams
//! its seconds, sends its result, and stops its load when the coordinator goes away.

use super::wire::{
    nonce, now_us, send, Channel, FromAgent, ReadError, Reader, Side, ToAgent, Token, PROTOCOL,
};
use crate::{options, Report};
use pelt_engine::Slice;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Clock pings per join; the one with the shortest round trip gives the offset.
const PINGS: usize = 8;

/// The most JSON a script's threads' values take in the result message (a quarter of the
/// largest message): past it, a thread's largest values go as their size alone.
const SCRIPT_VALUES_BYTES: usize = 16 << 20;

/// Who an agent is and where its coordinator is.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The coordinator's control address, `host:port` (resolved at each try, so a Kubernetes
    /// Service name that does not resolve yet is waited for).
    pub coordinator: String,
    pub rank: u32,
    /// The fleet's size, when known (the coordinator refuses a mismatch).
    pub agents: Option<u32>,
    /// Worker threads this agent offers (the coordinator's `-t` overrides).
    pub threads: usize,
    pub token: Token,
    /// How long to keep trying to reach the coordinator.
    pub join_timeout: Duration,
    /// A coordinator that sends nothing for this long is gone.
    pub silence: Duration,
    /// The name it gives (the host name).
    pub host: String,
}

/// An agent's run that ran.
#[derive(Debug)]
pub struct AgentEnd {
    /// Its own result (also sent to the coordinator).
    pub report: Report,
    /// Why it stopped early, when the coordinator stopped it or went away.
    pub stopped: Option<String>,
    /// The coordinator went away (its load stopped with nobody to report to).
    pub orphaned: bool,
}

/// Why an agent did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentError {
    /// It could not join: the coordinator was unreachable, refused it, or did not prove the
    /// token.
    Join(String),
    /// The run it was given cannot run here (bad input on this machine).
    Spec(String),
    /// The coordinator went away or stopped it before the start.
    Lost(String),
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::Join(m) | AgentError::Spec(m) | AgentError::Lost(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for AgentError {}

/// Joins the coordinator, runs this agent's part, and returns its result. `stop` (Ctrl-C)
/// ends the run early as in a plain run; the coordinator's abort or its loss sets it too.
pub fn run_agent(
    opts: &AgentOptions,
    stop: &Arc<AtomicBool>,
    log: &mut dyn FnMut(&str),
) -> Result<AgentEnd, AgentError> {
    let writer = connect(opts, stop, log)?;
    let mut reader = Reader::new(writer.clone());
    let offset_us = handshake(opts, &mut reader, &writer)?;
    log(&format!(
        "joined the coordinator at {} as rank {} (clock {:+.3} ms)",
        opts.coordinator,
        opts.rank,
        offset_us as f64 / 1000.0
    ));
    let part = wait_for_part(&mut reader)?;
    // "Still here" from the part on: preparing resolves the target's name, which a cluster's
    // DNS can take seconds to answer (a lost query waits out the resolver's 5 s), longer than
    // the coordinator waits for a silent agent.
    let finished = Arc::new(AtomicBool::new(false));
    beat(&writer, &finished);
    let mut prepared = match part.prepare() {
        Ok(p) => p,
        Err(message) => {
            finished.store(true, Ordering::Relaxed);
            let failed = FromAgent::Failed {
                message: message.clone(),
            };
            let _ = send(&writer, &failed);
            return Err(AgentError::Spec(message));
        }
    };
    let start_us = part.start_us;
    let why: Arc<Mutex<Option<(String, bool)>>> = Arc::default();
    let _ = reader.stream().set_read_timeout(Some(opts.silence));
    // The coordinator's live page may change the run: each change comes at its second.
    let control = Arc::new(pelt_engine::Control::new(&prepared.config));
    prepared.config.control = Some(control.clone());
    let listened = listen(reader, stop, &why, &finished, control);
    // Start at the coordinator's instant, on this clock.
    let wait_us = start_us + offset_us - now_us();
    if wait_us > 0 {
        let until = Instant::now() + Duration::from_micros(wait_us as u64);
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            std::thread::sleep((until - Instant::now()).min(Duration::from_millis(20)));
        }
    }
    let tell = |m: &FromAgent| {
        let _ = send(&writer, m);
    };
    tell(&FromAgent::Started {
        at_us: now_us() - offset_us,
    });
    let report = crate::run(&prepared, stop, &mut |point| {
        tell(&FromAgent::Second {
            point: Box::new(point.clone()),
            detail: Box::new(point.detail.clone()),
        })
    });
    finished.store(true, Ordering::Relaxed);
    // Stopped, and not by the coordinator: a signal here.
    let told = why.lock().ok().is_some_and(|w| w.is_some());
    tell(&FromAgent::Done {
        report: Box::new(report.clone()),
        signalled: report.interrupted && !told,
        threads: prepared.script_thread_values(SCRIPT_VALUES_BYTES),
    });
    // A lingering close: the result is followed by the end of what this side sends, and the
    // connection is closed only once the coordinator has closed its side (it does on the
    // result) or a few seconds have passed. Closed with its heartbeats unread, the socket
    // would reset the connection, and the reset can drop the result before a busy
    // coordinator has read it.
    writer.close_write();
    let _ = listened.recv_timeout(LINGER);
    writer.close();
    let why = why.lock().ok().and_then(|w| w.clone());
    Ok(AgentEnd {
        report,
        orphaned: why.as_ref().is_some_and(|w| w.1),
        stopped: why.map(|w| w.0),
    })
}

/// This agent's part of the run, as its coordinator sent it.
struct Part {
    options: serde_json::Map<String, serde_json::Value>,
    threads: usize,
    first: usize,
    workers: usize,
    start_us: i64,
}

impl Part {
    /// The part's spec, prepared; the line that says why it cannot run.
    fn prepare(&self) -> Result<crate::Prepared, String> {
        let mut spec = options::spec(&self.options).map_err(|e| e.message)?;
        spec.threads = Some(self.threads);
        spec.slice = Some(Slice {
            first: self.first,
            workers: self.workers,
        });
        crate::prepare(&spec).map_err(|e| e.0)
    }
}

/// Waits (through heartbeats) for the coordinator to send this agent's part.
fn wait_for_part(reader: &mut Reader) -> Result<Part, AgentError> {
    loop {
        match reader.read::<ToAgent>() {
            Ok(ToAgent::Heartbeat) => {}
            Ok(ToAgent::Run {
                options,
                threads,
                first,
                workers,
                start_us,
            }) => {
                return Ok(Part {
                    options,
                    threads,
                    first,
                    workers,
                    start_us,
                })
            }
            Ok(ToAgent::Refused { reason } | ToAgent::Abort { reason }) => {
                return Err(AgentError::Lost(format!(
                    "the coordinator ended the test: {reason}"
                )))
            }
            Ok(_) => {
                return Err(AgentError::Lost(
                    "the coordinator sent a message out of turn".into(),
                ))
            }
            Err(e) => {
                return Err(AgentError::Lost(format!(
                    "the coordinator {e} before the start"
                )))
            }
        }
    }
}

/// While an agent waits for its coordinator, how often it says why.
const JOIN_TELL_EVERY: Duration = Duration::from_secs(5);

/// Connects (retrying until the join timeout) and opens the encrypted channel.
fn connect(
    opts: &AgentOptions,
    stop: &AtomicBool,
    log: &mut dyn FnMut(&str),
) -> Result<Channel, AgentError> {
    let deadline = Instant::now() + opts.join_timeout;
    // The first failure is said at once, and the latest every few seconds after (a name that
    // stops failing to resolve may then fail to connect: the log says which held it up).
    let mut tell_at = Instant::now();
    loop {
        let attempt = opts
            .coordinator
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|addrs| {
                let mut last = String::from("the name has no address");
                for a in addrs {
                    match TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
                        Ok(s) => return Ok(s),
                        Err(e) => last = format!("{a}: {e}"),
                    }
                }
                Err(last)
            });
        match attempt {
            Ok(s) => return open(opts, s),
            Err(e) if Instant::now() >= deadline || stop.load(Ordering::Relaxed) => {
                return Err(AgentError::Join(format!(
                    "could not reach the coordinator at {} within {}s: {e}",
                    opts.coordinator,
                    opts.join_timeout.as_secs_f64()
                )))
            }
            Err(e) => {
                if Instant::now() >= tell_at {
                    tell_at = Instant::now() + JOIN_TELL_EVERY;
                    log(&format!(
                        "waiting for the coordinator at {} ({e})",
                        opts.coordinator
                    ));
                }
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }
}

/// The channel over a connection to the coordinator (the join's timeouts set on it).
fn open(opts: &AgentOptions, tcp: TcpStream) -> Result<Channel, AgentError> {
    let io = |e: std::io::Error| {
        AgentError::Join(format!("the coordinator at {}: {e}", opts.coordinator))
    };
    let _ = tcp.set_nodelay(true);
    tcp.set_read_timeout(Some(opts.silence.max(Duration::from_secs(10))))
        .map_err(io)?;
    tcp.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(io)?;
    Channel::connect(tcp).map_err(io)
}

/// Hello, the proofs both ways, and the clock's offset to the coordinator's (returned,
/// microseconds: this clock less the coordinator's).
fn handshake(
    opts: &AgentOptions,
    reader: &mut Reader,
    writer: &Channel,
) -> Result<i64, AgentError> {
    let io = |e: std::io::Error| {
        AgentError::Join(format!("the coordinator at {}: {e}", opts.coordinator))
    };
    let read_err =
        |e: ReadError| AgentError::Join(format!("the coordinator at {} {e}", opts.coordinator));
    let refused = |reason: String| {
        AgentError::Join(format!(
            "the coordinator at {} refused this agent: {reason}",
            opts.coordinator
        ))
    };
    let own = nonce();
    let session = writer.session();
    send(
        writer,
        &FromAgent::Hello {
            protocol: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").into(),
            rank: opts.rank,
            agents: opts.agents,
            threads: opts.threads,
            host: opts.host.clone(),
            nonce: own.clone(),
        },
    )
    .map_err(io)?;
    match reader.read::<ToAgent>().map_err(read_err)? {
        ToAgent::Challenge {
            nonce: theirs,
            proof,
        } => {
            if !opts
                .token
                .check(Side::Coordinator, session, &own, &theirs, &proof)
            {
                return Err(AgentError::Join(format!(
                    "the coordinator at {} does not know the fleet token; not taking its orders",
                    opts.coordinator
                )));
            }
            let proof = opts.token.proof(Side::Agent, session, &theirs, &own);
            send(writer, &FromAgent::Auth { proof }).map_err(io)?;
        }
        ToAgent::Refused { reason } => return Err(refused(reason)),
        _ => {
            return Err(refused(
                "it did not answer the hello with a challenge".into(),
            ))
        }
    }
    // The offset over the quickest round trip: the coordinator read its clock about halfway.
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..PINGS {
        let sent_us = now_us();
        send(writer, &FromAgent::Ping { sent_us }).map_err(io)?;
        match reader.read::<ToAgent>().map_err(read_err)? {
            ToAgent::Pong {
                sent_us: echo,
                at_us,
            } if echo == sent_us => {
                let back = now_us();
                let rtt = (back - sent_us).max(0) as u64;
                let offset = (sent_us + back) / 2 - at_us;
                if best.is_none_or(|(r, _)| rtt < r) {
                    best = Some((rtt, offset));
                }
            }
            ToAgent::Refused { reason } => return Err(refused(reason)),
            _ => return Err(refused("it did not answer a clock ping".into())),
        }
    }
    let (rtt_us, offset_us) = best.expect("at least one ping");
    send(writer, &FromAgent::Ready { offset_us, rtt_us }).map_err(io)?;
    Ok(offset_us)
}

/// How long a finished agent waits for its coordinator to close the connection.
const LINGER: Duration = Duration::from_secs(5);

/// Follows the coordinator while the run goes on: an abort, its close or its silence stops
/// the run. Reads until the connection ends (the coordinator closes it on the result), which
/// ends the receiver it returns.
fn listen(
    mut reader: Reader,
    stop: &Arc<AtomicBool>,
    why: &Arc<Mutex<Option<(String, bool)>>>,
    finished: &Arc<AtomicBool>,
    control: Arc<pelt_engine::Control>,
) -> std::sync::mpsc::Receiver<()> {
    let (stop, why, finished) = (stop.clone(), why.clone(), finished.clone());
    let (ended, listened) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _ended = ended;
        loop {
            let (reason, orphaned) = match reader.read::<ToAgent>() {
                Ok(ToAgent::Heartbeat) => continue,
                Ok(ToAgent::Change { change }) => {
                    // The coordinator made it on the same run: it holds here too.
                    let _ = control.follow(&change);
                    continue;
                }
                Ok(ToAgent::Abort { reason }) => {
                    (format!("the coordinator stopped the run: {reason}"), false)
                }
                Ok(_) => ("the coordinator sent a message out of turn".into(), true),
                Err(e) => (format!("the coordinator {e}"), true),
            };
            if !finished.load(Ordering::Relaxed) {
                if let Ok(mut w) = why.lock() {
                    w.get_or_insert((reason, orphaned));
                }
                stop.store(true, Ordering::Relaxed);
            }
            if orphaned {
                break;
            }
        }
    });
    listened
}

/// Says "still here" once a second until the run has finished.
fn beat(writer: &Channel, finished: &Arc<AtomicBool>) {
    let (writer, finished) = (writer.clone(), finished.clone());
    std::thread::spawn(move || {
        while !finished.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_secs(1));
            if !finished.load(Ordering::Relaxed) && send(&writer, &FromAgent::Heartbeat).is_err() {
                break;
            }
        }
    });
}
