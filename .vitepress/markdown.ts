// What a stage page's Markdown becomes, beyond plain VitePress:
//
// - Every `<<< @/../agents/<file>#<region>{ts}` include is captioned with its file, its lines
//   and its region, and compared with the parent stage's region of the same name: carried
//   over unchanged, it is collapsed behind a one-line summary; new, it is open; changed, it is
//   open with the changed lines highlighted. The lines come from regions.ts (the `diff`
//   package), never from the page: a `{102-120}` typed by hand is replaced.
// - In "What changed" ({#what-changed}), each region named in a row's first cell links to its
//   block on the page (or, when the page does not show it, to the stage's diff page), and a
//   row that names a changed region gets a link to that region on the diff page.
//
// - `<Diagram name="s05" />` becomes the SVG in docs/diagrams/s05.<lang>.svg, inline, so its
//   colours follow the theme (light and dark) and it works without JavaScript.
//
// The page needs nothing special: its author writes the includes and the table as before.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { UserConfig } from "vitepress";
import type { Lang } from "./curriculum.ts";
import { isCarried, parentOf, presentStages, stageChanges, stageOfFile, lineRanges, type RegionChange } from "./regions.ts";

type Md = Parameters<NonNullable<NonNullable<UserConfig["markdown"]>["config"]>>[0];
type CoreRule = Parameters<Md["core"]["ruler"]["push"]>[1];
type StateCore = Parameters<CoreRule>[0];
type Token = StateCore["tokens"][number];

const WORDS = {
  en: {
    lines: (from: number, to: number) => `lines ${from}–${to}`,
    new: (id: string) => `new in ${id}`,
    changed: (parent: string, n: number) => `changed since ${parent}: ${n === 1 ? "1 line" : `${n} lines`} highlighted`,
    unchanged: (parent: string, n: number) => `unchanged since ${parent} · ${n} lines · open to read`,
    diff: "diff",
    region: "region",
  },
  ja: {
    lines: (from: number, to: number) => `${from}〜${to} 行`,
    new: (id: string) => `${id} で新しく追加`,
    changed: (parent: string, n: number) => `${parent} から変更: ${n} 行を強調`,
    unchanged: (parent: string, n: number) => `${parent} から変更なし · ${n} 行 · 開いて読めます`,
    diff: "差分",
    region: "リージョン",
  },
} as const;

/** "s05.md" or "ja/s05.md" -> the stage page and its language. */
export function stagePageOf(relativePath: string): { id: string; lang: Lang } | undefined {
  const match = /^(ja\/)?(s\d\d|full)\.md$/.exec(relativePath);
  return match ? { id: match[2], lang: match[1] ? "ja" : "en" } : undefined;
}

/** Whether stage `id` gets a diff page: its file and its parent's are both present. */
export function hasDiffPage(root: string, id: string): boolean {
  return presentStages(root).has(id) && parentOf(root, id) !== undefined;
}

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Where a diagram's SVG lives for one language. */
export const diagramFile = (root: string, name: string, lang: Lang) => path.join(root, "docs", "diagrams", `${name}.${lang}.svg`);

const DIAGRAM = /^<Diagram\s+name="([\w-]+)"\s*\/>\s*$/;

/** The SVG of a diagram ready to sit in a page: no XML prolog or comments, its ids made unique to it. */
export function inlineSvg(svg: string, name: string): string {
  const prefix = `diagram-${name}-`;
  return svg
    .replace(/<\?xml[^>]*\?>/g, "")
    .replace(/<!--[\s\S]*?-->/g, "")
    .replace(/\bid="([\w-]+)"/g, `id="${prefix}$1"`)
    .replace(/url\(#([\w-]+)\)/g, `url(#${prefix}$1)`)
    .replace(/(aria-labelledby|aria-describedby)="([\w\s-]+)"/g, (_, attr, ids: string) => `${attr}="${ids.split(/\s+/).map((id) => prefix + id).join(" ")}"`)
    .trim();
}

const decode = (html: string) =>
  html.replace(/<[^>]*>/g, "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&");

/**
 * Give each line of a highlighted block its indentation (`--indent`, in characters), so a
 * long line that wraps continues under its own start, a little further in, instead of at the
 * left edge (see .stage-page code .line in custom.css).
 */
export function markIndents(html: string): string {
  return html.replace(/<span class="line([^"]*)">(.*?)(?=\n|<\/code>)/g, (whole, classes: string, rest: string) => {
    const text = decode(rest);
    const indent = /^[ \t]*/.exec(text)![0].replace(/\t/g, "  ").length;
    return indent > 0 ? `<span class="line${classes}" style="--indent:${indent}">${rest}` : whole;
  });
}

