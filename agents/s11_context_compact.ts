/**
 * s11_context_compact.ts - Context Compaction
 *
 * "Make room in the context, keep the transcript on disk": old results shrink, a long talk becomes a summary.
 *
 *   agentLoop: client.messages.create({ ..., messages })   messages: the whole conversation
 *      |
 *      v   this stage's client, before each request goes out
 *   +-------------------------------------------------------------------+
 *   | 1 transcript: messages not yet on disk --> .transcripts/<t>.jsonl |
 *   | 2 auto: last usage.input_tokens > COMPACT_THRESHOLD, or `compact` |
 *   |   asked for (the tool, /compact)  --> a summary request           |
 *   |     [ m1 ... mN ]  ==>  [ summary + the latest request ]          |
 *   |     summary failed or transcript unwritable --> kept, a warning   |
 *   | 3 micro: results before the last 3 tool-result messages  ==>      |
 *   |     "[Old result cleared ... read_file again, or grep toolu_..]"  |
 *   +-------------------------------------------------------------------+
 *      |   the model receives the smaller view; `messages` stays whole
 *      v
 *   reply --> its usage.input_tokens is kept for the next check
 *
 * New since s06: regions `transcript`, `micro-compact`, `auto-compact`, `compact-tool` and
 * `client` (s06's bash, read_file, write_file and edit_file carried as they were; the loop is s06's).
 *
 *   npx tsx agents/s11_context_compact.ts       (no key: replays the recorded demo)
 *   COMPACT_THRESHOLD=50000 npx tsx agents/s11_context_compact.ts
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, closeSync, constants, existsSync, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { ContentBlock, ContentBlockParam, Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import { modelClient, type ModelClient } from "../lib/runtime/model.ts";
import { describeProviderError, isMain, optionValue, runAsMain } from "../lib/runtime/program.ts";
import type { Scenario } from "../lib/course/scenario.ts";
import { cancellable, terminal } from "../lib/runtime/terminal.ts";

// #region config
if (existsSync(".env")) process.loadEnvFile(".env");
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
const MAX_OUTPUT = 30_000; // characters the model sees from one tool call
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads the SDK at
// the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere. The loop's
// `client` (region `client`) hands its requests to this one after compacting what they carry.
const provider = modelClient({ apiKey: API_KEY, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace is the directory the program runs in. It is read at each call rather than
// stored, so the offline replay and the tests run this same code in a temporary folder; the
// system prompt is written at each request for the same reason.
const workspace = () => process.cwd();
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make. ` +
  `Old tool results are cleared from what you see, and a long conversation is replaced by a summary; every message stays in .transcripts/. ` +
  `Call compact when a large piece of work is done and its details are no longer needed.`;
// How careful to be, from `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
const APPROVAL_MODES = ["default", "auto-edit", "yolo", "plan"] as const;
type ApprovalMode = (typeof APPROVAL_MODES)[number];
const requestedMode = optionValue(process.argv, "--approval-mode") ?? process.env.APPROVAL_MODE ?? "default";
const APPROVAL_MODE = (APPROVAL_MODES as readonly string[]).includes(requestedMode) ? (requestedMode as ApprovalMode) : undefined;
// Compact once a request used more input tokens than this (COMPACT_THRESHOLD). The default
// leaves a fifth of a 200,000-token window for the summary request and what comes next.
const DEFAULT_THRESHOLD = 160_000;
const asThreshold = (text: string) => (/^\d+$/.test(text) && Number(text) >= 1000 ? Number(text) : undefined);
const requestedThreshold = (process.env.COMPACT_THRESHOLD || String(DEFAULT_THRESHOLD)).trim();
const COMPACT_THRESHOLD = asThreshold(requestedThreshold);
// #endregion config

// #region tool
/** What a tool does, in the words the approval mode decides by: reading is always allowed. */
type ToolKind = "read" | "edit" | "execute";

/** A tool's answer: what the model reads, and what the person sees (often not the same). */
interface ToolResult {
  llmContent: string;
  returnDisplay: string;
}

/** What the person is shown before they say yes or no. */
interface Confirmation {
  title: string;
  details: string;
}

type Params = Record<string, unknown>;

