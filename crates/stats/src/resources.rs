//! The resources beside the load (`--monitor`): each second's sample of the server's processes,
//! the host and pelt itself, and the run's summary of them with a verdict on what limited the
//! run. The sampler (pelt-load's `monitor`) reads /proc; this module only holds and judges
//! what it read, so a saved result can be judged again.

use crate::{fmt, LatencyHistogram, Report, RunInfo, TimelinePoint};
use serde::{Deserialize, Serialize};

/// One second's resources: what the sampler read at the end of the timeline point it rides on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceSample {
    /// The monitored server (`--monitor`): its processes and their children, together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ProcessSample>,
    /// The machine pelt runs on.
    pub host: HostSample,
    /// The server's machine, when a remote monitor (`pelt monitor`, `--monitor-remote`)
    /// sampled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host: Option<HostSample>,
    /// pelt's own process.
    pub pelt: ProcessSample,
}

/// Processes over one second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSample {
    /// Processes counted.
    pub processes: u32,
    /// CPU in cores over the second (1.0: one core all second), user and system.
    pub cpu_user: f64,
    pub cpu_system: f64,
    /// The most CPU it could use: its threads, at most the cores it may run on.
    pub cpu_capacity: f64,
    /// Resident memory at the sample, bytes.
    pub rss_bytes: u64,
    pub threads: u64,
    /// Open file descriptors (sockets included); 0 where /proc would not say.
    pub fds: u64,
    /// Context switches in the second, voluntary and not.
    pub ctx_switches: u64,
    /// pelt only: each worker thread's CPU in cores, in worker order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<f64>,
}

impl ProcessSample {
    /// CPU in cores, user and system.
    pub fn cpu(&self) -> f64 {
        self.cpu_user + self.cpu_system
    }
}

/// The host over one second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSample {
    /// CPUs online.
    pub cores: u32,
    /// Cores busy by mode over the second (user includes nice).
    pub cpu_user: f64,
    pub cpu_system: f64,
    pub cpu_softirq: f64,
    pub cpu_irq: f64,
    pub cpu_iowait: f64,
    pub cpu_steal: f64,
    pub mem_used_bytes: u64,
    pub mem_total_bytes: u64,
    /// Bytes and packets in the second, over every interface (loopback included).
    pub net_rx_bytes: u64,
    pub net_tx_bytes: u64,
    pub net_rx_packets: u64,
    pub net_tx_packets: u64,
    /// The busiest interface with a known link speed: its name, and its busier direction as a
    /// share of that speed (0.0 to 1.0). None when no interface says its speed (loopback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest_link: Option<(String, f64)>,
    /// TCP segments retransmitted in the second (/proc/net/snmp).
    pub tcp_retransmits: u64,
    /// Connections the kernel refused because a listen queue was full, and SYNs it dropped
    /// (/proc/net/netstat's ListenOverflows and ListenDrops): failed connection attempts.
    pub listen_overflows: u64,
    pub listen_drops: u64,
}

impl HostSample {
    /// Cores busy, every mode but idle.
    pub fn cpu_busy(&self) -> f64 {
        self.cpu_user
            + self.cpu_system
            + self.cpu_softirq
            + self.cpu_irq
            + self.cpu_iowait
            + self.cpu_steal
    }
}

impl ResourceSample {
    /// Consecutive seconds (each with its length) as one sample, for a coarse timeline point:
    /// CPU and capacity as means weighed by length, memory, threads and descriptors at their
    /// peaks, counts (context switches, bytes, packets, retransmits, overflows) summed, the
    /// busiest link at its busiest.
    pub fn coarsen(samples: &[Sampled]) -> ResourceSample {
        let Groups {
            servers,
            pelts,
            hosts,
            server_hosts,
        } = Groups::of(samples);
        ResourceSample {
            server: (!servers.is_empty()).then(|| ProcessSample::coarsen(&servers)),
            host: HostSample::coarsen(&hosts),
            server_host: (!server_hosts.is_empty()).then(|| HostSample::coarsen(&server_hosts)),
            pelt: ProcessSample::coarsen(&pelts),
        }
    }
}

impl HostSample {
    fn coarsen(samples: &[(&HostSample, f64)]) -> HostSample {
        let max = |f: fn(&HostSample) -> u64| samples.iter().map(|(h, _)| f(h)).max().unwrap_or(0);
        let sum = |f: fn(&HostSample) -> u64| samples.iter().map(|(h, _)| f(h)).sum::<u64>();
        HostSample {
            cores: samples.iter().map(|(h, _)| h.cores).max().unwrap_or(0),
            cpu_user: weighted(samples, |h| h.cpu_user),
            cpu_system: weighted(samples, |h| h.cpu_system),
            cpu_softirq: weighted(samples, |h| h.cpu_softirq),
            cpu_irq: weighted(samples, |h| h.cpu_irq),
            cpu_iowait: weighted(samples, |h| h.cpu_iowait),
            cpu_steal: weighted(samples, |h| h.cpu_steal),
            mem_used_bytes: max(|h| h.mem_used_bytes),
            mem_total_bytes: max(|h| h.mem_total_bytes),
            net_rx_bytes: sum(|h| h.net_rx_bytes),
            net_tx_bytes: sum(|h| h.net_tx_bytes),
            net_rx_packets: sum(|h| h.net_rx_packets),
            net_tx_packets: sum(|h| h.net_tx_packets),
            busiest_link: samples
                .iter()
                .filter_map(|(h, _)| h.busiest_link.clone())
                .max_by(|a, b| a.1.total_cmp(&b.1)),
            tcp_retransmits: sum(|h| h.tcp_retransmits),
            listen_overflows: sum(|h| h.listen_overflows),
            listen_drops: sum(|h| h.listen_drops),
        }
    }
}

impl ProcessSample {
    fn coarsen(samples: &[(&ProcessSample, f64)]) -> ProcessSample {
        let max = |f: fn(&ProcessSample) -> u64| samples.iter().map(|(s, _)| f(s)).max();
        let workers = samples
            .iter()
            .map(|(s, _)| s.workers.len())
            .max()
            .unwrap_or(0);
        ProcessSample {
            processes: samples.iter().map(|(s, _)| s.processes).max().unwrap_or(0),
            cpu_user: weighted(samples, |s| s.cpu_user),
            cpu_system: weighted(samples, |s| s.cpu_system),
            cpu_capacity: weighted(samples, |s| s.cpu_capacity),
            rss_bytes: max(|s| s.rss_bytes).unwrap_or(0),
            threads: max(|s| s.threads).unwrap_or(0),
            fds: max(|s| s.fds).unwrap_or(0),
            ctx_switches: samples.iter().map(|(s, _)| s.ctx_switches).sum(),
            workers: (0..workers)
                .map(|w| weighted(samples, |s| s.workers.get(w).copied().unwrap_or(0.0)))
                .collect(),
        }
    }
}

