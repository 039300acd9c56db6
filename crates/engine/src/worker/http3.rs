//! HTTP/3 on a connection: a QUIC connection (`crate::quic::H3Conn`: quinn-proto's QUIC with
//! the codec's HTTP/3 on its streams) over the connection's connected UDP socket.
//!
//! Each read is one datagram, handed to QUIC, and what happened goes to the connection's
//! sink as HTTP/2's frames do (fields, head, body, end). What QUIC has to send (requests,
//! acknowledgements, its handshake) goes out once per turn (`flush`), so a turn's reads are
//! acknowledged together. QUIC's own timers (loss detection, delayed acknowledgements, the
//! idle timeout) are the connection's deadline. Requests wait for the handshake's end and the
//! server's stream limit; each then opens a stream with its frames, built once before the
//! run, or, with templates, a scenario or a script's `request()`, rendered for it in its lane
//! (`lanes.rs`). A connection whose QUIC ended, or that the server's GOAWAY drained, closes
//! and the requests it had not written go on a new one.

use super::lanes::{lanes_for, render_text};
use super::*;
use crate::quic::{H3Conn, Handshake, Happened, Why};
use crate::template::Render;
use crate::Http3 as Request;
use pelt_codec::h3;

/// The HTTP/3 protocol: the requests, and the connections with datagrams to send.
pub(super) struct Http3<'a> {
    request: &'a Request,
    /// The connections with datagrams waiting for the turn's `flush`.
    deferred: Vec<usize>,
    /// Templates: a request rendered as HTTP/1.1 text, its body while its length is found,
    /// and its field section and body on the way to frames.
    text: Vec<u8>,
    scratch: Vec<u8>,
    parts: (Vec<u8>, Vec<u8>),
}

impl<'a> Http3<'a> {
    pub(super) fn new(request: &'a Request) -> Http3<'a> {
        Http3 {
            request,
            deferred: Vec::new(),
            text: Vec::new(),
            scratch: Vec::new(),
            parts: Default::default(),
        }
    }
}

/// One stream's own request: its frames, rendered from its template or taken from a
/// script's `request()` (`rendered`), else the entry's own are sent.
#[derive(Default)]
pub(super) struct Lane {
    frames: Vec<u8>,
    rendered: bool,
}

type Lanes = super::lanes::Lanes<Lane>;

/// One HTTP/3 connection's protocol state (made at its first write: `None` before).
pub(super) struct H3 {
    quic: H3Conn,
    /// The handshake ended: requests may open streams.
    ready: bool,
    /// When the connection began (its handshake's time is counted from here).
    started: Instant,
    /// Why QUIC ended the connection, once it did, and its code (`quic::ended_code`).
    ended: Option<String>,
    ended_code: String,
    /// In the list of connections to flush before the worker waits.
    deferred: bool,
    /// QUIC's counts as last added to the ledger.
    counted: pelt_stats::QuicStats,
    /// A lane per stream it may carry when streams send requests of their own (none
    /// otherwise).
    lanes: Lanes,
}

/// One request's stream.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stream {
    /// Its QUIC stream id, plus one (0: not written yet).
    id: u64,
    /// The final status its response has so far (0: none yet).
    status: u16,
    /// Its lane, plus one (0: none).
    lane: u32,
}

impl Slots<Stream> {
    /// Where the request on QUIC stream `id` is.
    #[inline]
    fn position(&self, id: u64) -> Option<usize> {
        (0..self.len).find(|&k| self.ring[(self.head + k) % self.ring.len()].stream.id == id + 1)
    }
}

type W<'w, 'a, I, T, S> = Worker<'w, I, Http3<'a>, T, S>;

impl<'a> Protocol for Http3<'a> {
    type Stream = Stream;
    type Conn = Option<Box<H3>>;
    const MULTIPLEXED: bool = true;
    const DATAGRAMS: bool = true;

    fn reset(conn: &mut Option<Box<H3>>, _config: &Config) {
        *conn = None;
    }

