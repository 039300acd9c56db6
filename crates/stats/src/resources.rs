//! The resources beside the load (`--monitor`): each second's sample of the server's processes,
//! the host and pelt itself, and the run's summary of them with a verdict on what limited the
//! run. The sampler (pelt-load's `monitor`) reads /proc; this module only holds and judges
//! what it read, so a saved result can be judged again.

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
    pub bottleneck: Bottleneck,
    /// The figures that decided it, in a sentence.
    pub evidence: String,
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
    /// pelt itself: a worker's core was (nearly) full, or requests started late.
    Pelt,
    /// Nothing was saturated: the server waits on something else (a database, a sleep, locks).
    Latency,
    /// No server was monitored and pelt was not saturated: nothing to judge by.
    #[default]
    Unknown,
}

impl Bottleneck {
    /// As the summary and the HTML report name it.
    pub fn title(self) -> &'static str {
        match self {
            Bottleneck::ServerCpu => "the server's CPU",
            Bottleneck::Network => "the network",
            Bottleneck::HostCpu => "the machine's CPUs",
            Bottleneck::Pelt => "pelt itself",
            Bottleneck::Latency => "neither: latency-bound",
            Bottleneck::Unknown => "not known",
        }
    }
}

/// A share at or above this of what could be used counts as saturated.
pub const SATURATED: f64 = 0.9;

/// Seconds shorter than this (the run's last, cut short) weigh by their length in the means
/// and are left out of the peaks and the verdict: /proc counts CPU in ticks of 10 ms, so a
/// short interval's figures are coarse.
const SHORT_S: f64 = 0.5;

/// One second's sample and its length.
pub type Sampled<'a> = (&'a ResourceSample, f64);

