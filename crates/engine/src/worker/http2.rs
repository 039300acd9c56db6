//! HTTP/2 on a connection: the session started after the connect (and TLS), streams opened as
//! the server's limit allows, frames flushed once per batch of events, responses booked at
//! END_STREAM, GOAWAY and RST_STREAM, and streams past the timeout reset.
//!
//! Templates and scenarios give each open stream a [`Lane`]: the request rendered for it (a
//! template renders HTTP/1.1 text, turned into a header block and a body by
//! [`h2::encode_request`]) and, for a scenario's user, its response as it comes (header fields
//! and body bytes from the session). Lanes are made when the connection starts, one per
//! stream it may carry, and reused: no allocation per request once they have grown.

use super::*;
use crate::scenario::Response;
use crate::stream::{StreamReader, Streams};
use crate::template::Render;
use crate::Http2 as Request;
use pelt_codec::h2::{self as h2, Session};
use pelt_codec::response::Fields;

/// The HTTP/2 protocol: the request, and the batching of each connection's frames.
pub(super) struct Http2<'a> {
    request: &'a Request,
    /// The connections with frames waiting for the turn's `flush`.
    deferred: Vec<usize>,
    /// Templates: a request rendered as HTTP/1.1 text, and its body while its length is found.
    text: Vec<u8>,
    scratch: Vec<u8>,
}

/// One stream's storage, for templates and scenarios.
#[derive(Default)]
struct Lane {
    /// The request rendered from its template (`rendered`), else the entry's own is sent.
    block: Vec<u8>,
    body: Vec<u8>,
    rendered: bool,
    /// Scenarios: the seat of the user whose request it is, and its step.
    user: u32,
    step: u32,
    /// Scenarios: its response so far (the final status once it ended), or its failure.
    status: u16,
    fields: Fields,
    data: Vec<u8>,
    failed: bool,
}

/// The header block and body of entry `target` (the request itself without `--targets`).
#[inline]
fn entry(request: &Request, target: u32) -> (&[u8], &[u8]) {
    match request.targets.get(target as usize) {
        Some(t) => (&t.header_block, &t.body),
        None => (&request.header_block, &request.body),
    }
}

