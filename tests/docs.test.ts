// The docs site's checks: every stage has its pages in both languages, the two languages
// have the same pages and sections, every included snippet names a real file and region
// (VitePress 1.x silently includes the whole file for a missing region), every internal link
// leads to a page, and each stage page's "What changed" names every region that changed.
// These read files only: they never build the site and never touch the network.
// Each check is a function of a repository root, so it is also run against a broken copy
// in a temporary folder, to show that it fails when it should.
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { STAGES, type Lang } from "../.vitepress/curriculum.ts";
import { nav, sidebar } from "../.vitepress/navigation.ts";
import { tokenize } from "../.vitepress/search.ts";
import { linesOfCode, regionsOf, toolCount } from "../.vitepress/source.ts";
import { existingStages, REPO_ROOT } from "../lib/stages.ts";

// ---------------------------------------------------------------------------------------
// The checks

const LANGS: Lang[] = ["en", "ja"];
const STAGE_SECTIONS = ["problem", "solution", "how-it-works", "what-changed", "try-it", "comparison"];
const UNCHANGED: Record<Lang, string> = { en: "unchanged", ja: "変更なし" };

const docsDir = (root: string) => path.join(root, "docs");
const langDir = (root: string, lang: Lang) => (lang === "ja" ? path.join(docsDir(root), "ja") : docsDir(root));
const read = (file: string) => readFileSync(file, "utf8");
const stages = (root: string) => existingStages(path.join(root, "agents"));

/** The Markdown pages of one language, as names relative to its folder: "index.md", "s01.md". */
function pagesOf(root: string, lang: Lang): string[] {
  const dir = langDir(root, lang);
  const walk = (sub: string): string[] =>
    readdirSync(path.join(dir, sub), { withFileTypes: true }).flatMap((entry) => {
      const relative = path.posix.join(sub, entry.name);
      if (entry.isDirectory()) return lang === "en" && relative === "ja" ? [] : walk(relative);
      return entry.name.endsWith(".md") ? [relative] : [];
    });
  return walk("").sort();
}

function checkStagePagesExist(root: string): string[] {
  const problems: string[] = [];
  for (const [id, file] of stages(root)) {
    for (const lang of LANGS) {
      const page = path.join(langDir(root, lang), `${id}.md`);
      if (!existsSync(page)) problems.push(`agents/${file} has no page: ${path.relative(root, page)} is missing`);
    }
  }
  return problems;
}

function checkSamePages(root: string): string[] {
  const [en, ja] = [pagesOf(root, "en"), pagesOf(root, "ja")];
  return [
    ...en.filter((page) => !ja.includes(page)).map((page) => `docs/${page} has no Japanese twin docs/ja/${page}`),
    ...ja.filter((page) => !en.includes(page)).map((page) => `docs/ja/${page} has no English twin docs/${page}`),
  ];
}

