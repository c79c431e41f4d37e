// The docs site's checks: every stage has its pages in both languages (written, or planned
// until its page is written), the two languages have the same pages and sections, every
// included snippet names a real file and region (VitePress 1.x silently includes the whole
// file for a missing region), no highlighted line is typed by hand, every internal link
// leads to a page and an anchor (generated pages included), each stage page's "What changed"
// names every region that differs from its parent, and each stage page has its diagram, its
// session (with notes on real steps), its comparison's sources and a description.
// These read files only: they never build the site and never touch the network.
// Each check is a function of a repository root, so it is also run against a broken copy
// in a temporary folder, to show that it fails when it should.
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MACHINERY, nextStage, PAGE_STAGES, STAGES, SYSTEMS, stageById, type Lang } from "../.vitepress/curriculum.ts";
import { inlineSvg, markIndents, stagePageOf, textWidthEm } from "../.vitepress/markdown.ts";
import { nav, sidebar } from "../.vitepress/navigation.ts";
import { compareRegion, isCarried, lineRanges, presentStages, shownRegions, stageChanges } from "../.vitepress/regions.ts";
import { tokenize } from "../.vitepress/search.ts";
import { describePage, diffContent, diffStages, firstParagraph, optionalPages, plannedContent, plannedStages, repositoryOf } from "../.vitepress/site.ts";
import { codeLines, linesOfCode, regionsOf, toolCount } from "../.vitepress/source.ts";
import { remembering } from "../lib/course/recent.ts";
import { checkNotes, stepsOfScenario } from "../.vitepress/transcript.ts";
import { existingStages, REPO_ROOT } from "../lib/course/stages.ts";

// ---------------------------------------------------------------------------------------
// The checks

const LANGS: Lang[] = ["en", "ja"];
const STAGE_SECTIONS = ["problem", "solution", "how-it-works", "what-changed", "try-it", "comparison"];
const UNCHANGED: Record<Lang, string> = { en: "unchanged", ja: "変更なし" };

const docsDir = (root: string) => path.join(root, "docs");
const langDir = (root: string, lang: Lang) => (lang === "ja" ? path.join(docsDir(root), "ja") : docsDir(root));
const read = (file: string) => readFileSync(file, "utf8");

/** Stage id -> file, for every stage file in agents/ (sNN_*.ts, and the capstone s_full.ts). */
const stages = (root: string) => existingStages(path.join(root, "agents"));

/** The Markdown pages of one language as written, names relative to its folder: "index.md", "s01.md", "[stage].md". */
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

/** A page the site has: written in docs/, or generated from a template (a planned stage, a diff). */
interface SitePage {
  name: string;
  lang: Lang;
  /** Its Markdown: the file, or what the template is filled with. */
  markdown: string;
  /** Heading ids and other anchors a link may name. */
  anchors: string[];
  generated?: "planned" | "diff";
}

const isTemplate = (page: string) => /\[\w+\]/.test(page);

