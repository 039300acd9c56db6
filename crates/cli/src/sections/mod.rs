//! The result's sections, each a module that writes its part of the summary (`text`) and of
//! the HTML report (`html`): a new section of the result is one module here and one line in
//! the lists below. The summary and the report are these lists in order (goose's report is
//! the same shape: `write()` calling one writer per section).

use pelt_stats::Report;

pub mod changes;
pub mod errors;
pub mod fleet;
pub mod grpc;
pub mod head;
pub mod latency;
pub mod quic;
pub mod requests;
pub mod resources;
pub mod scenario;
pub mod script;
pub mod streams;
pub mod targets;
pub mod thresholds;
pub mod websocket;

/// A section's writer: its part of the summary or of the page, nothing when the result has
/// none of it.
pub type Writer = fn(&mut String, &Report);

/// The summary, in order.
pub const TEXT: [Writer; 19] = [
    head::text,
    requests::text,
    latency::text,
    streams::text,
    websocket::text,
    requests::status,
    grpc::text,
    quic::text,
    targets::text,
    scenario::text,
    script::text,
    fleet::text,
    errors::text,
    errors::connections,
    resources::text,
    requests::warmup,
    changes::text,
    thresholds::text,
    thresholds::notes,
];

/// The report's charts after the four every run has (in their grid), in order.
pub const CHARTS: [Writer; 3] = [head::stages_chart, streams::chart, quic::chart];

/// The report's box of figures, in order.
pub const FIGURES: [Writer; 7] = [
    latency::html,
    requests::html,
    streams::html,
    websocket::html,
    grpc::html,
    quic::html,
    errors::html,
];

/// The report's box of the run's set-up and verdicts, in order (the text summary follows).
pub const SETUP: [Writer; 4] = [
    head::config,
    changes::html,
    thresholds::html,
    thresholds::notes_html,
];

/// The report's sections after the two boxes, in order.
pub const HTML: [Writer; 5] = [
    targets::html,
    scenario::html,
    script::html,
    resources::html,
    fleet::html,
];
