//! HTTPS: the handshake (its flights through `send_copy`), the ciphertext of each read
//! decrypted and handed to the protocol, and the handshake's end acted on before the plaintext
//! that came with it. One code path for every backend and both protocols.

use super::plain::send_copy;
use super::*;

/// The TLS transport: the client config, and each connection's session.
pub(super) struct Tls {
    client: crate::TlsClient,
    conns: Vec<TlsConn>,
    /// Decrypted bytes, one read's worth.
    plain: Box<[u8]>,
}

/// One connection's TLS state.
struct TlsConn {
    /// The session on the current socket.
    session: Option<Box<rustls::ClientConnection>>,
    /// Ciphertext the socket has not taken yet.
    out: Vec<u8>,
    /// The server's close_notify arrived (a close after it cuts nothing short).
    closed: bool,
    /// The handshake ended and the protocol started.
    established: bool,
    /// When the handshake began.
    started: Instant,
}

impl Tls {
    pub(super) fn new(client: &crate::TlsClient) -> Tls {
        Tls {
            client: client.clone(),
            conns: Vec::new(),
            plain: vec![0u8; 64 * 1024].into_boxed_slice(),
        }
    }

    /// Hands the ciphertext the session of connection `i` has ready to the socket (what it
    /// does not take waits for the socket to be writable).
    fn send_pending<I: Io>(
        &mut self,
        io: &mut I,
        ledger: &mut Ledger,
        i: usize,
    ) -> Result<(), Errno> {
        let c = &mut self.conns[i];
        let Some(session) = c.session.as_mut() else {
            return Ok(());
        };
        while session.wants_write() {
            if session.write_tls(&mut c.out).is_err() {
                break;
            }
        }
        send_copy(io, ledger, i, &mut c.out)
    }

    /// Encrypts `bytes` (the session's buffer is unbounded: it takes everything) and sends.
    fn encrypt<I: Io>(
        &mut self,
        io: &mut I,
        ledger: &mut Ledger,
        i: usize,
        bytes: &[u8],
    ) -> Result<(), Errno> {
        if let (Some(session), false) = (self.conns[i].session.as_mut(), bytes.is_empty()) {
            use std::io::Write as _;
            let _ = session.writer().write_all(bytes);
        }
        self.send_pending(io, ledger, i)
    }
}

impl Transport for Tls {
    fn add(&mut self, now: Instant) {
        self.conns.push(TlsConn {
            session: None,
            out: Vec::new(),
            closed: false,
            established: false,
            started: now,
        });
    }

    fn reset(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.session = None;
        c.out.clear();
        c.closed = false;
        c.established = false;
    }

    #[inline]
    fn writing(&self, i: usize) -> bool {
        !self.conns[i].out.is_empty()
    }

    fn clean_close(&self, i: usize) -> bool {
        self.conns[i].closed
    }

    /// Begins the handshake on a fresh connection (its first flight goes out at the worker's
    /// `flush`); the requests wait for its end.
    fn connected(&mut self, i: usize, now: Instant) -> Result<bool, String> {
        let client = &self.client;
        let mut session =
            rustls::ClientConnection::new(client.config.clone(), client.server_name.clone())
                .map_err(|e| format!("TLS: {e}"))?;
        // Requests are encrypted as written; never refuse one for buffer space.
        session.set_buffer_limit(None);
        let c = &mut self.conns[i];
        c.session = Some(Box::new(session));
        c.started = now;
        Ok(true)
    }

    #[inline]
    fn handshaking(&self, i: usize) -> bool {
        let c = &self.conns[i];
        c.session.is_some() && !c.established
    }

    /// Feeds one read's ciphertext to the session and hands the plaintext to the protocol.
    ///
    /// When the read ends the handshake, the protocol starts before any plaintext is read: a server may send application data in the same segment as its last
    /// handshake message (nginx on TLS 1.2 writes its HTTP/2 SETTINGS right behind its
    /// Finished; a TLS 1.3 server may send them as 0.5-RTT data), and those bytes must be read
    /// as HTTP/2, not as an HTTP/1.1 response.
    fn receive<P: Protocol>(
        &mut self,
        i: usize,
        conn: &mut Conn<P>,
        ledger: &mut Ledger,
        config: &Config,
        data: &[u8],
        arrived: Option<Instant>,
        now: Instant,
    ) -> AfterRead {
        use std::io::Read as _;
        let Tls { conns, plain, .. } = self;
        let c = &mut conns[i];
        let sending = !c.out.is_empty();
        let Some(session) = c.session.as_mut() else {
            return AfterRead::Keep;
        };
        let mut rest = data;
        while !rest.is_empty() {
            if let Err(e) = session.read_tls(&mut rest) {
                return AfterRead::Fail(ErrorKind::Tls, format!("TLS: {e}"));
            }
            if let Err(e) = session.process_new_packets() {
                return AfterRead::Fail(ErrorKind::Tls, format!("TLS: {e}"));
            }
            if !c.established && !session.is_handshaking() {
                c.established = true;
                count_handshake(ledger, session, c.started, arrived.unwrap_or(now));
                if let Err(failed) = P::start(conn, session.alpn_protocol(), config, now) {
                    return failed;
                }
            }
            loop {
                match session.reader().read(plain) {
                    // close_notify: the server ends the stream cleanly.
                    Ok(0) => {
                        c.closed = true;
                        break;
                    }
                    Ok(n) => {
                        match P::receive(conn, ledger, config, &plain[..n], arrived, now, sending) {
                            AfterRead::Keep => {}
                            other => return other,
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return AfterRead::Fail(ErrorKind::Tls, format!("TLS: {e}")),
                }
            }
        }
        AfterRead::Keep
    }

    /// Sends what TLS has to say (a handshake flight, alerts, what the socket did not take).
    fn flush<I: Io, P: Protocol, S: Source>(
        w: &mut Worker<'_, I, P, Self, S>,
        i: usize,
        now: Instant,
    ) {
        let c = &w.transport.conns[i];
        let wants = !c.out.is_empty() || c.session.as_ref().is_some_and(|s| s.wants_write());
        if !wants {
            return;
        }
        if let Err(e) = w.transport.send_pending(&mut w.io, &mut w.ledger, i) {
            w.fail(i, errno_kind(e, false), now, || format!("write: {e}"));
        }
    }

    fn send<I: Io>(
        &mut self,
        io: &mut I,
        ledger: &mut Ledger,
        i: usize,
        bytes: &[u8],
    ) -> Result<usize, Errno> {
        self.encrypt(io, ledger, i, bytes)?;
        Ok(bytes.len())
    }

    fn send_buf<I: Io>(
        &mut self,
        io: &mut I,
        ledger: &mut Ledger,
        i: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), Errno> {
        self.encrypt(io, ledger, i, buf)?;
        buf.clear();
        Ok(())
    }
}

/// Counts a handshake that just ended: full or resumed, and how long it took.
fn count_handshake(
    ledger: &mut Ledger,
    session: &rustls::ClientConnection,
    started: Instant,
    now: Instant,
) {
    let took = now.saturating_duration_since(started).as_micros() as u64;
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
}