/// Samples taken apart by what they sampled, each part with its seconds' lengths (the
/// server and the server's machine only where sampled).
struct Groups<'a> {
    servers: Vec<(&'a ProcessSample, f64)>,
    pelts: Vec<(&'a ProcessSample, f64)>,
    hosts: Vec<(&'a HostSample, f64)>,
    server_hosts: Vec<(&'a HostSample, f64)>,
}

impl<'a> Groups<'a> {
    fn of(samples: &[Sampled<'a>]) -> Groups<'a> {
        Groups {
            servers: samples
                .iter()
                .filter_map(|(s, l)| s.server.as_ref().map(|p| (p, *l)))
                .collect(),
            pelts: samples.iter().map(|(s, l)| (&s.pelt, *l)).collect(),
            hosts: samples.iter().map(|(s, l)| (&s.host, *l)).collect(),
            server_hosts: samples
                .iter()
                .filter_map(|(s, l)| s.server_host.as_ref().map(|h| (h, *l)))
                .collect(),
        }
    }
}

/// The run's resources, over its measured seconds (the warm-up left out).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourcesReport {
    /// What `--monitor` named, and what it matched ("nginx: 2 processes").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitored: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ProcessSummary>,
    pub pelt: ProcessSummary,
    pub host: HostSummary,
    /// The server's machine, sampled by a remote monitor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host: Option<HostSummary>,
    /// A remote monitor lost during the run: when and how (its seconds end there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    pub verdict: Verdict,
}

/// A process group's resources over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSummary {
    /// CPU in cores: the mean of the seconds, and the busiest second (past the timeline's fine
    /// horizon, the busiest coarse point's mean).
    pub cpu_mean: f64,
    pub cpu_peak: f64,
    /// The most CPU it could use (its threads, at most its cores), at the busiest second.
    pub cpu_capacity: f64,
    /// CPU-microseconds per completed response (the seeds' comparisons turn on it).
    pub cpu_us_per_request: f64,
    pub rss_peak_bytes: u64,
    pub threads_peak: u64,
    pub fds_peak: u64,
    pub ctx_switches: u64,
    /// pelt only: the busiest worker's CPU in its busiest second, in cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_peak: Option<f64>,
}

/// The host over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSummary {
    pub cores: u32,
    /// Cores busy: mean and peak; softirq's mean apart (the network stack's share).
    pub cpu_busy_mean: f64,
    pub cpu_busy_peak: f64,
    pub cpu_softirq_mean: f64,
    pub mem_used_peak_bytes: u64,
    pub net_rx_bytes: u64,
    pub net_tx_bytes: u64,
    pub tcp_retransmits: u64,
    pub listen_overflows: u64,
    pub listen_drops: u64,
}

/// What limited the run, and why pelt thinks so.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The tightest limit: of the parties at their limit, the one that used the largest share
    /// of what it may use.
    pub bottleneck: Bottleneck,
    /// The others at their limit too, tighter first (nginx at 100% of its core and pelt at 94%
    /// of its own: `server-cpu`, then `pelt` here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Bottleneck>,
    /// The figures that decided it, in a sentence.
    pub evidence: String,
    /// Open loop: requests queued in pelt (every connection busy, or pelt short of CPU): the
    /// share of the median second's requests that started late; absent when they did not
    /// queue (see [`Load::queued`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<f64>,
    /// The most requests per second the connections could carry: the requests they may hold
    /// at once (connections times `--pipeline` or `--streams`) over the mean time each request
    /// held its place. Given when the connections or the server's latency limited the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_cap_per_s: Option<f64>,
}

impl Verdict {
    /// As the summary and the HTML report name it: "the server's CPU", or with a second limit
    /// "the server's CPU, and pelt close to its own limit".
    pub fn headline(&self) -> String {
        let mut s = self.bottleneck.title().to_string();
        for b in &self.also {
            s.push_str(", and ");
            s.push_str(b.too());
        }
        s
    }

    /// For a table's cell: "server-cpu", "server-cpu+pelt".
    pub fn label(&self) -> String {
        let mut s = self.bottleneck.key().to_string();
        for b in &self.also {
            s.push('+');
            s.push_str(b.key());
        }
        s
    }

    /// Every party judged at its limit, tightest first.
    pub fn limits(&self) -> impl Iterator<Item = Bottleneck> + '_ {
        std::iter::once(self.bottleneck).chain(self.also.iter().copied())
    }
}

/// What limited the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    /// The server used (nearly) all the CPU it could.
    ServerCpu,
    /// A network link ran (nearly) full.
    Network,
    /// The machine's CPUs were (nearly) all busy, though neither pelt nor the server used all
    /// it could: they (and whatever else runs there) share too few cores.
    HostCpu,
    /// pelt itself: a worker's core was (nearly) full, or (open loop) requests started late
    /// while connections were free.
    Pelt,
    /// Every connection was busy while neither CPU was: the server's latency times the
    /// connections capped the rate, and requests queued in pelt (open loop).
    Connections,
    /// Nothing was saturated: the server waits on something else (a database, a sleep, locks).
    Latency,
    /// No server was monitored and pelt was not saturated: nothing to judge by.
    #[default]
    Unknown,
}

impl Bottleneck {
    /// Every kind, in the order the docs and Prometheus list them.
    pub const ALL: [Bottleneck; 7] = [
        Bottleneck::ServerCpu,
        Bottleneck::Network,
        Bottleneck::HostCpu,
        Bottleneck::Pelt,
        Bottleneck::Connections,
        Bottleneck::Latency,
        Bottleneck::Unknown,
    ];

