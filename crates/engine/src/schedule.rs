//! Open-loop schedules: when each request is due, in nanoseconds since the run started.
//!
//! The rate is global. With `T` workers, worker `w` owns the requests whose global index `i`
//! has `i % T == w`, so request `i` is due at `i / rate` whichever worker sends it: no worker's
//! share is rounded (a rate of 0.5/s over 4 workers still sends one request every 2 s), there
//! is no drift (every due time is computed from its index, never by adding intervals), and no
//! catch-up burst is built into the schedule. Requests that are due while every connection is
//! busy wait in order; their latency counts from their due time.

/// Rates are held in requests per 1000 s, so 0.5/s is exact and due times are integers.
const MILLI: u128 = 1000;
const NANOS: u128 = 1_000_000_000;

pub use pelt_stats::Arrival;

use crate::stages::Stages;

/// A global rate: requests per second, held exactly as requests per 1000 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    per_kilosecond: u64,
}

impl Rate {
    /// Smallest rate: one request per 1000 s.
    pub const MIN_PER_S: f64 = 0.001;
    /// Largest rate: a billion requests per second.
    pub const MAX_PER_S: f64 = 1e9;

    /// `None` unless `per_s` is finite and within [`MIN_PER_S`](Self::MIN_PER_S) ..=
    /// [`MAX_PER_S`](Self::MAX_PER_S).
    pub fn per_second(per_s: f64) -> Option<Rate> {
        if !(Self::MIN_PER_S..=Self::MAX_PER_S).contains(&per_s) {
            return None;
        }
        let per_kilosecond = (per_s * 1000.0).round() as u64;
        (per_kilosecond > 0).then_some(Rate { per_kilosecond })
    }

    pub fn as_f64(self) -> f64 {
        self.per_kilosecond as f64 / 1000.0
    }

    /// When global request `index` is due, ns after the start.
    pub fn due_ns(self, index: u64) -> u64 {
        let ns = index as u128 * NANOS * MILLI / self.per_kilosecond as u128;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// How many global requests are due at `elapsed_ns` (request 0 is due at 0).
    pub fn due_count(self, elapsed_ns: u64) -> u64 {
        // Request i is due iff floor(i * 1e12 / r) <= e, i.e. i * 1e12 < (e + 1) * r.
        let scaled = (elapsed_ns as u128 + 1) * self.per_kilosecond as u128;
        let count = scaled.div_ceil(NANOS * MILLI);
        u64::try_from(count).unwrap_or(u64::MAX)
    }
}

/// How the global rate moves: constant (`--rate`), or along stages (`--stages`).
#[derive(Debug)]
pub enum Pace {
    Constant(Rate),
    Staged(Stages),
    /// `--replay`: the recording's times.
    Replay(std::sync::Arc<crate::Replay>),
    /// `--replay` of a recording read as the run goes: its times come with its entries, to
    /// this worker (the cursor also holds the entry taken last).
    Fed(Box<crate::feed::Cursor>),
}

impl Pace {
    /// When global request `index` is due, ns after the start (`u64::MAX`: never).
    #[inline]
    pub fn due_ns(&self, index: u64) -> u64 {
        match self {
            Pace::Constant(rate) => rate.due_ns(index),
            Pace::Staged(s) => seconds_to_ns(s.time_of(index as f64)),
            Pace::Replay(r) => r.due_ns(index),
            // Read from the cursor as it moves (`Schedule::take`), never from here.
            Pace::Fed(_) => u64::MAX,
        }
    }

    /// How many global requests are due at `elapsed_ns` (a streamed recording: unknown, 0;
    /// its backlog is counted as Poisson arrivals' is).
    pub fn due_count(&self, elapsed_ns: u64) -> u64 {
        match self {
            Pace::Constant(rate) => rate.due_count(elapsed_ns),
            Pace::Replay(r) => r.due_count(elapsed_ns),
            Pace::Fed(_) => 0,
            Pace::Staged(s) => {
                // The count's floor is right but for rounding; settle it on due_ns itself, so
                // the two agree exactly.
                let guess = s.count_by(elapsed_ns as f64 / 1e9).max(0.0).floor() as u64;
                let mut c = guess.saturating_add(1);
                while c > 0 && self.due_ns(c - 1) > elapsed_ns {
                    c -= 1;
                }
                while self.due_ns(c) <= elapsed_ns {
                    c += 1;
                }
                c
            }
        }
    }

