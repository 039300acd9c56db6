//! One HTTP/3 connection as a client drives it, with no I/O: quinn-proto's QUIC state machine
//! (a sans-I/O crate: it owns no socket, no clock and no runtime, as pelt's loop wants) and
//! pelt-codec's HTTP/3 framing (`pelt_codec::h3`) on its streams. The caller hands it each
//! datagram its connected UDP socket read ([`H3Conn::receive`]), sends what it has to send
//! ([`H3Conn::transmit`]), wakes it at its deadline ([`H3Conn::on_deadline`]), opens requests
//! ([`H3Conn::request`]) and takes what happened ([`H3Conn::poll`]).
//!
//! One quinn-proto `Endpoint` per connection: each connection has its own connected UDP
//! socket (`backend::Endpoint::Udp`), so the kernel, not the endpoint, sorts datagrams by
//! connection.
//!
//! The worker's protocol module over it is `worker/http3.rs`.
//!
//! Handshakes: rustls's session store in the shared TLS config resumes each new connection
//! from a ticket an earlier one got (unless `--tls-full-handshake` disabled it), and with the
//! config's early data on, requests go in 0-RTT; the server's refusal of them is reported and
//! they go again. QUIC's TLS does not say whether a handshake resumed: [`Verifier`], the
//! certificate check wrapped, counts on its thread the certificates it checked, and a
//! handshake that checked none was resumed.

use bytes::BytesMut;
use pelt_codec::h3;
use quinn_proto::{
    ClientConfig, ConnectionHandle, DatagramEvent, Dir, EndpointConfig, Event, StreamEvent,
    StreamId, VarInt,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

thread_local! {
    /// Server certificates [`Verifier`] checked on this thread.
    static CHECKED: Cell<u64> = const { Cell::new(0) };
}

/// An HTTP/3 run's certificate check: the run's own (webpki's roots and `--cacert`, or
/// `--insecure`'s), counting what it checks, so a connection knows whether its handshake was
/// full (a certificate came and was checked) or resumed (none came).
#[derive(Debug)]
pub struct Verifier(pub Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        CHECKED.set(CHECKED.get() + 1);
        self.0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.0.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[rustls::DistinguishedName]> {
        self.0.root_hint_subjects()
    }
}

/// How a connection's handshake went ([`Happened::Ready`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Handshake {
    /// No certificate came: the session was resumed from a ticket.
    pub resumed: bool,
    /// Requests went in 0-RTT: `Some(true)` the server took them, `Some(false)` it refused
    /// them (they went again, on new streams, after the handshake); `None`: none went early.
    pub early: Option<bool>,
}

/// What happened on the connection, one thing at a time ([`H3Conn::poll`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Happened<'a> {
    /// The handshake ended: requests may go (those sent in 0-RTT that the server refused
    /// are to be written again).
    Ready(Handshake),
    /// A field of request `stream`'s response (only after [`H3Conn::read_fields`]), before
    /// the [`Happened::Response`] (or trailers) it belongs to.
    Field {
        stream: u64,
        name: &'a [u8],
        value: &'a [u8],
    },
    /// Request `stream`'s final response headers (`event_stream`: a `text/event-stream`).
    Response {
        stream: u64,
        status: u16,
        event_stream: bool,
    },
    /// Bytes of request `stream`'s response body.
    Body { stream: u64, bytes: &'a [u8] },
    /// Request `stream`'s response ended whole.
    Done { stream: u64 },
    /// Request `stream` ended without a whole response (`why`).
    Failed {
        stream: u64,
        why: Why,
        message: String,
    },
    /// The server takes no request stream from `stream` on.
    GoAway { stream: u64 },
    /// The connection ended (why, in words, and its code: [`ended_code`]).
    Closed { reason: String, code: String },
}

/// Why a request's stream ended without a whole response.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// The server reset it, with this HTTP/3 error code.
    Reset(u64),
    /// Its response broke HTTP/3's rules (the code pelt's reader names it with).
    Malformed(u64),
    /// The connection ended under it, with this code ([`ended_code`]).
    Ended(String),
}

