//! `--monitor PID|NAME`: once a second, on the thread that receives the timeline (never a
//! worker), the server's processes, the host and pelt itself are read from /proc and joined to
//! the second's point ([`pelt_stats::ResourceSample`]).
//!
//! /proc is read through the procfs crate (processes, their threads, /proc/stat, meminfo,
//! /proc/net/dev and /proc/net/snmp): sysinfo, the other well-kept choice, gives neither
//! softirq time, nor context switches, nor TCP counters. procfs 0.18 does not parse
//! /proc/net/netstat, whose TcpExt line holds ListenOverflows and ListenDrops: that one pair
//! of lines is read here, as is a link's speed from /sys/class/net.
//!
//! CPU is the change of each process's (and thread's) user and system ticks between two
//! samples over the time between them. A process is counted from the sample after it is first
//! seen (or from its start, when it started since the last sample); the ticks of one that ends
//! between two samples after the last are lost, which a second's granularity allows.

use pelt_stats::{HostSample, ProcessSample, ResourceSample};
use procfs::process::{Process, Stat};
use procfs::{Current, CurrentSI};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// What `--monitor` watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watch {
    /// A process and its descendants.
    Pid(i32),
    /// Every process of this name (its command name, or its program's file name) and their
    /// descendants.
    Name(String),
    /// `listener`: whatever listens on the target's TCP port on this machine, found when the
    /// run is prepared ([`Watch::listening_on`]); per target in `pelt compare`.
    Listener,
    /// The processes that held a socket listening on `port` when the run was prepared (the
    /// first of each family: nginx's master, not its workers), and their descendants.
    Listening { port: u16, pids: Vec<i32> },
}

/// A thread that used at least this share of a core in a second counts as running.
const RUNNING: f64 = 0.1;

