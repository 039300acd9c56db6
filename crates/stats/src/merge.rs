//! Merging results (`pelt merge`): the runs of several generators, or several parts of one
//! study, into one result as if one generator had measured it all.
//!
//! Counts add; every latency figure is recomputed from the sum of the embedded HDR histograms
//! (exact, not an average of percentiles); timelines are aligned by wall-clock second, so the
//! same second of two generators running side by side lands in one point.

use crate::report::Histograms;
use crate::{
    BytesReport, HandshakesReport, LatencyHistogram, LoadModel, OpenLoopReport, Report,
    RequestsReport, RunInfo, StopReason, TargetReport, TimelinePoint, WarmupReport,
};
use std::collections::BTreeMap;

/// Why a result cannot take part in a merge (it predates embedded histograms).
pub fn check_mergeable(r: &Report) -> Result<(), String> {
    if r.histograms.is_none() {
        return Err(
            "has no embedded histograms (written by a pelt before 0.2?), so its \
                    percentiles cannot be merged exactly"
                .into(),
        );
    }
    if r.timeline.iter().any(|p| p.histogram.is_none()) {
        return Err("its timeline has no per-second histograms".into());
    }
    Ok(())
}

fn add_maps(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_insert(0) += v;
    }
}

fn sum_opt<T: std::ops::Add<Output = T> + Copy>(it: impl Iterator<Item = Option<T>>) -> Option<T> {
    it.flatten().reduce(|a, b| a + b)
}

/// The merged histogram of `pick` over every report that has one (`None` if none has).
fn merged_hist(
    reports: &[Report],
    pick: impl Fn(&Histograms) -> Option<&LatencyHistogram>,
) -> Option<LatencyHistogram> {
    let mut out: Option<LatencyHistogram> = None;
    for h in reports
        .iter()
        .filter_map(|r| r.histograms.as_ref().and_then(&pick))
    {
        out.get_or_insert_with(LatencyHistogram::new).merge(h);
    }
    out
}

/// The histogram `pick` finds, summed, when every result has one (else `None`: a sum of some
/// would not be the whole's).
fn merged_hist_all(
    reports: &[Report],
    pick: impl Fn(&Histograms) -> Option<&LatencyHistogram>,
) -> Option<LatencyHistogram> {
    let all = reports
        .iter()
        .all(|r| r.histograms.as_ref().and_then(&pick).is_some());
    all.then(|| merged_hist(reports, pick)).flatten()
}

/// Per-target figures added by name, in first-seen order (exact: their histograms add).
fn merged_targets(reports: &[Report]) -> Vec<TargetReport> {
    let mut out: Vec<TargetReport> = Vec::new();
    for t in reports.iter().flat_map(|r| &r.targets) {
        match out.iter_mut().find(|o| o.name == t.name) {
            Some(o) => o.merge(t),
            None => out.push(t.clone()),
        }
    }
    out
}

/// Joins the distinct values, in first-seen order.
fn distinct(values: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.join(", ")
}

fn requests_sum<'a>(it: impl Iterator<Item = &'a RequestsReport>) -> RequestsReport {
    let mut t = RequestsReport {
        sent: 0,
        completed: 0,
        errors: 0,
        in_flight: 0,
    };
    for r in it {
        t.sent += r.sent;
        t.completed += r.completed;
        t.errors += r.errors;
        t.in_flight += r.in_flight;
    }
    t
}

/// One merged second of the timeline.
struct Second {
    length_s: f64,
    warmup: bool,
    sent: u64,
    completed: u64,
    errors: u64,
    connections: u64,
    late: u64,
    target: Option<f64>,
    /// A fleet's agents each carry the coordinator's changes: kept once.
    changes: Vec<crate::Change>,
    classes: BTreeMap<String, u64>,
    latency: LatencyHistogram,
    /// While every point had one.
    ttfb: Option<LatencyHistogram>,
    streams: Option<crate::StreamPoint>,
    websocket: Option<crate::WsPoint>,
    quic: Option<crate::QuicStats>,
    grpc: Option<crate::GrpcPoint>,
    detail: crate::Detail,
}

/// Merges `reports` (at least one; each passing [`check_mergeable`]) into one result, with a
/// note that says how (`pelt merge`'s).
pub fn merge(reports: &[Report]) -> Result<Report, String> {
    let mut merged = merge_figures(reports)?;
    merged.notes.push(format!(
        "merged from {} results: counts are sums, latency percentiles come from the merged \
         histograms, and rates are over the {:.1}s from the first run's start to the last one's \
         end",
        reports.len(),
        merged.duration_s
    ));
    Ok(merged)
}

