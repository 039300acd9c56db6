//! Scenarios in the worker: each connection is a virtual user ([`User`]) that says which step
//! its next request sends, waits its think times, and reads the responses to the steps whose
//! captures, checks and cookies need them. Nothing here runs for a run without scenarios.

use crate::scenario::{Next, Response, Rows, ScenarioCounts, ScenarioRun, User};
use std::sync::Arc;
use std::time::Instant;

pub(super) struct Users {
    run: Arc<ScenarioRun>,
    /// By connection: its user (made when it first needs one).
    users: Vec<Option<User>>,
    /// By connection: the step its next request sends, once the user has said.
    pending: Vec<Option<u32>>,
    /// By connection: thinking until then.
    waits: Vec<Option<Instant>>,
    /// By connection: its user has nothing left to do (a unique data file ran out).
    done: Vec<bool>,
    rows: Rows,
    /// This worker's next user number (worker k of n numbers k, k + n, ...).
    next_user: u64,
    stride: u64,
    pub counts: ScenarioCounts,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Connections whose think time ended (reused by `due`).
    due: Vec<usize>,
}

impl Users {
    pub(super) fn new(run: Arc<ScenarioRun>, worker: usize, workers: usize) -> Users {
        let rows = Rows::new(&run.program, worker as u64, workers as u64, run.seed);
        let checks = vec![[0; 2]; run.program.checks.len()];
        Users {
            run,
            users: Vec::new(),
            pending: Vec::new(),
            waits: Vec::new(),
            done: Vec::new(),
            rows,
            next_user: worker as u64,
            stride: workers.max(1) as u64,
            counts: ScenarioCounts {
                checks,
                ..ScenarioCounts::default()
            },
            headers: Vec::new(),
            body: Vec::new(),
            due: Vec::new(),
        }
    }

    /// Whether connection `i`'s user has a request to send now (its step kept for
    /// [`Users::take`]); `false`: it thinks, or has nothing left to do.
    pub(super) fn ready(&mut self, i: usize, now: Instant) -> bool {
        if self.users.len() <= i {
            self.users.resize_with(i + 1, || None);
            self.pending.resize(i + 1, None);
            self.waits.resize(i + 1, None);
            self.done.resize(i + 1, false);
        }
        if self.done[i] {
            return false;
        }
        if self.pending[i].is_some() {
            return true;
        }
        if self.waits[i].is_some_and(|until| now < until) {
            return false;
        }
        self.waits[i] = None;
        let run = &self.run;
        if self.users[i].is_none() {
            let n = self.next_user;
            self.next_user += self.stride;
            let seed = run.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            match User::new(&run.program, run.scenario_of(n), &mut self.rows, seed) {
                Some(user) => self.users[i] = Some(user),
                None => {
                    self.done[i] = true;
                    return false;
                }
            }
        }
        let user = self.users[i].as_mut().expect("made above");
        loop {
            let next = user.next(&run.program, &mut self.rows);
            if user.started() {
                self.counts.started += 1;
            }
            match next {
                Next::Request(step) => {
                    user.cookie_header(&run.urls[step.id as usize]);
                    self.pending[i] = Some(step.id);
                    return true;
                }
                Next::Think {
                    pause,
                    iteration_ended,
                } => {
                    count_end(&mut self.counts, iteration_ended);
                    if !pause.is_zero() {
                        self.waits[i] = Some(now + pause);
                        return false;
                    }
                }
                Next::Done => {
                    self.done[i] = true;
                    return false;
                }
            }
        }
    }

    /// Whether every one of the `conns` connections' users has nothing left to do (the run
    /// then ends: nothing more will be sent).
    pub(super) fn all_done(&self, conns: usize) -> bool {
        self.done.len() >= conns && self.done[..conns].iter().all(|&d| d)
    }

    /// The step of the request connection `i` sends now (after [`Users::ready`] said yes).
    pub(super) fn take(&mut self, i: usize) -> u32 {
        self.pending[i].take().expect("ready() said there is one")
    }

    /// Connection `i`'s user's variables and Cookie value, for rendering its request.
    pub(super) fn render(&self, i: usize) -> (&[String], &str) {
        match self.users.get(i).and_then(Option::as_ref) {
            Some(u) => (u.vars(), u.cookie()),
            None => (&[], ""),
        }
    }

    /// The response to connection `i`'s request, as it came (`raw`).
    pub(super) fn answered(&mut self, i: usize, step: u32, raw: &[u8]) {
        let Some(user) = self.users.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        let Some(status) =
            pelt_codec::response::read_complete(raw, &mut self.headers, &mut self.body)
        else {
            return;
        };
        let r = Response {
            status,
            headers: &self.headers,
            body: &self.body,
        };
        let url = &self.run.urls[step as usize];
        let outcome = user.respond(&self.run.program, url, &r, &mut self.counts.checks);
        count_end(&mut self.counts, outcome.iteration_ended);
    }

    /// Connection `i`'s request failed without a response.
    pub(super) fn failed(&mut self, i: usize) {
        if let Some(user) = self.users.get_mut(i).and_then(Option::as_mut) {
            count_end(&mut self.counts, user.fail());
        }
    }

    /// Connections whose think time has ended by `now`.
    pub(super) fn due(&mut self, now: Instant) -> Vec<usize> {
        self.due.clear();
        for (i, w) in self.waits.iter().enumerate() {
            if w.is_some_and(|until| now >= until) {
                self.due.push(i);
            }
        }
        std::mem::take(&mut self.due)
    }

    /// Gives back the list [`Users::due`] lent.
    pub(super) fn done_with(&mut self, due: Vec<usize>) {
        self.due = due;
    }
}

fn count_end(counts: &mut ScenarioCounts, ended: Option<bool>) {
    match ended {
        Some(false) => counts.completed += 1,
        Some(true) => counts.failed += 1,
        None => {}
    }
}
