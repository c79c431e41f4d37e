/**
 * s05_ask_user.ts - Ask the User
 *
 * "When unsure, ask the person": before a step that cannot be undone, the model asks and the loop waits.
 *
 *   you: "clean up this folder"
 *        |
 *        v
 *   +-------+  ask_user(question, options?)   +---------------------------------+
 *   | model | ------------------------------> | Delete the build logs?          |
 *   |       |                                 |   1. Delete all 3 .log files    |
 *   |       |                                 |   2. Keep everything            |
 *   |       | <------------------------------ | answer> 1      (the loop waits) |
 *   +---+---+  "The person chose option 1"    +---------------------------------+
 *       |      or at once: "No one answered"    one terminal: the stage's prompt
 *       v                                       and the question take turns
 *   bash: rm *.log        the destructive step runs only after the answer
 *
 * New since s04: the ask_user tool, a human in the loop.
 *
 *   npx tsx agents/s05_ask_user.ts            (no key: replays the recorded demo)
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import dns from "node:dns";
import { closeSync, constants, existsSync, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from "node:fs";
import http from "node:http";
import https from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { availableParallelism } from "node:os";
import path from "node:path";
import { pipeline, type Transform } from "node:stream";
import { Worker } from "node:worker_threads";
import zlib from "node:zlib";
import type { ContentBlock, Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import ignore, { type Ignore } from "ignore";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import type { Scenario } from "../lib/course/scenario.ts";
import { terminal } from "../lib/runtime/terminal.ts";

// #region config
if (existsSync(".env")) process.loadEnvFile(".env");
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
const MAX_OUTPUT = 30_000; // characters the model sees from one tool call
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads the SDK at
// the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace is the directory the program runs in. It is read at each call rather than
// stored, so the offline replay and the tests run this same code in a temporary folder; the
// system prompt is written at each request for the same reason.
const workspace = () => process.cwd();
const systemPrompt = () => `You are a coding agent working in ${workspace()}. Find before you change: ls, glob and grep to locate code, read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. web_fetch reads a web page as text. Act first, then report briefly. Before a step that cannot be undone (deleting or overwriting what the person did not name), ask with ask_user and wait for the answer; if no one answers, take the safe choice.`;
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
  {
    name: "web_fetch",
    description:
      "Fetch a public http(s) URL and return its readable text: HTML is cleaned to the title and text, JSON and plain text come back as they are, at most 10,000 characters. Private and local addresses are refused.",
    input_schema: {
      type: "object",
      properties: {
        url: { type: "string", description: "The full URL, starting with http:// or https://." },
        timeout: { type: "number", description: "Seconds for the whole fetch, redirects included (default 30, at most 120)." },
      },
      required: ["url"],
    },
  },
  {
    name: "ask_user",
    description:
      "Ask the person at the terminal a question and wait for the answer. Ask before a step that cannot be undone (deleting, overwriting) and when the request is unclear. For a choice give 2 to 4 options; the person may also answer in their own words. If no one is there you are told at once: then take the safe choice.",
    input_schema: {
      type: "object",
      properties: {
        question: { type: "string", description: "The question, complete enough to answer without scrolling back." },
        options: {
          type: "array",
          items: { type: "string" },
          minItems: 2,
          maxItems: 4,
          description: "2 to 4 distinct choices, shown numbered. Leave out for an open question.",
        },
      },
      required: ["question"],
    },
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
  const seconds = optionalInteger(input, "timeout", { min: 1, max: MAX_TIMEOUT }) ?? DEFAULT_TIMEOUT;
  const blocked = DENYLIST.find((pattern) => command.includes(pattern));
  if (blocked) throw new Error(`refused: the command contains "${blocked.trim()}", which this agent does not run`);

  return new Promise((resolve, reject) => {
    // stdin is /dev/null, so `cat` or `read x` ends at once. `detached` puts the command in
    // its own process group; the mark in its environment follows whatever it starts.
    const mark = newCommandMark();
    const child = spawn("bash", ["-c", command], {
      cwd: workspace(),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      env: { ...process.env, [COMMAND_MARK]: mark },
    });
    if (child.pid) commandGroups.add(child.pid);
    const output = new HeadAndTail();
    child.stdout.on("data", (chunk: Buffer) => output.add(chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => output.add(chunk.toString()));
    const timer = setTimeout(() => {
      endProcesses(`${mark}\0`, [child.pid!]);
      reject(new Error(`timed out after ${seconds}s; the command and everything it started were ended. Output so far:\n${output.text()}`));
    }, seconds * 1000);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    // "exit", then "close" or 50 ms: a background child (`sleep 30 &`) may hold the pipes open
    // for long after the shell is done. Output still in the pipes is read until they close, or
    // for 50 ms and then one more turn of the event loop (when the program is busy, the timer
    // can run before the loop reads what is waiting); the background child runs on, until its
    // command's time is up or the program ends.
    child.on("exit", (code) => {
      timer.unref(); // it still ends what the command left running, without keeping the program alive
      let finished = false;
      const done = () => {
        if (finished) return;
        finished = true;
        clearTimeout(grace);
        child.stdout.destroy();
        child.stderr.destroy();
        child.unref();
        const text = output.text() || "(no output)";
        resolve(code === 0 ? text : `${text.replace(/\n$/, "")}\n[exit code ${code ?? "killed"}]`);
      };
      const grace = setTimeout(() => setImmediate(done), 50);
      child.once("close", done);
    });
  });
}

// Nothing a command starts may outlive it: not a background job (`sleep 1000 &`), not a
// process that leaves the command's process group (`setsid`, a daemon). Every process a
// command starts inherits its environment, so each command gets a mark there; at a timeout
// the command's marked processes end, and when the program ends, all of them do. Finding a
// mark reads /proc, which Linux has; elsewhere the command's process group is what ends.
const COMMAND_MARK = "AGENT_WORKBOOK_COMMAND";
const THIS_RUN = randomBytes(4).toString("hex");
const commandGroups = new Set<number>();
let commandsRun = 0;
const newCommandMark = () => `${THIS_RUN}-${++commandsRun}`;
process.on("exit", () => {
  if (commandsRun > 0) endProcesses(`${THIS_RUN}-`, commandGroups);
});

/** End these process groups, then every process whose mark starts with `mark`, until none is left. */
function endProcesses(mark: string, groups: Iterable<number>): void {
  const kill = (pid: number) => {
    try {
      process.kill(pid, "SIGKILL");
    } catch {} // it has ended already
  };
  for (const group of groups) kill(-group);
  // A few rounds: a process may start another while the first ones are being ended.
  for (let round = 0; round < 5; round++) {
    const marked = markedProcesses(`\0${COMMAND_MARK}=${mark}`);
    if (marked.length === 0) return;
    marked.forEach(kill);
  }
}

/** The processes whose environment holds `needle` (Linux /proc; nothing elsewhere). */
function markedProcesses(needle: string): number[] {
  if (process.platform !== "linux") return [];
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)
    .filter((pid) => {
      try {
        return `\0${readFileSync(`/proc/${pid}/environ`, "latin1")}`.includes(needle);
      } catch {
        return false; // gone already, or another user's
      }
    })
    .map(Number);
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
  const limit = optionalInteger(input, "limit", { min: 1 });
  const lines = readText(safePath(given), given).split("\n");
  if (limit === undefined || limit >= lines.length) return lines.join("\n");
  return `${lines.slice(0, limit).join("\n")}\n... (${lines.length - limit} more lines)`;
}

/**
 * A file's text, or a clear error: missing, not a regular file, too large, or binary.
 * The file is opened first and then looked at through what was opened, so what is checked
 * is what is read. O_NONBLOCK: opening a FIFO must not wait for a writer (it would block
 * the whole program, timers included); a FIFO or a device is refused once it is open.
 */
function readText(file: string, given: string): string {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new Error(`${given} does not exist`);
    if (code === "ELOOP") throw new Error(`${given} became a symlink after it was checked; nothing was read`);
    // A socket cannot be opened at all: say what it is rather than "no such device".
    if (code === "ENXIO") throw new Error(`${given} is ${kindOf(statSync(file))}, not a regular file; only regular files are read`);
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw new Error(`${given} is a directory; list it with bash (ls)`);
    if (!stat.isFile()) throw new Error(`${given} is ${kindOf(stat)}, not a regular file; only regular files are read`);
    if (stat.size > MAX_FILE_BYTES) {
      throw new Error(`${given} is ${(stat.size / 1024 / 1024).toFixed(1)} MB, over the 10 MB limit; look at parts of it with bash (head, grep)`);
    }
    // At most the size seen when it was opened: a file that keeps growing cannot fill memory.
    const bytes = Buffer.alloc(stat.size);
    let length = 0;
    while (length < bytes.length) {
      const read = readSync(fd, bytes, length, bytes.length - length, null);
      if (read === 0) break; // the file shrank while it was read
      length += read;
    }
    if (bytes.subarray(0, Math.min(length, 8192)).includes(0)) throw new Error(`${given} looks binary (it contains NUL bytes), so it is not shown as text`);
    return bytes.subarray(0, length).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** What a path is when it is not a regular file, in words. */
function kindOf(stat: Stats): string {
  if (stat.isFIFO()) return "a FIFO (named pipe)";
  if (stat.isCharacterDevice()) return "a character device";
  if (stat.isBlockDevice()) return "a block device";
  if (stat.isSocket()) return "a socket";
  if (stat.isSymbolicLink()) return "a symlink";
  return "not a regular file";
}
// #endregion read-file

// #region write-file
function writeFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const content = requireString(input, "content");
  writeAtomically(safePath(given), content, given, { createFolders: true });
  return `Wrote ${Buffer.byteLength(content)} bytes to ${given}`;
}

/**
 * Replace a file's content so that a failure half-way leaves the old content whole: the new
 * text goes to a temporary file beside it, which is then renamed over it. A careful editor
 * also keeps what the file was. A read-only file is refused: someone made it so on purpose.
 * The mode stays (a script stays executable). A file with other hard links, or that belongs
 * to someone else, is written in place instead, because a rename would give it a new
 * identity: the other links would keep the old text, and the owner would change.
 */
