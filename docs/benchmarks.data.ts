// Build-time data loader for the benchmarks page (both languages): the figures of the last
// committed `npm run bench`, bench/results.json, as they are. The page formats them.
import { readFileSync } from "node:fs";
import { defineLoader } from "vitepress";
import type { BenchResults } from "../scripts/bench/report.ts";

declare const data: BenchResults;
export { data };

export default defineLoader({
  watch: ["../bench/results.json"],
  load(files: string[]): BenchResults {
    return JSON.parse(readFileSync(files[0], "utf8")) as BenchResults;
  },
});
