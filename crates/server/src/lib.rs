//! pelt-server: the built-in target server behind `pelt serve` and `pelt demo`.
//!
//! Built on hyper, not on pelt's own codec, so a codec bug cannot hide behind its mirror
//! image. It answers every request with a fixed response shaped by [`ServerConfig`]: a delay,
//! a body size, a status, a share of 500 errors, `Connection: close`, or a chunked body. It
//! counts the requests it answered so tests and users can check pelt's numbers against it.
//!
//! ```
//! let server = pelt_server::Server::start(pelt_server::ServerConfig::default()).unwrap();
//! let addr = server.addr(); // 127.0.0.1 with a port the OS picked
//! assert_eq!(server.stop(), 0);
//! # let _ = addr;
//! ```
//!
//! Contracts: the server runs on its own threads (a tokio runtime) until [`Server::stop`];
//! dropping the handle stops it too. The error share is exact, not random: with
//! `error_rate` r, of any n consecutive requests `floor(n * r)` (+-1) answer 500.

mod endpoint;
mod live;
mod openai;
mod ws;

pub use endpoint::{Text, TextEndpoint};
pub use live::{LivePage, Page, Steer};
pub use ws::WsCounts;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Default response body size in bytes (the body is `OK`).
pub const DEFAULT_BODY_SIZE: usize = 2;

/// How the server answers.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; port 0 lets the OS pick one.
    pub addr: SocketAddr,
    /// Listen on this Unix socket instead of `addr` (created at start, removed at stop; an
    /// existing file there is an error).
    pub unix_socket: Option<std::path::PathBuf>,
    /// Runtime worker threads.
    pub threads: usize,
    /// Wait this long before each response.
    pub delay: Duration,
    /// Hold a server thread this long for each request (the thread blocks, as a synchronous or
    /// CPU-heavy handler would): the server's capacity is about `threads / work` requests/s,
    /// whatever the load, which `pelt find-max` and its test rely on.
    pub work: Duration,
    /// Spin a server thread on the CPU this long for each request (a CPU-heavy handler:
    /// `--monitor` sees the server's CPU, where `work` sleeps).
    pub burn: Duration,
    /// Response body size in bytes.
    pub body_size: usize,
    /// Status of normal responses.
    pub status: u16,
    /// Share of responses (0.0..=1.0) answered with status 500 instead.
    pub error_rate: f64,
    /// Send `Connection: close` and close after every response.
    pub close: bool,
    /// Send the body with chunked transfer encoding.
    pub chunked: bool,
    /// Freeze every response for `.1` starting `.0` after the server started: a response
    /// that would be sent inside that window waits until it ends (a stall, as a GC pause or a
    /// lock convoy would cause).
    pub stall: Option<(Duration, Duration)>,
    /// Serve HTTPS with this certificate and key (`None`: plain HTTP).
    pub tls: Option<TlsIdentity>,
    /// Also speak HTTP/2: h2c with prior knowledge on plain HTTP, ALPN h2 on HTTPS.
    pub h2: bool,
    /// HTTP/2: SETTINGS_MAX_CONCURRENT_STREAMS (`None`: hyper's default, 200).
    pub max_streams: Option<u32>,
    /// End each connection after this many requests: HTTP/1.1 answers the last one with
    /// `Connection: close`, HTTP/2 sends GOAWAY (as nginx's keepalive_requests does).
    pub max_requests: Option<u64>,
    /// Answer with a stream of server-sent events instead of a body (`None`: a body).
    pub sse: Option<SseConfig>,
    /// Accept WebSocket upgrades (on any path; other requests are answered as ever).
    pub ws: Option<WsConfig>,
}

/// The WebSocket side: each data message is echoed after the server's `delay`, or (with
/// `push`) the body is sent as a text message every `push` on each socket, and messages
/// received are counted, not answered. Pings are answered, and a close is answered with one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WsConfig {
    pub push: Option<Duration>,
}