/// [`merge`] without the note on how: for a caller that says it in its own words (a fleet).
pub fn merge_figures(reports: &[Report]) -> Result<Report, String> {
    let first = check_compatible(reports)?;
    let started = reports.iter().map(|r| r.started_unix_ms).min().unwrap_or(0);
    let duration_s = measured_span_s(reports);
    let per_s = |n: u64| {
        if duration_s > 0.0 {
            n as f64 / duration_s
        } else {
            0.0
        }
    };
    let latency = merged_hist(reports, |h| Some(&h.latency_us)).unwrap_or_default();
    let ttfb = merged_hist_all(reports, |h| h.ttfb_us.as_ref());
    let service = merged_hist(reports, |h| h.service_time_us.as_ref());
    let lag = merged_hist(reports, |h| h.lag_us.as_ref());
    let handshake = merged_hist(reports, |h| h.handshake_us.as_ref());
    let warm_latency = merged_hist(reports, |h| h.warmup_latency_us.as_ref());
    let iteration = merged_hist(reports, |h| h.iteration_us.as_ref());
    let scenario = merged_scenario(reports, iteration.as_ref());
    let requests = requests_sum(reports.iter().map(|r| &r.requests));
    let outcomes = Outcomes::of(reports);
    let bytes = BytesReport {
        sent: reports.iter().map(|r| r.bytes.sent).sum(),
        received: reports.iter().map(|r| r.bytes.received).sum(),
    };
    Ok(Report {
        pelt_version: env!("CARGO_PKG_VERSION").to_string(),
        targets: merged_targets(reports),
        // Each machine's own resources: no sum of them means anything.
        resources: None,
        info: merged_info(reports),
        duration_s,
        interrupted: reports.iter().any(|r| r.interrupted),
        // The most significant reason any run stopped for (the enum's order).
        stopped_by: reports
            .iter()
            .map(|r| r.stopped_by)
            .max()
            .unwrap_or(StopReason::Requests),
        rps: per_s(requests.completed),
        requests,
        status: outcomes.status,
        errors: outcomes.errors,
        error_examples: outcomes.error_examples,
        error_hints: outcomes.error_hints,
        connection_errors: outcomes.connection_errors,
        error_codes: outcomes.error_codes,
        latency_us: latency.summary(),
        ttfb_us: ttfb.as_ref().map(LatencyHistogram::summary),
        latency_from: first.latency_from,
        open_loop: merged_open_loop(reports, service.as_ref(), lag.as_ref()),
        warmup: merged_warmup(reports, warm_latency.as_ref()),
        timeline: merged_timeline(reports, started)?,
        thresholds: Vec::new(),
        notes: merged_notes(reports),
        throughput_bytes_per_s: BytesReport {
            sent: per_s(bytes.sent) as u64,
            received: per_s(bytes.received) as u64,
        },
        bytes,
        connections_opened: reports.iter().map(|r| r.connections_opened).sum(),
        tls_handshakes: merged_handshakes(reports, handshake.as_ref()),
        started_unix_ms: started,
        histograms: Some(Histograms {
            latency_us: latency,
            ttfb_us: ttfb,
            service_time_us: service,
            lag_us: lag,
            handshake_us: handshake,
            warmup_latency_us: warm_latency,
            iteration_us: iteration,
        }),
        merged_from: Vec::new(),
        fleet: None,
        scenario,
        event_streams: merged_streams(reports, duration_s),
        websocket: merged_websocket(reports, duration_s),
        grpc: merged_grpc(reports),
        quic: merged_quic(reports),
        script: merged_script(reports),
        changes: merged_changes(reports),
    })
}

/// QUIC: counts add.
fn merged_quic(reports: &[Report]) -> Option<crate::QuicStats> {
    let mut all = reports.iter().filter_map(|r| r.quic.as_ref());
    let mut merged = *all.next()?;
    for q in all {
        merged.merge(q);
    }
    Some(merged)
}

/// The changes made during the runs, each once (a fleet's agents all carry the
/// coordinator's), in time order.
fn merged_changes(reports: &[Report]) -> Vec<crate::Change> {
    let mut all: Vec<crate::Change> = Vec::new();
    for c in reports.iter().flat_map(|r| &r.changes) {
        if !all.contains(c) {
            all.push(*c);
        }
    }
    all.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    all
}