impl<'a> Http2<'a> {
    pub(super) fn new(request: &'a Request) -> Http2<'a> {
        Http2 {
            request,
            deferred: Vec::new(),
            text: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

/// One HTTP/2 connection's protocol state (from the preface on; `None` before).
pub(super) struct H2 {
    session: Session,
    /// Frames not handed to the transport yet.
    out: Vec<u8>,
    /// In the list of connections to flush before the worker waits.
    deferred: bool,
    /// Until the server's SETTINGS come, no stream opens; they must come by this time.
    settle_by: Instant,
    /// A request body waits for a window (its DATA goes when a WINDOW_UPDATE opens it).
    blocked: bool,
    /// Templates and scenarios: a lane per stream the connection may carry (none otherwise).
    lanes: Lanes,
    /// The readers of the streams that carry event streams.
    readers: Readers,
}

/// A connection's stream readers: made when a response is an event stream, kept for the
/// next one (at most one per stream the connection may carry).
#[derive(Default)]
struct Readers {
    all: Vec<StreamReader>,
    free: Vec<u32>,
    /// Readers in use.
    on: usize,
    /// A read brought a stream to its event limit: pelt resets it after the read.
    cut: bool,
}

impl Readers {
    /// A reader for a stream: its number plus one.
    fn take(&mut self) -> u32 {
        self.on += 1;
        match self.free.pop() {
            Some(r) => r + 1,
            None => {
                self.all.push(StreamReader::default());
                self.all.len() as u32
            }
        }
    }

    /// Reader `r` (plus one; 0: none).
    #[inline]
    fn get(&mut self, r: u32) -> Option<&mut StreamReader> {
        let r = r.checked_sub(1)?;
        self.all.get_mut(r as usize)
    }

    /// The stream's response ended at `at` (its final status booked apart): its figures are
    /// booked and the reader goes back. Returns when it ended (for pelt's cuts, earlier).
    fn finish(&mut self, r: u32, at: Instant, ledger: &mut Ledger) -> Instant {
        let Some(reader) = self.get(r) else {
            return at;
        };
        let done = reader.finish(at, ledger);
        self.put_back(r);
        done
    }

    /// The stream failed: the reader goes back, its stream not booked.
    fn release(&mut self, r: u32) {
        if let Some(reader) = self.get(r) {
            reader.forget();
            self.put_back(r);
        }
    }

    fn put_back(&mut self, r: u32) {
        self.free.push(r - 1);
        self.on -= 1;
    }
}

/// A connection's lanes: all of them, those not in use, and those whose stream the last read
/// ended (for `answer`).
#[derive(Default)]
struct Lanes {
    all: Vec<Lane>,
    free: Vec<u32>,
    ended: Vec<u32>,
}

impl Lanes {
    fn new(n: usize) -> Lanes {
        Lanes {
            all: (0..n).map(|_| Lane::default()).collect(),
            free: (0..n as u32).rev().collect(),
            ended: Vec::with_capacity(n),
        }
    }

    /// `slot`'s stream ended with a final `status` (0: without one): its lane goes back,
    /// its outcome kept for `answer` when `answers` (scenarios).
    fn end(&mut self, slot: &Slot<Stream>, status: u16, answers: bool) {
        let Some(l) = slot.stream.lane.checked_sub(1) else {
            return;
        };
        self.free.push(l);
        if answers {
            let lane = &mut self.all[l as usize];
            lane.status = status;
            lane.failed = status == 0;
            self.ended.push(l);
        }
    }
}

/// One request's stream.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stream {
    /// Its id (0: not written yet).
    id: u32,
    /// The final status its response has so far (0: none yet).
    status: u16,
    /// Response bytes taken since its receive window was last opened.
    unacked: u32,
    /// Request body bytes sent, and the stream's send window.
    body_sent: usize,
    send_window: i64,
    /// Its lane, plus one (0: none).
    lane: u32,
    /// Its reader (an event stream), plus one (0: none).
    reader: u32,
}

impl Slots<Stream> {
    /// Where the request on stream `id` is.
    #[inline]
    fn position(&self, id: u32) -> Option<usize> {
        (0..self.len).find(|&k| self.ring[(self.head + k) % self.ring.len()].stream.id == id)
    }
}

type W<'w, 'a, I, T> = Worker<'w, I, Http2<'a>, T>;

impl<'a> Protocol for Http2<'a> {
    type Stream = Stream;
    type Conn = Option<Box<H2>>;
    const MULTIPLEXED: bool = true;

    fn reset(conn: &mut Option<Box<H2>>, _config: &Config) {
        *conn = None;
    }

    #[inline]
    fn writing(conn: &Option<Box<H2>>) -> bool {
        conn.as_ref().is_some_and(|h| !h.out.is_empty())
    }

    /// The streams the server allows (none after its GOAWAY), up to the slots. Before its
    /// SETTINGS say how many, closed loop takes one (to connect) and open loop queues up to
    /// --streams.
    #[inline]
    fn room<I: Io, T: Transport>(w: &W<'_, 'a, I, T>, i: usize) -> usize {
        let c = &w.conns[i];
        let limit = match c.proto.as_ref() {
            Some(h) if h.session.settled() => {
                if h.session.can_open() {
                    (h.session.max_streams() as usize).min(c.slots.ring.len())
                } else {
                    0
                }
            }
            _ if w.model.is_open() => c.slots.ring.len(),
            _ => 1,
        };
        limit.saturating_sub(c.slots.len)
    }

    /// Starts the session with the preface queued (over TLS: if the server chose `h2` by
    /// ALPN), so the frames that follow in the same read are read as HTTP/2; the requests
    /// wait for the server's SETTINGS.
    fn start(
        conn: &mut Conn<Self>,
        alpn: Option<&[u8]>,
        config: &Config,
        now: Instant,
    ) -> Result<(), AfterRead> {
        if config.tls.is_some() && alpn != Some(b"h2") {
            return Err(AfterRead::Fail(
                ErrorKind::Protocol,
                "the server did not choose HTTP/2 (h2) in the TLS handshake's ALPN; \
                 it speaks HTTP/1.1 only, so drop --http2"
                    .to_string(),
            ));
        }
        let mut out = Vec::with_capacity(4096);
        h2::client_preface(&mut out);
        let mut session = Session::new();
        if config.scenario.is_some() {
            session.read_responses();
        }
        let templates = config.targets.as_ref().is_some_and(|s| s.has_templates());
        let lanes = if templates || config.scenario.is_some() {
            conn.slots.ring.len()
        } else {
            0
        };
        conn.proto = Some(Box::new(H2 {
            session,
            out,
            deferred: false,
            settle_by: now + config.connect_timeout,
            blocked: false,
            lanes: Lanes::new(lanes),
            readers: Readers::default(),
        }));
        Ok(())
    }

    /// Hands each scenario response (or failed stream) the last read ended to its user.
    fn answer(conn: &mut Option<Box<H2>>, users: &mut Users, now: Instant) {
        let Some(h2) = conn.as_mut() else {
            return;
        };
        for &k in &h2.lanes.ended {
            let lane = &h2.lanes.all[k as usize];
            if lane.failed {
                users.failed(lane.user as usize, now);
            } else {
                let r = Response {
                    status: lane.status,
                    headers: lane.fields.as_slice(),
                    body: &lane.data,
                };
                users.answered(lane.user as usize, lane.step, &r, now);
            }
        }
        h2.lanes.ended.clear();
    }

    /// Once the server's SETTINGS are in: opens streams for the requests not written yet,
    /// sends the request bodies the windows now let through, and acts on a GOAWAY; then
    /// queues the frames for the turn's flush.
    fn write<I: Io, T: Transport>(w: &mut W<'_, 'a, I, T>, i: usize, now: Instant) {
        let settled = w.conns[i]
            .proto
            .as_ref()
            .is_some_and(|h| h.session.settled());
        if settled && !goaway(w, i, now) {
            open_streams(w, i, now);
            send_bodies(w, i);
        }
        flush(w, i);
    }

    #[inline]
    fn receive(
        conn: &mut Conn<Self>,
        ledger: &mut Ledger,
        config: &Config,
        data: &[u8],
        arrived: Option<Instant>,
        now: Instant,
        _sending: bool,
    ) -> AfterRead {
        receive(conn, ledger, config, data, arrived, now)
    }

    fn on_eof<I: Io, T: Transport>(w: &mut W<'_, 'a, I, T>, i: usize, now: Instant) {
        on_eof(w, i, now);
    }

    /// No SETTINGS from the server in time: the connection fails. Streams older than
    /// --timeout end as timeouts (each reset with CANCEL); the connection and its other
    /// streams go on.
    fn expire<I: Io, T: Transport>(
        w: &mut W<'_, 'a, I, T>,
        i: usize,
        now: Instant,
    ) -> Option<Instant> {
        let h2 = w.conns[i].proto.as_ref()?;
        if !h2.session.settled() {
            if now < h2.settle_by {
                return Some(h2.settle_by);
            }
            let t = w.config.connect_timeout;
            w.fail(i, ErrorKind::Timeout, now, || {
                format!("no HTTP/2 SETTINGS from the server within {t:?}")
            });
            return None;
        }
        if h2.readers.on > 0 {
            // Deadlines differ per stream: looked at every scan.
            expire_streamed(w, i, now);
            return Some(now);
        }
        let sent = w.conns[i].slots.front()?.sent;
        let deadline = sent + w.config.timeout;
        if now < deadline {
            // A response not yet known to be a stream may become one, cut at its time limit.
            let limit = w.config.streams.max_time.map(|l| sent + l);
            return Some(limit.map_or(deadline, |l| l.min(deadline)));
        }
        expire_streams(w, i, now);
        // The streams left were sent no sooner than the one that expired.
        Some(now)
    }

    /// Hands every connection's queued frames to the transport: every stream a turn's reads
    /// completed restarts in one write.
    fn flush<I: Io, T: Transport>(w: &mut W<'_, 'a, I, T>, now: Instant) {
        if w.proto.deferred.is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut w.proto.deferred);
        for &i in &list {
            // A connection closed (and maybe reopened) since has nothing of the turn's left.
            if let Some(h2) = w.conns[i].proto.as_mut().filter(|h| h.deferred) {
                h2.deferred = false;
                flush_now(w, i, now);
            }
        }
        list.clear();
        // Queued meanwhile (a connection that failed in the flush and connected again): next turn.
        list.append(&mut w.proto.deferred);
        w.proto.deferred = list;
    }
}

/// Queues connection `i`'s frames for the turn's flush (`Protocol::flush`).
#[inline]
fn flush<I: Io, T: Transport>(w: &mut W<'_, '_, I, T>, i: usize) {
    if let Some(h2) = w.conns[i].proto.as_mut() {
        if !h2.out.is_empty() && !h2.deferred {
            h2.deferred = true;
            w.proto.deferred.push(i);
        }
    }
}

/// Hands the frames queued on connection `i` to the transport (what the socket does not take
/// waits for it to be writable).
fn flush_now<I: Io, T: Transport>(w: &mut W<'_, '_, I, T>, i: usize, now: Instant) {
    let Some(h2) = w.conns[i].proto.as_mut() else {
        return;
    };
    if let Err(e) = w
        .transport
        .send_buf(&mut w.io, &mut w.ledger, i, &mut h2.out)
    {
        w.fail(i, errno_kind(e, false), now, || format!("write: {e}"));
    }
}

/// Opens a stream for each request not written yet on connection `i`, as far as the server's
/// stream limit allows, with its HEADERS and as much of its body as the windows allow.
fn open_streams<I: Io, T: Transport>(w: &mut W<'_, '_, I, T>, i: usize, now: Instant) {
    let Worker {
        config,
        conns,
        proto,
        values,
        users,
        ..
    } = w;
    let request = proto.request;
    let conn = &mut conns[i];
    let Some(h2) = conn.proto.as_mut() else {
        return;
    };
    let H2 {
        session,
        out,
        blocked,
        lanes,
        ..
    } = &mut **h2;
    let limit = if session.can_open() {
        session.max_streams() as usize
    } else {
        0
    };
    let written = conn.slots.len - conn.unwritten;
    let n = conn.unwritten.min(limit.saturating_sub(written));
    let window = session.initial_window() as i64;
    for k in written..written + n {
        let id = session.open_stream();
        let slot = conn.slots.get_mut(k);
        // A request retried after a GOAWAY keeps its lane (and what was rendered in it).
        let mut lane = slot.stream.lane;
        if lane == 0 && !lanes.all.is_empty() {
            let l = lanes.free.pop().expect("a lane for every slot");
            lane = l + 1;
            let (vars, cookie) = users
                .as_ref()
                .map_or((&[][..], ""), |u| u.render(slot.user as usize));
            let render = Render {
                seq: slot.seq,
                rng: values,
                lines: &[],
                vars,
                cookie,
            };
            prepare_lane(&mut lanes.all[l as usize], config, proto, slot, render);
        }
        // A fresh stream (a request retried after a GOAWAY starts over); the request keeps
        // its entry and index.
        slot.sent = now;
        slot.stream = Stream {
            id,
            send_window: window,
            lane,
            ..Stream::default()
        };
        let (header_block, body) = stream_request(request, &lanes.all, slot);
        let end_stream = body.is_empty();
        session.headers(out, id, header_block, end_stream);
        if !end_stream {
            let s = &mut slot.stream;
            session.data(out, id, body, &mut s.body_sent, &mut s.send_window);
            *blocked |= s.body_sent < body.len();
        }
    }
    conn.unwritten -= n;
}

/// Makes `lane` ready for `slot`'s stream: its user and step, its response cleared, and its
/// request rendered when its entry is a template.
fn prepare_lane<'c>(
    lane: &mut Lane,
    config: &'c Config,
    proto: &mut Http2<'_>,
    slot: &Slot<Stream>,
    mut render: Render<'c>,
) {
    lane.user = slot.user;
    lane.step = slot.target;
    lane.status = 0;
    lane.failed = false;
    lane.fields.clear();
    lane.data.clear();
    lane.rendered = false;
    let Some(set) = config.targets.as_ref() else {
        return;
    };
    let Some(template) = set.template(slot.target as usize) else {
        return;
    };
    render.lines = set.lines();
    proto.text.clear();
    template.render(&mut proto.text, &mut proto.scratch, &mut render);
    lane.block.clear();
    lane.body.clear();
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    // A template renders a valid request unless a value put a line break in a header (a
    // captured value can hold one): the entry's own request goes then, as a lane not
    // rendered.
    lane.rendered =
        h2::encode_request(&proto.text, scheme, &mut lane.block, &mut lane.body).is_ok();
}

/// The header block and body `slot`'s stream sends: its lane's rendered request, or its
/// entry's.
#[inline]
fn stream_request<'r>(
    request: &'r Request,
    lanes: &'r [Lane],
    slot: &Slot<Stream>,
) -> (&'r [u8], &'r [u8]) {
    match slot.stream.lane.checked_sub(1).map(|l| &lanes[l as usize]) {
        Some(lane) if lane.rendered => (&lane.block, &lane.body),
        _ => entry(request, slot.target),
    }
}

