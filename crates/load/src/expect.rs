//! `--expect` thresholds: `p99<20ms`, `errors<0.1%`, `rps>5000`, `5xx<1%`.
//!
//! An expression is `METRIC OP VALUE` with OP one of `<`, `<=`, `>`, `>=`. Metrics:
//! - latency: `p50`, `p90`, `p99`, `p99.9`, `p99.99`, `max`, `mean`, `min`, with a unit
//!   (`us`, `ms`, `s`); the latency the summary shows (from the due time with --rate);
//! - time to first byte: `ttfb.p99<50ms` (any latency figure, from the same start);
//! - event streams: time to first event `ttft.p99<500ms`, the gaps between events
//!   `gap.p99<50ms` (or `itl.p99`), a stream's time per event `per_event.p50<30ms` (any
//!   latency figure), and `events_per_s>1000`; where the server counted tokens (`usage`), the
//!   time per output token `tpot.p99<50ms` and `output_tokens_per_s>2000`; a run that read no
//!   stream (or no token counts) cannot hold them; with `--goodput`, `goodput>99%` (the share of
//!   requests that ended having met every target, or a count) and `goodput_per_s>10`;
//! - WebSocket: the upgrade time `upgrade.p99<50ms` (any latency figure), sockets held at the
//!   end `ws_held>=10000`, and sockets the server dropped `ws_drops<10` or `ws_drops<1%` (of the
//!   upgrades); a run that upgraded no socket cannot hold them;
//! - gRPC: calls by gRPC status, `status[UNAVAILABLE]<0.1%` or `status[OK]>=99%` (a name, any
//!   case, or a code's number): a count or a share of the requests that ended; a run with no
//!   gRPC call cannot hold them;
//! - `errors`: a count (`errors<10`) or a share of the requests that ended (`errors<0.1%`);
//! - `rps`: completed responses per second (`rps>5000`, `rps>=20k`);
//! - a status class `1xx`..`5xx` or a code such as `503`: a count or a share of the requests
//!   that ended;
//! - with `--monitor`: `server_cpu` and `pelt_cpu` (the mean CPU, as a share of what the
//!   process could use, `server_cpu<80%`, or in cores, `server_cpu<1.5`), `server_rss` (the
//!   peak, in bytes with `KB`, `MB`, `GB` or `KiB`, `MiB`, `GiB`: `server_rss<1GiB`).
//!
//! Parsed before the run (a malformed expression is bad input), checked after it.

use crate::values;
use pelt_stats::{Report, Threshold};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

/// A latency figure of the summary.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Figure {
    P50,
    P90,
    P99,
    P99_9,
    P99_99,
    Max,
    Mean,
    Min,
}

impl Figure {
    fn parse(name: &str) -> Option<Figure> {
        Some(match name {
            "p50" | "median" => Figure::P50,
            "p90" => Figure::P90,
            "p99" => Figure::P99,
            "p99.9" | "p99_9" | "p999" => Figure::P99_9,
            "p99.99" | "p99_99" | "p9999" => Figure::P99_99,
            "max" => Figure::Max,
            "mean" | "avg" => Figure::Mean,
            "min" => Figure::Min,
            _ => return None,
        })
    }

    /// Microseconds.
    fn of(self, l: &pelt_stats::LatencySummary) -> f64 {
        match self {
            Figure::P50 => l.p50_us as f64,
            Figure::P90 => l.p90_us as f64,
            Figure::P99 => l.p99_us as f64,
            Figure::P99_9 => l.p99_9_us as f64,
            Figure::P99_99 => l.p99_99_us as f64,
            Figure::Max => l.max_us as f64,
            Figure::Mean => l.mean_us,
            Figure::Min => l.min_us as f64,
        }
    }
}

/// Which of a run's event-stream histograms a threshold reads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum StreamFigure {
    Ttft,
    Gap,
    PerEvent,
    /// Time per output token, from the server's token counts (`streams.tokens`).
    Tpot,
}