/// gRPC: counts add by status, each status keeps the first message seen.
fn merged_grpc(reports: &[Report]) -> Option<crate::GrpcReport> {
    let mut all = reports.iter().filter_map(|r| r.grpc.as_ref());
    let mut merged = all.next()?.clone();
    for g in all {
        merged.merge(g);
    }
    Some(merged)
}

/// A script's counters and histograms: added by name.
fn merged_script(reports: &[Report]) -> Option<crate::ScriptReport> {
    let mut all = reports.iter().filter_map(|r| r.script.as_ref());
    let mut merged = all.next()?.clone();
    for s in all {
        merged.merge(s);
    }
    Some(merged)
}

/// WebSocket: counts add, the upgrade figures come from the merged histogram, the rate is
/// over the merged span.
fn merged_websocket(reports: &[Report], duration_s: f64) -> Option<crate::WebSocketReport> {
    let mut all = reports.iter().filter_map(|r| r.websocket.as_ref());
    let mut merged = all.next()?.clone();
    for w in all {
        merged.merge(w);
    }
    merged.set_rate(duration_s);
    Some(merged)
}

/// Streams: counts add, the figures come from the merged histograms, the rate is over the
/// merged span.
fn merged_streams(reports: &[Report], duration_s: f64) -> Option<crate::StreamsReport> {
    let mut all = reports.iter().filter_map(|r| r.event_streams.as_ref());
    let mut merged = all.next()?.clone();
    for s in all {
        merged.merge(s);
    }
    merged.set_rate(duration_s);
    Some(merged)
}

/// Scenario runs: iterations added, their durations from the merged histogram, checks and
/// captures added by name (in the order first seen).
fn merged_scenario(
    reports: &[Report],
    duration: Option<&LatencyHistogram>,
) -> Option<crate::ScenarioReport> {
    let mut all = reports.iter().filter_map(|r| r.scenario.as_ref());
    let mut merged = all.next()?.clone();
    for s in all {
        merged.iterations.started += s.iterations.started;
        merged.iterations.completed += s.iterations.completed;
        merged.iterations.failed += s.iterations.failed;
        for c in &s.checks {
            match merged.checks.iter_mut().find(|m| m.name == c.name) {
                Some(m) => {
                    m.passed += c.passed;
                    m.failed += c.failed;
                }
                None => merged.checks.push(c.clone()),
            }
        }
        for c in &s.captures {
            match merged.captures.iter_mut().find(|m| m.name == c.name) {
                Some(m) => {
                    m.found += c.found;
                    m.missing += c.missing;
                }
                None => merged.captures.push(c.clone()),
            }
        }
    }
    merged.iterations.duration_us = duration.cloned().unwrap_or_default().summary();
    Some(merged)
}

/// The first report, once every one is mergeable and measures latency from the same point.
fn check_compatible(reports: &[Report]) -> Result<&Report, String> {
    let first = reports.first().ok_or("no results to merge")?;
    for r in reports {
        check_mergeable(r)?;
        if r.latency_from != first.latency_from {
            return Err(format!(
                "cannot merge a {} loop result with a {} loop one: their latencies are measured \
                 from different points",
                first.load_model(),
                r.load_model()
            ));
        }
    }
    Ok(first)
}

/// Seconds from the earliest measured start (after each run's warm-up) to the latest end.
fn measured_span_s(reports: &[Report]) -> f64 {
    // The measured part of each run, in ms since the epoch: after its warm-up, for its duration.
    let spans: Vec<(f64, f64)> = reports
        .iter()
        .map(|r| {
            let begin = r.started_unix_ms as f64 + r.info.warmup_s * 1000.0;
            (begin, begin + r.duration_s * 1000.0)
        })
        .collect();
    let begin = spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
    let end = spans.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
    ((end - begin) / 1000.0).max(0.0)
}

