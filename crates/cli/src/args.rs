//! Every flag, defined once: this definition produces -h, --help and the parsing.

use crate::{expect, values};
use clap::{Args, Parser, Subcommand, ValueEnum};
use pelt_engine as engine;
use std::path::PathBuf;
use std::time::Duration;

/// `--stages` as typed, parsed (a newtype: clap reads a bare `Vec` as repeated values).
#[derive(Debug, Clone)]
pub struct StageList(pub Vec<engine::Stage>);

fn stage_list(s: &str) -> Result<StageList, String> {
    values::stages(s).map(StageList)
}

/// pelt: a fast, honest HTTP load generator.
///
/// Sends HTTP/1.1 requests to URL over many connections and reports requests/s, latency
/// percentiles, status codes and errors. Closed loop by default: each connection sends its
/// next request as soon as the previous response is complete. With --rate, open loop:
/// requests are due on a fixed schedule and latency counts from the due time, so a server
/// stall shows in every request it delayed.
#[derive(Debug, Parser)]
#[command(
    name = "pelt",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  pelt http://127.0.0.1:8080/ -c 64 -d 10s\n  pelt http://127.0.0.1:8080/ --rate 20k -d 30s --warmup 5s\n  pelt http://127.0.0.1:8080/ -n 100k --json result.json\n  pelt http://127.0.0.1:8080/ -d 30s --expect 'p99<20ms' --expect 'errors<0.1%'\n  pelt http://127.0.0.1:8080/ --http2 --streams 100 -c 4\n  pelt http://127.0.0.1:8080/ -d 30s --json r.json --html r.html\n  pelt merge gen1.json gen2.json --json all.json --html all.html\n  pelt serve --port 8080\n  pelt demo\n\nExit codes: 0 the run completed and every --expect held (whatever the server answered), 1 internal failure (a result could not be written), 2 bad input (nothing was sent), 3 an --expect threshold was not met, 4 a fleet run (--agents) lost an agent or not every agent joined, 130 interrupted (Ctrl-C or SIGTERM; results are still written)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub fleet: FleetArgs,
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// A plain run's (or a coordinator's) live metrics for Prometheus.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Live metrics (Prometheus)")]
pub struct MetricsArgs {
    /// Serve the run's metrics at http://ADDR/metrics while it runs, in Prometheus' text
    /// format: IP:PORT, or a PORT on 127.0.0.1.
    #[arg(long = "metrics-listen", value_name = "ADDR", value_parser = metrics_addr)]
    pub metrics_listen: Option<std::net::SocketAddr>,

    /// Keep serving the final values this long after the run, so the last scrape sees them.
    #[arg(long = "metrics-linger", value_name = "TIME", default_value = "15s", requires = "metrics_listen", value_parser = values::duration_or_zero)]
    pub metrics_linger: Duration,

    /// Send the metrics once a second, and the final values at the end, to this Prometheus
    /// remote-write URL (Prometheus with --web.enable-remote-write-receiver:
    /// http://HOST:9090/api/v1/write; Mimir, Thanos, VictoriaMetrics...).
    #[arg(long = "metrics-push", value_name = "URL", value_parser = push_url)]
    pub metrics_push: Option<String>,

    /// The `run` label on every series [default: pelt-<start time, Unix seconds>].
    #[arg(long = "metrics-run", value_name = "NAME")]
    pub metrics_run: Option<String>,
}

/// An http:// or https:// URL with a host.
fn push_url(s: &str) -> Result<String, String> {
    let u = url::Url::parse(s).map_err(|e| format!("not a URL ({e})"))?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(
            "expected an http:// or https:// URL, like http://127.0.0.1:9090/api/v1/write".into(),
        );
    }
    Ok(s.to_string())
}

/// `9464` (on 127.0.0.1) or `IP:PORT`.
fn metrics_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| {
        "expected a port (on 127.0.0.1) or an IP address and port, like 9464 or 0.0.0.0:9464".into()
    })
}

/// A plain run's flags for a fleet: this pelt coordinates, `pelt agent`s send.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Fleet (a run sent by several agents, see pelt agent)")]
pub struct FleetArgs {
    /// Coordinate a fleet of N agents instead of sending: wait for all N (pelt agent), split
    /// the run between them exactly, start them together, merge their results.
    #[arg(long = "agents", value_name = "N", value_parser = agents)]
    pub agents: Option<u32>,

