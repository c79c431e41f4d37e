/**
 * s03_search_and_edit.ts - Search and Edit
 *
 * "Find it first, then change only that": look before you touch, and touch one exact place.
 *
 *   +-------+   ls / glob / grep    +----------------------------------------+
 *   | model | --------------------> | entries, paths, path:line: text        |
 *   |       | <-------------------- | never .git, node_modules, .gitignore'd |
 *   |       |                       | or binary files; grep has a deadline   |
 *   |       |   edit_file           +----------------------------------------+
 *   |       | --------------------> | old_string found ...                   |
 *   |       |                       |   0 times  -> error + a hint           |
 *   |       | <-------------------- |   2+ times -> error + the count        |
 *   +-------+                       |   once, or replace_all -> written      |
 *                                   +----------------------------------------+
 *
 * New since s02: grep, glob and ls to find things, and edit_file that demands a unique match.
 *
 *   npx tsx agents/s03_search_and_edit.ts            (no key: replays the recorded demo)
 */
import { spawn } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, chmodSync } from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import fg from "fast-glob";
import ignore, { type Ignore } from "ignore";
import { modelClient } from "../lib/model.ts";
import { isMain, runAsMain } from "../lib/program.ts";

// #region config
if (existsSync(".env")) process.loadEnvFile(".env");
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
const MAX_OUTPUT = 30_000; // characters the model sees from one tool call
// The official SDK's client for any Anthropic-compatible API (lib/model.ts loads the SDK at
// the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace is the directory the program runs in. It is read at each call rather than
// stored, so the offline replay and the tests run this same code in a temporary folder; the
// system prompt is written at each request for the same reason.
const workspace = () => process.cwd();
const systemPrompt = () => `You are a coding agent working in ${workspace()}. Find before you change: ls, glob and grep to locate code, read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly.`;
// #endregion config

// #region tools
export const TOOLS: Tool[] = [
  {
    name: "bash",
    description:
      "Run a shell command in the workspace and return its output. stdin is closed, so commands must not wait for input.",
    input_schema: {
      type: "object",
      properties: {
        command: { type: "string", description: "The command, run with bash -c." },
        timeout: { type: "integer", description: "Seconds before the command is killed (default 120, at most 600)." },
      },
      required: ["command"],
    },
  },
  {
    name: "read_file",
    description: "Read a text file in the workspace.",
    input_schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        limit: { type: "integer", description: "Read at most this many lines." },
      },
      required: ["path"],
    },
  },
  {
    name: "write_file",
    description: "Create or overwrite a file in the workspace with the given content. Missing folders are created.",
    input_schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        content: { type: "string", description: "The whole new content of the file." },
      },
      required: ["path", "content"],
    },
  },
  {
    name: "edit_file",
    description: "Replace old_string with new_string in a file. old_string must match exactly, indentation included, and occur once: if it occurs more often, include more surrounding lines, or set replace_all.",
    input_schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        old_string: { type: "string", description: "The exact text to replace, as it is in the file." },
        new_string: { type: "string", description: "The text to put in its place (must differ from old_string)." },
        replace_all: { type: "boolean", description: "Replace every occurrence instead of requiring one (default false)." },
      },
      required: ["path", "old_string", "new_string"],
    },
  },
  {
    name: "grep",
    description: "Search file contents, line by line, with a JavaScript regular expression. Skips binary files, .git, node_modules and what .gitignore lists.",
    input_schema: {
      type: "object",
      properties: {
        pattern: { type: "string", description: 'A JavaScript regular expression, e.g. "function\\s+load" or "TODO|FIXME".' },
        path: { type: "string", description: "Folder or file to search, relative to the workspace (default: the whole workspace)." },
        include: { type: "string", description: 'Only files matching this glob, e.g. "*.ts" or "src/**/*.{ts,tsx}".' },
        output_mode: {
          type: "string",
          enum: ["files_with_matches", "content", "count"],
          description: "files_with_matches (default): paths; content: path:line: text; count: matches per file.",
        },
        max_results: { type: "integer", description: "At most this many paths or lines (default 100)." },
      },
      required: ["pattern"],
    },
  },
  {
    name: "glob",
    description: 'Find files by name with a glob pattern, e.g. "**/*.ts" or "src/**/*.{js,json}". Newest first, at most 100; ignores as grep.',
    input_schema: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "The glob pattern, relative to path." },
        path: { type: "string", description: "Folder to search from, relative to the workspace (default: the workspace)." },
      },
      required: ["pattern"],
    },
  },
  {
    name: "ls",
    description: "List a folder: names sorted, folders marked with a trailing /.",
    input_schema: { type: "object", properties: { path: { type: "string", description: "Folder relative to the workspace (default: the workspace)." } } },
  },
];
// #endregion tools

