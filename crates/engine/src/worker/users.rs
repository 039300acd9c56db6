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

use super::sink::{Answer, Sink};
use super::source::{self, Arrival, Draw, Source, Wakes};
use crate::ledger::Ledger;
use crate::scenario::{Next, Response, Rows, ScenarioCounts, ScenarioRun, User};
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
    counts: ScenarioCounts,
    headers: pelt_codec::response::Fields,
    body: Vec<u8>,
    /// Think times under way, soonest first: (end, seat).
    thinking: Wakes,
    /// gRPC: by step, the codec that makes a reply JSON for the step's captures and checks
    /// (`None`: the step reads no reply body); and the JSON, made per reply.
    calls: Vec<Option<Arc<dyn crate::MessageCodec>>>,
    json: String,
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
            thinking: Wakes::default(),
            calls: Vec::new(),
            json: String::new(),
        }
    }

    /// A gRPC scenario: the steps are calls, `codecs` their methods' (by step); a step whose
    /// captures or checks read the reply gets its messages as JSON.
    pub(super) fn read_calls(&mut self, codecs: &[Arc<dyn crate::MessageCodec>]) {
        let mut keeps = vec![false; codecs.len()];
        for s in &self.run.program.scenarios {
            for op in s.once.iter().chain(&s.flow) {
                if let crate::scenario::Op::Request(step) = op {
                    if let Some(k) = keeps.get_mut(step.id as usize) {
                        *k = step.keeps_body();
                    }
                }
            }
        }
        self.calls = codecs
            .iter()
            .zip(keeps)
            .map(|(c, keep)| keep.then(|| c.clone()))
            .collect();
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
    /// [`Users::waits`]), due at `due`.
    fn seat_arrival(&mut self, i: usize, due: Instant, now: Instant) {
        let seats = self.seats_of(i, now);
        if let Some(s) = seats.into_iter().find(|&s| seat_idle(&self.seats[s])) {
            self.seats[s].arrival = Some(due);
        }
    }

    /// Open loop: whether a user of connection `i` waits for an arrival (nothing under way).
    fn waits(&self, i: usize) -> bool {
        let range = i * self.lanes..(i + 1) * self.lanes;
        range
            .into_iter()
            .any(|s| self.seats.get(s).is_none_or(seat_idle))
    }

    /// A user of connection `i` with a request to send now (its step kept for
    /// [`Users::take`]); `None`: each one has a request out, thinks, waits for an arrival, or
    /// has nothing left to do.
    fn ready(&mut self, i: usize, now: Instant) -> Option<usize> {
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
                        self.thinking.push(until, s);
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

    /// The step of the request seat `s`'s user sends now (after [`Users::ready`] named it),
    /// and when it was due (open loop: its latency counts from then).
    fn take(&mut self, s: usize) -> (u32, Instant) {
        let seat = &mut self.seats[s];
        let step = seat.pending.take().expect("ready() said there is one");
        seat.busy = true;
        (step, seat.due)
    }

    /// The response to seat `s`'s request, as it came over HTTP/1.1 (`raw`), read at `now`.
    fn answered_raw(&mut self, s: usize, step: u32, raw: &[u8], now: Instant) {
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

    /// The response to seat `s`'s call (a gRPC step): its reply's messages read as JSON when
    /// the step reads them (a reply that is not its method's reads as no body).
    fn answered_call(&mut self, s: usize, step: u32, r: &Response<'_>, now: Instant) {
        let Some(Some(codec)) = self.calls.get(step as usize) else {
            return self.answered(s, step, r, now);
        };
        let mut json = std::mem::take(&mut self.json);
        json.clear();
        if codec.decode(r.body, &mut json).is_err() {
            json.clear();
        }
        let read = Response {
            status: r.status,
            headers: r.headers,
            body: json.as_bytes(),
        };
        self.answered(s, step, &read, now);
        self.json = json;
    }

    /// The response to seat `s`'s request (to step `step`), read at `now`.
    fn answered(&mut self, s: usize, step: u32, r: &Response<'_>, now: Instant) {
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
    fn seat_failed(&mut self, s: usize, now: Instant) {
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
}

/// The scenario's users as the worker's request source: each connection's users say which
/// step they send next and when it was due, and read the responses to their requests.
impl Source for Users {
    const ANSWERS: bool = true;

    fn next(
        &mut self,
        i: usize,
        now: Instant,
        warm: bool,
        draw: &mut Draw<'_>,
        _fed: &mut Vec<u8>,
    ) -> Option<source::Next> {
        // Asked only while the budget has room, so no iteration begins that sends nothing.
        if draw.model.exhausted() {
            return None;
        }
        let seat = self.ready(i, now).filter(|_| draw.model.spend(warm))?;
        let (step, due) = self.take(seat);
        let seq = draw.picker.pick(warm).1;
        Some(source::Next {
            target: step,
            seq,
            user: seat as u32,
            head: false,
            due: if draw.model.is_open() { due } else { now },
        })
    }

    /// The arrival is an iteration for an idle user of the connection.
    fn arrive(&mut self, i: usize, draw: &mut Draw<'_>, elapsed_ns: u64, now: Instant) -> Arrival {
        if !self.waits(i) {
            return Arrival::Skip;
        }
        let Some(due_ns) = draw.model.arrive(elapsed_ns) else {
            return Arrival::Stop;
        };
        self.seat_arrival(i, draw.ledger.at_ns(due_ns), now);
        Arrival::Refill
    }

    /// A connection is free when one of its users waits for an arrival.
    fn idle(&self, i: usize) -> bool {
        self.waits(i)
    }

    /// Every one of the `conns` connections' users has nothing left to do (a unique data
    /// file ran out).
    fn done(&self, conns: usize) -> bool {
        let n = conns * self.lanes;
        self.seats.len() >= n && self.seats[..n].iter().all(|s| s.done)
    }

    /// When the next think time ends, if one is under way.
    fn next_wake(&self) -> Option<Instant> {
        self.thinking.next()
    }

    /// The connections of the users whose think time has ended by `now`.
    fn woken(&mut self, now: Instant) -> Vec<usize> {
        let (seats, lanes) = (&self.seats, self.lanes);
        self.thinking.ended(now, |at, i| {
            (seats[i].wait == Some(at)).then_some(i / lanes)
        })
    }

    fn done_with(&mut self, woken: Vec<usize>) {
        self.thinking.give_back(woken);
    }

    fn answer(&mut self, sink: &mut Sink, _ledger: &mut Ledger, now: Instant) {
        sink.answers(|user, step, answer| match answer {
            Answer::Raw(raw) => self.answered_raw(user as usize, step, raw, now),
            Answer::Read(r) => self.answered_call(user as usize, step, &r, now),
            Answer::Failed => self.seat_failed(user as usize, now),
        });
    }

    fn failed(&mut self, user: u32, now: Instant) {
        self.seat_failed(user as usize, now);
    }

    /// The user's variables and Cookie value.
    fn render(&self, user: u32) -> (&[String], &str) {
        match self.seats.get(user as usize).and_then(|s| s.user.as_ref()) {
            Some(u) => (u.vars(), u.cookie()),
            None => (&[], ""),
        }
    }

    fn counts(self) -> Option<ScenarioCounts> {
        Some(self.counts)
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