    /// Where the coordinator listens for its agents (0.0.0.0:7070 to take them from other
    /// machines).
    #[arg(long = "listen", value_name = "ADDR", default_value = "127.0.0.1:7070", requires = "agents", value_parser = listen_addr)]
    pub listen: std::net::SocketAddr,

    /// The fleet's shared token, in a file (a mounted Kubernetes Secret); or give the token
    /// itself in PELT_FLEET_TOKEN.
    #[arg(
        long = "token-file",
        value_name = "PATH",
        env = "PELT_FLEET_TOKEN_FILE",
        requires = "agents"
    )]
    pub token_file: Option<PathBuf>,

    /// How long to wait for every agent to join.
    #[arg(long = "join-timeout", value_name = "TIME", default_value = "60s", requires = "agents", value_parser = values::duration)]
    pub join_timeout: Duration,
}

fn agents(s: &str) -> Result<u32, String> {
    values::count_at_most(s, 10_000).map(|n| n as u32)
}

fn listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    s.parse()
        .map_err(|_| "expected an IP address and port, like 0.0.0.0:7070 or [::]:7070".into())
}

/// `pelt agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The coordinator's control address, HOST:PORT (on Kubernetes, its headless Service).
    #[arg(
        long = "coordinator",
        value_name = "HOST:PORT",
        env = "PELT_COORDINATOR"
    )]
    pub coordinator: String,

    /// This agent's rank, 0 .. N-1 [default: JOB_COMPLETION_INDEX (a Kubernetes Indexed
    /// Job), else SLURM_PROCID].
    #[arg(long = "rank", value_name = "N")]
    pub rank: Option<u32>,

    /// The fleet's size N, checked against the coordinator's [default: PELT_AGENTS with
    /// JOB_COMPLETION_INDEX, SLURM_NTASKS with SLURM_PROCID].
    #[arg(long = "agents", value_name = "N", value_parser = agents)]
    pub agents: Option<u32>,

    /// Worker threads this agent runs [default: its CPUs; the coordinator's -t overrides].
    #[arg(short = 't', long = "threads", value_name = "N", value_parser = values::threads)]
    pub threads: Option<usize>,

    /// The fleet's shared token, in a file; or give the token itself in PELT_FLEET_TOKEN.
    #[arg(
        long = "token-file",
        value_name = "PATH",
        env = "PELT_FLEET_TOKEN_FILE"
    )]
    pub token_file: Option<PathBuf>,

    /// How long to keep trying to reach the coordinator.
    #[arg(long = "join-timeout", value_name = "TIME", default_value = "60s", value_parser = values::duration)]
    pub join_timeout: Duration,

    /// This agent's own result (its part of the run) as files too.
    #[command(flatten)]
    pub out: Outputs,

    /// No progress notes on stderr, and no summary.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the built-in target server.
    Serve(ServeArgs),
    /// Start the built-in server and run a short test against it: zero setup.
    Demo,
    /// Render a saved result again: the summary, and --html, --csv, --hdr-log.
    Report(ReportArgs),
    /// Combine results into one, exactly: counts add, percentiles come from the merged
    /// histograms, timelines line up by wall-clock second.
    Merge(MergeArgs),
    /// Run the same load against several targets and settings, interleaved and repeated, and
    /// print a comparison table (krps, p50, p99, errors); --json, --html and --csv write it.
    #[command(
        args_override_self = true,
        after_help = "Examples:\n  pelt compare --target nginx=http://127.0.0.1:8080/ --target node=http://127.0.0.1:3000/ \\\n      --vary connections=16,256 --vary keepalive=on,off -d 10s --repeat 3\n  pelt compare --config study.toml --html study.html\n\n--vary takes any load flag by its long name (connections, threads, rate, pipeline, streams, method, timeout, ...), plus keepalive=on,off and http=1.1,2. A --config TOML file holds the same flags by long name (targets and vary as tables; see docs/GUIDE.md); flags on the command line override it."
    )]
    Compare(Box<CompareArgs>),
    /// Find the highest open-loop rate at which every --slo holds: step up, then bisect;
    /// prints the steps and the answer (--json, --html and --csv write them).
    #[command(
        name = "find-max",
        after_help = "Examples:\n  pelt find-max http://127.0.0.1:8080/ --slo 'p99<20ms' --slo 'errors<0.1%'\n  pelt find-max http://127.0.0.1:8080/ --slo 'p99<5ms' --start 10k --max-rate 200k -d 10s -c 256\n\nEach step is an open-loop run of -d (default 10s) after --warmup (default 1s), latency measured from each request's due time. A step passes when every --slo holds and at least 95% of the requests asked for completed. Without --start, a closed-loop probe finds what the server does flat out and the search starts at half of it. Exit 0 with an answer, 3 when no rate tried met the objectives."
    )]
    FindMax(Box<FindMaxArgs>),
    /// Join a fleet: take this agent's part of a run from its coordinator (pelt URL ...
    /// --agents N), send it from the start instant, and report back.
    #[command(
        after_help = "Examples:\n  pelt http://10.0.0.9:8080/ -n 1m -c 300 --agents 3 --listen 0.0.0.0:7070 --token-file token\n  pelt agent --coordinator 10.0.0.1:7070 --rank 0 --token-file token   (on each of 3 machines, ranks 0, 1, 2)\n\nOn Kubernetes (pelt k8s writes the manifests) the rank comes from JOB_COMPLETION_INDEX and the token from a Secret; under Slurm from SLURM_PROCID and SLURM_NTASKS. Exit 0 when its part ran, 2 when it cannot run what it was given, 4 when it could not join or its coordinator went away (its load then stops), 130 interrupted."
    )]
    Agent(AgentArgs),
    /// Write the Kubernetes manifests of a fleet run: its token Secret, the coordinator's Job
    /// behind a headless Service, and the agents' Indexed Job.
    #[command(
        after_help = "Examples:\n  pelt k8s http://my-service.default.svc:8080/ -d 5m --rate 100k -c 1000 --agents 8 > fleet.yaml\n  kubectl apply -f fleet.yaml\n  kubectl logs -f -l app.kubernetes.io/instance=pelt,app.kubernetes.io/component=agent --prefix --max-log-requests 8\n  kubectl wait --for=condition=complete job/pelt-coordinator --timeout=15m\n  kubectl logs job/pelt-coordinator > result.json && pelt report result.json --html report.html\n  kubectl delete -f fleet.yaml\n\nThe run's flags are those of a plain run (checked here, the host resolved in the cluster); files they name (--body-file, --targets, --bodies, --cacert, --cert, --key) are shipped in the Secret. Build the image with deploy/Dockerfile and push it where the cluster pulls from."
    )]
    K8s(Box<K8sArgs>),
}

