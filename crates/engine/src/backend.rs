//! The seam between the engine and its I/O backends.
//!
//! A backend runs one worker: it owns the sockets and the syscalls, and drives the shared
//! connection logic of `conn.rs` (request accounting, response parsing, error kinds) and the
//! load model of `model.rs`. epoll is the first backend; io_uring goes beside it here.

use crate::{Config, WorkerOutcome, WorkerPlan};
use std::sync::atomic::AtomicBool;

/// The I/O backend that runs the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoBackend {
    /// Level-triggered epoll with non-blocking sockets.
    Epoll,
}

impl IoBackend {
    /// The name the report shows.
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Epoll => "epoll",
        }
    }
}

/// What an I/O backend provides: run one worker's share of the load on its own thread.
///
/// An implementation owns the sockets and the syscalls, and drives the shared connection
/// logic (`conn.rs`) and load model (`model.rs`); it records through a `Ledger` (`ledger.rs`), returns
/// the worker's measured and warm-up stats with `in_flight` set from its connections at the
/// stop, why it stopped, and its open-loop backlog.
pub(crate) trait Backend {
    fn run_worker(config: &Config, plan: WorkerPlan, stop: &AtomicBool) -> WorkerOutcome;
}

/// Runs one worker on the configured backend until its plan or `stop` ends it.
pub(crate) fn run_worker(config: &Config, plan: WorkerPlan, stop: &AtomicBool) -> WorkerOutcome {
    match config.io {
        IoBackend::Epoll => crate::epoll::Epoll::run_worker(config, plan, stop),
    }
}
