//! `pelt find-max`: the highest open-loop rate at which every objective holds.
//!
//! Each step is a plain open-loop run (`--rate R`, latency from the due time, so an overloaded
//! server shows in the latency instead of slowing pelt down). Without `--start`, a closed-loop
//! probe measures what the server does flat out and the search starts at half of it. The rate
//! then doubles until a step fails, and the interval between the last rate that held and the
//! first that failed is bisected until it is within `--precision`. A step also fails when the
//! rate itself did not hold (fewer than 95 % of the requests asked for completed): a search
//! with only an error objective would otherwise climb forever.

use crate::args::FindMaxArgs;
use crate::output::{latency, rate, thousands};
use crate::run::prepare;
use crate::{bad, html};
use anyhow::{anyhow, Result};
use pelt_engine as engine;
use pelt_load::expect::Expectation;
use pelt_stats::{Report, Threshold};
use serde::Serialize;
use std::fmt::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The document `pelt find-max` writes with --json, and renders as the table, CSV and HTML.
#[derive(Debug, Serialize)]
pub struct FindMaxDoc {
    pub pelt_version: &'static str,
    pub target: String,
    pub method: String,
    /// The objectives, as given.
    pub slo: Vec<String>,
    /// The share of the rate asked for that a step must complete ([`RATE_HELD`]).
    pub rate_held: f64,
    pub precision: f64,
    pub step_duration_s: f64,
    pub warmup_s: f64,
    pub connections: usize,
    pub max_connections: usize,
    pub interrupted: bool,
    pub steps: Vec<Step>,
    /// The highest rate that passed (`null`: none did).
    pub answer: Option<Answer>,
}

/// The step that gave the answer.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Answer {
    pub rate: f64,
    pub step: usize,
    pub achieved_rps: f64,
    pub p50_us: u64,
    pub p99_us: u64,
}

/// A step holds the rate when at least this share of the requests due completed.
pub const RATE_HELD: f64 = 0.95;

/// One run of the search.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub step: usize,
    /// `probe` (closed loop, no rate), `step-up`, `step-down` or `bisect`.
    pub phase: String,
    /// The rate asked for (`null` for the probe).
    pub rate: Option<f64>,
    pub achieved_rps: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    /// pelt's own lag p99 (open loop): high when no connection was free.
    pub lag_p99_us: Option<u64>,
    /// Completed at least 95 % of the rate asked for.
    pub rate_held: bool,
    pub thresholds: Vec<Threshold>,
    /// Every objective held, and the rate did.
    pub passed: bool,
}

impl Step {
    fn of(step: usize, phase: &str, rate: Option<f64>, r: &Report) -> Step {
        let rate_held = rate.is_none_or(|want| r.rps >= RATE_HELD * want);
        let passed = rate.is_some() && rate_held && r.thresholds.iter().all(|t| t.passed);
        Step {
            step,
            phase: phase.to_string(),
            rate,
            achieved_rps: r.rps,
            p50_us: r.latency_us.p50_us,
            p99_us: r.latency_us.p99_us,
            max_us: r.latency_us.max_us,
            sent: r.requests.sent,
            completed: r.requests.completed,
            errors: r.requests.errors,
            lag_p99_us: r.open_loop.as_ref().map(|o| o.lag_us.p99_us),
            rate_held,
            thresholds: r.thresholds.clone(),
            passed,
        }
    }

    /// Why the step failed, in a few words; `ok` when it passed.
    pub fn verdict(&self) -> String {
        let Some(want) = self.rate else {
            return "probe".into();
        };
        if self.passed {
            return "ok".into();
        }
        let mut why: Vec<String> = self
            .thresholds
            .iter()
            .filter(|t| !t.passed)
            .map(|t| match t.actual {
                Some(v) => format!("{} (was {} {})", t.expect, trim(v), t.unit),
                None => format!("{} (no response)", t.expect),
            })
            .collect();
        if !self.rate_held {
            why.push(format!(
                "rate not held ({:.0}% of {}/s)",
                self.achieved_rps * 100.0 / want,
                rate_text(want)
            ));
        }
        format!("FAIL {}", why.join(", "))
    }
}

