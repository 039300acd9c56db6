//! HTTP/1.1 on a connection: requests written together (a pipelined batch is the request
//! bytes repeated), responses parsed back to back as they come, and what a close means.

use super::*;

impl<I: Io> Worker<'_, I> {
    /// Writes the requests not written yet, together.
    pub(super) fn start_write(&mut self, i: usize, now: Instant) {
        if let Some(http2) = self.h2 {
            return self.open_streams(i, http2, now);
        }
        let len = self.config.request.len();
        let conn = &mut self.conns[i];
        let n = conn.unwritten;
        conn.slots.mark_sent(n, now);
        conn.unwritten = 0;
        conn.write_pos = 0;
        conn.write_end = n * len;
        self.write(i, now);
    }

    /// Hands what is left of the write under way to the socket.
    pub(super) fn write(&mut self, i: usize, now: Instant) {
        if self.h2.is_some() {
            self.flush_h2(i, now);
            if !self.conns[i].writing() && self.model.is_open() {
                self.refill(i, now);
            }
            return;
        }
        let conn = &mut self.conns[i];
        if let Some(session) = conn.tls.as_mut() {
            if conn.write_pos < conn.write_end {
                use std::io::Write as _;
                // Unbounded buffer: takes everything.
                let _ = session
                    .writer()
                    .write_all(&self.batch[conn.write_pos..conn.write_end]);
                conn.write_pos = conn.write_end;
            }
            self.flush_tls(i, now);
            if !self.conns[i].writing() && self.model.is_open() {
                self.refill(i, now);
            }
            return;
        }
        let bytes = &self.batch[conn.write_pos..conn.write_end];
        match self.io.send(i, bytes) {
            Ok(n) => {
                self.ledger.current().bytes_sent += n as u64;
                conn.write_pos += n;
                if !conn.writing() && self.model.is_open() {
                    // Slots left free while the write was under way may take due requests.
                    self.refill(i, now);
                }
            }
            Err(e) => self.fail(i, errno_kind(e, false), now, || format!("write: {e}")),
        }
    }

    /// The peer closed the connection.
    pub(super) fn on_eof(&mut self, i: usize, now: Instant) {
        if self.h2.is_some() {
            return self.on_h2_eof(i, now);
        }
        let conn = &self.conns[i];
        if conn.tls.is_some() && !conn.tls_closed && conn.slots.len > 0 {
            // Without close_notify a close proves nothing: a close-delimited body may be cut.
            let kind = match read_eof(&mut self.conns[i].parser) {
                Ok(_) | Err((ErrorKind::Incomplete, _)) => ErrorKind::Incomplete,
                Err((kind, _)) => kind,
            };
            return self.fail(i, kind, now, || {
                "the server closed the TLS connection without close_notify".to_string()
            });
        }
        if self.conns[i].slots.len == 0 {
            // An idle connection closed by the server: fine, the next request reconnects.
            self.close(i);
            return self.refill(i, now);
        }
        match read_eof(&mut self.conns[i].parser) {
            Ok(response) => {
                let slot = self.conns[i].slots.pop().expect("a request is in flight");
                self.ledger
                    .response(slot.warm, response.status, slot.due, slot.sent, now);
                self.fail_all(i, ErrorKind::Closed, || {
                    "the server closed the connection with pipelined requests unanswered"
                        .to_string()
                });
                self.close(i);
                self.refill(i, now);
            }
            Err((kind, message)) => self.fail(i, kind, now, || message),
        }
    }
}

/// Parses one read's bytes as the responses to the requests on `conn`, back to back, and
/// books each one that completes.
#[inline]
pub(super) fn parse(
    conn: &mut Conn,
    ledger: &mut Ledger,
    keep_alive: bool,
    data: &[u8],
    now: &mut Instant,
) -> AfterRead {
    let mut pos = 0;
    let mut completed = false;
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
        match conn.parser.parse(&data[pos..]) {
            Ok((_, Parsed::Partial)) => return AfterRead::Keep,
            Ok((n, Parsed::Complete(response))) => {
                pos += n;
                if !completed {
                    *now = Instant::now();
                    completed = true;
                }
                let slot = conn.slots.pop().expect("a request is in flight");
                ledger.response(slot.warm, response.status, slot.due, slot.sent, *now);
                if !(response.keep_alive && keep_alive) {
                    return AfterRead::Close;
                }
            }
            Err(e) => return AfterRead::Fail(parse_error_kind(&e), e.to_string()),
        }
    }
    // A response to a request not yet fully written: the server did not read it all.
    if completed && conn.slots.len == 0 && conn.writing() {
        return AfterRead::Close;
    }
    AfterRead::Keep
}
