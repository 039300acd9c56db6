//! Live metrics for Prometheus, from the run's per-second points (on the thread that calls
//! `on_second`, never on the per-request path): counters of requests sent and completed,
//! errors by kind, responses by status code and class, bytes, late starts; gauges of
//! connections, the rate asked for and the rate reached, and the last second's latency (and
//! open-loop lag) percentiles; and latency and lag as Prometheus histograms (and, by kind of
//! run, event streams, WebSocket and QUIC counts).
//!
//! The text exposition is written here rather than through the prometheus-client crate: its
//! histograms take observations one at a time, while pelt already has each second's latency
//! as an HDR histogram, whose cumulative bucket counts are read off directly
//! (`count_between`, exact to HdrHistogram's 3 significant digits at a bucket's edge).

use pelt_stats::{LatencyHistogram, RunInfo, TimelinePoint};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The latency histogram's upper bounds, seconds (500 us to 10 s, then +Inf).
pub const LATENCY_BUCKETS_S: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The run's metrics so far.
#[derive(Debug, Clone)]
pub struct Metrics {
    /// `name="value"` pairs on every series: the run, and (in a fleet) the agent.
    labels: Vec<(String, String)>,
    target: String,
    method: String,
    model: String,
    /// The rate asked for (open loop), per second; the stages' target replaces it each second.
    rate: Option<f64>,
    sent: u64,
    completed: u64,
    errors: u64,
    errors_by_kind: BTreeMap<String, u64>,
    /// Errors that came with a protocol's code, by (kind, code).
    error_codes: BTreeMap<(String, String), u64>,
    codes: BTreeMap<u16, u64>,
    /// gRPC runs: calls by gRPC status name.
    grpc: BTreeMap<String, u64>,
    bytes_sent: u64,
    bytes_received: u64,
    late: u64,
    latency: Buckets,
    /// Time to first byte (from the same start as latency).
    ttfb: Buckets,
    /// Event streams (from the first second that read one).
    streams: Option<StreamMetrics>,
    /// The run judges its streams against latency targets (`--goodput`): goodput is a series
    /// from its first stream, 0 until one meets them.
    slo: bool,
    /// WebSocket runs: the socket counts so far.
    websocket: Option<pelt_stats::WsPoint>,
    /// HTTP/3 runs: QUIC's counts so far.
    quic: Option<pelt_stats::QuicStats>,
    /// Open loop: the lag's histogram.
    lag: Option<Buckets>,
    connections: u64,
    seconds: u64,
    /// The last second: its rate, and its latency and lag percentiles (p50, p90, p99, max),
    /// seconds.
    last_rps: f64,
    last: Option<[f64; 4]>,
    last_ttfb: Option<[f64; 4]>,
    last_lag: Option<[f64; 4]>,
    finished: bool,
    /// `--monitor`: the run's verdict, once it has ended.
    verdict: Option<pelt_stats::Verdict>,
    /// Per target name (`--targets` with names): the names, and their counts so far.
    target_names: Vec<String>,
    targets: Vec<pelt_stats::TargetCounts>,
    /// `--monitor`: the last second's sample, and the host's counters summed over the seconds.
    resources: Option<pelt_stats::ResourceSample>,
    host_totals: [u64; 5],
}

/// Event streams so far: events, streams ended and cut, time to first event and the gaps.
#[derive(Debug, Clone, Default)]
struct StreamMetrics {
    events: u64,
    streams: u64,
    cut: u64,
    ttft: Buckets,
    gap: Buckets,
    /// Streams that met --goodput's targets (goodput).
    met: u64,
    /// Tokens servers counted (`usage`), and the time per output token; `tokens`: any seen.
    tokens: bool,
    input_tokens: u64,
    output_tokens: u64,
    tpot: Buckets,
}

/// A Prometheus histogram: cumulative counts at each bound of [`LATENCY_BUCKETS_S`], the
/// count and the sum.
#[derive(Debug, Clone, Default)]
struct Buckets {
    le: [u64; LATENCY_BUCKETS_S.len()],
    count: u64,
    sum_s: f64,
}

impl Buckets {
    /// Adds a histogram of microseconds.
    fn add(&mut self, h: &LatencyHistogram) {
        let hdr = h.hdr();
        for (b, bound) in self.le.iter_mut().zip(LATENCY_BUCKETS_S) {
            *b += hdr.count_between(0, (bound * 1e6) as u64);
        }
        self.count += hdr.len();
        self.sum_s += hdr.mean() * hdr.len() as f64 / 1e6;
    }
}

/// p50, p90, p99 and max of a histogram of microseconds, in seconds (`None`: empty).
fn percentiles(h: &LatencyHistogram) -> Option<[f64; 4]> {
    (h.count() > 0).then(|| {
        let s = h.summary();
        [s.p50_us, s.p90_us, s.p99_us, s.max_us].map(|us| us as f64 / 1e6)
    })
}