function writeAtomically(file: string, content: string, given: string, options: { createFolders?: boolean } = {}): void {
  const before = lstatSync(file, { throwIfNoEntry: false });
  if (before?.isDirectory()) throw new Error(`${given} is a directory`);
  // Replacing a FIFO, a socket or a device would destroy it, and writing into one can wait for ever.
  if (before && !before.isFile()) throw new Error(`${given} is ${kindOf(before)}, not a regular file; only regular files are written`);
  if (before && (before.mode & 0o200) === 0) {
    const mode = (before.mode & 0o777).toString(8);
    throw new Error(`${given} is read-only (mode ${mode}), so it is left as it is; if it should change, make it writable first (chmod u+w)`);
  }
  inFolder(path.dirname(file), given, options.createFolders ?? false, () => {
    const name = path.basename(file);
    if (before && (before.nlink > 1 || (process.getuid && before.uid !== process.getuid()))) return writeInPlace(name, content);
    // A name nobody can guess, created exclusively ("wx"): an existing file or a symlink
    // planted at that name is never reused or followed.
    const temporary = `.${name}.${randomBytes(6).toString("hex")}.tmp`;
    const fd = openSync(temporary, "wx");
    try {
      try {
        writeFileSync(fd, content);
        if (before) fchmodSync(fd, before.mode & 0o7777);
      } finally {
        closeSync(fd);
      }
      renameSync(temporary, name);
    } catch (error) {
      rmSync(temporary, { force: true });
      throw error;
    }
  });
}

/** Overwrite the file's own bytes, so its other names and its owner stay (not atomic: only when needed). */
function writeInPlace(name: string, content: string): void {
  const fd = openSync(name, constants.O_WRONLY | constants.O_TRUNC | constants.O_NOFOLLOW);
  try {
    writeFileSync(fd, content);
  } finally {
    closeSync(fd);
  }
}

/**
 * Run `work` with the process standing in `folder`, entered one step at a time from the
 * workspace and checked at each step. safePath checked the path a moment ago, but another
 * process may swap a folder for a symlink since; once the process stands in a folder, the
 * names `work` uses are looked up there and cannot be redirected. Missing folders are
 * created one at a time, each inside the one just checked.
 */
