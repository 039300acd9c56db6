//! The epoll backend: level-triggered, non-blocking sockets, the next request written inline
//! as soon as a response completes, EPOLLOUT only while a write is short.
//!
//! Per request in steady state (keep-alive, closed loop): one `send`, one `recv`, and a share
//! of one `epoll_wait`. Connection setup adds `socket`, `connect`, `epoll_ctl` (add, then
//! modify once connected) and `close`. In open loop, when the next request is due sooner than
//! epoll's millisecond timeout can express, a timerfd wakes the loop at the due time.

use crate::conn::{errno_kind, needs_backoff, read_bytes, read_eof, ReadOutcome};
use crate::ledger::Ledger;
use crate::model::Model;
use crate::schedule::Schedule;
use crate::{Config, StopReason, WorkerOutcome, WorkerPlan, RECONNECT_BACKOFF};
use pelt_codec::{ParserOptions, Response, ResponseParser};
use pelt_stats::ErrorKind;
use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::net::{self, AddressFamily, SendFlags, SocketFlags, SocketType};
use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One read's worth of buffer, shared by all connections of a worker.
const READ_BUF_BYTES: usize = 64 * 1024;
/// Most events taken per `epoll_wait`.
const MAX_EVENTS: usize = 256;
/// How often deadlines (timeouts, backoff) are checked: no timer per request.
const DEADLINE_SCAN: Duration = Duration::from_millis(10);
/// The epoll key of the worker's timerfd (connections are keyed by their index).
const TIMER_KEY: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No request; the socket (if any) is idle.
    Idle,
    /// Waiting after a failed connect.
    Backoff { until: Instant },
    /// Non-blocking connect under way, with a request waiting to be written.
    Connecting,
    /// Part of the request is written; EPOLLOUT is armed.
    Writing,
    /// The request is written; waiting for the response.
    Reading,
}

struct Conn {
    fd: Option<OwnedFd>,
    phase: Phase,
    parser: ResponseParser,
    written: usize,
    /// When the request started on this connection (service time starts here).
    sent_at: Instant,
    /// When the request was due (open-loop latency starts here; closed loop: `sent_at`).
    due_at: Instant,
    /// The request started during the warm-up.
    warm: bool,
    /// Connect or whole-request deadline for the current phase.
    deadline: Instant,
}

impl Conn {
    fn new(now: Instant) -> Conn {
        Conn {
            fd: None,
            phase: Phase::Idle,
            parser: ResponseParser::new(ParserOptions::default()),
            written: 0,
            sent_at: now,
            due_at: now,
            warm: false,
            deadline: now,
        }
    }

    fn in_flight(&self) -> bool {
        matches!(
            self.phase,
            Phase::Connecting | Phase::Writing | Phase::Reading
        )
    }
}

struct Worker<'a> {
    config: &'a Config,
    epoll: OwnedFd,
    conns: Vec<Conn>,
    /// Open loop: connections with no request, oldest first (round robin, so every
    /// connection carries load as with wrk2).
    free: VecDeque<usize>,
    /// Open loop: connections this worker may open.
    max_conns: usize,
    model: Model,
    ledger: Ledger,
    buf: Box<[u8]>,
    /// Open loop: wakes the loop at a due time finer than epoll's millisecond timeout.
    timer: Option<OwnedFd>,
    /// When the armed timer fires, if it is armed.
    timer_at: Option<Instant>,
}

/// The epoll backend.
pub(crate) struct Epoll;

impl crate::backend::Backend for Epoll {
    fn run_worker(config: &Config, plan: WorkerPlan, stop: &AtomicBool) -> WorkerOutcome {
        run_worker(config, plan, stop)
    }
}