/// The code a connection that ended ended with, as a key for the result's `error_codes`: the
/// server's HTTP/3 code (`H3_EXCESSIVE_LOAD`) or QUIC transport code (`PROTOCOL_VIOLATION`),
/// `pelt: ...` for pelt's own close (`closing`: the HTTP/3 code pelt closed with), or what
/// happened (`idle timeout`, `stateless reset`).
pub(crate) fn ended_code(reason: &quinn_proto::ConnectionError, closing: Option<u64>) -> String {
    use quinn_proto::ConnectionError as E;
    match reason {
        E::ApplicationClosed(c) => h3::code_name(c.error_code.into_inner()).to_string(),
        E::ConnectionClosed(c) => transport_code_name(c.error_code.into()).to_string(),
        E::TransportError(e) => format!("pelt: {}", transport_code_name(e.code.into())),
        E::LocallyClosed => match closing {
            Some(c) => format!("pelt: {}", h3::code_name(c)),
            None => "pelt: closed".to_string(),
        },
        E::TimedOut => "idle timeout".to_string(),
        E::Reset => "stateless reset".to_string(),
        E::VersionMismatch => "version mismatch".to_string(),
        E::CidsExhausted => "connection ids exhausted".to_string(),
    }
}

/// A QUIC transport error code's name, as RFC 9000 writes it (`unknown` for others). Written
/// here: quinn-proto prints names only through `Debug`, and a TLS alert's code differently.
fn transport_code_name(c: u64) -> &'static str {
    const NAMES: [&str; 17] = [
        "NO_ERROR",
        "INTERNAL_ERROR",
        "CONNECTION_REFUSED",
        "FLOW_CONTROL_ERROR",
        "STREAM_LIMIT_ERROR",
        "STREAM_STATE_ERROR",
        "FINAL_SIZE_ERROR",
        "FRAME_ENCODING_ERROR",
        "TRANSPORT_PARAMETER_ERROR",
        "CONNECTION_ID_LIMIT_ERROR",
        "PROTOCOL_VIOLATION",
        "INVALID_TOKEN",
        "APPLICATION_ERROR",
        "CRYPTO_BUFFER_EXCEEDED",
        "KEY_UPDATE_ERROR",
        "AEAD_LIMIT_REACHED",
        "NO_VIABLE_PATH",
    ];
    match c {
        0x100..=0x1ff => "CRYPTO_ERROR",
        c => NAMES.get(c as usize).copied().unwrap_or("unknown"),
    }
}

/// A server-opened unidirectional stream, by what it turned out to be.
enum Uni {
    /// Its type has not all come yet.
    Typing(Vec<u8>),
    Control(h3::Control),
    /// QPACK's streams and unknown types: read and dropped.
    Dropped,
}

/// One HTTP/3 connection (see the module docs).
pub(crate) struct H3Conn {
    endpoint: quinn_proto::Endpoint,
    handle: ConnectionHandle,
    conn: quinn_proto::Connection,
    remote: SocketAddr,
    /// Request streams under way and their response readers (reused once done).
    open: Vec<(StreamId, h3::Response)>,
    spare: Vec<h3::Response>,
    uni: Vec<(StreamId, Uni)>,
    /// A request's bytes its stream did not take yet (its flow control); they end it.
    pending: Vec<(StreamId, Vec<u8>)>,
    /// Request streams opened so far, and the stream the server's last GOAWAY named.
    opened: u64,
    goaway: Option<u64>,
    /// The datagrams `transmit` hands out, written here first.
    out: Vec<u8>,
    closed: bool,
    /// Responses report their fields.
    fields: bool,
    /// Requests may be written: the handshake ended, or 0-RTT lets them go before.
    writable: bool,
    /// A certificate was checked in this connection's handshake.
    checked: bool,
    /// The HTTP/3 code pelt closed the connection with (its end says so).
    closing: Option<u64>,
}