    /// As the summary and the HTML report name it.
    pub fn title(self) -> &'static str {
        match self {
            Bottleneck::ServerCpu => "the server's CPU",
            Bottleneck::Network => "the network",
            Bottleneck::HostCpu => "the machine's CPUs",
            Bottleneck::Pelt => "pelt itself",
            Bottleneck::Connections => "the connections",
            Bottleneck::Latency => "neither: latency-bound",
            Bottleneck::Unknown => "not known",
        }
    }

    /// As a second limit is named after the first.
    fn too(self) -> &'static str {
        match self {
            Bottleneck::ServerCpu => "the server's CPU at its limit too",
            Bottleneck::Network => "the network at its limit too",
            Bottleneck::HostCpu => "the machine's CPUs at their limit too",
            Bottleneck::Pelt => "pelt close to its own limit",
            Bottleneck::Connections => "every connection busy too",
            Bottleneck::Latency | Bottleneck::Unknown => self.title(),
        }
    }

    /// Its name in the JSON (`server-cpu`).
    pub fn key(self) -> &'static str {
        match self {
            Bottleneck::ServerCpu => "server-cpu",
            Bottleneck::Network => "network",
            Bottleneck::HostCpu => "host-cpu",
            Bottleneck::Pelt => "pelt",
            Bottleneck::Connections => "connections",
            Bottleneck::Latency => "latency",
            Bottleneck::Unknown => "unknown",
        }
    }
}

/// A share at or above this of what could be used counts as saturated.
pub const SATURATED: f64 = 0.9;

/// Open loop: requests queued in pelt when at least this share of the median second's
/// requests started late (more than [`crate::LATE_THRESHOLD_US`] after their due time).
pub const QUEUED: f64 = 0.1;

/// Seconds shorter than this (the run's last, cut short) weigh by their length in the means
/// and are left out of the peaks and the verdict: /proc counts CPU in ticks of 10 ms, so a
/// short interval's figures are coarse.
const SHORT_S: f64 = 0.5;

/// One second's sample and its length.
pub type Sampled<'a> = (&'a ResourceSample, f64);

/// The load beside the resources, read from the result: what tells whether requests queued
/// in pelt (open loop), and the rate the connections could carry.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Load {
    /// The connections pelt may use (open loop: `--max-connections`), and the requests each
    /// may have in flight at once (`--pipeline`, `--streams`; 1 without).
    pub connections: u64,
    pub depth: u64,
    /// A scenario run: its virtual users hold the places, not single requests.
    pub users: bool,
    /// The mean time a request held its place, microseconds: the service time in the open
    /// loop (first byte written to last read), the latency in the closed.
    pub held_us: f64,
    /// Responses per second over the measured seconds.
    pub completed_per_s: f64,
    /// Open loop: the rate asked for (with stages, their peak); `None`: closed loop.
    pub rate: Option<f64>,
    /// Open loop: pelt's lag p99 and the latency p99 it sits in, microseconds.
    pub lag_p99_us: u64,
    pub latency_p99_us: u64,
    /// Open loop: the lag past which the report warns (1 ms past the batch window).
    pub late_after_us: u64,
    /// Open loop: the share of the requests started in the median whole second that
    /// started late.
    pub late_share: f64,
}

impl Load {
    /// The load of `report`'s measured seconds.
    pub fn of(report: &Report) -> Load {
        let measured: Vec<&TimelinePoint> = report.timeline.iter().filter(|p| !p.warmup).collect();
        let info = &report.info;
        let open = report.open_loop.as_ref();
        Load {
            connections: info.max_connections.unwrap_or(info.connections) as u64,
            users: report.scenario.is_some(),
            held_us: open.map_or(report.latency_us.mean_us, |o| o.service_time_us.mean_us),
            rate: open.and(info.rate),
            lag_p99_us: open.map_or(0, |o| o.lag_us.p99_us),
            latency_p99_us: report.latency_us.p99_us,
            ..Load::over(info, &measured)
        }
    }

    /// What `points` alone tell of the load (the rest is left at its default): the depth,
    /// the late threshold, the responses per second and the median second's late share.
    fn over(info: &RunInfo, points: &[&TimelinePoint]) -> Load {
        let seconds: f64 = points.iter().map(|p| p.length_s).sum();
        let completed: u64 = points.iter().map(|p| p.completed).sum();
        let any_whole = points.iter().any(|p| p.length_s >= SHORT_S);
        let late_share = median(
            points
                .iter()
                .filter(|p| p.sent > 0 && (!any_whole || p.length_s >= SHORT_S))
                .map(|p| (p.late as f64 / p.sent as f64, p.length_s))
                .collect(),
        );
        Load {
            depth: info.pipeline.max(info.streams.unwrap_or(1)).max(1) as u64,
            completed_per_s: if seconds > 0.0 {
                completed as f64 / seconds
            } else {
                0.0
            },
            late_after_us: crate::LATE_THRESHOLD_US + info.batch_window_us.unwrap_or(0),
            late_share,
            ..Load::default()
        }
    }

    /// Open loop: whether requests queued in pelt, and if so the share of the median second's
    /// requests that started late. They queued when at least [`QUEUED`] of them did, the lag
    /// p99 passed the late threshold, and that lag is a tenth or more of the latency p99 it
    /// sits in: a few late requests while connections were opening, or a lag small against
    /// the latency, are not a queue.
    pub fn queued(&self) -> Option<f64> {
        (self.rate.is_some()
            && self.late_share >= QUEUED
            && self.lag_p99_us > self.late_after_us
            && self.lag_p99_us.saturating_mul(10) >= self.latency_p99_us)
            .then_some(self.late_share)
    }

    /// The requests pelt may have in flight at once.
    pub fn slots(&self) -> u64 {
        self.connections * self.depth
    }

    /// The share of its places pelt kept busy on average (Little's law: responses per second
    /// times the time each held its place, over the places); `None` for scenarios.
    pub fn busy(&self) -> Option<f64> {
        (!self.users && self.slots() > 0)
            .then(|| self.completed_per_s * self.held_us / 1e6 / self.slots() as f64)
    }

    /// The most requests per second the places could carry at the time each held one.
    pub fn cap_per_s(&self) -> Option<f64> {
        (!self.users && self.slots() > 0 && self.held_us > 0.0)
            .then(|| self.slots() as f64 * 1e6 / self.held_us)
    }

    /// "10 connections x 20.10ms = 497.5/s at most" (with "x 16 requests each" between).
    pub fn cap_text(&self) -> Option<String> {
        let cap = self.cap_per_s()?;
        let each = if self.depth > 1 {
            format!(" x {} requests each", self.depth)
        } else {
            String::new()
        };
        Some(format!(
            "{} connection{}{each} x {} = {}/s at most",
            fmt::thousands(self.connections),
            if self.connections == 1 { "" } else { "s" },
            fmt::latency(self.held_us),
            fmt::rate(cap)
        ))
    }
}

