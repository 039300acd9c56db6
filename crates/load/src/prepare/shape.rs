//! The load's shape: connections, threads, the rate and its stages, checked against each other
//! and against the open-file limit.

use super::*;

/// The open loop's `--max-connections` for `--prompts` and `--input-tokens`.
pub(crate) const PROMPT_CONNECTIONS: usize = 1000;

/// The load's shape: the stages, the rate, the connections and how long it runs.
pub(super) struct Shape {
    pub(super) stages: Option<engine::Stages>,
    pub(super) rate: Option<engine::Rate>,
    pub(super) connections: usize,
    pub(super) max_connections: usize,
    pub(super) duration: Option<std::time::Duration>,
    /// `-n`, or a replay's length (once through the recording).
    pub(super) requests: Option<u64>,
}

impl Shape {
    pub(super) fn of(spec: &LoadSpec) -> Result<Shape, SpecError> {
        let stages = stages(spec)?;
        let rate = match (spec.rate, &stages) {
            (None, _) => None,
            // The schedule follows the stages; the rate is their peak.
            (Some(_), Some(s)) => engine::Rate::per_second(s.peak()),
            (Some(r), None) => Some(engine::Rate::per_second(r).ok_or_else(|| rate_error(r))?),
        };
        // Closed-loop stages: the connections are the stages' (-c does not apply).
        let connections = match &stages {
            Some(s) if s.of() == engine::Ramped::Connections => s.peak() as usize,
            _ => spec.connections,
        };
        if spec.rate.is_none() && !spec.replay.on {
            let open_only = [
                ("--max-connections", spec.max_connections.is_some()),
                (
                    "--batch-window",
                    spec.batch_window != engine::DEFAULT_BATCH_WINDOW,
                ),
            ];
            if let Some((flag, _)) = open_only.iter().find(|(_, given)| *given) {
                return Err(bad(format!(
                    "{flag} is for the open loop: give it with --rate or --replay"
                )));
            }
        }
        // An LLM benchmark's request holds its connection for a whole stream (seconds, on a
        // real model): as vLLM's and AIPerf's clients, the open loop opens what the rate needs,
        // not -c's 50 (which would cap 10 s streams at 5 a second and time the wait as TTFT).
        let default = match spec.requests_from {
            Requests::Prompts(_) if spec.rate.is_some() => PROMPT_CONNECTIONS.max(connections),
            _ => connections,
        };
        let max_connections = spec.max_connections.unwrap_or(default);
        if max_connections < connections {
            return Err(bad(format!(
                "--max-connections {max_connections} is below -c {connections}; it is the most \
                 connections pelt may open, at least -c"
            )));
        }
        let duration = match (spec.duration, spec.requests, &stages) {
            // The stages last as long as they say, -n or not.
            (None, _, Some(s)) => Some(s.total()),
            // A replay ends with the recording (see `Shape::replay`).
            (None, None, None) if spec.replay.on && !spec.replay.laps => None,
            (None, None, None) => Some(engine::DEFAULT_DURATION),
            (d, _, _) => d,
        };
        Ok(Shape {
            stages,
            rate,
            connections,
            max_connections,
            duration,
            requests: spec.requests,
        })
    }

    /// The engine's load model: the open loop's pace is the replay's times (`replay`), the
    /// rate's stages, or the rate; the closed loop's the connections' stages, if any.
    pub(super) fn load(self, spec: &LoadSpec, replay: Option<engine::Replay>) -> engine::Load {
        let Some(rate) = self.rate else {
            return engine::Load::Closed {
                stages: self.stages,
            };
        };
        let pace = match (replay, self.stages) {
            (Some(replay), _) => engine::Pace::Replay(std::sync::Arc::new(replay)),
            (None, Some(stages)) => engine::Pace::Stages(stages),
            (None, None) => engine::Pace::Rate(rate),
        };
        engine::Load::Open(engine::OpenLoop {
            pace,
            arrival: spec.arrival,
            max_connections: self.max_connections,
            batch_window: spec.batch_window,
        })
    }

    /// A replay: open loop at the recording's mean rate (what the report calls the rate),
    /// and, without laps, at most the recording's requests.
    pub(super) fn replay(&mut self, spec: &LoadSpec, replay: &engine::Replay) {
        let mean = replay
            .mean_rate()
            .clamp(engine::Rate::MIN_PER_S, engine::Rate::MAX_PER_S);
        self.rate = engine::Rate::per_second(mean);
        if !replay.laps() {
            let n = replay.len() as u64;
            self.requests = Some(spec.requests.map_or(n, |r| r.min(n)));
        }
    }
}

pub(super) fn rate_error(r: f64) -> SpecError {
    if r == 0.0 {
        bad(
            "--rate 0: must be greater than zero (0 only starts --stages; leave --rate out for \
             a closed loop)",
        )
    } else {
        bad(format!(
            "--rate {r}: must be from {} to {} requests per second",
            engine::Rate::MIN_PER_S,
            engine::Rate::MAX_PER_S
        ))
    }
}

/// The URL's target: resolved here unless a Unix socket is the way there or the run is only
/// described (its host may resolve only where it runs).
pub(super) fn target_of(
    spec: &LoadSpec,
    url: &str,
    here: Here,
) -> Result<target::Target, SpecError> {
    match &spec.unix_socket {
        // The URL gives the Host header and the path only: nothing to resolve.
        Some(path) => {
            engine::check_unix_socket(path).map_err(bad)?;
            target::unresolved(url).map_err(bad)
        }
        None if here == Here::Describes => target::unresolved(url).map_err(bad),
        None => target::resolve(url).map_err(bad),
    }
}

/// A fleet agent's part fits the fleet, and a process that connects may open its connections.
pub(super) fn check_room(
    spec: &LoadSpec,
    shape: &Shape,
    threads: usize,
    here: Here,
) -> Result<(), SpecError> {
    if let Some(slice) = spec.slice {
        slice
            .check(threads, shape.connections)
            .map_err(|e| bad(format!("this agent's part of the fleet: {e}")))?;
    }
    // A fleet's agent opens its part of the connections only.
    let max = shape.max_connections as u64;
    let opened = spec.slice.map_or(max, |s| s.part(max, threads));
    if here == Here::Connects {
        engine::ensure_fd_limit(opened as usize).map_err(bad)?;
    }
    Ok(())
}

/// `--stages` checked against what they move: the rate with `--rate` (starting from it),
/// else the connections (from 0); `None` without stages.
pub(super) fn stages(spec: &LoadSpec) -> Result<Option<engine::Stages>, SpecError> {
    if spec.stages.is_empty() {
        return Ok(None);
    }
    if spec.warmup.is_some() {
        return Err(bad(
            "--warmup and --stages do not go together: ramp up in a first stage instead (every \
             stage is measured)",
        ));
    }
    let (of, start) = match spec.rate {
        Some(r) => (engine::Ramped::Rate, r),
        None => (engine::Ramped::Connections, 0.0),
    };
    let s = engine::Stages::new(of, start, spec.stages.clone())
        .map_err(|e| bad(format!("--stages: {e}")))?;
    if s.total().is_zero() {
        return Err(bad(
            "--stages: every stage lasts 0s; give the last one a duration (30s:1k)",
        ));
    }
    Ok(Some(s))
}
