//! `find-max`: the highest open-loop rate at which every objective holds. A closed-loop probe
//! (unless a start is given) finds what the server does flat out; the search steps up by
//! doubling (or down by halving) from half of it, then bisects between the last rate that held
//! and the first that failed, to within the precision. Each step is a prepared open-loop run
//! whose thresholds are the objectives; it passes when they all hold and at least
//! [`RATE_HELD`] of the rate asked for completed.

use crate::expect::Expectation;
use crate::fmt::thousands;
use crate::{prepare, LoadSpec, Prepared, SpecError};
use pelt_engine as engine;
use pelt_stats::{Report, Threshold};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A step holds the rate when at least this share of the requests due completed.
pub const RATE_HELD: f64 = 0.95;
/// Stop bisecting when the rate that held and the one that failed are this close.
pub const DEFAULT_PRECISION: f64 = 0.05;
/// The most steps a search runs (the probe not counted).
pub const DEFAULT_MAX_STEPS: usize = 20;
/// Each step's warm-up when the run gives none.
pub const DEFAULT_WARMUP: Duration = Duration::from_secs(1);

/// How the search goes (`pelt find-max`'s own flags; the run's are a [`LoadSpec`]).
#[derive(Debug, Clone)]
pub struct FindMaxSettings {
    /// The objectives every step must meet (at least one).
    pub slo: Vec<Expectation>,
    /// The first rate to try (`None`: half of what a closed-loop probe reaches).
    pub start: Option<f64>,
    /// Never try more than this rate (`None`: the engine's most).
    pub max_rate: Option<f64>,
    pub precision: f64,
    pub max_steps: usize,
}

impl Default for FindMaxSettings {
    fn default() -> Self {
        FindMaxSettings {
            slo: Vec::new(),
            start: None,
            max_rate: None,
            precision: DEFAULT_PRECISION,
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

/// The document `pelt find-max` writes with --json (and Node.js's `findMax()` resolves to).
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub rate: f64,
    pub step: usize,
    pub achieved_rps: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// With `--monitor`: the server at that step (the knee).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<StepServer>,
}

/// With `--monitor`: the server's CPU at a step, and what limited the step.
#[derive(Debug, Clone, Serialize)]
pub struct StepServer {
    /// Mean CPU in cores, and the most it could use.
    pub cpu_cores: f64,
    pub cpu_capacity: f64,
    pub cpu_us_per_request: f64,
    pub bottleneck: pelt_stats::Bottleneck,
    /// Others at their limit too, tighter first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<pelt_stats::Bottleneck>,
    /// The verdict as the summary names it.
    pub headline: String,
}

impl StepServer {
    /// "server at 97% of 1 core: the server's CPU".
    pub fn text(&self) -> String {
        let share = if self.cpu_capacity > 0.0 {
            self.cpu_cores / self.cpu_capacity * 100.0
        } else {
            0.0
        };
        let cores = if (self.cpu_capacity - 1.0).abs() < 1e-9 {
            "1 core".to_string()
        } else {
            format!("{} cores", trim(self.cpu_capacity))
        };
        format!("server at {share:.0}% of {cores}: {}", self.headline)
    }
}

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
    /// Completed at least [`RATE_HELD`] of the rate asked for (with streams, completed or
    /// still streaming at the step's end).
    pub rate_held: bool,
    pub thresholds: Vec<Threshold>,
    /// Every objective held, and the rate did.
    pub passed: bool,
    /// With `--monitor`: the server's CPU in this step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<StepServer>,
}

impl Step {
    fn of(step: usize, phase: &str, rate: Option<f64>, r: &Report) -> Step {
        // A stream's reply lasts (seconds, from an LLM): the streams still running when the
        // step ends were sent on time and are not the server falling behind, so they count
        // toward the rate held (a request that found no connection was never sent).
        let held_rps = match (&r.event_streams, r.requests.completed) {
            (Some(_), done) if done > 0 => {
                r.rps * (done + r.requests.in_flight) as f64 / done as f64
            }
            _ => r.rps,
        };
        let rate_held = rate.is_none_or(|want| held_rps >= RATE_HELD * want);
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
            server: r.resources.as_ref().and_then(|res| {
                res.server.as_ref().map(|s| StepServer {
                    cpu_cores: s.cpu_mean,
                    cpu_capacity: s.cpu_capacity,
                    cpu_us_per_request: s.cpu_us_per_request,
                    bottleneck: res.verdict.bottleneck,
                    also: res.verdict.also.clone(),
                    headline: res.verdict.headline(),
                })
            }),
        }
    }