impl H3Conn {
    /// Starts a connection to `remote` (its handshake's first flight waits in
    /// [`H3Conn::transmit`]). `tls`: a TLS 1.3 client config whose ALPN offers `h3`; with
    /// its `enable_early_data` and a ticket that allows it, requests may go at once (0-RTT).
    pub fn new(
        tls: Arc<rustls::ClientConfig>,
        server_name: &str,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<H3Conn, String> {
        let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls)
            .map_err(|e| format!("HTTP/3's TLS: {e}"))?;
        let config = ClientConfig::new(Arc::new(crypto));
        let mut endpoint =
            quinn_proto::Endpoint::new(Arc::new(EndpointConfig::default()), None, false, None);
        let (handle, conn) = endpoint
            .connect(now, config, remote, server_name)
            .map_err(|e| format!("QUIC connect to {remote}: {e}"))?;
        let mut h3 = H3Conn {
            endpoint,
            handle,
            conn,
            remote,
            open: Vec::new(),
            spare: Vec::new(),
            uni: Vec::new(),
            pending: Vec::new(),
            opened: 0,
            goaway: None,
            out: Vec::new(),
            closed: false,
            fields: false,
            writable: false,
            checked: false,
            closing: None,
        };
        if h3.conn.has_0rtt() {
            h3.open_control();
            h3.writable = true;
        }
        Ok(h3)
    }

    /// Opens pelt's control stream with its SETTINGS (no dynamic table).
    fn open_control(&mut self) {
        if let Some(id) = self.conn.streams().open(Dir::Uni) {
            let mut control = Vec::new();
            h3::control_stream(&mut control);
            let _ = self.conn.send_stream(id).write(&control);
        }
    }

    /// Requests may be written ([`H3Conn::request`]): the handshake ended, or they go in
    /// 0-RTT.
    pub fn writable(&self) -> bool {
        self.writable
    }

    /// A datagram the socket read.
    pub fn receive(&mut self, datagram: &[u8], now: Instant) {
        let checked = CHECKED.get();
        let mut answer = Vec::new();
        let event = self.endpoint.handle(
            now,
            self.remote,
            None,
            None,
            BytesMut::from(datagram),
            &mut answer,
        );
        if let Some(DatagramEvent::ConnectionEvent(_, event)) = event {
            self.conn.handle_event(event);
        }
        self.checked |= CHECKED.get() != checked;
    }

