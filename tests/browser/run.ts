// The docs site in a real browser: Debian's Chromium, headless, driven by playwright-core.
// It serves the built site (.vitepress/dist; built first if missing, or always with --build)
// on 127.0.0.1 and checks, in English and Japanese:
// - the home page and a stage page load with the right `lang`, with the stage's code;
// - the language switcher reaches the twin page; the local search finds pages;
// - at 1280 px no code block, diagram or session on any stage page (or diff page) scrolls
//   sideways; at 390 px no page is wider than the screen and the breadcrumb wraps only
//   between layers; the Japanese hero title breaks only where the page allows it;
// - every stage page is at most 27 desktop screens long (the aim is 15), carried-over code collapsed;
// - every text of every SVG diagram, measured in the site's fonts (Inter; a Japanese font on
//   the Japanese pages), lies inside its box and the view box and runs into no other box;
// - the session view steps forward, back and plays, and without JavaScript shows every step;
// - the diff pages render, and "What changed" links to the regions and their diffs;
// - every stage of the curriculum has a page (written or planned) with a link to the next;
// - every internal link of the built site leads to a page and an anchor that exist;
// - a favicon, a description of its own and social-preview tags on every page.
// Screenshots go to test-results/; the run exits non-zero, naming each failed check.
//
//   npm run docs:build && npm run test:browser
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { load } from "cheerio";
import { chromium, type Page } from "playwright-core";
import { OVER_TARGET, PAGE_STAGES, nextStage } from "../../.vitepress/curriculum.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const DIST = path.join(ROOT, ".vitepress", "dist");
const RESULTS = path.join(ROOT, "test-results");
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const TIMEOUT = 15_000;
/**
 * How long a stage page may be, in desktop screens (1280 x 900) with carried-over code collapsed.
 * The aim is 15, and Parts I to III keep to it within a screen or two. A Part IV or V stage
 * shows 200-300 new lines of its own mechanism open, which alone fill 6 to 8 screens, and
 * s17's page is 24 to 25. The check holds every page to 27, so that none grows back to the 34
 * screens s06 once was, and prints each page's figure.
 */
const SITTING_SCREENS = 27;

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
    // Each check starts on a desktop screen, whatever the one before it left.
    await page.setViewportSize({ width: 1280, height: 900 });
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

/** The stage pages and diff pages the build made, per language prefix ("/" or "/ja/"). */
function builtStagePages(prefix: string): { stages: string[]; diffs: string[] } {
  const dir = path.join(DIST, prefix);
  const stages = readdirSync(dir).filter((f) => /^(s\d\d|full)\.html$/.test(f)).sort();
  const diffDir = path.join(dir, "diff");
  const diffs = existsSync(diffDir) ? readdirSync(diffDir).filter((f) => f.endsWith(".html")).sort().map((f) => `diff/${f}`) : [];
  return { stages, diffs };
}

/** Code blocks, diagrams and sessions that are wider than their box (they would scroll sideways). */
async function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const boxes = [
      ...document.querySelectorAll<HTMLElement>(".vp-doc div[class*='language-'] pre, .vp-doc .region-diff pre, .vp-doc figure.diagram, .vp-doc .session pre, .vp-doc .session-steps"),
    ];
    const wide = boxes.filter((box) => box.scrollWidth > box.clientWidth + 1).map((box) => `${box.closest("[class*='language-'], figure, .session, .region-diff")?.className ?? box.tagName}: ${box.scrollWidth} > ${box.clientWidth}`);
    const svgs = [...document.querySelectorAll<SVGElement>(".vp-doc figure.diagram svg")].filter((svg) => svg.getBoundingClientRect().width > (svg.parentElement?.clientWidth ?? 0) + 1).map(() => "a diagram wider than its figure");
    return [...wide, ...svgs];
  });
}

/**
 * Every text of every SVG diagram on the page, measured as the browser draws it: it must lie
 * inside the view box, inside its box (the smallest `.d-box` or `.d-group` shape that holds the
 * text's anchor point, its x and y; rounded corners included) and run into no other box. Each
 * problem names the diagram, the text and by how many pixels (on the screen) it overflows.
 */
