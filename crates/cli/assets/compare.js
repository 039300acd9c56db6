// The charts of `pelt compare`: a grouped bar chart per figure; runs after common.js.
const rows = DATA.rows;
const keys = DATA.keys;
const label = r => keys.length ? keys.map(k => k + "=" + r.settings[k]).join(" ") : "";
const groups = [...new Set(rows.map(label))];
const targets = [...new Set(rows.map(r => r.target))];
function grouped(id, title, pick, fmt) {
  new Chart(document.getElementById(id), {
    type: "bar",
    data: { labels: groups.map(g => g || "all"), datasets: targets.map((t, i) => ({
      label: t, backgroundColor: COLORS[i % COLORS.length],
      data: groups.map(g => { const r = rows.find(r => r.target === t && label(r) === g); return r ? pick(r.median) : null; }) })) },
    options: { scales: { x: axis(keys.length ? keys.join(", ") : "target"), y: axis(title, { beginAtZero: true }) },
               plugins: { tooltip: { callbacks: { label: c => c.dataset.label + ": " + fmt(c.parsed.y) } } } }
  });
}
grouped("chart-krps", "thousand requests/s", m => m.rps / 1000, v => v.toFixed(1) + " krps");
grouped("chart-p50", "p50 latency (ms)", m => m.p50_us / 1000, v => fmtUs(v * 1000));
grouped("chart-p99", "p99 latency (ms)", m => m.p99_us / 1000, v => fmtUs(v * 1000));
