// The docs site in a real browser: Debian's Chromium, headless, driven by playwright-core.
// It serves the built site (.vitepress/dist; built first if missing, or always with --build)
// on 127.0.0.1 and checks, in English and Japanese, that the home page and a stage page load
// with the right `lang`, that the stage's code is on the page, that the language switcher
// reaches the twin page, and that the local search finds pages (エージェントループ -> s01).
// Screenshots go to test-results/; the run exits non-zero, naming each failed check.
//
//   npm run docs:build && npm run test:browser
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Page } from "playwright-core";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const DIST = path.join(ROOT, ".vitepress", "dist");
const RESULTS = path.join(ROOT, "test-results");
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const TIMEOUT = 15_000;

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

/** A small static server for the built site, on loopback only. */
function serve(dir: string): Promise<{ url: string; close(): void }> {
  const server = http.createServer((request, response) => {
    const urlPath = decodeURIComponent(new URL(request.url ?? "/", "http://x").pathname);
    let file = path.join(dir, path.normalize(urlPath));
    if (!file.startsWith(dir)) file = path.join(dir, "404.html");
    if (existsSync(file) && statSync(file).isDirectory()) file = path.join(file, "index.html");
    if (!existsSync(file) && existsSync(`${file}.html`)) file = `${file}.html`;
    const found = existsSync(file);
    if (!found) file = path.join(dir, "404.html");
    response.writeHead(found ? 200 : 404, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream" });
    response.end(readFileSync(file));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, close: () => server.close() });
    }),
  );
}

type Search = { query: string; first?: string; anywhere?: string };

const failures: string[] = [];
let passed = 0;

async function check(name: string, page: Page, body: () => Promise<void>): Promise<void> {
  try {
    await body();
    passed++;
    console.log(`ok      ${name}`);
  } catch (error) {
    const message = (error as Error).message.split("\n")[0];
    failures.push(`${name}: ${message}`);
    console.log(`FAILED  ${name}\n        ${message}`);
    const shot = path.join(RESULTS, `failed-${name.replace(/[^\w]+/g, "-").toLowerCase()}.png`);
    await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
    console.log(`        screenshot: ${path.relative(ROOT, shot)}`);
  }
}

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** `<html lang>` is `lang`: at once after a page load, or soon after a client-side navigation. */
async function expectLang(page: Page, lang: string): Promise<void> {
  const ok = await page
    .waitForFunction((expected) => document.documentElement.lang === expected, lang, { timeout: 5000 })
    .then(() => true, () => false);
  const actual = await page.getAttribute("html", "lang");
  assert(ok, `<html lang> is "${actual}", expected "${lang}"`);
}

/** Open the local search, type a query, and return the result links' paths. */
async function search(page: Page, query: string): Promise<string[]> {
  // The search box restores the last query from sessionStorage: start from an empty one, so
  // the results read below belong to this query.
  await page.evaluate(() => sessionStorage.clear());
  await page.click(".VPNavBarSearch button");
  const input = page.locator(".VPLocalSearchBox input");
  await input.waitFor({ timeout: TIMEOUT });
  await input.fill(query);
  await page.waitForTimeout(400); // the box searches 200 ms after the last keystroke
  await page.locator(".VPLocalSearchBox .result, .VPLocalSearchBox .no-results").first().waitFor({ timeout: TIMEOUT });
  if ((await page.locator(".VPLocalSearchBox .result").count()) === 0) throw new Error(`no results for "${query}"`);
  const hrefs = await page.locator(".VPLocalSearchBox .result").evaluateAll((links) => links.map((a) => (a as HTMLAnchorElement).pathname));
  return hrefs;
}