    /// Hands what the connection has to send now to `send`: up to `segments` datagrams at a
    /// time, with the size of each (all that size but the last, which may be shorter).
    pub fn transmit(&mut self, now: Instant, segments: usize, send: &mut impl FnMut(&[u8], usize)) {
        loop {
            self.out.clear();
            let Some(t) = self.conn.poll_transmit(now, segments.max(1), &mut self.out) else {
                break;
            };
            send(&self.out[..t.size], t.segment_size.unwrap_or(t.size).max(1));
        }
        while let Some(e) = self.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(self.handle, e) {
                self.conn.handle_event(back);
            }
        }
    }

    /// When the connection next needs [`H3Conn::on_deadline`] (its loss detection, its
    /// acknowledgements' delay, its idle timeout).
    pub fn deadline(&mut self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    pub fn on_deadline(&mut self, now: Instant) {
        self.conn.handle_timeout(now);
    }

    /// Opens a request stream and writes `request` (its HEADERS frame and any DATA frames)
    /// on it, ending it; `None` when the server allows no more streams now, or takes no new
    /// one (its GOAWAY named this stream or one before it: the connection is done once its
    /// streams are).
    pub fn request(&mut self, request: &[u8]) -> Option<u64> {
        // Client-initiated bidirectional streams are numbered 0, 4, 8, ... in order.
        if self.goaway.is_some_and(|g| 4 * self.opened >= g) || self.closed {
            return None;
        }
        let id = self.conn.streams().open(Dir::Bi)?;
        self.opened += 1;
        let mut response = self.spare.pop().unwrap_or_default();
        response.reset();
        if self.fields {
            response.read_fields();
        }
        self.open.push((id, response));
        self.write(id, request);
        Some(id.into())
    }

    /// Every response from now on reports its fields ([`Happened::Field`]).
    pub fn read_fields(&mut self) {
        self.fields = true;
    }

    /// Gives up request `stream` (its time ran out): both its sides are stopped with
    /// H3_REQUEST_CANCELLED, and nothing more is reported of it.
    pub fn cancel(&mut self, stream: u64) {
        let Some(k) = self.open.iter().position(|(s, _)| u64::from(*s) == stream) else {
            return;
        };
        let (id, response) = self.open.swap_remove(k);
        self.spare.push(response);
        self.pending.retain(|(p, _)| *p != id);
        let cancelled = VarInt::from_u32(h3::code::REQUEST_CANCELLED as u32);
        let _ = self.conn.send_stream(id).reset(cancelled);
        let _ = self.conn.recv_stream(id).stop(cancelled);
    }

    /// Request streams opened so far.
    pub fn opened(&self) -> u64 {
        self.opened
    }

    /// The server sent GOAWAY: no new request goes on this connection.
    pub fn going_away(&self) -> bool {
        self.goaway.is_some()
    }

    /// Closes the connection as done (H3_NO_ERROR): the server hears it at the next
    /// [`H3Conn::transmit`].
    pub fn close(&mut self, now: Instant) {
        if !self.closed() {
            self.closing = Some(h3::code::NO_ERROR);
            let code = VarInt::from_u32(h3::code::NO_ERROR as u32);
            self.conn.close(now, code, bytes::Bytes::new());
        }
    }

    /// Writes `bytes` on `id` and ends it, or keeps what the stream did not take.
    fn write(&mut self, id: StreamId, bytes: &[u8]) {
        let mut s = self.conn.send_stream(id);
        let n = match s.write(bytes) {
            Ok(n) => n,
            Err(quinn_proto::WriteError::Blocked) => 0,
            // Stopped or gone: its response, if any, says what became of it.
            Err(_) => return,
        };
        if n == bytes.len() {
            let _ = s.finish();
        } else {
            self.pending.push((id, bytes[n..].to_vec()));
        }
    }

    /// Streams under way.
    #[cfg(test)]
    pub fn in_flight(&self) -> usize {
        self.open.len()
    }

    /// Reports what happened since the last call, in order.
    pub fn poll(&mut self, on: &mut impl FnMut(Happened)) {
        while let Some(event) = self.conn.poll() {
            match event {
                Event::Connected => {
                    let early = self.conn.has_0rtt().then(|| self.conn.accepted_0rtt());
                    if early == Some(false) {
                        // QUIC dropped every stream opened in 0-RTT: they begin again.
                        for (_, response) in self.open.drain(..) {
                            self.spare.push(response);
                        }
                        self.pending.clear();
                        self.opened = 0;
                    }
                    if early != Some(true) {
                        self.open_control();
                    }
                    self.writable = true;
                    on(Happened::Ready(Handshake {
                        resumed: !self.checked,
                        early,
                    }));
                }
                Event::ConnectionLost { reason } => {
                    // What came before the end is read first: a response whose last bytes
                    // arrived with (or before) the close is whole.
                    let ids: Vec<StreamId> = self.open.iter().map(|(id, _)| *id).collect();
                    for id in ids {
                        self.read(id, on);
                    }
                    self.closed = true;
                    let code = ended_code(&reason, self.closing);
                    for (id, _) in self.open.drain(..) {
                        on(Happened::Failed {
                            stream: id.into(),
                            why: Why::Ended(code.clone()),
                            message: format!("the connection ended: {reason}"),
                        });
                    }
                    on(Happened::Closed {
                        reason: reason.to_string(),
                        code,
                    });
                }
                Event::Stream(StreamEvent::Readable { id }) => self.read(id, on),
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = self.conn.streams().accept(Dir::Uni) {
                        self.uni.push((id, Uni::Typing(Vec::new())));
                        self.read(id, on);
                    }
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    // A server may not open bidirectional streams in HTTP/3.
                    while let Some(id) = self.conn.streams().accept(Dir::Bi) {
                        let _ = self.conn.recv_stream(id).stop(
                            VarInt::from_u64(h3::code::STREAM_CREATION_ERROR).unwrap_or_default(),
                        );
                    }
                }
                Event::Stream(StreamEvent::Writable { id }) => {
                    if let Some(k) = self.pending.iter().position(|(p, _)| *p == id) {
                        let (id, rest) = self.pending.swap_remove(k);
                        self.write(id, &rest);
                    }
                }
                _ => {}
            }
        }
    }

    /// Reads what stream `id` has, through its reader.
    fn read(&mut self, id: StreamId, on: &mut impl FnMut(Happened)) {
        let request = self.open.iter().position(|(s, _)| *s == id);
        let uni = self.uni.iter().position(|(s, _)| *s == id);
        if request.is_none() && uni.is_none() {
            return;
        }
        let mut recv = self.conn.recv_stream(id);
        let mut chunks = match recv.read(true) {
            Ok(chunks) => chunks,
            Err(_) => return,
        };
        let mut failed: Option<(Why, String)> = None;
        let mut fin = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    let got = match (request, uni) {
                        (Some(k), _) => {
                            let stream = u64::from(id);
                            let (_, response) = &mut self.open[k];
                            response.receive(&chunk.bytes, &mut |e| match e {
                                h3::Event::Field { name, value } => on(Happened::Field {
                                    stream,
                                    name,
                                    value,
                                }),
                                h3::Event::Headers {
                                    status: Some(status),
                                    event_stream,
                                } if !(100..200).contains(&status) => on(Happened::Response {
                                    stream,
                                    status,
                                    event_stream,
                                }),
                                h3::Event::Body(bytes) => on(Happened::Body { stream, bytes }),
                                _ => {}
                            })
                        }
                        (None, Some(k)) => {
                            let mut goaways = Vec::new();
                            let read = uni_bytes(&mut self.uni[k].1, &chunk.bytes, &mut goaways);
                            for stream in goaways {
                                self.goaway = Some(stream);
                                on(Happened::GoAway { stream });
                            }
                            read
                        }
                        (None, None) => Ok(()),
                    };
                    if let Err(e) = got {
                        failed = Some((Why::Malformed(e.code), e.to_string()));
                        break;
                    }
                }
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(quinn_proto::ReadError::Blocked) => break,
                Err(quinn_proto::ReadError::Reset(code)) => {
                    let code = code.into_inner();
                    failed = Some((
                        Why::Reset(code),
                        format!("the server reset the stream: {}", h3::code_name(code)),
                    ));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        match (request, failed) {
            (Some(k), Some((why, message))) => {
                let (id, response) = self.open.swap_remove(k);
                self.spare.push(response);
                let cancelled = VarInt::from_u32(h3::code::REQUEST_CANCELLED as u32);
                let _ = self.conn.recv_stream(id).stop(cancelled);
                on(Happened::Failed {
                    stream: id.into(),
                    why,
                    message,
                });
            }
            (Some(k), None) if fin => {
                let (id, response) = self.open.swap_remove(k);
                let end = response.end();
                self.spare.push(response);
                match end {
                    Ok(()) => on(Happened::Done { stream: id.into() }),
                    Err(e) => on(Happened::Failed {
                        stream: id.into(),
                        why: Why::Malformed(e.code),
                        message: e.to_string(),
                    }),
                }
            }
            // The server's control stream is critical: an error on it, or its end, ends the
            // connection.
            (None, Some((Why::Reset(code) | Why::Malformed(code), message))) => {
                self.close_with(code, &message)
            }
            (None, None)
                if fin
                    && matches!(
                        self.uni.get(uni.unwrap_or(usize::MAX)),
                        Some((_, Uni::Control(_)))
                    ) =>
            {
                self.close_with(
                    h3::code::CLOSED_CRITICAL_STREAM,
                    "the server closed its control stream",
                )
            }
            _ => {}
        }
    }

    /// Closes the connection with HTTP/3 error `code` (its end comes as
    /// [`Happened::Closed`]).
    fn close_with(&mut self, code: u64, message: &str) {
        if self.closed {
            return;
        }
        self.closing = Some(code);
        self.conn.close(
            Instant::now(),
            VarInt::from_u64(code).unwrap_or_default(),
            bytes::Bytes::copy_from_slice(message.as_bytes()),
        );
    }

    /// The connection has ended (lost, closed by either side).
    pub fn closed(&self) -> bool {
        self.closed || self.conn.is_closed()
    }

    /// What QUIC has counted on this connection so far.
    pub fn stats(&self) -> pelt_stats::QuicStats {
        let s = self.conn.stats();
        let blocked = |f: &quinn_proto::FrameStats| {
            f.data_blocked + f.stream_data_blocked + f.streams_blocked_bidi + f.streams_blocked_uni
        };
        pelt_stats::QuicStats {
            datagrams_sent: s.udp_tx.datagrams,
            datagrams_received: s.udp_rx.datagrams,
            packets_sent: s.path.sent_packets,
            packets_lost: s.path.lost_packets,
            bytes_lost: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
            blocked_by_server: blocked(&s.frame_tx),
            blocked_by_pelt: blocked(&s.frame_rx),
            // Counted by the worker, which re-sends what 0-RTT lost.
            ..Default::default()
        }
    }
}

