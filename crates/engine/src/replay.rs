//! Replays (`--replay`): each request's due time comes from a recording instead of a rate.
//!
//! Request `i` of the run sends entry `i mod N` of the recording (the sequential order), so
//! its due time is that entry's recorded offset from the first, divided by the speed; with
//! laps (`--replay-loop`) lap `k` starts `k` periods later. As with a rate, every due time is
//! computed from its index (no drift), request `i` goes to worker `i mod W` wherever it runs
//! (fleets split a recording exactly), and a request that finds no free connection waits in
//! order with its latency counted from its due time.

/// A recording's due times.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// Each entry's offset from the first, ns, in time order (the first is 0); empty when the
    /// recording is read as the run goes (`feed.rs`: its blocks carry the times).
    times_ns: Vec<u64>,
    /// Entries in the recording.
    len: u64,
    /// From its first entry to its last, ns (recorded time).
    span_ns: u64,
    /// How far apart laps start, ns (recorded time): the recording's span and one mean gap,
    /// so a lap's first request does not land on the last one's (1 s for a single entry).
    period_ns: u64,
    /// Recorded time over replayed time (2.0: twice as fast).
    speed: f64,
    /// The recording repeats until `-n` or `-d` ends the run.
    laps: bool,
}

/// How far apart laps start, ns: the span and one mean gap (1 s for a single entry or none).
fn period(len: u64, span_ns: u64) -> u64 {
    if len > 1 && span_ns > 0 {
        span_ns + span_ns / (len - 1)
    } else {
        1_000_000_000
    }
}

/// The fastest and slowest speeds taken.
pub const SPEED_RANGE: std::ops::RangeInclusive<f64> = 0.001..=1000.0;

