//! A live page's server (`pelt --dashboard`): the page, its events as they come (server-sent
//! events, each client first given the ones it missed), a state and a control endpoint in
//! JSON. On hyper, on a one-thread runtime of its own, like [`crate::TextEndpoint`]; the run
//! publishes from its main thread, once a second, and never waits on a client.
//!
//! Who may use it: with a token, every request carries it (`?token=` or `Authorization: Bearer`);
//! without one the caller binds only loopback. A control request must be a JSON POST whose
//! `Origin`, if any, is the page's own: a web page from another site cannot send one (a form
//! cannot send JSON, and a script's cross-origin JSON POST needs a preflight nobody answers).

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::Frame;
use hyper::{header, Method, Request, Response, StatusCode};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The control endpoint's answer to a JSON body: a status code and a JSON reply.
pub type Steer = Arc<dyn Fn(&[u8]) -> (u16, String) + Send + Sync>;

/// What a live page serves.
pub struct Page {
    /// The page itself (`GET /`).
    pub html: String,
    /// `GET /api/state`: JSON, made when asked.
    pub state: crate::Text,
    /// `POST /api/control`: a JSON body in, a JSON answer out.
    pub control: Steer,
    /// Every request must carry it (`None`: none needed).
    pub token: Option<String>,
}

/// Events kept for clients that connect late: a long run's last quarter of an hour of seconds.
const KEPT: usize = 1000;

/// The largest control request read.
const MAX_CONTROL_BODY: usize = 16 * 1024;

#[derive(Default)]
struct Events {
    /// The first event (the run's description): every client gets it.
    head: Option<Bytes>,
    /// The latest events, numbered from 1.
    kept: VecDeque<(u64, Bytes)>,
    last: u64,
    /// Clients that have written the last event (see [`LivePage::finish`]).
    caught_up: usize,
    clients: usize,
}

struct Shared {
    page: Page,
    events: Mutex<Events>,
    /// The number of the last event published.
    published: tokio::sync::watch::Sender<u64>,
}

/// A running live page; stops on [`LivePage::finish`] or when dropped.
pub struct LivePage {
    shared: Arc<Shared>,
    serving: crate::endpoint::Serving,
}

impl LivePage {
    /// Binds `addr` (an error such as "address in use" comes back here) and serves `page`.
    pub fn start(addr: SocketAddr, page: Page) -> std::io::Result<LivePage> {
        let shared = Arc::new(Shared {
            page,
            events: Mutex::new(Events::default()),
            published: tokio::sync::watch::channel(0).0,
        });
        let served = shared.clone();
        let serving = crate::endpoint::Serving::start(addr, "pelt-dashboard", move |req| {
            answer(req, served.clone())
        })?;
        Ok(LivePage { shared, serving })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.serving.addr
    }

    /// Sends event `name` with `json` to every client, now and to those that come later
    /// (the first event is always kept; then the last [`KEPT`]).
    pub fn publish(&self, name: &str, json: &str) {
        let event = sse(name, json);
        let mut e = lock(&self.shared.events);
        if e.head.is_none() {
            e.head = Some(event);
        } else {
            e.last += 1;
            let n = e.last;
            e.kept.push_back((n, event));
            if e.kept.len() > KEPT {
                e.kept.pop_front();
            }
        }
        e.caught_up = 0;
        let last = e.last;
        drop(e);
        self.shared.published.send_replace(last);
    }

    /// Publishes the last event, waits (at most `wait`) for every connected client to have
    /// been sent it, and stops.
    pub fn finish(mut self, name: &str, json: &str, wait: Duration) {
        self.publish(name, json);
        let until = std::time::Instant::now() + wait;
        while std::time::Instant::now() < until {
            let e = lock(&self.shared.events);
            if e.caught_up >= e.clients {
                break;
            }
            drop(e);
            std::thread::sleep(Duration::from_millis(10));
        }
        // Handed to the connections: give them a moment to reach the sockets.
        std::thread::sleep(Duration::from_millis(200).min(wait));
        self.serving.shutdown_now();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One server-sent event: its name and its data on one line (JSON has no raw newline).
fn sse(name: &str, json: &str) -> Bytes {
    let data = json.replace('\n', " ");
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

fn reply(status: StatusCode, kind: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed_unsync());
    *r.status_mut() = status;
    if let Ok(v) = header::HeaderValue::from_str(kind) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    r
}

fn json_error(status: StatusCode, message: &str) -> Response<Body> {
    let body = serde_json::json!({ "error": message });
    reply(status, "application/json", format!("{body}\n"))
}

/// Whether the request carries the page's token (or none is needed).
fn allowed(req: &Request<hyper::body::Incoming>, token: Option<&str>) -> bool {
    let Some(token) = token else {
        return true;
    };
    let in_query = req.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|kv| kv.strip_prefix("token=").is_some_and(|v| v == token))
    });
    let in_header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|v| v.trim() == token);
    in_query || in_header
}

