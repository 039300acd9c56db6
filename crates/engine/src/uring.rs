//! The io_uring backend.
//!
//! One ring per worker, set up with `SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN` (dropping
//! flags one at a time where the kernel refuses them). Every connected socket has one
//! multishot `recv` that picks buffers from a provided buffer ring shared by the worker's
//! connections, re-armed when a completion comes without `F_MORE` (on `ENOBUFS`, say).
//! Requests are sent straight from the batch bytes with `CQE_SKIP_SUCCESS` (a completion only
//! on failure) and `MSG_WAITALL` (the kernel retries a short send itself). Connects go through
//! the ring. The loop makes one `io_uring_enter` per iteration: submit and wait, with the
//! next deadline as its timeout. In steady state that is the only syscall, however many
//! requests complete in between. In open loop receives are multishot `recvmsg`s that carry
//! each read's arrival stamp, and a lazy wait (`Io::wait`) asks for more completions than can
//! come, so that only its timeout wakes the thread.
//!
//! Nearly all of pelt's `unsafe` lives here: the ring takes raw pointers to memory that must
//! stay valid until the kernel is done with it. Each block says why it holds.

use crate::backend::{
    enable_stamps, errno, parse_stamp, Connect, Endpoint, Event, EventKind, Io, Read, Segmenting,
    Stamp, Wait, STAMP_CONTROL,
};
use crate::Config;
use io_uring::types::{BufRingEntry, Fd, RecvMsgOut, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{self, AddressFamily, SocketFlags, SocketType};
use std::alloc::Layout;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};

/// The buffer group of the worker's receive buffers (one group per ring).
const BGID: u16 = 0;
const OP_CONNECT: u64 = 1;
const OP_SEND: u64 = 2;
const OP_RECV: u64 = 3;
const OP_SEND_COPY: u64 = 4;
/// A datagram's send ([`Io::send_datagrams`]): its `user_data` names the copy's slot in
/// `UringIo::dgrams`, not a connection.
const OP_SEND_DGRAM: u64 = 5;

/// What a datagram send reads until its completion: the copy of its bytes and, for a
/// segmented one (GSO), the `sendmsg` header and control message that point at them; boxed,
/// so they stay where the kernel was told they are.
struct Dgram {
    bytes: Vec<u8>,
    iov: libc::iovec,
    control: Segmenting,
    msg: libc::msghdr,
}

impl Dgram {
    fn new() -> Dgram {
        let mut iov = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        };
        let mut control = Segmenting::new(0);
        // Filled in again, pointing at the box's own fields, by each segmented send.
        let msg = control.header(&mut iov);
        Dgram {
            bytes: Vec::new(),
            iov,
            control,
            msg,
        }
    }
}
/// Where a stamped receive's payload starts in its buffer: after `io_uring_recvmsg_out`, no
/// name, and the control messages (`STAMP_CONTROL`).
const STAMPED_PAYLOAD: usize = RECVMSG_OUT + STAMP_CONTROL;
/// The size of `struct io_uring_recvmsg_out` (four u32s), which starts such a buffer.
const RECVMSG_OUT: usize = 16;
/// Completions a lazy wait asks for: more than can come, so only its timeout ends it (with
/// `DEFER_TASKRUN` the kernel then does not wake the thread for each one).
const LAZY_WANT: usize = 1 << 20;

/// `user_data`: what the operation is (4 bits), the connection, and the connection's
/// generation (so a completion from a socket closed since is recognised and dropped).
#[inline]
fn user_data(op: u64, conn: usize, generation: u32) -> u64 {
    (op << 60) | ((u64::from(generation) & GENERATION) << 32) | conn as u64
}