function sitePages(root: string, lang: Lang): SitePage[] {
  const written = pagesOf(root, lang)
    .filter((page) => !isTemplate(page))
    .map((name) => {
      const markdown = read(path.join(langDir(root, lang), name));
      return { name, lang, markdown, anchors: sectionIds(markdown) };
    });
  const planned = existsSync(path.join(langDir(root, lang), "[stage].md"))
    ? plannedStages(root, lang).map((stage) => {
        const markdown = plannedContent(stage, lang, stages(root).has(stage.id));
        return { name: `${stage.id}.md`, lang, markdown, anchors: sectionIds(markdown), generated: "planned" as const };
      })
    : [];
  const diffs = existsSync(path.join(langDir(root, lang), "diff", "[stage].md"))
    ? diffStages(root).map((id) => {
        const markdown = diffContent(root, id, lang);
        const unchanged = stageChanges(root, id).regions.filter((r) => isCarried(r.status)).map((r) => r.name);
        return { name: `diff/${id}.md`, lang, markdown, anchors: [...sectionIds(markdown), ...unchanged], generated: "diff" as const };
      })
    : [];
  return [...written, ...planned, ...diffs];
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

/** Every stage of the curriculum and the capstone has a page in both languages, written or planned, and a next one. */
function checkEveryStageHasAPage(root: string): string[] {
  const problems: string[] = [];
  for (const lang of LANGS) {
    const dir = path.relative(root, langDir(root, lang)) || ".";
    for (const [template, needs] of [
      ["[stage].md", ['<StageHeader :stage="$params.stage" />', "<!-- @content -->"]],
      ["diff/[stage].md", ["<!-- @content -->"]],
    ] as const) {
      const file = path.join(langDir(root, lang), template);
      const paths = file.replace(/\.md$/, ".paths.ts");
      if (!existsSync(file)) problems.push(`${dir}/${template} is missing: stages without a page of their own get none`);
      else for (const text of needs) if (!read(file).includes(text)) problems.push(`${dir}/${template} does not contain ${text}`);
      if (!existsSync(paths)) problems.push(`${path.relative(root, paths)} is missing: ${template} generates no page`);
    }
    const names = sitePages(root, lang).map((page) => page.name);
    for (const stage of PAGE_STAGES) {
      if (!names.includes(`${stage.id}.md`)) problems.push(`${stage.id} has no page in ${lang}, written or planned`);
    }
  }
  PAGE_STAGES.slice(0, -1).forEach((stage, i) => {
    if (nextStage(stage.id)?.id !== PAGE_STAGES[i + 1].id) problems.push(`the page after ${stage.id} is not ${PAGE_STAGES[i + 1].id}`);
  });
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

/** The text of a page's section: from its {#id} heading to the next heading of that level or higher. */
function section(markdown: string, id: string): string | undefined {
  const match = new RegExp(`^(#{1,6}) .*\\{#${id}\\}\\s*$`, "m").exec(markdown);
  if (!match) return undefined;
  const rest = markdown.slice(match.index + match[0].length);
  const next = new RegExp(`^#{1,${match[1].length}} `, "m").exec(rest);
  return next ? rest.slice(0, next.index) : rest;
}

/** Each written stage page whose stage file is present: [id, file, lang, page name, text]. */
function stagePages(root: string): [string, string, Lang, string, string][] {
  return [...stages(root)].flatMap(([id, file]) =>
    LANGS.flatMap((lang) => {
      const page = path.join(langDir(root, lang), `${id}.md`);
      return existsSync(page) ? [[id, file, lang, path.relative(root, page), read(page)] as [string, string, Lang, string, string]] : [];
    }),
  );
}

function checkStagePageShape(root: string): string[] {
  const problems: string[] = [];
  for (const [id, file] of stages(root)) {
    const meta = PAGE_STAGES.find((stage) => stage.id === id);
    if (!meta) problems.push(`agents/${file} is not in the curriculum list (.vitepress/curriculum.ts)`);
    else if (meta.file !== file) problems.push(`.vitepress/curriculum.ts names ${meta.file} for ${id}, but the file is agents/${file}`);
  }
  for (const [id, file, , name, text] of stagePages(root)) {
    if (!text.includes(`<StageHeader stage="${id}" />`)) problems.push(`${name} does not start with <StageHeader stage="${id}" />`);
    const ids = sectionIds(text);
    const order = STAGE_SECTIONS.map((s) => ids.indexOf(s));
    STAGE_SECTIONS.forEach((s, i) => {
      if (order[i] === -1) problems.push(`${name} has no section {#${s}}`);
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
  return problems;
}

/** Highlighted lines come from the diff with the parent: an include that types its own is refused. */
function checkNoTypedHighlights(root: string): string[] {
  const problems: string[] = [];
  for (const [, , , name, text] of stagePages(root)) {
    for (const match of text.matchAll(/^<<<\s+(@\/\.\.\/agents\/\S+?)(\{[^}]*\})/gm)) {
      if (/\d/.test(match[2])) problems.push(`${name}: ${match[1]}${match[2]} types its highlighted lines by hand; they are computed from the diff with the parent, so write {ts}`);
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
  const pages = new Map<string, SitePage>();
  for (const lang of LANGS) for (const page of sitePages(root, lang)) pages.set(lang === "ja" ? `ja/${page.name}` : page.name, page);
  const sources = [...[...pages].map(([from, page]) => ({ from, links: linksOf(page.markdown) })), ...extra];
  for (const { from, links } of sources) {
    for (const link of links) {
      const target = linkTarget(link, from.endsWith(".md") ? from : "index.md");
      if (!target) continue;
      const page = pages.get(target.page);
      if (!page) {
        problems.push(`${from}: the link ${link} leads to docs/${target.page}, which does not exist`);
        continue;
      }
      if (target.anchor && !page.anchors.includes(target.anchor)) {
        problems.push(`${from}: the link ${link} names #${target.anchor}, which docs/${target.page} has no heading for`);
      }
    }
  }
  return [...new Set(problems)];
}

/** The links in the nav and the sidebar, for one set of existing stages. */
function navigationLinks(root: string, present: ReadonlyMap<string, string>): { from: string; links: string[] }[] {
  const collect = (items: unknown[]): string[] =>
    items.flatMap((item) => {
      const { link, items: children } = item as { link?: string; items?: unknown[] };
      return [...(link ? [link] : []), ...(children ? collect(children) : [])];
    });
  return LANGS.map((lang) => {
    const optional = optionalPages(root, lang);
    return { from: `the ${lang} nav and sidebar`, links: collect([...nav(lang, present, optional), ...sidebar(lang, present, optional)]) };
  });
}

/** Regions that differ between a stage and its parent: changed text, or new. */
/**
 * The regions of `after` that are new or differ from `before`'s, and those `before` had that
 * `after` dropped without importing `before`'s file (`beforeFile`): a region the stage imports
 * from its parent runs unchanged, so "What changed" need not name it.
 */
export function changedRegions(before: string, after: string, beforeFile = ""): string[] {
  const [old, now] = [regionsOf(before), regionsOf(after)];
  const importsBefore = beforeFile !== "" && after.includes(`from "./${beforeFile}"`);
  const dropped = importsBefore ? [] : [...old.keys()].filter((name) => !now.has(name));
  return [...[...now.keys()].filter((name) => !old.has(name) || old.get(name) !== now.get(name)), ...dropped];
}

/** Each stage page's "What changed" names every region that differs from its PARENT's (curriculum.ts). */
function checkWhatChanged(root: string): string[] {
  const problems: string[] = [];
  const present = stages(root);
  for (const [id, file, lang, name, text] of stagePages(root)) {
    const parent = stageById(id).parent;
    const parentFile = parent ? present.get(parent) : undefined;
    if (!parent || !parentFile) continue; // s01, the capstone, or a parent not written yet: nothing to compare with
    const changed = changedRegions(read(path.join(root, "agents", parentFile)), read(path.join(root, "agents", file)), parentFile);
    const what = section(text, "what-changed");
    if (what === undefined) {
      problems.push(`${name} has no "What changed" section ({#what-changed})`);
      continue;
    }
    const rows = what.split("\n").filter((line) => line.startsWith("|"));
    // A region is named by a row's first cell: a mention further along a row ("as `bash` does")
    // names nothing.
    const firstCell = (row: string) => row.split("|")[1] ?? "";
    for (const region of changed) {
      const naming = rows.filter((row) => firstCell(row).includes(`\`${region}\``));
      if (naming.length === 0) {
        problems.push(`${name}: region \`${region}\` differs from ${parent} (agents/${parentFile}) but "What changed" does not name it`);
      } else if (naming.every((row) => row.includes(UNCHANGED[lang]))) {
        problems.push(`${name}: region \`${region}\` differs from ${parent} (agents/${parentFile}) but "What changed" calls it ${UNCHANGED[lang]}`);
      }
    }
    const loopRow = rows.find((row) => firstCell(row).includes("`agent-loop`"));
    if (!loopRow) problems.push(`${name}: the "What changed" table has no \`agent-loop\` row`);
    else if (!loopRow.includes(UNCHANGED[lang])) problems.push(`${name}: the \`agent-loop\` row of "What changed" does not read "${UNCHANGED[lang]}"`);
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

/**
 * A diagram is inline SVG drawn with the site's classes, so it follows light and dark mode,
 * and small enough in width to read on a phone. What is wrong with one.
 */
export function checkSvg(svg: string, name: string): string[] {
  const problems: string[] = [];
  const open = /<svg\b[^>]*>/.exec(svg)?.[0];
  const viewBox = open && /viewBox="0 0 ([\d.]+) ([\d.]+)"/.exec(open);
  if (!viewBox) problems.push(`${name}: the <svg> has no viewBox="0 0 width height"`);
  else if (Number(viewBox[1]) > 480) problems.push(`${name}: the viewBox is ${viewBox[1]} wide; at most 480 keeps its text readable on a phone`);
  if (!/<title\b[^>]*>[^<]+<\/title>/.test(svg)) problems.push(`${name}: no <title> (what the diagram shows, for screen readers)`);
  if (/\s(fill|stroke|color|style)="(?!none")[^"]*"/.test(svg) || /<style\b/.test(svg)) {
    problems.push(`${name}: a colour or style written in the SVG; use the d-* classes, so light and dark mode both work`);
  }
  if (/<(script|foreignObject|image)\b/i.test(svg) || /\son\w+="/i.test(svg) || /href="(?!#)/.test(svg)) {
    problems.push(`${name}: scripts, embedded HTML, images or outside links are not allowed`);
  }
  for (const text of svg.matchAll(/<text\b([^>]*)>/g)) {
    if (!/class="[^"]*\bd-/.test(text[1])) {
      problems.push(`${name}: a <text> without a d-* class (its colour and size would not follow the theme)`);
      break;
    }
  }
  return problems;
}

/** Each stage page shows its diagram in "How it works", in both languages, drawn to the format. */
function checkDiagrams(root: string): string[] {
  const problems: string[] = [];
  for (const [id, , lang, name, text] of stagePages(root)) {
    if (!(section(text, "how-it-works") ?? "").includes(`<Diagram name="${id}" />`)) {
      problems.push(`${name}: "How it works" has no diagram (<Diagram name="${id}" />, drawn in docs/diagrams/${id}.${lang}.svg)`);
    }
  }
  for (const lang of LANGS) {
    for (const page of pagesOf(root, lang)) {
      for (const match of read(path.join(langDir(root, lang), page)).matchAll(/<Diagram\s+name="([\w-]+)"/g)) {
        const file = path.join(docsDir(root), "diagrams", `${match[1]}.${lang}.svg`);
        if (!existsSync(file)) problems.push(`${path.relative(root, path.join(langDir(root, lang), page))}: the diagram ${path.relative(root, file)} does not exist`);
      }
    }
  }
  const dir = path.join(docsDir(root), "diagrams");
  for (const file of existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".svg")).sort() : []) {
    problems.push(...checkSvg(read(path.join(dir, file)), `docs/diagrams/${file}`));
    const twin = file.replace(/\.(en|ja)\.svg$/, (_, lang) => `.${lang === "en" ? "ja" : "en"}.svg`);
    if (twin === file) problems.push(`docs/diagrams/${file}: a diagram is named <name>.en.svg or <name>.ja.svg`);
    else if (!existsSync(path.join(dir, twin))) problems.push(`docs/diagrams/${file} has no twin docs/diagrams/${twin}`);
  }
  return problems;
}

/** Each stage page shows its recorded session in "Try it", and every note names a step of it. */
function checkSessions(root: string): string[] {
  const problems: string[] = [];
  for (const [id, , , name, text] of stagePages(root)) {
    if (!(section(text, "try-it") ?? "").includes("<SessionView />")) problems.push(`${name}: "Try it" does not show the recorded session (<SessionView />)`);
    if (!existsSync(path.join(root, "fixtures", id, "demo.json"))) problems.push(`${name}: the stage has no recorded demo, fixtures/${id}/demo.json`);
  }
  const dir = path.join(docsDir(root), "sessions");
  for (const file of existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".json")).sort() : []) {
    const id = file.slice(0, -5);
    const name = `docs/sessions/${file}`;
    const fixture = path.join(root, "fixtures", id, "demo.json");
    if (!existsSync(fixture)) {
      problems.push(`${name}: there is no fixtures/${id}/demo.json for its notes to point into`);
      continue;
    }
    let notes: unknown;
    try {
      notes = JSON.parse(read(path.join(dir, file)));
    } catch (error) {
      problems.push(`${name} is not valid JSON: ${(error as Error).message}`);
      continue;
    }
    problems.push(...checkNotes(notes, stepsOfScenario(JSON.parse(read(fixture))), name));
  }
  return problems;
}

/** A comparison names its sources: every system in its table's header row is linked with <ComparedWith>. */
function checkComparisons(root: string): string[] {
  const problems: string[] = [];
  const keyword = (id: string) => SYSTEMS[id].name.en.replace(/^the /, "").replace(/ tutorial$/, "");
  for (const [, , , name, text] of stagePages(root)) {
    const part = section(text, "comparison") ?? "";
    const listed = /<ComparedWith\s+systems="([^"]*)"\s*\/>/.exec(part)?.[1].split(/[\s,]+/).filter(Boolean);
    if (!listed) {
      problems.push(`${name}: the comparison does not name its sources (<ComparedWith systems="…" />)`);
      continue;
    }
    for (const id of listed) if (!SYSTEMS[id]) problems.push(`${name}: <ComparedWith> names "${id}", which is not in SYSTEMS (.vitepress/curriculum.ts)`);
    const header = part.split("\n").find((line) => line.startsWith("|")) ?? "";
    for (const id of Object.keys(SYSTEMS)) {
      if (header.includes(keyword(id)) && !listed.includes(id)) problems.push(`${name}: the comparison compares with ${keyword(id)} but does not link it (add "${id}" to <ComparedWith>)`);
    }
  }
  return problems;
}

/** The frontmatter description of a page, if any. */
function frontmatterDescription(markdown: string): string | undefined {
  const frontmatter = /^---\n([\s\S]*?)\n---\n/.exec(markdown)?.[1];
  return frontmatter ? /^description:\s*(.+)$/m.exec(frontmatter)?.[1].trim() : undefined;
}

/** Every page has a description of its own (for search engines and social previews). */
function checkDescriptions(root: string): string[] {
  const problems: string[] = [];
  for (const lang of LANGS) {
    for (const page of sitePages(root, lang)) {
      const relative = lang === "ja" ? `ja/${page.name}` : page.name;
      const diff = /^diff\/([\w]+)\.md$/.exec(page.name);
      const params = diff ? { parent: stageById(diff[1]).parent } : undefined;
      const description = frontmatterDescription(page.markdown) ?? describePage(root, relative, params);
      if (!description || description.trim().length < 20) problems.push(`docs/${relative} has no description: give it one in its frontmatter, or a first paragraph`);
    }
  }
  return problems;
}

/** No page gives a learner a placeholder to copy: the repository's address is package.json's or none. */
function checkNoPlaceholders(root: string): string[] {
  const problems: string[] = [];
  for (const lang of LANGS) {
    for (const page of pagesOf(root, lang)) {
      const text = read(path.join(langDir(root, lang), page));
      for (const placeholder of ["<this repository>", "<このリポジトリ>", "git clone <", "your-repo", "example.com/agent-workbook"]) {
        if (text.includes(placeholder)) problems.push(`${path.relative(root, path.join(langDir(root, lang), page))}: "${placeholder}" is a placeholder a learner would copy`);
      }
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------
// The checks on the real repository

/**
 * Every module of lib/machinery has its "Under the hood" page in both languages, listed in
 * MACHINERY: what the plain version gets wrong ({#plain}), the fix included from the module
 * by region ({#fix}), and the test that proves it, included from a test file ({#proof}).
 */
function checkMachineryPages(root: string): string[] {
  const problems: string[] = [];
  const dir = path.join(root, "lib", "machinery");
  const modules = existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".ts")).map((name) => name.slice(0, -3)) : [];
  for (const id of modules) if (!MACHINERY.some((m) => m.id === id)) problems.push(`lib/machinery/${id}.ts is not in MACHINERY (.vitepress/curriculum.ts)`);
  for (const { id } of MACHINERY) {
    if (!modules.includes(id)) problems.push(`MACHINERY names ${id}, but lib/machinery/${id}.ts does not exist`);
    for (const lang of LANGS) {
      const page = path.join(langDir(root, lang), "under-the-hood", `${id}.md`);
      const name = path.relative(root, page);
      if (!existsSync(page)) {
        problems.push(`lib/machinery/${id}.ts has no page: ${name} is missing`);
        continue;
      }
      const text = read(page);
      for (const section of ["plain", "fix", "proof"]) if (!sectionIds(text).includes(section)) problems.push(`${name} has no {#${section}} section`);
      if (!new RegExp(`^<<< @/\\.\\./lib/machinery/${id}\\.ts#[\\w-]+`, "m").test(text)) problems.push(`${name} includes no region of lib/machinery/${id}.ts`);
      if (!/^<<< @\/\.\.\/tests\/[\w/.-]+\.test\.ts#[\w-]+/m.test(section(text, "proof") ?? "")) problems.push(`${name}: its proof includes no test by region`);
    }
  }
  for (const lang of LANGS) {
    const index = path.join(langDir(root, lang), "under-the-hood", "index.md");
    if (!existsSync(index) || !read(index).includes("<MachineryList />")) problems.push(`${path.relative(root, index)} is missing or does not list the machinery (<MachineryList />)`);
  }
  return problems;
}

const ALL_CHECKS = {
  checkMachineryPages,
  checkStagePagesExist,
  checkEveryStageHasAPage,
  checkSamePages,
  checkSameSections,
  checkStagePageShape,
  checkNoTypedHighlights,
  checkSnippets,
  checkWhatChanged,
  checkLoopIdentical,
  checkDiagrams,
  checkSessions,
  checkComparisons,
  checkDescriptions,
  checkNoPlaceholders,
};

describe("the docs of every stage", () => {
  it("gives every module of lib/machinery its Under the hood page in both languages, with the failure, the fix and the proof", () => {
    expect(checkMachineryPages(REPO_ROOT)).toEqual([]);
  });
  it("has an English and a Japanese page for every stage file", () => {
    expect(checkStagePagesExist(REPO_ROOT)).toEqual([]);
  });
  it("gives every stage of the curriculum a page, written or planned, and a next page", () => {
    expect(checkEveryStageHasAPage(REPO_ROOT)).toEqual([]);
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
  it("types no highlighted line by hand", () => {
    expect(checkNoTypedHighlights(REPO_ROOT)).toEqual([]);
  });
  it("includes only snippets whose file and region exist", () => {
    expect(checkSnippets(REPO_ROOT)).toEqual([]);
  });
  it("has no broken internal link or anchor in the pages, the generated pages, the nav or the sidebar", () => {
    expect(checkLinks(REPO_ROOT, navigationLinks(REPO_ROOT, stages(REPO_ROOT)))).toEqual([]);
  });
  it("names every region that differs from the parent stage in What changed, in both languages", () => {
    expect(checkWhatChanged(REPO_ROOT)).toEqual([]);
  });
  it("keeps the agent-loop region byte for byte the same in every stage file", () => {
    expect(stages(REPO_ROOT).size).toBeGreaterThanOrEqual(2);
    expect(checkLoopIdentical(REPO_ROOT)).toEqual([]);
  });
  it("shows a diagram on every stage page, drawn in the site's format", () => {
    expect(checkDiagrams(REPO_ROOT)).toEqual([]);
  });
  it("shows every stage's recorded session, with notes only on steps it has", () => {
    expect(checkSessions(REPO_ROOT)).toEqual([]);
  });
  it("links every system a comparison names", () => {
    expect(checkComparisons(REPO_ROOT)).toEqual([]);
  });
  it("describes every page", () => {
    expect(checkDescriptions(REPO_ROOT)).toEqual([]);
  });
  it("gives no placeholder for the repository's address", () => {
    expect(checkNoPlaceholders(REPO_ROOT)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------
// Each check fails on a broken copy of the repository

describe("the checks catch broken docs", () => {
  const copies: string[] = [];
  afterAll(() => copies.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  /** A copy of the stage files, their fixtures, package.json and docs/ in a temporary folder, to break. */
  function brokenCopy(): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), "workbook-docs-"));
    copies.push(dir);
    cpSync(path.join(REPO_ROOT, "docs"), path.join(dir, "docs"), { recursive: true });
    // One file at a time with copyFileSync: cpSync checks every folder above a file it copies.
    const copy = (from: string, to: string) => {
      mkdirSync(path.dirname(to), { recursive: true });
      copyFileSync(from, to);
    };
    copy(path.join(REPO_ROOT, "package.json"), path.join(dir, "package.json"));
    // What the Under the hood pages include: the machinery and its tests.
    for (const folder of ["lib/machinery", "tests/machinery"]) {
      if (!existsSync(path.join(REPO_ROOT, folder))) continue;
      for (const name of readdirSync(path.join(REPO_ROOT, folder))) copy(path.join(REPO_ROOT, folder, name), path.join(dir, folder, name));
    }
    for (const [id, name] of stages(REPO_ROOT)) {
      copy(path.join(REPO_ROOT, "agents", name), path.join(dir, "agents", name));
      const demo = path.join(REPO_ROOT, "fixtures", id, "demo.json");
      if (existsSync(demo)) copy(demo, path.join(dir, "fixtures", id, "demo.json"));
    }
    return dir;
  }
  const edit = (file: string, change: (text: string) => string) => {
    const before = read(file);
    const after = change(before);
    if (after === before) throw new Error(`the break of ${file} changed nothing: the test is out of date`);
    writeFileSync(file, after);
  };

  it("passes the untouched copy (so each failure below comes from its own break)", () => {
    const dir = brokenCopy();
    // The copy is faithful: each check says exactly what it says of the real repository (which
    // the tests above require to be nothing).
    for (const [name, check] of Object.entries(ALL_CHECKS)) {
      expect(check(dir).map((p) => p.replaceAll(dir, "<root>")), name).toEqual(check(REPO_ROOT).map((p) => p.replaceAll(REPO_ROOT, "<root>")));
    }
    expect(checkLinks(dir, navigationLinks(dir, stages(dir)))).toEqual(checkLinks(REPO_ROOT, navigationLinks(REPO_ROOT, stages(REPO_ROOT))));
  });

  it("names a stage file that has no page", () => {
    const dir = brokenCopy();
    // A stage file whose pages are gone (every planned stage may already have its file, so
    // the break removes pages rather than adding a stage the curriculum lacks).
    rmSync(path.join(dir, "docs", "s02.md"));
    rmSync(path.join(dir, "docs", "ja", "s02.md"));
    expect(checkStagePagesExist(dir)).toEqual(
      expect.arrayContaining([
        "agents/s02_tool_use.ts has no page: docs/s02.md is missing",
        "agents/s02_tool_use.ts has no page: docs/ja/s02.md is missing",
      ]),
    );
  });

  it("names a missing planned-page template, and a stage left without a page", () => {
    const dir = brokenCopy();
    const planned = plannedStages(dir, "en").map((s) => s.id);
    rmSync(path.join(dir, "docs", "ja", "[stage].paths.ts"));
    rmSync(path.join(dir, "docs", "[stage].md"));
    const problems = checkEveryStageHasAPage(dir);
    expect(problems).toContain("docs/ja/[stage].paths.ts is missing: [stage].md generates no page");
    expect(problems).toContain("docs/[stage].md is missing: stages without a page of their own get none");
    expect(problems).toEqual(expect.arrayContaining(planned.map((id) => `${id} has no page in en, written or planned`)));
  });

  it("names a page with no twin in the other language", () => {
    const dir = brokenCopy();
    rmSync(path.join(dir, "docs", "ja", "getting-started.md"));
    writeFileSync(path.join(dir, "docs", "ja", "extra.md"), "# おまけ\n");
    // Only these two on top of what the repository itself has (a page being written now may lack its twin).
    const before = checkSamePages(REPO_ROOT).map((problem) => problem.replaceAll(REPO_ROOT, dir));
    expect(checkSamePages(dir).filter((problem) => !before.includes(problem))).toEqual([
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

  it("names highlighted lines typed by hand", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "docs", "ja", "s05.md"), (text) => text.replace("<<< @/../agents/s05_ask_user.ts#tools{ts}", "<<< @/../agents/s05_ask_user.ts#tools{102-120 ts}"));
    expect(checkNoTypedHighlights(dir)).toEqual([
      "docs/ja/s05.md: @/../agents/s05_ask_user.ts#tools{102-120 ts} types its highlighted lines by hand; they are computed from the diff with the parent, so write {ts}",
    ]);
  });

  it("names a region opened and never closed in the stage file", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "agents", "s02_tool_use.ts"), (text) => text.replace("// #endregion sandbox", ""));
    expect(checkSnippets(dir).join("\n")).toMatch(/region "sandbox" is never closed/);
  });

  it("names a broken link in a page, a frontmatter action, a missing anchor, a diff page's region and the sidebar", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "docs", "ja", "s01.md"), (text) => text.replace("(./getting-started)", "(./getting-startd)"));
    const planned = plannedStages(dir, "en")[0]?.id ?? "s01"; // a stage with a planned page, if any is left
    edit(path.join(dir, "docs", "index.md"), (text) =>
      text
        .replace("link: /curriculum", "link: /curricullum")
        .concat(`\n[x](./s02#no-such-section)\n[y](./diff/s05#ask-users)\n[z](./diff/s01)\n[v](./diff/s05#ask-user)\n[w](./${planned}#teaches)\n`),
    );
    const problems = checkLinks(dir, navigationLinks(dir, new Map([...stages(dir), ["s13", "s13_new_stage.ts"]])));
    expect(problems).toContain("ja/s01.md: the link ./getting-startd leads to docs/ja/getting-startd.md, which does not exist");
    expect(problems).toContain("index.md: the link /curricullum leads to docs/curricullum.md, which does not exist");
    expect(problems).toContain("index.md: the link ./s02#no-such-section names #no-such-section, which docs/s02.md has no heading for");
    expect(problems).toContain("index.md: the link ./diff/s05#ask-users names #ask-users, which docs/diff/s05.md has no heading for");
    expect(problems).toContain("index.md: the link ./diff/s01 leads to docs/diff/s01.md, which does not exist");
    expect(problems.filter((p) => p.includes("#ask-user)") || p.includes("#ask-user "))).toEqual([]); // a diff page's region anchor
    if (planned !== "s01") expect(problems.filter((p) => p.includes(`./${planned}#teaches`))).toEqual([]); // a planned page's section
    // The generated pages' own links are checked too: a planned page links its parent.
    rmSync(path.join(dir, "docs", "curriculum.md"));
    if (planned !== "s01") expect(checkLinks(dir)).toContain(`${planned}.md: the link ./curriculum leads to docs/curriculum.md, which does not exist`);
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

  it("compares a stage with its parent, not with the stage before it in number", () => {
    // s06's parent is s03 (curriculum.ts): a region s06 shares with s03 but not with s05 counts as unchanged.
    const dir = brokenCopy();
    writeFileSync(path.join(dir, "agents", "s06_tool_registry.ts"), read(path.join(dir, "agents", "s03_search_and_edit.ts")).replace("function showText(response: Message): void {", "function showText(response: Message): void {\n  // changed"));
    const page = (lang: Lang) =>
      [
        `<StageHeader stage="s06" />`,
        `## What changed {#what-changed}`,
        `| region | s03 | s06 |`,
        `| --- | --- | --- |`,
        `| \`agent-loop\` | | ${UNCHANGED[lang]} |`,
        ``,
      ].join("\n");
    for (const lang of LANGS) writeFileSync(path.join(langDir(dir, lang), "s06.md"), page(lang));
    const problems = checkWhatChanged(dir).filter((p) => p.includes("s06"));
    // Compared with s05, web-fetch, ask-user and more would be missing; compared with s03, only end-turn and program.
    expect(problems.some((p) => p.includes("web-fetch") || p.includes("ask-user"))).toBe(false);
    expect(problems).toContain('docs/s06.md: region `end-turn` differs from s03 (agents/s03_search_and_edit.ts) but "What changed" does not name it');
  });

  it("names a stage whose agent loop drifted", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "agents", "s02_tool_use.ts"), (text) => text.replace("while (true) {", "while (true) { // drift"));
    expect(checkLoopIdentical(dir)).toContain("the agent-loop region of agents/s02_tool_use.ts differs from agents/s01_agent_loop.ts");
  });

  it("names a stage page without its diagram, a missing diagram file, and a diagram drawn with fixed colours", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "docs", "s03.md"), (text) => text.replace('<Diagram name="s03" />', ""));
    rmSync(path.join(dir, "docs", "diagrams", "s04.ja.svg"));
    edit(path.join(dir, "docs", "diagrams", "s05.en.svg"), (text) => text.replace('<rect class="d-box', '<rect fill="#ffffff" class="d-box').replace('viewBox="0 0 480', 'viewBox="0 0 900'));
    const problems = checkDiagrams(dir);
    expect(problems).toContain('docs/s03.md: "How it works" has no diagram (<Diagram name="s03" />, drawn in docs/diagrams/s03.en.svg)');
    expect(problems).toContain("docs/ja/s04.md: the diagram docs/diagrams/s04.ja.svg does not exist");
    expect(problems).toContain("docs/diagrams/s04.en.svg has no twin docs/diagrams/s04.ja.svg");
    expect(problems).toContain("docs/diagrams/s05.en.svg: a colour or style written in the SVG; use the d-* classes, so light and dark mode both work");
    expect(problems).toContain("docs/diagrams/s05.en.svg: the viewBox is 900 wide; at most 480 keeps its text readable on a phone");
  });

  it("names a stage page without its session, and a note on a step the session does not have", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "docs", "ja", "s02.md"), (text) => text.replace("<SessionView />", ""));
    edit(path.join(dir, "docs", "sessions", "s03.json"), (text) => text.replace('"toolu_s03_demo_04:result"', '"toolu_s03_demo_99:result"'));
    writeFileSync(path.join(dir, "docs", "sessions", "s05.json"), JSON.stringify({ notes: [{ at: 40, en: "late", ja: "遅い" }] }));
    const problems = checkSessions(dir);
    expect(problems).toContain('docs/ja/s02.md: "Try it" does not show the recorded session (<SessionView />)');
    expect(problems.join("\n")).toMatch(/docs\/sessions\/s03\.json: notes\[1\] points at "toolu_s03_demo_99:result", which is not a step of the session/);
    expect(problems.join("\n")).toMatch(/docs\/sessions\/s05\.json: notes\[0\] points at 40, which is not a step of the session \(it has \d+ steps\)/);
  });

  it("names a comparison that does not link a system it compares with", () => {
    const dir = brokenCopy();
    edit(path.join(dir, "docs", "s05.md"), (text) => text.replace('<ComparedWith systems="claude-code qwen-code glassbox" />', '<ComparedWith systems="claude-code glassbox qwen" />'));
    edit(path.join(dir, "docs", "ja", "s01.md"), (text) => text.replace('<ComparedWith systems="claude-code qwen-code deepagents" />', ""));
    const problems = checkComparisons(dir);
    expect(problems).toContain('docs/s05.md: <ComparedWith> names "qwen", which is not in SYSTEMS (.vitepress/curriculum.ts)');
    expect(problems).toContain('docs/s05.md: the comparison compares with Qwen Code but does not link it (add "qwen-code" to <ComparedWith>)');
    expect(problems).toContain('docs/ja/s01.md: the comparison does not name its sources (<ComparedWith systems="…" />)');
  });

  it("names a page without a description, and a placeholder address", () => {
    const dir = brokenCopy();
    writeFileSync(path.join(dir, "docs", "notes.md"), "# Notes\n\n## More {#more}\n");
    edit(path.join(dir, "docs", "ja", "getting-started.md"), (text) => text.replace("<GetTheCode />", "```sh\ngit clone <このリポジトリ>\n```"));
    expect(checkDescriptions(dir)).toEqual(["docs/notes.md has no description: give it one in its frontmatter, or a first paragraph"]);
    expect(checkNoPlaceholders(dir)).toEqual(
      expect.arrayContaining([
        'docs/ja/getting-started.md: "<このリポジトリ>" is a placeholder a learner would copy',
        'docs/ja/getting-started.md: "git clone <" is a placeholder a learner would copy',
      ]),
    );
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
  it("gives each caller its own map, though a text read again is not parsed again", () => {
    const text = "// #region one\nx\n// #endregion one";
    regionsOf(text).delete("one");
    expect(regionsOf(text).get("one")).toBe("x");
  });
});

