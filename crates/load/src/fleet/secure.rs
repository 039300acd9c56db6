//! The fleet's channels, encrypted: TLS 1.3 (rustls) under the line-JSON protocol of
//! [`super::wire`], between a coordinator and its agents and between a run and its remote
//! monitor.
//!
//! The token is still the only secret a user manages. The listening side presents a
//! certificate made for the process (self-signed, thrown away when it exits), and the
//! connecting side accepts any certificate (checking the handshake's signature, so the session
//! is real TLS). What authenticates is the token's proofs, made over the session itself: each
//! side's HMAC covers the TLS exporter (RFC 8446 §7.5, the keying material both ends derive
//! from the session's secrets, as RFC 9266's `tls-exporter` channel binding). A machine in the
//! middle terminates two sessions with two different exporters, so the proofs it relays check
//! on neither side, and without the token it cannot make its own: it learns what came before
//! the proofs (an agent's hello: rank, host, version), never the run, and injects nothing.
//!
//! One connection is read by one thread and written by others (heartbeats, seconds, the
//! result): the TLS state sits behind a mutex that each write holds while it encrypts and
//! sends, and that the reader takes only to decrypt what a blocking read of the socket
//! brought (never across the read, so a silent peer blocks no writer).

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The label of the exporter the token's proofs are bound to.
const EXPORTER_LABEL: &[u8] = b"EXPORTER-pelt-fleet-channel";

/// The name the connecting side asks for (the certificate is not checked against it).
const NAME: &str = "pelt-fleet";

struct Shared {
    tcp: TcpStream,
    tls: Mutex<rustls::Connection>,
    /// The session's exporter (hex), what the token's proofs cover.
    session: String,
}

/// One side of an encrypted channel. Clones write to the same connection, a message at a time.
#[derive(Clone)]
pub struct Channel(Arc<Shared>);

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Channel({:?})", self.0.tcp.peer_addr().ok())
    }
}

impl Channel {
    /// Opens the channel over a connection this side made (the TLS client). The stream's
    /// timeouts bound the handshake.
    pub fn connect(tcp: TcpStream) -> std::io::Result<Channel> {
        let name = ServerName::try_from(NAME).expect("a valid name");
        let conn =
            rustls::ClientConnection::new(client_config()?, name).map_err(std::io::Error::other)?;
        Channel::open(tcp, conn.into())
    }

    /// Opens the channel over a connection this side accepted (the TLS server).
    pub fn accept(tcp: TcpStream) -> std::io::Result<Channel> {
        let conn =
            rustls::ServerConnection::new(server_config()?).map_err(std::io::Error::other)?;
        Channel::open(tcp, conn.into())
    }

    fn open(tcp: TcpStream, mut conn: rustls::Connection) -> std::io::Result<Channel> {
        let mut io = &tcp;
        while conn.is_handshaking() {
            conn.complete_io(&mut io).map_err(|e| {
                std::io::Error::new(e.kind(), format!("the TLS handshake failed: {e}"))
            })?;
        }
        flush(&mut conn, &tcp)?;
        let session = conn
            .export_keying_material([0u8; 32], EXPORTER_LABEL, None)
            .map_err(std::io::Error::other)?;
        Ok(Channel(Arc::new(Shared {
            session: hex(&session),
            tls: Mutex::new(conn),
            tcp,
        })))
    }

    /// The session's exporter, hex: bind the token's proofs to it.
    pub fn session(&self) -> &str {
        &self.0.session
    }

    /// The connection underneath (for its timeouts and addresses).
    pub fn tcp(&self) -> &TcpStream {
        &self.0.tcp
    }

