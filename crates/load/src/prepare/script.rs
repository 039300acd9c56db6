//! `-s`: a wrk Lua script. Its setup runs before the run (`pelt-script`). A script without
//! per-request hooks has each thread's `init` run then too, and the request it leaves in the
//! `wrk` table becomes the run's: the run that follows is an ordinary one, at pelt's own
//! speed, over any protocol pelt speaks. A script with `request()`, `response()` or `delay()`
//! runs them per request in each worker's own state (`engine::Requests::Scripted`), over
//! HTTP/1.1 or HTTP/2 (plain or TLS; each request `request()` writes goes as its own
//! stream); so do threads whose `init` left different requests (each sends its own). Each
//! thread connects where `setup` left its `thread.addr`. The script's `done` is called with
//! the result (`Prepared::script`).

use super::{bad, request_parts, Here};
use crate::spec::{Body, LoadSpec};
use crate::target;
use crate::SpecError;

/// The spec as the script leaves it, and the script (for its `done`); `None` without `-s`.
pub(super) fn run(
    spec: &LoadSpec,
    threads: usize,
    here: Here,
) -> Result<Option<(LoadSpec, pelt_script::Scripted)>, SpecError> {
    let Some(source) = &spec.script else {
        return Ok(None);
    };
    // `pelt k8s` ships the file; the coordinator in its pod reads it.
    if matches!(here, Here::Describes) {
        return Ok(None);
    }
    if spec.url.is_empty() {
        return Err(bad("-s: a script needs the URL argument"));
    }
    let t = target::resolve(&spec.url).map_err(bad)?;
    let url = url::Url::parse(&spec.url).map_err(|e| bad(format!("invalid URL: {e}")))?;
    let (headers, body) = request_parts(spec)?;
    let origin = pelt_script::Origin {
        url: spec.url.clone(),
        scheme: url.scheme().to_string(),
        host: url
            .host_str()
            .unwrap_or_default()
            .trim_matches(|c| c == '[' || c == ']')
            .to_string(),
        port: url.port(),
        path: given_path(&spec.url, &t.path),
        method: spec.method.clone(),
        headers,
        body: (!body.is_empty()).then_some(body),
        addr: t.addr,
    };
    let script = pelt_script::Script {
        name: source.name(),
        source: source.read().map_err(bad)?,
        args: spec.script_args.clone(),
    };
    let exact = spec.requests.is_some() || spec.rate.is_some();
    // A fleet's agents run the threads (each its own setup and init); the coordinator keeps
    // the setup state alone, for done() with the fleet's figures.
    let threads = if matches!(here, Here::Coordinates) {
        0
    } else {
        threads
    };
    let scripted = pelt_script::start(&script, &origin, threads, exact).map_err(bad)?;
    if let Some(hooks) = &scripted.hooks {
        let shown = source.name();
        let over = if url.scheme().starts_with("grpc") {
            Some("gRPC")
        } else if url.scheme().starts_with("ws") {
            Some("WebSocket")
        } else {
            None
        };
        if let Some(p) = over {
            return Err(bad(format!(
                "{shown}: request(), response() and delay() make HTTP requests (over HTTP/1.1 \
                 or HTTP/2), not {p} messages"
            )));
        }
        if spec.pipeline > 1 {
            return Err(bad(format!(
                "{shown}: a script whose requests are made per thread or per request \
                 pipelines by returning several at once from request() (wrk's pipeline.lua), \
                 not with --pipeline"
            )));
        }
        if hooks.uses().delay && spec.rate.is_some() {
            return Err(bad(format!(
                "{shown}: delay() spaces a closed loop's requests; with --rate the schedule \
                 says when each is due"
            )));
        }
    }
    let r = &scripted.request;
    let mut scripted_spec = spec.clone();
    scripted_spec.method = r.method.clone();
    // The Host header the URL gives is pelt's own; another one is sent as the script says.
    scripted_spec.headers = r
        .headers
        .iter()
        .filter(|(n, v)| !(n.eq_ignore_ascii_case("host") && *v == t.host_header))
        .map(|(n, v)| format!("{n}: {v}"))
        .collect();
    scripted_spec.body = Body::Bytes(r.body.clone().unwrap_or_default());
    scripted_spec.url = format!("{}://{}{}", url.scheme(), t.host_header, r.path);
    Ok(Some((scripted_spec, scripted)))
}

/// The URL's path and query as given when it holds template markers (`parsed`, the URL's
/// own, has them escaped), so the `wrk` table's path renders per request as the URL would.
fn given_path(url: &str, parsed: &str) -> String {
    if !url.contains("{{") {
        return parsed.to_string();
    }
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => rest[i..].to_string(),
        Some(i) => format!("/{}", &rest[i..]),
        None => parsed.to_string(),
    }
}

