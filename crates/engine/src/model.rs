//! Load models: when may a free connection take the next request.
//!
//! Closed loop: at once, until the budget is spent. Open loop: when the schedule says the next
//! request is due, oldest first. Both draw from the same budget of measured requests (`-n`);
//! requests started during the warm-up do not count against it.

use crate::schedule::Schedule;

#[derive(Debug)]
pub(crate) struct Model {
    /// `None`: closed loop.
    schedule: Option<Schedule>,
    /// Measured requests this worker may still start (`None`: unlimited).
    remaining: Option<u64>,
    /// Set when the run is being stopped: nothing more starts.
    stopped: bool,
    /// Open loop: requests due at or after this (ns since the start) never start: the run
    /// ends there.
    horizon: u64,
}

impl Model {
    pub fn closed(budget: Option<u64>) -> Model {
        Model {
            schedule: None,
            remaining: budget,
            stopped: false,
            horizon: u64::MAX,
        }
    }

    pub fn open(schedule: Schedule, budget: Option<u64>) -> Model {
        Model {
            schedule: Some(schedule),
            remaining: budget,
            stopped: false,
            horizon: u64::MAX,
        }
    }

    pub fn is_open(&self) -> bool {
        self.schedule.is_some()
    }

    /// Takes the next request if one may start at `elapsed_ns`, returning its due time in ns
    /// since the start (closed loop: `elapsed_ns` itself). `warm`: it belongs to the warm-up
    /// and does not count against the budget.
    #[inline]
    pub fn take(&mut self, elapsed_ns: u64, warm: bool) -> Option<u64> {
        if self.exhausted() {
            return None;
        }
        let due = match &mut self.schedule {
            None => elapsed_ns,
            Some(s) if s.next_due_ns() <= elapsed_ns && s.next_due_ns() < self.horizon => s.take(),
            Some(_) => return None,
        };
        if !warm {
            if let Some(n) = &mut self.remaining {
                *n -= 1;
            }
        }
        if self.next_due_ns().is_none() {
            // Nothing more starts: a streamed recording's blocks go back to its reader.
            if let Some(s) = &mut self.schedule {
                s.close();
            }
        }
        Some(due)
    }

    /// A streamed replay: the entry [`Model::take`] took last.
    #[inline]
    pub fn fed(&self) -> Option<&crate::feed::Cursor> {
        self.schedule.as_ref().and_then(Schedule::fed)
    }

    /// Scenarios, open loop: takes the next iteration's arrival if one is due at `elapsed_ns`
    /// (its due time in ns since the start). Arrivals do not spend the budget: the requests
    /// the iteration sends do ([`Model::spend`]).
    #[inline]
    pub fn arrive(&mut self, elapsed_ns: u64) -> Option<u64> {
        let due = self.next_due_ns().filter(|&d| d <= elapsed_ns)?;
        let s = self.schedule.as_mut()?;
        debug_assert_eq!(s.next_due_ns(), due);
        Some(s.take())
    }

    /// Scenarios: a request may start (the budget has room; `warm`: it does not count against
    /// it). The schedule, if any, paces arrivals, not requests.
    #[inline]
    pub fn spend(&mut self, warm: bool) -> bool {
        if self.exhausted() {
            return false;
        }
        if !warm {
            if let Some(n) = &mut self.remaining {
                *n -= 1;
            }
        }
        true
    }

    /// Open loop: when the next request is due (ns since the start), if one is left (a ramp
    /// to zero leaves none).
    #[inline]
    pub fn next_due_ns(&self) -> Option<u64> {
        match &self.schedule {
            Some(s) if !self.exhausted() && s.next_due_ns() < self.horizon => Some(s.next_due_ns()),
            _ => None,
        }
    }

    /// Open loop: the schedule follows `pace` from now on (a change during the run, which
    /// leaves every due time before it as it was).
    pub fn repace(&mut self, pace: crate::schedule::Pace) {
        if let Some(s) = &mut self.schedule {
            s.repace(pace);
        }
    }