/// Sends the request bodies the windows now let through (only while one waits for a
/// window).
fn send_bodies<I: Io, T: Transport>(w: &mut W<'_, '_, I, T>, i: usize) {
    let request = w.proto.request;
    let conn = &mut w.conns[i];
    let Some(h2) = conn.proto.as_mut().filter(|h| h.blocked) else {
        return;
    };
    let H2 {
        session,
        out,
        blocked,
        lanes,
        ..
    } = &mut **h2;
    *blocked = false;
    for k in 0..conn.slots.len - conn.unwritten {
        let slot = conn.slots.get_mut(k);
        let (_, body) = stream_request(request, &lanes.all, slot);
        let s = &mut slot.stream;
        if s.body_sent < body.len() {
            session.data(out, s.id, body, &mut s.body_sent, &mut s.send_window);
            *blocked |= s.body_sent < body.len();
        }
    }
}

/// Acts on the server's GOAWAY, if one came: streams above its last id go again, on a new
/// connection once the ones the server will finish have finished. Returns whether
/// connection `i` closed for it.
fn goaway<I: Io, T: Transport>(w: &mut W<'_, '_, I, T>, i: usize, now: Instant) -> bool {
    let conn = &mut w.conns[i];
    let Some(last) = conn.proto.as_ref().and_then(|h| h.session.goaway()) else {
        return false;
    };
    // Streams above `last` were never processed. They are at the back of the written ones
    // (streams are numbered in order).
    let mut retry = 0;
    for k in 0..conn.written() {
        let s = &mut conn.slots.get_mut(k).stream;
        if s.id > last {
            s.id = 0;
            retry += 1;
        }
    }
    conn.unwritten += retry;
    if conn.written() > 0 {
        return false;
    }
    w.close(i);
    if w.conns[i].unwritten > 0 {
        w.connect(i, now)
    } else {
        w.refill(i, now)
    }
    true
}

