/**
 * s07_large_results.ts - Large Results
 *
 * "Context is a budget: show a preview, keep the whole": a large result goes to a file, and the model gets its two ends.
 *
 *   any tool's result, or bash output as it arrives
 *      |
 *      v   ResultFile, one per call
 *   +--------------------------------------------------------------------+
 *   | up to 40,000 characters: kept in memory, sent to the model whole   |
 *   | past 40,000: every byte goes to .agent/tool-results/<call id>.txt, |
 *   |   and memory keeps only the first and the last lines               |
 *   +--------------------------------------------------------------------+
 *      |  the model gets: head ... [N characters cut, the whole is in <file>] ... tail
 *      v  and looks closer only where it needs to:
 *   read_file(path, offset, limit)   numbered lines, a footer: "next page: offset 2001"
 *   grep(pattern, path, head_limit, offset)   the lines that match, a page at a time
 *   after each reply the person sees how full the context is: [context: 3,210 of 200,000 tokens]
 *
 * New since s06: results past 40,000 characters are kept whole in a file, read_file reads a
 * page at a time, grep pages its matches; regions `large-results`, `grep`, `context`.
 *
 *   npx tsx agents/s07_large_results.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s07_large_results.ts --approval-mode auto-edit
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, constants, existsSync, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { ContentBlock, Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import ignore, { type Ignore } from "ignore";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, optionValue, runAsMain } from "../lib/runtime/program.ts";
import { cancellable, terminal } from "../lib/runtime/terminal.ts";

// #region config
if (existsSync(".env")) process.loadEnvFile(".env");
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads the SDK at
// the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace is the directory the program runs in. It is read at each call rather than
// stored, so the offline replay and the tests run this same code in a temporary folder; the
// system prompt is written at each request for the same reason.
const workspace = () => process.cwd();
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, grep to search, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `Your context is a budget. A result too large to send whole is saved in a file, and you get its first and last lines: grep that file or read_file the lines you need, never all of it. ` +
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
  /**
   * Do the work. A failure throws an Error whose message the model reads. `callId` is the
   * tool_use id: a tool that saves its output as it arrives (bash) names the file after it.
   */
  execute(params: Params, signal: AbortSignal, callId?: string): Promise<ToolResult>;
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

// #region large-results
// What the model reads stays in its context for the rest of the session, and is paid for at
// every request after. So a result of up to RESULT_LIMIT characters goes to the model whole,
// and a larger one is written whole to a file in the workspace: the model gets its first and
// last lines, its size and the file's name, and reads the part it needs with read_file or
// grep. Nothing is cut without being kept.
const RESULT_LIMIT = 40_000; // characters of one result the model gets whole
const PREVIEW = { head: 2_000, tail: 3_000 }; // what it sees of a larger one, from each end
const RESULTS_FOLDER = ".agent/tool-results";

/**
 * One call's result on its way to the model, added as it arrives (bash) or all at once (any
 * other tool). Memory holds the result while it is at most RESULT_LIMIT characters; past
 * that, its bytes go to a file as they come, and memory keeps only the two ends the model
 * will see. A command that prints 100 MB fills neither memory nor the context, and loses
 * no byte.
 */
class ResultFile {
  /** Where the whole result is, relative to the workspace, once it was too large to send. */
  saved: string | undefined;
  private characters = 0;
  private lineBreaks = 0;
  private endsWithBreak = true;
  private tooLarge = false;
  private whole: Buffer[] = []; // every byte, while the result fits
  private start = ""; // once it does not: its first characters...
  private end: Buffer = Buffer.alloc(0); // ...and its last bytes
  private fd: number | undefined;
  private problem: string | undefined; // why the file could not be written
  private finished: string | undefined;

  constructor(private readonly callId: string) {}