impl Watch {
    /// `--monitor`'s value: a number is a PID, `listener` the process listening on the
    /// target's port, anything else a process name.
    pub fn parse(s: &str) -> Result<Watch, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("a process ID or a process name".into());
        }
        if s == "listener" {
            return Ok(Watch::Listener);
        }
        match s.parse::<i32>() {
            Ok(pid) if pid > 0 => Ok(Watch::Pid(pid)),
            Ok(_) => Err(format!("{s} is no process ID")),
            Err(_) => Ok(Watch::Name(s.to_string())),
        }
    }

    /// What it matches now, as the report says it ("nginx: 2 processes"), or why it matches
    /// nothing.
    pub fn check(&self) -> Result<String, String> {
        let table = processes();
        let found = self.processes(&table);
        let n = found.len();
        let plural = if n == 1 { "process" } else { "processes" };
        match self {
            Watch::Pid(pid) if n == 0 => Err(format!("no process has the ID {pid}")),
            Watch::Name(name) if n == 0 => Err(format!("no process is named {name:?}")),
            Watch::Pid(pid) => Ok(format!("PID {pid}: {n} {plural}")),
            Watch::Name(name) => Ok(format!("{name}: {n} {plural}")),
            Watch::Listener => Err("listener: no target port resolved".into()),
            Watch::Listening { port, .. } if n == 0 => {
                Err(format!("what listened on port {port} has ended"))
            }
            Watch::Listening { port, pids } => Ok(format!(
                "the listener on port {port} (PID {}): {n} {plural}",
                pids.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// `listener` for a target on TCP `port`: the processes holding a socket that listens
    /// there (this machine's network namespace), the first of each family; or why none.
    pub fn listening_on(port: u16) -> Result<Watch, String> {
        use procfs::net::TcpState;
        use procfs::process::FDTarget;
        let entries = procfs::net::tcp()
            .into_iter()
            .flatten()
            .chain(procfs::net::tcp6().into_iter().flatten());
        let inodes: HashSet<u64> = entries
            .filter(|e| e.state == TcpState::Listen && e.local_address.port() == port)
            .map(|e| e.inode)
            .collect();
        if inodes.is_empty() {
            return Err(format!("nothing on this machine listens on port {port}"));
        }
        let table = processes();
        let holders: HashSet<i32> = table
            .iter()
            .filter(|p| {
                p.process.fd().is_ok_and(|mut fds| {
                    fds.any(|fd| {
                        fd.is_ok_and(
                            |fd| matches!(fd.target, FDTarget::Socket(i) if inodes.contains(&i)),
                        )
                    })
                })
            })
            .map(|p| p.pid)
            .collect();
        let mut pids: Vec<i32> = table
            .iter()
            .filter(|p| holders.contains(&p.pid) && !holders.contains(&p.ppid))
            .map(|p| p.pid)
            .collect();
        if pids.is_empty() {
            return Err(format!(
                "a process pelt may not look into listens on port {port} (another user's: \
                 give its PID, or run pelt as that user)"
            ));
        }
        pids.sort_unstable();
        Ok(Watch::Listening { port, pids })
    }

    /// The processes it matches in `table`, descendants included.
    fn processes(&self, table: &[Proc]) -> Vec<i32> {
        let mut set: HashSet<i32> = table
            .iter()
            .filter(|p| match self {
                Watch::Pid(pid) => p.pid == *pid,
                Watch::Name(name) => p.named(name),
                Watch::Listener => false,
                Watch::Listening { pids, .. } => pids.contains(&p.pid),
            })
            .map(|p| p.pid)
            .collect();
        // Descendants, however deep: add children until none is new.
        loop {
            let before = set.len();
            for p in table {
                if set.contains(&p.ppid) {
                    set.insert(p.pid);
                }
            }
            if set.len() == before {
                break;
            }
        }
        let mut pids: Vec<i32> = set.into_iter().collect();
        pids.sort_unstable();
        pids
    }
}

/// One process as the table lists it.
struct Proc {
    pid: i32,
    ppid: i32,
    comm: String,
    process: Process,
}

impl Proc {
    /// Its command name is `name` (cut to 15 bytes, as the kernel keeps it), or its program's
    /// file name is.
    fn named(&self, name: &str) -> bool {
        let short = &name.as_bytes()[..name.len().min(15)];
        if self.comm.as_bytes() == short {
            return true;
        }
        self.process
            .exe()
            .ok()
            .and_then(|p| p.file_name().map(|f| f == name))
            .unwrap_or(false)
    }
}

/// Every process /proc lists now (those that end meanwhile left out).
fn processes() -> Vec<Proc> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.filter_map(Result::ok)
        .filter_map(|process| {
            let stat = process.stat().ok()?;
            Some(Proc {
                pid: stat.pid,
                ppid: stat.ppid,
                comm: stat.comm,
                process,
            })
        })
        .collect()
}

/// The host's counters at one sample.
#[derive(Default)]
struct HostCounters {
    cpu: [u64; 6],
    idle: u64,
    rx_bytes: u64,
    tx_bytes: u64,
    rx_packets: u64,
    tx_packets: u64,
    /// Per interface with a known link speed: (rx, tx) bytes.
    links: HashMap<String, (u64, u64)>,
    retransmits: u64,
    overflows: u64,
    drops: u64,
}

/// Adds a remote monitor's sample of a second (the server's processes and its host) to this
/// machine's.
pub fn join_remote(resources: &mut Option<ResourceSample>, theirs: Option<ResourceSample>) {
    if let Some(theirs) = theirs {
        let r = resources.get_or_insert_with(ResourceSample::default);
        r.server = theirs.server;
        r.server_host = Some(theirs.host);
    }
}

/// Samples handed from the sampler's thread to the one that emits timeline points, by second:
/// a point takes its own and drops any older left unclaimed, so it holds a few at most.
#[derive(Default)]
pub struct Samples {
    by_second: std::sync::Mutex<std::collections::BTreeMap<u64, ResourceSample>>,
    added: std::sync::Condvar,
}

impl Samples {
    /// Second `k`'s sample is in.
    pub fn put(&self, k: u64, sample: ResourceSample) {
        let mut m = self.by_second.lock().unwrap_or_else(|e| e.into_inner());
        m.insert(k, sample);
        self.added.notify_all();
    }

    /// Second `k`'s sample, waiting up to `wait` for it; drops the samples of seconds before.
    pub fn take(&self, k: u64, wait: std::time::Duration) -> Option<ResourceSample> {
        let m = self.by_second.lock().unwrap_or_else(|e| e.into_inner());
        let (mut m, _) = self
            .added
            .wait_timeout_while(m, wait, |m| !m.contains_key(&k))
            .unwrap_or_else(|e| e.into_inner());
        let sample = m.remove(&k);
        *m = m.split_off(&k);
        sample
    }
}

/// Reads the samples: each call gives the second since the one before.
pub struct Sampler {
    watch: Option<Watch>,
    tick_s: f64,
    page: u64,
    cores: u32,
    last: Instant,
    /// The server's and pelt's counters at the last sample (apart: `--monitor` may name
    /// pelt itself).
    server: Counters,
    pelt: Counters,
    host: HostCounters,
    /// Clock ticks since boot at the last sample (a process that started after it is counted
    /// whole).
    boot_ticks: u64,
    /// Link speeds, bytes per second, by interface (read once).
    speeds: HashMap<String, f64>,
}

impl Sampler {
    /// Starts sampling: the counters now are the first second's baseline.
    pub fn new(watch: Option<Watch>) -> Sampler {
        let mut s = Sampler {
            watch,
            tick_s: 1.0 / procfs::ticks_per_second() as f64,
            page: procfs::page_size(),
            cores: 1,
            last: Instant::now(),
            server: Counters::default(),
            pelt: Counters::default(),
            host: HostCounters::default(),
            boot_ticks: 0,
            speeds: link_speeds(),
        };
        s.sample();
        s
    }

    /// The second (or so) since the last call.
    pub fn sample(&mut self) -> ResourceSample {
        let now = Instant::now();
        let interval = now.duration_since(self.last).as_secs_f64().max(1e-3);
        self.last = now;
        let boot_ticks = uptime_ticks(self.tick_s);
        let since = std::mem::replace(&mut self.boot_ticks, boot_ticks);
        let host = self.host(interval);
        let at = Moment {
            since,
            interval,
            tick_s: self.tick_s,
            page: self.page,
        };
        let server = self.watch.clone().map(|w| {
            let table = processes();
            let pids = w.processes(&table);
            let procs = table.iter().filter(|p| pids.contains(&p.pid));
            self.server.read(procs.map(|p| &p.process), &at, self.cores)
        });
        let pelt = Process::myself().ok().map(|me| {
            let mut sample = self.pelt.read(std::iter::once(&me), &at, self.cores);
            sample.workers = std::mem::take(&mut self.pelt.workers)
                .into_iter()
                .map(|(_, cpu)| cpu)
                .collect();
            sample
        });
        ResourceSample {
            server,
            host,
            server_host: None,
            pelt: pelt.unwrap_or_default(),
        }
    }

    /// The host over `interval` seconds.
    fn host(&mut self, interval: f64) -> HostSample {
        let now = host_counters();
        let was = std::mem::replace(&mut self.host, now);
        let now = &self.host;
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let cores = |k: usize| d(now.cpu[k], was.cpu[k]) as f64 * self.tick_s / interval;
        let mem = procfs::Meminfo::current().ok();
        let busiest_link = now
            .links
            .iter()
            .filter_map(|(name, &(rx, tx))| {
                let speed = *self.speeds.get(name)?;
                let (rx0, tx0) = was.links.get(name).copied().unwrap_or((rx, tx));
                let busier = d(rx, rx0).max(d(tx, tx0)) as f64 / interval;
                Some((name.clone(), busier / speed))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        self.cores = procfs::KernelStats::current()
            .map_or(1, |k| k.cpu_time.len() as u32)
            .max(1);
        // Ticks are 10 ms: over a short interval the modes may add up past the cores there
        // are; they are scaled back to them.
        let modes: [f64; 6] = std::array::from_fn(cores);
        let sum: f64 = modes.iter().sum();
        let scale = if sum > self.cores as f64 {
            self.cores as f64 / sum
        } else {
            1.0
        };
        let [user, system, softirq, irq, iowait, steal] = modes.map(|m| m * scale);
        HostSample {
            cores: self.cores,
            cpu_user: user,
            cpu_system: system,
            cpu_softirq: softirq,
            cpu_irq: irq,
            cpu_iowait: iowait,
            cpu_steal: steal,
            mem_used_bytes: mem.as_ref().map_or(0, |m| {
                m.mem_total
                    .saturating_sub(m.mem_available.unwrap_or(m.mem_free))
            }),
            mem_total_bytes: mem.as_ref().map_or(0, |m| m.mem_total),
            net_rx_bytes: d(now.rx_bytes, was.rx_bytes),
            net_tx_bytes: d(now.tx_bytes, was.tx_bytes),
            net_rx_packets: d(now.rx_packets, was.rx_packets),
            net_tx_packets: d(now.tx_packets, was.tx_packets),
            busiest_link,
            tcp_retransmits: d(now.retransmits, was.retransmits),
            listen_overflows: d(now.overflows, was.overflows),
            listen_drops: d(now.drops, was.drops),
        }
    }
}

/// When a sample is taken: clock ticks since boot at the last one (a process or thread that
/// started after it is counted whole), the seconds since, and the units.
struct Moment {
    since: u64,
    interval: f64,
    tick_s: f64,
    page: u64,
}

/// A group of processes' counters at the last sample: (user, system) ticks and context
/// switches per process, ticks per thread; and pelt's workers found in the last read.
#[derive(Default)]
struct Counters {
    ticks: HashMap<i32, (u64, u64, u64)>,
    threads: HashMap<i32, u64>,
    workers: Vec<(usize, f64)>,
}

impl Counters {
    /// The group `procs` over the second since the last read.
    fn read<'p>(
        &mut self,
        procs: impl Iterator<Item = &'p Process>,
        at: &Moment,
        cores: u32,
    ) -> ProcessSample {
        let mut acc = Acc::default();
        let (mut seen, mut seen_threads) = (HashSet::new(), HashSet::new());
        for p in procs {
            self.add(p, at, &mut acc, &mut seen, &mut seen_threads);
        }
        self.ticks.retain(|pid, _| seen.contains(pid));
        self.threads.retain(|tid, _| seen_threads.contains(tid));
        self.workers = std::mem::take(&mut acc.workers);
        self.workers.sort_by_key(|w| w.0);
        acc.sample(cores)
    }

    /// Adds process `p` (and its threads) to `acc`.
    fn add(
        &mut self,
        p: &Process,
        at: &Moment,
        acc: &mut Acc,
        seen: &mut HashSet<i32>,
        seen_threads: &mut HashSet<i32>,
    ) {
        let Ok(stat) = p.stat() else {
            return;
        };
        let status = p.status().ok();
        let switches = status.as_ref().map_or(0, |s| {
            s.voluntary_ctxt_switches.unwrap_or(0) + s.nonvoluntary_ctxt_switches.unwrap_or(0)
        });
        let (u0, s0, c0) = match self.ticks.get(&stat.pid) {
            Some(&t) => t,
            None if stat.starttime > at.since => (0, 0, 0),
            None => (stat.utime, stat.stime, switches),
        };
        self.ticks
            .insert(stat.pid, (stat.utime, stat.stime, switches));
        seen.insert(stat.pid);
        let cores = |ticks: u64| ticks as f64 * at.tick_s / at.interval;
        acc.processes += 1;
        acc.user += cores(stat.utime.saturating_sub(u0));
        acc.system += cores(stat.stime.saturating_sub(s0));
        acc.switches += switches.saturating_sub(c0);
        acc.rss += stat.rss * at.page;
        acc.threads += stat.num_threads.max(0) as u64;
        acc.fds += p.fd_count().unwrap_or(0) as u64;
        if let Some(list) = status.and_then(|s| s.cpus_allowed_list) {
            for (a, b) in list {
                acc.allowed.extend(a..=b);
            }
        }
        let Ok(tasks) = p.tasks() else {
            return;
        };
        for task in tasks.filter_map(Result::ok) {
            let Ok(t) = task.stat() else {
                continue;
            };
            let ticks = t.utime + t.stime;
            let before = match self.threads.get(&task.tid) {
                Some(&b) => b,
                None if t.starttime > at.since => 0,
                None => ticks,
            };
            self.threads.insert(task.tid, ticks);
            seen_threads.insert(task.tid);
            let cpu = cores(ticks.saturating_sub(before));
            if cpu >= RUNNING {
                acc.running += 1;
            }
            if let Some(k) = worker_index(&t) {
                acc.workers.push((k, cpu));
            }
        }
    }
}

/// What one group of processes added up to in a sample.
#[derive(Default)]
struct Acc {
    processes: u32,
    user: f64,
    system: f64,
    rss: u64,
    threads: u64,
    fds: u64,
    switches: u64,
    /// Threads that ran (used at least `RUNNING` of a core).
    running: u64,
    /// The CPUs the processes may run on.
    allowed: HashSet<u32>,
    /// pelt's workers: (index, cores).
    workers: Vec<(usize, f64)>,
}

impl Acc {
    fn sample(&self, cores: u32) -> ProcessSample {
        let allowed = if self.allowed.is_empty() {
            cores
        } else {
            (self.allowed.len() as u32).min(cores)
        };
        ProcessSample {
            processes: self.processes,
            cpu_user: self.user,
            cpu_system: self.system,
            // The threads that ran, at most the cores they may run on: a one-worker nginx
            // can use one core whatever the machine has.
            cpu_capacity: (self.running.max(1) as f64).min(allowed as f64),
            rss_bytes: self.rss,
            threads: self.threads,
            fds: self.fds,
            ctx_switches: self.switches,
            workers: Vec::new(),
        }
    }
}

/// pelt's worker `k` (its thread is named `pelt-worker-k`).
fn worker_index(t: &Stat) -> Option<usize> {
    t.comm.strip_prefix("pelt-worker-")?.parse().ok()
}

/// Clock ticks since boot.
fn uptime_ticks(tick_s: f64) -> u64 {
    procfs::Uptime::current().map_or(0, |u| (u.uptime / tick_s) as u64)
}

/// The host's counters now.
fn host_counters() -> HostCounters {
    let mut h = HostCounters::default();
    if let Ok(k) = procfs::KernelStats::current() {
        let t = &k.total;
        h.cpu = [
            t.user + t.nice,
            t.system,
            t.softirq.unwrap_or(0),
            t.irq.unwrap_or(0),
            t.iowait.unwrap_or(0),
            t.steal.unwrap_or(0),
        ];
        h.idle = t.idle;
    }
    if let Ok(me) = Process::myself() {
        if let Ok(devs) = me.dev_status() {
            for (name, d) in devs {
                h.rx_bytes += d.recv_bytes;
                h.tx_bytes += d.sent_bytes;
                h.rx_packets += d.recv_packets;
                h.tx_packets += d.sent_packets;
                h.links.insert(name, (d.recv_bytes, d.sent_bytes));
            }
        }
        if let Ok(snmp) = me.snmp() {
            h.retransmits = snmp.tcp_retrans_segs;
        }
    }
    if let Ok(text) = std::fs::read_to_string("/proc/net/netstat") {
        let (overflows, drops) = listen_counters(&text);
        h.overflows = overflows;
        h.drops = drops;
    }
    h
}

/// ListenOverflows and ListenDrops from /proc/net/netstat's TcpExt lines (a line of names,
/// then a line of values).
fn listen_counters(text: &str) -> (u64, u64) {
    let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return (0, 0);
    };
    let field = |want: &str| {
        names
            .split_whitespace()
            .zip(values.split_whitespace())
            .find(|(n, _)| *n == want)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    };
    (field("ListenOverflows"), field("ListenDrops"))
}

/// Each interface's link speed in bytes per second, where /sys/class/net says it (not for
/// loopback or most virtual interfaces).
fn link_speeds() -> HashMap<String, f64> {
    let mut speeds = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return speeds;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let mbit = std::fs::read_to_string(entry.path().join("speed"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .filter(|&m| m > 0);
        if let Some(m) = mbit {
            speeds.insert(name, m as f64 * 1e6 / 8.0);
        }
    }
    speeds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listen_counters_are_read_by_name() {
        let text = "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPTimeouts\n\
                    TcpExt: 0 17 19 3\n\
                    IpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(listen_counters(text), (17, 19));
        assert_eq!(listen_counters("IpExt: A\nIpExt: 1\n"), (0, 0));
    }

    #[test]
    fn a_monitor_value_is_a_pid_or_a_name() {
        assert_eq!(Watch::parse("123"), Ok(Watch::Pid(123)));
        assert_eq!(Watch::parse("nginx"), Ok(Watch::Name("nginx".into())));
        assert!(Watch::parse("-3").is_err());
        assert!(Watch::parse(" ").is_err());
    }

    /// This test's own process, found by PID and by its program's name, and sampled: its CPU
    /// while it spins is counted, and the host has cores.
    #[test]
    fn a_busy_process_shows_its_cpu() {
        let me = std::process::id() as i32;
        let by_pid = Watch::Pid(me);
        assert!(by_pid.check().unwrap().starts_with(&format!("PID {me}: ")));
        let exe = std::env::current_exe().unwrap();
        let name = exe.file_name().unwrap().to_string_lossy().into_owned();
        assert!(Watch::Name(name.clone()).check().is_ok(), "{name}");
        assert!(Watch::Pid(i32::MAX)
            .check()
            .unwrap_err()
            .contains("no process"));
        assert!(Watch::Name("no-such-program-here".into())
            .check()
            .unwrap_err()
            .contains("no process is named"));
        let mut sampler = Sampler::new(Some(by_pid));
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let s = sampler.sample();
        let server = s.server.expect("the server was sampled");
        assert!(server.cpu() > 0.2, "{server:?}");
        assert!(server.rss_bytes > 0 && server.threads >= 1 && server.fds > 0);
        assert!(s.host.cores >= 1 && s.host.cpu_busy() > 0.2, "{:?}", s.host);
        assert!(s.pelt.cpu() > 0.2, "{:?}", s.pelt);
    }
}
