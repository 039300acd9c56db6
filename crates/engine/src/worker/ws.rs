//! WebSocket on a connection: the upgrade written when the socket is up (over TLS, after its
//! handshake), messages written as masked frames once it is accepted, the server's frames
//! decoded as they come (each message that completes answers the oldest one awaiting a reply;
//! pings answered; a close frame answered with one), pings sent on `--ws-ping`, and the close
//! handshake at the run's end.
//!
//! A message is a request and its reply the response: the same slots, the same ledger, so
//! closed and open loop, `-n`, the timeline and every report work as for HTTP. Replies are
//! matched to messages in order per socket (as an echo server answers); with `--ws-no-reply`
//! a message is done when written and every message received is a push. Without a message to
//! send the protocol `holds`: each connection connects and upgrades at once and keeps its
//! socket, reconnecting if the server ends it.

use super::*;
use crate::template::Render;
use crate::WebSocket;
use pelt_codec::ws::{
    self, Decoder, HandshakeError, HandshakeReader, Opcode, Upgraded, WsError, WsEvent,
};

/// The WebSocket protocol: the run's settings and the masks' generator.
pub(super) struct Ws<'a> {
    ws: &'a WebSocket,
    rng: fastrand::Rng,
    /// A templated message, rendered (reused: nothing allocated per message).
    message: Vec<u8>,
}

impl<'a> Ws<'a> {
    pub(super) fn new(ws: &'a WebSocket, worker: usize) -> Ws<'a> {
        Ws {
            ws,
            rng: fastrand::Rng::with_seed(0x5745_4253_4f43_4b45 ^ worker as u64),
            message: Vec::new(),
        }
    }
}

/// Where a socket stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// No upgrade written yet (no socket, or the transport's handshake is under way).
    #[default]
    Idle,
    /// The upgrade was written at `began`; its answer must come by `by`.
    Upgrading { began: Instant, by: Instant },
    /// Upgraded: messages flow.
    Open,
    /// A close frame went (the server's answered, or the run's end): the server should close
    /// the TCP connection by `by`, else pelt does.
    Closing { by: Instant },
}

/// One WebSocket connection's state.
#[derive(Default)]
pub(super) struct WsConn {
    state: State,
    /// The accept value this socket's key calls for.
    accept: [u8; 28],
    reader: HandshakeReader,
    decoder: Decoder,
    /// Bytes not handed to the transport yet: the upgrade, frames.
    out: Vec<u8>,
    /// `--ws-ping`: when the next ping goes.
    next_ping: Option<Instant>,
}

/// A mask for one frame (RFC 6455 §5.3: unpredictable; a fast generator is enough for a
/// load generator's traffic).
#[inline]
fn mask(rng: &mut fastrand::Rng) -> [u8; 4] {
    rng.u32(..).to_ne_bytes()
}

/// What an upgrade failure is.
fn upgrade_error(e: &HandshakeError) -> ErrorKind {
    match e {
        HandshakeError::Malformed(_) => ErrorKind::NotHttp,
        _ => ErrorKind::Upgrade,
    }
}

/// What a frame error is.
fn frame_error(e: &WsError) -> ErrorKind {
    match e {
        WsError::TooBig { .. } => ErrorKind::WsTooBig,
        WsError::Utf8 => ErrorKind::WsUtf8,
        _ => ErrorKind::WsProtocol,
    }
}

type W<'w, 'a, I, T, S> = Worker<'w, I, Ws<'a>, T, S>;

impl<'a> Protocol for Ws<'a> {
    type Stream = ();
    type Conn = WsConn;
    const MULTIPLEXED: bool = false;

    fn reset(conn: &mut WsConn, config: &Config) {
        conn.state = State::Idle;
        conn.reader.reset();
        let max = config
            .websocket()
            .map_or(ws::DEFAULT_MAX_MESSAGE, |w| w.max_message);
        conn.decoder = Decoder::with_max_message(max);
        conn.out.clear();
        conn.next_ping = None;
    }

    fn holds(config: &Config) -> bool {
        config.websocket().is_some_and(|w| w.messages.is_empty())
    }

    #[inline]
    fn writing(conn: &WsConn) -> bool {
        !conn.out.is_empty()
    }

    /// Messages wait on a socket until it is upgraded (their time counts); none after a close.
    #[inline]
    fn room<I: Io, T: Transport, S: Source>(w: &W<'_, 'a, I, T, S>, i: usize) -> usize {
        let conn = &w.conns[i];
        match conn.proto.state {
            State::Closing { .. } => 0,
            _ if w.proto.ws.messages.is_empty() => 0,
            _ => conn.slots.free(),
        }
    }

