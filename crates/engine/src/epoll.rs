//! The epoll backend: level-triggered, non-blocking sockets, the next request written inline
//! as soon as a response completes, EPOLLOUT only while a write is short.
//!
//! Per request in steady state (keep-alive, closed loop): one `send`, one `recv`, and a share
//! of one `epoll_wait`. Connection setup adds `socket`, `connect`, `epoll_ctl` (add, then
//! modify once connected) and `close`. In open loop, when the next request is due sooner than
//! epoll's millisecond timeout can express, a timerfd wakes the loop at the due time; a lazy
//! wait (`Io::wait`) sleeps instead and then takes what is ready, and reads are `recvmsg`s
//! that carry the arrival stamp.

use crate::backend::{
    enable_stamps, errno, parse_stamp, Connect, Endpoint, Event, EventKind, Io, Read, Stamp, Wait,
    STAMP_CONTROL,
};
use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{self, SendFlags, SocketFlags, SocketType};
use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};
use std::time::{Duration, Instant};

/// One read's worth of buffer, shared by all connections of a worker.
const READ_BUF_BYTES: usize = 64 * 1024;
/// Most events taken per `epoll_wait`.
const MAX_EVENTS: usize = 256;
/// The epoll key of the worker's timerfd (connections are keyed by their index).
const TIMER_KEY: u64 = u64::MAX;

pub(crate) struct EpollIo {
    epoll: OwnedFd,
    /// Per connection: its socket, whether EPOLLOUT is armed (a write was short), and the
    /// error a send met after some of its bytes went (the next send returns it).
    socks: Vec<Option<(OwnedFd, bool, Option<Errno>)>>,
    /// Per connection: which socket it has (bumped at each connect; in the epoll key).
    generations: Vec<u32>,
    buf: Box<[u8]>,
    ready: Vec<epoll::Event>,
    /// Open loop: wakes the loop at a due time finer than epoll's millisecond timeout.
    timer: Option<OwnedFd>,
    /// When the armed timer fires, if it is armed.
    timer_at: Option<Instant>,
    /// Open loop: sockets stamp what they receive; reads are `recvmsg`s with room for the
    /// stamp here.
    stamps: Option<Control>,
    /// [`Io::max_segments`]: GSO's, until the kernel refuses a segmented send.
    segments: usize,
}

impl EpollIo {
    /// The open loop's sockets stamp what they receive (see `Io::wait`'s `lazy`).
    pub fn new(open_loop: bool) -> Result<EpollIo, Errno> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        let timer = if open_loop {
            // Timer slack would add up to 50 us to every wake-up: lag, not server time.
            let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
            timerfd(&epoll)
        } else {
            None
        };
        Ok(EpollIo {
            epoll,
            socks: Vec::new(),
            generations: Vec::new(),
            buf: vec![0u8; READ_BUF_BYTES].into_boxed_slice(),
            ready: Vec::with_capacity(MAX_EVENTS),
            timer,
            timer_at: None,
            stamps: open_loop.then_some(Control([0; STAMP_CONTROL])),
            segments: crate::backend::GSO_SEGMENTS,
        })
    }

    fn fd(&self, conn: usize) -> Option<&OwnedFd> {
        self.socks.get(conn)?.as_ref().map(|(fd, ..)| fd)
    }

    /// Shortens `wait` to the due time; arms the timerfd when epoll's millisecond timeout
    /// cannot express it.
    fn wait_for_due(&mut self, until_due: Duration, wait: Duration) -> Duration {
        if until_due >= wait {
            return wait;
        }
        if until_due.is_zero() {
            return Duration::ZERO;
        }
        let Some(timer) = self.timer.as_ref() else {
            return until_due;
        };
        let now = Instant::now();
        let due = now + until_due;
        // A timer already set to fire before the due time will wake the loop anyway.
        if self.timer_at.is_some_and(|t| t > now && t <= due) {
            return wait;
        }
        let spec = Itimerspec {
            it_interval: timespec(Duration::ZERO),
            it_value: timespec(until_due),
        };
        match rustix::time::timerfd_settime(timer, TimerfdTimerFlags::empty(), &spec) {
            Ok(_) => {
                self.timer_at = Some(due);
                wait
            }
            Err(_) => until_due,
        }
    }
}

/// A non-blocking timerfd registered with `epoll`, or `None` if the kernel refuses one (the
/// loop then wakes at epoll's millisecond resolution).
fn timerfd(epoll: &OwnedFd) -> Option<OwnedFd> {
    let fd = rustix::time::timerfd_create(
        TimerfdClockId::Monotonic,
        TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
    )
    .ok()?;
    // Edge-triggered: every expiry wakes the loop once, and the expiry count need not be read
    // (one syscall less per timed wake-up); timerfd_settime resets it.
    let flags = EventFlags::IN | EventFlags::ET;
    epoll::add(epoll, &fd, EventData::new_u64(TIMER_KEY), flags).ok()?;
    Some(fd)
}

