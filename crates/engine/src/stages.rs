//! Stages (`--stages 30s:1k,1m:10k,30s:0`): a value that moves linearly from one stage's
//! target to the next over each stage's duration, as k6's stages do. With `--rate` the value
//! is the arrival rate, without it the number of active connections.
//!
//! Everything here is a pure function of the time since the start (seconds, `f64`), so the
//! schedule is tested without a clock. For rates, [`Stages::count_by`] is the number of
//! arrivals due by a time (the integral of the rate) and [`Stages::time_of`] its inverse:
//! request `i` is due when the count passes `i`, so the schedule keeps the open loop's
//! properties (every due time computed from its index, no drift, no catch-up burst).

use std::time::Duration;

/// What the stages move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ramped {
    /// Requests per second (open loop).
    Rate,
    /// Active connections (closed loop).
    Connections,
}

impl Ramped {
    pub fn name(self) -> &'static str {
        match self {
            Ramped::Rate => "rate",
            Ramped::Connections => "connections",
        }
    }
}

/// One stage: over `duration`, move linearly from the previous stage's target (or the start)
/// to `target`. A stage of zero length jumps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: f64,
}

/// A validated list of stages, with each stage's start time and the count reached there.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages {
    of: Ramped,
    start: f64,
    stages: Vec<Stage>,
    /// Per stage: when it starts, seconds since the run started.
    starts: Vec<f64>,
    /// Per stage: the count (integral of the value) at its start.
    counts: Vec<f64>,
    /// When the last stage ends, and the count there.
    end: f64,
    end_count: f64,
}

/// The most connections a stage may ask for.
pub const MAX_STAGE_CONNECTIONS: f64 = 1_000_000.0;

impl Stages {
    /// Stages of `of` starting from `start`. Rates are 0 or within
    /// [`Rate::MIN_PER_S`](crate::Rate::MIN_PER_S) ..= [`Rate::MAX_PER_S`](crate::Rate::MAX_PER_S);
    /// connections are whole numbers up to [`MAX_STAGE_CONNECTIONS`]. The error is one line.
    pub fn new(of: Ramped, start: f64, stages: Vec<Stage>) -> Result<Stages, String> {
        if stages.is_empty() {
            return Err("no stages given (expected DURATION:TARGET,... like 30s:1k,1m:10k)".into());
        }
        let check = |v: f64, what: &str| -> Result<(), String> {
            let ok = match of {
                Ramped::Rate => {
                    v == 0.0 || (crate::Rate::MIN_PER_S..=crate::Rate::MAX_PER_S).contains(&v)
                }
                Ramped::Connections => {
                    v.fract() == 0.0 && (0.0..=MAX_STAGE_CONNECTIONS).contains(&v)
                }
            };
            if ok {
                return Ok(());
            }
            Err(match of {
                Ramped::Rate => format!(
                    "{what} {v} is out of range (0, or {} to {} requests per second)",
                    crate::Rate::MIN_PER_S,
                    crate::Rate::MAX_PER_S
                ),
                Ramped::Connections => format!(
                    "{what} {v} is not a number of connections (a whole number from 0 to {})",
                    MAX_STAGE_CONNECTIONS as u64
                ),
            })
        };
        check(start, "the start")?;
        for (k, s) in stages.iter().enumerate() {
            check(s.target, &format!("stage {}'s target", k + 1))?;
        }
        let mut s = Stages {
            of,
            start,
            stages,
            starts: Vec::new(),
            counts: Vec::new(),
            end: 0.0,
            end_count: 0.0,
        };
        let (mut t, mut count, mut from) = (0.0, 0.0, start);
        for st in &s.stages {
            s.starts.push(t);
            s.counts.push(count);
            let d = st.duration.as_secs_f64();
            count += (from + st.target) * d / 2.0;
            t += d;
            from = st.target;
        }
        s.end = t;
        s.end_count = count;
        if s.peak() == 0.0 {
            return Err(format!(
                "every stage's {} is 0: nothing would be sent",
                of.name()
            ));
        }
        Ok(s)
    }

    pub fn of(&self) -> Ramped {
        self.of
    }

    /// The value before the first stage.
    pub fn start(&self) -> f64 {
        self.start
    }

    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// The stages' total length.
    pub fn total(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// The largest value the stages reach.
    pub fn peak(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.target)
            .fold(self.start, f64::max)
    }

    /// Stage `k`'s value at its start: the previous target, or the start.
    fn from(&self, k: usize) -> f64 {
        k.checked_sub(1)
            .map_or(self.start, |j| self.stages[j].target)
    }

    /// The target that holds after the last stage.
    fn last(&self) -> f64 {
        self.stages.last().map_or(self.start, |s| s.target)
    }