/// `pelt k8s`.
#[derive(Debug, Args)]
pub struct K8sArgs {
    /// The fleet's size: the agents' Indexed Job runs this many pods.
    #[arg(long = "agents", value_name = "N", required = true, value_parser = agents)]
    pub agents: u32,

    /// The container image (build it with deploy/Dockerfile and push it).
    #[arg(long = "image", value_name = "IMAGE", default_value = concat!("pelt:", env!("CARGO_PKG_VERSION")))]
    pub image: String,

    /// Names the objects (NAME, NAME-coordinator, NAME-agents) and labels them.
    #[arg(long = "name", value_name = "NAME", default_value = "pelt", value_parser = k8s_name)]
    pub name: String,

    /// The namespace to put them in [default: kubectl's current one].
    #[arg(long = "namespace", value_name = "NS", value_parser = k8s_namespace)]
    pub namespace: Option<String>,

    /// Each agent's CPU, requested and its limit (a whole number gives it whole cores).
    #[arg(long = "cpu", value_name = "CPU", default_value = "2", value_parser = k8s_cpu)]
    pub cpu: String,

    /// Each agent's memory, requested and its limit.
    #[arg(long = "memory", value_name = "SIZE", default_value = "1Gi", value_parser = k8s_memory)]
    pub memory: String,

    /// The Jobs' activeDeadlineSeconds [default: the join timeout, the run (-d and
    /// --warmup, or 1h for -n) and 5m].
    #[arg(long = "deadline", value_name = "TIME", value_parser = values::duration)]
    pub deadline: Option<Duration>,

    /// The Jobs' ttlSecondsAfterFinished: how long they and their logs stay.
    #[arg(long = "ttl", value_name = "TIME", default_value = "1h", value_parser = values::duration)]
    pub ttl: Duration,