/// Room for a read's control messages, aligned for `cmsghdr`.
#[repr(C, align(8))]
pub(crate) struct Control([u8; STAMP_CONTROL]);

/// Reads `fd` with `recvmsg`, taking the stamp of the bytes' arrival from the control
/// messages.
fn recv_stamped<'a>(fd: &OwnedFd, buf: &'a mut [u8], control: &mut Control) -> Read<'a> {
    use rustix::fd::AsRawFd;
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain data; all zero is an empty header, filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = STAMP_CONTROL;
    // SAFETY: the iovec and the control buffer point at memory this call borrows mutably, of
    // the lengths given; the kernel writes at most that much into each. rustix's recvmsg has
    // no way to give back a timestamp's control message.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    match n {
        0 => Read::Eof,
        n if n > 0 => {
            let len = msg.msg_controllen.min(STAMP_CONTROL);
            Read::Data(&buf[..n as usize], parse_stamp(&control.0[..len]))
        }
        _ => match errno(&std::io::Error::last_os_error()) {
            Errno::AGAIN | Errno::INTR => Read::Again,
            e => Read::Failed(e),
        },
    }
}

/// The epoll key of a connection's socket: its index and generation.
fn key(conn: usize, generation: u32) -> EventData {
    EventData::new_u64((u64::from(generation) << 32) | conn as u64)
}

fn timespec(d: Duration) -> Timespec {
    Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: d.subsec_nanos() as i64,
    }
}

impl Io for EpollIo {
    fn connect(&mut self, conn: usize, to: &Endpoint) -> Result<Connect, Errno> {
        let (fd, result) = match to {
            Endpoint::Udp(addr) => (
                crate::backend::udp_socket(addr, SocketFlags::NONBLOCK)?,
                Ok(()),
            ),
            _ => {
                let fd = net::socket_with(
                    to.family(),
                    SocketType::STREAM,
                    SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
                    None,
                )?;
                // Nagle would only delay a request split across writes; never worth it here.
                let _ = net::sockopt::set_tcp_nodelay(&fd, true);
                let result = match to {
                    Endpoint::Unix(path) => net::connect(&fd, path),
                    Endpoint::Tcp(addr) | Endpoint::Udp(addr) => net::connect(&fd, addr),
                };
                (fd, result)
            }
        };
        if self.stamps.is_some() {
            enable_stamps(&fd)?;
        }
        let connected = match result {
            Ok(()) => true,
            Err(Errno::INPROGRESS) => false,
            Err(e) => return Err(e),
        };
        let flags = if connected {
            EventFlags::IN
        } else {
            EventFlags::IN | EventFlags::OUT
        };
        if self.socks.len() <= conn {
            self.socks.resize_with(conn + 1, || None);
            self.generations.resize(conn + 1, 0);
        }
        let generation = self.generations[conn].wrapping_add(1);
        epoll::add(&self.epoll, &fd, key(conn, generation), flags)?;
        self.generations[conn] = generation;
        self.socks[conn] = Some((fd, false, None));
        Ok(if connected {
            Connect::Done
        } else {
            Connect::InProgress
        })
    }

    fn send_datagrams(
        &mut self,
        conn: usize,
        datagrams: &[u8],
        segment: usize,
    ) -> Result<bool, Errno> {
        let fd = self
            .socks
            .get(conn)
            .and_then(Option::as_ref)
            .ok_or(Errno::NOTCONN)?;
        let fd = &fd.0;
        let one_by_one = |d: &[u8]| {
            d.chunks(segment.max(1))
                .try_for_each(|d| net::send(fd, d, SendFlags::NOSIGNAL).map(drop))
        };
        let sent = if segment < datagrams.len() {
            match crate::backend::send_segmented(fd.as_fd(), datagrams, segment) {
                // The kernel or the device cannot segment (an old kernel: EINVAL; a device
                // without checksum offload: EIO): one datagram a send from now on.
                Err(Errno::INVAL | Errno::IO | Errno::NOPROTOOPT) => {
                    self.segments = 1;
                    one_by_one(datagrams)
                }
                sent => sent,
            }
        } else {
            one_by_one(datagrams)
        };
        match sent {
            Ok(()) => Ok(true),
            // A refused port (an ICMP unreachable came back) fails the connection.
            Err(e @ Errno::CONNREFUSED) => Err(e),
            // Lost, as on a network (QUIC sends it again): no room (AGAIN, NOBUFS), a
            // firewall's drop (PERM), a datagram over the path's MTU (MSGSIZE), as io_uring's
            // completions are taken and as quinn-udp takes its own send errors.
            Err(_) => Ok(false),
        }
    }

