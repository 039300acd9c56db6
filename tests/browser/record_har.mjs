// Loads a page in headless Debian chromium and saves what it fetched as a HAR 1.2 file
// (playwright's recorder): the browser's own recording, for tests/replay.rs to replay.
//
// Usage: node record_har.mjs URL OUT.har   (waits until the page's title is "done")
import { launch } from "./chromium.mjs";

const [url, out] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node record_har.mjs URL OUT.har");
  process.exit(2);
}
const browser = await launch();
try {
  const context = await browser.newContext({ recordHar: { path: out, content: "embed" } });
  const page = await context.newPage();
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => document.title === "done", null, { timeout: 30000 });
  // Closing the context writes the HAR.
  await context.close();
} finally {
  await browser.close();
}
