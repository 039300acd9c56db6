//! A worker's books: what it records per request, split into warm-up and measured figures,
//! and the per-second interval it hands to the main thread once a second.
//!
//! Backend-neutral: every backend records through a `Ledger`, so the accounting (the invariant
//! `sent == completed + errors + in_flight`, per phase) is written once.

use pelt_stats::{
    Detail, ErrorCounts, ErrorKind, Interval, LatencyHistogram, Sample, StatusCounts,
    StreamFigures, TargetCounts, TargetStats, WorkerStats, SAMPLED_RESPONSE_MAX,
};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// A worker's interval for one second, tagged with the worker and whether it is its last.
#[derive(Debug)]
pub(crate) struct Published {
    pub worker: usize,
    pub interval: Interval,
    pub last: bool,
}

pub(crate) struct Ledger {
    /// Requests started after the warm-up.
    pub main: WorkerStats,
    /// Requests started during the warm-up.
    pub warm: WorkerStats,
    open: bool,
    start: Instant,
    warmup_end: Instant,
    /// The phase the worker's clock is in, for counts that belong to no request (bytes).
    in_warmup: bool,
    interval: Interval,
    next_tick: Instant,
    worker: usize,
    tx: Sender<Published>,
    /// Per-target figures: each entry's name (index into `main.targets`); empty: none kept.
    name_of: Vec<u32>,
    /// A streamed replay: a request's target is its name number (see [`Ledger::by_name`]).
    by_name: bool,
    /// A script's steps: as `by_name`, the names known only as they come (see
    /// [`Ledger::by_step`]).
    by_step: bool,
    /// Connections open (or opening) now: set by the worker before each tick, stamped on the
    /// intervals it hands over.
    pub connections: u64,
    /// Sample every this many measured requests that end (0: none).
    sample_every: u64,
    /// The response being booked, for its sample (`keep_response`); empty otherwise.
    response: Vec<u8>,
    /// Requests to end before the next sample.
    sample_in: u64,
    /// The totals at the last hand-over, for each second's [`Detail`].
    handed: Totals,
}

/// A worker's totals (warm-up and measured together) at a hand-over: each second's
/// [`Detail`] is the difference from the one before, so the per-request path counts nothing
/// twice.
#[derive(Default)]
struct Totals {
    codes: StatusCounts,
    errors: ErrorCounts,
    error_codes: pelt_stats::ErrorCodes,
    bytes_sent: u64,
    bytes_received: u64,
    late: u64,
    lag: Option<LatencyHistogram>,
    targets: Vec<TargetCounts>,
    websocket: Option<pelt_stats::WsPoint>,
    grpc: Option<pelt_stats::GrpcStats>,
    quic: Option<pelt_stats::QuicStats>,
}

impl Totals {
    fn of(main: &WorkerStats, warm: &WorkerStats, open: bool) -> Totals {
        let mut codes = main.status.clone();
        codes.merge(&warm.status);
        let mut errors = main.errors.clone();
        errors.merge(&warm.errors);
        let mut error_codes = main.error_codes.clone();
        error_codes.merge(&warm.error_codes);
        let ws = |w: &Option<Box<pelt_stats::WsStats>>| w.as_deref().map(pelt_stats::WsPoint::of);
        let lag = open.then(|| {
            let mut lag = main.lag.clone();
            lag.merge(&warm.lag);
            lag
        });
        Totals {
            codes,
            errors,
            error_codes,
            bytes_sent: main.bytes_sent + warm.bytes_sent,
            bytes_received: main.bytes_received + warm.bytes_received,
            late: main.late + warm.late,
            lag,
            targets: main
                .targets
                .iter()
                .map(|t| {
                    let completed: u64 = t.status.iter().map(|s| s.1).sum();
                    TargetCounts {
                        sent: t.sent,
                        completed,
                        errors: t.errors.iter().sum(),
                    }
                })
                .collect(),
            websocket: pelt_stats::WsPoint::join(
                [ws(&main.websocket), ws(&warm.websocket)]
                    .iter()
                    .map(Option::as_ref),
            ),
            quic: pelt_stats::QuicStats::join(
                [main.quic.as_deref(), warm.quic.as_deref()].into_iter(),
            ),
            grpc: [&main.grpc, &warm.grpc]
                .into_iter()
                .flatten()
                .fold(None, |sum, g| {
                    let mut sum: pelt_stats::GrpcStats = sum.unwrap_or_default();
                    sum.merge(g);
                    Some(sum)
                }),
        }
    }

