// Opens a running pelt's live page (--dashboard) in headless Debian chromium, counts how
// many times its charts gained points while the run went, waits for the run's end, and prints
// as one JSON line what the page showed: the updates, the live verdicts, the final figures, each chart's points,
// the changes' table, and any console error, page error or request to another origin.
//
// Usage: node check_dashboard.mjs URL SCREENSHOT.png [ACTION_AT_SECOND:ACTION ...]
// An action is clicked on the page once the charts reach that second: pause, resume, stop,
// or set=VALUE (the rate or connections form).
import { launch } from "./chromium.mjs";

const [url, shot, ...actions] = process.argv.slice(2);
if (!url || !shot) {
  console.error("usage: node check_dashboard.mjs URL SCREENSHOT.png [SECOND:ACTION ...]");
  process.exit(2);
}
const origin = new URL(url).origin;
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  const problems = [];
  page.on("console", m => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", e => problems.push(`page error: ${e.message}`));
  page.on("request", r => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith("data:") && !u.startsWith("blob:")) {
      problems.push(`request to another origin: ${u}`);
    }
  });
  await page.goto(url, { waitUntil: "load" });
  const points = () => page.evaluate(() => Chart.getChart("rps-chart").data.datasets[0].data.length);
  const lastSecond = () => page.evaluate(() => {
    const d = Chart.getChart("rps-chart").data.datasets[0].data;
    return d.length ? d[d.length - 1].x : 0;
  });
  let updates = 0, seen = await points();
  // With --monitor: each verdict the page showed while the run went.
  const verdicts = new Set();
  const pending = actions.map(a => {
    const [at, what] = a.split(":");
    return { at: Number(at), what };
  });
  const deadline = Date.now() + 50_000;
  while (await page.locator("#end").isHidden() && Date.now() < deadline) {
    const n = await points();
    if (n > seen) { updates++; seen = n; }
    const live = await page.evaluate(() => {
      const v = document.getElementById("live-verdict");
      return v.hidden ? null : v.textContent;
    });
    if (live) verdicts.add(live);
    const now = await lastSecond();
    while (pending.length && now >= pending[0].at) {
      const { what } = pending.shift();
      if (what.startsWith("set=")) {
        await page.fill("#value", what.slice(4));
        await page.click("#apply");
      } else {
        await page.click("#" + what);
      }
      await page.waitForFunction(() => document.getElementById("answer").textContent !== "");
    }
    await page.waitForTimeout(100);
  }
  const shown = await page.evaluate(() => {
    const text = id => document.getElementById(id).textContent;
    const charts = ["rps-chart", "latency-chart"].map(id => {
      const c = Chart.getChart(id);
      return { id, datasets: c.data.datasets.map(d => ({ label: d.label, points: d.data.length })) };
    });
    const rows = id => [...document.querySelectorAll(`#${id} tr`)].slice(1)
      .map(r => [...r.cells].map(c => c.textContent));
    const changes = rows("changes");
    const codes = rows("codes");
    return {
      ended: !document.getElementById("end").hidden,
      status: text("status"),
      final: {
        completed: text("final-completed"), rps: text("final-rps"), p50: text("final-p50"),
        p99: text("final-p99"), errors: text("final-errors"),
      },
      report: document.getElementById("report").href.startsWith("blob:"),
      verdict: document.getElementById("verdict").hidden ? null : text("verdict"),
      live_verdict_shown: !document.getElementById("live-verdict").hidden,
      answer: text("answer"),
      charts,
      changes,
      codes,
    };
  });
  await page.screenshot({ path: shot, fullPage: true });
  console.log(JSON.stringify(Object.assign({ updates, problems, verdicts: [...verdicts] }, shown)));
} finally {
  await browser.close();
}
