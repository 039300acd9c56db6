//! Streamed responses (server-sent events): events as an LLM's tokens.

use crate::html::row;
use crate::output::{rate, thousands, trim_number};
use pelt_stats::Report;
use std::fmt::Write as _;

/// Streamed responses (server-sent events): what LLM users read, events as tokens: time to
/// first token, the gaps between tokens, time per token per stream, tokens/s.
pub fn text(s: &mut String, r: &Report) {
    let Some(st) = &r.event_streams else {
        return;
    };
    let _ = writeln!(
        s,
        "\n  Streams      {:>12} ended ({} cut at --stream-limit, {} at --stream-end, {} \
         without events)",
        thousands(st.streams),
        thousands(st.cut),
        thousands(st.ended_by_marker),
        thousands(st.without_events),
    );
    let e = &st.events_per_stream;
    let _ = writeln!(
        s,
        "  Events       {:>12} received  {:>12}/s   per stream: mean {}, p50 {}, max {}",
        thousands(st.events),
        rate(st.events_per_s),
        trim_number((e.mean_us * 10.0).round() / 10.0),
        thousands(e.p50_us),
        thousands(e.max_us),
    );
    let _ = writeln!(
        s,
        "\n               min      mean     stdev    p50      p90      p99      p99.9    max"
    );
    super::latency::row(s, "First event", &st.ttft_us);
    super::latency::row(s, "Gap", &st.gap_us);
    super::latency::row(s, "Per event", &st.time_per_event_us);
    super::latency::row(s, "Stream", &st.duration_us);
    let (p50, slow) = (st.stream_rate_at(0.5), st.stream_rate_at(0.01));
    let _ = writeln!(
        s,
        "               first event: {} to the first event (TTFT); gap: between events \
         (inter-token\n               latency); per event: a stream's time per event after its \
         first (TPOT); stream:\n               {} to its end. Per stream {} events/s at p50, {} \
         at the slowest 1 %.",
        latency_start(r),
        latency_start(r),
        rate(p50),
        rate(slow),
    );
}

/// Where latency starts, in words.
fn latency_start(r: &Report) -> &'static str {
    match r.latency_from {
        pelt_stats::LatencyFrom::Due => "due time",
        pelt_stats::LatencyFrom::Send => "first byte written",
    }
}

/// The event streams' counts.
pub fn html(b: &mut String, r: &Report) {
    if let Some(st) = &r.event_streams {
        b.push_str("<h2>Event streams</h2><table>\n");
        for (k, v) in [
            ("streams ended", thousands(st.streams)),
            ("events", thousands(st.events)),
            ("events per second", rate(st.events_per_s)),
            ("cut at --stream-limit", thousands(st.cut)),
            ("ended at --stream-end", thousands(st.ended_by_marker)),
            ("without events", thousands(st.without_events)),
            (
                "events per stream (p50, max)",
                format!(
                    "{}, {}",
                    thousands(st.events_per_stream.p50_us),
                    thousands(st.events_per_stream.max_us)
                ),
            ),
            (
                "a stream's events/s (p50, slowest 1 %)",
                format!(
                    "{}, {}",
                    rate(st.stream_rate_at(0.5)),
                    rate(st.stream_rate_at(0.01))
                ),
            ),
        ] {
            row(b, &[k, &v]);
        }
        b.push_str("</table>\n");
    }
}
