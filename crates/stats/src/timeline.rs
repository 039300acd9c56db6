//! The per-second timeline: what each worker measured in one second of the run, merged across
//! workers into one [`TimelinePoint`] per second.

use crate::{ErrorKind, LatencyHistogram};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One worker's counts for one second of the run (second `index`, counted from the start).
///
/// The worker fills it as requests end and hands it over once a second, so the main thread
/// can show a live view and stream the timeline without touching the hot path.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Seconds since the run started: this interval covers `[index, index + 1)`.
    pub index: u64,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    /// Complete responses by status class: `[other, 1xx, 2xx, 3xx, 4xx, 5xx]`.
    pub classes: [u64; 6],
    /// Latency of the responses that completed in this second.
    pub latency: LatencyHistogram,
    /// Connections open (or opening) at the end of the second.
    pub connections: u64,
    /// Sampled requests that ended in this second (`Config::sample_every`), at most
    /// [`SAMPLES_PER_SECOND`] per worker.
    pub samples: Vec<Sample>,
    /// Sampled requests left out because the second already held its most.
    pub samples_dropped: u64,
    /// What the second added to the counts kept only as totals (see [`Detail`]).
    pub detail: Detail,
}

/// What one second added to the counts the per-request path keeps only as totals: responses
/// by status code, errors by kind, bytes, late starts and the open-loop lag. A worker takes it
/// as the difference of its totals at each hand-over, once a second, never per request. For
/// live metrics; the result's timeline does not keep it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    /// Complete responses by status code.
    #[serde(default, with = "code_pairs")]
    pub codes: BTreeMap<u16, u64>,
    /// Errors by kind (`timeout`, `connect`, ...).
    #[serde(default)]
    pub errors: BTreeMap<String, u64>,
    #[serde(default)]
    pub bytes_sent: u64,
    #[serde(default)]
    pub bytes_received: u64,
    /// Open loop: requests that started over the late threshold.
    #[serde(default)]
    pub late: u64,
    /// Open loop: the lag of the requests started in the second, microseconds.
    #[serde(default)]
    pub lag: Option<LatencyHistogram>,
    /// Per target name (`--targets` with names; the run's order): requests sent, completed
    /// and failed in the second (measured requests only, as the result's `targets`).
    #[serde(default)]
    pub targets: Vec<TargetCounts>,
}

/// One target name's counts in one second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetCounts {
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
}

/// Status codes as `[[code, count], ...]` on the wire: a JSON object's keys are strings, and
/// a map inside a tagged message does not read them back as numbers.
mod code_pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(m: &BTreeMap<u16, u64>, s: S) -> Result<S::Ok, S::Error> {
        m.iter().collect::<Vec<_>>().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u16, u64>, D::Error> {
        Ok(Vec::<(u16, u64)>::deserialize(d)?.into_iter().collect())
    }
}

impl Detail {
    /// Adds another worker's (or agent's) detail for the same second.
    pub fn merge(&mut self, other: &Detail) {
        for (c, n) in &other.codes {
            *self.codes.entry(*c).or_insert(0) += n;
        }
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += n;
        }
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.late += other.late;
        if let Some(l) = &other.lag {
            self.lag.get_or_insert_with(LatencyHistogram::new).merge(l);
        }
        if self.targets.len() < other.targets.len() {
            self.targets
                .resize(other.targets.len(), TargetCounts::default());
        }
        for (a, b) in self.targets.iter_mut().zip(&other.targets) {
            a.sent += b.sent;
            a.completed += b.completed;
            a.errors += b.errors;
        }
    }
}

/// The most sampled requests one worker keeps per second; the rest are counted as dropped.
pub const SAMPLES_PER_SECOND: usize = 4096;

/// One sampled request, for a per-request view (the Node.js package's `statusCallback`)
/// without a callback per request: sampled requests ride with the second they ended in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The request's index in the run (`{{seq}}`).
    pub index: u64,
    /// Which entry of the request set it sent (0 with one request).
    pub target: u32,
    /// The response's status (0 for an error).
    pub status: u16,
    /// Why it failed (`None`: a response).
    pub error: Option<ErrorKind>,
    /// Its latency, microseconds (0 for an error).
    pub latency_us: u64,
    /// The response as it came, head and body (`Config::sample_responses`, HTTP/1.1; at most
    /// [`SAMPLED_RESPONSE_MAX`] bytes).
    pub response: Option<Box<[u8]>>,
}

/// The most bytes of a sampled response kept.
pub const SAMPLED_RESPONSE_MAX: usize = 64 * 1024;

impl Interval {
    pub fn new(index: u64) -> Interval {
        Interval {
            index,
            sent: 0,
            completed: 0,
            errors: 0,
            classes: [0; 6],
            latency: LatencyHistogram::new(),
            connections: 0,
            samples: Vec::new(),
            samples_dropped: 0,
            detail: Detail::default(),
        }
    }

