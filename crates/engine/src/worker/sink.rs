//! The response sink: where every protocol hands what it reads of each response, in h2load's
//! shape (each session reports through the client's `on_header`, `record_ttfb` and
//! `on_stream_close`). A protocol parses and frames; for each request it tells the sink its
//! response's final head ([`Sink::head`]), its fields ([`Sink::field`]), its body as it comes
//! ([`Sink::body`]; HTTP/1.1 also its bytes as they came, [`Sink::raw`]), and its end
//! ([`Sink::end`]) or failure ([`Sink::fail`]). The sink owns what the response features keep —
//! an event stream's reader, a scenario user's response until the source takes it
//! ([`Sink::answers`]), a sampled response's bytes — and books the outcome in the ledger.
//!
//! gRPC is such a feature: every call's reply reads its `grpc-status` and `grpc-message` from
//! the fields (the trailers, or a trailers-only head) and counts its messages in the body
//! ([`GrpcReply`]); its end books the call's gRPC status beside the response.
//!
//! A protocol never asks which features a run has: a new response feature is a field of
//! [`Reply`] and a line in these methods. A response no feature wants takes no reply, so a
//! plain run only books. Replies are made on first use, one per response under way (a
//! connection's streams), and reused: nothing is allocated per request once they have grown.

use super::slots::Slot;
use crate::ledger::{Ledger, Times};
use crate::scenario::Response;
use crate::stream::{StreamReader, Streams};
use crate::Config;
use pelt_codec::grpc::{self, MessageError, MessageReader};
use pelt_codec::response::Fields;
use pelt_stats::ErrorKind;
use std::time::{Duration, Instant};

/// One connection's sink.
pub(super) struct Sink {
    /// The protocol hands responses as the bytes that came (HTTP/1.1, `raw`), else as fields
    /// and body (HTTP/2).
    raw: bool,
    /// `--sample-responses`: a sampled response keeps its bytes (HTTP/1.1).
    sample: bool,
    /// Scenarios: every response goes to the user that asked for it; a script's: to its
    /// `response()` (`answers`).
    users: bool,
    /// The replies made so far; `free` those not in use (numbers, from 0).
    replies: Vec<Reply>,
    free: Vec<u32>,
    /// Replies reading an event stream.
    streaming: usize,
    /// A body brought a stream to its event limit: the protocol ends it after the read.
    cut: bool,
    /// Scenarios: the responses ended since the source last took them.
    ended: Vec<Ended>,
    /// gRPC: every response is a call's, read for its status and messages (the longest
    /// message taken; a server stream's messages are timed as events).
    grpc: Option<crate::Grpc>,
}

/// What the response features keep of one response as it comes.
#[derive(Default)]
struct Reply {
    /// Its event stream, when it is read as one.
    reader: StreamReader,
    /// Scenarios, HTTP/2: its fields (no pseudo-fields).
    fields: Fields,
    /// Its bytes as they came (HTTP/1.1, for a sample or a user), or its body (HTTP/2, for a
    /// user), up to a sample's size.
    data: Vec<u8>,
    /// gRPC: the call's status and messages.
    grpc: GrpcReply,
    /// Taken by a response (guards against giving it back twice).
    held: bool,
}

/// What a gRPC call's response says of it as it comes.
#[derive(Default)]
struct GrpcReply {
    /// Its `grpc-status`, once read (`None`: not yet, or not a number).
    status: Option<u32>,
    /// Its `grpc-message`, as it came (percent-encoded).
    message: Vec<u8>,
    /// Its messages.
    reader: MessageReader,
    /// Why its messages could not be read (the call ends with this error's status).
    broken: Option<MessageError>,
}

impl GrpcReply {
    fn clear(&mut self, max: u32) {
        self.status = None;
        self.message.clear();
        self.reader = MessageReader::new(max);
        self.broken = None;
    }