    /// Writes the upgrade with a fresh key.
    fn start(
        conn: &mut Conn<Self>,
        _alpn: Option<&[u8]>,
        config: &Config,
        now: Instant,
    ) -> Result<(), AfterRead> {
        let ws = config.websocket().expect("a WebSocket run");
        let mut nonce = [0u8; 16];
        fastrand::fill(&mut nonce);
        let key = ws::key(nonce);
        let c = &mut conn.proto;
        c.accept = ws::accept(&key);
        ws.handshake.write(&key, &mut c.out);
        c.state = State::Upgrading {
            began: now,
            by: now + config.connect_timeout,
        };
        Ok(())
    }

    /// Frames the messages taken since (once upgraded), and hands what waits to the
    /// transport.
    #[inline]
    fn write<I: Io, T: Transport, S: Source>(w: &mut W<'_, 'a, I, T, S>, i: usize, now: Instant) {
        let conn = &mut w.conns[i];
        if conn.proto.state == State::Open && conn.unwritten > 0 {
            let n = conn.unwritten;
            conn.slots.mark_sent(n, now);
            conn.unwritten = 0;
            let ws = w.proto.ws;
            let opcode = if ws.binary {
                Opcode::Binary
            } else {
                Opcode::Text
            };
            // A templated message (`{{seq}}`, ...) is rendered per message, its body alone.
            let templated = w.config.targets().filter(|s| s.has_templates());
            for k in conn.slots.len - n..conn.slots.len {
                let slot = *conn.slots.get_mut(k);
                let rendered = templated
                    .and_then(|set| Some((set, set.template(slot.target as usize)?)))
                    .map(|(set, template)| {
                        w.proto.message.clear();
                        template.render_body(
                            &mut w.proto.message,
                            &mut Render {
                                seq: slot.seq,
                                rng: &mut w.values,
                                lines: set.lines(),
                                vars: &[],
                                cookie: "",
                            },
                        );
                        &w.proto.message[..]
                    });
                let payload = rendered.unwrap_or_else(|| {
                    let t = slot.target as usize;
                    &ws.messages[if t < ws.messages.len() { t } else { 0 }]
                });
                let m = mask(&mut w.proto.rng);
                ws::encode(&mut conn.proto.out, opcode, payload, m);
            }
            // `--ws-no-reply`: each message is done when handed to the socket.
            if !ws.expect_reply {
                while let Some(slot) = conn.slots.pop() {
                    let times = Times {
                        due: slot.due,
                        sent: slot.sent,
                        first: now,
                        done: now,
                    };
                    w.ledger
                        .response(slot.warm, slot.target, slot.seq, 101, times);
                }
            }
        }
        send(w, i, now);
    }

    fn receive(
        conn: &mut Conn<Self>,
        ledger: &mut Ledger,
        config: &Config,
        data: &[u8],
        arrived: Option<Instant>,
        now: Instant,
        _sending: bool,
    ) -> AfterRead {
        let at = arrived.unwrap_or(now);
        let mut data = data;
        let ws = config.websocket().expect("a WebSocket run");
        if let State::Upgrading { began, .. } = conn.proto.state {
            let c = &mut conn.proto;
            match c.reader.receive(data, &c.accept, &ws.protocols) {
                Ok(Upgraded::Partial) => return AfterRead::Keep,
                Ok(Upgraded::Done { used, .. }) => {
                    c.state = State::Open;
                    c.next_ping = ws.ping.map(|every| now + every);
                    ledger.upgraded(began, at);
                    data = &data[used..];
                }
                Err(e) => return AfterRead::Fail(upgrade_error(&e), e.to_string()),
            }
        }
        if data.is_empty() {
            return AfterRead::Keep;
        }
        if matches!(conn.proto.state, State::Idle) {
            return AfterRead::Fail(
                ErrorKind::Protocol,
                format!("{} bytes arrived before the upgrade was sent", data.len()),
            );
        }
        let Conn {
            slots,
            proto,
            unwritten,
            ..
        } = conn;
        // Messages still waiting to be written (behind the upgrade) await no reply yet: a
        // message that comes first (a server's welcome) is a push.
        let unwritten = *unwritten;
        let WsConn {
            decoder,
            out,
            state,
            ..
        } = proto;
        let decoded = decoder.receive(data, &mut |event| match event {
            WsEvent::Data(_) if slots.len > unwritten => slots.first_byte(at),
            WsEvent::Data(_) => {}
            WsEvent::Message { len, .. } => {
                let w = ledger.websocket();
                w.received += 1;
                w.received_bytes += len;
                match (slots.len > unwritten).then(|| slots.pop()).flatten() {
                    Some(slot) => {
                        let times = Times {
                            due: slot.due,
                            sent: slot.sent,
                            first: slot.first.unwrap_or(at),
                            done: at,
                        };
                        ledger.response(slot.warm, slot.target, slot.seq, 101, times);
                    }
                    None => ledger.websocket().pushed += 1,
                }
            }
            WsEvent::Ping(payload) => {
                ledger.websocket().pings_received += 1;
                ws::encode(out, Opcode::Pong, payload, fastrand::u32(..).to_ne_bytes());
            }
            WsEvent::Pong(_) => ledger.websocket().pongs += 1,
            WsEvent::Close { code, .. } => {
                let w = ledger.websocket();
                *w.closes.entry(code.unwrap_or(1005)).or_default() += 1;
                if !matches!(state, State::Closing { .. }) {
                    // The server ends the socket: answer with its code, then it closes TCP.
                    w.drops += 1;
                    ws::encode_close(
                        out,
                        code.unwrap_or(1000),
                        b"",
                        fastrand::u32(..).to_ne_bytes(),
                    );
                    *state = State::Closing {
                        by: now + config.timeout,
                    };
                }
            }
        });
        match decoded {
            Ok(()) => AfterRead::Keep,
            Err(e) => AfterRead::Fail(frame_error(&e), e.to_string()),
        }
    }

