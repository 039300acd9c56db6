//! `pelt find-max`: the library's search (`pelt_load::study::find_max`) with progress lines on
//! stderr, and its document rendered as a table, CSV and HTML.

use crate::args::FindMaxArgs;
use crate::output::{latency, rate, thousands};
use crate::{bad, html};
use anyhow::Result;
use pelt_load::expect::Expectation;
use pelt_load::study::find_max::{rate_text, trim, FindMaxDoc, Step};
use std::fmt::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// Runs the search against the target and reports it.
pub fn find_max(a: &FindMaxArgs, stop: &AtomicBool) -> Result<ExitCode> {
    let load = &a.load;
    crate::run::need_url(load)?;
    crate::files::check_study_outputs(load, "give the objectives with --slo")?;
    let search = pelt_load::study::prepare_find_max(&load.spec, &a.settings.0).map_err(bad)?;
    let quiet = load.quiet;
    if !quiet {
        let s = search.settings();
        let slo: Vec<&str> = s.slo.iter().map(Expectation::text).collect();
        eprintln!(
            "pelt find-max: {}, objectives {}, steps of {}s after a {}s warm-up, within {}%",
            search.target(),
            slo.join(" and "),
            search.step_duration_s(),
            search.warmup_s(),
            trim(s.precision * 100.0)
        );
    }
    let doc = search
        .run(stop, &mut |s| {
            if !quiet {
                eprintln!(
                    "[{}] {:<9} {:>10}/s: {:>10}/s done, p50 {}, p99 {}, {} errors: {}",
                    s.step,
                    s.phase,
                    s.rate.map_or("-".into(), rate_text),
                    rate(s.achieved_rps),
                    latency(s.p50_us as f64),
                    latency(s.p99_us as f64),
                    thousands(s.errors),
                    s.verdict()
                );
            }
        })
        .map_err(bad)?;
    let found = doc.answer.is_some();
    let table = markdown(&doc);
    crate::files::write_study(
        &load.out,
        &doc,
        &table,
        || csv(&doc.steps),
        || html::find_max(&doc, table.lines().last().unwrap_or("")),
    )?;
    Ok(if doc.interrupted {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else if !found {
        ExitCode::from(crate::EXIT_THRESHOLD)
    } else {
        ExitCode::SUCCESS
    })
}

/// The steps as a table, then the answer.
pub fn markdown(doc: &FindMaxDoc) -> String {
    // --monitor: what limited each step, in a last column.
    let monitored = doc.steps.iter().any(|st| st.server.is_some());
    let mut s = String::from("| step | phase | rate/s | done/s | p50 | p99 | errors | result |");
    s.push_str(if monitored {
        " bottleneck |\n|---:|---|---:|---:|---:|---:|---:|---|---|\n"
    } else {
        "\n|---:|---|---:|---:|---:|---:|---:|---|\n"
    });
    for st in &doc.steps {
        let mut cells = st.cells();
        if monitored {
            cells.push(st.bottleneck().unwrap_or_else(|| "-".into()));
        }
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
    let slo = doc.slo.join(" and ");
    let _ = writeln!(s);
    match &doc.answer {
        Some(a) => {
            // --monitor: the server at the knee, on the same line (the HTML shows the last).
            let server = a
                .server
                .as_ref()
                .map_or(String::new(), |server| format!("; {}", server.text()));
            let _ = writeln!(
                s,
                "max rate meeting {slo}: {}/s (step {}: p50 {}, p99 {}; {:?} s per step, within {}%){server}",
                rate_text(a.rate),
                a.step,
                latency(a.p50_us as f64),
                latency(a.p99_us as f64),
                doc.step_duration_s,
                trim(doc.precision * 100.0)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "no rate tried met {slo}{}",
                if doc.interrupted {
                    " (interrupted)"
                } else {
                    ""
                }
            );
        }
    }
    s
}

fn csv(steps: &[Step]) -> String {
    let mut s = String::from(
        "step,phase,rate,achieved_rps,p50_us,p99_us,max_us,sent,completed,errors,rate_held,passed,\
         bottleneck\n",
    );
    for st in steps {
        let _ = writeln!(
            s,
            "{},{},{},{:.1},{},{},{},{},{},{},{},{},{}",
            st.step,
            st.phase,
            st.rate.map_or(String::new(), |r| r.to_string()),
            st.achieved_rps,
            st.p50_us,
            st.p99_us,
            st.max_us,
            st.sent,
            st.completed,
            st.errors,
            st.rate_held,
            st.passed,
            st.bottleneck().unwrap_or_default()
        );
    }
    s
}
