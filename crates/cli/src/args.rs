//! The command line: clap's definitions of the subcommands and the CLI's own flags; a run's
//! flags and `pelt serve`'s come from the library's option table (`pelt_load::options`).

use crate::{expect, values};
use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand};

use pelt_load::options::{self, Flag, Form};
use pelt_load::LoadSpec;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

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
    #[command(flatten)]
    pub views: ViewArgs,
}

/// How a plain run (or a coordinator's) is watched and steered while it goes.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Live views")]
pub struct ViewArgs {
    /// Serve a live page of the run at http://ADDR/ (IP:PORT, or a PORT on 127.0.0.1; port
    /// 5665 as k6's): its charts move each second, and it pauses, resumes, changes the rate
    /// (open loop) or the connections (closed loop), or stops the run; POST /api/control does
    /// the same from a script. An address other than loopback needs the fleet's token.
    #[arg(long = "dashboard", value_name = "ADDR", value_parser = metrics_addr)]
    pub dashboard: Option<std::net::SocketAddr>,

    /// Show the run in a full-screen terminal view instead of the live line: requests/s and
    /// latency per second as charts, the progress, status codes, errors and targets; q stops
    /// the run and keeps its results, v switches views. Only when stdout and stderr are
    /// terminals, and not with -q.
    #[arg(long = "tui")]
    pub tui: bool,
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
    /// itself in PELT_FLEET_TOKEN. For --agents, and for --monitor-remote.
    #[arg(
        long = "token-file",
        value_name = "PATH",
        env = "PELT_FLEET_TOKEN_FILE"
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
    Serve(Box<ServeArgs>),
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
        after_help = "Examples:\n  pelt compare --target nginx=http://127.0.0.1:8080/ --target node=http://127.0.0.1:3000/ \\\n      --vary connections=16,256 --vary keepalive=on,off -d 10s --repeat 3\n  pelt compare --config study.toml --html study.html\n\n--vary takes any load flag by its long name (connections, threads, rate, pipeline, streams, method, timeout, ...), plus keepalive=on,off, http=1.1,2,3 and tls=resume,full,0rtt (0rtt: HTTP/3 only). A --config TOML file holds the same flags by long name (targets and vary as tables; see docs/GUIDE.md); flags on the command line override it."
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
    /// Sample the server's processes and this machine each second for runs elsewhere (pelt
    /// URL --monitor-remote HOST:PORT), over the fleet's channel and token.
    #[command(
        after_help = "Examples:\n  pelt monitor nginx --listen 0.0.0.0:7071 --token-file token     (on the server's machine)\n  pelt http://10.0.0.9:8080/ -d 30s --monitor-remote 10.0.0.9:7071 --token-file token\n\nIt runs until stopped, taking one run after another (several at once). Exit 2 when what it should watch matches nothing or it cannot listen."
    )]
    Monitor(MonitorArgs),
    /// ghz's command line over pelt: ghz's common flags (--proto, --protoset, --call, -d,
    /// -D, -m, -c, -n, -z, --rps, --connections, --insecure, --cacert, -O, -o), its summary
    /// layout.
    #[command(
        after_help = "Examples:\n  pelt ghz --insecure --proto greeter.proto --call helloworld.Greeter.SayHello -d '{\"name\":\"x\"}' -c 50 -n 100000 127.0.0.1:50051\n  pelt ghz --insecure --protoset svc.protoset --call pkg.Svc/Get -c 100 --connections 10 --rps 2000 -z 30s -O json -o r.json 10.0.0.9:9000\n\nAs ghz: TLS unless --insecure, -c calls at a time shared by --connections connections (1), -n 200 unless -z. Unlike ghz, --rps measures latency from each call's due time (an open loop), so a stalled server shows; -O json is ghz's shape with pelt's whole result under \"pelt\". Every plain-run flag is pelt grpc://HOST:PORT/package.Service/Method (see pelt --help)."
    )]
    Ghz(Box<GhzArgs>),
    /// wrk's command line over pelt: wrk's flags (-c, -d, -t, -s, -H, --latency, --timeout)
    /// and wrk2's (-R, -U), its report layout, the script's arguments after the URL.
    #[command(
        after_help = "Examples:\n  pelt wrk -t2 -c100 -d30s --latency http://127.0.0.1:8080/\n  pelt wrk -t1 -c10 -d10s -s post.lua http://127.0.0.1:8080/api\n  pelt wrk -t2 -c100 -d30s -R 20000 --latency -U http://127.0.0.1:8080/\n\nAs wrk: 2 threads, 10 connections, 10s, a 2s timeout; -R is wrk2's open loop (latency from each request's due time); --latency prints the distribution (wrk2's with -R; -U adds the uncorrected one: pelt's service time). Every plain-run flag is pelt URL (see pelt --help)."
    )]
    Wrk(Box<WrkArgs>),
    /// Write the Kubernetes manifests of a fleet run: its token Secret, the coordinator's Job
    /// behind a headless Service, and the agents' Indexed Job.
    #[command(
        after_help = "Examples:\n  pelt k8s http://my-service.default.svc:8080/ -d 5m --rate 100k -c 1000 --agents 8 > fleet.yaml\n  kubectl apply -f fleet.yaml\n  kubectl logs -f -l app.kubernetes.io/instance=pelt,app.kubernetes.io/component=agent --prefix --max-log-requests 8\n  kubectl wait --for=condition=complete job/pelt-coordinator --timeout=15m\n  kubectl logs job/pelt-coordinator > result.json && pelt report result.json --html report.html\n  kubectl delete -f fleet.yaml\n\nThe run's flags are those of a plain run (checked here, the host resolved in the cluster); files they name (--body-file, --targets, --bodies, --cacert, --cert, --key) are shipped in the Secret. Build the image with deploy/Dockerfile and push it where the cluster pulls from."
    )]
    K8s(Box<K8sArgs>),
    /// Print the completion script of SHELL (bash, zsh, fish, powershell, elvish) to stdout.
    #[command(
        after_help = "Install:\n  bash:       pelt completions bash > ~/.local/share/bash-completion/completions/pelt\n  zsh:        pelt completions zsh > ~/.zfunc/_pelt   (with fpath+=(~/.zfunc) before compinit in ~/.zshrc)\n  fish:       pelt completions fish > ~/.config/fish/completions/pelt.fish\n  PowerShell: pelt completions powershell >> $PROFILE"
    )]
    Completions(CompletionsArgs),
    /// Print pelt's manual page (roff) to stdout, or write one page per command to --dir.
    #[command(
        after_help = "Examples:\n  pelt man | man -l -\n  pelt man --dir ~/.local/share/man/man1   (then man pelt, man pelt-serve, ...)"
    )]
    Man(ManArgs),
}