/// The settings: connections, threads, rates and limits add; targets and methods that differ
/// are listed; the rest is the first run's.
fn merged_info(reports: &[Report]) -> RunInfo {
    let mut info = reports[0].info.clone();
    info.target = distinct(reports.iter().map(|r| r.info.target.clone()));
    info.method = distinct(reports.iter().map(|r| r.info.method.clone()));
    info.connections = reports.iter().map(|r| r.info.connections).sum();
    info.threads = reports.iter().map(|r| r.info.threads).sum();
    info.max_connections = sum_opt(reports.iter().map(|r| r.info.max_connections));
    info.rate = sum_opt(reports.iter().map(|r| r.info.rate));
    info.connect_rate = sum_opt(reports.iter().map(|r| r.info.connect_rate));
    info.requests_limit = sum_opt(reports.iter().map(|r| r.info.requests_limit));
    info.duration_limit_s = reports
        .iter()
        .filter_map(|r| r.info.duration_limit_s)
        .reduce(f64::max);
    info.stages = merged_stages(reports);
    info
}

/// Stages of the same shape (what they move, each stage's length) add up, as each run's
/// share does; runs whose stages differ have none as a whole.
fn merged_stages(reports: &[Report]) -> Option<crate::StagesInfo> {
    let first = reports[0].info.stages.clone()?;
    reports[1..].iter().try_fold(first, |mut all, r| {
        let s = r.info.stages.as_ref()?;
        let same = s.of == all.of
            && s.stages.len() == all.stages.len()
            && s.stages
                .iter()
                .zip(&all.stages)
                .all(|(a, b)| a.duration_s == b.duration_s);
        if !same {
            return None;
        }
        all.start += s.start;
        for (a, b) in all.stages.iter_mut().zip(&s.stages) {
            a.target += b.target;
        }
        Some(all)
    })
}

