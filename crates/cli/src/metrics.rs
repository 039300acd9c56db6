//! `--metrics-listen`: the run's live metrics (`pelt_load::metrics`) served for Prometheus
//! while it runs, and for `--metrics-linger` after, from the seconds the run hands the main
//! thread (never from the per-request path).

use crate::args::MetricsArgs;
use crate::bad;
use anyhow::{anyhow, Result};
use pelt_load::metrics::Metrics;
use pelt_stats::{RunInfo, TimelinePoint};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The Prometheus text format's content type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A run's metrics, and in a fleet each agent's (labelled `agent`).
struct State {
    run: Metrics,
    agents: std::collections::BTreeMap<u32, Metrics>,
    info: RunInfo,
    name: String,
    names: Vec<String>,
}

impl State {
    fn all(&self) -> Vec<&Metrics> {
        std::iter::once(&self.run)
            .chain(self.agents.values())
            .collect()
    }
}

/// Metrics being served or pushed.
pub struct Live {
    metrics: Arc<Mutex<State>>,
    endpoint: Option<pelt_server::TextEndpoint>,
    linger: Duration,
    push: Option<Pusher>,
}

/// Starts serving, before any traffic: an address that cannot be bound is bad input.
pub fn start(a: &MetricsArgs, run: &pelt_load::Prepared) -> Result<Option<Live>> {
    let info = &run.info;
    let names: Vec<String> = run
        .config
        .targets()
        .map_or(Vec::new(), |t| t.names().to_vec());
    if a.metrics_listen.is_none() && a.metrics_push.is_none() {
        if a.metrics_run.is_some() {
            return Err(bad(anyhow!(
                "--metrics-run names the series of --metrics-listen or --metrics-push; give one"
            )));
        }
        return Ok(None);
    }
    let name = a.metrics_run.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!("pelt-{now}")
    });
    let metrics = Arc::new(Mutex::new(State {
        run: Metrics::new(info, &name, &[])
            .with_target_names(&names)
            .with_slo(!run.slo.is_empty()),
        agents: Default::default(),
        info: info.clone(),
        name,
        names,
    }));
    let endpoint = match a.metrics_listen {
        None => None,
        Some(addr) => {
            let m = metrics.clone();
            let text = Arc::new(move || {
                m.lock()
                    .map(|m| pelt_load::metrics::text_of(&m.all()))
                    .unwrap_or_default()
            });
            Some(
                pelt_server::TextEndpoint::start(addr, "/metrics", TEXT_FORMAT, text)
                    .map_err(|e| bad(anyhow!("cannot listen on --metrics-listen {addr}: {e}")))?,
            )
        }
    };
    Ok(Some(Live {
        metrics,
        endpoint,
        linger: a.metrics_linger,
        push: a.metrics_push.clone().map(Pusher::start),
    }))
}

/// Sends remote-write requests from a thread of its own, so a slow receiver never holds up
/// the run's main thread; a request that finds the previous one still going is dropped
/// (the next carries the newer values anyway).
struct Pusher {
    tx: std::sync::mpsc::SyncSender<Vec<u8>>,
    thread: std::thread::JoinHandle<(u64, Option<String>)>,
}

impl Pusher {
    fn start(url: String) -> Pusher {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
        let thread = std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .timeout_global(Some(Duration::from_secs(5)))
                .http_status_as_error(false)
                .build()
                .into();
            let (mut failed, mut first) = (0u64, None);
            for body in rx {
                let sent = agent
                    .post(&url)
                    .header("Content-Encoding", "snappy")
                    .header("Content-Type", "application/x-protobuf")
                    .header("X-Prometheus-Remote-Write-Version", "0.1.0")
                    .header("User-Agent", concat!("pelt/", env!("CARGO_PKG_VERSION")))
                    .send(&body[..]);
                let problem = match sent {
                    Ok(r) if r.status().is_success() => None,
                    Ok(mut r) => {
                        let text = r.body_mut().read_to_string().unwrap_or_default();
                        Some(format!("HTTP {}: {}", r.status(), text.trim()))
                    }
                    Err(e) => Some(e.to_string()),
                };
                if let Some(p) = problem {
                    failed += 1;
                    first.get_or_insert(p);
                }
            }
            (failed, first)
        });
        Pusher { tx, thread }
    }

    fn send(&self, body: Vec<u8>) {
        let _ = self.tx.try_send(body);
    }

    /// Sends the last request (waiting for room), then waits for every send to end.
    fn finish(self, body: Vec<u8>, quiet: bool) {
        let _ = self.tx.send(body);
        drop(self.tx);
        if let Ok((failed, Some(first))) = self.thread.join() {
            if !quiet {
                eprintln!(
                    "pelt: --metrics-push: {failed} of the pushes failed; the first: {first}"
                );
            }
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Live {
    /// Adds one second of the run (and pushes the values, with --metrics-push).
    pub fn add(&self, p: &TimelinePoint) {
        if let Ok(mut m) = self.metrics.lock() {
            let _ = m.run.add(p);
            if let Some(push) = &self.push {
                push.send(pelt_load::metrics::write_request_of(&m.all(), now_ms()));
            }
        }
    }

    /// Adds one second of a fleet's agent `rank` (its own series, labelled `agent`).
    pub fn add_agent(&self, rank: u32, p: &TimelinePoint) {
        if let Ok(mut m) = self.metrics.lock() {
            let State {
                agents,
                info,
                name,
                names,
                ..
            } = &mut *m;
            let agent = agents
                .entry(rank)
                .or_insert_with(|| Metrics::for_agent(info, name, rank).with_target_names(names));
            let _ = agent.add(p);
        }
    }

    /// The run has ended (with `report`, when it has one): pushes the final values, the
    /// verdict among them, and serves them for the linger time (a
    /// Ctrl-C during it ends it), then stops.
    pub fn finish(self, quiet: bool, stop: &AtomicBool, report: Option<&pelt_stats::Report>) {
        let last = self.metrics.lock().map(|mut m| {
            m.run.finish();
            if let Some(r) = report.and_then(|r| r.resources.as_ref()) {
                m.run.set_verdict(&r.verdict);
            }
            m.agents.values_mut().for_each(Metrics::finish);
            pelt_load::metrics::write_request_of(&m.all(), now_ms())
        });
        if let (Some(push), Ok(last)) = (self.push, last) {
            push.finish(last, quiet);
        }
        let Some(endpoint) = self.endpoint else {
            return;
        };
        if !self.linger.is_zero() && !stop.load(Ordering::Relaxed) {
            if !quiet {
                eprintln!(
                    "pelt: the final metrics stay on http://{}/metrics for {:?} (--metrics-linger)",
                    endpoint.addr(),
                    self.linger
                );
            }
            let end = Instant::now() + self.linger;
            while Instant::now() < end && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        endpoint.stop();
    }
}
