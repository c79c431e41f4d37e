// What changed from a stage to its parent, region by region, computed with the `diff`
// package from the two files: the highlighted lines on a stage page, the collapsed
// carried-over regions, the diff pages and the "how big" figures all come from here, so no
// line number is ever typed by hand. Used at build time (config, markdown, dynamic routes)
// and by the docs tests.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { diffArrays } from "diff";
import { existingStages } from "../lib/course/stages.ts";
import { PAGE_STAGES, type Stage } from "./curriculum.ts";
import { codeLines, regionsOf } from "./source.ts";

/** Stage page id -> file name in agents/, for every stage file present (the capstone too), in order. */
export function presentStages(root: string): Map<string, string> {
  const dir = path.join(root, "agents");
  if (!existsSync(dir)) return new Map();
  // Only the stages the curriculum knows get pages; the docs tests name a file it does not know.
  const known = new Set(PAGE_STAGES.map((stage) => stage.id));
  return new Map([...existingStages(dir)].filter(([id]) => known.has(id)));
}

/** "s05_ask_user.ts" or "agents/s_full.ts" -> the stage page it belongs to. */
export function stageOfFile(file: string): Stage | undefined {
  const name = path.basename(file);
  return PAGE_STAGES.find((stage) => stage.file === name);
}

/**
 * The stage a stage's "What changed" compares with: its parent, when the parent's file is
 * there. (A later stage may land before its parent; then everything in it counts as new.)
 */
export function parentOf(root: string, id: string): { id: string; file: string } | undefined {
  const stage = PAGE_STAGES.find((s) => s.id === id);
  if (!stage?.parent) return undefined;
  const file = presentStages(root).get(stage.parent);
  return file ? { id: stage.parent, file } : undefined;
}

// The marker lines VitePress drops from an included region (nested regions' markers).
const MARKER = /^\/\/ ?#?((?:end)?region) ([\w*-]+)$/;

/** A region's lines as a page shows them (`<<< file#name`), and where they start in the file. */
export interface ShownRegion {
  name: string;
  lines: string[];
  /** 1-based line in the file of each shown line. */
  fileLines: number[];
}

/** Every region of a stage file, in file order, as pages show them. */
export function shownRegions(text: string): ShownRegion[] {
  const texts = regionsOf(text); // validates the markers: unclosed or doubled regions throw
  const fileLines = text.split("\n");
  const shown: ShownRegion[] = [];
  fileLines.forEach((line, index) => {
    const match = MARKER.exec(line.trim());
    if (!match || match[1] !== "region" || !texts.has(match[2])) return;
    const name = match[2];
    const body = texts.get(name)!.split("\n");
    const kept = body.map((text, i) => ({ text, line: index + 2 + i })).filter(({ text }) => !MARKER.test(text.trim()));
    shown.push({ name, lines: kept.map((k) => k.text), fileLines: kept.map((k) => k.line) });
  });
  return shown;
}

/**
 * "imported": the stage no longer has the region, but imports the parent's file, so the
 * parent's code still runs, unchanged (s07 to s12 import s06's tools and approval step).
 */
export type RegionStatus = "new" | "changed" | "unchanged" | "removed" | "imported";

/** A region whose code runs in the stage as it ran in the parent: carried byte for byte, or imported from the parent's file. */
export const isCarried = (status: RegionStatus) => status === "unchanged" || status === "imported";

/** One line of a diff: added, removed, the same in both, or a run of unchanged lines left out. */
export interface DiffLine {
  kind: "add" | "del" | "same" | "gap";
  text: string;
  /** The line's number in the stage's file (add, same) or the parent's (del). */
  line?: number;
  /** For a gap: how many unchanged lines it stands for. */
  skipped?: number;
}

export interface RegionChange {
  name: string;
  status: RegionStatus;
  /** Lines the region has in the stage (0 when removed). */
  lines: number;
  added: number;
  removed: number;
  /** 1-based positions, within the region as shown, of the lines new or changed since the parent. */
  changedLines: number[];
  /** First and last line of the region in the stage's file (the parent's, when removed). */
  from: number;
  to: number;
  /** The changes with a few lines of context, unchanged runs folded into gaps. */
  hunks: DiffLine[];
}

const CONTEXT = 3;

/** Compare two versions of a region (either may be missing) line by line. */
export function compareRegion(name: string, before: ShownRegion | undefined, after: ShownRegion | undefined): RegionChange {
  const old = before?.lines ?? [];
  const now = after?.lines ?? [];
  const status: RegionStatus = !after ? "removed" : !before ? "new" : old.join("\n") === now.join("\n") ? "unchanged" : "changed";
  const lines: DiffLine[] = [];
  const changedLines: number[] = [];
  let [i, j] = [0, 0];
  for (const change of diffArrays(old, now)) {
    for (const text of change.value) {
      if (change.added) {
        changedLines.push(j + 1);
        lines.push({ kind: "add", text, line: after!.fileLines[j++] });
      } else if (change.removed) {
        lines.push({ kind: "del", text, line: before!.fileLines[i++] });
      } else {
        lines.push({ kind: "same", text, line: after!.fileLines[j] });
        i++;
        j++;
      }
    }
  }
  const range = after ?? before!;
  return {
    name,
    status,
    lines: now.length,
    added: lines.filter((l) => l.kind === "add").length,
    removed: lines.filter((l) => l.kind === "del").length,
    changedLines,
    from: range.fileLines[0] ?? 0,
    to: range.fileLines.at(-1) ?? 0,
    hunks: status === "unchanged" ? [] : fold(lines),
  };
}