// #region bash
// A denylist is advice, not a boundary: `rm -r -f /` or a script file slips past it.
// The real answer is asking a person before running a command (s05, s06).
const DENYLIST = ["rm -rf /", "sudo ", "shutdown", "reboot", "> /dev/sd", "mkfs"];
const DEFAULT_TIMEOUT = 120;
const MAX_TIMEOUT = 600;

function runBash(input: Record<string, unknown>): Promise<string> {
  const command = requireString(input, "command");
  const blocked = DENYLIST.find((pattern) => command.includes(pattern));
  if (blocked) throw new Error(`refused: the command contains "${blocked.trim()}", which this agent does not run`);
  const seconds = Math.min(Math.max(Number(input.timeout ?? DEFAULT_TIMEOUT) || DEFAULT_TIMEOUT, 1), MAX_TIMEOUT);

  return new Promise((resolve, reject) => {
    // stdin is /dev/null, so `cat` or `read x` ends at once. `detached` puts the command in
    // its own process group, so a timeout can kill the command and everything it started.
    const child = spawn("bash", ["-c", command], { cwd: workspace(), stdio: ["ignore", "pipe", "pipe"], detached: true });
    const output = new HeadAndTail();
    child.stdout.on("data", (chunk: Buffer) => output.add(chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => output.add(chunk.toString()));
    const killGroup = () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {} // the group has ended already
    };
    // If the program ends first (Ctrl-C), the command must not live on without it.
    process.once("exit", killGroup);
    const timer = setTimeout(() => {
      killGroup();
      reject(new Error(`timed out after ${seconds}s; the command and its children were killed. Output so far:\n${output.text()}`));
    }, seconds * 1000);
    child.on("error", (error) => {
      clearTimeout(timer);
      process.off("exit", killGroup);
      reject(error);
    });
    // "exit", not "close": a background child (`sleep 30 &`) may hold the pipes open for long
    // after the shell is done. Wait a moment for output still in the pipes, then let go.
    child.on("exit", (code) => {
      clearTimeout(timer);
      process.off("exit", killGroup);
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        child.unref();
        const text = output.text() || "(no output)";
        resolve(code === 0 ? text : `${text.replace(/\n$/, "")}\n[exit code ${code ?? "killed"}]`);
      }, 50);
    });
  });
}

/** Keeps the head and the tail of a stream as it arrives, so endless output cannot fill memory. */
class HeadAndTail {
  private head = "";
  private tail = "";
  private total = 0;
  add(text: string) {
    this.total += text.length;
    const roomInHead = KEEP - this.head.length;
    if (roomInHead > 0) {
      this.head += text.slice(0, roomInHead);
      text = text.slice(roomInHead);
    }
    this.tail = (this.tail + text).slice(-KEEP);
  }
  text(): string {
    const cut = this.total - this.head.length - this.tail.length;
    return cut > 0 ? this.head + marker(cut, this.total) + this.tail : this.head + this.tail;
  }
}
// #endregion bash

// #region sandbox
/**
 * Resolve a path the model gave to a place inside the workspace, or refuse it before any
 * file is touched. `..` and absolute paths that lead out are refused, and so are symlinks
 * whose target is outside. `~` is only a folder name here: nothing expands it to home.
 */