    /// How long the coordinator waits for every agent, and each agent for it (pods take
    /// time to be scheduled and to pull the image).
    #[arg(long = "join-timeout", value_name = "TIME", default_value = "5m", value_parser = values::duration)]
    pub join_timeout: Duration,

    /// The token to put in the Secret, from a file [default: a new random one].
    #[arg(long = "token-file", value_name = "PATH")]
    pub token_file: Option<PathBuf>,

    /// Write the manifests to PATH instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// The run: every flag of a plain run (URL, -c, -d, -n, --rate, -H, --expect, ...).
    #[command(flatten)]
    pub load: LoadArgs,

    /// The coordinator's live metrics (--metrics-push URL to the cluster's Prometheus, or
    /// --metrics-listen 0.0.0.0:9464 for it to scrape the coordinator's pod).
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// A Kubernetes object name pelt can add `-coordinator` to (an RFC 1035 label).
fn k8s_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 50
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    ok.then(|| s.to_string()).ok_or_else(|| {
        "expected a name of lowercase letters, digits and '-', starting with a letter, at most 50"
            .into()
    })
}

fn k8s_namespace(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    ok.then(|| s.to_string())
        .ok_or_else(|| "expected a namespace of lowercase letters, digits and '-'".into())
}

/// `2`, `1.5`, `500m`.
fn k8s_cpu(s: &str) -> Result<String, String> {
    let num = s.strip_suffix('m').unwrap_or(s);
    let ok = num.parse::<f64>().is_ok_and(|v| v > 0.0 && v.is_finite())
        && num.chars().all(|c| c.is_ascii_digit() || c == '.');
    ok.then(|| s.to_string())
        .ok_or_else(|| "expected CPUs like 2, 1.5 or 500m".into())
}

/// `1Gi`, `512Mi`, `2G`.
fn k8s_memory(s: &str) -> Result<String, String> {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &s[digits.len()..];
    let ok = digits.parse::<u64>().is_ok_and(|v| v > 0)
        && ["", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"].contains(&unit);
    ok.then(|| s.to_string())
        .ok_or_else(|| "expected a size like 1Gi, 512Mi or 2G".into())
}

/// `pelt find-max`.
#[derive(Debug, Args)]
pub struct FindMaxArgs {
    /// An objective every step must meet, as --expect: p99<20ms, errors<0.1%, 5xx<1%
    /// (repeatable, at least one).
    #[arg(long = "slo", value_name = "EXPR", required = true, allow_hyphen_values = true, value_parser = expect::parse)]
    pub slo: Vec<expect::Expectation>,

    /// The first rate to try [default: half of what a closed-loop probe reaches].
    #[arg(long = "start", value_name = "RATE", value_parser = values::rate)]
    pub start: Option<engine::Rate>,

    /// Never try more than this rate.
    #[arg(long = "max-rate", value_name = "RATE", value_parser = values::rate)]
    pub max_rate: Option<engine::Rate>,

    /// Stop bisecting when the rate that held and the one that failed are this close.
    #[arg(long = "precision", value_name = "SHARE", default_value = "5%", value_parser = precision)]
    pub precision: f64,

    /// Run at most this many steps (the probe not counted).
    #[arg(long = "max-steps", value_name = "N", default_value_t = 20, value_parser = max_steps)]
    pub max_steps: usize,

    /// Every load flag of a plain run (-c, -t, -H, --max-connections, ...) applies to each
    /// step; -d is each step's length.
    #[command(flatten)]
    pub load: LoadArgs,
}

fn precision(s: &str) -> Result<f64, String> {
    let v = values::share(s)?;
    if v < 0.001 {
        return Err("must be at least 0.1%".into());
    }
    Ok(v)
}

fn max_steps(s: &str) -> Result<usize, String> {
    values::count_at_most(s, 100)
}

/// `pelt compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A target, NAME=URL (or just URL, named by its host:port); repeatable.
    #[arg(long = "target", value_name = "NAME=URL")]
    pub targets: Vec<String>,

    /// A setting to compare, KEY=V1,V2,...: every combination runs against every target.
    /// Repeatable.
    #[arg(long = "vary", value_name = "KEY=VALUES")]
    pub vary: Vec<String>,

    /// Run every combination this many times, interleaved; the table shows medians.
    #[arg(long = "repeat", value_name = "N", default_value_t = 1, value_parser = repeat)]
    pub repeat: usize,

    /// Read targets, settings and load flags from a TOML file (flags given here override it).
    #[arg(long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Every load flag of a plain run (-d, -c, -t, --rate, -H, ...) applies to each run.
    #[command(flatten)]
    pub load: LoadArgs,
}