/// A zero-copy send's `user_data`: its length in place of most of the generation. Its
/// completion comes only when it failed (`SKIP_SUCCESS`), and then says how much of it the
/// kernel took, so the bytes counted when it was handed over are corrected without a
/// completion for every send that succeeds. A length of 2^28 or more is written as 0
/// (unknown: nothing is corrected).
#[inline]
fn send_data(conn: usize, generation: u32, len: usize) -> u64 {
    let len = if len < 1 << 28 { len as u64 } else { 0 };
    (OP_SEND << 60) | (len << 32) | ((u64::from(generation) & 0xff) << 24) | conn as u64
}

/// The generation bits a `user_data` keeps.
const GENERATION: u64 = 0xff_ffff;

/// The operation, the connection, the generation and the mask of its bits that the
/// `user_data` kept, and a zero-copy send's length (0 for other operations).
#[inline]
fn decode(ud: u64) -> (u64, usize, u32, u32, u64) {
    match ud >> 60 {
        OP_SEND => (
            OP_SEND,
            (ud & 0xff_ffff) as usize,
            ((ud >> 24) & 0xff) as u32,
            0xff,
            (ud >> 32) & 0xfff_ffff,
        ),
        op => (
            op,
            (ud & 0xffff_ffff) as usize,
            ((ud >> 32) & GENERATION) as u32,
            GENERATION as u32,
            0,
        ),
    }
}

/// The part of a send of `len` bytes its completion's `res` says the kernel did not take
/// (all of it on an error; 0 when the length is unknown).
#[inline]
fn unsent(len: u64, res: i32) -> u64 {
    len.saturating_sub(res.max(0) as u64)
}

/// A receive's token for `read`/`release`: its result, and the buffer it filled, if any.
#[inline]
fn token(res: i32, bid: Option<u16>) -> u64 {
    let buf = bid.map_or(0, |b| (1u64 << 48) | (u64::from(b) << 32));
    buf | u64::from(res as u32)
}

#[inline]
fn untoken(token: u64) -> (i32, Option<u16>) {
    let bid = (token & (1 << 48) != 0).then_some((token >> 32) as u16);
    (token as u32 as i32, bid)
}

/// A provided buffer ring: `count` buffers of `size` bytes the kernel picks from for receives.
struct BufRing {
    /// The ring of entries the kernel reads (page aligned, `count` entries).
    entries: *mut BufRingEntry,
    layout: Layout,
    /// The buffers themselves.
    data: Box<[u8]>,
    size: usize,
    count: u16,
    /// Entries added locally; published to the kernel in `publish`.
    tail: u16,
}

impl BufRing {
    fn new(count: u16, size: usize) -> Result<BufRing, Errno> {
        debug_assert!(count.is_power_of_two());
        let layout = Layout::from_size_align(
            usize::from(count) * std::mem::size_of::<BufRingEntry>(),
            4096,
        )
        .map_err(|_| Errno::INVAL)?;
        // SAFETY: the layout has a non-zero size (count >= 1); a null result is handled.
        let entries = unsafe { std::alloc::alloc_zeroed(layout) } as *mut BufRingEntry;
        if entries.is_null() {
            return Err(Errno::NOMEM);
        }
        let mut ring = BufRing {
            entries,
            layout,
            data: vec![0u8; usize::from(count) * size].into_boxed_slice(),
            size,
            count,
            tail: 0,
        };
        for bid in 0..count {
            ring.recycle(bid);
        }
        ring.publish();
        Ok(ring)
    }

