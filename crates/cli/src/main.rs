//! The `pelt` binary: flags, validation, running the engine, rendering, exit codes.
//!
//! Arguments are handled in two stages: `Cli` (clap) checks what the user typed, then
//! [`prepare`] does the I/O (resolve the host, read the body file, check output paths and the
//! fd limit) to build the engine's `Config`. Any problem in either stage is one line on stderr
//! and exit code 2, before any traffic.

mod args;
mod output;
mod target;
mod values;

use anyhow::{anyhow, bail, Context, Result};
use args::{Cli, Command, LoadArgs, ServeArgs};
use clap::Parser;
use pelt_engine::{self as engine, Config};
use pelt_stats::{Report, RunInfo};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Exit code for bad input: nothing was sent.
const EXIT_USAGE: u8 = 2;
/// Exit code when a result could not be written.
const EXIT_FAILURE: u8 = 1;
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
            // One line: clap's first line, without its usage block and tips.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("error: invalid arguments");
            eprintln!("pelt: {}", first.trim_start_matches("error: "));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = match cli.command {
        Some(Command::Serve(a)) => serve(&a),
        Some(Command::Demo) => demo(),
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

/// Validated load settings: the engine config plus what the renderers need.
struct Prepared {
    config: Config,
    info: RunInfo,
    json: Option<PathBuf>,
    quiet: bool,
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
            pelt_codec::request::parse_header(h)
                .map_err(|e| bad(anyhow!("invalid header {}: {e}", values::quote(h))))
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
    if let Some(p) = a.json.as_ref().filter(|p| p.as_os_str() != "-") {
        output::check_writable(p)
            .map_err(|e| bad(anyhow!("cannot write --json {}: {e}", p.display())))?;
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
    engine::ensure_fd_limit(a.connections).map_err(bad)?;
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
    let info = RunInfo {
        target: target.display,
        method: a.method.clone(),
        connections: config.connections,
        threads: config.effective_threads(),
        keep_alive: config.keep_alive,
        io: config.io.name().to_string(),
        duration_limit_s: duration.map(|d| d.as_secs_f64()),
        requests_limit: a.requests,
        timeout_s: a.timeout.as_secs_f64(),
    };
    Ok(Prepared {
        config,
        info,
        json: a.json.clone(),
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
        let c = &p.config;
        let what = match (c.duration, c.requests) {
            (Some(d), Some(n)) => format!("for {d:?} or {n} requests, whichever comes first"),
            (Some(d), None) => format!("for {d:?}"),
            (None, Some(n)) => format!("{n} requests"),
            (None, None) => String::new(),
        };
        eprintln!(
            "pelt: {} {} {what}, {} connections, {} threads",
            p.info.method, p.info.target, c.connections, p.info.threads
        );
    }
    let result = engine::run(&p.config, stop);
    let report = Report::new(
        p.info.clone(),
        &result.stats,
        result.elapsed.as_secs_f64(),
        result.stopped_by.name(),
    );
    let json_to_stdout = p.json.as_ref().is_some_and(|j| j.as_os_str() == "-");
    if let Some(path) = &p.json {
        let mut text = serde_json::to_vec_pretty(&report)?;
        text.push(b'\n');
        if json_to_stdout {
            std::io::stdout().write_all(&text)?;
        } else {
            output::write_atomic(path, &text)?;
        }
    }
    if !json_to_stdout {
        print!("{}", output::summary(&report));
    }
    std::io::stdout().flush()?;
    let code = if stop.load(Ordering::Relaxed) {
        ExitCode::from(EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    };
    Ok((code, report))
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
        body_size: a.body_size,
        status: a.status,
        error_rate: a.error_rate,
        close: a.close,
        chunked: a.chunked,
    };
    let server = pelt_server::Server::start(config)
        .map_err(|e| bad(anyhow!("cannot listen on {}:{}: {e}", a.host, a.port)))?;
    let shown = match server.addr() {
        std::net::SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
        v4 => v4.to_string(),
    };
    println!("listening on http://{shown}");
    std::io::stdout().flush()?;
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])?;
    let _ = signals.forever().next();
    let served = server.stop();
    println!("served {served} requests");
    Ok(ExitCode::SUCCESS)
}

fn demo() -> Result<ExitCode> {
    let server = pelt_server::Server::start(pelt_server::ServerConfig::default())
        .context("cannot start the built-in server")?;
    let url = format!("http://{}/", server.addr());
    eprintln!("pelt demo: built-in server on {url}; a 3-second test with 32 connections follows");
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
        json: None,
        quiet: true,
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
    if served == 0 {
        bail!("the demo server answered no requests");
    }
    Ok(code)
}