    /// A datagram the socket cannot take is dropped (QUIC sends it again): nothing waits.
    #[inline]
    fn writing(_conn: &Option<Box<H3>>) -> bool {
        false
    }

    /// Up to the slots (the server's stream limit holds the rest back, unwritten); none after
    /// its GOAWAY or QUIC's end; with --no-keepalive one a connection. Before requests may
    /// go (the handshake's end, or 0-RTT), closed loop takes one (to connect) and open loop
    /// queues up to --streams.
    #[inline]
    fn room<I: Io, T: Transport, S: Source>(w: &W<'_, 'a, I, T, S>, i: usize) -> usize {
        let c = &w.conns[i];
        let limit = match c.proto.as_ref() {
            Some(h) if h.quic.going_away() || h.ended.is_some() => 0,
            Some(h) if !w.config.keep_alive && h.quic.opened() > 0 => 0,
            _ if !w.config.keep_alive => 1,
            Some(h) if h.quic.writable() => c.slots.ring.len(),
            _ if w.model.is_open() => c.slots.ring.len(),
            _ => 1,
        };
        limit.saturating_sub(c.slots.len)
    }

    /// QUIC needs the worker's endpoint: the connection is made at the first write.
    fn start(
        _conn: &mut Conn<Self>,
        _alpn: Option<&[u8]>,
        _config: &Config,
        _now: Instant,
    ) -> Result<(), AfterRead> {
        Ok(())
    }

    /// Makes the QUIC connection (the first time), acts on its end or the server's GOAWAY,
    /// opens a stream for each request not written yet as far as the server allows, and
    /// queues what QUIC has to send for the turn's flush.
    fn write<I: Io, T: Transport, S: Source>(w: &mut W<'_, 'a, I, T, S>, i: usize, now: Instant) {
        if w.conns[i].proto.is_none() {
            if let Err(message) = begin(w, i, now) {
                return w.fail(i, ErrorKind::Tls, now, || message);
            }
        }
        if ended(w, i, now) {
            return;
        }
        open_streams(w, i, now);
        defer(w, i);
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
        if let Some(h3) = conn.proto.as_mut() {
            h3.quic.receive(data, now);
            happenings(conn, ledger, config, arrived.unwrap_or(now), now);
        }
        AfterRead::Keep
    }

    /// An empty datagram (a UDP socket has no end of stream): nothing to read.
    fn on_eof<I: Io, T: Transport, S: Source>(
        _w: &mut W<'_, 'a, I, T, S>,
        _i: usize,
        _now: Instant,
    ) {
    }

