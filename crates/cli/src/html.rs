//! `--html`: one self-contained HTML file per result (and per comparison) that opens offline.
//!
//! The tables are rendered here, in Rust, so they read without JavaScript; the charts are drawn
//! by Chart.js (MIT, vendored in `assets/`, inlined into every report) from a JSON block that
//! carries only what the charts need. Chart.js rather than an SVG plotting crate: it gives
//! tooltips, log axes and grouped bars in one well-kept file of 210 KB, and the browser does
//! the layout for any screen.

use crate::output::{latency, thousands};
use pelt_load::study::CompareDoc;
use pelt_load::study::FindMaxDoc;
use pelt_stats::{LatencySummary, Report};
use serde_json::{json, Value};
use std::fmt::Write;

const CHART_JS: &str = include_str!("../assets/chart.umd.min.js");

const STYLE: &str = include_str!("../assets/report.css");

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON for a `<script type="application/json">` block: `<` only occurs inside strings there,
/// and as `\u003c` it cannot close the script element whatever a URL or message contains.
fn script_json(v: &Value) -> String {
    v.to_string().replace('<', "\\u003c")
}

/// `2026-11-22 17:15:51 UTC` from milliseconds since the epoch.
pub fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The page around `body`: head, style, Chart.js, the data block and the drawing script.
pub fn page(title: &str, body: &str, data: &Value, script: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"pelt {ver}\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}\
         <footer>Made by pelt {ver}. Charts: Chart.js (MIT), inlined; this file needs no network.</footer>\n\
         </main>\n<script>{CHART_JS}</script>\n<script type=\"application/json\" id=\"pelt-data\">{data}</script>\n\
         <script>(function () {{{COMMON_JS}{script}}})();</script>\n</body>\n</html>\n",
        ver = env!("CARGO_PKG_VERSION"),
        title = esc(title),
        data = script_json(data),
    )
}

/// Shared by every page: read the data, format microseconds, the chart defaults.
const COMMON_JS: &str = include_str!("../assets/common.js");

/// The charts of one run.
const REPORT_JS: &str = include_str!("../assets/report.js");

/// A box per chart: its title and a canvas the page's script draws into.
pub(crate) fn chart_boxes(out: &mut String, charts: &[(&str, &str)]) {
    for (id, title) in charts {
        let _ = writeln!(
            out,
            "<section class=\"box\"><h2>{title}</h2><div class=\"chart\"><canvas id=\"{id}\" \
             role=\"img\" aria-label=\"{title}\"></canvas></div></section>"
        );
    }
}

pub(crate) fn card(out: &mut String, key: &str, value: &str) {
    let _ = write!(
        out,
        "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{}</div></div>",
        esc(key),
        esc(value)
    );
}

pub(crate) fn row(out: &mut String, cells: &[&str]) {
    out.push_str("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let _ = write!(
            out,
            "<td{}>{}</td>",
            if i > 0 { " class=\"n\"" } else { "" },
            esc(c)
        );
    }
    out.push_str("</tr>\n");
}

pub(crate) fn kv(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(key), esc(value));
}

pub(crate) fn latency_rows(out: &mut String, name: &str, l: &LatencySummary) {
    let us = |v: u64| latency(v as f64);
    row(
        out,
        &[
            name,
            &us(l.min_us),
            &latency(l.mean_us),
            &us(l.p50_us),
            &us(l.p90_us),
            &us(l.p99_us),
            &us(l.p99_9_us),
            &us(l.max_us),
        ],
    );
}

pub(crate) fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0%".into()
    } else {
        format!("{:.2}%", part as f64 * 100.0 / whole as f64)
    }
}

/// A histogram's percentile spectrum as the charts draw it: `[x, value, percentile]`, x being
/// 1/(1-q) capped at the count (the max is "one in N").
fn spectrum_points(hist: &pelt_stats::LatencyHistogram) -> Vec<Value> {
    let count = hist.count().max(1) as f64;
    hist.spectrum()
        .into_iter()
        .map(|(p, v)| {
            let q = p / 100.0;
            let x = if q >= 1.0 {
                count
            } else {
                (1.0 / (1.0 - q)).min(count)
            };
            json!([x, v, (p * 1e4).round() / 1e4])
        })
        .collect()
}