/** The explicit heading ids of a page, `## Problem {#problem}` -> "problem", in order. */
function sectionIds(markdown: string): string[] {
  return [...markdown.matchAll(/^#{1,6} .*\{#([\w-]+)\}\s*$/gm)].map((match) => match[1]);
}

function checkSameSections(root: string): string[] {
  const problems: string[] = [];
  for (const page of pagesOf(root, "en")) {
    const jaPage = path.join(langDir(root, "ja"), page);
    if (!existsSync(jaPage)) continue; // reported by checkSamePages
    const [en, ja] = [sectionIds(read(path.join(docsDir(root), page))), sectionIds(read(jaPage))];
    if (en.join(",") !== ja.join(",")) {
      problems.push(`docs/${page} and docs/ja/${page} differ in their sections: [${en.join(", ")}] vs [${ja.join(", ")}]`);
    }
  }
  return problems;
}

function checkStagePageShape(root: string): string[] {
  const problems: string[] = [];
  const present = stages(root);
  for (const [id, file] of present) {
    const meta = STAGES.find((stage) => stage.id === id);
    if (!meta) problems.push(`agents/${file} is not in the curriculum list (.vitepress/curriculum.ts)`);
    else if (meta.file !== file) problems.push(`.vitepress/curriculum.ts names ${meta.file} for ${id}, but the file is agents/${file}`);
    for (const lang of LANGS) {
      const page = path.join(langDir(root, lang), `${id}.md`);
      if (!existsSync(page)) continue;
      const name = path.relative(root, page);
      const text = read(page);
      if (!text.includes(`<StageHeader stage="${id}" />`)) problems.push(`${name} does not start with <StageHeader stage="${id}" />`);
      const ids = sectionIds(text);
      const order = STAGE_SECTIONS.map((section) => ids.indexOf(section));
      STAGE_SECTIONS.forEach((section, i) => {
        if (order[i] === -1) problems.push(`${name} has no section {#${section}}`);
      });
      if (order.every((n) => n >= 0) && order.some((n, i) => i > 0 && n < order[i - 1])) {
        problems.push(`${name}: the sections are not in the order ${STAGE_SECTIONS.join(", ")}`);
      }
      if (!text.includes(`<<< @/../agents/${file}#agent-loop`)) problems.push(`${name} does not include the agent-loop region of agents/${file}`);
      if (!text.includes(`npx tsx agents/${file}`)) problems.push(`${name}: "Try it" does not give the command npx tsx agents/${file}`);
      if (!text.includes(`npm run replay -- ${id}`)) problems.push(`${name}: "Try it" does not give the offline replay npm run replay -- ${id}`);
      // Code comes from the stage file by region, never pasted: no TypeScript blocks by hand.
      if (/^```(ts|typescript|js|javascript)\b/m.test(text)) problems.push(`${name} has a pasted code block; include the region with <<< instead`);
    }
  }
  return problems;
}

/** Every `<<< @/…#region` include names a file that exists and a region that file has. */
function checkSnippets(root: string): string[] {
  const problems: string[] = [];
  for (const lang of LANGS) {
    for (const page of pagesOf(root, lang)) {
      const file = path.join(langDir(root, lang), page);
      const name = path.relative(root, file);
      for (const match of read(file).matchAll(/^<<<\s+(\S+)/gm)) {
        const spec = match[1];
        const [target, region] = spec.replace(/\{.*$/, "").replace(/\[.*$/, "").split("#");
        if (!target.startsWith("@/")) {
          problems.push(`${name}: include ${spec} should start with @/ (the docs folder)`);
          continue;
        }
        const included = path.join(docsDir(root), target.slice(2));
        if (!existsSync(included)) {
          problems.push(`${name}: include ${spec} names a missing file ${path.relative(root, included)}`);
          continue;
        }
        if (!region) continue;
        let regions: Map<string, string>;
        try {
          regions = regionsOf(read(included));
        } catch (error) {
          problems.push(`${name}: include ${spec}: ${(error as Error).message} in ${path.relative(root, included)}`);
          continue;
        }
        if (!regions.has(region)) {
          problems.push(`${name}: include ${spec} names a missing region "${region}" (the file has: ${[...regions.keys()].join(", ")})`);
        }
      }
    }
  }
  return problems;
}

/** The page a site link leads to, as a path under docs/, or undefined for an external link. */
function linkTarget(link: string, fromPage: string): { page: string; anchor?: string } | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith("//")) return undefined; // https:, mailto:
  const [rawPath, anchor] = link.split("#");
  let target = rawPath === "" ? fromPage : rawPath.startsWith("/") ? rawPath.slice(1) : path.posix.join(path.posix.dirname(fromPage), rawPath);
  target = path.posix.normalize(target);
  if (target === "." || target === "" || target.endsWith("/")) target = path.posix.join(target, "index");
  target = target.replace(/\.(html|md)$/, "");
  return { page: `${target}.md`, anchor: anchor || undefined };
}

/** The internal links of one page: Markdown links, HTML hrefs and frontmatter `link:` values. */
function linksOf(markdown: string): string[] {
  const withoutCode = markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  return [
    ...[...withoutCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]),
    ...[...withoutCode.matchAll(/\bhref="([^"]+)"/g)].map((m) => m[1]),
    ...[...withoutCode.matchAll(/^\s*link:\s*(\S+)\s*$/gm)].map((m) => m[1].replace(/^["']|["']$/g, "")),
  ];
}

function checkLinks(root: string, extra: { from: string; links: string[] }[] = []): string[] {
  const problems: string[] = [];
  const sources = [
    ...LANGS.flatMap((lang) =>
      pagesOf(root, lang).map((page) => {
        const from = lang === "ja" ? `ja/${page}` : page;
        return { from, links: linksOf(read(path.join(docsDir(root), from))) };
      }),
    ),
    ...extra,
  ];
  for (const { from, links } of sources) {
    for (const link of links) {
      const target = linkTarget(link, from.endsWith(".md") ? from : "index.md");
      if (!target) continue;
      const file = path.join(docsDir(root), target.page);
      if (!existsSync(file)) {
        problems.push(`${from}: the link ${link} leads to docs/${target.page}, which does not exist`);
        continue;
      }
      if (target.anchor && !sectionIds(read(file)).includes(target.anchor)) {
        problems.push(`${from}: the link ${link} names #${target.anchor}, which docs/${target.page} has no heading for`);
      }
    }
  }
  return [...new Set(problems)];
}

/** The links in the nav and the sidebar, for one set of existing stages. */
function navigationLinks(present: ReadonlyMap<string, string>): { from: string; links: string[] }[] {
  const collect = (items: unknown[]): string[] =>
    items.flatMap((item) => {
      const { link, items: children } = item as { link?: string; items?: unknown[] };
      return [...(link ? [link] : []), ...(children ? collect(children) : [])];
    });
  return LANGS.map((lang) => ({ from: `the ${lang} nav and sidebar`, links: collect([...nav(lang, present), ...sidebar(lang, present)]) }));
}

/** The "What changed" section of a page: from its {#what-changed} heading to the next heading of that level. */
function whatChanged(markdown: string): string | undefined {
  const match = /^(#{2,3}) .*\{#what-changed\}\s*$/m.exec(markdown);
  if (!match) return undefined;
  const rest = markdown.slice(match.index + match[0].length);
  const next = new RegExp(`^#{1,${match[1].length}} `, "m").exec(rest);
  return next ? rest.slice(0, next.index) : rest;
}

/** Regions that differ between a stage and the one before it: changed text, or new. */
export function changedRegions(before: string, after: string): string[] {
  const [old, now] = [regionsOf(before), regionsOf(after)];
  return [...now.keys()].filter((name) => !old.has(name) || old.get(name) !== now.get(name));
}

function checkWhatChanged(root: string): string[] {
  const problems: string[] = [];
  const present = [...stages(root)];
  for (let i = 1; i < present.length; i++) {
    const [[prevId, prevFile], [id, file]] = [present[i - 1], present[i]];
    const changed = changedRegions(read(path.join(root, "agents", prevFile)), read(path.join(root, "agents", file)));
    for (const lang of LANGS) {
      const page = path.join(langDir(root, lang), `${id}.md`);
      if (!existsSync(page)) continue; // reported by checkStagePagesExist
      const name = path.relative(root, page);
      const section = whatChanged(read(page));
      if (section === undefined) {
        problems.push(`${name} has no "What changed" section ({#what-changed})`);
        continue;
      }
      const rows = section.split("\n").filter((line) => line.startsWith("|"));
      for (const region of changed) {
        const naming = rows.filter((row) => row.includes(`\`${region}\``));
        if (naming.length === 0) {
          problems.push(`${name}: region \`${region}\` differs from ${prevId} (agents/${prevFile}) but "What changed" does not name it`);
        } else if (naming.every((row) => row.includes(UNCHANGED[lang]))) {
          problems.push(`${name}: region \`${region}\` differs from ${prevId} (agents/${prevFile}) but "What changed" calls it ${UNCHANGED[lang]}`);
        }
      }
      const loopRow = rows.find((row) => row.includes("`agent-loop`"));
      if (!loopRow) problems.push(`${name}: the "What changed" table has no \`agent-loop\` row`);
      else if (!loopRow.includes(UNCHANGED[lang])) problems.push(`${name}: the \`agent-loop\` row of "What changed" does not read "${UNCHANGED[lang]}"`);
    }
  }
  return problems;
}

function checkLoopIdentical(root: string): string[] {
  const loops = [...stages(root)].map(([id, file]) => ({ id, file, loop: regionsOf(read(path.join(root, "agents", file))).get("agent-loop") }));
  const problems = loops.filter((s) => s.loop === undefined).map((s) => `agents/${s.file} has no agent-loop region`);
  const first = loops.find((s) => s.loop !== undefined);
  for (const s of loops) {
    if (first && s.loop !== undefined && s.loop !== first.loop) problems.push(`the agent-loop region of agents/${s.file} differs from agents/${first.file}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------
// The checks on the real repository

describe("the docs of every stage", () => {
  it("has an English and a Japanese page for every stage file", () => {
    expect(checkStagePagesExist(REPO_ROOT)).toEqual([]);
  });
  it("has the same pages in English and Japanese", () => {
    expect(checkSamePages(REPO_ROOT)).toEqual([]);
  });
  it("has the same sections, by heading id, in both languages", () => {
    expect(checkSameSections(REPO_ROOT)).toEqual([]);
  });
  it("gives each stage page its header, sections, loop, command and replay", () => {
    expect(checkStagePageShape(REPO_ROOT)).toEqual([]);
  });
  it("includes only snippets whose file and region exist", () => {
    expect(checkSnippets(REPO_ROOT)).toEqual([]);
  });
  it("has no broken internal link in the pages, the nav or the sidebar", () => {
    expect(checkLinks(REPO_ROOT, navigationLinks(stages(REPO_ROOT)))).toEqual([]);
  });
  it("names every changed or new region in each stage's What changed, in both languages", () => {
    expect(checkWhatChanged(REPO_ROOT)).toEqual([]);
  });
  it("keeps the agent-loop region byte for byte the same in every stage file", () => {
    expect(stages(REPO_ROOT).size).toBeGreaterThanOrEqual(2);
    expect(checkLoopIdentical(REPO_ROOT)).toEqual([]);
  });
  it("counts the tools each stage really gives the model", async () => {
    for (const [id, file] of stages(REPO_ROOT)) {
      const counted = toolCount(read(path.join(REPO_ROOT, "agents", file)));
      const stage = (await import(path.join(REPO_ROOT, "agents", file))) as { TOOLS?: unknown[] };
      if (stage.TOOLS === undefined) continue; // a stage without a TOOLS array shows no tool figure
      expect(counted, `${id}: the tool figure`).toBe(stage.TOOLS.length);
    }
  });
});

// ---------------------------------------------------------------------------------------
// Each check fails on a broken copy of the repository

describe("the checks catch broken docs", () => {
  const copies: string[] = [];
  afterAll(() => copies.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  /** A copy of the stage files and docs/ in a temporary folder, to break. */
  function brokenCopy(): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), "workbook-docs-"));
    copies.push(dir);
    cpSync(path.join(REPO_ROOT, "docs"), path.join(dir, "docs"), { recursive: true });
    for (const name of stages(REPO_ROOT).values()) {
      cpSync(path.join(REPO_ROOT, "agents", name), path.join(dir, "agents", name));
    }
    return dir;
  }
  const edit = (file: string, change: (text: string) => string) => writeFileSync(file, change(read(file)));

  it("passes the untouched copy (so each failure below comes from its own break)", () => {
    const dir = brokenCopy();
    for (const check of [checkStagePagesExist, checkSamePages, checkSameSections, checkStagePageShape, checkSnippets, checkWhatChanged, checkLoopIdentical]) {
      expect(check(dir), check.name).toEqual([]);
    }
    expect(checkLinks(dir, navigationLinks(stages(dir)))).toEqual([]);
  });

  it("names a stage file that has no page", () => {
    const dir = brokenCopy();
    const next = `s${String(stages(dir).size + 1).padStart(2, "0")}`; // the stage after the last one
    writeFileSync(path.join(dir, "agents", `${next}_new_stage.ts`), read(path.join(dir, "agents", "s02_tool_use.ts")));
    expect(checkStagePagesExist(dir)).toEqual([
      `agents/${next}_new_stage.ts has no page: docs/${next}.md is missing`,
      `agents/${next}_new_stage.ts has no page: docs/ja/${next}.md is missing`,
    ]);
  });

  it("names a page with no twin in the other language", () => {
    const dir = brokenCopy();
    rmSync(path.join(dir, "docs", "ja", "getting-started.md"));
    writeFileSync(path.join(dir, "docs", "ja", "extra.md"), "# おまけ\n");
    expect(checkSamePages(dir)).toEqual([
      "docs/getting-started.md has no Japanese twin docs/ja/getting-started.md",
      "docs/ja/extra.md has no English twin docs/extra.md",
    ]);
  });

  it("names a section one language has and the other lacks", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "docs", "ja", "s02.md"), (text) => text.replace("## Claude Code などとの比較 {#comparison}", "## 比較"));
    const problems = [...checkSameSections(dir), ...checkStagePageShape(dir)];
    expect(problems.join("\n")).toMatch(/docs\/s02\.md and docs\/ja\/s02\.md differ in their sections/);
    expect(problems).toContain("docs/ja/s02.md has no section {#comparison}");
  });

  it("names an include of a missing region or file, and a pasted block", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "docs", "s02.md"), (text) =>
      text
        .replace("#sandbox{ts}", "#sandbocks{ts}")
        .replace("<<< @/../agents/s02_tool_use.ts#read-file{ts}", "<<< @/../agents/s02_tools.ts#read-file{ts}")
        .concat("\n```ts\nconst pasted = true;\n```\n"),
    );
    const problems = checkSnippets(dir);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/docs\/s02\.md: include .*s02_tool_use\.ts#sandbocks.* names a missing region "sandbocks"/);
    expect(problems[1]).toMatch(/docs\/s02\.md: include .*s02_tools\.ts#read-file.* names a missing file agents\/s02_tools\.ts/);
    expect(checkStagePageShape(dir)).toContain("docs/s02.md has a pasted code block; include the region with <<< instead");
  });

  it("names a region opened and never closed in the stage file", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "agents", "s02_tool_use.ts"), (text) => text.replace("// #endregion sandbox", ""));
    expect(checkSnippets(dir).join("\n")).toMatch(/region "sandbox" is never closed/);
  });

  it("names a broken link in a page, a frontmatter action, a missing anchor and the sidebar", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "docs", "ja", "s01.md"), (text) => text.replace("(./getting-started)", "(./getting-startd)"));
    edit(path.join(dir, "docs", "index.md"), (text) => text.replace("link: /curriculum", "link: /curricullum").concat("\n[x](./s02#no-such-section)\n"));
    const next = `s${String(stages(dir).size + 1).padStart(2, "0")}`; // a stage file with no page yet
    const problems = checkLinks(dir, navigationLinks(new Map([...stages(dir), [next, `${next}_new_stage.ts`]])));
    expect(problems).toContain("ja/s01.md: the link ./getting-startd leads to docs/ja/getting-startd.md, which does not exist");
    expect(problems).toContain("index.md: the link /curricullum leads to docs/curricullum.md, which does not exist");
    expect(problems).toContain("index.md: the link ./s02#no-such-section names #no-such-section, which docs/s02.md has no heading for");
    expect(problems).toContain(`the en nav and sidebar: the link /${next} leads to docs/${next}.md, which does not exist`);
    expect(problems).toContain(`the ja nav and sidebar: the link /ja/${next} leads to docs/ja/${next}.md, which does not exist`);
  });

  it("names a changed region that What changed leaves out, and a loop row that is not unchanged", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "agents", "s02_tool_use.ts"), (text) => text.replace("function showText(response: Message): void {", "function showText(response: Message): void {\n  // changed"));
    edit(path.join(dir, "docs", "ja", "s02.md"), (text) => text.replace("| `agent-loop` | | 変更なし |", "| `agent-loop` | | 同じ |").replace("| `sandbox` |", "| サンドボックス |"));
    const problems = checkWhatChanged(dir);
    expect(problems).toContain('docs/s02.md: region `end-turn` differs from s01 (agents/s01_agent_loop.ts) but "What changed" calls it unchanged');
    expect(problems).toContain('docs/ja/s02.md: region `sandbox` differs from s01 (agents/s01_agent_loop.ts) but "What changed" does not name it');
    expect(problems).toContain('docs/ja/s02.md: the `agent-loop` row of "What changed" does not read "変更なし"');
  });

  it("names a stage whose agent loop drifted", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "agents", "s02_tool_use.ts"), (text) => text.replace("while (true) {", "while (true) { // drift"));
    expect(checkLoopIdentical(dir)).toEqual(["the agent-loop region of agents/s02_tool_use.ts differs from agents/s01_agent_loop.ts"]);
  });
});

// ---------------------------------------------------------------------------------------
// The pieces the site is built from

describe("regionsOf", () => {
  it("returns each region's text between its markers", () => {
    const text = ["a", "// #region one", "x", "  // #region two", "y", "  // #endregion two", "// #endregion one", "b"].join("\n");
    const regions = regionsOf(text);
    expect([...regions.keys()]).toEqual(["two", "one"]);
    expect(regions.get("two")).toBe("y");
    expect(regions.get("one")).toBe("x\n  // #region two\ny\n  // #endregion two");
  });
  it("refuses a region closed without opening, or opened twice", () => {
    expect(() => regionsOf("// #endregion one")).toThrow(/never opened/);
    expect(() => regionsOf("// #region a\n// #endregion a\n// #region a\n// #endregion a")).toThrow(/opened twice/);
  });
});

describe("the figures", () => {
  it("counts lines of code, not blank lines or comments", () => {
    const text = [
      "/**",
      " * header: not code",
      " */",
      "import x from 'y';",
      "",
      "// a comment",
      "const a = 1; // code with a comment",
      "/* inline */ const b = 2;",
      "const s = `first",
      "// inside a template: code",
      "`;",
      "   ",
    ].join("\n");
    expect(linesOfCode(text)).toBe(6);
    expect(linesOfCode("")).toBe(0);
  });
  it("counts the entries of the TOOLS array, and nothing when there is none", () => {
    expect(toolCount("export const TOOLS: Tool[] = [{ name: 'a' }, { name: 'b', nested: [1, 2, 3] }];")).toBe(2);
    expect(toolCount("const TOOLS = [] as Tool[];")).toBe(0);
    expect(toolCount("const TOOLS = [...OTHER, { name: 'c' }];")).toBeUndefined();
    expect(toolCount("const tools = [1];")).toBeUndefined();
  });
  it("gives the real stages their figures", () => {
    const s01 = read(path.join(REPO_ROOT, "agents", "s01_agent_loop.ts"));
    const s02 = read(path.join(REPO_ROOT, "agents", "s02_tool_use.ts"));
    expect(toolCount(s01)).toBe(1);
    expect(toolCount(s02)).toBe(4);
    expect(linesOfCode(s01)).toBeGreaterThan(80);
    expect(linesOfCode(s01)).toBeLessThan(s01.split("\n").length);
    expect(linesOfCode(s02)).toBeGreaterThan(linesOfCode(s01));
  });
});

describe("the search tokenizer", () => {
  it("splits Japanese sentences into words, where spaces would find nothing", () => {
    expect(tokenize("エージェントループは変わりません")).toEqual(expect.arrayContaining(["エージェント", "ループ"]));
    expect(tokenize("ディスパッチマップにハンドラを足す")).toEqual(expect.arrayContaining(["ディスパッチ", "マップ", "ハンドラ"]));
    expect(tokenize("エージェントループは")).not.toContain("は"); // a lone particle is left out
  });
  it("keeps English words, and finds the parts of snake_case names", () => {
    expect(tokenize("The agent-loop, read_file!")).toEqual(["The", "agent", "loop", "read_file", "read", "file"]);
  });
  it("works the same after VitePress sends it to the browser as text", () => {
    // VitePress serializes functions in the site config with toString() and revives them
    // with new Function: a tokenizer that used a name from its module would break there.
    const revived = new Function(`return ${tokenize.toString()}`)() as typeof tokenize;
    for (const text of ["エージェントループ", "ワークスペースの外には出られません", "TOOL_HANDLERS[call.name]"]) {
      expect(revived(text)).toEqual(tokenize(text));
    }
  });
});
