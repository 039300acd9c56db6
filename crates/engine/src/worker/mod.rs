//! The one worker loop and connection state machine, shared by every I/O backend, protocol
//! and transport.
//!
//! A backend (`epoll.rs`, `uring.rs`, and `fake.rs` in tests) implements [`Io`]: it owns the
//! sockets and the syscalls and reports what happened as [`Event`]s. The protocol (HTTP/1.1,
//! HTTP/2, WebSocket), the transport (plain or TLS) and the request source (the request or
//! targets, a file read as the run goes, scenario users) are chosen once per run, as the
//! worker's type parameters ([`Protocol`], [`Transport`], [`Source`]), so the loop has no
//! protocol, TLS or source branches and each keeps its own state: HTTP/2's per-stream fields
//! ride in the slots only of HTTP/2 connections, TLS sessions live in the TLS transport. The
//! loop (`Worker::run`, each pass one `turn`) is: reap I/O events -> advance the connections ->
//! let the model fill free slots -> submit I/O -> wait for the next event or deadline.
//!
//! Where each concern lives:
//! - this file: the loop, `refill` (the source gives a connection requests), connecting,
//!   reading (`on_readable`), failures, closes and deadlines;
//! - `setup.rs`: the choices made once, the load model and picker, the start and the end;
//! - `source.rs`, `users.rs`, `scripted.rs`: what a connection sends next (`Source`);
//! - `sink.rs`: what a response's head, fields, body and end become (`Sink`): booking, event
//!   streams, a user's answer, samples;
//! - `slots.rs`: `Conn`, its phase and its slots (the requests in flight, oldest first);
//! - `protocol.rs`: the two traits, `Protocol` and `Transport`;
//! - `http1.rs`: HTTP/1.1 writes (a batch of pipelined requests), the response parser's
//!   results (`read_response`), and what an EOF means;
//! - `http2.rs`: the HTTP/2 session, streams, frames flushed once per batch, GOAWAY, resets
//!   (reading frames in `http2/frames.rs`, templated requests in `http2/lanes.rs`);
//! - `http3.rs`: HTTP/3: a QUIC connection (`crate::quic`) per UDP socket, its datagrams
//!   sent once per turn, its timers as the connection's deadline;
//! - `lanes.rs`: HTTP/2's and HTTP/3's streams' own requests (templates, a script's), kept
//!   per stream;
//! - `ws.rs`: WebSocket: the upgrade, messages as frames, replies in order, pings, closes;
//! - `plain.rs`: bytes straight to and from the socket;
//! - `tls.rs`: the handshake, decrypting each read, and the handshake's end.

mod http1;
mod http2;
mod http3;
mod lanes;
mod plain;
mod protocol;
mod scripted;
mod setup;
mod sink;
mod slots;
mod source;
mod tls;
mod users;
mod ws;

pub(crate) use setup::run;

use http1::Http1;
use http2::Http2;
use http3::Http3;
use plain::Plain;
use protocol::{AfterRead, Protocol, Transport};
use scripted::Scripted;
use sink::Sink;
use slots::{Conn, Phase, Slot, Slots};
use source::{Arrival, Draw, Fed, Paced, Source};
use tls::Tls;
use users::Users;
use ws::Ws;

use crate::backend::{Connect, Endpoint, Event, EventKind, Io, Read, StampClock, Wait};
use crate::conn::{errno_kind, needs_backoff, parse_error_kind, read_eof};
use crate::feed::Cursor;
use crate::ledger::{Ledger, Times};
use crate::model::Model;
use crate::requests::Picker;
use crate::schedule::{Pace, Schedule};
use crate::stages::{Ramped, Stages};
use crate::{Config, StopReason, Wire, WorkerOutcome, WorkerPlan, RECONNECT_BACKOFF};
use pelt_stats::ErrorKind;
use rustix::io::Errno;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Open loop: the longest wait that leaves completions unread (see `Worker::due_wake`), or
/// the batch window if longer: below a thousand requests a second per worker, every
/// completion wakes the loop, so a connect or a handshake is never held up by more than this.
const LAZY_LIMIT_NS: u64 = 1_000_000;