fn repeat(s: &str) -> Result<usize, String> {
    values::count_at_most(s, 1000)
}

#[derive(Debug, Args, Clone)]
pub struct LoadArgs {
    /// Target URL, e.g. http://127.0.0.1:8080/path.
    #[arg(value_name = "URL")]
    pub url: Option<String>,

    /// Concurrent connections (spread over the threads).
    #[arg(short = 'c', long = "connections", value_name = "N", allow_hyphen_values = true,
          default_value_t = engine::DEFAULT_CONNECTIONS, value_parser = values::connections)]
    pub connections: usize,

    /// Run for this long: 500ms, 10s, 2m. Default 10s unless -n is given.
    #[arg(short = 'd', long = "duration", value_name = "TIME", allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: Option<Duration>,

    /// Send exactly this many requests: 1000, 10k, 1m. With -d, stop at whichever comes first.
    #[arg(short = 'n', long = "requests", value_name = "N", allow_hyphen_values = true, value_parser = values::count)]
    pub requests: Option<u64>,

    /// Worker threads [default: the CPUs pelt may run on].
    #[arg(short = 't', long = "threads", value_name = "N", allow_hyphen_values = true, value_parser = values::threads)]
    pub threads: Option<usize>,

    /// Request method.
    #[arg(
        short = 'm',
        long = "method",
        value_name = "METHOD",
        default_value = "GET"
    )]
    pub method: String,

    /// Add a request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,

    /// Request body.
    #[arg(
        short = 'b',
        long = "body",
        value_name = "TEXT",
        conflicts_with = "body_file"
    )]
    pub body: Option<String>,

    /// Read the request body from a file.
    #[arg(long = "body-file", value_name = "PATH")]
    pub body_file: Option<PathBuf>,

    /// Send many requests: targets from FILE (- for standard input), in vegeta's http format
    /// (METHOD URL, header lines, @body-file; blank lines between) or JSON lines ({"method",
    /// "url", "headers", "body" or "body_base64", "name"}). All on one origin; the URL
    /// argument is then optional. -H, -m and --body apply to every target.
    #[arg(
        long = "targets",
        id = "targets_file",
        value_name = "FILE",
        conflicts_with = "bodies"
    )]
    pub targets: Option<PathBuf>,

    /// The format of --targets [default: auto: JSON lines when the first line starts with {].
    #[arg(long = "targets-format", value_name = "FORMAT", value_enum, default_value_t = TargetsFormatArg::Auto, requires = "targets_file")]
    pub targets_format: TargetsFormatArg,

    /// Send many bodies: one per line of FILE (- for standard input), each a request to the
    /// URL with -m and -H, in turn.
    #[arg(long = "bodies", value_name = "FILE", conflicts_with_all = ["body", "body_file"])]
    pub bodies: Option<PathBuf>,

    /// With --targets or --bodies: sequential (request i of the run sends entry i mod N, so
    /// -n k*N sends each exactly k times) or random (a reproducible draw with --seed).
    #[arg(long = "order", value_name = "ORDER", value_enum, default_value_t = OrderArg::Sequential)]
    pub order: OrderArg,

    /// Seed for random choices (--order random); without it one is chosen and reported.
    #[arg(long = "seed", value_name = "N")]
    pub seed: Option<u64>,

    /// Connect to this Unix socket instead of the URL's host and port (curl's flag); the URL
    /// still gives the Host header and the path. HTTP/1.1 and h2c.
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,

    /// Open a new connection for every request (sends Connection: close).
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,

    /// Whole-request timeout, from the first byte written to the last byte read.
    #[arg(long = "timeout", value_name = "TIME", allow_hyphen_values = true, value_parser = values::duration,
          default_value = "10s")]
    pub timeout: Duration,

    /// Connect timeout.
    #[arg(long = "connect-timeout", value_name = "TIME", allow_hyphen_values = true, value_parser = values::duration,
          default_value = "5s")]
    pub connect_timeout: Duration,

    /// Open loop: send requests on a fixed schedule at this rate (per second: 500, 20k, 0.5),
    /// whatever the server does; latency counts from each request's due time. With --stages,
    /// the rate they start from (0 allowed).
    #[arg(short = 'R', long = "rate", value_name = "RATE", allow_hyphen_values = true, value_parser = values::rate_or_zero)]
    pub rate: Option<f64>,

    /// Ramp the load in stages, as k6 does: each DURATION:TARGET moves linearly from the
    /// previous target to its own (30s:1k,1m:10k,30s:0; 0s:N jumps). With --rate, the arrival
    /// rate (starting at --rate); without, the active connections (starting at 0; -c does not
    /// apply). -d defaults to the stages' total.
    #[arg(long = "stages", value_name = "STAGES", value_parser = stage_list)]
    pub stages: Option<StageList>,

    /// Open loop: how requests are spaced.
    #[arg(long = "arrival", value_name = "KIND", value_enum, default_value_t = ArrivalArg::Constant, requires = "rate")]
    pub arrival: ArrivalArg,

    /// Open loop: open up to N connections when a request is due and none is free [default: -c].
    #[arg(long = "max-connections", value_name = "N", allow_hyphen_values = true, value_parser = values::connections, requires = "rate")]
    pub max_connections: Option<usize>,

    /// Open loop: requests due within one window of this length start together at its end,
    /// and responses are read then, at the times the kernel stamped on them: one wake-up for
    /// many, so less CPU; the lag shows each request's wait. 0: each at its own due time.
    #[arg(long = "batch-window", value_name = "TIME", allow_hyphen_values = true, value_parser = values::batch_window,
          default_value = "100us", requires = "rate")]
    pub batch_window: Duration,

    /// HTTP/1.1 pipelining: each connection writes D requests together, and the next D once
    /// all are answered (as wrk's pipeline script).
    #[arg(long = "pipeline", value_name = "D", allow_hyphen_values = true, default_value_t = 1,
          value_parser = values::pipeline, conflicts_with = "no_keepalive")]
    pub pipeline: usize,

    /// HTTP/2: ALPN h2 on https://, prior knowledge (h2c) on http://.
    #[arg(long = "http2", visible_alias = "h2", conflicts_with_all = ["no_keepalive", "pipeline"])]
    pub http2: bool,

    /// HTTP/2: concurrent streams per connection (the server's limit lowers it) [default: 1;
    /// with --rate, 100].
    #[arg(long = "streams", value_name = "N", allow_hyphen_values = true, value_parser = values::streams,
          requires = "http2")]
    pub streams: Option<usize>,

    /// Open at most N new connections per second at the start (1000, 5k) [default: all at
    /// once, spread over the threads].
    #[arg(long = "connect-rate", value_name = "N", allow_hyphen_values = true, value_parser = values::per_second)]
    pub connect_rate: Option<f64>,

    /// https: also trust the CA or self-signed certificates in this PEM file.
    #[arg(long = "cacert", value_name = "FILE", conflicts_with = "insecure")]
    pub cacert: Option<PathBuf>,

    /// https: do NOT verify the server's certificate (the report says so).
    #[arg(long = "insecure", short = 'k')]
    pub insecure: bool,

    /// https: no session resumption, every connection pays a full handshake.
    #[arg(long = "tls-full-handshake")]
    pub tls_full_handshake: bool,

    /// https: only this TLS version [default: 1.2 or 1.3, as negotiated].
    #[arg(long = "tls-version", value_name = "VERSION", value_enum)]
    pub tls_version: Option<TlsVersion>,

    /// https: send and verify this name (SNI) instead of the URL's host.
    #[arg(long = "sni", value_name = "NAME")]
    pub sni: Option<String>,

    /// https: present this PEM client certificate chain (needs --key).
    #[arg(long = "cert", value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,

    /// https: the PEM private key of --cert.
    #[arg(long = "key", value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,

    /// I/O backend: io_uring where the kernel allows it, else epoll.
    #[arg(long = "io", value_name = "BACKEND", value_enum, env = "PELT_IO", default_value_t = IoArg::Auto)]
    pub io: IoArg,

    /// Send for this long first without measuring (its counts are reported apart); -d and -n
    /// count after it.
    #[arg(long = "warmup", value_name = "TIME", allow_hyphen_values = true, value_parser = values::duration)]
    pub warmup: Option<Duration>,

    /// After Ctrl-C or SIGTERM, wait this long for requests in flight before reporting.
    #[arg(long = "grace", value_name = "TIME", allow_hyphen_values = true, value_parser = values::duration_or_zero,
          default_value = "1s")]
    pub grace: Duration,

    /// Fail the run (exit 3) unless this holds: p99<20ms, errors<0.1%, rps>5000, 5xx<1%
    /// (repeatable).
    #[arg(long = "expect", value_name = "EXPR", allow_hyphen_values = true, value_parser = expect::parse)]
    pub expect: Vec<expect::Expectation>,

    #[command(flatten)]
    pub out: Outputs,

    /// Stream the per-second timeline as JSON lines to PATH ('-' for stdout; the summary then
    /// goes to stderr), one line per second, flushed as it goes.
    #[arg(long = "jsonl", value_name = "PATH")]
    pub jsonl: Option<PathBuf>,

    /// No live view and no progress notes on stderr (the final summary is still printed).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// The files a result can be written as: by a run, `pelt report` and `pelt merge`.
