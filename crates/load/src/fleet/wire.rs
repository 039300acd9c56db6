//! The control channel between a fleet's coordinator and its agents: one JSON object per line
//! over TCP, each side proving it knows the shared token before anything else is believed.
//!
//! Authentication is a challenge and response with HMAC-SHA256 (ring's): each side sends a
//! fresh random nonce and proves the token over both nonces and the TLS session they travel
//! in ([`super::secure`]), with a different label per side, so the token never crosses the
//! wire, a recorded proof is good for nothing later, and a proof relayed by a machine in the
//! middle checks on neither side. The agent checks the coordinator too: an agent runs
//! whatever load it is handed, so it takes orders only from a coordinator that knows the
//! token.

pub use super::secure::Channel;
use pelt_stats::{Report, TimelinePoint};
use ring::hmac;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::net::TcpStream;
use std::path::Path;

/// The control protocol's version: a coordinator refuses an agent that speaks another (2: the
/// channel is TLS, the proofs bound to its session).
pub const PROTOCOL: u32 = 2;

/// The longest control message read (a finished run's result, timeline and histograms).
const MAX_MESSAGE: u64 = 64 << 20;

/// What an agent says to the coordinator.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromAgent {
    Hello {
        protocol: u32,
        version: String,
        rank: u32,
        /// The fleet size the agent was told (`None`: it was not).
        agents: Option<u32>,
        threads: usize,
        host: String,
        nonce: String,
    },
    Auth {
        proof: String,
    },
    /// Clock sync: the agent's wall clock when it sent this, microseconds since the epoch.
    Ping {
        sent_us: i64,
    },
    /// Joined: its clock less the coordinator's, and the round trip that was measured over.
    Ready {
        offset_us: i64,
        rtt_us: u64,
    },
    /// The run started at this instant of the coordinator's clock.
    Started {
        at_us: i64,
    },
    Second {
        point: Box<TimelinePoint>,
        /// The second's codes, error kinds, bytes and lag (the point does not carry them on
        /// the wire), for the coordinator's live metrics.
        #[serde(default)]
        detail: Box<pelt_stats::Detail>,
    },
    Heartbeat,
    Done {
        report: Box<Report>,
        /// It stopped early for a signal on its own machine (SIGTERM: an eviction, a node
        /// drain, a preemption; or Ctrl-C there), not because the coordinator stopped it.
        #[serde(default)]
        signalled: bool,
        /// With a script that has `done`: each of its threads' global values at their end
        /// (`pelt-script`'s JSON form), for `thread:get` in the coordinator's `done`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        threads: Vec<Value>,
    },
    /// It cannot run what it was given (the message says why).
    Failed {
        message: String,
    },
}

/// What the coordinator says to an agent.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToAgent {
    Challenge {
        nonce: String,
        proof: String,
    },
    Pong {
        sent_us: i64,
        at_us: i64,
    },
    Refused {
        reason: String,
    },
    /// The run: the options (`crate::options`, files inlined), this agent's workers within
    /// the fleet's, and the start instant on the coordinator's clock.
    Run {
        options: Map<String, Value>,
        threads: usize,
        first: usize,
        workers: usize,
        start_us: i64,
    },
    Heartbeat,
    Abort {
        reason: String,
    },
    /// A change made on the coordinator's live page (`--dashboard`), for every agent at the
    /// same second of the run.
    Change {
        change: pelt_stats::Change,
    },
}

/// What a run says to a remote monitor (`pelt monitor` on the server's host).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToMonitor {
    Hello {
        protocol: u32,
        version: String,
        nonce: String,
    },
    Auth {
        proof: String,
    },
    /// The run starts now: sample once a second from here, sample k covering second k.
    Start,
    /// The run is over: one last sample for the last (shorter) second, then the session ends.
    Stop,
}

/// What a remote monitor says to a run.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromMonitor {
    /// Its proof of the token over both nonces, and what it watches on its host.
    Challenge {
        nonce: String,
        proof: String,
        host: String,
        watching: String,
    },
    Refused {
        reason: String,
    },
    /// Second `second`'s sample of its host and the processes it watches (`pelt` left empty).
    Sample {
        second: u64,
        sample: Box<pelt_stats::ResourceSample>,
    },
}

/// Now on this machine's wall clock, microseconds since the Unix epoch.
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Writes one message as one line.
pub fn send<T: Serialize>(channel: &Channel, message: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    channel.write_all(&line)
}

/// Why no message could be read.
#[derive(Debug)]
pub enum ReadError {
    /// The peer closed the connection.
    Closed,
    /// Nothing came within the read timeout.
    Silent,
    /// The connection failed.
    Io(std::io::Error),
    /// A line came that is not a message of the protocol (never acted on).
    Bad(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Closed => f.write_str("closed the connection"),
            ReadError::Silent => f.write_str("went silent"),
            ReadError::Io(e) => write!(f, "connection failed: {e}"),
            ReadError::Bad(e) => write!(f, "sent a message that does not parse ({e})"),
        }
    }
}

