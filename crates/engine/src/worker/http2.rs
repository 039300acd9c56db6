//! HTTP/2 on a connection: the session started after the connect (and TLS), streams opened as
//! the server's limit allows, frames flushed once per batch of events, responses booked at
//! END_STREAM, GOAWAY and RST_STREAM, and streams past the timeout reset.

use super::*;

/// One HTTP/2 connection's protocol state.
pub(super) struct H2 {
    pub(super) session: Session,
    /// Frames not handed to TLS or the socket yet.
    pub(super) out: Vec<u8>,
    /// In the worker's list of connections to flush after this batch of events.
    pub(super) deferred: bool,
}

impl<I: Io> Worker<'_, I> {
    /// HTTP/2 with prior knowledge (h2c): sends the preface on a fresh connection; the
    /// requests wait for the server's SETTINGS. (Over TLS, `tls_established` starts it.)
    pub(super) fn start_h2(&mut self, i: usize, now: Instant) {
        start_h2_session(&mut self.conns[i], now + self.config.connect_timeout);
        self.flush_h2(i, now);
    }

    /// HTTP/2: hands the frames queued to TLS or to the socket, or while a batch of events is
    /// handled, once at its end: every stream a batch's reads completed restarts in one write.
    pub(super) fn flush_h2(&mut self, i: usize, now: Instant) {
        if self.defer {
            if let Some(h2) = self.conns[i].h2.as_mut().filter(|h| !h.deferred) {
                h2.deferred = true;
                self.deferred.push(i);
            }
            return;
        }
        self.flush_h2_now(i, now);
    }

    /// Flushes the connections whose frames waited for the end of the batch.
    pub(super) fn flush_deferred(&mut self, now: Instant) {
        self.defer = false;
        let mut list = std::mem::take(&mut self.deferred);
        for &i in &list {
            // A connection closed (and maybe reopened) since has nothing of the batch's left.
            if let Some(h2) = self.conns[i].h2.as_mut().filter(|h| h.deferred) {
                h2.deferred = false;
                self.flush_h2_now(i, now);
            }
        }
        list.clear();
        self.deferred = list;
    }

    /// HTTP/2: hands the frames queued to TLS or to the socket (what the socket does not
    /// take waits for it to be writable).
    pub(super) fn flush_h2_now(&mut self, i: usize, now: Instant) {
        let conn = &mut self.conns[i];
        let Some(h2) = conn.h2.as_mut() else {
            return;
        };
        if let Some(session) = conn.tls.as_mut() {
            if !h2.out.is_empty() {
                use std::io::Write as _;
                // Unbounded buffer: takes everything.
                let _ = session.writer().write_all(&h2.out);
                h2.out.clear();
            }
            return self.flush_tls(i, now);
        }
        if let Err(e) = send_from(&mut self.io, &mut self.ledger, i, &mut h2.out) {
            self.fail(i, errno_kind(e, false), now, || format!("write: {e}"));
        }
    }

    /// HTTP/2: opens a stream for each request not written yet, as far as the server's
    /// stream limit allows, with its HEADERS and as much of its body as the windows allow.
    pub(super) fn open_streams(&mut self, i: usize, http2: &Http2, now: Instant) {
        let conn = &mut self.conns[i];
        let Some(h2) = conn.h2.as_mut() else {
            return;
        };
        let limit = if h2.session.can_open() {
            h2.session.max_streams() as usize
        } else {
            0
        };
        let written = conn.slots.len - conn.unwritten;
        let n = conn.unwritten.min(limit.saturating_sub(written));
        let window = h2.session.initial_window() as i64;
        let end_stream = http2.body.is_empty();
        for k in written..written + n {
            let stream = h2.session.open_stream();
            let slot = conn.slots.get_mut(k);
            *slot = Slot {
                stream,
                send_window: window,
                ..Slot::new(slot.due, now, slot.warm)
            };
            h2.session
                .headers(&mut h2.out, stream, &http2.header_block, end_stream);
            if !end_stream {
                h2.session.data(
                    &mut h2.out,
                    stream,
                    &http2.body,
                    &mut slot.body_sent,
                    &mut slot.send_window,
                );
            }
        }
        conn.unwritten -= n;
        self.flush_h2(i, now);
    }

    /// HTTP/2: after a read, opens the connection when the server's SETTINGS arrived, sends
    /// the request bodies the windows now let through, acts on a GOAWAY, and sends the frames
    /// owed to the server.
    pub(super) fn after_h2_read(&mut self, i: usize, now: Instant) {
        let Some(http2) = self.h2 else {
            return;
        };
        let conn = &mut self.conns[i];
        let Some(h2) = conn.h2.as_mut() else {
            return;
        };
        if matches!(conn.phase, Phase::Handshaking { .. }) {
            let tls_busy = conn.tls.as_ref().is_some_and(|t| t.is_handshaking());
            if !h2.session.settled() || tls_busy {
                return self.flush_h2(i, now);
            }
            conn.phase = Phase::Open;
            return self.open_streams(i, http2, now);
        }
        if !http2.body.is_empty() {
            for k in 0..conn.slots.len - conn.unwritten {
                let slot = conn.slots.get_mut(k);
                if slot.body_sent < http2.body.len() {
                    h2.session.data(
                        &mut h2.out,
                        slot.stream,
                        &http2.body,
                        &mut slot.body_sent,
                        &mut slot.send_window,
                    );
                }
            }
        }
        if let Some(last) = h2.session.goaway() {
            // Streams above `last` were never processed: they go again, on a new connection,
            // once the ones the server will finish have finished. They are at the back of
            // the written ones (streams are numbered in order).
            let written = conn.slots.len - conn.unwritten;
            let mut retry = 0;
            for k in 0..written {
                let slot = conn.slots.get_mut(k);
                if slot.stream > last {
                    slot.stream = 0;
                    retry += 1;
                }
            }
            conn.unwritten += retry;
            if conn.written() == 0 {
                self.flush_h2(i, now);
                self.close(i);
                return if self.conns[i].unwritten > 0 {
                    self.connect(i, now)
                } else {
                    self.refill(i, now)
                };
            }
        }
        self.flush_h2(i, now);
    }

    /// HTTP/2: the streams on connection `i` older than --timeout end as timeouts (each
    /// reset with CANCEL); the connection and its other streams go on.
    pub(super) fn expire_streams(&mut self, i: usize, now: Instant) {
        let timeout = self.config.timeout;
        let conn = &mut self.conns[i];
        let Some(h2) = conn.h2.as_mut() else {
            return;
        };
        while let Some(slot) = conn.slots.front().copied() {
            if now < slot.sent + timeout {
                break;
            }
            conn.slots.pop();
            if slot.stream == 0 {
                // Never written: the server's stream limit left no room within the timeout.
                conn.unwritten -= 1;
            } else {
                h2::rst_stream(&mut h2.out, slot.stream, h2::code::CANCEL);
            }
            self.ledger.error(slot.warm, ErrorKind::Timeout, || {
                format!("no complete response within {timeout:?}")
            });
        }
        self.flush_h2(i, now);
        self.refill(i, now);
    }

    /// HTTP/2: the server closed the connection. The open streams end as `closed`; the
    /// requests not written yet (after a GOAWAY, or over the stream limit) go on a new one.
    pub(super) fn on_h2_eof(&mut self, i: usize, now: Instant) {
        if matches!(self.conns[i].phase, Phase::Handshaking { .. }) {
            return self.fail(i, ErrorKind::Closed, now, || {
                "the server closed the connection before its HTTP/2 SETTINGS (does it speak \
                 HTTP/2 with prior knowledge, h2c, on this port?)"
                    .to_string()
            });
        }
        for _ in 0..self.conns[i].written() {
            let slot = self.conns[i].slots.pop().expect("a request is in flight");
            self.ledger.error(slot.warm, ErrorKind::Closed, || {
                "the server closed the HTTP/2 connection with the stream open".to_string()
            });
        }
        self.close(i);
        if self.conns[i].unwritten > 0 {
            self.connect(i, now);
        } else {
            self.refill(i, now);
        }
    }
}

