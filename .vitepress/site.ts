// What the site knows about the repository when it is built: which optional pages exist
// (other people add exercises, a workshop page, a benchmarks page), which stages have only a
// planned page, which have a diff page, the repository's address, and each page's
// description. Pure functions of the repository root, so the docs tests can run them on a
// broken copy too.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { PAGE_STAGES, SEEDS, SYSTEMS, stageById, type Lang, type Stage } from "./curriculum.ts";
import { hasDiffPage } from "./markdown.ts";
import { isCarried, presentStages, stageChanges, type RegionChange } from "./regions.ts";

export const LANGS: Lang[] = ["en", "ja"];
const prefix = (lang: Lang) => (lang === "ja" ? "ja/" : "");
const pageFile = (root: string, lang: Lang, page: string) => path.join(root, "docs", `${prefix(lang)}${page}.md`);

/** Pages written by others, linked only when they exist, per language. */
export interface OptionalPages {
  /** Stage ids with an exercise page (docs/exercises/<id>.md). */
  exercises: string[];
  workshop: boolean;
  benchmarks: boolean;
}

export function optionalPages(root: string, lang: Lang): OptionalPages {
  return {
    exercises: PAGE_STAGES.map((s) => s.id).filter((id) => existsSync(pageFile(root, lang, `exercises/${id}`))),
    workshop: existsSync(pageFile(root, lang, "workshop")),
    benchmarks: existsSync(pageFile(root, lang, "benchmarks")),
  };
}

/** Stages with no page of their own yet in `lang`: each gets a planned page from docs/[stage].md. */
export function plannedStages(root: string, lang: Lang): Stage[] {
  return PAGE_STAGES.filter((stage) => !existsSync(pageFile(root, lang, stage.id)));
}

/**
 * Stages with a diff page: their file and their parent's are both present, and both files'
 * regions can be read (a stage being written with a broken region marker gets none until it
 * is fixed; the docs tests name the marker).
 */
export function diffStages(root: string): string[] {
  return [...presentStages(root).keys()].filter((id) => {
    if (!hasDiffPage(root, id)) return false;
    try {
      stageChanges(root, id);
      return true;
    } catch (error) {
      console.warn(`No diff page for ${id}: ${(error as Error).message}`);
      return false;
    }
  });
}

/**
 * The repository's address from package.json's `repository` field (a string such as
 * "github:owner/name", "owner/name" or a URL, or { url }), as a page to link and a URL to
 * clone; undefined when the field is not set. Nothing else in the site names an address.
 */
