//! The `pelt` binary: flags, validation, running the engine, rendering, exit codes.
//!
//! Arguments are handled in two stages: `Cli` (clap) checks what the user typed, then
//! [`prepare`] does the I/O (resolve the host, read the body file, check output paths and the
//! fd limit) to build the engine's `Config`. Any problem in either stage is one line on stderr
//! and exit code 2, before any traffic.

mod args;
mod compare;
mod expect;
mod find_max;
mod html;
mod live;
mod output;
#[cfg(test)]
mod props;
mod target;
mod tls;
mod values;

use anyhow::{anyhow, bail, Context, Result};
use args::{Cli, Command, LoadArgs, MergeArgs, Outputs, ReportArgs, ServeArgs};
use clap::Parser;
use pelt_engine::{self as engine, Config};
use pelt_stats::{OpenLoopReport, Report, RunInfo, WarmupReport, LATE_THRESHOLD_US};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Exit code for bad input: nothing was sent.
const EXIT_USAGE: u8 = 2;
/// Exit code for an internal failure (a result could not be written).
const EXIT_FAILURE: u8 = 1;
/// Exit code when an `--expect` threshold did not hold.
const EXIT_THRESHOLD: u8 = 3;
/// Exit code after Ctrl-C / SIGTERM.
const EXIT_INTERRUPTED: u8 = 130;

/// A problem with what the user asked for (exit 2), as opposed to a failure while running.
#[derive(Debug)]
struct BadInput(anyhow::Error);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}
impl std::error::Error for BadInput {}

fn bad(e: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(BadInput(e.into()))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind as K;
            if matches!(
                e.kind(),
                K::DisplayHelp | K::DisplayVersion | K::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let line = clap_line(&e);
            eprintln!("pelt: {line}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = match cli.command {
        Some(Command::Serve(a)) => serve(&a),
        Some(Command::Demo) => demo(),
        Some(Command::Report(a)) => report(&a),
        Some(Command::Merge(a)) => merge(&a),
        Some(Command::Compare(a)) => {
            // The arguments after `compare`, as typed: each run re-parses them with its settings.
            let raw: Vec<std::ffi::OsString> = std::env::args_os()
                .skip_while(|x| x != "compare")
                .skip(1)
                .collect();
            stop_flag().and_then(|stop| compare::compare(&a, &raw, &stop))
        }
        Some(Command::FindMax(a)) => stop_flag().and_then(|stop| find_max::find_max(&a, &stop)),
        None => load(&cli.load),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let usage = e.downcast_ref::<BadInput>().is_some();
            let line = format!("{e:#}").replace('\n', " ");
            eprintln!("pelt: {line}");
            ExitCode::from(if usage { EXIT_USAGE } else { EXIT_FAILURE })
        }
    }
}

/// clap's error as one line: its first line, without its usage block and tips; a first line
/// that ends in ':' gets the indented list after it ("... not provided: --rate"), and an
/// invalid choice names the valid ones.
fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let mut line = lines
        .next()
        .unwrap_or("error: invalid arguments")
        .trim_start_matches("error: ")
        .to_string();
    if line.ends_with(':') {
        let items: Vec<&str> = lines
            .take_while(|l| l.starts_with(' '))
            .map(str::trim)
            .collect();
        line = format!("{} {}", line, items.join(", "));
    }
    if let Some(values) = text.lines().find(|l| l.contains("[possible values:")) {
        line = format!("{line} {}", values.trim());
    }
    line
}

/// Validated load settings: the engine config plus what the renderers need.
struct Prepared {
    config: Config,
    info: RunInfo,
    out: Outputs,
    jsonl: Option<PathBuf>,
    expect: Vec<expect::Expectation>,
    quiet: bool,
}

fn is_stdout(p: &Option<PathBuf>) -> bool {
    p.as_ref().is_some_and(|p| p.as_os_str() == "-")
}