/// The streams on connection `i` older than --timeout end as timeouts (each reset with
/// CANCEL); the connection and its other streams go on.
fn expire_streams<I: Io, T: Transport>(w: &mut W<'_, '_, I, T>, i: usize, now: Instant) {
    let timeout = w.config.timeout;
    loop {
        let conn = &mut w.conns[i];
        let Some(h2) = conn.proto.as_mut() else {
            return;
        };
        let Some(slot) = conn.slots.front().copied() else {
            break;
        };
        if now < slot.sent + timeout {
            break;
        }
        conn.slots.pop();
        if slot.stream.id == 0 {
            // Never written: the server's stream limit left no room within the timeout.
            conn.unwritten -= 1;
        } else {
            h2::rst_stream(&mut h2.out, slot.stream.id, h2::code::CANCEL);
        }
        h2.lanes.end(&slot, 0, false);
        w.lost(&slot, ErrorKind::Timeout, now, || {
            format!("no complete response within {timeout:?}")
        });
    }
    flush(w, i);
    w.refill(i, now);
}

/// A connection carrying event streams, at a deadline scan: the streams past their time limit
/// end (booked, reset); a stream that sent nothing for --timeout, or a request with no
/// response within it, ends as a timeout (reset with CANCEL). Deadlines differ per stream, so
/// every stream is looked at.
fn expire_streamed<I: Io, T: Transport>(w: &mut W<'_, '_, I, T>, i: usize, now: Instant) {
    let timeout = w.config.timeout;
    let answers = w.config.scenario.is_some();
    let mut k = 0;
    loop {
        let Worker {
            conns,
            ledger,
            config,
            ..
        } = &mut *w;
        let conn = &mut conns[i];
        let Some(h2) = conn.proto.as_mut() else {
            return;
        };
        if k == 0 {
            let H2 {
                out,
                lanes,
                readers,
                ..
            } = &mut **h2;
            end_streams(
                &mut conn.slots,
                out,
                lanes,
                readers,
                ledger,
                &config.streams,
                now,
                answers,
            );
        }
        if k >= conn.slots.len {
            break;
        }
        let slot = *conn.slots.get_mut(k);
        let reader = h2.readers.get(slot.stream.reader);
        let streaming = reader.is_some();
        let deadline = reader.map_or(slot.sent + timeout, |r| r.deadline(slot.sent, timeout));
        if now < deadline {
            k += 1;
            continue;
        }
        conn.slots.remove(k);
        if slot.stream.id == 0 {
            conn.unwritten -= 1;
        } else {
            h2::rst_stream(&mut h2.out, slot.stream.id, h2::code::CANCEL);
        }
        // The user hears of it from `lost`.
        h2.lanes.end(&slot, 0, false);
        h2.readers.release(slot.stream.reader);
        w.lost(&slot, ErrorKind::Timeout, now, || {
            if streaming {
                format!("the stream sent nothing for {timeout:?}")
            } else {
                format!("no complete response within {timeout:?}")
            }
        });
    }
    if let Some(users) = &mut w.users {
        Http2::answer(&mut w.conns[i].proto, users, now);
    }
    flush(w, i);
    w.refill(i, now);
}

