/**
 * s08_tool_discovery.ts - Tool Discovery
 *
 * "Tools can come from outside the program": a command or a server says what it offers.
 *
 *   .agent/settings.json in the workspace (a mistake is named; the built-in tools stay)
 *      |
 *      v  discoverTools(), before the first prompt: all at once, each within a time limit
 *   +-----------------------------------+   +--------------------------------------+
 *   | tools.toolDiscoveryCommand        |   | mcpServers.docs = { command, args,   |
 *   |   prints [{ name, description,    |   |   env, cwd, timeout, trust }         |
 *   |   parameters }, ...]              |   |   a process: initialize, tools/list  |
 *   +-----------------+-----------------+   +------------------+-------------------+
 *                     | bump_version                           | docs__read_page
 *                     v                                        v
 *   registry: bash, read_file, write_file, edit_file + what was found  ==> TOOLS
 *      |
 *      v  a call goes through s06's nine steps; it asks first unless the server is trusted
 *   toolCallCommand bump_version  <- arguments as JSON on stdin;  stdout is the result
 *   tools/call read_page          <- over the server's stdin;     text, image, resource
 *
 * New since s06: tools from outside the program join the registry, named server__tool for
 * MCP; regions `settings`, `command-tools`, `mcp`, `discovery`. `tool` (llmContent may hold
 * an image), `registry` (unregisterTool) and `run-tool` (content blocks) changed a little.
 *
 *   npx tsx agents/s08_tool_discovery.ts                (no key: replays the recorded demo)
 *   npx tsx agents/s08_tool_discovery.ts --list-tools   (the tools this folder's settings bring)
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, constants, existsSync, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { ContentBlock, ImageBlockParam, Message, MessageParam, TextBlockParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, optionValue, runAsMain } from "../lib/runtime/program.ts";
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
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace is the directory the program runs in. It is read at each call rather than
// stored, so the offline replay and the tests run this same code in a temporary folder; the
// system prompt is written at each request for the same reason.
const workspace = () => process.cwd();
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make.`;
// How careful to be, from `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
const APPROVAL_MODES = ["default", "auto-edit", "yolo", "plan"] as const;
type ApprovalMode = (typeof APPROVAL_MODES)[number];
const requestedMode = optionValue(process.argv, "--approval-mode") ?? process.env.APPROVAL_MODE ?? "default";
const APPROVAL_MODE = (APPROVAL_MODES as readonly string[]).includes(requestedMode) ? (requestedMode as ApprovalMode) : undefined;
// #endregion config

// #region tool
/** What a tool does, in the words the approval mode decides by: reading is always allowed. */
type ToolKind = "read" | "edit" | "execute";

/**
 * A tool's answer: what the model reads, and what the person sees (often not the same).
 * Most tools answer in text; a tool from outside may also bring an image, so llmContent
 * may be content blocks, as a tool_result takes them.
 */
interface ToolResult {
  llmContent: string | (TextBlockParam | ImageBlockParam)[];
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

