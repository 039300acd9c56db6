// Shared by every pelt HTML page (crates/cli/src/html.rs): the page wraps this file and the
// page's own script (report.js, compare.js or find_max.js) in one function, after Chart.js
// and a <script type="application/json" id="pelt-data"> block with the data.
"use strict";
const DATA = JSON.parse(document.getElementById("pelt-data").textContent);
function fmtUs(us) {
  if (us == null) return "";
  if (us < 1000) return Math.round(us) + " us";
  if (us < 1e6) return (us / 1000).toFixed(us < 1e4 ? 2 : 1) + " ms";
  return (us / 1e6).toFixed(2) + " s";
}
Chart.defaults.font.family = 'system-ui,-apple-system,"Segoe UI",Roboto,sans-serif';
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.animation = false;
Chart.defaults.plugins.legend.labels.boxWidth = 12;
const COLORS = ["#2563eb", "#16a34a", "#f59e0b", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];
function axis(title, extra) { return Object.assign({ title: { display: true, text: title } }, extra || {}); }
