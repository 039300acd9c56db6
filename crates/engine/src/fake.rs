//! A scripted in-memory [`Io`] for table tests of the worker: no sockets, no kernel. Each
//! connect takes the next [`Socket`] script; what the worker sends on a socket is handed to
//! its server closure, whose replies come back as completion events (`Received`, as io_uring
//! reports them). The worker's clock is the fake's own ([`Io::now`]): a wait with nothing to
//! report moves it on to the wake-up (nothing sleeps), a wait with events by `STEP`, so a row
//! with a 5 s duration or a back-off runs in microseconds, and what it measures is exact.
//!
//! The table at the bottom drives the worker through the transitions that otherwise only the
//! binary's end-to-end tests reach: a close with pipelined requests outstanding, a GOAWAY with
//! streams above its last id, a connect failure and its back-off, a connect under way, a short
//! write, a send failure (ENOBUFS), the whole-request deadline, bytes on an idle connection, a
//! TLS close with and without close_notify and a TLS handshake that never ends (a real rustls
//! server session runs inside the scripted socket), and the open loop's due requests waiting
//! for the one connection; a test beside it follows a stages ramp.

use crate::backend::{Connect, Endpoint, Event, EventKind, Io, Read, Wait};
use rustix::io::Errno;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How far the fake clock moves in a wait that has events to report.
pub(crate) const STEP: Duration = Duration::from_micros(10);

/// What the server sends back after one of the worker's sends.
pub(crate) enum Reply {
    Bytes(Vec<u8>),
    /// The server closes the connection.
    Eof,
    /// The read fails with this error (a reset, say).
    Fail(Errno),
}

/// One socket's server: called with the bytes of each send, in order.
pub(crate) type Server = Box<dyn FnMut(&[u8]) -> Vec<Reply> + Send>;

/// What the next connect finds.
pub(crate) enum Socket {
    /// The connect fails at once with this error.
    Refuse(Errno),
    /// Connected; this server answers.
    Accept(Server),
    /// Connected, but every send fails with this error.
    SendFails(Errno),
    /// The connect is under way; it completes at the next wait (an event, as io_uring
    /// reports it), then this server answers.
    Slow(Server),
    /// Connected; each send takes at most this many bytes (the rest waits until the socket
    /// is writable again, as on epoll), and this server answers once a send's bytes are all in.
    Trickle(usize, Server),
}

struct FakeConn {
    generation: u32,
    server: Option<Server>,
    send_error: Option<Errno>,
    /// `Trickle`: the most bytes a send takes, and what it took of a send not all in yet.
    trickle: Option<usize>,
    taken: Vec<u8>,
}

pub(crate) struct FakeIo {
    /// Scripts for the coming connects, in order; when empty, connects are refused.
    sockets: VecDeque<Socket>,
    conns: Vec<FakeConn>,
    pending: VecDeque<Event>,
    reads: HashMap<u64, Reply>,
    next_token: u64,
    /// Connects attempted (shared, so a test can read it after the worker dropped the fake).
    pub connects: Arc<AtomicUsize>,
    /// The clock: where it started, and how far it has moved (nanoseconds; shared, like
    /// `connects`).
    start: Instant,
    pub elapsed: Arc<AtomicU64>,
}

impl FakeIo {
    pub fn new(sockets: Vec<Socket>) -> FakeIo {
        FakeIo {
            sockets: sockets.into(),
            conns: Vec::new(),
            pending: VecDeque::new(),
            reads: HashMap::new(),
            next_token: 1,
            connects: Arc::new(AtomicUsize::new(0)),
            start: Instant::now(),
            elapsed: Arc::new(AtomicU64::new(0)),
        }
    }

    fn conn(&mut self, conn: usize) -> &mut FakeConn {
        while self.conns.len() <= conn {
            self.conns.push(FakeConn {
                generation: 0,
                server: None,
                send_error: None,
                trickle: None,
                taken: Vec::new(),
            });
        }
        &mut self.conns[conn]
    }
}