    /// The call's status: the server's, else the client's (gRPC's rules): its messages broke
    /// them, its HTTP status was not 200, it had no `grpc-status`, or its DATA ended inside a
    /// message.
    fn outcome(&self, http: u16) -> (u32, Why) {
        if let Some(e) = self.broken {
            return (e.code(), Why::Broken(e));
        }
        match self.status {
            Some(code) if http == 200 && (code != grpc::code::OK || self.reader.between()) => {
                (code, Why::Server)
            }
            Some(_) if http == 200 => (grpc::code::INTERNAL, Why::Cut),
            _ if http != 200 => (grpc::code_of_http(http), Why::Http(http)),
            _ => (grpc::code::INTERNAL, Why::NoStatus),
        }
    }

    /// The message `why` gives the call's status (made only for the first call of a status).
    fn message(&self, why: Why) -> Option<String> {
        Some(match why {
            Why::Server if self.message.is_empty() => return None,
            Why::Server => grpc::decode_message(&self.message),
            Why::Broken(e) => format!("pelt: {e}"),
            Why::Cut => "pelt: the call's DATA ended inside a message".into(),
            Why::Http(http) => format!("pelt: HTTP status {http}, not a gRPC response"),
            Why::NoStatus => "pelt: the response ended without a grpc-status".into(),
            Why::Limit => "pelt: the stream reached --stream-limit".into(),
        })
    }
}

/// Whose a call's status is.
#[derive(Clone, Copy)]
enum Why {
    /// The server's `grpc-status`.
    Server,
    /// The client's: the messages broke gRPC's rules, the DATA ended inside a message, the
    /// HTTP status was not 200, or no `grpc-status` came.
    Broken(MessageError),
    Cut,
    Http(u16),
    NoStatus,
    /// pelt's: it cut the stream at its limit.
    Limit,
}

/// A scenario's response, ended, waiting for its user.
#[derive(Clone, Copy)]
struct Ended {
    user: u32,
    step: u32,
    status: u16,
    /// Its reply's number plus one; 0: the request failed.
    reply: u32,
}

