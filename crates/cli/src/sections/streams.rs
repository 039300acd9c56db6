//! Streamed responses (server-sent events): events as an LLM's tokens.

use crate::html::{chart_boxes, row};
use crate::output::{rate, thousands, trim_number};
use pelt_stats::Report;
use std::fmt::Write as _;

/// The streams' charts: each second's streams, those that met `--goodput`'s targets and the
/// output tokens; each second's time to first event (and per output token).
pub fn chart(b: &mut String, r: &Report) {
    if r.event_streams.is_some() {
        chart_boxes(
            b,
            &[
                (
                    "chart-streams",
                    "Streams per second: ended, met the goodput targets, output tokens",
                ),
                (
                    "chart-ttft",
                    "Time to first event (TTFT) and per output token, each second",
                ),
            ],
        );
    }
}

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
    if let Some(t) = &st.tokens {
        let _ = writeln!(
            s,
            "  Tokens       {:>12} out       {:>12}/s   {} in, as the server counted them \
             (usage) in {} streams",
            thousands(t.output),
            rate(t.output_per_s),
            thousands(t.input),
            thousands(t.streams),
        );
    }
    if let Some(g) = &st.goodput {
        let _ = writeln!(
            s,
            "  Goodput      {:>12} met       {:>12}/s   {}% of {} requests that ended met {}",
            thousands(g.met),
            rate(g.per_s),
            trim_number((g.share * 100.0).round() / 100.0),
            thousands(g.requests),
            g.targets.join(", "),
        );
    }
    let _ = writeln!(
        s,
        "\n               min      mean     stdev    p50      p90      p99      p99.9    max"
    );
    super::latency::row(s, "First event", &st.ttft_us);
    super::latency::row(s, "Gap", &st.gap_us);
    super::latency::row(s, "Per event", &st.time_per_event_us);
    if let Some(t) = &st.tokens {
        super::latency::row(s, "Per token", &t.tpot_us);
    }
    super::latency::row(s, "Stream", &st.duration_us);
    let (p50, slow) = (st.stream_rate_at(0.5), st.stream_rate_at(0.01));
    // Time per output token: a stream's per event, unless the server counted its tokens.
    let per_event = if st.tokens.is_some() {
        "first; per token: its\n               time after its first event over its output \
         tokens less one (TPOT, from usage); stream:"
    } else {
        "first (TPOT); stream:"
    };
    let _ = writeln!(
        s,
        "               first event: {} to the first event (TTFT); gap: between events \
         (inter-token\n               latency); per event: a stream's time per event after its \
         {per_event}\n               {} to its end. Per stream {} events/s at p50, {} at the \
         slowest 1 %.",
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
        if let Some(t) = &st.tokens {
            row(b, &["output tokens (usage)", &thousands(t.output)]);
            row(b, &["output tokens per second", &rate(t.output_per_s)]);
            row(b, &["input tokens (usage)", &thousands(t.input)]);
            let tpot = format!(
                "{}, {}",
                crate::output::latency(t.tpot_us.p50_us as f64),
                crate::output::latency(t.tpot_us.p99_us as f64)
            );
            row(b, &["time per output token (p50, p99)", &tpot]);
        }
        if let Some(g) = &st.goodput {
            let met = format!(
                "{} of {} ({}%), {}/s",
                thousands(g.met),
                thousands(g.requests),
                trim_number((g.share * 100.0).round() / 100.0),
                rate(g.per_s)
            );
            row(
                b,
                &[&format!("goodput: met {}", g.targets.join(", ")), &met],
            );
        }
        b.push_str("</table>\n");
    }
}