impl Io for FakeIo {
    fn connect(&mut self, conn: usize, _to: &Endpoint) -> Result<Connect, Errno> {
        self.connects.fetch_add(1, Ordering::Relaxed);
        let script = self
            .sockets
            .pop_front()
            .unwrap_or(Socket::Refuse(Errno::CONNREFUSED));
        let c = self.conn(conn);
        c.generation += 1;
        c.trickle = None;
        c.taken.clear();
        let generation = c.generation;
        match script {
            Socket::Refuse(e) => return Err(e),
            Socket::Accept(server) => {
                c.server = Some(server);
                c.send_error = None;
            }
            Socket::SendFails(e) => {
                c.server = None;
                c.send_error = Some(e);
            }
            Socket::Slow(server) => {
                c.server = Some(server);
                c.send_error = None;
                self.pending.push_back(Event {
                    conn,
                    generation,
                    kind: EventKind::Connected(Ok(())),
                });
                return Ok(Connect::InProgress);
            }
            Socket::Trickle(most, server) => {
                c.server = Some(server);
                c.send_error = None;
                c.trickle = Some(most);
            }
        }
        Ok(Connect::Done)
    }

    fn finish_connect(&mut self, _conn: usize) -> Result<(), Errno> {
        Ok(())
    }

    fn send(&mut self, conn: usize, bytes: &[u8]) -> Result<usize, Errno> {
        let c = self.conn(conn);
        if let Some(e) = c.send_error {
            return Err(e);
        }
        let generation = c.generation;
        if let Some(most) = c.trickle {
            let took = most.min(bytes.len());
            c.taken.extend_from_slice(&bytes[..took]);
            if took < bytes.len() {
                self.pending.push_back(Event {
                    conn,
                    generation,
                    kind: EventKind::Ready {
                        readable: false,
                        writable: true,
                    },
                });
                return Ok(took);
            }
        }
        let whole = std::mem::take(&mut c.taken);
        let sent = if c.trickle.is_some() {
            &whole[..]
        } else {
            bytes
        };
        let replies = c.server.as_mut().map_or_else(Vec::new, |s| s(sent));
        for reply in replies {
            let token = self.next_token;
            self.next_token += 1;
            self.reads.insert(token, reply);
            self.pending.push_back(Event {
                conn,
                generation,
                kind: EventKind::Received(token),
            });
        }
        Ok(bytes.len())
    }

