//! The two traits the worker is generic over: the protocol (HTTP/1.1, HTTP/2, WebSocket) and the
//! transport (plain TCP, TLS), and what a read leaves a connection to do.

use super::{Conn, Source, Worker};
use crate::backend::Io;
use crate::ledger::Ledger;
use crate::Config;
use pelt_stats::ErrorKind;
use rustix::io::Errno;
use std::time::Instant;

/// What parsing one read's bytes left the connection to do.
pub(super) enum AfterRead {
    /// Keep the connection; its free slots may take requests.
    Keep,
    /// Close it (the server said so, or answered before the request was written).
    Close,
    /// Fail the requests left on it with this error.
    Fail(ErrorKind, String),
}

/// What HTTP/1.1 (`http1.rs`) and HTTP/2 (`http2.rs`) each do on a connection. The worker
/// calls these at fixed points of the loop; nothing else in it knows the protocol, and the
/// protocol never writes the connection's phase (the worker does, in `mod.rs`). Like h2load's
/// session interface: `start` (its `on_connect`), `write` (`submit_request`, `on_write`),
/// `receive` (`on_read`), `on_eof` and `expire` (`terminate`), `room`
/// (`max_concurrent_streams`), and three for the bookkeeping a batched, zero-copy loop needs.
pub(super) trait Protocol: Sized {
    /// What the protocol keeps per request, in its slot.
    type Stream: Copy + Default;
    /// What the protocol keeps per connection: made once, `reset` for every socket.
    type Conn: Default;
    /// Streams (HTTP/2): a connection takes requests while a write is under way (their frames
    /// queue behind it), requests may wait for a stream, and streams restart one by one.
    /// Without: a connection takes requests when its write is done, D at a time.
    const MULTIPLEXED: bool;
    /// Responses reach the sink as the bytes that came, head and body (HTTP/1.1), not as
    /// fields and body.
    const RAW: bool = false;
    /// Each read is one datagram (HTTP/3's UDP socket): after readiness the worker reads
    /// until none is left, not one per wake-up.
    const DATAGRAMS: bool = false;

    /// Makes `conn` ready for a fresh socket: forgets what belonged to the last one.
    fn reset(conn: &mut Self::Conn, config: &Config);
    /// Output the protocol has not handed to the transport yet.
    fn writing(conn: &Self::Conn) -> bool;
    /// How many more requests connection `i` may take now.
    fn room<I: Io, T: Transport, S: Source>(w: &Worker<'_, I, Self, T, S>, i: usize) -> usize;
    /// The connection is up (over TLS: the handshake ended inside a read, and the bytes after
    /// it in that read are this protocol's; `alpn`: what the server chose). Starts the
    /// protocol; the worker then calls `write`.
    fn start(
        conn: &mut Conn<Self>,
        alpn: Option<&[u8]>,
        config: &Config,
        now: Instant,
    ) -> Result<(), AfterRead>;
    /// Hands what waits to the transport: the rest of a write under way, the requests not
    /// written yet (on an open connection), and what a read left to say.
    fn write<I: Io, T: Transport, S: Source>(
        w: &mut Worker<'_, I, Self, T, S>,
        i: usize,
        now: Instant,
    );
    /// Reads one read's (plain) bytes; `sending`: the transport still holds output.
    /// Responses complete at `arrived` (the kernel's stamp of the read) or, without one, at
    /// `now` (the read's time).
    fn receive(
        conn: &mut Conn<Self>,
        ledger: &mut Ledger,
        config: &Config,
        data: &[u8],
        arrived: Option<Instant>,
        now: Instant,
        sending: bool,
    ) -> AfterRead;
    /// The peer closed the connection.
    fn on_eof<I: Io, T: Transport, S: Source>(
        w: &mut Worker<'_, I, Self, T, S>,
        i: usize,
        now: Instant,
    );
    /// Open connection `i` at a deadline scan: what is past its time (`--timeout`, the
    /// protocol's own handshake) ends. Returns the connection's next deadline (`now`
    /// when it cannot tell cheaply: scanned again in `DEADLINE_SCAN`), `None` when nothing
    /// on it is timed; a deadline the connection sets later, from a read or a write, falls
    /// no sooner than `Worker::horizon` after it is set.
    fn expire<I: Io, T: Transport, S: Source>(
        w: &mut Worker<'_, I, Self, T, S>,
        i: usize,
        now: Instant,
    ) -> Option<Instant>;
    /// Before the worker waits: what the turn queued goes out (HTTP/2 sends each
    /// connection's frames once per turn).
    fn flush<I: Io, T: Transport, S: Source>(_w: &mut Worker<'_, I, Self, T, S>, _now: Instant) {}
    /// A connection connects and keeps its socket without a request to send (WebSocket's
    /// hold: each connection upgrades and is held, reconnecting when it ends).
    fn holds(_config: &Config) -> bool {
        false
    }
    /// The run is over, before the figures are taken (WebSocket: counts the sockets held and
    /// sends each a close frame).
    fn at_end<I: Io, T: Transport, S: Source>(_w: &mut Worker<'_, I, Self, T, S>, _now: Instant) {}
}

/// What plain TCP (`plain.rs`) and TLS (`tls.rs`) each do between the protocol and the
/// socket. The transport keeps its own per-connection state, indexed like the connections.
pub(super) trait Transport: Sized {
    /// A connection more.
    fn add(&mut self, now: Instant);
    /// Connection `i`'s socket closed: forget its session.
    fn reset(&mut self, i: usize);
    /// Bytes for connection `i`'s socket wait in the transport.
    fn writing(&self, i: usize) -> bool;
    /// A close by the peer cuts nothing short (TLS: close_notify came first).
    fn clean_close(&self, i: usize) -> bool;
    /// Connection `i`'s socket connected: `Ok(true)` when a handshake began (the protocol
    /// starts at its end, inside `receive`), `Ok(false)` when the protocol may start now.
    fn connected(&mut self, i: usize, now: Instant) -> Result<bool, String>;
    /// Connection `i`'s handshake is under way.
    fn handshaking(&self, i: usize) -> bool;
    /// One read's bytes, through to the protocol (`arrived`, `now`: see `Protocol::receive`).
    #[allow(clippy::too_many_arguments)]
    fn receive<P: Protocol>(
        &mut self,
        i: usize,
        conn: &mut Conn<P>,
        ledger: &mut Ledger,
        config: &Config,
        data: &[u8],
        arrived: Option<Instant>,
        now: Instant,
    ) -> AfterRead;
    /// Sends what the transport has to say (its handshake's flights, alerts, what the socket
    /// did not take yet).
    fn flush<I: Io, P: Protocol, S: Source>(
        w: &mut Worker<'_, I, P, Self, S>,
        i: usize,
        now: Instant,
    );
    /// Hands `bytes` (which stay valid until the worker ends: the request batch) towards the
    /// socket; returns how many were taken.
    fn send<I: Io>(
        &mut self,
        io: &mut I,
        ledger: &mut Ledger,
        i: usize,
        bytes: &[u8],
    ) -> Result<usize, Errno>;
    /// Hands the bytes waiting in `buf` (HTTP/2 frames) towards the socket, and drains what
    /// was taken.
    fn send_buf<I: Io>(
        &mut self,
        io: &mut I,
        ledger: &mut Ledger,
        i: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), Errno>;
}