function inFolder(folder: string, given: string, createFolders: boolean, work: () => void): void {
  const root = realpathSync(workspace());
  const home = process.cwd();
  process.chdir(root);
  try {
    for (const part of path.relative(root, folder).split(path.sep).filter(Boolean)) {
      if (createFolders && !lstatSync(part, { throwIfNoEntry: false })) mkdirSync(part);
      process.chdir(part);
      if (!isInside(root, process.cwd())) throw new Error(`${given}: a folder on its way became a link to outside the workspace while writing; nothing was written`);
    }
    work();
  } finally {
    process.chdir(home);
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
  writeAtomically(file, pieces.join(replacement), given);
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
const ALWAYS_SKIPPED = new Set([".git", "node_modules"]);
const MAX_PATTERNS = 1000; // patterns one glob may stand for once its braces are expanded

type FoundFile = { shown: string; full: string };
/** What a walk found: the files, and the folders it could not read (their files are not in the list). */
type Walk = { files: FoundFile[]; unreadable: string[] };
/**
 * The .gitignore rules in force in a folder: one entry per folder on the way down that has a
 * .gitignore. `byName`: none of its rules has a / before its end (`dist/`, `*.log`), so each
 * may match at any depth and asking about an entry's name is enough. The library keeps every
 * answer it gave, so a name that comes up in folder after folder (src/, index.ts) is worked
 * out once.
 */
type Rules = { base: string; rules: Ignore; byName: boolean }[];

/**
 * The files under `folder` that match a glob pattern, named relative to the workspace.
 * `baseNameMatch`: a pattern with no / is matched against the file's name, in every folder.
 * `onFound` hears of each file as the walk finds it, so a search can start before the walk ends.
 */
function findFiles(pattern: string, folder: string, options: { baseNameMatch?: boolean; onFound?: (file: FoundFile) => void } = {}): Walk {
  if (path.isAbsolute(pattern) || pattern.split("/").includes("..")) {
    throw new Error(`the pattern ${pattern} must stay inside the folder searched: no absolute paths or ".." parts`);
  }
  const matches = globMatcher(pattern.replace(/^(\.\/)+/, ""));
  const nameOnly = options.baseNameMatch && !pattern.includes("/");
  return walkFiles(folder, (relative) => matches(nameOnly ? relative.slice(relative.lastIndexOf("/") + 1) : relative), options.onFound);
}

/**
 * The files under `folder` whose path from `folder` is `wanted`, in one pass over the folders.
 * Nothing is read twice or in vain: a skipped or ignored folder is never opened, each
 * folder's .gitignore is read once, as the walk enters it, and no file is stat'ed (the
 * folder's listing says what each entry is). Only regular files are listed: a symlink is
 * neither followed nor listed, so a link inside the workspace can never carry a search out of
 * it, and a FIFO or a device is never opened.
 */
function walkFiles(folder: string, wanted: (relative: string) => boolean, onFound?: (file: FoundFile) => void): Walk {
  const root = realpathSync(workspace());
  const found: Walk = { files: [], unreadable: [] };
  const start = relativeName(root, folder);
  const above = start === "." ? [] : start.split("/");
  // The .gitignore files of the folders above `folder` have their say too, from the top down.
  let rules: Rules = [];
  for (let depth = 0; depth < above.length; depth++) {
    const base = above.slice(0, depth).join("/");
    const file = path.join(root, base, ".gitignore");
    if (existsSync(file) && statSync(file).isFile()) rules = [...rules, gitignore(base, readFileSync(file, "utf8"))];
    if (ignoredBy(rules, `${above.slice(0, depth + 1).join("/")}/`, `${above[depth]}/`)) return found;
  }

  const visit = (full: string, shown: string, inFolder: string, rules: Rules) => {
    const listing = listFolder(full, shown, rules);
    if (!listing) return void found.unreadable.push(shown || ".");
    for (const entry of listing.entries) {
      const name = shown ? `${shown}/${entry.name}` : entry.name;
      const relative = inFolder ? `${inFolder}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!ALWAYS_SKIPPED.has(entry.name) && !ignoredBy(listing.rules, `${name}/`, `${entry.name}/`)) visit(`${full}/${entry.name}`, name, relative, listing.rules);
      } else if (entry.isFile() && !ignoredBy(listing.rules, name, entry.name) && wanted(relative)) {
        const file = { shown: name, full: `${full}/${entry.name}` };
        found.files.push(file);
        onFound?.(file);
      }
    }
  };
  visit(folder, above.join("/"), "", rules);
  return found;
}

/** A folder's entries and the rules in force inside it, or undefined if it cannot be read. */
function listFolder(full: string, shown: string, rules: Rules) {
  try {
    const entries = readdirSync(full, { withFileTypes: true });
    // A .gitignore that cannot be read leaves its whole folder out: what it hides stays hidden.
    if (entries.some((entry) => entry.name === ".gitignore" && entry.isFile())) {
      rules = [...rules, gitignore(shown, readFileSync(`${full}/.gitignore`, "utf8"))];
    }
    return { entries, rules };
  } catch {
    return undefined;
  }
}

function gitignore(base: string, text: string): Rules[number] {
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "" && !line.startsWith("#"));
  return { base, rules: ignore().add(text), byName: lines.every((line) => !line.trimEnd().replace(/\/$/, "").includes("/")) };
}

/**
 * Whether .gitignore leaves a path out (a folder's path ends in /). The .gitignore of each
 * folder on the way down is asked, and a deeper one has the last word (a `!keep.log` there
 * brings back what `*.log` above left out), as in git.
 */
function ignoredBy(levels: Rules, relative: string, name: string): boolean {
  let ignored = false;
  for (const level of levels) {
    const verdict = verdictOf(level.rules, level.byName ? name : level.base ? relative.slice(level.base.length + 1) : relative);
    if (verdict !== undefined) ignored = verdict;
  }
  return ignored;
}

/** true: ignored, false: brought back by a `!` rule, undefined: no rule says. */
function verdictOf(rules: Ignore, relative: string): boolean | undefined {
  const { ignored, unignored } = rules.test(relative);
  return ignored ? true : unignored ? false : undefined;
}

/**
 * A glob as a test of a path: `*` any characters but /, `?` one, `[a-z]` one of (`[!a-z]`
 * none of), `**` any number of folders, `{a,b}` either, `{1..3}` or `{a..c}` a range, `\*` a
 * star. The braces are expanded first, into the patterns they stand for; a glob that would
 * stand for more than MAX_PATTERNS is refused before its list grows past that (`{a,b}`
 * twenty times stands for a million, and so does `{1..1000}{1..1000}`). Each pattern is then
 * matched without a regular expression, in time that grows with the path times the pattern:
 * a regular expression for `*a*a*a*a*b` backtracks for minutes on a long enough name.
 */
function globMatcher(glob: string): (relative: string) => boolean {
  const patterns = expandBraces(glob, braceEnds(glob), 0, glob.length).map((pattern) =>
    pattern.split("/").map((part) => (part === "**" ? GLOBSTAR : partTokens(part, glob))),
  );
  // "**/*.ts", the usual form, asks only about a file's name: whatever folders it is in, the
  // ** takes them. Asking the name alone makes a walk of 20,000 files a third faster.
  if (patterns.every((pattern) => pattern.length === 2 && pattern[0] === GLOBSTAR && pattern[1] !== GLOBSTAR)) {
    const names = patterns.map((pattern) => pattern[1] as Token[]);
    return (relative) => {
      const name = relative.slice(relative.lastIndexOf("/") + 1);
      return names.some((tokens) => matchPart(tokens, name));
    };
  }
  return (relative) => {
    const parts = relative.split("/");
    return patterns.some((pattern) => wildcardMatch(pattern, parts, matchSegment));
  };
}

/** The patterns glob[from, to) stands for, with its braces expanded (escapes are kept for partTokens). */
function expandBraces(glob: string, ends: number[], from: number, to: number): string[] {
  let patterns = [""];
  for (let i = from; i < to; i++) {
    const group = glob[i] === "{" && ends[i] >= 0 && ends[i] < to ? braceAlternatives(glob, ends, i) : undefined;
    if (group) {
      if (patterns.length * group.length > MAX_PATTERNS) throw tooManyPatterns(glob);
      patterns = patterns.flatMap((pattern) => group.map((alternative) => pattern + alternative));
      i = ends[i];
    } else {
      // An escaped character (\* or \{) keeps its \, for partTokens to read.
      const char = glob[i] === "\\" && i + 1 < to ? glob[i] + glob[++i] : glob[i];
      patterns = patterns.map((pattern) => pattern + char);
    }
  }
  return patterns;
}

/** What `{a,b}` or `{1..3}` at `open` stands for, or undefined when its braces are only characters (`{a}`). */
function braceAlternatives(glob: string, ends: number[], open: number): string[] | undefined {
  const close = ends[open];
  const range = /^(-?\d+)\.\.(-?\d+)$|^([a-zA-Z])\.\.([a-zA-Z])$/.exec(glob.slice(open + 1, close));
  if (range) {
    // Counted before it is listed: {1..100000000} is refused, not made.
    const [first, last] = range[1] !== undefined ? [range[1], range[2]] : [range[3], range[4]];
    const [from, to] = range[1] !== undefined ? [Number(first), Number(last)] : [first.charCodeAt(0), last.charCodeAt(0)];
    if (Math.abs(to - from) + 1 > MAX_PATTERNS) throw tooManyPatterns(glob);
    const width = /^-?0\d/.test(first) || /^-?0\d/.test(last) ? Math.max(first.length, last.length) : 0;
    const step = to >= from ? 1 : -1;
    return Array.from({ length: Math.abs(to - from) + 1 }, (_, k) =>
      range[1] !== undefined ? String(from + k * step).padStart(width, "0") : String.fromCharCode(from + k * step),
    );
  }
  const commas: number[] = [];
  for (let i = open + 1; i < close; i++) {
    if (glob[i] === "\\") i++;
    else if (glob[i] === "{" && ends[i] >= 0) i = ends[i]; // a nested group's commas are its own
    else if (glob[i] === ",") commas.push(i);
  }
  if (commas.length === 0) return undefined;
  const bounds = [open, ...commas, close];
  const alternatives: string[] = [];
  for (let b = 0; b + 1 < bounds.length; b++) {
    alternatives.push(...expandBraces(glob, ends, bounds[b] + 1, bounds[b + 1]));
    if (alternatives.length > MAX_PATTERNS) throw tooManyPatterns(glob);
  }
  return alternatives;
}

/** Where each `{` closes (-1: never), found in one pass, so unclosed braces cost no more than their length. */
function braceEnds(glob: string): number[] {
  const ends = new Array<number>(glob.length).fill(-1);
  const open: number[] = [];
  for (let i = 0; i < glob.length; i++) {
    if (glob[i] === "\\") i++;
    else if (glob[i] === "{") open.push(i);
    else if (glob[i] === "}" && open.length > 0) ends[open.pop()!] = i;
  }
  return ends;
}

// A part of a pattern (between slashes) as tokens: a character, ANY (?), STAR (*) or a class.
const GLOBSTAR = "**";
const STAR = Symbol("*");
const ANY = Symbol("?");
type Token = string | typeof STAR | typeof ANY | RegExp;

function partTokens(part: string, glob: string): Token[] {
  const tokens: Token[] = [];
  for (let i = 0; i < part.length; i++) {
    const close = part[i] === "[" ? part.indexOf("]", i + 2) : -1; // in `[]a]` the first ] is a member
    if (part[i] === "*") tokens.push(STAR);
    else if (part[i] === "?") tokens.push(ANY);
    else if (close > 0) {
      const inside = part.slice(i + 1, close).replace(/[\\\][]/g, "\\$&").replace(/^!/, "^");
      try {
        tokens.push(new RegExp(`^[${inside}]$`)); // one character: nothing to backtrack
      } catch (error) {
        throw new Error(`${glob} is not a valid glob: ${(error as Error).message}`);
      }
      i = close;
    } else tokens.push(part[i] === "\\" && i + 1 < part.length ? part[++i] : part[i]);
  }
  return tokens;
}

// Outside wildcardMatch on purpose: tsx keeps function names, so a named arrow function costs
// a property write each time it is made, and wildcardMatch runs for every file of a walk.
const isWildcard = (token: unknown) => token === STAR || token === GLOBSTAR;
const matchPart = (tokens: Token[], name: string) =>
  wildcardMatch(tokens, name, (token, char) => token !== STAR && (token === ANY || (typeof token === "string" ? token === char : token.test(char))));
const matchSegment = (segment: typeof GLOBSTAR | Token[], part: string) => segment !== GLOBSTAR && matchPart(segment, part);

/**
 * The classic wildcard match, used twice: for the characters of a name (STAR: any run of
 * them) and for the parts of a path (GLOBSTAR: any run of folders). When a step fails, it
 * goes back only to the last wildcard and lets it take one more item; all that can be tried
 * is tried, without the exponential search a backtracking regular expression may make.
 */
function wildcardMatch<T, U>(pattern: T[], items: ArrayLike<U>, matchesOne: (token: T, item: U) => boolean): boolean {
  let t = 0;
  let i = 0;
  let lastWildcard = -1;
  let resumeAt = 0;
  while (i < items.length) {
    if (t === pattern.length - 1 && isWildcard(pattern[t])) return true; // a wildcard at the end takes the rest
    if (t < pattern.length && isWildcard(pattern[t])) {
      lastWildcard = t++;
      resumeAt = i;
    } else if (t < pattern.length && matchesOne(pattern[t], items[i])) {
      t++;
      i++;
    } else if (lastWildcard >= 0) {
      t = lastWildcard + 1;
      i = ++resumeAt;
    } else return false;
  }
  while (t < pattern.length && isWildcard(pattern[t])) t++;
  return t === pattern.length;
}

const tooManyPatterns = (glob: string) =>
  new Error(
    `the pattern ${glob} stands for more than ${MAX_PATTERNS} patterns once its braces are expanded ({a,b} doubles the count, {1..100} multiplies it by 100); nothing was searched. Use fewer braces, or * and ? instead`,
  );

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

/** A note naming what could not be read, or nothing when all was read. */
function unreadableNote(what: "file" | "folder", names: string[]): string[] {
  if (names.length === 0) return [];
  const listed = [...names].sort(byName).slice(0, 10).join(", ") + (names.length > 10 ? ` and ${names.length - 10} more` : "");
  return [`[could not read ${names.length} ${what}(s), so ${names.length === 1 ? "it was" : "they were"} skipped: ${listed}]`];
}
// #endregion walk

// #region search
// The search behind grep, from s07 on behind its paging grep too: the files the walk finds,
// searched in worker threads with a time limit while the walk is still finding more.

/**
 * How long one search may take in all (users get 10 s), and how many files make another
 * worker worth starting: a small search runs in one worker, a large one in one per core (at
 * most 4). Exported so tests can change them.
 */
export const GREP_LIMITS = { milliseconds: 10_000, filesPerWorker: 1000 };
const BATCH = 500; // files the walk hands to the workers at a time

/** What a worker found in one file; `lines` (content mode) are ready to show: path:line: text. */
type FileResult = { skipped?: string; unreadable?: string; count?: number; lines?: string[] };
/**
 * A search's answer: the files searched, sorted by path so the same search always answers in
 * the same order; per file its result (undefined: no match) and whether it was searched; the
 * files the search was stuck in when time ran out; the folders the walk could not read.
 */
type Search = { files: FoundFile[]; results: (FileResult | undefined)[]; searched: boolean[]; stuckIn: number[]; timedOut: boolean; unreadable: string[] };

/**
 * Search `given`: a file named outright, or the files under a folder whose name or path
 * matches `include`. `leaveOut`: files the walk finds that this search passes over.
 */
async function searchFiles(given: string, include: string, pattern: string, options: { mode: string; maxResults: number; leaveOut?: (file: FoundFile) => boolean }): Promise<Search> {
  const target = safePath(given);
  if (!existsSync(target)) throw new Error(`${given} does not exist`);
  const stat = statSync(target);
  if (!stat.isFile() && !stat.isDirectory()) throw new Error(`${given} is neither a file nor a folder`);
  const search = startSearch(pattern, options.mode, options.maxResults);
  let files: FoundFile[] = [];
  let unreadable: string[] = [];
  if (stat.isFile()) {
    // A file named outright is searched even where a skip rule would have left it out.
    files = [{ shown: relativeName(realpathSync(workspace()), target), full: target }];
    search.add(files);
  } else {
    // The workers start on the first files while the walk looks for the rest. "*.ts" matches
    // in every folder, as grep --include does; "src/**/*.ts" matches paths. The pattern is
    // checked before the walk starts, so a bad one throws before any worker is busy.
    let batch: FoundFile[] = [];
    const onFound = (file: FoundFile) => {
      if (options.leaveOut?.(file)) return;
      files.push(file);
      batch.push(file);
      if (batch.length === BATCH) {
        search.add(batch);
        batch = [];
      }
    };
    unreadable = findFiles(include, target, { baseNameMatch: true, onFound }).unreadable;
    search.add(batch);
  }
  const found = await search.finish();
  const order = files.map((_, i) => i).sort((a, b) => byName(files[a].shown, files[b].shown));
  return {
    files: order.map((i) => files[i]),
    results: order.map((i) => found.results[i]),
    searched: order.map((i) => found.searched[i]),
    stuckIn: found.stuckIn.map((i) => order.indexOf(i)),
    timedOut: found.timedOut,
    unreadable,
  };
}

// The search runs in worker threads because a pattern with nested repetition, like (a+)+$,
// can take years on one unlucky line, and a running RegExp cannot be interrupted on the main
// thread. A worker can be terminated. The walk hands the files over in batches as it finds
// them, and every worker gets every batch: the workers take the next file of a batch from a
// counter they share, so a large file does not hold up the others, and mark each file done in
// shared memory: that costs nothing, and when time runs out we know exactly which files were
// searched. Only a file with matches (or one skipped) sends a message. Starting a worker takes
// longer than many a search, so workers wait for the next search when they finish; one
// stopped at the time limit is gone, and a new one takes its place. Plain JavaScript in a
// string (eval: true) needs no TypeScript loader in the worker.
//
// Each file is searched whole, not line by line: one pass of the regular expression over the
// text finds the lines worth a look, and each of those is tested again on its own, so the
// answers are exactly those of a line-by-line search. That holds when no match can reach over
// a line break or look past its line, so the whole text is searched with a pattern that cannot
// (see wholeTextPattern); a pattern with a lookaround is searched line by line. And when a
// pattern can match only ASCII characters, the bytes are read as latin1, one character per
// byte, which is many times faster than decoding UTF-8 and finds
// the same lines; only the lines shown are decoded. Plain text that every match must hold
// (function in function\s+\w+) is looked for in the bytes first (Buffer.indexOf): a file
// without it is done without decoding at all. And a pattern that is nothing but plain text is
// searched in the bytes alone: UTF-8 text holds a word exactly where its bytes hold the word's
// bytes, so only the lines shown are ever decoded.
const SEARCH_WORKER = `
const { parentPort } = require("node:worker_threads");
const { isAscii } = require("node:buffer");
const { closeSync, constants, openSync, readSync } = require("node:fs");
let buffer = Buffer.alloc(65536);
let task, onLine, inWhole, needle;

parentPort.on("message", (message) => {
  if (message.type === "search") {
    task = message;
    onLine = new RegExp(task.pattern);
    inWhole = task.whole === undefined ? undefined : new RegExp(task.whole, "gm");
    needle = task.text === undefined ? undefined : Buffer.from(task.text);
  } else if (message.type === "batch") {
    const { files, names, next, done, number, offset } = message;
    for (let index = Atomics.add(next, 0, 1); index < files.length; index = Atomics.add(next, 0, 1)) {
      Atomics.store(task.current, 2 * task.slot, number);
      Atomics.store(task.current, 2 * task.slot + 1, index);
      const result = searchFile(files[index], names[index]);
      if (result) parentPort.postMessage([offset + index, result]);
      Atomics.store(done, index, 1);
    }
    Atomics.store(task.current, 2 * task.slot, -1);
  } else {
    // "end": there are no more files for this search.
    if (buffer.length > 1 << 20) buffer = Buffer.alloc(65536); // a waiting worker keeps little
    parentPort.postMessage("finished");
  }
});

function searchFile(file, name) {
  let bytes;
  try {
    bytes = readFile(file);
  } catch (error) {
    return { unreadable: error.code || error.message };
  }
  if (bytes === undefined) return { skipped: "over 10 MB" };
  const nul = bytes.indexOf(0);
  if (nul !== -1 && nul < 8192) return { skipped: "binary" };
  if (needle && bytes.indexOf(needle) === -1) return undefined;
  const found = task.plain ? searchBytes(bytes, name) : inWhole ? searchWhole(bytes, name) : searchLines(bytes.toString("utf8"), name);
  return found.count > 0 ? found : undefined;
}

// The walk lists only regular files, but one may have been replaced since. The file is opened
// without waiting (a FIFO there cannot hang the search) and without following a symlink put
// there, and read to its end but never past the size limit (a device there cannot fill memory).
// undefined: over the limit.
function readFile(file) {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  try {
    let length = 0;
    while (true) {
      if (length === buffer.length) {
        if (length > task.maxBytes) return undefined;
        const larger = Buffer.allocUnsafe(Math.min(buffer.length * 4, task.maxBytes + 1));
        buffer.copy(larger);
        buffer = larger;
      }
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) return buffer.subarray(0, length);
      length += read;
    }
  } finally {
    closeSync(fd);
  }
}

function searchWhole(bytes, name) {
  const text = bytes.toString(task.latin1 ? "latin1" : "utf8");
  const decodeLines = task.latin1 && !isAscii(bytes); // latin1 text of UTF-8 bytes: decode the lines shown
  const found = { count: 0, lines: [] };
  let lineNumber = 1;
  let counted = 0;
  inWhole.lastIndex = 0;
  for (let match = inWhole.exec(text); match; match = inWhole.exec(text)) {
    const start = match.index === 0 ? 0 : text.lastIndexOf("\\n", match.index - 1) + 1;
    if (start === text.length) break; // after the final line break: no line there
    let end = text.indexOf("\\n", match.index);
    if (end === -1) end = text.length;
    const line = withoutCR(decodeLines ? bytes.toString("utf8", start, end) : text.slice(start, end));
    if (onLine.test(line)) {
      found.count += 1;
      if (task.mode === "files_with_matches") break;
      if (task.mode === "content" && found.lines.length < task.maxResults) {
        for (let at = text.indexOf("\\n", counted); at !== -1 && at < start; at = text.indexOf("\\n", at + 1)) lineNumber += 1;
        counted = start;
        found.lines.push(shown(name, lineNumber, line));
      }
    }
    inWhole.lastIndex = end + 1;
  }
  return found;
}

function searchBytes(bytes, name) {
  const found = { count: 0, lines: [] };
  let lineNumber = 1;
  let counted = 0;
  for (let at = bytes.indexOf(needle); at !== -1; ) {
    const start = at === 0 ? 0 : bytes.lastIndexOf(10, at - 1) + 1;
    let end = bytes.indexOf(10, at);
    if (end === -1) end = bytes.length;
    found.count += 1;
    if (task.mode === "files_with_matches") break;
    if (task.mode === "content" && found.lines.length < task.maxResults) {
      for (let nl = bytes.indexOf(10, counted); nl !== -1 && nl < start; nl = bytes.indexOf(10, nl + 1)) lineNumber += 1;
      counted = start;
      found.lines.push(shown(name, lineNumber, withoutCR(bytes.toString("utf8", start, end))));
    }
    at = bytes.indexOf(needle, end + 1); // a line counts once, however often it holds the text
  }
  return found;
}

function searchLines(text, name) {
  const found = { count: 0, lines: [] };
  const lines = text.split("\\n");
  if (lines[lines.length - 1] === "") lines.pop(); // a final line break ends a line, it does not start one
  for (let index = 0; index < lines.length; index++) {
    const line = withoutCR(lines[index]);
    if (!onLine.test(line)) continue;
    found.count += 1;
    if (task.mode === "files_with_matches") break;
    if (task.mode === "content" && found.lines.length < task.maxResults) found.lines.push(shown(name, index + 1, line));
  }
  return found;
}

function withoutCR(line) {
  return line.endsWith("\\r") ? line.slice(0, -1) : line;
}

function shown(name, number, line) {
  const text = line.length > task.maxLine ? line.slice(0, task.maxLine) + " [line cut at " + task.maxLine + " characters]" : line;
  return name + ":" + number + ": " + text;
}`;

/** Workers waiting for the next search. */
const idleWorkers: Worker[] = [];

/**
 * A search in worker threads that takes its files a batch at a time: `add` hands a batch
 * over, `finish` says there are no more and waits for the answer, in the order the files were
 * added. The time limit counts from the first batch. One worker searches while the walk goes
 * on, since the walk keeps a core busy too; when it is done, another joins for every
 * filesPerWorker files, up to one per core, and they share what is left.
 */
function startSearch(pattern: string, mode: string, maxResults: number) {
  const most = Math.min(availableParallelism(), 4);
  const whole = wholeTextPattern(pattern);
  const latin1 = whole !== undefined && matchesOnlyAscii(pattern);
  const text = requiredText(pattern);
  const plain = text === pattern && !/[\x00-\x1f]/.test(pattern); // a line break in it could never match a line
  // Shared with the workers: the batch and the file each worker is in, -1 when none.
  const current = new Int32Array(new SharedArrayBuffer(8 * most)).fill(-1);
  const task = { type: "search", pattern, whole, latin1, text, plain, mode, maxResults, maxLine: MAX_LINE, maxBytes: MAX_FILE_BYTES, current };
  const batches: { offset: number; done: Uint8Array; message: object }[] = [];
  const results: (FileResult | undefined)[] = [];
  const workers: Worker[] = [];
  const busy = new Set<Worker>();
  let total = 0;
  let timedOut = false;
  let failure: Error | undefined;
  let whenThrough = () => {};
  let timer: NodeJS.Timeout | undefined;

  const startWorker = () => {
    timer ??= setTimeout(() => {
      timedOut = true;
      busy.forEach((worker) => void worker.terminate());
    }, GREP_LIMITS.milliseconds);
    const worker = idleWorkers.pop() ?? new Worker(SEARCH_WORKER, { eval: true });
    // A worker is through with this search when it says "finished", or when it has ended
    // ("exit" comes after every message it sent, whether it finished or was stopped).
    const through = (again: boolean) => {
      if (!busy.delete(worker)) return;
      worker.off("message", onMessage).off("exit", onExit).off("error", onError);
      if (again && !timedOut) {
        worker.unref(); // a waiting worker does not keep the program running
        idleWorkers.push(worker);
      }
      if (busy.size === 0) whenThrough();
    };
    const onMessage = (message: "finished" | [number, FileResult]) => {
      if (message === "finished") through(true);
      else results[message[0]] = message[1];
    };
    const onExit = () => through(false);
    const onError = (error: Error) => {
      failure = error;
      busy.forEach((other) => void other.terminate());
    };
    worker.on("message", onMessage).on("exit", onExit).on("error", onError);
    worker.ref();
    worker.postMessage({ ...task, slot: workers.length });
    workers.push(worker);
    busy.add(worker);
    for (const batch of batches) worker.postMessage(batch.message); // it helps with what is left
  };

  return {
    add(files: FoundFile[]) {
      if (files.length === 0 || timedOut) return;
      const done = new Uint8Array(new SharedArrayBuffer(files.length));
      const message = {
        type: "batch", number: batches.length, offset: total, done, next: new Int32Array(new SharedArrayBuffer(4)),
        files: files.map((file) => file.full), names: files.map((file) => file.shown),
      };
      batches.push({ offset: total, done, message });
      total += files.length;
      for (const worker of busy) worker.postMessage(message);
      if (workers.length === 0) startWorker();
    },
    finish(): Promise<{ results: (FileResult | undefined)[]; searched: boolean[]; stuckIn: number[]; timedOut: boolean }> {
      return new Promise((resolve, reject) => {
        whenThrough = () => {
          clearTimeout(timer);
          if (failure) return reject(new Error(`the search failed: ${failure.message}`));
          const searched = batches.flatMap(({ offset, done }) => [...done].map((flag, i) => flag === 1 || results[offset + i] !== undefined));
          const stuckIn = workers.flatMap((_, slot) => {
            const [batch, index] = [current[2 * slot], current[2 * slot + 1]];
            return batch >= 0 && !searched[batches[batch].offset + index] ? [batches[batch].offset + index] : [];
          });
          resolve({ results: Array.from({ length: total }, (_, i) => results[i]), searched, stuckIn, timedOut });
        };
        if (busy.size === 0) return whenThrough(); // nothing was added, or every worker has stopped
        while (!timedOut && workers.length < most && total > GREP_LIMITS.filesPerWorker * workers.length) startWorker();
        for (const worker of busy) worker.postMessage({ type: "end" });
      });
    },
  };
}

/**
 * The pattern to search a whole text with, or undefined when only a line-by-line search can
 * be trusted. No match of it may reach over a line break, so what could match one is kept
 * from it: \s, \W and \D become [^\S\n], [^\w\n] and [^\d\n], and [^x] becomes [^x\n]. A line
 * has no line break, so it matches exactly as before. A lookaround (it may look past its line),
 * an escape that could stand for a line break (\n, \x0a, \u000a), and \s, \W or \D inside a
 * [...] leave the pattern to the line-by-line search.
 */
function wholeTextPattern(pattern: string): string | undefined {
  if (/[\x00-\x1f]|\(\?<?[=!]/.test(pattern)) return undefined;
  const withoutBreak: Record<string, string> = { "\\s": "[^\\S\\n]", "\\W": "[^\\w\\n]", "\\D": "[^\\d\\n]" };
  let whole = "";
  let inClass: "" | "[" | "[^" = "";
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === "\\") {
      const escape = pattern.slice(i, i + 2);
      i += 1;
      if (/^\\[bBdwStvf\\^$.*+?()[\]{}|/-]$/.test(escape)) whole += escape; // never a line break
      else if (escape in withoutBreak && inClass === "") whole += withoutBreak[escape];
      else if (escape in withoutBreak && inClass === "[^") whole += escape; // [^\s] is no break either
      else return undefined;
    } else if (inClass !== "" && pattern[i] === "]") {
      whole += inClass === "[^" ? "\\n]" : "]";
      inClass = "";
    } else if (inClass === "" && pattern[i] === "[") {
      inClass = pattern[i + 1] === "^" ? "[^" : "[";
      whole += inClass;
      i += inClass.length - 1;
    } else whole += pattern[i];
  }
  return whole;
}

/**
 * Plain text that every match of `pattern` holds, or undefined. With a | or a group, which
 * may leave any part out, or {n,m}, none is sought. Otherwise it is the longest run of plain
 * characters: [...] and escapes stand for one of several characters, so they end a run; so
 * do . ^ $ and +, and a ? or * takes away the character before it. (U+FFFD may stand for
 * bytes that are not UTF-8, so a pattern with it has none.)
 */
function requiredText(pattern: string): string | undefined {
  if (/[|(){}\uFFFD]/.test(pattern)) return undefined;
  const oneOfSeveral = /\[(?:\\.|[^\]\\])*\]|\\[\s\S]/; // [...], or \ and the character after it
  const notPlain = /[\s\S]?[?*]|[.^$+]/; // a character with ? or * after it; . ^ $ +
  let longest = "";
  for (const piece of pattern.split(oneOfSeveral)) {
    for (const run of piece.split(notPlain)) if (run.length > longest.length) longest = run;
  }
  return longest || undefined;
}

/** Whether `pattern` can match only ASCII characters: then every match is the same in the bytes read as latin1. */
function matchesOnlyAscii(pattern: string): boolean {
  const rest = pattern.replace(/\\[bBdwtvfnr\\^$.*+?()[\]{}|/-]/g, "");
  return /^[\x20-\x7e]*$/.test(pattern) && !/[.\\]|\[\^/.test(rest);
}
// #endregion search

// #region grep
const MAX_LINE = 2000; // characters shown of one matching line
const OUTPUT_MODES = ["files_with_matches", "content", "count"];

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
  const maxResults = optionalInteger(input, "max_results", { min: 1 }) ?? 100;
  const given = optionalString(input, "path", ".");
  const search = await searchFiles(given, optionalString(input, "include", "**/*"), pattern, { mode, maxResults });
  const unreadable = unreadableNote("folder", search.unreadable);
  if (search.files.length === 0) {
    return [`No files to search in ${given} (binary files, .git, node_modules and what .gitignore lists are skipped)`, ...unreadable].join("\n");
  }
  return [grepReport(search.files, search, mode, maxResults, `/${pattern}/ in ${given}`), ...unreadable].join("\n");
}

/** The results in the chosen mode, then notes on what was cut, skipped, unreadable or not searched. */
function grepReport(files: FoundFile[], search: Search, mode: string, max: number, what: string): string {
  const { results } = search;
  const entries: string[] = [];
  let total = 0; // matching lines in content mode, files otherwise
  files.forEach((file, i) => {
    const count = results[i]?.count;
    if (!count) return;
    total += mode === "content" ? count : 1;
    if (entries.length >= max) return;
    if (mode === "content") for (const line of results[i]!.lines!) entries.push(line);
    else entries.push(mode === "count" ? `${file.shown}: ${count}` : file.shown);
  });
  const skipped = results.flatMap((result) => (result?.skipped ? [result.skipped] : []));
  const unreadable = files.flatMap((file, i) => (results[i]?.unreadable ? [`${file.shown} (${results[i]!.unreadable})`] : []));
  const searched = search.searched.filter(Boolean).length - skipped.length - unreadable.length;
  const report = entries.length > 0 ? [entries.slice(0, max).join("\n")] : [`No matches for ${what} (${searched} files searched)`];
  const unit = mode === "content" ? "matching lines" : "files";
  if (total > max) report.push(`[showing the first ${max} of ${total} ${unit}; narrow path, include or the pattern, or raise max_results]`);
  if (skipped.length > 0) report.push(`[skipped ${skipped.length} file(s): ${[...new Set(skipped)].join(", ")}]`);
  report.push(...unreadableNote("file", unreadable));
  if (search.timedOut) {
    const left = files.filter((_, i) => !search.searched[i]).map((file) => file.shown);
    const stuck = search.stuckIn.length > 0 ? search.stuckIn.map((i) => files[i].shown) : left.slice(0, 1);
    report.push(
      `[stopped after ${GREP_LIMITS.milliseconds / 1000} s: searched ${files.length - left.length} of ${files.length} files. ` +
        `Not searched: ${left.slice(0, 10).join(", ")}${left.length > 10 ? ` and ${left.length - 10} more` : ""}. ` +
        `The search was still in ${stuck.join(" and ")}; a pattern with nested repetition such as (a+)+ can run for ever on some lines, so simplify it or narrow path or include]`,
    );
  }
  return report.join("\n");
}
// #endregion grep

// #region glob
const MAX_PATHS = 100; // paths glob and ls show

// Left out or null: the default, as optionalInteger treats them.
const optionalString = (input: Record<string, unknown>, name: string, fallback: string) =>
  input[name] === undefined || input[name] === null ? fallback : requireString(input, name);

/** At most `max` lines, and how many of `total` were left out. */
function capped(lines: string[], max: number, total = lines.length): string {
  const more = total - max;
  return lines.slice(0, max).join("\n") + (more > 0 ? `\n… and ${more} more` : "");
}

function glob(input: Record<string, unknown>): string {
  const pattern = requireString(input, "pattern");
  const given = optionalString(input, "path", ".");
  const { files, unreadable } = findFiles(pattern, safeFolder(given));
  // Newest first: the files being worked on are usually the ones wanted. Ties go by path.
  // Only the files that matched are stat'ed; one removed since the walk is left out. A plain
  // loop with one small object per file: a tree of 20,000 files makes every copy count.
  const dated: { shown: string; mtime: number }[] = [];
  for (const file of files) {
    const stat = statSync(file.full, { throwIfNoEntry: false });
    if (stat) dated.push({ shown: file.shown, mtime: stat.mtimeMs });
  }
  // Only the newest MAX_PATHS are shown, so only the files as new as the hundredth newest are
  // put in order; the older ones are only counted. A large tree costs a sort of numbers.
  const times = Float64Array.from(dated, (file) => file.mtime).sort(); // oldest first
  const cutoff = times[Math.max(0, times.length - MAX_PATHS)]; // the hundredth newest
  const newest = dated.filter((file) => file.mtime >= cutoff).sort((a, b) => b.mtime - a.mtime || byName(a.shown, b.shown));
  const listing = dated.length > 0 ? capped(newest.map((file) => file.shown), MAX_PATHS, dated.length) : `No files match ${pattern} in ${given}`;
  return [listing, ...unreadableNote("folder", unreadable)].join("\n");
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

// #region web-fetch
const FETCH_TIMEOUT = 30; // seconds for the whole fetch: every redirect, the body and its conversion included
const MAX_FETCH_TIMEOUT = 120;
const MAX_REDIRECTS = 5;
const MAX_BODY_BYTES = 10 * 1024 * 1024; // counted as the bytes arrive, after decompression, so an endless page is cut off
const MAX_PAGE_TEXT = 10_000; // characters of one page the model gets

async function webFetch(input: Record<string, unknown>): Promise<string> {
  const given = requireString(input, "url");
  const start = webUrl(given);
  const seconds = fetchTimeout(input.timeout);
  // One clock for everything. The race answers on time even if a DNS lookup hangs; the
  // signal closes whatever connection is still open. (Started only once nothing above can
  // throw: a clock nobody races would reject later, unheard, and end the program.)
  const deadline = AbortSignal.timeout(seconds * 1000);
  const timedOut = new Promise<never>((_, reject) =>
    deadline.addEventListener("abort", () => reject(new Error(`timed out after ${seconds}s fetching ${given}`))),
  );
  return Promise.race([fetchFollowingRedirects(start, deadline), timedOut]);
}

function fetchTimeout(value: unknown): number {
  // null is how a model says "not given", as for every optional parameter.
  if (value === undefined || value === null) return FETCH_TIMEOUT;
  if (typeof value !== "number" || !(value > 0)) {
    throw new Error(`"timeout" must be a number of seconds above 0 (default ${FETCH_TIMEOUT}, at most ${MAX_FETCH_TIMEOUT})`);
  }
  return Math.min(value, MAX_FETCH_TIMEOUT);
}

/** A URL from the model or from a redirect (relative to `base`); only http and https are fetched. */
function webUrl(given: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(given, base);
  } catch {
    throw new Error(`"${given}" is not a valid URL; give a full one such as https://example.com/page`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`refused: web_fetch fetches only http and https URLs, not ${url.protocol}`);
  }
  // node:http would send user:password@ to the site as a Basic authorization header.
  if (url.username || url.password) {
    throw new Error("refused: the URL carries a user name or password (user:password@); web_fetch sends no credentials, so give the URL without them");
  }
  return url;
}

/** Redirects are followed by hand, so every hop's address is checked before it is requested. */
async function fetchFollowingRedirects(start: URL, signal: AbortSignal): Promise<string> {
  let url = start;
  for (let redirects = 0; ; redirects++) {
    const response = await get(url, await checkedAddresses(url), signal);
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status < 300 || status > 399 || !location) return readResponse(response, url, url.href !== start.href, signal);
    response.destroy();
    if (redirects === MAX_REDIRECTS) throw new Error(`stopped after ${MAX_REDIRECTS} redirects: ${url} redirects again, to ${location}`);
    url = webUrl(location, url);
  }
}

/**
 * One GET that connects only to the addresses already checked. node:http rather than fetch:
 * fetch looks the name up again by itself, and only a socket's `lookup` can be pinned.
 * msw intercepts both, so the replay and the tests serve pages either way.
 */
function get(url: URL, addresses: dns.LookupAddress[], signal: AbortSignal): Promise<http.IncomingMessage> {
  const transport = url.protocol === "https:" ? https : http;
  const headers = {
    "user-agent": "agent-workbook (web_fetch)",
    accept: "text/html, text/plain, application/json, */*;q=0.5",
    "accept-encoding": "gzip, deflate, br", // what readBody can decompress
  };
  return new Promise((resolve, reject) => {
    const request = transport.get(url, { headers, signal, lookup: pinnedLookup(addresses) }, resolve);
    request.on("error", reject);
  });
}

// DNS rebinding: a name can answer with a public address for the check and a private one a
// moment later for the connection. Answering the connection's own lookup with the addresses
// that were checked closes that gap. (An IP address in the URL needs no lookup at all.)
const pinnedLookup =
  (addresses: dns.LookupAddress[]): LookupFunction =>
  (_host, options, callback) =>
    options.all ? callback(null, addresses) : callback(null, addresses[0].address, addresses[0].family);

/** The response as text for the model: cleaned HTML, text as it is, or one line for binary. */
async function readResponse(response: http.IncomingMessage, url: URL, redirected: boolean, signal: AbortSignal): Promise<string> {
  const status = response.statusCode ?? 0;
  const type = response.headers["content-type"] ?? "";
  const mime = type.split(";")[0].trim().toLowerCase();
  if (!mime.startsWith("text/") && !/json|xml|javascript/.test(mime)) {
    response.destroy(); // the bytes of a PDF or an image would mean nothing to the model
    const what = describeBinary(mime, response.headers["content-length"]);
    if (status >= 400) throw new Error(`HTTP ${status} ${response.statusMessage} from ${url} (${what})`);
    return `${url} is ${what}; web_fetch returns text only, so its content is not shown.`;
  }
  const { bytes, complete } = await readBody(response);
  const body = decode(bytes, type);
  const text = mime.includes("html") ? await htmlToText(body, signal) : body;
  if (status >= 400) {
    const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 300);
    throw new Error(`HTTP ${status} ${response.statusMessage} from ${url}${excerpt ? `: ${excerpt}` : ""}`);
  }
  return capText(text, complete) + (redirected ? `\n\n(after redirects, this page is ${url})` : "");
}