describe("remembering (lib/course/recent.ts), the cache behind regionsOf and the exercises' parses", () => {
  it("makes a value once per key, keeps the last ones made, and forgets the oldest", () => {
    const made: string[] = [];
    const upper = remembering(
      2,
      (text: string) => text,
      (text: string) => (made.push(text), { text: text.toUpperCase() }),
    );
    const a = upper("a");
    expect(upper("a")).toBe(a);
    upper("b");
    upper("c"); // a third key: "a", the oldest, is forgotten
    expect(upper("c").text).toBe("C");
    expect(upper("a")).not.toBe(a);
    expect(upper("a")).toEqual(a);
    expect(made).toEqual(["a", "b", "c", "a"]);
  });
  it("gives calls whose arguments have the same key the same value", () => {
    const joined = remembering(4, (a: string, b: string) => `${a}\0${b}`, (a: string, b: string) => ({ both: a + b }));
    expect(joined("ab", "c")).toBe(joined("ab", "c"));
    expect(joined("ab", "c")).not.toBe(joined("a", "bc")); // the same text joined, not the same arguments
    expect(joined("a", "bc")).toEqual({ both: "abc" });
  });
});

describe("what changed from the parent, computed with the diff package", () => {
  const file = (body: string[]) => ["// header", "// #region keep", "const a = 1;", "// #endregion keep", "// #region grow", ...body, "// #endregion grow", ""].join("\n");
  it("finds the lines new or changed in a region, by their place in the region as shown", () => {
    const [before] = shownRegions(file(["one", "two", "three"])).slice(1);
    const [after] = shownRegions(file(["one", "2", "three", "four"])).slice(1);
    const change = compareRegion("grow", before, after);
    expect(change.status).toBe("changed");
    expect(change.changedLines).toEqual([2, 4]);
    expect([change.added, change.removed]).toEqual([2, 1]);
    expect(lineRanges([1, 2, 3, 7, 9, 10])).toBe("1-3,7,9-10");
  });
  it("shows regions as VitePress does: nested markers left out, lines numbered in the file", () => {
    const [outer] = shownRegions(["// #region outer", "a", "// #region inner", "b", "// #endregion inner", "c", "// #endregion outer"].join("\n"));
    expect(outer.lines).toEqual(["a", "b", "c"]);
    expect(outer.fileLines).toEqual([2, 4, 6]);
  });
  it("calls a region new, unchanged or removed, and folds long unchanged runs in a diff", () => {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i}`);
    const [before] = shownRegions(file(lines)).slice(1);
    const [after] = shownRegions(file(lines.map((l, i) => (i === 10 ? "changed" : l)))).slice(1);
    expect(compareRegion("grow", undefined, after).status).toBe("new");
    expect(compareRegion("grow", before, before).status).toBe("unchanged");
    expect(compareRegion("grow", before, undefined).status).toBe("removed");
    const kinds = compareRegion("grow", before, after).hunks.map((l) => l.kind);
    expect(kinds).toEqual(["gap", "same", "same", "same", "del", "add", "same", "same", "same", "gap"]);
  });
  it("compares the real stages with their parents, as the pages show them", () => {
    const s05 = stageChanges(REPO_ROOT, "s05");
    expect(s05.parent?.id).toBe("s04");
    expect(s05.regions.find((r) => r.name === "ask-user")?.status).toBe("new");
    expect(s05.regions.find((r) => r.name === "agent-loop")?.status).toBe("unchanged");
    expect(s05.newLoc).toBeGreaterThan(0);
    expect(s05.newLoc).toBeLessThan(s05.loc / 2);
    expect(stageChanges(REPO_ROOT, "s01").parent).toBeUndefined();
    if (presentStages(REPO_ROOT).has("s06")) expect(stageChanges(REPO_ROOT, "s06").parent?.id).toBe("s03");
  });
});

describe("the site's other pieces", () => {
  it("reads the repository's address from package.json, or knows there is none", () => {
    expect(repositoryOf({})).toBeUndefined();
    expect(repositoryOf({ repository: "" })).toBeUndefined();
    expect(repositoryOf({ repository: "github:someone/agent-workbook" })).toEqual({ web: "https://github.com/someone/agent-workbook", clone: "https://github.com/someone/agent-workbook.git" });
    expect(repositoryOf({ repository: "someone/agent-workbook" })?.web).toBe("https://github.com/someone/agent-workbook");
    expect(repositoryOf({ repository: { url: "git+https://gitlab.com/a/b.git" } })).toEqual({ web: "https://gitlab.com/a/b", clone: "https://gitlab.com/a/b.git" });
    expect(repositoryOf({ repository: "file:../elsewhere" })).toBeUndefined();
  });
  it("describes a page by its first paragraph of prose when its frontmatter does not", () => {
    expect(firstParagraph("---\ntitle: x\n---\n# Title\n\n<Comp />\n\n```sh\nls\n```\n\nThe [first](./a) `real` paragraph\ngoes on.\n\nSecond.")).toBe("The first real paragraph goes on.");
    expect(firstParagraph("# Only a heading\n")).toBeUndefined();
  });
  it("marks each line's indentation, so a wrapped line continues under its own start", () => {
    const html = '<pre><code><span class="line"><span>if (x) {</span></span>\n<span class="line highlighted"><span>    </span><span>return &quot;y&quot;;</span></span>\n<span class="line"></span></code></pre>';
    expect(markIndents(html)).toBe(
      '<pre><code><span class="line"><span>if (x) {</span></span>\n<span class="line highlighted" style="--indent:4"><span>    </span><span>return &quot;y&quot;;</span></span>\n<span class="line"></span></code></pre>',
    );
  });
  it("measures a diagram drawn in text in ems, a CJK character twice a letter, so it can shrink to fit", () => {
    expect(textWidthEm("ab\n" + "x".repeat(100))).toBeCloseTo(62.4, 1);
    expect(textWidthEm("あいう")).toBeGreaterThan(textWidthEm("abc") * 1.5);
    expect(textWidthEm("")).toBe(0);
  });
  it("gives a diagram's ids a prefix of its own, so two on one page cannot collide", () => {
    const svg = '<?xml version="1.0"?><!-- drawn by hand --><svg aria-labelledby="title desc"><title id="title">t</title><marker id="arrow"/><path marker-end="url(#arrow)"/></svg>';
    expect(inlineSvg(svg, "s09")).toBe(
      '<svg aria-labelledby="diagram-s09-title diagram-s09-desc"><title id="diagram-s09-title">t</title><marker id="diagram-s09-arrow"/><path marker-end="url(#diagram-s09-arrow)"/></svg>',
    );
  });
  it("knows a stage page by its path, in both languages, the capstone too", () => {
    expect(stagePageOf("s05.md")).toEqual({ id: "s05", lang: "en" });
    expect(stagePageOf("ja/full.md")).toEqual({ id: "full", lang: "ja" });
    expect(stagePageOf("diff/s05.md")).toBeUndefined();
    expect(stagePageOf("exercises/s05.md")).toBeUndefined();
  });
  it("puts every stage and the capstone in the nav, each linked to its page", () => {
    const links = nav("ja", new Map()).flatMap((item) => ("items" in item ? (item.items as { link: string }[]).map((i) => i.link) : []));
    expect(links).toEqual([...STAGES.map((s) => `/ja/${s.id}`), "/ja/full"]);
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
  it("tells a regular expression from a division, and a template's ${...} from a block, as a parse would", () => {
    const text = [
      "const marker = /\\/\\/ #region/; // a regular expression, then a comment",
      "const half = total / 2; /* a division, then a comment",
      "const not = /code/;",
      "*/",
      "const opens = /[/*]/g;",
      "const ratio = (a + b) / c; /* the same after a bracket",
      "*/",
      "const shown = `${ { a: 1 }.a } and ${`nested ${x}`}",
      "// still the template",
      "${y}`; // after it, a comment",
      "// a comment",
    ].join("\n");
    expect([...codeLines(text)]).toEqual([0, 1, 4, 5, 7, 8, 9]);
  });
  it("counts the entries of the TOOLS array, and nothing when there is none", () => {
    expect(toolCount("export const TOOLS: Tool[] = [{ name: 'a' }, { name: 'b', nested: [1, 2, 3] }];")).toBe(2);
    expect(toolCount("const TOOLS = [] as Tool[];")).toBe(0);
    expect(toolCount("const TOOLS = [...OTHER, { name: 'c' }];")).toBeUndefined();
    expect(toolCount("const tools = [1];")).toBeUndefined();
    // Cut out by its lines when it can be, parsed in the whole file when not; the same count.
    expect(toolCount("// [\nexport const TOOLS: Tool[] = [\n  { name: 'a' },\n  { name: '];' },\n];\nconst x = [1];")).toBe(2);
    expect(toolCount("const TOOLS = [\n  { name: 'a', description: `a line\n];` },\n  { name: 'b' },\n];")).toBe(2);
    expect(toolCount("const TOOLS = registry.tools();\nconst other = [1];")).toBeUndefined();
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