  /** Take a tool out again: the tools found outside the program go when discovery runs again. */
  unregisterTool(name: string): void {
    this.tools.delete(name);
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

// #region tools
for (const tool of [bashTool, readFileTool, writeFileTool, editFileTool]) registry.registerTool(tool);
/** What the model sees, from the registry. */
export const TOOLS: Tool[] = registry.getFunctionDeclarations();
// #endregion tools

// #region settings
// What .agent/settings.json in the workspace may say: the seed's keys and nothing else, as a
// JSON Schema checked before anything starts, so a typo (`mcpServer`) is named rather than
// quietly doing nothing.
const SETTINGS_FILE = ".agent/settings.json";

/** One entry of mcpServers: `timeout` in milliseconds (to start, and for each call); `trust`: its tools run without asking. */
type ServerSettings = { command: string; args?: string[]; env?: Record<string, string>; cwd?: string; timeout?: number; trust?: boolean };
type Settings = { tools?: { toolDiscoveryCommand?: string; toolCallCommand?: string }; mcpServers?: Record<string, ServerSettings> };

const SETTINGS_SCHEMA = {
  type: "object",
  properties: {
    tools: {
      type: "object",
      properties: { toolDiscoveryCommand: { type: "string", minLength: 1 }, toolCallCommand: { type: "string", minLength: 1 } },
      dependencies: { toolDiscoveryCommand: ["toolCallCommand"] }, // a tool found must have a way to run
      additionalProperties: false,
    },
    mcpServers: {
      type: "object",
      additionalProperties: {
        type: "object",
        properties: {
          command: { type: "string", minLength: 1 }, args: { type: "array", items: { type: "string" } },
          env: { type: "object", additionalProperties: { type: "string" } }, cwd: { type: "string" },
          timeout: { type: "integer", minimum: 1 }, trust: { type: "boolean" },
        },
        required: ["command"],
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
};

/** The settings of the workspace `root`. With a mistake in them, none: one line names the file, the place and the problem. */
function readSettings(root: string): { settings: Settings; problem?: string } {
  const file = path.join(root, SETTINGS_FILE);
  if (!existsSync(file)) return { settings: {} };
  let data: unknown;
  let text = "";
  try {
    text = readFileSync(file, "utf8");
    data = JSON.parse(text);
  } catch (error) {
    return { settings: {}, problem: `${SETTINGS_FILE} is not valid JSON: ${jsonError(text, error as Error)}` };
  }
  const checkSettings = validator().compile(SETTINGS_SCHEMA); // ajv compiles a schema once, then keeps it
  if (!checkSettings(data)) return { settings: {}, problem: `${SETTINGS_FILE}: ${placedErrors(checkSettings.errors ?? [], "the settings")}` };
  return { settings: data as Settings };
}

/** Where JSON.parse stopped, as a line and a column a person can find. */
function jsonError(text: string, error: Error): string {
  const position = Number(/at position (\d+)/.exec(error.message)?.[1]);
  const reason = error.message.replace(/ in JSON at position \d+.*$/, "");
  if (!Number.isInteger(position)) return reason;
  const before = text.slice(0, position).split("\n");
  return `line ${before.length}, column ${before.at(-1)!.length + 1}: ${reason}`;
}

/** ajv's findings, each with its place: `mcpServers.docs.args must be an array`. */
function placedErrors(errors: ErrorObject[], whole: string): string {
  return errors
    .map((error) => {
      const place = error.instancePath.slice(1).replaceAll("/", ".");
      const { params } = error;
      if (error.keyword === "additionalProperties") return `${place ? `${place}: ` : ""}unknown setting "${params.additionalProperty}"`;
      if (error.keyword === "required") return `${place ? `${place}: ` : ""}"${params.missingProperty}" is missing`;
      if (error.keyword === "type") return `${place || whole} must be ${/^[aeiou]/.test(params.type) ? "an" : "a"} ${params.type}`;
      return `${place || whole} ${error.message}`;
    })
    .join("; ");
}
// #endregion settings

// #region command-tools
// The seed's command-based discovery: the project lists its tools by printing function
// declarations, and runs one when asked. The agent knows nothing else about them.

/** How long the agent waits for what runs outside it, in milliseconds (exported so tests can shorten them). */
export const TIME_LIMITS = { discovery: 30_000, call: DEFAULT_TIMEOUT * 1000, serverStart: 30_000, serverCall: DEFAULT_TIMEOUT * 1000 };

/**
 * A tool found outside the program, before the registry gives it its final name: `wanted` is
 * the name its source asks for (`bump_version`, `docs__read_page`), `original` its name there,
 * which a call uses, and `origin` where it came from, for the person.
 */
interface FoundTool {
  wanted: string;
  original: string;
  origin: string;
  displayName: string;
  description: string;
  schema: Record<string, unknown>;
  trusted: boolean;
  run(params: Params, signal: AbortSignal): Promise<ToolResult>;
}

/** What one source brought: its tools, and in words what went wrong. */
type Found = { source: string; tools: FoundTool[]; problems: string[] };

// A function declaration, as the seed describes them: a name, a description, parameters.
const DECLARATION_SCHEMA = {
  type: "object",
  properties: { name: { type: "string", minLength: 1 }, description: { type: "string" }, parameters: { type: "object", properties: { type: { const: "object" } }, required: ["type"] } },
  required: ["name"],
};

/** Run the discovery command; each function declaration it prints becomes a tool that runs the call command. */
async function toolsFromCommand(discover: string, callCommand: string): Promise<Found> {
  const found: Found = { source: "discovery command", tools: [], problems: [] };
  let declarations: unknown;
  try {
    const run = await runOutside(discover, [], "", TIME_LIMITS.discovery);
    if (run.code !== 0) throw new Error(`it exited with code ${run.code}: ${lastLine(run.stderr) || "(nothing on stderr)"}`);
    try {
      declarations = JSON.parse(run.stdout);
    } catch {
      throw new Error(`it printed something that is not JSON: ${JSON.stringify(clip(run.stdout.trim(), 80, "head"))}`);
    }
    if (!Array.isArray(declarations)) throw new Error("it printed JSON, but not a list of function declarations");
  } catch (error) {
    found.problems.push(`could not list its tools: ${(error as Error).message}`);
    return found;
  }
  const checkDeclaration = validator().compile(DECLARATION_SCHEMA);
  for (const [i, declaration] of declarations.entries()) {
    if (!checkDeclaration(declaration)) {
      found.problems.push(`declaration ${i + 1} was left out: ${placedErrors(checkDeclaration.errors ?? [], "it")}`);
      continue;
    }
    const { name, description = "", parameters } = declaration as { name: string; description?: string; parameters?: Record<string, unknown> };
    found.tools.push({
      ...{ wanted: name, original: name, origin: "discovery command", displayName: name, trusted: false },
      description: `${description}\n(A tool of this project, found by its discovery command.)`.trim(),
      schema: parameters ?? { type: "object", properties: {} },
      run: (params, signal) => callCommandTool(callCommand, name, params, signal),
    });
  }
  return found;
}

/** `toolCallCommand <name>`, the arguments as JSON on stdin: stdout is the result, a failure is stderr. */
async function callCommandTool(callCommand: string, name: string, params: Params, signal: AbortSignal): Promise<ToolResult> {
  const run = await runOutside(callCommand, [name], JSON.stringify(params), TIME_LIMITS.call, signal);
  if (run.code !== 0) throw new Error(`${name} failed (exit code ${run.code}): ${run.stderr.trim() || run.stdout.trim() || "no output"}`);
  const text = run.stdout || "(no output)";
  return { llmContent: text, returnDisplay: text };
}

/**
 * Run a command of the settings with bash in the workspace. `args` follow it as words of
 * their own ("$@"), so a tool's name is never read as shell code; `input` goes to stdin.
 * Like bash's commands it gets a mark, so a timeout or Ctrl-C ends all it started. --norc:
 * a bash whose stdin is a socket (as Node's pipes are) may read ~/.bashrc as if over ssh.
 */
function runOutside(command: string, args: string[], input: string, ms: number, signal?: AbortSignal): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const mark = newCommandMark();
    const child = spawn("bash", ["--norc", "-c", `${command} "$@"`, "bash", ...args], { cwd: workspace(), detached: true, env: { ...process.env, [COMMAND_MARK]: mark } });
    if (child.pid) commandGroups.add(child.pid);
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (chunk: Buffer) => void (stdout.length < MAX_FILE_BYTES && (stdout += chunk)));
    child.stderr.on("data", (chunk: Buffer) => void (stderr = (stderr + chunk).slice(-MAX_OUTPUT)));
    child.stdin.on("error", () => {}); // a command that never reads its input
    child.stdin.end(input);
    const stop = (why: string) => {
      clearTimeout(timer);
      endProcesses(`${mark}\0`, [child.pid!]);
      reject(new Error(`${why}; it was ended`));
    };
    const timer = setTimeout(() => stop(`no answer within ${ms / 1000} s`), ms);
    const onAbort = () => stop("cancelled by the user");
    signal?.addEventListener("abort", onAbort, { once: true });
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve({ stdout, stderr, code });
    });
  });
}