    /// What `now` added to `self`.
    fn since(&self, now: &Totals) -> Detail {
        Detail {
            codes: now
                .codes
                .iter()
                .filter_map(|(c, n)| {
                    let d = n - self.codes.count(c);
                    (d > 0).then_some((c, d))
                })
                .collect(),
            errors: now
                .errors
                .iter()
                .filter_map(|(k, n, _)| {
                    let d = n - self.errors.count(k);
                    (d > 0).then(|| (k.name().to_string(), d))
                })
                .collect(),
            error_codes: now.error_codes.since(&self.error_codes),
            bytes_sent: now.bytes_sent - self.bytes_sent,
            bytes_received: now.bytes_received - self.bytes_received,
            late: now.late - self.late,
            lag: now.lag.as_ref().map(|l| {
                let mut d = l.clone();
                if let Some(before) = &self.lag {
                    d.subtract(before);
                }
                d
            }),
            targets: now
                .targets
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let b = self.targets.get(i).copied().unwrap_or_default();
                    TargetCounts {
                        sent: t.sent - b.sent,
                        completed: t.completed - b.completed,
                        errors: t.errors - b.errors,
                    }
                })
                .collect(),
            grpc: now.grpc.as_ref().map_or_else(Default::default, |g| {
                g.iter()
                    .filter_map(|(c, n)| {
                        let d = n - self.grpc.as_ref().map_or(0, |b| b.count(c));
                        (d > 0).then(|| (pelt_codec::grpc::code_name(c).into_owned(), d))
                    })
                    .collect()
            }),
        }
    }
}

/// When a complete response's request was due (open loop: its place in the schedule; closed
/// loop: when it started), when its first byte was handed to the socket, when the first byte
/// of its response arrived, and when the response was complete.
#[derive(Debug, Clone, Copy)]
pub struct Times {
    pub due: Instant,
    pub sent: Instant,
    pub first: Instant,
    pub done: Instant,
}

#[inline]
fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

impl Ledger {
    pub fn new(
        worker: usize,
        open: bool,
        start: Instant,
        warmup: Duration,
        tx: Sender<Published>,
        targets: Option<&crate::RequestSet>,
    ) -> Ledger {
        let mut main = WorkerStats::new();
        let name_of = match targets.filter(|s| !s.names().is_empty()) {
            Some(set) => {
                main.targets = vec![TargetStats::default(); set.names().len()];
                set.name_of().to_vec()
            }
            None => Vec::new(),
        };
        Ledger {
            connections: 0,
            sample_every: 0,
            response: Vec::new(),
            sample_in: 0,
            name_of,
            by_name: false,
            by_step: false,
            main,
            warm: WorkerStats::new(),
            open,
            start,
            warmup_end: start + warmup,
            in_warmup: !warmup.is_zero(),
            interval: Interval::new(0),
            next_tick: start + Duration::from_secs(1),
            worker,
            tx,
            handed: Totals::default(),
        }
    }

    /// The run's time starts at `start` instead (see `Clock`): nothing was booked yet.
    pub fn restart(&mut self, start: Instant) {
        let warmup = self.warmup_end.saturating_duration_since(self.start);
        self.start = start;
        self.warmup_end = start + warmup;
        self.next_tick = start + Duration::from_secs(1);
    }

    /// Keeps every `n`th measured request that ends (with its index, status or error, and
    /// latency) in the second it ended in; 0: none.
    pub fn sample_every(&mut self, n: u64) {
        self.sample_every = n;
        self.sample_in = n;
    }

    /// Whether the request that just ended is one to sample.
    #[inline]
    fn sampling(&mut self, warm: bool) -> bool {
        if self.sample_every == 0 || warm {
            return false;
        }
        self.sample_in -= 1;
        if self.sample_in > 0 {
            return false;
        }
        self.sample_in = self.sample_every;
        true
    }

    /// A request starting at `now` belongs to the warm-up.
    #[inline]
    pub fn is_warm(&self, now: Instant) -> bool {
        now < self.warmup_end
    }

