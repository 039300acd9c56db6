//! A script's hooks as the worker's request source (`crate::hooks`): the load model says
//! when and the budget, the script what (each request's bytes from its `request()`, copied
//! after `fed` as a streamed replay's are, and the step it plays: the request's target, as a
//! streamed replay's name number), how long each request waits first (`delay()`),
//! and reads the responses (`response()`); `thread:stop()` ends the worker's requests.
//!
//! A hook's error is booked as a script error: a request whose `request()` failed is started
//! and fails at once (the connection tries again on the loop's next turn, so a script that
//! always fails cannot hold the loop); a `response()` or `delay()` that failed owns no
//! request, and is counted as a connection's error is.

use super::sink::{Answer, Sink};
use super::source::{due, Draw, Next, Source, Wakes};
use crate::hooks::{HookMaker, Hooks, Offer, Uses, UNNAMED};
use crate::ledger::Ledger;
use crate::template::Render;
use crate::{Config, RequestSet, Requests};
use pelt_codec::response::Fields;
use pelt_stats::ErrorKind;
use std::sync::Arc;
use std::time::Instant;

pub(super) struct Scripted {
    /// `None`: this worker's hooks could not be made.
    hooks: Option<Box<dyn Hooks>>,
    maker: Arc<dyn HookMaker>,
    uses: Uses,
    /// Requests each `request()` call writes.
    batch: usize,
    /// Per connection: requests of its last `request()` call not taken yet.
    left: Vec<usize>,
    /// Per connection: the step its last `request()` call's requests play.
    step: Vec<u32>,
    /// Per connection: its next request has had its `delay()` (or waits for it to end).
    delayed: Vec<Option<Instant>>,
    /// Connections waiting (a delay, a retry after an error), by when.
    waiting: Wakes,
    /// The millisecond grid waits end on (see [`Scripted::wait`]).
    grid: Instant,
    /// Some worker's hooks failed: nothing is sent (known once the run has started).
    off: Option<bool>,
    /// A response read whole, for `response()`.
    fields: Fields,
    body: Vec<u8>,
    /// What `request()` is offered: each request's entry of these, or `request`.
    offers: Offers,
}

/// The requests the run would send without the script, offered to `request()`.
struct Offers {
    set: Option<Arc<RequestSet>>,
    request: Vec<u8>,
    /// An entry's template rendered (and its body, to size it).
    rendered: Vec<u8>,
    scratch: Vec<u8>,
    rng: fastrand::Rng,
}

impl Offers {
    /// Entry `t`'s request for the run's request number `seq`.
    fn offer(&mut self, t: u32, seq: u64) -> Offer<'_> {
        let Some(set) = self.set.as_deref() else {
            return Offer {
                bytes: &self.request,
                name: "",
            };
        };
        let t = t as usize;
        let name = match set.names() {
            [] => "",
            names => &names[set.name_of()[t] as usize],
        };
        let Some(template) = set.template(t) else {
            return Offer {
                bytes: &set.bytes()[set.range(t)],
                name,
            };
        };
        self.rendered.clear();
        template.render(
            &mut self.rendered,
            &mut self.scratch,
            &mut Render {
                seq,
                rng: &mut self.rng,
                lines: set.lines(),
                vars: &[],
                cookie: "",
            },
        );
        Offer {
            bytes: &self.rendered,
            name,
        }
    }
}