/// `pelt completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `pelt man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write pelt.1 and a page per command (pelt-serve.1, ...) into this folder.
    #[arg(long = "dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `pelt monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The server's processes on this machine: a process ID, or a name (every process of
    /// that name); children included [default: none, the machine alone].
    #[arg(value_name = "PID|NAME", value_parser = monitor_watch)]
    pub watch: Option<pelt_load::monitor::Watch>,

    /// Where runs reach it (pelt URL --monitor-remote HOST:PORT).
    #[arg(long = "listen", value_name = "ADDR", default_value = "0.0.0.0:7071", value_parser = listen_addr)]
    pub listen: std::net::SocketAddr,

    /// The fleet's shared token, in a file; or give the token itself in PELT_FLEET_TOKEN.
    #[arg(
        long = "token-file",
        value_name = "PATH",
        env = "PELT_FLEET_TOKEN_FILE"
    )]
    pub token_file: Option<PathBuf>,

    /// No notes on stderr of the runs that come and go.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

fn monitor_watch(s: &str) -> Result<pelt_load::monitor::Watch, String> {
    pelt_load::monitor::Watch::parse(s)
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

/// `pelt find-max`: the search's flags (the library's [`options::FIND_MAX`]) and a run's.
#[derive(Debug, Args)]
pub struct FindMaxArgs {
    #[command(flatten)]
    pub settings: Table<pelt_load::study::FindMaxSettings>,

    /// Every load flag of a plain run (-c, -t, -H, --max-connections, ...) applies to each
    /// step; -d is each step's length.
    #[command(flatten)]
    pub load: LoadArgs,
}

/// `pelt compare`: the comparison's flags (the library's [`options::COMPARE`]), a config
/// file, and the runs' flags.
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub settings: Table<pelt_load::study::CompareSettings>,

    /// Read targets, settings and load flags from a TOML file (flags given here override it).
    #[arg(long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Every load flag of a plain run (-d, -c, -t, --rate, -H, ...) applies to each run.
    #[command(flatten)]
    pub load: LoadArgs,
}