impl Replay {
    /// Due times from recorded offsets (ns from the first entry, in time order), played at
    /// `speed`, once or in laps.
    pub fn new(times_ns: Vec<u64>, speed: f64, laps: bool) -> Result<Replay, String> {
        if times_ns.is_empty() {
            return Err("the recording has no request".into());
        }
        if let Some(k) = times_ns.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!(
                "request {} is recorded before the one ahead of it",
                k + 2
            ));
        }
        let span = times_ns[times_ns.len() - 1] - times_ns[0];
        let mut replay = Replay::streamed(times_ns.len() as u64, span, speed, laps)?;
        let first = times_ns[0];
        replay.times_ns = times_ns.into_iter().map(|t| t - first).collect();
        Ok(replay)
    }

    /// A recording of `len` entries over `span_ns` (ns from its first to its last) whose
    /// times come with its entries, as it is read (`feed.rs`): played at `speed`, once or in
    /// laps.
    pub fn streamed(len: u64, span_ns: u64, speed: f64, laps: bool) -> Result<Replay, String> {
        if !SPEED_RANGE.contains(&speed) {
            return Err(format!(
                "a replay speed of {speed} is outside {}..={}",
                SPEED_RANGE.start(),
                SPEED_RANGE.end()
            ));
        }
        Ok(Replay {
            times_ns: Vec::new(),
            len,
            span_ns,
            period_ns: period(len, span_ns),
            speed,
            laps,
        })
    }

    /// Entries in the recording.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Never true: a replay has at least one entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its times come with its entries, as it is read (`feed.rs`).
    pub fn is_streamed(&self) -> bool {
        self.times_ns.is_empty()
    }

    /// The recording repeats.
    pub fn laps(&self) -> bool {
        self.laps
    }

    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// The mean rate the replay sends at, requests/s (the run's nominal rate).
    pub fn mean_rate(&self) -> f64 {
        self.len() as f64 / (self.period_ns as f64 / 1e9) * self.speed
    }

    /// How long one pass of the recording takes at this speed, ns (to its last request).
    pub fn span_ns(&self) -> u64 {
        (self.span_ns as f64 / self.speed).round() as u64
    }

    /// When global request `index` is due, ns after the start (`u64::MAX`: never, past the
    /// recording's end without laps). Not for a streamed recording (see [`Replay::due_of`]).
    #[inline]
    pub fn due_ns(&self, index: u64) -> u64 {
        let k = (index % self.len.max(1)) as usize;
        self.due_of(index, self.times_ns[k])
    }

    /// When global request `index` is due, ns after the start, its entry recorded
    /// `recorded_ns` after the recording's first (`u64::MAX`: never).
    #[inline]
    pub fn due_of(&self, index: u64, recorded_ns: u64) -> u64 {
        let lap = index / self.len.max(1);
        if lap > 0 && !self.laps {
            return u64::MAX;
        }
        let recorded = lap as f64 * self.period_ns as f64 + recorded_ns as f64;
        // `as` saturates: past u64::MAX ns is never.
        (recorded / self.speed).round() as u64
    }

    /// How many global requests are due at `elapsed_ns`: the first index due later (due
    /// times never decrease with the index, so a binary search finds it).
    pub fn due_count(&self, elapsed_ns: u64) -> u64 {
        let n = self.len() as u64;
        let (mut lo, mut hi) = (0u64, n);
        if self.laps {
            // A bound: the lap after the one `elapsed_ns` falls in.
            let laps = (elapsed_ns as f64 * self.speed / self.period_ns as f64) as u64 + 2;
            hi = laps.saturating_mul(n);
        }
        // Invariant: due_ns(lo - 1) <= elapsed (or lo == 0), due_ns(hi) > elapsed (or hi is
        // the end of a single pass).
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.due_ns(mid) <= elapsed_ns {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn due_times_are_the_recorded_offsets_at_the_speed() {
        let r = Replay::new(vec![5 * MS, 5 * MS, 25 * MS, 105 * MS], 1.0, false).unwrap();
        let due: Vec<u64> = (0..5).map(|i| r.due_ns(i)).collect();
        assert_eq!(due, [0, 0, 20 * MS, 100 * MS, u64::MAX]);
        let fast = Replay::new(vec![0, 20 * MS, 100 * MS], 2.0, false).unwrap();
        assert_eq!(fast.due_ns(2), 50 * MS);
        assert_eq!(fast.span_ns(), 50 * MS);
        let slow = Replay::new(vec![0, 20 * MS, 100 * MS], 0.5, false).unwrap();
        assert_eq!(slow.due_ns(1), 40 * MS);
    }

    #[test]
    fn laps_start_a_period_apart() {
        // Span 100 ms over 4 entries: one mean gap is 33.3 ms, the period 133.3 ms.
        let r = Replay::new(vec![0, 10 * MS, 50 * MS, 100 * MS], 1.0, true).unwrap();
        assert_eq!(r.due_ns(4), 133_333_333);
        assert_eq!(r.due_ns(7), 233_333_333);
        assert!((r.mean_rate() - 30.0).abs() < 1e-6, "{}", r.mean_rate());
        let one = Replay::new(vec![7], 1.0, true).unwrap();
        assert_eq!((one.due_ns(0), one.due_ns(3)), (0, 3_000_000_000));
    }

    #[test]
    fn due_counts_agree_with_due_times() {
        for laps in [false, true] {
            for speed in [0.5, 1.0, 3.0] {
                let times = vec![0, 0, 3 * MS, 4 * MS, 4 * MS, 9 * MS, 20 * MS];
                let r = Replay::new(times, speed, laps).unwrap();
                for e in (0..200 * MS).step_by(250_000) {
                    let c = r.due_count(e);
                    assert!(c == 0 || r.due_ns(c - 1) <= e, "{laps} {speed} {e}");
                    assert!(r.due_ns(c) > e, "{laps} {speed} {e}: {c}");
                    if !laps {
                        assert!(c <= 7);
                    }
                }
            }
        }
    }

    #[test]
    fn bad_recordings_are_refused() {
        assert!(Replay::new(vec![], 1.0, false).is_err());
        assert!(Replay::new(vec![0], 0.0, false).is_err());
        assert!(Replay::new(vec![0], f64::NAN, false).is_err());
        let back = Replay::new(vec![0, 5, 3], 1.0, false).unwrap_err();
        assert_eq!(back, "request 3 is recorded before the one ahead of it");
    }
}