  add(bytes: Buffer): void {
    if (this.finished !== undefined || bytes.length === 0) return; // output after a command was stopped
    // Counted from the bytes, not decoded: a 100 MB output is never turned into text.
    let [characters, lineBreaks] = [0, 0];
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i];
      if (byte === 10) lineBreaks += 1;
      // A byte 10xxxxxx continues a character; one of 4 bytes is 2 characters to JavaScript.
      if (byte < 0x80 || byte >= 0xc0) characters += byte >= 0xf0 ? 2 : 1;
    }
    [this.characters, this.lineBreaks] = [this.characters + characters, this.lineBreaks + lineBreaks];
    this.endsWithBreak = bytes[bytes.length - 1] === 10;
    if (this.tooLarge) {
      this.write(bytes);
      this.end = lastBytes(this.end, bytes);
      return;
    }
    this.whole.push(bytes);
    if (this.characters <= RESULT_LIMIT) return;
    // Too large to send whole: from here on the bytes go to a file, and memory keeps the ends.
    this.tooLarge = true;
    const all = Buffer.concat(this.whole.splice(0));
    [this.start, this.end] = [all.toString("utf8", 0, 4 * PREVIEW.head).slice(0, PREVIEW.head), lastBytes(Buffer.alloc(0), all)];
    try {
      [this.fd, this.saved] = newResultFile(this.callId);
    } catch (error) {
      this.problem = `${RESULTS_FOLDER} could not be written: ${(error as Error).message}`;
    }
    this.write(all);
  }

  private write(bytes: Buffer): void {
    if (this.fd === undefined) return; // no file: the two ends are kept, the middle is lost
    try {
      writeFileSync(this.fd, bytes);
    } catch (error) {
      this.problem = `writing ${this.saved} failed: ${(error as Error).message}`;
      closeSync(this.fd);
      [this.fd, this.saved] = [undefined, undefined];
    }
  }

  /** What the model gets: the whole result, or its two ends and where the whole is. */
  finish(): string {
    if (this.finished !== undefined) return this.finished;
    if (this.fd !== undefined) closeSync(this.fd);
    this.finished = this.tooLarge ? this.preview() : Buffer.concat(this.whole).toString("utf8");
    return this.finished;
  }

  /** For the person: how large the result was, where it went, and what the model got. */
  get note(): string | undefined {
    if (!this.tooLarge) return undefined;
    const size = `${this.characters.toLocaleString("en-US")} characters`;
    const sent = `the model got ${this.finish().length.toLocaleString("en-US")}`;
    return this.saved ? `[${size}, saved whole in ${this.saved}; ${sent}]` : `[${size}; ${this.problem}; ${sent}]`;
  }

  /** The first and last lines (whole lines where there are line breaks to cut at), and where the rest is. */
  private preview(): string {
    const head = this.start.includes("\n") ? this.start.slice(0, this.start.lastIndexOf("\n") + 1) : this.start;
    let from = 0; // the end's bytes may start inside a character
    while ((this.end[from] & 0xc0) === 0x80) from += 1;
    const end = this.end.toString("utf8", from).slice(-PREVIEW.tail);
    const cutAt = end.indexOf("\n");
    const tail = cutAt !== -1 && cutAt < end.length - 1 ? end.slice(cutAt + 1) : end;
    const lines = this.lineBreaks + (this.endsWithBreak ? 0 : 1);
    const tailLines = tail.split("\n").length - (tail.endsWith("\n") ? 1 : 0);
    const where = this.saved
      ? `The whole result is in ${this.saved}, ${lines} lines: read the lines you need with read_file (the last ones below start at line ${lines - tailLines + 1}) or search it with grep`
      : `It could not be kept (${this.problem}), so the middle is lost`;
    return `${head}${marker(this.characters - head.length - tail.length, this.characters)}[${where}.]\n${tail}`;
  }
}

/** The last bytes of `before` and `bytes` together, enough for the preview's tail. */
function lastBytes(before: Buffer, bytes: Buffer): Buffer {
  const room = 4 * PREVIEW.tail; // a character is at most 4 bytes of UTF-8
  return bytes.length >= room ? Buffer.from(bytes.subarray(-room)) : Buffer.concat([before, bytes]).subarray(-room);
}

