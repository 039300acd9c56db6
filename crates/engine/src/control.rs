//! Changes made while a run goes (`--dashboard`'s page and its JSON endpoint, a fleet's
//! coordinator): the open loop's rate or the closed loop's connections, a pause and a resume.
//!
//! A change is a new stage: the run's value becomes a [`Stages`] (its own `--stages`, or its
//! rate or connections held from the start) continued at the change's time with the new value
//! ([`Stages::then`]). Everything before the change keeps its schedule, so the open loop's due
//! times (and latencies counted from them) stay free of coordinated omission across it.
//!
//! Workers read it where they read the ramp, once per [`crate::worker`] deadline scan (10 ms):
//! a relaxed load of the generation, and the lock only when it moved. A change takes effect
//! [`LEAD`] after it is asked for, so every worker has seen it before its time: nothing is
//! sent under the old value after the change's instant. Nothing here is on the per-request
//! path.

use crate::stages::{Ramped, Stages};
use crate::{Config, Pace};
use pelt_stats::{Change, Steer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long after it is asked a change takes effect: two of the workers' deadline scans.
pub const LEAD: Duration = Duration::from_millis(20);

/// A run's steering wheel, shared by the caller and the workers (`Config::control`).
#[derive(Debug)]
pub struct Control {
    /// What a change sets (`None`: a replay, whose times are its recording's: only a stop).
    of: Option<Ramped>,
    /// Moves with each change; the workers compare it with the one they follow.
    generation: AtomicU64,
    state: Mutex<State>,
    /// The run's second 0 (set when every worker is ready).
    start: OnceLock<Instant>,
    /// How long after it is asked a change takes effect ([`LEAD`]; a fleet's coordinator
    /// gives its agents longer to hear of it).
    lead: Duration,
}

#[derive(Debug)]
struct State {
    stages: Option<Stages>,
    /// While paused: the value a resume goes back to.
    paused: Option<f64>,
    changes: Vec<Change>,
}

impl Control {
    /// The control of a run of `config`'s load (before any change, the run is as configured).
    pub fn new(config: &Config) -> Control {
        let stages = match &config.load {
            crate::Load::Closed { stages: Some(s) } => Some(s.clone()),
            crate::Load::Closed { stages: None } => {
                Stages::hold(Ramped::Connections, config.connections as f64).ok()
            }
            crate::Load::Open(open) => match &open.pace {
                Pace::Rate(rate) => Stages::hold(Ramped::Rate, rate.as_f64()).ok(),
                Pace::Stages(s) => Some(s.clone()),
                Pace::Replay(_) => None,
            },
        };
        Control {
            of: stages.as_ref().map(Stages::of),
            generation: AtomicU64::new(0),
            state: Mutex::new(State {
                stages,
                paused: None,
                changes: Vec::new(),
            }),
            start: OnceLock::new(),
            lead: LEAD,
        }
    }

    /// Changes take effect `lead` after they are asked for (at least [`LEAD`]).
    pub fn with_lead(mut self, lead: Duration) -> Control {
        self.lead = lead.max(LEAD);
        self
    }

    /// What a change of value sets: the rate (open loop) or the connections (closed loop).
    pub fn of(&self) -> Option<Ramped> {
        self.of
    }

    /// Seconds since the run's start (`None` before it started).
    pub fn elapsed_s(&self) -> Option<f64> {
        self.start.get().map(|s| s.elapsed().as_secs_f64())
    }

    /// The run's value at `t` seconds, and whether it is paused.
    pub fn value_at(&self, t: f64) -> (Option<f64>, bool) {
        let state = self.lock();
        let value = state.stages.as_ref().map(|s| s.value_at(t));
        (value, state.paused.is_some())
    }

    /// Applies `what` (with `value` for a rate or connections) at `at_s` seconds since the
    /// start, or [`LEAD`] from now; returns the change as recorded, or one line on why it
    /// cannot be made (the run is not started, the value is out of range, the loop has no
    /// such value, a pause of a paused run).
    pub fn change(
        &self,
        what: Steer,
        value: Option<f64>,
        at_s: Option<f64>,
    ) -> Result<Change, String> {
        let now = self
            .elapsed_s()
            .ok_or_else(|| "the run has not started yet".to_string())?;
        let at_s = at_s.unwrap_or(0.0).max(now + self.lead.as_secs_f64());
        self.apply(what, value, at_s, now)
    }

    /// Makes `change` as another process made it (a fleet's coordinator, for its agents):
    /// at its own time, so every agent changes at the same instant and their results carry
    /// the same change.
    pub fn follow(&self, change: &Change) -> Result<Change, String> {
        self.apply(change.what, change.value, change.at_s, change.at_s)
    }

    fn apply(
        &self,
        what: Steer,
        value: Option<f64>,
        at_s: f64,
        now: f64,
    ) -> Result<Change, String> {
        let mut state = self.lock();
        if what == Steer::Stop {
            let change = Change {
                at_s: now,
                what,
                value: None,
            };
            state.changes.push(change);
            return Ok(change);
        }
        let Some(stages) = state.stages.clone() else {
            return Err("a replay's times are its recording's: only a stop changes it".into());
        };
        let of = stages.of();
        let current = stages.value_at(at_s);
        let (set, stays_paused) = match (what, value) {
            (Steer::Pause, _) if state.paused.is_some() => {
                return Err("the run is already paused".into())
            }
            (Steer::Pause, _) => {
                state.paused = Some(current);
                (0.0, true)
            }
            (Steer::Resume, _) => match state.paused.take() {
                Some(v) => (v, false),
                None => return Err("the run is not paused".into()),
            },
            (_, None) => return Err(format!("a {} change needs a value", what.name())),
            (Steer::Rate, Some(_)) if of != Ramped::Rate => {
                return Err("this run is a closed loop (no --rate): change its connections".into())
            }
            (Steer::Connections, Some(_)) if of != Ramped::Connections => {
                return Err(
                    "this run is an open loop (--rate): change its rate (it opens the \
                     connections the rate needs, up to --max-connections)"
                        .into(),
                )
            }
            (Steer::Connections, Some(v)) => {
                crate::ensure_fd_limit(v.max(0.0) as usize).map_err(|e| e.to_string())?;
                (v, state.paused.is_some())
            }
            (_, Some(v)) => (v, state.paused.is_some()),
        };
        let checked = stages.then(at_s, set)?;
        if stays_paused && what != Steer::Pause {
            // A new value while paused is where the resume goes.
            state.paused = Some(set);
        } else {
            state.stages = Some(checked);
            self.generation.fetch_add(1, Ordering::Release);
        }
        let change = Change {
            at_s,
            what,
            value: (what != Steer::Pause).then_some(set),
        };
        state.changes.push(change);
        Ok(change)
    }

    /// Every change made so far, in order.
    pub fn changes(&self) -> Vec<Change> {
        self.lock().changes.clone()
    }

    /// The changes that took effect in `[from, to)` seconds.
    pub(crate) fn changes_within(&self, from: f64, to: f64) -> Vec<Change> {
        let state = self.lock();
        let within = |c: &&Change| c.at_s >= from && c.at_s < to;
        state.changes.iter().filter(within).copied().collect()
    }

    /// The run's value as a function of time, after the changes so far.
    pub(crate) fn stages(&self) -> Option<Stages> {
        self.lock().stages.clone()
    }

    /// Moves with every change that the workers must follow.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The run started at `start` (its second 0): set by the engine's run, or by a fleet's
    /// coordinator at the fleet's start.
    pub fn started(&self, start: Instant) {
        let _ = self.start.set(start);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding it leaves the state as it was: still good to read.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(rate: f64) -> Control {
        let mut c = Config::new("127.0.0.1:1".parse().unwrap(), vec![]);
        c.load = crate::Load::open(crate::Rate::per_second(rate).unwrap(), 10);
        let control = Control::new(&c);
        control.started(Instant::now());
        control
    }

    #[test]
    fn changes_are_new_stages_and_a_pause_returns_to_its_value() {
        let c = open(1000.0);
        assert_eq!(c.of(), Some(Ramped::Rate));
        let g = c.generation();
        let up = c.change(Steer::Rate, Some(3000.0), Some(3.0)).unwrap();
        assert_eq!((up.at_s, up.value), (3.0, Some(3000.0)));
        assert!(c.generation() > g);
        c.change(Steer::Pause, None, Some(5.0)).unwrap();
        assert!(c.change(Steer::Pause, None, Some(5.5)).is_err());
        // A new rate while paused is where the resume goes; nothing moves until then.
        let g = c.generation();
        c.change(Steer::Rate, Some(2000.0), Some(6.0)).unwrap();
        assert_eq!(c.generation(), g);
        assert_eq!(c.value_at(6.5), (Some(0.0), true));
        let resumed = c.change(Steer::Resume, None, Some(7.0)).unwrap();
        assert_eq!(resumed.value, Some(2000.0));
        assert_eq!(c.value_at(8.0), (Some(2000.0), false));
        assert!(c.change(Steer::Resume, None, None).is_err());
        let s = c.stages().unwrap();
        // 3 s at 1000/s, 2 s at 3000/s, paused, then 2000/s from 7 s.
        assert!((s.count_by(8.0) - (3e3 + 6e3 + 2e3)).abs() < 1e-6);
        assert_eq!(c.changes().len(), 4);
        assert_eq!(c.changes_within(5.0, 6.0).len(), 1);
    }

    #[test]
    fn a_change_the_loop_cannot_take_is_one_line() {
        let c = open(1000.0);
        let e = c.change(Steer::Connections, Some(10.0), None).unwrap_err();
        assert!(e.contains("open loop"), "{e}");
        assert!(c.change(Steer::Rate, None, None).is_err());
        assert!(c.change(Steer::Rate, Some(-1.0), None).is_err());
        let mut closed = Config::new("127.0.0.1:1".parse().unwrap(), vec![]);
        closed.connections = 8;
        let closed = Control::new(&closed);
        assert!(closed
            .change(Steer::Pause, None, None)
            .unwrap_err()
            .contains("not started"));
        closed.started(Instant::now());
        assert!(closed
            .change(Steer::Rate, Some(5.0), None)
            .unwrap_err()
            .contains("closed loop"));
        let at = closed.change(Steer::Connections, Some(16.0), None).unwrap();
        assert!(at.at_s >= LEAD.as_secs_f64());
        assert_eq!(closed.value_at(at.at_s + 1.0).0, Some(16.0));
    }
}
