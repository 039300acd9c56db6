//! The seam between the engine and its I/O backends.
//!
//! The worker loop and the connection state machine (`worker/`) are written once; a backend
//! implements [`Io`]: it owns the sockets and the syscalls and reports what happened as
//! [`Event`]s. epoll is readiness-based (`Ready`, then the worker calls `read`); io_uring is
//! completion-based (`Received` carries the bytes' buffer, `Connected` a finished connect).

use crate::{Config, WorkerOutcome, WorkerPlan};
use rustix::io::Errno;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The I/O backend that runs the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoBackend {
    /// Level-triggered epoll with non-blocking sockets.
    Epoll,
    /// io_uring: multishot receives into a provided buffer ring, sends from the request bytes.
    Uring,
}

impl IoBackend {
    /// The name the report shows.
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Epoll => "epoll",
            IoBackend::Uring => "io_uring",
        }
    }

    /// The best backend this process may use: io_uring when the kernel offers everything
    /// the backend needs (and no seccomp filter or `kernel.io_uring_disabled` blocks it),
    /// else epoll.
    pub fn detect() -> IoBackend {
        if crate::uring::probe().is_ok() {
            IoBackend::Uring
        } else {
            IoBackend::Epoll
        }
    }

    /// Checks that this backend can run here; the error says why not.
    pub fn check(self) -> Result<(), String> {
        match self {
            IoBackend::Epoll => Ok(()),
            IoBackend::Uring => crate::uring::probe(),
        }
    }
}

/// Where connections go: the target's TCP address, or a Unix socket (`Config::unix_socket`).
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    Tcp(SocketAddr),
    Unix(rustix::net::SocketAddrUnix),
}

impl Endpoint {
    /// The config's endpoint. A Unix socket path that cannot be one (too long, a NUL) is
    /// refused by the caller beforehand ([`crate::check_unix_socket`]).
    pub fn of(config: &Config) -> Endpoint {
        match &config.unix_socket {
            Some(path) => Endpoint::Unix(
                rustix::net::SocketAddrUnix::new(path.as_path())
                    .expect("the Unix socket path was checked before the run"),
            ),
            None => Endpoint::Tcp(config.addr),
        }
    }

    pub fn family(&self) -> rustix::net::AddressFamily {
        match self {
            Endpoint::Tcp(a) if a.is_ipv4() => rustix::net::AddressFamily::INET,
            Endpoint::Tcp(_) => rustix::net::AddressFamily::INET6,
            Endpoint::Unix(_) => rustix::net::AddressFamily::UNIX,
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "{a}"),
            Endpoint::Unix(u) => match u.path() {
                Some(p) => write!(f, "unix:{}", p.to_string_lossy()),
                None => f.write_str("unix socket"),
            },
        }
    }
}

/// How a connect went at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Connect {
    /// Connected already.
    Done,
    /// Under way: an event will say how it ended.
    InProgress,
}

/// What a backend saw happen to a connection: `generation` names which of the connection's
/// sockets it happened to (see [`Io::generation`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    pub conn: usize,
    pub generation: u32,
    pub kind: EventKind,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum EventKind {
    /// Readiness (epoll): the worker then finishes a connect, writes, or calls `read`.
    Ready { readable: bool, writable: bool },
    /// A connect under way ended (io_uring).
    Connected(Result<(), Errno>),
    /// Bytes, the end of the stream or an error arrived (io_uring); the token names them
    /// for `read` and `release`.
    Received(u64),
    /// A send handed over earlier failed (io_uring).
    SendFailed(Errno),
}

/// What reading a connection gave.
pub(crate) enum Read<'a> {
    Data(&'a [u8]),
    /// The peer closed the connection.
    Eof,
    /// Nothing to read after all.
    Again,
    Failed(Errno),
}

/// A backend's side of the worker: sockets and syscalls, nothing else.
pub(crate) trait Io {
    /// Opens a socket for connection `conn` and connects it. On an error no socket is kept.
    fn connect(&mut self, conn: usize, to: &Endpoint) -> Result<Connect, Errno>;
    /// Readiness backends: how the connect under way ended.
    fn finish_connect(&mut self, conn: usize) -> Result<(), Errno>;
    /// Hands `bytes` to connection `conn`'s socket; returns how many it took. Fewer than all:
    /// a `Ready { writable }` event comes when more may be sent. `bytes` must stay valid until
    /// the worker ends (completion backends send from them later).
    fn send(&mut self, conn: usize, bytes: &[u8]) -> Result<usize, Errno>;
    /// Hands `bytes` to connection `conn`'s socket like `send`, but `bytes` may change as soon
    /// as this returns (TLS ciphertext): a completion backend copies them and keeps the
    /// sends in order. Returns how many it took.
    fn send_copy(&mut self, conn: usize, bytes: &[u8]) -> Result<usize, Errno> {
        self.send(conn, bytes)
    }
    /// Reads what `token` (from `Received`; 0 after `Ready`) names on connection `conn`.
    fn read(&mut self, conn: usize, token: u64) -> Read<'_>;
    /// The worker is done with the bytes `read` gave for `token`.
    fn release(&mut self, token: u64);
    /// Closes connection `conn`'s socket; later events from it are never reported.
    fn close(&mut self, conn: usize);
    /// Which socket connection `conn` has now: an event of another generation is from a
    /// socket closed since it was reaped (in the same batch), and means nothing.
    fn generation(&self, conn: usize) -> u32;
    /// Submits what is pending and waits up to `timeout` for events, or up to `due` (finer
    /// than a millisecond) when that is sooner; appends what happened to `events`.
    fn wait(&mut self, timeout: Duration, due: Option<Duration>, events: &mut Vec<Event>);
}

/// Runs one worker on the configured backend until its plan or `stop` ends it.
pub(crate) fn run_worker(
    config: &Config,
    batch: &[u8],
    plan: WorkerPlan,
    stop: &AtomicBool,
) -> WorkerOutcome {
    let open = config.rate.is_some();
    match config.io {
        IoBackend::Epoll => {
            let io = crate::epoll::EpollIo::new(open);
            crate::worker::run(config, batch, plan, stop, io)
        }
        IoBackend::Uring => {
            let io = crate::uring::UringIo::new(config, plan.max_connections.max(plan.connections));
            crate::worker::run(config, batch, plan, stop, io)
        }
    }
}
