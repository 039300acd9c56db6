//! Which I/O backend runs the workers: the best this process may use, checked before the run,
//! and each worker started on it. Kept apart from `backend.rs` (the interface the backends
//! implement and the worker uses), so the interface depends on neither side: the worker and
//! the backends import it, and only this module imports them all.

use crate::{Config, WorkerOutcome, WorkerPlan};
use std::sync::atomic::AtomicBool;

/// The I/O backend that runs the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoBackend {
    /// Level-triggered epoll with non-blocking sockets.
    Epoll,
    /// io_uring: multishot receives into a provided buffer ring, sends from the request bytes.
    Uring,
}

impl IoBackend {
    /// The name the report shows.
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Epoll => "epoll",
            IoBackend::Uring => "io_uring",
        }
    }

    /// The best backend this process may use: io_uring when the kernel offers everything
    /// the backend needs (and no seccomp filter or `kernel.io_uring_disabled` blocks it),
    /// else epoll.
    pub fn detect() -> IoBackend {
        if crate::uring::probe().is_ok() {
            IoBackend::Uring
        } else {
            IoBackend::Epoll
        }
    }

    /// Checks that this backend can run here; the error says why not.
    pub fn check(self) -> Result<(), String> {
        match self {
            IoBackend::Epoll => Ok(()),
            IoBackend::Uring => crate::uring::probe(),
        }
    }
}

/// Runs one worker on the configured backend until its plan or `stop` ends it.
pub(crate) fn run_worker(
    config: &Config,
    batch: &[u8],
    plan: WorkerPlan,
    stop: &AtomicBool,
) -> WorkerOutcome {
    let open = config.load.is_open();
    match config.io {
        IoBackend::Epoll => {
            let io = crate::epoll::EpollIo::new(open);
            crate::worker::run(config, batch, plan, stop, io)
        }
        IoBackend::Uring => {
            let io = crate::uring::UringIo::new(
                config,
                plan.worker,
                plan.max_connections.max(plan.connections),
            );
            crate::worker::run(config, batch, plan, stop, io)
        }
    }
}
