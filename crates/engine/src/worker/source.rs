//! Request sources: what a connection sends next, and when it was due. The worker is generic
//! over its source as it is over its protocol and transport, chosen once per run
//! (`Setup::drive`), so `Worker::refill` has no branch for any of them:
//!
//! - [`Paced`]: the load model says when (closed loop: now; open loop: the schedule's due
//!   time) and the picker which entry (the request, or one of the targets);
//! - [`Fed`]: the same, but the entries are read as the run goes (a targets file or a
//!   replay's recording streamed from disk, `feed.rs`): each request's bytes are copied as it
//!   is taken, and the source ends with the file;
//! - the scenario's users (`users.rs`): each connection's users say which step they send next
//!   and when it was due (after their think times), and read the responses (`answer`);
//! - a script's hooks (`scripted.rs`): the model says when, the script's `request()` what
//!   (copied after `fed`), its `delay()` how long each waits, and its `response()` reads the
//!   responses.
//!
//! A new request source is one type implementing [`Source`]; only the hooks it needs differ
//! from the defaults.

use super::sink::Sink;
use crate::ledger::Ledger;
use crate::model::Model;
use crate::requests::Picker;
use crate::scenario::ScenarioCounts;
use std::time::Instant;

/// What the source draws on: the load model (when, and the budget), the picker (which entry)
/// and the ledger's clock.
pub(super) struct Draw<'d> {
    pub(super) model: &'d mut Model,
    pub(super) picker: &'d mut Picker,
    pub(super) ledger: &'d mut Ledger,
}

/// A request a connection sends now.
pub(super) struct Next {
    /// Its entry (a scenario's step; a streamed replay's name number).
    pub(super) target: u32,
    /// Its index in the run (`{{seq}}`).
    pub(super) seq: u64,
    /// Scenarios: the seat of the user that sends it.
    pub(super) user: u32,
    /// A streamed entry's: it is a HEAD request.
    pub(super) head: bool,
    /// When it was due (open loop: its latency counts from then; closed loop: now).
    pub(super) due: Instant,
}

/// Open loop: what an arrival the schedule made due does on a free connection.
pub(super) enum Arrival {
    /// It is the connection's next request (or, for users, the next iteration).
    Refill,
    /// The connection cannot take it; try the next free one.
    Skip,
    /// Nothing more arrives now.
    Stop,
}

/// Where requests come from. Only `next` is required: the rest are the hooks of a source
/// whose requests answer to their responses (scenarios), and default to doing nothing.
pub(super) trait Source {
    /// Each response goes to the source as soon as it is read (a user's next step depends
    /// on it): no read is left for later, and a connection's streams restart one by one.
    const ANSWERS: bool = false;

    /// What connection `i` sends now, if anything (`warm`: it belongs to the warm-up).
    /// Entries read as the run goes copy their bytes after `fed`.
    fn next(
        &mut self,
        i: usize,
        now: Instant,
        warm: bool,
        draw: &mut Draw<'_>,
        fed: &mut Vec<u8>,
    ) -> Option<Next>;

    /// Open loop: the schedule has an arrival due (`elapsed_ns` since the start) and
    /// connection `i` is free: whether it takes it.
    #[inline]
    fn arrive(
        &mut self,
        _i: usize,
        _draw: &mut Draw<'_>,
        _elapsed_ns: u64,
        _now: Instant,
    ) -> Arrival {
        Arrival::Refill
    }

    /// Open loop: connection `i` may join the free queue (it has something to wait for).
    #[inline]
    fn idle(&self, _i: usize) -> bool {
        true
    }

    /// Requests one connection carries at once, when the source says (else the config's
    /// `--pipeline` or `--streams`).
    #[inline]
    fn depth(&self) -> Option<usize> {
        None
    }

    /// Nothing more will be sent on any of `conns` connections.
    #[inline]
    fn done(&self, _conns: usize) -> bool {
        false
    }

    /// When the source next has something due of its own (a think time's end).
    #[inline]
    fn next_wake(&self) -> Option<Instant> {
        None
    }

    /// The connections with something due by `now` (lent: give it back with `done_with`).
    fn woken(&mut self, _now: Instant) -> Vec<usize> {
        Vec::new()
    }

    /// Gives back the list `woken` lent.
    fn done_with(&mut self, _woken: Vec<usize>) {}