fn run_worker(config: &Config, plan: WorkerPlan, stop: &AtomicBool) -> WorkerOutcome {
    let open = config.rate.is_some();
    let mut ledger = Ledger::new(
        plan.worker,
        open,
        plan.start,
        config.warmup,
        plan.tx.clone(),
    );
    let epoll = match epoll::create(epoll::CreateFlags::CLOEXEC) {
        Ok(fd) => fd,
        Err(e) => {
            // Without an epoll instance nothing can be sent: every request of the budget (or
            // none, for a duration run) is an error of this kind, so the accounting holds.
            let n = plan.budget.unwrap_or(0);
            ledger.main.sent = n;
            for _ in 0..n {
                ledger.error(false, errno_kind(e, false), || format!("epoll_create: {e}"));
            }
            ledger.finish();
            return WorkerOutcome {
                main: ledger.main,
                warm: ledger.warm,
                reason: StopReason::Requests,
                backlog: 0,
            };
        }
    };
    let model = match config.rate {
        Some(rate) => Model::open(
            Schedule::new(rate, config.arrival, plan.worker, plan.workers),
            plan.budget,
        ),
        None => Model::closed(plan.budget),
    };
    let timer = if open {
        // Timer slack would add up to 50 us to every wake-up: lag, not server time.
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        timerfd(&epoll)
    } else {
        None
    };
    let max_conns = if open {
        plan.max_connections.max(plan.connections)
    } else {
        plan.connections
    };
    let now = Instant::now();
    let mut conns = Vec::with_capacity(max_conns);
    conns.extend((0..plan.connections).map(|_| Conn::new(now)));
    let mut w = Worker {
        config,
        epoll,
        conns,
        free: VecDeque::with_capacity(max_conns),
        max_conns,
        model,
        ledger,
        buf: vec![0u8; READ_BUF_BYTES].into_boxed_slice(),
        timer,
        timer_at: None,
    };
    let reason = w.run(&plan, stop);
    // Requests due in the last moments before the stop are not a backlog: count those due
    // more than the late threshold before it, which waited for a busy connection.
    let late_ns = pelt_stats::LATE_THRESHOLD_US * 1000;
    let backlog = w
        .model
        .backlog(w.ledger.elapsed_ns(Instant::now()).saturating_sub(late_ns));
    for c in w.conns.iter().filter(|c| c.in_flight()) {
        if c.warm {
            w.ledger.warm.in_flight += 1;
        } else {
            w.ledger.main.in_flight += 1;
        }
    }
    w.ledger.finish();
    WorkerOutcome {
        main: w.ledger.main,
        warm: w.ledger.warm,
        reason,
        backlog,
    }
}

/// A non-blocking timerfd registered with `epoll`, or `None` if the kernel refuses one (the
/// loop then wakes at epoll's millisecond resolution).
fn timerfd(epoll: &OwnedFd) -> Option<OwnedFd> {
    let fd = rustix::time::timerfd_create(
        TimerfdClockId::Monotonic,
        TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
    )
    .ok()?;
    // Edge-triggered: every expiry wakes the loop once, and the expiry count need not be read
    // (one syscall less per timed wake-up); timerfd_settime resets it.
    let flags = EventFlags::IN | EventFlags::ET;
    epoll::add(epoll, &fd, EventData::new_u64(TIMER_KEY), flags).ok()?;
    Some(fd)
}

fn timespec(d: Duration) -> Timespec {
    Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: d.subsec_nanos() as i64,
    }
}