/// A run's flags: the library's option table ([`options::RUN`]) as clap arguments, read by the
/// library's one reader, plus what the CLI does with the result.
#[derive(Debug, Clone)]
pub struct LoadArgs {
    /// The run as typed (`url` empty when none was given).
    pub spec: LoadSpec,
    /// The options as typed, by name (what a study varies cells from).
    pub given: Map<String, Value>,
    pub out: Outputs,
    /// Stream the per-second timeline as JSON lines here (`-`: stdout).
    pub jsonl: Option<PathBuf>,
    pub quiet: bool,
    /// The URL as typed, when it had no scheme and was taken as http:// (said once the run
    /// is known to be good, so bad input stays one line).
    pub schemeless: Option<String>,
}

impl LoadArgs {
    /// Whether the URL argument was given.
    pub fn has_url(&self) -> bool {
        !self.spec.url.is_empty()
    }
}

/// A table row as a clap argument (`None`: a library-only option). Values reach the table's
/// reader as typed: clap checks no value and no rule, so every front end gets the same
/// checks and messages.
fn clap_arg<S>(f: &Flag<S>, default: &S) -> Option<Arg> {
    let help = options::help_text(f, default);
    let mut a = Arg::new(f.name).help(help.clone());
    a = match f.form {
        Form::Library => return None,
        Form::Positional => a.value_name(f.value),
        Form::Trailing => a
            .value_name(f.value)
            .num_args(0..)
            .last(true)
            .action(ArgAction::Append),
        Form::Switch | Form::Negated => a.long(f.long).action(ArgAction::SetTrue),
        Form::Value => a.long(f.long).value_name(f.value).action(ArgAction::Set),
        Form::Many => a.long(f.long).value_name(f.value).action(ArgAction::Append),
    };
    if let Some(c) = f.short {
        a = a.short(c);
    }
    if !f.alias.is_empty() {
        a = a.visible_alias(f.alias);
    }
    if !f.env.is_empty() {
        a = a.env(f.env);
    }
    if f.hyphen {
        a = a.allow_hyphen_values(true);
    }
    if !f.choices.is_empty() {
        let names: Vec<&str> = f.choices.iter().map(|c| c.0).collect();
        let list: Vec<String> = f
            .choices
            .iter()
            .map(|(n, h)| format!("  - {n}: {h}"))
            .collect();
        a = a
            .help(format!("{help} [possible values: {}]", names.join(", ")))
            .long_help(format!("{help}\n\nPossible values:\n{}", list.join("\n")));
    }
    Some(a)
}

fn table_args<S>(cmd: clap::Command, table: &[Flag<S>], default: &S) -> clap::Command {
    cmd.args(table.iter().filter_map(|f| clap_arg(f, default)))
}

/// What was typed for a table's options, by name, as the reader takes it.
fn typed<S>(table: &[Flag<S>], m: &ArgMatches) -> Map<String, Value> {
    let mut o = Map::new();
    for f in table {
        let v = match f.form {
            Form::Library => None,
            Form::Switch | Form::Negated => m
                .get_flag(f.name)
                .then_some(Value::Bool(f.form == Form::Switch)),
            Form::Many | Form::Trailing => m
                .get_many::<String>(f.name)
                .map(|v| Value::Array(v.map(|s| Value::String(s.clone())).collect())),
            Form::Value | Form::Positional => m
                .get_one::<String>(f.name)
                .map(|s| Value::String(s.clone())),
        };
        if let Some(v) = v {
            o.insert(f.name.to_string(), v);
        }
    }
    o
}