/// The chart data of a result: its timeline and the percentile spectrum of its histogram
/// (and of its iterations', on a scenario run).
fn report_data(r: &Report) -> Value {
    let hist = r
        .histograms
        .as_ref()
        .map(|h| h.latency_us.clone())
        .unwrap_or_default();
    let spectrum = spectrum_points(&hist);
    let iterations = r
        .histograms
        .as_ref()
        .and_then(|h| h.iteration_us.as_ref())
        .filter(|h| r.scenario.is_some() && h.count() > 0)
        .map(spectrum_points);
    let timeline: Vec<Value> = r
        .timeline
        .iter()
        .map(|p| {
            json!({
                "second": p.second, "warmup": p.warmup, "rps": p.rps, "errors": p.errors,
                "status_classes": p.status_classes, "latency_us": p.latency_us,
                "sent_rate": p.sent as f64 / p.length_s.max(1e-9), "length_s": p.length_s,
                "connections": p.connections, "target": p.target,
                "resources": p.resources.as_ref().map(|r| json!({
                    "server": r.server.as_ref().map(|s| s.cpu()),
                    "pelt": r.pelt.cpu(),
                    "worker": r.pelt.workers.iter().copied().fold(None, |m: Option<f64>, w| Some(m.map_or(w, |m| m.max(w)))),
                    "host": r.host.cpu_busy(),
                    "softirq": r.host.cpu_softirq,
                    "rx": r.host.net_rx_bytes as f64 / p.length_s.max(1e-9),
                    "tx": r.host.net_tx_bytes as f64 / p.length_s.max(1e-9),
                })),
                // Streams: what ended in the second, its tokens and goodput, its TTFT.
                "streams": p.event_streams.as_ref().map(|s| json!({
                    "streams": s.streams, "met": s.met, "output_tokens": s.output_tokens,
                    "ttft_p50": s.ttft_us.p50, "ttft_p99": s.ttft_us.p99,
                    "tpot_p50": s.tpot_us.as_ref().map(|t| t.p50),
                })),
                "quic": p.quic.as_ref().map(|q| json!({
                    "packets_sent": q.packets_sent, "packets_lost": q.packets_lost,
                    "datagrams_received": q.datagrams_received,
                    "congestion_events": q.congestion_events,
                    "blocked": q.blocked_by_server + q.blocked_by_pelt,
                })),
            })
        })
        .collect();
    // The busiest targets (the summary's rows), for the per-target latency chart.
    let targets: Vec<Value> = pelt_stats::busiest(&r.targets, crate::sections::targets::ROWS)
        .0
        .iter()
        .map(|t| {
            // A replayed recording's own latencies, drawn beside the replayed ones.
            let then = t.recorded_us.as_ref();
            json!({ "name": t.name, "p50": t.latency_us.p50_us, "p99": t.latency_us.p99_us,
                    "recorded_p50": then.map(|r| r.p50_us), "recorded_p99": then.map(|r| r.p99_us) })
        })
        .collect();
    let stages = r
        .info
        .stages
        .as_ref()
        .map(|s| json!({ "of": s.of, "start": s.start }));
    let goodput = r
        .event_streams
        .as_ref()
        .is_some_and(|s| s.goodput.is_some());
    json!({ "timeline": timeline, "spectrum": spectrum, "targets": targets, "stages": stages,
            "iterations": iterations, "goodput": goodput })
}

/// The whole HTML report of one result: its sections in order.
pub fn report(r: &Report) -> String {
    let mut b = String::new();
    crate::sections::head::html(&mut b, r);
    b.push_str("<section class=\"box\">");
    for section in crate::sections::FIGURES {
        section(&mut b, r);
    }
    b.push_str("</section>\n<section class=\"box\">");
    for section in crate::sections::SETUP {
        section(&mut b, r);
    }
    let _ = writeln!(
        b,
        "<details><summary>Text summary</summary><pre>{}</pre></details>",
        esc(&crate::output::summary(r))
    );
    b.push_str("</section>\n</div>\n");
    for section in crate::sections::HTML {
        section(&mut b, r);
    }
    page(
        &format!("pelt: {}", r.info.target),
        &b,
        &report_data(r),
        REPORT_JS,
    )
}

/// The charts of a comparison: one grouped bar chart per figure, a group per setting and a
/// bar per target (the seeds' "krps per tool per scenario" charts).
const COMPARE_JS: &str = include_str!("../assets/compare.js");