    fn max_segments(&self) -> usize {
        self.segments
    }

    fn finish_connect(&mut self, conn: usize) -> Result<(), Errno> {
        let fd = self.fd(conn).ok_or(Errno::NOTCONN)?;
        net::sockopt::socket_error(fd)??;
        let key = key(conn, self.generations[conn]);
        epoll::modify(&self.epoll, fd, key, EventFlags::IN)
    }

    #[inline]
    fn send(&mut self, conn: usize, bytes: &[u8]) -> Result<usize, Errno> {
        let Some((fd, out_armed, failed)) = self.socks.get_mut(conn).and_then(Option::as_mut)
        else {
            return Err(Errno::NOTCONN);
        };
        if let Some(e) = failed.take() {
            return Err(e);
        }
        let key = key(conn, self.generations[conn]);
        let mut sent = 0;
        while sent < bytes.len() {
            match net::send(&*fd, &bytes[sent..], SendFlags::NOSIGNAL) {
                Ok(n) => sent += n,
                Err(Errno::INTR) => {}
                Err(e) if e != Errno::AGAIN && sent == 0 => return Err(e),
                Err(e) => {
                    // Short (the buffer is full), or failed after some bytes went: those are
                    // sent. The worker tries again when the socket is writable (at once after
                    // an error), and then meets the error.
                    if e != Errno::AGAIN {
                        *failed = Some(e);
                    }
                    if !*out_armed {
                        *out_armed = true;
                        let flags = EventFlags::IN | EventFlags::OUT;
                        epoll::modify(&self.epoll, &*fd, key, flags)?;
                    }
                    return Ok(sent);
                }
            }
        }
        if *out_armed {
            *out_armed = false;
            epoll::modify(&self.epoll, &*fd, key, EventFlags::IN)?;
        }
        Ok(sent)
    }

    #[inline]
    fn read(&mut self, conn: usize, _token: u64) -> Read<'_> {
        let Some(fd) = self
            .socks
            .get(conn)
            .and_then(Option::as_ref)
            .map(|(fd, ..)| fd)
        else {
            return Read::Again;
        };
        if let Some(control) = self.stamps.as_mut() {
            return recv_stamped(fd, &mut self.buf, control);
        }
        match net::recv(fd, &mut self.buf[..], net::RecvFlags::empty()) {
            Ok((0, _)) => Read::Eof,
            Ok((n, _)) => Read::Data(&self.buf[..n], Stamp(0)),
            Err(Errno::AGAIN | Errno::INTR) => Read::Again,
            Err(e) => Read::Failed(e),
        }
    }

    #[inline]
    fn release(&mut self, _token: u64) {}

    fn close(&mut self, conn: usize) {
        // Dropping the fd closes it, which also removes it from the epoll set.
        if let Some(s) = self.socks.get_mut(conn) {
            *s = None;
        }
    }

    #[inline]
    fn generation(&self, conn: usize) -> u32 {
        match self.socks.get(conn) {
            Some(Some(_)) => self.generations[conn],
            // No socket: no event is current.
            _ => u32::MAX,
        }
    }

    fn wait(&mut self, w: Wait, events: &mut Vec<Event>) {
        let Wait { timeout, due, lazy } = w;
        let mut wait = match due {
            Some(due) if lazy => due.min(timeout),
            Some(due) => self.wait_for_due(due, timeout),
            None => timeout,
        };
        if lazy && !wait.is_zero() {
            // Readiness would end epoll's wait at the first response: sleep the window out,
            // then take everything that is ready.
            let _ = rustix::thread::nanosleep(&timespec(wait));
            wait = Duration::ZERO;
        }
        self.ready.clear();
        match epoll::wait(
            &self.epoll,
            rustix::buffer::spare_capacity(&mut self.ready),
            Some(&timespec(wait)),
        ) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => panic!("epoll_wait failed: {e}"),
        }
        for ev in &self.ready {
            let key = ev.data.u64();
            if key == TIMER_KEY {
                self.timer_at = None;
                continue;
            }
            let flags = ev.flags;
            events.push(Event {
                conn: key as u32 as usize,
                generation: (key >> 32) as u32,
                kind: EventKind::Ready {
                    readable: flags.intersects(EventFlags::IN | EventFlags::ERR | EventFlags::HUP),
                    writable: flags.contains(EventFlags::OUT),
                },
            });
        }
    }
}