    /// Keeps `sample` unless the second holds its most already.
    #[inline]
    pub fn sample(&mut self, sample: Sample) {
        if self.samples.len() < SAMPLES_PER_SECOND {
            self.samples.push(sample);
        } else {
            self.samples_dropped += 1;
        }
    }

    /// A complete response with `status` and `latency_us`.
    #[inline]
    pub fn record_response(&mut self, status: u16, latency_us: u64) {
        self.completed += 1;
        let class = status as usize / 100;
        self.classes[if (1..=5).contains(&class) { class } else { 0 }] += 1;
        self.latency.record(latency_us);
    }

    /// Adds another worker's counts for the same second.
    pub fn merge(&mut self, other: &Interval) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.errors += other.errors;
        self.connections += other.connections;
        self.samples.extend_from_slice(&other.samples);
        self.samples_dropped += other.samples_dropped;
        for (a, b) in self.classes.iter_mut().zip(other.classes) {
            *a += b;
        }
        self.latency.merge(&other.latency);
        self.detail.merge(&other.detail);
    }

    /// The timeline point of this (merged) interval, `length_s` long (shorter than a second
    /// for the last one).
    pub fn point(&self, length_s: f64, warmup: bool) -> TimelinePoint {
        let s = self.latency.summary();
        const NAMES: [&str; 6] = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"];
        TimelinePoint {
            resources: None,
            second: self.index,
            length_s,
            warmup,
            sent: self.sent,
            completed: self.completed,
            errors: self.errors,
            rps: if length_s > 0.0 {
                self.completed as f64 / length_s
            } else {
                0.0
            },
            status_classes: NAMES
                .iter()
                .zip(self.classes)
                .filter(|&(_, n)| n > 0)
                .map(|(name, n)| (name.to_string(), n))
                .collect(),
            latency_us: PointLatency {
                p50: s.p50_us,
                p90: s.p90_us,
                p99: s.p99_us,
                max: s.max_us,
            },
            histogram: Some(self.latency.encode()),
            connections: self.connections,
            target: None,
            samples: self.samples.clone(),
            samples_dropped: self.samples_dropped,
            detail: self.detail.clone(),
        }
    }
}

/// Latency percentiles of one second, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointLatency {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

/// One second of the run, as the JSON result's `timeline` and `--jsonl` carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Seconds since the start: this point covers `[second, second + length_s)`.
    pub second: u64,
    pub length_s: f64,
    /// The second lies in the warm-up (its requests are not in the main statistics).
    pub warmup: bool,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    /// Completed responses per second of this point.
    pub rps: f64,
    /// Complete responses by status class (`2xx`, `5xx`, ...; `other` for codes outside them).
    pub status_classes: BTreeMap<String, u64>,
    pub latency_us: PointLatency,
    /// This second's latency histogram ([`LatencyHistogram::encode`]), kept encoded (a few
    /// hundred bytes) so a long run's timeline stays small; `pelt merge` and `--hdr-log` use it.
    #[serde(default)]
    pub histogram: Option<String>,
    /// Connections open (or opening) at the end of the second, over all workers.
    #[serde(default)]
    pub connections: u64,
    /// With `--stages`: what the stages asked for in this second: the mean arrival rate
    /// (requests/s, beside `sent / length_s`) or the active connections at its end (beside
    /// `connections`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// The second's sampled requests, for the caller of `on_second` only (never serialized,
    /// never kept in the result's timeline).
    #[serde(skip)]
    pub samples: Vec<Sample>,
    /// Sampled requests left out of this second (over [`SAMPLES_PER_SECOND`] per worker).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub samples_dropped: u64,
    /// `--monitor`: the server's processes, the host and pelt over this second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::ResourceSample>,
    /// The second's codes, error kinds, bytes and lag, for the caller of `on_second` only
    /// (live metrics; never serialized, never kept in the result's timeline).
    #[serde(skip)]
    pub detail: Detail,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_and_summarize() {
        let mut a = Interval::new(3);
        a.sent = 3;
        a.record_response(200, 100);
        a.record_response(503, 900);
        a.errors = 1;
        let mut b = Interval::new(3);
        b.sent = 1;
        b.record_response(204, 300);
        b.record_response(42, 10);
        a.merge(&b);
        let p = a.point(0.5, false);
        assert_eq!((p.second, p.sent, p.completed, p.errors), (3, 4, 4, 1));
        assert_eq!(p.rps, 8.0);
        assert_eq!(p.status_classes["2xx"], 2);
        assert_eq!(p.status_classes["5xx"], 1);
        assert_eq!(p.status_classes["other"], 1);
        assert_eq!(p.latency_us.max, 900);
        assert!(!p.status_classes.contains_key("4xx"));
    }
}