impl Metrics {
    /// Metrics of a run described by `info`, labelled `run` (and any `extra` labels).
    pub fn new(info: &RunInfo, run: &str, extra: &[(&str, &str)]) -> Metrics {
        let mut labels = vec![("run".to_string(), run.to_string())];
        labels.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Metrics {
            labels,
            target: info.target.clone(),
            method: info.method.clone(),
            model: info.load_model.to_string(),
            rate: info.rate,
            sent: 0,
            completed: 0,
            errors: 0,
            // Every kind from the start, at 0: a query of errors finds a series before the
            // first one.
            errors_by_kind: pelt_stats::ErrorKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), 0))
                .collect(),
            error_codes: BTreeMap::new(),
            codes: BTreeMap::new(),
            grpc: BTreeMap::new(),
            bytes_sent: 0,
            bytes_received: 0,
            late: 0,
            latency: Buckets::default(),
            ttfb: Buckets::default(),
            streams: None,
            slo: false,
            websocket: None,
            quic: None,
            lag: (info.load_model == pelt_stats::LoadModel::Open).then(Buckets::default),
            connections: 0,
            seconds: 0,
            last_rps: 0.0,
            last: None,
            last_ttfb: None,
            last_lag: None,
            finished: false,
            verdict: None,
            target_names: Vec::new(),
            targets: Vec::new(),
            resources: None,
            host_totals: [0; 5],
        }
    }

    /// Counts per target name too, for a run whose targets have these names (in order).
    /// The run has `--goodput` targets: `pelt_stream_goodput_total` from its first stream.
    pub fn with_slo(mut self, slo: bool) -> Metrics {
        self.slo = slo;
        self
    }

    pub fn with_target_names(mut self, names: &[String]) -> Metrics {
        self.target_names = names.to_vec();
        self.targets = vec![Default::default(); names.len()];
        self
    }

    /// Adds one second (of the whole run: a fleet's coordinator adds its merged seconds).
    pub fn add(&mut self, p: &TimelinePoint) -> Result<(), String> {
        self.sent += p.sent;
        self.completed += p.completed;
        self.errors += p.errors;
        let d = &p.detail;
        for (status, n) in &d.grpc {
            *self.grpc.entry(status.clone()).or_insert(0) += n;
        }
        for (code, n) in &d.codes {
            *self.codes.entry(*code).or_insert(0) += n;
        }
        for (kind, n) in &d.errors {
            *self.errors_by_kind.entry(kind.clone()).or_insert(0) += n;
        }
        for (kind, codes) in &d.error_codes {
            for (code, n) in codes {
                let key = (kind.clone(), code.clone());
                *self.error_codes.entry(key).or_insert(0) += n;
            }
        }
        self.bytes_sent += d.bytes_sent;
        self.bytes_received += d.bytes_received;
        self.late += d.late;
        if let Some(h) = &p.histogram {
            self.latency.add(&LatencyHistogram::decode(h)?);
        }
        if let Some(h) = &p.ttfb_histogram {
            self.ttfb.add(&LatencyHistogram::decode(h)?);
        }
        if let Some(e) = &p.event_streams {
            let m = self.streams.get_or_insert_with(StreamMetrics::default);
            m.events += e.events;
            m.streams += e.streams;
            m.cut += e.cut;
            m.ttft.add(&LatencyHistogram::decode(&e.ttft_histogram)?);
            m.gap.add(&LatencyHistogram::decode(&e.gap_histogram)?);
            m.met += e.met;
            if let Some(h) = &e.tpot_histogram {
                m.tokens = true;
                m.input_tokens += e.input_tokens;
                m.output_tokens += e.output_tokens;
                m.tpot.add(&LatencyHistogram::decode(h)?);
            }
        }
        if let Some(w) = &p.websocket {
            self.websocket.get_or_insert_with(Default::default).merge(w);
        }
        if let Some(q) = &p.quic {
            self.quic.get_or_insert_with(Default::default).merge(q);
        }
        if let (Some(b), Some(lag)) = (self.lag.as_mut(), &d.lag) {
            b.add(lag);
        }
        self.last_lag = d.lag.as_ref().and_then(percentiles);
        for (a, b) in self.targets.iter_mut().zip(&d.targets) {
            a.sent += b.sent;
            a.completed += b.completed;
            a.errors += b.errors;
        }
        if let Some(r) = &p.resources {
            let h = &r.host;
            let add = [
                h.net_rx_bytes,
                h.net_tx_bytes,
                h.tcp_retransmits,
                h.listen_overflows,
                h.listen_drops,
            ];
            for (total, n) in self.host_totals.iter_mut().zip(add) {
                *total += n;
            }
            self.resources = Some(r.clone());
        }
        self.connections = p.connections;
        if p.target.is_some() {
            self.rate = p.target.filter(|_| self.model == "open");
        }
        self.seconds += 1;
        self.last_rps = p.rps;
        let s = |us: u64| us as f64 / 1e6;
        self.last = (p.completed > 0).then(|| {
            let l = &p.latency_us;
            [s(l.p50), s(l.p90), s(l.p99), s(l.max)]
        });
        self.last_ttfb = p
            .ttfb_us
            .filter(|_| p.completed > 0)
            .map(|l| [s(l.p50), s(l.p90), s(l.p99), s(l.max)]);
        Ok(())
    }

    /// The run has ended: its final values stay.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// The run's verdict (`--monitor`), served from its end on as `pelt_bottleneck`.
    pub fn set_verdict(&mut self, verdict: &pelt_stats::Verdict) {
        self.verdict = Some(verdict.clone());
    }

    /// Requests completed so far (what `pelt_requests_completed_total` says).
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// Every metric family so far, with its series (the text format and remote write both
    /// come from this).
    pub fn families(&self) -> Vec<Family> {
        let mut f = Families {
            labels: &self.labels,
            out: Vec::new(),
        };
        self.run_families(&mut f);
        self.resource_families(&mut f);
        self.verdict_family(&mut f);
        self.target_families(&mut f);
        self.latency_families(&mut f);
        f.out
    }

    /// The run, its requests, responses, bytes, connections and rates.
    fn run_families(&self, f: &mut Families) {
        let info = [
            ("target", self.target.as_str()),
            ("method", self.method.as_str()),
            ("load_model", self.model.as_str()),
        ];
        f.gauge_with(
            "pelt_run_info",
            "The run: its target, method and load model (always 1).",
            &info,
            1.0,
        );
        f.gauge(
            "pelt_run_finished",
            "1 once the run has ended (the values are then final).",
            f64::from(u8::from(self.finished)),
        );
        f.counter("pelt_requests_sent_total", "Requests started.", self.sent);
        f.counter(
            "pelt_requests_completed_total",
            "Requests that ended in a complete response (any status).",
            self.completed,
        );
        let errors = self
            .errors_by_kind
            .iter()
            .map(|(kind, n)| (vec![("kind", kind.to_string())], *n as f64));
        f.labelled(
            "pelt_request_errors_total",
            "counter",
            "Requests that ended in an error (no complete response), by kind.",
            errors,
        );
        if !self.error_codes.is_empty() {
            let coded = self.error_codes.iter().map(|((kind, code), n)| {
                let labels = vec![("kind", kind.clone()), ("code", code.clone())];
                (labels, *n as f64)
            });
            f.labelled(
                "pelt_request_error_codes_total",
                "counter",
                "Request errors that came with a protocol's code (a server's stream reset, \
                 the code a QUIC connection ended with), by kind and code.",
                coded,
            );
        }
        let codes = self.codes.iter().map(|(code, n)| {
            let class = match code / 100 {
                c @ 1..=5 => format!("{c}xx"),
                _ => "other".into(),
            };
            (
                vec![("code", code.to_string()), ("class", class)],
                *n as f64,
            )
        });
        f.labelled(
            "pelt_responses_total",
            "counter",
            "Complete responses by status code (and its class).",
            codes,
        );
        if !self.grpc.is_empty() {
            let calls = self
                .grpc
                .iter()
                .map(|(status, n)| (vec![("status", status.clone())], *n as f64));
            f.labelled(
                "pelt_grpc_calls_total",
                "counter",
                "gRPC calls that ended with a status, by gRPC status (OK, UNAVAILABLE, ...).",
                calls,
            );
        }
        f.counter(
            "pelt_sent_bytes_total",
            "Bytes written to the sockets.",
            self.bytes_sent,
        );
        f.counter(
            "pelt_received_bytes_total",
            "Bytes read from the sockets.",
            self.bytes_received,
        );
        f.gauge(
            "pelt_connections",
            "Connections open (or opening) at the end of the last second.",
            self.connections as f64,
        );
        if let Some(r) = self.rate {
            f.gauge(
                "pelt_target_rate_requests_per_second",
                "Open loop: the arrival rate asked for (with stages, the last second's).",
                r,
            );
        }
        f.gauge(
            "pelt_achieved_rate_requests_per_second",
            "Complete responses per second in the last second.",
            self.last_rps,
        );
    }

    /// `--monitor`, once the run has ended: its verdict.
    fn verdict_family(&self, f: &mut Families) {
        if let Some(v) = &self.verdict {
            let limits: Vec<pelt_stats::Bottleneck> = v.limits().collect();
            let series = pelt_stats::Bottleneck::ALL.iter().map(|b| {
                let place = limits.iter().position(|l| l == b).map_or(0, |i| i + 1);
                (vec![("bottleneck", b.key().to_string())], place as f64)
            });
            f.labelled(
                "pelt_bottleneck",
                "gauge",
                "What limited the run (--monitor, from its end): 1 for the tightest limit, 2 for \
                 the next at its limit too, ..., 0 for the rest.",
                series,
            );
        }
    }

    /// `--monitor`: the last second's CPU and memory, the host's network and TCP counters.
    fn resource_families(&self, f: &mut Families) {
        let Some(r) = &self.resources else {
            return;
        };
        if let Some(s) = &r.server {
            f.gauge(
                "pelt_server_cpu_cores",
                "The monitored server's CPU in the last second, in cores.",
                s.cpu(),
            );
            f.gauge(
                "pelt_server_cpu_capacity_cores",
                "The most CPU the server could use in the last second (its threads that ran, at \
                 most its cores).",
                s.cpu_capacity,
            );
            f.gauge(
                "pelt_server_resident_memory_bytes",
                "The monitored server's resident memory.",
                s.rss_bytes as f64,
            );
            f.gauge(
                "pelt_server_threads",
                "The monitored server's threads.",
                s.threads as f64,
            );
            f.gauge(
                "pelt_server_open_fds",
                "The monitored server's open file descriptors.",
                s.fds as f64,
            );
        }
        if let Some(h) = &r.server_host {
            f.gauge(
                "pelt_server_host_cpu_busy_cores",
                "The server's machine's CPU busy in the last second (a remote monitor, every \
                 mode but idle), in cores.",
                h.cpu_busy(),
            );
            f.gauge(
                "pelt_server_host_memory_used_bytes",
                "The server's machine's memory in use (a remote monitor).",
                h.mem_used_bytes as f64,
            );
        }
        f.gauge(
            "pelt_self_cpu_cores",
            "pelt's own CPU in the last second, in cores.",
            r.pelt.cpu(),
        );
        f.gauge(
            "pelt_host_cpu_busy_cores",
            "The host's CPU busy in the last second (every mode but idle), in cores.",
            r.host.cpu_busy(),
        );
        f.gauge(
            "pelt_host_cpu_softirq_cores",
            "The host's CPU in softirq in the last second, in cores.",
            r.host.cpu_softirq,
        );
        let [rx, tx, retransmits, overflows, drops] = self.host_totals;
        f.counter(
            "pelt_host_network_received_bytes_total",
            "Bytes received over every interface of the host since the run started.",
            rx,
        );
        f.counter(
            "pelt_host_network_sent_bytes_total",
            "Bytes sent over every interface of the host since the run started.",
            tx,
        );
        f.counter(
            "pelt_host_tcp_retransmits_total",
            "TCP segments the host retransmitted since the run started.",
            retransmits,
        );
        f.counter(
            "pelt_host_listen_overflows_total",
            "Connections the host refused for a full listen queue since the run started.",
            overflows,
        );
        f.counter(
            "pelt_host_listen_drops_total",
            "SYNs the host dropped since the run started.",
            drops,
        );
    }

    /// Per target name (`--targets`).
    fn target_families(&self, f: &mut Families) {
        if self.target_names.is_empty() {
            return;
        }
        let families: [PerTarget; 3] = [
            (
                "pelt_target_requests_sent_total",
                "Per target name (--targets): measured requests started.",
                |c| c.sent,
            ),
            (
                "pelt_target_requests_completed_total",
                "Per target name (--targets): measured requests that ended in a complete response.",
                |c| c.completed,
            ),
            (
                "pelt_target_request_errors_total",
                "Per target name (--targets): measured requests that ended in an error.",
                |c| c.errors,
            ),
        ];
        for (name, help, pick) in families {
            let series = self
                .target_names
                .iter()
                .zip(&self.targets)
                .map(|(n, c)| (vec![("name", n.clone())], pick(c) as f64));
            f.labelled(name, "counter", help, series);
        }
    }

    /// Latency, and in open loop late starts and lag.
    fn latency_families(&self, f: &mut Families) {
        if let Some(last) = self.last {
            f.quantiles(
                "pelt_latency_last_second_seconds",
                "The last second's latency percentiles, exact from its HDR histogram (quantile 1: the max).",
                last,
            );
        }
        f.histogram(
            "pelt_latency_seconds",
            "Latency of complete responses (open loop: from the due time).",
            &self.latency,
        );
        if let Some(last) = self.last_ttfb {
            f.quantiles(
                "pelt_ttfb_last_second_seconds",
                "The last second's time to first byte percentiles (quantile 1: the max).",
                last,
            );
        }
        f.histogram(
            "pelt_ttfb_seconds",
            "Time to the first byte of complete responses, from where latency starts.",
            &self.ttfb,
        );
        self.stream_families(f);
        self.websocket_families(f);
        self.quic_families(f);
        let Some(lag) = &self.lag else { return };
        f.counter(
            "pelt_requests_late_total",
            "Open loop: requests that started over 1 ms after their due time.",
            self.late,
        );
        if let Some(last) = self.last_lag {
            f.quantiles(
                "pelt_lag_last_second_seconds",
                "Open loop: the last second's lag (due time to start, pelt's own delay) percentiles.",
                last,
            );
        }
        f.histogram(
            "pelt_lag_seconds",
            "Open loop: the lag of every request started (due time to start, pelt's own delay).",
            lag,
        );
    }

    /// Event streams: events, streams, their time to first event and gaps.
    fn stream_families(&self, f: &mut Families) {
        if let Some(m) = &self.streams {
            f.counter(
                "pelt_stream_events_total",
                "Event streams: events received (tokens, for an LLM server).",
                m.events,
            );
            f.counter(
                "pelt_streams_total",
                "Event streams that ended (by the server, at --stream-end, or cut).",
                m.streams,
            );
            f.counter(
                "pelt_streams_cut_total",
                "Event streams pelt ended at --stream-limit.",
                m.cut,
            );
            f.histogram(
                "pelt_stream_first_event_seconds",
                "Event streams: time to first event (TTFT), from where latency starts.",
                &m.ttft,
            );
            f.histogram(
                "pelt_stream_gap_seconds",
                "Event streams: the gap before each event after a stream's first.",
                &m.gap,
            );
            if self.slo || m.met > 0 {
                f.counter(
                    "pelt_stream_goodput_total",
                    "Event streams that met every --goodput target (goodput).",
                    m.met,
                );
            }
            if m.tokens {
                f.counter(
                    "pelt_stream_input_tokens_total",
                    "Event streams: input (prompt) tokens, as servers counted them (usage).",
                    m.input_tokens,
                );
                f.counter(
                    "pelt_stream_output_tokens_total",
                    "Event streams: output (completion) tokens, as servers counted them (usage).",
                    m.output_tokens,
                );
                f.histogram(
                    "pelt_stream_time_per_output_token_seconds",
                    "Event streams: per stream, its time after its first event over its output \
                     tokens less one (TPOT).",
                    &m.tpot,
                );
            }
        }
    }

    /// A WebSocket run's counts.
    fn websocket_families(&self, f: &mut Families) {
        if let Some(w) = &self.websocket {
            let counters = [
                (
                    "pelt_websocket_upgrades_total",
                    "WebSocket upgrades the server accepted.",
                    w.upgrades,
                ),
                (
                    "pelt_websocket_messages_received_total",
                    "WebSocket data messages received (replies and pushes).",
                    w.messages_received,
                ),
                (
                    "pelt_websocket_received_bytes_total",
                    "WebSocket data messages' payload bytes received.",
                    w.received_bytes,
                ),
                (
                    "pelt_websocket_pushed_total",
                    "WebSocket messages received with none of pelt's awaiting a reply.",
                    w.pushed,
                ),
                (
                    "pelt_websocket_pings_sent_total",
                    "WebSocket pings pelt sent (--ws-ping).",
                    w.pings_sent,
                ),
                (
                    "pelt_websocket_pongs_total",
                    "WebSocket pongs received.",
                    w.pongs,
                ),
                (
                    "pelt_websocket_drops_total",
                    "WebSocket sockets the server ended while pelt held them.",
                    w.drops,
                ),
            ];
            for (name, help, v) in counters {
                f.counter(name, help, v);
            }
        }
    }

    /// An HTTP/3 run's QUIC counts.
    fn quic_families(&self, f: &mut Families) {
        let Some(q) = &self.quic else {
            return;
        };
        let counters = [
            (
                "pelt_quic_packets_sent_total",
                "QUIC packets sent.",
                q.packets_sent,
            ),
            (
                "pelt_quic_packets_lost_total",
                "QUIC packets declared lost (their frames sent again as needed).",
                q.packets_lost,
            ),
            (
                "pelt_quic_lost_bytes_total",
                "The bytes of the QUIC packets lost.",
                q.bytes_lost,
            ),
            (
                "pelt_quic_congestion_events_total",
                "Losses that made pelt's QUIC sender cut its congestion window.",
                q.congestion_events,
            ),
            (
                "pelt_quic_datagrams_sent_total",
                "UDP datagrams sent.",
                q.datagrams_sent,
            ),
            (
                "pelt_quic_datagrams_received_total",
                "UDP datagrams received.",
                q.datagrams_received,
            ),
            (
                "pelt_quic_blocked_by_server_total",
                "Flow-control and stream-limit blocks pelt sent (held back by the server).",
                q.blocked_by_server,
            ),
            (
                "pelt_quic_blocked_by_pelt_total",
                "Flow-control and stream-limit blocks the server sent (held back by pelt).",
                q.blocked_by_pelt,
            ),
            (
                "pelt_quic_early_accepted_total",
                "Connections whose 0-RTT requests the server took.",
                q.early_accepted,
            ),
            (
                "pelt_quic_early_refused_total",
                "Connections whose 0-RTT requests the server refused.",
                q.early_refused,
            ),
            (
                "pelt_quic_early_resent_total",
                "Requests sent again after the server refused their 0-RTT.",
                q.early_resent,
            ),
        ];
        for (name, help, v) in counters {
            f.counter(name, help, v);
        }
    }

    /// Metrics of one agent of a fleet run described by `info`: labelled `agent`, without
    /// the rate asked for (that is the fleet's).
    pub fn for_agent(info: &RunInfo, run: &str, rank: u32) -> Metrics {
        let mut m = Metrics::new(info, run, &[("agent", &rank.to_string())]);
        m.rate = None;
        m
    }

    /// A Prometheus remote-write request (protobuf, snappy-compressed, as
    /// `Content-Encoding: snappy`, `Content-Type: application/x-protobuf` and
    /// `X-Prometheus-Remote-Write-Version: 0.1.0` say) of every series' value at
    /// `timestamp_ms` (milliseconds since the Unix epoch).
    pub fn write_request(&self, timestamp_ms: i64) -> Vec<u8> {
        write_request_of(&[self], timestamp_ms)
    }

    /// The Prometheus text exposition (format 0.0.4) of the metrics so far.
    pub fn text(&self) -> String {
        text_of(&[self])
    }
}