/// Status and error counts added; the first example and hint of each error kind.
struct Outcomes {
    status: BTreeMap<String, u64>,
    errors: BTreeMap<String, u64>,
    connection_errors: BTreeMap<String, u64>,
    error_examples: BTreeMap<String, String>,
    error_hints: BTreeMap<String, String>,
    error_codes: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Outcomes {
    fn of(reports: &[Report]) -> Outcomes {
        let mut o = Outcomes {
            status: BTreeMap::new(),
            errors: BTreeMap::new(),
            connection_errors: BTreeMap::new(),
            error_examples: BTreeMap::new(),
            error_hints: BTreeMap::new(),
            error_codes: BTreeMap::new(),
        };
        for r in reports {
            add_maps(&mut o.status, &r.status);
            add_maps(&mut o.errors, &r.errors);
            add_maps(&mut o.connection_errors, &r.connection_errors);
            for (kind, codes) in &r.error_codes {
                add_maps(o.error_codes.entry(kind.clone()).or_default(), codes);
            }
            for (k, v) in &r.error_examples {
                o.error_examples
                    .entry(k.clone())
                    .or_insert_with(|| v.clone());
            }
            for (k, v) in &r.error_hints {
                o.error_hints.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        o
    }
}

/// Every run's notes once (earlier merges' own notes dropped), and a note when the runs used
/// different I/O backends (`io` names the first).
fn merged_notes(reports: &[Report]) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for n in reports.iter().flat_map(|r| &r.notes) {
        if !notes.contains(n) && !n.starts_with("merged from ") {
            notes.push(n.clone());
        }
    }
    let backends = distinct(reports.iter().map(|r| r.info.io.name().to_string()));
    if backends.contains(", ") {
        notes.push(format!(
            "the merged runs used different I/O backends ({backends}); `io` names the first"
        ));
    }
    notes
}

/// Open loop: service time and lag from the merged histograms, late starts and backlog added.
fn merged_open_loop(
    reports: &[Report],
    service: Option<&LatencyHistogram>,
    lag: Option<&LatencyHistogram>,
) -> Option<OpenLoopReport> {
    let open: Vec<&OpenLoopReport> = reports
        .iter()
        .filter_map(|r| r.open_loop.as_ref())
        .collect();
    (!open.is_empty()).then(|| OpenLoopReport {
        service_time_us: service.cloned().unwrap_or_default().summary(),
        lag_us: lag.cloned().unwrap_or_default().summary(),
        late_requests: open.iter().map(|o| o.late_requests).sum(),
        late_threshold_us: open[0].late_threshold_us,
        backlog_at_end: open.iter().map(|o| o.backlog_at_end).sum(),
    })
}

/// The warm-ups' figures, added; its latency from the merged warm-up histogram.
fn merged_warmup(reports: &[Report], latency: Option<&LatencyHistogram>) -> Option<WarmupReport> {
    let warm: Vec<&WarmupReport> = reports.iter().filter_map(|r| r.warmup.as_ref()).collect();
    (!warm.is_empty()).then(|| {
        let mut status = BTreeMap::new();
        let mut errors = BTreeMap::new();
        for w in &warm {
            add_maps(&mut status, &w.status);
            add_maps(&mut errors, &w.errors);
        }
        WarmupReport {
            duration_s: warm.iter().map(|w| w.duration_s).fold(0.0, f64::max),
            requests: requests_sum(warm.iter().map(|w| &w.requests)),
            status,
            errors,
            latency_us: latency.cloned().unwrap_or_default().summary(),
        }
    })
}

/// TLS handshakes added; their time from the merged histogram.
fn merged_handshakes(
    reports: &[Report],
    time: Option<&LatencyHistogram>,
) -> Option<HandshakesReport> {
    let hs: Vec<&HandshakesReport> = reports
        .iter()
        .filter_map(|r| r.tls_handshakes.as_ref())
        .collect();
    (!hs.is_empty()).then(|| HandshakesReport {
        full: hs.iter().map(|h| h.full).sum(),
        resumed: hs.iter().map(|h| h.resumed).sum(),
        time_us: time.cloned().unwrap_or_default().summary(),
    })
}

/// Timelines aligned by wall-clock second: second k of a run that started d seconds after the
/// first one is second d + k; points that overlap are merged (a run's coarse point and
/// another's seconds within it make one point as long as the coarse one).
fn merged_timeline(reports: &[Report], started: u64) -> Result<Vec<TimelinePoint>, String> {
    // (start, report, point), in time order; each report's points keep their order.
    let mut all: Vec<(u64, usize, &TimelinePoint)> = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        let offset = ((r.started_unix_ms - started) as f64 / 1000.0).round() as u64;
        all.extend(
            r.timeline
                .iter()
                .map(|p| (offset.saturating_add(p.second), i, p)),
        );
    }
    all.sort_by_key(|&(start, _, _)| start);
    let mut out = Vec::new();
    let mut rest = &all[..];
    while let Some(&(start, _, first)) = rest.first() {
        let mut end = start as f64 + first.length_s;
        let n = rest
            .iter()
            .take_while(|&&(s, _, p)| {
                let within = s == start || (s as f64) < end;
                if within {
                    end = end.max(s as f64 + p.length_s);
                }
                within
            })
            .count();
        // One run's points in the group fold into one (their connections at the end, their
        // stages' target over the span); the runs' then add.
        let mut by_run: BTreeMap<usize, Vec<TimelinePoint>> = BTreeMap::new();
        for &(_, i, p) in &rest[..n] {
            by_run.entry(i).or_default().push(p.clone());
        }
        let mut second = Second::new();
        for points in by_run.values() {
            match points.as_slice() {
                [one] => second.add(one)?,
                many => second.add(&crate::fold(many))?,
            }
        }
        second.length_s = end - start as f64;
        out.push(second.point(start));
        rest = &rest[n..];
    }
    Ok(out)
}

/// The same second of several runs as one point (a fleet's live view): counts add, the
/// latency figures come from the sum of their histograms.
pub fn merge_points<'a>(
    second: u64,
    points: impl IntoIterator<Item = &'a TimelinePoint>,
) -> Result<TimelinePoint, String> {
    let mut s = Second::new();
    for p in points {
        s.add(p)?;
    }
    Ok(s.point(second))
}

impl Second {
    fn add(&mut self, p: &TimelinePoint) -> Result<(), String> {
        let h = LatencyHistogram::decode(p.histogram.as_deref().unwrap_or_default())?;
        self.length_s = self.length_s.max(p.length_s);
        self.warmup &= p.warmup;
        self.sent += p.sent;
        self.completed += p.completed;
        self.errors += p.errors;
        self.connections += p.connections;
        self.late += p.late;
        // Each run's share of what its stages asked for adds up to the whole's.
        if let Some(t) = p.target {
            *self.target.get_or_insert(0.0) += t;
        }
        for c in &p.changes {
            if !self.changes.contains(c) {
                self.changes.push(*c);
            }
        }
        add_maps(&mut self.classes, &p.status_classes);
        self.latency.merge(&h);
        match (&mut self.ttfb, &p.ttfb_histogram) {
            (Some(t), Some(encoded)) => t.merge(&LatencyHistogram::decode(encoded)?),
            _ => self.ttfb = None,
        }
        self.streams =
            crate::StreamPoint::join([self.streams.as_ref(), p.event_streams.as_ref()].into_iter());
        self.websocket =
            crate::WsPoint::join([self.websocket.as_ref(), p.websocket.as_ref()].into_iter());
        self.quic = crate::QuicStats::join([self.quic.as_ref(), p.quic.as_ref()].into_iter());
        self.grpc = crate::GrpcPoint::join([self.grpc.as_ref(), p.grpc.as_ref()].into_iter());
        self.detail.merge(&p.detail);
        Ok(())
    }

