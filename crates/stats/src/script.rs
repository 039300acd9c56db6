//! A script's own figures (`-s`): the counters and histograms its `pelt.counter(name)` and
//! `pelt.histogram(name)` kept, each thread's added to the others' (and, merged, each run's),
//! exactly: counters add, histograms add bucket by bucket.

use crate::{LatencyHistogram, LatencySummary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one script state (or a merge of them) counted and recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScriptMetrics {
    pub counters: BTreeMap<String, u64>,
    /// Values in the script's own unit, 0 up to [`crate::MAX_LATENCY_US`] (larger ones are
    /// clamped to it), three significant digits.
    pub histograms: BTreeMap<String, LatencyHistogram>,
}

impl ScriptMetrics {
    /// Adds `other`'s counts and values to these.
    pub fn merge(&mut self, other: &ScriptMetrics) {
        for (name, n) in &other.counters {
            let c = self.counters.entry(name.clone()).or_default();
            *c = c.saturating_add(*n);
        }
        for (name, h) in &other.histograms {
            match self.histograms.get_mut(name) {
                Some(mine) => mine.merge(h),
                None => {
                    self.histograms.insert(name.clone(), h.clone());
                }
            }
        }
    }

    /// The result's section for the script `file`.
    pub fn report(&self, file: String) -> ScriptReport {
        ScriptReport {
            file,
            counters: self.counters.clone(),
            histograms: self
                .histograms
                .iter()
                .map(|(name, h)| (name.clone(), ScriptHistogram::of(h.clone())))
                .collect(),
        }
    }
}

/// The result's `script` section: the script and what it counted, every thread's together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptReport {
    /// The script, as given.
    pub file: String,
    /// `pelt.counter(name)`: each counter's total.
    pub counters: BTreeMap<String, u64>,
    /// `pelt.histogram(name)`: each histogram's figures, in the unit its values were recorded
    /// in.
    pub histograms: BTreeMap<String, ScriptHistogram>,
}

impl ScriptReport {
    /// Adds another run's section (the file names stay this one's).
    pub fn merge(&mut self, other: &ScriptReport) {
        let mut mine = self.metrics();
        mine.merge(&other.metrics());
        *self = mine.report(std::mem::take(&mut self.file));
    }

    /// The counters and histograms this section was made from.
    pub fn metrics(&self) -> ScriptMetrics {
        ScriptMetrics {
            counters: self.counters.clone(),
            histograms: self
                .histograms
                .iter()
                .map(|(n, h)| (n.clone(), h.histogram.clone()))
                .collect(),
        }
    }
}

/// One of a script's histograms: how many values, their figures, and the histogram itself
/// (HdrHistogram's compressed V2 encoding, base64), so results merge without loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptHistogram {
    pub count: u64,
    #[serde(flatten)]
    pub summary: LatencySummary,
    pub histogram: LatencyHistogram,
}

impl ScriptHistogram {
    pub fn of(histogram: LatencyHistogram) -> ScriptHistogram {
        ScriptHistogram {
            count: histogram.count(),
            summary: histogram.summary(),
            histogram,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(counters: &[(&str, u64)], values: &[(&str, &[u64])]) -> ScriptMetrics {
        let mut m = ScriptMetrics::default();
        for (n, c) in counters {
            m.counters.insert(n.to_string(), *c);
        }
        for (n, vs) in values {
            let h = m.histograms.entry(n.to_string()).or_default();
            for v in *vs {
                h.record_value(*v);
            }
        }
        m
    }

    #[test]
    fn threads_and_results_add_exactly() {
        let a = metrics(&[("hits", 3), ("misses", 1)], &[("items", &[0, 5, 5])]);
        let b = metrics(&[("hits", 4)], &[("items", &[9]), ("size", &[1200])]);
        let mut both = a.clone();
        both.merge(&b);
        assert_eq!(both.counters["hits"], 7);
        assert_eq!(both.counters["misses"], 1);
        assert_eq!(both.histograms["items"].count(), 4);
        // 0 is a value like any other (an empty list), not clamped to 1.
        assert_eq!(both.histograms["items"].summary().min_us, 0);
        // Two results' sections merge to the section of the merged threads, through JSON.
        let ra: ScriptReport =
            serde_json::from_str(&serde_json::to_string(&a.report("s.lua".into())).unwrap())
                .unwrap();
        let mut merged = ra;
        merged.merge(&b.report("s.lua".into()));
        assert_eq!(merged, both.report("s.lua".into()));
        assert_eq!(merged.histograms["items"].count, 4);
        assert_eq!(merged.histograms["items"].summary.max_us, 9);
    }
}