/// A `text/event-stream` response: `events` events, the first `first` after the head, each
/// later one `interval` (plus or minus up to `jitter`) after the one before.
#[derive(Debug, Clone, PartialEq)]
pub struct SseConfig {
    pub events: u64,
    pub first: Duration,
    pub interval: Duration,
    pub jitter: Duration,
    /// Each event's data.
    pub body: SseBody,
    /// [`SseBody::OpenAi`]: tokens a chunk (the last one may have fewer).
    pub tokens: u64,
    /// [`SseBody::OpenAi`]: added to `first` for each token of the request's prompt (a
    /// model's prefill).
    pub prefill: Duration,
    /// [`SseBody::OpenAi`]: write a JSON line per stream here as it ends (`openai::Record`),
    /// the server's own account of each request's times and tokens.
    pub log: Option<std::path::PathBuf>,
}

/// What an event carries.
#[derive(Debug, Clone, PartialEq)]
pub enum SseBody {
    /// The event's index, 0 first.
    Index,
    /// This text (a line of it each, one `data:` field per line).
    Text(String),
    /// OpenAI's streaming shape, as the request asks for it (`openai.rs`): chat or text
    /// completion chunks of `tokens` tokens each, `max_tokens` of them in all (`events` chunks
    /// when the request does not say), a `usage` chunk when `stream_options.include_usage`
    /// asks, and `data: [DONE]` after the last.
    OpenAi,
}

impl Default for SseConfig {
    fn default() -> Self {
        SseConfig {
            events: 10,
            first: Duration::ZERO,
            interval: Duration::from_millis(10),
            jitter: Duration::ZERO,
            body: SseBody::Index,
            tokens: 1,
            prefill: Duration::ZERO,
            log: None,
        }
    }
}

/// A certificate chain and its private key, PEM-encoded.
#[derive(Clone)]
pub struct TlsIdentity {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never printed.
        f.debug_struct("TlsIdentity").finish_non_exhaustive()
    }
}

impl TlsIdentity {
    /// A fresh self-signed certificate for `localhost`, `127.0.0.1` and `::1` (what a client
    /// on this machine can verify against with `--cacert`).
    pub fn self_signed() -> std::io::Result<TlsIdentity> {
        let names = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        let key = rcgen::generate_simple_self_signed(names).map_err(std::io::Error::other)?;
        Ok(TlsIdentity {
            cert_pem: key.cert.pem(),
            key_pem: key.signing_key.serialize_pem(),
        })
    }

    fn server_config(&self, h2: bool) -> std::io::Result<rustls::ServerConfig> {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let bad = |what: &str, e: &dyn std::fmt::Display| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{what}: {e}"))
        };
        let certs = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad("certificate", &e))?;
        if certs.is_empty() {
            return Err(bad("certificate", &"no certificate found in the PEM"));
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| bad("private key", &e))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad("TLS", &e))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| bad("certificate and key", &e))?;
        config.alpn_protocols = if h2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Ok(config)
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            unix_socket: None,
            threads: 1,
            delay: Duration::ZERO,
            work: Duration::ZERO,
            burn: Duration::ZERO,
            body_size: DEFAULT_BODY_SIZE,
            status: 200,
            error_rate: 0.0,
            close: false,
            chunked: false,
            stall: None,
            tls: None,
            h2: false,
            max_streams: None,
            max_requests: None,
            sse: None,
            ws: None,
        }
    }
}

struct State {
    config: ServerConfig,
    started: tokio::time::Instant,
    body: Bytes,
    served: AtomicU64,
    ws: ws::Counts,
    /// `--sse-log`: the per-stream log, a line written whole at a time.
    log: Option<LogFile>,
}

