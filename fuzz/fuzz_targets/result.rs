//! What `pelt report` and `pelt merge` read: a result file (any bytes), and the histograms
//! embedded in it. Reading never panics; a result that reads merges, renders its percentiles,
//! and survives a JSON round trip; a histogram that decodes merges with any other.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_stats::{LatencyHistogram, Report};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = serde_json::from_slice::<Report>(data) {
        if pelt_stats::check_mergeable(&r).is_ok() {
            let _ = pelt_stats::merge(&[r.clone(), r.clone()]);
        }
        let text = serde_json::to_string(&r).expect("a result read back serializes");
        let again: Report = serde_json::from_str(&text).expect("and reads again");
        assert_eq!(again.requests.sent, r.requests.sent);
    }
    // The bytes as a histogram's base64 text, and as its raw encoding.
    let text = String::from_utf8_lossy(data);
    for h in [
        LatencyHistogram::decode(&text),
        LatencyHistogram::decode(&base64_of(data)),
    ]
    .into_iter()
    .flatten()
    {
        let mut all = LatencyHistogram::new();
        all.record(1);
        all.merge(&h);
        assert_eq!(all.count(), h.count() + 1);
        let _ = h.spectrum();
        assert_eq!(LatencyHistogram::decode(&h.encode()).as_ref(), Ok(&h));
    }
});

/// Standard base64, so the raw-bytes half reaches the HdrHistogram decoder itself.
fn base64_of(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
