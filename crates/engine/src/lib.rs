//! pelt-engine: the load engine. Workers, connections, event loops and load models.
//!
//! [`run`] takes a validated [`Config`] (target address, the request bytes built once, limits)
//! and drives the load: one shared-nothing worker thread per core, each owning its connections,
//! its buffers and its [`pelt_stats::WorkerStats`]; no lock, channel or allocation per request.
//! When every worker has stopped, their stats are merged into one.
//!
//! ```no_run
//! use pelt_engine::{Config, run};
//! use std::sync::atomic::AtomicBool;
//! let addr = "127.0.0.1:8080".parse().unwrap();
//! let request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n".to_vec();
//! let cfg = Config { requests: Some(1000), duration: None, ..Config::new(addr, request) };
//! let result = run(&cfg, &AtomicBool::new(false));
//! assert_eq!(result.stats.sent, 1000);
//! ```
//!
//! Contracts: the engine never prints, never reads argv or the environment, never exits the
//! process. Errors from the server are data (counted by kind, the connection replaced), never
//! a reason to stop. Every request it starts ends in exactly one outcome: a response, an
//! error, or in flight when the run stopped, so
//! `sent == completed + errors + in_flight` holds for every run. `requests: Some(n)` sends
//! exactly `n` requests.

mod backend;
mod conn;
mod epoll;
mod model;

use pelt_stats::WorkerStats;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

pub use backend::IoBackend;

/// Connections when none are asked for (as oha and hey).
pub const DEFAULT_CONNECTIONS: usize = 50;
/// Run length when neither a duration nor a request count is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Whole-request timeout: from the first byte written to the last byte of the response.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connection establishment timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection waits before trying again after a failed connect (no busy loop
/// against a closed port).
pub const RECONNECT_BACKOFF: Duration = Duration::from_millis(50);
/// File descriptors pelt keeps for itself besides one per connection.
pub const RESERVED_FDS: u64 = 64;

/// Worker threads when none are asked for: the CPUs this process may run on.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Everything the engine needs, validated by the caller.
#[derive(Debug, Clone)]
pub struct Config {
    /// Resolved target address.
    pub addr: SocketAddr,
    /// The request, encoded once; every connection writes these bytes.
    pub request: Vec<u8>,
    /// The request is a HEAD request (its responses carry no body).
    pub head_request: bool,
    /// Keep connections open between requests (`false`: one request per connection).
    pub keep_alive: bool,
    /// Concurrent connections in total (spread over the threads).
    pub connections: usize,
    /// Worker threads (at most `connections` are used).
    pub threads: usize,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after exactly this many requests have ended.
    pub requests: Option<u64>,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Which I/O backend runs the workers.
    pub io: IoBackend,
}

impl Config {
    /// A config with the defaults for everything but the target and the request.
    pub fn new(addr: SocketAddr, request: Vec<u8>) -> Config {
        Config {
            addr,
            request,
            head_request: false,
            keep_alive: true,
            connections: DEFAULT_CONNECTIONS,
            threads: default_threads(),
            duration: Some(DEFAULT_DURATION),
            requests: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            io: IoBackend::Epoll,
        }
    }

    /// Worker threads that will actually run.
    pub fn effective_threads(&self) -> usize {
        self.threads.clamp(1, self.connections.max(1))
    }
}

/// What ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StopReason {
    /// Every request of the request-count limit ended.
    Requests,
    /// The duration elapsed.
    Duration,
    /// The caller's stop flag was set (Ctrl-C).
    Signal,
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Requests => "requests",
            StopReason::Duration => "duration",
            StopReason::Signal => "signal",
        }
    }
}

/// The merged outcome of a run.
#[derive(Debug)]
pub struct RunResult {
    pub stats: WorkerStats,
    /// From the start of the workers to the last one stopping.
    pub elapsed: Duration,
    pub stopped_by: StopReason,
    /// The backend that ran.
    pub io: IoBackend,
}

/// One worker's share of the run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WorkerPlan {
    pub connections: usize,
    /// Requests this worker may start (`None`: unlimited).
    pub budget: Option<u64>,
    pub end: Option<Instant>,
}

/// Splits `total` into `parts` shares that differ by at most one, larger shares first.
fn share(total: u64, parts: usize, i: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((i as u64) < total % parts)
}

/// Runs the load described by `config` until its duration, its request count, or `stop`.
pub fn run(config: &Config, stop: &AtomicBool) -> RunResult {
    let threads = config.effective_threads();
    let start = Instant::now();
    let end = config.duration.map(|d| start + d);
    let outcomes: Vec<(WorkerStats, StopReason)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let plan = WorkerPlan {
                    connections: share(config.connections as u64, threads, i) as usize,
                    budget: config.requests.map(|n| share(n, threads, i)),
                    end,
                };
                std::thread::Builder::new()
                    .name(format!("pelt-worker-{i}"))
                    .spawn_scoped(s, move || backend::run_worker(config, plan, stop))
                    .expect("spawning a worker thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect()
    });
    let elapsed = start.elapsed();
    let mut stats = WorkerStats::new();
    for (s, _) in &outcomes {
        stats.merge(s);
    }
    // The run ended for the most significant reason any worker saw.
    let stopped_by = outcomes
        .iter()
        .map(|&(_, r)| r)
        .max()
        .unwrap_or(StopReason::Requests);
    RunResult {
        stats,
        elapsed,
        stopped_by,
        io: config.io,
    }
}

/// The open-file limit is too low for the connections asked for, even after raising it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdLimitError {
    pub needed: u64,
    pub hard_limit: u64,
}

impl std::fmt::Display for FdLimitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} connections need about {} open files, but the hard limit is {}; raise it \
             (ulimit -Hn {} as root, or LimitNOFILE in a systemd unit) or use fewer connections",
            self.needed - RESERVED_FDS,
            self.needed,
            self.hard_limit,
            self.needed
        )
    }
}

impl std::error::Error for FdLimitError {}

/// Raises the soft open-file limit to the hard limit, and checks `connections` fit under it.
pub fn ensure_fd_limit(connections: usize) -> Result<(), FdLimitError> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let needed = connections as u64 + RESERVED_FDS;
    let mut lim = getrlimit(Resource::Nofile);
    let hard = lim.maximum.unwrap_or(u64::MAX);
    if lim.current.is_some_and(|cur| cur < hard) {
        lim.current = Some(hard);
        // Failing to raise it is only a problem if the current limit is too low, checked next.
        let _ = setrlimit(Resource::Nofile, lim);
    }
    let current = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    if current < needed {
        return Err(FdLimitError {
            needed,
            hard_limit: hard,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        for (total, parts) in [(10u64, 3usize), (1, 4), (0, 2), (100_000, 7), (5, 5)] {
            let shares: Vec<u64> = (0..parts).map(|i| share(total, parts, i)).collect();
            assert_eq!(shares.iter().sum::<u64>(), total);
            let (min, max) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
            assert!(max - min <= 1, "{shares:?}");
        }
    }

    #[test]
    fn threads_never_exceed_connections() {
        let mut c = Config::new("127.0.0.1:1".parse().unwrap(), vec![]);
        c.connections = 2;
        c.threads = 8;
        assert_eq!(c.effective_threads(), 2);
    }

    #[test]
    fn fd_limit_check_names_what_is_needed() {
        assert!(ensure_fd_limit(10).is_ok());
        let err = ensure_fd_limit(usize::MAX / 2).unwrap_err();
        assert!(err.to_string().contains("ulimit"), "{err}");
    }
}
