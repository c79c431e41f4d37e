// The search bench: each stage's grep and glob against ripgrep on the generated tree, side by
// side in one run, and a check that both find the same things. ripgrep is told the tools'
// rules, so "the same" is exact: hidden files are searched, .git and node_modules are not,
// only .gitignore files count (not .ignore, .git/info/exclude or a global excludes file, nor
// one above the tree), and grep skips files over 10 MB. Binary files are skipped by both.
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import path from "node:path";

/** ripgrep's options that make its rules the tools' rules. */
export const RG_RULES = [
  "--no-config", "--hidden", "--no-require-git", "--no-ignore-dot", "--no-ignore-exclude", "--no-ignore-global", "--no-ignore-parent",
  "-g", "!.git", "-g", "!node_modules",
];

export interface SearchCase {
  /** A short name for the table. */
  name: string;
  tool: "grep" | "glob";
  /** The tool's input. grep asks for every result (max_results), so the lists can be compared whole. */
  input: Record<string, unknown>;
  /** ripgrep's arguments after RG_RULES. */
  rg: string[];
}

const ALL = 1_000_000_000;
export const SEARCH_CASES: SearchCase[] = [
  { name: "grep a word", tool: "grep", input: { pattern: "loadConfig", max_results: ALL }, rg: ["--max-filesize", "10M", "-l", "-e", "loadConfig"] },
  { name: "grep a|b, lines", tool: "grep", input: { pattern: "TODO|FIXME", output_mode: "content", max_results: ALL }, rg: ["--max-filesize", "10M", "-n", "-e", "TODO|FIXME"] },
  { name: "grep \\s\\w+, may span lines", tool: "grep", input: { pattern: "function\\s+\\w+Config", max_results: ALL }, rg: ["--max-filesize", "10M", "-l", "-e", "function\\s+\\w+Config"] },
  { name: "grep *.ts, counts", tool: "grep", input: { pattern: "timeout", include: "*.ts", output_mode: "count", max_results: ALL }, rg: ["--max-filesize", "10M", "-c", "-g", "*.ts", "-e", "timeout"] },
  { name: "grep Japanese text", tool: "grep", input: { pattern: "設定を読み込む", max_results: ALL }, rg: ["--max-filesize", "10M", "-l", "-e", "設定を読み込む"] },
  { name: "glob **/*.ts", tool: "glob", input: { pattern: "**/*.ts" }, rg: ["--files", "-g", "*.ts"] },
  { name: "glob **/*", tool: "glob", input: { pattern: "**/*" }, rg: ["--files"] },
];

/**
 * The case's input for a stage's own version of the tool, or undefined if it cannot take it:
 * a grep that pages (s07) is asked for every entry with head_limit 0, and one that names its
 * filter `glob` gets the case's `include` there.
 */
export function inputFor(testCase: SearchCase, parameters: string[]): Record<string, unknown> | undefined {
  const input = { ...testCase.input };
  if ("max_results" in input && !parameters.includes("max_results")) {
    delete input.max_results;
    if (!parameters.includes("head_limit")) return undefined;
    input.head_limit = 0;
  }
  if ("include" in input && !parameters.includes("include")) {
    if (!parameters.includes("glob")) return undefined;
    input.glob = input.include;
    delete input.include;
  }
  return Object.keys(input).every((name) => parameters.includes(name)) ? input : undefined;
}

/** The version line of ripgrep, or undefined when `rg` is not on the PATH. */
export function ripgrepVersion(): string | undefined {
  const result = spawnSync("rg", ["--version"], { encoding: "utf8" });
  return result.status === 0 ? result.stdout.split("\n")[0] : undefined;
}

/** Run ripgrep in `cwd`: its output and how long it took, in milliseconds. */
export function runRipgrep(args: string[], cwd: string): { ms: number; output: string } {
  const started = performance.now();
  // stdin is /dev/null: given a pipe, ripgrep would search that instead of the folder.
  const result = spawnSync("rg", [...RG_RULES, ...args], { cwd, encoding: "utf8", maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"] });
  const ms = performance.now() - started;
  if (result.status !== 0 && result.status !== 1) throw new Error(`rg ${args.join(" ")} failed: ${result.stderr}`);
  return { ms, output: result.stdout };
}

/**
 * What both tools found, in one comparable form: sorted lines of `path`, `path:line:text`
 * or `path:count`; for glob, the first 100 paths newest first and the number of the rest,
 * which is what the tool shows. `notes` are the tool's bracketed notes (skipped files).
 */
export function normalizeTool(testCase: SearchCase, output: string): string[] {
  const lines = output.split("\n").filter((line) => line !== "" && !line.startsWith("[") && !line.startsWith("No "));
  if (testCase.tool === "glob") return lines;
  if (testCase.input.output_mode === "content") return lines.map((line) => line.replace(/^(.*?:\d+): /, "$1:")).sort();
  if (testCase.input.output_mode === "count") return lines.map((line) => line.replace(/: (\d+)$/, ":$1")).sort();
  return lines.sort();
}

export function normalizeRipgrep(testCase: SearchCase, output: string, cwd: string): string[] {
  const lines = output.split("\n").filter((line) => line !== "");
  if (testCase.tool === "glob") {
    // The tool's order: newest first, then by path; 100 shown, then how many more.
    const dated = lines.map((name) => ({ name, mtime: statSync(path.join(cwd, name)).mtimeMs }));
    dated.sort((a, b) => b.mtime - a.mtime || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const shown = dated.slice(0, 100).map((file) => file.name);
    return dated.length > 100 ? [...shown, `… and ${dated.length - 100} more`] : shown;
  }
  // ripgrep keeps a CRLF line's \r; the tool shows the line without it.
  return lines.map((line) => line.replace(/\r$/, "")).sort();
}

/** The first few differences between two sorted lists, for a message. */
export function differences(ours: string[], theirs: string[], max = 3): string[] {
  const mine = new Set(ours);
  const rg = new Set(theirs);
  return [
    ...ours.filter((line) => !rg.has(line)).slice(0, max).map((line) => `only the tool: ${line}`),
    ...theirs.filter((line) => !mine.has(line)).slice(0, max).map((line) => `only rg: ${line}`),
  ];
}