/// A server unidirectional stream's bytes: its type first, then (control stream) its frames;
/// the streams its GOAWAYs name go to `goaways`.
fn uni_bytes(state: &mut Uni, bytes: &[u8], goaways: &mut Vec<u64>) -> Result<(), h3::H3Error> {
    let mut on = |e: h3::ControlEvent| {
        if let h3::ControlEvent::GoAway { stream } = e {
            goaways.push(stream);
        }
    };
    match state {
        Uni::Typing(held) => {
            held.extend_from_slice(bytes);
            let Some((kind, n)) = h3::uni_stream(held)? else {
                return Ok(());
            };
            let rest = held.split_off(n);
            if kind != h3::UniStream::Control {
                *state = Uni::Dropped;
                return Ok(());
            }
            let mut control = h3::Control::new();
            let read = control.receive(&rest, &mut on);
            *state = Uni::Control(control);
            read
        }
        Uni::Control(c) => c.receive(bytes, &mut on),
        Uni::Dropped => Ok(()),
    }
}

/// aioquic's server for the tests: the launcher tests/http3.rs uses too.
#[cfg(test)]
#[path = "../../../tests/util/aioquic.rs"]
mod aioquic;

#[cfg(test)]
mod tests {
    use super::*;

    use std::net::UdpSocket;
    use std::path::PathBuf;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    /// A server certificate check that takes any (the test server's is self-signed).
    #[derive(Debug)]
    struct AnyCert;