    fn read(&mut self, _conn: usize, token: u64) -> Read<'_> {
        match self.reads.get(&token) {
            Some(Reply::Bytes(b)) => Read::Data(b, crate::backend::Stamp(0)),
            Some(Reply::Eof) => Read::Eof,
            Some(Reply::Fail(e)) => Read::Failed(*e),
            None => Read::Again,
        }
    }

    fn release(&mut self, token: u64) {
        self.reads.remove(&token);
    }

    fn close(&mut self, conn: usize) {
        let c = self.conn(conn);
        c.server = None;
        c.send_error = None;
        c.generation += 1;
        // A closed socket reports nothing more.
        let reads = &mut self.reads;
        self.pending.retain(|e| {
            let keep = e.conn != conn;
            if let (false, EventKind::Received(token)) = (keep, e.kind) {
                reads.remove(&token);
            }
            keep
        });
    }

    fn generation(&self, conn: usize) -> u32 {
        self.conns.get(conn).map_or(0, |c| c.generation)
    }

    fn wait(&mut self, w: Wait, events: &mut Vec<Event>) {
        let Wait { timeout, due, .. } = w;
        let passed = if self.pending.is_empty() {
            // Nothing will happen but time passing: it passes, up to the wake-up.
            due.map_or(timeout, |d| d.min(timeout))
        } else {
            events.extend(self.pending.drain(..));
            STEP
        };
        let ns = passed.as_nanos().max(1) as u64;
        self.elapsed.fetch_add(ns, Ordering::Relaxed);
    }

    fn now(&self) -> Instant {
        self.start + Duration::from_nanos(self.elapsed.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::DEADLINE_SCAN;
    use crate::{Config, Http2, WorkerPlan};
    use pelt_stats::{ErrorKind, WorkerStats};
    use std::sync::atomic::AtomicBool;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";
    const OK_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK";

    /// How many whole HTTP/1.1 requests (heads without bodies) `bytes` holds.
    fn requests_in(bytes: &[u8]) -> usize {
        bytes.windows(4).filter(|w| w == b"\r\n\r\n").count()
    }

    /// A server answering each request with `response`.
    fn answering(response: &'static [u8]) -> Server {
        Box::new(move |sent| vec![Reply::Bytes(response.repeat(requests_in(sent)))])
    }

    fn answers(response: &'static [u8]) -> Socket {
        Socket::Accept(answering(response))
    }

    fn config(requests: u64) -> Config {
        let addr = "127.0.0.1:9".parse().unwrap();
        let request = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n".to_vec();
        let mut c = Config::new(addr, request);
        c.requests = Some(requests);
        c.duration = Some(Duration::from_secs(5));
        c.connections = 1;
        c.threads = 1;
        c
    }

    /// Runs one worker on `io` with `config`; returns its measured stats, how many connects
    /// it made, and how long it ran on the fake clock.
    fn run(config: &Config, io: FakeIo) -> (WorkerStats, usize, Duration) {
        let (tx, _rx) = std::sync::mpsc::channel();
        let start = io.now();
        let plan = WorkerPlan {
            worker: 0,
            workers: 1,
            connections: config.connections,
            max_connections: config.load.max_connections(config.connections),
            budget: config.requests,
            start,
            end: config.duration.map(|d| start + d),
            connect_rate: None,
            tx,
            clock: std::sync::Arc::new(crate::Clock::new(1)),
            feed: None,
        };
        let batch = config.request.repeat(config.pipeline());
        let connects = io.connects.clone();
        let elapsed = io.elapsed.clone();
        let outcome = crate::worker::run(config, &batch, plan, &AtomicBool::new(false), Ok(io));
        let s = outcome.main;
        assert_eq!(
            s.sent,
            s.completed() + s.errors.total() + s.in_flight,
            "accounting"
        );
        let took = Duration::from_nanos(elapsed.load(Ordering::Relaxed));
        (s, connects.load(Ordering::Relaxed), took)
    }

    /// An HTTP/2 frame.
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// The HEADERS frames' stream ids in `bytes` (whole frames after the preface).
    fn streams_opened(bytes: &[u8]) -> Vec<u32> {
        let mut b = bytes.strip_prefix(pelt_codec::h2::PREFACE).unwrap_or(bytes);
        let mut ids = vec![];
        while b.len() >= 9 {
            let len = (b[0] as usize) << 16 | (b[1] as usize) << 8 | b[2] as usize;
            if b[3] == pelt_codec::h2::kind::HEADERS {
                ids.push(u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff);
            }
            b = &b[(9 + len).min(b.len())..];
        }
        ids
    }

    /// An HTTP/2 server: SETTINGS first; then each stream id it is sent is answered `:status
    /// 200` with END_STREAM, except that after `goaway_after` streams it sends GOAWAY with that
    /// last id, answers nothing above it, and closes once the rest are answered.
    fn h2_server(goaway_after: Option<u32>) -> Socket {
        let mut settings_sent = false;
        Socket::Accept(Box::new(move |sent| {
            let mut out = vec![];
            if !settings_sent {
                settings_sent = true;
                out.extend(frame(pelt_codec::h2::kind::SETTINGS, 0, 0, &[]));
            }
            let mut close = false;
            for id in streams_opened(sent) {
                match goaway_after {
                    Some(last) if id > last => {
                        // Never processed: the client retries it elsewhere.
                        close = true;
                    }
                    _ => out.extend(frame(pelt_codec::h2::kind::HEADERS, 0x5, id, &[0x88])),
                }
                if goaway_after == Some(id) {
                    let mut payload = id.to_be_bytes().to_vec();
                    payload.extend(0u32.to_be_bytes());
                    out.extend(frame(pelt_codec::h2::kind::GOAWAY, 0, 0, &payload));
                }
            }
            let mut replies = vec![Reply::Bytes(out)];
            if close {
                replies.push(Reply::Eof);
            }
            replies
        }))
    }

    /// A TLS server (rustls, in memory) that answers the first request with a close-delimited
    /// response and closes, with close_notify first or without it.
    fn tls_server(close_notify: bool) -> (Socket, crate::TlsClient) {
        use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
        use std::io::{Read as _, Write as _};
        let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert = key.cert.der().clone();
        let pkcs8 = PrivatePkcs8KeyDer::from(key.signing_key.serialize_der());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], PrivateKeyDer::Pkcs8(pkcs8))
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut session = rustls::ServerConnection::new(Arc::new(server)).unwrap();
        let mut plain = Vec::new();
        let socket = Socket::Accept(Box::new(move |mut sent| {
            session.read_tls(&mut sent).unwrap();
            session.process_new_packets().unwrap();
            let mut buf = [0u8; 4096];
            while let Ok(n) = session.reader().read(&mut buf) {
                plain.extend_from_slice(&buf[..n]);
            }
            let answer = requests_in(&plain) > 0;
            if answer {
                plain.clear();
                let response = b"HTTP/1.1 200 OK\r\n\r\nthe body runs to the close";
                session.writer().write_all(response).unwrap();
                if close_notify {
                    session.send_close_notify();
                }
            }
            let mut out = Vec::new();
            while session.wants_write() {
                session.write_tls(&mut out).unwrap();
            }
            let mut replies = vec![Reply::Bytes(out)];
            if answer {
                replies.push(Reply::Eof);
            }
            replies
        }));
        let tls = crate::TlsClient {
            config: Arc::new(client),
            server_name: "localhost".try_into().unwrap(),
        };
        (socket, tls)
    }

    fn tls_config(tls: crate::TlsClient) -> Config {
        let mut c = config(1);
        c.tls = Some(tls);
        c
    }

    fn h2_config(requests: u64, streams: usize) -> Config {
        let mut c = config(requests);
        c.wire = crate::Wire::Http2(Http2 {
            header_block: pelt_codec::h2::encode_headers("GET", "http", "t", "/", &[], 0),
            body: vec![],
            streams,
            targets: vec![],
            grpc: None,
        });
        c
    }

    /// One row: a name, the run, the sockets its connects find, and what must come of it.
    struct Case {
        name: &'static str,
        config: Config,
        sockets: Vec<Socket>,
        completed: u64,
        errors: &'static [(ErrorKind, u64)],
        connection_errors: &'static [(ErrorKind, u64)],
        connects: usize,
    }

    #[test]
    fn transitions() {
        let pipelined = || {
            let mut c = config(4);
            c.wire = crate::Wire::Http1 { pipeline: 4 };
            c
        };
        let timeout = || {
            let mut c = config(1);
            c.timeout = Duration::from_millis(50);
            c
        };
        let (clean_close, clean_tls) = tls_server(true);
        let (cut_close, cut_tls) = tls_server(false);
        let (_, silent_tls) = tls_server(true);
        let handshake_timeout = || {
            let mut c = tls_config(silent_tls.clone());
            c.connect_timeout = Duration::from_millis(50);
            c
        };
        let open_loop = || {
            let mut c = config(20);
            c.load = crate::Load::open(crate::Rate::per_second(5_000.0).expect("a rate"), 1);
            c
        };
        let cases = vec![
            Case {
                name: "keep-alive: one connection answers every request",
                config: config(20),
                sockets: vec![answers(OK)],
                completed: 20,
                errors: &[],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "Connection: close on each response: a new connection per request",
                config: config(3),
                sockets: vec![answers(OK_CLOSE), answers(OK_CLOSE), answers(OK_CLOSE)],
                completed: 3,
                errors: &[],
                connection_errors: &[],
                connects: 3,
            },
            Case {
                name: "close with pipelined requests outstanding: the rest are closed",
                config: pipelined(),
                sockets: vec![Socket::Accept(Box::new(|_| {
                    vec![Reply::Bytes(OK_CLOSE.to_vec()), Reply::Eof]
                }))],
                completed: 1,
                errors: &[(ErrorKind::Closed, 3)],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "EOF before any answer: closed, and the next request reconnects",
                config: config(2),
                sockets: vec![Socket::Accept(Box::new(|_| vec![Reply::Eof])), answers(OK)],
                completed: 1,
                errors: &[(ErrorKind::Closed, 1)],
                connection_errors: &[],
                connects: 2,
            },
            Case {
                name: "reset mid-response",
                config: config(1),
                sockets: vec![Socket::Accept(Box::new(|_| {
                    vec![
                        Reply::Bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nOK".to_vec()),
                        Reply::Fail(Errno::CONNRESET),
                    ]
                }))],
                completed: 0,
                errors: &[(ErrorKind::Reset, 1)],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "connect refused: one error per request, a back-off between tries",
                config: config(3),
                sockets: vec![],
                completed: 0,
                errors: &[(ErrorKind::Refused, 3)],
                connection_errors: &[],
                connects: 3,
            },
            Case {
                name: "a connect under way: the requests wait, then go when it completes",
                config: config(5),
                sockets: vec![Socket::Slow(answering(OK))],
                completed: 5,
                errors: &[],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "a short write: the rest goes when the socket is writable again",
                config: pipelined(),
                sockets: vec![Socket::Trickle(10, answering(OK))],
                completed: 4,
                errors: &[],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "open loop: requests due while the one connection is busy wait for it",
                config: open_loop(),
                sockets: vec![answers(OK)],
                completed: 20,
                errors: &[],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "a send fails (ENOBUFS): an io error, the next request on a new socket",
                config: config(2),
                sockets: vec![Socket::SendFails(Errno::NOBUFS), answers(OK)],
                completed: 1,
                errors: &[(ErrorKind::Io, 1)],
                connection_errors: &[],
                connects: 2,
            },
            Case {
                name: "no answer within --timeout: a timeout",
                config: timeout(),
                sockets: vec![Socket::Accept(Box::new(|_| vec![]))],
                completed: 0,
                errors: &[(ErrorKind::Timeout, 1)],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "bytes after the response on an idle connection: a connection error",
                config: config(1),
                sockets: vec![Socket::Accept(Box::new(|_| {
                    vec![Reply::Bytes([OK, b"junk".as_slice()].concat())]
                }))],
                completed: 1,
                errors: &[],
                connection_errors: &[(ErrorKind::Protocol, 1)],
                connects: 1,
            },
            Case {
                name: "HTTP/2: every stream answered on one connection",
                config: h2_config(30, 4),
                sockets: vec![h2_server(None)],
                completed: 30,
                errors: &[],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "HTTP/2 GOAWAY: streams above its last id go again on a new connection",
                config: h2_config(10, 4),
                sockets: vec![h2_server(Some(3)), h2_server(None)],
                completed: 10,
                errors: &[],
                connection_errors: &[],
                connects: 2,
            },
            Case {
                name: "TLS: close_notify, then EOF: a close-delimited body is complete",
                config: tls_config(clean_tls),
                sockets: vec![clean_close],
                completed: 1,
                errors: &[],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "TLS: no handshake answer within --connect-timeout: a tls error",
                config: handshake_timeout(),
                sockets: vec![Socket::Accept(Box::new(|_| vec![]))],
                completed: 0,
                errors: &[(ErrorKind::Tls, 1)],
                connection_errors: &[],
                connects: 1,
            },
            Case {
                name: "TLS: EOF without close_notify: the close-delimited body may be cut",
                config: tls_config(cut_tls),
                sockets: vec![cut_close],
                completed: 0,
                errors: &[(ErrorKind::Incomplete, 1)],
                connection_errors: &[],
                connects: 1,
            },
        ];
        for case in cases {
            let (s, connects, took) = run(&case.config, FakeIo::new(case.sockets));
            let name = case.name;
            // Every row ends by its count, before its 5 s duration on the fake clock.
            assert!(took < Duration::from_secs(5), "{name}: ran {took:?}");
            assert_eq!(s.completed(), case.completed, "{name}: completed");
            for &(kind, n) in case.errors {
                assert_eq!(s.errors.count(kind), n, "{name}: {kind:?}");
            }
            let errors: u64 = case.errors.iter().map(|e| e.1).sum();
            assert_eq!(s.errors.total(), errors, "{name}: errors");
            for &(kind, n) in case.connection_errors {
                assert_eq!(s.connection_errors.count(kind), n, "{name}: {kind:?}");
            }
            assert_eq!(s.in_flight, 0, "{name}: in flight");
            assert_eq!(connects, case.connects, "{name}: connects");
        }
    }

    /// Closed-loop stages open connections as the ramp's target rises (0 to 3 over 150 ms,
    /// then held), each answering.
    #[test]
    fn a_stages_ramp_opens_connections_as_it_rises() {
        let mut c = config(u64::MAX);
        c.requests = None;
        c.connections = 3;
        let stages = vec![
            crate::Stage {
                duration: Duration::from_millis(150),
                target: 3.0,
            },
            crate::Stage {
                duration: Duration::from_millis(100),
                target: 3.0,
            },
        ];
        let stages = crate::Stages::new(crate::Ramped::Connections, 0.0, stages).unwrap();
        c.load = crate::Load::Closed {
            stages: Some(stages),
        };
        c.duration = Some(Duration::from_millis(250));
        let (s, connects, took) = run(&c, FakeIo::new((0..3).map(|_| answers(OK)).collect()));
        assert_eq!(connects, 3);
        assert!(s.completed() > 0 && s.errors.total() == 0, "{s:?}");
        // It ran its whole duration on the fake clock (and no more than a deadline scan past).
        assert!(took >= c.duration.unwrap(), "{took:?}");
        assert!(took <= c.duration.unwrap() + DEADLINE_SCAN, "{took:?}");
    }

    /// The deadlines run on the fake clock, exactly: three refused connects are two back-offs
    /// apart; an unanswered request times out at --timeout, found at the next deadline scan;
    /// a TLS handshake that never ends fails at --connect-timeout.
    #[test]
    fn deadlines_run_on_the_fake_clock() {
        let (s, _, took) = run(&config(3), FakeIo::new(vec![]));
        assert_eq!(s.errors.count(ErrorKind::Refused), 3);
        let backoffs = crate::RECONNECT_BACKOFF * 2;
        assert!(
            took >= backoffs && took <= backoffs + DEADLINE_SCAN * 2,
            "{took:?}"
        );

        let mut c = config(1);
        c.timeout = Duration::from_millis(50);
        let (s, _, took) = run(&c, FakeIo::new(vec![Socket::Accept(Box::new(|_| vec![]))]));
        assert_eq!(s.errors.count(ErrorKind::Timeout), 1);
        assert!(
            took >= c.timeout && took <= c.timeout + DEADLINE_SCAN,
            "{took:?}"
        );

        let (_, silent) = tls_server(true);
        let mut c = tls_config(silent);
        c.connect_timeout = Duration::from_millis(30);
        let (s, _, took) = run(&c, FakeIo::new(vec![Socket::Accept(Box::new(|_| vec![]))]));
        assert_eq!(s.errors.count(ErrorKind::Tls), 1);
        let t = c.connect_timeout;
        assert!(took >= t && took <= t + DEADLINE_SCAN, "{took:?}");
    }
}
