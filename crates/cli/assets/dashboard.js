// The live page of `pelt --dashboard` (crates/cli/src/dashboard.rs): the run's seconds as
// server-sent events from /events, drawn as they come; changes sent to /api/control.
const HEAD = DATA.head;
const TOKEN = new URLSearchParams(location.search).get("token");
const $ = id => document.getElementById(id);
const num = n => (n == null ? "-" : Math.round(n).toLocaleString("en-US"));

function lineChart(id, datasets, yTitle, ticks) {
  return new Chart($(id), {
    type: "line",
    data: { datasets: datasets.map((d, i) => Object.assign({
      data: [], borderColor: COLORS[i], backgroundColor: COLORS[i], pointRadius: 0, borderWidth: 2,
    }, d)) },
    options: {
      parsing: false,
      scales: {
        x: axis("seconds", { type: "linear", min: 0 }),
        y: axis(yTitle, { beginAtZero: true, ticks: ticks ? { callback: ticks } : {} }),
      },
    },
    plugins: [changeMarks],
  });
}

// Each change as a dashed vertical line where it took effect.
const CHANGES = [];
const changeMarks = {
  id: "changes",
  afterDatasetsDraw(chart) {
    const { ctx, chartArea: a, scales: { x } } = chart;
    ctx.save();
    ctx.strokeStyle = "#6b7280";
    ctx.setLineDash([4, 4]);
    ctx.fillStyle = "#374151";
    for (const c of CHANGES) {
      const px = x.getPixelForValue(c.at_s);
      if (px < a.left || px > a.right) continue;
      ctx.beginPath(); ctx.moveTo(px, a.top); ctx.lineTo(px, a.bottom); ctx.stroke();
      ctx.fillText(c.what, px + 3, a.top + 10);
    }
    ctx.restore();
  },
};

const rpsChart = lineChart("rps-chart", [
  { label: "completed/s" },
  { label: "sent/s" },
  { label: "asked for", borderDash: [6, 4] },
], "requests/s");
const latencyChart = lineChart("latency-chart", [
  { label: "p50" }, { label: "p90" }, { label: "p99" }, { label: "max", hidden: true },
], "latency", v => fmtUs(v));

let total = 0, errors = 0, ended = false, paused = false;
const CODES = {}, KINDS = {}, TARGETS = [];

// A table's rows (after its header) as `rows` says, in order.
function fill(id, rows) {
  const t = $(id);
  while (t.rows.length > 1) t.deleteRow(1);
  for (const cells of rows) {
    const r = t.insertRow();
    cells.forEach((c, i) => { const d = r.insertCell(); d.textContent = c; if (i > 0) d.className = "n"; });
  }
}

function addCounts(p) {
  for (const [code, n] of Object.entries(p.codes || {})) CODES[code] = (CODES[code] || 0) + n;
  for (const [kind, n] of Object.entries(p.error_kinds || {})) KINDS[kind] = (KINDS[kind] || 0) + n;
  (p.target_counts || []).forEach((c, i) => {
    const t = TARGETS[i] || (TARGETS[i] = { sent: 0, completed: 0, errors: 0 });
    t.sent += c.sent; t.completed += c.completed; t.errors += c.errors;
  });
  fill("codes", Object.entries(CODES).map(([c, n]) => [c, num(n)]));
  fill("kinds", Object.entries(KINDS).map(([k, n]) => [k, num(n)]));
  if (TARGETS.length) {
    $("targets-box").hidden = false;
    fill("targets", TARGETS.map((t, i) => [(HEAD.names || [])[i] || "#" + i, num(t.sent), num(t.completed), num(t.errors)]));
  }
  const r = p.resources;
  if (r) {
    const cores = s => (s.cpu_user + s.cpu_system).toFixed(2);
    $("cpu-card").hidden = false;
    $("cpu").textContent = (r.server ? cores(r.server) : "-") + " / " + cores(r.pelt);
  }
}

function showChange(c) {
  if (CHANGES.some(k => k.at_s === c.at_s && k.what === c.what)) return;
  CHANGES.push(c);
  const row = $("changes").insertRow();
  const value = c.value == null ? "" : num(c.value) + (HEAD.steers === "rate" ? "/s" : "");
  for (const t of [c.at_s.toFixed(2) + " s", c.what, value]) row.insertCell().textContent = t;
}