/// One remote-write request of several metrics' series at `timestamp_ms` (see
/// [`Metrics::write_request`]).
pub fn write_request_of(all: &[&Metrics], timestamp_ms: i64) -> Vec<u8> {
    use prometheus_remote_write as rw;
    let timeseries = merged_families(all)
        .into_iter()
        .flat_map(|f| f.series)
        .map(|s| {
            let mut labels = vec![rw::Label {
                name: rw::LABEL_NAME.into(),
                value: s.name,
            }];
            labels.extend(
                s.labels
                    .into_iter()
                    .map(|(name, value)| rw::Label { name, value }),
            );
            rw::TimeSeries {
                labels,
                samples: vec![rw::Sample {
                    value: s.value,
                    timestamp: timestamp_ms,
                }],
            }
        })
        .collect();
    rw::WriteRequest { timeseries }
        .encode_compressed()
        .expect("snappy compresses any input")
}

/// The text exposition of several metrics (a fleet's and its agents'): each family once,
/// with the series of all of them.
pub fn text_of(all: &[&Metrics]) -> String {
    let mut out = String::new();
    for f in merged_families(all) {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for s in &f.series {
            let labels: Vec<String> = s
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let _ = writeln!(
                out,
                "{}{{{}}} {}",
                s.name,
                labels.join(","),
                number(s.value)
            );
        }
    }
    out
}