/** Keep the changed lines and CONTEXT lines around them; fold longer unchanged runs into a gap. */
function fold(lines: DiffLine[]): DiffLine[] {
  const keep = lines.map(() => false);
  lines.forEach((line, index) => {
    if (line.kind === "same") return;
    for (let k = Math.max(0, index - CONTEXT); k <= Math.min(lines.length - 1, index + CONTEXT); k++) keep[k] = true;
  });
  const folded: DiffLine[] = [];
  for (let index = 0; index < lines.length; ) {
    if (keep[index]) {
      folded.push(lines[index++]);
      continue;
    }
    let end = index;
    while (end < lines.length && !keep[end]) end++;
    folded.push({ kind: "gap", text: "", skipped: end - index });
    index = end;
  }
  return folded;
}

export interface StageChanges {
  id: string;
  file: string;
  parent?: { id: string; file: string };
  /** Every region of the stage in file order, then any region the parent had and the stage dropped. */
  regions: RegionChange[];
  /** The lines outside every region (the header, the imports), compared the same way. */
  outside: RegionChange;
  /** Lines of code in the stage, and how many of them are new or changed since the parent. */
  loc: number;
  newLoc: number;
}

const cache = new Map<string, StageChanges>();

/** What changed in stage `id` (its file must be present) since its parent. */
export function stageChanges(root: string, id: string): StageChanges {
  const file = presentStages(root).get(id);
  if (!file) throw new Error(`stage ${id} has no file in agents/`);
  const parent = parentOf(root, id);
  const text = readFileSync(path.join(root, "agents", file), "utf8");
  const parentText = parent ? readFileSync(path.join(root, "agents", parent.file), "utf8") : undefined;
  const key = `${id}\0${text}\0${parentText ?? ""}`;
  const cached = cache.get(key);
  if (cached) return cached;

  const now = shownRegions(text);
  const old = parentText === undefined ? [] : shownRegions(parentText);
  // A stage that imports its parent's file runs the parent's regions it does not have itself.
  const importsParent = parent !== undefined && new RegExp(`from "\\./${parent.file.replace(".", "\\.")}"`).test(text);
  const dropped = (region: ShownRegion): RegionChange => {
    const change = compareRegion(region.name, region, undefined);
    return importsParent ? { ...change, status: "imported", lines: region.lines.length, added: 0, removed: 0, hunks: [] } : change;
  };
  const regions = [
    ...now.map((region) => compareRegion(region.name, old.find((r) => r.name === region.name), region)),
    ...old.filter((region) => !now.some((r) => r.name === region.name)).map(dropped),
  ];
  const outside = compareRegion("outside", parentText === undefined ? undefined : outsideRegions(parentText), outsideRegions(text));
  if (parentText === undefined) outside.status = "new";

  // Lines of code new or changed since the parent: the file's code lines that the whole-file
  // diff marks as added.
  const code = codeLines(text);
  const added = new Set<number>();
  if (parentText === undefined) code.forEach((line) => added.add(line));
  else {
    let j = 0;
    for (const change of diffArrays(parentText.split("\n"), text.split("\n"))) {
      if (change.removed) continue;
      for (let k = 0; k < change.count; k++, j++) if (change.added && code.has(j)) added.add(j);
    }
  }
  const changes: StageChanges = { id, file, parent, regions, outside, loc: code.size, newLoc: added.size };
  cache.set(key, changes);
  return changes;
}

/** The file with each top-level region's body replaced by one line naming it. */
function outsideRegions(text: string): ShownRegion {
  const lines: string[] = [];
  const fileLines: number[] = [];
  let open: string | undefined;
  text.split("\n").forEach((line, index) => {
    const match = MARKER.exec(line.trim());
    if (open) {
      if (match && match[1] === "endregion" && match[2] === open) open = undefined;
      return;
    }
    if (match && match[1] === "region") {
      open = match[2];
      lines.push(`// (region ${open})`);
    } else lines.push(line);
    fileLines.push(index + 1);
  });
  return { name: "outside", lines, fileLines };
}

/** 1-based line numbers as VitePress's highlight syntax wants them: [1, 2, 3, 7] -> "1-3,7". */
export function lineRanges(lines: number[]): string {
  const sorted = [...new Set(lines)].sort((a, b) => a - b);
  const ranges: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    ranges.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return ranges.join(",");
}
