// The bench's figures: their shape in bench/results.json, the targets they are held to, and
// the tables printed at the end. Pure functions, so the tests can check them without a run.
import path from "node:path";

export interface SearchRow {
  stage: string;
  case: string;
  tool: "grep" | "glob";
  input: Record<string, unknown>;
  /** Milliseconds of the tool's call, in this process: the best of the runs. */
  ms: number;
  /** Milliseconds of ripgrep, run as a process, the best of the runs; null without ripgrep. */
  rgMs: number | null;
  ratio: number | null;
  /** Lines in the compared answer (paths, lines or counts). */
  results: number;
  /** Whether the tool and ripgrep found the same; null without ripgrep. */
  same: boolean | null;
  differences: string[];
}

export interface StartRow {
  stage: string;
  firstLineMs: number | null;
  endMs: number;
  /** The first line's time over `tsx -e ''`'s. */
  ratio: number | null;
  code: number | null;
}

export interface EditRow {
  stage: string;
  editBytes: number;
  writeBytes: number;
  checked: boolean;
}

export interface ContextRow {
  stage: string;
  requests: number[];
  total: number;
  matched: boolean;
}

/**
 * What a prompt cache would serve of a demo's requests (lib/course/cache.ts): estimated tokens
 * (characters / 4), and the input's cost in dollars with the cache and without it.
 */
export interface CacheRow {
  stage: string;
  /** "own": the stage's breakpoints; "s14": s14's placement applied to the stage's requests. */
  breakpoints: "own" | "s14";
  requests: number;
  inputTokens: number;
  cacheRead: number;
  cacheWrite: number;
  ideal: number;
  share: number;
  idealShare: number;
  ofIdeal: number;
  costWith: number | null;
  costWithout: number | null;
}

/** How long a streamed text delta takes from the loopback connection to stdout (s13): scripts/bench/streaming.ts. */
export interface StreamingRow {
  stage: string;
  deltas: number;
  medianMs: number;
  worstMs: number;
  code: number | null;
}

export interface Target {
  /** A stable key, for the docs page's words in each language. */
  id: "grep" | "glob" | "same" | "firstLine" | "tests" | "bench" | "cache" | "streaming";
  name: string;
  measured: string;
  limit: string;
  /** null: not measured in this run. */
  met: boolean | null;
}

export interface BenchResults {
  /** When the run started (ISO 8601). */
  date: string;
  command: string;
  machine: { cpu: string; cores: number; memoryGB: number; node: string; platform: string };
  /** ripgrep's version line; null when rg is not installed. */
  ripgrep: string | null;
  tree: { files: number; bytes: number; folders: number; seed: number } | null;
  search: SearchRow[];
  start: { nodeMs: number; tsxMs: number; stages: StartRow[] } | null;
  editVersusWrite: EditRow[];
  context: ContextRow[];
  /** Each stage that streams: its text deltas' delay from the wire to stdout, in its best of three runs. */
  streaming?: StreamingRow[];
  /** Every demo of several requests through a simulated prompt cache; `price`: the model and prices its costs use. */
  cache?: { model: string; price: { input: number; output: number; cache_write: number; cache_read: number } | null; pricesDate: string; rows: CacheRow[] };
  /** `files`: each test file's time in that run, by its path from the root; `npm test` starts the slowest first (tests/sequencer.ts). */
  tests: { ms: number; code: number | null; summary: string; files?: Record<string, number> } | null;
  benchMs: number;
  /** Where the bench's time went, part by part (milliseconds). */
  partsMs?: Record<string, number>;
  targets: Target[];
}

/** Each test file's time from Vitest's JSON report (start to end, whole milliseconds), by its path from `root`, slowest first. */
export function fileDurations(report: { testResults: { name: string; startTime: number; endTime: number }[] }, root: string): Record<string, number> {
  const rows = report.testResults.map((file) => [path.relative(root, file.name).split(path.sep).join("/"), Math.round(file.endTime - file.startTime)] as const);
  return Object.fromEntries(rows.sort((a, b) => b[1] - a[1]));
}

export const LIMITS = { grep: 2, glob: 3, firstLine: 2, testsMs: 30_000, benchMs: 180_000, cacheOfIdeal: 0.9, streamingMs: 20 };

