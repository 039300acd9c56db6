//! The epoll backend: level-triggered, non-blocking sockets, the next request written inline
//! as soon as a response completes, EPOLLOUT only while a write is short.
//!
//! Per request in steady state (keep-alive): one `send`, one `recv`, and a share of one
//! `epoll_wait`. Connection setup adds `socket`, `connect`, `epoll_ctl` (add, then modify once
//! connected) and `close`.

use crate::conn::{errno_kind, needs_backoff, read_bytes, read_eof, ReadOutcome};
use crate::model::ClosedLoop;
use crate::{Config, StopReason, WorkerPlan, RECONNECT_BACKOFF};
use pelt_codec::{ParserOptions, Response, ResponseParser};
use pelt_stats::{ErrorKind, WorkerStats};
use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::net::{self, AddressFamily, SendFlags, SocketFlags, SocketType};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One read's worth of buffer, shared by all connections of a worker.
const READ_BUF_BYTES: usize = 64 * 1024;
/// Most events taken per `epoll_wait`.
const MAX_EVENTS: usize = 256;
/// How often deadlines (timeouts, backoff) are checked: no timer per request.
const DEADLINE_SCAN: Duration = Duration::from_millis(10);

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
    /// When the request's first byte was written (latency starts here).
    sent_at: Instant,
    /// Connect or whole-request deadline for the current phase.
    deadline: Instant,
}

impl Conn {
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
    model: ClosedLoop,
    stats: WorkerStats,
    buf: Box<[u8]>,
}

/// The epoll backend.
pub(crate) struct Epoll;

impl crate::backend::Backend for Epoll {
    fn run_worker(
        config: &Config,
        plan: WorkerPlan,
        stop: &AtomicBool,
    ) -> (WorkerStats, StopReason) {
        run_worker(config, plan, stop)
    }
}

fn run_worker(config: &Config, plan: WorkerPlan, stop: &AtomicBool) -> (WorkerStats, StopReason) {
    let epoll = match epoll::create(epoll::CreateFlags::CLOEXEC) {
        Ok(fd) => fd,
        Err(e) => {
            // Without an epoll instance nothing can be sent: every request of the budget (or
            // none, for a duration run) is an error of this kind, so the accounting holds.
            let mut stats = WorkerStats::new();
            let n = plan.budget.unwrap_or(0);
            stats.sent = n;
            for _ in 0..n {
                stats.record_error(errno_kind(e, false), || format!("epoll_create: {e}"));
            }
            return (stats, StopReason::Requests);
        }
    };
    let now = Instant::now();
    let conns = (0..plan.connections)
        .map(|_| Conn {
            fd: None,
            phase: Phase::Idle,
            parser: ResponseParser::new(ParserOptions::default()),
            written: 0,
            sent_at: now,
            deadline: now,
        })
        .collect();
    let mut w = Worker {
        config,
        epoll,
        conns,
        model: ClosedLoop::new(plan.budget),
        stats: WorkerStats::new(),
        buf: vec![0u8; READ_BUF_BYTES].into_boxed_slice(),
    };
    let reason = w.run(plan, stop);
    w.stats.in_flight = w.conns.iter().filter(|c| c.in_flight()).count() as u64;
    (w.stats, reason)
}

impl Worker<'_> {
    fn run(&mut self, plan: WorkerPlan, stop: &AtomicBool) -> StopReason {
        let mut now = Instant::now();
        for i in 0..self.conns.len() {
            self.next_request(i, now);
        }
        let mut events = Vec::with_capacity(MAX_EVENTS);
        let mut next_scan = now + DEADLINE_SCAN;
        loop {
            if stop.load(Ordering::Relaxed) {
                return StopReason::Signal;
            }
            if plan.end.is_some_and(|end| now >= end) {
                return StopReason::Duration;
            }
            if self.model.exhausted() && !self.conns.iter().any(Conn::in_flight) {
                return StopReason::Requests;
            }
            let mut wait = next_scan.saturating_duration_since(now);
            if let Some(end) = plan.end {
                wait = wait.min(end.saturating_duration_since(now));
            }
            let timeout = rustix::event::Timespec {
                tv_sec: wait.as_secs() as i64,
                tv_nsec: wait.subsec_nanos() as i64,
            };
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
                let i = ev.data.u64() as usize;
                self.on_event(i, ev.flags, &mut now);
            }
            if now >= next_scan {
                self.scan_deadlines(now);
                next_scan = now + DEADLINE_SCAN;
            }
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

    /// Starts the next request on connection `i` if the model allows, else leaves it idle.
    fn next_request(&mut self, i: usize, now: Instant) {
        if !self.model.take() {
            self.conns[i].phase = Phase::Idle;
            return;
        }
        self.stats.sent += 1;
        if self.conns[i].fd.is_some() {
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
            self.stats.connections_opened += 1;
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
                self.stats.connections_opened += 1;
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
                    self.stats.bytes_sent += n as u64;
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
        self.stats.bytes_received += n as u64;
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
                    self.stats
                        .connection_errors
                        .record(ErrorKind::Protocol, || {
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
            self.stats.bytes_received += n as u64;
            if n > 0 {
                self.stats
                    .connection_errors
                    .record(ErrorKind::Protocol, || {
                        format!("{n} bytes arrived on an idle connection")
                    });
            }
        }
        self.close(i);
    }

    fn complete(&mut self, i: usize, response: Response, reuse: bool, now: Instant) {
        let conn = &mut self.conns[i];
        let latency_us = now.saturating_duration_since(conn.sent_at).as_micros() as u64;
        // A response that arrives before the request is fully written ends the connection.
        let reuse = reuse && self.config.keep_alive && conn.phase == Phase::Reading;
        self.stats.record_response(response.status, latency_us);
        if !reuse {
            self.close(i);
        }
        self.next_request(i, now);
    }

    /// The request on connection `i` failed: count it, drop the connection, go on.
    fn fail(&mut self, i: usize, kind: ErrorKind, now: Instant, message: impl FnOnce() -> String) {
        self.stats.record_error(kind, message);
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
