//! The latency histogram: HDR, microseconds, 3 significant digits, bounded memory.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency recorded exactly (one hour); larger values are clamped to it.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

/// An HDR histogram of latencies in microseconds (1 us .. 1 h, 3 significant digits).
///
/// In the JSON result it is a string: HdrHistogram's compressed V2 encoding in base64, the
/// form the standard HdrHistogram tools read (`HISTFAAAA...`).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Percentiles of a histogram, all in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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

    /// Two significant digits (1 % resolution) instead of three, and grown only as far as the
    /// largest value recorded (about 8 KB up to 10 ms, 27 KB at most): for figures kept many
    /// times over (per target name and worker).
    pub fn coarse() -> Self {
        let mut h = Histogram::new_with_bounds(1, 2, 2).expect("static histogram bounds are valid");
        h.auto(true);
        LatencyHistogram { h }
    }

    /// Records one latency; 0 counts as 1 us and values past one hour are clamped.
    #[inline]
    pub fn record(&mut self, latency_us: u64) {
        // In range once clamped: a fixed histogram takes it, a growing one (`coarse`) grows.
        let _ = self.h.record(latency_us.clamp(1, MAX_LATENCY_US));
    }

    /// Records one value of a script's own (`pelt.histogram`): 0 is kept as 0, values past
    /// [`MAX_LATENCY_US`] are clamped to it.
    pub fn record_value(&mut self, value: u64) {
        let _ = self.h.record(value.min(MAX_LATENCY_US));
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Adds `other`'s counts (exact: same bounds and precision on both sides).
    /// Removes `other`'s counts from these (it must hold a subset of them: an earlier copy of
    /// this histogram); what cannot be removed is left.
    pub fn subtract(&mut self, other: &LatencyHistogram) {
        let _ = self.h.subtract(&other.h);
    }

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

    /// The underlying HDR histogram (for interval logs and percentile spectra).
    pub fn hdr(&self) -> &Histogram<u64> {
        &self.h
    }

    /// HdrHistogram's compressed V2 encoding, in standard base64.
    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.h, &mut bytes)
            .expect("serializing a histogram into memory cannot fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads what [`encode`](Self::encode) (or another HdrHistogram writer) produced. Values
    /// outside pelt's range (1 us .. 1 h) are an error, so decoded histograms always merge.
    pub fn decode(text: &str) -> Result<LatencyHistogram, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("not base64: {e}"))?;
        let other: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| format!("not an HdrHistogram: {e:?}"))?;
        // Kept at its own precision (per-target histograms have two digits).
        let mut h = LatencyHistogram {
            h: Histogram::new_with_bounds(1, MAX_LATENCY_US, other.sigfig().clamp(1, 5))
                .map_err(|e| format!("not an HdrHistogram pelt can read: {e:?}"))?,
        };
        h.h.add(&other)
            .map_err(|_| format!("values past pelt's range of 1..{MAX_LATENCY_US} us"))?;
        Ok(h)
    }

    /// The percentile spectrum: `(percentile, value_us)` pairs, denser towards the tail (as
    /// HdrHistogram's percentile distribution output), ending at 100.
    pub fn spectrum(&self) -> Vec<(f64, u64)> {
        if self.h.is_empty() {
            return Vec::new();
        }
        let mut out: Vec<(f64, u64)> = self
            .h
            .iter_quantiles(5)
            .map(|v| (v.quantile_iterated_to() * 100.0, v.value_iterated_to()))
            .collect();
        out.dedup_by(|b, a| a.0 == b.0);
        out
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

impl Serialize for LatencyHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.encode())
    }
}

impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
        LatencyHistogram::decode(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A coarse histogram starts small, grows to what it records (up to the clamp), merges
    /// with another and survives encoding.
    #[test]
    fn coarse_histograms_grow_merge_and_round_trip() {
        let mut a = LatencyHistogram::coarse();
        a.record(250);
        a.record(9_000);
        let small = a.hdr().distinct_values();
        let mut b = LatencyHistogram::coarse();
        b.record(u64::MAX);
        b.record(0);
        assert!(
            b.hdr().distinct_values() > small,
            "grew for the clamped maximum"
        );
        a.merge(&b);
        assert_eq!(a.count(), 4);
        assert_eq!(a.hdr().max(), a.hdr().highest_equivalent(MAX_LATENCY_US));
        assert_eq!(a.hdr().min(), 1);
        let back = LatencyHistogram::decode(&a.encode()).unwrap();
        assert_eq!(back.count(), 4);
        assert_eq!(
            (back.quantile_us(0.5), back.quantile_us(1.0)),
            (a.quantile_us(0.5), a.quantile_us(1.0))
        );
    }

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

    #[test]
    fn encoding_round_trips_and_rejects_garbage() {
        let mut h = LatencyHistogram::new();
        for v in [1, 7, 250, 250, 99_000, MAX_LATENCY_US] {
            h.record(v);
        }
        let text = h.encode();
        assert!(text.starts_with("HISTF"), "{text}");
        assert_eq!(LatencyHistogram::decode(&text).unwrap(), h);
        assert_eq!(
            LatencyHistogram::decode(&LatencyHistogram::new().encode()).unwrap(),
            LatencyHistogram::new()
        );
        assert!(LatencyHistogram::decode("not base64!").is_err());
        assert!(LatencyHistogram::decode("SElTVEZBQUFB").is_err());
        // A histogram from another tool, with values past pelt's hour, is refused.
        let mut big: Histogram<u64> = Histogram::new(3).unwrap();
        big.record(MAX_LATENCY_US * 10).unwrap();
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&big, &mut bytes)
            .unwrap();
        let text = base64::engine::general_purpose::STANDARD.encode(bytes);
        assert!(LatencyHistogram::decode(&text).is_err());
    }

    #[test]
    fn spectrum_is_ordered_and_ends_at_the_max() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v);
        }
        let sp = h.spectrum();
        assert!(sp.len() > 20, "{}", sp.len());
        assert!(sp.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(sp.last().unwrap(), &(100.0, 1000));
        assert!(LatencyHistogram::new().spectrum().is_empty());
    }

    proptest! {
        /// The encoding is lossless.
        #[test]
        fn encode_decode_is_identity(v in proptest::collection::vec(0u64..5_000_000_000, 0..300)) {
            let mut h = LatencyHistogram::new();
            v.iter().for_each(|&x| h.record(x));
            prop_assert_eq!(LatencyHistogram::decode(&h.encode()).unwrap(), h);
        }

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