async function diagramTextProblems(page: Page, lang: "en" | "ja"): Promise<{ diagrams: string[]; texts: number; problems: string[] }> {
  await page.evaluate(() => document.fonts.ready);
  // No named functions in here: tsx would wrap them in a helper that the page does not have.
  return page.evaluate((lang) => {
    const EPSILON = 0.01; // px: rounding, not a margin
    const diagrams: string[] = [];
    const problems: string[] = [];
    let texts = 0;
    for (const figure of document.querySelectorAll<HTMLElement>(".vp-doc figure.diagram")) {
      const svg = figure.querySelector("svg");
      if (!svg) continue;
      const diagram = figure.dataset.diagram ?? "a diagram";
      diagrams.push(diagram);
      const toScreen = svg.getScreenCTM()!;
      const vb = svg.viewBox.baseVal;
      const [start, end] = [new DOMPoint(vb.x, vb.y), new DOMPoint(vb.x + vb.width, vb.y + vb.height)].map((p) => p.matrixTransform(toScreen));
      const view = { left: start.x, top: start.y, right: end.x, bottom: end.y };
      const shapes = [...svg.querySelectorAll<SVGGeometryElement>(".d-box, .d-group")].filter((s) => !s.closest("defs, marker"));
      const named = shapes.map((s) => {
        const b = s.getBBox();
        return `the ${s.classList.contains("d-group") ? "group" : "box"} at ${b.x},${b.y} (${b.width}×${b.height})`;
      });
      for (const text of svg.querySelectorAll<SVGTextElement>("text")) {
        if (text.closest("defs, marker")) continue;
        texts++;
        const label = `${diagram}.${lang}.svg: "${(text.textContent ?? "").trim()}"`;
        const t = text.getBoundingClientRect();
        const x = text.x.baseVal.numberOfItems > 0 ? text.x.baseVal.getItem(0).value : 0;
        const y = text.y.baseVal.numberOfItems > 0 ? text.y.baseVal.getItem(0).value : 0;
        const anchor = new DOMPoint(x, y).matrixTransform(text.getScreenCTM()!);
        const holders = shapes.filter((s) => s.isPointInFill(anchor.matrixTransform(s.getScreenCTM()!.inverse())));
        const box = [...holders].sort((a, b) => a.getBBox().width * a.getBBox().height - b.getBBox().width * b.getBBox().height)[0];
        const frames: [string, { left: number; top: number; right: number; bottom: number }][] = [["the view box", view]];
        if (box) frames.push([`its box, ${named[shapes.indexOf(box)]}`, box.getBoundingClientRect()]);
        for (const [where, r] of frames) {
          const over = ([["left", r.left - t.left], ["right", t.right - r.right], ["top", r.top - t.top], ["bottom", t.bottom - r.bottom]] as const).filter(([, d]) => d > EPSILON);
          if (over.length > 0) problems.push(`${label} overflows ${where} by ${Math.ceil(Math.max(...over.map(([, d]) => d)) * 10) / 10} px (${over.map(([side, d]) => `${side} ${Math.ceil(d * 10) / 10} px`).join(", ")})`);
        }
        if (box) {
          // Inside the box's rectangle, a rounded corner may still cut off a corner of the text:
          // how far that corner must move toward the box's centre to be inside the shape.
          const r = box.getBoundingClientRect();
          const [cx, cy] = [(r.left + r.right) / 2, (r.top + r.bottom) / 2];
          const inRect = t.left >= r.left - EPSILON && t.right <= r.right + EPSILON && t.top >= r.top - EPSILON && t.bottom <= r.bottom + EPSILON;
          let worst = 0;
          for (const [cornerX, cornerY] of [[t.left, t.top], [t.right, t.top], [t.left, t.bottom], [t.right, t.bottom]]) {
            const length = Math.hypot(cx - cornerX, cy - cornerY);
            let moved = 0;
            while (moved < length && !box.isPointInFill(new DOMPoint(cornerX + ((cx - cornerX) * moved) / length, cornerY + ((cy - cornerY) * moved) / length).matrixTransform(box.getScreenCTM()!.inverse()))) moved += 0.1;
            worst = Math.max(worst, moved);
          }
          if (inRect && worst > EPSILON) problems.push(`${label} overflows the rounded corner of its box, ${named[shapes.indexOf(box)]}, by ${Math.ceil(worst * 10) / 10} px`);
        }
        // A box the text does not belong to: the text must not run into it.
        shapes.forEach((s, i) => {
          if (holders.includes(s)) return;
          const r = s.getBoundingClientRect();
          const across = Math.min(t.right, r.right) - Math.max(t.left, r.left);
          const down = Math.min(t.bottom, r.bottom) - Math.max(t.top, r.top);
          if (across > EPSILON && down > EPSILON) problems.push(`${label} runs into ${named[i]} by ${Math.ceil(Math.min(across, down) * 10) / 10} px`);
        });
      }
    }
    return { diagrams, texts, problems };
  }, lang);
}

