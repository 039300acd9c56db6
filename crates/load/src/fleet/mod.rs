//! A fleet: one load test made by several pelt processes (agents), on as many machines,
//! started together and merged exactly by a coordinator.
//!
//! The coordinator ([`Coordinator`]) listens, waits for every agent (naming the ones missing
//! when its join timeout passes), hands each its part of the run (its workers within the
//! fleet's, [`pelt_engine::Slice`], so `-n`, connections and rates split exactly as threads
//! split them) and a start instant on its own clock. Each agent ([`run_agent`]) measures its
//! clock's offset to the coordinator's, starts at that instant, streams its per-second points
//! (with their histograms), and sends its whole result at the end; the coordinator merges the
//! points into one live view and the results into one ([`pelt_stats::merge`]), judged by the
//! thresholds as a whole. An agent that dies or goes silent is named, the others are stopped
//! and the test ends in bounded time; an agent whose coordinator goes away stops its load.
//!
//! Ranks come from flags or from the engine that started the agent: a Kubernetes Indexed Job
//! (`JOB_COMPLETION_INDEX`) or Slurm (`SLURM_PROCID`, `SLURM_NTASKS`), see [`rank_from_env`].

mod agent;
mod coordinator;
pub mod monitor;
mod secure;
pub mod wire;

pub use agent::{run_agent, AgentEnd, AgentError, AgentOptions};
pub use coordinator::{
    validate, validate_elsewhere, Coordinator, CoordinatorOptions, FleetError, FleetRun,
};
pub use wire::Token;

use std::time::Duration;

/// How long a silent peer is given before it counts as lost (each side sends something at
/// least once a second).
pub const DEFAULT_SILENCE: Duration = Duration::from_secs(5);

/// How long the coordinator waits for every agent to join, and an agent for its coordinator.
pub const DEFAULT_JOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// The coordinator's control port when none is given.
pub const DEFAULT_PORT: u16 = 7070;

/// This machine's name, as a peer is told it: `HOSTNAME` (a pod's name), else the kernel's.
pub fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map_or_else(|| "?".into(), |h| h.trim().to_string())
}

/// An agent's rank as its environment gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvRank {
    pub rank: u32,
    /// The fleet's size, when the environment says.
    pub agents: Option<u32>,
    /// The variable the rank came from.
    pub from: &'static str,
}

/// An agent's rank and the fleet's size, from the environment of the engine that started it:
/// a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` (the size from `PELT_AGENTS`, which the
/// manifests `pelt k8s` writes set), or Slurm's `SLURM_PROCID` and `SLURM_NTASKS`; an error
/// for a variable that is set but is no number.
pub fn rank_from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<EnvRank>, String> {
    let number = |name: &str| -> Result<Option<u32>, String> {
        match var(name) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<u32>()
                .map(Some)
                .map_err(|_| format!("{name}={v:?} is not a rank")),
        }
    };
    if let Some(rank) = number("JOB_COMPLETION_INDEX")? {
        let agents = number("PELT_AGENTS")?;
        let from = "JOB_COMPLETION_INDEX";
        return Ok(Some(EnvRank { rank, agents, from }));
    }
    if let Some(rank) = number("SLURM_PROCID")? {
        let agents = number("SLURM_NTASKS")?;
        let from = "SLURM_PROCID";
        return Ok(Some(EnvRank { rank, agents, from }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
    }

    #[test]
    fn ranks_come_from_kubernetes_then_slurm() {
        assert_eq!(rank_from_env(env(&[])), Ok(None));
        assert_eq!(
            rank_from_env(env(&[("JOB_COMPLETION_INDEX", "2"), ("PELT_AGENTS", "3")])),
            Ok(Some(EnvRank {
                rank: 2,
                agents: Some(3),
                from: "JOB_COMPLETION_INDEX"
            }))
        );
        assert_eq!(
            rank_from_env(env(&[("SLURM_PROCID", "5"), ("SLURM_NTASKS", "8")])),
            Ok(Some(EnvRank {
                rank: 5,
                agents: Some(8),
                from: "SLURM_PROCID"
            }))
        );
        let e = rank_from_env(env(&[("SLURM_PROCID", "x")])).unwrap_err();
        assert!(e.contains("SLURM_PROCID=\"x\""), "{e}");
    }
}