/// Datagrams (HTTP/3) read from one connection's socket at one readiness event, at most.
const DATAGRAMS_A_WAKE: usize = 64;

/// How often the loop wakes to look at the stop flag and the ramp, and the finest grain of
/// deadlines (timeouts, backoff): no timer per request.
pub(crate) const DEADLINE_SCAN: Duration = Duration::from_millis(10);
/// How early a turn the loop takes anyway looks at the control and the ramp (see `run`).
const POLL_EARLY: Duration = Duration::from_millis(5);

/// The longest time between two deadline scans. A scan looks at every connection, so it runs
/// only when a deadline may have come (see `Worker::scan_deadlines`): held sockets with
/// nothing timed cost nothing between scans.
const SCAN_AT_MOST: Duration = Duration::from_secs(1);

struct Worker<'a, I: Io, P: Protocol, T: Transport, S: Source> {
    config: &'a Config,
    io: I,
    /// The request repeated `--pipeline` times: writes of k requests send its first k.
    batch: &'a [u8],
    depth: usize,
    /// Closed loop: a connection with requests outstanding takes more only when this many
    /// slots are free. HTTP/1.1: the depth: D requests written together, the next D when all
    /// are answered (wrk's pipelining), so writes stay batched. HTTP/2: a tenth of the
    /// streams (`STREAM_GROUPS`), at least 1. Open loop never holds back.
    refill_at: usize,
    conns: Vec<Conn<P>>,
    /// Open loop: connections with a free slot, oldest first (round robin, so every
    /// connection carries load as with wrk2).
    free: VecDeque<usize>,
    /// Open loop: connections this worker may open.
    max_conns: usize,
    /// Closed loop with `--stages`: the active connections move along these, and this worker
    /// (`.1` of `.2`) runs its share.
    ramp: Option<(Stages, usize, usize)>,
    /// Connections `0..active` carry requests; the others close once idle (`usize::MAX`
    /// without stages).
    active: usize,
    /// The generation of `Config::control` this worker follows (see `follow_control`).
    control_seen: u64,
    model: Model,
    /// Where connections go.
    endpoint: Endpoint,
    /// Which request each one the model starts sends.
    picker: Picker,
    /// The values templates draw (`{{rand}}`, `{{uuid}}`), seeded per worker.
    values: fastrand::Rng,
    /// Where requests come from (see `source.rs`).
    source: S,
    ledger: Ledger,
    /// Open loop with a batch window: the window in nanoseconds (0: none), and the clock
    /// that turns the kernel's arrival stamps into `Instant`s.
    window_ns: u64,
    stamps: StampClock,
    /// The last read carried no arrival stamp (the kernel had not turned stamping on yet, or
    /// the socket cannot stamp): waits are not lazy then, so nothing is booked late.
    unstamped: bool,
    events: Vec<Event>,
    /// When the deadlines are next scanned: the earliest deadline the last scan found, or
    /// set since (a backoff), and never later than `horizon` after it.
    scan_at: Instant,
    /// The soonest a deadline set after a scan may fall (the shortest of `--timeout`,
    /// `--connect-timeout`, `--ws-ping` and a stream's time limit, at most `SCAN_AT_MOST`;
    /// `DEADLINE_SCAN` with a stream's event limit or end marker): a request written, a
    /// connect begun or a ping sent right after a scan is not due before the next.
    horizon: Duration,
    proto: P,
    transport: T,
}

