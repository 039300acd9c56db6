//! The seam between the engine and its I/O backends.
//!
//! The worker loop and the connection state machine (`worker/`) are written once; a backend
//! implements [`Io`]: it owns the sockets and the syscalls and reports what happened as
//! [`Event`]s. epoll is readiness-based (`Ready`, then the worker calls `read`); io_uring is
//! completion-based (`Received` carries the bytes' buffer, `Connected` a finished connect).

use crate::Config;
use rustix::io::Errno;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Where connections go: the target's TCP address, or a Unix socket (`Config::unix_socket`),
/// or a UDP address (QUIC's: each connection a connected UDP socket, its reads and writes
/// whole datagrams, [`Io::send_datagrams`]).
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    Tcp(SocketAddr),
    Unix(rustix::net::SocketAddrUnix),
    Udp(SocketAddr),
}

impl Endpoint {
    /// Worker `worker`'s endpoint (see [`Config::addr_of`]). A Unix socket path that cannot be
    /// one (too long, a NUL) is refused by the caller beforehand ([`crate::check_unix_socket`]).
    pub fn of(config: &Config, worker: usize) -> Endpoint {
        match &config.unix_socket {
            Some(path) => Endpoint::Unix(
                rustix::net::SocketAddrUnix::new(path.as_path())
                    .expect("the Unix socket path was checked before the run"),
            ),
            None if config.http3().is_some() => Endpoint::Udp(config.addr_of(worker)),
            None => Endpoint::Tcp(config.addr_of(worker)),
        }
    }

    pub fn family(&self) -> rustix::net::AddressFamily {
        match self {
            Endpoint::Tcp(a) | Endpoint::Udp(a) if a.is_ipv4() => rustix::net::AddressFamily::INET,
            Endpoint::Tcp(_) | Endpoint::Udp(_) => rustix::net::AddressFamily::INET6,
            Endpoint::Unix(_) => rustix::net::AddressFamily::UNIX,
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "{a}"),
            Endpoint::Udp(a) => write!(f, "udp {a}"),
            Endpoint::Unix(u) => match u.path() {
                Some(p) => write!(f, "unix:{}", p.to_string_lossy()),
                None => f.write_str("unix socket"),
            },
        }
    }
}

