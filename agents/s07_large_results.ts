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
 *   |   (past 32 MB, only its end), and memory keeps only the two ends   |
 *   +--------------------------------------------------------------------+
 *      |  the model gets: head ... [N characters cut, the whole is in <file>] ... tail
 *      v  and looks closer only where it needs to:
 *   read_file(path, offset, limit)   numbered lines, a footer: "next page: offset 2001"
 *   grep(pattern, path, head_limit, offset)   the lines that match, a page at a time
 *   after each reply the person sees how full the context is: [context: 3,210 of 200,000 tokens]
 *
 * New since s06: results past 40,000 characters are kept whole in a file, read_file reads a
 * page at a time, grep pages its matches; regions `large-results`, `bash`, `read-file`,
 * `grep`, `context`, first after the config. The rest of s06 (the registry, the approval
 * step, write_file and edit_file) is imported from agents/s06_tool_registry.ts.
 * Machinery (lib/machinery): safe-read.ts pages a file of any size; search.ts and walk.ts
 * are s03's search.
 *
 *   npx tsx agents/s07_large_results.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s07_large_results.ts --approval-mode auto-edit
 */
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, ftruncateSync, openSync, realpathSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import type { ContentBlock, Message, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { inFolder } from "../lib/machinery/atomic-write.ts";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip, cutMarker } from "../lib/machinery/head-and-tail.ts";
import { runCommand } from "../lib/machinery/processes.ts";
import { PAGE_REACH, readPage } from "../lib/machinery/safe-read.ts";
import { GREP_LIMITS, searchFiles } from "../lib/machinery/search.ts";
import { unreadableNote } from "../lib/machinery/walk.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import {
  APPROVAL_HELP, approve, bashTool as s06Bash, DEFAULT_TIMEOUT, defineTool, editFileTool, inWorkspace,
  modeProblem, refuseDenied, safePath, ToolRegistry, workspace, writeFileTool, type AgentTool, type Params,
  type ToolResult,
} from "./s06_tool_registry.ts";

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads the
// SDK at the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace (s06's: the directory the program runs in) is read at each call; so is the system prompt.
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, grep to search, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `Your context is a budget. A result too large to send whole is saved in a file, and you get its first and last lines: grep that file or read_file the lines you need, never all of it. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// #endregion config

// #region large-results
// What the model reads stays in its context for the rest of the session, and is paid for at
// every request after. So a result of up to RESULT_LIMIT characters goes to the model whole,
// and a larger one is written whole to a file in the workspace: the model gets its first and
// last lines, its size and the file's name, and reads the part it needs with read_file or
// grep. Nothing is cut without being kept.
const RESULT_LIMIT = 40_000; // characters of one result the model gets whole
const PREVIEW = { head: 2_000, tail: 3_000 }; // what it sees of a larger one, from each end
const RESULTS_FOLDER = ".agent/tool-results";
// A saved result keeps at most its first 32 MB and its end: `timeout 120 yes` would fill 37 GB (an object: a test can lower it).
export const RESULT_FILE = { maxBytes: 32 * 1024 * 1024 };

/** s06's tool, whose execute may also get the call's id: bash names its saved output after it. */
interface LargeResultTool extends AgentTool {
  execute(params: Params, signal: AbortSignal, callId?: string): Promise<ToolResult>;
}

/**
 * One call's result on its way to the model, added as it arrives (bash) or all at once (any
 * other tool). Memory holds the result while it is at most RESULT_LIMIT characters; past
 * that, its bytes go to a file as they come, and memory keeps only the two ends the model
 * will see. A command that prints 100 MB fills neither memory nor the context; the file
 * keeps its first RESULT_FILE.maxBytes and its end, and says what it left out between.
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
  private inFile = 0; // bytes written to the file, up to RESULT_FILE.maxBytes
  private past = { bytes: 0, lineBreaks: 0, end: Buffer.alloc(0) as Buffer }; // what came after those: counted, and its last bytes
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
      const room = Math.max(0, RESULT_FILE.maxBytes - this.inFile);
      writeFileSync(this.fd, bytes.subarray(0, room));
      this.inFile += Math.min(room, bytes.length);
      if (bytes.length > room) this.writeEnd(bytes.subarray(room));
    } catch (error) {
      this.problem = `writing ${this.saved} failed: ${(error as Error).message}`;
      closeSync(this.fd);
      [this.fd, this.saved] = [undefined, undefined];
    }
  }

  // Past RESULT_FILE.maxBytes the file's end is written again as each piece comes: a note of what
  // was left out, then the last bytes. The file shows the gap, and can be read at any moment.
  private writeEnd(bytes: Buffer): void {
    this.past = { bytes: this.past.bytes + bytes.length, lineBreaks: this.past.lineBreaks + lineBreaksIn(bytes), end: lastBytes(this.past.end, bytes) };
    const cut = this.leftOut();
    const note = cut ? `\n[... ${cut.text} left out here: a saved result keeps its first ${RESULT_FILE.maxBytes / 1024 / 1024} MB and its end ...]\n` : "";
    const end = Buffer.concat([Buffer.from(note), this.past.end]);
    writeSync(this.fd!, end, 0, end.length, this.inFile);
    ftruncateSync(this.fd!, this.inFile + end.length);
  }

  /** What the file left out, if anything: the bytes between its first part and its end. */
  private leftOut(): { text: string; lineBreaks: number } | undefined {
    const bytes = this.past.bytes - this.past.end.length;
    const lineBreaks = this.past.lineBreaks - lineBreaksIn(this.past.end);
    return bytes > 0 ? { text: `${bytes.toLocaleString("en-US")} bytes (${lineBreaks.toLocaleString("en-US")} lines)`, lineBreaks } : undefined;
  }

  /** The result so far, for a command stopped part-way (the name lib/machinery/processes.ts asks for). */
  text(): string {
    return this.finish();
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
    const cut = this.leftOut();
    const saved = cut ? `saved in ${this.saved} but for ${cut.text} in the middle` : `saved whole in ${this.saved}`;
    return this.saved ? `[${size}, ${saved}; ${sent}]` : `[${size}; ${this.problem}; ${sent}]`;
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
    const cut = this.leftOut(); // in the file: the lines it left out, and the note on a line of its own
    const [whole, fileLines] = cut ? [`The result, but for ${cut.text} in the middle,`, lines - cut.lineBreaks + 2] : ["The whole result", lines];
    const where = this.saved
      ? `${whole} is in ${this.saved}, ${fileLines} lines: read the lines you need with read_file (the last ones below start at line ${fileLines - tailLines + 1}) or search it with grep`
      : `It could not be kept (${this.problem}), so the middle is lost`;
    return `${head}${cutMarker(this.characters - head.length - tail.length, this.characters)}[${where}.]\n${tail}`;
  }
}

/** How many line breaks `bytes` holds. */
function lineBreaksIn(bytes: Buffer): number {
  let count = 0;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 10) count += 1;
  return count;
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
  const made = !existsSync(safePath(RESULTS_FOLDER)); // the agent's notes, not the project's: git never lists them
  inFolder(inWorkspace(), safePath(RESULTS_FOLDER), RESULTS_FOLDER, true, () => {
    if (made) writeFileSync(".gitignore", "*\n", { flag: "wx" });
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
// s06's bash, but its output goes into a ResultFile as it arrives: a command that prints
// 100 MB fills neither memory nor the context, and the output is kept in a file.
const bashTool: LargeResultTool = {
  ...s06Bash,
  async execute(params, signal, callId = `bash-${randomBytes(4).toString("hex")}`) {
    const command = String(params.command);
    refuseDenied(command);
    const output = new ResultFile(callId);
    const code = await runCommand(command, { cwd: workspace(), timeoutMs: Number(params.timeout ?? DEFAULT_TIMEOUT) * 1000, output, signal });
    const text = output.finish() || "(no output)";
    return {
      llmContent: code === 0 ? text : `${text.replace(/\n$/, "")}\n[exit code ${code ?? "killed"}]`,
      returnDisplay: [output.note, text.replace(/\n$/, ""), `(exit code ${code ?? "killed"})`].filter(Boolean).join("\n"),
    };
  },
};
// #endregion bash

// #region read-file
const PAGE_LINES = 2000; // lines read_file shows at most, unless asked for fewer
const MAX_LINE = 2000; // characters shown of one line

const readFileTool = defineTool({
  name: "read_file",
  displayName: "ReadFile",
  kind: "read",
  description:
    `Read a text file in the workspace as numbered lines: ${PAGE_LINES} at most, fewer if the page would pass ${RESULT_LIMIT} characters; ` +
    `lines are cut at ${MAX_LINE} characters. A footer says which lines you got and the offset of the next page. Files of any size can be paged, up to ${PAGE_REACH / 1024 / 1024} MB in; saved results too.`,
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
    // Only the page's lines are kept, whatever the file's size; a page stops before
    // RESULT_LIMIT characters, so a read never needs a file of its own (lib/machinery/safe-read.ts).
    const page = readPage(safePath(given), given, offset, limit ?? PAGE_LINES, RESULT_LIMIT);
    if (offset > Math.max(page.total, 1)) {
      throw new Error(`offset ${offset} is past the end of ${given}, which has ${page.total} line${page.total === 1 ? "" : "s"}`);
    }
    const last = offset + page.shown.length - 1;
    // A file read only part of the way ("exact" false: lib/machinery/safe-read.ts) has at least page.total lines.
    const range = `${last === offset ? `line ${offset}` : `lines ${offset}-${last}`} of ${page.exact ? "" : "at least "}${page.total}`;
    // The footer says what the model has and, when there is more, the exact call for the next page.
    let footer = "";
    if (last < page.total || !page.exact) {
      const why = page.full ? `: a page stops before ${RESULT_LIMIT} characters` : "";
      footer = `[${range}${why}. Next page: offset ${last + 1}${limit === undefined ? "" : `, limit ${limit}`}]`;
    } else if (offset > 1) footer = `[${range}: the end of the file]`;
    if (page.total === 0) return { llmContent: `(${given} is empty)`, returnDisplay: `${given}: empty` };
    // The model needs the lines; the person only needs to know which were read.
    const text = footer ? `${page.shown.join("\n")}\n\n${footer}` : page.shown.join("\n");
    return { llmContent: text, returnDisplay: `${given}: ${footer ? range : `all ${page.total} lines`}` };
  },
});
// #endregion read-file

// #region grep
// Search is how the model finds the part worth reading, in the project or in a saved result,
// and it pages its answer as read_file pages lines. The files come from the walk (what a
// project ignores is left out) and are searched in worker threads with a time
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
    const search = await searchFiles(realpathSync(workspace()), safePath(given), given, String(params.glob ?? "**/*"), pattern, { mode, maxResults, leaveOut: (file) => inAgentFolder(file.shown, given) });
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

// #region tools
/** s06's registry, holding s06's tools as this stage changes them, and grep. */
export const registry = new ToolRegistry<LargeResultTool>();
for (const tool of [bashTool, readFileTool, writeFileTool, editFileTool, grepTool]) registry.registerTool(tool);
/** What the model sees, from the registry. */
export const TOOLS = registry.getFunctionDeclarations();
// #endregion tools

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
    console.log(dim(indent(visible(clip(message, 2000, "head")))));
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: resultFor(call.id, message) };
  };
  // 3. Look the tool up.
  const tool = registry.getTool(call.name);
  if (!tool) console.log(dim(`> ${visible(call.name)}`));
  if (!tool) return failed(`Error: unknown tool "${call.name}". Tools: ${registry.getAllTools().map((t) => t.name).join(", ")}.`);
  // 4. Validate. Models send null for what they leave out: it means "not given", for every tool.
  const params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  const problem = tool.validateToolParams(params);
  if (problem) {
    console.log(dim(`> ${tool.displayName} ${visible(clip(JSON.stringify(params), 120, "head"))}`));
    return failed(`Error: ${call.name} was not run: ${problem}.`);
  }
  // 5. Describe, in one line, what is about to happen.
  console.log(dim(`> ${tool.displayName} ${visible(clip(tool.getDescription(params).split("\n")[0], 120, "head"))}`));
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
  for (const block of response.content) if (block.type === "text") console.log(visible(block.text)); // model text: escapes shown, never obeyed
  showContext(response.usage);
}

/** The model stopped asking for tools. Say so when the reason is not a normal ending. */
function endTurn(response: Message, messages: MessageParam[]): void | Promise<void> {
  // A server tool (web search, code execution) still at work: the turn goes on when it is sent back as it is.
  if (response.stop_reason === "pause_turn") return agentLoop(messages);
  if (response.stop_reason === "refusal") console.log("[the model declined to continue]");
  const cutOff = { max_tokens: `at ${MAX_TOKENS} tokens: ask for something smaller, or raise MAX_TOKENS`, model_context_window_exceeded: "because the context window is full: start a new session" };
  if (response.stop_reason !== "max_tokens" && response.stop_reason !== "model_context_window_exceeded") return;
  console.log(`[the reply was cut off ${cutOff[response.stop_reason]}]`);
  // A tool call cut off mid-way cannot run, but it needs an answer, or the next request is refused.
  const calls = response.content.filter((block) => block.type === "tool_use");
  if (calls.length === 0) return;
  messages.push({
    role: "user",
    content: calls.map((call) => ({
      type: "tool_result" as const,
      tool_use_id: call.id,
      is_error: true,
      content: `Not run: your reply was cut off (${response.stop_reason}) before this call was complete.`,
    })),
  });
}
// #endregion end-turn

// #region program
export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s07",
    title: "Large Results",
    agentLoop,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
    help: [APPROVAL_HELP],
  });

if (isMain(import.meta.url)) await main();
// #endregion program