// Characters a browser draws twice as wide as a letter of a monospace font (CJK, full-width forms).
const WIDE = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/u;

/**
 * How wide a block of text is, in ems of a monospace font: a letter is about 0.6 em, a CJK
 * character 1 em. A diagram drawn in text must not wrap, so the CSS shrinks its font until
 * the widest line fits the column (custom.css, `--text-em`), down to a size still readable.
 */
export function textWidthEm(text: string): number {
  const widest = Math.max(0, ...text.split("\n").map((line) => [...line].reduce((sum, c) => sum + (WIDE.test(c) ? 1 : 0.6), 0)));
  return Math.round(widest * 1.04 * 10) / 10;
}

export function workbookMarkdown(md: Md, root: string): void {
  const fence = md.renderer.rules.fence!;
  md.renderer.rules.fence = (tokens, idx, options, env, self) => {
    const html = fence(tokens, idx, options, env, self);
    const lang = /^[\w-]*/.exec(tokens[idx].info.trim())![0];
    if (["text", "txt", "plain", ""].includes(lang)) {
      // Diagrams drawn in text keep their shape: they get smaller to fit instead of wrapping.
      return html.replace(/^<div class="([^"]*)"/, (open) => `${open} style="--text-em:${textWidthEm(tokens[idx].content)}"`);
    }
    return markIndents(html);
  };
  md.core.ruler.push("workbook-diagrams", (state) => {
    const lang: Lang = String(state.env?.relativePath ?? "").startsWith("ja/") ? "ja" : "en";
    for (const token of state.tokens) {
      // VitePress parses a lone component tag as html_inline at the block level.
      const match = token.type === "html_block" || token.type === "html_inline" ? DIAGRAM.exec(token.content.trim()) : null;
      if (!match) continue;
      const file = diagramFile(root, match[1], lang);
      token.content = existsSync(file)
        ? `<figure class="diagram" data-diagram="${match[1]}">${inlineSvg(readFileSync(file, "utf8"), match[1])}</figure>\n`
        : `<p class="diagram-missing">Missing diagram: ${escape(path.relative(root, file))}</p>\n`;
    }
  });
  md.core.ruler.push("workbook-stage-page", (state) => {
    const page = stagePageOf(state.env?.relativePath ?? "");
    if (!page || !presentStages(root).has(page.id)) return;
    const shown = captionIncludes(state, root, page.id, page.lang);
    linkWhatChanged(state, root, page.id, page.lang, shown);
  });
}