export function repositoryOf(pkg: { repository?: string | { url?: string } }): { web: string; clone: string } | undefined {
  const raw = typeof pkg.repository === "string" ? pkg.repository : pkg.repository?.url;
  if (!raw || raw.trim() === "") return undefined;
  const value = raw.trim();
  const hosts: Record<string, string> = { github: "github.com", gitlab: "gitlab.com", bitbucket: "bitbucket.org" };
  const short = /^(?:(github|gitlab|bitbucket):)?([\w.-]+)\/([\w.-]+?)(?:\.git)?$/.exec(value);
  if (short && !value.includes("://")) {
    const web = `https://${hosts[short[1] ?? "github"]}/${short[2]}/${short[3]}`;
    return { web, clone: `${web}.git` };
  }
  const url = value.replace(/^git\+/, "").replace(/^git:\/\//, "https://").replace(/^ssh:\/\/git@/, "https://");
  if (!/^https?:\/\//.test(url)) return undefined;
  const web = url.replace(/\.git$/, "");
  return { web, clone: url.endsWith(".git") ? url : `${web}.git` };
}

export function readRepository(root: string): { web: string; clone: string } | undefined {
  return repositoryOf(JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")));
}

// ---------------------------------------------------------------------------------------
// Planned pages and diff pages (VitePress dynamic routes: docs/[stage].md, docs/diff/[stage].md)

const PLANNED = {
  en: {
    status: "Being written",
    statusText: (file: string) =>
      `This stage is planned and being written: its file \`agents/${file}\` and its page are not here yet. Until they are, this page says what it will teach and where it comes from.`,
    statusFile: (file: string, diff?: { id: string; parent: string }) =>
      `This stage is being written: its file \`agents/${file}\` is already here, and its page is not written yet. Until it is, this page says what it will teach and where it comes from.${diff ? ` [The diff from ${diff.parent}](./diff/${diff.id}) shows what the file adds so far.` : ""}`,
    teaches: "What it will teach",
    from: "Where it comes from",
    parent: (id: string, title: string) => `It is built from [${id}: ${title}](./${id}), its parent: its "What changed" will compare it with ${id}, region by region.`,
    noParent: "It brings every mechanism of the twelve stages together, so it is compared with none of them.",
    seed: (what: string, system: string) => `It is designed from ${what}; see ${system}.`,
    noSeed: "It has no seed document of its own: it assembles the stages before it.",
    until: "Until then",
    untilText: (parent?: string) =>
      parent
        ? `Read its parent, [${parent}](./${parent}), and the [curriculum](./curriculum) for where it fits. The page will replace this one when the stage is written.`
        : `Read the [curriculum](./curriculum) for where it fits. The page will replace this one when the stage is written.`,
  },
  ja: {
    status: "執筆中",
    statusText: (file: string) =>
      `このステージは予定されていて、いま書かれているところです。ファイル \`agents/${file}\` とページはまだありません。それまでのあいだ、このページでは何を学ぶのか、どこから来たのかを紹介します。`,
    statusFile: (file: string, diff?: { id: string; parent: string }) =>
      `このステージはいま書かれているところです。ファイル \`agents/${file}\` はすでにありますが、ページはまだ書かれていません。それまでのあいだ、このページでは何を学ぶのか、どこから来たのかを紹介します。${diff ? `ファイルがここまでに何を足したかは [${diff.parent} との差分](./diff/${diff.id})で見られます。` : ""}`,
    teaches: "学ぶこと",
    from: "もとになったもの",
    parent: (id: string, title: string) => `親は [${id}: ${title}](./${id}) です。このステージの「変更点」は ${id} とリージョンごとに比べます。`,
    noParent: "12のステージすべての仕組みを1つにまとめるので、どれか1つのステージと比べることはしません。",
    seed: (what: string, system: string) => `設計のもとは${what}です。${system}も参照してください。`,
    noSeed: "固有の元資料はありません。それまでのステージを組み立てたものです。",
    until: "それまでは",
    untilText: (parent?: string) =>
      parent
        ? `親の [${parent}](./${parent}) と、全体の中での位置づけがわかる[カリキュラム](./curriculum)を読んでください。ステージが書かれると、このページは本来のページに置き換わります。`
        : `全体の中での位置づけがわかる[カリキュラム](./curriculum)を読んでください。ステージが書かれると、このページは本来のページに置き換わります。`,
  },
} as const;

/**
 * The Markdown of a planned stage's page (the params carry the stage id for <StageHeader>).
 * `file`: whether the stage's file is already in agents/; `diff`: its diff page, if it has one.
 */
export function plannedContent(stage: Stage, lang: Lang, file = false, diff?: { id: string; parent: string }): string {
  const w = PLANNED[lang];
  const parent = stage.parent ? stageById(stage.parent) : undefined;
  const seeds = stage.seeds.map((seed) => {
    const { system, what } = SEEDS[seed];
    const sys = SYSTEMS[system];
    return `- ${w.seed(what[lang], `[${sys.name[lang]}](${sys.url})`)}`;
  });
  return [
    `::: info ${w.status}`,
    file ? w.statusFile(stage.file, diff) : w.statusText(stage.file),
    `:::`,
    ``,
    `## ${w.teaches} {#teaches}`,
    ``,
    stage.teaches[lang],
    ``,
    `## ${w.from} {#from}`,
    ``,
    `- ${parent ? w.parent(parent.id, parent.title[lang]) : w.noParent}`,
    ...(seeds.length > 0 ? seeds : [`- ${w.noSeed}`]),
    ``,
    `## ${w.until} {#until-then}`,
    ``,
    w.untilText(parent?.id),
    ``,
  ].join("\n");
}

export function plannedRoutes(root: string, lang: Lang) {
  const present = presentStages(root);
  const diffs = diffStages(root);
  return plannedStages(root, lang).map((stage) => ({
    params: { stage: stage.id, planned: true },
    content: plannedContent(stage, lang, present.has(stage.id), diffs.includes(stage.id) ? { id: stage.id, parent: stage.parent! } : undefined),
  }));
}

const DIFF = {
  en: {
    title: (id: string, parent: string) => `${id}: what changed from ${parent}`,
    intro: (file: string, parentFile: string, parent: string, id: string) =>
      `Computed when the site was built, region by region, from \`agents/${parentFile}\` (${parent}, the parent) and \`agents/${file}\` (${id}) with the \`diff\` package. Green lines are new in ${id}, red lines are gone; unchanged runs are folded. Back to [the ${id} page](../${id}).`,
    summary: "Summary",
    region: "region",
    status: { new: "new", changed: "changed", unchanged: "unchanged", removed: "removed", imported: "imported" },
    lines: "lines",
    changes: "New and changed regions",
    unchanged: "Unchanged regions",
    unchangedText: (parent: string) => `Carried over from ${parent} byte for byte, or imported from its file (they run as they ran there):`,
    none: "None.",
    outside: "Outside the regions",
    outsideText: "The header comment and the imports; each region stands as one line here.",
    where: (file: string, from: number, to: number) => `\`agents/${file}\`, lines ${from}–${to}`,
    whereRemoved: (file: string, from: number, to: number) => `was \`agents/${file}\`, lines ${from}–${to}`,
  },
  ja: {
    title: (id: string, parent: string) => `${id}: ${parent} からの変更`,
    intro: (file: string, parentFile: string, parent: string, id: string) =>
      `サイトのビルド時に、\`agents/${parentFile}\`(親の ${parent})と \`agents/${file}\`(${id})を \`diff\` パッケージでリージョンごとに比べた結果です。緑の行は ${id} で加わった行、赤の行はなくなった行です。変わらない部分は折りたたんでいます。[${id} のページ](../${id})に戻る。`,
    summary: "まとめ",
    region: "リージョン",
    status: { new: "新規", changed: "変更", unchanged: "変更なし", removed: "削除", imported: "import" },
    lines: "行数",
    changes: "新しいリージョンと変わったリージョン",
    unchanged: "変わらないリージョン",
    unchangedText: (parent: string) => `${parent} からバイト単位で同じまま引き継いだか、${parent} のファイルから import しています(どちらも ${parent} と同じコードが動きます)。`,
    none: "ありません。",
    outside: "リージョンの外",
    outsideText: "先頭のコメントと import です。ここでは各リージョンを1行で表しています。",
    where: (file: string, from: number, to: number) => `\`agents/${file}\` の ${from}〜${to} 行`,
    whereRemoved: (file: string, from: number, to: number) => `もとは \`agents/${file}\` の ${from}〜${to} 行`,
  },
} as const;

const counts = (r: RegionChange) => `+${r.added} −${r.removed}`;

/** The Markdown of a stage's diff page; the lines themselves come through params to <RegionDiff>. */
export function diffContent(root: string, id: string, lang: Lang): string {
  const w = DIFF[lang];
  const changes = stageChanges(root, id);
  const parent = changes.parent!;
  const changed = changes.regions.filter((r) => !isCarried(r.status));
  const unchanged = changes.regions.filter((r) => isCarried(r.status));
  const rows = changes.regions.map((r) => `| [\`${r.name}\`](#${r.name}) | ${w.status[r.status]} | ${isCarried(r.status) ? r.lines : counts(r)} |`);
  return [
    `# ${w.title(id, parent.id)}`,
    ``,
    w.intro(changes.file, parent.file, parent.id, id),
    ``,
    `## ${w.summary} {#diff-summary}`,
    ``,
    `| ${w.region} | ${id} | ${w.lines} |`,
    `| --- | --- | --- |`,
    ...rows,
    ``,
    `## ${w.changes} {#diff-changes}`,
    ``,
    ...(changed.length === 0 ? [w.none, ``] : []),
    ...changed.flatMap((r) => [
      `### \`${r.name}\` · ${w.status[r.status]} {#${r.name}}`,
      ``,
      `${r.status === "removed" ? w.whereRemoved(parent.file, r.from, r.to) : w.where(changes.file, r.from, r.to)} · ${counts(r)}`,
      ``,
      `<RegionDiff name="${r.name}" />`,
      ``,
    ]),
    `## ${w.unchanged} {#diff-unchanged}`,
    ``,
    unchanged.length === 0 ? w.none : w.unchangedText(parent.id),
    ``,
    ...(unchanged.length > 0 ? [`<p class="diff-unchanged">${unchanged.map((r) => `<span id="${r.name}"><code>${r.name}</code> (${r.lines})</span>`).join(" ")}</p>`, ``] : []),
    `## ${w.outside} {#diff-outside}`,
    ``,
    w.outsideText,
    ``,
    `<RegionDiff name="outside" />`,
    ``,
  ].join("\n");
}

export function diffRoutes(root: string, lang: Lang) {
  return diffStages(root).map((id) => {
    const changes = stageChanges(root, id);
    const regions = [...changes.regions.filter((r) => !isCarried(r.status)), changes.outside].map(({ name, status, hunks }) => ({ name, status, hunks }));
    return { params: { stage: id, parent: changes.parent!.id, regions }, content: diffContent(root, id, lang) };
  });
}

// ---------------------------------------------------------------------------------------
// Descriptions

/** The first paragraph of prose in a page's Markdown, as plain text, for its description. */
export function firstParagraph(markdown: string): string | undefined {
  const body = markdown.replace(/^---\n[\s\S]*?\n---\n/, "");
  for (const block of body.split(/\n\s*\n/)) {
    const text = block.trim();
    if (!text || /^(#|<|```|:::|\||!\[|- |\d+\. |>)/.test(text)) continue;
    const plain = text
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/[`*_]/g, "")
      .replace(/\s+/g, " ")
      .trim();
    if (plain.length > 0) return plain.length > 200 ? `${plain.slice(0, 197).replace(/\s+\S*$/, "")}…` : plain;
  }
  return undefined;
}

/** A page's description when its frontmatter gives none: from the curriculum, or its first paragraph. */
export function describePage(root: string, relativePath: string, params?: Record<string, unknown>): string | undefined {
  const lang: Lang = relativePath.startsWith("ja/") ? "ja" : "en";
  const local = relativePath.replace(/^ja\//, "");
  const diff = /^diff\/(s\d\d|full)\.md$/.exec(local);
  if (diff) {
    const stage = stageById(diff[1]);
    return lang === "ja"
      ? `${stage.id} が親の ${params?.parent} から何を変えたかを、リージョンごとに示す差分です。`
      : `What ${stage.id} changes from its parent ${params?.parent}, region by region, computed from the two files.`;
  }
  const stagePage = /^(s\d\d|full)\.md$/.exec(local);
  if (stagePage) {
    const stage = stageById(stagePage[1]);
    return `${stage.motto[lang]}${lang === "ja" ? "。" : ". "}${stage.teaches[lang]}`.replace("。。", "。");
  }
  const file = path.join(root, "docs", relativePath);
  return existsSync(file) ? firstParagraph(readFileSync(file, "utf8")) : undefined;
}