impl ResourcesReport {
    /// The resources of `report`'s measured seconds (the warm-up left out), with the verdict;
    /// `None` when none was sampled. `monitored`: what `--monitor` named and matched.
    pub fn of(report: &Report, monitored: Option<String>) -> Option<ResourcesReport> {
        let measured: Vec<&TimelinePoint> = report
            .timeline
            .iter()
            .filter(|p| !p.warmup && p.resources.is_some())
            .collect();
        if measured.is_empty() {
            return None;
        }
        let samples: Vec<Sampled> = measured
            .iter()
            .filter_map(|p| p.resources.as_ref().map(|r| (r, p.length_s)))
            .collect();
        let completed = measured.iter().map(|p| p.completed).sum();
        Some(ResourcesReport::new(
            monitored,
            &samples,
            completed,
            &Load::of(report),
        ))
    }

    /// Sums up the measured seconds' `samples` (each with its length in seconds);
    /// `completed`: responses over the same seconds; `load`: what the load did meanwhile.
    pub fn new(
        monitored: Option<String>,
        samples: &[Sampled],
        completed: u64,
        load: &Load,
    ) -> ResourcesReport {
        let Groups {
            servers,
            pelts,
            hosts,
            server_hosts,
        } = Groups::of(samples);
        let server = (!servers.is_empty()).then(|| ProcessSummary::new(&servers, completed));
        let pelt = ProcessSummary::new(&pelts, completed);
        let host = HostSummary::new(&hosts);
        let server_host = (!server_hosts.is_empty()).then(|| HostSummary::new(&server_hosts));
        // The verdict reads whole seconds (all of them when the run was shorter than one).
        let whole: Vec<Sampled> = samples
            .iter()
            .filter(|(_, l)| *l >= SHORT_S)
            .copied()
            .collect();
        let whole = if whole.is_empty() {
            samples.to_vec()
        } else {
            whole
        };
        let verdict = Verdict::judge(server.as_ref(), &whole, load);
        ResourcesReport {
            monitored,
            server,
            pelt,
            host,
            server_host,
            lost: None,
            verdict,
        }
    }
}

/// Measured seconds the verdict during a run reads: the last ten, so it follows the run's
/// changes (a stage, a change from the live page) instead of averaging them away.
pub const LIVE_WINDOW: usize = 10;

/// The verdict as the run goes (`--tui`, `--dashboard` with `--monitor`): judged as the
/// result's is, over the last [`LIVE_WINDOW`] measured seconds. Fed one point a second on the
/// thread that makes them; nothing of it is on the per-request path.
pub struct LiveVerdict {
    info: RunInfo,
    users: bool,
    window: std::collections::VecDeque<LiveSecond>,
}

/// One second in the live verdict's window.
struct LiveSecond {
    point: TimelinePoint,
    latency: LatencyHistogram,
    lag: LatencyHistogram,
}

impl LiveVerdict {
    /// For the run `info` describes (`users`: a scenario's virtual users hold the places).
    pub fn new(info: &RunInfo, users: bool) -> LiveVerdict {
        LiveVerdict {
            info: info.clone(),
            users,
            window: std::collections::VecDeque::with_capacity(LIVE_WINDOW + 1),
        }
    }

    /// Takes the second `p` and judges the window: `None` before a measured second with a
    /// sample (no `--monitor`, the warm-up) and while nothing completes (a pause).
    pub fn add(&mut self, p: &TimelinePoint) -> Option<Verdict> {
        if p.warmup || p.resources.is_none() {
            return None;
        }
        let decode = |h: Option<&String>| {
            h.and_then(|h| LatencyHistogram::decode(h).ok())
                .unwrap_or_default()
        };
        let mut point = p.clone();
        point.samples = Vec::new();
        let lag = point.detail.lag.take().unwrap_or_default();
        point.detail = Default::default();
        self.window.push_back(LiveSecond {
            latency: decode(p.histogram.as_ref()),
            point,
            lag,
        });
        if self.window.len() > LIVE_WINDOW {
            self.window.pop_front();
        }
        self.judge()
    }

    fn judge(&self) -> Option<Verdict> {
        let points: Vec<&TimelinePoint> = self.window.iter().map(|s| &s.point).collect();
        let completed: u64 = points.iter().map(|p| p.completed).sum();
        if completed == 0 {
            return None;
        }
        let (mut latency, mut lag) = (LatencyHistogram::new(), LatencyHistogram::new());
        for s in &self.window {
            latency.merge(&s.latency);
            lag.merge(&s.lag);
        }
        let (latency, lag) = (latency.summary(), lag.summary());
        let info = &self.info;
        let open = info.load_model == crate::LoadModel::Open;
        // What the stages or the page's changes asked for, at its most over the window.
        let target = points
            .iter()
            .filter_map(|p| p.target)
            .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))));
        let load = Load {
            connections: match (open, target) {
                (true, _) => info.max_connections.unwrap_or(info.connections) as u64,
                (false, Some(t)) => t.round() as u64,
                (false, None) => info.connections as u64,
            },
            users: self.users,
            // The open loop's latency counts from the due time: less the lag, it is the time
            // from the first byte written, as the result's service time is.
            held_us: if open {
                (latency.mean_us - lag.mean_us).max(0.0)
            } else {
                latency.mean_us
            },
            rate: open.then(|| target.or(info.rate)).flatten(),
            lag_p99_us: if open { lag.p99_us } else { 0 },
            latency_p99_us: latency.p99_us,
            ..Load::over(info, &points)
        };
        let samples: Vec<Sampled> = points
            .iter()
            .filter_map(|p| p.resources.as_ref().map(|r| (r, p.length_s)))
            .collect();
        Some(ResourcesReport::new(None, &samples, completed, &load).verdict)
    }
}

/// The samples long enough for a peak (all of them if none is).
fn peaks<T>(samples: &[(T, f64)]) -> impl Iterator<Item = &T> {
    let any_whole = samples.iter().any(|(_, l)| *l >= SHORT_S);
    samples
        .iter()
        .filter(move |(_, l)| !any_whole || *l >= SHORT_S)
        .map(|(s, _)| s)
}

/// The mean of `f` over `samples`, each weighing its length.
fn weighted<T>(samples: &[(T, f64)], f: impl Fn(&T) -> f64) -> f64 {
    let length: f64 = samples.iter().map(|(_, l)| l).sum();
    if length <= 0.0 {
        return 0.0;
    }
    samples.iter().map(|(s, l)| f(s) * l).sum::<f64>() / length
}

