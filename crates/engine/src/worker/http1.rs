//! HTTP/1.1 on a connection: requests written together (a pipelined batch is the request
//! bytes repeated), responses parsed back to back as they come, and what a close means.

use super::*;
use crate::template::Render;
use pelt_codec::{Parsed, ParserOptions, ResponseParser};

/// The HTTP/1.1 protocol: a buffer for rendering templated bodies.
pub(super) struct Http1 {
    body: Vec<u8>,
}

impl Http1 {
    pub(super) fn new() -> Http1 {
        Http1 { body: Vec::new() }
    }
}

/// One HTTP/1.1 connection's state.
pub(super) struct H1Conn {
    parser: ResponseParser,
    /// The write under way: bytes `write_pos..write_end` of the batch are still to be sent.
    write_pos: usize,
    write_end: usize,
    /// Many requests, pipelined: the entries of one write copied together (they are not
    /// contiguous in the set), handed over with `send_buf`; empty when nothing waits.
    scratch: Vec<u8>,
}

impl Default for H1Conn {
    fn default() -> H1Conn {
        H1Conn {
            parser: ResponseParser::new(ParserOptions::default()),
            write_pos: 0,
            write_end: 0,
            scratch: Vec::new(),
        }
    }
}

impl Protocol for Http1 {
    type Stream = ();
    type Conn = H1Conn;
    const MULTIPLEXED: bool = false;
    const RAW: bool = true;

    fn reset(conn: &mut H1Conn, config: &Config) {
        conn.parser.reset();
        conn.parser.set_head_request(config.head_request);
        conn.write_pos = 0;
        conn.write_end = 0;
        conn.scratch.clear();
        if let Some(set) = config.targets().filter(|_| config.pipeline() > 1) {
            // Room for one write of the longest entries (kept across sockets).
            conn.scratch.reserve(set.max_len() * config.pipeline());
        }
    }

    #[inline]
    fn writing(conn: &H1Conn) -> bool {
        conn.write_pos < conn.write_end || !conn.scratch.is_empty()
    }

    #[inline]
    fn room<I: Io, T: Transport, S: Source>(w: &Worker<'_, I, Self, T, S>, i: usize) -> usize {
        w.conns[i].slots.free()
    }

    /// Open at once.
    fn start(
        _conn: &mut Conn<Self>,
        _alpn: Option<&[u8]>,
        _config: &Config,
        _now: Instant,
    ) -> Result<(), AfterRead> {
        Ok(())
    }

    /// The rest of the write under way, or (none under way, the connection open) the
    /// requests taken since: over TLS, those taken during the handshake go after the read
    /// that ended it.
    #[inline]
    fn write<I: Io, T: Transport, S: Source>(
        w: &mut Worker<'_, I, Self, T, S>,
        i: usize,
        now: Instant,
    ) {
        let conn = &w.conns[i];
        if Self::writing(&conn.proto) {
            send(w, i, now);
        } else if conn.unwritten > 0 && matches!(conn.phase, Phase::Open) {
            start_write(w, i, now);
        }
    }

    /// Parses one read's bytes as the responses to the requests on `conn`, back to back, and
    /// hands each to the sink (which books the ones that complete).
    #[inline]
    fn receive(
        conn: &mut Conn<Self>,
        ledger: &mut Ledger,
        config: &Config,
        data: &[u8],
        arrived: Option<Instant>,
        now: Instant,
        sending: bool,
    ) -> AfterRead {
        let mut pos = 0;
        let mut completed = false;
        let at = arrived.unwrap_or(now);
        while pos < data.len() {
            if conn.slots.len == 0 {
                // Bytes nobody asked for: never attributed to the next request.
                let stray = data.len() - pos;
                let what = if completed {
                    "after a complete response"
                } else {
                    "on an idle connection"
                };
                ledger.connection_error(ErrorKind::Protocol, || {
                    format!("{stray} bytes arrived {what}")
                });
                return AfterRead::Close;
            }
            match read_response(conn, ledger, config, &data[pos..], at) {
                Ok(n) => pos += n,
                Err(after) => return after,
            }
            completed = true;
        }
        // A response to a request not yet fully written: the server did not read it all.
        if completed && conn.slots.len == 0 && (sending || Self::writing(&conn.proto)) {
            return AfterRead::Close;
        }
        AfterRead::Keep
    }