#[derive(Debug, Args, Default, Clone)]
pub struct Outputs {
    /// Write the result as JSON to PATH ('-' for stdout, instead of the summary). It embeds
    /// the HDR histograms, so results can be merged and re-rendered later.
    #[arg(long = "json", value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Write the per-second timeline as CSV to PATH (one row per second: counts,
    /// requests/s, latency p50/p90/p99/max in microseconds, status classes).
    #[arg(long = "csv", value_name = "PATH")]
    pub csv: Option<PathBuf>,

    /// Write a self-contained HTML report to PATH: configuration, summary tables, and charts
    /// of requests/s, latency over time, the percentile spectrum and status codes.
    #[arg(long = "html", value_name = "PATH")]
    pub html: Option<PathBuf>,

    /// Write the per-second latency histograms as an HdrHistogram interval log to PATH
    /// (microseconds; readable by HistogramLogProcessor and the HdrHistogram libraries).
    #[arg(long = "hdr-log", value_name = "PATH")]
    pub hdr_log: Option<PathBuf>,
}

/// `pelt report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A result written by --json (or by pelt merge).
    #[arg(value_name = "RESULT.json")]
    pub result: PathBuf,

    #[command(flatten)]
    pub out: Outputs,
}

/// `pelt merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results written by --json, from generators that ran side by side or one after another.
    #[arg(value_name = "RESULT.json", required = true, num_args = 1..)]
    pub results: Vec<PathBuf>,

    #[command(flatten)]
    pub out: Outputs,

    /// Exit 3 unless this holds for the merged result: p99<20ms, errors<0.1% (repeatable).
    #[arg(long = "expect", value_name = "EXPR", allow_hyphen_values = true, value_parser = expect::parse)]
    pub expect: Vec<expect::Expectation>,
}

