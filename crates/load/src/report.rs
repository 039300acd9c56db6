//! A finished run as a [`Report`], built in one place for every front end.

use crate::fmt;
use crate::prepare::Prepared;
use pelt_engine::RunResult;
use pelt_stats::{
    Bottleneck, LatencyFrom, Load, OpenLoopReport, Report, WarmupReport, LATE_THRESHOLD_US,
    SATURATED,
};

impl Prepared {
    /// The result document of this run's `result`: the figures, the histograms, the notes a
    /// reader needs (coordinated omission, pelt's own lag, the backlog, `--insecure`) and the
    /// thresholds checked.
    pub fn report(&self, result: &RunResult) -> Report {
        let p = self;
        let mut report = Report::new(
            p.info.clone(),
            &result.stats,
            result.measured.as_secs_f64(),
            result.stopped_by,
        );
        report.timeline = result.timeline.clone();
        report.changes = result.changes.clone();
        report.started_unix_ms = result
            .started_at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        p.histograms(&mut report, result);
        p.targets(&mut report, result);
        p.scenario(&mut report, result);
        report.warmup = result
            .warmup
            .as_ref()
            .map(|w| WarmupReport::new(w, p.config.warmup.as_secs_f64()));
        p.load_model(&mut report, result);
        p.tls(&mut report, result);
        p.goodput(&mut report);
        report.script = p.script_report();
        report.resources = p.resources(&report);
        report.notes.extend(queue_note(&report));
        report.thresholds = p.expect.iter().map(|e| e.check(&report)).collect();
        report
    }

    /// Goodput (`--goodput`): its targets as given, judged over every request that ended (a failed
    /// one met nothing).
    fn goodput(&self, report: &mut Report) {
        if self.slo.is_empty() {
            return;
        }
        let ended = report.requests.completed + report.requests.errors;
        match report
            .event_streams
            .as_mut()
            .and_then(|s| s.goodput.as_mut())
        {
            Some(g) => {
                g.targets = self.slo.clone();
                g.over(ended);
            }
            None => report.notes.push(format!(
                "--goodput {}: no response was read as a stream, so none met the targets",
                self.slo.join(",")
            )),
        }
    }

    /// The histograms beside the main one: service time and lag, handshakes, the warm-up.
    fn histograms(&self, report: &mut Report, result: &RunResult) {
        let p = self;
        if let Some(h) = report.histograms.as_mut() {
            if p.config.load.is_open() {
                h.service_time_us = Some(result.stats.service.clone());
                h.lag_us = Some(result.stats.lag.clone());
            }
            if p.info.tls.is_some() {
                h.handshake_us = Some(result.stats.handshake.clone());
            }
            h.warmup_latency_us = result.warmup.as_ref().map(|w| w.latency.clone());
        }
    }

    /// Per-target figures (and the notes on a file read as the run went, or too many names).
    fn targets(&self, report: &mut Report, result: &RunResult) {
        let p = self;
        // A script's steps are named as the run goes: their names are the maker's.
        let steps = p.config.script().map(|maker| maker.names());
        let names = match (p.config.targets(), p.config.feed(), &steps) {
            (Some(set), _, _) => Some(set.names()),
            (None, Some(_), _) => Some(p.config.names()),
            (None, None, Some(steps)) => Some(&steps[..]),
            (None, None, None) => None,
        };
        if let Some(feed) = p.config.feed() {
            let what = match p.config.load.replay() {
                Some(_) => "the recording",
                None => "the targets file",
            };
            report.notes.push(format!(
                "{what} was read as the run went, {} requests ahead at most",
                pelt_engine::FEED_BLOCK * pelt_engine::FEED_BLOCKS
            ));
            if let Some(e) = feed.error() {
                report
                    .notes
                    .push(format!("reading {what} stopped early: {e}"));
            }
        }
        if let Some(names) = names {
            report.targets = result
                .stats
                .targets
                .iter()
                .zip(names)
                .zip(p.recorded.iter().chain(std::iter::repeat(&None)))
                .map(|((t, name), recorded)| {
                    let mut r = t.report(name);
                    r.recorded_us = recorded.as_ref().map(|h| h.summary());
                    r.recorded_histogram.clone_from(recorded);
                    r
                })
                .collect();
            if names.len() > pelt_stats::MAX_TARGET_NAMES {
                report.notes.push(format!(
                    "more than {} target names: the first {} have their own figures, the rest \
                     are counted together as \"{}\"",
                    pelt_stats::MAX_TARGET_NAMES,
                    pelt_stats::MAX_TARGET_NAMES,
                    pelt_stats::OTHER
                ));
            }
        }
    }