function onHead(h) {
  $("target").textContent = h.info.target;
  const steers = h.steers;
  if (steers) {
    $("set").hidden = false;
    $("set-label").textContent = steers === "rate" ? "rate (requests/s)" : "connections";
  } else {
    $("fixed").hidden = false;
    $("fixed").textContent = h.fixed || "This run cannot be changed; it can be stopped.";
    $("pause").hidden = true;
  }
}

function onPoint(p) {
  const x = p.second + p.length_s;
  total += p.completed;
  errors += p.errors;
  rpsChart.data.datasets[0].data.push({ x, y: p.rps });
  rpsChart.data.datasets[1].data.push({ x, y: p.length_s > 0 ? p.sent / p.length_s : 0 });
  // What was asked for: a rate (open loop; the closed loop's is connections, not drawn here).
  if (p.target != null && HEAD.steers !== "connections") {
    rpsChart.data.datasets[2].data.push({ x, y: p.target });
  }
  const l = p.latency_us;
  [l.p50, l.p90, l.p99, l.max].forEach((v, i) => latencyChart.data.datasets[i].data.push({ x, y: v }));
  for (const c of p.changes || []) showChange(c);
  addCounts(p);
  rpsChart.update();
  latencyChart.update();
  $("total").textContent = num(total);
  $("errors").textContent = num(errors);
  $("rps").textContent = num(p.rps);
  $("latency").textContent = fmtUs(l.p50) + " / " + fmtUs(l.p99);
  $("connections").textContent = num(p.connections);
  const of = HEAD.duration_s ? " of " + Math.round(HEAD.duration_s) + " s" : "";
  const warm = p.warmup ? " (warm-up)" : "";
  $("status").textContent = (paused ? "paused at " : "running: ") + Math.round(x) + " s" + of + warm;
  // --monitor: who is the bottleneck over the last seconds (the result's verdict at the end).
  $("live-verdict").hidden = !p.verdict;
  if (p.verdict) $("live-verdict").textContent = "Who is the bottleneck (last " + HEAD.verdict_window_s + " s): " + p.verdict;
}

function onEnd(e) {
  ended = true;
  events.close();
  $("status").textContent = e.failed ? "the run failed" : "ended" + (e.interrupted ? " (stopped)" : "");
  for (const b of ["set", "pause", "resume", "stop", "live-verdict"]) $(b).hidden = true;
  if (e.failed) return;
  for (const c of e.changes || []) showChange(c);
  $("end").hidden = false;
  $("final-completed").textContent = num(e.requests.completed);
  $("final-rps").textContent = num(e.rps);
  $("final-p50").textContent = fmtUs(e.latency_us.p50);
  $("final-p99").textContent = fmtUs(e.latency_us.p99);
  $("final-errors").textContent = num(e.requests.errors);
  if (e.verdict) {
    $("verdict").hidden = false;
    $("verdict").textContent = "Who was the bottleneck: " + e.verdict;
  }
  const blob = new Blob([e.html], { type: "text/html" });
  $("report").href = URL.createObjectURL(blob);
}

async function steer(body) {
  const headers = { "Content-Type": "application/json" };
  if (TOKEN) headers.Authorization = "Bearer " + TOKEN;
  const r = await fetch("/api/control", { method: "POST", headers, body: JSON.stringify(body) });
  const answer = await r.json();
  if (!r.ok) {
    $("answer").textContent = answer.error;
    return null;
  }
  const c = answer.change;
  $("answer").textContent = c ? "done: " + c.what + (c.value != null ? " " + num(c.value) : "") +
    " at " + c.at_s.toFixed(2) + " s" : "done";
  if (c && c.what !== "stop") showChange(c);
  return c;
}

$("set").addEventListener("submit", ev => {
  ev.preventDefault();
  steer({ action: HEAD.steers, value: Number($("value").value) });
});
$("pause").addEventListener("click", async () => {
  if (await steer({ action: "pause" })) { paused = true; $("pause").hidden = true; $("resume").hidden = false; }
});
$("resume").addEventListener("click", async () => {
  if (await steer({ action: "resume" })) { paused = false; $("resume").hidden = true; $("pause").hidden = false; }
});
$("stop").addEventListener("click", () => steer({ action: "stop" }));

onHead(HEAD);
const events = new EventSource("/events" + (TOKEN ? "?token=" + encodeURIComponent(TOKEN) : ""));
events.addEventListener("point", m => onPoint(JSON.parse(m.data)));
events.addEventListener("end", m => onEnd(JSON.parse(m.data)));
events.onerror = () => { if (!ended) $("status").textContent = "connection to pelt lost"; };