function safePath(given: string): string {
  if (given.includes("\0")) throw new Error("the path contains a NUL byte");
  const root = realpathSync(workspace());
  const full = path.resolve(root, given);
  if (!isInside(root, full)) throw new Error(`${given} is outside the workspace (${root})`);
  // The path as the file system will follow it: a link inside may point anywhere.
  const real = followLinks(full, given);
  if (!isInside(root, real)) throw new Error(`${given} leads outside the workspace through a symlink`);
  return real;
}

function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  // `..report.md` is a fine name; only a `..` segment leaves the folder.
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** Resolve symlinks on the part of the path that exists; a new file takes its parent's real place. */
function followLinks(full: string, given: string): string {
  let existing = full;
  const missing: string[] = [];
  while (!lexists(existing)) {
    missing.unshift(path.basename(existing));
    existing = path.dirname(existing);
  }
  try {
    return path.join(realpathSync(existing), ...missing);
  } catch {
    throw new Error(`${given} goes through a symlink that points nowhere`);
  }
}

function lexists(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}
// #endregion sandbox

// #region read-file
const MAX_FILE_BYTES = 10 * 1024 * 1024; // files larger than this are not loaded

function readFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const lines = readText(safePath(given), given).split("\n");
  const limit = input.limit === undefined ? undefined : Number(input.limit);
  if (limit === undefined || !(limit >= 0) || limit >= lines.length) return lines.join("\n");
  return `${lines.slice(0, limit).join("\n")}\n... (${lines.length - limit} more lines)`;
}

/** A file's text, or a clear error: missing, a folder, too large, or binary. */
function readText(file: string, given: string): string {
  if (!existsSync(file)) throw new Error(`${given} does not exist`);
  const stat = statSync(file);
  if (stat.isDirectory()) throw new Error(`${given} is a directory; list it with bash (ls)`);
  if (stat.size > MAX_FILE_BYTES) {
    throw new Error(`${given} is ${(stat.size / 1024 / 1024).toFixed(1)} MB, over the 10 MB limit; look at parts of it with bash (head, grep)`);
  }
  const bytes = readFileSync(file);
  if (bytes.subarray(0, 8192).includes(0)) throw new Error(`${given} looks binary (it contains NUL bytes), so it is not shown as text`);
  return bytes.toString("utf8");
}
// #endregion read-file

// #region write-file
function writeFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const content = requireString(input, "content");
  const file = safePath(given);
  if (existsSync(file) && statSync(file).isDirectory()) throw new Error(`${given} is a directory`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeAtomically(file, content);
  return `Wrote ${Buffer.byteLength(content)} bytes to ${given}`;
}

/** Write beside the file, then rename over it: a failure half-way leaves the old content whole. */
function writeAtomically(file: string, content: string): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, content);
    if (existsSync(file)) chmodSync(temporary, statSync(file).mode); // a script stays executable
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
// #endregion write-file

// #region edit-file
function editFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const oldString = requireString(input, "old_string");
  const newString = requireString(input, "new_string");
  const replaceAll = input.replace_all ?? false;
  if (typeof replaceAll !== "boolean") throw new Error('"replace_all" must be true or false');
  if (oldString === "") throw new Error("old_string is empty; to write a whole file use write_file");
  if (oldString === newString) throw new Error("old_string and new_string are the same, so there is nothing to change");
  const file = safePath(given);
  const content = readText(file, given);
  if (Buffer.byteLength(content) !== statSync(file).size) {
    throw new Error(`${given} is not valid UTF-8, so editing it could change other bytes; nothing was changed`);
  }
  // A CRLF file stays CRLF: the model usually writes \n, so match the file's line endings.
  const crlf = content.includes("\r\n");
  const find = crlf ? oldString.replace(/\r?\n/g, "\r\n") : oldString;
  const replacement = crlf ? newString.replace(/\r?\n/g, "\r\n") : newString;
  // split() takes old_string as plain text, not a pattern, and cuts at every occurrence.
  const pieces = content.split(find);
  const count = pieces.length - 1;
  if (count === 0) throw new Error(`old_string was not found in ${given}: ${noMatchHint(content, find, crlf)}. The file is unchanged`);
  // Two matches mean the model does not know which one it will change: ask, do not guess.
  if (count > 1 && !replaceAll) {
    throw new Error(
      `old_string occurs ${count} times in ${given}. Include more of the surrounding lines so it matches exactly once, ` +
        `or set replace_all to true to change all ${count}. The file is unchanged`,
    );
  }
  // join(), not String.replace: a "$&" or "$1" in new_string is inserted as typed.
  writeAtomically(file, pieces.join(replacement));
  return `Edited ${given}: replaced ${count} occurrence${count === 1 ? "" : "s"}`;
}

