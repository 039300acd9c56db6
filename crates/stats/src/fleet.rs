//! A fleet run's own figures: each agent's part, how well the agents started together, and
//! which were lost. The merged figures of the result are the fleet's; these say who did what.

use crate::{LatencySummary, RequestsReport};
use serde::{Deserialize, Serialize};

/// A run made by several agents (`pelt run --agents N`), as the coordinator saw it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetInfo {
    /// One entry per agent, by rank.
    pub agents: Vec<AgentReport>,
    /// The latest agent's start less the earliest's, milliseconds (on the coordinator's clock).
    pub start_spread_ms: Option<f64>,
    /// The largest distance of an agent's start from the start instant, milliseconds.
    pub start_skew_max_ms: Option<f64>,
    /// Agents that did not deliver their result, each with why (empty: none).
    pub lost: Vec<String>,
}

/// One agent of a fleet run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentReport {
    /// Its rank, 0 .. agents (a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`, Slurm's
    /// `SLURM_PROCID`, or `--rank`).
    pub rank: u32,
    /// The host name it gave.
    pub host: String,
    /// The address its control connection came from.
    pub address: String,
    /// Its worker threads, and the first of them in the fleet's numbering.
    pub threads: usize,
    pub first_worker: usize,
    /// Its clock less the coordinator's, milliseconds, and the round trip it was measured
    /// over (the offset is known to within half of it).
    pub clock_offset_ms: f64,
    pub rtt_ms: f64,
    /// When it started, less the start instant, milliseconds on the coordinator's clock
    /// (`null`: it never said it started).
    pub start_skew_ms: Option<f64>,
    /// `finished` (its result is in the merged figures), `interrupted` (a signal on its machine
    /// stopped it early: an eviction, a node drain, a preemption; its result, short, is in the
    /// merged figures, and the run counts as one that lost an agent) or `lost` (it died,
    /// stopped reporting, or failed; its counts below are those of the seconds it reported,
    /// and are not in the merged figures).
    pub state: AgentState,
    /// Why it was lost or interrupted (`null` when it finished).
    pub problem: Option<String>,
    /// Its own counts (for a lost agent: up to its last reported second).
    pub requests: RequestsReport,
    pub rps: f64,
    /// Its own latency percentiles (`null` for a lost agent).
    pub latency_us: Option<LatencySummary>,
    /// A lost agent: the most requests it may have sent after its last reported second (its
    /// part of the schedule, and of `-n`, from its start to when it was found lost, less what
    /// it reported), so that a server's count of the run stays within the merged `sent` plus
    /// the lost agents' `requests.sent` and this; absent for the others, and where nothing
    /// bounds it (a closed loop without `-n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreported_max: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    Finished,
    Interrupted,
    Lost,
}