/// The reader's error as clap's (one line: the CLI prints its first).
fn clap_error(e: options::OptionError) -> clap::Error {
    clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{e}\n"))
}

/// The names of pelt's commands (`serve`, `find-max`, ...).
fn command_names() -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// A URL typed without its scheme, as curl takes one: `host:port/path`, `host/path` and
/// `:port` (on 127.0.0.1) are http://. `None`: it has a scheme, is empty, or is a command's
/// name. A single word close to a command's name is that command mistyped: the error says which.
pub fn schemeless(url: &str) -> Result<Option<String>, String> {
    // Only what reads as a host (a DNS name, an IPv4 address or a bracketed IPv6 one), a port
    // and a path; anything else is left to the URL's own error.
    let host = url.split(['/', '?']).next().unwrap_or_default();
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    let hostlike = host.len() <= 253
        && (host.starts_with('[')
            || host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'));
    if url.is_empty() || url.contains("://") || !hostlike {
        return Ok(None);
    }
    if !url.contains([':', '/', '.']) {
        let names = command_names();
        if names.iter().any(|name| name == url) {
            // A command, as typed (clap's word on what follows it stands).
            return Ok(None);
        }
        let near = names.into_iter().find(|name| {
            let close = strsim::levenshtein(url, name) <= 2 && url.len() >= 3;
            close || (url.len() >= 2 && name.starts_with(url))
        });
        if let Some(name) = near {
            return Err(format!(
                "'{url}' is not a command: did you mean `pelt {name}`? (for a host of that \
                 name, write http://{url}/)"
            ));
        }
    }
    Ok(Some(match url.strip_prefix(':') {
        Some(port) => format!("http://127.0.0.1:{port}"),
        None => format!("http://{url}"),
    }))
}

impl FromArgMatches for LoadArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = typed(options::RUN, m);
        let typed_url = given
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let url = schemeless(&typed_url).map_err(|e| {
            clap::Error::raw(clap::error::ErrorKind::InvalidSubcommand, format!("{e}\n"))
        })?;
        let schemeless = url.map(|url| {
            given.insert("url".into(), Value::String(url));
            typed_url
        });
        Ok(LoadArgs {
            spec: options::read(&given).map_err(clap_error)?,
            given,
            out: Outputs::from_arg_matches(m)?,
            jsonl: m.get_one::<PathBuf>("jsonl").cloned(),
            quiet: m.get_flag("quiet"),
            schemeless,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for LoadArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let cmd = table_args(cmd, options::RUN, &LoadSpec::new(""));
        Outputs::augment_args(cmd).args([
            Arg::new("jsonl")
                .long("jsonl")
                .value_name("PATH")
                .value_parser(clap::value_parser!(PathBuf))
                .help(
                    "Stream the per-second timeline as JSON lines to PATH ('-' for stdout; the \
                     summary then goes to stderr), one line per second, flushed as it goes.",
                ),
            Arg::new("quiet")
                .short('q')
                .long("quiet")
                .action(ArgAction::SetTrue)
                .help(
                    "No live view and no progress notes on stderr (the final summary is still \
                     printed).",
                ),
        ])
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
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

    /// Write the per-target table as CSV to PATH: one row per --targets name or --scenario
    /// step (counts, requests/s, latency p50/p90/p99/max and mean in microseconds, status
    /// classes, errors).
    #[arg(long = "csv-targets", value_name = "PATH")]
    pub csv_targets: Option<PathBuf>,

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

/// `pelt ghz`: ghz v0.120.0's common flags, by its names.
#[derive(Debug, Args)]
pub struct GhzArgs {
    /// The server, HOST:PORT.
    #[arg(value_name = "HOST:PORT")]
    pub host: String,
    /// The service's .proto file.
    #[arg(long, value_name = "FILE")]
    pub proto: Option<PathBuf>,
    /// The service's compiled descriptors (FileDescriptorSet).
    #[arg(long, value_name = "FILE")]
    pub protoset: Option<PathBuf>,
    /// Folders --proto's imports are found in, comma-separated.
    #[arg(
        short = 'i',
        long = "import-paths",
        value_name = "DIRS",
        value_delimiter = ','
    )]
    pub import_paths: Vec<PathBuf>,
    /// The method: package.Service.Method (or package.Service/Method).
    #[arg(long, value_name = "CALL")]
    pub call: String,
    /// The request message as JSON.
    #[arg(short = 'd', long = "data", value_name = "JSON")]
    pub data: Option<String>,
    /// The request message's JSON from a file (a .bin file: its binary form).
    #[arg(short = 'D', long = "data-file", value_name = "FILE")]
    pub data_file: Option<PathBuf>,
    /// Metadata as a JSON object: '{"authorization": "Bearer x"}'.
    #[arg(short = 'm', long = "metadata", value_name = "JSON")]
    pub metadata: Option<String>,
    /// Calls at a time.
    #[arg(
        short = 'c',
        long = "concurrency",
        value_name = "N",
        default_value_t = 50
    )]
    pub concurrency: usize,
    /// Calls in all (ignored with -z).
    #[arg(short = 'n', long = "total", value_name = "N", default_value_t = 200)]
    pub total: u64,
    /// Run for this long: 10s, 1m.
    #[arg(short = 'z', long = "duration", value_name = "TIME")]
    pub duration: Option<String>,
    /// Calls per second (an open loop: latency from each call's due time).
    #[arg(short = 'r', long = "rps", value_name = "RATE")]
    pub rps: Option<f64>,
    /// Connections the calls share.
    #[arg(long = "connections", value_name = "N", default_value_t = 1)]
    pub connections: usize,
    /// Each call's deadline (sent as grpc-timeout).
    #[arg(
        short = 't',
        long = "timeout",
        value_name = "TIME",
        default_value = "20s"
    )]
    pub timeout: String,
    /// Plaintext (h2c); without it the calls go over TLS.
    #[arg(long)]
    pub insecure: bool,
    /// TLS without verifying the server's certificate.
    #[arg(long = "skipTLS")]
    pub skip_tls: bool,
    /// The CA certificate that signed the server's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Output: summary, json, pretty or html.
    #[arg(
        short = 'O',
        long = "format",
        value_name = "FORMAT",
        default_value = "summary"
    )]
    pub format: String,
    /// Write the output here instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Threads (pelt's -t).
    #[arg(long = "cpus", value_name = "N")]
    pub cpus: Option<usize>,
}