/** The issue's targets, each met, missed or not measured in this run. */
export function targetsOf(results: Omit<BenchResults, "targets">): Target[] {
  const worst = (rows: SearchRow[]) => (rows.length > 0 && rows.every((row) => row.ratio !== null) ? Math.max(...rows.map((row) => row.ratio!)) : null);
  const times = (ratio: number | null) => (ratio === null ? "not measured" : `${ratio.toFixed(2)}x at worst`);
  const grepRows = results.search.filter((row) => row.tool === "grep");
  const globRows = results.search.filter((row) => row.tool === "glob");
  const grepWorst = worst(grepRows);
  const globWorst = worst(globRows);
  const compared = results.search.filter((row) => row.same !== null);
  const startWorst = results.start && results.start.stages.every((row) => row.ratio !== null) ? Math.max(...results.start.stages.map((row) => row.ratio!)) : null;
  return [
    { id: "grep", name: "grep within 2x ripgrep", measured: times(grepWorst), limit: `${LIMITS.grep}x`, met: grepWorst === null ? null : grepWorst <= LIMITS.grep },
    { id: "glob", name: "glob within 3x rg --files", measured: times(globWorst), limit: `${LIMITS.glob}x`, met: globWorst === null ? null : globWorst <= LIMITS.glob },
    {
      id: "same",
      name: "the same results as ripgrep",
      measured: compared.length === 0 ? "not measured" : `${compared.filter((row) => row.same).length} of ${compared.length} searches`,
      limit: "all",
      met: compared.length === 0 || compared.length < results.search.length ? null : compared.every((row) => row.same),
    },
    { id: "firstLine", name: "a stage's first line within 2x tsx -e ''", measured: times(startWorst), limit: `${LIMITS.firstLine}x`, met: startWorst === null ? null : startWorst <= LIMITS.firstLine },
    {
      id: "tests",
      name: "npm test within 30 s",
      measured: results.tests ? `${seconds(results.tests.ms)}${results.tests.code === 0 ? "" : " (failed)"}` : "not measured",
      limit: "30 s",
      met: results.tests ? results.tests.ms <= LIMITS.testsMs && results.tests.code === 0 : null,
    },
    { id: "bench", name: "the bench within 3 minutes", measured: seconds(results.benchMs), limit: "180 s", met: results.benchMs <= LIMITS.benchMs },
    cacheTarget(results.cache?.rows.find((row) => row.stage === "full")),
    streamingTarget(results.streaming ?? []),
  ];
}

/** The slowest delta of any streaming stage, from the wire to stdout. */
function streamingTarget(rows: StreamingRow[]): Target {
  const name = "a streamed text delta on stdout within 20 ms";
  const timed = rows.filter((row) => row.deltas > 0);
  if (timed.length === 0) return { id: "streaming", name, measured: "not measured", limit: "20 ms", met: null };
  const worst = Math.max(...timed.map((row) => row.worstMs));
  const median = Math.max(...timed.map((row) => row.medianMs));
  return { id: "streaming", name, measured: `${worst.toFixed(1)} ms at worst, median ${median.toFixed(1)} ms`, limit: "20 ms", met: worst < LIMITS.streamingMs && timed.length === rows.length };
}