impl StreamFigure {
    /// `itl.` (inter-token latency, vLLM's word) is `gap.`.
    const PREFIXES: [(&'static str, StreamFigure); 5] = [
        ("ttft.", StreamFigure::Ttft),
        ("gap.", StreamFigure::Gap),
        ("itl.", StreamFigure::Gap),
        ("per_event.", StreamFigure::PerEvent),
        ("tpot.", StreamFigure::Tpot),
    ];

    /// The figure, if the run has it (`tpot` only where a server counted tokens).
    fn of(self, s: &pelt_stats::StreamsReport) -> Option<&pelt_stats::LatencySummary> {
        match self {
            StreamFigure::Ttft => Some(&s.ttft_us),
            StreamFigure::Gap => Some(&s.gap_us),
            StreamFigure::PerEvent => Some(&s.time_per_event_us),
            StreamFigure::Tpot => s.tokens.as_ref().map(|t| &t.tpot_us),
        }
    }
}

impl Metric {
    /// Its value is a rate (`rps>5000`, `events_per_s>100`), never a share.
    fn is_rate(&self) -> bool {
        matches!(
            self,
            Metric::Rps
                | Metric::EventsPerSecond
                | Metric::OutputTokensPerSecond
                | Metric::GoodputPerSecond
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Metric {
    Latency(Figure),
    /// Time to first byte (`ttfb.p99`).
    Ttfb(Figure),
    /// WebSocket: the upgrade's time (`upgrade.p99`).
    Upgrade(Figure),
    /// WebSocket: sockets held at the end, and sockets the server dropped.
    WsHeld,
    WsDrops,
    /// Event streams: time to first event, gaps, time per event (`ttft.p99`, `gap.p99`,
    /// `per_event.p99`).
    Stream(StreamFigure, Figure),
    /// Event streams: events per second over the run.
    EventsPerSecond,
    /// Event streams: output tokens per second over the run, as the server counted them.
    OutputTokensPerSecond,
    /// Goodput (`--goodput`): the requests that met every target, a count or a share of those
    /// that ended; and their rate.
    Goodput,
    GoodputPerSecond,
    Errors,
    Rps,
    /// A status class (1..=5) or an exact code (100..=999).
    Class(u16),
    Code(u16),
    /// gRPC: calls with this status (`status[UNAVAILABLE]`).
    Grpc(u32),
    /// Scenarios: one step's latency figure (`step[login].p99`), by the step's name.
    Step(String, Figure),
    /// Scenarios: checks passed, of all checks made (`checks>99.9%`).
    Checks,
    /// Scenarios: iterations failed, of those that ended (`iterations_failed<0.1%`).
    IterationsFailed,
    /// `--monitor`: the server's and pelt's mean CPU, and the server's peak RSS.
    ServerCpu,
    PeltCpu,
    ServerRss,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    /// Latency in microseconds per unit of the expression.
    Time(f64, &'static str),
    Count,
    Percent,
    PerSecond,
    /// CPU in cores.
    Cores,
    /// Bytes per unit of the expression.
    Bytes(f64, &'static str),
}

/// One parsed `--expect` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    text: String,
    metric: Metric,
    op: Op,
    limit: f64,
    unit: Unit,
}

const HELP: &str = "expected METRIC<VALUE or METRIC>VALUE, e.g. p99<20ms, errors<0.1%, rps>5000, \
                    5xx<1% (metrics: p50 p90 p99 p99.9 p99.99 max mean min, the same of ttfb as \
                    ttfb.p99, errors rps 1xx..5xx or a status code; with event streams ttft.p99, \
                    gap.p99 (itl.p99), per_event.p99, events_per_s, tpot.p99, output_tokens_per_s, with --goodput goodput goodput_per_s; with ws:// upgrade.p99, ws_held, ws_drops; with grpc:// status[UNAVAILABLE]; with --scenario also step[NAME].p99, checks, \
                    iterations_failed; with --monitor server_cpu, pelt_cpu, server_rss)";

/// A latency threshold's value and unit: `20ms`, `500us`, `1.5s`.
fn time_value(value: &str) -> Result<(f64, Unit), String> {
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("latency needs a unit: {value}ms, {value}us or {value}s"))?;
    let (num, unit) = value.split_at(split);
    let unit = match unit {
        "us" | "µs" => Unit::Time(1.0, "us"),
        "ms" => Unit::Time(1e3, "ms"),
        "s" => Unit::Time(1e6, "s"),
        _ => return Err(format!("unknown latency unit '{unit}' (use us, ms or s)")),
    };
    let n = values::decimal(num).ok_or_else(|| format!("'{num}' is not a number"))?;
    Ok((n, unit))
}

/// The latency targets of `--goodput` (`ttft<500ms`, `tpot<=50ms`, `e2e<10s`; `itl` is `tpot`, as
/// AIPerf's per-request inter-token latency is): each the most a good request may take,
/// microseconds, inclusive. A figure given twice keeps its last target.
pub fn slo(texts: &[String]) -> Result<pelt_stats::Slo, String> {
    const SLO_HELP: &str = "expected ttft<TIME, tpot<TIME (itl<TIME) or e2e<TIME, e.g. ttft<500ms";
    let mut slo = pelt_stats::Slo::default();
    for text in texts {
        let t = text.trim();
        let at = t.find('<').ok_or_else(|| format!("{t}: {SLO_HELP}"))?;
        let (name, rest) = (t[..at].trim().to_ascii_lowercase(), &t[at + 1..]);
        let (inclusive, value) = match rest.strip_prefix('=') {
            Some(v) => (true, v.trim()),
            None => (false, rest.trim()),
        };
        let (n, unit) = time_value(value).map_err(|e| format!("{t}: {e}"))?;
        let Unit::Time(per_unit, _) = unit else {
            unreachable!("time_value gives times")
        };
        let us = n * per_unit;
        if !(1.0..1e15).contains(&us) {
            return Err(format!("{t}: a target is at least 1us"));
        }
        // `<500ms` is at most 499,999 us; `<=500ms` at most 500,000.
        let most = if inclusive {
            us.floor() as u64
        } else {
            us.ceil() as u64 - 1
        };
        let figure = match name.as_str() {
            "ttft" => &mut slo.ttft_us,
            "tpot" | "itl" => &mut slo.tpot_us,
            "e2e" | "latency" => &mut slo.e2e_us,
            _ => return Err(format!("{t}: unknown figure '{name}'; {SLO_HELP}")),
        };
        *figure = Some(most);
    }
    Ok(slo)
}

/// Parses one expression; the error names what is wrong (the caller adds the flag and value).
pub fn parse(text: &str) -> Result<Expectation, String> {
    let t = text.trim();
    let at = t.find(['<', '>']).ok_or_else(|| HELP.to_string())?;
    let (name, rest) = (t[..at].trim(), &t[at..]);
    let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
        (Op::Le, v)
    } else if let Some(v) = rest.strip_prefix(">=") {
        (Op::Ge, v)
    } else if let Some(v) = rest.strip_prefix('<') {
        (Op::Lt, v)
    } else {
        (Op::Gt, &rest[1..])
    };
    let value = value.trim();
    if name.is_empty() || value.is_empty() {
        return Err(HELP.into());
    }
    let lower = name.to_ascii_lowercase();
    // A scenario step's figure: step[NAME].FIGURE (the name as written, any case).
    let step = name
        .strip_prefix("step[")
        .and_then(|r| r.rsplit_once("]."))
        .map(|(step, figure)| (step.to_string(), figure.to_ascii_lowercase()));
    // An event stream's figure: ttft.p99, gap.p99, per_event.p99.
    let stream = StreamFigure::PREFIXES
        .iter()
        .find_map(|(prefix, which)| Some((*which, lower.strip_prefix(prefix)?)));
    if let Some((which, f)) = stream {
        let figure = Figure::parse(f).ok_or_else(|| {
            format!(
                "unknown figure '{f}' for {}; {HELP}",
                &lower[..lower.len() - f.len() - 1]
            )
        })?;
        let (limit, unit) = time_value(value)?;
        return Ok(Expectation {
            text: t.to_string(),
            metric: Metric::Stream(which, figure),
            op,
            limit,
            unit,
        });
    }
    // A latency figure: of a step, of the time to first byte, of the upgrades, or the run's.
    let of = |what: &str, f: &str| {
        Figure::parse(f).ok_or_else(|| format!("unknown figure '{f}' for {what}; {HELP}"))
    };
    let latency = if let Some((s, f)) = &step {
        Some(Metric::Step(s.clone(), of(&format!("step[{s}]"), f)?))
    } else if let Some(f) = lower.strip_prefix("ttfb.") {
        Some(Metric::Ttfb(of("ttfb", f)?))
    } else if let Some(f) = lower.strip_prefix("upgrade.") {
        Some(Metric::Upgrade(of("upgrade", f)?))
    } else {
        Figure::parse(&lower).map(Metric::Latency)
    };
    let (metric, limit, unit) = if let Some(metric) = latency {
        let (n, unit) = time_value(value)?;
        (metric, n, unit)
    } else {
        counted(name, &lower, value)?
    };
    Ok(Expectation {
        text: t.to_string(),
        metric,
        op,
        limit,
        unit,
    })
}

/// A metric that is not a latency (`errors`, `rps`, `5xx`, `server_cpu`, ...) and its value:
/// a count, a share, a rate, cores or bytes.
fn counted(name: &str, lower: &str, value: &str) -> Result<(Metric, f64, Unit), String> {
    let grpc = lower
        .strip_prefix("status[")
        .and_then(|rest| rest.strip_suffix(']'));
    let metric = match lower {
        _ if grpc.is_some() => {
            let inner = grpc.unwrap_or_default();
            let code = pelt_codec::grpc::code_of(inner).ok_or_else(|| {
                format!(
                    "status[{inner}]: not a gRPC status (OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, \
                     DEADLINE_EXCEEDED, ..., UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED, or a number)"
                )
            })?;
            Metric::Grpc(code)
        }
        "errors" | "error" => Metric::Errors,
        "rps" => Metric::Rps,
        "events_per_s" => Metric::EventsPerSecond,
        "output_tokens_per_s" => Metric::OutputTokensPerSecond,
        "goodput" => Metric::Goodput,
        "goodput_per_s" => Metric::GoodputPerSecond,
        "checks" => Metric::Checks,
        "iterations_failed" => Metric::IterationsFailed,
        "server_cpu" => Metric::ServerCpu,
        "pelt_cpu" => Metric::PeltCpu,
        "server_rss" => Metric::ServerRss,
        "ws_held" => Metric::WsHeld,
        "ws_drops" => Metric::WsDrops,
        c if c.len() == 3 && c.ends_with("xx") && (b'1'..=b'5').contains(&c.as_bytes()[0]) => {
            Metric::Class(u16::from(c.as_bytes()[0] - b'0'))
        }
        c => match values::status(c) {
            Ok(code) if c.chars().all(|ch| ch.is_ascii_digit()) => Metric::Code(code),
            _ => return Err(format!("unknown metric '{name}'; {HELP}")),
        },
    };
    let (num, unit) = match value.strip_suffix('%') {
        _ if metric == Metric::ServerRss => bytes(value)?,
        None if matches!(metric, Metric::ServerCpu | Metric::PeltCpu) => (value, Unit::Cores),
        Some(p) if !metric.is_rate() => (p.trim(), Unit::Percent),
        Some(_) => return Err(format!("{lower} is a rate, not a share: {lower}>5000")),
        None if metric.is_rate() => (value.strip_suffix("/s").unwrap_or(value), Unit::PerSecond),
        None => (value, Unit::Count),
    };
    let n = values::decimal(num).ok_or_else(|| format!("'{num}' is not a number"))?;
    if unit == Unit::Percent && n > 100.0 {
        return Err(format!("{n}% is more than 100%"));
    }
    Ok((metric, n, unit))
}

/// A size's number and unit: `1GiB`, `512MB`, `100000` (bytes).
fn bytes(value: &str) -> Result<(&str, Unit), String> {
    const UNITS: [(&str, f64); 7] = [
        ("GiB", 1073741824.0),
        ("MiB", 1048576.0),
        ("KiB", 1024.0),
        ("GB", 1e9),
        ("MB", 1e6),
        ("KB", 1e3),
        ("B", 1.0),
    ];
    for (name, per) in UNITS {
        if let Some(num) = value.strip_suffix(name) {
            return Ok((num.trim(), Unit::Bytes(per, name)));
        }
    }
    if value.ends_with(|c: char| c.is_ascii_alphabetic() || c == '%') {
        return Err(format!(
            "a size is bytes, KB, MB, GB, KiB, MiB or GiB: {value} is none"
        ));
    }
    Ok((value, Unit::Bytes(1.0, "B")))
}

impl Expectation {
    /// The expression as the user wrote it (trimmed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The run's figure this expectation reads, in its unit; NaN where the run cannot say
    /// (no response, no scenario, not sampled).
    fn actual(&self, r: &Report) -> f64 {
        let ended = (r.requests.completed + r.requests.errors) as f64;
        let share = |n: u64| {
            if ended > 0.0 {
                n as f64 * 100.0 / ended
            } else {
                0.0
            }
        };
        let scenario = r.scenario.as_ref();
        // A WebSocket run that upgraded a socket.
        let ws = r.websocket.as_ref().filter(|w| w.upgrades > 0);
        let resources = r.resources.as_ref();
        let goodput = r.event_streams.as_ref().and_then(|s| s.goodput.as_ref());
        let server = resources.and_then(|r| r.server.as_ref());
        let (checks_passed, checks_made) = scenario.map_or((0, 0), |s| {
            let passed: u64 = s.checks.iter().map(|c| c.passed).sum();
            (
                passed,
                passed + s.checks.iter().map(|c| c.failed).sum::<u64>(),
            )
        });
        let ended_iterations = scenario.map_or(0, |s| s.iterations.completed + s.iterations.failed);
        let count = match &self.metric {
            Metric::Checks => checks_passed,
            Metric::IterationsFailed => scenario.map_or(0, |s| s.iterations.failed),
            Metric::Errors => r.requests.errors,
            Metric::Class(c) => r
                .status
                .iter()
                .filter(|(code, _)| code.starts_with(char::from(b'0' + *c as u8)))
                .map(|(_, n)| n)
                .sum(),
            Metric::Code(code) => r.status.get(&code.to_string()).copied().unwrap_or(0),
            Metric::Grpc(code) => r.grpc.as_ref().map_or(0, |g| g.count(*code)),
            Metric::WsHeld => ws.map_or(0, |w| w.held),
            Metric::WsDrops => ws.map_or(0, |w| w.drops),
            _ => 0,
        };
        let part = |n: u64, of: u64| {
            if of > 0 {
                n as f64 * 100.0 / of as f64
            } else {
                f64::NAN
            }
        };
        match (&self.metric, self.unit) {
            // No response, no latency: a latency objective cannot be said to hold.
            (Metric::Latency(_) | Metric::Ttfb(_), _) if r.requests.completed == 0 => f64::NAN,
            (Metric::Latency(f), Unit::Time(per_unit, _)) => f.of(&r.latency_us) / per_unit,
            // A result from before pelt measured it has none.
            (Metric::Ttfb(f), Unit::Time(per_unit, _)) => {
                r.ttfb_us.as_ref().map_or(f64::NAN, |t| f.of(t) / per_unit)
            }
            // A step that is not in the run, or got no response, has no latency.
            (Metric::Step(name, f), Unit::Time(per_unit, _)) => r
                .targets
                .iter()
                .find(|t| t.name == *name && t.completed > 0)
                .map_or(f64::NAN, |t| f.of(&t.latency_us) / per_unit),
            // Without a scenario (or with nothing checked yet) these cannot be said to hold.
            (Metric::Checks | Metric::IterationsFailed, _) if scenario.is_none() => f64::NAN,
            (Metric::Checks, Unit::Percent) => part(checks_passed, checks_made),
            (Metric::IterationsFailed, Unit::Percent) => part(count, ended_iterations),
            (Metric::Rps, _) => r.rps,
            // No gRPC call: a status share cannot be said to hold.
            (Metric::Grpc(_), _) if r.grpc.as_ref().is_none_or(|g| g.calls == 0) => f64::NAN,
            (Metric::Upgrade(_) | Metric::WsHeld | Metric::WsDrops, _) if ws.is_none() => f64::NAN,
            (Metric::Upgrade(f), Unit::Time(per_unit, _)) => {
                ws.map_or(f64::NAN, |w| f.of(&w.upgrade_us) / per_unit)
            }
            (Metric::WsDrops, Unit::Percent) => part(count, ws.map_or(0, |w| w.upgrades)),
            // A run that read no stream (or no event yet) cannot be said to hold these.
            (Metric::Stream(which, f), Unit::Time(per_unit, _)) => r
                .event_streams
                .as_ref()
                .filter(|s| s.events > 0)
                .and_then(|s| which.of(s))
                .map_or(f64::NAN, |l| f.of(l) / per_unit),
            (Metric::EventsPerSecond, _) => r
                .event_streams
                .as_ref()
                .map_or(f64::NAN, |s| s.events_per_s),
            (Metric::OutputTokensPerSecond, _) => r
                .event_streams
                .as_ref()
                .and_then(|s| s.tokens.as_ref())
                .map_or(f64::NAN, |t| t.output_per_s),
            // No --goodput, or no stream judged: goodput cannot be said to hold.
            (Metric::Goodput | Metric::GoodputPerSecond, _) if goodput.is_none() => f64::NAN,
            (Metric::Goodput, Unit::Percent) => goodput.map_or(f64::NAN, |g| g.share),
            (Metric::Goodput, _) => goodput.map_or(f64::NAN, |g| g.met as f64),
            (Metric::GoodputPerSecond, _) => goodput.map_or(f64::NAN, |g| g.per_s),
            // Not sampled (no --monitor, or no second sampled): cannot be said to hold.
            (Metric::ServerCpu | Metric::ServerRss, _) if server.is_none() => f64::NAN,
            (Metric::PeltCpu, _) if resources.is_none() => f64::NAN,
            (Metric::ServerCpu | Metric::PeltCpu, Unit::Percent) => {
                let p = if self.metric == Metric::ServerCpu {
                    server
                } else {
                    resources.map(|r| &r.pelt)
                };
                p.map_or(f64::NAN, |p| p.busy_share() * 100.0)
            }
            (Metric::ServerCpu, _) => server.map_or(f64::NAN, |s| s.cpu_mean),
            (Metric::PeltCpu, _) => resources.map_or(f64::NAN, |r| r.pelt.cpu_mean),
            (Metric::ServerRss, Unit::Bytes(per, _)) => {
                server.map_or(f64::NAN, |s| s.rss_peak_bytes as f64 / per)
            }
            (_, Unit::Percent) => share(count),
            _ => count as f64,
        }
    }

    /// Checks the expectation against a finished run.
    pub fn check(&self, r: &Report) -> Threshold {
        let actual = self.actual(r);
        let passed = match self.op {
            Op::Lt => actual < self.limit,
            Op::Le => actual <= self.limit,
            Op::Gt => actual > self.limit,
            Op::Ge => actual >= self.limit,
        };
        let unit = match self.unit {
            Unit::Time(_, name) => name,
            Unit::Count => "count",
            Unit::Percent => "%",
            Unit::PerSecond => "/s",
            Unit::Cores => "cores",
            Unit::Bytes(_, name) => name,
        };
        Threshold {
            expect: self.text.clone(),
            actual: if actual.is_nan() { None } else { Some(actual) },
            unit: unit.to_string(),
            passed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_targets_are_the_most_a_good_request_may_take() {
        let texts = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let s = slo(&texts(&["ttft<500ms", "itl<=50ms", "e2e < 1.5s"])).unwrap();
        assert_eq!(
            (s.ttft_us, s.tpot_us, s.e2e_us),
            (Some(499_999), Some(50_000), Some(1_499_999))
        );
        // A stream is judged on each: the first event, the time per token, the whole.
        assert!(s.met(Some(499_999), Some(50_000), 1_499_999));
        assert!(!s.met(Some(500_000), Some(1), 1));
        assert!(!s.met(None, None, 1), "no event: no time to first token");
        assert!(
            s.met(Some(1), None, 1),
            "one token: no time per token to miss"
        );
        assert!(!s.met(Some(1), Some(50_001), 1));
        assert!(!s.met(Some(1), Some(1), 1_500_000));
        assert!(pelt_stats::Slo::default().met(None, None, u64::MAX));
        for (bad, says) in [
            ("ttft>1s", "expected ttft<TIME"),
            ("ttft<5", "latency needs a unit"),
            ("speed<1s", "unknown figure 'speed'"),
            ("e2e<0ms", "at least 1us"),
        ] {
            let e = slo(&texts(&[bad])).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn well_formed_expressions_parse() {
        for t in [
            "p99<20ms",
            "p50 <= 500us",
            "p99.9<1s",
            "p99_99<2s",
            "max<1.5s",
            "mean<3ms",
            "errors<0.1%",
            "errors<=10",
            "rps>5000",
            "rps>=20k",
            "5xx<1%",
            "2xx>99%",
            "404<=3",
            "step[login].p99<50ms",
            "ttfb.p99<50ms",
            "TTFB.p50 <= 2ms",
            "upgrade.p99<50ms",
            "ws_held>=10000",
            "ws_drops<1%",
            "ttft.p99<500ms",
            "gap.p50<30ms",
            "per_event.max<=1s",
            "events_per_s>1k",
            "step[GET /items].max<=1s",
            "checks>99.9%",
            "iterations_failed<0.1%",
            "server_cpu<80%",
            "server_cpu<1.5",
            "pelt_cpu<=90%",
            "server_rss<1GiB",
            "server_rss<=512MB",
            "server_rss<100000",
            "iterations_failed<=3",
            "status[UNAVAILABLE]<0.1%",
            "status[ok]>=99%",
            "status[14]<=3",
        ] {
            assert!(parse(t).is_ok(), "{t}: {:?}", parse(t));
        }
    }

    #[test]
    fn malformed_expressions_say_why() {
        for (t, says) in [
            ("p99", "expected METRIC<VALUE"),
            ("p99<20", "latency needs a unit"),
            ("p99<20xs", "unknown latency unit"),
            ("p98<20ms", "unknown metric"),
            ("errors<abc", "not a number"),
            ("errors<-1", "not a number"),
            ("rps>5%", "rps is a rate"),
            ("errors<150%", "more than 100%"),
            ("6xx<1%", "unknown metric"),
            ("<5", "expected METRIC"),
            ("p99<", "expected METRIC"),
            (
                "step[login].p98<5ms",
                "unknown figure 'p98' for step[login]",
            ),
            ("step[login].p99<5", "latency needs a unit"),
            ("ttfb.p98<5ms", "unknown figure 'p98' for ttfb"),
            ("upgrade.p98<5ms", "unknown figure 'p98' for upgrade"),
            ("ttfb.p99<5", "latency needs a unit"),
            ("ttft.p98<5ms", "unknown figure 'p98' for ttft"),
            ("gap.p99<5", "latency needs a unit"),
            ("events_per_s>5%", "events_per_s is a rate"),
            ("status[UNAVAIL]<1%", "status[unavail]: not a gRPC status"),
        ] {
            let e = parse(t).unwrap_err();
            assert!(e.contains(says), "{t}: {e}");
        }
    }
}