    #[inline]
    fn stats(&mut self, warm: bool) -> &mut WorkerStats {
        if warm {
            &mut self.warm
        } else {
            &mut self.main
        }
    }

    /// The figures of the phase the clock is in (for bytes and connections).
    #[inline]
    pub fn current(&mut self) -> &mut WorkerStats {
        let warm = self.in_warmup;
        self.stats(warm)
    }

    /// A streamed replay's requests carry their name number as their target, of `names`
    /// names (0: none kept).
    pub fn by_name(&mut self, names: usize) {
        if names > 0 {
            self.main.targets = vec![TargetStats::default(); names];
            self.by_name = true;
        }
    }

    /// A script's requests carry their step's index as their target (`hooks::UNNAMED`: no
    /// step), its figures made when its first request comes.
    pub fn by_step(&mut self) {
        self.by_name = true;
        self.by_step = true;
    }

    /// The figures of `target`'s name, for a measured request (`None`: not kept).
    #[inline]
    fn target(&mut self, warm: bool, target: u32) -> Option<&mut TargetStats> {
        if warm || (self.name_of.is_empty() && !self.by_name) {
            return None;
        }
        let name = match self.by_name {
            true => target as usize,
            false => self.name_of[target as usize] as usize,
        };
        let targets = &mut self.main.targets;
        if self.by_step && name >= targets.len() && target != crate::hooks::UNNAMED {
            targets.resize(name + 1, TargetStats::default());
        }
        targets.get_mut(name)
    }

    /// A request for entry `target` started at `now`, due at `due`.
    #[inline]
    pub fn started(&mut self, warm: bool, target: u32, due: Instant, now: Instant) {
        if let Some(t) = self.target(warm, target) {
            t.sent += 1;
        }
        let open = self.open;
        let s = self.stats(warm);
        s.sent += 1;
        if open {
            s.record_lag(micros(due, now));
        }
        self.interval.sent += 1;
    }

    /// A complete response to request `seq`, at the times `at` says. A response is never
    /// earlier than its request's send: the kernel's arrival stamps, read on the wall clock,
    /// can come out a few microseconds before it (the wall clock slews against the monotonic
    /// one between two readings), and would then put the latency below the lag.
    #[inline]
    pub fn response(&mut self, warm: bool, target: u32, seq: u64, status: u16, at: Times) {
        let (first, done) = (at.first.max(at.sent), at.done.max(at.sent));
        let service = micros(at.sent, done);
        let (latency, ttfb) = if self.open {
            (micros(at.due, done), micros(at.due, first))
        } else {
            (service, micros(at.sent, first))
        };
        if let Some(t) = self.target(warm, target) {
            t.record_response(status, latency, ttfb);
        }
        let open = self.open;
        let s = self.stats(warm);
        s.record_response(status, latency, ttfb);
        if open {
            s.service.record(service);
        }
        self.interval.record_response(status, latency, ttfb);
        if self.sampling(warm) {
            let response = (!self.response.is_empty()).then(|| self.response.as_slice().into());
            self.interval.sample(Sample {
                index: seq,
                target,
                status,
                error: None,
                latency_us: latency,
                response,
            });
        }
        if !self.response.is_empty() {
            self.response.clear();
        }
    }

    /// A gRPC call (booked as a response just before) ended with status `code` after
    /// `messages` response messages; `message`, its `grpc-message`, is asked for only for the
    /// first call of a code.
    #[inline]
    pub fn grpc_call(
        &mut self,
        warm: bool,
        code: u32,
        messages: u64,
        message: impl FnOnce() -> Option<String>,
    ) {
        let g = self.stats(warm).grpc();
        g.messages_received += messages;
        g.record(code, message);
    }

    /// WebSocket: the figures of the phase the clock is in (upgrades, messages received,
    /// pings, closes).
    #[inline]
    pub fn websocket(&mut self) -> &mut pelt_stats::WsStats {
        self.current().websocket()
    }

    /// WebSocket: an upgrade written at `began` was accepted at `at`.
    pub fn upgraded(&mut self, began: Instant, at: Instant) {
        let w = self.websocket();
        w.upgrades += 1;
        w.upgrade.record(micros(began, at));
    }