impl ProcessSummary {
    fn new(samples: &[(&ProcessSample, f64)], completed: u64) -> ProcessSummary {
        // CPU-seconds over the run: each second's cores times its length.
        let total: f64 = samples.iter().map(|(s, l)| s.cpu() * l).sum();
        let busiest = peaks(samples)
            .max_by(|a, b| a.cpu().total_cmp(&b.cpu()))
            .copied();
        let worker_peak = peaks(samples)
            .flat_map(|s| s.workers.iter().copied())
            .max_by(f64::total_cmp);
        ProcessSummary {
            cpu_mean: weighted(samples, |s| s.cpu()),
            cpu_peak: busiest.map_or(0.0, ProcessSample::cpu),
            cpu_capacity: busiest.map_or(0.0, |s| s.cpu_capacity),
            cpu_us_per_request: if completed > 0 {
                total * 1e6 / completed as f64
            } else {
                0.0
            },
            rss_peak_bytes: samples.iter().map(|(s, _)| s.rss_bytes).max().unwrap_or(0),
            threads_peak: samples.iter().map(|(s, _)| s.threads).max().unwrap_or(0),
            fds_peak: samples.iter().map(|(s, _)| s.fds).max().unwrap_or(0),
            ctx_switches: samples.iter().map(|(s, _)| s.ctx_switches).sum(),
            worker_peak,
        }
    }

    /// The mean CPU as a share of what it could use.
    pub fn busy_share(&self) -> f64 {
        if self.cpu_capacity > 0.0 {
            self.cpu_mean / self.cpu_capacity
        } else {
            0.0
        }
    }
}

impl HostSummary {
    fn new(samples: &[(&HostSample, f64)]) -> HostSummary {
        let hosts = || samples.iter().map(|(h, _)| *h);
        let cores = hosts().map(|h| h.cores).max().unwrap_or(0);
        // Coarse ticks may add up past the cores in a short second: never more than all.
        let busy = |h: &&HostSample| h.cpu_busy().min(h.cores as f64);
        HostSummary {
            cores,
            cpu_busy_mean: weighted(samples, busy),
            cpu_busy_peak: peaks(samples).map(busy).fold(0.0, f64::max),
            cpu_softirq_mean: weighted(samples, |h| h.cpu_softirq),
            mem_used_peak_bytes: hosts().map(|h| h.mem_used_bytes).max().unwrap_or(0),
            net_rx_bytes: hosts().map(|h| h.net_rx_bytes).sum(),
            net_tx_bytes: hosts().map(|h| h.net_tx_bytes).sum(),
            tcp_retransmits: hosts().map(|h| h.tcp_retransmits).sum(),
            listen_overflows: hosts().map(|h| h.listen_overflows).sum(),
            listen_drops: hosts().map(|h| h.listen_drops).sum(),
        }
    }
}

/// The middle value of `v`, each value weighing its length (a coarse timeline point counts as
/// the seconds it holds); 0 for none.
fn median(mut v: Vec<(f64, f64)>) -> f64 {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = v.iter().map(|(_, l)| l).sum::<f64>() / 2.0;
    let mut seen = 0.0;
    for (x, l) in &v {
        seen += l;
        if seen > half {
            return *x;
        }
    }
    v.last().map_or(0.0, |(x, _)| *x)
}

/// One party at its limit: which, the share of what it may use, and the sentence that says so.
struct Limit {
    what: Bottleneck,
    share: f64,
    why: String,
}

/// Each party's share of what it may use in the median whole second.
struct Shares {
    /// pelt's busiest worker, of a core; `seen`: pelt's workers were sampled (a fleet's
    /// coordinator samples none of its own: its agents' CPU is theirs).
    worker: f64,
    pelt_seen: bool,
    /// The server's CPU, of what it could use.
    server: f64,
    /// The busiest link of the two machines (pelt's and, sampled remotely, the server's), and
    /// its name.
    link: f64,
    link_name: String,
    /// The server's machine's CPUs (a remote monitor) and pelt's machine's, busy.
    far: f64,
    far_cores: u32,
    host: f64,
    host_cores: u32,
}

impl Shares {
    fn of(samples: &[Sampled]) -> Shares {
        let weigh = |f: &dyn Fn(&ResourceSample) -> Option<f64>| {
            median(
                samples
                    .iter()
                    .filter_map(|(s, l)| f(s).map(|x| (x, *l)))
                    .collect(),
            )
        };
        let busiest = |s: &ResourceSample| {
            [Some(&s.host), s.server_host.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|h| h.busiest_link.as_ref())
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .cloned()
        };
        let busy = |h: &HostSample| h.cpu_busy() / h.cores.max(1) as f64;
        Shares {
            worker: weigh(&|s| s.pelt.workers.iter().copied().max_by(f64::total_cmp)),
            pelt_seen: samples.iter().any(|(s, _)| !s.pelt.workers.is_empty()),
            server: weigh(&|s| {
                s.server
                    .as_ref()
                    .filter(|p| p.cpu_capacity > 0.0)
                    .map(|p| p.cpu() / p.cpu_capacity)
            }),
            link: weigh(&|s| busiest(s).map(|(_, x)| x)),
            link_name: samples
                .iter()
                .find_map(|(s, _)| busiest(s).map(|(n, _)| n))
                .unwrap_or_default(),
            far: weigh(&|s| s.server_host.as_ref().map(busy)),
            far_cores: samples
                .iter()
                .find_map(|(s, _)| s.server_host.as_ref().map(|h| h.cores))
                .unwrap_or(0),
            host: weigh(&|s| Some(busy(&s.host))),
            host_cores: samples.first().map_or(0, |(s, _)| s.host.cores),
        }
    }

    /// pelt's busiest worker's share, where pelt was sampled.
    fn worker_pct(&self) -> Option<String> {
        self.pelt_seen.then(|| fmt::share(self.worker))
    }

    /// The parties whose CPU or link was at its limit: the server's CPU, pelt's worker, a
    /// link; a machine's CPUs when neither process was at its own.
    fn limits(&self, server: Option<&ProcessSummary>) -> Vec<Limit> {
        let mut limits = Vec::new();
        if let Some(server) = server.filter(|_| self.server >= SATURATED) {
            limits.push(Limit {
                what: Bottleneck::ServerCpu,
                share: self.server,
                why: format!(
                    "the server used {} of the {} it may use in the median second ({:.1} us of \
                     CPU per request)",
                    fmt::share(self.server),
                    cores(server.cpu_capacity),
                    server.cpu_us_per_request,
                ),
            });
        }
        if self.worker >= SATURATED {
            limits.push(Limit {
                what: Bottleneck::Pelt,
                share: self.worker,
                why: format!(
                    "pelt's busiest worker used {} of a core in the median second: add threads \
                     (-t) or generator machines (--agents)",
                    fmt::share(self.worker)
                ),
            });
        }
        if self.link >= SATURATED {
            limits.push(Limit {
                what: Bottleneck::Network,
                share: self.link,
                why: format!(
                    "{} ran at {} of its link speed in the median second",
                    self.link_name,
                    fmt::share(self.link)
                ),
            });
        }
        if limits.iter().any(|l| l.what != Bottleneck::Network) {
            return limits;
        }
        if self.far >= SATURATED {
            limits.push(Limit {
                what: Bottleneck::HostCpu,
                share: self.far,
                why: format!(
                    "the server's machine's {} cores were {} busy in the median second, while \
                     the server used {} of what it may use: something else there takes its CPU",
                    self.far_cores,
                    fmt::share(self.far),
                    fmt::share(self.server)
                ),
            });
        } else if self.host >= SATURATED {
            limits.push(Limit {
                what: Bottleneck::HostCpu,
                share: self.host,
                why: format!(
                    "the machine's {} cores were {} busy in the median second, while neither \
                     pelt nor the server used all it could: they share too few cores (pin them \
                     apart with taskset, or run pelt on another machine)",
                    self.host_cores,
                    fmt::share(self.host)
                ),
            });
        }
        limits
    }