/** A tool as an object: it describes, validates and confirms itself, then runs. */
interface AgentTool {
  /** The name the model calls it by. */
  name: string;
  /** The name the person reads: "Shell", "ReadFile". */
  displayName: string;
  description: string;
  kind: ToolKind;
  /** JSON Schema of the parameters: the model sees it, and every call is checked against it. */
  parameterSchema: Tool["input_schema"];
  /** null when the parameters are valid; otherwise one message naming what is wrong. */
  validateToolParams(params: Params): string | null;
  /** One line the person sees before the tool runs. */
  getDescription(params: Params): string;
  /** false when there is nothing to confirm; otherwise what to show the person. */
  shouldConfirmExecute(params: Params, signal: AbortSignal): Promise<Confirmation | false>;
  /** Do the work. A failure throws an Error whose message the model reads. */
  execute(params: Params, signal: AbortSignal): Promise<ToolResult>;
}

// ajv and diff load when first needed (a tool's first call, the first change shown), not at
// start: each costs a tenth of a second or so, and a learner waits for every start. The
// tools' own schemas are checked against JSON Schema's meta-schema by the tests, not here:
// compiling the meta-schema would take longer than compiling every tool's schema.
const needed = createRequire(import.meta.url);
let ajv: Ajv | undefined;
const validator = () => (ajv ??= new (needed("ajv") as typeof import("ajv")).Ajv({ allErrors: true, validateSchema: false }));

/** A tool from its parts; its parameters are checked against its schema, compiled at its first call. */
function defineTool(spec: Omit<AgentTool, "validateToolParams" | "shouldConfirmExecute"> & Partial<Pick<AgentTool, "shouldConfirmExecute">>): AgentTool {
  let validate: ValidateFunction | undefined;
  return {
    shouldConfirmExecute: async () => false,
    ...spec,
    validateToolParams: (params) => {
      validate ??= validator().compile(spec.parameterSchema);
      return validate(params) ? null : schemaErrors(validate.errors ?? []);
    },
  };
}

/** ajv's findings as sentences the model can act on: `"path" must be a string`. */
function schemaErrors(errors: ErrorObject[]): string {
  return errors
    .map((error) => {
      const field = error.instancePath ? `"${error.instancePath.slice(1).replaceAll("/", ".")}"` : "the input";
      const { params } = error;
      if (error.keyword === "required") return `"${params.missingProperty}" is required`;
      if (error.keyword === "additionalProperties") return `"${params.additionalProperty}" is not a parameter of this tool`;
      if (error.keyword === "type") return `${field} must be ${/^[aeiou]/.test(params.type) ? "an" : "a"} ${params.type}`;
      if (error.keyword === "minimum") return `${field} must be at least ${params.limit}`;
      if (error.keyword === "maximum") return `${field} must be at most ${params.limit}`;
      if (error.keyword === "enum") return `${field} must be one of ${params.allowedValues.join(", ")}`;
      return `${field} ${error.message}`;
    })
    .join("; ");
}
// #endregion tool

// #region registry
/** Every tool the agent has, by name. The model is shown what the registry holds, nothing else. */
class ToolRegistry {
  private tools = new Map<string, AgentTool>();

  registerTool(tool: AgentTool): void {
    if (this.tools.has(tool.name)) throw new Error(`a tool named "${tool.name}" is registered already`);
    this.tools.set(tool.name, tool);
  }

  getTool(name: string): AgentTool | undefined {
    return this.tools.get(name);
  }

  getAllTools(): AgentTool[] {
    return [...this.tools.values()];
  }

  /** What the model sees: each tool's name, description and parameter schema. */
  getFunctionDeclarations(): Tool[] {
    return this.getAllTools().map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameterSchema }));
  }
}

export const registry = new ToolRegistry();
// #endregion registry

// #region bash
// A denylist is advice, not a boundary: `rm -r -f /` or a script file slips past it.
// The real answer is asking a person before running a command: the approval step below.
const DENYLIST = ["rm -rf /", "sudo ", "shutdown", "reboot", "> /dev/sd", "mkfs"];
const DEFAULT_TIMEOUT = 120;
const MAX_TIMEOUT = 600;