impl Scripted {
    /// Worker `worker`'s source (the process's workers numbered from `first`), its hooks
    /// made now.
    pub(super) fn new(
        maker: Arc<dyn HookMaker>,
        config: &Config,
        worker: usize,
        first: usize,
    ) -> Scripted {
        let set = match &config.requests_from {
            Requests::Scripted { offered, .. } => offered.clone(),
            _ => None,
        };
        let seed = set.as_ref().map_or(0, |s| s.seed);
        let mut offers = Offers {
            set,
            request: config.request.clone(),
            rendered: Vec::new(),
            scratch: Vec::new(),
            rng: fastrand::Rng::with_seed(
                seed ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
        };
        let (hooks, batch) = match maker.make(worker - first, offers.offer(0, 0)) {
            Ok(m) => (Some(m.hooks), m.batch.max(1)),
            Err(_) => (None, 1),
        };
        Scripted {
            hooks,
            uses: maker.uses(),
            maker,
            batch,
            left: Vec::new(),
            step: Vec::new(),
            delayed: Vec::new(),
            waiting: Wakes::default(),
            grid: Instant::now(),
            off: None,
            fields: Fields::default(),
            body: Vec::new(),
            offers,
        }
    }

    /// The hooks, while this worker sends.
    fn live(&mut self) -> Option<&mut Box<dyn Hooks>> {
        let maker = &self.maker;
        let off = *self.off.get_or_insert_with(|| maker.failed());
        self.hooks.as_mut().filter(|h| !off && !h.stopped())
    }

    fn grow(&mut self, i: usize) {
        if self.left.len() <= i {
            self.left.resize(i + 1, 0);
            self.step.resize(i + 1, UNNAMED);
            self.delayed.resize(i + 1, None);
        }
    }

    /// Connection `i` waits until `until`, on the worker's millisecond grid: the wait ends
    /// on the last whole millisecond at or before `until`, as wrk's millisecond timers end
    /// its `delay()`s (up to 1 ms early), so waits that end within the same millisecond wake
    /// the thread once, where exact ends would wake it for each. A delay's wait is not timed:
    /// a request's latency starts when it is sent (closed loop).
    fn wait(&mut self, i: usize, until: Instant) {
        let past = until.saturating_duration_since(self.grid).as_nanos();
        let until = self.grid + whole_ms(past);
        self.delayed[i] = Some(until);
        self.waiting.push(until, i);
    }
}

/// `ns` cut to a whole millisecond.
fn whole_ms(ns: u128) -> std::time::Duration {
    std::time::Duration::from_millis((ns / 1_000_000) as u64)
}

impl Source for Scripted {
    fn next(
        &mut self,
        i: usize,
        now: Instant,
        warm: bool,
        draw: &mut Draw<'_>,
        fed: &mut Vec<u8>,
    ) -> Option<Next> {
        self.grow(i);
        self.live()?;
        let left = self.left[i];
        if left == 0 && self.uses.delay {
            match self.delayed[i] {
                Some(until) if until > now => return None,
                Some(_) => {}
                None => {
                    let pause = self.hooks.as_mut()?.delay().unwrap_or_else(|e| {
                        draw.ledger.connection_error(ErrorKind::Script, || e);
                        Default::default()
                    });
                    if !pause.is_zero() {
                        self.wait(i, now + pause);
                        return None;
                    }
                }
            }
        }
        let due_ns = draw.model.take(draw.ledger.elapsed_ns(now), warm)?;
        let (target, seq) = draw.picker.pick(warm);
        let due = due(draw, due_ns, now);
        if left > 0 {
            self.left[i] -= 1;
        } else {
            self.delayed[i] = None;
            let hooks = self.hooks.as_mut()?;
            match hooks.request(fed, self.offers.offer(target, seq)) {
                Ok(step) => self.step[i] = step,
                Err(e) => {
                    draw.ledger.started(warm, UNNAMED, due, now);
                    draw.ledger
                        .error(warm, UNNAMED, seq, ErrorKind::Script, || e);
                    self.wait(i, now);
                    return None;
                }
            }
            self.left[i] = self.batch - 1;
        }
        Some(Next {
            target: self.step[i],
            seq,
            user: 0,
            head: false,
            due,
        })
    }

    /// A connection carries a `request()` call's requests at once (over HTTP/2, as that
    /// many streams); one request a call keeps the protocol's depth (`--streams`).
    fn depth(&self) -> Option<usize> {
        (self.batch > 1).then_some(self.batch)
    }

    fn idle(&self, i: usize) -> bool {
        self.delayed.get(i).is_none_or(|d| d.is_none())
    }

    fn done(&self, _conns: usize) -> bool {
        self.off == Some(true) || self.hooks.as_ref().is_none_or(|h| h.stopped())
    }

    fn next_wake(&self) -> Option<Instant> {
        self.waiting.next()
    }

    fn woken(&mut self, now: Instant) -> Vec<usize> {
        self.waiting.ended(now, |_, i| Some(i))
    }

    fn done_with(&mut self, woken: Vec<usize>) {
        self.waiting.give_back(woken);
    }

    fn answer(&mut self, sink: &mut Sink, ledger: &mut Ledger, _now: Instant) {
        let Some(hooks) = self.hooks.as_mut() else {
            return;
        };
        let (fields, body) = (&mut self.fields, &mut self.body);
        sink.answers(|_, _, answer| {
            let answered = match answer {
                Answer::Raw(raw) => match pelt_codec::response::read_complete(raw, fields, body) {
                    Some(status) => hooks.response(status, fields.as_slice(), body),
                    None => Ok(()),
                },
                Answer::Read(r) => hooks.response(r.status, r.headers, r.body),
                Answer::Failed => Ok(()),
            };
            if let Err(e) = answered {
                ledger.connection_error(ErrorKind::Script, || e);
            }
        });
    }

    /// The worker's end: the hooks keep the script's values for `done`.
    fn counts(mut self) -> Option<crate::scenario::ScenarioCounts> {
        if let Some(h) = self.hooks.as_mut() {
            h.end();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::whole_ms;
    use std::time::Duration;

    #[test]
    fn waits_end_on_the_last_whole_millisecond() {
        assert_eq!(whole_ms(0), Duration::ZERO);
        assert_eq!(whole_ms(999_999), Duration::ZERO);
        assert_eq!(whole_ms(1_000_000), Duration::from_millis(1));
        assert_eq!(whole_ms(1_999_999), Duration::from_millis(1));
        assert_eq!(whole_ms(12_345_678_901), Duration::from_millis(12_345));
    }
}
