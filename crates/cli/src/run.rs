//! A plain run (`pelt URL ...`): the flags as the library's spec, prepared, run with a live
//! view and streams, reported, and the exit code.

use crate::args::{LoadArgs, MetricsArgs, Outputs, ViewArgs};
use crate::files::{check_outputs, is_stdout, write_outputs};
use crate::{bad, dashboard, live, metrics, output, tui, EXIT_INTERRUPTED, EXIT_THRESHOLD};
use anyhow::{anyhow, Result};
use pelt_load::{LoadSpec, Requests};
use pelt_stats::{LiveVerdict, Report, TimelinePoint};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A validated run (the library's) plus what the CLI does with its result.
pub struct Prepared {
    pub run: pelt_load::Prepared,
    pub out: Outputs,
    pub jsonl: Option<PathBuf>,
    pub quiet: bool,
    /// A fleet's coordinator: its agents (they send, not this process).
    pub agents: Option<u32>,
}

/// The flags checked and prepared by the library, and the output paths checked: every
/// problem is bad input (exit 2) before any traffic.
pub fn prepare(a: &LoadArgs) -> Result<Prepared> {
    prepare_with(a, pelt_load::prepare).map(|(p, _)| p)
}

/// A run needs a URL, or targets (the first target's origin is then the run's).
pub fn need_url(a: &LoadArgs) -> Result<()> {
    let own_origin = matches!(
        a.spec.requests_from,
        Requests::Targets { .. } | Requests::Scenario(_)
    );
    if !a.has_url() && !own_origin {
        return Err(bad(anyhow!(
            "no target URL given (try: pelt http://127.0.0.1:8080/, or pelt demo)"
        )));
    }
    Ok(())
}

/// The library's validation for what this process does with the run: `pelt_load::prepare`
/// (it sends), `fleet::validate` (it coordinates), `fleet::validate_elsewhere` (it describes).
pub type Validate = fn(&LoadSpec) -> Result<pelt_load::Prepared, pelt_load::SpecError>;

/// [`prepare`] with `validate`; returns the spec too (a coordinator hands it its agents).
pub fn prepare_with(a: &LoadArgs, validate: Validate) -> Result<(Prepared, LoadSpec)> {
    need_url(a)?;
    let spec = a.spec.clone();
    let run = validate(&spec).map_err(bad)?;
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
    if let (Some(typed), false) = (&a.schemeless, a.quiet) {
        eprintln!("pelt: {typed} has no scheme: taking it as {}", spec.url);
    }
    let p = Prepared {
        run,
        out: a.out.clone(),
        jsonl: a.jsonl.clone(),
        quiet: a.quiet,
        agents: None,
    };
    Ok((p, spec))
}

/// Installs Ctrl-C / SIGTERM handling: the first sets the flag (stop and report), the second
/// exits at once.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
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

pub fn load(a: &LoadArgs, m: &MetricsArgs, v: &ViewArgs) -> Result<ExitCode> {
    let mut p = prepare(a)?;
    let live = metrics::start(m, &p.run)?;
    let stop = stop_flag()?;
    // With a live page, the run can be changed while it goes.
    let dash = dashboard::open(v, &mut p.run, None, None, &stop, p.quiet)?;
    let views = Views {
        tui: tui::start(v, &p.run, p.quiet, stop.clone()),
        dash,
    };
    let ran = report_run(&p, &stop, live.as_ref(), &views, &mut |on_second| {
        Ok(pelt_load::run(&p.run, &stop, on_second))
    });
    views.finish(ran.as_ref().ok().map(|(_, r)| r));
    let (code, report) = ran?;
    if let Some(live) = live {
        live.finish(p.quiet, &stop, Some(&report));
    }
    Ok(code)
}

/// What shows the run as it goes, besides the live line and the streams: the terminal view
/// and the live page.
#[derive(Default)]
pub struct Views {
    pub tui: Option<tui::Tui>,
    pub dash: Option<dashboard::Dashboard>,
}

impl Views {
    /// The run is over (`report`: its result, if it has one).
    pub fn finish(self, report: Option<&pelt_stats::Report>) {
        if let Some(t) = self.tui {
            t.finish();
        }
        if let Some(d) = self.dash {
            d.finish(report);
        }
    }
}

pub fn run_and_report(p: &Prepared, stop: &AtomicBool) -> Result<(ExitCode, Report)> {
    report_run(p, stop, None, &Views::default(), &mut |on_second| {
        Ok(pelt_load::run(&p.run, stop, on_second))
    })
}

/// What runs a load test: given where each second goes, it returns the result.
pub type Runner<'a> = &'a mut dyn FnMut(&mut dyn FnMut(&TimelinePoint)) -> Result<Report>;

/// Runs with `run` (here, or by a fleet), showing its seconds live and streaming them, then
/// writes the outputs and the summary; the exit code is the run's.
pub fn report_run(
    p: &Prepared,
    stop: &AtomicBool,
    live: Option<&metrics::Live>,
    views: &Views,
    run: Runner,
) -> Result<(ExitCode, Report)> {
    if !p.quiet {
        let line = match p.agents {
            Some(n) => output::fleet_start_line(&p.run.info, &p.run.config, n),
            None => output::start_line(&p.run.info, &p.run.config),
        };
        eprintln!("pelt: {line}");
    }
    let mut stream = match &p.jsonl {
        None => None,
        Some(path) if path.as_os_str() == "-" => Some(live::JsonLines::stdout()),
        Some(path) => Some(live::JsonLines::create(path)?),
    };
    // The terminal view replaces the live line.
    let mut view = (!p.quiet && !is_stdout(&p.jsonl) && views.tui.is_none())
        .then(|| live::LiveView::new(&p.run.config))
        .flatten();
    // With --monitor, the views name the bottleneck of the last seconds as the run goes.
    let mut judge = (views.tui.is_some() || views.dash.is_some())
        .then(|| LiveVerdict::new(&p.run.info, p.run.config.scenario().is_some()));
    p.run
        .script_output(is_stdout(&p.out.json) || is_stdout(&p.jsonl));
    let report = run(&mut |point| {
        if let Some(m) = live {
            m.add(point);
        }
        let verdict = judge
            .as_mut()
            .and_then(|j| j.add(point))
            .map(|v| v.headline());
        if let Some(d) = &views.dash {
            d.add(point, verdict.as_deref());
        }
        if let Some(t) = &views.tui {
            t.add(point, verdict);
        }
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
    let report = report?;
    // -s: the threads' init() or first request() failed in the workers; nothing was sent.
    if let Some(e) = p.run.script_failure() {
        return Err(crate::bad(anyhow::anyhow!(e)));
    }
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
    // -s: the script's done() follows the summary, as wrk's follows its report.
    let script_failed = match p
        .run
        .script_done(&report, json_to_stdout || is_stdout(&p.jsonl))
    {
        Ok(()) => false,
        Err(e) => {
            eprintln!("pelt: {e}");
            true
        }
    };
    let code = if stop.load(Ordering::Relaxed) {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if report.thresholds.iter().any(|t| !t.passed) {
        ExitCode::from(EXIT_THRESHOLD)
    } else if script_failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    Ok((code, report))
}