const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? "";
// #endregion command-tools

// #region mcp
// MCP servers through the official SDK over stdio: the agent starts each server as a process,
// asks for its tools (tools/list) and calls them (tools/call) on its stdin and stdout. The
// SDK is loaded only when a server is configured, so the program still starts at once.

/** A server the agent started: its client and process, and why it stopped, once it has. */
interface Connection {
  name: string;
  client: Client;
  transport: StdioClientTransport;
  /** bash's mark in its environment: what it starts carries it too. */
  mark: string;
  /** The last of what the server wrote to stderr: often the reason it failed. */
  stderr: string;
  stopped?: string;
}

const connections: Connection[] = [];
// The SDK's error codes for "no answer in time" and "the connection closed".
const [REQUEST_TIMEOUT, CONNECTION_CLOSED] = [-32001, -32000];

/** Start one server and list its tools, within its time limit; a server that fails is stopped and named. */
async function toolsFromServer(name: string, server: ServerSettings, root: string): Promise<Found> {
  const found: Found = { source: `MCP server ${name}${server.trust ? " (trusted)" : ""}`, tools: [], problems: [] };
  const cwd = path.resolve(root, server.cwd ?? ".");
  if (!existsSync(cwd)) return { ...found, problems: [`could not start: its cwd ${cwd} does not exist`] };
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  // The SDK gives a server only a few variables (PATH, HOME, ...); the settings add theirs. The
  // mark is bash's: when the program ends, bash's exit handler ends every process that carries
  // it, so a server and whatever it started end with the program (on Linux; elsewhere a
  // server sees its stdin close, and a well-made server stops).
  const mark = newCommandMark();
  const env = { ...getDefaultEnvironment(), ...server.env, [COMMAND_MARK]: mark };
  const transport = new StdioClientTransport({ command: server.command, args: server.args, cwd, env, stderr: "pipe" });
  const connection: Connection = { name, client: new Client({ name: "agent-workbook-s08", version: "1.0.0" }), transport, mark, stderr: "" };
  transport.stderr?.on("data", (chunk: Buffer) => (connection.stderr = (connection.stderr + chunk).slice(-2000)));
  connection.client.onclose = () => (connection.stopped ??= `it stopped${connection.stderr ? `: ${lastLine(connection.stderr)}` : ""}`);
  connections.push(connection);
  const limit = server.timeout ?? TIME_LIMITS.serverStart;
  const deadline = AbortSignal.timeout(limit);
  try {
    await connection.client.connect(transport, { signal: deadline, timeout: limit });
    const { tools } = await connection.client.listTools(undefined, { signal: deadline, timeout: limit });
    for (const tool of tools) {
      found.tools.push({
        ...{ wanted: `${name}__${tool.name}`, original: tool.name, origin: `MCP server ${name}${server.trust ? ", trusted" : ""}`, displayName: `${name}: ${tool.name}`, trusted: server.trust === true },
        description: tool.description ?? `The tool ${tool.name} of the MCP server ${name}.`,
        schema: tool.inputSchema,
        run: (params, signal) => callServerTool(connection, tool.name, params, signal, server.timeout ?? TIME_LIMITS.serverCall),
      });
    }
  } catch (error) {
    const why = deadline.aborted
      ? `no answer within ${limit / 1000} s, so it was stopped`
      : (error as NodeJS.ErrnoException).code === "ENOENT"
        ? `"${server.command}" was not found`
        : (connection.stopped ?? (error as Error).message);
    found.problems.push(`could not start: ${why}`);
    await closeConnection(connection, "kill");
  }
  return found;
}

