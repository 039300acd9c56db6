//! HTTP/2 on a connection: the session started after the connect (and TLS), streams opened as
//! the server's limit allows, frames flushed once per batch of events, responses booked at
//! END_STREAM, GOAWAY and RST_STREAM, and streams past the timeout reset.
//!
//! Templates give each open stream a request rendered for it (`http2/lanes.rs`). What a
//! response carries (its head, fields, body, end) is read from the frames (`http2/frames.rs`)
//! and goes to the connection's sink (`sink.rs`), which keeps what the run's features need.

mod frames;
mod lanes;

use super::*;
use crate::stream::Streams;
use crate::template::Render;
use crate::Http2 as Request;
use frames::{end_streams, receive};
use lanes::{prepare_lane, stream_request, take_fed, Lanes};
use pelt_codec::h2::{self as h2, Session};

/// The HTTP/2 protocol: the request, and the batching of each connection's frames.
pub(super) struct Http2<'a> {
    request: &'a Request,
    /// The connections with frames waiting for the turn's `flush`.
    deferred: Vec<usize>,
    /// Templates: a request rendered as HTTP/1.1 text, and its body while its length is found.
    text: Vec<u8>,
    scratch: Vec<u8>,
    /// gRPC templates: each distinct rendered message's framed one, kept (see `lanes.rs`), per
    /// method (a scenario's step; one for a run without).
    messages: Vec<std::collections::HashMap<Vec<u8>, Vec<u8>>>,
}

