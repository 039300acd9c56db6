//! Scenarios in the worker: each virtual user ([`User`]) has a seat on a connection, says
//! which step its next request sends, waits its think times, and reads the responses to the
//! steps whose captures, checks and cookies need them. Nothing here runs for a run without
//! scenarios.
//!
//! Over HTTP/1.1 a connection seats one user; over HTTP/2 it seats `--streams` users, each
//! with at most one stream open at a time (seat `s` is lane `s % lanes` of connection
//! `s / lanes`).
//!
//! Closed loop, a user starts its next iteration as soon as the last one ends. Open loop, an
//! iteration begins only when the schedule hands the user an arrival ([`Users::arrive`]); each
//! request is due when the one before it ended plus its think time (the first at the arrival),
//! and the worker books its latency from then, so a server stall shows in every step it held up.

use crate::scenario::{Next, Response, Rows, ScenarioCounts, ScenarioRun, User};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Instant;

/// One virtual user and where it stands.
struct Seat {
    /// Made when it first has something to do.
    user: Option<User>,
    /// The step its next request sends, once the user has said.
    pending: Option<u32>,
    /// Its request is on the connection, unanswered.
    busy: bool,
    /// Thinking until then.
    wait: Option<Instant>,
    /// Nothing left to do (a unique data file ran out).
    done: bool,
    /// Open loop: an arrival handed to it and not begun yet (its due time).
    arrival: Option<Instant>,
    /// It began its `once` steps and has not reached its flow: a login that fails ends the
    /// iteration it began for as failed.
    logging_in: bool,
    /// When its next request is due: the arrival, the end of a think, or the end of the
    /// response before.
    due: Instant,
    /// When the iteration under way began (its first request's due time).
    began: Instant,
}

impl Seat {
    fn new(now: Instant) -> Seat {
        Seat {
            user: None,
            pending: None,
            busy: false,
            wait: None,
            done: false,
            arrival: None,
            logging_in: false,
            due: now,
            began: now,
        }
    }
}

pub(super) struct Users {
    run: Arc<ScenarioRun>,
    /// Open loop: iterations begin at arrivals.
    open: bool,
    /// Seats per connection.
    lanes: usize,
    /// By seat (connection `i` has seats `i * lanes..(i + 1) * lanes`).
    seats: Vec<Seat>,
    rows: Rows,
    /// This worker's next user number (worker k of n numbers k, k + n, ...).
    next_user: u64,
    stride: u64,
    pub counts: ScenarioCounts,
    headers: pelt_codec::response::Fields,
    body: Vec<u8>,
    /// Think times under way, soonest first: (end, seat).
    thinking: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Connections with a seat whose think time ended (lent by `woken`).
    woken: Vec<usize>,
}

impl Users {
    /// `lanes`: the users each connection seats.
    pub(super) fn new(
        run: Arc<ScenarioRun>,
        worker: usize,
        workers: usize,
        open: bool,
        lanes: usize,
    ) -> Users {
        let rows = Rows::new(&run.program, worker as u64, workers as u64, run.seed);
        let counts = ScenarioCounts::new(&run.program);
        Users {
            run,
            open,
            lanes: lanes.max(1),
            seats: Vec::new(),
            rows,
            next_user: worker as u64,
            stride: workers.max(1) as u64,
            counts,
            headers: Default::default(),
            body: Vec::new(),
            thinking: BinaryHeap::new(),
            woken: Vec::new(),
        }
    }

    /// Connection `i`'s seats, made on first use.
    fn seats_of(&mut self, i: usize, now: Instant) -> std::ops::Range<usize> {
        let range = i * self.lanes..(i + 1) * self.lanes;
        if self.seats.len() < range.end {
            self.seats.resize_with(range.end, || Seat::new(now));
        }
        range
    }