/** The capstone's demo: what the cache reads, as a share of what a perfect cache would. */
function cacheTarget(row: CacheRow | undefined): Target {
  const name = "the capstone's demo: cache reads within 90% of the ideal";
  if (!row) return { id: "cache", name, measured: "not measured", limit: "90%", met: null };
  return { id: "cache", name, measured: `${percent(row.ofIdeal)} of the ideal`, limit: "90%", met: row.ofIdeal >= LIMITS.cacheOfIdeal };
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;
const money = (dollars: number | null) => (dollars === null ? "-" : `$${dollars.toFixed(4)}`);

/** Rows of text as a table with aligned columns; numbers are right-aligned. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? "").length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((row) => /^[\d.,]+\s?[a-zA-Z%]*$|^-$/.test(row[i] ?? "")));
  const line = (cells: string[]) => cells.map((cell, i) => (numeric[i] ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join("  ").trimEnd();
  return [line(header), widths.map((width) => "-".repeat(width)).join("  "), ...rows.map(line)].join("\n");
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const millis = (ms: number | null) => (ms === null ? "-" : `${Math.round(ms)} ms`);
const ratio = (value: number | null) => (value === null ? "-" : `${value.toFixed(2)}x`);
export const kilobytes = (bytes: number) => (bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`);
const verdict = (met: boolean | null) => (met === null ? "not measured" : met ? "met" : "MISSED");

/** Everything the run measured, as the tables printed at its end. */
export function formatResults(results: BenchResults): string {
  const parts: string[] = [];
  const { machine } = results;
  parts.push(`${results.date}  ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGB} GB, Node ${machine.node}, ${machine.platform}`);
  if (results.tree) {
    const { tree } = results;
    parts.push(`\nSearch: ${tree.files.toLocaleString("en")} files, ${(tree.bytes / 1e6).toFixed(0)} MB, ${tree.folders.toLocaleString("en")} folders; ${results.ripgrep ?? "ripgrep not installed (apt-get install -y ripgrep)"}`);
    parts.push(
      table(
        ["stage", "search", "tool", "rg", "ratio", "results", "same"],
        results.search.map((row) => [row.stage, row.case, millis(row.ms), millis(row.rgMs), ratio(row.ratio), String(row.results), row.same === null ? "-" : row.same ? "yes" : "NO"]),
      ),
    );
    for (const row of results.search.filter((row) => row.same === false)) parts.push(`  ${row.stage} ${row.case}: ${row.differences.join("; ")}`);
  }
  if (results.start) {
    const { start } = results;
    parts.push(`\nStart (empty folder, no key: the offline replay): node -e '' ${millis(start.nodeMs)}, tsx -e '' ${millis(start.tsxMs)}`);
    parts.push(
      table(
        ["stage", "first line", "x tsx -e ''", "replay done", "exit"],
        start.stages.map((row) => [row.stage, millis(row.firstLineMs), ratio(row.ratio), millis(row.endMs), String(row.code)]),
      ),
    );
  }
  if (results.editVersusWrite.length > 0) {
    parts.push("\nChanging one line of a 1,000-line file: the tool call's input, in bytes");
    parts.push(
      table(
        ["stage", "edit_file", "write_file", "write / edit"],
        results.editVersusWrite.map((row) => [row.stage, kilobytes(row.editBytes), kilobytes(row.writeBytes), `${(row.writeBytes / row.editBytes).toFixed(0)}x`]),
      ),
    );
  }
  if (results.context.length > 0) {
    parts.push("\nContext per demo: the bytes of each request the model receives, in order");
    parts.push(
      table(
        ["stage", "requests", "total", "first", "last", "each"],
        results.context.map((row) => [
          row.stage + (row.matched ? "" : " (replay did not match)"),
          String(row.requests.length),
          kilobytes(row.total),
          kilobytes(row.requests[0] ?? 0),
          kilobytes(row.requests.at(-1) ?? 0),
          row.requests.map((bytes) => (bytes / 1024).toFixed(1)).join(" "),
        ]),
      ),
    );
  }
  if (results.cache && results.cache.rows.length > 0) {
    const { model, price, pricesDate } = results.cache;
    parts.push(`\nPrompt cache per demo (lib/course/cache.ts: the API's rule, tokens estimated as characters / 4; input cost at ${model}'s prices of ${pricesDate}${price ? "" : ", unknown"})`);
    parts.push(
      table(
        ["stage", "breakpoints", "requests", "input", "cache read", "ideal", "of ideal", "with cache", "without"],
        results.cache.rows.map((row) => [
          row.stage,
          row.breakpoints === "own" ? "its own" : "s14's",
          String(row.requests),
          String(row.inputTokens),
          percent(row.share),
          percent(row.idealShare),
          percent(row.ofIdeal),
          money(row.costWith),
          money(row.costWithout),
        ]),
      ),
    );
  }
  if (results.streaming && results.streaming.length > 0) {
    parts.push("\nStreaming: a text delta from the loopback connection to the stage's stdout (the best of three runs)");
    parts.push(
      table(
        ["stage", "deltas", "median", "worst", "exit"],
        results.streaming.map((row) => [row.stage, String(row.deltas), `${row.medianMs.toFixed(1)} ms`, `${row.worstMs.toFixed(1)} ms`, String(row.code)]),
      ),
    );
  }
  if (results.tests) parts.push(`\nnpm test: ${seconds(results.tests.ms)}, exit ${results.tests.code}${results.tests.summary ? `: ${results.tests.summary}` : ""}`);
  const where = Object.entries(results.partsMs ?? {}).map(([part, ms]) => `${part} ${seconds(ms)}`);
  parts.push(`\nTargets (the bench took ${seconds(results.benchMs)}${where.length > 0 ? `: ${where.join(", ")}` : ""})`);
  parts.push(table(["target", "measured", "limit", ""], results.targets.map((target) => [target.name, target.measured, target.limit, verdict(target.met)])));
  return parts.join("\n");
}