/** The usual reasons an exact match fails, so the model's next try can succeed. */
function noMatchHint(content: string, find: string, crlf: boolean): string {
  const withoutLastBreak = find.replace(/\r?\n$/, "");
  if (withoutLastBreak !== find && content.endsWith(withoutLastBreak)) {
    return "the file has no newline at its end, so drop the last line break from old_string";
  }
  const squeeze = (text: string) => text.replace(/[ \t]+/g, " ");
  if (squeeze(content).includes(squeeze(find))) return "it matches when spaces and tabs are ignored, so copy the indentation and spacing exactly";
  return `read the file and copy the text exactly: whitespace, indentation and line endings (this file uses ${crlf ? "CRLF" : "LF"})`;
}
// #endregion edit-file

// #region walk
// Searches never look into the repository's internals or installed packages, nor into what
// .gitignore says is not the project (build output, logs, .env): noise at best, secrets at worst.
const ALWAYS_SKIPPED = ["**/.git/**", "**/node_modules/**"];
const MAX_PATHS = 100; // paths glob and ls show

type FoundFile = { shown: string; full: string; mtime: number; size: number };

/**
 * The files under `folder` that match a glob pattern, named relative to the workspace.
 * Symlinks are neither followed nor listed (followSymbolicLinks: false), so a link inside
 * the workspace can never carry a search to files outside it.
 */
async function findFiles(pattern: string, folder: string, options: { baseNameMatch?: boolean } = {}): Promise<FoundFile[]> {
  if (path.isAbsolute(pattern) || pattern.split("/").includes("..")) {
    throw new Error(`the pattern ${pattern} must stay inside the folder searched: no absolute paths or ".." parts`);
  }
  const root = realpathSync(workspace());
  const entries = await fg(pattern, {
    cwd: folder, absolute: true, dot: true, onlyFiles: true, followSymbolicLinks: false, ignore: ALWAYS_SKIPPED, stats: true, ...options,
  });
  const ignored = gitignoreRules(root);
  return entries
    .map((entry) => ({ shown: relativeName(root, entry.path), full: entry.path, mtime: entry.stats!.mtimeMs, size: entry.stats!.size }))
    .filter((file) => !ignored(file.shown));
}

/**
 * Whether .gitignore leaves a file out. The .gitignore of each folder on the way down is
 * read, and a deeper one wins (a `!keep.log` there overrides `*.log` above), as in git.
 */
function gitignoreRules(root: string): (relative: string) => boolean {
  const cache = new Map<string, Ignore | undefined>();
  const rulesIn = (folder: string) => {
    if (!cache.has(folder)) {
      const file = path.join(root, folder, ".gitignore");
      cache.set(folder, existsSync(file) && statSync(file).isFile() ? ignore().add(readFileSync(file, "utf8")) : undefined);
    }
    return cache.get(folder);
  };
  return (relative) => {
    const parts = relative.split("/");
    let ignored = false;
    for (let depth = 0; depth < parts.length; depth++) {
      const verdict = rulesIn(parts.slice(0, depth).join("/"))?.test(parts.slice(depth).join("/"));
      if (verdict?.ignored) ignored = true;
      else if (verdict?.unignored) ignored = false;
    }
    return ignored;
  };
}

/** A folder the model named, inside the workspace, or a clear error. */
function safeFolder(given: string): string {
  const folder = safePath(given);
  if (!existsSync(folder)) throw new Error(`${given} does not exist`);
  if (!statSync(folder).isDirectory()) throw new Error(`${given} is a file, not a folder`);
  return folder;
}