/// A running server. Stops when [`stop`](Server::stop) is called or the handle is dropped.
pub struct Server {
    addr: SocketAddr,
    state: Arc<State>,
    shutdown: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds the listener (errors such as "address in use" come back here) and starts serving.
    pub fn start(config: ServerConfig) -> std::io::Result<Server> {
        if !(0.0..=1.0).contains(&config.error_rate) || !(100..=999).contains(&config.status) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "error rate must be within 0..=1 and status within 100..=999",
            ));
        }
        let tls = match &config.tls {
            Some(identity) => Some(tokio_rustls::TlsAcceptor::from(Arc::new(
                identity.server_config(config.h2)?,
            ))),
            None => None,
        };
        let (listener, addr) = match &config.unix_socket {
            Some(path) => {
                let l = std::os::unix::net::UnixListener::bind(path).map_err(|e| {
                    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
                })?;
                l.set_nonblocking(true)?;
                (Listener::Unix(l), config.addr)
            }
            None => {
                let l = TcpListener::bind(config.addr)?;
                // std listens with a backlog of 128: thousands of connects at once (a test's
                // `-c 2000`) overflowed it under load, and the dropped handshakes came back
                // only with SYN-ACK retransmits 1, 2, 4, 8 s later. listen() again raises it.
                rustix::net::listen(&l, 4096)?;
                l.set_nonblocking(true)?;
                let addr = l.local_addr()?;
                (Listener::Tcp(l), addr)
            }
        };
        let body = if config.body_size == DEFAULT_BODY_SIZE {
            Bytes::from_static(b"OK")
        } else {
            Bytes::from(
                (0..config.body_size)
                    .map(|i| b'a' + (i % 26) as u8)
                    .collect::<Vec<_>>(),
            )
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads.max(1))
            .thread_name("pelt-serve")
            .enable_all()
            .build()?;
        let log = match config.sse.as_ref().and_then(|s| s.log.as_ref()) {
            Some(path) => Some(Arc::new(std::sync::Mutex::new(std::io::LineWriter::new(
                std::fs::File::create(path).map_err(|e| {
                    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
                })?,
            )))),
            None => None,
        };
        let state = Arc::new(State {
            config,
            started: tokio::time::Instant::now(),
            body,
            served: AtomicU64::new(0),
            ws: ws::Counts::default(),
            log,
        });
        let (tx, rx) = tokio::sync::watch::channel(false);
        let st = state.clone();
        let thread = std::thread::Builder::new()
            .name("pelt-serve-accept".into())
            .spawn(move || {
                runtime.block_on(accept_loop(listener, st, tls, rx));
                // Dropping the runtime cancels the connection tasks still running.
                runtime.shutdown_timeout(Duration::from_millis(100));
            })?;
        Ok(Server {
            addr,
            state,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The Unix socket the server listens on, if it does.
    pub fn unix_socket(&self) -> Option<&std::path::Path> {
        self.state.config.unix_socket.as_deref()
    }

    /// Requests answered so far.
    pub fn served(&self) -> u64 {
        self.state.served.load(Ordering::Relaxed)
    }

    /// What the WebSocket side counted so far.
    pub fn ws_counts(&self) -> WsCounts {
        self.state.ws.snapshot()
    }

    /// Stops accepting, drops open connections, and returns the requests answered.
    pub fn stop(mut self) -> u64 {
        self.shutdown_now();
        self.served()
    }

    fn shutdown_now(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            if let Some(path) = &self.state.config.unix_socket {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}

/// What the server listens on.
enum Listener {
    Tcp(TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

async fn accept_loop(
    listener: Listener,
    state: Arc<State>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let (tcp, unix) = match listener {
        Listener::Tcp(l) => match tokio::net::TcpListener::from_std(l) {
            Ok(l) => (Some(l), None),
            Err(_) => return,
        },
        Listener::Unix(l) => match tokio::net::UnixListener::from_std(l) {
            Ok(l) => (None, Some(l)),
            Err(_) => return,
        },
    };
    loop {
        // Each accept is cancel-safe, and nothing after it awaits: the select loses nothing.
        let accepted = async {
            match (&tcp, &unix) {
                (Some(l), _) => {
                    let (stream, _) = l.accept().await?;
                    let _ = stream.set_nodelay(true);
                    spawn_connection(stream, state.clone(), tls.clone());
                }
                (_, Some(l)) => {
                    let (stream, _) = l.accept().await?;
                    spawn_connection(stream, state.clone(), tls.clone());
                }
                (None, None) => std::future::pending::<()>().await,
            }
            Ok::<(), std::io::Error>(())
        };
        tokio::select! {
            accepted = accepted => {
                // Out of file descriptors or a connection reset before accept: back off, go on.
                if accepted.is_err() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// Serves one accepted connection on its own task (after TLS, if any).
fn spawn_connection<S>(stream: S, state: Arc<State>, tls: Option<tokio_rustls::TlsAcceptor>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        match tls {
            // A failed handshake ends only this connection.
            Some(acceptor) => {
                if let Ok(stream) = acceptor.accept(stream).await {
                    serve_connection(stream, state).await;
                }
            }
            None => serve_connection(stream, state).await,
        }
    });
}

/// Polls a hyper connection to its end; when `bye` fires, shuts it down gracefully (HTTP/1.1:
/// close after the response under way; HTTP/2: GOAWAY, then finish the open streams).
macro_rules! drive {
    ($conn:expr, $bye:expr) => {{
        let conn = $conn;
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = $bye.notified() => conn.as_mut().graceful_shutdown(),
        }
        let _ = conn.await;
    }};
}

/// Serves one connection (HTTP/1.1, or with `h2` also HTTP/2) until it ends.
async fn serve_connection<S>(stream: S, state: Arc<State>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let per_conn = Arc::new(PerConnection {
        served: AtomicU64::new(0),
        bye: tokio::sync::Notify::new(),
    });
    let (st, pc) = (state.clone(), per_conn.clone());
    let service = service_fn(move |req| respond(req, st.clone(), pc.clone()));
    let io = TokioIo::new(stream);
    if state.config.h2 {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http2()
            .max_concurrent_streams(state.config.max_streams.or(Some(200)));
        drive!(
            builder.serve_connection_with_upgrades(io, service),
            per_conn.bye
        );
    } else {
        drive!(
            http1::Builder::new()
                .serve_connection(io, service)
                .with_upgrades(),
            per_conn.bye
        );
    }
}

/// One connection's count, for `max_requests`.
struct PerConnection {
    served: AtomicU64,
    bye: tokio::sync::Notify,
}

/// A body sent in one chunk with no declared length, so hyper frames it as chunked.
struct ChunkedBody(Option<Bytes>);

impl Body for ChunkedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.take().map(|b| Ok(Frame::data(b))))
    }
}

/// A stream of server-sent events: each event's frame when its time comes.
struct EventStream {
    config: SseConfig,
    /// Events to send (OpenAI: chunks, as the request's `max_tokens` says).
    events: u64,
    /// OpenAI: what the request asked for, and the tokens to write in all.
    ask: openai::Ask,
    tokens: u64,
    /// Events sent so far; the stream's number (for OpenAI ids) and its jitter's state.
    sent: u64,
    stream: u64,
    rng: u64,
    /// OpenAI's ending sent: the usage chunk (if asked for) and `[DONE]`.
    usage_sent: bool,
    done: bool,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// `--sse-log`: the log, and this stream's times for it (the server's start, its request's
    /// arrival, its first event, its end), its status.
    log: Option<Log>,
}

/// The per-stream log (`SseConfig::log`), shared by the server's streams.
type LogFile = Arc<std::sync::Mutex<std::io::LineWriter<std::fs::File>>>;

/// A stream's entry in the log, as it goes.
struct Log {
    file: LogFile,
    started: tokio::time::Instant,
    arrived: tokio::time::Instant,
    first: Option<tokio::time::Instant>,
    ended: Option<tokio::time::Instant>,
    status: u16,
}

impl Drop for EventStream {
    fn drop(&mut self) {
        let Some(log) = &self.log else {
            return;
        };
        let us = |t: tokio::time::Instant| t.duration_since(log.started).as_micros() as u64;
        let record = openai::Record {
            stream: self.stream,
            status: log.status,
            arrived_us: us(log.arrived),
            first_token_us: log.first.map(us),
            done_us: us(log.ended.unwrap_or_else(tokio::time::Instant::now)),
            prompt_tokens: self.ask.prompt_tokens,
            completion_tokens: (self.sent * self.config.tokens.max(1)).min(self.tokens),
            cancelled: log.ended.is_none(),
        };
        if let Ok(mut f) = log.file.lock() {
            use std::io::Write as _;
            let _ = writeln!(f, "{}", record.line());
        }
    }
}

impl EventStream {
    fn new(config: SseConfig, stream: u64, request: &[u8], log: Option<Log>) -> EventStream {
        let (ask, tokens, events, first) = if config.body == SseBody::OpenAi {
            let ask = openai::Ask::read(request);
            let each = config.tokens.max(1);
            let tokens = ask.max_tokens.unwrap_or(config.events.saturating_mul(each));
            let prefill = config.prefill * ask.prompt_tokens.min(u64::from(u32::MAX)) as u32;
            (ask, tokens, tokens.div_ceil(each), config.first + prefill)
        } else {
            (openai::Ask::default(), 0, config.events, config.first)
        };
        let timer = Box::pin(tokio::time::sleep(first));
        EventStream {
            config,
            events,
            ask,
            tokens,
            sent: 0,
            stream,
            // Any odd seed: the jitter differs per stream and repeats per run.
            rng: stream.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            usage_sent: false,
            done: false,
            timer,
            log,
        }
    }

    /// The gap before the next event: the interval, moved by up to the jitter either way.
    fn gap(&mut self) -> Duration {
        let jitter = self.config.jitter.as_nanos() as u64;
        if jitter == 0 {
            return self.config.interval;
        }
        // xorshift64: cheap and good enough to spread gaps.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let offset = self.rng % (2 * jitter + 1);
        let base = self.config.interval.as_nanos() as u64;
        Duration::from_nanos((base + offset).saturating_sub(jitter))
    }

    fn event(&self, n: u64) -> Bytes {
        let data = match &self.config.body {
            SseBody::Index => format!("data: {n}\n\n"),
            SseBody::Text(t) => {
                let mut e = String::with_capacity(t.len() + 8);
                for line in t.split('\n') {
                    e.push_str("data: ");
                    e.push_str(line);
                    e.push('\n');
                }
                e.push('\n');
                e
            }
            SseBody::OpenAi => {
                let each = self.config.tokens.max(1);
                let (from, to) = (n * each, ((n + 1) * each).min(self.tokens));
                openai::chunk(&self.ask, self.stream, from, to, n + 1 == self.events)
            }
        };
        Bytes::from(data)
    }
}

impl Body for EventStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.sent >= self.events {
            if let Some(log) = self.log.as_mut().filter(|l| l.ended.is_none()) {
                log.ended = Some(tokio::time::Instant::now());
            }
            if self.config.body == SseBody::OpenAi && self.ask.usage && !self.usage_sent {
                self.usage_sent = true;
                let usage = openai::usage(&self.ask, self.stream, self.tokens);
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(usage)))));
            }
            if self.config.body == SseBody::OpenAi && !self.done {
                self.done = true;
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                    b"data: [DONE]\n\n",
                )))));
            }
            return Poll::Ready(None);
        }
        if std::future::Future::poll(self.timer.as_mut(), cx).is_pending() {
            return Poll::Pending;
        }
        let n = self.sent;
        self.sent += 1;
        if let Some(log) = self.log.as_mut().filter(|l| l.first.is_none()) {
            log.first = Some(tokio::time::Instant::now());
        }
        let frame = self.event(n);
        let next = self.timer.deadline() + self.gap();
        self.timer.as_mut().reset(next);
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }
}