    /// Requests queued in pelt (`late` of the median second's) while nothing was at its limit:
    /// the connections when they were all busy, pelt when they were not (its threads did not
    /// run in time); nothing to say without a server to judge by.
    fn queue_limit(&self, server: bool, late: f64, load: &Load) -> Option<Limit> {
        let started = format!(
            "{} of the median second's requests started late (lag p99 {})",
            fmt::share(late),
            fmt::latency(load.lag_p99_us as f64)
        );
        let worker = self.worker_pct();
        match load.busy() {
            Some(b) if b < SATURATED => Some(Limit {
                what: Bottleneck::Pelt,
                share: 1.0,
                why: format!(
                    "{started} while pelt kept only {} of its {} connections busy{}: its threads \
                     did not run in time (a CPU quota, or other work on its cores)",
                    fmt::share(b),
                    fmt::thousands(load.connections),
                    worker.map_or(String::new(), |w| format!(
                        " and its busiest worker used {w} of a core"
                    )),
                ),
            }),
            _ if !server => None,
            b => {
                let asked = load.rate.map_or(String::new(), |r| {
                    format!(", under the {}/s asked", fmt::rate(r))
                });
                let (place, raise) = if load.users {
                    ("user", "--max-users")
                } else {
                    ("connection", "--max-connections")
                };
                Some(Limit {
                    what: Bottleneck::Connections,
                    share: b.unwrap_or(1.0),
                    why: format!(
                        "every {place} was busy while neither CPU was (the server at {}{}): \
                         {}{asked}, so {started}; raise -c or {raise} to carry more, or lower \
                         --rate",
                        fmt::share(self.server),
                        worker.map_or(String::new(), |w| format!(", pelt's busiest worker at {w}")),
                        load.cap_text()
                            .unwrap_or_else(|| "the server's latency capped the rate".into()),
                    ),
                })
            }
        }
    }
}

impl Verdict {
    /// Judges each party by the share it used of what it may use in the median whole second
    /// (so a ramp or one busy second does not decide it) and names every one at its limit
    /// ([`SATURATED`] or more), tightest first: the server's CPU, pelt's (its busiest worker's
    /// core), a network link; the machines' CPUs (the server's machine's, then pelt's) when
    /// neither process filled what it could use; then, when requests queued in pelt (open
    /// loop, [`Load::queued`]) while no CPU was full, the connections if they were all busy,
    /// else pelt (its threads did not run in time). Queued requests are evidence, never a
    /// verdict of their own: behind a saturated server they are the server's. With none at its
    /// limit the run was latency-bound (not known when no server was monitored).
    fn judge(server: Option<&ProcessSummary>, samples: &[Sampled], load: &Load) -> Verdict {
        let shares = Shares::of(samples);
        let queued = load.queued();
        let mut limits = shares.limits(server);
        if let (Some(late), true) = (queued, limits.is_empty()) {
            limits.extend(shares.queue_limit(server.is_some(), late, load));
        }
        // Tightest first; on a tie, the order above (the server before pelt).
        limits.sort_by(|a, b| b.share.total_cmp(&a.share));
        let mut limits = limits.into_iter();
        let Some(first) = limits.next() else {
            return Verdict::unsaturated(server, &shares, queued, load);
        };
        let also: Vec<Limit> = limits.collect();
        let connections = first.what == Bottleneck::Connections;
        let evidence = Verdict::evidence(first.what, &first.why, &also, &shares, queued, load);
        Verdict {
            bottleneck: first.what,
            also: also.iter().map(|l| l.what).collect(),
            evidence,
            queued,
            connection_cap_per_s: connections.then(|| load.cap_per_s()).flatten(),
        }
    }

    /// The limits' sentences, tightest first; pelt's worker beside a server at its limit when
    /// pelt was not; and the queue, when requests queued behind another limit.
    fn evidence(
        first: Bottleneck,
        why: &str,
        also: &[Limit],
        shares: &Shares,
        queued: Option<f64>,
        load: &Load,
    ) -> String {
        let mut evidence = why.to_string();
        for l in also {
            evidence.push_str("; and ");
            evidence.push_str(&l.why);
        }
        let pelt_named =
            first == Bottleneck::Pelt || also.iter().any(|l| l.what == Bottleneck::Pelt);
        if first == Bottleneck::ServerCpu && !pelt_named {
            if let Some(w) = shares.worker_pct() {
                evidence.push_str(&format!(", while pelt's busiest worker used {w}"));
            }
        }
        let Some(late) = queued.filter(|_| first != Bottleneck::Connections) else {
            return evidence;
        };
        let lag = fmt::latency(load.lag_p99_us as f64);
        evidence.push_str(&match first {
            Bottleneck::ServerCpu => format!(
                "; requests queued in pelt behind connections waiting on it ({} of the median \
                 second's started late, lag p99 {lag}): it served {}/s of the {}/s asked, and \
                 more connections would move the queue into the server",
                fmt::share(late),
                fmt::rate(load.completed_per_s),
                fmt::rate(load.rate.unwrap_or(0.0)),
            ),
            Bottleneck::Pelt if shares.worker >= SATURATED => {
                format!("; requests started late as a result (lag p99 {lag})")
            }
            Bottleneck::Pelt => String::new(),
            _ => format!(
                "; requests queued in pelt ({} of the median second's started late, lag p99 \
                 {lag})",
                fmt::share(late)
            ),
        });
        evidence
    }