/**
 * A new file for one call's result, named after the call: `toolu_01A….txt`. The id is the
 * model's text, so only letters, digits, _ and - are kept of it. A file is created, never
 * overwritten: a name already taken (a replay reuses ids) gets -2, -3. The folders are made
 * inside the workspace one step at a time, as write_file makes them, so no link leads out.
 */
function newResultFile(callId: string): [number, string] {
  const base = callId.replace(/[^\w-]/g, "_").slice(0, 100) || "result";
  let opened: [number, string] | undefined;
  inFolder(safePath(RESULTS_FOLDER), RESULTS_FOLDER, true, () => {
    for (let n = 1; !opened; n++) {
      const name = n === 1 ? `${base}.txt` : `${base}-${n}.txt`;
      try {
        opened = [openSync(name, "wx"), `${RESULTS_FOLDER}/${name}`]; // "wx": never an existing file, never through a link
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
    }
  });
  return opened!;
}

/** A finished result as the model gets it: whole when it is small, else kept in a file and previewed. */
function resultFor(callId: string, text: string): string {
  const result = new ResultFile(callId);
  result.add(Buffer.from(text));
  const content = result.finish();
  if (result.note) console.log(dim(indent(result.note)));
  return content;
}
// #endregion large-results

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
  async execute(params, signal, callId = `bash-${randomBytes(4).toString("hex")}`) {
    const command = String(params.command);
    const blocked = DENYLIST.find((pattern) => command.includes(pattern));
    if (blocked) throw new Error(`refused: the command contains "${blocked.trim()}", which this agent does not run`);
    // The output is kept as it arrives: whole in memory while it is small, then in a file.
    const output = new ResultFile(callId);
    const code = await runCommand(command, Number(params.timeout ?? DEFAULT_TIMEOUT), signal, output);
    const text = output.finish() || "(no output)";
    return {
      llmContent: code === 0 ? text : `${text.replace(/\n$/, "")}\n[exit code ${code ?? "killed"}]`,
      returnDisplay: [output.note, text.replace(/\n$/, ""), `(exit code ${code ?? "killed"})`].filter(Boolean).join("\n"),
    };
  },
});

/** Run a command to its end, its time limit, or the signal; nothing it started outlives it. */
function runCommand(command: string, seconds: number, signal: AbortSignal, output: ResultFile): Promise<number | null> {
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
    // Bytes as they come, both streams into one result, as a terminal would show them. An
    // event handler has no caller to throw to: a failure there ends this command, not the program.
    const take = (chunk: Buffer) => {
      try {
        output.add(chunk);
      } catch (error) {
        clearTimeout(timer);
        endProcesses(`${mark}\0`, [child.pid!]);
        reject(error);
      }
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    const stop = (why: string) => {
      clearTimeout(timer);
      endProcesses(`${mark}\0`, [child.pid!]);
      reject(new Error(`${why}; the command and everything it started were ended. Output so far:\n${output.finish()}`));
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
        resolve(code);
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
const MAX_FILE_BYTES = 10 * 1024 * 1024; // files larger than this are not loaded whole (to edit them)
const PAGE_LINES = 2000; // lines read_file shows at most, unless asked for fewer
const MAX_LINE = 2000; // characters shown of one line

const readFileTool = defineTool({
  name: "read_file",
  displayName: "ReadFile",
  kind: "read",
  description:
    `Read a text file in the workspace as numbered lines: ${PAGE_LINES} at most, fewer if the page would pass ${RESULT_LIMIT} characters; ` +
    `lines are cut at ${MAX_LINE} characters. A footer says which lines you got and the offset of the next page. Files of any size can be paged, saved results too.`,
  parameterSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "Path relative to the workspace." },
      offset: { type: "integer", minimum: 1, description: "The number of the first line to read (default 1)." },
      limit: { type: "integer", minimum: 1, description: `Read at most this many lines (default ${PAGE_LINES}).` },
    },
    required: ["path"],
    additionalProperties: false,
  },
  getDescription: (params) => `${params.path}${params.offset === undefined ? "" : ` from line ${params.offset}`}`,
  async execute(params) {
    const given = String(params.path);
    const offset = Number(params.offset ?? 1);
    const limit = params.limit === undefined ? undefined : Number(params.limit);
    const page = readPage(safePath(given), given, offset, limit ?? PAGE_LINES);
    if (offset > Math.max(page.total, 1)) {
      throw new Error(`offset ${offset} is past the end of ${given}, which has ${page.total} line${page.total === 1 ? "" : "s"}`);
    }
    const last = offset + page.shown.length - 1;
    const range = `${last === offset ? `line ${offset}` : `lines ${offset}-${last}`} of ${page.total}`;
    // The footer says what the model has and, when there is more, the exact call for the next page.
    let footer = "";
    if (last < page.total) {
      const why = page.full ? `: a page stops before ${RESULT_LIMIT} characters` : "";
      footer = `[${range}${why}. Next page: offset ${last + 1}${limit === undefined ? "" : `, limit ${limit}`}]`;
    } else if (offset > 1) footer = `[${range}: the end of the file]`;
    if (page.total === 0) return { llmContent: `(${given} is empty)`, returnDisplay: `${given}: empty` };
    // The model needs the lines; the person only needs to know which were read.
    const text = footer ? `${page.shown.join("\n")}\n\n${footer}` : page.shown.join("\n");
    return { llmContent: text, returnDisplay: `${given}: ${footer ? range : `all ${page.total} lines`}` };
  },
});

