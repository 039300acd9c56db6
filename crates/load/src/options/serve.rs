//! `pelt serve`'s options (and Node.js's `startServer`): the built-in server's settings, one
//! row each.

use super::{duration_text, Flag, Form, Given, OptionError, Rule};
use crate::values;
use serde_json::{Map, Value};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What `pelt serve` is asked to do; `Default` is its defaults. The server's own settings are
/// its `ServerConfig`; the spec adds what the command line says differently (an address as
/// host and port, TLS as a switch or files, the stall as two flags).
#[derive(Debug, Clone)]
pub struct ServeSpec {
    /// Threads, delay, work, body size, status, error rate, close, chunked, h2, max requests,
    /// the Unix socket: as the server takes them (its address, TLS identity, stall and stream
    /// limit are set from the fields below).
    pub config: pelt_server::ServerConfig,
    pub host: IpAddr,
    pub port: u16,
    /// How long the stall lasts, and when it starts (both or neither).
    pub stall: Option<Duration>,
    pub stall_at: Option<Duration>,
    /// HTTPS with a fresh self-signed certificate (unless `cert` and `key` are given).
    pub tls: bool,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub max_streams: u32,
}

/// `pelt serve`'s port.
pub const DEFAULT_PORT: u16 = 8080;
/// The HTTP/2 streams a connection may have open (hyper's default).
pub const DEFAULT_MAX_STREAMS: u32 = 200;

impl Default for ServeSpec {
    fn default() -> Self {
        ServeSpec {
            config: pelt_server::ServerConfig::default(),
            host: IpAddr::from([127, 0, 0, 1]),
            port: DEFAULT_PORT,
            stall: None,
            stall_at: None,
            tls: false,
            cert: None,
            key: None,
            max_streams: DEFAULT_MAX_STREAMS,
        }
    }
}

impl ServeSpec {
    /// The server's config: the TLS identity read from `cert` and `key`, or a fresh
    /// self-signed one with `tls`. Errors are one line.
    pub fn config(&self) -> Result<pelt_server::ServerConfig, String> {
        let tls = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let read = |p: &PathBuf, what: &str| {
                    std::fs::read_to_string(p)
                        .map_err(|e| format!("cannot read {what} {}: {e}", p.display()))
                };
                Some(pelt_server::TlsIdentity {
                    cert_pem: read(cert, "--cert")?,
                    key_pem: read(key, "--key")?,
                })
            }
            _ if self.tls => Some(
                pelt_server::TlsIdentity::self_signed()
                    .map_err(|e| format!("cannot make a self-signed certificate: {e}"))?,
            ),
            _ => None,
        };
        Ok(pelt_server::ServerConfig {
            addr: std::net::SocketAddr::new(self.host, self.port),
            stall: self.stall.zip(self.stall_at).map(|(len, at)| (at, len)),
            tls,
            max_streams: self.config.h2.then_some(self.max_streams),
            ..self.config.clone()
        })
    }
}

/// The server's spec of `options` (names as in [`SERVE`]).
pub fn serve(options: &Map<String, Value>) -> Result<ServeSpec, OptionError> {
    let mut s = ServeSpec::default();
    super::read_into(SERVE, options, &mut s)?;
    Ok(s)
}

type Row = Flag<ServeSpec>;
const BASE: Row = Flag::BASE;

fn dur(d: Duration) -> Result<Option<Value>, String> {
    Ok(Some(duration_text(d).into()))
}

fn path(p: &Option<PathBuf>) -> Result<Option<Value>, String> {
    Ok(p.as_ref().map(|p| p.display().to_string().into()))
}

fn ip(t: &str) -> Result<IpAddr, String> {
    t.parse()
        .map_err(|_| "expected an IP address, like 127.0.0.1 or ::1".into())
}

fn max_streams(t: &str) -> Result<u32, String> {
    values::count_at_most(t, 1_000_000).map(|n| n as u32)
}

fn boolean(g: &Given) -> Result<bool, OptionError> {
    g.boolean()
}

/// The event stream's settings, made on the first `--sse*` option read.
fn sse(s: &mut ServeSpec) -> &mut pelt_server::SseConfig {
    s.config.sse.get_or_insert_with(Default::default)
}

fn sse_time(
    s: &ServeSpec,
    pick: fn(&pelt_server::SseConfig) -> Duration,
) -> Result<Option<Value>, String> {
    Ok(s.config.sse.as_ref().map(|e| duration_text(pick(e)).into()))
}