    /// Nothing at its limit: latency-bound (the closed loop's rate is its connections over
    /// the server's latency), or not known when no server was monitored.
    fn unsaturated(
        server: Option<&ProcessSummary>,
        shares: &Shares,
        queued: Option<f64>,
        load: &Load,
    ) -> Verdict {
        let pelt = shares.worker_pct().map_or(String::new(), |w| {
            format!("pelt's busiest worker used {w} of a core")
        });
        let Some(server) = server else {
            let busy = queued.map_or(String::new(), |late| {
                format!(
                    "; {} of the median second's requests queued in pelt behind busy \
                     connections: the server's CPU or its latency held them",
                    fmt::share(late)
                )
            });
            return Verdict {
                bottleneck: Bottleneck::Unknown,
                evidence: format!(
                    "{}no server was monitored (--monitor PID or NAME) to judge it by{busy}",
                    if pelt.is_empty() {
                        String::new()
                    } else {
                        format!("{pelt}; ")
                    }
                ),
                queued,
                ..Verdict::default()
            };
        };
        // The closed loop's rate is what its connections carry at the server's latency.
        let cap = load.rate.is_none().then(|| load.cap_text()).flatten();
        Verdict {
            bottleneck: Bottleneck::Latency,
            evidence: format!(
                "nothing was saturated: the server used {} of the {} it may use{}, so the \
                 server waits on something else (a database, a sleep, a lock){}",
                fmt::share(shares.server),
                cores(server.cpu_capacity),
                if pelt.is_empty() {
                    String::new()
                } else {
                    format!(" and {pelt}")
                },
                cap.map_or(String::new(), |c| format!(
                    "; {c}, and more connections (-c) carry more"
                )),
            ),
            queued,
            connection_cap_per_s: load.rate.is_none().then(|| load.cap_per_s()).flatten(),
            ..Verdict::default()
        }
    }
}