/**
 * The lines of a page, numbered as `cat -n` numbers them, and the file's number of lines. The
 * file is read 64 kB at a time and only the page's lines are kept, at most the bytes that can
 * hold MAX_LINE characters of each, so a file of any size can be paged (a command's 100 MB
 * output too); it is read to its end all the same, to count its lines. A page also stops
 * before RESULT_LIMIT characters: a read is never too large to send whole.
 */
function readPage(file: string, given: string, offset: number, limit: number): { shown: string[]; total: number; full: boolean } {
  const fd = openFile(file, given);
  try {
    const piece = Buffer.alloc(64 * 1024);
    if (piece.subarray(0, readSync(fd, piece, 0, 8192, 0)).includes(0)) {
      throw new Error(`${given} looks binary (it contains NUL bytes), so it is not shown as text`);
    }
    const page = { shown: [] as string[], total: 0, full: false };
    const inPage = (line: number) => !page.full && line >= offset && line < offset + limit;
    const most = 4 * MAX_LINE; // bytes enough for MAX_LINE characters: one is at most 4 bytes
    let line = 1; // the number of the line being read
    let kept: Buffer[] = []; // its bytes, when it is in the page
    let length = 0; // its length in bytes
    let size = 0; // the page's length in characters
    const keep = (bytes: Buffer) => {
      if (length < most) kept.push(Buffer.from(bytes.subarray(0, most - length)));
      length += bytes.length;
    };
    const endLine = () => {
      const text = `${String(line).padStart(6)}\t${cutLine(Buffer.concat(kept).toString("utf8").replace(/\r$/, ""), length > most)}`;
      if (size + text.length + 1 > RESULT_LIMIT - 500) page.full = true; // 500: room for the footer
      else {
        page.shown.push(text);
        size += text.length + 1;
      }
      [kept, length] = [[], 0];
    };
    let [read, last] = [0, 10];
    while ((read = readSync(fd, piece, 0, piece.length, null)) > 0) {
      let start = 0;
      for (let i = 0; i < read; i++) {
        if (piece[i] !== 10) continue;
        if (inPage(line)) {
          keep(piece.subarray(start, i));
          endLine();
        }
        line += 1;
        start = i + 1;
      }
      if (inPage(line)) keep(piece.subarray(start, read));
      last = piece[read - 1];
    }
    if (last !== 10 && inPage(line)) endLine(); // a last line without a line break is a line too
    page.total = last === 10 ? line - 1 : line;
    return page;
  } finally {
    closeSync(fd);
  }
}