    fn new() -> Second {
        Second {
            length_s: 0.0,
            warmup: true,
            sent: 0,
            completed: 0,
            errors: 0,
            connections: 0,
            late: 0,
            target: None,
            changes: Vec::new(),
            classes: BTreeMap::new(),
            latency: LatencyHistogram::new(),
            ttfb: Some(LatencyHistogram::new()),
            streams: None,
            websocket: None,
            quic: None,
            grpc: None,
            detail: crate::Detail::default(),
        }
    }

    /// The merged second as timeline point `second`.
    fn point(self, second: u64) -> TimelinePoint {
        TimelinePoint {
            second,
            length_s: self.length_s,
            warmup: self.warmup,
            sent: self.sent,
            completed: self.completed,
            errors: self.errors,
            rps: if self.length_s > 0.0 {
                self.completed as f64 / self.length_s
            } else {
                0.0
            },
            status_classes: self.classes,
            latency_us: crate::PointLatency::of(&self.latency),
            histogram: Some(self.latency.encode()),
            ttfb_us: self.ttfb.as_ref().map(crate::PointLatency::of),
            ttfb_histogram: self.ttfb.as_ref().map(LatencyHistogram::encode),
            event_streams: self.streams,
            websocket: self.websocket,
            quic: self.quic,
            grpc: self.grpc,
            connections: self.connections,
            late: self.late,
            target: self.target,
            changes: self.changes,
            resources: None,
            samples: Vec::new(),
            samples_dropped: 0,
            detail: self.detail,
        }
    }
}

impl Report {
    fn load_model(&self) -> LoadModel {
        self.info.load_model
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Interval, RunInfo, WorkerStats};
    use crate::{Io, LatencyFrom};
    use proptest::prelude::*;

    /// A result of `samples` (status, latency, second), as written and read back as JSON.
    fn result(samples: &[(u16, u64, u64)], started_unix_ms: u64) -> Report {
        let mut stats = WorkerStats::new();
        let mut seconds: BTreeMap<u64, Interval> = BTreeMap::new();
        for &(status, lat, sec) in samples {
            stats.sent += 1;
            stats.record_response(status, lat, lat / 3);
            let iv = seconds.entry(sec).or_insert_with(|| Interval::new(sec));
            iv.sent += 1;
            iv.record_response(status, lat, lat / 3);
        }
        let mut r = Report::new(RunInfo::example(), &stats, 2.0, StopReason::Duration);
        r.started_unix_ms = started_unix_ms;
        r.timeline = seconds.values().map(|iv| iv.point(1.0, false)).collect();
        let json = serde_json::to_string(&r).unwrap();
        serde_json::from_str(&json).unwrap()
    }

    fn sample() -> impl Strategy<Value = (u16, u64, u64)> {
        (
            prop::sample::select(vec![200u16, 204, 404, 503]),
            0u64..20_000_000,
            0u64..3,
        )
    }