    /// Gives buffer `bid` back to the kernel (visible after the next `publish`).
    #[inline]
    fn recycle(&mut self, bid: u16) {
        let at = usize::from(self.tail & (self.count - 1));
        let addr = self.data.as_ptr() as u64 + u64::from(bid) * self.size as u64;
        // SAFETY: `at` < count, inside the allocation. The kernel reads only the entries
        // between its head and the published tail; this one is past the published tail
        // (at most `count` buffers are ever out), so the kernel does not read it now.
        let entry = unsafe { &mut *self.entries.add(at) };
        entry.set_addr(addr);
        entry.set_len(self.size as u32);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the recycled buffers visible to the kernel.
    #[inline]
    fn publish(&self) {
        // SAFETY: `entries` is the page-aligned first entry of the ring, initialised (zeroed
        // at allocation); its tail field is the shared u16 the kernel reads with acquire
        // ordering, which an AtomicU16 of the same size and alignment may alias.
        let tail = unsafe { &*(BufRingEntry::tail(self.entries) as *const AtomicU16) };
        tail.store(self.tail, Ordering::Release);
    }

    #[inline]
    fn buffer(&self, bid: u16, len: usize) -> &[u8] {
        let start = usize::from(bid) * self.size;
        &self.data[start..start + len.min(self.size)]
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; the ring that used it is gone (the
        // buffer group is unregistered and the ring dropped before this, see `UringIo`).
        unsafe { std::alloc::dealloc(self.entries as *mut u8, self.layout) };
    }
}

/// The socket of one connection.
#[derive(Default)]
struct Sock {
    fd: Option<OwnedFd>,
    generation: u32,
    /// A multishot receive is armed on it.
    recv_armed: bool,
    /// Copied sends (TLS ciphertext): the bytes the kernel is sending now, whether a send is
    /// under way, and the bytes queued behind it.
    sending: Vec<u8>,
    send_busy: bool,
    queued: Vec<u8>,
}

pub(crate) struct UringIo {
    ring: IoUring,
    socks: Vec<Sock>,
    /// The target, as the sockaddr connects point at (boxed: its address must not move).
    addr: Box<(libc::sockaddr_storage, libc::socklen_t)>,
    /// Connections whose multishot receive ended while the socket stays open.
    rearm: Vec<usize>,
    /// Buffers of copied sends still in the kernel when their socket was closed, by the
    /// send's user_data: freed when its completion comes.
    retired: Vec<(u64, Vec<u8>)>,
    /// Bytes counted as sent when they were handed over that the kernel never took (failed
    /// or short sends, copies dropped at a close): [`Io::take_unsent`].
    unsent: u64,
    /// Open loop: sockets stamp what they receive, and receives are multishot `recvmsg`s
    /// described by this header (no name, room for the stamp).
    stamps: Option<Box<libc::msghdr>>,
    // Dropped after `ring` (fields drop in order): the kernel may use them until then.
    /// The copies of datagrams being sent, by slot; a slot is reused (`dgram_free`) only once
    /// its send has completed. Boxed: a segmented send's header points into its own slot,
    /// which must not move when the list grows.
    #[allow(clippy::vec_box)]
    dgrams: Vec<Box<Dgram>>,
    dgram_free: Vec<usize>,
    /// [`Io::max_segments`]: GSO's, until the kernel refuses a segmented send.
    segments: usize,
    bufs: BufRing,
}

impl Drop for UringIo {
    fn drop(&mut self) {
        // Sockets first, then the buffer group, so nothing in the kernel still picks from it.
        for s in &mut self.socks {
            if let Some(fd) = s.fd.take() {
                let _ = net::shutdown(&fd, net::Shutdown::Both);
            }
        }
        let _ = self.ring.submitter().unregister_buf_ring(BGID);
    }
}

/// Builds a ring, dropping the setup flags the kernel refuses one at a time.
fn build_ring(entries: u32, cq_entries: u32) -> std::io::Result<IoUring> {
    // (single issuer, defer taskrun, coop taskrun); defer needs single issuer.
    const TRIES: [(bool, bool, bool); 4] = [
        (true, true, true),
        (true, false, true),
        (false, false, true),
        (false, false, false),
    ];
    let mut last = None;
    for (single, defer, coop) in TRIES {
        let mut b = IoUring::builder();
        b.setup_cqsize(cq_entries).setup_submit_all();
        if single {
            b.setup_single_issuer();
        }
        if defer {
            b.setup_defer_taskrun();
        }
        if coop {
            b.setup_coop_taskrun();
        }
        match b.build(entries) {
            Ok(ring) => return Ok(ring),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("at least one try"))
}

fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid (empty) value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for any sockaddr_*.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// A Unix socket's address (the path was checked to fit beforehand).
fn sockaddr_unix(path: &std::path::Path) -> (libc::sockaddr_storage, libc::socklen_t) {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid (empty) value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: as above, for sockaddr_un.
    let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    let n = bytes.len().min(sun.sun_path.len() - 1);
    for (d, &s) in sun.sun_path.iter_mut().zip(&bytes[..n]) {
        *d = s as libc::c_char;
    }
    // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_un.
    unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_un, sun) };
    let len = std::mem::size_of::<libc::sa_family_t>() + n + 1;
    (storage, len as libc::socklen_t)
}

impl UringIo {
    /// A ring and buffer ring sized for `max_conns` connections, connecting to worker
    /// `worker`'s address.
    pub fn new(config: &Config, worker: usize, max_conns: usize) -> Result<UringIo, Errno> {
        if config.load.is_open() {
            // Timer slack would add up to 50 us to every timed wake-up: lag, not server time.
            let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        }
        let conns = max_conns.max(1);
        // A zero-copy send's `user_data` has 24 bits for the connection.
        if conns >= 1 << 24 {
            return Err(Errno::INVAL);
        }
        let sq = (conns * 2).next_power_of_two().clamp(64, 4096) as u32;
        let ring = build_ring(sq, sq * 4).map_err(|e| errno(&e))?;
        // Small buffers at high connection counts keep memory flat; a connection whose
        // receive finds the ring empty (ENOBUFS) is re-armed once buffers come back.
        let (count, size) = if conns <= 256 {
            ((conns * 2).next_power_of_two().clamp(64, 512), 16 * 1024)
        } else {
            (conns.next_power_of_two().clamp(512, 4096), 4 * 1024)
        };
        let stamps = config.load.is_open().then(|| {
            // SAFETY: msghdr is plain data; all zero is an empty header (no name, no iovec).
            let mut msg: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
            msg.msg_controllen = STAMP_CONTROL;
            msg
        });
        let size = size + if stamps.is_some() { STAMPED_PAYLOAD } else { 0 };
        let bufs = BufRing::new(count as u16, size)?;
        // SAFETY: the ring memory is valid for `count` entries and outlives the registration
        // (unregistered in `UringIo::drop`, freed after the ring is dropped).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(bufs.entries as u64, count as u16, BGID, 0)
                .map_err(|e| errno(&e))?;
        }
        Ok(UringIo {
            unsent: 0,
            ring,
            socks: Vec::with_capacity(conns),
            addr: Box::new(match &config.unix_socket {
                Some(path) => sockaddr_unix(path),
                None => sockaddr(&config.addr_of(worker)),
            }),
            rearm: Vec::new(),
            retired: Vec::new(),
            stamps,
            dgrams: Vec::new(),
            dgram_free: Vec::new(),
            segments: crate::backend::GSO_SEGMENTS,
            bufs,
        })
    }

