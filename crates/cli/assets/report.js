// The charts of one run's report; runs after common.js, inside the same function (DATA,
// COLORS and the helpers come from there).
const T = DATA.timeline;
const secs = T.map(p => p.second);
// Warm-up seconds are drawn dashed.
const warmSeg = { borderDash: ctx => (T[ctx.p0DataIndex] && T[ctx.p0DataIndex].warmup) ? [5, 4] : undefined };
const xSec = axis("time since start (s)", { type: "linear", ticks: { precision: 0 } });
new Chart(document.getElementById("chart-rps"), {
  type: "line",
  data: { labels: secs, datasets: [{ label: "completed responses/s", data: T.map(p => ({ x: p.second, y: p.rps })),
          borderColor: COLORS[0], backgroundColor: COLORS[0] + "22", fill: true, pointRadius: 0, segment: warmSeg }] },
  options: { parsing: true, scales: { x: xSec, y: axis("requests/s", { beginAtZero: true }) },
             interaction: { mode: "index", intersect: false } }
});
new Chart(document.getElementById("chart-latency"), {
  type: "line",
  data: { datasets: ["p50", "p90", "p99", "max"].map((k, i) => ({ label: k, data: T.map(p => ({ x: p.second, y: p.latency_us[k] / 1000 })),
          borderColor: COLORS[i], backgroundColor: COLORS[i], pointRadius: 0, borderWidth: k === "max" ? 1 : 2, segment: warmSeg })) },
  options: { scales: { x: xSec, y: axis("latency (ms)", { beginAtZero: true }) }, interaction: { mode: "index", intersect: false },
             plugins: { tooltip: { callbacks: { label: c => c.dataset.label + ": " + fmtUs(c.parsed.y * 1000) } } } }
});
// HdrHistogram-style spectrum: x is 1/(1-q) on a log axis, labelled as percentiles.
function spectrumChart(id, points, label, color, yTitle) {
  new Chart(document.getElementById(id), {
    type: "line",
    data: { datasets: [{ label, data: points.map(s => ({ x: s[0], y: s[1] / 1000, q: s[2] })),
            borderColor: color, backgroundColor: color, pointRadius: 0, stepped: "before" }] },
    options: {
      scales: {
        x: axis("percentile (log scale of 1/(1-q))", { type: "logarithmic", min: 1,
          ticks: { callback: v => { const l = Math.log10(v); if (Math.abs(l - Math.round(l)) > 1e-9) return null;
                                    const p = 100 * (1 - 1 / v); return (Math.round(p * 1e6) / 1e6) + "%"; } } }),
        y: axis(yTitle, { beginAtZero: true })
      },
      interaction: { mode: "nearest", intersect: false },
      plugins: { tooltip: { callbacks: { title: items => "p" + items[0].raw.q, label: c => fmtUs(c.parsed.y * 1000) } } }
    }
  });
}
spectrumChart("chart-spectrum", DATA.spectrum, "latency at percentile", COLORS[4], "latency (ms)");
// Scenarios: the completed iterations' durations.
if (DATA.iterations) {
  spectrumChart("chart-iterations", DATA.iterations, "iteration time at percentile", COLORS[2], "iteration time (ms)");
}
const classes = ["2xx", "3xx", "1xx", "4xx", "5xx", "other"];
const classColors = { "1xx": "#94a3b8", "2xx": "#16a34a", "3xx": "#0891b2", "4xx": "#f59e0b", "5xx": "#dc2626", other: "#7c3aed" };
const statusSets = classes.filter(c => T.some(p => p.status_classes[c]))
  .map(c => ({ label: c, data: T.map(p => ({ x: p.second, y: p.status_classes[c] || 0 })), backgroundColor: classColors[c], stack: "s" }));
