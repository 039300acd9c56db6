// Debian's chromium as the browser tests launch it (PELT_CHROMIUM overrides the path).
import { chromium } from "playwright-core";

export function launch() {
  return chromium.launch({
    executablePath: process.env.PELT_CHROMIUM || "/usr/bin/chromium",
    // As root in CI: no sandbox; the rest keeps chromium off the (closed) network.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}