/// Every option of `pelt serve`, in its help's order.
pub static SERVE: &[Row] = &[
    Row {
        name: "unixSocket",
        long: "unix-socket",
        value: "PATH",
        help: "Listen on this Unix socket instead of a port (created, and removed at exit).",
        example: r#""/tmp/pelt.sock""#,
        rules: &[Rule::Conflicts("tls")],
        read: |s, g| {
            s.config.unix_socket = Some(g.path()?);
            Ok(())
        },
        write: |s| path(&s.config.unix_socket),
        ..BASE
    },
    Row {
        name: "port",
        long: "port",
        value: "PORT",
        help: "Port to listen on; 0 picks a free one (Node.js: 0 unless given).",
        ts: "number",
        example: "0",
        read: |s, g| {
            s.port = g.parse(values::port)?;
            Ok(())
        },
        write: |s| Ok(Some(s.port.into())),
        ..BASE
    },
    Row {
        name: "host",
        long: "host",
        value: "HOST",
        help: "Address to listen on.",
        example: r#""::1""#,
        read: |s, g| {
            s.host = g.parse(ip)?;
            Ok(())
        },
        write: |s| Ok(Some(s.host.to_string().into())),
        ..BASE
    },
    Row {
        name: "threads",
        long: "threads",
        value: "N",
        help: "Server threads.",
        ts: "Count",
        example: "2",
        read: |s, g| {
            s.config.threads = g.parse(values::threads)?;
            Ok(())
        },
        write: |s| Ok(Some(s.config.threads.into())),
        ..BASE
    },
    Row {
        name: "delay",
        long: "delay",
        value: "TIME",
        help: "Wait this long before each response: 5ms, 1s.",
        ts: "Duration",
        example: r#""5ms""#,
        read: |s, g| {
            s.config.delay = g.parse(values::duration_or_zero)?;
            Ok(())
        },
        write: |s| dur(s.config.delay),
        ..BASE
    },
    Row {
        name: "work",
        long: "work",
        value: "TIME",
        help: "Hold a server thread this long per request (it blocks, like a CPU-heavy or \
               synchronous handler): capacity is about --threads / TIME requests/s. 1ms, 200us.",
        ts: "Duration",
        example: r#""200us""#,
        read: |s, g| {
            s.config.work = g.parse(values::duration_or_zero)?;
            Ok(())
        },
        write: |s| dur(s.config.work),
        ..BASE
    },
    Row {
        name: "burn",
        long: "burn",
        value: "TIME",
        help: "Spin a server thread on the CPU this long per request (a CPU-heavy handler, as \
               --monitor sees one): capacity is about --threads / TIME requests/s where the \
               threads have cores. 100us, 1ms.",
        ts: "Duration",
        example: r#""100us""#,
        read: |s, g| {
            s.config.burn = g.parse(values::duration_or_zero)?;
            Ok(())
        },
        write: |s| dur(s.config.burn),
        ..BASE
    },
    Row {
        name: "bodySize",
        long: "body-size",
        value: "BYTES",
        help: "Response body size in bytes.",
        ts: "Count",
        example: "512",
        read: |s, g| {
            s.config.body_size = g.parse(values::size)?;
            Ok(())
        },
        write: |s| Ok(Some(s.config.body_size.into())),
        ..BASE
    },
    Row {
        name: "status",
        long: "status",
        value: "CODE",
        help: "Status code of normal responses.",
        ts: "number",
        example: "201",
        read: |s, g| {
            s.config.status = g.parse(values::status)?;
            Ok(())
        },
        write: |s| Ok(Some(s.config.status.into())),
        ..BASE
    },
    Row {
        name: "errorRate",
        long: "error-rate",
        value: "SHARE",
        help: "Share of responses answered with 500 instead: 1%, 0.5%, 0.01.",
        ts: "number | string",
        example: r#""1%""#,
        read: |s, g| {
            s.config.error_rate = g.parse(values::share)?;
            Ok(())
        },
        write: |s| Ok(Some(s.config.error_rate.into())),
        ..BASE
    },
    Row {
        name: "close",
        long: "close",
        form: Form::Switch,
        help: "Send Connection: close and close after every response.",
        example: "true",
        read: |s, g| {
            s.config.close = boolean(g)?;
            Ok(())
        },
        write: |s| Ok(s.config.close.then_some(true.into())),
        ..BASE
    },
    Row {
        name: "stall",
        long: "stall",
        value: "TIME",
        help: "Freeze every response for this long at --stall-at (a server stall, for open-loop \
               tests).",
        ts: "Duration",
        example: r#""500ms""#,
        rules: &[Rule::Requires("stallAt")],
        read: |s, g| {
            s.stall = Some(g.parse(values::duration)?);
            Ok(())
        },
        write: |s| Ok(s.stall.map(|d| duration_text(d).into())),
        ..BASE
    },
    Row {
        name: "stallAt",
        long: "stall-at",
        value: "TIME",
        help: "When the stall starts, counted from the server's start.",
        ts: "Duration",
        example: r#""1s""#,
        rules: &[Rule::Requires("stall")],
        read: |s, g| {
            s.stall_at = Some(g.parse(values::duration_or_zero)?);
            Ok(())
        },
        write: |s| Ok(s.stall_at.map(|d| duration_text(d).into())),
        ..BASE
    },
    Row {
        name: "chunked",
        long: "chunked",
        form: Form::Switch,
        help: "Send bodies with chunked transfer encoding.",
        example: "true",
        read: |s, g| {
            s.config.chunked = boolean(g)?;
            Ok(())
        },
        write: |s| Ok(s.config.chunked.then_some(true.into())),
        ..BASE
    },
    Row {
        name: "sse",
        long: "sse",
        value: "N",
        help: "Answer every request with a stream of N server-sent events (text/event-stream) \
               instead of a body, timed by --sse-first, --sse-interval and --sse-jitter.",
        ts: "number",
        example: "100",
        rules: &[Rule::Conflicts("chunked")],
        read: |s, g| {
            sse(s).events = g.parse(values::count)?;
            Ok(())
        },
        write: |s| Ok(s.config.sse.as_ref().map(|e| e.events.into())),
        ..BASE
    },
    Row {
        name: "sseFirst",
        long: "sse-first",
        value: "TIME",
        help: "--sse: wait this long after the head before the first event (a model's time to \
               first token). [default: 0]",
        ts: "Duration",
        example: r#""200ms""#,
        rules: &[Rule::Requires("sse")],
        read: |s, g| {
            sse(s).first = g.parse(values::duration_or_zero)?;
            Ok(())
        },
        write: |s| sse_time(s, |e| e.first),
        ..BASE
    },
    Row {
        name: "sseInterval",
        long: "sse-interval",
        value: "TIME",
        help: "--sse: the gap between events. [default: 10ms]",
        ts: "Duration",
        example: r#""20ms""#,
        rules: &[Rule::Requires("sse")],
        read: |s, g| {
            sse(s).interval = g.parse(values::duration_or_zero)?;
            Ok(())
        },
        write: |s| sse_time(s, |e| e.interval),
        ..BASE
    },
    Row {
        name: "sseJitter",
        long: "sse-jitter",
        value: "TIME",
        help: "--sse: move each gap by up to this much either way (uniformly). [default: 0]",
        ts: "Duration",
        example: r#""5ms""#,
        rules: &[Rule::Requires("sse")],
        read: |s, g| {
            sse(s).jitter = g.parse(values::duration_or_zero)?;
            Ok(())
        },
        write: |s| sse_time(s, |e| e.jitter),
        ..BASE
    },
    Row {
        name: "sseBody",
        long: "sse-body",
        value: "TEXT",
        help: "--sse: each event's data: this text, or openai for OpenAI's streaming shape as \
               each request asks for it: chat (messages) or text (prompt) completion chunks of \
               --sse-tokens tokens, max_tokens of them (--sse chunks when the request does not \
               say), a usage chunk when stream_options.include_usage asks, then data: [DONE]; \
               a prompt's tokens are its words. [default: the event's index]",
        ts: "string",
        example: r#""openai""#,
        rules: &[Rule::Requires("sse")],
        read: |s, g| {
            let text = g.string()?;
            sse(s).body = match text.as_str() {
                "openai" => pelt_server::SseBody::OpenAi,
                _ => pelt_server::SseBody::Text(text),
            };
            Ok(())
        },
        write: |s| {
            Ok(s.config.sse.as_ref().and_then(|e| match &e.body {
                pelt_server::SseBody::Index => None,
                pelt_server::SseBody::OpenAi => Some("openai".into()),
                pelt_server::SseBody::Text(t) => Some(t.clone().into()),
            }))
        },
        ..BASE
    },
    Row {
        name: "sseTokens",
        long: "sse-tokens",
        value: "N",
        help: "--sse-body openai: tokens in each chunk (the last one may have fewer). \
               [default: 1]",
        ts: "number",
        example: "4",
        rules: &[Rule::Requires("sse")],
        read: |s, g| {
            sse(s).tokens = g.parse(values::count)?;
            Ok(())
        },
        write: |s| {
            Ok(s.config
                .sse
                .as_ref()
                .filter(|e| e.tokens != 1)
                .map(|e| e.tokens.into()))
        },
        ..BASE
    },
    Row {
        name: "ssePrefill",
        long: "sse-prefill",
        value: "TIME",
        help: "--sse-body openai: add this to --sse-first for each token (word) of the \
               request's prompt, as a model's prefill grows with the prompt. [default: 0]",
        ts: "Duration",
        example: r#""200us""#,
        rules: &[Rule::Requires("sse")],
        read: |s, g| {
            sse(s).prefill = g.parse(values::duration_or_zero)?;
            Ok(())
        },
        write: |s| sse_time(s, |e| e.prefill),
        ..BASE
    },
    Row {
        name: "sseLog",
        long: "sse-log",
        value: "FILE",
        help: "--sse: write a JSON line per stream to FILE as it ends: its request's \
               arrival, first token and end (microseconds from the server's start; ttft_us, \
               e2e_us), its status, prompt and completion tokens, and whether the client went \
               before its end (cancelled): the server's own account, to check a client's \
               figures against.",
        example: r#""streams.jsonl""#,
        rules: &[Rule::Requires("sse")],
        read: |s, g| {
            sse(s).log = Some(g.path()?);
            Ok(())
        },
        write: |s| {
            let log = s.config.sse.as_ref().and_then(|e| e.log.as_ref());
            Ok(log.map(|p| Value::String(p.display().to_string())))
        },
        ..BASE
    },
    Row {
        name: "ws",
        long: "ws",
        form: Form::Switch,
        help: "Accept WebSocket upgrades (ws://, on any path) and echo each message, after \
               --delay; other requests are answered as ever.",
        example: "true",
        read: |s, g| {
            if boolean(g)? {
                s.config.ws.get_or_insert_with(Default::default);
            } else {
                s.config.ws = None;
            }
            Ok(())
        },
        write: |s| Ok(s.config.ws.as_ref().map(|_| true.into())),
        ..BASE
    },
    Row {
        name: "wsPush",
        long: "ws-push",
        value: "TIME",
        help: "--ws: instead of echoing, send the body as a text message every TIME on each \
               socket (a feed); messages received are counted.",
        ts: "Duration",
        example: r#""100ms""#,
        rules: &[Rule::Requires("ws")],
        read: |s, g| {
            let every = g.parse(values::duration)?;
            s.config.ws.get_or_insert_with(Default::default).push = Some(every);
            Ok(())
        },
        write: |s| {
            Ok(s.config
                .ws
                .as_ref()
                .and_then(|w| w.push)
                .map(|d| duration_text(d).into()))
        },
        ..BASE
    },
    Row {
        name: "tls",
        long: "tls",
        form: Form::Switch,
        help: "Serve HTTPS. Without --cert/--key, with a fresh self-signed certificate for \
               localhost, 127.0.0.1 and ::1 (pelt serve writes it to the file its second line \
               names, for a client's --cacert).",
        example: "true",
        read: |s, g| {
            s.tls = boolean(g)?;
            Ok(())
        },
        write: |s| Ok(s.tls.then_some(true.into())),
        ..BASE
    },
    Row {
        name: "cert",
        long: "cert",
        value: "FILE",
        help: "Serve HTTPS with this PEM certificate chain (needs --key).",
        example: r#""cert.pem""#,
        rules: &[Rule::Requires("key")],
        read: |s, g| {
            s.cert = Some(g.path()?);
            Ok(())
        },
        write: |s| path(&s.cert),
        ..BASE
    },
    Row {
        name: "key",
        long: "key",
        value: "FILE",
        help: "The PEM private key of --cert.",
        example: r#""key.pem""#,
        rules: &[Rule::Requires("cert")],
        read: |s, g| {
            s.key = Some(g.path()?);
            Ok(())
        },
        write: |s| path(&s.key),
        ..BASE
    },
    Row {
        name: "h2",
        long: "h2",
        form: Form::Switch,
        help: "Also serve HTTP/2: h2c with prior knowledge on http, ALPN h2 with --tls.",
        example: "true",
        read: |s, g| {
            s.config.h2 = boolean(g)?;
            Ok(())
        },
        write: |s| Ok(s.config.h2.then_some(true.into())),
        ..BASE
    },
    Row {
        name: "maxStreams",
        long: "max-streams",
        value: "N",
        help: "HTTP/2: allow this many concurrent streams per connection \
               (SETTINGS_MAX_CONCURRENT_STREAMS).",
        ts: "Count",
        example: "100",
        rules: &[Rule::Requires("h2")],
        read: |s, g| {
            s.max_streams = g.parse(max_streams)?;
            Ok(())
        },
        write: |s| Ok(Some(s.max_streams.into())),
        ..BASE
    },
    Row {
        name: "maxRequests",
        long: "max-requests",
        value: "N",
        help: "End each connection after N requests (HTTP/1.1: Connection: close; HTTP/2: \
               GOAWAY), as nginx's keepalive_requests.",
        ts: "Count",
        example: "100",
        read: |s, g| {
            s.config.max_requests = Some(g.parse(values::count)?);
            Ok(())
        },
        write: |s| Ok(s.config.max_requests.map(Value::from)),
        ..BASE
    },
];