// The compressions the request asks for. Lenient at the end, as browsers are: an empty or
// cut-short body gives what arrived; a body that is not what it claims to be is an error.
const DECOMPRESSORS: Record<string, () => Transform> = {
  gzip: () => zlib.createGunzip({ finishFlush: zlib.constants.Z_SYNC_FLUSH }),
  "x-gzip": () => zlib.createGunzip({ finishFlush: zlib.constants.Z_SYNC_FLUSH }),
  deflate: () => zlib.createInflate({ finishFlush: zlib.constants.Z_SYNC_FLUSH }),
  br: () => zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }),
};

/**
 * The body, decompressed as the server says it is, at most MAX_BODY_BYTES. The bytes are
 * counted after decompression and as they come out of it: a few kilobytes of gzip can stand
 * for gigabytes, and a page that never ends is cut off rather than buffered.
 */
async function readBody(response: http.IncomingMessage): Promise<{ bytes: Buffer; complete: boolean }> {
  const encoding = response.headers["content-encoding"]?.trim().toLowerCase() || "identity";
  if (encoding !== "identity" && !Object.hasOwn(DECOMPRESSORS, encoding)) {
    response.destroy();
    throw new Error(`the server sent the body encoded as "${encoding}", which web_fetch cannot decode (it asks for gzip, deflate or br)`);
  }
  const body = encoding === "identity" ? response : pipeline(response, DECOMPRESSORS[encoding](), () => {});
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      // Leaving the loop destroys the stream and, through the pipeline, the response: the connection closes.
      if (size > MAX_BODY_BYTES) return { bytes: Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES), complete: false };
    }
  } catch (error) {
    // zlib names its own errors (Z_DATA_ERROR; ERR__ERROR_... for brotli); a network error is passed on as it is.
    if (/^(Z_|ERR__ERROR)/.test((error as { code?: string }).code ?? "")) {
      throw new Error(`the body could not be decoded as ${encoding}: ${(error as Error).message}`);
    }
    throw error;
  }
  return { bytes: Buffer.concat(chunks), complete: true };
}

