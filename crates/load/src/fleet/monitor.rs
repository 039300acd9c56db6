//! A remote monitor: `pelt monitor` on the server's host samples that host and the server's
//! processes each second and streams the samples to a run (`--monitor-remote HOST:PORT`) over
//! the fleet's channel: the same encryption and framing, the same token and challenge (with
//! labels of its own, so no proof of one kind passes for another), the same bounded silences.
//!
//! The run connects when it is prepared (a monitor that does not answer, or does not know the
//! token, is bad input before any traffic), says `start` when the load starts, and `stop` when
//! it ends; the monitor answers with one sample per second from its start, sample k covering
//! second k, and a last one for the last, shorter second. A monitor that goes silent or away
//! during the run is named in the result, and the run goes on without it.

use super::wire::{
    nonce, send, Channel, FromMonitor, ReadError, Reader, Side, ToMonitor, Token, PROTOCOL,
};
use crate::monitor::{Sampler, Samples, Watch};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a run gives a monitor to answer its connection and hello.
const ANSWER: Duration = Duration::from_secs(5);

/// How long a monitor waits for a run it has authenticated to start.
const START_WITHIN: Duration = Duration::from_secs(600);

/// A run's session with a remote monitor, authenticated and not started yet.
pub struct RemoteMonitor {
    /// The address it was reached at, as given.
    pub addr: String,
    /// Its host's name, and what it watches there ("nginx: 2 processes").
    pub host: String,
    pub watching: String,
    reader: Reader,
    writer: Channel,
}

impl std::fmt::Debug for RemoteMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteMonitor({} on {})", self.addr, self.host)
    }
}

impl RemoteMonitor {
    /// Reaches the monitor at `addr` and proves the token both ways; the error says why not
    /// in one line.
    pub fn connect(addr: &str, token: &Token) -> Result<RemoteMonitor, String> {
        let fail = |why: String| format!("the monitor at {addr} {why}");
        let addrs = addr
            .to_socket_addrs()
            .map_err(|e| fail(format!("cannot be resolved: {e}")))?;
        let mut last = String::from("has no address");
        let mut stream = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, ANSWER) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = format!("does not answer ({a}: {e})"),
            }
        }
        let tcp = stream.ok_or_else(|| fail(last))?;
        let io = |e: std::io::Error| fail(format!("failed: {e}"));
        let _ = tcp.set_nodelay(true);
        tcp.set_read_timeout(Some(ANSWER)).map_err(io)?;
        tcp.set_write_timeout(Some(ANSWER)).map_err(io)?;
        let writer = Channel::connect(tcp).map_err(io)?;
        let mut reader = Reader::new(writer.clone());
        let session = writer.session();
        let own = nonce();
        let hello = ToMonitor::Hello {
            protocol: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").into(),
            nonce: own.clone(),
        };
        send(&writer, &hello).map_err(io)?;
        match reader.read::<FromMonitor>() {
            Ok(FromMonitor::Challenge {
                nonce: theirs,
                proof,
                host,
                watching,
            }) => {
                if !token.check(Side::Monitor, session, &own, &theirs, &proof) {
                    return Err(fail(
                        "does not prove this run's fleet token: the tokens differ".into(),
                    ));
                }
                let proof = token.proof(Side::Run, session, &theirs, &own);
                send(&writer, &ToMonitor::Auth { proof }).map_err(io)?;
                Ok(RemoteMonitor {
                    addr: addr.to_string(),
                    host,
                    watching,
                    reader,
                    writer,
                })
            }
            Ok(FromMonitor::Refused { reason }) => Err(fail(format!("refused the run: {reason}"))),
            Ok(_) => Err(fail("did not answer the hello with a challenge".into())),
            Err(e) => Err(fail(e.to_string())),
        }
    }

    /// What the report says it watched: "nginx: 2 processes on web-1 (pelt monitor at ...)".
    pub fn describe(&self) -> String {
        format!(
            "{} on {} (pelt monitor at {})",
            self.watching, self.host, self.addr
        )
    }

    /// Starts the monitor and hands each sample that comes to `samples`, until the run's end
    /// (`ended`, then the last sample) or the monitor's loss; returns why it was lost, if it
    /// was, in a sentence that names it. `silence`: how long it may send nothing.
    pub fn follow(
        mut self,
        samples: &Samples,
        silence: Duration,
        ended: &std::sync::atomic::AtomicBool,
        writer: &Mutex<Option<Channel>>,
    ) -> Option<String> {
        use std::sync::atomic::Ordering;
        let started = Instant::now();
        let lost = |why: String| {
            Some(format!(
                "the monitor at {} {why} {:.0} s into the run; the server's resources stop there",
                self.addr,
                started.elapsed().as_secs_f64()
            ))
        };
        if let Err(e) = send(&self.writer, &ToMonitor::Start) {
            return lost(format!("failed ({e})"));
        }
        *writer.lock().unwrap_or_else(|e| e.into_inner()) = Some(self.writer.clone());
        let _ = self.reader.stream().set_read_timeout(Some(silence));
        loop {
            match self.reader.read::<FromMonitor>() {
                Ok(FromMonitor::Sample { second, sample }) => samples.put(second, *sample),
                Ok(_) => {}
                // The session ends after the last sample: the monitor closes it.
                Err(ReadError::Closed) if ended.load(Ordering::Relaxed) => return None,
                Err(e) => return lost(e.to_string()),
            }
        }
    }
}