    /// Open loop: requests due at `elapsed_ns` that have not started (waiting for a free
    /// connection), within what the budget still allows.
    pub fn backlog(&self, elapsed_ns: u64) -> u64 {
        match &self.schedule {
            Some(s) if !self.exhausted() => {
                // Requests due at the end or later were never to start: no backlog.
                let due = s.backlog(elapsed_ns.min(self.horizon.saturating_sub(1)));
                self.remaining.map_or(due, |n| due.min(n))
            }
            _ => 0,
        }
    }

    /// No request is left to start.
    pub fn exhausted(&self) -> bool {
        self.stopped || self.remaining == Some(0)
    }

    /// Open loop: the run ends at `ns` since the start; nothing due then or later starts.
    pub fn end_at(&mut self, ns: u64) {
        self.horizon = ns;
    }

    /// Starts nothing more: what it sends has ended (a targets file read as the run goes,
    /// after its `-n`). Ends as a spent budget does.
    pub fn spent(&mut self) {
        self.remaining = Some(0);
        if let Some(s) = &mut self.schedule {
            s.close();
        }
    }

    /// Starts nothing more (the run is stopping).
    pub fn stop(&mut self) {
        self.stopped = true;
        if let Some(s) = &mut self.schedule {
            s.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{Arrival, Pace, Rate};

    #[test]
    fn closed_budget_is_exact() {
        let mut m = Model::closed(Some(3));
        assert_eq!((0..10).filter(|_| m.take(0, false).is_some()).count(), 3);
        assert!(m.exhausted());
        let mut unlimited = Model::closed(None);
        assert!((0..1000).all(|_| unlimited.take(0, false).is_some()));
        assert!(!unlimited.exhausted());
        assert!(Model::closed(Some(0)).exhausted());
    }

    #[test]
    fn warm_up_requests_do_not_spend_the_budget() {
        let mut m = Model::closed(Some(2));
        assert!((0..5).all(|_| m.take(0, true).is_some()));
        assert_eq!((0..5).filter(|_| m.take(0, false).is_some()).count(), 2);
    }

    #[test]
    fn open_loop_starts_only_what_is_due() {
        let rate = Rate::per_second(1000.0).unwrap();
        let mut m = Model::open(
            Schedule::new(Pace::Constant(rate), Arrival::Constant, 0, 1),
            Some(5),
        );
        assert_eq!(m.take(0, false), Some(0));
        assert_eq!(m.take(999_999, false), None, "the next is due at 1 ms");
        assert_eq!(m.next_due_ns(), Some(1_000_000));
        // 10 ms later, 10 are due but only 4 remain in the budget.
        assert_eq!(m.backlog(10_000_000), 4);
        // Past the end (a run that stopped late), requests due after it are not a backlog.
        m.end_at(3_000_000);
        assert_eq!(m.backlog(10_000_000), 2);
        m.end_at(u64::MAX);
        assert_eq!(m.take(10_000_000, false), Some(1_000_000), "oldest first");
        m.stop();
        assert_eq!(m.take(10_000_000, false), None);
        assert_eq!((m.next_due_ns(), m.backlog(10_000_000)), (None, 0));
    }

    #[test]
    fn arrivals_follow_the_schedule_and_requests_spend_the_budget() {
        let rate = Rate::per_second(1000.0).unwrap();
        let mut m = Model::open(
            Schedule::new(Pace::Constant(rate), Arrival::Constant, 0, 1),
            Some(3),
        );
        assert_eq!(m.arrive(0), Some(0));
        assert_eq!(m.arrive(500_000), None, "the next arrives at 1 ms");
        assert!(m.spend(true), "a warm-up request spends nothing");
        assert!(m.spend(false) && m.spend(false) && m.spend(false));
        assert!(!m.spend(false) && m.exhausted());
        assert_eq!((m.arrive(5_000_000), m.next_due_ns()), (None, None));
    }

    #[test]
    fn nothing_due_at_the_end_or_later_starts_however_late_it_is_asked() {
        let rate = Rate::per_second(1000.0).unwrap();
        let mut m = Model::open(
            Schedule::new(Pace::Constant(rate), Arrival::Constant, 0, 1),
            None,
        );
        m.end_at(3_000_000);
        let due: Vec<_> = std::iter::from_fn(|| m.take(1_000_000_000, false)).collect();
        assert_eq!(due, [0, 1_000_000, 2_000_000]);
        assert_eq!(m.next_due_ns(), None);
    }
}