impl super::Prepared {
    /// The result's `script` section: the script's counters and histograms, every thread's
    /// together (asked once the run has ended); `None` without a script.
    pub fn script_report(&self) -> Option<pelt_stats::ScriptReport> {
        let s = self.script.as_ref()?;
        Some(s.metrics().report(s.file.clone()))
    }

    /// The script's `print` and `io.write` go to stderr while `stdout_busy` (stdout carries
    /// the JSON result); nothing without a script.
    pub fn script_output(&self, stdout_busy: bool) {
        if let Some(s) = &self.script {
            s.output_to_stderr(stdout_busy);
        }
    }

    /// Why the script's threads could not start (their `init` or first `request()` failed
    /// in the workers): the run sent nothing.
    pub fn script_failure(&self) -> Option<String> {
        self.script.as_ref()?.failure()
    }

    /// A fleet agent's: each of its threads' global values at their end, as JSON in about
    /// `budget` bytes, for the coordinator's `done` (`thread:get`); empty without a script
    /// whose `done` could read them.
    pub fn script_thread_values(&self, budget: usize) -> Vec<serde_json::Value> {
        match &self.script {
            Some(s) if s.has_done => s.thread_values(budget),
            _ => Vec::new(),
        }
    }

    /// A fleet coordinator's: the script's `setup(thread)` for each of the fleet's
    /// `threads` (the agents run their own threads), so that its `done` has every thread.
    pub fn script_fleet(&self, threads: usize) -> Result<(), String> {
        match &self.script {
            Some(s) => s.fleet(threads),
            None => Ok(()),
        }
    }

    /// A fleet coordinator's: the fleet's threads' values at their end (the agents'
    /// [`super::Prepared::script_thread_values`], in the fleet's thread order), read by
    /// `thread:get` in `done`; the note that names those left out for their size.
    pub fn script_ended(&self, values: Vec<serde_json::Value>) -> Option<String> {
        let left_out = self.script.as_ref()?.ended(values);
        (!left_out.is_empty()).then(|| {
            format!(
                "the script's thread:get() in done() reads nil for the agents' thread values \
                 too large to send: {}",
                left_out.join(", ")
            )
        })
    }

    /// Calls the script's `done(summary, latency, requests)` with `report`'s figures (its
    /// output to stderr when `stdout_busy`); nothing without a script or its `done`.
    pub fn script_done(
        &self,
        report: &pelt_stats::Report,
        stdout_busy: bool,
    ) -> Result<(), String> {
        match &self.script {
            Some(s) => s.done(figures(report), stdout_busy),
            None => Ok(()),
        }
    }
}

/// `report`'s errors as wrk counts them: its error kinds folded into wrk's five (pelt tells
/// no write error apart: a failed write shows as the read that follows it), and the responses
/// over 399.
pub fn wrk_errors(report: &pelt_stats::Report) -> pelt_script::Errors {
    let mut errors = pelt_script::Errors::default();
    for (kind, n) in &report.errors {
        match kind.as_str() {
            "refused" | "connect" | "connect_timeout" | "addr_not_available" | "fd_limit" => {
                errors.connect += n
            }
            "timeout" => errors.timeout += n,
            _ => errors.read += n,
        }
    }
    errors.status = report
        .status
        .iter()
        .filter(|(code, _)| code.parse::<u16>().is_ok_and(|c| c > 399))
        .map(|(_, n)| n)
        .sum();
    errors
}

/// `report` as wrk's `done` reads a run.
fn figures(report: &pelt_stats::Report) -> pelt_script::Figures {
    let errors = wrk_errors(report);
    // wrk samples each thread's rate: here each measured second's, shared by the threads (the
    // whole seconds, or the one short second of a run shorter than a second).
    let threads = report.info.threads.max(1) as f64;
    let measured: Vec<&pelt_stats::TimelinePoint> = report
        .timeline
        .iter()
        .filter(|p| !p.warmup && p.length_s > 0.0)
        .collect();
    let whole = measured.iter().any(|p| p.length_s >= 0.999);
    let rates = measured
        .iter()
        .filter(|p| !whole || p.length_s >= 0.999)
        .map(|p| (p.rps / threads).round() as u64)
        .collect();
    pelt_script::Figures {
        duration_us: (report.duration_s * 1e6).round() as u64,
        requests: report.requests.completed,
        bytes: report.bytes.received,
        errors,
        latency: report
            .histograms
            .as_ref()
            .map(|h| h.latency_us.clone())
            .unwrap_or_default(),
        rates,
        metrics: report
            .script
            .as_ref()
            .map(pelt_stats::ScriptReport::metrics)
            .unwrap_or_default(),
    }
}
