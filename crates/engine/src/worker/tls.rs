//! HTTPS on a connection: the handshake (its flights through `send_copy`), the ciphertext of
//! each read decrypted and parsed, and the handshake's end acted on before the plaintext that
//! came with it. One code path for every backend.

use super::*;

impl<I: Io> Worker<'_, I> {
    /// HTTPS: begins the handshake on a fresh connection; the requests wait for its end.
    pub(super) fn start_tls(&mut self, i: usize, tls: &crate::TlsClient, now: Instant) {
        match rustls::ClientConnection::new(tls.config.clone(), tls.server_name.clone()) {
            Ok(mut session) => {
                // Requests are encrypted as written; never refuse one for buffer space.
                session.set_buffer_limit(None);
                let conn = &mut self.conns[i];
                conn.tls = Some(Box::new(session));
                conn.tls_started = now;
                conn.phase = Phase::Handshaking {
                    deadline: now + self.config.connect_timeout,
                };
                self.flush_tls(i, now);
            }
            Err(e) => self.fail(i, ErrorKind::Tls, now, || format!("TLS: {e}")),
        }
    }

    /// HTTPS: hands the ciphertext TLS has ready to the socket (what it does not take waits
    /// for the socket to be writable).
    pub(super) fn flush_tls(&mut self, i: usize, now: Instant) {
        let conn = &mut self.conns[i];
        let Some(session) = conn.tls.as_mut() else {
            return;
        };
        while session.wants_write() {
            if session.write_tls(&mut conn.tls_out).is_err() {
                break;
            }
        }
        if let Err(e) = send_from(&mut self.io, &mut self.ledger, i, &mut conn.tls_out) {
            self.fail(i, errno_kind(e, false), now, || format!("write: {e}"));
        }
    }

    /// HTTPS: after a read, writes the requests that waited for a handshake the read ended
    /// (HTTP/1.1; HTTP/2 opens its streams once the server's SETTINGS are in), and sends
    /// what TLS has to say.
    pub(super) fn after_tls_read(&mut self, i: usize, now: Instant) {
        let conn = &self.conns[i];
        let Some(session) = conn.tls.as_ref() else {
            return;
        };
        // An open HTTP/1.1 connection writes its requests as it takes them: unwritten ones
        // waited for the handshake.
        if matches!(conn.phase, Phase::Open) && conn.h2.is_none() && conn.unwritten > 0 {
            return self.start_write(i, now);
        }
        if session.wants_write() {
            self.flush_tls(i, now);
        }
    }
}

/// HTTPS: feeds one read's ciphertext to `session` and parses the plaintext it yields.
///
/// When the read ends the handshake, the connection is set up for its protocol before any
/// plaintext is parsed: a server may send application data in the same segment as its last
/// handshake message (nginx on TLS 1.2 writes its HTTP/2 SETTINGS right behind its
/// Finished; a TLS 1.3 server may send them as 0.5-RTT data), and those bytes must be read
/// as HTTP/2, not as an HTTP/1.1 response.
pub(super) fn decrypt_and_parse(
    conn: &mut Conn,
    session: &mut rustls::ClientConnection,
    ledger: &mut Ledger,
    config: &Config,
    data: &[u8],
    plain: &mut [u8],
    now: &mut Instant,
) -> AfterRead {
    use std::io::Read as _;
    let mut rest = data;
    while !rest.is_empty() {
        if let Err(e) = session.read_tls(&mut rest) {
            return AfterRead::Fail(ErrorKind::Tls, format!("TLS: {e}"));
        }
        if let Err(e) = session.process_new_packets() {
            return AfterRead::Fail(ErrorKind::Tls, format!("TLS: {e}"));
        }
        // With HTTP/2 the phase stays Handshaking after TLS, until the server's SETTINGS;
        // the session's existence says TLS is done.
        let ended = matches!(conn.phase, Phase::Handshaking { .. })
            && conn.h2.is_none()
            && !session.is_handshaking();
        if ended {
            if let Err(failed) = tls_established(conn, session, ledger, config, *now) {
                return failed;
            }
        }
        loop {
            match session.reader().read(plain) {
                // close_notify: the server ends the stream cleanly.
                Ok(0) => {
                    conn.tls_closed = true;
                    break;
                }
                Ok(n) => match consume(conn, ledger, config.keep_alive, &plain[..n], now) {
                    AfterRead::Keep => {}
                    other => return other,
                },
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return AfterRead::Fail(ErrorKind::Tls, format!("TLS: {e}")),
            }
        }
    }
    AfterRead::Keep
}

/// HTTPS: the handshake on `conn` has just ended. Counts it (full or resumed, and its time)
/// and opens the connection: HTTP/1.1 is open at once (its waiting requests are written after
/// the read); HTTP/2 needs ALPN `h2`, and starts its session with the preface queued, so the
/// frames that follow in the same read are read as HTTP/2 (the preface goes out after the
/// read, and the connection opens when the server's SETTINGS are in).
pub(super) fn tls_established(
    conn: &mut Conn,
    session: &rustls::ClientConnection,
    ledger: &mut Ledger,
    config: &Config,
    now: Instant,
) -> Result<(), AfterRead> {
    let took = now.saturating_duration_since(conn.tls_started).as_micros() as u64;
    let stats = ledger.current();
    stats.handshake.record(took);
    if matches!(
        session.handshake_kind(),
        Some(rustls::HandshakeKind::Resumed)
    ) {
        stats.handshakes_resumed += 1;
    } else {
        stats.handshakes_full += 1;
    }
    if config.http2.is_none() {
        conn.phase = Phase::Open;
        return Ok(());
    }
    if session.alpn_protocol() != Some(b"h2") {
        return Err(AfterRead::Fail(
            ErrorKind::Protocol,
            "the server did not choose HTTP/2 (h2) in the TLS handshake's ALPN; \
             it speaks HTTP/1.1 only, so drop --http2"
                .to_string(),
        ));
    }
    start_h2_session(conn, now + config.connect_timeout);
    Ok(())
}