/** Wrap each region include in a captioned figure (or a collapsed details); returns the regions shown, by name. */
function captionIncludes(state: StateCore, root: string, pageId: string, lang: Lang): Set<string> {
  const words = WORDS[lang];
  const shown = new Set<string>();
  const out: Token[] = [];
  for (const token of state.tokens) {
    const src = (token as Token & { src?: [string, string] }).src;
    const stage = token.type === "fence" && src?.[1] ? stageOfFile(src[0]) : undefined;
    const file = src?.[0];
    if (!stage || !file || path.dirname(file) !== path.join(root, "agents") || !presentStages(root).has(stage.id)) {
      out.push(token);
      continue;
    }
    const name = src![1];
    const changes = stageChanges(root, stage.id);
    const region = changes.regions.find((r) => r.name === name && r.status !== "removed");
    if (!region) {
      out.push(token); // a missing region: the docs checks name it
      continue;
    }
    const anchor = `region-${name}`;
    const first = !shown.has(name) && stage.id === pageId;
    if (stage.id === pageId) shown.add(name); // another stage's region of the same name gets no anchor, so it links nothing
    const parent = changes.parent?.id;
    const status = parent ? region.status : "new";
    // The highlight comes from the diff, whatever the page typed: `ts{102-120}` -> `ts{…}`.
    const info = /^([\w-]*)(\{[^}]*\})?(.*)$/s.exec(token.info)!;
    const highlight = parent && status === "changed" ? `{${lineRanges(region.changedLines)}}` : "";
    token.info = `${info[1] || "ts"}${highlight}${info[3]}`;

    const where = `<code>agents/${escape(stage.file)}</code> <span class="region-lines">${words.lines(region.from, region.to)}</span>`;
    const label = `<span class="region-name">${words.region} <code>${escape(name)}</code></span>`;
    const what =
      !parent ? "" : status === "new" ? words.new(stage.id) : status === "changed" ? words.changed(parent, region.changedLines.length) : words.unchanged(parent, region.lines);
    const diff = parent && hasDiffPage(root, stage.id) && status !== "unchanged"
      ? ` <a class="region-diff" href="./diff/${stage.id}.html#${escape(name)}">${words.diff}</a>` : "";
    const caption = `${label} ${where}${what ? ` <span class="region-status">${escape(what)}</span>` : ""}${diff}`;
    const id = first ? ` id="${escape(anchor)}"` : "";
    const open = new state.Token("html_block", "", 0);
    const close = new state.Token("html_block", "", 0);
    if (status === "unchanged") {
      open.content = `<details class="region-block unchanged"${id} data-region="${escape(name)}"><summary class="region-caption">${caption}</summary>\n`;
      close.content = `</details>\n`;
    } else {
      open.content = `<figure class="region-block ${status}"${id} data-region="${escape(name)}"><figcaption class="region-caption">${caption}</figcaption>\n`;
      close.content = `</figure>\n`;
    }
    out.push(open, token, close);
  }
  state.tokens = out;
  return shown;
}

/** Link the region names in the first column of "What changed" to their blocks and diffs. */
function linkWhatChanged(state: StateCore, root: string, id: string, lang: Lang, shown: Set<string>): void {
  const tokens = state.tokens;
  const start = tokens.findIndex((t) => t.type === "heading_open" && t.attrGet("id") === "what-changed");
  if (start < 0) return;
  const level = Number(tokens[start].tag.slice(1));
  const changes = stageChanges(root, id);
  const byName = new Map<string, RegionChange>(changes.regions.map((r) => [r.name, r]));
  const diffPage = hasDiffPage(root, id);
  let inBody = false;
  let firstCell = false;
  for (let i = start + 1; i < tokens.length; i++) {
    const token = tokens[i];
    if (token.type === "heading_open" && Number(token.tag.slice(1)) <= level) break;
    if (token.type === "tbody_open") inBody = true;
    if (token.type === "tbody_close") inBody = false;
    if (token.type === "tr_open") firstCell = true;
    if (!inBody || token.type !== "inline" || !firstCell || tokens[i - 1]?.type !== "td_open") continue;
    firstCell = false;
    const children: Token[] = [];
    let changed: string | undefined;
    for (const child of token.children ?? []) {
      const region = child.type === "code_inline" ? byName.get(child.content) : undefined;
      if (!region) {
        children.push(child);
        continue;
      }
      const href = shown.has(region.name) ? `#region-${region.name}` : diffPage ? `./diff/${id}#${region.name}` : undefined;
      if (changes.parent && !isCarried(region.status)) changed ??= region.name;
      if (!href) {
        children.push(child);
        continue;
      }
      const open = new state.Token("link_open", "a", 1);
      open.attrSet("href", href);
      open.attrSet("class", "wc-region");
      children.push(open, child, new state.Token("link_close", "a", -1));
    }
    if (changed && diffPage) {
      const badge = new state.Token("html_inline", "", 0);
      badge.content = ` <a class="wc-diff" href="./diff/${id}.html#${escape(changed)}">${WORDS[lang].diff}</a>`;
      children.push(badge);
    }
    token.children = children;
  }
}

