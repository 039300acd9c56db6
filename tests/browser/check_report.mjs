// Opens a pelt HTML report in headless Debian chromium and prints, as one JSON line, what a
// reader would see: each chart with its datasets and how much of its canvas was painted, any
// console error, page error or network request (a report must need no network), and the text.
//
// Usage: node check_report.mjs REPORT.html SCREENSHOT.png
import { launch } from "./chromium.mjs";
import path from "node:path";

const [file, shot] = process.argv.slice(2);
if (!file || !shot) {
  console.error("usage: node check_report.mjs REPORT.html SCREENSHOT.png");
  process.exit(2);
}
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const problems = [];
  page.on("console", m => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", e => problems.push(`page error: ${e.message}`));
  page.on("request", r => {
    const u = r.url();
    if (!u.startsWith("file:") && !u.startsWith("data:")) problems.push(`network request: ${u}`);
  });
  await page.goto("file://" + path.resolve(file), { waitUntil: "load" });
  const charts = await page.evaluate(() => {
    const value = p => (p !== null && typeof p === "object" ? p.y : p);
    return Object.values(window.Chart ? Chart.instances : {}).map(c => {
      const ctx = c.canvas.getContext("2d");
      const px = ctx.getImageData(0, 0, c.canvas.width, c.canvas.height).data;
      let painted = 0;
      for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) painted++;
      return {
        id: c.canvas.id,
        type: c.config.type,
        width: c.width,
        height: c.height,
        painted,
        datasets: c.data.datasets.map(d => ({
          label: d.label,
          points: d.data.length,
          finite: d.data.filter(p => Number.isFinite(value(p))).length,
          max: Math.max(...d.data.map(value).filter(Number.isFinite)),
          min: Math.min(...d.data.map(value).filter(Number.isFinite)),
        })),
        axes: Object.values(c.scales).map(s => ({
          id: s.id,
          type: s.type,
          title: s.options.title && s.options.title.text,
          ticks: s.ticks.map(t => t.label).filter(l => l !== null && l !== undefined && l !== ""),
        })),
      };
    });
  });
  const text = await page.evaluate(() => document.body.innerText);
  await page.screenshot({ path: shot, fullPage: true });
  console.log(JSON.stringify({ charts, problems, text }));
} finally {
  await browser.close();
}