    /// A result with per-target figures: each sample is (status, latency, target 0..3).
    fn targeted(samples: &[(u16, u64, usize)]) -> Report {
        let names = ["GET /a", "GET /b", "POST /c"];
        let mut stats = WorkerStats::new();
        stats.targets = vec![crate::TargetStats::default(); 3];
        for &(status, lat, t) in samples {
            stats.sent += 1;
            stats.record_response(status, lat, lat / 3);
            stats.targets[t].sent += 1;
            stats.targets[t].record_response(status, lat, lat / 3);
        }
        let mut r = Report::new(RunInfo::example(), &stats, 2.0, StopReason::Duration);
        r.targets = stats
            .targets
            .iter()
            .zip(names)
            .map(|(t, n)| t.report(n))
            .collect();
        let json = serde_json::to_string(&r).unwrap();
        serde_json::from_str(&json).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Per-target figures of a merged result equal those of one run of everything:
        /// counts, status codes, histograms and percentiles, name by name; and they add up
        /// to the totals.
        #[test]
        fn merged_targets_equal_one_run(
            a in prop::collection::vec((prop::sample::select(vec![200u16, 404, 503]), 1u64..5_000_000, 0usize..3), 0..120),
            b in prop::collection::vec((prop::sample::select(vec![200u16, 404, 503]), 1u64..5_000_000, 0usize..3), 0..120),
        ) {
            let all: Vec<_> = a.iter().chain(&b).copied().collect();
            let one = targeted(&all);
            let merged = merge(&[targeted(&a), targeted(&b)]).unwrap();
            prop_assert_eq!(merged.targets.len(), 3);
            for (m, o) in merged.targets.iter().zip(&one.targets) {
                prop_assert_eq!((&m.name, m.sent, m.completed, m.errors), (&o.name, o.sent, o.completed, o.errors));
                prop_assert_eq!(&m.status, &o.status);
                prop_assert_eq!(&m.histogram, &o.histogram);
                prop_assert_eq!(&m.ttfb_histogram, &o.ttfb_histogram);
                prop_assert_eq!(m.ttfb_us.map(|s| s.p99_us), o.ttfb_us.map(|s| s.p99_us));
                let (x, y) = (m.latency_us, o.latency_us);
                prop_assert_eq!((x.min_us, x.p50_us, x.p90_us, x.p99_us, x.max_us),
                                (y.min_us, y.p50_us, y.p90_us, y.p99_us, y.max_us));
            }
            let sent: u64 = merged.targets.iter().map(|t| t.sent).sum();
            prop_assert_eq!(sent, merged.requests.sent);
        }
    }

    proptest! {
        // Each case encodes, writes and reads a dozen histograms: fewer cases than the default.
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Merging the results of two halves of the samples equals the result of recording
        /// every sample in one run: counts, status codes, percentiles and each second.
        #[test]
        fn merging_two_halves_equals_one_run(
            a in prop::collection::vec(sample(), 0..150),
            b in prop::collection::vec(sample(), 0..150),
        ) {
            let all: Vec<_> = a.iter().chain(&b).copied().collect();
            let one = result(&all, 1_000_000);
            let merged = merge(&[result(&a, 1_000_000), result(&b, 1_000_000)]).unwrap();
            // JSON numbers round-trip to within a unit in the last place: the mean is compared
            // as computed, the histograms and every percentile exactly.
            let (m, o) = (merged.latency_us, one.latency_us);
            prop_assert_eq!((m.min_us, m.p50_us, m.p90_us, m.p99_us, m.p99_9_us, m.max_us),
                            (o.min_us, o.p50_us, o.p90_us, o.p99_us, o.p99_9_us, o.max_us));
            prop_assert!((m.mean_us - o.mean_us).abs() <= 1e-9 * o.mean_us.max(1.0));
            prop_assert_eq!(&merged.histograms.as_ref().unwrap().latency_us,
                            &one.histograms.as_ref().unwrap().latency_us);
            prop_assert_eq!(&merged.histograms.as_ref().unwrap().ttfb_us,
                            &one.histograms.as_ref().unwrap().ttfb_us);
            prop_assert_eq!(merged.ttfb_us.map(|s| (s.p50_us, s.p99_us, s.max_us)),
                            one.ttfb_us.map(|s| (s.p50_us, s.p99_us, s.max_us)));
            prop_assert_eq!(merged.requests.completed, one.requests.completed);
            prop_assert_eq!(merged.requests.sent, one.requests.sent);
            prop_assert_eq!(&merged.status, &one.status);
            prop_assert_eq!(merged.timeline.len(), one.timeline.len());
            for (m, o) in merged.timeline.iter().zip(&one.timeline) {
                prop_assert_eq!((m.second, m.completed, m.latency_us), (o.second, o.completed, o.latency_us));
                prop_assert_eq!(m.ttfb_us, o.ttfb_us);
                prop_assert_eq!(&m.status_classes, &o.status_classes);
            }
        }
    }

    #[test]
    fn timelines_align_by_wall_clock_second() {
        let a = result(&[(200, 100, 0), (200, 100, 1)], 10_000);
        // Started 1.02 s later: its second 0 is the first run's second 1.
        let b = result(&[(200, 900, 0)], 11_020);
        let m = merge(&[a, b]).unwrap();
        let per: Vec<(u64, u64, u64)> = m
            .timeline
            .iter()
            .map(|p| (p.second, p.completed, p.latency_us.max))
            .collect();
        assert_eq!(per, vec![(0, 1, 100), (1, 2, 900)]);
        assert_eq!(m.info.connections, 4);
        // From 10.000 to 13.020: the second run ended 1.02 s after the first.
        assert!((m.duration_s - 3.02).abs() < 1e-9, "{}", m.duration_s);
        assert!(m
            .notes
            .iter()
            .any(|n| n.starts_with("merged from 2 results")));
    }