    /// Takes the responses (and failures) the sink kept since the last call (what goes wrong
    /// reading them is booked in `ledger`).
    #[inline]
    fn answer(&mut self, _sink: &mut Sink, _ledger: &mut Ledger, _now: Instant) {}

    /// The request of `user` failed without a response, at `now`.
    #[inline]
    fn failed(&mut self, _user: u32, _now: Instant) {}

    /// The variables and Cookie value `user`'s request renders with.
    #[inline]
    fn render(&self, _user: u32) -> (&[String], &str) {
        (&[], "")
    }

    /// The source's end (a script's hooks keep their values for `done`): the scenario's
    /// counts.
    fn counts(self) -> Option<ScenarioCounts>
    where
        Self: Sized,
    {
        None
    }
}

/// The due time of a request the model took at `due_ns` (see [`Next::due`]).
#[inline]
pub(super) fn due(draw: &Draw<'_>, due_ns: u64, now: Instant) -> Instant {
    if draw.model.is_open() {
        draw.ledger.at_ns(due_ns)
    } else {
        now
    }
}

/// The request, or the targets: the model says when, the picker which.
pub(super) struct Paced;

impl Source for Paced {
    #[inline]
    fn next(
        &mut self,
        _i: usize,
        now: Instant,
        warm: bool,
        draw: &mut Draw<'_>,
        _fed: &mut Vec<u8>,
    ) -> Option<Next> {
        let due_ns = draw.model.take(draw.ledger.elapsed_ns(now), warm)?;
        let (target, seq) = draw.picker.pick(warm);
        Some(Next {
            target,
            seq,
            user: 0,
            head: false,
            due: due(draw, due_ns, now),
        })
    }
}

/// Entries read as the run goes: a targets file's blocks (the picker's) or a replay's (the
/// schedule's, which also says when).
pub(super) struct Fed;

impl Source for Fed {
    fn next(
        &mut self,
        _i: usize,
        now: Instant,
        warm: bool,
        draw: &mut Draw<'_>,
        fed: &mut Vec<u8>,
    ) -> Option<Next> {
        let due_ns = draw.model.take(draw.ledger.elapsed_ns(now), warm)?;
        let (mut target, seq) = match draw.picker.take_fed(warm) {
            None => draw.picker.pick(warm),
            Some(Some(taken)) => taken,
            // The file (or `-n`) has ended: nothing more starts.
            Some(None) => {
                draw.model.spent();
                return None;
            }
        };
        let mut head = false;
        // The entry the schedule or the picker took: its bytes copied now (its blocks may be
        // gone by the write).
        if let Some(cursor) = draw.model.fed().or(draw.picker.taken()) {
            fed.extend_from_slice(&cursor.taken);
            (target, head) = (cursor.taken_name, cursor.taken_head);
        }
        Some(Next {
            target,
            seq,
            user: 0,
            head,
            due: due(draw, due_ns, now),
        })
    }
}

/// Waits that end at an instant (a user's think time, a script's `delay()`), earliest first,
/// for a source's `next_wake` and `woken`; the list of woken connections is lent to the
/// worker and given back, so waking allocates nothing once it has grown.
#[derive(Default)]
pub(super) struct Wakes {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Instant, usize)>>,
    woken: Vec<usize>,
}

impl Wakes {
    /// Wait `i` ends at `at`.
    pub(super) fn push(&mut self, at: Instant, i: usize) {
        self.heap.push(std::cmp::Reverse((at, i)));
    }

    /// When the earliest wait ends.
    pub(super) fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|w| w.0 .0)
    }

    /// The connections whose waits ended by `now`: `wakes(at, i)` says which connection
    /// wait `i` wakes (`None`: the wait was given up).
    pub(super) fn ended(
        &mut self,
        now: Instant,
        mut wakes: impl FnMut(Instant, usize) -> Option<usize>,
    ) -> Vec<usize> {
        let mut woken = std::mem::take(&mut self.woken);
        woken.clear();
        while let Some(&std::cmp::Reverse((at, i))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            woken.extend(wakes(at, i));
        }
        woken
    }

    /// The list [`ended`](Self::ended) lent, back.
    pub(super) fn give_back(&mut self, woken: Vec<usize>) {
        self.woken = woken;
    }
}
