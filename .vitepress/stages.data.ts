// Build-time data loader: the figures in each stage page's header come from the stage file
// itself, so they can never go stale. Only stages whose file exists appear here.
import { readFileSync } from "node:fs";
import path from "node:path";
import { defineLoader } from "vitepress";
import { linesOfCode, toolCount } from "./source.ts";

export interface StageFigures {
  id: string;
  /** "s02_tool_use.ts" */
  file: string;
  /** Non-blank, non-comment lines. */
  loc: number;
  /** Entries of the TOOLS array; null when the stage builds its tools another way. */
  tools: number | null;
}

declare const data: Record<string, StageFigures>;
export { data };

export default defineLoader({
  watch: ["../agents/s[0-9][0-9]_*.ts"],
  load(files: string[]): Record<string, StageFigures> {
    const stages: Record<string, StageFigures> = {};
    for (const file of [...files].sort()) {
      const name = path.basename(file);
      const text = readFileSync(file, "utf8");
      stages[name.slice(0, 3)] = { id: name.slice(0, 3), file: name, loc: linesOfCode(text, name), tools: toolCount(text, name) ?? null };
    }
    return stages;
  },
});
