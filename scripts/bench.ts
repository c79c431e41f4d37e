// `npm run bench`: the workbook's figures, measured side by side in one run on this machine.
//
//   1. search: each stage's grep and glob against ripgrep on a generated tree of 20,000 files
//      (about 100 MB), and whether they find the same things;
//   2. start: each stage run as a learner runs it, with no key (the offline replay): time to
//      its first line and to its end, against `tsx -e ''` and `node -e ''`;
//   3. edit versus write: the bytes of a call that changes one line of a 1,000-line file;
//   4. context per demo: the bytes of each request each stage's demo sends to the model, and
//      the share of its input a prompt cache would serve (lib/course/cache.ts, s14's breakpoints);
//   5. the test suite's wall time (`npm test`, once), and each test file's time, by which
//      `npm test` starts the slowest files first (tests/sequencer.ts);
//   6. streaming (s13): how long a text delta takes from a provider on 127.0.0.1 to the stdout
//      of each stage that streams, run as a learner runs it with one prompt.
//
// It prints a progress line while it works, then the tables, and writes the figures, with
// the date, the machine and the command, to bench/results.json (the docs' benchmarks page
// shows that file). Every stage file present is measured, so new stages join by themselves.
//
//   npm run bench                      everything (under 3 minutes on 2 cores, a quarter of it the test suite)
//   npm run bench -- --skip-tests      without the test suite
//   npm run bench -- --out other.json  write the figures elsewhere
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { AGENTS_DIR, existingStages, REPO_ROOT } from "../lib/course/stages.ts";
import { toolImplementations } from "../lib/course/tools.ts";
import type { MessageCreateParams } from "@anthropic-ai/sdk/resources/messages";
import type { Price } from "../lib/course/cache.ts";
import { demoCache, demoContext, editVersusWrite, parametersOf, toolOf, type StageModule } from "./bench/context.ts";
import { fileDurations, formatResults, targetsOf, type BenchResults, type CacheRow, type ContextRow, type EditRow, type SearchRow, type StartRow } from "./bench/report.ts";
import { differences, inputFor, normalizeRipgrep, normalizeTool, ripgrepVersion, runRipgrep, SEARCH_CASES } from "./bench/search.ts";
import { timeStart } from "./bench/start.ts";
import { streams, timeStreaming } from "./bench/streaming.ts";
import { generateTree } from "./bench/tree.ts";

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const OUT = path.resolve(REPO_ROOT, option("--out") ?? "bench/results.json");
// Each figure is the best of several runs, taken in turns with what it is compared with: on a
// shared machine other work only ever adds time, so the fastest run is the truest one.
const RUNS = 6; // timed runs of each search, after one to warm up: enough that a slow spell seldom covers them all
const START_RUNS = 3;
const SEED = 1;