/**
 * The fonts Chromium really drew the diagrams' texts with (DevTools protocol): the measure above
 * means something only in the site's fonts. Text in letters must be drawn in Inter, the web font
 * the site ships, and Japanese in one of the Japanese fonts the site names (on Debian,
 * fonts-noto-cjk); code text in whatever monospace font the page falls back to.
 */
async function diagramFontProblems(page: Page): Promise<string[]> {
  const texts = await page.locator(".vp-doc figure.diagram text").evaluateAll((nodes) =>
    nodes.map((node) => ({
      text: (node.textContent ?? "").trim(),
      code: node.classList.contains("d-code"),
      families: getComputedStyle(node).fontFamily.split(",").map((f) => f.trim().replace(/^["']|["']$/g, "")),
    })),
  );
  const cdp = await page.context().newCDPSession(page);
  try {
    await cdp.send("DOM.enable");
    await cdp.send("CSS.enable");
    const { root } = await cdp.send("DOM.getDocument", { depth: -1 });
    const { nodeIds } = await cdp.send("DOM.querySelectorAll", { nodeId: root.nodeId, selector: ".vp-doc figure.diagram text" });
    if (nodeIds.length !== texts.length) return [`${nodeIds.length} diagram texts through DevTools, ${texts.length} in the page`];
    const problems: string[] = [];
    for (const [i, nodeId] of nodeIds.entries()) {
      const { text, code, families } = texts[i];
      if (code) continue;
      const { fonts } = await cdp.send("CSS.getPlatformFontsForNode", { nodeId });
      const drawn = fonts.map((f) => `${f.familyName}${f.isCustomFont ? " (web font)" : ""}`).join(", ");
      if (/[A-Za-z]/.test(text) && !fonts.some((f) => f.isCustomFont && /^Inter\b/.test(f.familyName))) {
        problems.push(`"${text}" is drawn in ${drawn}, not in the site's Inter`);
      }
      const japanese = families.filter((f) => f !== "Inter" && !/^(sans-serif|serif|monospace|system-ui|ui-\w+)$/.test(f) && !/Emoji|Symbol/.test(f));
      if (/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u.test(text) && !fonts.some((f) => japanese.includes(f.familyName))) {
        problems.push(`"${text}" is drawn in ${drawn}, none of the site's Japanese fonts (${japanese.join(", ")}; on Debian: apt-get install fonts-noto-cjk)`);
      }
    }
    return problems;
  } finally {
    await cdp.detach();
  }
}

/** Every internal link in the built site leads to a file, and every #anchor to an id on that page. */
function deadLinksInDist(): string[] {
  const html = new Map<string, ReturnType<typeof load>>();
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === "assets" ? [] : walk(file);
      return entry.name.endsWith(".html") ? [file] : [];
    });
  for (const file of walk(DIST)) html.set("/" + path.relative(DIST, file).split(path.sep).join("/"), load(readFileSync(file, "utf8")));
  const problems = new Set<string>();
  for (const [from, $] of html) {
    if (from === "/404.html") continue;
    $("a[href]").each((_, a) => {
      const href = $(a).attr("href")!;
      if (/^[a-z]+:/i.test(href) || href.startsWith("//")) return;
      const url = new URL(href, `http://site${from}`);
      let target = decodeURIComponent(url.pathname);
      if (target.endsWith("/")) target += "index.html";
      if (!target.endsWith(".html") && !path.extname(target)) target += ".html";
      const page = html.get(target);
      if (!page) {
        if (!existsSync(path.join(DIST, target))) problems.add(`${from}: ${href} leads to ${target}, which the build does not have`);
        return;
      }
      const anchor = decodeURIComponent(url.hash.slice(1));
      if (anchor && page(`[id="${anchor}"]`).length === 0) problems.add(`${from}: ${href} names #${anchor}, which ${target} does not have`);
    });
  }
  return [...problems];
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
  const watch = (p: Page) => {
    p.on("pageerror", (error) => pageErrors.push(error.message));
    p.on("console", (message) => {
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) pageErrors.push(`${p.url().replace(site.url, "")}: ${message.text()}`);
    });
    p.on("response", (response) => {
      if (response.status() >= 400) pageErrors.push(`${response.status()} for ${response.url().replace(site.url, "")}`);
    });
  };
  watch(page);
  const open = async (urlPath: string, on: Page = page) => {
    await on.goto(site.url + urlPath, { waitUntil: "networkidle" });
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
      const key = l.label.toLowerCase();
      const built = builtStagePages(l.prefix);

      await check(`${l.label} home page loads`, page, async () => {
        await page.setViewportSize({ width: 1280, height: 900 });
        await open(l.prefix);
        await expectLang(page, l.lang);
        const name = await page.locator(".VPHero .name").innerText();
        assert(name.includes(l.home), `the hero shows "${name}"`);
        const actions = await page.locator(".VPHero .actions a").count();
        assert(actions >= 2, `the hero has ${actions} buttons`);
        const sizes = await page.locator("table.stage-sizes tbody tr").count();
        assert(sizes === PAGE_STAGES.length, `the sizes table has ${sizes} rows, not ${PAGE_STAGES.length}`);
        // A file over its size target links to the reasons on its page, which counts them from the file.
        for (const [id, held] of Object.entries(OVER_TARGET)) {
          const why = page.locator(`table.stage-sizes tr[data-stage="${id}"] a[href$="#size"]`);
          assert((await why.count()) === 1, `${id}'s row, over its target, does not link to its page's reasons`);
          await open((await why.getAttribute("href"))!);
          assert((await page.locator("h2#size, h3#size").count()) === 1, `${id}'s page has no "#size" section`);
          const total = await page.locator('table.capstone-size tr[data-origin="total"] td:nth-child(3)').innerText();
          const lines = readFileSync(path.join(ROOT, "agents", PAGE_STAGES.find((stage) => stage.id === id)!.file), "utf8").split("\n").length - 1;
          assert(total === lines.toLocaleString("en-US") && lines <= held, `${id}'s size table counts ${total} lines; the file has ${lines}`);
        }
      });

      await check(`${l.label} stage page s02 shows its header and the stage's code`, page, async () => {
        await open(`${l.prefix}s02.html`);
        await expectLang(page, l.lang);
        await page.locator(".stage-header .stage-title").waitFor();
        const current = await page.locator(".stage-breadcrumb .crumb.current").innerText();
        assert(current === "s02", `the breadcrumb marks "${current}" as current`);
        const crumbs = await page.locator(".stage-breadcrumb .crumb").count();
        assert(crumbs === PAGE_STAGES.length, `the breadcrumb has ${crumbs} stages, not ${PAGE_STAGES.length}`);
        const loc = await page.locator('[data-figure="loc"]').innerText();
        assert(/\d{3}/.test(loc), `the lines-of-code figure reads "${loc}"`);
        const tools = await page.locator('[data-figure="tools"]').innerText();
        assert(tools.includes("4"), `the tools figure reads "${tools}"`);
        const stageFile = readFileSync(path.join(ROOT, "agents", "s02_tool_use.ts"), "utf8");
        for (const line of ["function safePath(given: string): string {", "export async function agentLoop(messages: MessageParam[]): Promise<void> {"]) {
          assert(stageFile.includes(line), `the stage file no longer has: ${line}`);
          const code = await page.locator('div[class*="language-ts"] pre').allTextContents();
          assert(code.some((block) => block.includes(line)), `no code block on the page contains: ${line}`);
        }
        await page.screenshot({ path: path.join(RESULTS, `${key}-s02.png`), fullPage: true });
        await page.screenshot({ path: path.join(RESULTS, `${key}-s02-top.png`) });
        for (const section of ["how-it-works", "sandbox", "what-changed", "try-it", "comparison"]) {
          await page.locator(`h2#${section}, h3#${section}`).evaluate((heading) => heading.scrollIntoView());
          await page.screenshot({ path: path.join(RESULTS, `${key}-s02-${section}.png`) });
        }
      });

      await check(`${l.label} carried-over regions are collapsed, new and changed ones open with their lines highlighted`, page, async () => {
        await open(`${l.prefix}s05.html`);
        const loop = page.locator("details.region-block.unchanged#region-agent-loop");
        assert((await loop.count()) === 1, "the agent-loop region is not a collapsed block");
        assert(!(await loop.evaluate((d) => (d as HTMLDetailsElement).open)), "the unchanged agent-loop region is open");
        assert((await loop.locator("summary").innerText()).includes("agent-loop"), "the collapsed region's summary does not name it");
        const askUser = page.locator("figure.region-block.new#region-ask-user");
        assert((await askUser.count()) === 1, "the new ask-user region is not an open, captioned block");
        assert((await askUser.locator("figcaption").innerText()).includes("s05_ask_user.ts"), "the caption does not name the file");
        const tools = page.locator("figure.region-block.changed#region-tools");
        const highlighted = await tools.locator(".line.highlighted").count();
        assert(highlighted > 0, "the changed tools region has no highlighted line");
        const text = await tools.locator(".line.highlighted").allTextContents();
        assert(text.some((t) => t.includes("ask_user")), "the highlighted lines are not the ask_user schema");
        await tools.scrollIntoViewIfNeeded();
        await page.screenshot({ path: path.join(RESULTS, `${key}-s05-regions.png`) });
      });

      await check(`${l.label} "What changed" links each region to its block and its diff`, page, async () => {
        await open(`${l.prefix}s05.html`);
        const links = await page.locator("#what-changed ~ table a.wc-region").evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).getAttribute("href")!));
        assert(links.includes("#region-ask-user") && links.includes("#region-agent-loop"), `the region links are ${JSON.stringify(links)}`);
        for (const href of links.filter((h) => h.startsWith("#"))) {
          assert((await page.locator(`[id="${href.slice(1)}"]`).count()) === 1, `${href} leads to no block on the page`);
        }
        const diff = page.locator("#what-changed ~ table a.wc-diff").first();
        assert((await diff.getAttribute("href"))?.includes("diff/s05.html#"), "a changed row has no link to the diff page");
        await diff.click();
        await page.waitForURL(/diff\/s05\.html/);
        await page.locator(".region-diff").first().waitFor();
      });

      await check(`${l.label} no code block, diagram or session scrolls sideways at 1280 px on any stage or diff page`, page, async () => {
        await page.setViewportSize({ width: 1280, height: 900 });
        const problems: string[] = [];
        for (const file of [...built.stages, ...built.diffs]) {
          await open(`${l.prefix}${file}`);
          for (const box of await overflowing(page)) problems.push(`${file}: ${box}`);
          const width = await page.evaluate(() => document.documentElement.scrollWidth);
          if (width > 1280) problems.push(`${file}: the page is ${width} px wide`);
        }
        assert(built.stages.length >= 13, `only ${built.stages.length} stage pages were built`);
        assert(problems.length === 0, problems.join("; "));
        await open(`${l.prefix}s04.html`);
        await page.locator("#web-fetch").evaluate((h) => h.scrollIntoView());
        await page.screenshot({ path: path.join(RESULTS, `${key}-s04-code-1280.png`) });
      });

      await check(`${l.label} every stage page reads in one sitting: at most ${SITTING_SCREENS} desktop screens, carried-over code collapsed`, page, async () => {
        await page.setViewportSize({ width: 1280, height: 900 });
        const heights: string[] = [];
        const problems: string[] = [];
        for (const file of built.stages) {
          await open(`${l.prefix}${file}`);
          const screens = (await page.evaluate(() => document.documentElement.scrollHeight)) / 900;
          heights.push(`${file.replace(/\.html$/, "")} ${screens.toFixed(1)}`);
          // The capstone holds every mechanism: its page is the one allowed more.
          const most = file.startsWith("full") ? 30 : SITTING_SCREENS;
          if (screens > most) problems.push(`${file} is ${screens.toFixed(1)} screens (at most ${most})`);
        }
        console.log(`        screens: ${heights.join(", ")}`);
        assert(problems.length === 0, problems.join("; "));
      });

      await check(`${l.label} every text of every diagram lies inside its box and the view box, measured in the site's fonts`, page, async () => {
        await page.setViewportSize({ width: 1280, height: 900 });
        const lang = l.prefix === "/ja/" ? "ja" : "en";
        const suffix = `.${lang}.svg`;
        const drawn = readdirSync(path.join(ROOT, "docs", "diagrams")).filter((f) => f.endsWith(suffix)).map((f) => f.slice(0, -suffix.length));
        const measured = new Set<string>();
        const fonts: string[] = [];
        const problems: string[] = [];
        let texts = 0;
        for (const file of built.stages) {
          await open(`${l.prefix}${file}`);
          const found = await diagramTextProblems(page, lang);
          found.diagrams.forEach((d) => measured.add(d));
          texts += found.texts;
          problems.push(...found.problems.map((p) => `${l.prefix}${file} ${p}`));
          if (found.diagrams.length > 0) fonts.push(...(await diagramFontProblems(page)).map((p) => `${l.prefix}${file} ${p}`));
        }
        const unseen = drawn.filter((d) => !measured.has(d));
        assert(unseen.length === 0, `diagrams on no stage page, so not measured: ${unseen.map((d) => `docs/diagrams/${d}${suffix}`).join(", ")}`);
        assert(texts > 100, `only ${texts} texts measured in ${measured.size} diagrams`);
        // In other fonts the measures below mean nothing: say so first.
        assert(fonts.length === 0, `${fonts.length} diagram text(s) not drawn in the site's fonts, so not measured as a reader sees them: ${fonts.slice(0, 5).join("; ")}`);
        assert(problems.length === 0, `${problems.length} problem(s): ${problems.join("; ")}`);
      });

      await check(`${l.label} stage pages read on a phone (390 px): nothing wider than the screen, the breadcrumb wraps between layers`, page, async () => {
        await page.setViewportSize({ width: 390, height: 844 });
        const problems: string[] = [];
        for (const file of built.stages) {
          await open(`${l.prefix}${file}`);
          const width = await page.evaluate(() => document.documentElement.scrollWidth);
          if (width > 390) problems.push(`${file}: the page is ${width} px wide`);
          const split = await page.evaluate(() =>
            [...document.querySelectorAll(".stage-breadcrumb .crumb-layer")].filter((layer) => new Set([...layer.querySelectorAll(".crumb")].map((c) => Math.round(c.getBoundingClientRect().top))).size > 1).length,
          );
          if (split > 0) problems.push(`${file}: ${split} layer(s) of the breadcrumb wrap inside`);
          const svg = await page.locator("figure.diagram svg").first().boundingBox().catch(() => null);
          if (svg && svg.width > 390) problems.push(`${file}: the diagram is ${svg.width} px wide`);
        }
        assert(problems.length === 0, problems.join("; "));
        await open(`${l.prefix}s05.html`);
        await page.screenshot({ path: path.join(RESULTS, `${key}-s05-390-top.png`) });
        await page.locator("figure.diagram").evaluate((f) => f.scrollIntoView());
        await page.screenshot({ path: path.join(RESULTS, `${key}-s05-390-diagram.png`) });
        await page.setViewportSize({ width: 1280, height: 900 });
      });

      await check(`${l.label} the diagram follows dark mode`, page, async () => {
        await open(`${l.prefix}s02.html`);
        const fill = () => page.locator("figure.diagram .d-text").first().evaluate((t) => getComputedStyle(t).fill);
        const light = await fill();
        await page.evaluate(() => document.documentElement.classList.add("dark"));
        const dark = await fill();
        assert(light !== dark, `the diagram's text is ${light} in both modes`);
        await page.locator("figure.diagram").evaluate((f) => f.scrollIntoView());
        await page.screenshot({ path: path.join(RESULTS, `${key}-s02-diagram-dark.png`) });
        await page.evaluate(() => document.documentElement.classList.remove("dark"));
      });

      await check(`${l.label} the session view steps forward and back, and plays`, page, async () => {
        await open(`${l.prefix}s03.html`);
        const session = page.locator("[data-session]");
        await session.locator("[data-counter]").waitFor({ timeout: 2 * TIMEOUT });
        const shown = () => session.locator(".session-step:not(.later)").count();
        const total = await session.locator(".session-step").count();
        assert(total > 10, `the s03 session has ${total} steps`);
        assert((await shown()) === 1, `${await shown()} steps shown at the start, not 1`);
        await session.locator('[data-action="next"]').click();
        await session.locator('[data-action="next"]').click();
        assert((await shown()) === 3, `after two "next", ${await shown()} steps are shown`);
        assert((await session.locator(".session-step.current").getAttribute("data-step")) === "3", "step 3 is not the current one");
        await session.locator('[data-action="previous"]').click();
        assert((await shown()) === 2, `after "previous", ${await shown()} steps are shown`);
        const counter = await session.locator("[data-counter]").innerText();
        assert(counter.includes("2") && counter.includes(String(total)), `the counter reads "${counter}"`);
        // The non-unique edit is a step with its note.
        const refused = session.locator(".session-step.result.error");
        assert((await refused.count()) >= 1, "no tool result is marked as an error");
        await session.locator('[data-action="play"]').click();
        await page.waitForFunction(() => document.querySelectorAll("[data-session] .session-step:not(.later)").length >= 4, undefined, { timeout: 6000 });
        await session.locator('[data-action="play"]').click(); // pause
        await page.screenshot({ path: path.join(RESULTS, `${key}-s03-session-stepping.png`) });
        await session.locator('[data-action="mode"]').click();
        assert((await shown()) === total, "'Show all' does not show every step");
        const notes = await session.locator(".session-note").count();
        assert(notes >= 2, `${notes} notes in the s03 session`);
        await session.evaluate((s) => s.scrollIntoView());
        await page.screenshot({ path: path.join(RESULTS, `${key}-s03-session-all.png`) });
      });

      await check(`${l.label} the session reads as a plain transcript without JavaScript`, page, async () => {
        // A page of our own with scripts switched off (Chrome DevTools Protocol): what a reader
        // without JavaScript, or a search engine, gets.
        const plain = await context.newPage();
        const cdp = await context.newCDPSession(plain);
        await cdp.send("Emulation.setScriptExecutionDisabled", { value: true });
        await plain.goto(`${site.url}${l.prefix}s05.html`, { waitUntil: "load" });
        const steps = await plain.locator("[data-session] .session-step").count();
        const hidden = await plain.locator("[data-session] .session-step.later").count();
        const controls = await plain.locator("[data-session] .session-controls").count();
        assert(steps >= 8 && hidden === 0 && controls === 0, `${steps} steps, ${hidden} hidden, ${controls} controls`);
        assert((await plain.locator("[data-session] .session-note").count()) >= 2, "no notes in the plain transcript");
        await plain.locator("[data-session]").evaluate((s) => s.scrollIntoView());
        await plain.screenshot({ path: path.join(RESULTS, `${key}-s05-session-no-javascript.png`) });
        await plain.close();
      });

      await check(`${l.label} the diff view renders, region by region`, page, async () => {
        assert(built.diffs.includes("diff/s05.html"), `the diff pages built: ${built.diffs.join(", ")}`);
        await open(`${l.prefix}diff/s05.html`);
        await page.locator("#ask-user").waitFor();
        const regions = await page.locator(".region-diff").count();
        const added = await page.locator('.region-diff[data-region="ask-user"] .diff-line.add').count();
        const removed = await page.locator('.region-diff[data-region="program"] .diff-line.del').count();
        assert(regions >= 4 && added > 20 && removed >= 1, `${regions} regions, ${added} lines added to ask-user, ${removed} removed from program`);
        assert((await page.locator("#agent-loop").count()) === 1, "the unchanged agent-loop region has no anchor");
        await page.screenshot({ path: path.join(RESULTS, `${key}-diff-s05.png`), fullPage: true });
      });

      await check(`${l.label} every stage has a page, written or planned, with a link to the next`, page, async () => {
        const problems: string[] = [];
        for (const stage of PAGE_STAGES) {
          const response = await page.goto(`${site.url}${l.prefix}${stage.id}.html`, { waitUntil: "networkidle" });
          if (response?.status() !== 200) {
            problems.push(`${stage.id}: ${response?.status()}`);
            continue;
          }
          const next = page.locator('.stage-footer a[data-link="next"]');
          await next.waitFor({ timeout: TIMEOUT }).catch(() => {}); // a long page may still be hydrating
          if ((await next.count()) !== 1) {
            problems.push(`${stage.id} has no next link`);
            continue;
          }
          const href = new URL((await next.getAttribute("href"))!, page.url()).pathname;
          const expected = `${l.prefix}${nextStage(stage.id)?.id ?? "curriculum"}.html`;
          if (href !== expected) problems.push(`${stage.id}'s next link leads to ${href}, not ${expected}`);
          const planned = await page.locator(".Layout.planned-page").count();
          if (planned > 0 && (await page.locator("#teaches").count()) === 0) problems.push(`${stage.id}'s planned page does not say what it will teach`);
        }
        assert(problems.length === 0, problems.join("; "));
        await open(`${l.prefix}s05.html`);
        await page.locator(".stage-footer").evaluate((f) => f.scrollIntoView());
        await page.screenshot({ path: path.join(RESULTS, `${key}-s05-next.png`) });
        await open(`${l.prefix}s12.html`);
        await page.screenshot({ path: path.join(RESULTS, `${key}-s12.png`), fullPage: true });
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

      await check(`${l.label} pages have a favicon, their own description and social-preview tags`, page, async () => {
        await open(`${l.prefix}s03.html`);
        const icon = await page.locator('link[rel="icon"]').getAttribute("href");
        const iconStatus = icon ? (await page.request.get(new URL(icon, page.url()).href)).status() : 0;
        assert(iconStatus === 200, `the favicon ${icon} answers ${iconStatus}`);
        const description = await page.locator('meta[name="description"]').getAttribute("content");
        await open(`${l.prefix}curriculum.html`);
        const other = await page.locator('meta[name="description"]').getAttribute("content");
        assert(description && other && description !== other, `s03 and the curriculum share the description "${description}"`);
        for (const tag of ["og:title", "og:description", "og:type", "og:site_name"]) {
          assert(await page.locator(`meta[property="${tag}"]`).getAttribute("content"), `no ${tag}`);
        }
      });

      await check(`${l.label} getting started gives a way to get the code that works as written`, page, async () => {
        const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { repository?: unknown };
        await open(`${l.prefix}getting-started.html`);
        const box = page.locator(".get-the-code");
        await box.waitFor();
        const text = await box.innerText();
        assert(!/<[^>]*repositor|<リポジトリ|<このリポジトリ/i.test(await page.locator(".vp-doc").innerText()), "the page shows a placeholder address");
        if (pkg.repository) assert(/git clone \S+/.test(text), `package.json names a repository, but the page shows: ${text}`);
        else assert(!text.includes("git clone http") && text.length > 40, `with no repository in package.json the page shows: ${text}`);
        const social = await page.locator(".VPSocialLinks a").count();
        assert(Boolean(pkg.repository) === social > 0, `${social} repository links in the nav, with ${pkg.repository ? "a" : "no"} repository in package.json`);
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
          await page.screenshot({ path: path.join(RESULTS, `${key}-search-${first ? "first" : "any"}.png`) });
          await page.keyboard.press("Escape");
        });
      }
    }

    await check("the Japanese hero title breaks only between phrases on a phone", page, async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      await open("/ja/");
      const result = await page.locator(".VPHero .text").evaluate((element) => {
        // Where the text may break: after a <wbr>, or after 、 and 。.
        const allowed = new Set<number>();
        let text = "";
        for (const node of element.childNodes) {
          if (node.nodeName === "WBR") allowed.add(text.length);
          else text += node.textContent ?? "";
        }
        [...text].forEach((c, i) => (c === "、" || c === "。") && allowed.add(i + 1));
        // Where it does break: the characters whose line box starts lower than the one before.
        const starts: number[] = [];
        let offset = 0;
        let lastTop: number | undefined;
        for (const node of element.childNodes) {
          if (node.nodeType !== Node.TEXT_NODE) continue;
          for (let i = 0; i < (node.textContent ?? "").length; i++) {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            const top = Math.round(range.getBoundingClientRect().top);
            if (lastTop !== undefined && top > lastTop + 4) starts.push(offset + i);
            lastTop = top;
          }
          offset += (node.textContent ?? "").length;
        }
        return { text, breaks: starts, bad: starts.filter((i) => !allowed.has(i)).map((i) => `${text.slice(Math.max(0, i - 3), i)}|${text.slice(i, i + 3)}`) };
      });
      assert(result.breaks.length > 0, "the title does not wrap at 390 px, so the check saw nothing");
      assert(result.bad.length === 0, `the title breaks inside a phrase at ${result.bad.join(", ")}`);
      await page.screenshot({ path: path.join(RESULTS, "japanese-home-390.png") });
      await page.setViewportSize({ width: 1280, height: 900 });
    });

    await check("the curriculum links every stage, planned ones to their planned page", page, async () => {
      await open("/ja/curriculum.html");
      const ready = await page.locator(".curriculum-stage.ready a.curriculum-name").count();
      const coming = await page.locator(".curriculum-stage.coming").count();
      const comingLinks = await page.locator(".curriculum-stage.coming a.curriculum-name").count();
      assert(ready >= 2 && ready + coming === PAGE_STAGES.length, `${ready} stages ready and ${coming} planned`);
      assert(comingLinks === coming, `${comingLinks} of ${coming} planned stages link to their page`);
      await page.screenshot({ path: path.join(RESULTS, "japanese-curriculum.png"), fullPage: true });
    });

    await check("every internal link of the built site leads to a page and an anchor that exist", page, async () => {
      const dead = deadLinksInDist();
      assert(dead.length === 0, `${dead.length} dead: ${dead.slice(0, 8).join("; ")}`);
    });

    await check("no errors in the browser console (hydration included)", page, async () => {
      assert(pageErrors.length === 0, [...new Set(pageErrors)].join(" | "));
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