/// A control request comes from the page's own origin (or from no page: curl sends none).
fn same_origin(req: &Request<hyper::body::Incoming>) -> bool {
    let Some(origin) = req.headers().get(header::ORIGIN) else {
        return true;
    };
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    let origin = origin.to_str().unwrap_or("");
    let origin_host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    host.is_some() && origin_host == host
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<Body>, Infallible> {
    if !allowed(&req, shared.page.token.as_deref()) {
        return Ok(json_error(
            StatusCode::UNAUTHORIZED,
            "this page needs the fleet's token: add ?token=... to its URL, or send \
             Authorization: Bearer ...",
        ));
    }
    let get = req.method() == Method::GET || req.method() == Method::HEAD;
    Ok(match (req.uri().path(), get) {
        ("/", true) => reply(
            StatusCode::OK,
            "text/html; charset=utf-8",
            shared.page.html.clone(),
        ),
        ("/events", true) => events(shared),
        // Browsers ask for one: none, and no error in the page's console.
        ("/favicon.ico", true) => reply(StatusCode::NO_CONTENT, "text/plain", ""),
        ("/api/state", true) => reply(StatusCode::OK, "application/json", (shared.page.state)()),
        ("/api/control", false) if req.method() == Method::POST => control(req, &shared).await,
        ("/api/control", _) => json_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "POST a JSON object, like {\"action\": \"rate\", \"value\": 3000}",
        ),
        (_, true) => reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found; the page is at /, its events at /events, its state at /api/state\n",
        ),
        _ => reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET only\n"),
    })
}

async fn control(req: Request<hyper::body::Incoming>, shared: &Shared) -> Response<Body> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return json_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the change as JSON (Content-Type: application/json)",
        );
    }
    if !same_origin(&req) {
        return json_error(
            StatusCode::FORBIDDEN,
            "a change comes from the page's own origin",
        );
    }
    let body = match Limited::new(req.into_body(), MAX_CONTROL_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => return json_error(StatusCode::PAYLOAD_TOO_LARGE, "the change is too long"),
    };
    let (status, text) = (shared.page.control)(&body);
    reply(
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        "application/json",
        text,
    )
}

/// One `GET /events` client: what it was sent so far.
struct Client {
    shared: Arc<Shared>,
    published: tokio::sync::watch::Receiver<u64>,
    head_sent: bool,
    /// The number of the last event it was sent.
    sent: u64,
}

impl Drop for Client {
    fn drop(&mut self) {
        lock(&self.shared.events).clients -= 1;
    }
}

impl Client {
    /// What it has not been sent yet (empty: nothing new).
    fn unsent(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut e = lock(&self.shared.events);
        if !self.head_sent {
            if let Some(h) = &e.head {
                out.extend_from_slice(h);
                self.head_sent = true;
            }
        }
        if self.head_sent {
            for (n, ev) in &e.kept {
                if *n > self.sent {
                    out.extend_from_slice(ev);
                }
            }
            if !out.is_empty() && self.sent < e.last {
                e.caught_up += 1;
            }
            self.sent = e.last;
        }
        out
    }
}

/// `GET /events`: the first event, the kept ones, then each as it is published.
fn events(shared: Arc<Shared>) -> Response<Body> {
    lock(&shared.events).clients += 1;
    let client = Client {
        published: shared.published.subscribe(),
        shared,
        head_sent: false,
        sent: 0,
    };
    let stream = futures_util::stream::unfold(client, |mut c| async move {
        loop {
            let out = c.unsent();
            if !out.is_empty() {
                let frame = Ok::<_, Infallible>(Frame::data(Bytes::from(out)));
                return Some((frame, c));
            }
            if c.published.changed().await.is_err() {
                return None;
            }
        }
    });
    let mut r = Response::new(BodyExt::boxed_unsync(StreamBody::new(stream)));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    r
}