function decode(bytes: Buffer, contentType: string): string {
  const charset = /charset="?([\w.:-]+)/i.exec(contentType)?.[1] ?? "utf-8";
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    return bytes.toString("utf8"); // a charset name TextDecoder does not know
  }
}

function capText(text: string, complete: boolean): string {
  if (text.length <= MAX_PAGE_TEXT && complete) return text;
  const cutBody = complete ? "" : "; the body was cut off at 10 MB";
  return `${text.slice(0, MAX_PAGE_TEXT)}\n... [web_fetch shows ${Math.min(text.length, MAX_PAGE_TEXT)} of ${text.length} characters${cutBody}]`;
}

function describeBinary(mime: string, length: string | undefined): string {
  const kind =
    mime === "application/pdf" ? "a PDF document"
    : mime.startsWith("image/") ? "an image"
    : /^(audio|video)\//.test(mime) ? "audio or video"
    : "a binary file";
  const size = length && Number(length) >= 0 ? `${Number(length).toLocaleString("en-US")} bytes` : "size not given";
  return `${kind} (${mime || "no content type"}, ${size})`;
}
// #endregion web-fetch

// #region web-address
// Refused wherever they hide: an agent that could fetch these would read the machine's own
// services, the office network, or the cloud's instance metadata (which hands out credentials).
// Each range is one no public web server is in (IANA's special-purpose ranges). That includes
// the documentation ranges: they are for examples and never routed on the internet, so where
// one does lead somewhere, it is somewhere local.
const NOT_PUBLIC_V4 = [
  ["0.0.0.0/8", '"this network"; 0.0.0.0 reaches this machine'],
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "carrier-grade NAT; Alibaba Cloud's metadata is 100.100.100.200"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local; cloud metadata is 169.254.169.254"],
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "IETF protocol assignments"],
  ["192.0.2.0/24", "documentation"],
  ["192.88.99.0/24", "6to4 relays"],
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation"],
  ["203.0.113.0/24", "documentation"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved; 255.255.255.255 is broadcast"],
].map(([range, what]) => ({ ...parseRange(range), what }));
// Every public IPv6 address is in 2000::/3, so everything outside it is refused; these have
// a name, and those inside 2000::/3 are refused as well.
const GLOBAL_V6 = parseRange("2000::/3");
const NOT_PUBLIC_V6 = [
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["64:ff9b:1::/48", "local-use NAT64: which IPv4 address it stands for is the network's own choice"],
  ["fc00::/7", "unique local; AWS's metadata is fd00:ec2::254"],
  ["fe80::/10", "link-local"],
  ["ff00::/8", "multicast"],
  ["2001::/23", "IETF protocol assignments: Teredo tunnels, benchmarking"],
  ["2001:db8::/32", "documentation"],
  ["3fff::/20", "documentation"],
].map(([range, what]) => ({ ...parseRange(range), what }));
// IPv6 addresses that carry an IPv4 address: a connection to one reaches that IPv4 address,
// so that is the address checked. `shift`: how many bits lie right of the IPv4 address.
const CARRIERS = [
  { ...parseRange("::ffff:0:0/96"), shift: 0n, how: "written as IPv6" },
  { ...parseRange("64:ff9b::/96"), shift: 0n, how: "through NAT64" },
  { ...parseRange("2002::/16"), shift: 80n, how: "through 6to4" },
];