fn prepare(a: &LoadArgs) -> Result<Prepared> {
    let raw_url = a.url.as_deref().ok_or_else(|| {
        bad(anyhow!(
            "no target URL given (try: pelt http://127.0.0.1:8080/, or pelt demo)"
        ))
    })?;
    let headers = a
        .headers
        .iter()
        .map(|h| {
            pelt_codec::request::parse_header(h).map_err(|e| {
                let shown = values::quote(&values::masked_header(h));
                bad(anyhow!("invalid header {shown}: {e}"))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    pelt_codec::request::validate_method(&a.method)
        .map_err(|e| bad(anyhow!("invalid method {}: {e}", values::quote(&a.method))))?;
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(p)) => {
            if p.is_dir() {
                return Err(bad(anyhow!(
                    "cannot read --body-file {}: it is a directory",
                    p.display()
                )));
            }
            std::fs::read(p)
                .map_err(|e| bad(anyhow!("cannot read --body-file {}: {e}", p.display())))?
        }
        (None, None) => Vec::new(),
    };
    check_outputs(&a.out)?;
    if let Some(p) = a.jsonl.as_ref().filter(|p| p.as_os_str() != "-") {
        output::check_writable(p)
            .map_err(|e| bad(anyhow!("cannot write --jsonl {}: {e}", p.display())))?;
    }
    if is_stdout(&a.out.json) && is_stdout(&a.jsonl) {
        return Err(bad(anyhow!(
            "--json - and --jsonl - both want stdout; send one of them to a file"
        )));
    }
    let max_connections = a.max_connections.unwrap_or(a.connections);
    if max_connections < a.connections {
        return Err(bad(anyhow!(
            "--max-connections {max_connections} is below -c {}; it is the most connections \
             pelt may open, at least -c",
            a.connections
        )));
    }
    let target = target::resolve(raw_url).map_err(bad)?;
    let request = pelt_codec::RequestSpec {
        method: &a.method,
        path: &target.path,
        host: &target.host_header,
        headers: &headers,
        body: &body,
        keep_alive: !a.no_keepalive,
    }
    .encode()
    .map_err(|e| bad(anyhow!("invalid request: {e}")))?;
    engine::ensure_fd_limit(max_connections).map_err(bad)?;
    let https = target.tls_host.is_some();
    let tls_flags = a.cacert.is_some()
        || a.insecure
        || a.tls_full_handshake
        || a.tls_version.is_some()
        || a.sni.is_some()
        || a.cert.is_some();
    if !https && tls_flags {
        return Err(bad(anyhow!(
            "--cacert, --insecure, --tls-full-handshake, --tls-version, --sni and --cert/--key \
             are for https:// URLs"
        )));
    }
    let open = a.rate.is_some();
    let http2 = a.http2.then(|| engine::Http2 {
        header_block: pelt_codec::h2::encode_headers(
            &a.method,
            if https { "https" } else { "http" },
            &target.host_header,
            &target.path,
            &headers,
            body.len(),
        ),
        body: body.clone(),
        streams: a.streams.unwrap_or(if open { 100 } else { 1 }),
    });
    let tls = match &target.tls_host {
        Some(host) => Some(
            tls::client(
                host,
                &tls::TlsOptions {
                    cacert: a.cacert.as_deref(),
                    insecure: a.insecure,
                    full_handshake: a.tls_full_handshake,
                    version: a.tls_version,
                    sni: a.sni.as_deref(),
                    client_cert: a.cert.as_deref().zip(a.key.as_deref()),
                    http2: a.http2,
                },
            )
            .map_err(bad)?,
        ),
        None => None,
    };
    let io = match a.io {
        args::IoArg::Auto => engine::IoBackend::detect(),
        args::IoArg::Epoll => engine::IoBackend::Epoll,
        args::IoArg::Uring => {
            engine::IoBackend::Uring
                .check()
                .map_err(|e| bad(anyhow!("--io uring: {e}; use --io epoll")))?;
            engine::IoBackend::Uring
        }
    };
    let duration = match (a.duration, a.requests) {
        (None, None) => Some(engine::DEFAULT_DURATION),
        (d, _) => d,
    };
    let mut config = Config::new(target.addr, request);
    config.head_request = a.method.eq_ignore_ascii_case("HEAD");
    config.keep_alive = !a.no_keepalive;
    config.connections = a.connections;
    config.threads = a.threads.unwrap_or_else(engine::default_threads);
    config.duration = duration;
    config.requests = a.requests;
    config.timeout = a.timeout;
    config.connect_timeout = a.connect_timeout;
    config.rate = a.rate;
    config.arrival = a.arrival.into();
    config.max_connections = max_connections;
    config.warmup = a.warmup.unwrap_or_default();
    config.grace = a.grace;
    config.io = io;
    config.pipeline = a.pipeline;
    config.connect_rate = a.connect_rate;
    config.tls = tls;
    let info = RunInfo {
        target: target.display,
        method: a.method.clone(),
        connections: config.connections,
        threads: config.effective_threads(),
        keep_alive: config.keep_alive,
        io: config.io.name().to_string(),
        pipeline: config.pipeline,
        http: if http2.is_some() { "2" } else { "1.1" }.to_string(),
        streams: http2.as_ref().map(|h| h.streams),
        connect_rate: config.connect_rate,
        tls: https.then(|| pelt_stats::TlsInfo {
            insecure: a.insecure,
            resumption: !a.tls_full_handshake,
            cacert: a.cacert.as_ref().map(|p| p.display().to_string()),
            version: a.tls_version.map(|v| v.name().to_string()),
            sni: a.sni.clone(),
        }),
        load_model: if open { "open" } else { "closed" }.to_string(),
        rate: config.rate.map(|r| r.as_f64()),
        arrival: open.then(|| config.arrival.name().to_string()),
        max_connections: open.then_some(max_connections),
        warmup_s: config.warmup.as_secs_f64(),
        grace_s: config.grace.as_secs_f64(),
        duration_limit_s: duration.map(|d| d.as_secs_f64()),
        requests_limit: a.requests,
        timeout_s: a.timeout.as_secs_f64(),
    };
    config.http2 = http2;
    Ok(Prepared {
        config,
        info,
        out: a.out.clone(),
        jsonl: a.jsonl.clone(),
        expect: a.expect.clone(),
        quiet: a.quiet,
    })
}

/// Installs Ctrl-C / SIGTERM handling: the first sets the flag (stop and report), the second
/// exits at once.
fn stop_flag() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(
            sig,
            EXIT_INTERRUPTED as i32,
            stop.clone(),
        )?;
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}

fn load(a: &LoadArgs) -> Result<ExitCode> {
    let p = prepare(a)?;
    let stop = stop_flag()?;
    Ok(run_and_report(&p, &stop)?.0)
}

fn run_and_report(p: &Prepared, stop: &AtomicBool) -> Result<(ExitCode, Report)> {
    if !p.quiet {
        eprintln!("pelt: {}", output::start_line(&p.info, &p.config));
    }
    let mut stream = match &p.jsonl {
        None => None,
        Some(path) if path.as_os_str() == "-" => Some(live::JsonLines::stdout()),
        Some(path) => Some(live::JsonLines::create(path)?),
    };
    let mut view = (!p.quiet && !is_stdout(&p.jsonl))
        .then(|| live::LiveView::new(&p.config))
        .flatten();
    let result = engine::run(&p.config, stop, &mut |point| {
        if let Some(v) = view.as_mut() {
            v.show(point);
        }
        if let Some(s) = stream.as_mut() {
            s.write(point);
        }
    });
    if let Some(v) = view.as_mut() {
        v.clear();
    }
    let report = build_report(p, &result);
    let json_to_stdout = write_outputs(&report, &p.out)?;
    if let Some(s) = stream.as_mut() {
        s.finish()?;
    }
    // stdout carries one thing: the summary, or the JSON, or the JSON lines.
    if is_stdout(&p.jsonl) {
        eprint!("{}", output::summary(&report));
    } else if !json_to_stdout {
        print!("{}", output::summary(&report));
    }
    std::io::stdout().flush()?;
    let code = if stop.load(Ordering::Relaxed) {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if report.thresholds.iter().any(|t| !t.passed) {
        ExitCode::from(EXIT_THRESHOLD)
    } else {
        ExitCode::SUCCESS
    };
    Ok((code, report))
}

/// Checks, before anything runs, that every output path can be written.
fn check_outputs(o: &Outputs) -> Result<()> {
    for (flag, path) in [
        ("--csv", &o.csv),
        ("--html", &o.html),
        ("--hdr-log", &o.hdr_log),
    ] {
        if is_stdout(path) {
            return Err(bad(anyhow!(
                "{flag} takes a file path ('-' is for --json and --jsonl)"
            )));
        }
    }
    for (flag, path) in [
        ("--json", &o.json),
        ("--csv", &o.csv),
        ("--html", &o.html),
        ("--hdr-log", &o.hdr_log),
    ] {
        if let Some(p) = path.as_ref().filter(|p| p.as_os_str() != "-") {
            output::check_writable(p)
                .map_err(|e| bad(anyhow!("cannot write {flag} {}: {e}", p.display())))?;
        }
    }
    Ok(())
}

/// For the commands that run many times (compare, find-max): the single-run outputs are
/// refused with `instead`, the others checked.
fn check_study_outputs(load: &LoadArgs, instead: &str) -> Result<()> {
    if !load.expect.is_empty() || load.jsonl.is_some() || load.out.hdr_log.is_some() {
        return Err(bad(anyhow!(
            "--expect, --jsonl and --hdr-log are for single runs; {instead}"
        )));
    }
    check_outputs(&load.out)
}

/// Writes a study's document (compare, find-max) as --json, --csv and --html, and prints its
/// table unless the JSON goes to stdout.
fn write_study(
    o: &Outputs,
    doc: &serde_json::Value,
    table: &str,
    csv: impl FnOnce() -> String,
    html: impl FnOnce() -> String,
) -> Result<()> {
    write_json(&o.json, doc)?;
    if let Some(path) = &o.csv {
        output::write_atomic(path, csv().as_bytes())?;
    }
    if let Some(path) = &o.html {
        output::write_atomic(path, html().as_bytes())?;
    }
    if !is_stdout(&o.json) {
        print!("{table}");
    }
    Ok(())
}

/// Writes `report` to every file asked for; true when the JSON went to stdout.
fn write_outputs(report: &Report, o: &Outputs) -> Result<bool> {
    write_json(&o.json, report)?;
    if let Some(path) = &o.csv {
        output::write_atomic(path, output::timeline_csv(&report.timeline).as_bytes())?;
    }
    if let Some(path) = &o.hdr_log {
        output::write_atomic(path, &output::hdr_log(report)?)?;
    }
    if let Some(path) = &o.html {
        output::write_atomic(path, html::report(report).as_bytes())?;
    }
    Ok(is_stdout(&o.json))
}

/// `--json PATH`: pretty JSON to the file (atomically), or to stdout for `-`.
fn write_json(path: &Option<PathBuf>, value: &impl serde::Serialize) -> Result<()> {
    if let Some(p) = path {
        let mut text = serde_json::to_vec_pretty(value)?;
        text.push(b'\n');
        if is_stdout(path) {
            std::io::stdout().write_all(&text)?;
        } else {
            output::write_atomic(p, &text)?;
        }
    }
    Ok(())
}

/// Reads a result written by `--json`; any problem is bad input naming the file.
fn read_result(path: &std::path::Path) -> Result<Report> {
    let text =
        std::fs::read(path).map_err(|e| bad(anyhow!("cannot read {}: {e}", path.display())))?;
    serde_json::from_slice(&text).map_err(|e| {
        bad(anyhow!(
            "{} is not a pelt result (--json): {e}",
            path.display()
        ))
    })
}

/// `pelt report RESULT.json`: the summary again, and the files asked for.
fn report(a: &ReportArgs) -> Result<ExitCode> {
    check_outputs(&a.out)?;
    let report = read_result(&a.result)?;
    if !write_outputs(&report, &a.out)? {
        print!("{}", output::summary(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// `pelt merge A.json B.json ...`: one result from several, exactly.
fn merge(a: &MergeArgs) -> Result<ExitCode> {
    check_outputs(&a.out)?;
    let mut reports = Vec::with_capacity(a.results.len());
    for path in &a.results {
        let r = read_result(path)?;
        pelt_stats::check_mergeable(&r)
            .map_err(|e| bad(anyhow!("cannot merge {}: {e}", path.display())))?;
        reports.push(r);
    }
    let mut merged = pelt_stats::merge(&reports).map_err(|e| bad(anyhow!("cannot merge: {e}")))?;
    merged.merged_from = a.results.iter().map(|p| p.display().to_string()).collect();
    merged.thresholds = a.expect.iter().map(|e| e.check(&merged)).collect();
    if !write_outputs(&merged, &a.out)? {
        print!("{}", output::summary(&merged));
    }
    Ok(if merged.thresholds.iter().any(|t| !t.passed) {
        ExitCode::from(EXIT_THRESHOLD)
    } else {
        ExitCode::SUCCESS
    })
}

/// The result document of a finished run.
fn build_report(p: &Prepared, result: &engine::RunResult) -> Report {
    let mut report = Report::new(
        p.info.clone(),
        &result.stats,
        result.measured.as_secs_f64(),
        result.stopped_by.name(),
    );
    report.timeline = result.timeline.clone();
    report.started_unix_ms = result
        .started_at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    if let Some(h) = report.histograms.as_mut() {
        if p.config.rate.is_some() {
            h.service_time_us = Some(result.stats.service.clone());
            h.lag_us = Some(result.stats.lag.clone());
        }
        if p.info.tls.is_some() {
            h.handshake_us = Some(result.stats.handshake.clone());
        }
        h.warmup_latency_us = result.warmup.as_ref().map(|w| w.latency.clone());
    }
    report.warmup = result
        .warmup
        .as_ref()
        .map(|w| WarmupReport::new(w, p.config.warmup.as_secs_f64()));
    if p.config.rate.is_some() {
        report.latency_from = "due".into();
        let open = OpenLoopReport::new(&result.stats, result.backlog_at_end);
        if open.lag_us.p99_us > LATE_THRESHOLD_US {
            report.notes.push(format!(
                "pelt's own lag p99 was {} (over {}): requests started late because no \
                 connection was free or pelt was short of CPU, so pelt, not the server, limited \
                 this test; raise -c or --max-connections, or lower --rate",
                output::latency(open.lag_us.p99_us as f64),
                output::latency(LATE_THRESHOLD_US as f64),
            ));
        }
        if open.backlog_at_end > 0 {
            report.notes.push(format!(
                "{} requests were due but had not started when the run ended (every \
                 connection was busy); they are in no count above",
                output::thousands(open.backlog_at_end)
            ));
        }
        report.open_loop = Some(open);
    } else {
        report.notes.push(
            "closed loop: latency is measured from each request's actual send, so a server \
             stall delays the requests queued behind it without showing in their latency \
             (coordinated omission); use --rate to measure from when each request was due"
                .into(),
        );
    }
    if let Some(tls) = &p.info.tls {
        report.tls_handshakes = Some(pelt_stats::HandshakesReport {
            full: result.stats.handshakes_full,
            resumed: result.stats.handshakes_resumed,
            time_us: result.stats.handshake.summary(),
        });
        if tls.insecure {
            report.notes.push(
                "--insecure: the server's certificate was NOT verified; anyone in the path \
                 could have answered"
                    .into(),
            );
        }
    }
    report.thresholds = p.expect.iter().map(|e| e.check(&report)).collect();
    report
}

fn serve(a: &ServeArgs) -> Result<ExitCode> {
    let ip: std::net::IpAddr = a.host.parse().map_err(|_| {
        bad(anyhow!(
            "invalid --host {}: expected an IP address",
            values::quote(&a.host)
        ))
    })?;
    let config = pelt_server::ServerConfig {
        addr: std::net::SocketAddr::new(ip, a.port),
        threads: a.threads,
        delay: a.delay,
        work: a.work,
        body_size: a.body_size,
        status: a.status,
        error_rate: a.error_rate,
        close: a.close,
        chunked: a.chunked,
        stall: a.stall.zip(a.stall_at).map(|(len, at)| (at, len)),
        tls: None,
        h2: a.h2,
        max_streams: a.h2.then_some(a.max_streams),
        max_requests: a.max_requests,
    };
    let (tls, cert_file) = serve_identity(a)?;
    let config = pelt_server::ServerConfig { tls, ..config };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let server = pelt_server::Server::start(config)
        .map_err(|e| bad(anyhow!("cannot serve on {}:{}: {e}", a.host, a.port)))?;
    let shown = match server.addr() {
        std::net::SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
        v4 => v4.to_string(),
    };
    println!("listening on {scheme}://{shown}");
    if let Some(path) = &cert_file {
        println!(
            "certificate {} (pass it to a client's --cacert)",
            path.display()
        );
    }
    std::io::stdout().flush()?;
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])?;
    let _ = signals.forever().next();
    let served = server.stop();
    if let Some(path) = &cert_file {
        let _ = std::fs::remove_file(path);
    }
    println!("served {served} requests");
    Ok(ExitCode::SUCCESS)
}

/// The TLS identity `pelt serve` uses: --cert/--key as given, or with --tls a self-signed one
/// whose certificate is written to a file (returned) for clients to trust.
fn serve_identity(
    a: &ServeArgs,
) -> Result<(Option<pelt_server::TlsIdentity>, Option<std::path::PathBuf>)> {
    if let (Some(cert), Some(key)) = (&a.cert, &a.key) {
        let read = |p: &std::path::PathBuf, what: &str| {
            std::fs::read_to_string(p)
                .map_err(|e| bad(anyhow!("cannot read {what} {}: {e}", p.display())))
        };
        let identity = pelt_server::TlsIdentity {
            cert_pem: read(cert, "--cert")?,
            key_pem: read(key, "--key")?,
        };
        return Ok((Some(identity), None));
    }
    if !a.tls {
        return Ok((None, None));
    }
    let identity =
        pelt_server::TlsIdentity::self_signed().context("cannot make a self-signed certificate")?;
    let path = std::env::temp_dir().join(format!("pelt-serve-{}.pem", std::process::id()));
    std::fs::write(&path, &identity.cert_pem)
        .with_context(|| format!("cannot write the certificate to {}", path.display()))?;
    Ok((Some(identity), Some(path)))
}

fn demo() -> Result<ExitCode> {
    let server = pelt_server::Server::start(pelt_server::ServerConfig::default())
        .context("cannot start the built-in server")?;
    let url = format!("http://{}/", server.addr());
    eprintln!("pelt demo: the built-in server is on {url}; pelt loads it:");
    let args = LoadArgs {
        url: Some(url),
        connections: 32,
        duration: Some(Duration::from_secs(3)),
        requests: None,
        threads: Some(1),
        method: "GET".into(),
        headers: vec![],
        body: None,
        body_file: None,
        no_keepalive: false,
        timeout: engine::DEFAULT_TIMEOUT,
        connect_timeout: engine::DEFAULT_CONNECT_TIMEOUT,
        rate: None,
        arrival: args::ArrivalArg::Constant,
        max_connections: None,
        pipeline: 1,
        http2: false,
        streams: None,
        connect_rate: None,
        cacert: None,
        insecure: false,
        tls_full_handshake: false,
        tls_version: None,
        sni: None,
        cert: None,
        key: None,
        io: args::IoArg::Auto,
        warmup: None,
        grace: engine::DEFAULT_GRACE,
        expect: vec![],
        out: Outputs::default(),
        jsonl: None,
        quiet: false,
    };
    let p = prepare(&args)?;
    let stop = stop_flag()?;
    let (code, report) = run_and_report(&p, &stop)?;
    let served = server.stop();
    println!(
        "\nThe built-in server answered {} requests; pelt counted {} complete responses \
         and {} in flight at the stop.",
        output::thousands(served),
        output::thousands(report.requests.completed),
        output::thousands(report.requests.in_flight),
    );
    println!("Point pelt at your own server:  pelt http://HOST:PORT/PATH -c 64 -d 10s");
    println!("Or serve a target yourself:     pelt serve --port 8080 --delay 5ms");
    println!("A report with charts:           pelt http://HOST:PORT/ -d 10s --html report.html");
    if served == 0 {
        bail!("the demo server answered no requests");
    }
    Ok(code)
}
