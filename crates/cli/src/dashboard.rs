//! `--dashboard ADDR`: a live page of the run (charts that move each second, the figures, the
//! changes) that also steers it: pause and resume, a new rate or number of connections, stop.
//! A small JSON endpoint beside it does the same for scripts (`POST /api/control`).
//!
//! The page is fed the per-second points the run already makes, on the main thread
//! (`add`), and sent to the browsers by the page's own server thread: nothing here is on the
//! per-request path. A change goes to the engine's [`Control`]; the workers pick it up at
//! their next deadline scan.

use crate::args::ViewArgs;
use crate::{bad, html};
use anyhow::{anyhow, Result};
use pelt_engine::{Control, Ramped};
use pelt_stats::{Report, Steer, TimelinePoint};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const DASHBOARD_JS: &str = include_str!("../assets/dashboard.js");

/// How long the end waits for the browsers to get the last event (the report).
const END_WAIT: Duration = Duration::from_secs(3);

/// A running dashboard.
pub struct Dashboard {
    page: pelt_server::LivePage,
}

/// What the dashboard needs of the run.
struct Run<'a> {
    pub run: &'a pelt_load::Prepared,
    /// Changes go here (`None`: only a stop).
    pub control: Option<Arc<Control>>,
    pub stop: Arc<AtomicBool>,
    /// The fleet's token, when the page must ask for it.
    pub token: Option<String>,
    pub quiet: bool,
}

/// The page `--dashboard` asks for (`None` without it), started before any traffic, its
/// control put in the run's config: a change takes effect `lead` after it is asked for
/// (`None`: the engine's `LEAD`). Beyond loopback the page asks for the fleet's token (from
/// `token_file`, or the environment).
pub fn open(
    v: &ViewArgs,
    run: &mut pelt_load::Prepared,
    lead: Option<Duration>,
    token_file: Option<&std::path::Path>,
    stop: &Arc<AtomicBool>,
    quiet: bool,
) -> Result<Option<Dashboard>> {
    let Some(addr) = v.dashboard else {
        return Ok(None);
    };
    let mut control = Control::new(&run.config);
    if let Some(lead) = lead {
        control = control.with_lead(lead);
    }
    let control = Arc::new(control);
    run.config.control = Some(control.clone());
    let token = match addr.ip().is_loopback() {
        true => None,
        false => Some(crate::fleet::token_text(token_file)?),
    };
    start(
        v,
        Run {
            run,
            control: Some(control),
            stop: stop.clone(),
            token,
            quiet,
        },
    )
}

/// Starts the page (an address that cannot be bound, or that is not loopback without a
/// token, is bad input).
fn start(v: &ViewArgs, run: Run) -> Result<Option<Dashboard>> {
    let Some(addr) = v.dashboard else {
        return Ok(None);
    };
    if !addr.ip().is_loopback() && run.token.is_none() {
        return Err(bad(anyhow!(
            "--dashboard {addr} can be reached from other machines: give the fleet's token \
             (PELT_FLEET_TOKEN, PELT_FLEET_TOKEN_FILE or --token-file), which the page then \
             asks for, or serve it on 127.0.0.1"
        )));
    }
    let control = run.control.clone();
    let of = control.as_ref().and_then(|c| c.of());
    // Why the run cannot be changed, when it cannot (a replay's pace is its recording's).
    let fixed = of
        .is_none()
        .then_some("a replay keeps its recording's times: it can be stopped, not changed");
    let config = &run.run.config;
    let head = json!({
        "info": run.run.info,
        "duration_s": config.duration.map(|d| (config.warmup + d).as_secs_f64()),
        "requests": config.requests,
        "warmup_s": config.warmup.as_secs_f64(),
        "steers": of.map(Ramped::name),
        "fixed": fixed,
        "names": config.targets().map_or(Vec::new(), |t| t.names().to_vec()),
        // The seconds a point's verdict reads.
        "verdict_window_s": pelt_stats::LIVE_WINDOW,
    });
    let state = {
        let control = control.clone();
        let stop = run.stop.clone();
        Arc::new(move || state(control.as_deref(), &stop).to_string())
    };
    let steer = {
        let (control, stop) = (control.clone(), run.stop.clone());
        Arc::new(move |body: &[u8]| steer(control.as_deref(), fixed, &stop, body))
    };
    let data = json!({ "head": head.clone() });
    let page = pelt_server::Page {
        html: html::page("pelt: live", BODY, &data, DASHBOARD_JS),
        state,
        control: steer,
        token: run.token.clone(),
    };
    let live = pelt_server::LivePage::start(addr, page)
        .map_err(|e| bad(anyhow!("cannot serve --dashboard on {addr}: {e}")))?;
    live.publish("head", &head.to_string());
    let shown = match addr.port() {
        0 => live.addr(),
        _ => addr,
    };
    // Said even with -q when the port was chosen here: it is how the page is found.
    if !run.quiet || addr.port() == 0 {
        let with_token = if run.token.is_some() {
            "?token=..."
        } else {
            ""
        };
        eprintln!("pelt: dashboard on http://{}/{with_token}", url_host(shown));
    }
    Ok(Some(Dashboard { page: live }))
}