/** tools/call on the server; an error result, a timeout or a server that stopped becomes a clear error. */
async function callServerTool(connection: Connection, tool: string, params: Params, signal: AbortSignal, limit: number): Promise<ToolResult> {
  const gone = "its tools work again when the agent starts again";
  if (connection.stopped) throw new Error(`the MCP server ${connection.name} is not running (${connection.stopped}); ${gone}`);
  let result: { content?: McpContent[]; isError?: boolean };
  try {
    result = (await connection.client.callTool({ name: tool, arguments: params }, undefined, { signal, timeout: limit })) as typeof result;
  } catch (error) {
    const code = (error as { code?: number }).code;
    if (signal.aborted) throw error;
    if (code === REQUEST_TIMEOUT) throw new Error(`the MCP server ${connection.name} gave no answer within ${limit / 1000} s`);
    if (code === CONNECTION_CLOSED) throw new Error(`the MCP server ${connection.name} stopped during the call (${connection.stopped ?? "connection closed"}); ${gone}`);
    throw error;
  }
  const content = toContent(result.content ?? []);
  const shown = content.map((block) => (block.type === "text" ? block.text : `[image, ${block.source.type === "base64" ? block.source.media_type : "url"}]`)).join("\n");
  // An error result (isError) is the tool's answer, not the server's failure: it goes back as is_error.
  if (result.isError) throw new Error(shown || `${tool} failed and said nothing`);
  return { llmContent: content, returnDisplay: shown };
}