    /// QUIC's timers that are due run; a handshake not ended within --connect-timeout fails
    /// the connection; streams past --timeout (or their stream's limits) end. Returns the
    /// earliest of QUIC's next timer and the streams' deadlines.
    fn expire<I: Io, T: Transport, S: Source>(
        w: &mut W<'_, 'a, I, T, S>,
        i: usize,
        now: Instant,
    ) -> Option<Instant> {
        let h3 = w.conns[i].proto.as_mut()?;
        if h3.quic.deadline().is_some_and(|d| d <= now) {
            h3.quic.on_deadline(now);
            happenings(&mut w.conns[i], &mut w.ledger, w.config, now, now);
            w.answer(i, now);
            if ended(w, i, now) {
                return None;
            }
            defer(w, i);
        }
        let h3 = w.conns[i].proto.as_mut()?;
        let timer = h3.quic.deadline();
        if !h3.ready {
            let by = h3.started + w.config.connect_timeout;
            if now < by {
                return Some(timer.map_or(by, |t| t.min(by)));
            }
            let t = w.config.connect_timeout;
            w.fail(i, ErrorKind::ConnectTimeout, now, || {
                format!("no QUIC handshake within {t:?}")
            });
            return None;
        }
        let next = expire_streams(w, i, now);
        match (timer, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Hands each connection's datagrams to its socket, once per turn, and has the deadlines
    /// scanned by QUIC's next timer.
    fn flush<I: Io, T: Transport, S: Source>(w: &mut W<'_, 'a, I, T, S>, now: Instant) {
        if w.proto.deferred.is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut w.proto.deferred);
        for &i in &list {
            transmit(w, i, now);
        }
        list.clear();
        // Queued meanwhile (a connection that failed in the flush and connected again): next turn.
        list.append(&mut w.proto.deferred);
        w.proto.deferred = list;
    }

    /// The run is over: each connection closes with H3_NO_ERROR, so the server frees it at
    /// once, not at its idle timeout.
    fn at_end<I: Io, T: Transport, S: Source>(w: &mut W<'_, 'a, I, T, S>, now: Instant) {
        for i in 0..w.conns.len() {
            goodbye(w, i, now);
        }
        w.submit_and_drop();
    }
}

/// Makes connection `i`'s QUIC connection to the worker's endpoint (its first flight goes
/// at the turn's flush).
fn begin<I: Io, T: Transport, S: Source>(
    w: &mut W<'_, '_, I, T, S>,
    i: usize,
    now: Instant,
) -> Result<(), String> {
    let remote = match &w.endpoint {
        Endpoint::Udp(a) | Endpoint::Tcp(a) => *a,
        Endpoint::Unix(_) => w.config.addr,
    };
    let tls = &w.proto.request.tls;
    let name = tls.server_name.to_str();
    let mut quic = H3Conn::new(tls.config.clone(), &name, remote, now)?;
    let conn = &mut w.conns[i];
    if conn.sink.wants_fields() {
        quic.read_fields();
    }
    let lanes = Lanes::new(lanes_for(w.config, conn.slots.ring.len()));
    conn.proto = Some(Box::new(H3 {
        quic,
        ready: false,
        started: now,
        ended: None,
        ended_code: String::new(),
        deferred: false,
        counted: Default::default(),
        lanes,
    }));
    Ok(())
}

/// Closes connection `i`'s QUIC connection as done (H3_NO_ERROR) and sends the close now.
fn goodbye<I: Io, T: Transport, S: Source>(w: &mut W<'_, '_, I, T, S>, i: usize, now: Instant) {
    if let Some(h3) = w.conns[i].proto.as_mut() {
        h3.quic.close(now);
        h3.deferred = true;
        transmit(w, i, now);
    }
}

/// Queues connection `i`'s datagrams for the turn's flush.
#[inline]
fn defer<I: Io, T: Transport, S: Source>(w: &mut W<'_, '_, I, T, S>, i: usize) {
    if let Some(h3) = w.conns[i].proto.as_mut() {
        if !h3.deferred {
            h3.deferred = true;
            w.proto.deferred.push(i);
        }
    }
}

/// Sends what connection `i`'s QUIC has to send now, a flight of datagrams a send where the
/// kernel segments them (GSO), one at a time where not; a socket error
/// (an ICMP port unreachable shows as a refused send) fails the connection.
fn transmit<I: Io, T: Transport, S: Source>(w: &mut W<'_, '_, I, T, S>, i: usize, now: Instant) {
    let Worker {
        conns, io, ledger, ..
    } = w;
    // A connection closed (and maybe reopened) since has nothing of the turn's left.
    let Some(h3) = conns[i].proto.as_mut().filter(|h| h.deferred) else {
        return;
    };
    h3.deferred = false;
    let mut failed = None;
    let segments = io.max_segments();
    h3.quic.transmit(now, segments, &mut |datagrams, segment| {
        if failed.is_some() {
            return;
        }
        match io.send_datagrams(i, datagrams, segment) {
            Ok(true) => ledger.current().bytes_sent += datagrams.len() as u64,
            Ok(false) => {}
            Err(e) => failed = Some(e),
        }
    });
    let timer = h3.quic.deadline();
    count(h3, ledger);
    match failed {
        Some(e) => w.fail(i, errno_kind(e, true), now, || format!("send: {e}")),
        // QUIC's timer set by this turn may come before the next scan.
        None => {
            if let Some(at) = timer {
                w.scan_by(at);
            }
        }
    }
}

/// Adds what QUIC counted on the connection since the last call to the ledger's second.
fn count(h3: &mut H3, ledger: &mut Ledger) {
    let now = h3.quic.stats();
    ledger.current().quic().merge(&now.since(&h3.counted));
    h3.counted = now;
}

/// Hands what QUIC reported since the last call to connection `i`'s requests and sink: the
/// handshake's end (counted, with its time), each response's fields, head, body and end (at
/// `at`, the datagram's arrival), streams the server reset, and QUIC's end. Event streams
/// that reached their limit end after (cancelled, booked at `now`).
fn happenings(
    conn: &mut Conn<Http3<'_>>,
    ledger: &mut Ledger,
    config: &Config,
    at: Instant,
    now: Instant,
) {
    let streams = &config.streams;
    let Conn {
        proto,
        slots,
        sink,
        unwritten,
        ..
    } = conn;
    let Some(h3) = proto.as_mut() else {
        return;
    };
    let H3 {
        quic,
        ready,
        started,
        ended,
        ended_code,
        lanes,
        ..
    } = &mut **h3;
    quic.poll(&mut |happened| match happened {
        Happened::Ready(Handshake { resumed, early }) => {
            *ready = true;
            let stats = ledger.current();
            let took = at.saturating_duration_since(*started).as_micros() as u64;
            stats.handshake.record(took);
            if resumed {
                stats.handshakes_resumed += 1;
            } else {
                stats.handshakes_full += 1;
            }
            match early {
                Some(true) => stats.quic().early_accepted += 1,
                Some(false) => {
                    // QUIC dropped the streams they went on: each is written again, as
                    // the same request (counted once; its lane kept).
                    let written = slots.len - *unwritten;
                    let quic = stats.quic();
                    quic.early_refused += 1;
                    quic.early_resent += written as u64;
                    for k in 0..written {
                        let s = &mut slots.get_mut(k).stream;
                        *s = Stream {
                            lane: s.lane,
                            ..Stream::default()
                        };
                    }
                    *unwritten = slots.len;
                }
                None => {}
            }
        }
        Happened::Field {
            stream,
            name,
            value,
        } => {
            if let Some(k) = slots.position(stream) {
                sink.field(slots.get_mut(k), name, value);
            }
        }
        Happened::Response {
            stream,
            status,
            event_stream,
        } => {
            if let Some(k) = slots.position(stream) {
                let slot = slots.get_mut(k);
                slot.first.get_or_insert(at);
                if slot.stream.status == 0 {
                    slot.stream.status = status;
                    sink.head(slot, event_stream, at, ledger, streams);
                }
            }
        }
        Happened::Body { stream, bytes } => {
            if let Some(k) = slots.position(stream) {
                sink.body(slots.get_mut(k), bytes, at, ledger, streams);
            }
        }
        Happened::Done { stream } => {
            if let Some(k) = slots.position(stream) {
                let slot = slots.remove(k);
                lanes.give_back(slot.stream.lane);
                if slot.stream.status == 0 {
                    sink.fail(&slot, ErrorKind::Protocol, ledger, || {
                        format!("stream {stream} ended without a final :status")
                    });
                } else {
                    sink.end(&slot, slot.stream.status, at, ledger);
                }
            }
        }
        Happened::Failed {
            stream,
            why,
            message,
        } => {
            if let Some(k) = slots.position(stream) {
                let slot = slots.remove(k);
                lanes.give_back(slot.stream.lane);
                let (kind, code) = match &why {
                    Why::Reset(c) => (ErrorKind::StreamReset, pelt_codec::h3::code_name(*c)),
                    Why::Malformed(c) => (ErrorKind::Protocol, pelt_codec::h3::code_name(*c)),
                    Why::Ended(code) => (ErrorKind::Closed, code.as_str()),
                };
                sink.fail_coded(&slot, kind, code, ledger, || message);
            }
        }
        // The writes after the read act on these.
        Happened::GoAway { .. } => {}
        Happened::Closed { reason, code } => {
            *ended = Some(reason);
            *ended_code = code;
        }
    });
    if sink.take_cut() {
        end_streams(quic, lanes, slots, sink, ledger, streams, now);
    }
}

/// pelt ends every event stream it must end by `now` (its limit came, or its marker and the
/// grace after it): each is cancelled and its request booked as a response at the stream's
/// end.
fn end_streams(
    quic: &mut H3Conn,
    lanes: &mut Lanes,
    slots: &mut Slots<Stream>,
    sink: &mut Sink,
    ledger: &mut Ledger,
    streams: &crate::stream::Streams,
    now: Instant,
) {
    let mut k = 0;
    while k < slots.len {
        if sink.end_at(slots.get_mut(k), now, streams).is_none() {
            k += 1;
            continue;
        }
        let slot = slots.remove(k);
        quic.cancel(slot.stream.id - 1);
        lanes.give_back(slot.stream.lane);
        sink.end(&slot, slot.stream.status, now, ledger);
    }
}

/// Connection `i`'s QUIC ended, or the server's GOAWAY drained it (no stream of its left
/// open): it closes, and the requests it had not written go on a new one. A connection that
/// ended before its handshake did fails as TLS (QUIC's handshake is TLS's; the message
/// says why). Returns whether it closed.
fn ended<I: Io, T: Transport, S: Source>(
    w: &mut W<'_, '_, I, T, S>,
    i: usize,
    now: Instant,
) -> bool {
    let Some(h3) = w.conns[i].proto.as_mut() else {
        return false;
    };
    if h3.ended.is_some() || h3.quic.closed() {
        // Its last counts, before it goes.
        count(h3, &mut w.ledger);
    }
    let conn = &w.conns[i];
    let Some(h3) = conn.proto.as_ref() else {
        return false;
    };
    let gone = h3
        .ended
        .clone()
        .or_else(|| h3.quic.closed().then(String::new));
    // --no-keepalive: its one request answered, the connection is done.
    let done = !w.config.keep_alive && h3.ready && h3.quic.opened() > 0;
    let drained = (h3.quic.going_away() || done) && conn.written() == 0;
    match gone {
        Some(reason) if !h3.ready => {
            // Each request it had fails as TLS, counted by the code QUIC ended with
            // (`pelt: CRYPTO_ERROR` for a certificate pelt refused...).
            let c = &w.conns[i];
            for k in (0..c.slots.len).filter(|_| !h3.ended_code.is_empty()) {
                let warm = c.slots.ring[(c.slots.head + k) % c.slots.ring.len()].warm;
                w.ledger.error_code(warm, ErrorKind::Tls, &h3.ended_code);
            }
            let message = format!("the QUIC handshake failed: {reason}");
            w.fail(i, ErrorKind::Tls, now, || message);
            return true;
        }
        None if !drained => return false,
        _ => {}
    }
    if gone.is_none() {
        goodbye(w, i, now);
        if w.conns[i].proto.is_none() {
            // The close's send failed: the connection failed (and went again) there.
            return true;
        }
    }
    // QUIC failed its streams as it ended; any it did not report end here.
    for _ in 0..w.conns[i].written() {
        let slot = w.conns[i].slots.pop().expect("a request is in flight");
        w.lost(i, &slot, ErrorKind::Closed, now, || {
            "the QUIC connection ended with the stream open".to_string()
        });
    }
    w.close(i);
    if w.conns[i].unwritten > 0 {
        w.connect(i, now);
    } else {
        w.refill(i, now);
    }
    true
}

/// Opens a stream for each request on connection `i` not written yet, as far as the
/// server's stream limit allows. A stream with a lane sends the request rendered in it (a
/// request sent again keeps what was rendered).
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
    let conn = &mut conns[i];
    let Some(h3) = conn.proto.as_mut().filter(|h| h.quic.writable()) else {
        return;
    };
    let H3 { quic, lanes, .. } = &mut **h3;
    let requests = &proto.request.requests;
    while conn.unwritten > 0 {
        let k = conn.slots.len - conn.unwritten;
        let slot = conn.slots.get_mut(k);
        if slot.stream.lane == 0 && !lanes.all.is_empty() {
            slot.stream.lane = lanes.take();
            let lane = &mut lanes.all[slot.stream.lane as usize - 1];
            let (vars, cookie) = source.render(slot.user);
            let render = Render {
                seq: slot.seq,
                rng: values,
                lines: &[],
                vars,
                cookie,
            };
            lane.rendered = false;
            lane.frames.clear();
            if render_text(
                config,
                slot.target,
                &mut proto.text,
                &mut proto.scratch,
                render,
            ) {
                // A value that put a line break in a header leaves the entry's own request.
                lane.rendered =
                    h3::request_frames(&proto.text, "https", &mut lane.frames, &mut proto.parts)
                        .is_ok();
            }
            if !conn.fed.is_empty() {
                take_fed(lane, &mut conn.fed, &mut proto.parts);
            }
        }
        let request = match slot.stream.lane.checked_sub(1) {
            Some(l) if lanes.all[l as usize].rendered => &lanes.all[l as usize].frames,
            _ => &requests[(slot.target as usize).min(requests.len() - 1)],
        };
        // Past the stream limit the request waits, its lane kept.
        let Some(id) = quic.request(request) else {
            break;
        };
        slot.sent = now;
        slot.reply = 0;
        slot.stream.id = id + 1;
        slot.stream.status = 0;
        conn.unwritten -= 1;
    }
}