    /// Where a request's latency starts: its due time in open loop, its send in closed loop.
    #[inline]
    pub fn origin(&self, due: Instant, sent: Instant) -> Instant {
        if self.open {
            due
        } else {
            sent
        }
    }

    /// A stream's first event, `ttft_us` after its latency's start.
    #[inline]
    pub fn stream_first(&mut self, warm: bool, ttft_us: u64) {
        self.stats(warm).streams().first_event(ttft_us);
        let second = self.interval.streams();
        second.events += 1;
        second.ttft.record(ttft_us);
    }

    /// A stream's later event, `gap_us` after the one before it.
    #[inline]
    pub fn stream_gap(&mut self, warm: bool, gap_us: u64) {
        self.stats(warm).streams().next_event(gap_us);
        let second = self.interval.streams();
        second.events += 1;
        second.gap.record(gap_us);
    }

    /// A stream ended (its response is booked apart, as any other).
    pub fn stream_end(&mut self, warm: bool, figures: &StreamFigures) {
        self.stats(warm).streams().end(figures);
        self.interval.streams().end(figures);
    }

    /// The bytes of the response about to be booked (`Config::sample_responses`): a sampled
    /// one keeps them (at most `SAMPLED_RESPONSE_MAX`).
    pub fn keep_response(&mut self, bytes: &[u8]) {
        let room = SAMPLED_RESPONSE_MAX.saturating_sub(self.response.len());
        self.response
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// A request's error (counted by [`Ledger::error`]) came with the protocol's `code`.
    #[inline]
    pub fn error_code(&mut self, warm: bool, kind: ErrorKind, code: &str) {
        self.stats(warm).error_codes.record(kind, code, 1);
    }

    /// Request `seq` ended in an error.
    #[inline]
    pub fn error(
        &mut self,
        warm: bool,
        target: u32,
        seq: u64,
        kind: ErrorKind,
        message: impl FnOnce() -> String,
    ) {
        if let Some(t) = self.target(warm, target) {
            t.record_error(kind);
        }
        self.stats(warm).record_error(kind, message);
        self.interval.errors += 1;
        if self.sampling(warm) {
            self.interval.sample(Sample {
                index: seq,
                target,
                status: 0,
                error: Some(kind),
                latency_us: 0,
                response: None,
            });
        }
    }

    /// A request still unresolved when the run stopped.
    pub fn in_flight(&mut self, warm: bool, target: u32) {
        if let Some(t) = self.target(warm, target) {
            t.in_flight += 1;
        }
        self.stats(warm).in_flight += 1;
    }

    /// A problem of a connection that no request owns.
    pub fn connection_error(&mut self, kind: ErrorKind, message: impl FnOnce() -> String) {
        self.current().connection_errors.record(kind, message);
    }

    /// When the worker must next call [`tick`](Self::tick).
    #[inline]
    pub fn next_tick(&self) -> Instant {
        if self.in_warmup {
            self.next_tick.min(self.warmup_end)
        } else {
            self.next_tick
        }
    }

    /// Hands over every second that has ended by `now`, and moves past the warm-up.
    pub fn tick(&mut self, now: Instant) {
        if self.in_warmup && now >= self.warmup_end {
            self.in_warmup = false;
        }
        while now >= self.next_tick {
            let index = self.interval.index + 1;
            self.publish(Interval::new(index), false);
            self.next_tick += Duration::from_secs(1);
        }
    }

    /// Hands over the last, partial second; `in_flight` per phase are set by the backend.
    pub fn finish(&mut self) {
        let index = self.interval.index;
        self.publish(Interval::new(index), true);
    }

    fn publish(&mut self, next: Interval, last: bool) {
        let mut interval = std::mem::replace(&mut self.interval, next);
        interval.connections = self.connections;
        // Once a second, off the per-request path: what the second added to the totals.
        let now = Totals::of(&self.main, &self.warm, self.open);
        interval.detail = self.handed.since(&now);
        interval.websocket = now
            .websocket
            .map(|w| self.handed.websocket.unwrap_or_default().since(&w));
        interval.quic = now
            .quic
            .map(|q| q.since(&self.handed.quic.unwrap_or_default()));
        self.handed = now;
        // The receiver outlives the workers; if it is gone, nobody is listening.
        let _ = self.tx.send(Published {
            worker: self.worker,
            interval,
            last,
        });
    }

    /// Nanoseconds from the start to `now`.
    #[inline]
    pub fn elapsed_ns(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.start).as_nanos() as u64
    }