    impl rustls::client::danger::ServerCertVerifier for AnyCert {
        fn verify_server_cert(
            &self,
            _: &rustls::pki_types::CertificateDer<'_>,
            _: &[rustls::pki_types::CertificateDer<'_>],
            _: &rustls::pki_types::ServerName<'_>,
            _: &[u8],
            _: rustls::pki_types::UnixTime,
        ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            _: &[u8],
            _: &rustls::pki_types::CertificateDer<'_>,
            _: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
        }
        fn verify_tls13_signature(
            &self,
            _: &[u8],
            _: &rustls::pki_types::CertificateDer<'_>,
            _: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
        }
        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            rustls::crypto::ring::default_provider()
                .signature_verification_algorithms
                .supported_schemes()
        }
    }

    fn tls() -> Arc<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut c = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Verifier(Arc::new(AnyCert))))
            .with_no_client_auth();
        c.alpn_protocols = vec![b"h3".to_vec()];
        Arc::new(c)
    }

    use super::aioquic::Aioquic;

    /// Debian's caddy (HTTP/3 on for HTTPS sites), answering "ok" on 127.0.0.1 at a port free
    /// a moment before, with its internal CA, logging each request; `None` (skipped, outside
    /// CI) without it.
    struct Caddy {
        child: std::process::Child,
        addr: SocketAddr,
        dir: PathBuf,
    }

    impl Caddy {
        fn start() -> Option<Caddy> {
            let bin = PathBuf::from("/usr/bin/caddy");
            if !bin.exists() {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "caddy is missing (Debian package: caddy); .ci/run installs it"
                );
                eprintln!("SKIPPED: caddy is not installed (Debian package: caddy)");
                return None;
            }
            let dir = std::env::temp_dir().join(format!("pelt-caddy-h3-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            for _ in 0..3 {
                // A port free a moment ago, on TCP and UDP both.
                let port = {
                    let t = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                    let port = t.local_addr().unwrap().port();
                    match UdpSocket::bind(("127.0.0.1", port)) {
                        Ok(_) => port,
                        Err(_) => continue,
                    }
                };
                let d = dir.display();
                let conf = format!(
                    "{{\n\tadmin off\n\tskip_install_trust\n\tdefault_sni 127.0.0.1\n\t\
                     storage file_system {d}/data\n}}\nhttps://127.0.0.1:{port} {{\n\t\
                     tls internal\n\tlog {{\n\t\toutput file {d}/access.log\n\t}}\n\t\
                     respond \"ok\" 200\n}}\n"
                );
                std::fs::write(dir.join("Caddyfile"), conf).unwrap();
                let mut child = Command::new(&bin)
                    .args(["run", "--adapter", "caddyfile", "--config"])
                    .arg(dir.join("Caddyfile"))
                    .env("HOME", &dir)
                    .env("XDG_DATA_HOME", dir.join("data"))
                    .env("XDG_CONFIG_HOME", dir.join("config"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start caddy");
                let addr = SocketAddr::from(([127, 0, 0, 1], port));
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    // Its HTTP/3 listener starts after its TCP one: a datagram to a closed
                    // port draws an ICMP unreachable (a refused read), a listener drops it.
                    if std::net::TcpStream::connect(addr).is_ok() && udp_listening(addr) {
                        return Some(Caddy { child, addr, dir });
                    }
                    if child.try_wait().ok().flatten().is_some() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
            panic!("caddy would not start");
        }

        /// The requests its access log holds (waiting up to 5 s for `at_least`).
        fn logged(&self, at_least: usize) -> usize {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let text = std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
                let n = text
                    .lines()
                    .filter(|l| l.contains("\"proto\":\"HTTP/3.0\""))
                    .count();
                if n >= at_least || Instant::now() > deadline {
                    return n;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    impl Drop for Caddy {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn udp_listening(addr: SocketAddr) -> bool {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let _ = sock.send(b"not quic");
        let refused = std::io::ErrorKind::ConnectionRefused;
        !matches!(sock.recv(&mut [0u8; 64]), Err(e) if e.kind() == refused)
    }

    /// Drives `conn` over a connected UDP socket until `done` says so (10 s at most).
    fn drive(
        conn: &mut H3Conn,
        sock: &UdpSocket,
        mut step: impl FnMut(&mut H3Conn, &[String]) -> bool,
    ) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen: Vec<String> = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            conn.poll(&mut |h| seen.push(format!("{h:?}")));
            if step(conn, &seen) || Instant::now() > deadline {
                return seen;
            }
            conn.transmit(Instant::now(), 1, &mut |d, _| {
                sock.send(d).expect("send");
            });
            let wait = conn
                .deadline()
                .map_or(Duration::from_millis(50), |d| {
                    d.saturating_duration_since(Instant::now())
                })
                .clamp(Duration::from_millis(1), Duration::from_millis(50));
            sock.set_read_timeout(Some(wait)).unwrap();
            match sock.recv(&mut buf) {
                Ok(n) => conn.receive(&buf[..n], Instant::now()),
                Err(_) => conn.on_deadline(Instant::now()),
            }
        }
    }

    /// `n` requests over one connection to `addr`, `streams` at a time, until each has ended
    /// (or the connection has, or no stream may be opened and none is under way): what
    /// happened.
    fn run(addr: SocketAddr, name: &str, n: usize, streams: usize) -> (Vec<String>, H3Conn) {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(addr).unwrap();
        let mut conn = H3Conn::new(tls(), name, addr, Instant::now()).unwrap();
        // The authority as a URL with a port gives it (caddy picks its site's log by it).
        let authority = format!("{name}:{}", addr.port());
        let section = h3::encode_headers("GET", "https", &authority, "/", &[], 0);
        let mut request = Vec::new();
        h3::headers_frame(&mut request, &section);
        let mut sent = 0;
        let mut refused = false;
        let seen = drive(&mut conn, &sock, |conn, seen| {
            let ready = seen.iter().any(|s| s.starts_with("Ready"));
            while ready && !refused && sent < n && conn.in_flight() < streams {
                match conn.request(&request) {
                    Some(_) => sent += 1,
                    None => refused = true,
                }
            }
            let ended = seen
                .iter()
                .filter(|s| s.starts_with("Done") || s.starts_with("Failed"))
                .count();
            ended == n
                || seen.iter().any(|s| s.starts_with("Closed"))
                || (refused && conn.in_flight() == 0)
        });
        (seen, conn)
    }

    /// 500 requests over one connection, 16 at a time, against Debian's caddy: each a whole
    /// response, and caddy's access log holds exactly 500 HTTP/3 requests.
    #[test]
    fn requests_over_quic_get_whole_responses_from_caddy() {
        let Some(server) = Caddy::start() else {
            return;
        };
        let (seen, conn) = run(server.addr, "127.0.0.1", 500, 16);
        let count = |what: &str| seen.iter().filter(|s| s.starts_with(what)).count();
        assert_eq!(count("Done"), 500, "{:?}", &seen[..seen.len().min(20)]);
        assert_eq!(count("Response"), 500);
        assert!(seen.iter().all(|s| !s.starts_with("Failed")), "{seen:?}");
        assert_eq!(server.logged(500), 500);
        assert!(!conn.closed());
    }

    fn count(seen: &[String], what: &str) -> usize {
        seen.iter().filter(|s| s.starts_with(what)).count()
    }

    /// A server that rejects every 10th request (RESET_STREAM, H3_REQUEST_REJECTED): those
    /// fail with the code, by name; the connection goes on and the others complete.
    #[test]
    fn a_rejected_request_fails_with_its_code_and_the_rest_complete() {
        let Some(server) = Aioquic::start(&["reject", "10"]) else {
            return;
        };
        let (seen, conn) = run(server.addr(), "localhost", 100, 4);
        assert_eq!(count(&seen, "Done"), 90, "{seen:?}");
        let failed: Vec<&String> = seen.iter().filter(|s| s.starts_with("Failed")).collect();
        assert_eq!(failed.len(), 10, "{seen:?}");
        assert!(failed
            .iter()
            .all(|f| f.contains("Reset(267)") && f.contains("H3_REQUEST_REJECTED")));
        assert_eq!(server.served(90), 90);
        assert!(!conn.closed());
    }

    /// A server's GOAWAY after its 20th request: reported with the stream it names, no
    /// request goes at or past it, and every request sent before it completes.
    #[test]
    fn after_a_goaway_no_request_goes_past_the_stream_it_names() {
        let Some(server) = Aioquic::start(&["goaway", "20"]) else {
            return;
        };
        let (seen, mut conn) = run(server.addr(), "localhost", 100, 4);
        assert!(
            seen.iter().any(|s| s == "GoAway { stream: 80 }"),
            "{seen:?}"
        );
        assert_eq!(conn.request(b"x"), None);
        let done = count(&seen, "Done");
        assert!((20..=23).contains(&done), "{done}: {seen:?}");
        assert_eq!(count(&seen, "Failed"), 0);
        assert_eq!(server.served(done as u64), done as u64);
    }

    /// A server that closes the connection (H3_EXCESSIVE_LOAD) after its 30th answer: the
    /// connection ends with its reason, each request still under way fails, and none is lost
    /// or counted twice.
    #[test]
    fn a_connection_closed_by_the_server_fails_what_was_under_way() {
        let Some(server) = Aioquic::start(&["close", "30"]) else {
            return;
        };
        let (seen, conn) = run(server.addr(), "localhost", 100, 4);
        let closed: Vec<&String> = seen.iter().filter(|s| s.starts_with("Closed")).collect();
        assert_eq!(closed.len(), 1, "{seen:?}");
        assert!(conn.closed());
        let (done, failed) = (count(&seen, "Done"), count(&seen, "Failed"));
        assert!((29..=30).contains(&done), "{seen:?}");
        assert_eq!(done + failed, conn.opened as usize, "{seen:?}");
        assert!(seen
            .iter()
            .filter(|s| s.starts_with("Failed"))
            .all(|f| f.contains("the connection ended")));
        assert_eq!(server.served(30), 30);
    }

    /// 200 requests over one connection, 8 at a time, against aioquic: each a whole response
    /// (200, its body), and the server answered exactly 200.
    #[test]
    fn requests_over_quic_get_whole_responses_from_aioquic() {
        let Some(server) = Aioquic::start(&[]) else {
            return;
        };
        let (seen, conn) = run(server.addr(), "localhost", 200, 8);
        let count = |what: &str| seen.iter().filter(|s| s.starts_with(what)).count();
        assert_eq!(count("Done"), 200, "{:?}", &seen[..seen.len().min(20)]);
        assert_eq!(count("Response"), 200);
        assert!(seen.iter().all(|s| !s.starts_with("Failed")), "{seen:?}");
        assert!(seen
            .iter()
            .filter(|s| s.starts_with("Body"))
            .all(|s| s.ends_with("bytes: [111, 107] }")));
        assert_eq!(server.served(200), 200);
        let stats = conn.stats();
        let (out, inn) = (stats.datagrams_sent, stats.datagrams_received);
        assert!(out > 0 && inn > 0);
        assert!(!conn.closed());
    }
}