type McpContent =
  | { type: "text"; text: string }
  | { type: "image" | "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: "resource_link"; uri: string; name?: string };

const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const;
const MAX_IMAGE_BASE64 = 5 * 1024 * 1024; // the API takes images of up to 5 MB

/** An MCP result as tool_result content: text as text, an image the API takes as an image, anything else named in words. */
function toContent(parts: McpContent[]): (TextBlockParam | ImageBlockParam)[] {
  const text = (value: string): TextBlockParam => ({ type: "text", text: value });
  const image = (mimeType: string | undefined, data: string | undefined): ImageBlockParam | undefined => {
    const media = IMAGE_TYPES.find((type) => type === mimeType);
    return media && data && data.length <= MAX_IMAGE_BASE64 ? { type: "image", source: { type: "base64", media_type: media, data } } : undefined;
  };
  if (parts.length === 0) return [text("(no content)")];
  return parts.map((part) => {
    if (part.type === "text") return text(part.text);
    if (part.type === "image") return image(part.mimeType, part.data) ?? text(`[an image of type ${part.mimeType}, which cannot be shown to the model]`);
    if (part.type === "resource") {
      const { uri, mimeType, text: body, blob } = part.resource;
      if (body !== undefined) return text(`[resource ${uri}]\n${body}`);
      return image(mimeType, blob) ?? text(`[resource ${uri}: ${mimeType ?? "binary"} data, not shown]`);
    }
    if (part.type === "resource_link") return text(`[resource link ${part.uri}${part.name ? ` (${part.name})` : ""}]`);
    return text(`[${part.type} content, which cannot be shown to the model]`);
  });
}

/** Close one server: politely (stdin closes, then SIGTERM) or, for one that hangs, at once. */
async function closeConnection(connection: Connection, how: "close" | "kill" = "close"): Promise<void> {
  const pid = connection.transport.pid;
  if (how === "kill" && pid) killServer(pid);
  await connection.client.close().catch(() => {});
  endProcesses(`${connection.mark}\0`, []); // and whatever it started
}

function killServer(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {} // it has ended already
}
// #endregion mcp

// #region discovery
/** Where each tool found outside came from, by its registered name; a tool not here is built in. */
const origins = new Map<string, string>();

/**
 * Read the workspace's settings, run the discovery command and start the MCP servers, all at
 * once, and register what they offer. Resolves when every source has answered or run out of
 * time; what failed is said in one line each, and everything else works. TOOLS is refilled in
 * place: it is the array the loop sends, so the model sees the new tools at its next request.
 */
export async function discoverTools(): Promise<{ tools: string[]; problems: string[] }> {
  const root = workspace();
  const { settings, problem } = readSettings(root);
  await dropDiscoveredTools();
  const report = { tools: [] as string[], problems: [] as string[] };
  if (problem) {
    report.problems.push(problem);
    console.log(`[tools] ${problem}; only the built-in tools are used`);
    return report;
  }
  const { toolDiscoveryCommand, toolCallCommand } = settings.tools ?? {};
  // Each source says what went wrong rather than throwing; should one throw all the same, it
  // becomes that source's problem, and the others are still registered.
  const settle = (source: string, found: Promise<Found>) => found.catch((error: Error): Found => ({ source, tools: [], problems: [error.message] }));
  const sources = await Promise.all([
    ...(toolDiscoveryCommand && toolCallCommand ? [settle("discovery command", toolsFromCommand(toolDiscoveryCommand, toolCallCommand))] : []),
    ...Object.entries(settings.mcpServers ?? {}).map(([name, server]) => settle(`MCP server ${name}`, toolsFromServer(name, server, root))),
  ]);
  // Registered in the order of the settings, whichever answered first, so the names are the same every time.
  for (const found of sources) {
    const names = found.tools.flatMap((tool) => register(tool, found));
    if (names.length > 0 || found.problems.length === 0) console.log(`[tools] ${found.source}: ${names.join(", ") || "no tools"}`);
    for (const problem of found.problems) console.log(`[tools] ${found.source}: ${problem}`);
    report.tools.push(...names);
    report.problems.push(...found.problems.map((problem) => `${found.source}: ${problem}`));
  }
  TOOLS.splice(0, TOOLS.length, ...registry.getFunctionDeclarations());
  return report;
}

/** Register one found tool under a valid, free name; [] when its schema cannot be used. */
function register(found: FoundTool, from: Found): string[] {
  const name = freeName(found.wanted);
  let tool: AgentTool;
  try {
    tool = outsideTool(name, found);
  } catch (error) {
    from.problems.push(`"${found.wanted}" was left out: its parameter schema is not valid JSON Schema (${(error as Error).message})`);
    return [];
  }
  registry.registerTool(tool);
  origins.set(name, found.origin + (name === found.wanted ? "" : `, where it is called "${found.original}"`));
  return [name];
}

/** A name the API takes (letters, digits, _ and -, at most 64 characters) that no tool has yet. */
function freeName(wanted: string): string {
  const valid = (wanted.replace(/[^A-Za-z0-9_-]/g, "_") || "_").slice(0, 64);
  let name = valid;
  for (let n = 2; registry.getTool(name); n++) name = `${valid.slice(0, 63 - String(n).length)}_${n}`;
  return name;
}

// Schemas written by others: keywords and formats this validator does not know are let
// through rather than refused (the tool checks its own input too).
let outsideAjv: Ajv | undefined;
const outsideValidator = () => (outsideAjv ??= new (needed("ajv") as typeof import("ajv")).Ajv({ allErrors: true, strict: false, validateFormats: false, logger: false }));

/** A found tool as a registry entry. It runs someone else's code, so it asks first (as bash does) unless trusted. */
function outsideTool(name: string, found: FoundTool): AgentTool {
  // `$schema` names a draft the API may not take; the rest is sent as it came.
  const { $schema: _draft, ...schema } = { ...found.schema, type: "object" } as Tool["input_schema"];
  const validate = outsideValidator().compile(schema);
  return {
    name,
    displayName: found.displayName,
    description: found.description,
    kind: "execute",
    parameterSchema: schema,
    validateToolParams: (params) => (validate(params) ? null : schemaErrors(validate.errors ?? [])),
    getDescription: (params) => JSON.stringify(params),
    shouldConfirmExecute: async (params) => (found.trusted ? false : { title: `Run ${found.displayName} (${found.origin})?`, details: JSON.stringify(params, null, 2) }),
    execute: found.run,
  };
}

/** Take out every tool found outside, and end their servers (before discovery runs again, and at the end). */
export async function dropDiscoveredTools(): Promise<void> {
  for (const name of origins.keys()) registry.unregisterTool(name);
  origins.clear();
  TOOLS.splice(0, TOOLS.length, ...registry.getFunctionDeclarations());
  await Promise.all(connections.splice(0).map((connection) => closeConnection(connection)));
}

/** `--list-tools`: every tool the model would see here, and where it came from. Exit code 1 if something failed. */
async function listTools(): Promise<number> {
  const { problems } = await discoverTools();
  const tools = registry.getAllTools();
  const width = Math.max(...tools.map((tool) => tool.name.length));
  console.log(`${tools.length} tools in ${workspace()}:`);
  for (const tool of tools) console.log(`  ${tool.name.padEnd(width)}  ${origins.get(tool.name) ?? "built in"}`);
  return problems.length > 0 ? 1 : 0;
}
// #endregion discovery

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
    const toModel: ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: forModel(result.llmContent) };
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