/** Why `address` is not on the public internet, as "in 10.0.0.0/8 (private)"; undefined when it is public. */
function notPublic(address: string): string | undefined {
  const number = addressNumber(address);
  if (isIP(address) === 4) return rangeOf(number, NOT_PUBLIC_V4);
  const carrier = CARRIERS.find((range) => inRange(number, range));
  if (carrier) {
    const ipv4 = (number >> carrier.shift) & 0xffffffffn;
    const why = rangeOf(ipv4, NOT_PUBLIC_V4);
    return why && `${dotted(ipv4)} ${carrier.how}, ${why}`;
  }
  return rangeOf(number, NOT_PUBLIC_V6) ?? (inRange(number, GLOBAL_V6) ? undefined : "outside 2000::/3, where every public IPv6 address is");
}

type Range = { first: bigint; bits: number; width: number; text: string };

function parseRange(text: string): Range {
  const [first, bits] = text.split("/");
  return { first: addressNumber(first), bits: Number(bits), width: isIP(first) === 4 ? 32 : 128, text };
}

function inRange(number: bigint, range: Range): boolean {
  const hostBits = BigInt(range.width - range.bits);
  return number >> hostBits === range.first >> hostBits;
}

function rangeOf(number: bigint, ranges: (Range & { what: string })[]): string | undefined {
  const range = ranges.find((candidate) => inRange(number, candidate));
  return range && `in ${range.text} (${range.what})`;
}