const relativeName = (root: string, full: string) => path.relative(root, full).split(path.sep).join("/") || ".";
// Plain code-unit order, not localeCompare: the same on every machine and in every locale.
const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const optionalString = (input: Record<string, unknown>, name: string, fallback: string) =>
  input[name] === undefined ? fallback : requireString(input, name);

/** At most `max` lines, and how many were left out. */
function capped(lines: string[], max: number): string {
  const more = lines.length - max;
  return lines.slice(0, max).join("\n") + (more > 0 ? `\n… and ${more} more` : "");
}
// #endregion walk

// #region grep
const MAX_LINE = 2000; // characters shown of one matching line
const OUTPUT_MODES = ["files_with_matches", "content", "count"];
/** How long one search may take in all. Exported so tests can shorten it; users get 10 s. */
export const GREP_LIMITS = { milliseconds: 10_000 };

type FileResult = { skipped?: string; count?: number; lines?: { number: number; text: string }[] };

async function grep(input: Record<string, unknown>): Promise<string> {
  const pattern = requireString(input, "pattern");
  // Check the pattern here, before anything runs, so a typo gets a precise answer.
  try {
    new RegExp(pattern);
  } catch (error) {
    throw new Error(`${(error as Error).message}. No search was run; escape ( ) [ ] { } . * + ? | \\ with \\ to match them as text`);
  }
  const mode = optionalString(input, "output_mode", "files_with_matches");
  if (!OUTPUT_MODES.includes(mode)) throw new Error(`output_mode must be one of ${OUTPUT_MODES.join(", ")}`);
  const maxResults = Math.max(Math.floor(Number(input.max_results ?? 100)) || 100, 1);
  const given = optionalString(input, "path", ".");
  const files = await filesToSearch(given, optionalString(input, "include", "**/*"));
  if (files.length === 0) return `No files to search in ${given} (binary files, .git, node_modules and what .gitignore lists are skipped)`;
  const { results, timedOut } = await searchInWorker(pattern, files, maxResults);
  return grepReport(files, results, timedOut, mode, maxResults, `/${pattern}/ in ${given}`);
}

/** The files to search, sorted by path so the same search always answers in the same order. */
async function filesToSearch(given: string, include: string): Promise<FoundFile[]> {
  const target = safePath(given);
  if (!existsSync(target)) throw new Error(`${given} does not exist`);
  const stat = statSync(target);
  // A file named outright is searched even where a skip rule would have left it out.
  if (stat.isFile()) return [{ shown: relativeName(realpathSync(workspace()), target), full: target, mtime: stat.mtimeMs, size: stat.size }];
  // baseNameMatch: "*.ts" matches in every folder, as grep --include does; "src/**/*.ts" matches paths.
  const files = await findFiles(include, target, { baseNameMatch: true });
  return files.sort((a, b) => byName(a.shown, b.shown));
}

// The search runs in a worker thread because a pattern with nested repetition, like (a+)+$,
// can take years on one unlucky line, and a running RegExp cannot be interrupted on the main
// thread. A worker can be terminated. It reports after each file, so when time runs out we
// know exactly which files were searched. Plain JavaScript in a string (eval: true) needs no
// TypeScript loader in the worker.
const SEARCH_WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const { readFileSync } = require("node:fs");
const { pattern, files, maxLine, maxBytes, maxResults } = workerData;
const regex = new RegExp(pattern);
for (const file of files) parentPort.postMessage(searchFile(file));

