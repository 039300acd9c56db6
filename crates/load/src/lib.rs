//! pelt-load: the load-test library behind every front end of pelt (the `pelt` command, and
//! any program that runs a load test).
//!
//! A [`LoadSpec`] says what to do, with the CLI's defaults; [`prepare`] validates it into a
//! [`Prepared`] run (the host resolved once, the request built once, the TLS client set up),
//! or returns a [`SpecError`] whose message is the one line the CLI prints; [`run`] runs it
//! with a stop flag and a per-second progress callback and returns the [`Report`], the
//! document behind pelt's JSON result and summary.
//!
//! ```
//! use pelt_load::{prepare, run, LoadSpec};
//! use std::sync::atomic::AtomicBool;
//!
//! // A target to load: pelt's built-in server on a free port.
//! let server = pelt_server::Server::start(Default::default()).unwrap();
//! let mut spec = LoadSpec::new(format!("http://{}/", server.addr()));
//! spec.connections = 4;
//! spec.requests = Some(1000);
//! let prepared = prepare(&spec).unwrap();
//! let report = run(&prepared, &AtomicBool::new(false), &mut |_second| {});
//! assert_eq!(report.requests.completed, 1000);
//! assert_eq!(server.stop(), 1000);
//!
//! // Bad input never reaches the network: one line that says what is wrong.
//! let err = prepare(&LoadSpec::new("ftp://127.0.0.1/")).err().unwrap();
//! assert!(err.to_string().contains("ftp"), "{err}");
//! ```
//!
//! The modules below are the pieces front ends share: [`values`] parses what users type
//! (`10s`, `20k`, `0.1%`), [`expect`] the thresholds, [`target`] the URL, [`tls`] the
//! client's TLS settings, [`fmt`] the numbers as reports write them.

pub mod access_log;
pub mod expect;
pub mod fleet;
pub mod fmt;
pub mod grpc;
pub mod har;
pub mod metrics;
pub mod monitor;
pub mod options;
mod prepare;
pub mod prompts;
#[cfg(test)]
mod props;
mod replay;
mod report;
pub mod scenario;
pub mod sources;
mod spec;
pub mod study;
pub mod target;
mod template;
pub mod tls;
pub mod values;

pub use pelt_engine::{Arrival, IoBackend, Ramped, Rate, Slice, Stage};
pub use pelt_stats::{Report, TimelinePoint};
pub use prepare::{prepare, wrk_errors, Prepared, SpecError};
pub use sources::{TargetEntry, TargetsFormat, TargetsSource};
pub use spec::{
    Body, IoChoice, LoadSpec, Requests, ScenarioSource, ScriptSource, TargetOrder, TlsSpec,
    TlsVersion,
};

use std::sync::atomic::AtomicBool;

/// The longest a timeline point waits for its second's resources when they are due.
pub(crate) const MONITOR_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Runs a prepared load test until its duration or request count is reached, or `stop` is
/// set (then requests in flight get the spec's grace period), calling `on_second` with each
/// second's figures as the run goes. Returns the report, thresholds checked.
pub fn run(
    prepared: &Prepared,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&TimelinePoint),
) -> Report {
    let remote = prepared
        .remote_monitor
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if prepared.monitor.is_none() && remote.is_none() {
        let result = pelt_engine::run(&prepared.config, stop, &mut |p| on_second(p));
        return prepared.report(&result);
    }
    let watch = prepared.monitor.as_ref().map(|(w, _)| w.clone());
    // `--monitor`: a thread of its own (never a worker) samples at each second since the start,
    // sample k covering second k, and once more at the end (the last, shorter second). Each
    // point takes its second's sample as it is emitted, so the timeline can coarsen old seconds
    // with their resources; a point emitted when its sample is due waits for it (on this
    // thread, a moment); the last points, emitted before the final sample, take theirs after.
    // `--monitor-remote`: another thread takes the remote monitor's samples (the server and its
    // host) as they come; a point waits for its own as long, unless the monitor is lost.
    let start = std::time::Instant::now();
    let samples = monitor::Samples::default();
    let far = monitor::Samples::default();
    let far_writer = std::sync::Mutex::new(None);
    let (far_ended, far_lost) = (AtomicBool::new(false), AtomicBool::new(false));
    let (ended, end) = std::sync::mpsc::channel::<()>();
    let (mut result, lost) = std::thread::scope(|s| {
        let samples = &samples;
        s.spawn(move || {
            let mut sampler = monitor::Sampler::new(watch);
            for k in 0u64.. {
                let due = start + std::time::Duration::from_secs(k + 1);
                let wait = due.saturating_duration_since(std::time::Instant::now());
                let last = end.recv_timeout(wait).is_ok()
                    || matches!(
                        end.try_recv(),
                        Err(std::sync::mpsc::TryRecvError::Disconnected)
                    );
                samples.put(k, sampler.sample());
                if last {
                    break;
                }
            }
        });
        let following = remote.map(|r| {
            let (far, far_writer, far_ended, far_lost) = (&far, &far_writer, &far_ended, &far_lost);
            s.spawn(move || {
                let lost = r.follow(far, fleet::DEFAULT_SILENCE, far_ended, far_writer);
                // Nobody waits for a lost monitor's samples.
                far_lost.store(lost.is_some(), std::sync::atomic::Ordering::Relaxed);
                lost
            })
        });
        let remote_on = following.is_some();
        let mut sampled = |point: &mut TimelinePoint| {
            let due = start + std::time::Duration::from_secs(point.second + 1);
            if std::time::Instant::now() >= due {
                point.resources = samples.take(point.second, MONITOR_WAIT);
                if remote_on && !far_lost.load(std::sync::atomic::Ordering::Relaxed) {
                    let theirs = far.take(point.second, MONITOR_WAIT);
                    monitor::join_remote(&mut point.resources, theirs);
                }
            }
            on_second(point);
        };
        let result = pelt_engine::run(&prepared.config, stop, &mut sampled);
        let _ = ended.send(());
        far_ended.store(true, std::sync::atomic::Ordering::Relaxed);
        fleet::monitor::stop_monitor(&far_writer);
        let lost = following.and_then(|t| t.join().ok().flatten());
        (result, lost)
    });
    for p in result.timeline.iter_mut().filter(|p| p.length_s <= 1.0) {
        if p.resources.is_none() {
            p.resources = samples.take(p.second, std::time::Duration::ZERO);
        }
        if p.resources
            .as_ref()
            .is_some_and(|r| r.server_host.is_none())
        {
            let theirs = far.take(p.second, std::time::Duration::ZERO);
            monitor::join_remote(&mut p.resources, theirs);
        }
    }
    let mut report = prepared.report(&result);
    if let Some(why) = lost {
        if let Some(r) = report.resources.as_mut() {
            r.lost = Some(why.clone());
        }
        report.notes.push(why);
    }
    report
}