    /// The instant `ns` after the start.
    #[inline]
    pub fn at_ns(&self, ns: u64) -> Instant {
        self.start + Duration::from_nanos(ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(due: Instant, sent: Instant, first: Instant, done: Instant) -> Times {
        Times {
            due,
            sent,
            first,
            done,
        }
    }

    #[test]
    fn requests_are_booked_to_the_phase_they_started_in() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t0 = Instant::now();
        let mut l = Ledger::new(0, true, t0, Duration::from_secs(1), tx, None);
        assert!(l.is_warm(t0));
        l.started(true, 0, t0, t0 + Duration::from_micros(1500));
        l.started(false, 0, t0, t0);
        // A warm request that completes after the warm-up stays a warm-up request.
        l.tick(t0 + Duration::from_millis(1200));
        let (first, done) = (
            t0 + Duration::from_millis(700),
            t0 + Duration::from_millis(1200),
        );
        l.response(true, 0, 0, 200, times(t0, t0, first, done));
        l.error(false, 0, 1, ErrorKind::Timeout, || "t".into());
        assert_eq!((l.warm.sent, l.warm.completed(), l.warm.late), (1, 1, 1));
        assert_eq!((l.main.sent, l.main.errors.total()), (1, 1));
        // Open loop: latency from the due time, service time from the start.
        let max = l.warm.latency.summary().max_us;
        assert!((1_199_000..=1_201_000).contains(&max), "{max}");
        // Time to first byte from the same start.
        let ttfb = l.warm.ttfb.summary().max_us;
        assert!((699_000..=701_000).contains(&ttfb), "{ttfb}");
        l.current().bytes_sent += 5;
        assert_eq!(l.main.bytes_sent, 5);
        l.finish();
        let first = rx.recv().unwrap();
        assert_eq!(
            (first.interval.index, first.interval.sent, first.last),
            (0, 2, false)
        );
        let last = rx.recv().unwrap();
        assert_eq!(
            (
                last.interval.index,
                last.interval.completed,
                last.interval.errors,
                last.last
            ),
            (1, 1, 1, true)
        );
    }

    #[test]
    fn every_nth_measured_request_is_sampled_into_its_second() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t0 = Instant::now();
        let mut l = Ledger::new(0, false, t0, Duration::ZERO, tx, None);
        l.sample_every(3);
        let ms = |n| t0 + Duration::from_millis(n);
        for seq in 0..10u64 {
            if seq == 4 {
                l.error(false, 2, seq, ErrorKind::Reset, || "r".into());
            } else {
                l.response(false, 1, seq, 200, times(t0, t0, ms(seq), ms(seq + 1)));
            }
        }
        // Warm-up requests are never sampled and do not count towards the next.
        l.response(true, 0, 99, 200, times(t0, t0, ms(1), ms(1)));
        l.finish();
        let iv = rx.recv().unwrap().interval;
        let got: Vec<_> = iv
            .samples
            .iter()
            .map(|s| (s.index, s.target, s.status, s.error, s.latency_us))
            .collect();
        assert_eq!(
            got,
            [
                (2, 1, 200, None, 3000),
                (5, 1, 200, None, 6000),
                (8, 1, 200, None, 9000)
            ]
        );
        // An error is sampled as one: every request is, past the per-second limit dropped.
        let (tx, rx) = std::sync::mpsc::channel();
        let mut l = Ledger::new(0, false, t0, Duration::ZERO, tx, None);
        l.sample_every(1);
        let n = pelt_stats::SAMPLES_PER_SECOND as u64 + 5;
        for seq in 0..n {
            l.error(false, 0, seq, ErrorKind::Reset, || "r".into());
        }
        l.finish();
        let iv = rx.recv().unwrap().interval;
        assert_eq!(iv.samples.len(), pelt_stats::SAMPLES_PER_SECOND);
        assert_eq!(iv.samples_dropped, 5);
        assert_eq!(iv.samples[0].error, Some(ErrorKind::Reset));
    }
}
