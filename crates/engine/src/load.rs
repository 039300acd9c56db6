//! The run's load model, one type (k6 keeps each executor — its settings, its description and
//! its run — in one place): a closed loop, or an open loop with what only it has (a pace, how
//! arrivals are spaced, the connections it may add, the batch window). What a model means for
//! the worker is `model.rs` (when a free connection takes the next request) and `schedule.rs`
//! (when each is due); this file is what the caller chooses.

use crate::replay::Replay;
use crate::schedule::{Arrival, Rate};
use crate::stages::{Ramped, Stages};
use std::sync::Arc;
use std::time::Duration;

/// How the run offers load.
#[derive(Debug, Clone)]
pub enum Load {
    /// Each connection sends its next request as soon as the last is answered (wrk, k6's
    /// constant-vus). With `stages` (of connections) the active connections move along them;
    /// `Config::connections` is then their peak.
    Closed { stages: Option<Stages> },
    /// Requests are due on a schedule, whatever the server answers (wrk2, k6's
    /// constant-arrival-rate), and their latency counts from then.
    Open(OpenLoop),
}

/// An open loop's settings.
#[derive(Debug, Clone)]
pub struct OpenLoop {
    /// When requests are due.
    pub pace: Pace,
    /// How due times are spaced.
    pub arrival: Arrival,
    /// Connections pelt may open when a request is due and none is free (at least
    /// `Config::connections`).
    pub max_connections: usize,
    /// Requests due within one window of this length start together at its end (one wake-up
    /// for them all), and responses that arrive meanwhile are read then, booked at the
    /// kernel's arrival time (the socket's receive timestamp). Their wait shows in the lag.
    /// `ZERO`: each request starts at its own due time and responses are read as they come.
    pub batch_window: Duration,
}

/// What an open loop's due times follow.
#[derive(Debug, Clone)]
pub enum Pace {
    /// A constant rate over all workers.
    Rate(Rate),
    /// `--stages` of the rate (the run's second `t` is the stages' `t`).
    Stages(Stages),
    /// `--replay`: a recording's times (`Config::targets` holds its entries in time order, or
    /// `Config::feed` reads them as the run goes).
    Replay(Arc<Replay>),
}

impl Pace {
    /// The schedule's pace for a recording held in memory (one read as the run goes takes
    /// its times from its blocks: `Setup::model`).
    pub(crate) fn schedule(&self) -> crate::schedule::Pace {
        match self {
            Pace::Rate(rate) => crate::schedule::Pace::Constant(*rate),
            Pace::Stages(stages) => crate::schedule::Pace::Staged(stages.clone()),
            Pace::Replay(replay) => crate::schedule::Pace::Replay(replay.clone()),
        }
    }
}

impl Default for Load {
    fn default() -> Load {
        Load::Closed { stages: None }
    }
}

impl Load {
    /// An open loop at `rate`, with the default spacing and batch window, and no connections
    /// added past `connections`.
    pub fn open(rate: Rate, connections: usize) -> Load {
        Load::Open(OpenLoop {
            pace: Pace::Rate(rate),
            arrival: Arrival::Constant,
            max_connections: connections,
            batch_window: crate::DEFAULT_BATCH_WINDOW,
        })
    }

    /// Whether requests are due on a schedule.
    #[inline]
    pub fn is_open(&self) -> bool {
        matches!(self, Load::Open(_))
    }

    /// The open loop's settings.
    #[inline]
    pub fn open_loop(&self) -> Option<&OpenLoop> {
        match self {
            Load::Open(open) => Some(open),
            Load::Closed { .. } => None,
        }
    }

    /// The rate the run is described by: the constant rate, the stages' peak, or a replay's
    /// mean rate (`None`: closed loop).
    pub fn rate(&self) -> Option<Rate> {
        match &self.open_loop()?.pace {
            Pace::Rate(rate) => Some(*rate),
            Pace::Stages(stages) => Rate::per_second(stages.peak()),
            Pace::Replay(replay) => {
                Rate::per_second(replay.mean_rate().clamp(Rate::MIN_PER_S, Rate::MAX_PER_S))
            }
        }
    }

    /// The stages the run follows, of the connections (closed loop) or of the rate (open).
    pub fn stages(&self) -> Option<&Stages> {
        match self {
            Load::Closed { stages } => stages.as_ref(),
            Load::Open(OpenLoop {
                pace: Pace::Stages(stages),
                ..
            }) => Some(stages),
            Load::Open(_) => None,
        }
    }

    /// The stages of `of`, if the run follows them.
    pub fn staged(&self, of: Ramped) -> Option<&Stages> {
        self.stages().filter(|s| s.of() == of)
    }

    /// The recording a replay's times come from.
    pub fn replay(&self) -> Option<&Arc<Replay>> {
        match &self.open_loop()?.pace {
            Pace::Replay(replay) => Some(replay),
            Pace::Rate(_) | Pace::Stages(_) => None,
        }
    }

    /// The most connections the run may open: `--max-connections` in the open loop, else
    /// `connections`.
    pub fn max_connections(&self, connections: usize) -> usize {
        self.open_loop()
            .map_or(connections, |o| o.max_connections.max(connections))
    }

    /// The open loop's batch window (`ZERO` in the closed loop: none).
    pub fn batch_window(&self) -> Duration {
        self.open_loop().map_or(Duration::ZERO, |o| o.batch_window)
    }
}