    /// Queues `entry`, submitting what is queued first if the submission queue is full.
    #[inline]
    fn push(&mut self, entry: &squeue::Entry) {
        loop {
            // SAFETY: every entry pelt queues points at memory that outlives the operation:
            // the batch bytes (alive until every worker ends), the boxed target address, the
            // datagrams' copies and a segmented send's header (a slot of `dgrams` is written
            // again only after its send's completion; the slots are boxed, their buffers never
            // move), and the buffer ring (see
            // `BufRing`).
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                return;
            }
            match self.ring.submit() {
                Ok(_) => {}
                // Short of completion space or memory, or a signal: try again.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EBUSY | libc::EAGAIN | libc::EINTR)
                    ) =>
                {
                    let _ = self.ring.submit_and_wait(0);
                }
                Err(e) => panic!("io_uring submit failed: {e}"),
            }
        }
    }

    /// Connection `conn`'s slot, made ready for a new socket: its next generation, no
    /// receive armed.
    fn fresh(&mut self, conn: usize) -> &mut Sock {
        if self.socks.len() <= conn {
            self.socks.resize_with(conn + 1, Sock::default);
        }
        let s = &mut self.socks[conn];
        s.generation = s.generation.wrapping_add(1) & GENERATION as u32;
        s.recv_armed = false;
        s
    }

    /// Submits the copied send of `conn`'s `sending` buffer (a completion comes either way).
    fn submit_copy(&mut self, conn: usize) {
        let s = &mut self.socks[conn];
        let Some(fd) = s.fd.as_ref() else {
            return;
        };
        s.send_busy = true;
        let entry = opcode::Send::new(
            Fd(fd.as_raw_fd()),
            s.sending.as_ptr(),
            s.sending.len() as u32,
        )
        .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
        .build()
        .user_data(user_data(OP_SEND_COPY, conn, s.generation));
        self.push(&entry);
    }

    fn arm_recv(&mut self, conn: usize) {
        let s = &mut self.socks[conn];
        let Some(fd) = s.fd.as_ref() else {
            return;
        };
        if s.recv_armed {
            return;
        }
        s.recv_armed = true;
        let entry = match &self.stamps {
            // The kernel reads the header when the receive is armed.
            Some(msg) => opcode::RecvMsgMulti::new(Fd(fd.as_raw_fd()), &**msg, BGID).build(),
            None => opcode::RecvMulti::new(Fd(fd.as_raw_fd()), BGID).build(),
        }
        .user_data(user_data(OP_RECV, conn, s.generation));
        self.push(&entry);
    }

    fn reap(&mut self, events: &mut Vec<Event>) {
        let mut connected = Vec::new();
        let mut resend = Vec::new();
        for cqe in self.ring.completion() {
            let (op, conn, generation, kept, len) = decode(cqe.user_data());
            let (res, flags) = (cqe.result(), cqe.flags());
            if op == OP_SEND_DGRAM {
                // Its copy may be reused. A datagram the kernel refused is lost, as on a
                // network (QUIC sends it again; a refused port shows in the receive). A
                // segmented send the kernel or the device cannot do (an old kernel: EINVAL; a
                // device without checksum offload: EIO): one datagram a send from now on.
                self.dgram_free.push(conn);
                if cqe.result() == -libc::EIO || cqe.result() == -libc::EINVAL {
                    self.segments = 1;
                }
                continue;
            }
            let bid = cqueue::buffer_select(flags);
            let s = &mut self.socks[conn];
            let current = s.generation & kept == generation && s.fd.is_some();
            match op {
                OP_RECV => {
                    if current && !cqueue::more(flags) {
                        s.recv_armed = false;
                    }
                    if !current {
                        if let Some(b) = bid {
                            self.bufs.recycle(b);
                        }
                    } else if res == -libc::ENOBUFS {
                        // The bytes wait in the socket until buffers come back.
                        self.rearm.push(conn);
                    } else {
                        let res = match (&self.stamps, bid) {
                            // A stamped receive's result counts its header too: the token
                            // keeps the payload's length (0: the end of the stream).
                            (Some(msg), Some(b)) if res > 0 => {
                                let buf = self.bufs.buffer(b, res as usize);
                                RecvMsgOut::parse(buf, msg)
                                    .map_or(-libc::EIO, |m| m.payload_data().len() as i32)
                            }
                            _ => res,
                        };
                        if res > 0 && !cqueue::more(flags) {
                            self.rearm.push(conn);
                        }
                        events.push(Event {
                            conn,
                            generation,
                            kind: EventKind::Received(token(res, bid)),
                        });
                    }
                }
                OP_SEND_COPY if !current => {
                    // The buffer of a send from a closed socket can be freed now.
                    let ud = cqe.user_data();
                    if let Some(k) = self.retired.iter().position(|(u, _)| *u == ud) {
                        let (_, buf) = self.retired.swap_remove(k);
                        self.unsent += unsent(buf.len() as u64, res);
                    }
                }
                OP_SEND_COPY => {
                    s.send_busy = false;
                    self.unsent += unsent(s.sending.len() as u64, res);
                    if res < 0 {
                        events.push(Event {
                            conn,
                            generation,
                            kind: EventKind::SendFailed(Errno::from_raw_os_error(-res)),
                        });
                    } else if !s.queued.is_empty() {
                        std::mem::swap(&mut s.sending, &mut s.queued);
                        s.queued.clear();
                        resend.push(conn);
                    }
                }
                OP_SEND => {
                    // Only a send that failed or fell short completes (`SKIP_SUCCESS`).
                    self.unsent += unsent(len, res);
                    if current && res < 0 {
                        events.push(Event {
                            conn,
                            generation: s.generation,
                            kind: EventKind::SendFailed(Errno::from_raw_os_error(-res)),
                        });
                    }
                }
                OP_CONNECT if current => {
                    let result = if res == 0 {
                        connected.push(conn);
                        Ok(())
                    } else {
                        Err(Errno::from_raw_os_error(-res))
                    };
                    events.push(Event {
                        conn,
                        generation,
                        kind: EventKind::Connected(result),
                    });
                }
                _ => {}
            }
        }
        for conn in connected {
            self.arm_recv(conn);
        }
        for conn in resend {
            self.submit_copy(conn);
        }
    }
}