type AnyBody =
    http_body_util::Either<http_body_util::Either<Full<Bytes>, ChunkedBody>, EventStream>;

async fn respond(
    req: Request<Incoming>,
    state: Arc<State>,
    conn: Arc<PerConnection>,
) -> Result<Response<AnyBody>, Infallible> {
    use http_body_util::Either;
    if let Some(ws) = state.config.ws.as_ref().filter(|_| ws::wants_upgrade(&req)) {
        let empty = Either::Left(Either::Left(Full::new(Bytes::new())));
        return Ok(ws::upgrade(req, state.clone(), ws.clone(), empty));
    }
    let req_is_http1 = req.version() < hyper::Version::HTTP_2;
    // Read the request body so the connection can carry the next request (an OpenAI
    // stream's shape comes from it).
    let request = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let cfg = &state.config;
    let arrived = tokio::time::Instant::now();
    if !cfg.work.is_zero() {
        // Blocking on purpose: this thread serves nothing else meanwhile, which is what gives
        // the server a fixed capacity (a handler busy on the CPU behaves the same), without
        // burning a core that the load generator may need on a small machine.
        std::thread::sleep(cfg.work);
    }
    if !cfg.burn.is_zero() {
        // Busy on the CPU until the time is spent, as a handler computing would be (the
        // thread's own CPU time, so a thread that waits for a core does not count the wait).
        burn(cfg.burn);
    }
    if !cfg.delay.is_zero() {
        tokio::time::sleep(cfg.delay).await;
    }
    if let Some((at, length)) = cfg.stall {
        let (from, until) = (state.started + at, state.started + at + length);
        let now = tokio::time::Instant::now();
        if now >= from && now < until {
            tokio::time::sleep_until(until).await;
        }
    }
    let n = state.served.fetch_add(1, Ordering::Relaxed);
    // Exact share: request n fails when floor((n+1)r) > floor(nr).
    let fail = cfg.error_rate > 0.0
        && ((n + 1) as f64 * cfg.error_rate).floor() > (n as f64 * cfg.error_rate).floor();
    let status = if fail { 500 } else { cfg.status };
    let body = match &cfg.sse {
        Some(sse) => {
            let log = state.log.as_ref().map(|file| Log {
                file: file.clone(),
                started: state.started,
                arrived,
                first: None,
                ended: None,
                status,
            });
            Either::Right(EventStream::new(sse.clone(), n, &request, log))
        }
        None if cfg.chunked => Either::Left(Either::Right(ChunkedBody(Some(state.body.clone())))),
        None => Either::Left(Either::Left(Full::new(state.body.clone()))),
    };
    let mut resp = Response::new(body);
    if cfg.sse.is_some() {
        let h = resp.headers_mut();
        h.insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/event-stream"),
        );
        h.insert(
            hyper::header::CACHE_CONTROL,
            hyper::header::HeaderValue::from_static("no-cache"),
        );
    }
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let last = cfg
        .max_requests
        .is_some_and(|max| conn.served.fetch_add(1, Ordering::Relaxed) + 1 == max);
    if last {
        conn.bye.notify_one();
    }
    if cfg.close || (last && req_is_http1) {
        resp.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    Ok(resp)
}