    fn on_eof<I: Io, T: Transport, S: Source>(
        w: &mut Worker<'_, I, Self, T, S>,
        i: usize,
        now: Instant,
    ) {
        if !w.transport.clean_close(i) && w.conns[i].slots.len > 0 {
            // Without close_notify a close proves nothing: a close-delimited body may be cut.
            let kind = match read_eof(&mut w.conns[i].proto.parser) {
                Ok(_) | Err((ErrorKind::Incomplete, _)) => ErrorKind::Incomplete,
                Err((kind, _)) => kind,
            };
            return w.fail(i, kind, now, || {
                "the server closed the TLS connection without close_notify".to_string()
            });
        }
        if w.conns[i].slots.len == 0 {
            // An idle connection closed by the server: fine, the next request reconnects.
            w.close(i);
            return w.refill(i, now);
        }
        match read_eof(&mut w.conns[i].proto.parser) {
            Ok(response) => {
                let conn = &mut w.conns[i];
                let slot = conn.slots.pop().expect("a request is in flight");
                // A stream the close ended (an event cut short by it is not an event).
                conn.sink.end(&slot, response.status, now, &mut w.ledger);
                // Scenarios: the user reads a response the close ended, too.
                w.answer(i, now);
                w.fail_all(i, ErrorKind::Closed, now, || {
                    "the server closed the connection with pipelined requests unanswered"
                        .to_string()
                });
                w.close(i);
                w.refill(i, now);
            }
            Err((kind, message)) => w.fail(i, kind, now, || message),
        }
    }

    /// A stream pelt ends (its marker or limit came, or its time is up) is booked and its
    /// connection closed. Otherwise the oldest request went unanswered (or its stream sent
    /// nothing) for --timeout: it and the rest on the connection time out (an HTTP/1.1
    /// response cannot be skipped), and the connection is dropped.
    fn expire<I: Io, T: Transport, S: Source>(
        w: &mut Worker<'_, I, Self, T, S>,
        i: usize,
        now: Instant,
    ) -> Option<Instant> {
        let t = w.config.timeout;
        let front = w.conns[i].slots.front().copied()?;
        let sink = &mut w.conns[i].sink;
        if let Some(at) = sink.end_at(&front, now, &w.config.streams) {
            end_stream(&mut w.conns[i], &mut w.ledger, at);
            w.answer(i, now);
            w.fail_all(i, ErrorKind::Closed, now, || {
                "pipelined behind a stream pelt ended (--stream-limit, --stream-end)".to_string()
            });
            w.close(i);
            w.refill(i, now);
            return None;
        }
        let deadline = sink.deadline(&front, t);
        let streaming = sink.is_stream(&front);
        if now < deadline {
            // A stream's limits (time, marker) come with its reads: looked at every scan. A
            // response not yet known to be one may become one, cut at its time limit.
            let limit = w.config.streams.max_time.map(|l| front.sent + l);
            return Some(match streaming {
                true => now,
                false => limit.map_or(deadline, |l| l.min(deadline)),
            });
        }
        w.fail(i, ErrorKind::Timeout, now, || {
            if streaming {
                format!("the stream sent nothing for {t:?}")
            } else {
                format!("no complete response within {t:?}")
            }
        });
        None
    }
}

/// Reads the oldest request's response from `data` (the sink hands its body to its stream,
/// keeps what a sample or a user wants, and books it once complete). Returns the bytes it
/// took when it completed on a connection that stays open; otherwise what the connection
/// does now (keep it: the response goes on in the next read).
#[inline]
fn read_response(
    conn: &mut Conn<Http1>,
    ledger: &mut Ledger,
    config: &Config,
    data: &[u8],
    at: Instant,
) -> Result<usize, AfterRead> {
    let front = conn.slots.front().expect("a request is in flight");
    if let Some(set) = config.targets() {
        if let Some(head) = set.head(front.target as usize) {
            conn.proto.parser.set_head_request(head);
        }
    } else if config.feed().is_some() {
        conn.proto.parser.set_head_request(front.head);
    }
    // The oldest request's response starts with these bytes, if it had not already.
    conn.slots.first_byte(at);
    let Conn {
        slots, proto, sink, ..
    } = &mut *conn;
    let streams = &config.streams;
    let parsed = proto.parser.parse_with(data, &mut |bytes, event_stream| {
        let slot = slots.front_mut();
        sink.head(slot, event_stream, at, ledger, streams);
        sink.body(slot, bytes, at, ledger, streams);
    });
    match parsed {
        Ok((_, Parsed::Partial)) => {
            sink.raw(slots.front_mut(), data);
            if sink.take_cut() {
                // Its event limit came: pelt ends the stream (a new connection takes the
                // next request).
                end_stream(conn, ledger, at);
                return Err(AfterRead::Close);
            }
            Err(AfterRead::Keep)
        }
        Ok((n, Parsed::Complete(response))) => {
            sink.raw(slots.front_mut(), &data[..n]);
            sink.take_cut();
            let mut slot = slots.pop().expect("a request is in flight");
            if response.event_stream {
                // An event stream with an empty body: a stream without events.
                sink.head(&mut slot, true, at, ledger, streams);
            }
            // A stream ends with its response (or where its marker or limit came).
            sink.end(&slot, response.status, at, ledger);
            if proto.parser.advertised_h3() {
                ledger.current().alt_svc_h3 = true;
            }
            if !(response.keep_alive && config.keep_alive) {
                return Err(AfterRead::Close);
            }
            Ok(n)
        }
        Err(e) => Err(AfterRead::Fail(parse_error_kind(&e), e.to_string())),
    }
}

