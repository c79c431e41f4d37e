/**
 * s09_todo_write.ts - Todo Write
 *
 * "A plan written down is a plan kept": the model writes its plan, the harness keeps it in view.
 *
 *   reply 1   todo_write({ todos: [the whole list] })
 *      |        rules: at most 20 items, ids unique, content not empty, at most one in_progress
 *      |        broken --> is_error naming the rule; the old list stays
 *      v
 *   +------------------------------------------------------------------+
 *   | the plan (one per session)   [x] add slugify                     |
 *   |                              [>] test it      <- one in_progress |
 *   |                              [ ] run the test                    |
 *   | the person sees this checklist; the model gets "Todo list saved" |
 *   +------------------------------------------------------------------+
 *      |   every reply counts (runTools, or endTurn when it ends the turn)
 *   reply 2: 1    reply 3: 2    reply 4: 3 without a new list, items open
 *                                  |
 *                                  v
 *   user: [ tool_result(call 4a), tool_result(call 4b, "...output...\n\n<reminder>...") ]
 *          the reminder rides inside the last result: never a message of its own
 *
 * New since s06: a todo list the model keeps, and a reminder when it forgets; regions `todo`
 * and `reminder`, and one line each in `run-tool` (runTools) and `end-turn` (endTurn). The
 * parent is s06 itself: the registry with bash, read_file, write_file and edit_file.
 *
 *   npx tsx agents/s09_todo_write.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s09_todo_write.ts --approval-mode auto-edit
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, constants, existsSync, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { ContentBlock, Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, optionValue, runAsMain } from "../lib/runtime/program.ts";
import { cancellable, terminal } from "../lib/runtime/terminal.ts";

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
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make. ` +
  `For work of three steps or more, write the plan first with todo_write; keep one item in_progress, and send the list again as soon as an item is done.`;
// How careful to be, from `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
const APPROVAL_MODES = ["default", "auto-edit", "yolo", "plan"] as const;
type ApprovalMode = (typeof APPROVAL_MODES)[number];
const requestedMode = optionValue(process.argv, "--approval-mode") ?? process.env.APPROVAL_MODE ?? "default";
const APPROVAL_MODE = (APPROVAL_MODES as readonly string[]).includes(requestedMode) ? (requestedMode as ApprovalMode) : undefined;
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

// #region todo
// The model's plan, kept by the harness for the whole session, across turns. The model sends
// the whole list each time and it replaces the one before: there is no "add" or "tick" to get
// wrong, and the list is exactly what the model last sent, or what it had before a refusal.
type TodoStatus = "pending" | "in_progress" | "completed";

interface Todo {
  id: string;
  content: string;
  status: TodoStatus;
}

const MAX_TODOS = 20;
let todos: Todo[] = [];

/** The rules a new list must keep, by the name a refusal gives: `broken` says how a list breaks one. */
const TODO_RULES: { rule: string; broken: (list: Todo[]) => string | undefined }[] = [
  { rule: `at most ${MAX_TODOS} items`, broken: (list) => (list.length > MAX_TODOS ? `the list has ${list.length}` : undefined) },
  {
    rule: "ids unique",
    broken: (list) => {
      const again = list.find((item, i) => list.findIndex((other) => other.id === item.id) !== i);
      return again && `the id "${again.id}" is used more than once`;
    },
  },
  {
    rule: "content not empty",
    broken: (list) => {
      const empty = list.find((item) => item.content.trim() === "");
      return empty && `item "${empty.id}" has no content`;
    },
  },
  {
    // One thing at a time: a person reading the list knows what the agent is doing now.
    rule: "at most one item in_progress",
    broken: (list) => {
      const busy = list.filter((item) => item.status === "in_progress").map((item) => `"${item.id}"`);
      return busy.length > 1 ? `${busy.length} items are in_progress (${busy.join(", ")})` : undefined;
    },
  },
];

const todoWriteTool = defineTool({
  name: "todo_write",
  displayName: "TodoWrite",
  // "read": it changes no file and runs no command, only the agent's own plan, so no approval
  // mode stops it (planning is what plan mode is for), and s06's approval code stays as it was.
  kind: "read",
  description:
    "Write your plan for a task of three steps or more as a todo list, and keep it current. Send the whole list every time: it replaces the list before. " +
    `Mark an item in_progress before you start it (one at a time) and completed as soon as it is done. At most ${MAX_TODOS} items, ids unique, content not empty. An empty list clears it.`,
  parameterSchema: {
    type: "object",
    properties: {
      todos: {
        type: "array",
        description: "The whole list, in the order of the work.",
        items: {
          type: "object",
          properties: {
            id: { type: "string", description: "A short id, unique in the list." },
            content: { type: "string", description: "What to do, in a few words." },
            status: { type: "string", enum: ["pending", "in_progress", "completed"] },
          },
          required: ["id", "content", "status"],
          additionalProperties: false,
        },
      },
    },
    required: ["todos"],
    additionalProperties: false,
  },
  getDescription: (params) => summary(params.todos as Todo[]),
  async execute(params) {
    const list = (params.todos as Todo[]).map(({ id, content, status }) => ({ id, content, status }));
    const broken = TODO_RULES.flatMap(({ rule, broken }) => {
      const how = broken(list);
      return how ? [`"${rule}" (${how})`] : [];
    });
    // A refused list changes nothing: the model reads which rule, and the list it still has.
    if (broken.length > 0) {
      throw new Error(`the list was refused: it breaks the rule ${broken.join(" and the rule ")}. The list is unchanged:\n${checklist(todos, { ids: true })}`);
    }
    todos = list;
    // The person reads the plan; the model, which wrote it, needs only to know it was kept.
    return { llmContent: todos.length === 0 ? "Todo list cleared." : `Todo list saved: ${summary(todos)}.`, returnDisplay: checklist(todos) };
  },
});

