//! The files a result or a study is written to (--json, --csv, --html, --hdr-log), checked
//! before any traffic and written after; and results read back.

use crate::args::{LoadArgs, Outputs};
use crate::{bad, html, output};
use anyhow::{anyhow, Result};
use pelt_stats::Report;
use std::io::Write;
use std::path::PathBuf;

/// Checks, before anything runs, that every output path can be written.
pub fn check_outputs(o: &Outputs) -> Result<()> {
    for (flag, path) in [
        ("--csv", &o.csv),
        ("--csv-targets", &o.csv_targets),
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
        ("--csv-targets", &o.csv_targets),
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
pub fn check_study_outputs(load: &LoadArgs, instead: &str) -> Result<()> {
    let o = &load.out;
    if !load.spec.expect.is_empty()
        || load.jsonl.is_some()
        || o.hdr_log.is_some()
        || o.csv_targets.is_some()
    {
        return Err(bad(anyhow!(
            "--expect, --jsonl, --hdr-log and --csv-targets are for single runs; {instead}"
        )));
    }
    check_outputs(&load.out)
}

/// Writes a study's document (compare, find-max) as --json, --csv and --html, and prints its
/// table unless the JSON goes to stdout.
pub fn write_study(
    o: &Outputs,
    doc: &impl serde::Serialize,
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
pub fn write_outputs(report: &Report, o: &Outputs) -> Result<bool> {
    write_json(&o.json, report)?;
    if let Some(path) = &o.csv {
        output::write_atomic(path, output::timeline_csv(&report.timeline).as_bytes())?;
    }
    if let Some(path) = &o.csv_targets {
        output::write_atomic(path, &output::targets_csv(report)?)?;
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
pub fn write_json(path: &Option<PathBuf>, value: &impl serde::Serialize) -> Result<()> {
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
pub fn read_result(path: &std::path::Path) -> Result<Report> {
    let text =
        std::fs::read(path).map_err(|e| bad(anyhow!("cannot read {}: {e}", path.display())))?;
    serde_json::from_slice(&text).map_err(|e| {
        bad(anyhow!(
            "{} is not a pelt result (--json): {e}",
            path.display()
        ))
    })
}

/// Whether `p` is `-`: standard output.
pub fn is_stdout(p: &Option<PathBuf>) -> bool {
    p.as_ref().is_some_and(|p| p.as_os_str() == "-")
}