/** One line that rewrites itself at a terminal; plain lines otherwise (a log keeps them all). */
function progress(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text}`);
  else process.stderr.write(`${text}\n`);
}

const started = performance.now();
// Where the time goes, part by part: the bench has a time limit of its own.
const partsMs: Record<string, number> = {};
let partStarted = started;
const partDone = (part: string) => {
  partsMs[part] = performance.now() - partStarted;
  partStarted = performance.now();
};
const stages = existingStages();
const modules = new Map<string, StageModule>();
for (const [id, name] of stages) modules.set(id, (await import(pathToFileURL(path.join(AGENTS_DIR, name)).href)) as StageModule);
const hasTool = (id: string, tool: string) => toolOf(modules.get(id)!, tool) !== undefined;

// 1. Search ------------------------------------------------------------------------------
const ripgrep = ripgrepVersion() ?? null;
if (!ripgrep) {
  console.log("ripgrep (rg) is not on the PATH, so grep and glob are timed without a comparison. On Debian or Ubuntu: apt-get install -y ripgrep");
}
const searchStages = [...stages.keys()].filter((id) => hasTool(id, "grep") || hasTool(id, "glob"));
const search: SearchRow[] = [];
let tree: BenchResults["tree"] = null;
if (searchStages.length > 0) {
  const root = mkdtempSync(path.join(os.tmpdir(), "workbook-bench-tree-"));
  try {
    progress("search: generating the tree of 20,000 files ...");
    tree = { ...generateTree(root, { seed: SEED }), seed: SEED };
    partDone("the tree");
    const home = process.cwd();
    process.chdir(root); // the tools' workspace is the working directory
    try {
      for (const testCase of SEARCH_CASES) {
        // Stages whose copy of the tool is the same code are measured once, labelled "s03 s04 s05".
        const files = searchStages.map((id) => path.join(AGENTS_DIR, stages.get(id)!));
        for (const { ids } of await toolImplementations(testCase.tool, files)) {
          const id = ids.join(" ");
          const stage = modules.get(ids[0])!;
          const input = inputFor(testCase, parametersOf(stage, testCase.tool));
          if (!input) continue; // this stage's version of the tool cannot run the case
          const call = toolOf(stage, testCase.tool)!;
          const ours: number[] = [];
          const theirs: number[] = [];
          let output = "";
          let rgOutput = "";
          // One run of each to warm up (files in the page cache, code compiled), then in turns.
          for (let run = 0; run <= RUNS; run++) {
            progress(`search: ${id} ${testCase.name} (${run}/${RUNS})`);
            const before = performance.now();
            output = await call(input);
            if (run > 0) ours.push(performance.now() - before);
            if (ripgrep) {
              const rg = runRipgrep(testCase.rg, root);
              if (run > 0) theirs.push(rg.ms);
              rgOutput = rg.output;
            }
          }
          const mine = normalizeTool(testCase, output);
          const rg = ripgrep ? normalizeRipgrep(testCase, rgOutput, root) : undefined;
          const ms = Math.min(...ours);
          const rgMs = ripgrep ? Math.min(...theirs) : null;
          search.push({
            stage: id,
            case: testCase.name,
            tool: testCase.tool,
            input,
            ms,
            rgMs,
            ratio: rgMs ? ms / rgMs : null,
            results: mine.length,
            same: rg ? mine.length === rg.length && mine.every((line, i) => line === rg[i]) : null,
            differences: rg ? differences(mine, rg) : [],
          });
        }
      }
    } finally {
      process.chdir(home);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

partDone("search");

// 2. Start -------------------------------------------------------------------------------
const tsx = path.join(REPO_ROOT, "node_modules", ".bin", "tsx");
// Each command's runs share one TMPDIR, where tsx keeps what it compiled. The first run goes to
// the end of the replay and compiles the stage, as a learner's first start does; the runs after
// it end at their first line, and the best of them is the start a learner sees every other time.
const startBest = async (label: string, command: string, commandArgs: string[], { printsALine = true } = {}) => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "workbook-bench-tmp-"));
  try {
    progress(`start: ${label} (first run, to the end)`);
    const whole = await timeStart(command, commandArgs, { tmp });
    const runs = [];
    for (let run = 1; run <= START_RUNS; run++) {
      progress(`start: ${label} (${run}/${START_RUNS})`);
      runs.push(await timeStart(command, commandArgs, { tmp, untilFirstLine: printsALine }));
    }
    const first = runs.map((run) => run.firstLineMs).filter((ms): ms is number => ms !== undefined);
    return {
      firstLineMs: printsALine && first.length === runs.length ? Math.min(...first) : null,
      endMs: printsALine ? whole.endMs : Math.min(...runs.map((run) => run.endMs)),
      code: whole.code,
    };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
};
const nodeBase = await startBest("node -e ''", process.execPath, ["-e", ""], { printsALine: false });
const tsxBase = await startBest("tsx -e ''", tsx, ["-e", ""], { printsALine: false });
const startRows: StartRow[] = [];
for (const [id, name] of stages) {
  const times = await startBest(`${id} (offline replay)`, tsx, [path.join(AGENTS_DIR, name)]);
  startRows.push({ stage: id, ...times, ratio: times.firstLineMs === null ? null : times.firstLineMs / tsxBase.endMs });
}

partDone("start");

// 3 and 4. Edit versus write, context per demo -------------------------------------------
const edits: EditRow[] = [];
const context: ContextRow[] = [];
const cacheRows: CacheRow[] = [];
// s14's breakpoints, for the demos of stages that place none, and its prices for the stages' default model.
const s14 = modules.get("s14") as { withBreakpoints?(request: MessageCreateParams): MessageCreateParams; priceOf?(model: string): Price | undefined; PRICES_DATE?: string } | undefined;
const CACHE_MODEL = "claude-sonnet-5-5";
for (const [id] of stages) {
  progress(`context: ${id}`);
  const stage = modules.get(id)!;
  const edit = await editVersusWrite(stage);
  if (edit) edits.push({ stage: id, ...edit });
  const { sent, ...measured } = await demoContext(id, stage);
  context.push({ stage: id, ...measured });
  if (s14?.withBreakpoints && sent.length > 1) cacheRows.push({ stage: id, ...demoCache(sent, s14.withBreakpoints, s14.priceOf?.(CACHE_MODEL)) });
}
const cache: BenchResults["cache"] = s14?.withBreakpoints ? { model: CACHE_MODEL, price: s14.priceOf?.(CACHE_MODEL) ?? null, pricesDate: s14.PRICES_DATE ?? "", rows: cacheRows } : undefined;

partDone("context");

// 6. Streaming -----------------------------------------------------------------------------
// Each stage's best of three runs (other work on the machine only adds time); the first run
// also compiles the stage into the runs' shared TMPDIR, as the start figures do.
const streaming: NonNullable<BenchResults["streaming"]> = [];
for (const [id, name] of stages) {
  const file = path.join(AGENTS_DIR, name);
  if (!streams(readFileSync(file, "utf8"))) continue;
  const tmp = mkdtempSync(path.join(os.tmpdir(), "workbook-bench-tmp-"));
  try {
    const runs = [];
    for (let run = 1; run <= 3; run++) {
      progress(`streaming: ${id} (${run}/3)`);
      runs.push(await timeStreaming(id, file, { tmp }));
    }
    streaming.push(runs.reduce((best, run) => (run.deltas >= best.deltas && run.worstMs < best.worstMs ? run : best)));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
partDone("streaming");

// 5. The test suite ----------------------------------------------------------------------
let tests: BenchResults["tests"] = null;
if (!args.includes("--skip-tests")) {
  progress("tests: npm test (once) ...");
  tests = await runTests();
  partDone("npm test");
}

const measured: Omit<BenchResults, "targets"> = {
  date: new Date().toISOString(),
  command: `npm run bench${args.length > 0 ? ` -- ${args.join(" ")}` : ""}`,
  machine: {
    cpu: os.cpus()[0]?.model.trim() ?? "unknown",
    cores: os.availableParallelism(),
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  },
  ripgrep,
  tree,
  search,
  start: { nodeMs: nodeBase.endMs, tsxMs: tsxBase.endMs, stages: startRows },
  editVersusWrite: edits,
  context,
  cache,
  streaming,
  tests,
  benchMs: performance.now() - started,
  partsMs,
};
const results: BenchResults = { ...measured, targets: targetsOf(measured) };
progress("");
if (process.stderr.isTTY) process.stderr.write("\r\x1b[K");
console.log(formatResults(results));
mkdirSync(path.dirname(OUT), { recursive: true });
writeFileSync(OUT, `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nThe figures are in ${path.relative(process.cwd(), OUT) || OUT}.`);
// A stage's demo may leave a helper process behind (s08's MCP server); the bench is done.
process.exit(0);

/** `npm test` once, in the repository: its wall time, exit code, summary line and each file's time. */
function runTests(): Promise<NonNullable<BenchResults["tests"]>> {
  // Vitest's JSON report as well as its usual one, for each file's time.
  const report = path.join(mkdtempSync(path.join(os.tmpdir(), "workbook-bench-tests-")), "report.json");
  const reporters = ["--reporter=default", "--reporter=json", `--outputFile.json=${report}`];
  return new Promise((resolve) => {
    const before = performance.now();
    const child = spawn("npm", ["test", "--silent", "--", ...reporters], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("close", (code) => {
      // vitest's summary line: "Tests  312 passed (312)" or "Tests  2 failed | 310 passed (312)".
      const summary = /^\s*Tests\s+(\d.*)$/m.exec(output.replace(/\x1b\[[0-9;]*m/g, ""))?.[1]?.trim() ?? "";
      const ms = performance.now() - before;
      const files = existsSync(report) ? fileDurations(JSON.parse(readFileSync(report, "utf8")), REPO_ROOT) : undefined;
      rmSync(path.dirname(report), { recursive: true, force: true });
      resolve({ ms, code, summary, files });
    });
  });
}