/// A channel's reading side: whole lines, each at most [`MAX_MESSAGE`] bytes.
pub struct Reader {
    channel: Channel,
    /// Decrypted, not yet taken.
    plain: Vec<u8>,
    /// The message read so far.
    line: Vec<u8>,
}

impl Reader {
    pub fn new(channel: Channel) -> Reader {
        Reader {
            channel,
            plain: Vec::new(),
            line: Vec::new(),
        }
    }

    /// The next message. A read timeout on the stream ends it as [`ReadError::Silent`] (a
    /// partial line read meanwhile is kept for the next call).
    pub fn read<T: for<'de> Deserialize<'de>>(&mut self) -> Result<T, ReadError> {
        loop {
            if let Some(end) = self.plain.iter().position(|&b| b == b'\n') {
                self.line.extend(self.plain.drain(..=end));
                let parsed =
                    serde_json::from_slice(&self.line).map_err(|e| ReadError::Bad(format!("{e}")));
                self.line.clear();
                return parsed;
            }
            self.line.append(&mut self.plain);
            if self.line.len() as u64 >= MAX_MESSAGE {
                self.line.clear();
                return Err(ReadError::Bad(format!(
                    "a message longer than {} MiB",
                    MAX_MESSAGE >> 20
                )));
            }
            match self.channel.receive(&mut self.plain) {
                Ok(true) => {}
                // What came before the close is read first (the next call says closed).
                Ok(false) if !self.plain.is_empty() => {}
                Ok(false) if self.line.is_empty() => return Err(ReadError::Closed),
                Ok(false) => {
                    self.line.clear();
                    return Err(ReadError::Bad(
                        "the connection closed within a message".into(),
                    ));
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ReadError::Silent)
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // A peer that died with unread data resets rather than closes: gone either way.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    return Err(ReadError::Closed)
                }
                Err(e) => return Err(ReadError::Io(e)),
            }
        }
    }

    /// The connection underneath (for its timeouts).
    pub fn stream(&self) -> &TcpStream {
        self.channel.tcp()
    }

    /// The channel, to write on (clones write to the same connection).
    pub fn channel(&self) -> &Channel {
        &self.channel
    }
}

/// The fleet's shared secret.
#[derive(Clone)]
pub struct Token(hmac::Key);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// The shortest token accepted.
pub const MIN_TOKEN: usize = 16;

impl Token {
    /// A token from its text (surrounding whitespace, such as a file's last newline, is not
    /// part of it).
    pub fn new(text: &str) -> Result<Token, String> {
        let t = text.trim();
        if t.len() < MIN_TOKEN {
            return Err(format!(
                "the fleet token is {} characters; it needs at least {MIN_TOKEN} (make one with: \
                 head -c 32 /dev/urandom | base64)",
                t.len()
            ));
        }
        Ok(Token(hmac::Key::new(hmac::HMAC_SHA256, t.as_bytes())))
    }

    /// The token from the environment: the file `PELT_FLEET_TOKEN_FILE` names, else
    /// `PELT_FLEET_TOKEN` itself.
    pub fn from_env() -> Result<Token, String> {
        match (
            std::env::var_os("PELT_FLEET_TOKEN_FILE"),
            std::env::var("PELT_FLEET_TOKEN"),
        ) {
            (Some(path), _) => Token::from_file(Path::new(&path)),
            (None, Ok(text)) => Token::new(&text).map_err(|e| format!("PELT_FLEET_TOKEN: {e}")),
            (None, Err(_)) => Err("give --token-file PATH or set PELT_FLEET_TOKEN (make one \
                                   with: head -c 32 /dev/urandom | base64 > token)"
                .into()),
        }
    }

    /// The token in a file (a Kubernetes Secret mounted as one).
    pub fn from_file(path: &Path) -> Result<Token, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
        Token::new(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The proof of `side` over the TLS session (its exporter, [`Channel::session`]) and the
    /// two nonces: the other side's, then its own.
    pub fn proof(&self, side: Side, session: &str, theirs: &str, own: &str) -> String {
        let message = side.message(session, theirs, own);
        hex(hmac::sign(&self.0, message.as_bytes()).as_ref())
    }

    /// Checks, in constant time, `side`'s proof over the session, the nonce this end sent
    /// (`own`) and `side`'s (`theirs`).
    pub fn check(&self, side: Side, session: &str, own: &str, theirs: &str, proof: &str) -> bool {
        let message = side.message(session, own, theirs);
        let Some(tag) = unhex(proof) else {
            return false;
        };
        hmac::verify(&self.0, message.as_bytes(), &tag).is_ok()
    }
}

/// Who proves it knows the token: each side signs its own name, so a proof of one side never
/// passes as another's (a coordinator answers an agent, a remote monitor answers a run, and
/// each is answered back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Agent,
    Coordinator,
    Monitor,
    Run,
}

