// The bench's pieces that can be checked in a moment: the tree it searches is the same for
// the same seed, the tool's answers and ripgrep's are put in one form before they are
// compared, the targets are judged as the issue states them, and the tables and the
// committed figures have the shape the docs page reads. The bench itself (`npm run bench`)
// takes minutes and is not run here.
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { TestSpecification, Vitest } from "vitest/node";
import config from "../vitest.config.ts";
import { thousandLines } from "../scripts/bench/context.ts";
import { fileDurations, formatResults, table, targetsOf, type BenchResults, type CacheRow, type SearchRow } from "../scripts/bench/report.ts";
import { differences, inputFor, normalizeRipgrep, normalizeTool, SEARCH_CASES } from "../scripts/bench/search.ts";
import { timeStart } from "../scripts/bench/start.ts";
import { streams, timeStreaming } from "../scripts/bench/streaming.ts";
import { generateTree } from "../scripts/bench/tree.ts";
import { REPO_ROOT } from "./helpers.ts";
import { memoryTmpdir, ROOM_NEEDED, TMPFS_MAGIC, usableInMemory } from "./memory-tmpdir.ts";
import { committedDurations, SlowestFirst, slowestFirst } from "./sequencer.ts";

const folders: string[] = [];
const folder = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "workbook-bench-test-"));
  folders.push(dir);
  return dir;
};
afterEach(() => folders.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** Every entry under `root`: path, kind, size, time and a hash of the content. */
function fingerprint(root: string): string[] {
  const entries: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      const stat = lstatSync(full);
      if (stat.isDirectory()) walk(full);
      else {
        const content = stat.isSymbolicLink() ? "link" : createHash("sha1").update(readFileSync(full)).digest("hex");
        // A symlink's own time is when it was made; a file's is set by the generator.
        entries.push(`${path.relative(root, full)} ${stat.size} ${stat.isSymbolicLink() ? "-" : Math.round(stat.mtimeMs)} ${content}`);
      }
    }
  };
  walk(root);
  return entries;
}