/// "1 core", "2.5 cores".
fn cores(n: f64) -> String {
    if (n - 1.0).abs() < 1e-9 {
        "1 core".to_string()
    } else {
        format!("{} cores", (n * 10.0).round() / 10.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(server: Option<(f64, f64)>, worker: f64) -> ResourceSample {
        ResourceSample {
            server: server.map(|(cpu, capacity)| ProcessSample {
                processes: 2,
                cpu_user: cpu * 0.4,
                cpu_system: cpu * 0.6,
                cpu_capacity: capacity,
                rss_bytes: 10 << 20,
                threads: 2,
                ..ProcessSample::default()
            }),
            host: HostSample {
                cores: 2,
                ..HostSample::default()
            },
            server_host: None,
            pelt: ProcessSample {
                cpu_user: worker,
                workers: vec![worker],
                ..ProcessSample::default()
            },
        }
    }

    /// A closed loop of 10 connections, each request 1 ms: 10,000/s.
    fn closed() -> Load {
        Load {
            connections: 10,
            depth: 1,
            held_us: 1_000.0,
            completed_per_s: 10_000.0,
            ..Load::default()
        }
    }

    /// An open loop at `rate`/s over 10 connections, `held_us` each, serving `served`/s, with
    /// `late` of the median second's requests late and a lag p99 of `lag_us`.
    fn open(rate: f64, held_us: f64, served: f64, late: f64, lag_us: u64) -> Load {
        Load {
            connections: 10,
            depth: 1,
            held_us,
            completed_per_s: served,
            rate: Some(rate),
            lag_p99_us: lag_us,
            latency_p99_us: lag_us + held_us as u64,
            late_after_us: 1_100,
            late_share: late,
            ..Load::default()
        }
    }

    fn judge(seconds: &[ResourceSample], load: &Load) -> ResourcesReport {
        let refs: Vec<Sampled> = seconds.iter().map(|s| (s, 1.0)).collect();
        ResourcesReport::new(Some("nginx".into()), &refs, 100_000, load)
    }

    /// Second `n` of a closed loop: 1,000 responses of 1 ms each over one connection, the
    /// server's CPU at `server` of its one core.
    fn live_second(n: u64, server: f64) -> TimelinePoint {
        let mut iv = crate::Interval::new(n);
        for _ in 0..1_000 {
            iv.sent += 1;
            iv.record_response(200, 1_000, 300);
        }
        let mut p = iv.point(1.0, false);
        p.resources = Some(second(Some((server, 1.0)), 0.3));
        p
    }

    #[test]
    fn the_live_verdict_follows_the_last_seconds() {
        let info = RunInfo {
            connections: 1,
            ..RunInfo::example()
        };
        let mut live = LiveVerdict::new(&info, false);
        // The warm-up and a second without a sample are not judged.
        let mut warm = live_second(0, 0.99);
        warm.warmup = true;
        assert_eq!(live.add(&warm), None);
        let mut bare = live_second(0, 0.99);
        bare.resources = None;
        assert_eq!(live.add(&bare), None);
        // A server at its limit, as the result would judge these seconds.
        let busy: Vec<TimelinePoint> = (0..LIVE_WINDOW as u64)
            .map(|n| live_second(n, 0.97))
            .collect();
        let mut last = None;
        for p in &busy {
            last = live.add(p);
        }
        let v = last.unwrap();
        assert_eq!(v.bottleneck, Bottleneck::ServerCpu, "{v:?}");
        let samples: Vec<Sampled> = busy
            .iter()
            .map(|p| (p.resources.as_ref().unwrap(), 1.0))
            .collect();
        let load = Load {
            connections: 1,
            depth: 1,
            held_us: 1_000.0,
            completed_per_s: 1_000.0,
            ..Load::default()
        };
        let whole = ResourcesReport::new(None, &samples, 10_000, &load).verdict;
        assert_eq!(v, whole);
        // Then the connections go to 2 and the server idles: once the window holds only
        // those seconds, the run is latency-bound at the new connections' cap.
        let mut v = None;
        for n in 10..10 + LIVE_WINDOW as u64 {
            let mut p = live_second(n, 0.1);
            p.target = Some(2.0);
            v = live.add(&p);
            if n < 15 {
                assert_eq!(v.as_ref().unwrap().bottleneck, Bottleneck::ServerCpu);
            }
        }
        let v = v.unwrap();
        assert_eq!(v.bottleneck, Bottleneck::Latency, "{v:?}");
        assert_eq!(v.connection_cap_per_s, Some(2_000.0));
        // A pause: once nothing completed in the window, nothing to judge.
        let paused: Vec<Option<Verdict>> = (20..20 + LIVE_WINDOW as u64)
            .map(|n| {
                let mut p = crate::Interval::new(n).point(1.0, false);
                p.resources = Some(second(Some((0.0, 1.0)), 0.0));
                live.add(&p)
            })
            .collect();
        assert!(paused[0].is_some());
        assert_eq!(paused.last(), Some(&None));
    }

    #[test]
    fn the_median_second_decides_and_every_party_at_its_limit_is_named() {
        let busy = [0.97, 0.95, 0.96, 0.2].map(|c| second(Some((c, 1.0)), 0.6));
        let r = judge(&busy, &closed());
        assert_eq!(r.verdict.bottleneck, Bottleneck::ServerCpu, "{r:?}");
        assert!(r.verdict.also.is_empty());
        assert!(r.verdict.evidence.contains("96% of the 1 core"), "{r:?}");
        assert!(r.verdict.evidence.ends_with("worker used 60%"), "{r:?}");
        let server = r.server.unwrap();
        assert!((server.cpu_mean - 0.77).abs() < 1e-9);
        assert!((server.cpu_peak - 0.97).abs() < 1e-9);
        // 3.08 core-seconds over 100,000 responses.
        assert!((server.cpu_us_per_request - 30.8).abs() < 1e-6);
        // Both at their limit: both named, the tighter first, whichever it is.
        let both = [1.0, 0.99, 1.0].map(|c| second(Some((c, 1.0)), 0.94));
        let v = judge(&both, &closed()).verdict;
        assert_eq!(
            v.limits().collect::<Vec<_>>(),
            [Bottleneck::ServerCpu, Bottleneck::Pelt]
        );
        assert_eq!(
            v.headline(),
            "the server's CPU, and pelt close to its own limit"
        );
        assert_eq!(v.label(), "server-cpu+pelt");
        let both = [0.92, 0.91, 0.93].map(|c| second(Some((c, 1.0)), 0.99));
        let v = judge(&both, &closed()).verdict;
        assert_eq!(
            v.limits().collect::<Vec<_>>(),
            [Bottleneck::Pelt, Bottleneck::ServerCpu]
        );
        // Neither: latency-bound, and the closed loop's rate is its connections' at the latency.
        let idle = [0.1, 0.1, 0.2].map(|c| second(Some((c, 2.0)), 0.1));
        let v = judge(&idle, &closed()).verdict;
        assert_eq!(v.bottleneck, Bottleneck::Latency);
        assert_eq!(v.connection_cap_per_s, Some(10_000.0));
        assert!(
            v.evidence
                .contains("10 connections x 1.00ms = 10,000.0/s at most"),
            "{v:?}"
        );
        // A full machine that neither filled.
        let mut shared = [0.5, 0.5, 0.5].map(|c| second(Some((c, 2.0)), 0.5));
        for s in &mut shared {
            s.host.cpu_user = 1.9;
        }
        let r = judge(&shared, &closed());
        assert_eq!(r.verdict.bottleneck, Bottleneck::HostCpu, "{r:?}");
        assert!(
            r.verdict.evidence.contains("2 cores were 95% busy"),
            "{r:?}"
        );
        let none = [second(None, 0.5)];
        let r = judge(&none, &closed());
        assert_eq!(r.verdict.bottleneck, Bottleneck::Unknown);
        assert!(r.server.is_none());
        // A full link.
        let mut full = second(Some((0.3, 1.0)), 0.3);
        full.host.busiest_link = Some(("eth0".into(), 0.96));
        let r = judge(&[full.clone(), full], &closed());
        assert_eq!(r.verdict.bottleneck, Bottleneck::Network);
        assert!(r.verdict.evidence.starts_with("eth0 ran at 96%"), "{r:?}");
    }

    #[test]
    fn requests_queued_in_pelt_are_the_verdict_of_whoever_held_the_connections() {
        // Twice what a saturated server serves: the queue is the server's.
        let saturated = [0.99, 1.0, 0.99].map(|c| second(Some((c, 1.0)), 0.4));
        let v = judge(
            &saturated,
            &open(60_000.0, 330.0, 30_000.0, 0.99, 1_800_000),
        )
        .verdict;
        assert_eq!(v.limits().collect::<Vec<_>>(), [Bottleneck::ServerCpu]);
        assert_eq!(v.queued, Some(0.99));
        assert!(
            v.evidence
                .contains("it served 30,000.0/s of the 60,000.0/s asked"),
            "{v:?}"
        );
        // A server that sleeps 20 ms: 10 connections carry 500/s, 2,000/s asked.
        let sleeping = [0.01, 0.0, 0.01].map(|c| second(Some((c, 1.0)), 0.05));
        let load = open(2_000.0, 20_000.0, 500.0, 0.99, 3_000_000);
        let v = judge(&sleeping, &load).verdict;
        assert_eq!(v.bottleneck, Bottleneck::Connections, "{v:?}");
        assert_eq!(v.connection_cap_per_s, Some(500.0));
        assert!(
            v.evidence
                .contains("10 connections x 20.00ms = 500.0/s at most, under the 2,000.0/s asked"),
            "{v:?}"
        );
        // pelt at its limit: its own, the lag a result.
        let pelt = [0.5, 0.5, 0.5].map(|c| second(Some((c, 1.0)), 0.97));
        let v = judge(&pelt, &open(60_000.0, 330.0, 30_000.0, 0.9, 50_000)).verdict;
        assert_eq!(v.limits().collect::<Vec<_>>(), [Bottleneck::Pelt]);
        assert!(
            v.evidence
                .ends_with("started late as a result (lag p99 50.00ms)"),
            "{v:?}"
        );
        // Late while connections were free (2 of 10 busy) and no CPU full: pelt's threads.
        let v = judge(&sleeping, &open(100.0, 20_000.0, 100.0, 0.5, 40_000)).verdict;
        assert_eq!(v.bottleneck, Bottleneck::Pelt, "{v:?}");
        assert!(
            v.evidence.contains("only 20% of its 10 connections busy"),
            "{v:?}"
        );
        // A few late (under a tenth of the median second), or a lag small against the
        // latency: no queue.
        let few = open(2_000.0, 20_000.0, 500.0, 0.05, 3_000_000);
        assert_eq!(
            judge(&sleeping, &few).verdict.bottleneck,
            Bottleneck::Latency
        );
        let mut small = open(20.0, 2_000_000.0, 20.0, 0.5, 5_000);
        small.latency_p99_us = 2_005_000;
        assert_eq!(small.queued(), None);
        // The open loop's latency-bound verdict gives no connection cap: the rate held.
        let v = judge(&sleeping, &open(100.0, 20_000.0, 100.0, 0.0, 500)).verdict;
        assert_eq!(
            (v.bottleneck, v.connection_cap_per_s),
            (Bottleneck::Latency, None)
        );
    }
}