/// `pelt wrk`: wrk's flags (and wrk2's -R and -U), by its names.
#[derive(Debug, Args)]
pub struct WrkArgs {
    /// Connections to keep open.
    #[arg(
        short = 'c',
        long = "connections",
        value_name = "N",
        default_value_t = 10
    )]
    pub connections: usize,
    /// Duration of the test: 10s, 2m.
    #[arg(
        short = 'd',
        long = "duration",
        value_name = "TIME",
        default_value = "10s"
    )]
    pub duration: String,
    /// Threads to use.
    #[arg(short = 't', long = "threads", value_name = "N", default_value_t = 2)]
    pub threads: usize,
    /// Load a Lua script file.
    #[arg(short = 's', long = "script", value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Add a header to the request (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Print the latency statistics.
    #[arg(short = 'L', long = "latency")]
    pub latency: bool,
    /// wrk2: print the uncorrected latency statistics too (pelt's service time).
    #[arg(short = 'U', long = "u_latency")]
    pub u_latency: bool,
    /// Socket/request timeout.
    #[arg(long = "timeout", value_name = "TIME", default_value = "2s")]
    pub timeout: String,
    /// wrk2: requests per second in all (an open loop).
    #[arg(short = 'R', long = "rate", value_name = "RATE")]
    pub rate: Option<String>,
    /// The URL.
    #[arg(value_name = "URL")]
    pub url: String,
    /// The script's arguments (its init(args)).
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub script_args: Vec<String>,
}