/// The families of `all`, each name once (in first-seen order) with every one's series.
fn merged_families(all: &[&Metrics]) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for f in all.iter().flat_map(|m| m.families()) {
        match out.iter_mut().find(|o| o.name == f.name) {
            Some(o) => o.series.extend(f.series),
            None => out.push(f),
        }
    }
    out
}

/// A metric family: its name, type and help, and its series.
#[derive(Debug, Clone)]
pub struct Family {
    pub name: &'static str,
    pub kind: &'static str,
    pub help: &'static str,
    pub series: Vec<Series>,
}

/// A per-target family: its name, help, and the count it takes of each target.
type PerTarget = (
    &'static str,
    &'static str,
    fn(&pelt_stats::TargetCounts) -> u64,
);

/// Families as they are built: each series gets the run's labels first.
struct Families<'a> {
    labels: &'a [(String, String)],
    out: Vec<Family>,
}

impl Families<'_> {
    fn labels(&self, more: &[(&str, String)]) -> Vec<(String, String)> {
        let mut l = self.labels.to_vec();
        l.extend(more.iter().map(|(k, v)| (k.to_string(), v.clone())));
        l
    }

    /// A family of one series per `(labels, value)`.
    fn labelled<'l>(
        &mut self,
        name: &'static str,
        kind: &'static str,
        help: &'static str,
        series: impl Iterator<Item = (Vec<(&'l str, String)>, f64)>,
    ) {
        let series = series
            .map(|(more, value)| Series {
                name: name.to_string(),
                labels: self.labels(&more),
                value,
            })
            .collect();
        self.out.push(Family {
            name,
            kind,
            help,
            series,
        });
    }

    fn counter(&mut self, name: &'static str, help: &'static str, v: u64) {
        self.labelled(name, "counter", help, std::iter::once((vec![], v as f64)));
    }

    fn gauge(&mut self, name: &'static str, help: &'static str, v: f64) {
        self.labelled(name, "gauge", help, std::iter::once((vec![], v)));
    }

    fn gauge_with(
        &mut self,
        name: &'static str,
        help: &'static str,
        more: &[(&str, &str)],
        v: f64,
    ) {
        let more: Vec<(&str, String)> = more.iter().map(|(k, v)| (*k, v.to_string())).collect();
        self.labelled(name, "gauge", help, std::iter::once((more, v)));
    }

    /// The last second's p50, p90, p99 and max.
    fn quantiles(&mut self, name: &'static str, help: &'static str, last: [f64; 4]) {
        let series = ["0.5", "0.9", "0.99", "1"]
            .iter()
            .zip(last)
            .map(|(q, v)| (vec![("quantile", q.to_string())], v));
        self.labelled(name, "gauge", help, series);
    }

    /// A Prometheus histogram: cumulative buckets, `+Inf`, `_sum` and `_count`.
    fn histogram(&mut self, name: &'static str, help: &'static str, b: &Buckets) {
        let bucket = |le: String, n: u64| Series {
            name: format!("{name}_bucket"),
            labels: self.labels(&[("le", le)]),
            value: n as f64,
        };
        let mut series: Vec<Series> = LATENCY_BUCKETS_S
            .iter()
            .zip(b.le)
            .map(|(le, n)| bucket(number(*le), n))
            .collect();
        series.push(bucket("+Inf".into(), b.count));
        for (suffix, value) in [("sum", b.sum_s), ("count", b.count as f64)] {
            series.push(Series {
                name: format!("{name}_{suffix}"),
                labels: self.labels.to_vec(),
                value,
            });
        }
        self.out.push(Family {
            name,
            kind: "histogram",
            help,
            series,
        });
    }
}