    /// Where `t` lies: stage `k`, with its start value, its length and the time into it;
    /// `None` after the last (the last target holds from then on).
    fn stage_at(&self, t: f64) -> Option<(usize, f64, f64, f64)> {
        // The last stage starting at or before t (zero-length stages are passed over).
        let k = self.starts.partition_point(|&s| s <= t).checked_sub(1)?;
        if t >= self.end {
            return None;
        }
        let d = self.stages[k].duration.as_secs_f64();
        Some((k, self.from(k), d, t - self.starts[k]))
    }

    /// The value at `t` seconds after the start (the last target after the end).
    pub fn value_at(&self, t: f64) -> f64 {
        match self.stage_at(t.max(0.0)) {
            Some((k, from, d, tau)) => {
                from + (self.stages[k].target - from) * (tau / d).clamp(0.0, 1.0)
            }
            None => self.last(),
        }
    }

    /// The integral of the value from the start to `t` seconds: for rates, the requests due by
    /// then.
    pub fn count_by(&self, t: f64) -> f64 {
        let t = t.max(0.0);
        match self.stage_at(t) {
            Some((k, from, d, tau)) => {
                let to = self.stages[k].target;
                self.counts[k] + from * tau + (to - from) * tau * tau / (2.0 * d)
            }
            None => self.end_count + self.last() * (t - self.end),
        }
    }

    /// The first time the count exceeds `n` (seconds): when request `n` (0-based) is due.
    /// `None` if it never does (the value ends at 0 before).
    pub fn time_of(&self, n: f64) -> Option<f64> {
        // The first stage whose count at its end exceeds n (the counts never fall: a binary
        // search, so a run changed many times from `--dashboard` costs no more per request).
        let first = self.counts[1..].partition_point(|&c| c <= n);
        for k in first..self.stages.len() {
            let st = &self.stages[k];
            let end_count = self.counts.get(k + 1).copied().unwrap_or(self.end_count);
            if end_count <= n {
                continue;
            }
            let from = self.from(k);
            let d = st.duration.as_secs_f64();
            let m = n - self.counts[k];
            if m <= 0.0 {
                return Some(self.starts[k]);
            }
            // Solve from*tau + (to - from)*tau^2/(2d) = m in the form that stays exact when
            // from is 0 or the ramp is flat: tau = 2m / (from + sqrt(from^2 + 2(to - from)m/d)).
            let disc = (from * from + 2.0 * (st.target - from) * m / d).max(0.0);
            let tau = 2.0 * m / (from + disc.sqrt());
            return Some(self.starts[k] + tau.min(d));
        }
        let last = self.last();
        if last <= 0.0 {
            return None;
        }
        Some(self.end + (n - self.end_count).max(0.0) / last)
    }

    /// A value held from the start: `value` until changed (a run that `--dashboard` may
    /// change follows these when it has no stages of its own).
    pub fn hold(of: Ramped, value: f64) -> Result<Stages, String> {
        let hold = Stage {
            duration: Duration::ZERO,
            target: value,
        };
        Stages::new(of, value, vec![hold])
    }

    /// These stages until `at` seconds, then `target` from `at` on: the stage under way is
    /// cut at `at` (at its value there) and the later ones dropped, so the value and the count
    /// up to `at` are unchanged (requests due before keep their due times) and the open loop
    /// stays free of coordinated omission across the change. `target` is checked as
    /// [`Stages::new`] checks a stage's.
    pub fn then(&self, at: f64, target: f64) -> Result<Stages, String> {
        let at = at.max(0.0);
        let mut kept = Vec::with_capacity(self.stages.len() + 2);
        for (k, st) in self.stages.iter().enumerate() {
            let (from, d) = (self.starts[k], st.duration.as_secs_f64());
            if from + d <= at {
                kept.push(*st);
                continue;
            }
            if from < at {
                kept.push(Stage {
                    duration: Duration::from_secs_f64(at - from),
                    target: self.value_at(at),
                });
            }
            break;
        }
        let reached: f64 = kept.iter().map(|s| s.duration.as_secs_f64()).sum();
        if reached < at {
            // The last value held until the change.
            kept.push(Stage {
                duration: Duration::from_secs_f64(at - reached),
                target: self.value_at(at),
            });
        }
        kept.push(Stage {
            duration: Duration::ZERO,
            target,
        });
        Stages::new(self.of, self.start, kept)
    }

    /// The mean value over `[a, b)` seconds (the value at `a` when the interval is empty).
    pub fn mean_over(&self, a: f64, b: f64) -> f64 {
        if b <= a {
            return self.value_at(a);
        }
        (self.count_by(b) - self.count_by(a)) / (b - a)
    }