/// `pelt serve`: the library's table ([`options::SERVE`]) as clap arguments.
pub type ServeArgs = Table<options::ServeSpec>;

/// A spec the library reads from one of its option tables.
pub trait Tabled: Sized + Clone + std::fmt::Debug + 'static {
    fn table() -> &'static [Flag<Self>];
    /// The spec whose values help shows as defaults.
    fn defaults() -> Self;
    fn read(options: &Map<String, Value>) -> Result<Self, options::OptionError>;
}

impl Tabled for options::ServeSpec {
    fn table() -> &'static [Flag<Self>] {
        options::SERVE
    }
    fn defaults() -> Self {
        Self::default()
    }
    fn read(o: &Map<String, Value>) -> Result<Self, options::OptionError> {
        options::serve(o)
    }
}

impl Tabled for pelt_load::study::CompareSettings {
    fn table() -> &'static [Flag<Self>] {
        options::COMPARE
    }
    fn defaults() -> Self {
        Self::default()
    }
    fn read(o: &Map<String, Value>) -> Result<Self, options::OptionError> {
        options::compare(o)
    }
}

impl Tabled for pelt_load::study::FindMaxSettings {
    fn table() -> &'static [Flag<Self>] {
        options::FIND_MAX
    }
    fn defaults() -> Self {
        Self::default()
    }
    fn read(o: &Map<String, Value>) -> Result<Self, options::OptionError> {
        options::find_max(o)
    }
}

/// A library table's options as clap arguments, read by the table's reader.
#[derive(Debug, Clone)]
pub struct Table<S>(pub S);

impl<S: Tabled> FromArgMatches for Table<S> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        S::read(&typed(S::table(), m))
            .map(Table)
            .map_err(clap_error)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<S: Tabled> Args for Table<S> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        table_args(cmd, S::table(), &S::defaults())
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use pelt_engine as engine;

    #[test]
    fn flag_table_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_come_from_the_engine() {
        let cli = Cli::try_parse_from(["pelt", "http://127.0.0.1:1/"]).unwrap();
        let s = &cli.load.spec;
        assert_eq!(s.connections, engine::DEFAULT_CONNECTIONS);
        assert_eq!(s.timeout, engine::DEFAULT_TIMEOUT);
        assert_eq!(s.connect_timeout, engine::DEFAULT_CONNECT_TIMEOUT);
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
        let s = &l.spec;
        assert_eq!(
            (s.connections, s.requests, s.threads),
            (64, Some(10_000), Some(2))
        );
        assert_eq!(s.duration, Some(Duration::from_millis(500)));
        assert_eq!(s.headers, ["A: 1", "B: 2"]);
        assert!(!s.keep_alive && l.quiet);
        assert!(Cli::try_parse_from(["pelt", "http://h/", "-b", "x", "--body-file", "f"]).is_err());
        assert!(matches!(
            Cli::try_parse_from(["pelt", "serve", "--port", "0"])
                .unwrap()
                .command,
            Some(Command::Serve(a)) if matches!(*a, Table(options::ServeSpec { port: 0, .. }))
        ));
    }

    /// A row's example as typed on the command line.
    fn typed_example<S>(f: &Flag<S>) -> Vec<String> {
        let v: Value = serde_json::from_str(f.example).unwrap();
        let text = match v {
            Value::String(s) => s,
            Value::Array(a) => a[0].as_str().unwrap().to_string(),
            v => v.to_string(),
        };
        match f.form {
            Form::Switch | Form::Negated => vec![format!("--{}", f.long)],
            Form::Positional => vec![text],
            Form::Trailing => vec!["--".into(), text],
            _ => vec![format!("--{}", f.long), text],
        }
    }

    /// Every rule of a table, broken on the command line, is refused with the words the
    /// library's reader (Node.js, a fleet's agent) uses for the same options.
    fn rules_read_the_same<S>(
        table: &[Flag<S>],
        before: &[&str],
        read: impl Fn(&Map<String, Value>) -> Result<S, options::OptionError>,
    ) -> usize {
        let mut checked = 0;
        for f in table.iter().filter(|f| f.form != Form::Library) {
            for rule in f.rules {
                let (other, conflicts) = match rule {
                    options::Rule::Conflicts(o) => (*o, true),
                    options::Rule::Requires(o) => (*o, false),
                };
                let other = table.iter().find(|o| o.name == other).unwrap();
                if other.form == Form::Library {
                    continue;
                }
                let mut args: Vec<String> = before.iter().map(|s| s.to_string()).collect();
                let mut json = Map::new();
                for g in std::iter::once(f).chain(conflicts.then_some(other)) {
                    args.extend(typed_example(g));
                    json.insert(g.name.into(), serde_json::from_str(g.example).unwrap());
                }
                let cli = Cli::try_parse_from(&args).unwrap_err();
                let first = cli.render().to_string();
                let first = first.lines().next().unwrap().trim_start_matches("error: ");
                let lib = read(&json).err().unwrap();
                assert_eq!(first, lib.message, "{args:?}");
                checked += 1;
            }
        }
        checked
    }

    #[test]
    fn every_rule_reads_as_the_library_says_it() {
        let run = rules_read_the_same(options::RUN, &["pelt", "http://127.0.0.1:1/"], |o| {
            let mut o = o.clone();
            o.insert("url".into(), "http://127.0.0.1:1/".into());
            options::spec(&o)
        });
        assert!(run >= 14, "{run}");
        assert!(rules_read_the_same(options::SERVE, &["pelt", "serve"], options::serve) >= 6);
        // find-max's table has no rules of its own, but its required objective reads the same.
        let cli = Cli::try_parse_from(["pelt", "find-max", "http://127.0.0.1:1/"]).unwrap_err();
        let lib = options::find_max(&Map::new()).unwrap_err();
        assert_eq!(
            cli.render().to_string().lines().next().unwrap(),
            format!("error: {lib}")
        );
    }
}

