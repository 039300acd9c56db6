//! The result document: what `--json` writes and the summary prints (docs/result-schema.json).

use crate::{LatencySummary, WorkerStats};
use serde::Serialize;
use std::collections::BTreeMap;

/// How the run was set up; the engine and CLI fill it in.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// The target URL as given (credentials masked).
    pub target: String,
    pub method: String,
    pub connections: usize,
    pub threads: usize,
    pub keep_alive: bool,
    /// Which I/O backend ran (`epoll`).
    pub io: String,
    /// The duration limit asked for, seconds (`null` when only -n was given).
    pub duration_limit_s: Option<f64>,
    /// The request-count limit asked for (`null` when only -d was given).
    pub requests_limit: Option<u64>,
    pub timeout_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RequestsReport {
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub in_flight: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BytesReport {
    pub sent: u64,
    pub received: u64,
}

/// The whole result of a run (serialized as the JSON result).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub pelt_version: String,
    #[serde(flatten)]
    pub info: RunInfo,
    /// Wall time from the first connection attempt to the stop, seconds.
    pub duration_s: f64,
    /// What ended the run: `duration`, `requests`, or `signal`.
    pub stopped_by: String,
    pub requests: RequestsReport,
    /// Completed responses per second of `duration_s`.
    pub rps: f64,
    /// Complete responses by status code.
    pub status: BTreeMap<String, u64>,
    /// Failed requests by error kind.
    pub errors: BTreeMap<String, u64>,
    /// The first message of each error kind.
    pub error_examples: BTreeMap<String, String>,
    /// Connection-level problems that no request owned (bytes after a response), by kind.
    pub connection_errors: BTreeMap<String, u64>,
    pub latency_us: LatencySummary,
    pub bytes: BytesReport,
    /// Bytes per second of `duration_s`.
    pub throughput_bytes_per_s: BytesReport,
    pub connections_opened: u64,
}

impl Report {
    /// Builds the document from merged stats.
    pub fn new(info: RunInfo, stats: &WorkerStats, duration_s: f64, stopped_by: &str) -> Report {
        let completed = stats.completed();
        let per_s = |n: u64| {
            if duration_s > 0.0 {
                n as f64 / duration_s
            } else {
                0.0
            }
        };
        Report {
            pelt_version: env!("CARGO_PKG_VERSION").to_string(),
            info,
            duration_s,
            stopped_by: stopped_by.to_string(),
            requests: RequestsReport {
                sent: stats.sent,
                completed,
                errors: stats.errors.total(),
                in_flight: stats.in_flight,
            },
            rps: per_s(completed),
            status: stats
                .status
                .iter()
                .map(|(s, n)| (s.to_string(), n))
                .collect(),
            errors: stats
                .errors
                .iter()
                .map(|(k, n, _)| (k.name().to_string(), n))
                .collect(),
            error_examples: stats
                .errors
                .iter()
                .map(|(k, _, m)| (k.name().to_string(), m.to_string()))
                .collect(),
            connection_errors: stats
                .connection_errors
                .iter()
                .map(|(k, n, _)| (k.name().to_string(), n))
                .collect(),
            latency_us: stats.latency.summary(),
            bytes: BytesReport {
                sent: stats.bytes_sent,
                received: stats.bytes_received,
            },
            throughput_bytes_per_s: BytesReport {
                sent: per_s(stats.bytes_sent) as u64,
                received: per_s(stats.bytes_received) as u64,
            },
            connections_opened: stats.connections_opened,
        }
    }
}