    /// Active connections at `t`: the value rounded to the nearest whole number.
    pub fn connections_at(&self, t: f64) -> usize {
        self.value_at(t).round() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(secs: f64, target: f64) -> Stage {
        Stage {
            duration: Duration::from_secs_f64(secs),
            target,
        }
    }

    fn rate(start: f64, list: &[(f64, f64)]) -> Stages {
        Stages::new(
            Ramped::Rate,
            start,
            list.iter().map(|&(d, t)| st(d, t)).collect(),
        )
        .unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn values_move_linearly_and_hold_the_last_target() {
        // k6's example shape: up to 1k over 30 s, to 10k over 60 s, down to 0 over 30 s.
        let s = rate(0.0, &[(30.0, 1e3), (60.0, 1e4), (30.0, 0.0)]);
        assert_eq!(s.total(), Duration::from_secs(120));
        assert_eq!(s.peak(), 1e4);
        for (t, v) in [
            (0.0, 0.0),
            (15.0, 500.0),
            (30.0, 1e3),
            (60.0, 5500.0),
            (90.0, 1e4),
            (105.0, 5e3),
            (120.0, 0.0),
            (500.0, 0.0),
            (-1.0, 0.0),
        ] {
            assert!(close(s.value_at(t), v), "at {t}: {} != {v}", s.value_at(t));
        }
        // The count is the area under the ramps: 15k + 330k + 150k.
        assert!(close(s.count_by(30.0), 15e3));
        assert!(close(s.count_by(90.0), 345e3));
        assert!(close(s.count_by(120.0), 495e3));
        assert!(
            close(s.count_by(1000.0), 495e3),
            "a ramp to zero sends nothing after"
        );
    }

    #[test]
    fn time_of_inverts_count_by() {
        let s = rate(
            100.0,
            &[
                (10.0, 1e3),
                (0.0, 50.0),
                (5.0, 50.0),
                (20.0, 0.0),
                (3.0, 7.0),
            ],
        );
        let mut last = 0.0;
        let total = s.count_by(s.total().as_secs_f64());
        let mut n = 0.0;
        while n < total - 1.0 {
            let t = s.time_of(n).unwrap();
            assert!(t >= last, "due times never go back ({n}: {t} < {last})");
            assert!(
                close(s.count_by(t), n),
                "count at time_of({n}) = {}",
                s.count_by(t)
            );
            last = t;
            n += 1.0;
        }
        // After the end the last target (7/s) holds.
        let after = s.time_of(total + 70.0).unwrap();
        assert!(close(after, s.total().as_secs_f64() + 10.0), "{after}");
    }

    #[test]
    fn a_change_keeps_everything_before_it_and_holds_its_value_after() {
        // 1000/s held, changed to 3000/s at 3 s, paused at 5 s, resumed at 7 s.
        let s = Stages::hold(Ramped::Rate, 1e3).unwrap();
        let s = s.then(3.0, 3e3).unwrap();
        let s = s.then(5.0, 0.0).unwrap();
        let s = s.then(7.0, 3e3).unwrap();
        for (t, count) in [
            (1.0, 1e3),
            (3.0, 3e3),
            (4.0, 6e3),
            (5.0, 9e3),
            (6.5, 9e3),
            (8.0, 12e3),
        ] {
            assert!(close(s.count_by(t), count), "at {t}: {}", s.count_by(t));
        }
        // Request 2999 is the last at 1000/s (2.999 s), 3000 the first at 3000/s; none is due
        // in the pause: the 9000th request waits for the resume.
        assert!(close(s.time_of(2999.0).unwrap(), 2.999));
        assert!(close(s.time_of(3003.0).unwrap(), 3.001));
        assert!(close(s.time_of(9000.0).unwrap(), 7.0));
        assert!(close(s.time_of(9003.0).unwrap(), 7.001));
        // A change inside a ramp cuts it where it is.
        let ramp = Stages::new(Ramped::Rate, 0.0, vec![st(10.0, 1e3), st(10.0, 0.0)]).unwrap();
        let cut = ramp.then(4.0, 50.0).unwrap();
        for t in [0.0, 1.0, 3.99, 4.0] {
            assert!(close(cut.count_by(t), ramp.count_by(t)), "at {t}");
        }
        assert!(close(cut.value_at(4.0), 50.0) && close(cut.value_at(100.0), 50.0));
        assert!(close(cut.count_by(6.0), ramp.count_by(4.0) + 100.0));
        // Connections: whole numbers, checked as stages are.
        let c = Stages::hold(Ramped::Connections, 10.0).unwrap();
        assert_eq!(c.then(2.0, 64.0).unwrap().connections_at(2.5), 64);
        assert!(c.then(2.0, 2.5).unwrap_err().contains("whole number"));
        assert!(Stages::hold(Ramped::Rate, 1e3)
            .unwrap()
            .then(1.0, -5.0)
            .is_err());
    }

    #[test]
    fn a_stage_of_zero_length_jumps() {
        let s = rate(0.0, &[(0.0, 1e3), (10.0, 1e3)]);
        assert_eq!(s.value_at(0.0), 1e3);
        assert!(close(s.value_at(5.0), 1e3));
        // Request 0 at 0, request i at i ms: a constant rate.
        for i in [0.0, 1.0, 999.0, 5000.0] {
            assert!(close(s.time_of(i).unwrap(), i / 1e3), "{i}");
        }
        assert!(close(s.count_by(10.0), 1e4));
    }

    #[test]
    fn a_pause_delays_the_first_request_and_a_ramp_to_zero_ends_them() {
        // Nothing for 10 s, then up to 100/s over 10 s, then down to 0 over 10 s.
        let s = rate(0.0, &[(10.0, 0.0), (10.0, 100.0), (10.0, 0.0)]);
        assert_eq!(s.time_of(0.0), Some(10.0));
        // From 0 up: count(tau) = 5 tau^2, so request 20 is due 2 s into the ramp.
        assert!(close(s.time_of(20.0).unwrap(), 12.0));
        // 1000 requests in all; the 1000th (index 999) comes just before the end, no more.
        assert!(s.time_of(999.0).unwrap() < 30.0);
        assert_eq!(s.time_of(1000.0), None);
        assert_eq!(s.time_of(1e12), None);
    }

    #[test]
    fn very_small_and_very_large_rates() {
        // One request per 1000 s.
        let s = rate(0.001, &[(1000.0, 0.001)]);
        assert_eq!(s.time_of(0.0), Some(0.0));
        assert!(close(s.time_of(1.0).unwrap(), 1000.0));
        // A billion per second for an hour: 3.6e12 requests, nanosecond spacing kept.
        let s = rate(1e9, &[(3600.0, 1e9)]);
        let n = 3.0e12;
        assert!(close(s.time_of(n).unwrap(), 3000.0));
        let gap = s.time_of(n + 1.0).unwrap() - s.time_of(n).unwrap();
        assert!((gap - 1e-9).abs() < 1e-9, "{gap}");
        // Ramp from 0 to 1e9 over 1 s: request 0 at 0, the count is exact at the end.
        let s = rate(0.0, &[(1.0, 1e9)]);
        assert!(close(s.count_by(1.0), 5e8));
        assert!((s.time_of(5e8 - 1.0).unwrap() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn mean_over_a_second_is_the_target_rate_of_that_second() {
        let s = rate(0.0, &[(10.0, 100.0)]);
        // Second 4..5 of a ramp from 0 to 100 over 10 s: the mean is 45.
        assert!(close(s.mean_over(4.0, 5.0), 45.0));
        assert!(close(s.mean_over(20.0, 21.0), 100.0));
        assert_eq!(s.mean_over(3.0, 3.0), 30.0);
    }

    #[test]
    fn connections_round_to_whole_numbers() {
        let s = Stages::new(
            Ramped::Connections,
            0.0,
            vec![st(10.0, 100.0), st(5.0, 0.0)],
        )
        .unwrap();
        assert_eq!(s.connections_at(0.0), 0);
        assert_eq!(s.connections_at(0.04), 0);
        assert_eq!(s.connections_at(0.06), 1);
        assert_eq!(s.connections_at(5.0), 50);
        assert_eq!(s.connections_at(12.5), 50);
        assert_eq!(s.connections_at(15.0), 0);
        assert_eq!(s.peak(), 100.0);
    }

    #[test]
    fn nonsense_is_refused_with_one_line() {
        let bad = |of, start, list: Vec<Stage>| Stages::new(of, start, list).unwrap_err();
        assert!(bad(Ramped::Rate, 0.0, vec![]).contains("no stages"));
        assert!(bad(Ramped::Rate, 0.0, vec![st(1.0, 0.0)]).contains("nothing would be sent"));
        assert!(bad(Ramped::Rate, 0.0, vec![st(1.0, 2e9)]).contains("stage 1's target"));
        assert!(bad(Ramped::Rate, 0.0, vec![st(1.0, 1e-4)]).contains("out of range"));
        assert!(bad(Ramped::Rate, f64::NAN, vec![st(1.0, 1.0)]).contains("the start"));
        let e = bad(Ramped::Connections, 0.0, vec![st(1.0, 2.0), st(1.0, 1.5)]);
        assert!(e.contains("stage 2's target 1.5"), "{e}");
        assert!(bad(Ramped::Connections, 0.0, vec![st(1.0, 2e6)]).contains("whole number"));
        for e in [
            bad(Ramped::Rate, 0.0, vec![]),
            bad(Ramped::Connections, 0.0, vec![st(1.0, 0.0)]),
        ] {
            assert!(!e.contains('\n'));
        }
    }
}