    fn on_eof<I: Io, T: Transport, S: Source>(w: &mut W<'_, 'a, I, T, S>, i: usize, now: Instant) {
        match w.conns[i].proto.state {
            State::Closing { .. } => {
                // The close handshake's end; messages still awaiting replies went unanswered.
                w.fail_all(i, ErrorKind::Closed, now, || {
                    "the server closed the socket with messages unanswered".to_string()
                });
                w.close(i);
                w.refill(i, now);
            }
            State::Open => {
                w.ledger.websocket().drops += 1;
                w.fail(i, ErrorKind::Closed, now, || {
                    "the server closed the connection without a close frame".to_string()
                });
            }
            State::Idle | State::Upgrading { .. } => {
                w.fail(i, ErrorKind::Closed, now, || {
                    "the server closed the connection before the upgrade's answer".to_string()
                });
            }
        }
    }

    /// The upgrade's deadline, the close handshake's, the oldest message's `--timeout`, and
    /// pings due.
    fn expire<I: Io, T: Transport, S: Source>(
        w: &mut W<'_, 'a, I, T, S>,
        i: usize,
        now: Instant,
    ) -> Option<Instant> {
        let t = w.config.timeout;
        match w.conns[i].proto.state {
            State::Upgrading { by, .. } if now >= by => {
                let ct = w.config.connect_timeout;
                w.fail(i, ErrorKind::Timeout, now, || {
                    format!("no answer to the upgrade within {ct:?}")
                });
                None
            }
            State::Closing { by } if now >= by => {
                w.fail_all(i, ErrorKind::Closed, now, || {
                    "the socket closed with messages unanswered".to_string()
                });
                w.close(i);
                w.refill(i, now);
                None
            }
            State::Upgrading { by, .. } | State::Closing { by } => Some(by),
            State::Open => {
                let reply_by = w.conns[i].slots.front().map(|front| front.sent + t);
                if reply_by.is_some_and(|by| now >= by) {
                    w.fail(i, ErrorKind::Timeout, now, || {
                        format!("no reply within {t:?}")
                    });
                    return None;
                }
                let conn = &mut w.conns[i];
                if let (Some(at), Some(every)) = (conn.proto.next_ping, w.proto.ws.ping) {
                    if now >= at {
                        conn.proto.next_ping = Some(now + every);
                        ws::encode(
                            &mut conn.proto.out,
                            Opcode::Ping,
                            b"pelt",
                            mask(&mut w.proto.rng),
                        );
                        w.ledger.websocket().pings_sent += 1;
                        send(w, i, now);
                    }
                }
                let ping = w.conns[i].proto.next_ping;
                [reply_by, ping].into_iter().flatten().min()
            }
            _ => None,
        }
    }

    /// The run is over: each upgraded socket is counted as held and sent a close frame (1000),
    /// best effort (the worker does not wait for the server's).
    fn at_end<I: Io, T: Transport, S: Source>(w: &mut W<'_, 'a, I, T, S>, now: Instant) {
        for i in 0..w.conns.len() {
            if w.conns[i].proto.state != State::Open {
                continue;
            }
            w.ledger.websocket().held += 1;
            let out = &mut w.conns[i].proto.out;
            ws::encode_close(out, 1000, b"", mask(&mut w.proto.rng));
            send(w, i, now);
        }
        w.submit_and_drop();
    }
}

/// Hands the bytes waiting on connection `i` to the transport.
#[inline]
fn send<I: Io, T: Transport, S: Source>(w: &mut W<'_, '_, I, T, S>, i: usize, now: Instant) {
    if w.conns[i].proto.out.is_empty() {
        return;
    }
    let out = &mut w.conns[i].proto.out;
    if let Err(e) = w.transport.send_buf(&mut w.io, &mut w.ledger, i, out) {
        w.fail(i, errno_kind(e, false), now, || format!("write: {e}"));
    }
}