/// `--tls-version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TlsVersion {
    #[value(name = "1.2")]
    V1_2,
    #[value(name = "1.3")]
    V1_3,
}

impl From<TlsVersion> for pelt_load::TlsVersion {
    fn from(v: TlsVersion) -> Self {
        match v {
            TlsVersion::V1_2 => pelt_load::TlsVersion::V1_2,
            TlsVersion::V1_3 => pelt_load::TlsVersion::V1_3,
        }
    }
}

/// `--io`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IoArg {
    /// io_uring if this kernel and sandbox allow it, else epoll.
    Auto,
    /// io_uring; an error if it is unavailable.
    Uring,
    /// epoll.
    Epoll,
}

/// `--targets-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TargetsFormatArg {
    /// JSON lines when the first line that is not blank or a comment starts with {, else http.
    Auto,
    /// vegeta's http format.
    Http,
    /// One JSON object per line.
    Json,
}

/// `--order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// Request i sends entry i mod N.
    Sequential,
    /// A seeded random draw per request.
    Random,
}

/// `--arrival`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced.
    Constant,
    /// Exponential gaps (a Poisson process) with the same mean rate.
    Poisson,
}

impl From<ArrivalArg> for engine::Arrival {
    fn from(a: ArrivalArg) -> Self {
        match a {
            ArrivalArg::Constant => engine::Arrival::Constant,
            ArrivalArg::Poisson => engine::Arrival::Poisson,
        }
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Listen on this Unix socket instead of a port (created, and removed at exit).
    #[arg(long = "unix-socket", value_name = "PATH", conflicts_with = "tls")]
    pub unix_socket: Option<PathBuf>,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 8080, value_parser = values::port)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Server threads.
    #[arg(long, default_value_t = 1, value_parser = values::threads)]
    pub threads: usize,
    /// Wait this long before each response: 5ms, 1s.
    #[arg(long, default_value = "0", value_parser = values::duration_or_zero)]
    pub delay: Duration,
    /// Hold a server thread this long per request (it blocks, like a CPU-heavy or synchronous
    /// handler): capacity is about --threads / TIME requests/s. 1ms, 200us.
    #[arg(long, value_name = "TIME", default_value = "0", value_parser = values::duration_or_zero)]
    pub work: Duration,
    /// Response body size in bytes.
    #[arg(long = "body-size", default_value_t = pelt_server::DEFAULT_BODY_SIZE, value_parser = values::size)]
    pub body_size: usize,
    /// Status code of normal responses.
    #[arg(long, default_value_t = 200, value_parser = values::status)]
    pub status: u16,
    /// Share of responses answered with 500 instead: 1%, 0.5%, 0.01.
    #[arg(long = "error-rate", default_value = "0", value_parser = values::share)]
    pub error_rate: f64,
    /// Send Connection: close and close after every response.
    #[arg(long)]
    pub close: bool,
    /// Freeze every response for this long at --stall-at (a server stall, for open-loop tests).
    #[arg(long, value_name = "TIME", value_parser = values::duration, requires = "stall_at")]
    pub stall: Option<Duration>,
    /// When the stall starts, counted from the server's start.
    #[arg(long = "stall-at", value_name = "TIME", value_parser = values::duration_or_zero, requires = "stall")]
    pub stall_at: Option<Duration>,
    /// Send bodies with chunked transfer encoding.
    #[arg(long)]
    pub chunked: bool,
    /// Serve HTTPS. Without --cert/--key, with a fresh self-signed certificate for localhost,
    /// 127.0.0.1 and ::1, written to the file the second line names (for a client's --cacert).
    #[arg(long)]
    pub tls: bool,
    /// Serve HTTPS with this PEM certificate chain (needs --key).
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The PEM private key of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Also serve HTTP/2: h2c with prior knowledge on http, ALPN h2 with --tls.
    #[arg(long)]
    pub h2: bool,
    /// HTTP/2: allow this many concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(long = "max-streams", value_name = "N", default_value_t = 200, value_parser = max_streams,
          requires = "h2")]
    pub max_streams: u32,
    /// End each connection after N requests (HTTP/1.1: Connection: close; HTTP/2: GOAWAY), as
    /// nginx's keepalive_requests.
    #[arg(long = "max-requests", value_name = "N", value_parser = values::count)]
    pub max_requests: Option<u64>,
}