impl ResourcesReport {
    /// Sums up the measured seconds' `samples` (each with its length in seconds);
    /// `completed`: responses over the same seconds; `lag_p99_late`: open loop, pelt's lag p99
    /// was past the late threshold (its own verdict).
    pub fn new(
        monitored: Option<String>,
        samples: &[Sampled],
        completed: u64,
        lag_p99_late: Option<u64>,
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
        let verdict = Verdict::judge(server.as_ref(), &whole, lag_p99_late);
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

impl Verdict {
    /// pelt first (if pelt was saturated, the run says little about the server), then the
    /// server's CPU, then the network; a run where none was saturated was latency-bound. Each
    /// is judged by its median second, so a ramp or one busy second does not decide it.
    fn judge(
        server: Option<&ProcessSummary>,
        samples: &[Sampled],
        lag_p99_late: Option<u64>,
    ) -> Verdict {
        let worker = median(
            samples
                .iter()
                .filter_map(|(s, l)| {
                    let busiest = s.pelt.workers.iter().copied().max_by(f64::total_cmp);
                    busiest.map(|w| (w, *l))
                })
                .collect(),
        );
        if worker >= SATURATED {
            return Verdict {
                bottleneck: Bottleneck::Pelt,
                evidence: format!(
                    "pelt's busiest worker used {:.0}% of a core in the median second: add \
                     threads (-t) or generator machines (--agents)",
                    worker * 100.0
                ),
            };
        }
        if let Some(lag) = lag_p99_late {
            return Verdict {
                bottleneck: Bottleneck::Pelt,
                evidence: format!(
                    "requests started late (pelt's lag p99 {lag} us): no connection was free \
                     or pelt was short of CPU"
                ),
            };
        }
        let share = |s: &ResourceSample| {
            s.server
                .as_ref()
                .filter(|p| p.cpu_capacity > 0.0)
                .map(|p| p.cpu() / p.cpu_capacity)
        };
        let server_share = median(
            samples
                .iter()
                .filter_map(|(s, l)| share(s).map(|x| (x, *l)))
                .collect(),
        );
        if let Some(server) = server.filter(|_| server_share >= SATURATED) {
            return Verdict {
                bottleneck: Bottleneck::ServerCpu,
                evidence: format!(
                    "the server used {:.0}% of the {} it may use in the median second \
                     ({:.1} us of CPU per request), while pelt's busiest worker used {:.0}%",
                    server_share * 100.0,
                    cores(server.cpu_capacity),
                    server.cpu_us_per_request,
                    worker * 100.0
                ),
            };
        }
        // The busier link of the two machines (pelt's and, sampled remotely, the server's).
        let busiest = |s: &ResourceSample| {
            [Some(&s.host), s.server_host.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|h| h.busiest_link.as_ref())
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .cloned()
        };
        let link = median(
            samples
                .iter()
                .filter_map(|(s, l)| busiest(s).map(|(_, x)| (x, *l)))
                .collect(),
        );
        if link >= SATURATED {
            let name = samples
                .iter()
                .find_map(|(s, _)| busiest(s).map(|(n, _)| n))
                .unwrap_or_default();
            return Verdict {
                bottleneck: Bottleneck::Network,
                evidence: format!(
                    "{name} ran at {:.0}% of its link speed in the median second",
                    link * 100.0
                ),
            };
        }
        let busy = |h: &HostSample| h.cpu_busy() / h.cores.max(1) as f64;
        let far = median(
            samples
                .iter()
                .filter_map(|(s, l)| s.server_host.as_ref().map(|h| (busy(h), *l)))
                .collect(),
        );
        if far >= SATURATED {
            return Verdict {
                bottleneck: Bottleneck::HostCpu,
                evidence: format!(
                    "the server's machine's {} cores were {:.0}% busy in the median second, \
                     while the server used {:.0}% of what it may use: something else there \
                     takes its CPU",
                    samples
                        .iter()
                        .find_map(|(s, _)| s.server_host.as_ref().map(|h| h.cores))
                        .unwrap_or(0),
                    far * 100.0,
                    server_share * 100.0
                ),
            };
        }
        let host = median(samples.iter().map(|(s, l)| (busy(&s.host), *l)).collect());
        if host >= SATURATED {
            return Verdict {
                bottleneck: Bottleneck::HostCpu,
                evidence: format!(
                    "the machine's {} cores were {:.0}% busy in the median second, while \
                     neither pelt nor the server used all it could: they share too few cores \
                     (pin them apart with taskset, or run pelt on another machine)",
                    samples.first().map_or(0, |(s, _)| s.host.cores),
                    host * 100.0
                ),
            };
        }
        let Some(server) = server else {
            return Verdict {
                bottleneck: Bottleneck::Unknown,
                evidence: format!(
                    "pelt's busiest worker used {:.0}% of a core; no server was monitored \
                     (--monitor PID or NAME) to judge it by",
                    worker * 100.0
                ),
            };
        };
        Verdict {
            bottleneck: Bottleneck::Latency,
            evidence: format!(
                "nothing was saturated: the server used {:.0}% of the {} it may use and \
                 pelt's busiest worker {:.0}% of a core, so the server waits on something \
                 else (a database, a sleep, a lock)",
                server_share * 100.0,
                cores(server.cpu_capacity),
                worker * 100.0
            ),
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

    fn judge(seconds: &[ResourceSample], lag: Option<u64>) -> ResourcesReport {
        let refs: Vec<Sampled> = seconds.iter().map(|s| (s, 1.0)).collect();
        ResourcesReport::new(Some("nginx".into()), &refs, 100_000, lag)
    }

    #[test]
    fn the_median_second_decides_in_order_pelt_server_network_latency() {
        let busy = [0.97, 0.95, 0.96, 0.2].map(|c| second(Some((c, 1.0)), 0.6));
        let r = judge(&busy, None);
        assert_eq!(r.verdict.bottleneck, Bottleneck::ServerCpu, "{r:?}");
        assert!(r.verdict.evidence.contains("96% of the 1 core"), "{r:?}");
        let server = r.server.unwrap();
        assert!((server.cpu_mean - 0.77).abs() < 1e-9);
        assert!((server.cpu_peak - 0.97).abs() < 1e-9);
        // 3.08 core-seconds over 100,000 responses.
        assert!((server.cpu_us_per_request - 30.8).abs() < 1e-6);
        // pelt saturated comes first, whatever the server did.
        let both = [0.97, 0.95, 0.96].map(|c| second(Some((c, 1.0)), 0.99));
        assert_eq!(judge(&both, None).verdict.bottleneck, Bottleneck::Pelt);
        assert_eq!(
            judge(&busy, Some(5_000)).verdict.bottleneck,
            Bottleneck::Pelt
        );
        // Neither: latency-bound; without a server: unknown.
        let idle = [0.1, 0.1, 0.2].map(|c| second(Some((c, 2.0)), 0.1));
        assert_eq!(judge(&idle, None).verdict.bottleneck, Bottleneck::Latency);
        // A full machine that neither filled.
        let mut shared = [0.5, 0.5, 0.5].map(|c| second(Some((c, 2.0)), 0.5));
        for s in &mut shared {
            s.host.cpu_user = 1.9;
        }
        let r = judge(&shared, None);
        assert_eq!(r.verdict.bottleneck, Bottleneck::HostCpu, "{r:?}");
        assert!(
            r.verdict.evidence.contains("2 cores were 95% busy"),
            "{r:?}"
        );
        let none = [second(None, 0.5)];
        let r = judge(&none, None);
        assert_eq!(r.verdict.bottleneck, Bottleneck::Unknown);
        assert!(r.server.is_none());
        // A full link.
        let mut full = second(Some((0.3, 1.0)), 0.3);
        full.host.busiest_link = Some(("eth0".into(), 0.96));
        let r = judge(&[full.clone(), full], None);
        assert_eq!(r.verdict.bottleneck, Bottleneck::Network);
        assert!(r.verdict.evidence.starts_with("eth0 ran at 96%"), "{r:?}");
    }
}