/// A UDP socket connected to `to` (a UDP connect only sets the peer: it ends at once).
pub(crate) fn udp_socket(
    to: &SocketAddr,
    flags: rustix::net::SocketFlags,
) -> Result<rustix::fd::OwnedFd, Errno> {
    let family = match to {
        SocketAddr::V4(_) => rustix::net::AddressFamily::INET,
        SocketAddr::V6(_) => rustix::net::AddressFamily::INET6,
    };
    let fd = rustix::net::socket_with(
        family,
        rustix::net::SocketType::DGRAM,
        flags | rustix::net::SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::connect(&fd, to)?;
    Ok(fd)
}

/// How many datagrams one UDP send carries at most with generic segmentation offload
/// (`UDP_SEGMENT`, Linux 4.18): a connection's flight of QUIC packets (a request body's, its
/// acknowledgements') goes to the kernel in one send, which runs the stack's per-send work
/// (the route, the socket's accounting, the device's queue) once and cuts the datagrams after
/// it. 16 x 1,452 bytes stays well under a send's 64 KiB.
pub(crate) const GSO_SEGMENTS: usize = 16;

/// The control message that has the kernel cut a send into datagrams of a given size
/// (`UDP_SEGMENT`), laid out as `CMSG_SPACE(2)` bytes: written by hand because rustix's
/// ancillary messages have no such message, and quinn-udp, which has one, sends only on
/// sockets it calls itself (not through io_uring).
#[repr(C)]
pub(crate) struct Segmenting {
    hdr: libc::cmsghdr,
    segment: u16,
    _pad: [u8; 6],
}

impl Segmenting {
    pub fn new(segment: usize) -> Segmenting {
        Segmenting {
            hdr: libc::cmsghdr {
                cmsg_len: std::mem::size_of::<libc::cmsghdr>() + 2,
                cmsg_level: libc::SOL_UDP,
                cmsg_type: libc::UDP_SEGMENT,
            },
            segment: segment.min(usize::from(u16::MAX)) as u16,
            _pad: [0; 6],
        }
    }

    /// A `sendmsg` header for `iov` with this message (both must outlive its use).
    pub fn header(&mut self, iov: &mut libc::iovec) -> libc::msghdr {
        libc::msghdr {
            msg_name: std::ptr::null_mut(),
            msg_namelen: 0,
            msg_iov: iov,
            msg_iovlen: 1,
            msg_control: (self as *mut Segmenting).cast(),
            msg_controllen: std::mem::size_of::<Segmenting>(),
            msg_flags: 0,
        }
    }
}

/// Sends `bytes` on the connected UDP socket `fd` as datagrams of `segment` bytes (the last
/// one maybe shorter), in one `sendmsg` the kernel segments.
pub(crate) fn send_segmented(
    fd: std::os::fd::BorrowedFd<'_>,
    bytes: &[u8],
    segment: usize,
) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    let mut control = Segmenting::new(segment);
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let msg = control.header(&mut iov);
    // SAFETY: `msg` points at `iov` (which points at `bytes`) and at `control`, all alive for
    // the call; the kernel only reads them.
    let n = unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(errno(&std::io::Error::last_os_error()));
    }
    Ok(())
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
    /// Bytes, and when the kernel received the last of them ([`Stamp`]).
    Data(&'a [u8], Stamp),
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
    /// Sends `datagrams` on connection `conn`'s socket (a connected UDP socket,
    /// [`Endpoint::Udp`]): datagrams of `segment` bytes each, the last one maybe shorter (one
    /// datagram when `segment` is its length); more than one only up to
    /// [`Io::max_segments`]. They may change as soon as this returns. `Ok(false)`: they were
    /// dropped, as a network drops datagrams (QUIC sends them again): the socket had no room,
    /// a firewall refused them (EPERM), one was too big; an error only for a refused port (an
    /// ICMP unreachable), where the backend can tell at once. Each read of such a socket gives
    /// one datagram. A backend without UDP sockets (the tests' scripted one) refuses.
    fn send_datagrams(
        &mut self,
        _conn: usize,
        _datagrams: &[u8],
        _segment: usize,
    ) -> Result<bool, Errno> {
        Err(Errno::OPNOTSUPP)
    }
    /// How many datagrams one [`Io::send_datagrams`] may carry: [`GSO_SEGMENTS`] where the
    /// kernel cuts a send into datagrams itself (UDP generic segmentation offload), 1 where it
    /// refused to.
    fn max_segments(&self) -> usize {
        1
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
    /// Bytes `send` or `send_copy` counted as taken that the kernel turned out not to take (a
    /// completion backend's failed or short sends), since the last call.
    fn take_unsent(&mut self) -> u64 {
        0
    }
    /// Submits what is pending and waits as `wait` says; appends what happened to `events`.
    fn wait(&mut self, wait: Wait, events: &mut Vec<Event>);
    /// The worker's clock: the real one (`fake.rs` keeps its own, which `wait` moves on).
    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// How long [`Io::wait`] waits: up to `timeout` for events, or up to `due` (finer than a
/// millisecond) when that is sooner. `lazy`: sleeps that whole time, whatever completes
/// meanwhile (an open loop's batch window: one wake-up, and the reads say when their bytes
/// arrived).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wait {
    pub timeout: Duration,
    pub due: Option<Duration>,
    pub lazy: bool,
}

impl Wait {
    /// Up to `timeout`, woken by the first event.
    pub fn eager(timeout: Duration) -> Wait {
        Wait {
            timeout,
            due: None,
            lazy: false,
        }
    }
}

/// When the kernel received a read's bytes: `CLOCK_REALTIME` nanoseconds from the socket's
/// `SO_TIMESTAMPNS` control message, 0 when the socket does not stamp (the reader takes the
/// time it reads them). A worker that reads late, after a batch window, still books each
/// response at its arrival.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stamp(pub u64);

/// Turns [`Stamp`]s into `Instant`s: a reading of both clocks, taken again every second so
/// that the wall clock's slewing does not add up.
pub(crate) struct StampClock {
    at: Instant,
    real_ns: u64,
}

impl StampClock {
    pub fn new() -> StampClock {
        let before = Instant::now();
        let real = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
        let after = Instant::now();
        StampClock {
            at: before + (after - before) / 2,
            real_ns: (real.tv_sec as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(real.tv_nsec as u64),
        }
    }

    /// When `stamp` was, at most `now` (a wall clock set back or forth mid-run cannot put an
    /// arrival after its reading); `None` for no stamp.
    #[inline]
    pub fn instant(&self, stamp: Stamp, now: Instant) -> Option<Instant> {
        if stamp.0 == 0 {
            return None;
        }
        let t = if stamp.0 >= self.real_ns {
            self.at
                .checked_add(Duration::from_nanos(stamp.0 - self.real_ns))
        } else {
            self.at
                .checked_sub(Duration::from_nanos(self.real_ns - stamp.0))
        };
        Some(t.map_or(now, |t| t.min(now)))
    }
}

/// Space for the one control message a stamping socket's reads carry (`CMSG_SPACE` of a
/// `timespec`).
pub(crate) const STAMP_CONTROL: usize = 32;

/// Makes `fd` stamp what it receives with the kernel's arrival time (`SO_TIMESTAMPNS`).
pub(crate) fn enable_stamps(fd: &impl rustix::fd::AsRawFd) -> Result<(), Errno> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor and a c_int option of the size given. rustix has no
    // setter for this option.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(errno(&std::io::Error::last_os_error()))
    }
}