fn max_streams(s: &str) -> Result<u32, String> {
    values::count_at_most(s, 1_000_000).map(|n| n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn flag_table_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_come_from_the_engine() {
        let cli = Cli::try_parse_from(["pelt", "http://127.0.0.1:1/"]).unwrap();
        assert_eq!(cli.load.connections, engine::DEFAULT_CONNECTIONS);
        assert_eq!(cli.load.timeout, engine::DEFAULT_TIMEOUT);
        assert_eq!(cli.load.connect_timeout, engine::DEFAULT_CONNECT_TIMEOUT);
    }

    #[test]
    fn contract_flags_parse() {
        let cli = Cli::try_parse_from([
            "pelt",
            "http://h/",
            "-c",
            "64",
            "-d",
            "500ms",
            "-n",
            "10k",
            "-t",
            "2",
            "-m",
            "PUT",
            "-H",
            "A: 1",
            "-H",
            "B: 2",
            "--no-keepalive",
            "--timeout",
            "2s",
            "--json",
            "-",
            "-q",
        ])
        .unwrap();
        let l = cli.load;
        assert_eq!(
            (l.connections, l.requests, l.threads),
            (64, Some(10_000), Some(2))
        );
        assert_eq!(l.duration, Some(Duration::from_millis(500)));
        assert_eq!(l.headers.len(), 2);
        assert!(l.no_keepalive && l.quiet);
        assert!(Cli::try_parse_from(["pelt", "http://h/", "-b", "x", "--body-file", "f"]).is_err());
        assert!(matches!(
            Cli::try_parse_from(["pelt", "serve", "--port", "0"])
                .unwrap()
                .command,
            Some(Command::Serve(ServeArgs { port: 0, .. }))
        ));
    }
}
