//! A connection's state: its phase, and its requests in flight (slots), oldest first.

use super::{Protocol, Sink};
use crate::Config;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// No socket.
    Closed,
    /// No socket; waiting after a failed connect.
    Backoff { until: Instant },
    /// The connect is under way; requests in `slots` wait to be written.
    Connecting { deadline: Instant },
    /// Connected; the transport's handshake (TLS) is under way; requests in `slots` wait.
    Handshaking { deadline: Instant },
    /// Connected, and the protocol started (HTTP/2 may still wait for the server's SETTINGS:
    /// its own state).
    Open,
}

/// One request on a connection.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot<S> {
    /// When it was due (open-loop latency starts here; closed loop: when it started).
    pub(super) due: Instant,
    /// When its first byte was handed to the socket (service time starts here).
    pub(super) sent: Instant,
    /// When the first byte of its response arrived (`None`: none yet).
    pub(super) first: Option<Instant>,
    /// It started during the warm-up.
    pub(super) warm: bool,
    /// Which entry of `Config::targets` it sends (0 with a single request); a streamed
    /// replay's: its name number.
    pub(super) target: u32,
    /// A streamed replay's: it is a HEAD request.
    pub(super) head: bool,
    /// Its index in the run (`{{seq}}`).
    pub(super) seq: u64,
    /// Scenarios: the seat of the user that sends it (see `users.rs`).
    pub(super) user: u32,
    /// What the response features keep of its response: its reply in the connection's
    /// sink, plus one (0: none; see `sink.rs`).
    pub(super) reply: u32,
    /// What the protocol keeps per request (HTTP/1.1: nothing; HTTP/2: its stream).
    pub(super) stream: S,
}

/// The requests of one connection, oldest first: at most `--pipeline` (or `--streams`).
pub(super) struct Slots<S> {
    pub(super) ring: Box<[Slot<S>]>,
    pub(super) head: usize,
    pub(super) len: usize,
}

impl<S: Default> Slot<S> {
    pub(super) fn new(due: Instant, sent: Instant, warm: bool) -> Slot<S> {
        Slot {
            due,
            sent,
            first: None,
            warm,
            target: 0,
            head: false,
            seq: 0,
            user: 0,
            reply: 0,
            stream: S::default(),
        }
    }
}

impl<S: Copy + Default> Slots<S> {
    pub(super) fn new(depth: usize, now: Instant) -> Slots<S> {
        let empty = Slot::new(now, now, false);
        Slots {
            ring: vec![empty; depth].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }

    #[inline]
    pub(super) fn free(&self) -> usize {
        self.ring.len() - self.len
    }

    #[inline]
    pub(super) fn push(&mut self, slot: Slot<S>) {
        let at = (self.head + self.len) % self.ring.len();
        self.ring[at] = slot;
        self.len += 1;
    }

    #[inline]
    pub(super) fn pop(&mut self) -> Option<Slot<S>> {
        if self.len == 0 {
            return None;
        }
        let slot = self.ring[self.head];
        self.head = (self.head + 1) % self.ring.len();
        self.len -= 1;
        Some(slot)
    }

    #[inline]
    pub(super) fn front(&self) -> Option<&Slot<S>> {
        (self.len > 0).then(|| &self.ring[self.head])
    }

    /// The oldest request (there is one).
    #[inline]
    pub(super) fn front_mut(&mut self) -> &mut Slot<S> {
        debug_assert!(self.len > 0, "a request is in flight");
        &mut self.ring[self.head]
    }

    /// The oldest request's response began at `at`, unless it had begun before.
    #[inline]
    pub(super) fn first_byte(&mut self, at: Instant) {
        if self.len > 0 {
            self.ring[self.head].first.get_or_insert(at);
        }
    }

    /// The `k`th request, oldest first.
    #[inline]
    pub(super) fn get_mut(&mut self, k: usize) -> &mut Slot<S> {
        let at = (self.head + k) % self.ring.len();
        &mut self.ring[at]
    }

    /// HTTP/2: takes out the `k`th request, keeping the others in order (streams end in any
    /// order; usually the oldest, which is a pop).
    pub(super) fn remove(&mut self, k: usize) -> Slot<S> {
        if k == 0 {
            return self.pop().expect("a request is in flight");
        }
        let cap = self.ring.len();
        let slot = self.ring[(self.head + k) % cap];
        for j in k..self.len - 1 {
            self.ring[(self.head + j) % cap] = self.ring[(self.head + j + 1) % cap];
        }
        self.len -= 1;
        slot
    }

    /// The last `n` requests (the ones not written yet) start now.
    pub(super) fn mark_sent(&mut self, n: usize, now: Instant) {
        for k in self.len - n..self.len {
            let at = (self.head + k) % self.ring.len();
            self.ring[at].sent = now;
            self.ring[at].first = None;
        }
    }
}

/// One connection. Only the worker loop (`mod.rs`) writes its phase.
pub(super) struct Conn<P: Protocol> {
    pub(super) phase: Phase,
    pub(super) slots: Slots<P::Stream>,
    /// Requests at the back of `slots` not handed to the socket yet (waiting for a connect).
    pub(super) unwritten: usize,
    /// Open loop: in the free queue.
    pub(super) queued: bool,
    /// A streamed replay (`feed.rs`): the unwritten requests' bytes, copied when they were
    /// taken (their blocks may be gone by the write).
    pub(super) fed: Vec<u8>,
    /// The protocol's state on the current socket.
    pub(super) proto: P::Conn,
    /// Where the protocol hands the responses it reads.
    pub(super) sink: Sink,
}

impl<P: Protocol> Conn<P> {
    pub(super) fn new(depth: usize, config: &Config, now: Instant) -> Conn<P> {
        let mut proto = P::Conn::default();
        P::reset(&mut proto, config);
        Conn {
            phase: Phase::Closed,
            slots: Slots::new(depth, now),
            unwritten: 0,
            queued: false,
            fed: Vec::new(),
            proto,
            sink: Sink::new(config, P::RAW),
        }
    }

    /// Requests handed to the socket (the rest wait at the back).
    #[inline]
    pub(super) fn written(&self) -> usize {
        self.slots.len - self.unwritten
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn slots_are_a_fifo_of_the_pipeline_depth() {
        let t0 = Instant::now();
        let mut s: Slots<()> = Slots::new(3, t0);
        assert_eq!(s.free(), 3);
        for k in 0..3u64 {
            s.push(Slot::new(t0 + Duration::from_millis(k), t0, k == 0));
        }
        assert_eq!(s.free(), 0);
        assert!(s.pop().unwrap().warm, "oldest first");
        s.push(Slot::new(t0 + Duration::from_millis(9), t0, false));
        // Wrapped around: the two newest are the unwritten ones.
        let later = t0 + Duration::from_secs(1);
        s.mark_sent(2, later);
        let order: Vec<_> = std::iter::from_fn(|| s.pop()).collect();
        assert_eq!(order.len(), 3);
        assert_eq!(order[0].due, t0 + Duration::from_millis(1));
        assert_eq!(order[0].sent, t0);
        assert_eq!((order[1].sent, order[2].sent), (later, later));
        assert_eq!(order[2].due, t0 + Duration::from_millis(9));
        assert!(s.pop().is_none() && s.front().is_none());
    }
}