    /// A scenario run: iterations, checks, captures.
    fn scenario(&self, report: &mut Report, result: &RunResult) {
        let p = self;
        if let (Some(run), Some(counts)) = (p.config.scenario(), &result.scenario) {
            report.scenario = Some(pelt_stats::ScenarioReport {
                file: p
                    .info
                    .request_set
                    .as_ref()
                    .and_then(|s| s.file.clone())
                    .unwrap_or_default(),
                iterations: pelt_stats::IterationsReport {
                    started: counts.started,
                    completed: counts.completed,
                    failed: counts.failed,
                    duration_us: counts.duration.summary(),
                },
                checks: run
                    .program
                    .checks
                    .iter()
                    .zip(counts.checks.iter().chain(std::iter::repeat(&[0, 0])))
                    .map(|(name, [passed, failed])| pelt_stats::CheckReport {
                        name: name.clone(),
                        passed: *passed,
                        failed: *failed,
                    })
                    .collect(),
                captures: run
                    .program
                    .captures
                    .iter()
                    .zip(counts.captures.iter().chain(std::iter::repeat(&[0, 0])))
                    .map(|(name, [found, missing])| pelt_stats::CaptureReport {
                        name: name.clone(),
                        found: *found,
                        missing: *missing,
                    })
                    .collect(),
            });
            if let Some(h) = &mut report.histograms {
                h.iteration_us = Some(counts.duration.clone());
            }
        }
    }

    /// Open or closed loop: where latency counts from, the open loop's figures and notes.
    fn load_model(&self, report: &mut Report, result: &RunResult) {
        let p = self;
        if p.config.load.is_open() {
            report.latency_from = LatencyFrom::Due;
            if let Some(r) = p.config.load.replay() {
                let file = p.info.request_set.as_ref().and_then(|s| s.file.clone());
                report.notes.push(format!(
                    "replay of {} recorded requests{}{} at {}x{}: each was due at its recorded \
                     time over the speed, and its latency counts from then",
                    fmt::thousands(r.len() as u64),
                    if file.is_some() { " from " } else { "" },
                    file.unwrap_or_default(),
                    r.speed(),
                    if r.laps() { ", looped" } else { "" },
                ));
            }
            let open = OpenLoopReport::new(&result.stats, result.backlog_at_end);
            if open.backlog_at_end > 0 {
                let (what, busy) = match p.config.scenario() {
                    Some(_) => ("iterations", "user"),
                    None => ("requests", "connection"),
                };
                report.notes.push(format!(
                    "{} {what} were due but had not started when the run ended (every \
                     {busy} was busy); they are in no count above",
                    fmt::thousands(open.backlog_at_end)
                ));
            }
            report.open_loop = Some(open);
        } else if report.requests.sent > 0 {
            // (A WebSocket run that holds sockets sends no message: no latency to qualify.)
            report.notes.push(
                "closed loop: latency is measured from each request's actual send, so a server \
                 stall delays the requests queued behind it without showing in their latency \
                 (coordinated omission); use --rate to measure from when each request was due"
                    .into(),
            );
        }
    }

    /// HTTPS: handshakes, a note when the certificate was not verified, and one when the
    /// server offered HTTP/3 that the run did not use.
    fn tls(&self, report: &mut Report, result: &RunResult) {
        let p = self;
        if result.stats.alt_svc_h3 {
            report.notes.push(
                "the server advertises HTTP/3 (Alt-Svc: h3): --http3 measures it over QUIC, \
                 beside this run's HTTP/1.1 or HTTP/2"
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
    }

    /// `--monitor`: the measured seconds' resources summed up, with the verdict.
    pub(crate) fn resources(
        &self,
        report: &pelt_stats::Report,
    ) -> Option<pelt_stats::ResourcesReport> {
        let monitored = (self.monitor.as_ref().map(|(_, matched)| matched))
            .or(self.remote_watching.as_ref())
            .cloned();
        pelt_stats::ResourcesReport::of(report, monitored)
    }
}

/// Open loop: requests that queued in pelt ([`Load::queued`]), and who held them: the
/// verdict's party with `--monitor`, else what pelt's own figures tell (every connection
/// busy, or connections free and pelt short of CPU).
fn queue_note(report: &Report) -> Option<String> {
    let load = Load::of(report);
    let late = load.queued()?;
    let (place, raise) = if load.users {
        ("user", "--max-users")
    } else {
        ("connection", "--max-connections")
    };
    let cap = load.cap_text().map_or(String::new(), |c| format!(" ({c})"));
    let why = match report.resources.as_ref().map(|r| &r.verdict) {
        Some(v) => match v.bottleneck {
            Bottleneck::ServerCpu => format!(
                "they waited for {place}s held by the server, which was at its CPU limit; the \
                 latency from the due time includes that wait, as it should, and more \
                 {place}s would move the queue into the server (pelt find-max finds the rate \
                 it serves in time)"
            ),
            Bottleneck::Connections => {
                format!("every {place} was busy{cap}; raise -c or {raise}, or lower --rate")
            }
            Bottleneck::Pelt => "pelt, not the server, limited this test (see Bottleneck)".into(),
            _ => format!("see Bottleneck: {}", v.headline()),
        },
        None => match load.busy() {
            Some(b) if b < SATURATED => format!(
                "pelt kept only {} of its {place}s busy, so it was short of CPU: add threads \
                 (-t), or --monitor to see",
                fmt::share(b)
            ),
            _ => format!(
                "every {place} was busy{cap}: the server's CPU or its latency held them \
                 (--monitor tells which); raise -c or {raise} if the server has room, or \
                 lower --rate"
            ),
        },
    };
    Some(format!(
        "requests queued in pelt: {} of the median second's requests started over {} late \
         (lag p99 {}): {why}",
        fmt::share(late),
        fmt::latency(LATE_THRESHOLD_US as f64),
        fmt::latency(load.lag_p99_us as f64),
    ))
}