/** An IP address as one number: 32 bits for IPv4, 128 for IPv6. */
function addressNumber(address: string): bigint {
  if (isIP(address) === 4) return address.split(".").reduce((number, byte) => (number << 8n) | BigInt(byte), 0n);
  let text = address.replace(/%.*$/, ""); // a zone (fe80::1%eth0) names an interface, not an address
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text); // ::ffff:1.2.3.4: the last two groups written as IPv4
  if (tail) {
    const ipv4 = addressNumber(tail[1]);
    text = `${text.slice(0, tail.index)}${(ipv4 >> 16n).toString(16)}:${(ipv4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = text.split("::");
  const groups = (part = "") => (part ? part.split(":") : []);
  const zeros = Array<string>(8 - groups(head).length - groups(rest).length).fill("0"); // what "::" stands for
  return [...groups(head), ...zeros, ...groups(rest)].reduce((number, group) => (number << 16n) | BigInt(`0x${group}`), 0n);
}

const dotted = (ipv4: bigint) => [24n, 16n, 8n, 0n].map((shift) => (ipv4 >> shift) & 255n).join(".");

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");
let loopbackAllowed = false;

/** Tests only: let web_fetch reach loopback, so a local server can play a slow or endless site. */
export function allowLoopbackForTests(allow: boolean): void {
  loopbackAllowed = allow;
}

type Resolver = (host: string) => Promise<string[]>;
const systemResolver: Resolver = async (host) => (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
let resolveHost = systemResolver;

/** Swap how host names are resolved (the replay and the tests have no DNS); no argument restores the system's. */
export function useResolver(resolver: Resolver = systemResolver): void {
  resolveHost = resolver;
}

/** A resolver from a table of host -> address. A name not in the table does not resolve. */
export const resolverFrom =
  (hosts: Record<string, string> = {}): Resolver =>
  async (host) => {
    if (!Object.hasOwn(hosts, host)) throw new Error(`${host} is not in the scenario's hosts`);
    return [hosts[host]];
  };

/** Every address the URL's host stands for, each checked: one that is not public refuses the URL. */
async function checkedAddresses(url: URL): Promise<dns.LookupAddress[]> {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1"); // [::1] -> ::1
  // `localhost`, `localhost.` and `x.localhost` mean this machine, whatever a resolver says.
  const addresses = isIP(host) ? [host] : /^(.+\.)?localhost\.?$/i.test(host) ? ["127.0.0.1"] : await lookUp(host);
  for (const address of addresses) {
    const family = isIP(address);
    if (family === 0) throw new Error(`${host} resolved to "${address}", which is not an IP address`);
    if (loopbackAllowed && LOOPBACK.check(address, family === 6 ? "ipv6" : "ipv4")) continue;
    const why = notPublic(address);
    if (why) {
      const what = address === host ? "is" : `resolves to ${address}, which is`;
      throw new Error(`refused: ${url.hostname} ${what} ${why}; web_fetch only reaches the public internet`);
    }
  }
  return addresses.map((address) => ({ address, family: isIP(address) }));
}

async function lookUp(host: string): Promise<string[]> {
  const addresses = await resolveHost(host).catch((error: Error) => {
    throw new Error(`cannot resolve ${host}: ${error.message}`);
  });
  if (addresses.length === 0) throw new Error(`cannot resolve ${host}: no addresses`);
  return addresses;
}
// #endregion web-address

