// Where the capstone's lines come from, counted from the files: the table under "Why it is over
// its size target" on the capstone's page. A region counts under the part of the course where a
// region of its name first appears; what later stages and the capstone joined into it counts
// there too. Read by capstone.data.ts at build time and by the tests (it loads no TypeScript).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { regionsOf } from "../lib/course/regions.ts";
import { CAPSTONE, OVER_TARGET, sizeTarget, STAGES, type Layer } from "./curriculum.ts";

export interface CapstoneShare {
  /** The part of the course (1 to 5) where these regions first appear, or the capstone's own. */
  origin: Layer | "capstone";
  regions: string[];
  /** Their lines in the capstone, each region's two marker lines included. */
  lines: number;
  /** Of those, the lines of regions that are word for word a stage's region of the same name. */
  sameLines: number;
}

export interface CapstoneSize {
  /** Every line of the file, as the size target counts them. */
  lines: number;
  target: number;
  /** The size the tests hold it at while it is over its target (null when within). */
  held: number | null;
  /** In the order of the course: Part I to V, then the capstone's own regions. */
  shares: CapstoneShare[];
  /** The header comment and the imports: the lines outside every region. */
  outside: number;
}

const REGION = /^\/\/ #region ([\w-]+)$/;
const END = /^\/\/ #endregion ([\w-]+)$/;

/** Each top-level region's name and its lines, markers included; what is outside them, counted apart. */
function topLevelRegions(lines: string[]): { sizes: Map<string, number>; outside: number } {
  const sizes = new Map<string, number>();
  let open: string | null = null; // the region the line is in
  let outside = 0;
  for (const line of lines) {
    if (open === null) {
      open = REGION.exec(line)?.[1] ?? null;
      if (open === null) outside += 1;
      else sizes.set(open, 1);
      continue;
    }
    sizes.set(open, sizes.get(open)! + 1);
    if (END.exec(line)?.[1] === open) open = null;
  }
  return { sizes, outside };
}

export function capstoneSize(root: string): CapstoneSize {
  const text = readFileSync(path.join(root, "agents", CAPSTONE.file), "utf8");
  const lines = text.split("\n").slice(0, -1); // the file ends with a newline: no line after it
  const { sizes, outside } = topLevelRegions(lines);
  const mine = regionsOf(text);
  const stages = STAGES.filter((stage) => existsSync(path.join(root, "agents", stage.file))).map((stage) => ({
    layer: stage.layer as Layer,
    regions: regionsOf(readFileSync(path.join(root, "agents", stage.file), "utf8")),
  }));
  const shares = new Map<Layer | "capstone", CapstoneShare>();
  for (const origin of [1, 2, 3, 4, 5, "capstone"] as const) shares.set(origin, { origin, regions: [], lines: 0, sameLines: 0 });
  for (const [name, size] of sizes) {
    const share = shares.get(stages.find((stage) => stage.regions.has(name))?.layer ?? "capstone")!;
    share.regions.push(name);
    share.lines += size;
    if (stages.some((stage) => stage.regions.get(name) === mine.get(name))) share.sameLines += size;
  }
  const held = OVER_TARGET[CAPSTONE.id] ?? null;
  return { lines: lines.length, target: sizeTarget(CAPSTONE.id), held, shares: [...shares.values()].filter((share) => share.regions.length > 0), outside };
}