#[cfg(test)]
mod doc_tests {
    use super::*;
    use clap::CommandFactory;

    /// Every long flag of `cmd` and its subcommands (and their aliases).
    fn longs(cmd: &clap::Command, out: &mut std::collections::HashSet<String>) {
        for a in cmd.get_arguments() {
            out.extend(a.get_long().map(String::from));
            out.extend(a.get_all_aliases().into_iter().flatten().map(String::from));
        }
        for sub in cmd.get_subcommands() {
            longs(sub, out);
        }
    }

    /// The docs name only flags pelt has: a renamed or removed flag cannot linger in them.
    #[test]
    fn the_docs_name_only_real_flags() {
        let mut known = std::collections::HashSet::new();
        longs(&Cli::command(), &mut known);
        known.extend(["help", "version"].map(String::from));
        let mut checked = 0;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let docs = [
            "README.md",
            "docs/GUIDE.md",
            "docs/OPTIONS.md",
            "docs/REFERENCE.md",
            "docs/NODE.md",
        ];
        for doc in docs {
            let text = std::fs::read_to_string(root.join(doc)).unwrap();
            // Command lines that start with `pelt`, and the cells of flag tables.
            let lines = text
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("pelt ") || l.starts_with("| `-"));
            for line in lines {
                let line = line.split(" | ").next().unwrap_or(line);
                for (i, _) in line.match_indices("--") {
                    let before = line[..i].chars().next_back().unwrap_or(' ');
                    if !matches!(before, ' ' | '`' | '(' | '[') {
                        continue;
                    }
                    let flag: String = line[i + 2..]
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                        .collect();
                    if flag.len() >= 2 {
                        checked += 1;
                        assert!(
                            known.contains(&flag),
                            "{doc} names --{flag}: pelt has no such flag"
                        );
                    }
                }
            }
        }
        assert!(checked > 150, "{checked} flags checked");
    }
}