/// The errno of an I/O error from std or io-uring (EIO if it carries none).
pub(crate) fn errno(e: &std::io::Error) -> Errno {
    Errno::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EIO))
}

/// The `SCM_TIMESTAMPNS` time in a read's control messages (the bytes of `msg_control` the
/// kernel filled), as a [`Stamp`]. Parsed by hand: the layout is the kernel ABI
/// (`cmsghdr` then the aligned data), and rustix's ancillary reader knows only descriptors
/// and credentials.
pub(crate) fn parse_stamp(control: &[u8]) -> Stamp {
    const HDR: usize = std::mem::size_of::<libc::cmsghdr>();
    let word = std::mem::size_of::<usize>();
    let mut at = 0;
    while control.len() >= at + HDR {
        let len = usize::from_ne_bytes(control[at..at + word].try_into().expect("a word"));
        let level = i32::from_ne_bytes(control[at + word..at + word + 4].try_into().expect("4"));
        let kind = i32::from_ne_bytes(control[at + word + 4..at + HDR].try_into().expect("4"));
        if len < HDR || at + len > control.len() {
            break;
        }
        if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPNS && len >= HDR + 16 {
            let data = &control[at + HDR..at + HDR + 16];
            let sec = i64::from_ne_bytes(data[..8].try_into().expect("8"));
            let nsec = i64::from_ne_bytes(data[8..].try_into().expect("8"));
            return Stamp(
                (sec as u64)
                    .wrapping_mul(1_000_000_000)
                    .wrapping_add(nsec as u64),
            );
        }
        at += len.next_multiple_of(word);
    }
    Stamp(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// One control message as the kernel lays it out: `cmsghdr`, then the data, aligned.
    fn cmsg(level: i32, kind: i32, data: &[u8]) -> Vec<u8> {
        let hdr = std::mem::size_of::<libc::cmsghdr>();
        let mut v = Vec::new();
        v.extend_from_slice(&(hdr + data.len()).to_ne_bytes());
        v.extend_from_slice(&level.to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(data);
        v.resize((hdr + data.len()).next_multiple_of(8), 0);
        v
    }

    fn timespec(sec: i64, nsec: i64) -> Vec<u8> {
        [sec.to_ne_bytes(), nsec.to_ne_bytes()].concat()
    }

    #[test]
    fn stamps_are_found_among_control_messages() {
        let ts = timespec(1_700_000_000, 123_456_789);
        let want = Stamp(1_700_000_000_123_456_789);
        assert_eq!(
            parse_stamp(&cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &ts)),
            want
        );
        // After another message, and with another level's message of the same type.
        let mut two = cmsg(libc::IPPROTO_IP, libc::SCM_TIMESTAMPNS, &[1, 2, 3, 4]);
        two.extend(cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &ts));
        assert_eq!(parse_stamp(&two), want);
        // None, cut short, or a length that points past the end: no stamp.
        assert_eq!(parse_stamp(&[]), Stamp(0));
        let whole = cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &ts);
        assert_eq!(parse_stamp(&whole[..whole.len() - 1]), Stamp(0));
        let mut long = whole.clone();
        long[..8].copy_from_slice(&1000usize.to_ne_bytes());
        assert_eq!(parse_stamp(&long), Stamp(0));
        let mut zero = whole;
        zero[..8].copy_from_slice(&0usize.to_ne_bytes());
        assert_eq!(parse_stamp(&zero), Stamp(0));
    }

    #[test]
    fn stamps_become_instants_no_later_than_now() {
        let clock = StampClock::new();
        let now = Instant::now();
        assert_eq!(clock.instant(Stamp(0), now), None);
        let earlier = Stamp(clock.real_ns - 5_000_000);
        assert_eq!(
            clock.instant(earlier, now),
            Some(clock.at - Duration::from_millis(5))
        );
        let later = Stamp(clock.real_ns + 3_600_000_000_000);
        assert_eq!(
            clock.instant(later, now),
            Some(now),
            "never after its reading"
        );
        assert_eq!(
            clock.instant(Stamp(1), now),
            clock
                .at
                .checked_sub(Duration::from_nanos(clock.real_ns - 1))
                .or(Some(now))
        );
    }

    /// Bytes that wait in the socket are read with the time they arrived, not the time they
    /// were read: a loopback server writes, the read comes 60 ms later.
    fn arrival_is_stamped<I: Io>(io: impl FnOnce(&Config) -> Result<I, Errno>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut config = Config::new(addr, Vec::new());
        config.load = crate::Load::open(crate::Rate::per_second(1000.0).expect("a rate"), 1);
        let mut io = io(&config).expect("the backend");
        listener.set_nonblocking(true).expect("nonblocking");
        let connect = io.connect(0, &Endpoint::Tcp(addr)).expect("connect");
        let mut events = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        // io_uring submits the connect in its next wait.
        let mut server = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(_) if Instant::now() < deadline => {
                    io.wait(Wait::eager(Duration::from_millis(10)), &mut events)
                }
                Err(e) => panic!("no connection: {e} {events:?}"),
            }
        };
        // The connect's end: a completion (io_uring) or writability (epoll).
        while connect == Connect::InProgress
            && Instant::now() < deadline
            && !events.iter().any(|e: &Event| {
                matches!(
                    e.kind,
                    EventKind::Connected(Ok(())) | EventKind::Ready { writable: true, .. }
                )
            })
        {
            io.wait(Wait::eager(Duration::from_millis(50)), &mut events);
        }
        io.finish_connect(0).expect("connected");
        // The kernel turns stamping on for the whole stack a moment after the first socket
        // asks (a deferred static key); until then reads carry no stamp.
        std::thread::sleep(Duration::from_millis(50));
        let before = Instant::now();
        server.write_all(b"HTTP/1.1 200 OK\r\n").expect("write");
        let after = Instant::now();
        std::thread::sleep(Duration::from_millis(60));
        let clock = StampClock::new();
        let mut token = None;
        while token.is_none() && Instant::now() < deadline {
            events.clear();
            io.wait(Wait::eager(Duration::from_millis(50)), &mut events);
            token = events.iter().find_map(|e| match e.kind {
                EventKind::Received(t) => Some(t),
                EventKind::Ready { readable: true, .. } => Some(0),
                _ => None,
            });
        }
        let token = token.expect("the bytes are reported");
        let read_at = Instant::now();
        match io.read(0, token) {
            Read::Data(bytes, stamp) => {
                assert_eq!(bytes, b"HTTP/1.1 200 OK\r\n");
                let at = clock.instant(stamp, read_at).expect("a stamp");
                let slack = Duration::from_millis(20);
                assert!(
                    at + slack >= before,
                    "stamped {:?} before the write",
                    before - at
                );
                assert!(
                    at <= after + slack && read_at - at >= Duration::from_millis(40),
                    "stamped at the read, not the arrival"
                );
            }
            _ => panic!("expected the bytes"),
        }
        io.release(token);
    }

    /// Waits (5 s at most) for connection 0's next read and returns what it gave: the bytes,
    /// or the error. `events`: what the backend reported and no read has taken yet.
    fn next_read<I: Io>(io: &mut I, events: &mut Vec<Event>) -> Result<Vec<u8>, Errno> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            while !events.is_empty() {
                let e = events.remove(0);
                let token = match e.kind {
                    EventKind::Received(t) => t,
                    EventKind::Ready { readable: true, .. } => 0,
                    _ => continue,
                };
                let got = match io.read(0, token) {
                    Read::Data(bytes, _) => Ok(bytes.to_vec()),
                    Read::Failed(e) => Err(e),
                    Read::Eof => Err(Errno::PIPE),
                    Read::Again => continue,
                };
                io.release(token);
                return got;
            }
            assert!(Instant::now() < deadline, "nothing read in 5 s");
            io.wait(Wait::eager(Duration::from_millis(20)), events);
        }
    }

    /// A connected UDP socket (HTTP/3's): each datagram sent goes whole, in order, a segmented
    /// send arrives as its datagrams, and each read gives one datagram whole; with nobody on
    /// the port, the ICMP answer shows as a
    /// refused connection.
    fn datagrams_keep_their_bounds<I: Io>(make: impl Fn(&Config) -> Result<I, Errno>) {
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let addr = peer.local_addr().unwrap();
        let config = Config::new(addr, Vec::new());
        let mut io = make(&config).expect("the backend");
        let connect = io.connect(0, &Endpoint::Udp(addr)).expect("connect");
        assert_eq!(connect, Connect::Done);
        let sizes = [10, 1200, 1, 1452];
        for (k, n) in sizes.iter().enumerate() {
            let datagram = vec![k as u8; *n];
            assert!(io.send_datagrams(0, &datagram, *n).expect("send"));
        }
        // Segmented (GSO): three datagrams of 1,200 bytes and a last of 100 in one send.
        assert!(io.max_segments() >= 4, "this kernel segments UDP sends");
        let flight: Vec<u8> = (0..3700).map(|b| (b / 1200) as u8 + 10).collect();
        assert!(io.send_datagrams(0, &flight, 1200).expect("send"));
        let mut events = Vec::new();
        // io_uring submits the sends in its next wait (what it reports waits for the reads).
        io.wait(Wait::eager(Duration::from_millis(10)), &mut events);
        let mut buf = [0u8; 2048];
        let mut client = None;
        for (k, n) in sizes.iter().enumerate() {
            let (got, from) = peer.recv_from(&mut buf).expect("a datagram");
            assert_eq!(&buf[..got], &vec![k as u8; *n][..], "datagram {k}");
            client = Some(from);
        }
        for (k, n) in [1200, 1200, 1200, 100].iter().enumerate() {
            let got = peer.recv(&mut buf).expect("a segment");
            assert_eq!(&buf[..got], &vec![k as u8 + 10; *n][..], "segment {k}");
        }
        assert_eq!(
            io.max_segments(),
            GSO_SEGMENTS,
            "the kernel took the segmented send"
        );
        let client = client.unwrap();
        for (k, n) in [(7u8, 7usize), (8, 1300), (9, 50)] {
            peer.send_to(&vec![k; n], client).unwrap();
        }
        for (k, n) in [(7u8, 7usize), (8, 1300), (9, 50)] {
            let got = next_read(&mut io, &mut events).expect("read");
            assert_eq!(got, vec![k; n], "datagram {k}");
        }
        io.close(0);
        // Nobody on the port: the kernel's ICMP answer refuses the next datagram.
        drop(peer);
        let mut io = make(&config).expect("the backend");
        io.connect(0, &Endpoint::Udp(addr)).expect("connect");
        io.send_datagrams(0, b"anyone?", 7).expect("send");
        events.clear();
        assert_eq!(next_read(&mut io, &mut events), Err(Errno::CONNREFUSED));
    }

    /// The hand-written `UDP_SEGMENT` message is laid out as the kernel's macros say.
    #[test]
    fn the_segmenting_message_has_the_kernels_layout() {
        // SAFETY: the CMSG_ macros only compute sizes.
        let (space, len) = unsafe { (libc::CMSG_SPACE(2), libc::CMSG_LEN(2)) };
        assert_eq!(std::mem::size_of::<Segmenting>(), space as usize);
        let m = Segmenting::new(1200);
        assert_eq!(m.hdr.cmsg_len, len as usize);
        assert_eq!(m.segment, 1200);
    }

    #[test]
    fn epoll_sends_and_reads_whole_datagrams() {
        datagrams_keep_their_bounds(|_| crate::epoll::EpollIo::new(false));
    }

    #[test]
    fn io_uring_sends_and_reads_whole_datagrams() {
        if crate::IoBackend::Uring.check().is_err() {
            eprintln!("io_uring is not available here: skipped");
            return;
        }
        datagrams_keep_their_bounds(|config| crate::uring::UringIo::new(config, 0, 4));
    }

    #[test]
    fn epoll_reads_carry_the_arrival_time() {
        arrival_is_stamped(|_| crate::epoll::EpollIo::new(true));
    }

    #[test]
    fn io_uring_reads_carry_the_arrival_time() {
        if crate::IoBackend::Uring.check().is_err() {
            eprintln!("io_uring is not available here: skipped");
            return;
        }
        arrival_is_stamped(|config| crate::uring::UringIo::new(config, 0, 4));
    }
}