/// Makes `lane` send the first of the requests a script's `request()` left in `fed`
/// (`lanes::take_fed`).
fn take_fed(lane: &mut Lane, fed: &mut Vec<u8>, parts: &mut (Vec<u8>, Vec<u8>)) {
    lane.frames.clear();
    let frames = &mut lane.frames;
    lane.rendered = super::lanes::take_fed(fed, |bytes| {
        h3::first_request_frames(bytes, "https", frames, parts)
    });
}

/// The streams on connection `i` past --timeout (after their send, or an event stream's last
/// bytes) end as timeouts, each cancelled with H3_REQUEST_CANCELLED; the connection and its
/// other streams go on. Returns the earliest deadline left.
fn expire_streams<I: Io, T: Transport, S: Source>(
    w: &mut W<'_, '_, I, T, S>,
    i: usize,
    now: Instant,
) -> Option<Instant> {
    let timeout = w.config.timeout;
    let limit = w.config.streams.max_time;
    let mut next: Option<Instant> = None;
    let mut k = 0;
    while k < w.conns[i].written() {
        let conn = &mut w.conns[i];
        let slot = *conn.slots.get_mut(k);
        let deadline = conn.sink.deadline(&slot, timeout);
        if now < deadline {
            // A response not yet known to be a stream may become one, cut at its time limit.
            let at = limit.map_or(deadline, |l| deadline.min(slot.sent + l));
            next = Some(next.map_or(at, |n| n.min(at)));
            k += 1;
            continue;
        }
        let streaming = conn.sink.is_stream(&slot);
        conn.slots.remove(k);
        if let Some(h3) = conn.proto.as_mut() {
            h3.quic.cancel(slot.stream.id - 1);
            h3.lanes.give_back(slot.stream.lane);
        }
        w.lost(i, &slot, ErrorKind::Timeout, now, || {
            if streaming {
                format!("the stream sent nothing for {timeout:?}")
            } else {
                format!("no complete response within {timeout:?}")
            }
        });
    }
    // Event streams past their time limit end too.
    let conn = &mut w.conns[i];
    if conn.sink.streaming() > 0 {
        if let Some(h3) = conn.proto.as_mut() {
            let streams = &w.config.streams;
            end_streams(
                &mut h3.quic,
                &mut h3.lanes,
                &mut conn.slots,
                &mut conn.sink,
                &mut w.ledger,
                streams,
                now,
            );
        }
    }
    w.answer(i, now);
    defer(w, i);
    w.refill(i, now);
    next
}
