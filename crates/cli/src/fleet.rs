//! A fleet run: `pelt URL ... --agents N` coordinates, `pelt agent` sends. The work is the
//! library's (`pelt_load::fleet`); this file reads the token, maps the outcome to exit codes
//! and writes the same outputs as a plain run.

use crate::args::{AgentArgs, FleetArgs, LoadArgs, MetricsArgs, MonitorArgs, ViewArgs};
use crate::files::is_stdout;
use crate::files::{check_outputs, write_outputs};
use crate::run::{prepare_with, report_run, stop_flag};
use crate::{bad, dashboard, metrics, output, EXIT_FLEET, EXIT_INTERRUPTED};
use anyhow::{anyhow, Result};
use pelt_load::fleet::{self, AgentError, Coordinator, CoordinatorOptions, FleetError, Token};
use pelt_stats::TimelinePoint;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// How long after it is asked a change on a coordinator's page takes effect: time for every
/// agent to hear of it first.
const FLEET_LEAD: std::time::Duration = std::time::Duration::from_millis(250);

/// The token from `--token-file`, else from the environment: bad input when neither.
pub fn token(file: Option<&Path>) -> Result<Token> {
    match file {
        Some(path) => Token::from_file(path),
        None => Token::from_env().map_err(|e| format!("a fleet needs a shared token: {e}")),
    }
    .map_err(|e| bad(anyhow!(e)))
}

/// The fleet's token as text (a live page beyond loopback asks for it): from `file`, else
/// as [`Token::from_env`] finds it; checked as a fleet's is.
pub fn token_text(file: Option<&Path>) -> Result<String> {
    let text = match (file, std::env::var_os("PELT_FLEET_TOKEN_FILE")) {
        (Some(path), _) => std::fs::read_to_string(path)
            .map_err(|e| anyhow!("cannot read the token file {}: {e}", path.display())),
        (None, Some(path)) => std::fs::read_to_string(&path).map_err(|e| {
            anyhow!(
                "cannot read the token file {}: {e}",
                Path::new(&path).display()
            )
        }),
        (None, None) => std::env::var("PELT_FLEET_TOKEN").map_err(|_| {
            anyhow!(
                "--dashboard beyond loopback needs the fleet's token: set PELT_FLEET_TOKEN \
                 (make one with: head -c 32 /dev/urandom | base64), or serve it on 127.0.0.1"
            )
        }),
    }
    .map_err(bad)?;
    Token::new(&text).map_err(|e| bad(anyhow!(e)))?;
    Ok(text.trim().to_string())
}

/// `pelt monitor`: serves runs until it is stopped.
pub fn monitor(a: &MonitorArgs) -> Result<ExitCode> {
    let token = token(a.token_file.as_deref())?;
    let watching = match &a.watch {
        Some(w) => w.check().map_err(|e| bad(anyhow!(e)))?,
        None => "the machine alone".into(),
    };
    let listener = std::net::TcpListener::bind(a.listen)
        .map_err(|e| bad(anyhow!("cannot listen on {}: {e}", a.listen)))?;
    let addr = listener.local_addr()?;
    // Said even with -q: it is how runs know the port when it was chosen here (port 0).
    eprintln!("pelt: monitor on {addr}, watching {watching}");
    let quiet = a.quiet;
    let log = |line: &str| {
        if !quiet {
            eprintln!("pelt: {line}");
        }
    };
    fleet::monitor::serve(listener, a.watch.clone(), token, &log)?;
    Ok(ExitCode::SUCCESS)
}

/// `--monitor-remote`: the token from `--token-file` for the run to prove (else the library
/// reads the environment's).
pub fn monitor_token(a: &mut LoadArgs, f: &FleetArgs) -> Result<()> {
    if let (Some(_), Some(path)) = (&a.spec.monitor_remote, &f.token_file) {
        a.spec.fleet_token = Some(Token::from_file(path).map_err(|e| bad(anyhow!(e)))?);
    }
    Ok(())
}

