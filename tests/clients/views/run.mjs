// Renders loanhost's views in a real headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core) through host.ts, and reports what each view drew. The host page is served
// at the loanhost server's own origin (intercepted by the browser, never by the server), so
// its MCP calls are same-origin; every other request the page or a view makes is reported.
// Input (env): BASE (the server), CASES (JSON array of {name, token, tool, args, theme,
// width}), SHOTS (screenshot folder). Output: one JSON line, {cases: [...]}.
import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const esbuild = createRequire(import.meta.url)("esbuild");
const base = process.env.BASE;
const cases = JSON.parse(process.env.CASES);
const shots = process.env.SHOTS;
mkdirSync(shots, { recursive: true });

const bundle = await esbuild.build({
  entryPoints: [join(here, "host.ts")],
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2022",
  write: false,
  logLevel: "error",
});
const hostUrl = `${base}/__view_test_host__`;
const hostPage = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>view test host</title></head><body><script>${bundle.outputFiles[0].text.replaceAll("</script", "<\\/script")}</script></body></html>`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const out = [];
const deadline = Date.now() + 240_000;
try {
  for (const c of cases) {
    if (Date.now() > deadline) throw new Error("the browser cases ran past their time limit");
    const page = await browser.newPage({ viewport: { width: c.width + 20, height: 2400 } });
    const consoleErrors = [];
    const requests = [];
    // The official client opens the optional GET stream once; loanhost answers 405 (it
    // offers none, as the transport allows) and Chromium logs that fetch: the only message
    // the host page may log. Everything else, from the page or the view, is reported.
    page.on("console", (m) => {
      if (m.type() !== "error" && m.type() !== "warning") return;
      const at = m.location()?.url ?? "";
      if (at === `${base}/mcp` && m.text().includes("status of 405")) return;
      consoleErrors.push(`${m.type()} at ${at || "?"}: ${m.text()}`);
    });
    page.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
    page.on("request", (r) => requests.push({ url: r.url(), fromView: r.frame() !== page.mainFrame() }));
    await page.route(hostUrl, (route) => route.fulfill({ contentType: "text/html", body: hostPage }));
    await page.goto(hostUrl);
    const ran = await page.evaluate((c) => window.runCase(c), c);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    // The view draws once the result arrives; wait for a chart, a record's verdict, a status
    // or an error.
    await frame.waitForSelector("figure svg, .readiness, .status.empty, .error", { timeout: 15_000 });
    // ...and for its size notification, which follows the drawing (on a loaded machine, well
    // after the case returned); a view that never sends one is reported with sized 0.
    await page.waitForFunction(() => window.viewSized() > 0, null, { timeout: 15_000 }).catch(() => {});
    ran.sized = await page.evaluate(() => window.viewSized());
    await page.waitForTimeout(300);
    const drawn = await frame.evaluate(() => {
      const texts = (sel) => [...document.querySelectorAll(sel)].map((e) => e.textContent.trim());
      return {
        title: texts("h1")[0] ?? null,
        svgTexts: texts("figure svg text").filter((t) => t),
        captions: texts("figcaption"),
        flags: texts(".flag"),
        notes: texts(".note"),
        empty: texts(".status.empty"),
        errors: texts(".error"),
        tableRows: document.querySelectorAll("details.table tbody tr").length,
        readiness: texts(".readiness")[0] ?? null,
        blockers: texts("ul.blockers li"),
        sections: [...document.querySelectorAll("ol.sections li")].map((li) => ({
          name: li.querySelector(".section-name")?.textContent ?? null,
          status: li.querySelector(".badge")?.dataset.status ?? null,
          missing: li.querySelector(".missing")?.textContent ?? null,
        })),
        charts: [...document.querySelectorAll("figure svg.chart-plot")].map((s) => {
          const r = s.getBoundingClientRect();
          return { width: Math.round(r.width), height: Math.round(r.height) };
        }),
        scrollWidth: document.documentElement.scrollWidth,
        clientWidth: document.documentElement.clientWidth,
        theme: document.documentElement.dataset.theme ?? null,
        background: getComputedStyle(document.body).backgroundColor,
      };
    });
    const shot = join(shots, `${c.name}.png`);
    await page.locator("iframe").screenshot({ path: shot });
    out.push({
      name: c.name,
      theme: c.theme,
      width: c.width,
      ...ran,
      drawn,
      consoleErrors,
      foreignRequests: requests.filter((r) => r.fromView || !(r.url === hostUrl || r.url === `${base}/mcp`)).map((r) => r.url),
      screenshot: shot,
    });
    await page.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ cases: out }));