/// One series' current value (a histogram's series are named `_bucket`, `_sum`, `_count`).
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// A label value as the text format wants it: backslash, quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value: integers without a fraction, others as Rust prints them (round-trip).
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(second: u64, latencies_us: &[u64], errors: u64) -> TimelinePoint {
        let mut iv = pelt_stats::Interval::new(second);
        for &l in latencies_us {
            // The first byte came at a fifth of the latency.
            iv.record_response(200, l, l / 5);
        }
        iv.sent = latencies_us.len() as u64 + errors;
        iv.errors = errors;
        iv.connections = 4;
        // What a worker's hand-over takes from its totals.
        iv.detail.codes.insert(200, latencies_us.len() as u64);
        if errors > 0 {
            iv.detail.errors.insert("timeout".into(), errors);
        }
        iv.detail.bytes_sent = 50;
        iv.point(1.0, false)
    }

    fn info() -> RunInfo {
        let spec = crate::LoadSpec::new("http://127.0.0.1:1/a\"b");
        crate::fleet::validate_elsewhere(&spec).unwrap().info
    }

    #[test]
    fn event_streams_are_counters_and_histograms() {
        let mut m = Metrics::new(&info(), "r1", &[]);
        assert!(!m.text().contains("pelt_stream"));
        for second in 0..2 {
            let mut iv = pelt_stats::Interval::new(second);
            iv.record_response(200, 900, 100);
            let s = iv.streams();
            s.events = 3;
            s.streams = 1;
            s.cut = second;
            s.ttft.record(400);
            s.gap.record(2_000);
            s.gap.record(2_000);
            m.add(&iv.point(1.0, false)).unwrap();
        }
        let text = m.text();
        for line in [
            "pelt_stream_events_total{run=\"r1\"} 6",
            "pelt_streams_total{run=\"r1\"} 2",
            "pelt_streams_cut_total{run=\"r1\"} 1",
            "pelt_stream_first_event_seconds_count{run=\"r1\"} 2",
            "pelt_stream_first_event_seconds_bucket{run=\"r1\",le=\"0.0005\"} 2",
            "pelt_stream_gap_seconds_count{run=\"r1\"} 4",
            "pelt_stream_gap_seconds_bucket{run=\"r1\",le=\"0.001\"} 0",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        // Without usage and --goodput: no token or goodput series.
        assert!(
            !text.contains("_tokens_total") && !text.contains("goodput"),
            "{text}"
        );
        let mut m = Metrics::new(&info(), "r1", &[]).with_slo(true);
        for second in 0..2 {
            let mut iv = pelt_stats::Interval::new(second);
            iv.record_response(200, 900, 100);
            iv.streams().end(&pelt_stats::StreamFigures {
                events: 5,
                bytes: 100,
                duration_us: 50_000,
                span_us: 40_000,
                after_first_us: 40_000,
                usage: Some(pelt_stats::Usage {
                    input: 7,
                    output: 11,
                }),
                end: pelt_stats::StreamEnd::Marker,
                met: Some(second == 1),
            });
            m.add(&iv.point(1.0, false)).unwrap();
        }
        let text = m.text();
        for line in [
            "pelt_stream_goodput_total{run=\"r1\"} 1",
            "pelt_stream_input_tokens_total{run=\"r1\"} 14",
            "pelt_stream_output_tokens_total{run=\"r1\"} 22",
            "pelt_stream_time_per_output_token_seconds_count{run=\"r1\"} 2",
            // 40 ms over 10 tokens: 4 ms a token.
            "pelt_stream_time_per_output_token_seconds_bucket{run=\"r1\",le=\"0.005\"} 2",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
    }

    #[test]
    fn websocket_counts_are_counters() {
        let mut m = Metrics::new(&info(), "r1", &[]);
        assert!(!m.text().contains("pelt_websocket"));
        for second in 0..3 {
            let mut iv = pelt_stats::Interval::new(second);
            iv.websocket = Some(pelt_stats::WsPoint {
                upgrades: 10 * (second == 0) as u64,
                messages_received: 100,
                pushed: 1,
                drops: second,
                ..Default::default()
            });
            m.add(&iv.point(1.0, false)).unwrap();
        }
        let text = m.text();
        for line in [
            "pelt_websocket_upgrades_total{run=\"r1\"} 10",
            "pelt_websocket_messages_received_total{run=\"r1\"} 300",
            "pelt_websocket_pushed_total{run=\"r1\"} 3",
            "pelt_websocket_drops_total{run=\"r1\"} 3",
            "pelt_websocket_pongs_total{run=\"r1\"} 0",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
    }

    #[test]
    fn quic_counts_are_counters() {
        let mut m = Metrics::new(&info(), "r1", &[]);
        assert!(!m.text().contains("pelt_quic"));
        for second in 0..3 {
            let mut iv = pelt_stats::Interval::new(second);
            iv.quic = Some(pelt_stats::QuicStats {
                packets_sent: 100,
                packets_lost: second,
                early_refused: 1,
                ..Default::default()
            });
            m.add(&iv.point(1.0, false)).unwrap();
        }
        let text = m.text();
        for line in [
            "pelt_quic_packets_sent_total{run=\"r1\"} 300",
            "pelt_quic_packets_lost_total{run=\"r1\"} 3",
            "pelt_quic_early_refused_total{run=\"r1\"} 3",
            "pelt_quic_datagrams_sent_total{run=\"r1\"} 0",
            "# TYPE pelt_quic_congestion_events_total counter",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
    }

    #[test]
    fn errors_by_code_are_counters_by_kind_and_code() {
        let mut m = Metrics::new(&info(), "r1", &[]);
        assert!(!m.text().contains("pelt_request_error_codes_total"));
        for second in 0..2 {
            let mut iv = pelt_stats::Interval::new(second);
            let codes = iv
                .detail
                .error_codes
                .entry("stream_reset".into())
                .or_default();
            codes.insert("H3_REQUEST_REJECTED".into(), 2);
            m.add(&iv.point(1.0, false)).unwrap();
        }
        let text = m.text();
        let line = "pelt_request_error_codes_total{run=\"r1\",kind=\"stream_reset\",\
                    code=\"H3_REQUEST_REJECTED\"} 4";
        assert!(text.contains(line), "{line} missing:\n{text}");
    }

    #[test]
    fn monitor_samples_are_series() {
        let mut m = Metrics::new(&info(), "r1", &[]);
        assert!(!m.text().contains("pelt_server_cpu_cores"));
        for second in 0..2 {
            let mut p = point(second, &[100], 0);
            p.resources = Some(pelt_stats::ResourceSample {
                server: Some(pelt_stats::ProcessSample {
                    cpu_user: 0.5,
                    cpu_system: 0.25,
                    rss_bytes: 4096,
                    ..Default::default()
                }),
                host: pelt_stats::HostSample {
                    net_rx_bytes: 1000,
                    listen_overflows: 3,
                    ..Default::default()
                },
                server_host: Some(pelt_stats::HostSample {
                    cores: 4,
                    cpu_user: 1.5,
                    mem_used_bytes: 8192,
                    ..Default::default()
                }),
                pelt: Default::default(),
            });
            m.add(&p).unwrap();
        }
        let text = m.text();
        for line in [
            "pelt_server_cpu_cores{run=\"r1\"} 0.75",
            "pelt_server_resident_memory_bytes{run=\"r1\"} 4096",
            "pelt_server_host_cpu_busy_cores{run=\"r1\"} 1.5",
            "pelt_server_host_memory_used_bytes{run=\"r1\"} 8192",
            "pelt_host_network_received_bytes_total{run=\"r1\"} 2000",
            "pelt_host_listen_overflows_total{run=\"r1\"} 6",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
    }

    #[test]
    fn counters_add_up_and_buckets_are_cumulative() {
        let mut m = Metrics::new(&info(), "r1", &[("agent", "2")]);
        m.add(&point(0, &[100, 700, 3_000], 1)).unwrap();
        m.add(&point(1, &[20_000_000], 0)).unwrap();
        let t = m.text();
        for line in [
            "pelt_requests_sent_total{run=\"r1\",agent=\"2\"} 5",
            "pelt_requests_completed_total{run=\"r1\",agent=\"2\"} 4",
            "pelt_responses_total{run=\"r1\",agent=\"2\",code=\"200\",class=\"2xx\"} 4",
            "pelt_request_errors_total{run=\"r1\",agent=\"2\",kind=\"timeout\"} 1",
            "pelt_request_errors_total{run=\"r1\",agent=\"2\",kind=\"connect\"} 0",
            "pelt_sent_bytes_total{run=\"r1\",agent=\"2\"} 100",
            "pelt_connections{run=\"r1\",agent=\"2\"} 4",
            "pelt_latency_seconds_bucket{run=\"r1\",agent=\"2\",le=\"0.0005\"} 1",
            "pelt_latency_seconds_bucket{run=\"r1\",agent=\"2\",le=\"0.001\"} 2",
            "pelt_latency_seconds_bucket{run=\"r1\",agent=\"2\",le=\"0.005\"} 3",
            "pelt_latency_seconds_bucket{run=\"r1\",agent=\"2\",le=\"10\"} 3",
            "pelt_latency_seconds_bucket{run=\"r1\",agent=\"2\",le=\"+Inf\"} 4",
            "pelt_latency_seconds_count{run=\"r1\",agent=\"2\"} 4",
            "pelt_ttfb_seconds_bucket{run=\"r1\",agent=\"2\",le=\"0.0005\"} 2",
            "pelt_ttfb_seconds_bucket{run=\"r1\",agent=\"2\",le=\"0.001\"} 3",
            "pelt_ttfb_seconds_bucket{run=\"r1\",agent=\"2\",le=\"+Inf\"} 4",
            "pelt_run_finished{run=\"r1\",agent=\"2\"} 0",
            "# TYPE pelt_latency_seconds histogram",
        ] {
            assert!(t.lines().any(|l| l == line), "no {line:?} in\n{t}");
        }
        // The target's quote is escaped; the last second's percentiles are its own.
        assert!(
            t.contains("target=\"http://127.0.0.1:1/a%22b\"") || t.contains("a\\\"b"),
            "{t}"
        );
        assert!(
            t.contains(
                "pelt_latency_last_second_seconds{run=\"r1\",agent=\"2\",quantile=\"0.5\"} 2"
            ),
            "{t}"
        );
        assert!(
            t.contains("pelt_ttfb_last_second_seconds{run=\"r1\",agent=\"2\",quantile=\"0.99\"}"),
            "{t}"
        );
        m.finish();
        assert!(m
            .text()
            .contains("pelt_run_finished{run=\"r1\",agent=\"2\"} 1"));
        // --monitor's verdict, from the run's end: each party's place among the limits.
        assert!(!m.text().contains("pelt_bottleneck"));
        m.set_verdict(&pelt_stats::Verdict {
            bottleneck: pelt_stats::Bottleneck::ServerCpu,
            also: vec![pelt_stats::Bottleneck::Pelt],
            ..pelt_stats::Verdict::default()
        });
        let t = m.text();
        for line in [
            "# TYPE pelt_bottleneck gauge",
            "pelt_bottleneck{run=\"r1\",agent=\"2\",bottleneck=\"server-cpu\"} 1",
            "pelt_bottleneck{run=\"r1\",agent=\"2\",bottleneck=\"pelt\"} 2",
            "pelt_bottleneck{run=\"r1\",agent=\"2\",bottleneck=\"connections\"} 0",
        ] {
            assert!(t.lines().any(|l| l == line), "no {line:?} in\n{t}");
        }
    }

    #[test]
    fn label_values_and_numbers_are_written_as_the_format_wants() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.0025), "0.0025");
        assert_eq!(number(1e20), "100000000000000000000");
    }
}