/// pelt ends the stream the oldest request is reading (at its marker, at its limit): the
/// request is booked as a response with its status, at the stream's end (a scenario's user
/// is handed what came of it: a cut response does not read whole, so the user goes on as
/// after a response kept only in part); the caller closes the connection.
fn end_stream(conn: &mut Conn<Http1>, ledger: &mut Ledger, at: Instant) {
    let slot = conn.slots.pop().expect("a request is in flight");
    let status = conn.proto.parser.status();
    conn.sink.end(&slot, status, at, ledger);
}

/// Writes the requests not written yet, together: the first k of the repeated request, or
/// with many requests the one entry (from the set itself) or the entries copied together.
#[inline]
fn start_write<I: Io, T: Transport, S: Source>(
    w: &mut Worker<'_, I, Http1, T, S>,
    i: usize,
    now: Instant,
) {
    let conn = &mut w.conns[i];
    let n = conn.unwritten;
    conn.slots.mark_sent(n, now);
    conn.unwritten = 0;
    let (start, end) = match w.config.targets() {
        // A streamed replay, a script's `request()`: the requests' bytes, copied as they
        // were taken.
        None if !conn.fed.is_empty() => {
            conn.proto.scratch.extend_from_slice(&conn.fed);
            conn.fed.clear();
            (0, 0)
        }
        None => (0, n * w.config.request.len()),
        Some(set) if set.has_templates() => {
            for k in conn.slots.len - n..conn.slots.len {
                let slot = *conn.slots.get_mut(k);
                let t = slot.target as usize;
                let user = slot.user;
                let (vars, cookie) = w.source.render(user);
                match set.template(t) {
                    Some(template) => template.render(
                        &mut conn.proto.scratch,
                        &mut w.proto.body,
                        &mut Render {
                            seq: slot.seq,
                            rng: &mut w.values,
                            lines: set.lines(),
                            vars,
                            cookie,
                        },
                    ),
                    None => conn.proto.scratch.extend_from_slice(&w.batch[set.range(t)]),
                }
            }
            (0, 0)
        }
        Some(set) if n == 1 => {
            let last = conn.slots.len - 1;
            let r = set.range(conn.slots.get_mut(last).target as usize);
            (r.start, r.end)
        }
        Some(set) => {
            for k in conn.slots.len - n..conn.slots.len {
                let r = set.range(conn.slots.get_mut(k).target as usize);
                conn.proto.scratch.extend_from_slice(&w.batch[r]);
            }
            (0, 0)
        }
    };
    conn.proto.write_pos = start;
    conn.proto.write_end = end;
    send(w, i, now);
}

/// Hands what is left of the write under way to the transport.
#[inline]
fn send<I: Io, T: Transport, S: Source>(
    w: &mut Worker<'_, I, Http1, T, S>,
    i: usize,
    now: Instant,
) {
    let h1 = &mut w.conns[i].proto;
    let sent = if h1.scratch.is_empty() {
        let bytes = &w.batch[h1.write_pos..h1.write_end];
        w.transport.send(&mut w.io, &mut w.ledger, i, bytes)
    } else {
        let scratch = &mut h1.scratch;
        w.transport
            .send_buf(&mut w.io, &mut w.ledger, i, scratch)
            .map(|()| 0)
    };
    match sent {
        Ok(n) => h1.write_pos += n,
        Err(e) => w.fail(i, errno_kind(e, false), now, || format!("write: {e}")),
    }
}
