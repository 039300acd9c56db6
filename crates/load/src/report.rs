//! A finished run as a [`Report`], built in one place for every front end.

use crate::fmt;
use crate::prepare::Prepared;
use pelt_engine::RunResult;
use pelt_stats::{LatencyFrom, OpenLoopReport, Report, WarmupReport, LATE_THRESHOLD_US};

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
        report.started_unix_ms = result
            .started_at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        if let Some(h) = report.histograms.as_mut() {
            if p.config.rate.is_some() {
                h.service_time_us = Some(result.stats.service.clone());
                h.lag_us = Some(result.stats.lag.clone());
            }
            if p.info.tls.is_some() {
                h.handshake_us = Some(result.stats.handshake.clone());
            }
            h.warmup_latency_us = result.warmup.as_ref().map(|w| w.latency.clone());
        }
        let names = match (&p.config.targets, &p.config.feed) {
            (Some(set), _) => Some(set.names()),
            (None, Some(_)) => Some(&p.config.names[..]),
            (None, None) => None,
        };
        if let Some(feed) = &p.config.feed {
            let what = match &p.config.replay {
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
        if let (Some(run), Some(counts)) = (&p.config.scenario, &result.scenario) {
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
        report.warmup = result
            .warmup
            .as_ref()
            .map(|w| WarmupReport::new(w, p.config.warmup.as_secs_f64()));
        if p.config.rate.is_some() {
            report.latency_from = LatencyFrom::Due;
            if let Some(r) = &p.config.replay {
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
            // The batch window's wait is chosen, not a shortage: the warning starts past it.
            let limit = LATE_THRESHOLD_US + p.config.batch_window.as_micros() as u64;
            if open.lag_us.p99_us > limit {
                let (free, raise) = match p.config.scenario {
                    Some(_) => ("user", "--max-users"),
                    None => ("connection", "--max-connections"),
                };
                report.notes.push(format!(
                    "pelt's own lag p99 was {} (over {}): requests started late because no \
                     {free} was free or pelt was short of CPU, so pelt, not the server, limited \
                     this test; raise -c or {raise}, or lower --rate",
                    fmt::latency(open.lag_us.p99_us as f64),
                    fmt::latency(limit as f64),
                ));
            }
            if open.backlog_at_end > 0 {
                let (what, busy) = match p.config.scenario {
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
        report.resources = p.resources(&report);
        report.thresholds = p.expect.iter().map(|e| e.check(&report)).collect();
        report
    }

    /// `--monitor`: the measured seconds' resources summed up, with the verdict (pelt's own
    /// lag past the late threshold, in the open loop, counts against pelt).
    pub(crate) fn resources(
        &self,
        report: &pelt_stats::Report,
    ) -> Option<pelt_stats::ResourcesReport> {
        let measured: Vec<&pelt_stats::TimelinePoint> = report
            .timeline
            .iter()
            .filter(|p| !p.warmup && p.resources.is_some())
            .collect();
        if measured.is_empty() {
            return None;
        }
        let samples: Vec<pelt_stats::Sampled> = measured
            .iter()
            .filter_map(|p| p.resources.as_ref().map(|r| (r, p.length_s)))
            .collect();
        let completed = measured.iter().map(|p| p.completed).sum();
        let limit = LATE_THRESHOLD_US + self.config.batch_window.as_micros() as u64;
        let lag = report
            .open_loop
            .as_ref()
            .map(|o| o.lag_us.p99_us)
            .filter(|&p99| p99 > limit);
        let monitored = (self.monitor.as_ref().map(|(_, matched)| matched))
            .or(self.remote_watching.as_ref())
            .cloned();
        Some(pelt_stats::ResourcesReport::new(
            monitored, &samples, completed, lag,
        ))
    }
}
