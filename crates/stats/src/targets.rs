//! Per-target figures (`--targets`): each target's name gets its own counts, status codes,
//! error kinds and latency histogram, so the result can say which URL was slow and `pelt
//! merge` stays exact for them too.
//!
//! Memory is bounded: at most [`MAX_TARGET_NAMES`] names get their own figures (the rest are
//! counted together under [`OTHER`]), each with a two-digit histogram that grows only as far
//! as its largest latency (about 8 KB per name and worker up to 10 ms, 27 KB at most).

use crate::{ErrorKind, LatencyHistogram, LatencySummary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most names with figures of their own.
pub const MAX_TARGET_NAMES: usize = 1000;
/// The name the targets past [`MAX_TARGET_NAMES`] are counted under.
pub const OTHER: &str = "other";

/// One name's figures, kept by one worker (measured requests only).
#[derive(Debug, Clone)]
pub struct TargetStats {
    pub sent: u64,
    pub in_flight: u64,
    /// Complete responses by status code (few distinct codes: a short list).
    pub status: Vec<(u16, u64)>,
    pub errors: [u64; ErrorKind::ALL.len()],
    pub latency: LatencyHistogram,
    /// Time to the response's first byte, from where `latency` starts.
    pub ttfb: LatencyHistogram,
}

impl Default for TargetStats {
    fn default() -> Self {
        TargetStats {
            sent: 0,
            in_flight: 0,
            status: Vec::new(),
            errors: [0; ErrorKind::ALL.len()],
            latency: LatencyHistogram::coarse(),
            ttfb: LatencyHistogram::coarse(),
        }
    }
}

impl TargetStats {
    /// A complete response: its latency, and its time to first byte.
    #[inline]
    pub fn record_response(&mut self, status: u16, latency_us: u64, ttfb_us: u64) {
        match self.status.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += 1,
            None => self.status.push((status, 1)),
        }
        self.latency.record(latency_us);
        self.ttfb.record(ttfb_us);
    }

    #[inline]
    pub fn record_error(&mut self, kind: ErrorKind) {
        self.errors[kind.index()] += 1;
    }

    pub fn completed(&self) -> u64 {
        self.status.iter().map(|(_, n)| n).sum()
    }

    pub fn merge(&mut self, other: &TargetStats) {
        self.sent += other.sent;
        self.in_flight += other.in_flight;
        for &(s, n) in &other.status {
            match self.status.iter_mut().find(|(t, _)| *t == s) {
                Some((_, m)) => *m += n,
                None => self.status.push((s, n)),
            }
        }
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.latency.merge(&other.latency);
        self.ttfb.merge(&other.ttfb);
    }

    /// The result's entry for this name.
    pub fn report(&self, name: &str) -> TargetReport {
        let errors: BTreeMap<String, u64> = ErrorKind::ALL
            .iter()
            .filter(|k| self.errors[k.index()] > 0)
            .map(|k| (k.name().to_string(), self.errors[k.index()]))
            .collect();
        TargetReport {
            name: name.to_string(),
            sent: self.sent,
            completed: self.completed(),
            errors: errors.values().sum(),
            in_flight: self.in_flight,
            status: self
                .status
                .iter()
                .map(|(s, n)| (s.to_string(), *n))
                .collect(),
            error_kinds: errors,
            latency_us: self.latency.summary(),
            histogram: self.latency.clone(),
            ttfb_us: Some(self.ttfb.summary()),
            ttfb_histogram: Some(self.ttfb.clone()),
            recorded_us: None,
            recorded_histogram: None,
        }
    }
}

/// One target name's figures in the result (`targets`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetReport {
    /// The target's `name` (JSON lines), else its method and path without the query; `other`
    /// for the names past the first 1,000.
    pub name: String,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub in_flight: u64,
    pub status: BTreeMap<String, u64>,
    pub error_kinds: BTreeMap<String, u64>,
    pub latency_us: LatencySummary,
    /// The histogram behind `latency_us` (two significant digits), so results merge exactly.
    pub histogram: LatencyHistogram,
    /// Time to the first byte of its responses (`null` in results from before pelt had it).
    #[serde(default)]
    pub ttfb_us: Option<LatencySummary>,
    /// The histogram behind `ttfb_us`.
    #[serde(default)]
    pub ttfb_histogram: Option<LatencyHistogram>,
    /// A replayed recording's own latencies for this name (nginx's `$request_time`, a HAR's
    /// `time`, JSON lines' `recorded_ms`): what the server took then, beside `latency_us` now.
    /// Absent when the recording has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_us: Option<LatencySummary>,
    /// The histogram behind `recorded_us` (two significant digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_histogram: Option<LatencyHistogram>,
}

impl TargetReport {
    /// Adds `other` (the same name from another result); the summary is recomputed.
    pub fn merge(&mut self, other: &TargetReport) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.errors += other.errors;
        self.in_flight += other.in_flight;
        for (maps, from) in [
            (&mut self.status, &other.status),
            (&mut self.error_kinds, &other.error_kinds),
        ] {
            for (k, v) in from {
                *maps.entry(k.clone()).or_insert(0) += v;
            }
        }
        self.histogram.merge(&other.histogram);
        self.latency_us = self.histogram.summary();
        // Exact only when both have it: a result without it makes the merged one without.
        match (&mut self.ttfb_histogram, &other.ttfb_histogram) {
            (Some(a), Some(b)) => {
                a.merge(b);
                self.ttfb_us = Some(a.summary());
            }
            _ => (self.ttfb_histogram, self.ttfb_us) = (None, None),
        }
        // The recording's figures are the recording's, whichever part replayed them: a fleet's
        // agents each read the whole recording, so they are kept once, not added.
        if self.recorded_histogram.is_none() {
            self.recorded_histogram
                .clone_from(&other.recorded_histogram);
            self.recorded_us.clone_from(&other.recorded_us);
        }
    }
}

/// The names past the busiest, summed (see [`busiest`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rest {
    pub names: usize,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
}

/// The `n` names with the most requests sent (ties in the targets' order), and the others
/// summed (`None` when there are none): the rows a summary or report shows.
pub fn busiest(targets: &[TargetReport], n: usize) -> (Vec<&TargetReport>, Option<Rest>) {
    let mut rows: Vec<&TargetReport> = targets.iter().collect();
    rows.sort_by_key(|t| std::cmp::Reverse(t.sent));
    let rest = rows.split_off(rows.len().min(n));
    let folded = (!rest.is_empty()).then(|| Rest {
        names: rest.len(),
        sent: rest.iter().map(|t| t.sent).sum(),
        completed: rest.iter().map(|t| t.completed).sum(),
        errors: rest.iter().map(|t| t.errors).sum(),
    });
    (rows, folded)
}