impl Side {
    fn message(self, session: &str, first: &str, second: &str) -> String {
        let name = match self {
            Side::Agent => "agent",
            Side::Coordinator => "coordinator",
            Side::Monitor => "monitor",
            Side::Run => "run",
        };
        format!("pelt-fleet {name}\n{session}\n{first}\n{second}")
    }
}

/// A fresh random nonce (32 bytes, hex).
pub fn nonce() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system's random source");
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_hold_only_for_the_same_token_side_session_and_nonces() {
        let t = Token::new("a-token-of-enough-length").unwrap();
        let other = Token::new("another-token-entirely").unwrap();
        let (a, c, s) = (nonce(), nonce(), nonce());
        assert_ne!(a, c);
        let p = t.proof(Side::Coordinator, &s, &a, &c);
        assert!(t.check(Side::Coordinator, &s, &a, &c, &p));
        assert!(!other.check(Side::Coordinator, &s, &a, &c, &p));
        // A proof made in one TLS session is worth nothing in another (a relay in the middle).
        assert!(!t.check(Side::Coordinator, &nonce(), &a, &c, &p));
        // An agent cannot replay the coordinator's proof as its own, nor swap the nonces.
        assert!(!t.check(Side::Agent, &s, &a, &c, &p));
        assert!(!t.check(Side::Coordinator, &s, &c, &a, &p));
        let q = t.proof(Side::Agent, &s, &c, &a);
        assert!(t.check(Side::Agent, &s, &c, &a, &q));
        assert!(!t.check(Side::Agent, &s, &c, &nonce(), &q));
        for junk in ["", "zz", "0", &"0".repeat(64), &"ab".repeat(200)] {
            assert!(!t.check(Side::Agent, &s, &c, &a, junk), "{junk}");
        }
    }

    #[test]
    fn a_second_with_its_detail_crosses_the_wire_whole() {
        let mut iv = pelt_stats::Interval::new(3);
        iv.record_response(503, 1_200, 900);
        iv.detail.codes.insert(503, 1);
        iv.detail.errors.insert("timeout".into(), 2);
        iv.detail.bytes_received = 77;
        let point = iv.point(1.0, false);
        let msg = FromAgent::Second {
            point: Box::new(point.clone()),
            detail: Box::new(point.detail.clone()),
        };
        let line = serde_json::to_string(&msg).unwrap();
        let Ok(FromAgent::Second { point: p, detail }) = serde_json::from_str(&line) else {
            panic!("{line}");
        };
        assert_eq!(*detail, iv.detail);
        assert_eq!((p.second, p.completed), (3, 1));
    }

    #[test]
    fn a_short_token_is_refused_and_whitespace_is_not_part_of_it() {
        let e = Token::new("  short\n").unwrap_err();
        assert!(
            e.contains("5 characters") && e.contains("at least 16"),
            "{e}"
        );
        let a = Token::new("0123456789abcdef\n").unwrap();
        let b = Token::new("0123456789abcdef").unwrap();
        let (x, y, s) = (nonce(), nonce(), nonce());
        assert!(b.check(Side::Agent, &s, &x, &y, &a.proof(Side::Agent, &s, &x, &y)));
    }

    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::Duration;

    /// Two ends of one channel over loopback: (the side that connected, the side that accepted).
    fn pair() -> (Channel, Channel) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || Channel::accept(l.accept().unwrap().0).unwrap());
        let client = Channel::connect(TcpStream::connect(addr).unwrap()).unwrap();
        (client, server.join().unwrap())
    }

    /// A relay between a client and `to`, handing on every byte (flipping the `flip`th of the
    /// client's, if given) and keeping a copy of both directions.
    fn relay(to: std::net::SocketAddr, flip: Option<usize>) -> (TcpStream, Arc<Mutex<Vec<u8>>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (inner, _) = l.accept().unwrap();
        let outer = TcpStream::connect(to).unwrap();
        for (mut from, mut into, flip) in [
            (inner.try_clone().unwrap(), outer.try_clone().unwrap(), flip),
            (outer, inner, None),
        ] {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let (mut buf, mut at) = ([0u8; 4096], 0usize);
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 {
                        let _ = into.shutdown(std::net::Shutdown::Write);
                        return;
                    }
                    if let Some(i) = flip.filter(|&i| (at..at + n).contains(&i)) {
                        buf[i - at] ^= 0x01;
                    }
                    at += n;
                    seen.lock().unwrap().extend_from_slice(&buf[..n]);
                    if into.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
        (client, seen)
    }

    use std::sync::{Arc, Mutex};

    #[test]
    fn both_ends_share_a_session_no_other_channel_has() {
        let (c, s) = pair();
        assert_eq!(c.session(), s.session());
        assert_eq!(c.session().len(), 64);
        let (c2, _) = pair();
        assert_ne!(c.session(), c2.session());
    }

    #[test]
    fn the_wire_carries_no_message_in_clear_and_a_changed_byte_is_refused() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let ch = Channel::accept(l.accept().unwrap().0).unwrap();
            let mut r = Reader::new(ch);
            (r.read::<ToAgent>(), r.read::<ToAgent>())
        });
        let (tcp, seen) = relay(to, None);
        let c = Channel::connect(tcp).unwrap();
        let secret = "Authorization: Bearer s3cr3t-header-value";
        send(
            &c,
            &ToAgent::Abort {
                reason: secret.into(),
            },
        )
        .unwrap();
        c.close();
        let (first, second) = server.join().unwrap();
        assert!(matches!(first, Ok(ToAgent::Abort { reason }) if reason == secret));
        assert!(matches!(second, Err(ReadError::Closed)), "{second:?}");
        let seen = seen.lock().unwrap();
        assert!(seen.len() > secret.len());
        let clear = |needle: &[u8]| seen.windows(needle.len()).any(|w| w == needle);
        assert!(
            !clear(b"s3cr3t") && !clear(b"abort"),
            "the relay read the message"
        );

        // One bit changed after the handshake: the record does not decrypt; nothing is read.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let ch = Channel::accept(l.accept().unwrap().0).unwrap();
            Reader::new(ch).read::<ToAgent>()
        });
        // The client's handshake is its ClientHello and Finished, well under 2 KiB.
        let (tcp, _) = relay(to, Some(2048 + 40));
        let c = Channel::connect(tcp).unwrap();
        send(
            &c,
            &ToAgent::Abort {
                reason: "x".repeat(4096),
            },
        )
        .unwrap();
        let got = server.join().unwrap();
        assert!(
            matches!(&got, Err(ReadError::Io(e)) if e.to_string().contains("TLS")),
            "{got:?}"
        );
    }

    #[test]
    fn a_peer_that_speaks_no_tls_is_refused_at_the_handshake() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut plain = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        plain
            .write_all(b"{\"type\":\"hello\",\"protocol\":1}\n")
            .unwrap();
        let e = Channel::accept(l.accept().unwrap().0).unwrap_err();
        assert!(e.to_string().contains("TLS handshake failed"), "{e}");
    }

    #[test]
    fn messages_read_whole_and_junk_is_named_not_trusted() {
        let (c, s) = pair();
        let mut r = Reader::new(s);
        send(&c, &ToAgent::Heartbeat).unwrap();
        c.write_all(b"{\"type\":\"abort\",\"reason\":\"x\"}\n{\"type\":\"run\"}\nnot json\n")
            .unwrap();
        assert!(matches!(r.read::<ToAgent>(), Ok(ToAgent::Heartbeat)));
        assert!(matches!(r.read::<ToAgent>(), Ok(ToAgent::Abort { reason }) if reason == "x"));
        assert!(
            matches!(r.read::<ToAgent>(), Err(ReadError::Bad(e)) if e.contains("missing field"))
        );
        assert!(matches!(r.read::<ToAgent>(), Err(ReadError::Bad(_))));
        // A message split across writes is read whole; a close inside one is named.
        c.write_all(b"{\"type\":\"heart").unwrap();
        r.stream()
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        assert!(matches!(r.read::<ToAgent>(), Err(ReadError::Silent)));
        c.write_all(b"beat\"}\n{\"type\"").unwrap();
        assert!(matches!(r.read::<ToAgent>(), Ok(ToAgent::Heartbeat)));
        c.close();
        r.stream().set_read_timeout(None).unwrap();
        assert!(
            matches!(r.read::<ToAgent>(), Err(ReadError::Bad(e)) if e.contains("closed within"))
        );
        assert!(matches!(r.read::<ToAgent>(), Err(ReadError::Closed)));
        // A message bigger than one TLS record (16 KiB) arrives whole.
        let (c, s) = pair();
        let mut r = Reader::new(s);
        let long = "y".repeat(200_000);
        let w = std::thread::spawn(move || send(&c, &ToAgent::Abort { reason: long }));
        assert!(
            matches!(r.read::<ToAgent>(), Ok(ToAgent::Abort { reason }) if reason.len() == 200_000)
        );
        w.join().unwrap().unwrap();
    }
}
