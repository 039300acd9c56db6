//! The control channel between a fleet's coordinator and its agents: one JSON object per line
//! over TCP, each side proving it knows the shared token before anything else is believed.
//!
//! Authentication is a challenge and response with HMAC-SHA256 (ring's): each side sends a
//! fresh random nonce and proves the token over both nonces, with a different label per side,
//! so the token never crosses the wire and a recorded proof is good for nothing later. The
//! agent checks the coordinator too: an agent runs whatever load it is handed, so it takes
//! orders only from a coordinator that knows the token. The channel is not encrypted; run it
//! on the cluster's own network (the README says so).

use pelt_stats::{Report, TimelinePoint};
use ring::hmac;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;

/// The control protocol's version: a coordinator refuses an agent that speaks another.
pub const PROTOCOL: u32 = 1;

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
pub fn send<T: Serialize>(stream: &mut impl Write, message: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    stream.flush()
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

/// A connection's reading side: whole lines, each at most [`MAX_MESSAGE`] bytes.
pub struct Reader {
    inner: BufReader<TcpStream>,
    line: Vec<u8>,
}

impl Reader {
    pub fn new(stream: TcpStream) -> Reader {
        Reader {
            inner: BufReader::new(stream),
            line: Vec::new(),
        }
    }

    /// The next message. A read timeout on the stream ends it as [`ReadError::Silent`] (a
    /// partial line read meanwhile is kept for the next call).
    pub fn read<T: for<'de> Deserialize<'de>>(&mut self) -> Result<T, ReadError> {
        loop {
            let room = MAX_MESSAGE.saturating_sub(self.line.len() as u64);
            let n = match (&mut self.inner)
                .take(room)
                .read_until(b'\n', &mut self.line)
            {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ReadError::Silent)
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
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
            };
            if self.line.last() == Some(&b'\n') {
                let parsed =
                    serde_json::from_slice(&self.line).map_err(|e| ReadError::Bad(format!("{e}")));
                self.line.clear();
                return parsed;
            }
            if n == 0 && self.line.is_empty() {
                return Err(ReadError::Closed);
            }
            if n == 0 {
                self.line.clear();
                return Err(ReadError::Bad(
                    "the connection closed within a message".into(),
                ));
            }
            if self.line.len() as u64 >= MAX_MESSAGE {
                return Err(ReadError::Bad(format!(
                    "a message longer than {} MiB",
                    MAX_MESSAGE >> 20
                )));
            }
        }
    }

    pub fn stream(&self) -> &TcpStream {
        self.inner.get_ref()
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

    /// The proof of `side` (`agent` or `coordinator`) over the two nonces.
    fn proof(&self, side: &str, first: &str, second: &str) -> String {
        let message = format!("pelt-fleet {side}\n{first}\n{second}");
        hex(hmac::sign(&self.0, message.as_bytes()).as_ref())
    }

    /// Checks a proof in constant time.
    fn verify(&self, side: &str, first: &str, second: &str, proof: &str) -> bool {
        let message = format!("pelt-fleet {side}\n{first}\n{second}");
        let Some(tag) = unhex(proof) else {
            return false;
        };
        hmac::verify(&self.0, message.as_bytes(), &tag).is_ok()
    }

    /// The coordinator's proof, answering an agent's nonce with its own.
    pub fn coordinator_proof(&self, agent_nonce: &str, own_nonce: &str) -> String {
        self.proof("coordinator", agent_nonce, own_nonce)
    }

    pub fn check_coordinator(&self, agent_nonce: &str, coord_nonce: &str, proof: &str) -> bool {
        self.verify("coordinator", agent_nonce, coord_nonce, proof)
    }

    pub fn agent_proof(&self, coord_nonce: &str, own_nonce: &str) -> String {
        self.proof("agent", coord_nonce, own_nonce)
    }

    pub fn check_agent(&self, coord_nonce: &str, agent_nonce: &str, proof: &str) -> bool {
        self.verify("agent", coord_nonce, agent_nonce, proof)
    }

    /// A remote monitor's proof, answering a run's nonce with its own.
    pub fn monitor_proof(&self, run_nonce: &str, own_nonce: &str) -> String {
        self.proof("monitor", run_nonce, own_nonce)
    }

    pub fn check_monitor(&self, run_nonce: &str, monitor_nonce: &str, proof: &str) -> bool {
        self.verify("monitor", run_nonce, monitor_nonce, proof)
    }

    /// A run's proof to a remote monitor.
    pub fn run_proof(&self, monitor_nonce: &str, own_nonce: &str) -> String {
        self.proof("run", monitor_nonce, own_nonce)
    }

    pub fn check_run(&self, monitor_nonce: &str, run_nonce: &str, proof: &str) -> bool {
        self.verify("run", monitor_nonce, run_nonce, proof)
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
    fn proofs_hold_only_for_the_same_token_side_and_nonces() {
        let t = Token::new("a-token-of-enough-length").unwrap();
        let other = Token::new("another-token-entirely").unwrap();
        let (a, c) = (nonce(), nonce());
        assert_ne!(a, c);
        let p = t.coordinator_proof(&a, &c);
        assert!(t.check_coordinator(&a, &c, &p));
        assert!(!other.check_coordinator(&a, &c, &p));
        // An agent cannot replay the coordinator's proof as its own, nor swap the nonces.
        assert!(!t.check_agent(&a, &c, &p));
        assert!(!t.check_coordinator(&c, &a, &p));
        let q = t.agent_proof(&c, &a);
        assert!(t.check_agent(&c, &a, &q));
        assert!(!t.check_agent(&c, &nonce(), &q));
        for junk in ["", "zz", "0", &"0".repeat(64), &"ab".repeat(200)] {
            assert!(!t.check_agent(&c, &a, junk), "{junk}");
        }
    }

    #[test]
    fn a_second_with_its_detail_crosses_the_wire_whole() {
        let mut iv = pelt_stats::Interval::new(3);
        iv.record_response(503, 1_200);
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
        let (x, y) = (nonce(), nonce());
        assert!(b.check_agent(&x, &y, &a.agent_proof(&x, &y)));
    }

    #[test]
    fn messages_read_whole_and_junk_is_named_not_trusted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let mut r = Reader::new(s);
        send(&mut c, &ToAgent::Heartbeat).unwrap();
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
            .set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .unwrap();
        assert!(matches!(r.read::<ToAgent>(), Err(ReadError::Silent)));
        c.write_all(b"beat\"}\n{\"type\"").unwrap();
        assert!(matches!(r.read::<ToAgent>(), Ok(ToAgent::Heartbeat)));
        drop(c);
        r.stream().set_read_timeout(None).unwrap();
        assert!(
            matches!(r.read::<ToAgent>(), Err(ReadError::Bad(e)) if e.contains("closed within"))
        );
        assert!(matches!(r.read::<ToAgent>(), Err(ReadError::Closed)));
    }
}