impl Worker<'_> {
    fn run(&mut self, plan: &WorkerPlan, stop: &AtomicBool) -> StopReason {
        let mut now = Instant::now();
        for i in 0..self.conns.len() {
            self.next_request(i, now);
        }
        let mut events = Vec::with_capacity(MAX_EVENTS);
        let mut next_scan = now + DEADLINE_SCAN;
        let mut drain_until: Option<Instant> = None;
        loop {
            if drain_until.is_none() && stop.load(Ordering::Relaxed) {
                // Stop issuing; give the requests in flight a grace period.
                self.model.stop();
                drain_until = Some(now + self.config.grace);
            }
            if let Some(until) = drain_until {
                if now >= until || !self.conns.iter().any(Conn::in_flight) {
                    return StopReason::Signal;
                }
            }
            if plan.end.is_some_and(|end| now >= end) {
                return if drain_until.is_some() {
                    StopReason::Signal
                } else {
                    StopReason::Duration
                };
            }
            if self.model.exhausted() && !self.conns.iter().any(Conn::in_flight) {
                return StopReason::Requests;
            }
            if self.model.is_open() {
                self.fill(now);
            }
            let mut wake = next_scan.min(self.ledger.next_tick());
            if let Some(end) = plan.end {
                wake = wake.min(end);
            }
            if let Some(until) = drain_until {
                wake = wake.min(until);
            }
            let mut wait = wake.saturating_duration_since(now);
            if let Some(due) = self.due_wake() {
                wait = self.wait_for_due(due, now, wait);
            }
            let timeout = timespec(wait);
            events.clear();
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                Some(&timeout),
            ) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => panic!("epoll_wait failed: {e}"),
            }
            now = Instant::now();
            for ev in &events {
                let key = ev.data.u64();
                if key == TIMER_KEY {
                    self.on_timer();
                } else {
                    self.on_event(key as usize, ev.flags, &mut now);
                }
            }
            if now >= self.ledger.next_tick() {
                self.ledger.tick(now);
            }
            if now >= next_scan {
                self.scan_deadlines(now);
                next_scan = now + DEADLINE_SCAN;
            }
        }
    }

    /// Open loop: when the next due request could start (a connection is free or may be
    /// opened); `None` when nothing is due or nothing could take it.
    #[inline]
    fn due_wake(&self) -> Option<Instant> {
        let due = self.model.next_due_ns()?;
        let can_start = !self.free.is_empty() || self.conns.len() < self.max_conns;
        can_start.then(|| self.ledger.at_ns(due))
    }

    /// Shortens `wait` to the due time; arms the timerfd when epoll's millisecond timeout
    /// cannot express it.
    fn wait_for_due(&mut self, due: Instant, now: Instant, wait: Duration) -> Duration {
        let until_due = due.saturating_duration_since(now);
        if until_due >= wait {
            return wait;
        }
        if until_due.is_zero() {
            return Duration::ZERO;
        }
        let Some(timer) = self.timer.as_ref() else {
            return until_due;
        };
        // A timer already set to fire before the due time will wake the loop anyway.
        if self.timer_at.is_some_and(|t| t > now && t <= due) {
            return wait;
        }
        let spec = Itimerspec {
            it_interval: timespec(Duration::ZERO),
            it_value: timespec(until_due),
        };
        match rustix::time::timerfd_settime(timer, TimerfdTimerFlags::empty(), &spec) {
            Ok(_) => {
                self.timer_at = Some(due);
                wait
            }
            Err(_) => until_due,
        }
    }

    fn on_timer(&mut self) {
        self.timer_at = None;
    }

    /// Open loop: starts every due request that a connection can take, oldest first.
    fn fill(&mut self, now: Instant) {
        let elapsed = self.ledger.elapsed_ns(now);
        while self.model.next_due_ns().is_some_and(|due| due <= elapsed) {
            let i = match self.free.pop_front() {
                Some(i) => i,
                None if self.conns.len() < self.max_conns => {
                    self.conns.push(Conn::new(now));
                    self.conns.len() - 1
                }
                // Every connection is busy: the due requests wait, their latency counting.
                None => return,
            };
            self.next_request(i, now);
        }
    }

    fn on_event(&mut self, i: usize, flags: EventFlags, now: &mut Instant) {
        match self.conns[i].phase {
            Phase::Connecting => self.on_connect_ready(i, *now),
            Phase::Writing => {
                if flags.contains(EventFlags::OUT) {
                    self.write(i, *now);
                }
                // A server may answer (413, say) before it has read the whole request.
                let readable = flags.intersects(EventFlags::IN | EventFlags::ERR | EventFlags::HUP);
                if readable && matches!(self.conns[i].phase, Phase::Writing | Phase::Reading) {
                    self.on_readable(i, now);
                }
            }
            Phase::Reading => self.on_readable(i, now),
            Phase::Idle => self.on_idle_readable(i),
            Phase::Backoff { .. } => {}
        }
    }

    /// Starts the next request on connection `i` if the model allows; else the connection
    /// waits (open loop: in the free queue).
    fn next_request(&mut self, i: usize, now: Instant) {
        let warm = self.ledger.is_warm(now);
        let Some(due_ns) = self.model.take(self.ledger.elapsed_ns(now), warm) else {
            self.conns[i].phase = Phase::Idle;
            if self.model.is_open() {
                self.free.push_back(i);
            }
            return;
        };
        let due = if self.model.is_open() {
            self.ledger.at_ns(due_ns)
        } else {
            now
        };
        self.ledger.started(warm, due, now);
        let conn = &mut self.conns[i];
        conn.due_at = due;
        conn.warm = warm;
        if conn.fd.is_some() {
            self.start_write(i, now);
        } else {
            self.connect(i, now);
        }
    }

    fn connect(&mut self, i: usize, now: Instant) {
        let addr = self.config.addr;
        let family = if addr.is_ipv4() {
            AddressFamily::INET
        } else {
            AddressFamily::INET6
        };
        let fd = match net::socket_with(
            family,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        ) {
            Ok(fd) => fd,
            Err(e) => return self.fail(i, errno_kind(e, true), now, || format!("socket: {e}")),
        };
        // Nagle would only delay a request split across writes; never worth it here.
        let _ = net::sockopt::set_tcp_nodelay(&fd, true);
        let connected = match net::connect(&fd, &addr) {
            Ok(()) => true,
            Err(Errno::INPROGRESS) => false,
            Err(e) => {
                return self.fail(i, errno_kind(e, true), now, || {
                    format!("connect to {addr}: {e}")
                })
            }
        };
        let flags = if connected {
            EventFlags::IN
        } else {
            EventFlags::IN | EventFlags::OUT
        };
        if let Err(e) = epoll::add(&self.epoll, &fd, EventData::new_u64(i as u64), flags) {
            return self.fail(i, errno_kind(e, true), now, || format!("epoll_ctl: {e}"));
        }
        let conn = &mut self.conns[i];
        conn.fd = Some(fd);
        if connected {
            self.ledger.current().connections_opened += 1;
            self.start_write(i, now);
        } else {
            conn.phase = Phase::Connecting;
            conn.deadline = now + self.config.connect_timeout;
        }
    }

    fn on_connect_ready(&mut self, i: usize, now: Instant) {
        let Some(fd) = self.conns[i].fd.as_ref() else {
            return;
        };
        let result = net::sockopt::socket_error(fd).and_then(|r| r);
        let result = result.and_then(|()| {
            epoll::modify(
                &self.epoll,
                fd,
                EventData::new_u64(i as u64),
                EventFlags::IN,
            )
        });
        match result {
            Ok(()) => {
                self.ledger.current().connections_opened += 1;
                self.start_write(i, now);
            }
            Err(e) => {
                let addr = self.config.addr;
                self.fail(i, errno_kind(e, true), now, || {
                    format!("connect to {addr}: {e}")
                })
            }
        }
    }

    fn start_write(&mut self, i: usize, now: Instant) {
        let conn = &mut self.conns[i];
        conn.parser.set_head_request(self.config.head_request);
        conn.written = 0;
        // Service time (closed-loop latency) starts at the first byte written, as in wrk.
        conn.sent_at = now;
        conn.deadline = now + self.config.timeout;
        conn.phase = Phase::Reading;
        self.write(i, now);
    }

    /// Writes what is left of the request; arms EPOLLOUT on a short write.
    fn write(&mut self, i: usize, now: Instant) {
        let request = &self.config.request;
        let conn = &mut self.conns[i];
        let Some(fd) = conn.fd.as_ref() else {
            return;
        };
        while conn.written < request.len() {
            match net::send(fd, &request[conn.written..], SendFlags::NOSIGNAL) {
                Ok(n) => {
                    self.ledger.current().bytes_sent += n as u64;
                    conn.written += n;
                }
                Err(Errno::AGAIN) => {
                    if conn.phase != Phase::Writing {
                        conn.phase = Phase::Writing;
                        let flags = EventFlags::IN | EventFlags::OUT;
                        let _ = epoll::modify(&self.epoll, fd, EventData::new_u64(i as u64), flags);
                    }
                    return;
                }
                Err(Errno::INTR) => {}
                Err(e) => {
                    return self.fail(i, errno_kind(e, false), now, || format!("write: {e}"));
                }
            }
        }
        if conn.phase == Phase::Writing {
            let _ = epoll::modify(
                &self.epoll,
                fd,
                EventData::new_u64(i as u64),
                EventFlags::IN,
            );
        }
        conn.phase = Phase::Reading;
    }

    fn on_readable(&mut self, i: usize, now: &mut Instant) {
        let Some(fd) = self.conns[i].fd.as_ref() else {
            return;
        };
        let n = match net::recv(fd, &mut self.buf[..], net::RecvFlags::empty()) {
            Ok((0, _)) => return self.on_eof(i, *now),
            Ok((n, _)) => n,
            Err(Errno::AGAIN | Errno::INTR) => return,
            Err(e) => return self.fail(i, errno_kind(e, false), *now, || format!("read: {e}")),
        };
        self.ledger.current().bytes_received += n as u64;
        match read_bytes(&mut self.conns[i].parser, &self.buf[..n]) {
            ReadOutcome::Pending => {}
            ReadOutcome::Failed(e) => {
                let kind = crate::conn::parse_error_kind(&e);
                self.fail(i, kind, *now, || e.to_string());
            }
            ReadOutcome::Complete { response, stray } => {
                *now = Instant::now();
                if stray > 0 && response.keep_alive {
                    // Bytes nobody asked for: never attributed to the next request.
                    self.ledger.connection_error(ErrorKind::Protocol, || {
                        format!("{stray} bytes arrived after a complete response")
                    });
                }
                let reuse = response.keep_alive && stray == 0;
                self.complete(i, response, reuse, *now);
            }
        }
    }

    fn on_eof(&mut self, i: usize, now: Instant) {
        match read_eof(&mut self.conns[i].parser) {
            Ok(response) => self.complete(i, response, false, now),
            Err((kind, message)) => self.fail(i, kind, now, || message),
        }
    }

    /// A readable socket with no request in flight: the server closed an idle connection
    /// (fine) or sent bytes nobody asked for (a protocol error of the connection).
    fn on_idle_readable(&mut self, i: usize) {
        let Some(fd) = self.conns[i].fd.as_ref() else {
            return;
        };
        if let Ok((n, _)) = net::recv(fd, &mut self.buf[..], net::RecvFlags::empty()) {
            self.ledger.current().bytes_received += n as u64;
            if n > 0 {
                self.ledger.connection_error(ErrorKind::Protocol, || {
                    format!("{n} bytes arrived on an idle connection")
                });
            }
        }
        self.close(i);
    }

    fn complete(&mut self, i: usize, response: Response, reuse: bool, now: Instant) {
        let conn = &self.conns[i];
        // A response that arrives before the request is fully written ends the connection.
        let reuse = reuse && self.config.keep_alive && conn.phase == Phase::Reading;
        let (warm, due, sent) = (conn.warm, conn.due_at, conn.sent_at);
        self.ledger.response(warm, response.status, due, sent, now);
        if !reuse {
            self.close(i);
        }
        self.next_request(i, now);
    }

    /// The request on connection `i` failed: count it, drop the connection, go on.
    fn fail(&mut self, i: usize, kind: ErrorKind, now: Instant, message: impl FnOnce() -> String) {
        let warm = self.conns[i].warm;
        self.ledger.error(warm, kind, message);
        self.close(i);
        if needs_backoff(kind) {
            self.conns[i].phase = Phase::Backoff {
                until: now + RECONNECT_BACKOFF,
            };
        } else {
            self.next_request(i, now);
        }
    }

    fn close(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        // Dropping the fd closes it, which also removes it from the epoll set.
        conn.fd = None;
        conn.parser.reset();
        conn.phase = Phase::Idle;
    }

    fn scan_deadlines(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            match conn.phase {
                Phase::Backoff { until } if now >= until => self.next_request(i, now),
                Phase::Connecting if now >= conn.deadline => {
                    let t = self.config.connect_timeout;
                    self.fail(i, ErrorKind::ConnectTimeout, now, || {
                        format!("no connection within {t:?}")
                    })
                }
                Phase::Writing | Phase::Reading if now >= conn.deadline => {
                    let t = self.config.timeout;
                    self.fail(i, ErrorKind::Timeout, now, || {
                        format!("no complete response within {t:?}")
                    })
                }
                _ => {}
            }
        }
    }
}
