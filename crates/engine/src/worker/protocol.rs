//! The two traits the worker is generic over: the protocol (HTTP/1.1, HTTP/2) and the
//! transport (plain TCP, TLS), and what a read leaves a connection to do.

use super::{Conn, Worker};
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
/// calls these at fixed points of the loop; nothing else in it knows the protocol.
pub(super) trait Protocol: Sized {
    /// What the protocol keeps per request, in its slot.
    type Stream: Copy + Default;
    /// What the protocol keeps per connection (reset when its socket closes).
    type Conn;
    /// Streams (HTTP/2): a connection takes requests while a write is under way (their frames
    /// queue behind it), requests may wait for a stream, and streams restart one by one.
    /// Without: a connection takes requests when its write is done, D at a time.
    const MULTIPLEXED: bool;

    /// Requests one connection may carry at once: `--pipeline` or `--streams`.
    fn depth(config: &Config) -> usize;
    fn new_conn(config: &Config) -> Self::Conn;
    /// The socket closed: forget what belonged to it.
    fn reset(conn: &mut Self::Conn);
    /// Output the protocol has not handed to the transport yet.
    fn writing(conn: &Self::Conn) -> bool;
    /// How many more requests connection `i` may take now.
    fn room<I: Io, T: Transport>(w: &Worker<'_, I, Self, T>, i: usize) -> usize;
    /// A plain connection is up: start the protocol.
    fn start<I: Io, T: Transport>(w: &mut Worker<'_, I, Self, T>, i: usize, now: Instant);
    /// The TLS handshake on `conn` ended, inside a read: the bytes after it in the same read
    /// are this protocol's (`alpn`: what the server chose).
    fn established(
        conn: &mut Conn<Self>,
        alpn: Option<&[u8]>,
        config: &Config,
        now: Instant,
    ) -> Result<(), AfterRead>;
    /// Writes the requests not written yet.
    fn start_write<I: Io, T: Transport>(w: &mut Worker<'_, I, Self, T>, i: usize, now: Instant);
    /// The socket is writable again: goes on with what waits.
    fn write<I: Io, T: Transport>(w: &mut Worker<'_, I, Self, T>, i: usize, now: Instant);
    /// Reads one read's (plain) bytes; `sending`: the transport still holds output.
    /// Responses complete at `arrived` (the kernel's stamp of the read) or, without one, at
    /// the time the first completes (`now` is set to it).
    fn receive(
        conn: &mut Conn<Self>,
        ledger: &mut Ledger,
        config: &Config,
        data: &[u8],
        arrived: Option<Instant>,
        now: &mut Instant,
        sending: bool,
    ) -> AfterRead;
    /// After a read the connection keeps: what the read made due.
    fn after_read<I: Io, T: Transport>(w: &mut Worker<'_, I, Self, T>, i: usize, now: Instant);
    /// The peer closed the connection.
    fn on_eof<I: Io, T: Transport>(w: &mut Worker<'_, I, Self, T>, i: usize, now: Instant);
    /// The oldest request on connection `i` is past `--timeout`.
    fn expire<I: Io, T: Transport>(w: &mut Worker<'_, I, Self, T>, i: usize, now: Instant);
    /// A batch of events begins / has been handled.
    fn begin_batch<I: Io, T: Transport>(_w: &mut Worker<'_, I, Self, T>) {}
    fn end_batch<I: Io, T: Transport>(_w: &mut Worker<'_, I, Self, T>, _now: Instant) {}
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
    /// Connection `i`'s socket connected.
    fn connected<I: Io, P: Protocol>(w: &mut Worker<'_, I, P, Self>, i: usize, now: Instant);
    /// One read's bytes, through to the protocol (`arrived`: see `Protocol::receive`).
    #[allow(clippy::too_many_arguments)]
    fn receive<P: Protocol>(
        &mut self,
        i: usize,
        conn: &mut Conn<P>,
        ledger: &mut Ledger,
        config: &Config,
        data: &[u8],
        arrived: Option<Instant>,
        now: &mut Instant,
    ) -> AfterRead;
    /// After a read the connection keeps: sends what the transport has to say.
    fn after_read<I: Io, P: Protocol>(w: &mut Worker<'_, I, P, Self>, i: usize, now: Instant);
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
