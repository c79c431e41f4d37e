// Build-time data loader: the figures in each stage page's header come from the stage file
// itself, so they can never go stale. Only stages whose file exists appear here.
import { readFileSync } from "node:fs";
import path from "node:path";
import { defineLoader } from "vitepress";
import { REPO_ROOT } from "../lib/course/stages.ts";
import { presentStages, stageChanges } from "./regions.ts";
import { machineryOf, toolCount } from "./source.ts";

export interface StageFigures {
  id: string;
  /** "s02_tool_use.ts" */
  file: string;
  /** Non-blank, non-comment lines. */
  loc: number;
  /** Every line of the file, comments included: what the size target counts. */
  lines: number;
  /** Lines of code new or changed since the parent (all of them when there is none). */
  newLoc: number;
  /** The parent stage it is compared with, when its file is present. */
  parent: string | null;
  /** Entries of the TOOLS array; null when the stage builds its tools another way. */
  tools: number | null;
  /** The lib/machinery modules it runs, by id (its own imports, and those of a stage file it imports). */
  machinery: string[];
}

declare const data: Record<string, StageFigures>;
export { data };

export default defineLoader({
  watch: ["../agents/*.ts"],
  load(): Record<string, StageFigures> {
    const stages: Record<string, StageFigures> = {};
    for (const [id, file] of presentStages(REPO_ROOT)) {
      const text = readFileSync(path.join(REPO_ROOT, "agents", file), "utf8");
      const changes = stageChanges(REPO_ROOT, id);
      stages[id] = { id, file, loc: changes.loc, lines: text.split("\n").length - 1, newLoc: changes.newLoc, parent: changes.parent?.id ?? null, tools: toolCount(text, file) ?? null, machinery: machineryOf(text) };
    }
    return stages;
  },
});