statusSets.push({ label: "errors", data: T.map(p => ({ x: p.second, y: p.errors })), backgroundColor: "#111827", stack: "s" });
new Chart(document.getElementById("chart-status"), {
  type: "bar",
  data: { datasets: statusSets },
  options: { scales: { x: Object.assign(xSec, { stacked: true, offset: true }), y: axis("responses per second", { stacked: true, beginAtZero: true }) },
             interaction: { mode: "index", intersect: false } }
});
// Per target (--targets): p50 and p99 of the busiest names, side by side.
if (DATA.targets.length) {
  const TG = DATA.targets;
  new Chart(document.getElementById("chart-targets"), {
    type: "bar",
    data: { labels: TG.map(t => t.name), datasets: ["p50", "p99"].map((k, i) => ({
      label: k, backgroundColor: COLORS[i], data: TG.map(t => t[k] / 1000) }))
      // A replayed recording's own latencies (nginx's $request_time, a HAR's time), beside.
      .concat(TG.some(t => t.recorded_p50 != null) ? ["recorded_p50", "recorded_p99"].map((k, i) => ({
        label: k.replace("_", " "), backgroundColor: COLORS[i] + "66", borderColor: COLORS[i], borderWidth: 1,
        data: TG.map(t => t[k] == null ? null : t[k] / 1000) })) : []) },
    options: { indexAxis: "y", scales: { x: axis("latency (ms)", { beginAtZero: true }), y: axis("target", { ticks: { autoSkip: false } }) },
               plugins: { tooltip: { callbacks: { label: c => c.dataset.label + ": " + fmtUs(c.parsed.x * 1000) } } } }
  });
}
// Stages (--stages): what they asked for beside what was reached. A rate is each second's
// (drawn at its start, as the other charts); connections are counted at a second's end, so
// they are drawn there, after the start value at 0.
if (DATA.stages) {
  const rate = DATA.stages.of === "rate";
  const at = p => rate ? p.second : p.second + p.length_s;
  const lead = rate ? [] : [{ x: 0, y: DATA.stages.start }];
  const reached = rate ? (p => p.sent_rate) : (p => p.connections);
  new Chart(document.getElementById("chart-stages"), {
    type: "line",
    data: { datasets: [
      { label: rate ? "target (requests/s)" : "target (connections)", data: lead.concat(T.map(p => ({ x: at(p), y: p.target }))),
        borderColor: COLORS[3], backgroundColor: COLORS[3], borderDash: [6, 4], pointRadius: 0 },
      { label: rate ? "sent/s" : "open connections", data: lead.concat(T.map(p => ({ x: at(p), y: reached(p) }))),
        borderColor: COLORS[0], backgroundColor: COLORS[0] + "22", fill: true, pointRadius: 0 }] },
    options: { scales: { x: axis("time since start (s)", { type: "linear", min: 0, ticks: { precision: 0 } }),
                         y: axis(rate ? "requests/s" : "connections", { beginAtZero: true }) },
               interaction: { mode: "index", intersect: false } }
  });
}
// --monitor: the server's CPU beside requests/s on one time axis; pelt's CPU (and its busiest
// worker's) with the host's; the network's bytes per second.
const R = T.filter(p => p.resources);
if (R.length && document.getElementById("chart-server")) {
  const line = (label, color, f, extra) => Object.assign({ label, data: R.map(p => ({ x: p.second, y: f(p) })),
    borderColor: color, backgroundColor: color, pointRadius: 0, segment: warmSeg }, extra || {});
  const cores = { callbacks: { label: c => c.dataset.label + ": " + c.parsed.y.toFixed(2) } };
  new Chart(document.getElementById("chart-server"), {
    type: "line",
    data: { datasets: [
      line("server CPU (cores)", COLORS[3], p => p.resources.server ?? 0, { yAxisID: "y" }),
      line("completed responses/s", COLORS[0], p => p.rps, { yAxisID: "y2", borderDash: [6, 4] })] },
    options: { scales: { x: xSec, y: axis("cores", { beginAtZero: true }),
                         y2: axis("requests/s", { beginAtZero: true, position: "right", grid: { drawOnChartArea: false } }) },
               interaction: { mode: "index", intersect: false } }
  });
  new Chart(document.getElementById("chart-pelt"), {
    type: "line",
    data: { datasets: [
      line("pelt (cores)", COLORS[0], p => p.resources.pelt),
      line("busiest worker (cores)", COLORS[1], p => p.resources.worker ?? 0),
      line("host busy (cores)", COLORS[2], p => p.resources.host),
      line("host softirq (cores)", COLORS[4], p => p.resources.softirq)] },
    options: { scales: { x: xSec, y: axis("cores", { beginAtZero: true }) }, interaction: { mode: "index", intersect: false },
               plugins: { tooltip: cores } }
  });
  new Chart(document.getElementById("chart-net"), {
    type: "line",
    data: { datasets: [
      line("received (MiB/s)", COLORS[0], p => p.resources.rx / 1048576),
      line("sent (MiB/s)", COLORS[1], p => p.resources.tx / 1048576)] },
    options: { scales: { x: xSec, y: axis("MiB/s", { beginAtZero: true }) }, interaction: { mode: "index", intersect: false } }
  });
}
// Streams: each second's ended streams and those that met --goodput's targets (left), output
// tokens (right, from the servers' usage); then TTFT p50 and p99 and TPOT p50, in ms.
const S = T.filter(p => p.streams);
if (S.length && document.getElementById("chart-streams")) {
  const perSec = (p, n) => n / Math.max(p.length_s, 1e-9);
  const line = (label, color, f, axis, extra) => Object.assign({ label, yAxisID: axis, borderColor: color,
    backgroundColor: color, pointRadius: 0, segment: warmSeg, data: S.map(p => ({ x: p.second, y: f(p) })) }, extra || {});
  const sets = [line("streams ended/s", COLORS[0], p => perSec(p, p.streams.streams), "y")];
  if (DATA.goodput) sets.push(line("met the targets/s", COLORS[2], p => perSec(p, p.streams.met), "y"));
  if (S.some(p => p.streams.output_tokens)) {
    sets.push(line("output tokens/s", COLORS[1], p => perSec(p, p.streams.output_tokens), "y2", { borderDash: [6, 4] }));
  }
  new Chart(document.getElementById("chart-streams"), {
    type: "line",
    data: { datasets: sets },
    options: { scales: { x: xSec, y: axis("streams per second", { beginAtZero: true }),
                         y2: axis("tokens per second", { beginAtZero: true, position: "right", grid: { drawOnChartArea: false } }) },
               interaction: { mode: "index", intersect: false } }
  });
  const ms = [line("TTFT p50", COLORS[0], p => p.streams.ttft_p50 / 1000, "y"),
              line("TTFT p99", COLORS[3], p => p.streams.ttft_p99 / 1000, "y")];
  if (S.some(p => p.streams.tpot_p50 != null)) {
    ms.push(line("TPOT p50", COLORS[1], p => p.streams.tpot_p50 == null ? null : p.streams.tpot_p50 / 1000, "y", { borderDash: [6, 4] }));
  }
  new Chart(document.getElementById("chart-ttft"), {
    type: "line",
    data: { datasets: ms },
    options: { scales: { x: xSec, y: axis("ms", { beginAtZero: true }) }, interaction: { mode: "index", intersect: false },
               plugins: { tooltip: { callbacks: { label: c => c.dataset.label + ": " + fmtUs(c.parsed.y * 1000) } } } }
  });
}
// HTTP/3: what QUIC counted each second, per second of it: packets sent and datagrams received
// on the left axis; packets lost, congestion events and flow-control blocks (both ways) on the
// right, where a handful shows against thousands.
const Q = T.filter(p => p.quic);
if (Q.length && document.getElementById("chart-quic")) {
  const line = (label, color, k, axis) => ({ label, yAxisID: axis, borderColor: color, backgroundColor: color,
    pointRadius: 0, segment: warmSeg, borderDash: axis === "y2" ? [6, 4] : undefined,
    data: Q.map(p => ({ x: p.second, y: p.quic[k] / Math.max(p.length_s, 1e-9) })) });
  new Chart(document.getElementById("chart-quic"), {
    type: "line",
    data: { datasets: [
      line("packets sent/s", COLORS[0], "packets_sent", "y"),
      line("datagrams received/s", COLORS[1], "datagrams_received", "y"),
      line("packets lost/s", COLORS[3], "packets_lost", "y2"),
      line("congestion events/s", COLORS[4], "congestion_events", "y2"),
      line("flow-control blocks/s", COLORS[2], "blocked", "y2")] },
    options: { scales: { x: xSec, y: axis("per second", { beginAtZero: true }),
                         y2: axis("lost, congestion, blocked per second", { beginAtZero: true, position: "right", grid: { drawOnChartArea: false } }) },
               interaction: { mode: "index", intersect: false } }
  });
}