/// `pelt URL ... --agents N`: the coordinator.
pub fn coordinate(
    a: &LoadArgs,
    f: &FleetArgs,
    m: &MetricsArgs,
    v: &ViewArgs,
    agents: u32,
) -> Result<ExitCode> {
    let token = token(f.token_file.as_deref())?;
    let (mut p, spec) = prepare_with(a, fleet::validate)?;
    p.agents = Some(agents);
    let live = metrics::start(m, &p.run)?;
    let stop = stop_flag()?;
    // The merged fleet's page; its changes go to every agent, for the same second of the run.
    let dash = dashboard::open(
        v,
        &mut p.run,
        Some(FLEET_LEAD),
        f.token_file.as_deref(),
        &stop,
        p.quiet,
    )?;
    let opts = CoordinatorOptions {
        agents,
        token,
        join_timeout: f.join_timeout,
        silence: fleet::DEFAULT_SILENCE,
    };
    let coordinator = Coordinator::bind(f.listen, opts)
        .map_err(|e| bad(anyhow!("cannot listen on {}: {e}", f.listen)))?;
    // Said even with -q when the port was chosen here (--listen on port 0): it is how the
    // agents' address is known. (On Kubernetes, -q keeps the log to the --json - result.)
    if !p.quiet || f.listen.port() == 0 {
        eprintln!(
            "pelt: coordinator on {}: waiting for {agents} agent{}",
            coordinator.local_addr(),
            if agents == 1 { "" } else { "s" }
        );
    }
    let quiet = p.quiet;
    let mut lost = false;
    let views = crate::run::Views {
        tui: crate::tui::start(v, &p.run, p.quiet, stop.clone()),
        dash,
    };
    let ran = report_run(&p, &stop, live.as_ref(), &views, &mut |on_second| {
        let mut log = |line: &str| {
            if !quiet {
                eprintln!("pelt: {line}");
            }
        };
        // The fleet's seconds go where a plain run's go; each agent's own to its metrics.
        let mut seconds = |who: Option<u32>, point: &TimelinePoint| match who {
            None => on_second(point),
            Some(rank) => {
                if let Some(m) = live.as_ref() {
                    m.add_agent(rank, point);
                }
            }
        };
        match coordinator.run(&spec, &p.run, &stop, &mut seconds, &mut log) {
            Ok(run) => {
                lost = run.lost;
                Ok(run.report)
            }
            Err(e @ FleetError::Split(_)) => Err(bad(e)),
            Err(e) => Err(anyhow!(FleetFailure(e.to_string()))),
        }
    });
    views.finish(ran.as_ref().ok().map(|(_, report)| report));
    if let Some(live) = live {
        live.finish(quiet, &stop, ran.as_ref().ok().map(|(_, report)| report));
    }
    match ran {
        Ok((code, report)) => {
            if let Some(f) = report.fleet.as_ref().filter(|_| !quiet) {
                for l in &f.lost {
                    eprintln!("pelt: lost {l}");
                }
            }
            Ok(if lost && !stop.load(Ordering::Relaxed) {
                ExitCode::from(EXIT_FLEET)
            } else {
                code
            })
        }
        Err(e) if e.downcast_ref::<FleetFailure>().is_some() => {
            eprintln!("pelt: {e}");
            Ok(ExitCode::from(if stop.load(Ordering::Relaxed) {
                EXIT_INTERRUPTED
            } else {
                EXIT_FLEET
            }))
        }
        Err(e) => Err(e),
    }
}

/// A fleet that could not run or lost everything (exit 4).
#[derive(Debug)]
struct FleetFailure(String);

impl std::fmt::Display for FleetFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FleetFailure {}

/// `pelt agent`.
pub fn agent(a: &AgentArgs) -> Result<ExitCode> {
    let token = token(a.token_file.as_deref())?;
    let from_env = fleet::rank_from_env(|k| std::env::var(k).ok()).map_err(|e| bad(anyhow!(e)))?;
    let (rank, size) = match (a.rank, from_env) {
        (Some(r), env) => (r, a.agents.or(env.and_then(|e| e.agents))),
        (None, Some(e)) => (e.rank, a.agents.or(e.agents)),
        (None, None) => {
            return Err(bad(anyhow!(
                "no rank for this agent: give --rank N, or run it as a Kubernetes Indexed Job \
                 (JOB_COMPLETION_INDEX) or under Slurm (SLURM_PROCID)"
            )))
        }
    };
    if let Some(n) = size.filter(|&n| rank >= n) {
        return Err(bad(anyhow!(
            "rank {rank} is not below the fleet's {n} agents"
        )));
    }
    check_outputs(&a.out)?;
    let host = fleet::host_name();
    let opts = fleet::AgentOptions {
        coordinator: a.coordinator.clone(),
        rank,
        agents: size,
        threads: a.threads.unwrap_or_else(pelt_engine::default_threads),
        token,
        join_timeout: a.join_timeout,
        silence: fleet::DEFAULT_SILENCE,
        host,
    };
    let stop = stop_flag()?;
    let quiet = a.quiet;
    let mut log = |line: &str| {
        if !quiet {
            eprintln!("pelt agent {rank}: {line}");
        }
    };
    let end = match fleet::run_agent(&opts, &stop, &mut log) {
        Ok(end) => end,
        Err(AgentError::Spec(m)) => return Err(bad(anyhow!(m))),
        Err(e) => {
            eprintln!("pelt agent {rank}: {e}");
            return Ok(ExitCode::from(EXIT_FLEET));
        }
    };
    if let Some(why) = &end.stopped {
        log(&format!("stopped early: {why}"));
    }
    let json_to_stdout = write_outputs(&end.report, &a.out)?;
    if !quiet && !json_to_stdout && !is_stdout(&a.out.json) {
        print!("{}", output::summary(&end.report));
    }
    std::io::stdout().flush()?;
    // An agent exits 0 only when it ran its whole part: stopped by its coordinator (a lost
    // agent, Ctrl-C or SIGTERM there) it exits 4, so no Job or pipeline reads a run cut short
    // as a success.
    Ok(if end.orphaned || end.stopped.is_some() {
        ExitCode::from(EXIT_FLEET)
    } else if stop.load(Ordering::Relaxed) && end.stopped.is_none() {
        ExitCode::from(EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}