/// Tells the monitor the run is over (it answers with the last sample, then closes).
pub fn stop_monitor(writer: &Mutex<Option<Channel>>) {
    if let Some(w) = writer.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        let _ = send(w, &ToMonitor::Stop);
    }
}

/// `pelt monitor`: takes runs on `listener`, one thread each, for as long as it lives;
/// `watch`: the server's processes on this host (`None`: the host alone). `log` says who came
/// and went.
pub fn serve(
    listener: TcpListener,
    watch: Option<Watch>,
    token: Token,
    log: &(dyn Fn(&str) + Sync),
) -> std::io::Result<()> {
    let host = crate::fleet::host_name();
    std::thread::scope(|s| {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let (watch, token, host) = (watch.clone(), token.clone(), host.clone());
            s.spawn(move || {
                let peer = conn
                    .peer_addr()
                    .map_or_else(|_| "?".to_string(), |a| a.to_string());
                match session(conn, watch, &token, &host) {
                    Ok(seconds) => log(&format!("run from {peer}: {seconds} samples sent")),
                    Err(why) => log(&format!("run from {peer}: {why}")),
                }
            });
        }
        Ok(())
    })
}

/// One run's session: the handshake, then a sample a second from its start to its stop.
fn session(
    conn: TcpStream,
    watch: Option<Watch>,
    token: &Token,
    host: &str,
) -> Result<u64, String> {
    let io = |e: std::io::Error| e.to_string();
    let _ = conn.set_nodelay(true);
    conn.set_read_timeout(Some(ANSWER)).map_err(io)?;
    conn.set_write_timeout(Some(ANSWER)).map_err(io)?;
    let writer = Channel::accept(conn).map_err(io)?;
    let mut reader = Reader::new(writer.clone());
    let session = writer.session();
    let theirs = match reader.read::<ToMonitor>().map_err(|e| e.to_string())? {
        ToMonitor::Hello {
            protocol, nonce, ..
        } if protocol == PROTOCOL => nonce,
        ToMonitor::Hello { protocol, .. } => {
            let reason = format!("it speaks protocol {protocol}; this monitor speaks {PROTOCOL}");
            let _ = send(
                &writer,
                &FromMonitor::Refused {
                    reason: reason.clone(),
                },
            );
            return Err(reason);
        }
        _ => return Err("it did not start with a hello".into()),
    };
    let watching = match &watch {
        Some(w) => w.check().unwrap_or_else(|why| why),
        None => "the host alone".into(),
    };
    let own = nonce();
    let challenge = FromMonitor::Challenge {
        proof: token.proof(Side::Monitor, session, &theirs, &own),
        nonce: own.clone(),
        host: host.to_string(),
        watching,
    };
    send(&writer, &challenge).map_err(io)?;
    match reader.read::<ToMonitor>().map_err(|e| e.to_string())? {
        ToMonitor::Auth { proof } if token.check(Side::Run, session, &own, &theirs, &proof) => {}
        _ => return Err("it does not know the fleet token".into()),
    }
    reader
        .stream()
        .set_read_timeout(Some(START_WITHIN))
        .map_err(io)?;
    match reader.read::<ToMonitor>().map_err(|e| e.to_string())? {
        ToMonitor::Start => {}
        _ => return Err("it did not start".into()),
    }
    let start = Instant::now();
    let mut sampler = Sampler::new(watch);
    for second in 0u64.. {
        let due = start + Duration::from_secs(second + 1);
        let wait = due.saturating_duration_since(Instant::now());
        let last = if wait.is_zero() {
            false
        } else {
            reader.stream().set_read_timeout(Some(wait)).map_err(io)?;
            match reader.read::<ToMonitor>() {
                Ok(ToMonitor::Stop) => true,
                Ok(_) | Err(ReadError::Silent) => false,
                Err(e) => return Err(format!("the run {e} after {second} samples")),
            }
        };
        if !last {
            // Woken before the second's end by something other than stop: wait it out.
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        let mut sample = sampler.sample();
        // The run samples pelt itself on its own host.
        sample.pelt = Default::default();
        let message = FromMonitor::Sample {
            second,
            sample: Box::new(sample),
        };
        send(&writer, &message).map_err(|e| format!("the run went away ({e})"))?;
        if last {
            return Ok(second + 1);
        }
    }
    unreachable!("the seconds run out")
}