const bashTool = defineTool({
  name: "bash",
  displayName: "Shell",
  kind: "execute",
  description: "Run a shell command in the workspace and return its output and exit code. stdin is closed, so commands must not wait for input.",
  parameterSchema: {
    type: "object",
    properties: {
      command: { type: "string", description: "The command, run with bash -c." },
      timeout: { type: "integer", minimum: 1, maximum: MAX_TIMEOUT, description: `Seconds before the command is ended (default ${DEFAULT_TIMEOUT}).` },
    },
    required: ["command"],
    additionalProperties: false,
  },
  getDescription: (params) => String(params.command),
  shouldConfirmExecute: async (params) => ({ title: "Run this command?", details: String(params.command) }),
  async execute(params, signal) {
    const command = String(params.command);
    const blocked = DENYLIST.find((pattern) => command.includes(pattern));
    if (blocked) throw new Error(`refused: the command contains "${blocked.trim()}", which this agent does not run`);
    const { output, code } = await runCommand(command, Number(params.timeout ?? DEFAULT_TIMEOUT), signal);
    const text = output || "(no output)";
    return {
      llmContent: code === 0 ? text : `${text.replace(/\n$/, "")}\n[exit code ${code ?? "killed"}]`,
      returnDisplay: `${text.replace(/\n$/, "")}\n(exit code ${code ?? "killed"})`,
    };
  },
});

/** Run a command to its end, its time limit, or the signal; nothing it started outlives it. */
function runCommand(command: string, seconds: number, signal: AbortSignal): Promise<{ output: string; code: number | null }> {
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
    const stop = (why: string) => {
      clearTimeout(timer);
      endProcesses(`${mark}\0`, [child.pid!]);
      reject(new Error(`${why}; the command and everything it started were ended. Output so far:\n${output.text()}`));
    };
    const timer = setTimeout(() => stop(`timed out after ${seconds}s`), seconds * 1000);
    const onAbort = () => stop("cancelled by the user");
    signal.addEventListener("abort", onAbort, { once: true });
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
      signal.removeEventListener("abort", onAbort);
      let finished = false;
      const done = () => {
        if (finished) return;
        finished = true;
        clearTimeout(grace);
        child.stdout.destroy();
        child.stderr.destroy();
        child.unref();
        resolve({ output: output.text(), code });
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

const readFileTool = defineTool({
  name: "read_file",
  displayName: "ReadFile",
  kind: "read",
  description: "Read a text file in the workspace.",
  parameterSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "Path relative to the workspace." },
      limit: { type: "integer", minimum: 1, description: "Read at most this many lines." },
    },
    required: ["path"],
    additionalProperties: false,
  },
  getDescription: (params) => String(params.path),
  async execute(params) {
    const given = String(params.path);
    const lines = readText(safePath(given), given).split("\n");
    const limit = params.limit === undefined ? lines.length : Number(params.limit);
    const shown = limit >= lines.length ? lines.join("\n") : `${lines.slice(0, limit).join("\n")}\n... (${lines.length - limit} more lines)`;
    // The model needs the text; the person only needs to know what was read.
    return { llmContent: shown, returnDisplay: `${given}: ${Math.min(limit, lines.length)} of ${lines.length} lines` };
  },
});

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
const writeFileTool = defineTool({
  name: "write_file",
  displayName: "WriteFile",
  kind: "edit",
  description: "Create or overwrite a file in the workspace with the given content. Missing folders are created.",
  parameterSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "Path relative to the workspace." },
      content: { type: "string", description: "The whole new content of the file." },
    },
    required: ["path", "content"],
    additionalProperties: false,
  },
  getDescription: (params) => String(params.path),
  async shouldConfirmExecute(params) {
    const change = proposeWrite(params);
    return { title: `${change.before === undefined ? "Create" : "Overwrite"} ${change.given}?`, details: diffOf(change) };
  },
  async execute(params) {
    const change = proposeWrite(params);
    writeAtomically(change.file, change.after, change.given, { createFolders: true });
    return { llmContent: `Wrote ${Buffer.byteLength(change.after)} bytes to ${change.given}`, returnDisplay: diffOf(change) };
  },
});

/** A change to one file, before it is made: what the person approves and what is written. */
interface FileChange {
  given: string;
  file: string;
  /** The text before, or undefined for a new file. */
  before: string | undefined;
  after: string;
}

function proposeWrite(params: Params): FileChange {
  const given = String(params.path);
  const file = safePath(given);
  const before = existsSync(file) && !statSync(file).isDirectory() ? readText(file, given) : undefined;
  return { given, file, before, after: String(params.content) };
}