/// `127.0.0.1:5665`, `[::1]:5665`.
fn url_host(a: SocketAddr) -> String {
    a.to_string()
}

impl Dashboard {
    /// A second of the run, as the page draws it (its histograms left out: the page reads the
    /// percentiles).
    /// `verdict`: who was the bottleneck over the last seconds (`--monitor`).
    pub fn add(&self, p: &TimelinePoint, verdict: Option<&str>) {
        let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.remove("histogram");
            o.remove("ttfb_histogram");
            // The second's codes, error kinds and targets (kept from the result's points).
            o.insert("codes".into(), json!(p.detail.codes));
            o.insert("error_kinds".into(), json!(p.detail.errors));
            o.insert("target_counts".into(), json!(p.detail.targets));
            o.insert("verdict".into(), json!(verdict));
        }
        self.page.publish("point", &v.to_string());
    }

    /// The end: the result's figures and its HTML report (the page offers it), then the page
    /// stops (after the browsers got it, a few seconds at most).
    pub fn finish(self, report: Option<&Report>) {
        let end = match report {
            Some(r) => json!({
                "requests": r.requests,
                "rps": r.rps,
                "latency_us": r.latency_us,
                "errors": r.requests.errors,
                "status": r.status,
                "stopped_by": r.stopped_by,
                "interrupted": r.interrupted,
                "changes": r.changes,
                // --monitor: who was the bottleneck, as the summary says it.
                "verdict": r.resources.as_ref().map(|x| x.verdict.headline()),
                "html": html::report(r),
            }),
            None => json!({ "failed": true }),
        };
        self.page.finish("end", &end.to_string(), END_WAIT);
    }
}

/// `GET /api/state`: where the run is, and what it can be changed to.
fn state(control: Option<&Control>, stop: &AtomicBool) -> Value {
    let Some(c) = control else {
        return json!({ "stopping": stop.load(Ordering::Relaxed) });
    };
    let elapsed = c.elapsed_s();
    let (value, paused) = c.value_at(elapsed.unwrap_or(0.0));
    json!({
        "elapsed_s": elapsed,
        "steers": c.of().map(Ramped::name),
        "value": value,
        "paused": paused,
        "stopping": stop.load(Ordering::Relaxed),
        "changes": c.changes(),
    })
}