/// The HTML page of `pelt compare`: the table and grouped bar charts.
pub fn compare(doc: &CompareDoc, table_text: &str) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>pelt compare</h1>");
    let run = &doc.run;
    let limit = match (run.duration_s, run.requests) {
        (Some(d), _) => format!("{d}s per run"),
        (None, Some(n)) => format!("{} requests per run", thousands(n)),
        _ => String::new(),
    };
    let _ = writeln!(
        b,
        "<p class=\"sub\">{} &middot; {} &middot; {} loop &middot; {} run(s), {} repeat(s), interleaved</p>",
        esc(&run.method),
        esc(&limit),
        run.load_model,
        doc.runs,
        doc.repeat
    );
    b.push_str("<section class=\"box\" style=\"margin-bottom:14px\"><h2>Results</h2><table>\n<tr><th>target</th>");
    for k in doc.keys() {
        let _ = write!(b, "<th>{}</th>", esc(k));
    }
    b.push_str("<th class=\"n\">krps</th><th class=\"n\">p50</th><th class=\"n\">p99</th><th class=\"n\">errors</th><th class=\"n\">non-2xx</th><th class=\"n\">krps range</th><th>url</th></tr>\n");
    for row in &doc.rows {
        let m = &row.median;
        let _ = write!(b, "<tr><td>{}</td>", esc(&row.target));
        for k in doc.keys() {
            let _ = write!(b, "<td>{}</td>", esc(row.settings.get(k)));
        }
        let _ = writeln!(
            b,
            "<td class=\"n\">{:.1}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2}%</td><td class=\"n\">{:.2}%</td><td class=\"n\">{:.1}-{:.1}</td><td>{}</td></tr>",
            m.rps / 1000.0,
            latency(m.p50_us),
            latency(m.p99_us),
            m.errors_pct,
            m.non_2xx_pct,
            m.rps_min / 1000.0,
            m.rps_max / 1000.0,
            esc(&row.url)
        );
    }
    let _ = writeln!(
        b,
        "</table><p class=\"note\">Medians of the repeats. errors: failed requests, per cent of \
         those sent; non-2xx: complete responses outside 2xx.</p><details><summary>Markdown</summary>\
         <pre>{}</pre></details></section>",
        esc(table_text)
    );
    b.push_str("<div class=\"grid\">\n");
    chart_boxes(
        &mut b,
        &[
            ("chart-krps", "Requests per second (thousands)"),
            ("chart-p50", "p50 latency"),
            ("chart-p99", "p99 latency"),
        ],
    );
    b.push_str("</div>\n");
    let keys: Vec<&str> = doc.keys().collect();
    let data = json!({ "rows": doc.rows, "keys": keys });
    page("pelt compare", &b, &data, COMPARE_JS)
}

/// The charts of a max-rate search: p99 by rate asked (passed and failed steps apart), and
/// the rate done against the rate asked.
const FIND_MAX_JS: &str = include_str!("../assets/find_max.js");

/// The HTML page of `pelt find-max`: the answer, the steps and two charts.
pub fn find_max(doc: &FindMaxDoc, answer: &str) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>pelt find-max</h1>");
    let _ = writeln!(
        b,
        "<p class=\"sub\">{} {} &middot; objectives {} &middot; {:?}s steps after a {:?}s warm-up, \
         {} connections at most</p>",
        esc(&doc.method),
        esc(&doc.target),
        esc(&doc.slo.join(" and ")),
        doc.step_duration_s,
        doc.warmup_s,
        doc.max_connections
    );
    b.push_str("<div class=\"cards\">");
    match &doc.answer {
        Some(a) => {
            card(
                &mut b,
                "max rate",
                &format!("{}/s", thousands(a.rate.round() as u64)),
            );
            card(&mut b, "p50 there", &latency(a.p50_us as f64));
            card(&mut b, "p99 there", &latency(a.p99_us as f64));
        }
        None => card(&mut b, "max rate", "none met the objectives"),
    }
    card(&mut b, "steps", &doc.steps.len().to_string());
    b.push_str("</div>\n<div class=\"grid\">\n");
    chart_boxes(
        &mut b,
        &[
            ("chart-p99", "p99 latency by rate"),
            ("chart-done", "Rate done by rate asked"),
        ],
    );
    b.push_str("</div>\n<section class=\"box\"><h2>Steps</h2><table>\n<tr><th class=\"n\">step</th><th>phase</th><th class=\"n\">rate/s</th><th class=\"n\">done/s</th><th class=\"n\">p50</th><th class=\"n\">p99</th><th class=\"n\">errors</th><th>result</th>");
    let monitored = doc.steps.iter().any(|st| st.server.is_some());
    b.push_str(if monitored {
        "<th>bottleneck</th></tr>\n"
    } else {
        "</tr>\n"
    });
    for st in &doc.steps {
        let mut cells = st.cells();
        if monitored {
            cells.push(st.bottleneck().unwrap_or_else(|| "-".into()));
        }
        b.push_str("<tr>");
        for (i, c) in cells.iter().enumerate() {
            let class = match i {
                1 => "",
                7 if c.starts_with("FAIL") => " class=\"failed\"",
                7 if c == "ok" => " class=\"passed\"",
                7 | 8 => "",
                _ => " class=\"n\"",
            };
            let _ = write!(b, "<td{class}>{}</td>", esc(c));
        }
        b.push_str("</tr>\n");
    }
    let _ = writeln!(
        b,
        "</table><p class=\"note\">{}</p><p class=\"note\">A step passes when every objective \
         holds and at least 95% of the requests asked for completed. Latency counts from each \
         request's due time.</p></section>",
        esc(answer)
    );
    let data = json!({ "steps": doc.steps, "answer": doc.answer });
    page("pelt find-max", &b, &data, FIND_MAX_JS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_script_endings() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let v = json!({"target": "http://h/</script><script>alert(1)</script>"});
        let s = script_json(&v);
        assert!(!s.contains("</script"), "{s}");
        assert_eq!(serde_json::from_str::<Value>(&s).unwrap(), v);
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_795_367_751_123), "2026-11-22 17:15:51 UTC");
    }
}