/** The change as a unified diff (the `diff` package), coloured at a terminal: what the person checks. */
function diffOf(change: FileChange): string {
  const patch = (needed("diff") as typeof import("diff")).createTwoFilesPatch(change.given, change.given, change.before ?? "", change.after, "", "", { context: 2 });
  const lines = patch.split("\n").slice(2).filter((line) => line !== ""); // without "Index:" and "===="
  return lines.map((line) => (line.startsWith("+") && !line.startsWith("+++") ? green(line) : line.startsWith("-") && !line.startsWith("---") ? red(line) : line)).join("\n");
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
const editFileTool = defineTool({
  name: "edit_file",
  displayName: "Edit",
  kind: "edit",
  description:
    "Replace old_string with new_string in a file. old_string must match exactly, indentation included, and occur once: if it occurs more often, include more surrounding lines, or set replace_all.",
  parameterSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "Path relative to the workspace." },
      old_string: { type: "string", description: "The exact text to replace, as it is in the file." },
      new_string: { type: "string", description: "The text to put in its place (must differ from old_string)." },
      replace_all: { type: "boolean", description: "Replace every occurrence instead of requiring one (default false)." },
    },
    required: ["path", "old_string", "new_string"],
    additionalProperties: false,
  },
  getDescription: (params) => String(params.path),
  async shouldConfirmExecute(params) {
    const change = proposeEdit(params);
    return { title: `Edit ${change.given}?`, details: diffOf(change) };
  },
  async execute(params) {
    const change = proposeEdit(params);
    writeAtomically(change.file, change.after, change.given);
    const count = change.count;
    return { llmContent: `Edited ${change.given}: replaced ${count} occurrence${count === 1 ? "" : "s"}`, returnDisplay: diffOf(change) };
  },
});

/** The edit, worked out but not written; every refusal happens here, before anything changes. */
function proposeEdit(params: Params): FileChange & { count: number } {
  const given = String(params.path);
  const oldString = String(params.old_string);
  const newString = String(params.new_string);
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
  if (count > 1 && params.replace_all !== true) {
    throw new Error(
      `old_string occurs ${count} times in ${given}. Include more of the surrounding lines so it matches exactly once, ` +
        `or set replace_all to true to change all ${count}. The file is unchanged`,
    );
  }
  // join(), not String.replace: a "$&" or "$1" in new_string is inserted as typed.
  return { given, file, before: content, after: pieces.join(replacement), count };
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

// #region transcript
/**
 * What the harness knows of one conversation. The loop passes the same `messages` array to
 * every request of a session, so that array names the conversation (a WeakMap key).
 */
interface Conversation {
  /** The transcript file, relative to the workspace: `.transcripts/<time>.jsonl`. */
  transcript?: string;
  /** The workspace the transcript belongs to: where the conversation's first request was made. */
  home?: string;
  /** How many of the conversation's messages are in the transcript. */
  written: number;
  /** Why the transcript could not be written last time (the person is told once). */
  writeProblem?: string;
  /** The model is sent `summary` in place of messages[0 .. cut). */
  cut: number;
  summary?: MessageParam;
  /** The input tokens of the last request, from its reply's usage. */
  contextTokens: number;
}

const conversations = new WeakMap<MessageParam[], Conversation>();

function conversationOf(messages: MessageParam[]): Conversation {
  let conversation = conversations.get(messages);
  if (!conversation) conversations.set(messages, (conversation = { written: 0, cut: 0, contextTokens: 0 }));
  return conversation;
}

/**
 * Append every message not yet in the transcript (and `extra`), one JSON message per line.
 * This runs before each request, so whatever the model is sent is on disk before anything is
 * taken out of what it sees. The file is only appended to. false, and a warning, if it fails.
 */
function saveTranscript(conversation: Conversation, messages: MessageParam[], extra: MessageParam[] = []): boolean {
  const lines = [...messages.slice(conversation.written), ...extra].map((message) => `${JSON.stringify(message)}\n`).join("");
  try {
    // The transcript's name is relative, so it is written only in the conversation's own
    // workspace: if the working directory changes under a running conversation (a test that
    // ends while its replay runs on goes back to where it started), the messages must not
    // follow it there. They wait, and are all written once the workspace is back.
    const here = realpathSync(workspace());
    conversation.home ??= here;
    if (here !== conversation.home) throw new Error(`the working directory is ${here}, not this conversation's workspace ${conversation.home}`);
    conversation.transcript ??= newTranscriptName();
    // Checked at every write: a .transcripts that became a link to elsewhere is refused.
    const file = safePath(conversation.transcript);
    mkdirSync(path.dirname(file), { recursive: true });
    appendFileSync(file, lines);
    conversation.written = messages.length;
    conversation.writeProblem = undefined;
    return true;
  } catch (error) {
    const problem = error instanceof Error ? error.message : String(error);
    if (conversation.writeProblem === undefined) console.log(`[warning] the transcript cannot be written (${problem}); nothing is compacted until it can be, so nothing is lost`);
    conversation.writeProblem = problem;
    return false;
  }
}

function newTranscriptName(): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  let name = `.transcripts/${stamp}.jsonl`;
  for (let n = 2; existsSync(path.join(workspace(), name)); n++) name = `.transcripts/${stamp}-${n}.jsonl`;
  return name;
}
// #endregion transcript

