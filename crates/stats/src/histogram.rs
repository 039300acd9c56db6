//! The latency histogram: HDR, microseconds, 3 significant digits, bounded memory.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Largest latency recorded exactly (one hour); larger values are clamped to it.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

/// An HDR histogram of latencies in microseconds (1 us .. 1 h, 3 significant digits).
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Percentiles of a histogram, all in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySummary {
    #[serde(rename = "min")]
    pub min_us: u64,
    #[serde(rename = "mean")]
    pub mean_us: f64,
    #[serde(rename = "stdev")]
    pub stdev_us: f64,
    #[serde(rename = "p50")]
    pub p50_us: u64,
    #[serde(rename = "p90")]
    pub p90_us: u64,
    #[serde(rename = "p99")]
    pub p99_us: u64,
    #[serde(rename = "p99_9")]
    pub p99_9_us: u64,
    #[serde(rename = "p99_99")]
    pub p99_99_us: u64,
    #[serde(rename = "max")]
    pub max_us: u64,
}

impl LatencyHistogram {
    pub fn new() -> Self {
        LatencyHistogram {
            h: Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
                .expect("static histogram bounds are valid"),
        }
    }

    /// Records one latency; 0 counts as 1 us and values past one hour are clamped.
    #[inline]
    pub fn record(&mut self, latency_us: u64) {
        self.h
            .saturating_record(latency_us.clamp(1, MAX_LATENCY_US));
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Adds `other`'s counts (exact: same bounds and precision on both sides).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.h
            .add(&other.h)
            .expect("histograms with identical bounds always merge");
    }

    /// The value at quantile `q` (0.0..=1.0), microseconds; 0 when empty.
    pub fn quantile_us(&self, q: f64) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.value_at_quantile(q)
        }
    }

    pub fn summary(&self) -> LatencySummary {
        if self.h.is_empty() {
            return LatencySummary {
                min_us: 0,
                mean_us: 0.0,
                stdev_us: 0.0,
                p50_us: 0,
                p90_us: 0,
                p99_us: 0,
                p99_9_us: 0,
                p99_99_us: 0,
                max_us: 0,
            };
        }
        LatencySummary {
            min_us: self.h.min(),
            mean_us: self.h.mean(),
            stdev_us: self.h.stdev(),
            p50_us: self.h.value_at_quantile(0.50),
            p90_us: self.h.value_at_quantile(0.90),
            p99_us: self.h.value_at_quantile(0.99),
            p99_9_us: self.h.value_at_quantile(0.999),
            p99_99_us: self.h.value_at_quantile(0.9999),
            max_us: self.h.max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn empty_histogram_summarizes_to_zeros() {
        let s = LatencyHistogram::new().summary();
        assert_eq!((s.min_us, s.p99_us, s.max_us), (0, 0, 0));
    }

    #[test]
    fn percentiles_within_three_significant_digits() {
        let mut h = LatencyHistogram::new();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        let s = h.summary();
        assert!((4995..=5005).contains(&s.p50_us), "{s:?}");
        assert!((9890..=9910).contains(&s.p99_us), "{s:?}");
        assert_eq!(s.min_us, 1);
        h.record(u64::MAX);
        assert_eq!(h.count(), 10_001);
    }

    proptest! {
        /// merge(a, b) equals recording everything into one histogram.
        #[test]
        fn merge_equals_recording_all(
            a in proptest::collection::vec(0u64..10_000_000, 0..200),
            b in proptest::collection::vec(0u64..10_000_000, 0..200),
        ) {
            let (mut ha, mut hb, mut all) =
                (LatencyHistogram::new(), LatencyHistogram::new(), LatencyHistogram::new());
            a.iter().for_each(|&v| { ha.record(v); all.record(v) });
            b.iter().for_each(|&v| { hb.record(v); all.record(v) });
            ha.merge(&hb);
            prop_assert_eq!(ha.summary(), all.summary());
            prop_assert_eq!(ha.count(), all.count());
        }
    }
}