    /// Open loop: an iteration arrives for an idle user of connection `i` (see
    /// [`Users::idle`]), due at `due`.
    pub(super) fn arrive(&mut self, i: usize, due: Instant, now: Instant) {
        let seats = self.seats_of(i, now);
        if let Some(s) = seats.into_iter().find(|&s| seat_idle(&self.seats[s])) {
            self.seats[s].arrival = Some(due);
        }
    }

    /// Open loop: whether a user of connection `i` waits for an arrival (nothing under way).
    pub(super) fn idle(&self, i: usize) -> bool {
        let range = i * self.lanes..(i + 1) * self.lanes;
        range
            .into_iter()
            .any(|s| self.seats.get(s).is_none_or(seat_idle))
    }

    /// A user of connection `i` with a request to send now (its step kept for
    /// [`Users::take`]); `None`: each one has a request out, thinks, waits for an arrival, or
    /// has nothing left to do.
    pub(super) fn ready(&mut self, i: usize, now: Instant) -> Option<usize> {
        let seats = self.seats_of(i, now);
        seats.into_iter().find(|&s| self.seat_ready(s, now))
    }

    /// Whether seat `s`'s user has a request to send now.
    fn seat_ready(&mut self, s: usize, now: Instant) -> bool {
        let open = self.open;
        let seat = &mut self.seats[s];
        if seat.done || seat.busy {
            return false;
        }
        if seat.pending.is_some() {
            return true;
        }
        if let Some(until) = seat.wait {
            if now < until {
                return false;
            }
            seat.wait = None;
            seat.due = until;
        }
        let run = &self.run;
        loop {
            let between = seat.user.as_ref().is_none_or(User::between);
            if open && between {
                match seat.arrival.take() {
                    Some(due) => seat.due = due,
                    None => return false,
                }
            }
            if seat.user.is_none() {
                let n = self.next_user;
                self.next_user += self.stride;
                let seed = run.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                match User::new(&run.program, run.scenario_of(n), &mut self.rows, seed) {
                    Some(user) => seat.user = Some(user),
                    None => {
                        seat.done = true;
                        return false;
                    }
                }
            }
            let user = seat.user.as_mut().expect("made above");
            if user.logged_out() {
                seat.logging_in = true;
                seat.began = seat.due;
            }
            let next = user.next(&run.program, &mut self.rows);
            if user.started() {
                self.counts.started += 1;
                if !std::mem::take(&mut seat.logging_in) {
                    seat.began = seat.due;
                }
            }
            match next {
                Next::Request(step) => {
                    user.cookie_header(step.id, &run.urls[step.id as usize]);
                    seat.pending = Some(step.id);
                    return true;
                }
                Next::Think {
                    pause,
                    iteration_ended,
                } => {
                    let until = seat.due + pause;
                    count_end(&mut self.counts, seat, iteration_ended, until);
                    if !pause.is_zero() {
                        seat.wait = Some(until);
                        self.thinking.push(Reverse((until, s)));
                        return false;
                    }
                }
                Next::Done => {
                    seat.done = true;
                    return false;
                }
            }
        }
    }

    /// Whether every one of the `conns` connections' users has nothing left to do (the run
    /// then ends: nothing more will be sent).
    pub(super) fn all_done(&self, conns: usize) -> bool {
        let n = conns * self.lanes;
        self.seats.len() >= n && self.seats[..n].iter().all(|s| s.done)
    }

    /// The step of the request seat `s`'s user sends now (after [`Users::ready`] named it),
    /// and when it was due (open loop: its latency counts from then).
    pub(super) fn take(&mut self, s: usize) -> (u32, Instant) {
        let seat = &mut self.seats[s];
        let step = seat.pending.take().expect("ready() said there is one");
        seat.busy = true;
        (step, seat.due)
    }

    /// Seat `s`'s user's variables and Cookie value, for rendering its request.
    pub(super) fn render(&self, s: usize) -> (&[String], &str) {
        match self.seats.get(s).and_then(|s| s.user.as_ref()) {
            Some(u) => (u.vars(), u.cookie()),
            None => (&[], ""),
        }
    }