// #region micro-compact
const KEEP_RESULTS = 3; // the latest tool-result messages, always sent whole

/**
 * What the model is sent of the conversation: the summary in place of the compacted part,
 * then the messages since, with every tool result older than the last three tool-result
 * messages replaced by a placeholder. `messages` itself never changes: it is the record.
 */
function contextFor(conversation: Conversation, messages: MessageParam[]): MessageParam[] {
  const calls = new Map<string, ToolUseBlock>();
  for (const message of messages) for (const block of blocksOf(message)) if (block.type === "tool_use") calls.set(block.id, block as ToolUseBlock);
  const kept = messages.slice(conversation.cut);
  const withResults = kept.flatMap((message, i) => (blocksOf(message).some((block) => block.type === "tool_result") ? [i] : []));
  const old = new Set(withResults.slice(0, -KEEP_RESULTS));
  const view = kept.map((message, i): MessageParam => {
    if (!old.has(i)) return message;
    // Only a message already in the transcript can be pointed to there.
    const onDisk = conversation.cut + i < conversation.written ? conversation.transcript : undefined;
    return { role: "user", content: blocksOf(message).map((block) => (block.type === "tool_result" ? cleared(block, calls.get(block.tool_use_id), onDisk) : block)) };
  });
  if (!conversation.summary) return view;
  // The summary is a user message: a prompt right after it joins it, so the roles alternate.
  const [first, ...rest] = view;
  if (first?.role !== "user") return [conversation.summary, ...view];
  return [{ role: "user", content: [...blocksOf(conversation.summary), ...blocksOf(first)] }, ...rest];
}

/** A result's placeholder: which call it answered, and how to get the content back. Kept when shorter. */
function cleared(result: ToolResultBlockParam, call: ToolUseBlock | undefined, transcript: string | undefined): ToolResultBlockParam {
  const size = typeof result.content === "string" ? result.content.length : JSON.stringify(result.content ?? "").length;
  const name = call?.name ?? "a tool";
  const again = registry.getTool(name)?.kind === "read" ? `Call ${name} again for the current content` : "Run it again only if that is safe";
  const asItWas = transcript ? `, or see it as it was: grep -F '${result.tool_use_id}' ${transcript}` : "";
  const placeholder = `[Old result cleared to save context: ${name} ${clip(JSON.stringify(call?.input ?? {}), 120, "head")}, ${size} characters. ${again}${asItWas}.]`;
  return placeholder.length < size ? { ...result, content: placeholder } : result;
}

const blocksOf = (message: MessageParam): ContentBlockParam[] =>
  typeof message.content === "string" ? [{ type: "text", text: message.content }] : (message.content as ContentBlockParam[]);
// #endregion micro-compact

// #region auto-compact
// The threshold in force: COMPACT_THRESHOLD, or a replay's own (prepareReplay).
let compactThreshold = COMPACT_THRESHOLD ?? DEFAULT_THRESHOLD;

/** The input tokens of a request, from its reply: what the API counted, cached parts included. */
const inputTokens = (usage: Message["usage"] | undefined) =>
  usage ? usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0) : 0;

const SUMMARY_REQUEST =
  "Summarise the conversation so far: your summary will replace every message above, and the work must be able to go on from it alone. " +
  "Keep what the person asked for (their words where they matter), decisions and why, the files read or changed (paths) and how, the commands run and what they showed, " +
  "errors and how they were solved, what is done, what is in progress and the next step. Leave out file contents and output that can be read again. Answer in plain text.";

/**
 * Replace what the model sees of `messages` with a summary the model writes. Everything is in
 * the transcript first; when it cannot be, or the summary request fails, nothing changes and
 * the person is told. It runs between two requests, at the end of the conversation, where
 * every tool_use already has its tool_result: a pair can never be split.
 */