/// HTTP/2: a fresh connection's session (after TLS, if any), with the preface queued; the
/// connection waits for the server's SETTINGS until `deadline`.
pub(super) fn start_h2_session(conn: &mut Conn, deadline: Instant) {
    let mut out = Vec::with_capacity(4096);
    h2::client_preface(&mut out);
    conn.h2 = Some(Box::new(H2 {
        session: Session::new(),
        out,
        deferred: false,
    }));
    conn.phase = Phase::Handshaking { deadline };
}

/// HTTP/2: reads one read's frames, and books each response that completes (at its
/// END_STREAM) or stream the server reset.
pub(super) fn receive_h2(
    conn: &mut Conn,
    ledger: &mut Ledger,
    data: &[u8],
    now: &mut Instant,
) -> AfterRead {
    let Conn { h2, slots, .. } = conn;
    let Some(h2) = h2.as_mut() else {
        return AfterRead::Keep;
    };
    let H2 { session, out, .. } = &mut **h2;
    let mut stamped = false;
    let mut finish = |slots: &mut Slots, k: usize, ledger: &mut Ledger| {
        let slot = slots.remove(k);
        if slot.status == 0 {
            ledger.error(slot.warm, ErrorKind::Protocol, || {
                format!("stream {} ended without a final :status", slot.stream)
            });
            return;
        }
        if !stamped {
            *now = Instant::now();
            stamped = true;
        }
        ledger.response(slot.warm, slot.status, slot.due, slot.sent, *now);
    };
    let result = session.receive(data, out, &mut |event| match event {
        h2::Event::Headers {
            stream,
            status,
            end_stream,
        } => {
            // A stream pelt gave up on (timed out) is not found: its frames are dropped.
            let Some(k) = slots.position(stream) else {
                return 0;
            };
            let slot = slots.get_mut(k);
            // 1xx heads come first and trailers last; the first final status is the one.
            if slot.status == 0 {
                slot.status = status.filter(|&s| s >= 200).unwrap_or(0);
            }
            if end_stream {
                finish(slots, k, ledger);
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
                finish(slots, k, ledger);
                return 0;
            }
            let slot = slots.get_mut(k);
            slot.unacked += len;
            if slot.unacked < h2::WINDOW / 2 {
                return 0;
            }
            std::mem::take(&mut slot.unacked)
        }
        h2::Event::Reset { stream, code } => {
            if let Some(k) = slots.position(stream) {
                let slot = slots.remove(k);
                ledger.error(slot.warm, ErrorKind::StreamReset, || {
                    format!("the server reset stream {stream}: {}", h2::code_name(code))
                });
            }
            0
        }
        h2::Event::WindowUpdate { stream, increment } => {
            if let Some(k) = (stream != 0).then(|| slots.position(stream)).flatten() {
                slots.get_mut(k).send_window += increment as i64;
            }
            0
        }
        h2::Event::Settings { window_delta } => {
            for k in 0..slots.len {
                let slot = slots.get_mut(k);
                if slot.stream != 0 {
                    slot.send_window += window_delta;
                }
            }
            0
        }
        // After the read, the worker acts on the session's GOAWAY.
        h2::Event::GoAway { .. } => 0,
    });
    match result {
        Ok(()) => AfterRead::Keep,
        Err(e) => AfterRead::Fail(ErrorKind::Protocol, e.to_string()),
    }
}