    #[test]
    fn a_coarse_point_takes_in_the_seconds_of_other_runs_within_it() {
        let samples: Vec<(u16, u64, u64)> = (0..4).map(|k| (200, 100 + k * 100, k)).collect();
        let mut a = result(&samples, 10_000);
        for (p, c) in a.timeline.iter_mut().zip([5, 6, 7, 8]) {
            p.connections = c;
        }
        let mut b = a.clone();
        // The first run's seconds 0..3 were coarsened into one point (a long run's old seconds).
        b.timeline = vec![crate::fold(&b.timeline[..3]), b.timeline[3].clone()];
        let m = merge(&[a, b]).unwrap();
        let per: Vec<(u64, f64, u64, u64, u64)> = m
            .timeline
            .iter()
            .map(|p| {
                (
                    p.second,
                    p.length_s,
                    p.completed,
                    p.connections,
                    p.latency_us.max,
                )
            })
            .collect();
        // Each run's connections at the point's end, added; the histograms merged.
        assert_eq!(per, vec![(0, 3.0, 6, 14, 300), (3, 1.0, 2, 16, 400)]);
    }

    #[test]
    fn stages_of_one_shape_add_up_with_their_timeline_targets() {
        let staged = |start: f64, targets: &[f64], durations: &[f64]| {
            let mut r = result(&[(200, 100, 0), (200, 100, 1)], 10_000);
            r.info.stages = Some(crate::StagesInfo {
                of: "connections".into(),
                start,
                stages: durations
                    .iter()
                    .zip(targets)
                    .map(|(&duration_s, &target)| crate::StageInfo { duration_s, target })
                    .collect(),
            });
            for (p, t) in r.timeline.iter_mut().zip(targets) {
                p.target = Some(*t);
                p.connections = *t as u64;
            }
            r
        };
        let a = staged(0.0, &[4.0, 2.0], &[1.0, 1.0]);
        let b = staged(1.0, &[3.0, 0.0], &[1.0, 1.0]);
        let m = merge(&[a.clone(), b]).unwrap();
        let st = m.info.stages.unwrap();
        assert_eq!(st.start, 1.0);
        let targets: Vec<f64> = st.stages.iter().map(|s| s.target).collect();
        assert_eq!(targets, [7.0, 2.0]);
        let points: Vec<_> = m
            .timeline
            .iter()
            .map(|p| (p.target, p.connections))
            .collect();
        assert_eq!(points, [(Some(7.0), 7), (Some(2.0), 2)]);
        // Stages of another shape have no sum.
        let c = staged(0.0, &[4.0, 2.0], &[1.0, 2.0]);
        assert_eq!(merge(&[a, c]).unwrap().info.stages, None);
    }

    #[test]
    fn refuses_results_it_cannot_merge_exactly() {
        let mut old = result(&[(200, 1, 0)], 0);
        old.histograms = None;
        assert!(merge(&[old])
            .unwrap_err()
            .contains("no embedded histograms"));
        let closed = result(&[(200, 1, 0)], 0);
        let mut open = result(&[(200, 1, 0)], 0);
        open.latency_from = LatencyFrom::Due;
        open.info.load_model = LoadModel::Open;
        assert!(merge(&[closed, open]).unwrap_err().contains("closed loop"));
        assert!(merge(&[]).is_err());
    }

    #[test]
    fn runs_on_different_backends_keep_one_io_and_say_so() {
        let epoll = result(&[(200, 1, 0)], 0);
        let mut uring = result(&[(200, 2, 0)], 0);
        uring.info.io = Io::Uring;
        uring.stopped_by = StopReason::Signal;
        let merged = merge(&[epoll.clone(), uring]).unwrap();
        assert_eq!(merged.info.io, Io::Epoll);
        assert_eq!(merged.stopped_by, StopReason::Signal);
        assert!(
            merged.notes.iter().any(|n| n.contains("(epoll, io_uring)")),
            "{:?}",
            merged.notes
        );
        let same = merge(&[epoll.clone(), epoll]).unwrap();
        assert!(!same.notes.iter().any(|n| n.contains("I/O backends")));
    }
}