function searchFile(file) {
  if (file.size > maxBytes) return { skipped: "over 10 MB" };
  const bytes = readFileSync(file.full);
  if (bytes.subarray(0, 8192).includes(0)) return { skipped: "binary" };
  const lines = [];
  let count = 0;
  bytes.toString("utf8").split("\\n").forEach((raw, index) => {
    const line = raw.endsWith("\\r") ? raw.slice(0, -1) : raw;
    if (!regex.test(line)) return;
    count += 1;
    const text = line.length > maxLine ? line.slice(0, maxLine) + " [line cut at " + maxLine + " characters]" : line;
    if (lines.length < maxResults) lines.push({ number: index + 1, text });
  });
  return { count, lines };
}`;

function searchInWorker(pattern: string, files: FoundFile[], maxResults: number) {
  return new Promise<{ results: FileResult[]; timedOut: boolean }>((resolve, reject) => {
    const workerData = { pattern, files, maxLine: MAX_LINE, maxBytes: MAX_FILE_BYTES, maxResults };
    const worker = new Worker(SEARCH_WORKER, { eval: true, workerData });
    const results: FileResult[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void worker.terminate();
    }, GREP_LIMITS.milliseconds);
    worker.on("message", (result: FileResult) => results.push(result));
    worker.on("error", (error) => reject(new Error(`the search failed in ${files[results.length]?.shown}: ${error.message}`)));
    // "exit" comes after every message the worker sent, whether it finished or was stopped.
    worker.on("exit", () => {
      clearTimeout(timer);
      resolve({ results, timedOut });
    });
  });
}

/** The results in the chosen mode, then notes on what was cut, skipped or not searched. */
function grepReport(files: FoundFile[], results: FileResult[], timedOut: boolean, mode: string, max: number, what: string): string {
  const matched = results.flatMap((result, i) => (result.count ? [{ ...result, file: files[i].shown }] : []));
  const entries = matched.flatMap((m) =>
    mode === "content" ? m.lines!.map((line) => `${m.file}:${line.number}: ${line.text}`) : [mode === "count" ? `${m.file}: ${m.count}` : m.file],
  );
  const total = mode === "content" ? matched.reduce((sum, m) => sum + m.count!, 0) : matched.length;
  const searched = results.filter((result) => !result.skipped).length;
  const report = entries.length > 0 ? [entries.slice(0, max).join("\n")] : [`No matches for ${what} (${searched} files searched)`];
  const unit = mode === "content" ? "matching lines" : "files";
  if (total > max) report.push(`[showing the first ${max} of ${total} ${unit}; narrow path, include or the pattern, or raise max_results]`);
  const skipped = results.filter((result) => result.skipped).map((result) => result.skipped);
  if (skipped.length > 0) report.push(`[skipped ${skipped.length} file(s): ${[...new Set(skipped)].join(", ")}]`);
  if (timedOut) {
    const left = files.slice(results.length).map((file) => file.shown);
    report.push(
      `[stopped after ${GREP_LIMITS.milliseconds / 1000} s: searched ${results.length} of ${files.length} files. ` +
        `Not searched: ${left.slice(0, 10).join(", ")}${left.length > 10 ? ` and ${left.length - 10} more` : ""}. ` +
        `The search was still in ${left[0]}; a pattern with nested repetition such as (a+)+ can run for ever on some lines, so simplify it or narrow path or include]`,
    );
  }
  return report.join("\n");
}
// #endregion grep

// #region glob
async function glob(input: Record<string, unknown>): Promise<string> {
  const pattern = requireString(input, "pattern");
  const given = optionalString(input, "path", ".");
  const files = await findFiles(pattern, safeFolder(given));
  if (files.length === 0) return `No files match ${pattern} in ${given}`;
  // Newest first: the files being worked on are usually the ones wanted. Ties go by path.
  files.sort((a, b) => b.mtime - a.mtime || byName(a.shown, b.shown));
  return capped(files.map((file) => file.shown), MAX_PATHS);
}
// #endregion glob

// #region ls
function ls(input: Record<string, unknown>): string {
  const given = optionalString(input, "path", ".");
  const entries = readdirSync(safeFolder(given), { withFileTypes: true }).sort((a, b) => byName(a.name, b.name));
  if (entries.length === 0) return `${given} is empty`;
  // A symlink is listed by its own name and not followed: it may point outside the workspace.
  return capped(entries.map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name)), MAX_PATHS);
}
// #endregion ls

// #region dispatch
type Handler = (input: Record<string, unknown>) => string | Promise<string>;

export const TOOL_HANDLERS: Record<string, Handler> = {
  bash: runBash,
  read_file: readFile,
  write_file: writeFile,
  edit_file: editFile,
  grep,
  glob,
  ls,
};
// #endregion dispatch

// #region run-tool
/** Run one tool call. Never throws: a failure becomes a result the model can read and act on. */
async function runTool(call: ToolUseBlock): Promise<ToolResultBlockParam> {
  console.log(dim(`> ${call.name} ${oneLine(Object.values(call.input ?? {}))}`));
  const handler = TOOL_HANDLERS[call.name];
  let result: ToolResultBlockParam;
  if (!handler) {
    const known = Object.keys(TOOL_HANDLERS).join(", ");
    result = { type: "tool_result", tool_use_id: call.id, is_error: true, content: `Error: unknown tool "${call.name}". Tools: ${known}.` };
  } else {
    try {
      const output = await handler((call.input ?? {}) as Record<string, unknown>);
      result = { type: "tool_result", tool_use_id: call.id, content: clip(output) };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      result = { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(`Error: ${message}`) };
    }
  }
  console.log(dim(`  ${oneLine([result.content])}`));
  return result;
}

/** The model sees at most MAX_OUTPUT characters of one result: the head and the tail, with a marker. */
function clip(text: string): string {
  if (text.length <= MAX_OUTPUT) return text;
  return text.slice(0, KEEP) + marker(text.length - 2 * KEEP, text.length) + text.slice(-KEEP);
}

// What is kept at each end of a long result; the rest of MAX_OUTPUT is room for the marker.
const KEEP = (MAX_OUTPUT - 100) / 2;
const marker = (cut: number, total: number) => `\n... [${cut} characters cut from the middle, ${total} in all] ...\n`;

function requireString(input: Record<string, unknown>, name: string): string {
  const value = input[name];
  if (typeof value !== "string") throw new Error(`"${name}" must be a string`);
  return value;
}

/** Squeeze values into one short line, so the person can follow what the agent does. */
function oneLine(values: unknown[]): string {
  const text = values
    .map((value) => (typeof value === "string" ? value : JSON.stringify(value)))
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}

const dim = (text: string) => (process.stdout.isTTY ? `\x1b[2m${text}\x1b[0m` : text);
// #endregion run-tool

// #region agent-loop
export async function agentLoop(messages: MessageParam[]): Promise<void> {
  while (true) {
    const response = await client.messages.create({
      model: MODEL,
      max_tokens: MAX_TOKENS,
      system: systemPrompt(),
      tools: TOOLS,
      messages,
    });
    messages.push({ role: "assistant", content: response.content });
    showText(response);
    if (response.stop_reason !== "tool_use") return endTurn(response, messages);

    const results: ToolResultBlockParam[] = [];
    for (const block of response.content) {
      if (block.type === "tool_use") results.push(await runTool(block));
    }
    messages.push({ role: "user", content: results });
  }
}
// #endregion agent-loop

// #region end-turn
function showText(response: Message): void {
  for (const block of response.content) if (block.type === "text") console.log(block.text);
}

/** The model stopped asking for tools. Say so when the reason is not a normal ending. */
function endTurn(response: Message, messages: MessageParam[]): void {
  if (response.stop_reason === "refusal") console.log("[the model declined to continue]");
  if (response.stop_reason !== "max_tokens") return;
  console.log(`[the reply was cut off at ${MAX_TOKENS} tokens: ask for something smaller, or raise MAX_TOKENS]`);
  // A tool call cut off mid-way cannot run, but it needs an answer, or the next request is refused.
  const calls = response.content.filter((block) => block.type === "tool_use");
  if (calls.length === 0) return;
  messages.push({
    role: "user",
    content: calls.map((call) => ({
      type: "tool_result" as const,
      tool_use_id: call.id,
      is_error: true,
      content: "Not run: your reply was cut off by max_tokens before this call was complete.",
    })),
  });
}
// #endregion end-turn

// #region program
export const main = (args = process.argv.slice(2)) =>
  runAsMain({ stage: "s03", title: "Search and Edit", agentLoop, hasKey: API_KEY !== undefined, args });

if (isMain(import.meta.url)) await main();
// #endregion program