describe("the bench's tree", () => {
  it("is the same for the same seed, and another for another seed", () => {
    const [a, b, c] = [folder(), folder(), folder()];
    const summary = generateTree(a, { files: 40, seed: 7, bigFile: false });
    generateTree(b, { files: 40, seed: 7, bigFile: false });
    generateTree(c, { files: 40, seed: 8, bigFile: false });
    expect(fingerprint(a)).toEqual(fingerprint(b));
    expect(fingerprint(a)).not.toEqual(fingerprint(c));
    expect(summary.files).toBe(40);
  });

  it("has what the tools must handle: ignore rules, node_modules, .git, binary files, CRLF, symlinks", () => {
    const root = folder();
    generateTree(root, { files: 400, seed: 1, bigFile: false });
    const all = fingerprint(root).map((entry) => entry.split(" ")[0]);
    expect(all).toContain(".gitignore");
    expect(all).toContain("packages/pkg03/.gitignore");
    expect(all.some((name) => name.startsWith("node_modules/"))).toBe(true);
    expect(all.some((name) => name.startsWith(".git/objects/"))).toBe(true);
    expect(all.some((name) => /\/dist\//.test(name))).toBe(true);
    expect(all).toContain("packages/pkg02/linked-src");
    const binary = all.find((name) => name.endsWith(".png"))!;
    expect(readFileSync(path.join(root, binary)).subarray(0, 8192).includes(0)).toBe(true);
    const texts = all.filter((name) => /\.(ts|md)$/.test(name)).map((name) => readFileSync(path.join(root, name), "utf8"));
    expect(texts.some((text) => text.includes("\r\n"))).toBe(true);
    expect(texts.some((text) => /[^\x00-\x7f]/.test(text))).toBe(true);
  });
});

describe("comparing the tools with ripgrep", () => {
  const byName = (name: string) => SEARCH_CASES.find((c) => c.name === name)!;

  it("puts grep's paths, lines and counts in ripgrep's form", () => {
    const files = byName("grep a word");
    expect(normalizeTool(files, "b.ts\na.ts\n[skipped 2 file(s): binary]")).toEqual(["a.ts", "b.ts"]);
    expect(normalizeRipgrep(files, "b.ts\na.ts\n", "/")).toEqual(["a.ts", "b.ts"]);
    const lines = byName("grep a|b, lines");
    expect(normalizeTool(lines, "a.ts:3:   // TODO: x\nb.md:10: FIXME")).toEqual(["a.ts:3:  // TODO: x", "b.md:10:FIXME"]);
    expect(normalizeRipgrep(lines, "b.md:10:FIXME\r\na.ts:3:  // TODO: x\n", "/")).toEqual(["a.ts:3:  // TODO: x", "b.md:10:FIXME"]);
    const counts = byName("grep *.ts, counts");
    expect(normalizeTool(counts, "a.ts: 3\nb.ts: 12")).toEqual(["a.ts:3", "b.ts:12"]);
    expect(normalizeTool(files, "No matches for /x/ in . (3 files searched)")).toEqual([]);
  });

  it("orders ripgrep's file list as glob does: newest first, ties by path, 100 shown", () => {
    const root = folder();
    const names = Array.from({ length: 103 }, (_, i) => `f${String(i).padStart(3, "0")}.txt`);
    names.forEach((name, i) => {
      writeFileSync(path.join(root, name), "");
      const time = 1_000_000 + (i % 50) * 10; // pairs of files share a time
      utimesSync(path.join(root, name), time, time);
    });
    const listed = normalizeRipgrep(byName("glob **/*"), [...names].reverse().join("\n"), root);
    expect(listed).toHaveLength(101);
    expect(listed.slice(0, 3)).toEqual(["f049.txt", "f099.txt", "f048.txt"]);
    expect(listed[100]).toBe("… and 3 more");
  });

  it("asks each stage's own grep for every result, in the words of its schema", () => {
    const counts = byName("grep *.ts, counts");
    expect(inputFor(counts, ["pattern", "path", "include", "output_mode", "max_results"])).toEqual(counts.input);
    // s07's grep pages its answer and names its filter glob.
    expect(inputFor(counts, ["pattern", "path", "glob", "output_mode", "head_limit", "offset"])).toEqual({
      pattern: "timeout", glob: "*.ts", output_mode: "count", head_limit: 0,
    });
    expect(inputFor(counts, ["pattern", "output_mode", "max_results"])).toBeUndefined(); // no filter at all: not this case
  });

  it("names the first differences", () => {
    expect(differences(["a", "b", "c"], ["b", "c", "d"])).toEqual(["only the tool: a", "only rg: d"]);
  });
});

describe("the bench's figures", () => {
  const row = (tool: "grep" | "glob", ratio: number | null, same: boolean | null = true): SearchRow => ({
    stage: "s03", case: `${tool} case`, tool, input: {}, ms: 100, rgMs: ratio === null ? null : 100 / ratio, ratio, results: 1, same, differences: [],
  });
  const base = (): Omit<BenchResults, "targets"> => ({
    date: "2026-01-01T00:00:00.000Z",
    command: "npm run bench",
    machine: { cpu: "CPU", cores: 2, memoryGB: 4, node: "v20.19.0", platform: "linux x64" },
    ripgrep: "ripgrep 13.0.0",
    tree: { files: 20_000, bytes: 100e6, folders: 2000, seed: 1 },
    search: [row("grep", 1.5), row("glob", 2.5)],
    start: { nodeMs: 50, tsxMs: 400, stages: [{ stage: "s01", firstLineMs: 500, endMs: 900, ratio: 1.25, code: 0 }] },
    editVersusWrite: [{ stage: "s03", editBytes: 177, writeBytes: 60_000, checked: true }],
    context: [{ stage: "s01", requests: [700, 1200], total: 1900, matched: true }],
    cache: { model: "claude-sonnet-5-5", price: { input: 2, output: 10, cache_write: 2.5, cache_read: 0.1 }, pricesDate: "2026-10-24", rows: [cacheRow(0.95)] },
    streaming: [{ stage: "s13", deltas: 30, medianMs: 0.6, worstMs: 7.4, code: 0 }],
    tests: { ms: 25_000, code: 0, summary: "300 passed (300)" },
    benchMs: 120_000,
  });
  function cacheRow(ofIdeal: number): CacheRow {
    return { stage: "full", breakpoints: "s14", requests: 3, inputTokens: 3000, cacheRead: 1900 * ofIdeal, cacheWrite: 900, ideal: 1900, share: (1900 * ofIdeal) / 3000, idealShare: 1900 / 3000, ofIdeal, costWith: 0.003, costWithout: 0.006 };
  }
  const verdicts = (results: Omit<BenchResults, "targets">) => Object.fromEntries(targetsOf(results).map((target) => [target.id, target.met]));

  it("holds each figure to the issue's target", () => {
    expect(verdicts(base())).toEqual({ grep: true, glob: true, same: true, firstLine: true, tests: true, bench: true, cache: true, streaming: true });
    const worse = base();
    worse.search = [row("grep", 2.1), row("glob", 3.2, false)];
    worse.start!.stages[0].ratio = 2.4;
    worse.tests = { ms: 31_000, code: 0, summary: "" };
    worse.benchMs = 200_000;
    worse.cache!.rows = [cacheRow(0.89)];
    worse.streaming = [{ stage: "s13", deltas: 30, medianMs: 0.6, worstMs: 20.5, code: 0 }];
    expect(verdicts(worse)).toEqual({ grep: false, glob: false, same: false, firstLine: false, tests: false, bench: false, cache: false, streaming: false });
    const failing = base();
    failing.tests = { ms: 10_000, code: 1, summary: "1 failed" };
    expect(verdicts(failing).tests).toBe(false);
  });

  it("says 'not measured' without ripgrep or without the test suite, rather than met", () => {
    const without = base();
    without.ripgrep = null;
    without.search = [row("grep", null, null), row("glob", null, null)];
    without.tests = null;
    without.cache = undefined; // a run without s14
    without.streaming = undefined; // nor s13
    const targets = targetsOf(without);
    expect(Object.fromEntries(targets.map((target) => [target.id, target.met]))).toMatchObject({ grep: null, glob: null, same: null, tests: null, cache: null, streaming: null });
    expect(targets.find((target) => target.id === "grep")!.measured).toBe("not measured");
  });

  it("prints aligned tables, numbers to the right", () => {
    expect(table(["stage", "ms"], [["s01", "5"], ["s10", "120"]])).toBe("stage   ms\n-----  ---\ns01      5\ns10    120");
    const printed = formatResults({ ...base(), targets: targetsOf(base()) });
    for (const heading of ["Search:", "Start", "Changing one line", "Context per demo", "Prompt cache per demo", "Streaming:", "npm test:", "Targets"]) expect(printed).toContain(heading);
    expect(printed).toContain("grep within 2x ripgrep");
    const parts = { ...base(), partsMs: { search: 45_800, "npm test": 65_700 } };
    expect(formatResults({ ...parts, targets: targetsOf(parts) })).toContain("Targets (the bench took 120.0 s: search 45.8 s, npm test 65.7 s)");
  });

  it("makes the edit a one-line change of a 1,000-line file", () => {
    const { before, after, oldLine, newLine } = thousandLines();
    expect(before.split("\n")).toHaveLength(1001);
    const changed = before.split("\n").filter((line, i) => line !== after.split("\n")[i]);
    expect(changed).toEqual([oldLine]);
    expect(before.split(oldLine)).toHaveLength(2); // the edit's old text is unique
    expect(after).toContain(newLine);
  });

  it("are committed with the date, the machine, the command and every target, as the page reads them", () => {
    const committed = JSON.parse(readFileSync(path.join(REPO_ROOT, "bench", "results.json"), "utf8")) as BenchResults;
    expect(committed.command).toMatch(/^npm run bench/);
    expect(new Date(committed.date).toString()).not.toBe("Invalid Date");
    expect(Object.keys(committed.machine).sort()).toEqual(["cores", "cpu", "memoryGB", "node", "platform"]);
    expect(committed.targets.map((target) => target.id)).toEqual(["grep", "glob", "same", "firstLine", "tests", "bench", "cache", "streaming"]);
    for (const key of ["search", "start", "editVersusWrite", "context", "tests", "tree", "benchMs"]) expect(committed, key).toHaveProperty(key);
    // Each test file's time, which `npm test` orders its files by (tests/sequencer.ts).
    const files = Object.entries(committed.tests?.files ?? {});
    expect(files.length).toBeGreaterThan(0);
    // A file of tests/ or of a folder in it (tests/machinery/), as the sequencer names it.
    for (const [file, ms] of files) expect(file, `${file}: ${ms} ms`).toMatch(/^tests\/([\w-]+\/)*[\w-]+\.test\.ts$/), expect(ms).toBeGreaterThan(0);
    expect(files.map(([file]) => file)).toContain("tests/machinery/processes.test.ts");
  });

  it("take each test file's time from Vitest's report, by its path from the root, slowest first", () => {
    const root = path.join(os.tmpdir(), "repo");
    const report = {
      testResults: [
        { name: path.join(root, "tests", "quick.test.ts"), startTime: 1000, endTime: 1250.4 },
        { name: path.join(root, "tests", "slow.test.ts"), startTime: 900, endTime: 9900 },
      ],
    };
    expect(Object.entries(fileDurations(report, root))).toEqual([
      ["tests/slow.test.ts", 9000],
      ["tests/quick.test.ts", 250],
    ]);
  });
});

describe("the order of the test files (tests/sequencer.ts)", () => {
  it("starts the files no figure knows first, then the slowest down, equal ones as they came", () => {
    const times: Record<string, number | undefined> = { a: 300, b: undefined, c: 9000, d: 300, e: undefined, f: 20 };
    expect(slowestFirst(Object.keys(times), (name) => times[name])).toEqual(["b", "e", "c", "a", "d", "f"]);
  });

  it("takes a file's time from Vitest's record of the last run, and otherwise from the committed bench figures", async () => {
    const root = folder();
    mkdirSync(path.join(root, "bench"));
    const committed = { "tests/a.test.ts": 100, "tests/b.test.ts": 5000, "tests/c.test.ts": 200 };
    writeFileSync(path.join(root, "bench", "results.json"), JSON.stringify({ tests: { ms: 1, code: 0, summary: "", files: committed } }));
    // This machine's last run knew c, and found it the slowest; a and b it did not run.
    const lastRun: Record<string, { duration: number; failed: boolean }> = { ":tests/c.test.ts": { duration: 8000, failed: false } };
    const ctx = { config: { root }, cache: { getFileTestResults: (key: string) => lastRun[key] } };
    const spec = (name: string) => ({ moduleId: path.join(root, "tests", name), project: { name: "" } });
    const sequencer = new SlowestFirst(ctx as unknown as Vitest);
    const files = ["a.test.ts", "b.test.ts", "c.test.ts", "new.test.ts"].map(spec) as unknown as TestSpecification[];
    const order = (await sequencer.sort(files)).map((file) => path.basename(file.moduleId));
    expect(order).toEqual(["new.test.ts", "c.test.ts", "b.test.ts", "a.test.ts"]);
    // Without the figures (a fresh clone before any bench, or an old file), the record alone.
    rmSync(path.join(root, "bench", "results.json"));
    expect((await sequencer.sort(files)).map((file) => path.basename(file.moduleId))).toEqual(["a.test.ts", "b.test.ts", "new.test.ts", "c.test.ts"]);
  });

  it("reads no figures from a results file that is missing, unreadable or without the test suite", () => {
    const dir = folder();
    const file = path.join(dir, "results.json");
    expect(committedDurations(file)).toEqual({});
    writeFileSync(file, "{ not json");
    expect(committedDurations(file)).toEqual({});
    writeFileSync(file, JSON.stringify({ tests: null }));
    expect(committedDurations(file)).toEqual({});
    writeFileSync(file, JSON.stringify({ tests: { ms: 1, code: 0, summary: "", files: { "tests/x.test.ts": 5 } } }));
    expect(committedDurations(file)).toEqual({ "tests/x.test.ts": 5 });
  });

  it("is the order npm test uses", () => {
    expect(config.test?.sequence?.sequencer).toBe(SlowestFirst);
  });
});

describe("where the tests make their temporary folders (tests/memory-tmpdir.ts)", () => {
  it("in memory when the machine has a usable tmpfs, and the tests' os.tmpdir() is that folder", () => {
    const chosen = memoryTmpdir();
    expect(config.test?.env?.TMPDIR).toBe(chosen);
    if (chosen === undefined) return; // no usable tmpfs here: the system's folder, as before
    expect(os.tmpdir()).toBe(chosen);
    const stats = statfsSync(chosen);
    expect(stats.type).toBe(TMPFS_MAGIC);
    expect(stats.bavail * stats.bsize).toBeGreaterThanOrEqual(ROOM_NEEDED);
  });

  it("passes over a folder on a disk, and one that does not exist", () => {
    expect(usableInMemory(path.join(folder(), "missing"))).toBe(false);
    if (statfsSync(REPO_ROOT).type !== TMPFS_MAGIC) expect(usableInMemory(REPO_ROOT)).toBe(false);
  });
});

describe("the bench's streaming timing", () => {
  it("times each delta from the provider's write to its marker on the program's stdout, and knows a stage that streams", async () => {
    // A stand-in stage: it reads the stream from ANTHROPIC_BASE_URL and writes what it gets as it comes.
    const stage = path.join(folder(), "stand-in.mjs");
    writeFileSync(stage, "const response = await fetch(`${process.env.ANTHROPIC_BASE_URL}/v1/messages`, { method: 'POST', body: '{}' });\nfor await (const chunk of response.body) process.stdout.write(chunk);\n");
    const row = await timeStreaming("stand-in", stage, { deltas: 5, gapMs: 5 });
    expect(row).toMatchObject({ stage: "stand-in", deltas: 5, code: 0 });
    expect(row.medianMs).toBeLessThanOrEqual(row.worstMs);
    expect(row.worstMs).toBeLessThan(2000);
    expect(streams("for await (const event of await api.messages.events(request, { signal }))")).toBe(true);
    expect(streams("await client.messages.create({ model })")).toBe(false);
  });
});

describe("the bench's start timing", () => {
  // A program that prints a line and then would take ten seconds to end.
  const slow = ["-e", "console.log('first'); setTimeout(() => {}, 10_000)"];

  it("times the first line, and ends a run there when asked, through the program's own exit", async () => {
    const started = Date.now();
    const run = await timeStart(process.execPath, slow, { untilFirstLine: true });
    expect(run.firstLineMs).toBeGreaterThan(0);
    expect(run.firstLineMs!).toBeLessThanOrEqual(run.endMs);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("without it, waits for the end: a program that prints nothing has no first line", async () => {
    const run = await timeStart(process.execPath, ["-e", "setTimeout(() => {}, 300)"]);
    expect(run.firstLineMs).toBeUndefined();
    expect(run.endMs).toBeGreaterThanOrEqual(300);
    expect(run.code).toBe(0);
  });
});