/// `POST /api/control` with `{"action": "rate" | "connections" | "pause" | "resume" | "stop",
/// "value": N, "at_s": T}`: the change as made, or why not.
fn steer(
    control: Option<&Control>,
    fixed: Option<&str>,
    stop: &AtomicBool,
    body: &[u8],
) -> (u16, String) {
    let fail = |code: u16, e: &str| (code, json!({ "error": e }).to_string());
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return fail(
            400,
            "the body is not JSON: send {\"action\": \"rate\", \"value\": 3000}",
        );
    };
    let what = match v.get("action").and_then(Value::as_str) {
        Some("rate") => Steer::Rate,
        Some("connections") => Steer::Connections,
        Some("pause") => Steer::Pause,
        Some("resume") => Steer::Resume,
        Some("stop") => Steer::Stop,
        _ => {
            return fail(
                400,
                "\"action\" is one of rate, connections, pause, resume, stop",
            )
        }
    };
    let value = match v.get("value") {
        None | Some(Value::Null) => None,
        Some(n) => match n.as_f64() {
            Some(n) => Some(n),
            None => return fail(400, "\"value\" is a number"),
        },
    };
    let at_s = v.get("at_s").and_then(Value::as_f64);
    if what == Steer::Stop {
        stop.store(true, Ordering::Relaxed);
        let change = control.and_then(|c| c.change(Steer::Stop, None, None).ok());
        return (200, json!({ "ok": true, "change": change }).to_string());
    }
    let Some(c) = control else {
        return fail(
            409,
            fixed.unwrap_or("this run cannot be changed; it can be stopped"),
        );
    };
    if stop.load(Ordering::Relaxed) {
        return fail(409, "the run is stopping");
    }
    match c.change(what, value, at_s) {
        Ok(change) => (200, json!({ "ok": true, "change": change }).to_string()),
        Err(e) => fail(409, &e),
    }
}

/// The page's frame; `dashboard.js` fills it.
const BODY: &str = r##"<h1>pelt <span id="target"></span></h1>
<p class="sub" id="status">waiting for the first second...</p>
<div class="cards" id="figures">
<div class="card"><div class="k">requests</div><div class="v" id="total">0</div></div>
<div class="card"><div class="k">requests/s, last second</div><div class="v" id="rps">-</div></div>
<div class="card"><div class="k">p50 / p99, last second</div><div class="v" id="latency">-</div></div>
<div class="card"><div class="k">errors</div><div class="v" id="errors">0</div></div>
<div class="card"><div class="k">connections</div><div class="v" id="connections">-</div></div>
<div class="card" id="cpu-card" hidden><div class="k">server / pelt CPU (cores)</div><div class="v" id="cpu">-</div></div>
</div>
<p id="live-verdict" hidden></p>
<section class="box" id="end" hidden><h2>Result</h2>
<div class="cards">
<div class="card"><div class="k">completed</div><div class="v" id="final-completed"></div></div>
<div class="card"><div class="k">requests/s</div><div class="v" id="final-rps"></div></div>
<div class="card"><div class="k">p50</div><div class="v" id="final-p50"></div></div>
<div class="card"><div class="k">p99</div><div class="v" id="final-p99"></div></div>
<div class="card"><div class="k">errors</div><div class="v" id="final-errors"></div></div>
</div>
<p id="verdict" hidden></p>
<p><a id="report" download="pelt-report.html" href="#">Download the HTML report</a></p></section>
<div class="grid">
<section class="box"><h2>Requests per second</h2><div class="chart"><canvas id="rps-chart"></canvas></div></section>
<section class="box"><h2>Latency per second</h2><div class="chart"><canvas id="latency-chart"></canvas></div></section>
</div>
<div class="grid">
<section class="box"><h2>Status codes</h2><table id="codes"><tr><th>status</th><th class="n">responses</th></tr></table></section>
<section class="box"><h2>Errors</h2><table id="kinds"><tr><th>error</th><th class="n">count</th></tr></table></section>
</div>
<section class="box" id="targets-box" hidden><h2>Targets and steps</h2><table id="targets"><tr><th>target</th><th class="n">sent</th><th class="n">completed</th><th class="n">errors</th></tr></table></section>
<section class="box" id="steer"><h2>Control</h2>
<p class="sub" id="fixed" hidden></p>
<form id="set" hidden><label><span id="set-label">rate</span> <input id="value" type="number" min="0" step="any" required></label>
<button type="submit" id="apply">Set</button></form>
<p><button id="pause" type="button">Pause</button> <button id="resume" type="button" hidden>Resume</button>
<button id="stop" type="button">Stop</button></p>
<p class="sub" id="answer" role="status"></p>
<table id="changes"><tr><th>at</th><th>change</th><th>value</th></tr></table>
</section>
"##;