async function compact(messages: MessageParam[], why: string, focus?: string): Promise<boolean> {
  const conversation = conversationOf(messages);
  const keep = "the conversation is sent as it is";
  if (!saveTranscript(conversation, messages)) {
    console.log(`[warning] not compacted: the transcript cannot be written (${conversation.writeProblem}); ${keep}`);
    return false;
  }
  console.log(dim(`[compacting the context: ${why}]`));
  let summary: string;
  try {
    const instruction = focus ? `${SUMMARY_REQUEST} Keep in particular: ${focus}` : SUMMARY_REQUEST;
    // The loop's system prompt and tools (a request holding tool_use blocks must declare its
    // tools, and an unchanged start can come from the prompt cache), but no tool may be called.
    const request = { model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, tool_choice: { type: "none" as const } };
    const reply = await provider.messages.create({ ...request, messages: withText(contextFor(conversation, messages), instruction) });
    summary = reply.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n").trim();
    if (reply.stop_reason === "max_tokens") throw new Error(`the summary was cut off at ${MAX_TOKENS} tokens`);
    if (reply.stop_reason !== "end_turn" || summary === "") throw new Error("the model wrote no summary");
  } catch (error) {
    console.log(`[warning] not compacted: the summary request failed (${describeProviderError(error).replace(/^\[error\] /, "").replace(/\.$/, "")}); ${keep}`);
    return false;
  }
  const message = summaryMessage(summary, conversation.transcript!, messages);
  if (!saveTranscript(conversation, messages, [message])) {
    console.log(`[warning] not compacted: the summary cannot be added to the transcript; ${keep}`);
    return false;
  }
  const replaced = messages.length - conversation.cut + (conversation.summary ? 1 : 0);
  Object.assign(conversation, { cut: messages.length, summary: message, contextTokens: 0 });
  console.log(dim(`[compacted: ${replaced} messages became a summary of ${summary.length} characters; every message is in ${conversation.transcript}]`));
  return true;
}

/** The summary as the model will read it, with where the rest is and, mid-task, what to carry on with. */
function summaryMessage(summary: string, transcript: string, messages: MessageParam[]): MessageParam {
  const parts = [
    `[The conversation so far was compacted to make room. This summary replaces it; every message is kept, one JSON message per line, in ${transcript} (search it with grep for an exact detail).]`,
    summary,
  ];
  // The last message is the person's or a tool's: the work was not finished.
  const request = [...messages].reverse().find((m) => m.role === "user" && typeof m.content === "string")?.content;
  if (messages.at(-1)?.role === "user" && request) parts.push(`The person's latest request, word for word:\n${request}\n\nCarry on from where the work stopped.`);
  return { role: "user", content: [{ type: "text", text: parts.join("\n\n") }] };
}

/** The messages with `text` added to the last user message (or as one), so the roles still alternate. */
function withText(messages: MessageParam[], text: string): MessageParam[] {
  const last = messages.at(-1);
  if (last?.role !== "user") return [...messages, { role: "user", content: [{ type: "text", text }] }];
  return [...messages.slice(0, -1), { role: "user", content: [...blocksOf(last), { type: "text", text }] }];
}
// #endregion auto-compact

// #region compact-tool
// The model (this tool) or the person (/compact) asks; the tool's compaction happens before the
// next request, once every call of the reply has its result. Compacting inside the tool would
// summarise the very tool_use the loop is about to answer, leaving its result without a call.
let compactionAsked: { focus?: string } | undefined;

const compactTool = defineTool({
  name: "compact",
  displayName: "Compact",
  // It changes no file and runs no command, so no approval mode stops it (plan mode included).
  kind: "read",
  description:
    "Make room in your context: before your next request the conversation so far is replaced by a summary you write, and every message stays in .transcripts/. " +
    "Use it when a large piece of work is done and its details are no longer needed.",
  parameterSchema: { type: "object", properties: { focus: { type: "string", description: "What the summary must keep in particular (optional)." } }, additionalProperties: false },
  getDescription: (params) => (params.focus ? `keeping ${String(params.focus)}` : "the conversation so far"),
  async execute(params) {
    compactionAsked = { focus: params.focus === undefined ? undefined : String(params.focus) };
    const llmContent = "Compaction asked for: the conversation is summarised before your next request. If you can still read this, the summary could not be made and nothing was compacted.";
    return { llmContent, returnDisplay: "the conversation will be summarised before the next request" };
  },
});

/** `/compact [focus]` at the prompt: between two turns, so it can happen at once. */
async function compactCommand(history: MessageParam[], focus: string): Promise<void> {
  if (history.length === conversationOf(history).cut) return console.log("[nothing to compact: the conversation has nothing new since its last summary]");
  await compact(history, "asked for with /compact", focus || undefined);
}
// #endregion compact-tool