    /// When the count of arrivals reaches `n` (a real number: Poisson arrivals), ns.
    fn at_count_ns(&self, n: f64) -> u64 {
        match self {
            Pace::Constant(rate) => seconds_to_ns(Some(n / rate.as_f64())),
            Pace::Staged(s) => seconds_to_ns(s.time_of(n)),
            // A replay's arrivals are the recording's (prepare refuses Poisson with it).
            Pace::Replay(r) => r.due_ns(n as u64),
            Pace::Fed(_) => u64::MAX,
        }
    }
}

/// Seconds as ns since the start, rounded; `None` (never) and overflow as `u64::MAX`.
fn seconds_to_ns(s: Option<f64>) -> u64 {
    match s {
        // `as` saturates: anything past u64::MAX ns (584 years) is never.
        Some(s) => (s * 1e9).round() as u64,
        None => u64::MAX,
    }
}

/// One worker's part of a global schedule.
#[derive(Debug)]
pub struct Schedule {
    pace: Pace,
    worker: u64,
    workers: u64,
    arrival: Arrival,
    /// This worker's requests started so far.
    started: u64,
    /// Due time of the next request, ns.
    next_due_ns: u64,
    /// Poisson: the count of global arrivals at the next request.
    poisson_count: f64,
    rng: fastrand::Rng,
}

impl Schedule {
    /// Worker `worker` of `workers` (0-based) under the global `rate`.
    pub fn new(pace: Pace, arrival: Arrival, worker: usize, workers: usize) -> Schedule {
        let workers = workers.max(1) as u64;
        let worker = worker as u64 % workers;
        let mut s = Schedule {
            pace,
            worker,
            workers,
            arrival,
            started: 0,
            next_due_ns: 0,
            poisson_count: 0.0,
            // A fixed seed per worker: the same flags give the same arrivals.
            rng: fastrand::Rng::with_seed(0x5045_4c54_u64 ^ worker.wrapping_mul(0x9e37_79b9)),
        };
        s.next_due_ns = match arrival {
            Arrival::Constant => s.due_of(worker),
            Arrival::Poisson => s.poisson_next(),
        };
        s
    }

    /// When global request `index` is due (constant arrivals; a streamed recording moves its
    /// cursor there).
    #[inline]
    fn due_of(&mut self, index: u64) -> u64 {
        match &mut self.pace {
            Pace::Fed(cursor) => cursor.due_ns(index),
            pace => pace.due_ns(index),
        }
    }

    /// A streamed recording: the entry taken last (`None`: the times are not streamed).
    #[inline]
    pub fn fed(&self) -> Option<&crate::feed::Cursor> {
        match &self.pace {
            Pace::Fed(cursor) => Some(cursor),
            _ => None,
        }
    }

    /// Follows `pace` from here: the next request's due time is its index's (or its Poisson
    /// count's) under it. A pace that agrees with the old one up to now leaves every request
    /// taken where it was.
    pub fn repace(&mut self, pace: Pace) {
        if matches!(self.pace, Pace::Fed(_)) {
            // A streamed recording's times are its entries' (a control refuses a replay).
            return;
        }
        self.pace = pace;
        self.next_due_ns = match self.arrival {
            Arrival::Constant => self.due_of(self.worker + self.started * self.workers),
            Arrival::Poisson => self.pace.at_count_ns(self.poisson_count),
        };
    }

    /// Takes nothing more: a streamed recording's blocks go back to its reader.
    pub fn close(&mut self) {
        if let Pace::Fed(cursor) = &mut self.pace {
            cursor.close();
        }
    }

    /// How many of this worker's requests are due at `elapsed_ns` (constant arrivals); a pure
    /// function of the elapsed time.
    pub fn due_by(&self, elapsed_ns: u64) -> u64 {
        let global = self.pace.due_count(elapsed_ns);
        if global <= self.worker {
            0
        } else {
            (global - self.worker - 1) / self.workers + 1
        }
    }

    /// Due time of the next request not yet started, ns after the start.
    #[inline]
    pub fn next_due_ns(&self) -> u64 {
        self.next_due_ns
    }

    /// Requests started so far.
    #[cfg(test)]
    pub fn started(&self) -> u64 {
        self.started
    }

    /// Due requests waiting to start at `elapsed_ns`: the FIFO's length.
    pub fn backlog(&self, elapsed_ns: u64) -> u64 {
        match (&self.pace, self.arrival) {
            (Pace::Fed(_), _) | (_, Arrival::Poisson) => u64::from(self.next_due_ns <= elapsed_ns),
            (_, Arrival::Constant) => self.due_by(elapsed_ns).saturating_sub(self.started),
        }
    }