// #region html-to-text
// The page is read once, left to right, as text and tags, and never built into a tree: the
// time grows with the page's length however the tags nest, and nothing recurses. (Parsers
// that build a tree, cheerio's among them, slow down with the square of the depth: 20,000
// nested <div>s took seconds, a 10 MB page of them would take hours.)
const DROPPED = new Set(["script", "style", "nav", "footer", "noscript", "svg", "template", "iframe"]);
const BLOCKS = new Set(["address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "h1", "h2", "h3", "h4", "h5", "h6", "header", "li", "main", "ol", "p", "pre", "section", "table", "tr", "ul"]);
// The marks a reader would see: "## " before a heading, "- " before a list item.
const MARKS: Record<string, string> = { h1: "# ", h2: "## ", h3: "### ", h4: "#### ", h5: "##### ", h6: "###### ", li: "- " };
// Their content is text up to their end tag, never tags (HTML's raw text elements).
const RAW_TEXT = new Set(["script", "style", "noscript", "iframe", "textarea", "title"]);
// No content and no end tag.
const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"]);
const TAGS_PER_LOOK = 20_000; // tags read between two looks at the clock

/** HTML as a reader sees it: the title first, then one line per heading, paragraph and list item. */
async function htmlToText(html: string, signal: AbortSignal): Promise<string> {
  const page = new PageText();
  let at = 0; // where the text not read yet starts
  let tags = 0;
  for (let lt = html.indexOf("<"); lt !== -1; lt = html.indexOf("<", Math.max(at, lt + 1))) {
    if (!startsMarkup(html, lt)) continue; // as in "a < b": that "<" is text
    page.text(html.slice(at, lt));
    at = readMarkup(html, lt, page);
    // A long page takes a while: now and then, let the fetch's time limit fire, and stop if it has.
    if (++tags % TAGS_PER_LOOK === 0) {
      await new Promise((resolve) => setImmediate(resolve));
      signal.throwIfAborted();
    }
  }
  page.text(html.slice(at));
  return page.result();
}

/** "<p", "</p", "<!--", "<!doctype" and "<?xml" start markup; a "<" before anything else is text. */
function startsMarkup(html: string, lt: number): boolean {
  const next = html.charCodeAt(lt + 1);
  return isLetter(next) || next === 0x21 || next === 0x2f || next === 0x3f; // ! / ?
}

const isLetter = (code: number) => (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);

/** Read the tag, comment or doctype at `lt` into `page`; where the text after it starts. */
function readMarkup(html: string, lt: number, page: PageText): number {
  const closing = html[lt + 1] === "/";
  const nameStart = lt + (closing ? 2 : 1);
  if (!isLetter(html.charCodeAt(nameStart))) {
    // A comment ("<!-->" is a whole one too), a doctype, "<?xml ...?>" or "</ >": nothing to read.
    return html.startsWith("<!--", lt) ? after(html, "-->", lt + 2) : after(html, ">", lt + 2);
  }
  let nameEnd = nameStart;
  while (nameEnd < html.length && !" \t\n\r\f/>".includes(html[nameEnd])) nameEnd++;
  const name = html.slice(nameStart, nameEnd).toLowerCase();
  const end = endOfTag(html, nameEnd);
  if (end === -1) return html.length; // a tag cut off by the end of the page is dropped, as a browser does
  if (closing && name !== "br") {
    page.close(name);
    return end + 1;
  }
  if (!RAW_TEXT.has(name)) {
    page.open(name);
    return end + 1;
  }
  // A script, a style or the title: everything up to its end tag is its content.
  const endTag = new RegExp(`</${name}`, "ig");
  endTag.lastIndex = end + 1;
  const close = endTag.exec(html)?.index ?? html.length;
  page.raw(name, html.slice(end + 1, close));
  return close === html.length ? close : after(html, ">", close);
}

/** Where the text after the next `marker` starts; the end of the page if none comes. */
function after(html: string, marker: string, from: number): number {
  const found = html.indexOf(marker, from);
  return found === -1 ? html.length : found + marker.length;
}

/** The ">" that ends a tag, past any inside a quoted attribute value; -1 if the page ends first. */
function endOfTag(html: string, from: number): number {
  let valueNext = false; // right after "=", a quote starts a value
  for (let i = from; i < html.length; i++) {
    const c = html[i];
    if (c === ">") return i;
    if ((c === '"' || c === "'") && valueNext) {
      i = html.indexOf(c, i + 1);
      if (i === -1) return -1;
    }
    if (c === "=") valueNext = true;
    else if (!" \t\n\r\f".includes(c)) valueNext = false;
  }
  return -1;
}

/** The text a reader sees, built as the text and tags arrive. */
class PageText {
  private parts: string[] = [];
  private title: string | undefined;
  // The open elements, innermost last. `counts` says how many of each name are open, so an
  // end tag knows at once whether it closes anything; `hidden` counts the open elements that
  // hide their content, `pre` the open <pre>s.
  private stack: string[] = [];
  private counts = new Map<string, number>();
  private hidden = 0;
  private pre = 0;

  text(text: string) {
    if (this.hidden > 0 || text === "") return;
    text = decodeEntities(text);
    // A line break in the HTML source is only a space, except inside <pre>.
    this.parts.push(this.pre > 0 || !text.includes("\n") ? text : text.replace(/\n/g, " "));
  }

  raw(name: string, content: string) {
    if (name === "title") this.title ??= decodeEntities(content).replace(/\s+/g, " ").trim();
    else if (!DROPPED.has(name)) this.text(content); // a <textarea>'s text
  }

  open(name: string) {
    if (this.hidden === 0 && BLOCKS.has(name)) this.parts.push("\n");
    if (this.hidden === 0 && MARKS[name]) this.parts.push(MARKS[name]);
    if (VOID.has(name)) return;
    this.stack.push(name);
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    if (DROPPED.has(name)) this.hidden++;
    if (name === "pre") this.pre++;
  }

  /** An end tag closes its element and any still open inside it; one that matches nothing is ignored. */
  close(name: string) {
    if (!this.counts.get(name)) return;
    let closed: string;
    do {
      closed = this.stack.pop()!;
      this.counts.set(closed, this.counts.get(closed)! - 1);
      if (DROPPED.has(closed)) this.hidden--;
      if (closed === "pre") this.pre--;
      if (this.hidden === 0 && BLOCKS.has(closed)) this.parts.push("\n");
    } while (closed !== name);
  }

  result(): string {
    // Layout whitespace goes, including indentation inside <pre>, and so do empty lines: the
    // text matters here, not the look.
    const text = this.parts
      .join("")
      .replace(/[^\S\n]{2,}|[^\S\n ]/g, " ") // a run of spaces, tabs and the like becomes one space
      .replace(/ ?\n\s*/g, "\n") // spaces around a line break go, and so do empty lines
      .trim();
    return this.title ? `${this.title}\n\n${text}` : text;
  }
}

// The character references pages use most; any other is left as written. HTML's Latin-1
// names stand for U+00A0 to U+00FF, in this order.
const LATIN1 =
  "nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml";
const ENTITIES: Record<string, string> = {
  ...Object.fromEntries(LATIN1.split(" ").map((name, i) => [name, String.fromCharCode(0xa0 + i)])),
  amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", ndash: "–", mdash: "—", lsquo: "‘", rsquo: "’", ldquo: "“", rdquo: "”",
  hellip: "…", bull: "•", trade: "™", euro: "€", larr: "←", rarr: "→", minus: "−", le: "≤", ge: "≥", ne: "≠", thinsp: "\u2009",
};

/** `&amp;`, `&eacute;`, `&#233;` and `&#xE9;` as the characters they stand for. */
function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(/&(?:#(\d{1,7})|#x([\da-f]{1,6})|([a-z][a-z\d]{1,31}));/gi, (whole, decimal, hex, name) => {
    if (name) return Object.hasOwn(ENTITIES, name) ? ENTITIES[name] : whole;
    const code = decimal ? Number(decimal) : parseInt(hex, 16);
    return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : "\uFFFD";
  });
}
// #endregion html-to-text

// #region ask-user
// The loop needs no change to wait for a person: it awaits every handler, and this one
// resolves when the person answers. The question is read from the same terminal as the
// stage's prompt (lib/runtime/terminal.ts), so the two never both wait for the same line.
const MAX_OPTIONS = 4;
const ANSWER_PROMPT = "answer> ";
const NO_ONE_THERE = "no person at the terminal";
const NO_ANSWER = "the input ended or the person pressed Ctrl-C";
const noOneAnswered = (why: string) => `No one answered (${why}). Decide without them, choosing the safe option.`;

async function askUser(input: Record<string, unknown>): Promise<string> {
  const question = requireString(input, "question").trim();
  if (question === "") throw new Error('"question" is empty; write the question the person should answer');
  const options = readOptions(input.options);
  const person = terminal();
  // Waiting for someone who is not there would hang the agent: answer at once instead.
  if (!person.hasPerson) return noOneAnswered(NO_ONE_THERE);

  console.log(`\n${question}`);
  options.forEach((option, i) => console.log(`  ${i + 1}. ${option}`));
  console.log(options.length > 0 ? "  (type a number or your own answer)" : "  (type your answer)");
  while (true) {
    // fresh: a line the person typed before the question appeared stays for the stage's prompt.
    const line = await person.ask(ANSWER_PROMPT, { fresh: true });
    if (line === null) return noOneAnswered(NO_ANSWER);
    const answer = line.trim();
    if (answer === "") {
      console.log("  (an empty line is not an answer; press Ctrl-C to leave the question unanswered)");
      continue;
    }
    // A number picks an option. Anything else is the person's own words, passed on as typed.
    if (options.length > 0 && /^\d+$/.test(answer)) {
      const choice = Number(answer);
      if (choice >= 1 && choice <= options.length) return `The person chose option ${choice}: ${JSON.stringify(options[choice - 1])}`;
      console.log(`  There is no option ${answer}: type a number from 1 to ${options.length}, or your own answer.`);
      continue;
    }
    return `The person answered: ${JSON.stringify(answer)}`;
  }
}

/** The options the model gave, checked: none (an open question) or 2 to 4 distinct strings. */
function readOptions(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((option) => typeof option === "string")) {
    throw new Error('"options" must be a list of strings');
  }
  const options = value.map((option: string) => option.trim());
  if (options.length === 0) return []; // an empty list is what some models send for "no options"
  if (options.length < 2 || options.length > MAX_OPTIONS) {
    throw new Error(`"options" must hold 2 to ${MAX_OPTIONS} choices, not ${options.length}; leave it out for an open question`);
  }
  if (options.includes("")) throw new Error('"options" has an empty choice');
  // "Yes" and "yes" would look like the same choice to the person.
  const seen = new Set(options.map((option) => option.toLowerCase()));
  if (seen.size < options.length) throw new Error('"options" has the same choice twice; each must differ');
  return options;
}
// #endregion ask-user

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
  web_fetch: webFetch,
  ask_user: askUser,
};
// #endregion dispatch

// #region run-tool
/**
 * Run the tool calls of one reply, one after another, and return their results in the same
 * order, each with its call's id: the API needs an answer to every call it was sent.
 */
async function runTools(content: ContentBlock[]): Promise<ToolResultBlockParam[]> {
  const results: ToolResultBlockParam[] = [];
  for (const block of content) {
    if (block.type === "tool_use") results.push(await runTool(block));
  }
  return results;
}

/** Run one tool call. Never throws: a failure becomes a result the model can read and act on. */
async function runTool(call: ToolUseBlock): Promise<ToolResultBlockParam> {
  console.log(dim(`> ${describeCall(call)}`));
  const handler = TOOL_HANDLERS[call.name];
  let result: ToolResultBlockParam;
  if (!handler) {
    const known = Object.keys(TOOL_HANDLERS).join(", ");
    result = { type: "tool_result", tool_use_id: call.id, is_error: true, content: `Error: unknown tool "${call.name}". Tools: ${known}.` };
  } else {
    try {
      const output = await handler((call.input ?? {}) as Record<string, unknown>);
      result = { type: "tool_result", tool_use_id: call.id, content: clip(output, MAX_OUTPUT) };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      result = { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(`Error: ${message}`, MAX_OUTPUT) };
    }
  }
  console.log(dim(describeResult(result)));
  return result;
}

/**
 * Text cut to at most about `max` characters, with a note of what was cut: the head and the
 * tail when the end matters (a command's output often ends with its error), or the head.
 */
function clip(text: string, max: number, keep: "head and tail" | "head" = "head and tail"): string {
  if (text.length <= max) return text;
  if (keep === "head") return `${text.slice(0, max)} … [${text.length - max} more characters]`;
  const half = Math.floor((max - 100) / 2); // the rest is room for the marker
  return text.slice(0, half) + marker(text.length - 2 * half, text.length) + text.slice(-half);
}

// What is kept at each end of a long output; the rest of MAX_OUTPUT is room for the marker.
const KEEP = (MAX_OUTPUT - 100) / 2;
const marker = (cut: number, total: number) => `\n... [${cut} characters cut from the middle, ${total} in all] ...\n`;

function requireString(input: Record<string, unknown>, name: string): string {
  const value = input[name];
  if (typeof value !== "string") throw new Error(`"${name}" must be a string`);
  return value;
}

/**
 * An optional whole number. Left out or null means "the default" (models send null for what
 * they leave out, so every tool treats null so); anything else must be a whole number in range.
 */
function optionalInteger(input: Record<string, unknown>, name: string, range: { min: number; max?: number }): number | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  const { min, max = Number.MAX_SAFE_INTEGER } = range;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    const bounds = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
    throw new Error(`"${name}" must be a whole number ${bounds}, not ${JSON.stringify(value)}`);
  }
  return value;
}

/** The call as a person reads it: each argument by name, strings quoted, so where one ends shows. */
function describeCall(call: ToolUseBlock): string {
  const args = Object.entries((call.input ?? {}) as Record<string, unknown>);
  return `${call.name}(${args.map(([name, value]) => `${name}: ${clip(JSON.stringify(value) ?? "undefined", 120, "head")}`).join(", ")})`;
}

/** The result as a person reads it: its first lines; an error in full, since it says what went wrong. */
function describeResult(result: ToolResultBlockParam): string {
  const text = String(result.content).trimEnd() || "(empty)";
  const lines = result.is_error ? clip(text, 2000, "head").split("\n") : text.split("\n");
  const shown = result.is_error ? lines : lines.slice(0, 6).map((line) => clip(line, 160, "head"));
  if (shown.length < lines.length) shown.push(`… (${lines.length - shown.length} more lines)`);
  return shown.map((line) => `  ${line}`).join("\n");
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

    const results = await runTools(response.content);
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
/** Before an offline replay: names resolve from the scenario's `hosts`, never from the network. */
export const prepareReplay = (scenario: Scenario) => useResolver(resolverFrom(scenario.hosts));

export const main = (args = process.argv.slice(2)) =>
  runAsMain({ stage: "s05", title: "Ask the User", agentLoop, hasKey: API_KEY !== undefined, args, prepareReplay });

if (isMain(import.meta.url)) await main();
// #endregion program