/// The server closed the connection. The open streams end as `closed`; the requests not
/// written yet (after a GOAWAY, or over the stream limit) go on a new one.
fn on_eof<I: Io, T: Transport>(w: &mut W<'_, '_, I, T>, i: usize, now: Instant) {
    let settled = w.conns[i].proto.as_ref().map(|h| h.session.settled());
    if settled == Some(false) {
        return w.fail(i, ErrorKind::Closed, now, || {
            "the server closed the connection before its HTTP/2 SETTINGS (does it speak \
             HTTP/2 with prior knowledge, h2c, on this port?)"
                .to_string()
        });
    }
    for _ in 0..w.conns[i].written() {
        let slot = w.conns[i].slots.pop().expect("a request is in flight");
        w.lost(&slot, ErrorKind::Closed, now, || {
            "the server closed the HTTP/2 connection with the stream open".to_string()
        });
    }
    w.close(i);
    if w.conns[i].unwritten > 0 {
        w.connect(i, now);
    } else {
        w.refill(i, now);
    }
}

/// Reads one read's frames, and books each response that completes (at its END_STREAM) or
/// stream the server reset. Scenarios: each ended stream's response, or its failure, is kept
/// in its lane for `answer`. Event streams are read as their DATA comes; one that reached its
/// event limit is reset and booked after the read.
fn receive(
    conn: &mut Conn<Http2<'_>>,
    ledger: &mut Ledger,
    config: &Config,
    data: &[u8],
    arrived: Option<Instant>,
    now: Instant,
) -> AfterRead {
    let answers = config.scenario.is_some();
    let streams = &config.streams;
    let Conn { proto, slots, .. } = conn;
    let Some(h2) = proto.as_mut() else {
        return AfterRead::Keep;
    };
    let H2 {
        session,
        out,
        lanes,
        readers,
        ..
    } = &mut **h2;
    let at = arrived.unwrap_or(now);
    let finish = |slots: &mut Slots<Stream>,
                  k: usize,
                  ledger: &mut Ledger,
                  lanes: &mut Lanes,
                  readers: &mut Readers| {
        let slot = slots.remove(k);
        lanes.end(&slot, slot.stream.status, answers);
        if slot.stream.status == 0 {
            readers.release(slot.stream.reader);
            ledger.error(
                slot.warm,
                slot.target,
                slot.seq,
                ErrorKind::Protocol,
                || format!("stream {} ended without a final :status", slot.stream.id),
            );
            return;
        }
        let done = readers.finish(slot.stream.reader, at, ledger);
        book(ledger, &slot, done);
    };
    // Scenarios: where a response's fields and bytes go (a stream pelt gave up on has none).
    let lane_of = |slots: &Slots<Stream>, stream: u32| {
        let k = slots.position(stream)?;
        slots.ring[(slots.head + k) % slots.ring.len()]
            .stream
            .lane
            .checked_sub(1)
    };
    let result = session.receive(data, out, &mut |event| match event {
        h2::Event::Headers {
            stream,
            status,
            end_stream,
            event_stream,
        } => {
            // A stream pelt gave up on (timed out) is not found: its frames are dropped.
            let Some(k) = slots.position(stream) else {
                return 0;
            };
            let slot = slots.get_mut(k);
            // Its response's first frame: the time to first byte ends here.
            slot.first.get_or_insert(at);
            let s = &mut slot.stream;
            // 1xx heads come first and trailers last; the first final status is the one.
            if s.status == 0 {
                s.status = status.filter(|&s| s >= 200).unwrap_or(0);
                if s.status == 0 && answers {
                    // An interim head's fields are not the response's.
                    if let Some(l) = s.lane.checked_sub(1) {
                        lanes.all[l as usize].fields.clear();
                    }
                }
                if s.status != 0 && streams.reads(event_stream) {
                    s.reader = readers.take();
                    let start = ledger.origin(slot.due, slot.sent);
                    if let Some(r) = readers.get(s.reader) {
                        r.begin(slot.warm, start, slot.sent, at, event_stream);
                    }
                }
            }
            if end_stream {
                finish(slots, k, ledger, lanes, readers);
            }
            0
        }
        h2::Event::Field {
            stream,
            name,
            value,
        } => {
            // The status is the lane's own; the other fields are what a check reads.
            match lane_of(slots, stream) {
                Some(l) if !name.starts_with(b":") => {
                    lanes.all[l as usize].fields.push_bytes(name, value)
                }
                _ => {}
            }
            0
        }
        h2::Event::Body { stream, bytes } => {
            let Some(k) = slots.position(stream) else {
                return 0;
            };
            let s = slots.get_mut(k).stream;
            if let Some(r) = readers.get(s.reader) {
                readers.cut |= r.feed(bytes, at, ledger, streams);
            }
            if let Some(l) = s.lane.checked_sub(1) {
                let kept = &mut lanes.all[l as usize].data;
                let room = pelt_stats::SAMPLED_RESPONSE_MAX.saturating_sub(kept.len());
                kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            0
        }
        h2::Event::Data {
            stream,
            len,
            end_stream,
        } => {
            let Some(k) = slots.position(stream) else {
                return 0;
            };
            if end_stream {
                finish(slots, k, ledger, lanes, readers);
                return 0;
            }
            let s = &mut slots.get_mut(k).stream;
            s.unacked += len;
            if s.unacked < h2::WINDOW / 2 {
                return 0;
            }
            std::mem::take(&mut s.unacked)
        }
        h2::Event::Reset { stream, code } => {
            if let Some(k) = slots.position(stream) {
                let slot = slots.remove(k);
                lanes.end(&slot, 0, answers);
                readers.release(slot.stream.reader);
                ledger.error(
                    slot.warm,
                    slot.target,
                    slot.seq,
                    ErrorKind::StreamReset,
                    || format!("the server reset stream {stream}: {}", h2::code_name(code)),
                );
            }
            0
        }
        h2::Event::WindowUpdate { stream, increment } => {
            if let Some(k) = (stream != 0).then(|| slots.position(stream)).flatten() {
                slots.get_mut(k).stream.send_window += increment as i64;
            }
            0
        }
        h2::Event::Settings { window_delta } => {
            for k in 0..slots.len {
                let s = &mut slots.get_mut(k).stream;
                if s.id != 0 {
                    s.send_window += window_delta;
                }
            }
            0
        }
        // After the read, the worker acts on the session's GOAWAY.
        h2::Event::GoAway { .. } => 0,
    });
    if let Err(e) = result {
        return AfterRead::Fail(ErrorKind::Protocol, e.to_string());
    }
    if std::mem::take(&mut readers.cut) {
        end_streams(slots, out, lanes, readers, ledger, streams, now, answers);
    }
    AfterRead::Keep
}

/// Books `slot`'s response (its final status in its stream), complete at `done`.
#[inline]
fn book(ledger: &mut Ledger, slot: &Slot<Stream>, done: Instant) {
    let times = Times {
        due: slot.due,
        sent: slot.sent,
        first: slot.first.unwrap_or(done),
        done,
    };
    ledger.response(slot.warm, slot.target, slot.seq, slot.stream.status, times);
}

/// pelt ends every event stream on the connection it must end by `now` (its limit came, or
/// its marker and the grace after it): each is reset (CANCEL) and its request booked as a
/// response at the stream's end.
#[allow(clippy::too_many_arguments)]
fn end_streams(
    slots: &mut Slots<Stream>,
    out: &mut Vec<u8>,
    lanes: &mut Lanes,
    readers: &mut Readers,
    ledger: &mut Ledger,
    streams: &Streams,
    now: Instant,
    answers: bool,
) {
    let mut k = 0;
    while k < slots.len {
        let s = slots.get_mut(k).stream;
        let end = readers.get(s.reader).and_then(|r| r.end_at(now, streams));
        if end.is_none() {
            k += 1;
            continue;
        }
        let slot = slots.remove(k);
        h2::rst_stream(out, s.id, h2::code::CANCEL);
        lanes.end(&slot, slot.stream.status, answers);
        let done = readers.finish(s.reader, now, ledger);
        book(ledger, &slot, done);
    }
}