impl<'a> Http2<'a> {
    pub(super) fn new(request: &'a Request) -> Http2<'a> {
        Http2 {
            request,
            deferred: Vec::new(),
            text: Vec::new(),
            scratch: Vec::new(),
            messages: Vec::new(),
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
    /// Templates: a lane per stream the connection may carry (none otherwise).
    lanes: Lanes,
    /// gRPC ping-pong: calls the server ended before all their messages went, reset after the
    /// read (their sending side closed).
    resets: Vec<u32>,
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
    /// gRPC ping-pong: the body is sent up to here (the messages answered so far and one
    /// more), and the reply messages that moved it (`until` 0: the whole body goes).
    until: usize,
    answered: u64,
}

impl Stream {
    /// How much of a body of `len` bytes may be sent by now.
    #[inline]
    fn limit(&self, len: usize) -> usize {
        match self.until {
            0 => len,
            until => until,
        }
    }
}

impl Slots<Stream> {
    /// Where the request on stream `id` is.
    #[inline]
    fn position(&self, id: u32) -> Option<usize> {
        (0..self.len).find(|&k| self.ring[(self.head + k) % self.ring.len()].stream.id == id)
    }
}

type W<'w, 'a, I, T, S> = Worker<'w, I, Http2<'a>, T, S>;

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
    fn room<I: Io, T: Transport, S: Source>(w: &W<'_, 'a, I, T, S>, i: usize) -> usize {
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
        if conn.sink.wants_fields() {
            session.read_responses();
        }
        // Templates and a script's requests are each stream's own.
        let lanes = crate::worker::lanes::lanes_for(config, conn.slots.ring.len());
        conn.proto = Some(Box::new(H2 {
            session,
            out,
            deferred: false,
            settle_by: now + config.connect_timeout,
            blocked: false,
            lanes: Lanes::new(lanes),
            resets: Vec::new(),
        }));
        Ok(())
    }

    /// Once the server's SETTINGS are in: opens streams for the requests not written yet,
    /// sends the request bodies the windows now let through, and acts on a GOAWAY; then
    /// queues the frames for the turn's flush.
    fn write<I: Io, T: Transport, S: Source>(w: &mut W<'_, 'a, I, T, S>, i: usize, now: Instant) {
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

    fn on_eof<I: Io, T: Transport, S: Source>(w: &mut W<'_, 'a, I, T, S>, i: usize, now: Instant) {
        on_eof(w, i, now);
    }

    /// No SETTINGS from the server in time: the connection fails. Streams older than
    /// --timeout end as timeouts (each reset with CANCEL); the connection and its other
    /// streams go on.
    fn expire<I: Io, T: Transport, S: Source>(
        w: &mut W<'_, 'a, I, T, S>,
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
        if w.conns[i].sink.streaming() > 0 {
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
    fn flush<I: Io, T: Transport, S: Source>(w: &mut W<'_, 'a, I, T, S>, now: Instant) {
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
fn flush<I: Io, T: Transport, S: Source>(w: &mut W<'_, '_, I, T, S>, i: usize) {
    if let Some(h2) = w.conns[i].proto.as_mut() {
        if !h2.out.is_empty() && !h2.deferred {
            h2.deferred = true;
            w.proto.deferred.push(i);
        }
    }
}

/// Hands the frames queued on connection `i` to the transport (what the socket does not take
/// waits for it to be writable).
fn flush_now<I: Io, T: Transport, S: Source>(w: &mut W<'_, '_, I, T, S>, i: usize, now: Instant) {
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
fn open_streams<I: Io, T: Transport, S: Source>(
    w: &mut W<'_, '_, I, T, S>,
    i: usize,
    now: Instant,
) {
    let Worker {
        config,
        conns,
        proto,
        values,
        source,
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
    let ping_pong = config
        .http2()
        .and_then(|h| h.grpc.as_ref())
        .is_some_and(|g| g.ping_pong);
    for k in written..written + n {
        let id = session.open_stream();
        let slot = conn.slots.get_mut(k);
        // A request retried after a GOAWAY keeps its lane (and what was rendered in it).
        let mut lane = slot.stream.lane;
        if lane == 0 && !lanes.all.is_empty() {
            lane = lanes.take();
            let l = lane - 1;
            let (vars, cookie) = source.render(slot.user);
            let render = Render {
                seq: slot.seq,
                rng: values,
                lines: &[],
                vars,
                cookie,
            };
            prepare_lane(&mut lanes.all[l as usize], config, proto, slot, render);
            if !conn.fed.is_empty() {
                take_fed(&mut lanes.all[l as usize], config, &mut conn.fed);
            }
        }
        // A fresh stream (a request retried after a GOAWAY starts over); the request keeps
        // its entry and index.
        slot.sent = now;
        slot.reply = 0;
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
            if ping_pong {
                // The first message; each reply lets the next go (`Frames::answered`).
                s.until = pelt_codec::grpc::message_end(body, 0);
            }
            let until = s.limit(body.len());
            session.data_until(out, id, body, until, &mut s.body_sent, &mut s.send_window);
            *blocked |= s.body_sent < until;
        }
    }
    conn.unwritten -= n;
}

/// Sends the request bodies the windows now let through, and the gRPC messages replies let
/// go (only while one waits).
fn send_bodies<I: Io, T: Transport, S: Source>(w: &mut W<'_, '_, I, T, S>, i: usize) {
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
        let until = s.limit(body.len());
        if s.body_sent < until {
            session.data_until(out, s.id, body, until, &mut s.body_sent, &mut s.send_window);
            *blocked |= s.body_sent < until;
        }
    }
}

/// Acts on the server's GOAWAY, if one came: streams above its last id go again, on a new
/// connection once the ones the server will finish have finished. Returns whether
/// connection `i` closed for it.
fn goaway<I: Io, T: Transport, S: Source>(
    w: &mut W<'_, '_, I, T, S>,
    i: usize,
    now: Instant,
) -> bool {
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
fn expire_streams<I: Io, T: Transport, S: Source>(
    w: &mut W<'_, '_, I, T, S>,
    i: usize,
    now: Instant,
) {
    let timeout = w.config.timeout;
    loop {
        let conn = &mut w.conns[i];
        let Some(slot) = conn.slots.front().copied() else {
            break;
        };
        if now < slot.sent + timeout {
            break;
        }
        conn.slots.pop();
        cancel(conn, &slot);
        w.lost(i, &slot, ErrorKind::Timeout, now, || {
            format!("no complete response within {timeout:?}")
        });
    }
    flush(w, i);
    w.refill(i, now);
}

/// `slot`, taken off `conn`, is given up: its stream reset with CANCEL (one never written
/// gives its place back), its lane back.
fn cancel(conn: &mut Conn<Http2<'_>>, slot: &Slot<Stream>) {
    let Some(h2) = conn.proto.as_mut() else {
        return;
    };
    if slot.stream.id == 0 {
        // Never written: the server's stream limit left no room within the timeout.
        conn.unwritten -= 1;
    } else {
        h2::rst_stream(&mut h2.out, slot.stream.id, h2::code::CANCEL);
    }
    h2.lanes.give_back(slot.stream.lane);
}

/// A connection carrying event streams, at a deadline scan: the streams past their time limit
/// end (booked, reset); a stream that sent nothing for --timeout, or a request with no
/// response within it, ends as a timeout (reset with CANCEL). Deadlines differ per stream, so
/// every stream is looked at.
fn expire_streamed<I: Io, T: Transport, S: Source>(
    w: &mut W<'_, '_, I, T, S>,
    i: usize,
    now: Instant,
) {
    let timeout = w.config.timeout;
    let conn = &mut w.conns[i];
    let Some(h2) = conn.proto.as_mut() else {
        return;
    };
    let (out, lanes) = (&mut h2.out, &mut h2.lanes);
    let streams = &w.config.streams;
    end_streams(
        &mut conn.slots,
        out,
        lanes,
        &mut conn.sink,
        &mut w.ledger,
        streams,
        now,
    );
    let mut k = 0;
    while k < w.conns[i].slots.len {
        let conn = &mut w.conns[i];
        let slot = *conn.slots.get_mut(k);
        let streaming = conn.sink.is_stream(&slot);
        if now < conn.sink.deadline(&slot, timeout) {
            k += 1;
            continue;
        }
        conn.slots.remove(k);
        cancel(conn, &slot);
        // The user hears of it from `lost`.
        w.lost(i, &slot, ErrorKind::Timeout, now, || {
            if streaming {
                format!("the stream sent nothing for {timeout:?}")
            } else {
                format!("no complete response within {timeout:?}")
            }
        });
    }
    w.answer(i, now);
    flush(w, i);
    w.refill(i, now);
}

/// The server closed the connection. The open streams end as `closed`; the requests not
/// written yet (after a GOAWAY, or over the stream limit) go on a new one.
fn on_eof<I: Io, T: Transport, S: Source>(w: &mut W<'_, '_, I, T, S>, i: usize, now: Instant) {
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
        w.lost(i, &slot, ErrorKind::Closed, now, || {
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