async function main(): Promise<number> {
  if (!existsSync(CHROMIUM)) {
    console.error(`No Chromium at ${CHROMIUM}. Install Debian's: apt-get install -y --no-install-recommends chromium`);
    return 2;
  }
  if (process.argv.includes("--build") || !existsSync(path.join(DIST, "index.html"))) {
    console.log("Building the docs (npm run docs:build)...");
    const build = spawnSync("npx", ["vitepress", "build"], { cwd: ROOT, stdio: "inherit" });
    if (build.status !== 0) return 1;
  }
  rmSync(RESULTS, { recursive: true, force: true });
  mkdirSync(RESULTS, { recursive: true });

  const site = await serve(DIST);
  const profile = mkdtempSync(path.join(os.tmpdir(), "workbook-chromium-"));
  // launchPersistentContext, so the profile (--user-data-dir) is a fresh folder of our own.
  // Without the background-networking flags Chromium reaches out on start, and on a closed
  // network its connections are refused.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(TIMEOUT);
  const pageErrors: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) pageErrors.push(message.text());
  });
  page.on("response", (response) => {
    if (response.status() >= 400) pageErrors.push(`${response.status()} for ${response.url().replace(site.url, "")}`);
  });
  const open = async (urlPath: string) => {
    await page.goto(site.url + urlPath, { waitUntil: "networkidle" });
  };

  try {
    const languages = [
      { lang: "en-US", prefix: "/", twin: "/ja/", home: "Agent Workbook", label: "English",
        searches: [{ query: "dispatch map", first: "/s02.html" }, { query: "symlinks", anywhere: "/s02.html" }] as Search[] },
      { lang: "ja", prefix: "/ja/", twin: "/", home: "Agent Workbook", label: "Japanese",
        // エージェントループ is also the s01 page's title, so spaces around it help; 相棒 is
        // only ever inside a sentence, where a search that splits on spaces cannot see it.
        searches: [{ query: "エージェントループ", first: "/ja/s01.html" }, { query: "相棒", anywhere: "/ja/s01.html" }] as Search[] },
    ];
    for (const l of languages) {
      await check(`${l.label} home page loads`, page, async () => {
        await open(l.prefix);
        await expectLang(page, l.lang);
        const name = await page.locator(".VPHero .name").innerText();
        assert(name.includes(l.home), `the hero shows "${name}"`);
        const actions = await page.locator(".VPHero .actions a").count();
        assert(actions >= 2, `the hero has ${actions} buttons`);
      });

      await check(`${l.label} stage page s02 shows its header and the stage's code`, page, async () => {
        await open(`${l.prefix}s02.html`);
        await expectLang(page, l.lang);
        await page.locator(".stage-header .stage-title").waitFor();
        const current = await page.locator(".stage-breadcrumb .crumb.current").innerText();
        assert(current === "s02", `the breadcrumb marks "${current}" as current`);
        const crumbs = await page.locator(".stage-breadcrumb .crumb").count();
        assert(crumbs === 12, `the breadcrumb has ${crumbs} stages`);
        const loc = await page.locator('[data-figure="loc"]').innerText();
        assert(/\d{3}/.test(loc), `the lines-of-code figure reads "${loc}"`);
        const tools = await page.locator('[data-figure="tools"]').innerText();
        assert(tools.includes("4"), `the tools figure reads "${tools}"`);
        const stageFile = readFileSync(path.join(ROOT, "agents", "s02_tool_use.ts"), "utf8");
        for (const line of ["function safePath(given: string): string {", "export async function agentLoop(messages: MessageParam[]): Promise<void> {"]) {
          assert(stageFile.includes(line), `the stage file no longer has: ${line}`);
          const code = await page.locator('div[class*="language-ts"] pre').allInnerTexts();
          assert(code.some((block) => block.includes(line)), `no code block on the page contains: ${line}`);
        }
        await page.screenshot({ path: path.join(RESULTS, `${l.label.toLowerCase()}-s02.png`), fullPage: true });
        await page.screenshot({ path: path.join(RESULTS, `${l.label.toLowerCase()}-s02-top.png`) });
        for (const section of ["solution", "sandbox", "what-changed", "comparison"]) {
          await page.locator(`h2#${section}, h3#${section}`).evaluate((heading) => heading.scrollIntoView());
          await page.screenshot({ path: path.join(RESULTS, `${l.label.toLowerCase()}-s02-${section}.png`) });
        }
      });

      await check(`${l.label} language switcher reaches the twin page`, page, async () => {
        await open(`${l.prefix}s01.html`);
        await page.hover(".VPNavBarTranslations button");
        const link = page.locator(`.VPNavBarTranslations a[href*="s01"]`);
        await link.first().waitFor({ state: "visible" });
        await link.first().click();
        await page.waitForURL(`**${l.twin}s01.html`);
        await expectLang(page, l.twin === "/ja/" ? "ja" : "en-US");
        await page.locator(".stage-header .stage-title").waitFor();
      });

      for (const { query, first, anywhere } of l.searches) {
        const wanted = first ?? anywhere;
        await check(`${l.label} search for "${query}" finds ${wanted}`, page, async () => {
          await open(`${l.prefix}curriculum.html`);
          const found = await search(page, query);
          if (first) assert(found[0] === first, `the first result is not ${first}: ${JSON.stringify(found)}`);
          else assert(found.includes(anywhere!), `${anywhere} is not among the results: ${JSON.stringify(found)}`);
          const otherLanguage = found.filter((href) => href.startsWith("/ja/") !== (l.prefix === "/ja/"));
          assert(otherLanguage.length === 0, `results from the other language: ${JSON.stringify(otherLanguage)}`);
          await page.screenshot({ path: path.join(RESULTS, `${l.label.toLowerCase()}-search-${first ? "first" : "any"}.png`) });
          await page.keyboard.press("Escape");
        });
      }
    }

    await check("the curriculum shows coming stages without links", page, async () => {
      await open("/ja/curriculum.html");
      const ready = await page.locator(".curriculum-stage.ready a").count();
      const coming = await page.locator(".curriculum-stage.coming").count();
      const comingLinks = await page.locator(".curriculum-stage.coming a").count();
      assert(ready >= 2 && ready + coming === 12, `${ready} stages ready and ${coming} coming`);
      assert(comingLinks === 0, `${comingLinks} links among the coming stages`);
      await page.screenshot({ path: path.join(RESULTS, "japanese-curriculum.png"), fullPage: true });
    });

    await check("no errors in the browser console", page, async () => {
      assert(pageErrors.length === 0, pageErrors.join(" | "));
    });
  } finally {
    await context.close();
    site.close();
    rmSync(profile, { recursive: true, force: true });
  }

  console.log(`\nScreenshots: ${path.relative(ROOT, RESULTS)}/`);
  console.log(`${passed} passed, ${failures.length} failed`);
  if (failures.length > 0) console.log(`Failed:\n- ${failures.join("\n- ")}`);
  return failures.length === 0 ? 0 : 1;
}

process.exit(await main());