impl Io for UringIo {
    fn connect(&mut self, conn: usize, to: &Endpoint) -> Result<Connect, Errno> {
        if let Endpoint::Udp(addr) = to {
            // A UDP connect ends at once: no operation for the ring.
            let fd = crate::backend::udp_socket(addr, SocketFlags::empty())?;
            if self.stamps.is_some() {
                enable_stamps(&fd)?;
            }
            self.fresh(conn).fd = Some(fd);
            self.arm_recv(conn);
            return Ok(Connect::Done);
        }
        // Blocking mode: the ring waits for the socket, never the thread.
        let fd = net::socket_with(to.family(), SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
        let _ = net::sockopt::set_tcp_nodelay(&fd, true);
        if self.stamps.is_some() {
            enable_stamps(&fd)?;
        }
        let (to, len) = (
            &self.addr.0 as *const _ as *const libc::sockaddr,
            self.addr.1,
        );
        let s = self.fresh(conn);
        let entry = opcode::Connect::new(Fd(fd.as_raw_fd()), to, len)
            .build()
            .user_data(user_data(OP_CONNECT, conn, s.generation));
        s.fd = Some(fd);
        self.push(&entry);
        Ok(Connect::InProgress)
    }

    fn finish_connect(&mut self, _conn: usize) -> Result<(), Errno> {
        // Connects end in a completion (`Event::Connected`), never in readiness.
        Ok(())
    }

    #[inline]
    fn send(&mut self, conn: usize, bytes: &[u8]) -> Result<usize, Errno> {
        let Some(s) = self.socks.get(conn) else {
            return Err(Errno::NOTCONN);
        };
        let Some(fd) = s.fd.as_ref() else {
            return Err(Errno::NOTCONN);
        };
        let entry = opcode::Send::new(Fd(fd.as_raw_fd()), bytes.as_ptr(), bytes.len() as u32)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(send_data(conn, s.generation, bytes.len()));
        self.push(&entry);
        Ok(bytes.len())
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
            .and_then(|s| s.fd.as_ref())
            .ok_or(Errno::NOTCONN)?
            .as_raw_fd();
        let slot = self.dgram_free.pop().unwrap_or_else(|| {
            self.dgrams.push(Box::new(Dgram::new()));
            self.dgrams.len() - 1
        });
        let d = &mut *self.dgrams[slot];
        d.bytes.clear();
        d.bytes.extend_from_slice(datagrams);
        let entry = if segment < datagrams.len() {
            d.iov = libc::iovec {
                iov_base: d.bytes.as_mut_ptr().cast(),
                iov_len: d.bytes.len(),
            };
            d.control = Segmenting::new(segment);
            d.msg = d.control.header(&mut d.iov);
            opcode::SendMsg::new(Fd(fd), &d.msg)
                .flags(libc::MSG_NOSIGNAL as u32)
                .build()
        } else {
            opcode::Send::new(Fd(fd), d.bytes.as_ptr(), d.bytes.len() as u32)
                .flags(libc::MSG_NOSIGNAL)
                .build()
        };
        self.push(&entry.user_data((OP_SEND_DGRAM << 60) | slot as u64));
        Ok(true)
    }

    fn max_segments(&self) -> usize {
        self.segments
    }

    fn send_copy(&mut self, conn: usize, bytes: &[u8]) -> Result<usize, Errno> {
        let Some(s) = self.socks.get_mut(conn).filter(|s| s.fd.is_some()) else {
            return Err(Errno::NOTCONN);
        };
        if s.send_busy {
            // In order, after the send under way.
            s.queued.extend_from_slice(bytes);
            return Ok(bytes.len());
        }
        s.sending.clear();
        s.sending.extend_from_slice(bytes);
        self.submit_copy(conn);
        Ok(bytes.len())
    }

    #[inline]
    fn read(&mut self, _conn: usize, token: u64) -> Read<'_> {
        match untoken(token) {
            (res, _) if res < 0 => Read::Failed(Errno::from_raw_os_error(-res)),
            (0, _) => Read::Eof,
            (res, Some(bid)) if self.stamps.is_some() => {
                let buf = self.bufs.buffer(bid, STAMPED_PAYLOAD + res as usize);
                let stamp = parse_stamp(&buf[RECVMSG_OUT..STAMPED_PAYLOAD]);
                Read::Data(&buf[STAMPED_PAYLOAD..], stamp)
            }
            (res, Some(bid)) => Read::Data(self.bufs.buffer(bid, res as usize), Stamp(0)),
            (_, None) => Read::Again,
        }
    }