impl<I: Io, P: Protocol, T: Transport, S: Source> Worker<'_, I, P, T, S> {
    /// A connection more (open loop opens them as load needs); returns its index.
    fn add_conn(&mut self, now: Instant) -> usize {
        self.conns.push(Conn::new(self.depth, self.config, now));
        self.transport.add(now);
        self.conns.len() - 1
    }

    /// Connection `i` has output the socket has not taken yet.
    #[inline]
    fn writing(&self, i: usize) -> bool {
        P::writing(&self.conns[i].proto) || self.transport.writing(i)
    }

    /// Connections with a socket (connected, or connecting): a gauge for the timeline.
    fn open_connections(&self) -> u64 {
        let open = |c: &&Conn<P>| !matches!(c.phase, Phase::Closed | Phase::Backoff { .. });
        self.conns.iter().filter(open).count() as u64
    }

    fn in_flight(&self) -> bool {
        self.conns.iter().any(|c| c.slots.len > 0)
    }

    fn run(&mut self, plan: &WorkerPlan, stop: &AtomicBool) -> StopReason {
        let mut now = self.io.now();
        self.connect_initial(plan, stop, &mut now);
        self.scan_at = now + DEADLINE_SCAN;
        let mut next_poll = now + DEADLINE_SCAN;
        let mut drain_until: Option<Instant> = None;
        loop {
            if drain_until.is_none() && stop.load(Ordering::Relaxed) {
                // Stop issuing; give the requests in flight a grace period.
                self.model.stop();
                self.picker.close();
                drain_until = Some(now + self.config.grace);
            }
            if let Some(until) = drain_until {
                if now >= until || !self.in_flight() {
                    return StopReason::Signal;
                }
            }
            if plan.end.is_some_and(|end| now >= end) {
                if drain_until.is_some() {
                    return StopReason::Signal;
                }
                if self.model.is_open() {
                    // Requests due before the end that waited for their batch window's end
                    // start now (none due later: `Model::end_at`), handed to the socket
                    // before the worker ends.
                    self.fill(now);
                    self.turn(Wait::eager(Duration::ZERO), &mut now);
                }
                return StopReason::Duration;
            }
            if self.model.exhausted() && !self.in_flight() {
                return StopReason::Requests;
            }
            // Scenarios: every user ran out of unique data rows.
            if self.source.done(self.conns.len()) && !self.in_flight() {
                return StopReason::Requests;
            }
            if self.model.is_open() {
                self.fill(now);
            }
            let mut wake = next_poll.min(self.scan_at).min(self.ledger.next_tick());
            if let Some(end) = plan.end {
                wake = wake.min(end);
            }
            if let Some(until) = drain_until {
                wake = wake.min(until);
            }
            let wait = wake.saturating_duration_since(now);
            let (mut due, lazy) = self.due_wake(now);
            // Scenarios: a think time's end is a due time too (woken to the microsecond).
            if let Some(thought) = self.source.next_wake() {
                due = Some(due.map_or(thought, |d| d.min(thought)));
            }
            let due = due.map(|d| d.saturating_duration_since(now));
            self.turn(
                Wait {
                    timeout: wait,
                    due,
                    lazy,
                },
                &mut now,
            );
            self.wake(now);
            if now >= self.scan_at {
                self.scan_deadlines(now);
            }
            // The control and the ramp are looked at every 10 ms, on a turn the loop takes
            // anyway once half of that has passed: the poll's own wake-up comes only when
            // nothing else woke the loop for 10 ms.
            if now + POLL_EARLY >= next_poll {
                self.follow_control(plan);
                self.follow_ramp(now);
                next_poll = now + DEADLINE_SCAN;
            }
        }
    }

    /// The connections the source has something due on (scenarios: users whose think time
    /// has ended) send it.
    fn wake(&mut self, now: Instant) {
        if self.source.next_wake().is_none_or(|at| at > now) {
            return;
        }
        let woken = self.source.woken(now);
        for &i in &woken {
            self.refill(i, now);
        }
        self.source.done_with(woken);
    }

    /// A change made while the run goes (`crate::control`): the open loop's schedule or the
    /// closed loop's ramp become the changed stages. A relaxed look at the generation every
    /// `DEADLINE_SCAN`; the stages are read only when it moved.
    fn follow_control(&mut self, plan: &WorkerPlan) {
        let Some(control) = &self.config.control else {
            return;
        };
        let generation = control.generation();
        if generation == self.control_seen {
            return;
        }
        self.control_seen = generation;
        let Some(stages) = control.stages() else {
            return;
        };
        match stages.of() {
            Ramped::Rate => self.model.repace(Pace::Staged(stages)),
            Ramped::Connections => self.ramp = Some((stages, plan.worker, plan.workers)),
        }
    }

    /// Closed loop with stages: this worker's share of the active connections at `now` (past
    /// its connections when a change asked for more).
    fn ramp_target(&self, now: Instant) -> Option<usize> {
        let (stages, worker, workers) = self.ramp.as_ref()?;
        let t = self.ledger.elapsed_ns(now) as f64 / 1e9;
        let total = stages.connections_at(t) as u64;
        Some(crate::share(total, *workers, *worker) as usize)
    }

    /// Closed loop with stages: opens the connections the ramp has reached (they start their
    /// requests) and closes, once idle, those it has left (checked every `DEADLINE_SCAN`).
    fn follow_ramp(&mut self, now: Instant) {
        let Some(target) = self.ramp_target(now) else {
            return;
        };
        // Without stages before a change, every connection was active.
        let before = self.active.min(self.conns.len());
        while self.conns.len() < target {
            self.add_conn(now);
        }
        self.active = target;
        for i in target.min(before)..target.max(before) {
            // Up: they connect and start. Down: closed now if idle, else when answered.
            self.refill(i, now);
        }
    }

    /// Closes connection `i`, which the ramp has left, if it carries no request.
    fn retire(&mut self, i: usize) {
        let conn = &self.conns[i];
        if conn.slots.len == 0 && !matches!(conn.phase, Phase::Closed) {
            self.close(i);
        }
    }

    /// Starts the first requests, connecting at most `--connect-rate` connections per second
    /// (this worker's share); the loop runs meanwhile, so early connections carry load.
    fn connect_initial(&mut self, plan: &WorkerPlan, stop: &AtomicBool, now: &mut Instant) {
        let n = self.conns.len();
        let Some(rate) = plan.connect_rate.filter(|_| n > 1) else {
            for i in 0..n {
                self.refill(i, *now);
            }
            return;
        };
        let start = *now;
        let gap = Duration::from_secs_f64(1.0 / rate);
        let mut next = 0;
        while next < n && !stop.load(Ordering::Relaxed) && plan.end.is_none_or(|e| *now < e) {
            // Every connection due by now starts; the rest wait for their turn.
            while next < n && start + gap.mul_f64(next as f64) <= *now {
                self.refill(next, *now);
                next += 1;
            }
            if next == n {
                break;
            }
            let due = (start + gap.mul_f64(next as f64)).saturating_duration_since(*now);
            let wait = Wait {
                due: Some(due),
                ..Wait::eager(due.min(DEADLINE_SCAN))
            };
            self.turn(wait, now);
            self.scan_deadlines(*now);
        }
    }

    /// One turn of the loop: flush what the protocol queued since the last turn (HTTP/2
    /// frames go out once per turn), submit and wait (as `wait` says), handle what happened,
    /// and hand the second's figures over when a second has passed.
    #[inline]
    fn turn(&mut self, wait: Wait, now: &mut Instant) {
        P::flush(self, *now);
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        self.io.wait(wait, &mut events);
        let unsent = self.io.take_unsent();
        if unsent > 0 {
            let sent = &mut self.ledger.current().bytes_sent;
            *sent = sent.saturating_sub(unsent);
        }
        *now = self.io.now();
        for &ev in &events {
            self.on_event(ev, now);
        }
        self.events = events;
        if *now >= self.ledger.next_tick() {
            self.ledger.connections = self.open_connections();
            self.ledger.tick(*now);
            if self.model.is_open() {
                self.stamps = StampClock::new();
            }
        }
    }

    /// Open loop: when to wake for the next due request, and whether to sleep until then
    /// whatever completes (see `Io::wait`): responses are read at the wake-up, booked at the
    /// kernel's arrival stamps, so one wake-up serves both the requests due and the
    /// responses that came. With a batch window the wake-up is the end of the window the
    /// request is due in (windows count from the run's start). The sleep is not lazy when it
    /// would be long (`LAZY_LIMIT_NS`, or the window), nor while reads come without stamps, nor when a due
    /// request waits for a busy connection (no wake-up then: a response ends the wait, as it
    /// frees one).
    #[inline]
    fn due_wake(&self, now: Instant) -> (Option<Instant>, bool) {
        let Some(due) = self.model.next_due_ns() else {
            return (None, false);
        };
        let can_start = !self.free.is_empty() || self.conns.len() < self.max_conns;
        let elapsed = self.ledger.elapsed_ns(now);
        if !self.model.is_open() || (!can_start && due <= elapsed) {
            return (None, false);
        }
        // Busy connections may be free by then: their responses are read first.
        let end = match self.window_ns {
            0 => due,
            w => due.div_ceil(w).saturating_mul(w),
        };
        let limit = LAZY_LIMIT_NS.max(self.window_ns);
        // A source that answers (scenarios): a response makes a user's next step due at once,
        // so none is left unread.
        let lazy = !self.unstamped && !S::ANSWERS && end.saturating_sub(elapsed) <= limit;
        (Some(self.ledger.at_ns(end)), lazy)
    }

    /// Open loop: starts every due request that a connection can take, oldest first.
    fn fill(&mut self, now: Instant) {
        let elapsed = self.ledger.elapsed_ns(now);
        while self.model.next_due_ns().is_some_and(|due| due <= elapsed) {
            let i = match self.free.pop_front() {
                Some(i) => i,
                None if self.conns.len() < self.max_conns => self.add_conn(now),
                // Every connection is busy: the due requests wait, their latency counting.
                None => return,
            };
            self.conns[i].queued = false;
            let mut draw = Draw {
                model: &mut self.model,
                picker: &mut self.picker,
                ledger: &mut self.ledger,
            };
            match self.source.arrive(i, &mut draw, elapsed, now) {
                Arrival::Refill => self.refill(i, now),
                Arrival::Skip => continue,
                Arrival::Stop => return,
            }
        }
    }

    fn on_event(&mut self, ev: Event, now: &mut Instant) {
        let conn = ev.conn;
        if ev.generation != self.io.generation(conn) {
            // From a socket this batch's earlier events closed.
            if let EventKind::Received(token) = ev.kind {
                self.io.release(token);
            }
            return;
        }
        match ev.kind {
            EventKind::Ready { readable, writable } => match self.conns[conn].phase {
                Phase::Connecting { .. } => {
                    let result = self.io.finish_connect(conn);
                    self.on_connected(conn, result, *now);
                }
                Phase::Open | Phase::Handshaking { .. } => {
                    if writable && self.writing(conn) {
                        self.on_writable(conn, *now);
                    }
                    // A server may answer (413, say) before it has read the whole request.
                    let phase = self.conns[conn].phase;
                    if readable && matches!(phase, Phase::Open | Phase::Handshaking { .. }) {
                        // Datagrams: the ones queued since, up to a bound (other
                        // connections' turn comes).
                        let mut more = if P::DATAGRAMS { DATAGRAMS_A_WAKE } else { 1 };
                        while self.on_readable(conn, 0, now) && more > 1 {
                            more -= 1;
                            if !matches!(self.conns[conn].phase, Phase::Open) {
                                break;
                            }
                        }
                    }
                }
                Phase::Closed | Phase::Backoff { .. } => {}
            },
            EventKind::Connected(result) => self.on_connected(conn, result, *now),
            EventKind::Received(token) => {
                self.on_readable(conn, token, now);
            }
            EventKind::SendFailed(errno) => self.fail(conn, errno_kind(errno, false), *now, || {
                format!("write: {errno}")
            }),
        }
    }

    /// Gives connection `i` as many requests as the model allows and it has free slots, and
    /// writes them together (connecting first if it has no socket). Open loop: a connection
    /// left with a free slot joins the free queue.
    fn refill(&mut self, i: usize, now: Instant) {
        if i >= self.active {
            return self.retire(i);
        }
        let conn = &self.conns[i];
        // HTTP/2 frames queue behind a write under way; HTTP/1.1 requests wait for its end.
        let busy = !P::MULTIPLEXED && self.writing(i);
        if matches!(conn.phase, Phase::Backoff { .. }) || busy {
            return;
        }
        if conn.slots.len > 0 && conn.slots.free() < self.refill_at && !self.model.is_open() {
            return;
        }
        let mut taken = 0;
        let warm = self.ledger.is_warm(now);
        while self.room(i) > 0 {
            let conn = &mut self.conns[i];
            let mut draw = Draw {
                model: &mut self.model,
                picker: &mut self.picker,
                ledger: &mut self.ledger,
            };
            let Some(next) = self.source.next(i, now, warm, &mut draw, &mut conn.fed) else {
                break;
            };
            self.ledger.started(warm, next.target, next.due, now);
            conn.slots.push(Slot {
                target: next.target,
                seq: next.seq,
                user: next.user,
                head: next.head,
                ..Slot::new(next.due, now, warm)
            });
            conn.unwritten += 1;
            taken += 1;
        }
        // HTTP/2: requests may wait for a stream the server's limit had no room for. A
        // protocol that holds its sockets connects without one.
        let holds = P::holds(self.config) && matches!(self.conns[i].phase, Phase::Closed);
        if taken > 0 || (P::MULTIPLEXED && self.conns[i].unwritten > 0) || holds {
            match self.conns[i].phase {
                Phase::Open => P::write(self, i, now),
                Phase::Closed => self.connect(i, now),
                Phase::Connecting { .. } | Phase::Handshaking { .. } | Phase::Backoff { .. } => {}
            }
        }
        let conn = &self.conns[i];
        let can_take = matches!(conn.phase, Phase::Open | Phase::Closed)
            && (P::MULTIPLEXED || !self.writing(i));
        // Scenarios: a connection is free when its user waits for an arrival.
        let idle = self.source.idle(i);
        if self.model.is_open() && can_take && !conn.queued && self.room(i) > 0 && idle {
            self.conns[i].queued = true;
            self.free.push_back(i);
        }
    }

    /// How many more requests connection `i` may take now.
    #[inline]
    fn room(&self, i: usize) -> usize {
        P::room(self, i)
    }

    fn connect(&mut self, i: usize, now: Instant) {
        match self.io.connect(i, &self.endpoint) {
            Ok(Connect::Done) => self.on_connected(i, Ok(()), now),
            Ok(Connect::InProgress) => {
                self.conns[i].phase = Phase::Connecting {
                    deadline: now + self.config.connect_timeout,
                };
            }
            // The backend keeps no socket for a connect that failed at once.
            Err(e) => {
                let to = &self.endpoint;
                let message = format!("connect to {to}: {e}");
                self.fail(i, errno_kind(e, true), now, || message)
            }
        }
    }

    fn on_connected(&mut self, i: usize, result: Result<(), Errno>, now: Instant) {
        if !matches!(
            self.conns[i].phase,
            Phase::Connecting { .. } | Phase::Closed
        ) {
            return;
        }
        self.conns[i].phase = Phase::Open;
        match result {
            Ok(()) => {
                self.ledger.current().connections_opened += 1;
                self.start(i, now);
            }
            Err(e) => {
                let message = format!("connect to {}: {e}", self.endpoint);
                self.fail(i, errno_kind(e, true), now, || message)
            }
        }
    }

    /// Connection `i`'s socket is up: the transport's handshake begins, or the protocol
    /// starts (and writes the requests that waited for the connect).
    fn start(&mut self, i: usize, now: Instant) {
        match self.transport.connected(i, now) {
            Ok(true) => {
                self.conns[i].phase = Phase::Handshaking {
                    deadline: now + self.config.connect_timeout,
                };
                T::flush(self, i, now);
            }
            Ok(false) => match P::start(&mut self.conns[i], None, self.config, now) {
                Ok(()) => {
                    P::write(self, i, now);
                    self.refill(i, now);
                }
                Err(failed) => self.after_read(i, failed, now),
            },
            Err(message) => self.fail(i, ErrorKind::Tls, now, || message),
        }
    }

    /// The socket takes more: what waits goes on; open loop: a connection whose write is done
    /// may take due requests.
    fn on_writable(&mut self, i: usize, now: Instant) {
        P::write(self, i, now);
        T::flush(self, i, now);
        let open = matches!(self.conns[i].phase, Phase::Open);
        if open && self.model.is_open() && !self.writing(i) {
            self.refill(i, now);
        }
    }

    /// Reads connection `i` once (`token`: see `Io::read`); returns whether bytes came.
    fn on_readable(&mut self, i: usize, token: u64, now: &mut Instant) -> bool {
        // The read's time: its responses complete at it when the kernel gave no stamp.
        *now = self.io.now();
        let mut data = false;
        let after = match self.io.read(i, token) {
            Read::Again => return false,
            Read::Failed(e) => AfterRead::Fail(errno_kind(e, false), format!("read: {e}")),
            Read::Eof => {
                self.io.release(token);
                P::on_eof(self, i, *now);
                return false;
            }
            Read::Data(bytes, stamp) => {
                data = true;
                self.ledger.current().bytes_received += bytes.len() as u64;
                let arrived = self.stamps.instant(stamp, *now);
                self.unstamped = arrived.is_none();
                let conn = &mut self.conns[i];
                let ledger = &mut self.ledger;
                self.transport
                    .receive(i, conn, ledger, self.config, bytes, arrived, *now)
            }
        };
        self.io.release(token);
        self.after_read(i, after, *now);
        data
    }

    /// What a read left connection `i` to do. Kept: a handshake the read ended opens it, and
    /// what the read made due is written.
    #[inline]
    fn after_read(&mut self, i: usize, after: AfterRead, now: Instant) {
        self.answer(i, now);
        match after {
            AfterRead::Keep => {
                let conn = &mut self.conns[i];
                if matches!(conn.phase, Phase::Handshaking { .. }) && !self.transport.handshaking(i)
                {
                    conn.phase = Phase::Open;
                }
                P::write(self, i, now);
                T::flush(self, i, now);
                self.refill(i, now)
            }
            AfterRead::Close => {
                self.fail_all(i, ErrorKind::Closed, now, || {
                    "the server closed the connection with pipelined requests unanswered"
                        .to_string()
                });
                self.close(i);
                self.refill(i, now);
            }
            AfterRead::Fail(kind, message) => self.fail(i, kind, now, || message),
        }
    }

    /// The run is over: what the protocol's goodbyes queued is submitted (io_uring queues
    /// sends until its next wait), and what came meanwhile is dropped unread.
    fn submit_and_drop(&mut self) {
        let mut events = Vec::new();
        self.io.wait(Wait::eager(Duration::ZERO), &mut events);
        for ev in events {
            if let EventKind::Received(token) = ev.kind {
                self.io.release(token);
            }
        }
    }

    /// The responses (and failures) connection `i`'s sink kept for the source go to it.
    #[inline]
    fn answer(&mut self, i: usize, now: Instant) {
        self.source
            .answer(&mut self.conns[i].sink, &mut self.ledger, now);
    }

    /// Every request left on connection `i` ends in an error of `kind`.
    fn fail_all(&mut self, i: usize, kind: ErrorKind, now: Instant, message: impl Fn() -> String) {
        while let Some(slot) = self.conns[i].slots.pop() {
            self.lost(i, &slot, kind, now, &message);
        }
        self.conns[i].unwritten = 0;
        self.conns[i].fed.clear();
    }

    /// A request of connection `i` ended in an error of `kind` (its user, in a scenario, is
    /// told).
    fn lost(
        &mut self,
        i: usize,
        slot: &Slot<P::Stream>,
        kind: ErrorKind,
        now: Instant,
        message: impl FnOnce() -> String,
    ) {
        self.conns[i].sink.release(slot.reply);
        self.source.failed(slot.user, now);
        self.ledger
            .error(slot.warm, slot.target, slot.seq, kind, message);
    }

    /// The requests on connection `i` failed: count them, drop the connection, go on.
    fn fail(&mut self, i: usize, kind: ErrorKind, now: Instant, message: impl FnOnce() -> String) {
        let conn = &self.conns[i];
        if conn.slots.len == 0 {
            // No request owns the failure (an idle connection broke).
            self.ledger.connection_error(kind, message);
        } else {
            let message = message();
            self.fail_all(i, kind, now, || message.clone());
        }
        self.close(i);
        if needs_backoff(kind) {
            let until = now + RECONNECT_BACKOFF;
            self.conns[i].phase = Phase::Backoff { until };
            self.scan_by(until);
        } else {
            self.refill(i, now);
        }
    }

    fn close(&mut self, i: usize) {
        if !matches!(self.conns[i].phase, Phase::Closed | Phase::Backoff { .. }) {
            self.io.close(i);
        }
        let conn = &mut self.conns[i];
        conn.phase = Phase::Closed;
        conn.sink.reset();
        P::reset(&mut conn.proto, self.config);
        self.transport.reset(i);
    }

    /// A deadline at `at`: the next scan comes no later.
    fn scan_by(&mut self, at: Instant) {
        self.scan_at = self.scan_at.min(at);
    }

    /// Ends what is past its deadline, and sets the next scan at the earliest deadline left
    /// (or set meanwhile), at most `horizon` ahead, at least `DEADLINE_SCAN`: a deadline is
    /// met within `DEADLINE_SCAN` of its time, and connections with nothing timed (held
    /// WebSocket sockets, idle keep-alive connections) are not looked at every 10 ms.
    fn scan_deadlines(&mut self, now: Instant) {
        self.scan_at = now + self.horizon;
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            let next = match conn.phase {
                Phase::Backoff { until } if now >= until => {
                    self.conns[i].phase = Phase::Closed;
                    self.refill(i, now);
                    None
                }
                Phase::Connecting { deadline } if now >= deadline => {
                    let t = self.config.connect_timeout;
                    self.fail(i, ErrorKind::ConnectTimeout, now, || {
                        format!("no connection within {t:?}")
                    });
                    None
                }
                Phase::Handshaking { deadline } if now >= deadline => {
                    let t = self.config.connect_timeout;
                    self.fail(i, ErrorKind::Tls, now, || {
                        format!("no TLS handshake within {t:?}")
                    });
                    None
                }
                Phase::Backoff { until } => Some(until),
                Phase::Connecting { deadline } | Phase::Handshaking { deadline } => Some(deadline),
                Phase::Open => P::expire(self, i, now),
                Phase::Closed => None,
            };
            if let Some(at) = next {
                self.scan_by(at);
            }
        }
        self.scan_at = self.scan_at.max(now + DEADLINE_SCAN);
    }
}