// #region tools
for (const tool of [bashTool, readFileTool, writeFileTool, editFileTool, compactTool]) registry.registerTool(tool);
/** What the model sees, from the registry. */
export const TOOLS: Tool[] = registry.getFunctionDeclarations();
// #endregion tools

// #region approval
// Tools the person allowed for the rest of the session ("a: yes, and do not ask again").
const alwaysAllowed = new Set<string>();
const ANSWER_KEYS = "y: yes   a: yes, and do not ask again this session   n: no   or type what to do instead";

// `shown`: what the person saw and approved, so it is not printed a second time.
type Verdict = { run: true; shown?: string } | { run: false; why: string };

/** Step 6: the tool says what it would do; the approval mode says whether a person must agree. */
async function approve(tool: AgentTool, params: Params, signal: AbortSignal): Promise<Verdict> {
  if (APPROVAL_MODE === "plan" && tool.kind !== "read") {
    return { run: false, why: `Not run: the agent is in plan mode, where it may read but not change files or run commands. Describe the change instead.` };
  }
  if (!mustAsk(tool) || alwaysAllowed.has(tool.name)) return { run: true };
  const confirmation = await tool.shouldConfirmExecute(params, signal);
  if (!confirmation) return { run: true };
  const person = terminal();
  // Waiting for someone who is not there would hang the agent, and going ahead would be a
  // silent yes: refuse at once and say why.
  if (!person.hasPerson) {
    return { run: false, why: `Not run: ${tool.name} needs a person's approval (approval mode ${APPROVAL_MODE}) and no one is at the terminal.` };
  }
  console.log(`\n${confirmation.title}\n${indent(confirmation.details)}\n  ${ANSWER_KEYS.replace("again", `again for ${tool.name}`)}`);
  while (true) {
    const line = await person.ask("allow? ", { fresh: true });
    if (line === null) return { run: false, why: "Not run: the person gave no answer (Ctrl-C or end of input)." };
    const answer = line.trim();
    if (/^(y|yes)$/i.test(answer)) return { run: true, shown: confirmation.details };
    if (/^(a|always)$/i.test(answer)) {
      alwaysAllowed.add(tool.name);
      return { run: true, shown: confirmation.details };
    }
    if (/^(n|no)$/i.test(answer)) return { run: false, why: "Not run: the person said no." };
    if (answer !== "") return { run: false, why: `Not run: the person said no, and said: ${JSON.stringify(answer)}` };
  }
}

/** Reading never asks. default asks before edits and commands; auto-edit only before commands. */
function mustAsk(tool: AgentTool): boolean {
  if (tool.kind === "read" || APPROVAL_MODE === "yolo") return false;
  if (APPROVAL_MODE === "auto-edit") return tool.kind === "execute";
  return true;
}
// #endregion approval

// #region run-tool
/**
 * The calls of one reply. Calls that only read, side by side, run at the same time: reading
 * cannot conflict. Edits and commands run one at a time, in order, since each may depend on
 * the one before. The results go back in call order, each with its call's id.
 */
async function runTools(content: ContentBlock[]): Promise<ToolResultBlockParam[]> {
  const calls = content.filter((block): block is ToolUseBlock => block.type === "tool_use");
  const results: ToolResultBlockParam[] = [];
  for (const batch of batches(calls)) results.push(...(await Promise.all(batch.map(runTool))));
  return results;
}

/** Consecutive read-kind calls go in one batch; every other call is a batch of its own. */
function batches(calls: ToolUseBlock[]): ToolUseBlock[][] {
  const isRead = (call: ToolUseBlock) => registry.getTool(call.name)?.kind === "read";
  const batches: ToolUseBlock[][] = [];
  for (const call of calls) {
    const last = batches.at(-1);
    if (last && isRead(call) && last.every(isRead)) last.push(call);
    else batches.push([call]);
  }
  return batches;
}