    /// Starts the next request; returns its due time (ns after the start).
    #[inline]
    pub fn take(&mut self) -> u64 {
        let due = self.next_due_ns;
        if let Pace::Fed(cursor) = &mut self.pace {
            cursor.take(self.worker + self.started * self.workers);
        }
        self.started += 1;
        self.next_due_ns = match self.arrival {
            Arrival::Constant => self.due_of(self.worker + self.started * self.workers),
            Arrival::Poisson => self.poisson_next(),
        };
        due
    }

    /// The next Poisson arrival: an exponential gap with mean `workers` in the count of
    /// global arrivals (T such processes merge into one of the global rate), mapped to time
    /// through the pace (a time change, so stages give a Poisson process of varying rate).
    fn poisson_next(&mut self) -> u64 {
        // 1 - u lies in (0, 1], so the logarithm is finite.
        let u = 1.0 - self.rng.f64();
        self.poisson_count += -u.ln() * self.workers as f64;
        self.pace.at_count_ns(self.poisson_count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn rate(r: f64) -> Rate {
        Rate::per_second(r).unwrap()
    }

    /// Runs `workers` schedules to `until_ns` and returns every due time, sorted.
    fn all_due(r: Rate, workers: usize, until_ns: u64) -> Vec<u64> {
        let mut due = vec![];
        for w in 0..workers {
            let mut s = Schedule::new(Pace::Constant(r), Arrival::Constant, w, workers);
            while s.next_due_ns() <= until_ns {
                due.push(s.take());
            }
        }
        due.sort_unstable();
        due
    }

    #[test]
    fn rates_parse_exactly_and_reject_nonsense() {
        assert_eq!(rate(0.5).as_f64(), 0.5);
        assert_eq!(rate(20_000.0).as_f64(), 20_000.0);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-4, 2e9] {
            assert!(Rate::per_second(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn due_times_table() {
        // (rate, index, due ns)
        for (r, i, ns) in [
            (1.0, 0, 0),
            (1.0, 1, S),
            (1.0, 10, 10 * S),
            (0.5, 1, 2 * S),
            (0.5, 3, 6 * S),
            (3.0, 1, 333_333_333),
            (3.0, 3, S),
            (1e9, 7, 7),
            (1e9, 1_000_000_000, S),
            (0.001, 1, 1000 * S),
        ] {
            assert_eq!(rate(r).due_ns(i), ns, "rate {r} index {i}");
        }
    }

    #[test]
    fn due_count_is_the_inverse_of_due_ns() {
        for r in [0.5, 1.0, 3.0, 7.0, 999.0, 20_000.0, 1e9] {
            let r = rate(r);
            for i in [0u64, 1, 2, 5, 100, 12_345] {
                let t = r.due_ns(i);
                assert_eq!(r.due_count(t), i + 1, "{r:?} index {i} at its due time");
                if t > 0 && r.due_ns(i - 1) < t {
                    assert_eq!(r.due_count(t - 1), i, "{r:?} just before index {i}");
                }
            }
        }
    }

    #[test]
    fn workers_split_a_rate_below_their_count_without_rounding_to_zero() {
        // 0.5/s over 4 workers: one request every 2 s, taken in turn.
        let due = all_due(rate(0.5), 4, 20 * S);
        assert_eq!(due, (0..=10).map(|i| i * 2 * S).collect::<Vec<_>>());
        // 3/s over 8 workers for 10 s: 31 requests (0 s .. 10 s inclusive), evenly spaced.
        let due = all_due(rate(3.0), 8, 10 * S);
        assert_eq!(due.len(), 31);
        assert!(due
            .windows(2)
            .all(|w| (333_333_333..=333_333_334).contains(&(w[1] - w[0]))));
    }

    #[test]
    fn huge_rates_have_no_drift() {
        // 1e8/s over 3 workers for 10 ms: exactly 1,000,001 due times, 10 ns apart.
        let due = all_due(rate(1e8), 3, 10_000_000);
        assert_eq!(due.len(), 1_000_001);
        assert!(due.windows(2).all(|w| w[1] - w[0] == 10));
        assert_eq!(*due.last().unwrap(), 10_000_000);
    }

    #[test]
    fn due_by_is_a_pure_function_of_elapsed_and_matches_taking() {
        for (r, workers) in [(0.5, 4), (7.0, 2), (20_000.0, 3), (1e6, 16)] {
            for w in 0..workers {
                let mut s = Schedule::new(Pace::Constant(rate(r)), Arrival::Constant, w, workers);
                for elapsed in [0, 1, 999_999, S, 3 * S + 17, 10 * S] {
                    while s.next_due_ns() <= elapsed {
                        s.take();
                    }
                    assert_eq!(
                        s.due_by(elapsed),
                        s.started(),
                        "rate {r} worker {w} at {elapsed}"
                    );
                    assert_eq!(s.backlog(elapsed), 0);
                }
            }
        }
    }

    #[test]
    fn backlog_counts_due_requests_not_started() {
        let mut s = Schedule::new(Pace::Constant(rate(1000.0)), Arrival::Constant, 0, 1);
        // Nothing started for 10 ms: 11 requests are due (0, 1, ..., 10 ms).
        assert_eq!(s.backlog(10_000_000), 11);
        for _ in 0..4 {
            s.take();
        }
        assert_eq!(s.backlog(10_000_000), 7);
        // They start in order: the oldest first, each keeping its due time.
        assert_eq!(s.take(), 4_000_000);
    }

    fn ramp() -> Stages {
        use crate::stages::{Ramped, Stage};
        let st = |secs, target| Stage {
            duration: std::time::Duration::from_secs(secs),
            target,
        };
        // Up to 1000/s over 10 s, down to 0 over 5 s: 5000 + 2500 requests.
        Stages::new(Ramped::Rate, 0.0, vec![st(10, 1000.0), st(5, 0.0)]).unwrap()
    }

    #[test]
    fn staged_schedules_split_over_workers_and_end_with_the_ramp() {
        let global: Vec<u64> = {
            let mut s = Schedule::new(Pace::Staged(ramp()), Arrival::Constant, 0, 1);
            std::iter::from_fn(|| (s.next_due_ns() != u64::MAX).then(|| s.take())).collect()
        };
        assert_eq!(
            global.len(),
            7500,
            "every request the ramp holds, then none"
        );
        assert_eq!(global[0], 0);
        assert!(global.windows(2).all(|w| w[0] <= w[1]));
        assert!(*global.last().unwrap() < 15 * S);
        // Each second holds what the ramp's mean rate over it says (within one).
        for k in 0..15u64 {
            let n = global.iter().filter(|&&d| d / S == k).count() as f64;
            let want = ramp().mean_over(k as f64, k as f64 + 1.0);
            assert!((n - want).abs() <= 1.0, "second {k}: {n} due, {want} asked");
        }
        for workers in [2, 3, 16] {
            let mut due = vec![];
            for w in 0..workers {
                let mut s = Schedule::new(Pace::Staged(ramp()), Arrival::Constant, w, workers);
                while s.next_due_ns() != u64::MAX {
                    due.push(s.take());
                }
                // due_by agrees with taking, at any time.
                assert_eq!(s.due_by(20 * S), s.started());
            }
            due.sort_unstable();
            assert_eq!(due, global, "{workers} workers send the same schedule");
        }
        let pace = Pace::Staged(ramp());
        for t in [0, 1, S, 3 * S + 17, 12 * S, 15 * S, 100 * S] {
            let n = global.iter().filter(|&&d| d <= t).count() as u64;
            assert_eq!(pace.due_count(t), n, "at {t}");
        }
    }

    #[test]
    fn staged_poisson_follows_the_ramp() {
        let mut per_second = [0u32; 16];
        for w in 0..4 {
            let mut s = Schedule::new(Pace::Staged(ramp()), Arrival::Poisson, w, 4);
            while s.next_due_ns() != u64::MAX {
                per_second[(s.take() / S) as usize] += 1;
            }
        }
        let total: u32 = per_second.iter().sum();
        // 7500 expected; a Poisson count's sd is ~87.
        assert!((7000..=8000).contains(&total), "{total}");
        // Busier at the peak than at the start or the end.
        assert!(per_second[9] > 3 * per_second[0].max(1), "{per_second:?}");
        assert!(per_second[9] > 3 * per_second[14].max(1), "{per_second:?}");
        assert_eq!(per_second[15], 0);
    }

    #[test]
    fn poisson_keeps_the_mean_rate() {
        let r = rate(1000.0);
        let mut total = 0;
        for w in 0..4 {
            let mut s = Schedule::new(Pace::Constant(r), Arrival::Poisson, w, 4);
            let mut last = 0;
            let mut gaps_equal = true;
            let mut prev_gap = None;
            while s.next_due_ns() <= 100 * S {
                let due = s.take();
                assert!(due >= last, "due times never go back");
                let gap = due - last;
                gaps_equal &= prev_gap.is_none_or(|g| g == gap);
                prev_gap = Some(gap);
                last = due;
                total += 1;
            }
            assert!(!gaps_equal, "poisson gaps vary");
        }
        // 100 s at 1000/s: 100,000 expected; a Poisson count's sd is ~316.
        assert!((98_000..=102_000).contains(&total), "{total}");
    }
}