/** llmContent as the model gets it: text cut to MAX_OUTPUT in all; an image block as it is. */
function forModel(content: ToolResult["llmContent"]): ToolResultBlockParam["content"] {
  if (typeof content === "string") return clip(content, MAX_OUTPUT);
  const texts = content.filter((block) => block.type === "text").length;
  return content.map((block) => (block.type === "text" ? { ...block, text: clip(block.text, Math.floor(MAX_OUTPUT / texts)) } : block));
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

/**
 * Before a replay: a scenario with no settings of its own gets the demo's, which point at the
 * fixtures (fixtures/s08) wherever the workbook is; then the tools are discovered, as the
 * program does before a live session's first prompt.
 */
export async function prepareReplay(scenario: Scenario): Promise<void> {
  if (scenario.files?.[SETTINGS_FILE] === undefined) writeDemoSettings();
  await discoverTools();
}

function writeDemoSettings(): void {
  const fixtures = path.join(import.meta.dirname, "..", "fixtures", "s08");
  const projectTools = [process.execPath, path.join(fixtures, "project-tools.mjs")];
  const shell = (words: string[]) => words.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(" ");
  const settings: Settings = {
    tools: { toolDiscoveryCommand: `${shell(projectTools)} list`, toolCallCommand: `${shell(projectTools)} call` },
    mcpServers: {
      docs: { command: process.execPath, args: [path.join(fixtures, "docs-server.mjs")], trust: true },
      tickets: { command: "./bin/tickets-mcp", args: ["--stdio"] }, // not installed here: it cannot start
    },
  };
  mkdirSync(path.dirname(SETTINGS_FILE), { recursive: true });
  writeFileSync(SETTINGS_FILE, `${JSON.stringify(settings, null, 2)}\n`);
}

export async function main(args = process.argv.slice(2)): Promise<never> {
  try {
    return await runAsMain({
      stage: "s08",
      title: "Tool Discovery",
      agentLoop,
      hasKey: API_KEY !== undefined,
      args,
      options: ["--approval-mode"],
      settingsProblem: modeProblem,
      prepareReplay,
      prepareSession: async () => void (await discoverTools()),
      commands: { "--list-tools": listTools },
    });
  } finally {
    // A program ends in process.exit, where the exit handlers end every server; a caller
    // that goes on running (a test calling main) gets them closed here.
    await dropDiscoveredTools();
  }
}

if (isMain(import.meta.url)) await main();
// #endregion program
