// The charts of `pelt find-max`: p99 by rate asked, and done against asked; runs after
// common.js.
const steps = DATA.steps.filter(s => s.rate !== null);
const pt = (s, y) => ({ x: s.rate, y: y, step: s.step });
const limitSets = (pick) => [
  { label: "passed", data: steps.filter(s => s.passed).map(s => pt(s, pick(s))), backgroundColor: "#16a34a", borderColor: "#16a34a", pointRadius: 5 },
  { label: "failed", data: steps.filter(s => !s.passed).map(s => pt(s, pick(s))), backgroundColor: "#dc2626", borderColor: "#dc2626", pointRadius: 5, pointStyle: "crossRot" }];
const tip = { callbacks: { title: items => "step " + items[0].raw.step + " at " + items[0].raw.x.toLocaleString() + "/s" } };
const answer = DATA.answer ? [{ label: "answer", data: [{ x: DATA.answer.rate, y: DATA.answer.p99_us / 1000, step: DATA.answer.step }],
  backgroundColor: "transparent", borderColor: "#111827", pointRadius: 10, borderWidth: 2 }] : [];
new Chart(document.getElementById("chart-p99"), {
  type: "scatter",
  data: { datasets: limitSets(s => s.p99_us / 1000).concat(answer) },
  options: { scales: { x: axis("rate asked (requests/s)", { beginAtZero: true }), y: axis("p99 latency (ms)", { beginAtZero: true }) },
             plugins: { tooltip: tip } }
});
const topRate = Math.max(...steps.map(s => s.rate), 1);
new Chart(document.getElementById("chart-done"), {
  type: "scatter",
  data: { datasets: limitSets(s => s.achieved_rps).concat([{ label: "done = asked", type: "line", data: [{ x: 0, y: 0 }, { x: topRate, y: topRate }],
          borderColor: "#94a3b8", borderDash: [5, 4], pointRadius: 0 }]) },
  options: { scales: { x: axis("rate asked (requests/s)", { beginAtZero: true }), y: axis("completed (requests/s)", { beginAtZero: true }) },
             plugins: { tooltip: tip } }
});