const MARKS: Record<TodoStatus, string> = { pending: "[ ]", in_progress: "[>]", completed: "[x]" };

/** The list as a checklist, one line per item in the model's order; with ids for the model. */
function checklist(list: Todo[], { ids = false } = {}): string {
  if (list.length === 0) return "(the todo list is empty)";
  return list.map((item) => `${MARKS[item.status]} ${ids ? `${item.id}: ` : ""}${item.content.replace(/\s+/g, " ").trim()}`).join("\n");
}

/** "3 items: 1 completed, 1 in_progress, 1 pending" */
function summary(list: Todo[]): string {
  const count = (status: TodoStatus) => list.filter((item) => item.status === status).length;
  if (list.length === 0) return "an empty list";
  if (count("completed") === list.length) return `all ${list.length} item${list.length === 1 ? "" : "s"} completed`;
  return `${list.length} item${list.length === 1 ? "" : "s"}: ${count("completed")} completed, ${count("in_progress")} in_progress, ${count("pending")} pending`;
}

const openItems = () => todos.filter((item) => item.status !== "completed");

/** The list as it stands, for tests and the exercise's checks (the model reads it only as it wrote it). */
export const todoList = (): readonly Todo[] => todos;
// #endregion todo

// #region reminder
// Deep in a task, a model forgets its plan: the list still says "write the test" long after
// the test passed. So the harness counts the model's replies since the list last changed;
// after REMIND_AFTER replies in a row with items open, a short reminder goes to the model.
// Where it goes is the lesson. As a message of its own it would stand between a tool_use and
// its tool_result, or make a second user message in a row, and the API refuses a request in
// which a tool_use is not answered by the very next message. So it rides inside the text of
// a tool result, which the model reads anyway.
const REMIND_AFTER = 3;
let repliesSinceUpdate = 0;
let reminderDue = false;

/**
 * Each reply of the model comes here once: through runTools when it asked for tools, through
 * endTurn when it ended the turn. The count goes on across turns, as the list does.
 */
function countReply(listUpdated: boolean): void {
  if (listUpdated || openItems().length === 0) {
    repliesSinceUpdate = 0;
    reminderDue = false;
    return;
  }
  repliesSinceUpdate += 1;
  if (repliesSinceUpdate < REMIND_AFTER) return;
  repliesSinceUpdate = 0; // after a reminder the count starts again
  reminderDue = true;
}

/**
 * The results of one reply's calls, after counting the reply: a due reminder is added to the
 * end of the last result, the one the model reads last. One due when a turn ended (no
 * results then) waits here for the next reply's results.
 */
function withReminder(calls: ToolUseBlock[], results: ToolResultBlockParam[]): ToolResultBlockParam[] {
  countReply(calls.some((call, i) => call.name === todoWriteTool.name && results[i]?.is_error !== true));
  const last = results.at(-1);
  if (!reminderDue || !last) return results;
  reminderDue = false;
  const note = reminder();
  console.log(dim(`  [reminder for the model, added to this result: the todo list has not changed in ${REMIND_AFTER} replies]`));
  // After the tool's own text, with one blank line between: the result is still whole.
  const content = typeof last.content === "string" ? `${last.content}${last.content.endsWith("\n") ? "\n" : "\n\n"}${note}` : [...(last.content ?? []), { type: "text" as const, text: note }];
  return [...results.slice(0, -1), { ...last, content }];
}

/** Short, and marked as the harness's words, so the model does not take it for the tool's output. */
function reminder(): string {
  const current = todos.find((item) => item.status === "in_progress");
  const now = current ? `"${clip(current.content, 100, "head")}" is in_progress` : "none is in_progress";
  return (
    `<reminder>From the harness, not the tool: your todo list has not changed in your last ${REMIND_AFTER} replies, and ${openItems().length} of its ${todos.length} items are open (${now}). ` +
    `If you have finished or started an item, send the whole list again with todo_write; if not, carry on.</reminder>`
  );
}

/** A new session has no plan yet: the offline replay calls this before its first prompt. */
export function prepareReplay(): void {
  todos = [];
  repliesSinceUpdate = 0;
  reminderDue = false;
}
// #endregion reminder

// #region tools
for (const tool of [bashTool, readFileTool, writeFileTool, editFileTool, todoWriteTool]) registry.registerTool(tool);
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
  return withReminder(calls, results); // s09: this reply is counted; a due reminder rides in the last result
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
  countReply(false); // s09: a reply that ends the turn counts too (it ran no todo_write)
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

export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s09",
    title: "Todo Write",
    agentLoop,
    prepareReplay,
    hasKey: API_KEY !== undefined,
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
  });

if (isMain(import.meta.url)) await main();
// #endregion program