/// A measured value with about 4 significant digits and no trailing zeros: `1947.6`, `8.79`.
fn trim(v: f64) -> String {
    let decimals = match v.abs() {
        x if x >= 1000.0 => 0,
        x if x >= 100.0 => 1,
        x if x >= 10.0 => 2,
        _ => 3,
    };
    let t = format!("{v:.decimals$}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A rate as shown: whole numbers with separators, fractions below 10/s.
fn rate_text(r: f64) -> String {
    if r >= 10.0 {
        thousands(r.round() as u64)
    } else {
        trim(r)
    }
}

/// `x` to 3 significant digits: the rates tried read like rates a person would pick.
pub fn round3(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(x.log10().floor() as i32 - 2);
    (x / scale).round() * scale
}

/// The search itself, over any step function: `try_rate(rate) -> passed`. Returns the highest
/// rate that passed, if any. Bounded by `max_steps` calls.
pub fn search(
    start: f64,
    max_rate: f64,
    precision: f64,
    max_steps: usize,
    mut try_rate: impl FnMut(f64, &str) -> Option<bool>,
) -> Option<f64> {
    let (mut good, mut bad): (Option<f64>, Option<f64>) = (None, None);
    let mut steps = 0;
    let mut r = round3(start.min(max_rate)).max(engine::Rate::MIN_PER_S);
    // Step up by doubling while it holds (or down by halving while it does not).
    while steps < max_steps {
        steps += 1;
        let phase = if bad.is_some() {
            "step-down"
        } else {
            "step-up"
        };
        match try_rate(r, phase)? {
            true => {
                good = Some(r);
                if bad.is_some() || r >= max_rate {
                    break;
                }
                r = round3((r * 2.0).min(max_rate));
            }
            false => {
                bad = Some(r);
                if good.is_some() {
                    break;
                }
                let lower = round3(r / 2.0);
                if lower < 1.0 {
                    break;
                }
                r = lower;
            }
        }
    }
    // Bisect between the last rate that held and the first that failed.
    while steps < max_steps {
        let (Some(g), Some(b)) = (good, bad) else {
            break;
        };
        if (b - g) / g <= precision {
            break;
        }
        let mid = round3((g + b) / 2.0);
        if mid <= g || mid >= b {
            break;
        }
        steps += 1;
        match try_rate(mid, "bisect")? {
            true => good = Some(mid),
            false => bad = Some(mid),
        }
    }
    good
}

/// Runs the search against the target and reports it.
pub fn find_max(a: &FindMaxArgs, stop: &AtomicBool) -> Result<ExitCode> {
    let load = &a.load;
    if load.spec.rate.is_some() {
        return Err(bad(anyhow!(
            "pelt find-max sets the rate itself; give --start and --max-rate instead of --rate"
        )));
    }
    if !load.spec.stages.is_empty() {
        return Err(bad(anyhow!(
            "pelt find-max moves the rate itself; --stages is for plain runs"
        )));
    }
    if load.spec.requests.is_some() {
        return Err(bad(anyhow!(
            "pelt find-max runs each step for -d (a duration), not -n"
        )));
    }
    crate::files::check_study_outputs(load, "give the objectives with --slo")?;
    // Every step runs with the objectives as its thresholds, quiet, writing nothing.
    let mut base = load.clone();
    base.spec.expect = a.slo.clone();
    base.quiet = true;
    base.out = Default::default();
    base.spec.warmup = Some(load.spec.warmup.unwrap_or(Duration::from_secs(1)));
    let step_s = base
        .spec
        .duration
        .unwrap_or(engine::DEFAULT_DURATION)
        .as_secs_f64();
    let at_rate = |r: f64| {
        let mut l = base.clone();
        if engine::Rate::per_second(r).is_none() {
            return Err(bad(anyhow!(
                "rate {r}/s is outside {}..{}",
                engine::Rate::MIN_PER_S,
                engine::Rate::MAX_PER_S
            )));
        }
        l.spec.rate = Some(r);
        prepare(&l)
    };
    // Check everything a step needs before any traffic: the probe and the highest rate.
    let probe = prepare(&base)?;
    let max_rate = a.max_rate.map_or(engine::Rate::MAX_PER_S, |r| r.as_f64());
    at_rate(a.start.map_or(max_rate, |r| r.as_f64()).min(max_rate))?;
    let quiet = load.quiet;
    let target = probe.run.info.target.clone();
    if !quiet {
        let slo: Vec<&str> = a.slo.iter().map(Expectation::text).collect();
        eprintln!(
            "pelt find-max: {target}, objectives {}, steps of {step_s}s after a {}s warm-up, \
             within {}%",
            slo.join(" and "),
            base.spec.warmup.unwrap_or_default().as_secs_f64(),
            trim(a.precision * 100.0)
        );
    }
    let mut steps: Vec<Step> = Vec::new();
    let mut log = |s: Step| {
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
        let passed = s.passed;
        steps.push(s);
        passed
    };
    let start = match a.start {
        Some(r) => r.as_f64(),
        None => {
            let report = pelt_load::run(&probe.run, stop, &mut |_| {});
            let s = Step::of(0, "probe", None, &report);
            let start = (s.achieved_rps / 2.0).max(1.0);
            log(s);
            start
        }
    };
    let mut failure: Option<anyhow::Error> = None;
    let mut n = 0;
    let answer = search(start, max_rate, a.precision, a.max_steps, |r, phase| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let p = match at_rate(r) {
            Ok(p) => p,
            Err(e) => {
                failure = Some(e);
                return None;
            }
        };
        let report = pelt_load::run(&p.run, stop, &mut |_| {});
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        n += 1;
        Some(log(Step::of(n, phase, Some(r), &report)))
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let interrupted = stop.load(Ordering::Relaxed);
    let best = answer.and_then(|r| steps.iter().find(|s| s.rate == Some(r) && s.passed));
    let answer: Option<Answer> = best.map(|s| Answer {
        rate: s.rate.unwrap_or_default(),
        step: s.step,
        achieved_rps: s.achieved_rps,
        p50_us: s.p50_us,
        p99_us: s.p99_us,
    });
    let doc = FindMaxDoc {
        pelt_version: env!("CARGO_PKG_VERSION"),
        target,
        method: probe.run.info.method.clone(),
        slo: a.slo.iter().map(|e| e.text().to_string()).collect(),
        rate_held: RATE_HELD,
        precision: a.precision,
        step_duration_s: step_s,
        warmup_s: base.spec.warmup.unwrap_or_default().as_secs_f64(),
        connections: probe.run.info.connections,
        max_connections: load.spec.max_connections.unwrap_or(load.spec.connections),
        interrupted,
        steps,
        answer,
    };
    let found = doc.answer.is_some();
    let table = markdown(&doc);
    crate::files::write_study(
        &load.out,
        &doc,
        &table,
        || csv(&doc.steps),
        || html::find_max(&doc, table.lines().last().unwrap_or("")),
    )?;
    Ok(if interrupted {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else if !found {
        ExitCode::from(crate::EXIT_THRESHOLD)
    } else {
        ExitCode::SUCCESS
    })
}

/// One step as the table shows it: step, phase, rate/s, done/s, p50, p99, errors, result.
pub fn cells(st: &Step) -> Vec<String> {
    vec![
        st.step.to_string(),
        st.phase.clone(),
        st.rate.map_or("-".into(), rate_text),
        rate(st.achieved_rps),
        latency(st.p50_us as f64),
        latency(st.p99_us as f64),
        thousands(st.errors),
        st.verdict(),
    ]
}

/// The steps as a table, then the answer.
pub fn markdown(doc: &FindMaxDoc) -> String {
    let mut s = String::from(
        "| step | phase | rate/s | done/s | p50 | p99 | errors | result |\n\
         |---:|---|---:|---:|---:|---:|---:|---|\n",
    );
    for st in &doc.steps {
        let _ = writeln!(s, "| {} |", cells(st).join(" | "));
    }
    let slo = doc.slo.join(" and ");
    let _ = writeln!(s);
    match &doc.answer {
        Some(a) => {
            let _ = writeln!(
                s,
                "max rate meeting {slo}: {}/s (step {}: p50 {}, p99 {}; {:?} s per step, within {}%)",
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
        "step,phase,rate,achieved_rps,p50_us,p99_us,max_us,sent,completed,errors,rate_held,passed\n",
    );
    for st in steps {
        let _ = writeln!(
            s,
            "{},{},{},{:.1},{},{},{},{},{},{},{},{}",
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
            st.passed
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_values_read_short() {
        assert_eq!(trim(1947.647), "1948");
        assert_eq!(trim(218.367), "218.4");
        assert_eq!(trim(8.79), "8.79");
        assert_eq!(trim(0.5), "0.5");
        assert_eq!(trim(3.0), "3");
    }

    #[test]
    fn rates_round_to_three_digits() {
        assert_eq!(round3(12_345.0), 12_300.0);
        assert_eq!(round3(999.6), 1000.0);
        assert_eq!(round3(0.12345), 0.123);
        assert_eq!(round3(450.0), 450.0);
    }

    /// Against a model server with a known capacity, the search ends within its precision
    /// below it, in few steps, whatever the start.
    #[test]
    fn search_converges_on_the_capacity() {
        for capacity in [37.0, 450.0, 1_000.0, 123_456.0] {
            for start in [1.0, 10.0, capacity / 3.0, capacity * 7.0] {
                let mut tried = Vec::new();
                let found = search(start, 1e9, 0.05, 40, |r, _| {
                    tried.push(r);
                    Some(r <= capacity)
                })
                .unwrap_or_else(|| panic!("capacity {capacity} start {start}: {tried:?}"));
                assert!(found <= capacity, "{found} {tried:?}");
                assert!(found >= capacity * 0.94, "{capacity}: {found} {tried:?}");
                assert!(tried.len() <= 30, "{tried:?}");
            }
        }
    }

    #[test]
    fn search_stops_at_max_rate_and_max_steps_and_when_asked() {
        assert_eq!(
            search(100.0, 300.0, 0.05, 20, |_, _| Some(true)),
            Some(300.0)
        );
        let mut n = 0;
        assert_eq!(
            search(100.0, 1e9, 0.05, 5, |_, _| {
                n += 1;
                Some(true)
            }),
            Some(1600.0)
        );
        assert_eq!(n, 5);
        assert_eq!(search(100.0, 1e9, 0.05, 20, |_, _| Some(false)), None);
        assert_eq!(search(100.0, 1e9, 0.05, 20, |_, _| None), None);
    }
}