/** One call through the nine steps. Never throws: every failure is a result the model can act on. */
export async function runTool(call: ToolUseBlock): Promise<ToolResultBlockParam> {
  // 1-2. The model asked for a tool by name; the loop hands the call over.
  const failed = (message: string): ToolResultBlockParam => {
    console.log(dim(indent(clip(message, 2000, "head"))));
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(message, MAX_OUTPUT) };
  };
  // 3. Look the tool up.
  const tool = registry.getTool(call.name);
  if (!tool) console.log(dim(`> ${call.name}`));
  if (!tool) return failed(`Error: unknown tool "${call.name}". Tools: ${registry.getAllTools().map((t) => t.name).join(", ")}.`);
  // 4. Validate. Models send null for what they leave out: it means "not given", for every tool.
  const params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  const problem = tool.validateToolParams(params);
  if (problem) {
    console.log(dim(`> ${tool.displayName} ${clip(JSON.stringify(params), 120, "head")}`));
    return failed(`Error: ${call.name} was not run: ${problem}.`);
  }
  // 5. Describe, in one line, what is about to happen.
  console.log(dim(`> ${tool.displayName} ${clip(tool.getDescription(params).split("\n")[0], 120, "head")}`));
  const controller = new AbortController();
  try {
    // 6. Confirm: the approval mode, and the person when the mode asks for one.
    const verdict = await approve(tool, params, controller.signal);
    if (!verdict.run) return failed(verdict.why);
    // 7. Execute, with a signal: Ctrl-C cancels this tool, not the agent.
    const result = await cancellable(() => controller.abort(), () => tool.execute(params, controller.signal));
    // 8. llmContent goes to the model...
    const toModel: ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: clip(result.llmContent, MAX_OUTPUT) };
    // 9. ...and returnDisplay to the person (unless they have just seen it, approving it).
    if (result.returnDisplay !== verdict.shown) console.log(dim(indent(firstLines(result.returnDisplay, 12))));
    return toModel;
  } catch (error) {
    // Errors go back as is_error, so the model knows the call failed and why.
    if (controller.signal.aborted) return failed("Error: cancelled by the user (Ctrl-C); the tool was stopped.");
    return failed(`Error: ${error instanceof Error ? error.message : String(error)}`);
  }
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

/** The first lines of a display, each kept short, and how many more there were. */
function firstLines(text: string, count: number): string {
  const lines = text.trimEnd().split("\n");
  const shown = lines.slice(0, count).map((line) => clip(line, 200, "head"));
  return lines.length > count ? [...shown, `… (${lines.length - count} more lines)`].join("\n") : shown.join("\n");
}

const indent = (text: string) => text.replace(/^/gm, "  ");
const colour = (code: number) => (text: string) => (process.stdout.isTTY ? `\x1b[${code}m${text}\x1b[0m` : text);
const dim = colour(2);
const green = colour(32);
const red = colour(31);
// #endregion run-tool

// #region client
/**
 * The client the loop calls: it gets the loop's own `messages` (the whole conversation) and
 * returns the model's reply, like the SDK's. In between, in this order: the transcript, a
 * compaction when one is due, and the request with the smaller view of the conversation.
 */
const client: ModelClient = {
  messages: {
    async create(request, options) {
      const { messages } = request;
      const conversation = conversationOf(messages);
      saveTranscript(conversation, messages);
      const asked = compactionAsked;
      compactionAsked = undefined;
      const used = conversation.contextTokens;
      if (asked) await compact(messages, "the model asked for it", asked.focus);
      else if (used > compactThreshold) await compact(messages, `the last request used ${used} input tokens, over COMPACT_THRESHOLD (${compactThreshold})`);
      const response = await provider.messages.create({ ...request, messages: contextFor(conversation, messages) }, options);
      conversation.contextTokens = inputTokens(response.usage);
      return response;
    },
  },
};
// #endregion client

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
const modeProblem = APPROVAL_MODE ? undefined : `the approval mode "${requestedMode}" does not exist; choose one of ${APPROVAL_MODES.join(", ")}`;
const thresholdProblem = COMPACT_THRESHOLD ? undefined : `COMPACT_THRESHOLD "${requestedThreshold}" is not a number of tokens: give a whole number, at least 1000 (the default is ${DEFAULT_THRESHOLD})`;

/** A replay compacts where its recording did: at the scenario's `compactThreshold`, if it has one. */
export function prepareReplay(scenario: Scenario & { compactThreshold?: number }): void {
  const given = scenario.compactThreshold;
  const threshold = given === undefined ? (COMPACT_THRESHOLD ?? DEFAULT_THRESHOLD) : asThreshold(String(given));
  if (threshold === undefined) throw new Error(`the scenario's compactThreshold (${given}) is not a whole number of at least 1000`);
  compactThreshold = threshold;
}

export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s11",
    title: "Context Compaction",
    agentLoop,
    hasKey: API_KEY !== undefined,
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem ?? thresholdProblem,
    prepareReplay,
    slashCommands: { "/compact": compactCommand },
  });

if (isMain(import.meta.url)) await main();
// #endregion program
