//! The `pelt` binary: parse the flags, dispatch to the command, map errors to exit codes.
//!
//! One file per command: `run.rs` (a load test, `pelt URL`), `serve.rs`, `demo.rs`,
//! `report.rs`, `merge.rs`, `compare.rs`, `find_max.rs`. The work is the library's
//! (`pelt-load`); this crate parses (clap, `args.rs`), renders (`output.rs`, `html.rs`,
//! `live.rs`) and writes files (`files.rs`). Arguments are handled in two stages: clap checks
//! what the user typed, then the library prepares the run (resolves the host, reads the body
//! file, raises the fd limit). Any problem in either stage is one line on stderr and exit code
//! 2, before any traffic.

mod args;
mod compare;
mod dashboard;
mod demo;
mod files;
mod find_max;
mod fleet;
mod ghz;
mod html;
mod k8s;
mod live;
mod merge;
mod metrics;
mod output;
mod report;
mod run;
mod sections;
mod serve;
mod shell;
mod tui;
mod wrk;

use args::{Cli, Command};
use clap::Parser;
use pelt_load::{expect, values};
use std::process::ExitCode;

/// Exit code for bad input: nothing was sent.
const EXIT_USAGE: u8 = 2;
/// Exit code for an internal failure (a result could not be written).
const EXIT_FAILURE: u8 = 1;
/// Exit code when an `--expect` threshold did not hold.
const EXIT_THRESHOLD: u8 = 3;
/// Exit code when a fleet run lost an agent, could not gather its agents, or an agent lost
/// its coordinator.
const EXIT_FLEET: u8 = 4;
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
    let mut cli = match Cli::try_parse() {
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
            // A command's name mistyped, before what clap says of the words after it.
            let first = std::env::args().nth(1).unwrap_or_default();
            let line = match args::schemeless(&first) {
                Err(typo) if !first.starts_with('-') => typo,
                _ => clap_line(&e),
            };
            eprintln!("pelt: {line}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = match cli.command {
        Some(Command::Serve(a)) => serve::serve(&a),
        Some(Command::Demo) => demo::demo(),
        Some(Command::Report(a)) => report::report(&a),
        Some(Command::Merge(a)) => merge::merge(&a),
        Some(Command::Compare(a)) => {
            // The arguments after `compare`, as typed: each run re-parses them with its settings.
            let raw: Vec<std::ffi::OsString> = std::env::args_os()
                .skip_while(|x| x != "compare")
                .skip(1)
                .collect();
            run::stop_flag().and_then(|stop| compare::compare(&a, &raw, &stop))
        }
        Some(Command::FindMax(a)) => {
            run::stop_flag().and_then(|stop| find_max::find_max(&a, &stop))
        }
        Some(Command::Ghz(a)) => ghz::ghz(&a),
        Some(Command::Wrk(a)) => wrk::wrk(&a),
        Some(Command::Agent(a)) => fleet::agent(&a),
        Some(Command::Monitor(a)) => fleet::monitor(&a),
        Some(Command::K8s(a)) => {
            // The run's flags as typed, for the coordinator's command line.
            let raw: Vec<std::ffi::OsString> = std::env::args_os()
                .skip_while(|x| x != "k8s")
                .skip(1)
                .collect();
            k8s::k8s(&a, &raw)
        }
        Some(Command::Completions(a)) => shell::completions(&a),
        Some(Command::Man(a)) => shell::man(&a),
        None => {
            fleet::monitor_token(&mut cli.load, &cli.fleet).and_then(|()| match cli.fleet.agents {
                Some(n) => fleet::coordinate(&cli.load, &cli.fleet, &cli.metrics, &cli.views, n),
                None => run::load(&cli.load, &cli.metrics, &cli.views),
            })
        }
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
    let values = text
        .lines()
        .skip(1)
        .find(|l| l.contains("[possible values:"));
    if let Some(values) = values.filter(|_| !line.contains("[possible values:")) {
        line = format!("{line} {}", values.trim());
    }
    line
}
