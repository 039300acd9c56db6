//! WebSocket on the built-in server (`pelt serve --ws`): the upgrade answered on hyper, then
//! tungstenite's server side on the upgraded connection, echoing each message (after the
//! server's `--delay`) or pushing one every interval; counts of sockets and messages.

use crate::{State, WsConfig};
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_PROTOCOL, UPGRADE,
};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// What the server's WebSocket side counted.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    upgrades: AtomicU64,
    open: AtomicU64,
    received: AtomicU64,
    sent: AtomicU64,
}

/// A snapshot of the WebSocket counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WsCounts {
    /// Upgrades accepted.
    pub upgrades: u64,
    /// Sockets open now.
    pub open: u64,
    /// Data messages received.
    pub received: u64,
    /// Data messages sent (echoes and pushes).
    pub sent: u64,
}

impl Counts {
    pub(crate) fn snapshot(&self) -> WsCounts {
        WsCounts {
            upgrades: self.upgrades.load(Ordering::Relaxed),
            open: self.open.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
        }
    }
}

/// The request asks for a WebSocket upgrade.
pub(crate) fn wants_upgrade(req: &Request<Incoming>) -> bool {
    let has = |name, token: &str| {
        req.headers().get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    has(UPGRADE, "websocket") && has(CONNECTION, "upgrade")
}

/// Answers an upgrade: 101 with the accept key (and the first subprotocol offered, if any),
/// then serves the socket on its own task; 400 without a key or version 13.
pub(crate) fn upgrade<B>(
    mut req: Request<Incoming>,
    state: Arc<State>,
    config: WsConfig,
    empty: B,
) -> Response<B> {
    let mut resp = Response::new(empty);
    let headers = req.headers();
    let version_ok = headers
        .get("sec-websocket-version")
        .is_some_and(|v| v.as_bytes() == b"13");
    let Some(key) = headers.get("sec-websocket-key").filter(|_| version_ok) else {
        *resp.status_mut() = StatusCode::BAD_REQUEST;
        return resp;
    };
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let protocol = headers
        .get(SEC_WEBSOCKET_PROTOCOL)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').map(str::trim).find(|p| !p.is_empty()))
        .and_then(|p| HeaderValue::from_str(p).ok());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(
        SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).expect("base64 is a header value"),
    );
    if let Some(p) = protocol {
        h.insert(SEC_WEBSOCKET_PROTOCOL, p);
    }
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let socket =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        let counts = &state.ws;
        counts.upgrades.fetch_add(1, Ordering::Relaxed);
        counts.open.fetch_add(1, Ordering::Relaxed);
        serve(socket, &state, config).await;
        counts.open.fetch_sub(1, Ordering::Relaxed);
    });
    resp
}

/// Echoes (or pushes) until the client closes or the connection ends.
async fn serve<S>(mut socket: WebSocketStream<S>, state: &State, config: WsConfig)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let counts = &state.ws;
    let delay = state.config.delay;
    let mut push = config.push.map(|every| {
        let mut t = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    loop {
        let tick = async {
            match push.as_mut() {
                Some(t) => {
                    t.tick().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            msg = socket.next() => {
                let msg = match msg {
                    Some(Ok(m)) => m,
                    // The client closed (tungstenite answered its close) or the socket ended.
                    _ => return,
                };
                if !(msg.is_text() || msg.is_binary()) {
                    // Pings are answered by tungstenite at the next write or flush.
                    if socket.flush().await.is_err() {
                        return;
                    }
                    continue;
                }
                counts.received.fetch_add(1, Ordering::Relaxed);
                if push.is_some() {
                    continue;
                }
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if socket.send(msg).await.is_err() {
                    return;
                }
                counts.sent.fetch_add(1, Ordering::Relaxed);
            }
            _ = tick => {
                let text = String::from_utf8_lossy(&state.body).into_owned();
                if socket.send(Message::text(text)).await.is_err() {
                    return;
                }
                counts.sent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