    #[inline]
    fn release(&mut self, token: u64) {
        if let (_, Some(bid)) = untoken(token) {
            self.bufs.recycle(bid);
        }
    }

    fn close(&mut self, conn: usize) {
        let Some(s) = self.socks.get_mut(conn) else {
            return;
        };
        if let Some(fd) = s.fd.take() {
            // Ends the multishot receive (it completes with 0) and any operation under way;
            // their completions are dropped by generation. Closing alone would not: the
            // ring's operations hold the socket open.
            let _ = net::shutdown(&fd, net::Shutdown::Both);
        }
        if s.send_busy {
            // The kernel may still read this buffer: keep it until its completion comes.
            let ud = user_data(OP_SEND_COPY, conn, s.generation);
            self.retired.push((ud, std::mem::take(&mut s.sending)));
            s.send_busy = false;
        }
        // Handed over, never to be sent.
        self.unsent += s.queued.len() as u64;
        s.queued.clear();
        s.recv_armed = false;
        s.generation = s.generation.wrapping_add(1) & GENERATION as u32;
    }

    #[inline]
    fn generation(&self, conn: usize) -> u32 {
        self.socks.get(conn).map_or(0, |s| s.generation)
    }

    #[inline]
    fn take_unsent(&mut self) -> u64 {
        std::mem::take(&mut self.unsent)
    }