/** A line cut at MAX_LINE characters, with a marker; `long`: there was more than was read. */
function cutLine(text: string, long = false): string {
  return long || text.length > MAX_LINE ? `${text.slice(0, MAX_LINE)} [line cut at ${MAX_LINE} characters]` : text;
}

/**
 * A file opened for reading, or a clear error: missing, a directory, not a regular file. The
 * file is opened first and then looked at through what was opened, so what is checked is
 * what is read. O_NONBLOCK: opening a FIFO must not wait for a writer (it would block the
 * whole program, timers included); a FIFO or a device is refused once it is open.
 */
function openFile(file: string, given: string): number {
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
  const stat = fstatSync(fd);
  if (stat.isFile()) return fd;
  closeSync(fd);
  if (stat.isDirectory()) throw new Error(`${given} is a directory; list it with bash (ls)`);
  throw new Error(`${given} is ${kindOf(stat)}, not a regular file; only regular files are read`);
}

/** A file's whole text, to change it (edit_file, write_file), or a clear error: too large, or binary. */
function readText(file: string, given: string): string {
  const fd = openFile(file, given);
  try {
    const { size } = fstatSync(fd);
    if (size > MAX_FILE_BYTES) {
      throw new Error(`${given} is ${(size / 1024 / 1024).toFixed(1)} MB, over the 10 MB limit for changing a file; read it a page at a time with read_file`);
    }
    // At most the size seen when it was opened: a file that keeps growing cannot fill memory.
    const bytes = Buffer.alloc(size);
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
// Search is how the model finds the part worth reading, in the project or in a saved result,
// and it pages its answer as read_file pages lines. The files come from s03's walk (what a
// project ignores is left out) and are searched by s03's search, in worker threads with a time
// limit; only the paging and the report are this tool's own.
const GREP_MODES = ["files_with_matches", "content", "count"];

const grepTool = defineTool({
  name: "grep",
  displayName: "Grep",
  kind: "read",
  description:
    "Search files for a regular expression (JavaScript syntax), line by line. output_mode: files_with_matches (default) lists the files, content shows path:line: text, count the matching lines per file. " +
    "One page at a time: head_limit entries (default 100; 0 for all) after skipping offset; a footer gives the next offset. Binary files, .git, node_modules, .agent and what .gitignore lists are skipped unless path names them.",
  parameterSchema: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "The regular expression." },
      path: { type: "string", description: "A file or folder to search, relative to the workspace (default: the workspace)." },
      glob: { type: "string", description: 'Only files whose name, or path under the folder searched, matches: "*.ts", "src/**/*.{ts,tsx}".' },
      output_mode: { type: "string", enum: GREP_MODES, description: "files_with_matches (default), content or count." },
      head_limit: { type: "integer", minimum: 0, description: "Show at most this many entries (default 100; 0: all)." },
      offset: { type: "integer", minimum: 0, description: "Skip this many entries first (default 0)." },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  getDescription: (params) => `/${params.pattern}/ in ${params.path ?? "."}${params.glob === undefined ? "" : ` (${params.glob})`}`,
  async execute(params) {
    const [pattern, given, mode] = [String(params.pattern), String(params.path ?? "."), String(params.output_mode ?? "files_with_matches")];
    const [offset, limit] = [Number(params.offset ?? 0), Number(params.head_limit ?? 100)];
    try {
      new RegExp(pattern); // a typo gets a precise answer before anything is read
    } catch (error) {
      throw new Error(`${(error as Error).message}; nothing was searched`);
    }
    // Each file keeps as many lines as the page could need; every match is counted.
    const maxResults = limit === 0 ? Infinity : offset + limit;
    const search = await searchFiles(given, String(params.glob ?? "**/*"), pattern, { mode, maxResults, leaveOut: (file) => inAgentFolder(file.shown, given) });
    const [files, found] = [search.files, search.results];
    const unit = mode === "content" ? "matching lines" : "files";
    const total = found.reduce((sum, result) => sum + (result?.count ? (mode === "content" ? result.count : 1) : 0), 0);
    if (offset > 0 && offset >= total) throw new Error(`offset ${offset} is past the end: there are ${total} ${unit}`);
    const entries = files.flatMap((file, i) =>
      !found[i]?.count ? [] : mode === "content" ? found[i]!.lines! : [mode === "count" ? `${file.shown}: ${found[i]!.count}` : file.shown],
    );
    const page = entries.slice(offset, limit === 0 ? undefined : offset + limit);
    const skipped = files.flatMap((file, i) => {
      const why = found[i]?.skipped ?? (found[i]?.unreadable ? `unreadable (${found[i]!.unreadable})` : undefined);
      return why ? [`${file.shown} (${why})`] : [];
    });
    const searched = search.searched.filter(Boolean).length - skipped.length;
    const report = page.length > 0 ? [page.join("\n")] : [`No matches for /${pattern}/ in ${given} (${searched} files searched)`];
    if (offset + page.length < total) {
      report.push(`[${unit} ${offset + 1}-${offset + page.length} of ${total}. Next page: offset ${offset + page.length}${params.head_limit === undefined ? "" : `, head_limit ${limit}`}]`);
    }
    if (skipped.length > 0) report.push(`[skipped ${skipped.length} file(s): ${skipped.slice(0, 10).join(", ")}${skipped.length > 10 ? ", …" : ""}]`);
    report.push(...unreadableNote("folder", search.unreadable));
    if (search.timedOut) {
      const done = search.searched.filter(Boolean).length;
      report.push(`[stopped after ${GREP_LIMITS.milliseconds / 1000} s with ${done} of ${files.length} files searched: a pattern with nested repetition such as (a+)+ can run for ever on some lines; simplify it, or narrow path or glob]`);
    }
    const text = report.join("\n");
    return { llmContent: text, returnDisplay: text };
  },
});

/** The agent's own folder (saved results, settings) is searched only when path names it. */
function inAgentFolder(shown: string, given: string): boolean {
  const inside = `/${shown}`.includes("/.agent/");
  return inside && !`/${path.normalize(given)}/`.includes("/.agent/");
}
// #endregion grep

// #region tools
for (const tool of [bashTool, readFileTool, writeFileTool, editFileTool, grepTool]) registry.registerTool(tool);
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
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: resultFor(call.id, message) };
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
    const result = await cancellable(() => controller.abort(), () => tool.execute(params, controller.signal, call.id));
    // 8. llmContent goes to the model: whole when it is small, else kept in a file and previewed...
    const toModel: ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: resultFor(call.id, result.llmContent) };
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

// #region context
// The context is what the model read and wrote so far: each reply's usage counts it. The
// person sees it after every reply, so what a large result would cost, and what keeping it
// in a file saves, is there to see.
const CONTEXT_WINDOW = 200_000; // tokens one request may hold (Claude's models)

function showContext(usage: Message["usage"] | undefined): void {
  if (!usage) return; // a provider that does not count
  const used = usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0) + usage.output_tokens;
  const count = (tokens: number) => tokens.toLocaleString("en-US");
  console.log(dim(`[context: ${count(used)} of ${count(CONTEXT_WINDOW)} tokens, ${((100 * used) / CONTEXT_WINDOW).toFixed(1)}%]`));
}
// #endregion context

// #region end-turn
function showText(response: Message): void {
  for (const block of response.content) if (block.type === "text") console.log(block.text);
  showContext(response.usage);
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

export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s07",
    title: "Large Results",
    agentLoop,
    hasKey: API_KEY !== undefined,
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
  });

if (isMain(import.meta.url)) await main();
// #endregion program