    /// The response to seat `s`'s request, as it came over HTTP/1.1 (`raw`), read at `now`.
    pub(super) fn answered_raw(&mut self, s: usize, step: u32, raw: &[u8], now: Instant) {
        let (mut headers, mut body) = (
            std::mem::take(&mut self.headers),
            std::mem::take(&mut self.body),
        );
        match pelt_codec::response::read_complete(raw, &mut headers, &mut body) {
            Some(status) => {
                let r = Response {
                    status,
                    headers: headers.as_slice(),
                    body: &body,
                };
                self.answered(s, step, &r, now);
            }
            // Not a response the user can read (kept only in part): its steps go on.
            None => {
                if let Some(seat) = self.seats.get_mut(s) {
                    seat.busy = false;
                    seat.due = now;
                }
            }
        }
        (self.headers, self.body) = (headers, body);
    }

    /// The response to seat `s`'s request (to step `step`), read at `now`.
    pub(super) fn answered(&mut self, s: usize, step: u32, r: &Response<'_>, now: Instant) {
        let Some(seat) = self.seats.get_mut(s) else {
            return;
        };
        seat.busy = false;
        let Some(user) = seat.user.as_mut() else {
            return;
        };
        seat.due = now;
        let url = &self.run.urls[step as usize];
        let outcome = user.respond(&self.run.program, url, r, &mut self.counts);
        let login_failed = user.logged_out();
        count_end(&mut self.counts, seat, outcome.iteration_ended, now);
        if login_failed {
            count_login_failure(&mut self.counts, seat);
        }
    }

    /// Seat `s`'s request failed without a response, at `now`.
    pub(super) fn failed(&mut self, s: usize, now: Instant) {
        let Some(seat) = self.seats.get_mut(s) else {
            return;
        };
        seat.busy = false;
        if let Some(user) = seat.user.as_mut() {
            seat.due = now;
            let ended = user.fail();
            let login_failed = user.logged_out();
            count_end(&mut self.counts, seat, ended, now);
            if login_failed {
                count_login_failure(&mut self.counts, seat);
            }
        }
    }

    /// When the next think time ends, if one is under way.
    pub(super) fn next_wake(&self) -> Option<Instant> {
        self.thinking.peek().map(|Reverse((at, _))| *at)
    }

    /// The connections of the users whose think time has ended by `now` (give the list back
    /// with [`Users::done_with`]).
    pub(super) fn woken(&mut self, now: Instant) -> Vec<usize> {
        let mut woken = std::mem::take(&mut self.woken);
        woken.clear();
        while let Some(&Reverse((at, i))) = self.thinking.peek() {
            if at > now {
                break;
            }
            self.thinking.pop();
            if self.seats[i].wait == Some(at) {
                woken.push(i / self.lanes);
            }
        }
        woken
    }

    /// Gives back the list [`Users::woken`] lent.
    pub(super) fn done_with(&mut self, woken: Vec<usize>) {
        self.woken = woken;
    }
}

/// A user waits for an arrival: nothing under way, nothing left to say.
fn seat_idle(s: &Seat) -> bool {
    !s.done
        && !s.busy
        && s.pending.is_none()
        && s.wait.is_none()
        && s.arrival.is_none()
        && s.user.as_ref().is_none_or(User::between)
}

/// An iteration ended (`Some(failed)`) at `end`: counted, and a completed one's duration
/// recorded.
fn count_end(counts: &mut ScenarioCounts, seat: &Seat, ended: Option<bool>, end: Instant) {
    match ended {
        Some(false) => {
            counts.completed += 1;
            let us = end.saturating_duration_since(seat.began).as_micros();
            counts.duration.record(us as u64);
        }
        Some(true) => counts.failed += 1,
        None => {}
    }
}

/// A user's login failed (it starts its `once` steps over): the iteration it began them for
/// counts as started and failed.
fn count_login_failure(counts: &mut ScenarioCounts, seat: &mut Seat) {
    if std::mem::take(&mut seat.logging_in) {
        counts.started += 1;
        counts.failed += 1;
    }
}