    fn wait(&mut self, w: Wait, events: &mut Vec<Event>) {
        let Wait { timeout, due, lazy } = w;
        let rearm = std::mem::take(&mut self.rearm);
        for &conn in &rearm {
            self.arm_recv(conn);
        }
        self.rearm = rearm;
        self.rearm.clear();
        self.bufs.publish();
        let wait = due.map_or(timeout, |d| d.min(timeout));
        let ts = Timespec::new()
            .sec(wait.as_secs())
            .nsec(wait.subsec_nanos());
        let args = SubmitArgs::new().timespec(&ts);
        let want = if lazy && !wait.is_zero() {
            LAZY_WANT
        } else {
            1
        };
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => panic!("io_uring_enter failed: {e}"),
        }
        self.reap(events);
    }
}

/// Checks that io_uring can run pelt's backend here: the ring, the buffer ring, and a
/// multishot receive on a socket pair that really delivers a byte.
pub(crate) fn probe() -> Result<(), String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("io_uring {what}: {e}");
    let mut ring = build_ring(8, 32).map_err(|e| fail("setup", &e))?;
    let mut probe = io_uring::Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| fail("probe", &e))?;
    for (code, name) in [
        (opcode::Connect::CODE, "connect"),
        (opcode::Send::CODE, "send"),
        (opcode::RecvMulti::CODE, "recv"),
    ] {
        if !probe.is_supported(code) {
            return Err(format!("io_uring lacks the {name} operation"));
        }
    }
    let bufs = BufRing::new(2, 64).map_err(|e| fail("buffers", &e))?;
    // SAFETY: as in `UringIo::new`; unregistered below before `bufs` is dropped.
    unsafe {
        ring.submitter()
            .register_buf_ring_with_flags(bufs.entries as u64, 2, BGID, 0)
            .map_err(|e| fail("buffer ring", &e))?;
    }
    let result = (|| {
        let (a, b) = net::socketpair(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| fail("socketpair", &e))?;
        let entry = opcode::RecvMulti::new(Fd(a.as_raw_fd()), BGID)
            .build()
            .user_data(7);
        // SAFETY: the entry points at the registered buffer ring, alive until unregistered.
        unsafe { ring.submission().push(&entry) }.map_err(|e| fail("push", &e))?;
        net::send(&b, b"x", net::SendFlags::empty()).map_err(|e| fail("send", &e))?;
        let ts = Timespec::new().sec(1);
        ring.submitter()
            .submit_with_args(1, &SubmitArgs::new().timespec(&ts))
            .map_err(|e| fail("enter", &e))?;
        let cqe = ring
            .completion()
            .next()
            .ok_or_else(|| "io_uring multishot receive gave no completion".to_string())?;
        if cqe.result() != 1 || !cqueue::more(cqe.flags()) {
            return Err(format!(
                "io_uring multishot receive is not supported (result {})",
                cqe.result()
            ));
        }
        let _ = net::shutdown(&a, net::Shutdown::Both);
        let ts = Timespec::new().nsec(100_000_000);
        let _ = ring
            .submitter()
            .submit_with_args(1, &SubmitArgs::new().timespec(&ts));
        Ok(())
    })();
    let _ = ring.submitter().unregister_buf_ring(BGID);
    drop(ring);
    drop(bufs);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_and_tokens_round_trip() {
        for (op, conn, generation) in [(OP_RECV, 0, 0), (OP_SEND_COPY, 123_456, 0xff_ffff)] {
            assert_eq!(
                decode(user_data(op, conn, generation)),
                (op, conn, generation, 0xff_ffff, 0)
            );
        }
        // A zero-copy send keeps its length and the generation's low byte.
        assert_eq!(
            decode(send_data(10_000_000, 0x12_3456, 50_000_000)),
            (OP_SEND, 10_000_000, 0x56, 0xff, 50_000_000)
        );
        assert_eq!(decode(send_data(7, 1, 1 << 28)).4, 0);
        assert_eq!(
            (unsent(100, -32), unsent(100, 40), unsent(0, -32)),
            (100, 60, 0)
        );
        for (res, bid) in [(0, None), (-104, None), (4096, Some(65_535)), (1, Some(0))] {
            assert_eq!(untoken(token(res, bid)), (res, bid));
        }
    }
}