    /// The step as a table shows it: step, phase, rate/s, done/s, p50, p99, errors, result.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.step.to_string(),
            self.phase.clone(),
            self.rate.map_or("-".into(), rate_text),
            crate::fmt::rate(self.achieved_rps),
            crate::fmt::latency(self.p50_us as f64),
            crate::fmt::latency(self.p99_us as f64),
            thousands(self.errors),
            self.verdict(),
        ]
    }

    /// With `--monitor`: what limited the step, as a table's cell (`server-cpu+pelt`).
    pub fn bottleneck(&self) -> Option<String> {
        self.server.as_ref().map(|s| {
            std::iter::once(s.bottleneck)
                .chain(s.also.iter().copied())
                .map(pelt_stats::Bottleneck::key)
                .collect::<Vec<_>>()
                .join("+")
        })
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
pub fn trim(v: f64) -> String {
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
pub fn rate_text(r: f64) -> String {
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

/// The search itself, over any step function: `try_rate(rate, phase) -> passed` (`None`:
/// stop). Returns the highest rate that passed, if any. Bounded by `max_steps` calls.
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

/// A search checked and ready: every step's run was prepared once (the probe and the highest
/// rate), so a bad setting is found before any traffic.
pub struct FindMax {
    settings: FindMaxSettings,
    /// Each step's run, without its rate.
    base: LoadSpec,
    probe: Prepared,
    max_rate: f64,
}

/// Checks a search of `load` with `settings` as [`crate::prepare`] checks a run, before any
/// traffic; the error is one line.
pub fn prepare_find_max(load: &LoadSpec, settings: &FindMaxSettings) -> Result<FindMax, SpecError> {
    let refuse = |m: &str| Err(SpecError(m.to_string()));
    if load.rate.is_some() {
        return refuse(
            "pelt find-max sets the rate itself; give --start and --max-rate instead of --rate",
        );
    }
    if !load.stages.is_empty() {
        return refuse("pelt find-max moves the rate itself; --stages is for plain runs");
    }
    if load.requests.is_some() {
        return refuse("pelt find-max runs each step for -d (a duration), not -n");
    }
    if !load.expect.is_empty() {
        return refuse("pelt find-max takes its objectives as --slo, not --expect");
    }
    if settings.slo.is_empty() {
        return refuse("the following required arguments were not provided: --slo <EXPR>");
    }
    // Every step runs with the objectives as its thresholds.
    let mut base = load.clone();
    base.expect = settings.slo.clone();
    base.warmup = Some(load.warmup.unwrap_or(DEFAULT_WARMUP));
    let probe = prepare(&base)?;
    let max_rate = settings.max_rate.unwrap_or(engine::Rate::MAX_PER_S);
    let s = FindMax {
        settings: settings.clone(),
        base,
        probe,
        max_rate,
    };
    s.at_rate(settings.start.unwrap_or(max_rate).min(max_rate))?;
    Ok(s)
}

impl FindMax {
    /// Each step's length, seconds.
    pub fn step_duration_s(&self) -> f64 {
        self.base
            .duration
            .unwrap_or(engine::DEFAULT_DURATION)
            .as_secs_f64()
    }

    pub fn warmup_s(&self) -> f64 {
        self.base.warmup.unwrap_or_default().as_secs_f64()
    }

    /// The run's target, as reports name it.
    pub fn target(&self) -> &str {
        &self.probe.info.target
    }

    pub fn settings(&self) -> &FindMaxSettings {
        &self.settings
    }

    /// The step at rate `r`, prepared.
    fn at_rate(&self, r: f64) -> Result<Prepared, SpecError> {
        if engine::Rate::per_second(r).is_none() {
            return Err(SpecError(format!(
                "rate {r}/s is outside {}..{}",
                engine::Rate::MIN_PER_S,
                engine::Rate::MAX_PER_S
            )));
        }
        let mut l = self.base.clone();
        l.rate = Some(r);
        prepare(&l)
    }

    /// Runs the search; `on_step` gets each step as it ends. `stop` ends it (the document is
    /// marked interrupted).
    pub fn run(
        &self,
        stop: &AtomicBool,
        on_step: &mut dyn FnMut(&Step),
    ) -> Result<FindMaxDoc, SpecError> {
        let mut steps: Vec<Step> = Vec::new();
        let mut log = |s: Step| {
            on_step(&s);
            let passed = s.passed;
            steps.push(s);
            passed
        };
        let start = match self.settings.start {
            Some(r) => r,
            None => {
                let report = crate::run(&self.probe, stop, &mut |_| {});
                let s = Step::of(0, "probe", None, &report);
                let start = (s.achieved_rps / 2.0).max(1.0);
                log(s);
                start
            }
        };
        let mut failure = None;
        let mut n = 0;
        let s = &self.settings;
        let answer = search(
            start,
            self.max_rate,
            s.precision,
            s.max_steps,
            |r, phase| {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                let p = match self.at_rate(r) {
                    Ok(p) => p,
                    Err(e) => {
                        failure = Some(e);
                        return None;
                    }
                };
                let report = crate::run(&p, stop, &mut |_| {});
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                n += 1;
                Some(log(Step::of(n, phase, Some(r), &report)))
            },
        );
        if let Some(e) = failure {
            return Err(e);
        }
        let best = answer.and_then(|r| steps.iter().find(|s| s.rate == Some(r) && s.passed));
        let answer = best.map(|s| Answer {
            rate: s.rate.unwrap_or_default(),
            step: s.step,
            achieved_rps: s.achieved_rps,
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            server: s.server.clone(),
        });
        let info = &self.probe.info;
        Ok(FindMaxDoc {
            pelt_version: env!("CARGO_PKG_VERSION"),
            target: info.target.clone(),
            method: info.method.clone(),
            slo: s.slo.iter().map(|e| e.text().to_string()).collect(),
            rate_held: RATE_HELD,
            precision: s.precision,
            step_duration_s: self.step_duration_s(),
            warmup_s: self.warmup_s(),
            connections: info.connections,
            max_connections: self.base.max_connections.unwrap_or(self.base.connections),
            interrupted: stop.load(Ordering::Relaxed),
            steps,
            answer,
        })
    }
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