/// What [`Sink::answers`] hands the source for each response that ended.
pub(super) enum Answer<'a> {
    /// As it came over HTTP/1.1, head and body (possibly kept only in part).
    Raw(&'a [u8]),
    /// Read from HTTP/2 frames.
    Read(Response<'a>),
    /// The request failed without a response.
    Failed,
}

impl Sink {
    pub(super) fn new(config: &Config, raw: bool) -> Sink {
        Sink {
            raw,
            sample: raw && config.sample_responses,
            users: config.scenario().is_some()
                || config.script().is_some_and(|s| s.uses().response),
            replies: Vec::new(),
            free: Vec::new(),
            streaming: 0,
            cut: false,
            ended: Vec::new(),
            grpc: config.http2().and_then(|h| h.grpc.clone()),
        }
    }

    /// The connection's socket closed: the replies of its responses go back (their streams
    /// not booked), but for those whose user has not taken them yet.
    pub(super) fn reset(&mut self) {
        if self.replies.is_empty() {
            return;
        }
        self.free.clear();
        self.streaming = 0;
        self.cut = false;
        for (r, reply) in self.replies.iter_mut().enumerate() {
            let r = r as u32;
            if !self.ended.iter().any(|e| e.reply == r + 1) {
                reply.reader.forget();
                reply.held = false;
                self.free.push(r);
            }
        }
    }

    /// Reply `r` (its number plus one; 0: none).
    #[inline]
    fn get(&mut self, r: u32) -> Option<&mut Reply> {
        let r = r.checked_sub(1)?;
        self.replies.get_mut(r as usize)
    }

    /// `slot`'s reply, taken now if it has none.
    #[inline]
    fn reply<S>(&mut self, slot: &mut Slot<S>) -> &mut Reply {
        self.reply_of(&mut slot.reply)
    }

    /// Reply `r` (its number plus one), taken now if `r` is 0.
    fn reply_of(&mut self, slot: &mut u32) -> &mut Reply {
        if *slot == 0 {
            let r = match self.free.pop() {
                Some(r) => r,
                None => {
                    self.replies.push(Reply::default());
                    self.replies.len() as u32 - 1
                }
            };
            let reply = &mut self.replies[r as usize];
            reply.fields.clear();
            reply.data.clear();
            if let Some(g) = &self.grpc {
                reply.grpc.clear(g.max_message);
            }
            reply.held = true;
            *slot = r + 1;
        }
        &mut self.replies[*slot as usize - 1]
    }

    /// Reply `r` goes back; a stream it was reading is not booked.
    pub(super) fn release(&mut self, r: u32) {
        let Some(reply) = self.get(r).filter(|reply| reply.held) else {
            return;
        };
        reply.held = false;
        if reply.reader.is_on() {
            reply.reader.forget();
            self.streaming -= 1;
        }
        self.free.push(r - 1);
    }

    /// `slot`'s response has its final head (HTTP/1.1 says it with each piece of its body):
    /// read as a stream from `at` when it is one (`event_stream`: a `text/event-stream`),
    /// `--stream` reads every response, or it answers a server-streaming gRPC call (each
    /// message an event).
    #[inline]
    pub(super) fn head<S>(
        &mut self,
        slot: &mut Slot<S>,
        event_stream: bool,
        at: Instant,
        ledger: &Ledger,
        streams: &Streams,
    ) {
        let grpc_stream = self.grpc.as_ref().is_some_and(|g| g.server_streaming);
        if !streams.reads(event_stream) && !grpc_stream {
            return;
        }
        let (warm, sent) = (slot.warm, slot.sent);
        let start = ledger.origin(slot.due, sent);
        let reader = &mut self.reply(slot).reader;
        if !reader.is_on() {
            reader.begin(warm, start, sent, at, event_stream, streams.slo);
            self.streaming += 1;
        }
    }

    /// An interim head (1xx) of `slot`'s response ended: its fields are not the response's.
    pub(super) fn interim<S>(&mut self, slot: &Slot<S>) {
        if let Some(reply) = self.get(slot.reply) {
            reply.fields.clear();
        }
    }

    /// A field of `slot`'s response (HTTP/2; pseudo-fields are not kept).
    #[inline]
    pub(super) fn field<S>(&mut self, slot: &mut Slot<S>, name: &[u8], value: &[u8]) {
        if self.users && !name.starts_with(b":") {
            self.reply(slot).fields.push_bytes(name, value);
        }
        if self.grpc.is_some() {
            match name {
                b"grpc-status" => self.reply(slot).grpc.status = grpc::parse_status(value),
                b"grpc-message" => {
                    let message = &mut self.reply(slot).grpc.message;
                    message.clear();
                    message.extend_from_slice(&value[..value.len().min(1024)]);
                }
                _ => {}
            }
        }
    }

    /// Body bytes of `slot`'s response, arrived at `at`: its event stream reads them; a user
    /// keeps them (HTTP/2; HTTP/1.1 keeps them in `raw`).
    #[inline]
    pub(super) fn body<S>(
        &mut self,
        slot: &mut Slot<S>,
        bytes: &[u8],
        at: Instant,
        ledger: &mut Ledger,
        streams: &Streams,
    ) {
        if self.users && !self.raw {
            keep(&mut self.reply(slot).data, bytes);
        }
        if self.grpc.is_some() {
            // The call's messages are its events (a server stream's reader is on).
            let Reply {
                grpc: g, reader, ..
            } = self.reply(slot);
            let before = g.reader.messages();
            if g.broken.is_none() {
                g.broken = g.reader.feed(bytes, &mut |_| {}).err();
            }
            let messages = g.reader.messages() - before;
            self.cut |= reader.framed(bytes.len(), messages, at, ledger, streams);
            return;
        }
        if let Some(reply) = self.get(slot.reply) {
            self.cut |= reply.reader.feed(bytes, at, ledger, streams);
        }
    }

    /// HTTP/1.1: bytes of `slot`'s response as they came, head and body, kept when a sample
    /// or a user wants them.
    #[inline]
    pub(super) fn raw<S>(&mut self, slot: &mut Slot<S>, bytes: &[u8]) {
        if self.sample || self.users {
            keep(&mut self.reply(slot).data, bytes);
        }
    }

    /// `slot`'s response ended at `at` with its final `status`: its stream (if it was one)
    /// and the response are booked, complete when the stream ended (pelt's cut: earlier) or
    /// at `at`; a scenario's user gets it.
    #[inline]
    pub(super) fn end<S>(&mut self, slot: &Slot<S>, status: u16, at: Instant, ledger: &mut Ledger) {
        if self.grpc.is_some() {
            let code = self.end_call(slot, status, at, ledger);
            if !self.users {
                return self.release(slot.reply);
            }
            // A scenario's call: its user reads the gRPC status as the step's status.
            return self.hand_over(slot, code as u16);
        }
        if slot.reply == 0 && !self.users {
            // Nothing kept of it (a plain run): booked, complete now.
            return book(ledger, slot, status, at);
        }
        self.end_kept(slot, status, at, ledger);
    }

    /// gRPC: `slot`'s call ended; booked as a response with its HTTP `status` (a server
    /// stream's at its end, its messages' figures with it), and its gRPC status (a call that
    /// sent no field has no reply: the server's HTTP status says it; one pelt cut at a
    /// stream's limit is `CANCELLED`, as a client that cancels it sees it). Returns that status.
    fn end_call<S>(
        &mut self,
        slot: &Slot<S>,
        status: u16,
        at: Instant,
        ledger: &mut Ledger,
    ) -> u32 {
        let mut done = at;
        let mut cut = false;
        if let Some(reply) = self.get(slot.reply) {
            if reply.reader.is_on() {
                cut = reply.reader.cut();
                done = reply.reader.finish(at, status, ledger);
                self.streaming -= 1;
            }
        }
        book(ledger, slot, status, done);
        let empty = GrpcReply::default();
        let g = self.get(slot.reply).map_or(&empty, |r| &r.grpc);
        let (code, why) = match g.outcome(status) {
            _ if cut => (grpc::code::CANCELLED, Why::Limit),
            outcome => outcome,
        };
        ledger.grpc_call(slot.warm, code, g.reader.messages(), || g.message(why));
        code
    }

    /// `end` for a response something was kept of.
    fn end_kept<S>(&mut self, slot: &Slot<S>, status: u16, at: Instant, ledger: &mut Ledger) {
        let mut done = at;
        if let Some(reply) = self.get(slot.reply) {
            if reply.reader.is_on() {
                done = reply.reader.finish(at, status, ledger);
                self.streaming -= 1;
            }
        }
        if self.sample {
            if let Some(reply) = self.get(slot.reply) {
                ledger.keep_response(&reply.data);
            }
        }
        book(ledger, slot, status, done);
        if !self.users {
            return self.release(slot.reply);
        }
        self.hand_over(slot, status);
    }

    /// `slot`'s response, ended with `status`, is kept for its user until the source takes it
    /// (`reset` spares it).
    fn hand_over<S>(&mut self, slot: &Slot<S>, status: u16) {
        let mut reply = slot.reply;
        self.reply_of(&mut reply);
        self.ended.push(Ended {
            user: slot.user,
            step: slot.target,
            status,
            reply,
        });
    }

    /// `slot`'s request failed with an error of `kind`, found while reading (a reset stream,
    /// a stream without a status): booked, and a scenario's user hears of it. (A failure the
    /// worker finds is booked by `Worker::lost`, which releases the reply.)
    pub(super) fn fail<S>(
        &mut self,
        slot: &Slot<S>,
        kind: ErrorKind,
        ledger: &mut Ledger,
        message: impl FnOnce() -> String,
    ) {
        self.release(slot.reply);
        ledger.error(slot.warm, slot.target, slot.seq, kind, message);
        if self.users {
            self.ended.push(Ended {
                user: slot.user,
                step: slot.target,
                status: 0,
                reply: 0,
            });
        }
    }

    /// [`Sink::fail`] for an error that came with the protocol's `code` (a server's reset,
    /// a QUIC connection's end), counted by it too.
    pub(super) fn fail_coded<S>(
        &mut self,
        slot: &Slot<S>,
        kind: ErrorKind,
        code: &str,
        ledger: &mut Ledger,
        message: impl FnOnce() -> String,
    ) {
        self.fail(slot, kind, ledger, message);
        ledger.error_code(slot.warm, kind, code);
    }

    /// gRPC: the reply messages `slot`'s call has read whole so far.
    #[inline]
    pub(super) fn replies<S>(&mut self, slot: &Slot<S>) -> u64 {
        self.get(slot.reply).map_or(0, |r| r.grpc.reader.messages())
    }

    /// The protocol hands each response's fields (HTTP/2 decodes them only then).
    pub(super) fn wants_fields(&self) -> bool {
        self.users || self.grpc.is_some()
    }

    /// Responses read as event streams now.
    #[inline]
    pub(super) fn streaming(&self) -> usize {
        self.streaming
    }

    /// Whether `slot`'s response is read as a stream.
    #[inline]
    pub(super) fn is_stream<S>(&mut self, slot: &Slot<S>) -> bool {
        self.get(slot.reply).is_some_and(|r| r.reader.is_on())
    }

    /// A read brought a stream to its event limit (asked once: the flag clears).
    #[inline]
    pub(super) fn take_cut(&mut self) -> bool {
        std::mem::take(&mut self.cut)
    }

    /// When pelt ends `slot`'s stream, if it must at `now` (see `StreamReader::end_at`).
    pub(super) fn end_at<S>(
        &mut self,
        slot: &Slot<S>,
        now: Instant,
        streams: &Streams,
    ) -> Option<Instant> {
        self.get(slot.reply)?.reader.end_at(now, streams)
    }

    /// When `slot`'s request times out: `timeout` after its stream's last bytes, or after
    /// its send.
    pub(super) fn deadline<S>(&mut self, slot: &Slot<S>, timeout: Duration) -> Instant {
        match self.get(slot.reply) {
            Some(reply) => reply.reader.deadline(slot.sent, timeout),
            None => slot.sent + timeout,
        }
    }

    /// Scenarios: hands each response that ended since the last call (or each failure) to
    /// `each` with its user's seat and step, oldest first, and takes back their replies.
    pub(super) fn answers(&mut self, mut each: impl FnMut(u32, u32, Answer<'_>)) {
        if self.ended.is_empty() {
            return;
        }
        let mut ended = std::mem::take(&mut self.ended);
        let raw = self.raw;
        for e in &ended {
            let answer = match self.get(e.reply) {
                None => Answer::Failed,
                Some(reply) if raw => Answer::Raw(&reply.data),
                Some(reply) => Answer::Read(Response {
                    status: e.status,
                    headers: reply.fields.as_slice(),
                    body: &reply.data,
                }),
            };
            each(e.user, e.step, answer);
            self.release(e.reply);
        }
        ended.clear();
        self.ended = ended;
    }
}

/// Books `slot`'s response, complete at `done`.
#[inline]
fn book<S>(ledger: &mut Ledger, slot: &Slot<S>, status: u16, done: Instant) {
    let times = Times {
        due: slot.due,
        sent: slot.sent,
        first: slot.first.unwrap_or(done),
        done,
    };
    ledger.response(slot.warm, slot.target, slot.seq, status, times);
}

/// Keeps `bytes` after `kept`, up to what a sample keeps.
#[inline]
fn keep(kept: &mut Vec<u8>, bytes: &[u8]) {
    let room = pelt_stats::SAMPLED_RESPONSE_MAX.saturating_sub(kept.len());
    kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
}
