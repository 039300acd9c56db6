//! What a run shows while it goes: the live line on a terminal, and the `--jsonl` stream.
//!
//! Both are fed one merged timeline point per second by the engine, on the main thread; the
//! workers only hand over their per-second counts, so neither touches the hot path.

use crate::output;
use anyhow::{Context, Result};
use pelt_engine::Config;
use pelt_stats::TimelinePoint;
use std::io::{IsTerminal, Write};
use std::path::Path;

/// One line on stderr, rewritten every second.
pub struct LiveView {
    total_s: Option<f64>,
    requests: Option<u64>,
    warmup_s: f64,
    errors: u64,
    ended: u64,
    shown: bool,
    /// With `--stages`: what they move (the line shows the target beside what was reached).
    ramped: Option<pelt_engine::Ramped>,
}

impl LiveView {
    /// A live view, or `None` when stdout or stderr is not a terminal.
    pub fn new(config: &Config) -> Option<LiveView> {
        if !(std::io::stdout().is_terminal() && std::io::stderr().is_terminal()) {
            return None;
        }
        Some(LiveView {
            total_s: config.duration.map(|d| (config.warmup + d).as_secs_f64()),
            requests: config.requests,
            warmup_s: config.warmup.as_secs_f64(),
            errors: 0,
            ended: 0,
            shown: false,
            ramped: config.load.stages().map(|s| s.of()),
        })
    }

    pub fn show(&mut self, p: &TimelinePoint) {
        self.errors += p.errors;
        if !p.warmup {
            self.ended += p.completed + p.errors;
        }
        let elapsed = p.second as f64 + p.length_s;
        let mut line = match self.total_s {
            Some(t) => format!("[{elapsed:>4.0}s / {t:.0}s]"),
            None => format!("[{elapsed:>4.0}s]"),
        };
        if elapsed <= self.warmup_s {
            line.push_str(" warm-up");
        }
        line.push_str(&format!(
            "  {:>10} req/s  p50 {:<8} p99 {:<8} errors {}",
            output::rate(p.rps),
            output::latency(p.latency_us.p50 as f64),
            output::latency(p.latency_us.p99 as f64),
            output::thousands(self.errors),
        ));
        match (self.ramped, p.target) {
            (Some(pelt_engine::Ramped::Rate), Some(t)) => line.push_str(&format!(
                "  sent {}/s of {}/s",
                output::rate(p.sent as f64 / p.length_s.max(1e-9)),
                output::rate(t)
            )),
            (Some(pelt_engine::Ramped::Connections), Some(t)) => line.push_str(&format!(
                "  connections {} of {}",
                output::thousands(p.connections),
                output::thousands(t as u64)
            )),
            _ => {}
        }
        // --monitor: the server's CPU and pelt's, once the second's sample is in.
        if let Some(r) = &p.resources {
            if let Some(server) = &r.server {
                line.push_str(&format!(
                    "  server {:.2} of {} cores",
                    server.cpu(),
                    server.cpu_capacity
                ));
            }
            line.push_str(&format!("  pelt {:.2} cores", r.pelt.cpu()));
        }
        if let Some(n) = self.requests {
            let pct = (self.ended as f64 * 100.0 / n as f64).min(100.0);
            line.push_str(&format!(
                "  {}/{} ({pct:.0}%)",
                output::thousands(self.ended),
                output::thousands(n)
            ));
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.shown = true;
    }

    /// Removes the line before the summary is printed.
    pub fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

/// `--jsonl`: one JSON object per second, flushed as it is written.
pub struct JsonLines {
    out: Box<dyn Write>,
    /// The first write error (reported once, at the end: a full disk must not stop a run).
    failed: Option<std::io::Error>,
}

impl JsonLines {
    pub fn stdout() -> JsonLines {
        JsonLines {
            out: Box::new(std::io::stdout()),
            failed: None,
        }
    }

    pub fn create(path: &Path) -> Result<JsonLines> {
        let f = std::fs::File::create(path)
            .with_context(|| format!("cannot write --jsonl {}", path.display()))?;
        Ok(JsonLines {
            out: Box::new(f),
            failed: None,
        })
    }

    pub fn write(&mut self, p: &TimelinePoint) {
        if self.failed.is_some() {
            return;
        }
        let mut line = serde_json::to_vec(p).expect("a timeline point always serializes");
        line.push(b'\n');
        if let Err(e) = self.out.write_all(&line).and_then(|()| self.out.flush()) {
            self.failed = Some(e);
        }
    }

    /// Reports a write error that happened during the run.
    pub fn finish(&mut self) -> Result<()> {
        match self.failed.take() {
            Some(e) => Err(anyhow::Error::new(e).context("writing --jsonl failed")),
            None => Ok(()),
        }
    }
}