/// Spins this thread until it has used `cpu` of CPU time (CLOCK_THREAD_CPUTIME_ID).
fn burn(cpu: Duration) {
    use rustix::time::{clock_gettime, ClockId};
    let used = || {
        let t = clock_gettime(ClockId::ThreadCPUTime);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    };
    let until = used() + cpu;
    let mut x = 1u64;
    while used() < until {
        for _ in 0..64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    fn post(addr: SocketAddr, body: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// `--sse-body openai` as a request asks: `max_tokens` tokens, `--sse-tokens` to a chunk,
    /// the usage chunk's counts equal to what was streamed and to the prompt's words, a first
    /// token later by `--sse-prefill` a prompt word.
    #[test]
    fn the_openai_stream_writes_the_tokens_asked_for_and_counts_them() {
        let server = Server::start(ServerConfig {
            sse: Some(SseConfig {
                events: 50,
                interval: Duration::from_millis(1),
                body: SseBody::OpenAi,
                tokens: 3,
                prefill: Duration::from_millis(20),
                ..Default::default()
            }),
            ..Default::default()
        })
        .unwrap();
        let started = std::time::Instant::now();
        let out = post(
            server.addr(),
            r#"{"model":"m","messages":[{"role":"user","content":"one two three four five"}],
                "max_tokens":10,"stream":true,"stream_options":{"include_usage":true}}"#,
        );
        assert!(started.elapsed() >= Duration::from_millis(5 * 20), "{out}");
        let data: Vec<serde_json::Value> = out
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        // ceil(10 / 3) chunks of tokens, then the usage chunk; [DONE] last.
        assert_eq!(data.len(), 5, "{out}");
        let streamed: usize = data[..4]
            .iter()
            .map(|c| {
                let text = c["choices"][0]["delta"]["content"].as_str().unwrap();
                text.split_whitespace().count()
            })
            .sum();
        assert_eq!(streamed, 10, "{out}");
        assert_eq!(data[3]["choices"][0]["finish_reason"], "stop", "{out}");
        assert_eq!(
            data[4]["usage"],
            serde_json::json!({"prompt_tokens": 5, "completion_tokens": 10, "total_tokens": 15}),
            "{out}"
        );
        let last = out.lines().rev().find(|l| l.starts_with("data: "));
        assert_eq!(last, Some("data: [DONE]"), "{out}");
        // Not asked for usage, no max_tokens: --sse chunks of 3 tokens, no usage chunk.
        let out = post(server.addr(), r#"{"prompt":"hi","stream":true}"#);
        assert_eq!(
            out.matches("\"object\":\"text_completion\"").count(),
            50,
            "{out}"
        );
        assert!(!out.contains("usage"), "{out}");
        server.stop();
    }

    #[test]
    fn event_streams_send_their_events_on_time_and_end() {
        let sse = SseConfig {
            events: 5,
            first: Duration::from_millis(100),
            interval: Duration::from_millis(20),
            jitter: Duration::from_millis(10),
            body: SseBody::Index,
            ..Default::default()
        };
        let server = Server::start(ServerConfig {
            sse: Some(sse.clone()),
            ..Default::default()
        })
        .unwrap();
        let started = std::time::Instant::now();
        let out = get(server.addr());
        // The first event waits 100 ms, the others 10 to 30 ms each (bounds loose: at least).
        assert!(
            started.elapsed() >= Duration::from_millis(100 + 4 * 10),
            "{out}"
        );
        let lower = out.to_ascii_lowercase();
        assert!(lower.contains("content-type: text/event-stream"), "{out}");
        assert!(lower.contains("transfer-encoding: chunked"), "{out}");
        let events: Vec<&str> = out.matches("data: ").collect();
        assert_eq!(events.len(), 5, "{out}");
        for n in 0..5 {
            assert!(out.contains(&format!("data: {n}\n\n")), "{out}");
        }
        assert_eq!(server.stop(), 1);
        // OpenAI's shape: a chunk per token, the last one stopping, then [DONE].
        let server = Server::start(ServerConfig {
            sse: Some(SseConfig {
                events: 3,
                body: SseBody::OpenAi,
                ..sse
            }),
            ..Default::default()
        })
        .unwrap();
        let out = get(server.addr());
        assert_eq!(out.matches("chat.completion.chunk").count(), 3, "{out}");
        assert_eq!(
            out.matches("\"finish_reason\":\"stop\"").count(),
            1,
            "{out}"
        );
        assert!(out.contains("data: [DONE]\n\n"), "{out}");
        server.stop();
    }

    #[test]
    fn answers_and_counts() {
        let server = Server::start(ServerConfig::default()).unwrap();
        let resp = get(server.addr());
        assert!(resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
        assert!(resp.ends_with("\r\n\r\nOK"), "{resp}");
        assert_eq!(server.stop(), 1);
    }

    #[test]
    fn chunked_body_size_and_status() {
        let cfg = ServerConfig {
            chunked: true,
            body_size: 30,
            status: 404,
            ..Default::default()
        };
        let server = Server::start(cfg).unwrap();
        let resp = get(server.addr());
        assert!(resp.starts_with("HTTP/1.1 404 Not Found\r\n"), "{resp}");
        assert!(
            resp.to_ascii_lowercase()
                .contains("transfer-encoding: chunked"),
            "{resp}"
        );
        assert!(
            resp.contains("\r\n1E\r\nabcdefghijklmnopqrstuvwxyzabcd\r\n0\r\n\r\n"),
            "{resp}"
        );
    }

    #[test]
    fn error_rate_is_an_exact_share() {
        let cfg = ServerConfig {
            error_rate: 0.25,
            ..Default::default()
        };
        let server = Server::start(cfg).unwrap();
        let fails = (0..20)
            .filter(|_| get(server.addr()).starts_with("HTTP/1.1 500"))
            .count();
        assert_eq!(fails, 5);
    }

    #[test]
    fn a_stall_holds_responses_until_it_ends() {
        let cfg = ServerConfig {
            stall: Some((Duration::ZERO, Duration::from_millis(300))),
            ..Default::default()
        };
        let server = Server::start(cfg).unwrap();
        let t = std::time::Instant::now();
        assert!(get(server.addr()).starts_with("HTTP/1.1 200"));
        // The response waited for the stall's end (this bounds behaviour, not speed).
        assert!(
            t.elapsed() >= Duration::from_millis(250),
            "{:?}",
            t.elapsed()
        );
        assert!(get(server.addr()).starts_with("HTTP/1.1 200"));
        assert_eq!(server.stop(), 2);
    }

    /// A blocking tungstenite client of the server at `addr`, asking for `protocols`.
    fn ws_client(
        addr: SocketAddr,
        protocols: &str,
    ) -> tokio_tungstenite::tungstenite::WebSocket<std::net::TcpStream> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut req = format!("ws://{addr}/any/path")
            .into_client_request()
            .unwrap();
        if !protocols.is_empty() {
            req.headers_mut()
                .insert("sec-websocket-protocol", protocols.parse().unwrap());
        }
        let stream = std::net::TcpStream::connect(addr).unwrap();
        let (socket, resp) = tokio_tungstenite::tungstenite::client(req, stream).unwrap();
        if let Some(first) = protocols.split(',').next().filter(|p| !p.is_empty()) {
            assert_eq!(resp.headers()["sec-websocket-protocol"], first.trim());
        }
        socket
    }

    #[test]
    fn websocket_messages_are_echoed_and_counted() {
        use tokio_tungstenite::tungstenite::Message;
        let server = Server::start(ServerConfig {
            ws: Some(WsConfig::default()),
            ..Default::default()
        })
        .unwrap();
        let mut ws = ws_client(server.addr(), "chat, other");
        ws.send(Message::text("hello")).unwrap();
        assert_eq!(ws.read().unwrap(), Message::text("hello"));
        ws.send(Message::Binary(vec![0u8, 1, 2].into())).unwrap();
        assert_eq!(ws.read().unwrap(), Message::Binary(vec![0u8, 1, 2].into()));
        ws.send(Message::Ping(b"p".to_vec().into())).unwrap();
        assert_eq!(ws.read().unwrap(), Message::Pong(b"p".to_vec().into()));
        let counts = server.ws_counts();
        assert_eq!(
            (counts.upgrades, counts.open, counts.received, counts.sent),
            (1, 1, 2, 2)
        );
        ws.close(None).unwrap();
        while ws.read().is_ok() {}
        // Plain requests are still answered.
        assert!(get(server.addr()).starts_with("HTTP/1.1 200"));
        let t = std::time::Instant::now();
        while server.ws_counts().open != 0 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(server.ws_counts().open, 0);
        assert_eq!(server.stop(), 1);
    }

    #[test]
    fn websocket_push_sends_the_body_every_interval_unasked() {
        use tokio_tungstenite::tungstenite::Message;
        let server = Server::start(ServerConfig {
            ws: Some(WsConfig {
                push: Some(Duration::from_millis(10)),
            }),
            ..Default::default()
        })
        .unwrap();
        let mut ws = ws_client(server.addr(), "");
        ws.send(Message::text("not echoed")).unwrap();
        for _ in 0..3 {
            assert_eq!(ws.read().unwrap(), Message::text("OK"));
        }
        // The server counts a push after its write returns, which may be after the client
        // read it: wait (bounded) for the counts to catch up.
        let until = std::time::Instant::now() + Duration::from_secs(5);
        let behind = |c: WsCounts| c.sent < 3 || c.received < 1;
        while behind(server.ws_counts()) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(server.ws_counts().received, 1);
        assert!(server.ws_counts().sent >= 3);
    }

    #[test]
    fn rejects_bad_settings() {
        let cfg = ServerConfig {
            error_rate: 1.5,
            ..Default::default()
        };
        assert!(Server::start(cfg).is_err());
    }
}