    fn tls(&self) -> std::io::Result<MutexGuard<'_, rustls::Connection>> {
        self.0
            .tls
            .lock()
            .map_err(|_| std::io::Error::other("the channel's lock was poisoned"))
    }

    /// Encrypts and sends `bytes` (whole, or an error).
    pub fn write_all(&self, mut bytes: &[u8]) -> std::io::Result<()> {
        let mut tls = self.tls()?;
        while !bytes.is_empty() {
            // rustls takes what fits its send buffer; each part goes out before the next.
            let n = tls.writer().write(bytes)?;
            flush(&mut tls, &self.0.tcp)?;
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Says goodbye (TLS close_notify) and shuts this side's sending half: the peer reads
    /// everything sent before it, then the end. Keep reading until the peer closes too, then
    /// [`Channel::close`]: a socket closed with bytes unread resets the connection, and a
    /// reset can make the peer's kernel drop what it had not yet handed to the peer (a busy
    /// coordinator lost agents' results that way).
    pub fn close_write(&self) {
        if let Ok(mut tls) = self.tls() {
            tls.send_close_notify();
            let _ = flush(&mut tls, &self.0.tcp);
        }
        let _ = self.0.tcp.shutdown(std::net::Shutdown::Write);
    }

    /// Says goodbye (TLS close_notify) and shuts the connection both ways.
    pub fn close(&self) {
        if let Ok(mut tls) = self.tls() {
            tls.send_close_notify();
            let _ = flush(&mut tls, &self.0.tcp);
        }
        let _ = self.0.tcp.shutdown(std::net::Shutdown::Both);
    }

    /// Appends to `plain` what the peer sent, if anything: `Ok(true)` while the channel is
    /// open (call again for more), `Ok(false)` once the peer has closed (cleanly or not) and
    /// nothing more came. One blocking read of the socket at most: its read timeout ends it
    /// as `WouldBlock` or `TimedOut`, and a record read in part is kept for the next call. A
    /// record that does not decrypt (a byte changed on the way) is an `InvalidData` error.
    pub fn receive(&self, plain: &mut Vec<u8>) -> std::io::Result<bool> {
        if let Some(open) = drain(&mut *self.tls()?, plain)? {
            return Ok(open);
        }
        let mut raw = [0u8; 16 << 10];
        let n = (&self.0.tcp).read(&mut raw)?;
        let mut tls = self.tls()?;
        let mut rest = &raw[..n];
        // Plain bytes handed on by this call: the caller reads them before it hears of the
        // close (rustls may take one read's records in several turns, the close in the last).
        let mut got = false;
        loop {
            // With nothing read, this tells rustls the connection ended.
            tls.read_tls(&mut rest)?;
            let processed = tls.process_new_packets();
            // Whatever rustls has to say (an alert, a key update's answer) goes out now.
            let _ = flush(&mut tls, &self.0.tcp);
            processed.map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("the channel's TLS failed: {e}"),
                )
            })?;
            if let Some(open) = drain(&mut tls, plain)? {
                got |= open;
                if !open || rest.is_empty() {
                    return Ok(open || got);
                }
            } else if rest.is_empty() {
                // A record in part, or only handshake messages: nothing to hand on yet.
                return Ok(true);
            }
        }
    }
}

/// Moves the decrypted bytes waiting in `tls` to `plain`: `Some(true)` if there were any,
/// `Some(false)` if none and the peer has closed, `None` if none yet.
fn drain(tls: &mut rustls::Connection, plain: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    let mut got = false;
    let mut chunk = [0u8; 8 << 10];
    loop {
        match tls.reader().read(&mut chunk) {
            Ok(0) => return Ok(Some(got)),
            Ok(n) => {
                plain.extend_from_slice(&chunk[..n]);
                got = true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(got.then_some(true)),
            // The socket ended without a close_notify: the peer is gone all the same.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(Some(got)),
            Err(e) => return Err(e),
        }
    }
}

fn flush(tls: &mut rustls::Connection, tcp: &TcpStream) -> std::io::Result<()> {
    let mut out = tcp;
    while tls.wants_write() {
        tls.write_tls(&mut out)?;
    }
    Ok(())
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// TLS 1.3 only, any certificate (the token's proofs authenticate), no resumption.
fn client_config() -> std::io::Result<Arc<rustls::ClientConfig>> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if let Some(c) = CONFIG.get() {
        return Ok(c.clone());
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(std::io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(crate::tls::any_certificate(provider()))
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    Ok(CONFIG.get_or_init(|| Arc::new(config)).clone())
}

/// TLS 1.3 only, with a certificate made for this process.
fn server_config() -> std::io::Result<Arc<rustls::ServerConfig>> {
    static CONFIG: OnceLock<Arc<rustls::ServerConfig>> = OnceLock::new();
    if let Some(c) = CONFIG.get() {
        return Ok(c.clone());
    }
    let made = rcgen::generate_simple_self_signed(vec![NAME.to_string()])
        .map_err(std::io::Error::other)?;
    let cert = CertificateDer::from(made.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(std::io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(std::io::Error::other)?;
    config.send_tls13_tickets = 0;
    Ok(CONFIG.get_or_init(|| Arc::new(config)).clone())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
