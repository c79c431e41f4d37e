/**
 * s_full.ts - The Capstone
 *
 * "Every mechanism together: the agent you would use": the loop of s01, every piece of s02 to s20 around it.
 *
 *   a prompt (or /compact, /cost)   system prompt: rules + skills list + memory (s12)
 *      |                                    |
 *      v                                    v
 *   +------------------------------------------------------------------------+
 *   | runTurn: hooks around the turn (s17), notices of ended tasks (s18);    |
 *   |   while a teammate works the lead waits, then wakes with notices (s19) |
 *   | agent-loop (the same text as in s01), on a session log (s16)           |
 *   |   client.messages.create --> client (s11): transcript, micro-compact,  |
 *   |                              auto-compact over COMPACT_THRESHOLD;      |
 *   |                              breakpoints (s14); the parent's reply     |
 *   |                              streamed (s13); its usage counted (s14)   |
 *   |   PROVIDER=openai: provider = Chat Completions adapter, replies whole  |
 *   |     (to-chat, from-chat: s15); broken arguments refused in runTool     |
 *   |   runTools --> runTool (s06): look up, validate, approve, execute;     |
 *   |     rules (deny, ask, allow) and PreToolUse/PostToolUse hooks (s17)    |
 *   |     result > 40,000 characters: kept whole in a file (s07)             |
 *   |     todo reminder rides in the last result (s09)                       |
 *   |   endTurn: the turn's tokens and cost (s14)                            |
 *   +------------------------------------------------------------------------+
 *      |  registry (s06)
 *      v
 *   core: bash read_file write_file edit_file (s02, s03)   grep (s07)
 *   Part I: glob ls (s03) web_fetch (s04) ask_user (s05)
 *   plan: todo_write (s09)   task: a subagent with a fresh context (s10)
 *   compact (s11)   load_skill save_memory (s12)   bash_output kill_task (s18)
 *   task_create task_update task_list task_get (s19: a board in .agent/tasks/)
 *   spawn_teammate send_message read_inbox (s19): a teammate is the same loop
 *     with its own history and tools, its lines shown as [name], 4 at most
 *   worktree_create worktree_list worktree_remove (s20): a git checkout per task in
 *     .agent/worktrees/; bash read_file write_file edit_file take `worktree`, and a
 *     teammate works in its task's; the agent's notes stay in the main workspace
 *   found outside: discovery command + MCP servers from .agent/settings.json, .mcp.json (s08)
 *
 * New: nothing of its own. Where each piece comes from (regions keep their stage's names):
 *   s06 tool, registry, sandbox, write-file, edit-file, approval (s10's), run-tool (joined here)
 *   s07 large-results, bash, read-file, grep, context      s05 glob, ls, web-fetch,
 *   s08 settings, command-tools, mcp, discovery               web-address, ask-user
 *   s09 todo, reminder     s10 subagent     s11 transcript, micro-compact, auto-compact,
 *   compact-tool, client   s12 skills, memory, knowledge   s13 stream
 *   s14 breakpoints, prices, accounting   s15 to-chat, from-chat   s16 session-log, resume, repair
 *   s17 rules, hooks (and settings, with s08's)   s18 background, task-tools, notices
 *   s19 board, inbox, team, board-tools, team-tools
 *   s20 worktrees, in-worktree, teammates, worktree-tools
 *   here: part-one, tools
 * The regions where mechanisms meet (config, tool, client, run-tool, end-turn, program) say so.
 * The machinery every stage calls is in lib/machinery, as in the stages (Under the hood).
 *
 *   npx tsx agents/s_full.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s_full.ts --approval-mode auto-edit
 *   PROVIDER=openai npx tsx agents/s_full.ts    (OPENAI_API_KEY, OPENAI_BASE_URL, MODEL_ID)
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { EventEmitter, once } from "node:events";
import { randomBytes, randomUUID } from "node:crypto";
import dns from "node:dns";
import {
  appendFileSync, closeSync, constants, existsSync, fstatSync, fsyncSync, ftruncateSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync,
  realpathSync, renameSync, rmSync, statSync, writeFileSync, writeSync,
} from "node:fs";
import http from "node:http";
import https from "node:https";
import { createRequire } from "node:module";
import { BlockList, isIP, type LookupFunction } from "node:net";
import os from "node:os";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import { isDeepStrictEqual } from "node:util";
import type {
  ContentBlock, ContentBlockParam, ImageBlockParam, Message, MessageCreateParamsNonStreaming, MessageParam, RawMessageStreamEvent,
  StopReason, TextBlockParam, Tool, ToolResultBlockParam, ToolUnion, ToolUseBlock,
} from "@anthropic-ai/sdk/resources/messages";
import type { ErrorObject } from "ajv";
import { notPublic } from "../lib/machinery/addresses.ts";
import { inFolder, writeAtomically, type WriteRoot } from "../lib/machinery/atomic-write.ts";
import { diffOf, dim, firstLines, forTerminal, indent, visible } from "../lib/machinery/display.ts";
import { clip, cutMarker, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { htmlToText } from "../lib/machinery/html-to-text.ts";
import { decode, describeBinary, readBody } from "../lib/machinery/http-body.ts";
import { McpConnection, type CallLimits, type McpEntry } from "../lib/machinery/mcp.ts";
import { runCommand, type OutputSink } from "../lib/machinery/processes.ts";
import { MAX_FILE_BYTES, PAGE_REACH, readPage, readText, textForDiff } from "../lib/machinery/safe-read.ts";
import { GREP_LIMITS, searchFiles } from "../lib/machinery/search.ts";
import { dialectOf, jsonSchemaValidator, optionalString, outsideSchemaCheck, requireString, schemaCheck, schemaForModel } from "../lib/machinery/validation.ts";
import { byName, findFiles, globMatcher, unreadableNote } from "../lib/machinery/walk.ts";
import type { Scenario } from "../lib/course/scenario.ts";
import { postChatCompletion } from "../lib/runtime/chat-completions.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { checkedReply, modelClient, type ModelClient } from "../lib/runtime/model.ts";
import { describeProviderError, isMain, optionValue, runAsMain } from "../lib/runtime/program.ts";
import { PERSONAL, readJson, rememberTrusted, SETTINGS_FILE, trustedProject } from "../lib/runtime/settings.ts";
import { cancellable, terminal } from "../lib/runtime/terminal.ts";

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
// s15: which format the client speaks. anthropic (the default) is s06's client, the Messages
// API; openai is Chat Completions at OPENAI_BASE_URL (OpenAI's by default; Ollama, Gemini,
// Groq, LM Studio and vLLM serve it too), with OPENAI_API_KEY sent as a bearer token.
const PROVIDERS = ["anthropic", "openai"];
const PROVIDER = process.env.PROVIDER || "anthropic";
const OPENAI_API_KEY = process.env.OPENAI_API_KEY || undefined;
const OPENAI_BASE_URL = process.env.OPENAI_BASE_URL || "https://api.openai.com/v1";
const MAX_OUTPUT = 30_000; // characters of a command's stderr kept for its error
const BASE_URL = process.env.ANTHROPIC_BASE_URL || undefined;
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads it at the
// first request), which also gives a streamed reply's events (s13); with no key a demo replays.
// The loop's `client` (s11) compacts a request, then hands it to `provider`: the parent's, a
// subagent's (s10) and a teammate's (s19). With PROVIDER=openai, `provider` is s15's adapter
// (viaChatCompletions, region `client`), which has no stream: every reply then comes whole.
const anthropic = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: BASE_URL });
const provider: ModelClient = PROVIDER === "openai" ? { messages: { create: viaChatCompletions } } : anthropic;
// The workspace is the directory the program runs in, read at each call (the replay and the tests
// run this code in a temporary folder), as is the system prompt: every stage's sentences, then the
// skills and the memory (region `knowledge`). s20 gives a call a git worktree as its root (one
// process: no chdir); the store is a function, as a teammate's root changes with its task.
const workingRoot = new AsyncLocalStorage<() => string>();
const workspace = () => workingRoot.getStore()?.() ?? process.cwd();
// The agent's own notes (.agent/: tool results, memory, skills, settings, sessions, the board) are
// the main workspace's, whatever a call's root: a worktree holds the project's files only.
const atHome = <T>(work: () => T): T => workingRoot.run(() => process.cwd(), work);
// s19: a teammate's own prompt (region `team`) names it and the roster; the lead's ends with the team.
const systemPrompt = () =>
  member() ? teammatePrompt(member()!) :
  `You are a coding agent working in ${workspace()}. read_file to look, grep to search, glob and ls to find files, edit_file to change one exact place, write_file for new files, bash for the rest; ` +
  `web_fetch reads a web page, ask_user asks the person when only they can decide. Act first, then report briefly. ` +
  `Your context is a budget. A result too large to send whole is saved in a file, and you get its first and last lines: grep that file or read_file the lines you need, never all of it. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make. ` +
  `For work of three steps or more, write the plan first with todo_write; keep one item in_progress, and send the list again as soon as an item is done. ` +
  `For a side task that takes much reading (surveying a folder, finding where something is done), call task: a subagent does it in a fresh context and only its answer comes back. ` +
  `For a slow command (a build, a long test run, a server), set run_in_background on bash and go on with other work: you are told when it ends, so do not wait or poll for it. ` +
  `Old tool results are cleared from what you see, and a long conversation is replaced by a summary; every message stays in .agent/sessions/. ` +
  `Call compact when a large piece of work is done and its details are no longer needed. ` +
  `Before a task that one of the skills below covers, load it with load_skill and follow it. When the person tells you something worth knowing in later sessions ` +
  `(a command, a convention, a preference), keep it with save_memory, one short fact per call. ` +
  `The conversation is saved as it goes and may be resumed later: a call whose result says it was interrupted may or may not have run, so look before doing it again. ` +
  `For work that splits into parts, put the parts on the task board (task_create; blocked_by names what must be completed first) and start teammates with spawn_teammate: they work at the same time as you, ` +
  `claim tasks by making themselves the owner, and take the next free task by themselves. When your turn ends while they work, you wait, and are told when each is idle or fails. ` +
  `read_inbox gives what they sent you. ` +
  `To keep each task's changes apart, give the task a git worktree before a teammate takes it (worktree_create with its task_id): the teammate then works in that checkout, on its own branch. ` +
  `Your own bash, read_file, write_file and edit_file work inside a worktree when you set worktree. worktree_list shows them; worktree_remove removes one when its work is merged or no longer needed. ` +
  `When the work is done, stop them (send_message with stop) and report. The team now: ${roster().join(", ")}.` +
  knowledge();
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
// The sessions of a workspace, one file each, in the agent's own folder (which searches leave out).
const SESSIONS = ".agent/sessions";
const LIST_LIMIT = 20; // sessions `--resume` lists, newest first
const NOTES_SHOWN = 10; // repairs listed one by one when a session is resumed; the rest are counted
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
  /** True when this call changes what the agent itself reads at start (its settings, skills, memory): then it asks in every mode but yolo. */
  changesTheAgent?(params: Params): boolean;
  /**
   * Do the work. A failure throws an Error whose message the model reads. `callId` is the
   * tool_use id: a tool that saves its output as it arrives (bash) names the file after it.
   */
  execute(params: Params, signal: AbortSignal, callId?: string): Promise<ToolResult>;
}

/** A tool from its parts; its parameters are checked against its schema, compiled at its first call. */
function defineTool(spec: Omit<AgentTool, "validateToolParams" | "shouldConfirmExecute"> & Partial<Pick<AgentTool, "shouldConfirmExecute">>): AgentTool {
  return { shouldConfirmExecute: async () => false, ...spec, validateToolParams: schemaCheck(spec.parameterSchema) };
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
  if (workspace() !== process.cwd()) return atHome(() => newResultFile(callId)); // s20: a call in a worktree keeps its result in the main workspace too
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

// #region background
// bash waits for its command's end, and the agent with it: a five-minute build is five
// minutes of nothing. A command run in the background is a task instead. bash answers at once
// with the task's id, the command runs on in its own process group (lib/machinery/processes.ts,
// as every command does), and what it prints is kept as it arrives, for the model to read
// when it wants. Each limit below is a bound on what the agent holds or leaves running.
export const TASK_LIMITS = {
  running: 8, // tasks at once: the ninth is refused, naming the eight
  timeLimitMs: 10 * 60_000, // a forgotten server or a hung build ends by itself
  finishedKept: 20, // finished tasks the agent still answers for; older ones are forgotten
  noticeLines: 5, // the last lines a notice quotes
};

interface BackgroundTask {
  id: string;
  command: string;
  startedAt: number;
  /** "running", then "exit code 0", "ended by the time limit (600 s)", "ended by kill_task", ... */
  status: string;
  output: TaskOutput;
  /** Ends the command and everything it started, even after the shell has exited (from runCommand). */
  end: () => void;
  killed: boolean;
  /** Settles once the status is final. */
  ended: Promise<void>;
}

let tasks: BackgroundTask[] = [];
let tasksStarted = 0;
const running = () => tasks.filter((task) => task.status === "running");
const named = (task: BackgroundTask) => `${task.id} (${clip(task.command.replace(/\s+/g, " "), 60, "head")})`;

/** Start `command` as a task and return at once; the ninth while eight run is refused, naming them. */
export function startTask(command: string, timeLimitMs = TASK_LIMITS.timeLimitMs): BackgroundTask {
  const busy = running();
  if (busy.length >= TASK_LIMITS.running) {
    throw new Error(`${busy.length} background tasks are running, the most at once: ${busy.map(named).join(", ")}. Read them with bash_output, wait for one to end, or end one with kill_task.`);
  }
  const task: BackgroundTask = { id: `bg_${++tasksStarted}`, command, startedAt: Date.now(), status: "running", output: new TaskOutput(), end: () => {}, killed: false, ended: Promise.resolve() };
  tasks.push(task);
  // Not awaited: that is the whole point. The promise settles when the command ends, however it ends.
  task.ended = runCommand(command, { cwd: workspace(), timeoutMs: timeLimitMs, output: task.output, onStart: (end) => (task.end = end) }).then(
    (code) => taskEnded(task, task.killed ? "ended by kill_task" : code === null ? "ended by a signal" : `exit code ${code}`),
    // runCommand rejects at its time limit ("timed out after ...") or when bash cannot start.
    (error: Error) => taskEnded(task, /^timed out/.test(error.message) ? `ended by the time limit (${timeLimitMs / 1000} s)` : `failed: ${error.message.split("\n")[0]}`),
  );
  return task;
}

/** The status is final: a notice waits for the model (bash_output or kill_task may show it the end first). Then old records go. */
function taskEnded(task: BackgroundTask, status: string): void {
  if (!tasks.includes(task)) return; // a task of a session that was reset (prepareReplay)
  task.status = status;
  task.output.finish();
  notify(task.id, endNotice(task));
  const finished = tasks.filter((other) => other.status !== "running");
  const forgotten = finished.slice(0, Math.max(0, finished.length - TASK_LIMITS.finishedKept));
  tasks = tasks.filter((other) => !forgotten.includes(other));
}

/** The task with this id, or an error that says which ids there are. */
function taskOf(id: string): BackgroundTask {
  const task = tasks.find((candidate) => candidate.id === id);
  if (task) return task;
  const number = Number(/^bg_([1-9]\d*)$/.exec(id)?.[1]); // as bash wrote it: bg_03 is no id
  if (number >= 1 && number <= tasksStarted) throw new Error(`${id} ended long ago and is forgotten: only the last ${TASK_LIMITS.finishedKept} finished tasks are kept`);
  const known = tasks.map((other) => `${other.id} (${other.status})`).join(", ");
  throw new Error(`there is no task ${JSON.stringify(id)}. ${known ? `The tasks: ${known}.` : "No background task has been started."}`);
}

/** The status, then what the task printed since the last read; the next read starts after it. */
function readTask(task: BackgroundTask): string {
  const fresh = task.output.takeUnread();
  if (task.status !== "running") forgetNotice(task.id); // the model sees the end here: no notice later
  const status = task.status === "running" ? `running (for ${Math.round((Date.now() - task.startedAt) / 1000)} s)` : task.status;
  return `${named(task)}: ${status}.\n${fresh ? `Output since the last read:\n${fresh}` : "No new output since the last read."}`;
}

/** End a task and everything it started; one that had ended may have left something running, which ends too. */
async function killTask(task: BackgroundTask): Promise<string> {
  const wasRunning = task.status === "running";
  task.killed = wasRunning;
  task.end();
  await task.ended;
  return `${wasRunning ? `Ended ${task.id} and everything it started.` : `${task.id} had already ended; anything it left running has been ended too.`}\n${readTask(task)}`;
}

/** What the model reads when a task has ended: short, the end of the output being where errors usually are. */
function endNotice(task: BackgroundTask): string {
  const last = task.output.lastLines(TASK_LIMITS.noticeLines);
  const more = task.output.hasUnread() ? `\nbash_output("${task.id}") gives all it printed since your last read.` : "";
  return `${named(task)} ended: ${task.status}.\n${last ? `Its last lines:\n${indent(last)}` : "It printed nothing."}${more}`;
}

// What the model has not read yet is kept to what one result can carry, less room for the
// status line, so runTool never cuts it a second time and the marker's count stays right.
const UNREAD_KEPT = MAX_OUTPUT - 1_000;

/** A task's output as it arrives: what the model has not read yet, both ends kept (lib's HeadAndTail), and the last characters, for the notice. */
class TaskOutput implements OutputSink {
  private decoder = new StringDecoder("utf8"); // a character split across two chunks stays whole
  private unread = new HeadAndTail(UNREAD_KEPT);
  private latest = "";

  add(chunk: Buffer): void {
    this.keep(this.decoder.write(chunk));
  }

  finish(): void {
    this.keep(this.decoder.end());
  }

  private keep(text: string): void {
    if (text === "") return;
    this.unread.add(text);
    // A cut must not leave half of a character made of two UTF-16 units: the API refuses that.
    this.latest = (this.latest + text).slice(-2000).replace(/^[\udc00-\udfff]/, "");
  }

  hasUnread(): boolean {
    return this.unread.text() !== "";
  }

  takeUnread(): string {
    const text = this.unread.text();
    this.unread = new HeadAndTail(UNREAD_KEPT);
    return text;
  }

  lastLines(count: number): string {
    return this.latest.trimEnd().split("\n").slice(-count).map((line) => clip(line, 200, "head")).join("\n");
  }

  /** What runCommand quotes in its own errors. */
  text(): string {
    return this.latest;
  }
}
// #endregion background

// #region bash
// s06's bash, with s07's execute (the output kept as it arrives) and s18's run_in_background.
// A denylist is advice, not a boundary: `rm -r -f /` or a script file slips past it.
// The real answer is asking a person before running a command: the approval step below.
const DENYLIST = ["rm -rf /", "sudo ", "shutdown", "reboot", "> /dev/sd", "mkfs"];
const DEFAULT_TIMEOUT = 120;
const MAX_TIMEOUT = 600;

const bashTool = defineTool({
  name: "bash",
  displayName: "Shell",
  kind: "execute",
  description:
    "Run a shell command in the workspace and return its output and exit code. stdin is closed, so commands must not wait for input. " +
    `For a slow command (a build, a test suite, a server), set run_in_background: bash then returns at once with a task id (bg_1, bg_2, ...). ` +
    `Read its output with bash_output, end it with kill_task; you are told when it ends. At most ${TASK_LIMITS.running} run at once.`,
  parameterSchema: {
    type: "object",
    properties: {
      command: { type: "string", description: "The command, run with bash -c." },
      timeout: { type: "integer", minimum: 1, maximum: MAX_TIMEOUT, description: `Seconds before the command is ended (default ${DEFAULT_TIMEOUT}; in the background ${TASK_LIMITS.timeLimitMs / 1000}).` },
      run_in_background: { type: "boolean", description: "Run it as a background task and return at once with its id (default false)." },
    },
    required: ["command"],
    additionalProperties: false,
  },
  getDescription: (params) => `${params.command}${params.run_in_background === true ? "   (in the background)" : ""}`,
  async shouldConfirmExecute(params) {
    if (params.run_in_background !== true) return { title: "Run this command?", details: String(params.command) };
    const limit = params.timeout === undefined ? `${TASK_LIMITS.timeLimitMs / 60_000} minutes` : `${params.timeout} s`;
    return { title: "Run this command in the background?", details: `${params.command}\n(it runs on while the agent works, until it ends, kill_task ends it, ${limit} pass, or the program ends)` };
  },
  async execute(params, signal, callId = `bash-${randomBytes(4).toString("hex")}`) {
    const command = String(params.command);
    const blocked = DENYLIST.find((pattern) => command.includes(pattern));
    if (blocked) throw new Error(`refused: the command contains "${blocked.trim()}", which this agent does not run`);
    if (params.run_in_background === true) {
      // s18: a task runs on after this call returns. A subagent's context ends with its run, so it could never read its task's output.
      if (childRun.getStore()) throw new Error("background tasks belong to the main agent: run the command in the foreground, or report back and let the main agent start it");
      const task = startTask(command, params.timeout === undefined ? undefined : Number(params.timeout) * 1000);
      return {
        llmContent: `Started ${task.id} in the background. Read its output with bash_output ("${task.id}"), end it with kill_task; you will be told when it ends.`,
        returnDisplay: `started ${task.id} in the background`,
      };
    }
    // The output is kept as it arrives: whole in memory while it is small, then in a file.
    const output = new ResultFile(callId);
    const code = await runCommand(command, { cwd: workspace(), timeoutMs: Number(params.timeout ?? DEFAULT_TIMEOUT) * 1000, output, signal });
    const text = output.finish() || "(no output)";
    return {
      llmContent: code === 0 ? text : `${text.replace(/\n$/, "")}\n[exit code ${code ?? "killed"}]`,
      returnDisplay: [output.note, text.replace(/\n$/, ""), `(exit code ${code ?? "killed"})`].filter(Boolean).join("\n"),
    };
  },
});
// #endregion bash

// #region task-tools
const bashOutputTool = defineTool({
  name: "bash_output",
  displayName: "BashOutput",
  kind: "read", // it reads what a task printed and changes nothing: no approval mode stops it
  description: "Read what a background task printed since your last read, and its status: running, exit code N, or ended by the time limit.",
  parameterSchema: {
    type: "object",
    properties: { task_id: { type: "string", description: "The id bash gave, e.g. bg_1." } },
    required: ["task_id"],
    additionalProperties: false,
  },
  getDescription: (params) => String(params.task_id),
  async execute(params) {
    const text = readTask(taskOf(String(params.task_id)));
    return { llmContent: text, returnDisplay: text };
  },
});

const killTaskTool = defineTool({
  name: "kill_task",
  displayName: "KillTask",
  // "execute": it ends processes, so it runs in order with the other commands. Nothing to
  // confirm (defineTool's default): it can only end a task the person approved.
  kind: "execute",
  description: "End a background task and everything it started. Returns its status and the output you had not read.",
  parameterSchema: {
    type: "object",
    properties: { task_id: { type: "string", description: "The id bash gave, e.g. bg_1." } },
    required: ["task_id"],
    additionalProperties: false,
  },
  getDescription: (params) => String(params.task_id),
  async execute(params) {
    const text = await killTask(taskOf(String(params.task_id)));
    return { llmContent: text, returnDisplay: text };
  },
});
// #endregion task-tools

// #region sandbox
/**
 * Resolve a path the model gave to a place inside the workspace, or refuse it before any
 * file is touched. `..` and absolute paths that lead out are refused, and so are symlinks
 * whose target is outside. `~` is only a folder name here: nothing expands it to home.
 */
function safePath(given: string): string {
  if (given.includes("\0")) throw new Error("the path contains a NUL byte");
  const root = rootFor(given);
  const full = path.resolve(root, given);
  if (!isInside(root, full)) throw new Error(`${given} is outside the workspace (${root})`);
  // The path as the file system will follow it: a link inside may point anywhere.
  const real = followLinks(full, given);
  if (!isInside(root, real)) throw new Error(`${given} leads outside the workspace through a symlink`);
  return real;
}

/** The root a path resolves from: the call's, but a saved result's is the main workspace's (s20, atHome): a
 * teammate in a worktree reads it where its preview says, the rest of .agent/ stays out of reach. Rules ask it too. */
function rootFor(given: string): string {
  return realpathSync(path.normalize(given).startsWith(path.join(".agent", "tool-results") + path.sep) ? atHome(workspace) : workspace());
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

/** Whether a write lands in the agent's own files, which it reads at start: .agent/, skills/ (s12), .mcp.json, .env. */
function isAgentFile(given: string): boolean {
  let relative: string[];
  try {
    // Where the write would land, links followed: `docs -> .agent` must not hide .agent/.
    relative = path.relative(realpathSync(workspace()), safePath(given)).split(path.sep);
  } catch {
    return false; // the sandbox refuses the path anyway
  }
  return [".agent", "skills"].includes(relative[0]) || (relative.length === 1 && (relative[0] === ".mcp.json" || relative[0].startsWith(".env")));
}

/** Where a file tool may write: the workspace, by the sandbox's own rule for "inside". */
const inWorkspace = (): WriteRoot => ({ root: realpathSync(workspace()), isInside });
// #endregion sandbox

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

// #region write-file
const writeFileTool = defineTool({
  name: "write_file",
  displayName: "WriteFile",
  kind: "edit",
  changesTheAgent: (params) => isAgentFile(String(params.path)),
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
    return { title: `${change.before === undefined ? "Create" : "Overwrite"} ${change.given}?`, details: diffOf(change.given, change.before, change.after) };
  },
  async execute(params) {
    const change = proposeWrite(params);
    writeAtomically(change.file, change.after, change.given, inWorkspace(), { createFolders: true });
    return { llmContent: `Wrote ${Buffer.byteLength(change.after)} bytes to ${change.given}`, returnDisplay: diffOf(change.given, change.before, change.after) };
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
  const before = existsSync(file) && !statSync(file).isDirectory() ? textForDiff(file, given) : undefined;
  return { given, file, before, after: String(params.content) };
}

// #endregion write-file

// #region edit-file
const editFileTool = defineTool({
  name: "edit_file",
  displayName: "Edit",
  kind: "edit",
  changesTheAgent: (params) => isAgentFile(String(params.path)),
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
    return { title: `Edit ${change.given}?`, details: diffOf(change.given, change.before, change.after) };
  },
  async execute(params) {
    const change = proposeEdit(params);
    writeAtomically(change.file, change.after, change.given, inWorkspace());
    const count = change.count;
    return { llmContent: `Edited ${change.given}: replaced ${count} occurrence${count === 1 ? "" : "s"}`, returnDisplay: diffOf(change.given, change.before, change.after) };
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
    const search = await searchFiles(realpathSync(workspace()), safePath(given), given, String(params.glob ?? "**/*"), pattern, { mode, maxResults, leaveOut: (file) => inAgentFolder(file.shown, given) || deniedToRead(file.shown) });
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

// #region glob
const MAX_PATHS = 100; // paths glob and ls show

/** At most `max` lines, and how many of `total` were left out. */
function capped(lines: string[], max: number, total = lines.length): string {
  const more = total - max;
  return lines.slice(0, max).join("\n") + (more > 0 ? `\n… and ${more} more` : "");
}

function glob(input: Record<string, unknown>): string {
  const pattern = requireString(input, "pattern");
  const given = optionalString(input, "path", ".");
  const { files, unreadable } = findFiles(realpathSync(workspace()), pattern, safeFolder(given));
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

/** A folder the model named, inside the workspace, or a clear error. */
function safeFolder(given: string): string {
  const folder = safePath(given);
  if (!existsSync(folder)) throw new Error(`${given} does not exist`);
  if (!statSync(folder).isDirectory()) throw new Error(`${given} is a file, not a folder`);
  return folder;
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

// #region part-one
// Part I's other tools, glob and ls (s03), web_fetch (s04) and ask_user (s05), as registry
// entries. Each wraps s05's own handler, in its s05 region (`glob`, `ls` and the `walk` they
// share; `web-fetch`, `ask-user`), so the registry adds its checks and nothing else changes.
const globTool = defineTool({
  name: "glob",
  displayName: "Glob",
  kind: "read",
  description: 'Find files by name with a glob pattern, e.g. "**/*.ts" or "src/**/*.{js,json}". Newest first, at most 100; skips .git, node_modules and what .gitignore lists.',
  parameterSchema: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "The glob pattern, relative to path." },
      path: { type: "string", description: "Folder to search from, relative to the workspace (default: the workspace)." },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  getDescription: (params) => `${params.pattern} in ${params.path ?? "."}`,
  async execute(params) {
    const text = glob(params);
    return { llmContent: text, returnDisplay: firstLines(text, 3) };
  },
});

const lsTool = defineTool({
  name: "ls",
  displayName: "List",
  kind: "read",
  description: "List a folder: names sorted, folders marked with a trailing /.",
  parameterSchema: { type: "object", properties: { path: { type: "string", description: "Folder relative to the workspace (default: the workspace)." } }, additionalProperties: false },
  getDescription: (params) => String(params.path ?? "."),
  async execute(params) {
    const text = ls(params);
    return { llmContent: text, returnDisplay: firstLines(text, 3) };
  },
});

const webFetchTool = defineTool({
  name: "web_fetch",
  displayName: "WebFetch",
  // It reads, and changes nothing here: it never asks, and plan mode allows it (as in s04).
  kind: "read",
  description:
    "Fetch a public http(s) URL and return its readable text: HTML is cleaned to the title and text, JSON and plain text come back as they are, at most 10,000 characters. Private and local addresses are refused.",
  parameterSchema: {
    type: "object",
    properties: {
      url: { type: "string", description: "The full URL, starting with http:// or https://." },
      timeout: { type: "number", description: "Seconds for the whole fetch, redirects included (default 30, at most 120)." },
    },
    required: ["url"],
    additionalProperties: false,
  },
  getDescription: (params) => String(params.url),
  async execute(params) {
    const text = await webFetch(params);
    return { llmContent: text, returnDisplay: firstLines(text, 3) };
  },
});

const askUserTool = defineTool({
  name: "ask_user",
  displayName: "AskUser",
  // Asking changes nothing, so no approval mode stops it; it waits its turn with the approval
  // questions (s10's turnToAsk), so a person is never asked two things at once.
  kind: "read",
  description:
    "Ask the person at the terminal a question and wait for the answer. Ask before a step that cannot be undone (deleting, overwriting) and when the request is unclear. For a choice give 2 to 4 options; the person may also answer in their own words. If no one is there you are told at once: then take the safe choice.",
  parameterSchema: {
    type: "object",
    properties: {
      question: { type: "string", description: "The question, complete enough to answer without scrolling back." },
      options: { type: "array", items: { type: "string" }, minItems: 2, maxItems: 4, description: "2 to 4 distinct choices, shown numbered. Leave out for an open question." },
    },
    required: ["question"],
    additionalProperties: false,
  },
  getDescription: (params) => String(params.question),
  async execute(params) {
    const done = await turnToAsk();
    try {
      const answer = await askUser(params);
      return { llmContent: answer, returnDisplay: answer };
    } finally {
      done();
    }
  },
});
// #endregion part-one

// #region web-fetch
const FETCH_TIMEOUT = 30; // seconds for the whole fetch: every redirect, the body and its conversion included
const MAX_FETCH_TIMEOUT = 120;
const MAX_REDIRECTS = 5;
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
  // Decompressed as the server says, counted as it arrives, cut at 10 MB (lib/machinery/http-body.ts).
  const { bytes, complete } = await readBody(response);
  const body = decode(bytes, type);
  const text = mime.includes("html") ? await htmlToText(body, signal) : body;
  if (status >= 400) {
    const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 300);
    throw new Error(`HTTP ${status} ${response.statusMessage} from ${url}${excerpt ? `: ${excerpt}` : ""}`);
  }
  return capText(text, complete) + (redirected ? `\n\n(after redirects, this page is ${url})` : "");
}

function capText(text: string, complete: boolean): string {
  if (text.length <= MAX_PAGE_TEXT && complete) return text;
  const cutBody = complete ? "" : "; the body was cut off at 10 MB";
  return `${text.slice(0, MAX_PAGE_TEXT)}\n... [web_fetch shows ${Math.min(text.length, MAX_PAGE_TEXT)} of ${text.length} characters${cutBody}]`;
}
// #endregion web-fetch

// #region web-address
// Which addresses are not public, and why, is a table of IANA's special-purpose ranges
// (lib/machinery/addresses.ts, notPublic). What is checked, and when, is the lesson: every
// address the name stands for, at every hop, and then only those addresses are connected to.
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

  // The question and options are the model's words: shown as they are, escapes written out.
  console.log(`\n${visible(question)}`);
  options.forEach((option, i) => console.log(`  ${i + 1}. ${visible(option)}`));
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

// #region settings
// Where tools from outside are configured: .agent/settings.json in the workspace (Qwen Code's
// keys) and the project's .mcp.json (Claude Code's file: its mcpServers). Each entry is checked
// against a JSON Schema before anything starts: a typo (`mcpServer`) is named rather than
// quietly doing nothing, and a broken entry is left out while the others are used. Both files
// are read by lib/runtime/settings.ts (readJson): only a regular file, of at most 256 KB.
const MCP_FILE = ".mcp.json";

/** One entry of mcpServers: lib's McpEntry (a program over stdio, or an address over HTTP), with `timeout` in milliseconds (to start, and for each call) and `trust`: its tools run without asking. */
type ServerSettings = McpEntry & { timeout?: number; trust?: boolean };
type Settings = { tools?: { toolDiscoveryCommand?: string; toolCallCommand?: string }; mcpServers?: Record<string, ServerSettings> };

const STRINGS = { type: "object", additionalProperties: { type: "string" } };
const SCHEMAS = {
  tools: {
    type: "object",
    properties: { toolDiscoveryCommand: { type: "string", minLength: 1 }, toolCallCommand: { type: "string", minLength: 1 } },
    dependencies: { toolDiscoveryCommand: ["toolCallCommand"] }, // a tool found must have a way to run
    additionalProperties: false,
  },
  server: {
    type: "object",
    properties: {
      type: { enum: ["stdio", "http"] }, command: { type: "string", minLength: 1 }, args: { type: "array", items: { type: "string" } }, env: STRINGS, cwd: { type: "string" },
      url: { type: "string", minLength: 1 }, headers: STRINGS, timeout: { type: "integer", minimum: 1 }, trust: { type: "boolean" },
    },
    if: { properties: { type: { const: "http" } }, required: ["type"] }, then: { required: ["url"] }, else: { required: ["command"] },
    additionalProperties: false,
  },
};

/** What both files of the workspace `root` configure, and in one line each what is wrong and left out. */
function readSettings(root: string): { settings: Settings; problems: string[] } {
  const settings: Settings = {};
  const problems: string[] = [];
  // One file for both stages: s17's permissions and hooks are read below (loadSettings), so they are no unknown setting here.
  for (const [file, keys] of [[SETTINGS_FILE, ["tools", "mcpServers", "permissions", "hooks"]], [MCP_FILE, ["mcpServers"]]] as const) {
    const { data, problem } = readJson(path.join(root, file), file);
    const shape = { type: "object", properties: Object.fromEntries(keys.map((key) => [key, { type: "object" }])), additionalProperties: false };
    const wrong = problem ?? (data === undefined ? "" : mistakes(shape, data));
    if (wrong) problems.push(`${problem ? "" : `${file}: `}${wrong}; nothing of it is used`);
    if (wrong || data === undefined) continue;
    const { tools, mcpServers = {} } = data as Settings;
    const toolsWrong = tools && mistakes(SCHEMAS.tools, tools, "tools");
    if (toolsWrong) problems.push(`${file}: ${toolsWrong}; the discovery command was left out`);
    else if (tools) settings.tools = tools;
    for (const [name, entry] of Object.entries(mcpServers)) {
      const entryWrong = mistakes(SCHEMAS.server, entry, `mcpServers.${name}`);
      if (entryWrong) problems.push(`${file}: ${entryWrong}; that server was left out`);
      else if (settings.mcpServers?.[name]) problems.push(`${file}: mcpServers.${name} was left out: ${SETTINGS_FILE} has a server of that name`);
      else (settings.mcpServers ??= {})[name] = entry;
    }
  }
  return { settings, problems };
}

/** What is wrong with `data`, each with its place under `at`: `mcpServers.docs.args must be an array`; "" when nothing. */
function mistakes(schema: object, data: unknown, at = ""): string {
  const check = jsonSchemaValidator().compile(schema); // ajv compiles a schema once, then keeps it
  return check(data) ? "" : placedErrors(check.errors ?? [], "the settings", at);
}

/** ajv's findings, each with its place: `mcpServers.docs.args must be an array`. */
function placedErrors(errors: ErrorObject[], whole: string, at = ""): string {
  return errors
    .filter((error) => error.keyword !== "if") // `must match "else" schema`: the error beside it says what is missing
    .map((error) => {
      const place = [at, ...error.instancePath.split("/").slice(1)].filter(Boolean).join(".");
      const { params } = error;
      if (error.keyword === "additionalProperties") return `${place ? `${place}: ` : ""}unknown setting "${params.additionalProperty}"`;
      if (error.keyword === "required") return `${place ? `${place}: ` : ""}"${params.missingProperty}" is missing`;
      if (error.keyword === "type") return `${place || whole} must be ${/^[aeiou]/.test(params.type) ? "an" : "a"} ${params.type}`;
      if (error.keyword === "enum") return `${place || whole} must be one of ${params.allowedValues.join(", ")}`;
      return `${place || whole} ${error.message}`;
    })
    .join("; ");
}

// s17: the person's file (~/.agent/settings.json) and the project's hold rules and hooks too.
// The person's file counts whole. The project's deny and ask rules count as they are: they only
// make the agent more careful. Its allow rules would wave its own calls through, and its hooks
// run its own commands: those count once the person trusts them. Both files are read once, at
// the start: a settings file edited during the session (by the model, say) changes nothing yet.
export const HOOK_EVENTS = ["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop"] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];
/** A hook as written (`entry`) and where; `matcher`: tool names with | between (none, or *: every tool); `timeout` in seconds. */
export type Hook = { matcher?: string; command: string; timeout?: number; at: string; entry: unknown };
type RulesAndHooks = { rules: Record<List, Rule[]>; hooks: Record<HookEvent, Hook[]> };

const none = (): RulesAndHooks => ({ rules: { deny: [], ask: [], allow: [] }, hooks: { PreToolUse: [], PostToolUse: [], UserPromptSubmit: [], Stop: [] } });
/** What this session follows: nothing until loadSettings runs. */
let { rules, hooks } = none();
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const placeOf = (item: Rule | Hook) => item.at.slice(0, item.at.indexOf(" in ")); // `permissions.allow[0]`

/** One file's rules and hooks; what cannot be read is named with its file and place, and left out. */
function readSettingsOf(data: unknown, file: string, problems: string[]): RulesAndHooks {
  const found = none();
  const skip = (at: string, why: string) => problems.push(`${file}: ${at} ${why}; it is ignored`);
  if (data === undefined) return found;
  if (!isObject(data)) return skip("the file", "is not a JSON object"), found;
  if (data.permissions !== undefined && !isObject(data.permissions)) skip("permissions", "must be an object of allow, ask and deny lists");
  for (const [list, texts] of Object.entries(isObject(data.permissions) ? data.permissions : {})) {
    if (!["deny", "ask", "allow"].includes(list)) skip(`permissions.${list}`, "is not a list of rules (allow, ask, deny; the approval mode is chosen where the agent starts)");
    else if (!Array.isArray(texts)) skip(`permissions.${list}`, "must be a list of rules");
    else texts.forEach((text: unknown, i) => {
      const rule = typeof text === "string" ? parseRule(text) : "a rule is a string";
      if (typeof rule === "string") skip(`permissions.${list}[${i}] ${JSON.stringify(text)}`, `cannot be read: ${rule}`);
      else found.rules[list as List].push({ ...rule, at: `permissions.${list}[${i}] in ${file}` });
    });
  }
  const tools = registry.getAllTools().map((tool) => tool.name);
  if (data.hooks !== undefined && !isObject(data.hooks)) skip("hooks", "must be an object of events");
  for (const [event, entries] of Object.entries(isObject(data.hooks) ? data.hooks : {})) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) skip(`hooks.${event}`, `is not an event (${HOOK_EVENTS.join(", ")})`);
    else if (!Array.isArray(entries)) skip(`hooks.${event}`, "must be a list of hooks");
    else entries.forEach((entry: unknown, i) => {
      const { matcher, command, timeout, ...more } = isObject(entry) ? entry : { command: undefined };
      const why =
        typeof command !== "string" || command.trim() === "" ? 'has no "command"'
        : matcher !== undefined && typeof matcher !== "string" ? 'has a "matcher" that is not tool names, with | between them'
        : timeout !== undefined && !(typeof timeout === "number" && timeout > 0 && timeout <= 600) ? 'has a "timeout" that is not seconds, more than 0 and at most 600'
        : Object.keys(more).length > 0 ? `has "${Object.keys(more)[0]}", which is not a setting of a hook (matcher, command, timeout)` : undefined;
      if (why) return void skip(`hooks.${event}[${i}]`, why);
      const unknown = typeof matcher === "string" ? matcher.split("|").find((name) => name !== "*" && !tools.includes(name)) : undefined;
      if (unknown) problems.push(`${file}: hooks.${event}[${i}]: its matcher names no tool "${unknown}" (this agent's: ${tools.join(", ")})`);
      found.hooks[event as HookEvent].push({ ...(entry as Hook), at: `hooks.${event}[${i}] in ${file}`, entry });
    });
  }
  return found;
}

/** Read both files, ask the person about what the project brings that is new, keep what this session follows. Returns the problems, printed too. */
export async function loadSettings(): Promise<string[]> {
  const problems: string[] = [];
  const read = (file: string, name: string) => {
    const { data, problem } = readJson(file, name); // a regular file of at most 256 KB, or refused (lib/runtime/settings.ts)
    if (problem) problems.push(`${problem}; nothing of it is used`);
    return readSettingsOf(data, name, problems);
  };
  const person = read(PERSONAL.file(), PERSONAL.name);
  const root = workspace();
  // Working in the home folder, the project's file is the person's own: read once, as theirs.
  const inHome = existsSync(os.homedir()) && realpathSync(os.homedir()) === realpathSync(root);
  const project = inHome ? none() : read(path.join(root, SETTINGS_FILE), SETTINGS_FILE);
  const brings = project.rules.allow.length > 0 || HOOK_EVENTS.some((event) => project.hooks[event].length > 0);
  const trusted = brings ? await trustProject(root, project, problems) : project; // only allow rules and hooks need trust
  rules = { deny: [...person.rules.deny, ...project.rules.deny], ask: [...person.rules.ask, ...project.rules.ask], allow: [...person.rules.allow, ...trusted.rules.allow] };
  hooks = Object.fromEntries(HOOK_EVENTS.map((event) => [event, [...person.hooks[event], ...trusted.hooks[event]]])) as RulesAndHooks["hooks"];
  for (const problem of problems.slice(0, 20)) console.log(`[settings] ${visible(clip(problem, 1000, "head"))}`); // 256 KB hold 40,000 broken rules: 20 tell what is wrong
  if (problems.length > 20) console.log(`[settings] ... and ${problems.length - 20} more problems like these (all of them: in the settings files as written)`);
  return problems;
}

/**
 * The project's allow rules and hooks the person trusts. What they trusted before, as it is
 * now, at once (kept in their own file, as s08 keeps a project's servers); what is new after
 * one question: y (this session), a (and remember it), n. No one at the terminal: not used.
 */
async function trustProject(root: string, project: RulesAndHooks, problems: string[]): Promise<RulesAndHooks> {
  const before = trustedProject(root).entries as { permissions?: { allow?: unknown }; hooks?: Record<string, unknown> };
  const known = (entry: unknown, list: unknown) => Array.isArray(list) && list.some((old) => isDeepStrictEqual(old, entry));
  const fresh = new Set<Rule | Hook>([
    ...project.rules.allow.filter((rule) => !known(rule.text, before.permissions?.allow)),
    ...HOOK_EVENTS.flatMap((event) => project.hooks[event].filter((hook) => !known(hook.entry, before.hooks?.[event]))),
  ]);
  if (fresh.size === 0) return project;
  const answer = terminal().hasPerson ? await askToTrust([...fresh].map((item) => `${placeOf(item)}: ${"entry" in item ? JSON.stringify(item.entry) : item.text}`)) : undefined;
  try {
    const hooksAsWritten = Object.fromEntries(HOOK_EVENTS.map((event) => [event, project.hooks[event].map((hook) => hook.entry)]));
    if (answer === "a") rememberTrusted(root, { permissions: { allow: project.rules.allow.map((rule) => rule.text) }, hooks: hooksAsWritten });
  } catch (error) {
    problems.push(`not remembered: ${(error as Error).message}`);
  }
  if (answer === "y" || answer === "a") return project;
  const why = answer ? "the person said no" : `no one is at the terminal to trust them: start the agent at a terminal once, or list them under trustedProjects in ${PERSONAL.name}`;
  problems.push(`not used: ${[...fresh].map(placeOf).join(", ")} (${why})`);
  const old = <T extends Rule | Hook>(items: T[]) => items.filter((item) => !fresh.has(item)); // deny and ask rules stay
  return { rules: { ...project.rules, allow: old(project.rules.allow) }, hooks: Object.fromEntries(HOOK_EVENTS.map((event) => [event, old(project.hooks[event])])) as RulesAndHooks["hooks"] };
}

/** One question for everything new: "y", "a" or "n" (any other answer is a no). */
async function askToTrust(lines: string[]): Promise<string> {
  console.log(`\nThis project's settings let calls run without asking, or run commands of their own:`);
  console.log(`${indent(visible(lines.join("\n")))}\n  y: use them   a: yes, and remember it in ${PERSONAL.name}   n: no (its deny and ask rules count anyway)`);
  while (true) {
    const answer = (await terminal().ask("trust? ", { fresh: true }))?.trim().toLowerCase();
    if (answer === undefined || !/^(y|yes|a|always|)$/.test(answer)) return "n";
    if (answer) return answer[0];
  }
}
// #endregion settings

// #region command-tools
// The seed's command-based discovery: the project lists its tools by printing function
// declarations, and runs one when asked. The agent knows nothing else about them.

/**
 * How long the agent waits for what runs outside it, in ms (exported so tests can shorten them). A
 * call that reports progress starts its server's limit again at each report, up to serverTotal.
 */
export const TIME_LIMITS = { discovery: 30_000, call: DEFAULT_TIMEOUT * 1000, serverStart: 30_000, serverCall: DEFAULT_TIMEOUT * 1000, serverTotal: 600_000 };

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
  /** The JSON Schema dialect of a schema that declares none: draft-07 unless this says MCP's 2020-12. */
  dialect?: "2020-12";
  /** What the tool says of itself (MCP's readOnlyHint): believed only from a trusted server. */
  readOnly?: boolean;
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
  const checkDeclaration = jsonSchemaValidator().compile(DECLARATION_SCHEMA);
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
 * Run a command of the settings with bash in the workspace, as bash's commands run (lib/
 * machinery/processes.ts): done when it exits, even if a helper it started holds on; a time
 * limit or Ctrl-C ends all it started. `args` follow it as words of their own ("$@"), so a
 * tool's name is never read as shell code; `input` goes to stdin.
 */
async function runOutside(command: string, args: string[], input: string, ms: number, signal?: AbortSignal): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const [stdout, stderr] = [new HeadAndTail(MAX_FILE_BYTES), new HeadAndTail(MAX_OUTPUT)];
  const code = await runCommand(command, { cwd: workspace(), timeoutMs: ms, output: stdout, errors: stderr, args, input, signal });
  return { stdout: stdout.text(), stderr: stderr.text(), code };
}

const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? "";
// #endregion command-tools

// #region mcp
// MCP servers through the official SDK: lib/machinery/mcp.ts starts one (a program over stdio,
// or an address over HTTP), calls it and turns its answers into content. Decided here: a
// server's tools are named server__tool, and are believed about themselves only when trusted.

/** The servers started, to end them again. */
const connections: McpConnection[] = [];

/** Start one server and list its tools, within its time limit; a server that fails is stopped and named. */
async function toolsFromServer(name: string, server: ServerSettings, root: string): Promise<Found> {
  const trusted = server.trust === true;
  const found: Found = { source: `MCP server ${name}${trusted ? " (trusted)" : ""}`, tools: [], problems: [] };
  const started = await McpConnection.start(name, server, root, server.timeout ?? TIME_LIMITS.serverStart).catch((error: Error) => error);
  if (started instanceof Error) return { ...found, problems: [`could not start: ${started.message}`] };
  connections.push(started.connection);
  for (const tool of started.tools) {
    // A tool that must run as a task (MCP's long-running calls) would be listed and then fail.
    if (tool.execution?.taskSupport === "required") {
      found.problems.push(`"${tool.name}" was left out: it runs only as a task (execution.taskSupport "required"), which this agent does not do`);
      continue;
    }
    found.tools.push({
      ...{ wanted: `${name}__${tool.name}`, original: tool.name, origin: `MCP server ${name}${trusted ? ", trusted" : ""}`, displayName: `${name}: ${tool.name}`, trusted },
      description: tool.description ?? `The tool ${tool.name} of the MCP server ${name}.`,
      schema: tool.inputSchema,
      ...{ dialect: "2020-12" as const, readOnly: tool.annotations?.readOnlyHint === true },
      run: (params, signal) => callServerTool(started.connection, tool.name, params, signal, { call: server.timeout ?? TIME_LIMITS.serverCall, total: TIME_LIMITS.serverTotal }),
    });
  }
  return found;
}

/** tools/call, its progress shown as it comes. An error result (isError) is the tool's answer, not the server's failure: it goes back as is_error. */
async function callServerTool(connection: McpConnection, tool: string, params: Params, signal: AbortSignal, limits: CallLimits): Promise<ToolResult> {
  const progress = (line: string) => console.log(dim(`  [${connection.name}: ${tool}] ${visible(line)}`));
  const { content, isError } = await connection.call(tool, params, signal, limits, progress);
  const shown = content.map((block) => (block.type === "text" ? block.text : `[image, ${block.source.type === "base64" ? block.source.media_type : "url"}]`)).join("\n");
  if (isError) throw new Error(shown || `${tool} failed and said nothing`);
  return { llmContent: content, returnDisplay: shown };
}

/**
 * Claude Code's ReadMcpResource: a resource of a running server by its URI, such as a link in a
 * result. Reading is what resources are for, so it is a read: the question was whether to start
 * the server at all.
 */
function readResourceTool(): AgentTool {
  const servers = { type: "string", enum: connections.map((connection) => connection.name).sort() };
  const parameterSchema = { type: "object" as const, properties: { server: servers, uri: { type: "string" } }, required: ["server", "uri"], additionalProperties: false };
  return {
    ...{ name: "read_mcp_resource", displayName: "ReadMcpResource", kind: "read", parameterSchema, validateToolParams: schemaCheck(parameterSchema) },
    description: "Read a resource of an MCP server by its URI, such as a resource link in a tool's result.",
    getDescription: (params) => `${params.server} ${params.uri}`,
    shouldConfirmExecute: async () => false,
    async execute(params, signal) {
      const connection = connections.find((each) => each.name === params.server)!;
      const content = await connection.read(String(params.uri), signal, TIME_LIMITS.serverCall);
      return { llmContent: content, returnDisplay: content.map((block) => (block.type === "text" ? block.text : "[image]")).join("\n") };
    },
  };
}
// #endregion mcp

// #region discovery
/** Where each tool found outside came from, by its registered name; a tool not here is built in. */
const origins = new Map<string, string>();

/**
 * Read the workspace's settings, ask the person before starting what is new, run the discovery
 * command and start the MCP servers, all at once, and register what they offer. Resolves when
 * every source has answered or run out of time; what failed is said in one line each, and the
 * rest works. TOOLS is refilled in place: the loop sends that array, so the model sees the new
 * tools at its next request.
 */
export async function discoverTools(): Promise<{ tools: string[]; problems: string[] }> {
  const root = workspace();
  const { settings, problems } = readSettings(root);
  const allowed = await allowedToStart(root, settings, problems);
  await dropDiscoveredTools();
  for (const problem of problems) console.log(`[tools] ${problem}`);
  const report = { tools: [] as string[], problems };
  const { toolDiscoveryCommand, toolCallCommand } = allowed.tools ?? {};
  // Each source says what went wrong rather than throwing; should one throw all the same, it
  // becomes that source's problem, and the others are still registered.
  const settle = (source: string, found: Promise<Found>) => found.catch((error: Error): Found => ({ source, tools: [], problems: [error.message] }));
  const sources = await Promise.all([
    ...Object.entries(allowed.mcpServers ?? {}).map(([name, server]) => settle(`MCP server ${name}`, toolsFromServer(name, server, root))),
    ...(toolDiscoveryCommand && toolCallCommand ? [settle("discovery command", toolsFromCommand(toolDiscoveryCommand, toolCallCommand))] : []),
  ]);
  // The agent's own tool for the servers' resources first, then the servers' tools, then the
  // command's: `server__tool` is the server's name, and a command's tool must not take it.
  if (connections.length > 0) {
    registry.registerTool(readResourceTool());
    origins.set("read_mcp_resource", "built in, for the MCP servers' resources");
  }
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

/**
 * A project's commands and servers run someone else's code as they start, in every approval
 * mode: the person allows them first, their `trust` with them. What they allowed before, as it
 * is now, starts without a question (PERSONAL); the rest is asked about once, or with no one
 * at the terminal does not start.
 */
async function allowedToStart(root: string, settings: Settings, problems: string[]): Promise<Settings> {
  if (!settings.tools && !settings.mcpServers) return settings; // nothing to start
  // What the person allowed before, kept in their own settings (lib/runtime/settings.ts).
  const { entries: before, problem } = trustedProject(root) as { entries: Settings; problem?: string };
  if (problem) problems.push(problem);
  const allowed: Settings = { tools: settings.tools, mcpServers: { ...settings.mcpServers } };
  const asking = new Map<string, () => void>(); // each new entry, and how to leave it out
  if (settings.tools && !isDeepStrictEqual(settings.tools, before.tools)) asking.set(`tools: ${JSON.stringify(settings.tools)}`, () => delete allowed.tools);
  for (const [name, entry] of Object.entries(settings.mcpServers ?? {})) {
    if (!isDeepStrictEqual(entry, before.mcpServers?.[name])) asking.set(`mcpServers.${name}: ${JSON.stringify(entry)}`, () => delete allowed.mcpServers![name]);
  }
  if (asking.size === 0) return allowed;
  const answer = terminal().hasPerson ? await askToStart([...asking.keys()]) : undefined;
  if (answer === "a") remember(root, settings, problems);
  if (answer === "y" || answer === "a") return allowed;
  for (const leaveOut of asking.values()) leaveOut();
  const why = answer ? "the person said no" : `no one is at the terminal to allow them: start the agent at a terminal once, or list them under trustedProjects in ${PERSONAL.name}`;
  problems.push(`not started: ${[...asking.keys()].map((line) => line.split(":")[0]).join(", ")} (${why})`);
  return allowed;
}

/** One question for everything new: "y", "a" or "n" (any other answer is a no). */
async function askToStart(entries: string[]): Promise<string> {
  console.log(`\nThis project's settings start programs of their own; a server with "trust": true runs its tools without asking:`);
  console.log(`${indent(visible(entries.join("\n")))}\n  y: start them   a: yes, and remember it in ${PERSONAL.name}   n: no`);
  while (true) {
    const answer = (await terminal().ask("start? ", { fresh: true }))?.trim().toLowerCase();
    if (answer === undefined || !/^(y|yes|a|always|)$/.test(answer)) return "n";
    if (answer) return answer[0];
  }
}

/** Keep the person's yes in their own settings, beside what else is there (s17's rules and hooks too). */
function remember(root: string, settings: Settings, problems: string[]): void {
  try {
    rememberTrusted(root, { tools: settings.tools, mcpServers: settings.mcpServers });
  } catch (error) {
    problems.push(`not remembered: ${(error as Error).message}`);
  }
}

/** Register one found tool under a valid, free name; [] when it cannot be used. Whatever fails here is that tool's problem, never all of discovery's. */
function register(found: FoundTool, from: Found): string[] {
  try {
    const name = freeName(found.wanted);
    registry.registerTool(outsideTool(name, found));
    origins.set(name, found.origin + (name === found.wanted ? "" : `, where it is called "${found.original}"`));
    return [name];
  } catch (error) {
    from.problems.push(`"${found.wanted}" was left out: ${(error as Error).message}`);
    return [];
  }
}

/** A name the API takes (letters, digits, _ and -, at most 64 characters) that no tool has yet. */
function freeName(wanted: string): string {
  const valid = (wanted.replace(/[^A-Za-z0-9_-]/g, "_") || "_").slice(0, 64);
  let name = valid;
  for (let n = 2; registry.getTool(name); n++) name = `${valid.slice(0, 63 - String(n).length)}_${n}`;
  return name;
}

/**
 * A found tool as a registry entry. Its schema is checked as written, in the dialect it declares;
 * the model gets one object schema (schemaForModel: the API refuses a top-level oneOf), without
 * `$schema`. It runs someone else's code: a command that asks first (as bash does) unless
 * trusted, and a read only when a trusted server says so.
 */
function outsideTool(name: string, found: FoundTool): AgentTool {
  let validateToolParams: AgentTool["validateToolParams"];
  try {
    validateToolParams = outsideSchemaCheck(found.schema, dialectOf(found.schema, found.dialect ?? "draft-07"));
  } catch (error) {
    throw new Error(`its parameter schema is not valid JSON Schema (${(error as Error).message})`);
  }
  const { $schema: _draft, ...schema } = { ...(schemaForModel(found.schema) ?? found.schema), type: "object" } as Tool["input_schema"];
  return {
    ...{ name, displayName: found.displayName, description: found.description, parameterSchema: schema, validateToolParams },
    kind: found.trusted && found.readOnly ? "read" : "execute",
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
  await Promise.all(connections.splice(0).map((connection) => connection.close()));
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
      const seen = new Set<string>(); // one pass: the time grows with the list, not with its square
      for (const item of list) {
        if (seen.has(item.id)) return `the id "${item.id}" is used more than once`;
        seen.add(item.id);
      }
      return undefined;
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
    const list = params.todos as Todo[];
    // The length first, alone: a list over the limit is refused before any work on its items.
    const rules = list.length > MAX_TODOS ? TODO_RULES.slice(0, 1) : TODO_RULES;
    const broken = rules.flatMap(({ rule, broken }) => {
      const how = broken(list);
      return how ? [`"${rule}" (${how})`] : [];
    });
    // A refused list changes nothing: the model reads which rule, and the list it still has.
    if (broken.length > 0) {
      throw new Error(`the list was refused: it breaks the rule ${broken.join(" and the rule ")}. The list is unchanged:\n${checklist(todos, { ids: true })}`);
    }
    todos = list.map(({ id, content, status }) => ({ id, content, status }));
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

/** A new session has no plan yet: the offline replay calls this (through prepareReplay) before its first prompt. */
function resetTodos(): void {
  todos = [];
  repliesSinceUpdate = 0;
  reminderDue = false;
}
// #endregion reminder

// #region notices
// A task ends while the model is busy with something else, or while the person types. The
// model must hear of it before its next request, and where the notice goes is s09's lesson
// again: the API wants every tool_use answered by the very next message, so a notice never
// travels as a message of its own. It rides inside the last tool result of the reply being
// answered; when the turn is over, it goes in front of the person's next prompt, in the same
// message. (s19 tells its lead about its teammates the same way.)
const notices = new Map<string, string>(); // by what it is about (a task id): given once, then gone

/** A notice for the model, about `about`; a newer one about the same thing replaces it. */
export function notify(about: string, text: string): void {
  notices.set(about, text);
}

/** The model has learned of it another way (it read the task's end with bash_output). */
export function forgetNotice(about: string): void {
  notices.delete(about);
}

/** Every waiting notice as one block, marked as the harness's words; each is given once. */
function takeNotices(notFrom: string, where: string): string | undefined {
  if (notices.size === 0) return undefined;
  // The person sees each notice's first line: what ended, and how.
  console.log(dim(`  [notice for the model, ${where}: ${visible([...notices.values()].map((text) => text.split("\n")[0]).join(" "))}]`));
  const text = `<notice>From the harness, not ${notFrom}:\n${[...notices.values()].join("\n")}\n</notice>`;
  notices.clear();
  return text;
}

/** runTools' results, with the waiting notices after what the last tool returned: its id and is_error stay. */
export function withNotices(results: ToolResultBlockParam[]): ToolResultBlockParam[] {
  const last = results.at(-1);
  const note = last && takeNotices("the tool", "added to this result");
  if (!last || !note) return results;
  // After the tool's own text, with one blank line between: the result is still whole.
  const content = typeof last.content === "string" ? `${last.content}${last.content.endsWith("\n") ? "\n" : "\n\n"}${note}` : [...(last.content ?? []), { type: "text" as const, text: note }];
  return [...results.slice(0, -1), { ...last, content }];
}

/** Before a turn: the waiting notices go in front of the person's prompt, in the same user message. */
export function addNoticesToPrompt(messages: MessageParam[]): void {
  const prompt = messages.at(-1);
  // The program's prompts are text; a message of tool results is withNotices' to carry.
  if (prompt?.role !== "user" || typeof prompt.content !== "string") return;
  const note = takeNotices("the person", "in front of the prompt");
  // s16: a message in the history is never changed; the prompt is taken back (from the log too) and pushed again as it will be sent.
  if (note) messages.pop(), messages.push({ role: "user", content: `${note}\n\n${prompt.content}` });
}

/** A new session has no tasks: the offline replay calls this (through prepareReplay) before its first prompt (so do the tests). */
function resetTasks(): void {
  for (const task of running()) task.end();
  tasks = [];
  tasksStarted = 0;
  notices.clear();
}

/** The tasks as they stand, for tests and the exercise's checks (the model reads them with bash_output). */
export const taskList = (): readonly { id: string; status: string }[] => tasks.map(({ id, status }) => ({ id, status }));
// #endregion notices

// #region subagent
// A subagent is the same agent with a clean slate: fresh messages, a system prompt of its own,
// the parent's tools but `task`, and a budget of model calls. It runs its own small loop inside
// the task tool, so the parent's loop does not change: to the parent, a subagent is one tool
// call. Only its last answer comes back; the files it read and the commands it ran stay in its
// messages, which are dropped when it ends.
const CHILD_MAX_CALLS = 30;
const MAX_CHILDREN_AT_ONCE = 4; // subagents running at the same time, at most: more tasks wait for a place

/** The subagent whose code is running now, if any: its steps are shown under its label. */
const childRun = new AsyncLocalStorage<{ label: string }>();

const childSystemPrompt = () =>
  `You are a subagent working in ${workspace()}. Another agent gave you one task: do it with your tools, then answer with a short report of what you found or did, naming paths. ` +
  `Your report is all the other agent will see of your work. You have at most ${CHILD_MAX_CALLS} model calls. Edits and commands may need a person's approval; if one is refused, say so in your report.`;

/**
 * The parent's tools but five: task (a subagent cannot start another, so there is no
 * recursion), todo_write and compact, which act on the one plan and the one conversation of
 * the person's session (a subagent's list would overwrite the parent's), and s18's bash_output
 * and kill_task: a subagent starts no background task (bash refuses it), so it has none to read;
 * and s19's board and team tools: the board and the inboxes are the lead's and its teammates'.
 */
const PARENT_ONLY = ["task", "todo_write", "compact", "bash_output", "kill_task", "task_create", "task_update", "task_list", "task_get", "spawn_teammate", "send_message", "read_inbox"];
const childTools = (): Tool[] => TOOLS.filter((tool) => !PARENT_ONLY.includes(tool.name));

const taskTool = defineTool({
  name: "task",
  displayName: "Task",
  // The task reads nothing and changes nothing itself: every edit or command of its subagent
  // goes through the same approval as the parent's, call by call. So it is a "read": it never
  // asks on its own, plan mode lets a subagent look around, and several tasks in one reply run
  // at the same time (s06's runTools runs reads side by side).
  kind: "read",
  description:
    "Hand a side task to a subagent: it starts with a fresh context (none of this conversation), has bash, read_file, write_file and edit_file, " +
    `works through up to ${CHILD_MAX_CALLS} model calls, and returns only its final answer. Use it for work that takes much reading, so that reading does not fill your context. ` +
    `The prompt must say everything the subagent needs: it knows nothing else. Several task calls in one reply run at the same time, ${MAX_CHILDREN_AT_ONCE} at most; the others wait their turn.`,
  parameterSchema: {
    type: "object",
    properties: {
      description: { type: "string", description: "A few words naming the task; the person sees the subagent's steps under it." },
      prompt: { type: "string", description: "The whole task for the subagent, and what its answer should contain." },
    },
    required: ["description", "prompt"],
    additionalProperties: false,
  },
  getDescription: (params) => String(params.description),
  async execute(params, signal) {
    const [description, prompt] = [String(params.description).trim(), String(params.prompt).trim()];
    if (!description || !prompt) throw new Error(`the ${description ? "prompt" : "description"} is empty: say what the subagent should do`);
    await takePlace(signal);
    const { answer, figures } = await runChild(description, prompt, signal).finally(leavePlace);
    return { llmContent: `${answer}\n\n[${figures}]`, returnDisplay: figures };
  },
});

// Sixty tasks in one reply would be sixty model calls at once, which a provider meets with rate
// limits. So a task waits for a place; a place freed wakes the waiting tasks, which check again
// in the order they came. Ctrl-C ends a wait: `once` rejects when the signal aborts.
let childrenRunning = 0;
const placeFreed = new EventEmitter().setMaxListeners(0); // one listener per waiting task
async function takePlace(signal: AbortSignal): Promise<void> {
  while (childrenRunning >= MAX_CHILDREN_AT_ONCE) await once(placeFreed, "freed", { signal });
  childrenRunning += 1;
}
function leavePlace(): void {
  childrenRunning -= 1;
  placeFreed.emit("freed");
}

/** What a subagent spent, for the line the parent and the person see. */
interface Spent {
  calls: number;
  toolCalls: number;
  input: number;
  output: number;
}

const figuresOf = (spent: Spent) =>
  `subagent: ${spent.calls} model call${spent.calls === 1 ? "" : "s"}, ${spent.toolCalls} tool call${spent.toolCalls === 1 ? "" : "s"}, ` +
  `${spent.input + spent.output} tokens (${spent.input} in, ${spent.output} out)`;

/**
 * The subagent's loop: the agent loop's shape with a limit, its own messages and its own
 * system prompt and tools. Its calls go through the parent's runTools, so the same validation,
 * approval and Ctrl-C apply. A failure throws, with the figures: runTool makes it an is_error.
 */
async function runChild(description: string, prompt: string, signal: AbortSignal): Promise<{ answer: string; figures: string }> {
  const label = visible(description.replace(/\s+/g, " ").slice(0, 30)); // shown on every line it prints
  const spent: Spent = { calls: 0, toolCalls: 0, input: 0, output: 0 };
  const messages: MessageParam[] = [{ role: "user", content: prompt }];
  return childRun.run({ label }, async () => {
    try {
      while (true) {
        const response = await client.messages.create(
          { model: MODEL, max_tokens: MAX_TOKENS, system: childSystemPrompt(), tools: childTools(), messages },
          { signal }, // Ctrl-C ends a model call under way, and refuses the next one
        );
        spent.calls += 1;
        spent.input += inputTokens(response.usage); // s14: input_tokens alone is only what the cache neither read nor wrote
        spent.output += response.usage?.output_tokens ?? 0;
        messages.push({ role: "assistant", content: response.content });
        for (const block of response.content) if (block.type === "text") show(visible(block.text));
        if (response.stop_reason !== "tool_use" && response.stop_reason !== "pause_turn") return { answer: lastAnswer(response), figures: figuresOf(spent) };
        // It asked to go on (its tools, or a server tool at work), but it could never read what comes next.
        if (spent.calls === CHILD_MAX_CALLS) throw new Error(`it reached its limit of ${CHILD_MAX_CALLS} model calls without finishing; give it a smaller task`);
        // A server tool at work: sent back as it is, the reply goes on.
        if (response.stop_reason === "pause_turn") continue;
        const results = await runChildTools(response.content);
        spent.toolCalls += results.length;
        messages.push({ role: "user", content: results });
      }
    } catch (error) {
      if (signal.aborted) throw error; // runTool says "cancelled"
      // The provider's errors (they carry an HTTP status) in the parent's words; the child's own as they are.
      const why = error instanceof Error && !("status" in error) ? error.message : describeProviderError(error).replace(/^\[error\] /, "its model call failed: ").replace(/\.$/, "");
      throw new Error(`the subagent [${label}] stopped: ${why}. Nothing it found came back. [${figuresOf(spent)}]`);
    }
  });
}

/** The subagent's answer: the text of its last reply, when that reply is a normal ending (one cut off is none). */
function lastAnswer(response: Message): string {
  if (response.stop_reason === "max_tokens") throw new Error(`its last reply was cut off at ${MAX_TOKENS} tokens`);
  if (response.stop_reason === "model_context_window_exceeded") throw new Error("its last reply was cut off: its context window was full; give it a smaller task");
  if (response.stop_reason === "refusal") throw new Error("its model declined to continue");
  const text = response.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n").trim();
  if (!text) throw new Error("it finished without writing an answer");
  return text;
}

/** A subagent's calls, through the parent's runTools; a call to a tool it was not given is refused. */
async function runChildTools(content: ContentBlock[]): Promise<ToolResultBlockParam[]> {
  const given = childTools().map((tool) => tool.name);
  const calls = content.filter((block): block is ToolUseBlock => block.type === "tool_use");
  const results = await runTools(calls.filter((call) => given.includes(call.name)));
  return calls.map((call) => {
    const result = results.find((done) => done.tool_use_id === call.id);
    if (result) return result;
    show(dim(`> ${call.name}\n  refused: not one of a subagent's tools`));
    const why = call.name === taskTool.name ? "a subagent cannot start another subagent" : `there is no tool "${call.name}"`;
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: `Error: ${why}. Your tools: ${given.join(", ")}.` };
  });
}

/** Print for the person. A subagent's lines are indented, dimmed, and carry its label; a teammate's carry its name (s19). */
function show(text: string): void {
  const [child, mate] = [childRun.getStore(), member()];
  const lines = child ? text.split("\n").map((line) => dim(`  [${child.label}] ${line}`)).join("\n") : text;
  console.log(mate ? lines.replace(/^/gm, `[${visible(mate.name)}] `) : lines);
}
// #endregion subagent

// #region board
// The task board: one JSON file per task in .agent/tasks/, seen by every agent, in any process, kept
// after the program ends. A change is a read, a check and a write: two agents doing that at once
// both read "task 3 has no owner", both write their name, and the later write wins while the other
// works on, sure the task is its own. So every change is made holding the board's lock.
export const BOARD_LIMITS = { tasks: 100, lockWaitMs: 5_000, lockStaleMs: 30_000 };
const STATUSES = ["pending", "in_progress", "completed"] as const;
type Status = (typeof STATUSES)[number];
export type Task = { id: string; subject: string; description: string; status: Status; owner: string | null; blocked_by: string[] };
const boardOf = (root: string) => path.join(root, ".agent", "tasks");
/** Every task, in id order. Each file is written whole, so one that does not read as a task was edited by hand: say which. */
export function readBoard(root: string): Task[] {
  const names = (attempt(() => readdirSync(boardOf(root))) ?? []).filter((name) => /^\d+\.json$/.test(name));
  const tasks = names.map((name) => [name, attempt(() => JSON.parse(readFileSync(path.join(boardOf(root), name), "utf8")) as Task)] as const);
  const whole = ([name, task]: readonly [string, Task | undefined]) => task && `${task.id}.json` === name && STATUSES.includes(task.status) && typeof task.subject === "string" && Array.isArray(task.blocked_by);
  const broken = tasks.find((entry) => !whole(entry));
  if (broken) fail(`.agent/tasks/${broken[0]} is not a task's JSON (edited by hand?): fix it or remove it; the other tasks are as they were`);
  return tasks.map(([, task]) => task!).sort((a, b) => Number(a.id) - Number(b.id));
}
/** Take the lock, read the board, let `change` check it and say what to write, write that whole, let the lock go. */
async function changeBoard(root: string, change: (tasks: Task[]) => Task | undefined): Promise<Task | undefined> {
  mkdirSync(boardOf(root), { recursive: true });
  const [lock, mine, started] = [path.join(boardOf(root), ".lock"), `${process.pid} ${randomUUID()}`, Date.now()];
  while (!attempt(() => writeFileSync(lock, mine, { flag: "wx" }) ?? true)) {
    if (takeOverIfStale(lock)) continue;
    if (Date.now() - started > BOARD_LIMITS.lockWaitMs) fail(`the task board stayed locked by process ${attempt(() => readFileSync(lock, "utf8").split(" ")[0])} for ${BOARD_LIMITS.lockWaitMs / 1000} s; try again`);
    await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 10)); // another process holds it, for a moment
  }
  try {
    // Nothing here awaits: no other agent of this process runs until the lock is let go.
    const task = change(readBoard(root));
    const where = { root: realpathSync(root), isInside };
    if (task) writeAtomically(path.join(boardOf(root), `${task.id}.json`), `${JSON.stringify(task, null, 2)}\n`, `.agent/tasks/${task.id}.json`, where);
    if (task && Number(task.id) > lastId(root)) writeAtomically(path.join(boardOf(root), ".last-id"), task.id, ".agent/tasks/.last-id", where);
    if (task) teamChanged.emit("changed");
    return task;
  } finally {
    if (attempt(() => readFileSync(lock, "utf8")) === mine) rmSync(lock, { force: true });
  }
}

// The lock is a file created with the flag "wx" (O_CREAT | O_EXCL): the system creates it only if no
// file has that name, so of processes trying at once one wins. It holds its process's id. One whose
// process has died, or older than lockStaleMs (a hung process, or an id now another program's), is
// taken over: renamed to a name of our own (a rename is atomic: of two processes, one moves it),
// then read again; if it was a fresh lock taken meanwhile, it is put back.
function takeOverIfStale(lock: string): boolean {
  const [seen, since] = [attempt(() => readFileSync(lock, "utf8")), attempt(() => statSync(lock).mtimeMs)];
  if (seen === undefined || since === undefined) return true; // let go meanwhile: try again at once
  const alive = seen === "" || attempt(() => process.kill(Number(seen.split(" ")[0]), 0)); // "": its id is being written; signal 0 only asks if the process is there
  if (alive && Date.now() - since < BOARD_LIMITS.lockStaleMs) return false;
  const aside = `${lock}.stale.${randomUUID()}`;
  if (!attempt(() => renameSync(lock, aside) ?? true)) return true; // another process took it over first
  if (readFileSync(aside, "utf8") !== seen) attempt(() => linkSync(aside, lock)); // not the stale one: back, unless the lock is held again
  rmSync(aside, { force: true });
  return true;
}
/** What `work` returns, or undefined when it throws: a file another process took away meanwhile, say. */
const attempt = <T>(work: () => T): T | undefined => { try { return work(); } catch { return undefined; } }; // prettier-ignore
/** An error for the model, from inside an expression. */
const fail = (message: string): never => { throw new Error(message); }; // prettier-ignore
/** The highest id ever given here: ids are never given twice, even if a task's file is removed. */
const lastId = (root: string) => Number(attempt(() => readFileSync(path.join(boardOf(root), ".last-id"), "utf8"))) || 0;
const theTasks = (tasks: Task[]) => (tasks.length > 0 ? `The tasks: ${tasks.map((task) => task.id).join(", ")}.` : "The board is empty.");
export const taskIn = (tasks: Task[], id: string) => tasks.find((task) => task.id === id) ?? fail(`there is no task ${JSON.stringify(id)}. ${theTasks(tasks)}`);
/** Its blockers that are not completed, as the errors name them. */
const openBlockers = (task: Task, tasks: Task[]) => tasks.filter((other) => task.blocked_by.includes(other.id) && other.status !== "completed").map((other) => `task ${other.id} (${other.subject}, ${other.status})`);
/** blocked_by must name tasks on the board, and must not lead back to the task itself. */
function checkBlockers(id: string, blockedBy: string[], tasks: Task[]): string[] {
  const unknown = blockedBy.filter((other) => other !== id && !tasks.some((task) => task.id === other));
  if (unknown.length > 0) fail(`blocked_by names ${unknown.map((other) => JSON.stringify(other)).join(", ")}, not on the board. ${theTasks(tasks)}`);
  const cycle = pathBack(id, blockedBy, tasks, new Set());
  if (cycle) fail(`blocked_by would make a cycle: ${[id, ...cycle].join(" -> ")}; no task could ever start`);
  return [...new Set(blockedBy)];
}
/** The way from these blockers back to `start`, following blocked_by, if there is one. */
function pathBack(start: string, next: string[], tasks: Task[], seen: Set<string>): string[] | undefined {
  for (const id of next.filter((other) => !seen.has(other))) {
    seen.add(id);
    const rest = id === start ? [] : pathBack(start, tasks.find((task) => task.id === id)?.blocked_by ?? [], tasks, seen);
    if (rest) return [id, ...rest];
  }
  return undefined;
}
/** A new task with the next id: under the lock, two agents creating at once get two ids. */
export async function createTask(root: string, subject: string, description: string, blockedBy: string[] = []): Promise<Task> {
  return (await changeBoard(root, (tasks) => {
    if (tasks.length >= BOARD_LIMITS.tasks) fail(`the board holds ${BOARD_LIMITS.tasks} tasks, the most it keeps`);
    const id = String(Math.max(lastId(root), ...tasks.map((task) => Number(task.id))) + 1);
    return { id, subject, description, status: "pending", owner: null, blocked_by: checkBlockers(id, blockedBy, tasks) };
  }))!;
}
/** A change by agent `by`. Claiming is setting an owner on an unowned task: under the lock, one wins, the others are told who. */
export async function updateTask(root: string, id: string, by: string, change: { status: Status; owner?: string; blocked_by?: string[] }): Promise<Task> {
  return (await changeBoard(root, (tasks) => {
    const task = { ...taskIn(tasks, id), status: change.status };
    if (task.owner && task.owner !== by && by !== LEAD) fail(`task ${id} is claimed by ${task.owner}: only ${task.owner} or the lead may change it`);
    if (change.owner !== undefined && change.owner !== (task.owner ?? "")) {
      if (task.owner && change.owner !== "") fail(`task ${id} is claimed by ${task.owner} already; it is given up with owner ""`);
      task.owner = change.owner || null; // "" gives it up
    }
    if (change.blocked_by) task.blocked_by = checkBlockers(id, change.blocked_by, tasks);
    const open = change.status === "in_progress" ? openBlockers(task, tasks) : [];
    if (open.length > 0) fail(`task ${id} cannot start: it is blocked by ${open.join(", ")}; it can start when that is completed`);
    if (change.status === "in_progress") task.owner ??= by; // whoever starts an unowned task claims it
    return task;
  }))!;
}
/** For an idle teammate: its own pending task that nothing blocks, else an unowned one; claimed and started under the lock. */
export async function claimNext(root: string, name: string): Promise<Task | undefined> {
  return changeBoard(root, (tasks) => {
    const free = (task: Task) => task.status === "pending" && openBlockers(task, tasks).length === 0;
    const task = tasks.find((t) => free(t) && t.owner === name) ?? tasks.find((t) => free(t) && !t.owner);
    return task && { ...task, owner: name, status: "in_progress" };
  });
}
// #endregion board

// #region inbox
// An inbox is a file of JSON lines, .agent/team/inbox/<name>.jsonl. A message is one line, written
// by one write() to a file opened with O_APPEND: the system puts each such write at the end, whole,
// whoever else appends at that moment. Reading moves a mark (<name>.read, in bytes) past what it read.
export const INBOX_LIMITS = { messageChars: 10_000, perRead: 20, fileBytes: 1_000_000 };
export type TeamMessage = { from: string; text: string; stop?: boolean };
const inboxOf = (root: string, name: string) => path.join(root, ".agent", "team", "inbox", `${name}.jsonl`);

export function appendMessage(root: string, to: string, message: TeamMessage): void {
  if (message.text.length > INBOX_LIMITS.messageChars) fail(`the message has ${message.text.length} characters, more than ${INBOX_LIMITS.messageChars}: put the rest in a file`);
  const [file, line] = [inboxOf(root, to), Buffer.from(`${JSON.stringify(message)}\n`)];
  mkdirSync(path.dirname(file), { recursive: true });
  const size = attempt(() => statSync(file).size) ?? 0;
  if (size + line.length > INBOX_LIMITS.fileBytes) fail(`${to}'s inbox is full (${size} bytes, at most ${INBOX_LIMITS.fileBytes})`);
  const fd = openSync(file, "a"); // O_APPEND: every write lands at the end
  const written = attempt(() => writeSync(fd, line));
  closeSync(fd);
  if (written !== line.length) fail(`${to}'s inbox took ${written ?? "none"} of the message's ${line.length} bytes (is the disk full?)`);
  teamChanged.emit("changed");
}
/** The messages not read yet, at most perRead, now marked read; a damaged line is skipped and counted. */
export function readInbox(root: string, name: string): { messages: TeamMessage[]; damaged: number; more: boolean } {
  const [file, mark] = [inboxOf(root, name), inboxOf(root, name).replace(/\.jsonl$/, ".read")];
  const bytes = attempt(() => readFileSync(file)) ?? Buffer.alloc(0); // at most fileBytes: appends stop there
  const marked = Number(attempt(() => readFileSync(mark, "utf8"))) || 0;
  const messages: TeamMessage[] = [];
  let [read, damaged] = [marked > bytes.length ? 0 : marked, 0]; // a mark past the end: the file was replaced
  // Whole lines only: one still being written (no newline yet) waits for the next read.
  for (let end = bytes.indexOf(0x0a, read); end >= 0 && messages.length < INBOX_LIMITS.perRead; end = bytes.indexOf(0x0a, read)) {
    const message = attempt(() => JSON.parse(bytes.subarray(read, end).toString("utf8")) as TeamMessage);
    if (typeof message?.from === "string" && typeof message.text === "string") messages.push(message);
    else damaged += 1;
    read = end + 1;
  }
  if (read !== marked) writeAtomically(mark, String(read), path.basename(mark), { root: realpathSync(root), isInside });
  return { messages, damaged, more: bytes.indexOf(0x0a, read) >= 0 };
}
// #endregion inbox

// #region team
// A teammate is this file's agent loop run once more, in this process, with a history of its own, at
// the same time as the lead. An AsyncLocalStorage knows whose code runs, so the system prompt, the
// tools offered, the lines shown and the approval questions are its own. Between turns it idles.
export const TEAM_LIMITS = { teammates: 4, repliesPerTurn: 30, recheckMs: 5_000, idleMs: 10 * 60_000 };
export const LEAD = "lead";
// `home`: where the board and the inboxes are (the lead's workspace); `root`: where it last worked (s20's rootOf gives it its task's worktree).
export type Teammate = { name: string; home: string; root: string; state: "working" | "idle" | "stopped"; messages: MessageParam[]; stop: AbortController; stopAsked: boolean; replies: number };
let team = new Map<string, Teammate>();
const teammateRun = new AsyncLocalStorage<Teammate>();
/** The teammate whose code runs now; undefined for the lead. */
export const member = () => teammateRun.getStore();
/** The board, an inbox or the team changed: idle teammates and a waiting lead look again. */
const teamChanged = new EventEmitter().setMaxListeners(0);
const onTeam = () => [...team.values()].filter((mate) => mate.state !== "stopped");
export const roster = () => [LEAD, ...onTeam().map((mate) => mate.name)];
export const teamList = () => [...team.values()].map(({ name, state }) => ({ name, state }));
/** A teammate's tools: a subagent's (s10: not task, todo_write, compact, bash_output, kill_task: the plan, the conversation and the background tasks are the lead's), and the board's and the team's but spawn_teammate; not s20's worktree tools: the lead plans the worktrees. */
const isTeammateTool = (name: string) => !["spawn_teammate", "task", "todo_write", "compact", "bash_output", "kill_task", "worktree_create", "worktree_list", "worktree_remove"].includes(name);
const teammatePrompt = (me: Teammate) =>
  `You are a teammate on a coding team, working in ${workspace()}. Your name is ${me.name}. The team: ${roster().map((name) => (name === me.name ? `${name} (you)` : name === LEAD ? `${name} (who leads it)` : name)).join(", ")}. ` +
  `read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. The task board is shared: claim a task by making yourself its owner with task_update, ` +
  `set it completed when it is done, then end your turn with a short report. The harness then gives you your next task, or the messages sent to you; when there is none, you wait. ` +
  `send_message tells a teammate or the lead what they need to know. Edits and commands may need a person's approval; if one is refused, say so.`;

export function spawnTeammate(name: string, prompt: string): Teammate {
  if (member()) fail("only the lead starts teammates");
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(name) || name.toLowerCase() === LEAD) fail(`${JSON.stringify(name)} cannot be a teammate's name: letters, digits, - and _, at most 40, and not "${LEAD}"`);
  const taken = onTeam().find((mate) => mate.name.toLowerCase() === name.toLowerCase()); // alice and Alice would share an inbox on some disks
  if (taken) fail(`${taken.name} is on the team already: send_message gives it more work`);
  if (onTeam().length >= TEAM_LIMITS.teammates) fail(`the team has ${TEAM_LIMITS.teammates} teammates, the most at once: ${onTeam().map((m) => `${m.name} (${m.state})`).join(", ")}. Stop one first (send_message with stop).`);
  const me: Teammate = { name, home: workspace(), root: workspace(), state: "working", messages: [], stop: new AbortController(), stopAsked: false, replies: 0 };
  team.set(name, me);
  // Not awaited: it works while the lead does. Ctrl-C stops it wherever it is. Its root (s20) is worked out at each read.
  void teammateRun.run(me, () => workingRoot.run(() => (me.root = rootOf(me, me.root)), () => cancellable(() => me.stop.abort(), () => runTeammate(me, prompt))));
  return me;
}
/** A turn per prompt, task or message, idling between them, until it is stopped; then the lead hears why. */
async function runTeammate(me: Teammate, prompt: string): Promise<void> {
  let [next, why]: [string | undefined, string] = [prompt, `it was idle for ${TEAM_LIMITS.idleMs / 60_000} minutes`];
  try {
    while (next !== undefined) {
      me.messages.push({ role: "user", content: next });
      me.replies = 0;
      await agentLoop(me.messages); // this file's loop, with the teammate's own history
      next = await nextWork(me);
    }
    if (me.stop.signal.aborted) why = "Ctrl-C stopped the team";
  } catch (error) {
    why = me.stop.signal.aborted ? "Ctrl-C stopped it in the middle of its work" : `it failed: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    me.state = "stopped";
    const left = attempt(() => readBoard(me.home).filter((task) => task.owner === me.name && task.status === "in_progress").map((task) => task.id)) ?? [];
    const tasks = left.length > 0 ? ` Its tasks still in_progress: ${left.join(", ")} (task_update with owner "" gives one up).` : "";
    if (team.get(me.name) === me && !me.stopAsked) notify(me.name, `${me.name} has stopped: ${why}.${tasks}`); // not when the lead asked, nor after a reset
    teamChanged.emit("changed");
  }
}
/** Between turns: its messages, else its next free task, else wait for a change (here, or recheckMs for another process's). */
async function nextWork(me: Teammate): Promise<string | undefined> {
  for (let [since, told] = [Date.now(), false]; !me.stop.signal.aborted && Date.now() - since < TEAM_LIMITS.idleMs; told = true) {
    const inbox = readInbox(me.home, me.name);
    if (inbox.messages.some((message) => message.stop && message.from === LEAD)) me.stopAsked = true;
    if (me.stopAsked) return undefined;
    const task = inbox.messages.length > 0 ? undefined : await claimNext(me.home, me.name);
    const work = inbox.messages.length > 0 ? inboxText(inbox) : task && `Task ${task.id} is yours, and in_progress: ${task.subject}\n${task.description}\nWhen it is done, set it completed with task_update, then end your turn with a short report.`;
    me.state = work ? "working" : "idle"; // "working" until now: the lead does not wake between two tasks
    if (work) forgetNotice(me.name); // "idle" is old news
    if (work) return `<notice>From the harness:\n${work}\n</notice>`;
    if (!told) notify(me.name, `${me.name} is idle: no task on the board is free for it. Its last words: ${JSON.stringify(clip(lastWords(me), 300, "head"))}`);
    if (!told) teamChanged.emit("changed"); // a waiting lead looks again
    await once(teamChanged, "changed", { signal: AbortSignal.any([me.stop.signal, AbortSignal.timeout(TEAM_LIMITS.recheckMs)]) }).catch(() => {});
  }
  return undefined;
}
/** The text of its last reply: what the lead reads in the idle notice. */
const lastWords = (me: Teammate) =>
  ((me.messages.filter((message) => message.role === "assistant").at(-1)?.content ?? []) as ContentBlock[]).flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
const inboxText = ({ messages, damaged, more }: ReturnType<typeof readInbox>) =>
  (messages.length > 0 ? messages.map((m) => `From ${m.from}${m.stop ? " (asking you to stop)" : ""}:\n${indent(m.text)}`).join("\n") : "No new messages.") +
  (damaged > 0 ? `\n(${damaged} damaged line${damaged === 1 ? "" : "s"} skipped: a write cut short)` : "") + (more ? "\nMore are waiting: call read_inbox again." : "");
/** Stop every teammate where it stands (a new session; the tests). */
export function stopTeam(): void {
  for (const mate of team.values()) mate.stop.abort();
  team = new Map();
}
// #endregion team

// #region board-tools
// The seven tools share one shape: parameters in, one text out. A change to the board is kind "edit":
// such calls run one at a time, in call order (three task_create in a reply get 1, 2, 3 as written); none asks.
function teamTool(name: string, kind: ToolKind, description: string, properties: Record<string, object>, required: string[], run: (params: Params) => Promise<string>): AgentTool {
  const displayName = name.replace(/(?:^|_)(\w)/g, (_, letter: string) => letter.toUpperCase()); // task_create: TaskCreate
  const parameterSchema = { type: "object" as const, properties, required, additionalProperties: false };
  const getDescription = (params: Params) => Object.entries(params).map(([key, value]) => (typeof value === "string" ? value : `${key}=${JSON.stringify(value)}`)).join(" ").replace(/\s+/g, " ");
  const execute = async (params: Params) => ((text) => ({ llmContent: text, returnDisplay: text }))(await run(params));
  return defineTool({ name, displayName, kind, description, parameterSchema, getDescription, execute });
}
const taskId = { type: "string", description: 'A task id, e.g. "1".' };
const blockedBy = { type: "array", items: { type: "string" }, maxItems: 20, description: "Ids of the tasks that must be completed before this one can start." };
const showTask = (task: Task, tasks: Task[]) =>
  `${task.id} [${task.status}] ${task.subject}, ${task.owner ? `owner ${task.owner}` : "no owner"}` +
  (task.blocked_by.length > 0 ? `, blocked by ${task.blocked_by.map((other) => `${other} (${tasks.find((t) => t.id === other)?.status ?? "gone"})`).join(", ")}` : "");
/** The board is the lead's workspace's, whoever asks. */
export const boardRoot = () => member()?.home ?? workspace();
const me = () => member()?.name ?? LEAD;

const taskCreateTool = teamTool(
  "task_create", "edit", "Put a task on the team's board (.agent/tasks/); returns its id (1, 2, ...). blocked_by: ids of tasks that must be completed before it can start.",
  { subject: { type: "string", minLength: 1, maxLength: 200 }, description: { type: "string", maxLength: 10_000 }, blocked_by: blockedBy }, ["subject", "description"],
  async (params) => {
    const task = await createTask(boardRoot(), String(params.subject), String(params.description), (params.blocked_by as string[] | undefined) ?? []);
    return `Created task ${task.id}: ${task.subject}${task.blocked_by.length > 0 ? ` (blocked by ${task.blocked_by.join(", ")})` : ""}.`;
  },
);
const taskUpdateTool = teamTool(
  "task_update", "edit",
  'Change a task\'s status, owner or blockers. Claim a task by setting owner to your name; if someone has it already, you are told who. in_progress is refused while a blocker is not completed; owner "" gives a task up.',
  { task_id: taskId, status: { type: "string", enum: [...STATUSES] }, owner: { type: "string", maxLength: 40 }, blocked_by: blockedBy }, ["task_id", "status"],
  async (params) => {
    const owner = params.owner as string | undefined;
    if (owner && owner !== me() && (me() !== LEAD || !roster().includes(owner))) fail(`${me() === LEAD ? `${owner} is not on the team` : "a teammate claims tasks for itself only"}. The team: ${roster().join(", ")}`);
    const task = await updateTask(boardRoot(), String(params.task_id), me(), { status: params.status as Status, owner, blocked_by: params.blocked_by as string[] | undefined });
    return `Task ${showTask(task, readBoard(boardRoot()))}.`;
  },
);
const taskListTool = teamTool("task_list", "read", "Every task on the board: id, status, subject, owner, and what blocks it.", {}, [], async () => {
  const tasks = readBoard(boardRoot());
  return tasks.length > 0 ? tasks.map((task) => showTask(task, tasks)).join("\n") : "The board is empty.";
});
const taskGetTool = teamTool("task_get", "read", "One task whole: its description too, and what it blocks.", { task_id: taskId }, ["task_id"], async (params) => {
  const tasks = readBoard(boardRoot());
  const task = taskIn(tasks, String(params.task_id));
  return `${showTask(task, tasks)}\n${task.description}\nIt blocks: ${tasks.filter((other) => other.blocked_by.includes(task.id)).map((other) => other.id).join(", ") || "nothing"}.`;
});
// #endregion board-tools

// #region team-tools
// kind "execute": a teammate does work, so not in plan mode; each of its own calls is approved as the lead's are.
const spawnTeammateTool = teamTool(
  "spawn_teammate", "execute",
  `Start a teammate: an agent with its own context and your tools (but spawn_teammate), working at the same time as you, ${TEAM_LIMITS.teammates} at most. ` +
    "It begins with your prompt, which must say all it needs; then it takes tasks from the board by itself, and reads its inbox.",
  { name: { type: "string", description: "Letters, digits, - and _, at most 40, e.g. alice." }, prompt: { type: "string", minLength: 1 } }, ["name", "prompt"],
  async (params) => {
    const { name } = spawnTeammate(String(params.name), String(params.prompt));
    return `${name} has joined the team and works on your prompt now, at the same time as you. The team: ${roster().join(", ")}. When it works on a task that has a worktree, it works in that worktree. You will be told when ${name} is idle or fails.`;
  },
);
// Who has sent the lead messages it has not read: its notice names them, in one line.
let unreadFrom = new Set<string>();
const sendMessageTool = teamTool(
  "send_message", "edit",
  `Send a message (at most ${INBOX_LIMITS.messageChars} characters) to a teammate or the lead: it is appended to their inbox. The lead may set stop: the teammate stops when the message reaches it.`,
  { to: { type: "string" }, text: { type: "string", minLength: 1 }, stop: { type: "boolean", description: "Lead only: the teammate stops when this reaches it." } }, ["to", "text"],
  async (params) => {
    const [from, to, stop] = [me(), String(params.to), params.stop === true];
    if (!roster().includes(to) || to === from) fail(`${to === from ? "that is you" : `no one named ${JSON.stringify(to)} is on the team`}. The team: ${roster().join(", ")}`);
    if (stop && from !== LEAD) fail("only the lead stops a teammate");
    appendMessage(boardRoot(), to, { from, text: String(params.text), ...(stop ? { stop } : {}) });
    if (to === LEAD) notify("inbox", `New messages in your inbox, from ${[...unreadFrom.add(from)].join(", ")}: read_inbox reads them.`);
    return `Sent to ${to}${stop ? `; ${to} stops when it reads it` : ""}.`;
  },
);
const readInboxTool = teamTool("read_inbox", "read", `The messages sent to you that you have not read, ${INBOX_LIMITS.perRead} at most; they are then marked read.`, {}, [], async () => {
  const inbox = readInbox(boardRoot(), me());
  if (member() && inbox.messages.some((message) => message.stop && message.from === LEAD)) member()!.stopAsked = true;
  if (!member()) unreadFrom = new Set(); // the lead has read its inbox: the notice of new messages is spent
  if (!member()) forgetNotice("inbox");
  return inboxText(inbox);
});
// #endregion team-tools

// #region worktrees
// A worktree is a second checkout of the same repository: its own folder and branch, sharing the
// history. Two agents editing one checkout step on each other's files; in two worktrees they
// cannot, and each task's work stays on its branch until someone merges it.
export const WORKTREE_LIMITS = { worktrees: 20, gitTimeoutMs: 30_000, gitOutputChars: 10_000, logBytes: 1_000_000 };
const WORKTREES = path.join(".agent", "worktrees");
export type Worktree = { name: string; path: string; branch?: string; task?: string; missing: boolean };

/** A name becomes a folder and a branch, and git reads "-b..." as an option: so letters, digits, - and _ only, and no "-" first. */
export function checkName(name: string): string {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}$/.test(name)) fail(`${JSON.stringify(name)} cannot be a worktree's name: letters, digits, - and _, at most 40 characters, not starting with -`);
  return name;
}

/**
 * git with an argument list: runCommand passes them as "$@" (lib/machinery/processes.ts), so no
 * name is ever read as shell code. A time limit, or Ctrl-C (`signal`), ends git and all it started
 * (a hook of the repository's runs with git); it runs without the agent's keys. When it fails,
 * git's own words are passed on, whole up to gitOutputChars (both ends kept).
 */
export async function git(args: string[], cwd: string, signal?: AbortSignal): Promise<string> {
  const [output, errors] = [new HeadAndTail(1_000_000), new HeadAndTail(WORKTREE_LIMITS.gitOutputChars)];
  const code = await runCommand("git", { cwd, args, output, errors, timeoutMs: WORKTREE_LIMITS.gitTimeoutMs, signal }).catch((error: Error) => fail(`git ${args.join(" ")}: ${error.message}`));
  if (code !== 0) fail(`git ${args.join(" ")} failed (exit code ${code ?? "killed"}):\n${clip(`${errors.text()}${output.text()}`.trim(), WORKTREE_LIMITS.gitOutputChars)}`);
  return output.text();
}

/** Worktrees need a repository with a commit: say so, and how, rather than leave git's words alone. */
async function checkRepository(root: string): Promise<void> {
  const head = await git(["rev-parse", "--verify", "--quiet", "HEAD"], root).catch((error: Error) => error);
  if (!(head instanceof Error)) return;
  if (head.message.includes("(exit code 127)")) fail(`git could not be run: is it installed, and on PATH?\n${head.message}`);
  const isRepo = !((await git(["rev-parse", "--git-dir"], root).catch((error: Error) => error)) instanceof Error);
  if (isRepo) fail(`the repository at ${root} has no commit yet, and a worktree starts from one: commit first (git add -A && git commit -m start)`);
  fail(`${root} is not a git repository, so it can have no worktrees. Make it one with \`git init\`, then commit once (git add -A && git commit -m start), and try again.\n${head.message}`);
}

/** `relative` inside the workspace, symlinks followed: a .agent/worktrees that is a link to elsewhere is refused. */
function inside(root: string, relative: string): string {
  const top = realpathSync(root);
  const real = followLinks(path.join(top, relative), relative);
  if (!isInside(top, real)) fail(`${relative} leads outside the workspace (${top}) through a symlink; nothing was created. Remove the link and try again`);
  return real;
}

/** .agent/worktrees, created if missing, only ever inside the workspace; its .gitignore of `*`
 * keeps the worktrees out of the main checkout's `git add -A`. */
function worktreesFolder(root: string): string {
  const folder = inside(root, WORKTREES);
  mkdirSync(folder, { recursive: true });
  if (!existsSync(path.join(folder, ".gitignore"))) writeFileSync(path.join(folder, ".gitignore"), "*\n");
  return folder;
}

/** Which task each worktree is bound to (name -> task id), in .agent/worktrees/bindings.json. */
export function bindings(root: string): Record<string, string> {
  const file = path.join(inside(root, WORKTREES), "bindings.json");
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Record<string, string>;
  } catch {
    return fail(`.agent/worktrees/bindings.json is not JSON (edited by hand?): fix it or remove it`);
  }
}
function writeBindings(folder: string, bound: Record<string, string>): void {
  writeAtomically(path.join(folder, "bindings.json"), `${JSON.stringify(bound, null, 2)}\n`, ".agent/worktrees/bindings.json", { root: folder, isInside });
}

/** One JSON line per event; past logBytes the log becomes events.1.jsonl (one older file is kept), so it stays bounded. */
function logEvent(root: string, event: Record<string, string>): void {
  const file = inside(root, path.join(WORKTREES, "events.jsonl"));
  const line = `${JSON.stringify({ time: new Date().toISOString(), ...event })}\n`;
  if ((attempt(() => statSync(file).size) ?? 0) + line.length > WORKTREE_LIMITS.logBytes) renameSync(file, inside(root, path.join(WORKTREES, "events.1.jsonl")));
  appendFileSync(file, line);
}

/** The worktrees git knows in .agent/worktrees/, with their branch and task, in name order. */
export async function listWorktrees(root: string): Promise<Worktree[]> {
  const folder = inside(root, WORKTREES);
  const bound = bindings(root);
  const blocks = (await git(["worktree", "list", "--porcelain"], root)).split("\n\n").map((block) => block.split("\n"));
  const field = (lines: string[], key: string) => lines.find((line) => line.startsWith(`${key} `))?.slice(key.length + 1);
  return blocks
    .map((lines) => ({ where: field(lines, "worktree") ?? "", branch: field(lines, "branch")?.replace(/^refs\/heads\//, ""), gone: lines.some((line) => line.startsWith("prunable")) }))
    .filter(({ where }) => where && path.dirname(attempt(() => realpathSync(where)) ?? where) === folder)
    .map(({ where, branch, gone }) => ({ name: path.basename(where), path: path.join(folder, path.basename(where)), branch, task: bound[path.basename(where)], missing: gone || !existsSync(where) }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** `git status --porcelain` inside a worktree: one line per file changed and not committed. */
export async function uncommitted(worktree: Worktree): Promise<string[]> {
  return worktree.missing ? [] : (await git(["status", "--porcelain"], worktree.path)).split("\n").filter(Boolean);
}
const theWorktrees = (all: Worktree[]) => (all.length > 0 ? `The worktrees: ${all.map((w) => w.name).join(", ")}.` : "There are no worktrees (worktree_create makes one).");

export async function createWorktree(root: string, name: string, taskId?: string, signal?: AbortSignal): Promise<string> {
  checkName(name);
  if (taskId !== undefined) taskIn(readBoard(root), taskId); // the task must be on the board
  await checkRepository(root);
  const folder = worktreesFolder(root);
  const all = await listWorktrees(root);
  if (all.some((w) => w.name.toLowerCase() === name.toLowerCase()) || existsSync(path.join(folder, name))) fail(`the name ${name} is taken: a worktree or a folder in .agent/worktrees/ has it (in some letter case). ${theWorktrees(all)}`);
  if (all.length >= WORKTREE_LIMITS.worktrees) fail(`there are ${all.length} worktrees, the most this agent keeps: remove one first (worktree_remove). ${theWorktrees(all)}`);
  const bound = bindings(root);
  const taken = Object.keys(bound).find((other) => bound[other] === taskId);
  if (taskId !== undefined && taken) fail(`task ${taskId} has the worktree ${taken} already`);
  await git(["worktree", "add", path.join(WORKTREES, name), "-b", `wt/${name}`], root, signal).catch(async (error: Error) => {
    // Stopped half-way (Ctrl-C, the time limit, a failed hook): take back what git made, so nothing
    // is left unlogged. Its branch is new: git refuses -b for a branch that exists.
    if ((await listWorktrees(root)).some((w) => w.name === name)) await git(["worktree", "remove", "--force", path.join(WORKTREES, name)], root).then(() => git(["branch", "-D", `wt/${name}`], root)).catch(() => "");
    throw error;
  });
  logEvent(root, { event: "create", name, branch: `wt/${name}` });
  if (taskId !== undefined) writeBindings(folder, { ...bound, [name]: taskId });
  if (taskId !== undefined) logEvent(root, { event: "bind", name, task: taskId });
  const task = taskId === undefined ? "" : `, bound to task ${taskId}: a teammate working on task ${taskId} works in it`;
  return `Created the worktree ${name} at .agent/worktrees/${name}, on the new branch wt/${name}${task}. Set worktree: "${name}" on bash, read_file, write_file or edit_file to work in it.`;
}

export async function removeWorktree(root: string, name: string, options: { keepBranch?: boolean; force?: boolean; signal?: AbortSignal } = {}): Promise<string> {
  checkName(name);
  await checkRepository(root);
  const all = await listWorktrees(root);
  const worktree = all.find((w) => w.name === name) ?? fail(`there is no worktree ${JSON.stringify(name)}. ${theWorktrees(all)}`);
  const busy = readBoard(root).find((task) => task.id === worktree.task && task.status === "in_progress"); // its teammate works in it
  if (busy && !options.force) fail(`the worktree ${name} is task ${busy.id}'s, which ${busy.owner ?? "nobody"} has in_progress: removed, that work would go on in the main checkout. Remove it once the task is completed, or set force`);
  const changes = await uncommitted(worktree);
  const shown = `${changes.slice(0, 20).join("\n")}${changes.length > 20 ? `\n... and ${changes.length - 20} more` : ""}`;
  if (changes.length > 0 && !options.force) fail(`the worktree ${name} has uncommitted changes, so it was not removed:\n${shown}\nCommit them (bash with worktree "${name}"), or set force to throw them away`);
  await git(["worktree", "remove", ...(options.force ? ["--force"] : []), path.join(WORKTREES, name)], root, options.signal);
  const said = [`Removed the worktree ${name}${changes.length > 0 ? `, throwing away its uncommitted changes:\n${shown}` : "."}`];
  // Only the branch this tool made: a worktree switched to another branch leaves that branch alone.
  if (worktree.branch === `wt/${name}` && !options.keepBranch) said.push(await deleteBranch(root, worktree.branch, options.force === true));
  else if (worktree.branch) said.push(`The branch ${worktree.branch} is kept.`);
  const { [name]: task, ...rest } = bindings(root);
  if (task !== undefined) writeBindings(inside(root, WORKTREES), rest);
  logEvent(root, { event: "remove", name, ...(task === undefined ? {} : { task }) });
  return said.join("\n");
}

/** A branch with commits not merged into the current branch holds work found nowhere else: it is kept unless force. */
async function deleteBranch(root: string, branch: string, force: boolean): Promise<string> {
  const unmerged = Number((await git(["rev-list", "--count", `HEAD..${branch}`], root)).trim());
  if (unmerged > 0 && !force) return `The branch ${branch} is kept: it has ${unmerged} commit(s) not merged into your current branch. Merge it, or delete it with git branch -D ${branch}.`;
  const commit = (await git(["rev-parse", "--short", branch], root)).trim();
  await git(["branch", "-D", branch], root);
  const lost = unmerged > 0 ? `, and with it ${unmerged} commit(s) not merged anywhere (git branch ${branch} ${commit} brings them back while git keeps them)` : " (its commits are in your current branch)";
  return `Deleted the branch ${branch}, which was at ${commit}${lost}.`;
}
// #endregion worktrees

// #region in-worktree
// s06's bash, read_file, write_file and edit_file read the workspace at each call (workspace()).
// With `worktree`, the call runs with that worktree as its root (s06's workingRoot, for this call
// alone: the other agents of this process keep theirs), so the sandbox's rules hold inside it.
const worktreeParam = { type: "string", description: "The name of a worktree (worktree_list): work inside it; paths are relative to it, and it is the root." };

/** The worktree's folder, by name; an unknown name is refused, naming the worktrees there are. */
function worktreeRoot(name: string): string {
  const folder = inside(boardRoot(), WORKTREES);
  const names = (attempt(() => readdirSync(folder)) ?? []).filter((entry) => existsSync(path.join(folder, entry, ".git"))).sort();
  if (!names.includes(name)) fail(`there is no worktree ${JSON.stringify(name)}. ${names.length > 0 ? `The worktrees: ${names.slice(0, WORKTREE_LIMITS.worktrees).join(", ")}.` : "There are none (worktree_create makes one)."}`);
  return inside(boardRoot(), path.join(WORKTREES, checkName(name)));
}

/** Run `work` with the worktree as the root of every path and command in it, or as it is without one. */
function inWorktree<T>(params: Params, work: () => T): T {
  if (params.worktree === undefined) return work();
  const root = worktreeRoot(String(params.worktree));
  if (member()) fail(`${member()!.name} works where its task is (a task's worktree is its root already): a teammate names no worktree`);
  return workingRoot.run(() => root, work);
}

/** A core tool with the optional `worktree`: the same tool, its checks, approval and work run inside it. */
function withWorktree(tool: AgentTool): AgentTool {
  const where = (params: Params) => (params.worktree === undefined ? "" : `   (in worktree ${params.worktree})`);
  return defineTool({
    ...tool,
    description: `${tool.description} Set worktree to work inside a git worktree.`,
    parameterSchema: { ...tool.parameterSchema, properties: { ...(tool.parameterSchema.properties as object), worktree: worktreeParam } },
    getDescription: (params) => `${tool.getDescription(params)}${where(params)}`,
    changesTheAgent: (params) => inWorktree(params, () => tool.changesTheAgent?.(params) ?? false),
    // What the person approves names the worktree: "Edit notes.md?" alone would not say which checkout.
    shouldConfirmExecute: (params, signal) =>
      inWorktree(params, async () => {
        const asked = await tool.shouldConfirmExecute(params, signal);
        return asked && { ...asked, title: `${asked.title}${where(params)}` };
      }),
    execute: (params, signal, callId) => inWorktree(params, () => tool.execute(params, signal, callId)), // callId: bash names its saved output after it (s07)
  });
}
// #endregion in-worktree

// #region teammates
// A teammate's root (s20): the worktree bound to the task it has in_progress, worked out at each
// read (spawnTeammate runs it in workingRoot with this), so its system prompt and every call of its
// own name it from the first request after a claim. Its `root` field keeps where it last was.
function rootOf(mate: Teammate, was: string): string {
  try {
    const mine = readBoard(mate.home).filter((task) => task.owner === mate.name && task.status === "in_progress");
    if (mine.length === 0) return existsSync(was) ? was : mate.home; // between tasks: where it last worked
    const bound = bindings(mate.home);
    const name = Object.keys(bound).sort().find((wt) => mine.some((task) => task.id === bound[wt]));
    const root = name && inside(mate.home, path.join(WORKTREES, name));
    return root && existsSync(path.join(root, ".git")) ? root : mate.home;
  } catch {
    return mate.home; // a board or bindings file edited by hand: the main checkout, as in s19
  }
}
// #endregion teammates

// #region worktree-tools
const said = (text: string) => ({ llmContent: text, returnDisplay: text });
const worktreeCreateTool = defineTool({
  name: "worktree_create",
  displayName: "WorktreeCreate",
  kind: "execute", // it runs git, and the repository's hooks with it
  description:
    `Create a git worktree: a checkout of its own at .agent/worktrees/<name>, on a new branch wt/<name> from the current commit. ` +
    `With task_id it is bound to that task: a teammate working on the task works in it. ${WORKTREE_LIMITS.worktrees} at most.`,
  parameterSchema: {
    type: "object",
    properties: { name: { type: "string", description: "Letters, digits, - and _, at most 40, e.g. task-1." }, task_id: { type: "string", description: 'A task on the board, e.g. "1".' } },
    required: ["name"],
    additionalProperties: false,
  },
  getDescription: (params) => `${params.name}${params.task_id === undefined ? "" : ` for task ${params.task_id}`}`,
  // A name that will be refused is refused before the person is asked about it.
  shouldConfirmExecute: async (params) => ({
    title: `Create the worktree ${checkName(String(params.name))}?`,
    details: `git worktree add .agent/worktrees/${params.name} -b wt/${params.name}${params.task_id === undefined ? "" : `\n(bound to task ${params.task_id})`}`,
  }),
  execute: async (params, signal) => said(await createWorktree(boardRoot(), String(params.name), params.task_id as string | undefined, signal)),
});

const worktreeListTool = defineTool({
  name: "worktree_list",
  displayName: "WorktreeList",
  kind: "read",
  description: `Every worktree in .agent/worktrees/: its name, branch, task, and whether it has uncommitted changes (${WORKTREE_LIMITS.worktrees} at most are shown).`,
  parameterSchema: { type: "object", properties: {}, additionalProperties: false },
  getDescription: () => ".agent/worktrees/",
  async execute() {
    await checkRepository(boardRoot());
    const all = await listWorktrees(boardRoot());
    const lines = await Promise.all(
      all.slice(0, WORKTREE_LIMITS.worktrees).map(async (w) => {
        const changes = await uncommitted(w);
        const state = w.missing ? "its folder is missing (git worktree prune forgets it)" : changes.length > 0 ? `${changes.length} uncommitted change(s): ${changes.slice(0, 5).map((c) => c.trim()).join(", ")}${changes.length > 5 ? ", ..." : ""}` : "clean";
        return `${w.name}  branch ${w.branch ?? "(detached)"}  ${w.task === undefined ? "no task" : `task ${w.task}`}  ${state}`;
      }),
    );
    const more = all.length > WORKTREE_LIMITS.worktrees ? `\n... and ${all.length - WORKTREE_LIMITS.worktrees} more (git worktree list shows them all)` : "";
    return said(lines.length > 0 ? lines.join("\n") + more : "There are no worktrees (worktree_create makes one).");
  },
});

const worktreeRemoveTool = defineTool({
  name: "worktree_remove",
  displayName: "WorktreeRemove",
  kind: "execute",
  description:
    "Remove a worktree and its folder. Refused while it has uncommitted changes, unless force. Its branch wt/<name> is deleted unless keep_branch; " +
    "a branch with commits not merged into the current branch is kept, unless force. The result says what was deleted.",
  parameterSchema: {
    type: "object",
    properties: {
      name: { type: "string", description: "The worktree's name." },
      keep_branch: { type: "boolean", description: "Keep the branch wt/<name> (default false)." },
      force: { type: "boolean", description: "Throw away uncommitted changes and unmerged commits (default false)." },
    },
    required: ["name"],
    additionalProperties: false,
  },
  getDescription: (params) => `${params.name}${params.force === true ? " (force)" : ""}${params.keep_branch === true ? " (keep the branch)" : ""}`,
  shouldConfirmExecute: async (params) => ({
    title: `Remove the worktree ${checkName(String(params.name))}?`,
    details: `git worktree remove${params.force === true ? " --force" : ""} .agent/worktrees/${params.name}${params.keep_branch === true ? "" : `\ngit branch -D wt/${params.name}${params.force === true ? "" : " (only if merged)"}`}`,
  }),
  execute: async (params, signal) => said(await removeWorktree(boardRoot(), String(params.name), { keepBranch: params.keep_branch === true, force: params.force === true, signal })),
});
// #endregion worktree-tools

// #region session-log
/**
 * The history the loop is handed: an array whose push appends each message to the session's
 * file, one JSON line, before the message enters the array. The loop, the program and endTurn
 * only ever push, so every message passes through here, and nothing they hold is missing from
 * the disk. (A Proxy could catch every kind of change; push is the only one that happens, and a
 * subclass says so in five plain lines.) Nothing changes a message once it is pushed (s06's
 * runTools builds new results; it never edits the reply it reads), so the line stays true.
 * In the capstone the log is also s11's transcript: the file an old result's placeholder points
 * to, and where a compaction is written as a line of its own (compacted); s17's hooks may take
 * the newest prompt back before any request carried it (pop).
 */
export class SessionLog extends Array<MessageParam> {
  // A copy (slice, map, filter) is a plain array: only the history itself writes to the log.
  static get [Symbol.species]() {
    return Array;
  }
  readonly #root: string;
  #id: string | undefined;
  #written = 0; // how many messages of this array are in the file
  #size = 0; // the file's size after this program's last write there
  #problem: string | undefined; // why the last write failed, said to the person once

  /** A new session (its file is made with its first message), or a resumed one: its id, the history its file gives, the file's size. */
  constructor(root: string, resumed?: { id: string; messages: MessageParam[]; size: number }) {
    super();
    this.#root = root;
    this.#id = resumed?.id;
    for (const message of resumed?.messages ?? []) super.push(message); // in the file already
    this.#written = this.length;
    this.#size = resumed?.size ?? 0;
  }

  get id(): string | undefined {
    return this.#id;
  }

  /** s11: the file, as the model and the person read it (`.agent/sessions/<id>.jsonl`), once it is made; and how many messages are in it. */
  get file(): string | undefined {
    return this.#id && `${SESSIONS}/${this.#id}.jsonl`;
  }
  get written(): number {
    return this.#written;
  }

  push(...messages: MessageParam[]): number {
    // The lines first, then the array. Messages an earlier push could not write go with these,
    // in order, so the file never has a gap: it only ever lacks its newest messages.
    this.#append([...this.slice(this.#written), ...messages], this.length + messages.length);
    return super.push(...messages);
  }

  /** s11: a compaction, after every message: resumed, its summary stands for the first `cut` messages. false when it cannot be written. */
  compacted(summary: MessageParam): boolean {
    return this.#append([...this.slice(this.#written), { compaction: { cut: this.length, summary } }], this.length);
  }

  /** s17: the newest message taken back, from the file too (a prompt a hook blocked or changed, before any request carried it). */
  pop(): MessageParam | undefined {
    const message = super.pop();
    if (message === undefined || this.#written <= this.length) return message;
    const line = Buffer.byteLength(`${JSON.stringify(message)}\n`);
    const fd = openSync(path.join(this.#root, this.file!), constants.O_WRONLY | constants.O_NOFOLLOW);
    try {
      // Only a file as this program left it: otherwise the next append starts a new file without it.
      if (fstatSync(fd).size === this.#size) {
        this.#size -= line;
        ftruncateSync(fd, this.#size);
        fsyncSync(fd);
      }
    } finally {
      closeSync(fd);
    }
    this.#written = this.length;
    return message;
  }

  /** One append of whole lines; then the file holds the first `written` messages. A failure is said once, and tried again with the next. */
  #append(lines: object[], written: number): boolean {
    const text = lines.map((line) => `${JSON.stringify(line)}\n`).join("");
    try {
      const old = this.#id;
      const size = old === undefined ? undefined : appendLines(path.join(sessionsFolder(this.#root, { create: true }), `${old}.jsonl`), text, this.#size);
      if (size !== undefined) this.#size = size;
      else {
        // Not as this program left it: lines appended now would tangle with another program's (the
        // same session resumed twice) or with half a line. A new file takes the whole history (a
        // compaction line is left out: resumed, the session is compacted again when it is full).
        this.#newFile(this.slice(0, this.#written).map((message) => `${JSON.stringify(message)}\n`).join("") + text);
        if (old) console.log(`[warning] ${SESSIONS}/${old}.jsonl is not as this program left it (another program wrote to it, a write was cut short, or it was removed): the session goes on in ${SESSIONS}/${this.#id}.jsonl, whole`);
      }
      this.#written = written;
      this.#problem = undefined;
      return true;
    } catch (error) {
      const problem = error instanceof Error ? error.message : String(error);
      if (this.#problem === undefined) console.log(`[warning] the session cannot be saved (${problem}); it goes on, and what is not saved is tried again with the next message`);
      this.#problem = problem;
      return false;
    }
  }

  /** A new session's file, under a new id: its header line, then `lines`, in one write. */
  #newFile(lines: string): void {
    const folder = sessionsFolder(this.#root, { create: true });
    for (let tries = 1; ; tries++) {
      const id = newSessionId();
      const header = { session: id, version: 1, started: new Date().toISOString() };
      try {
        this.#size = appendLines(path.join(folder, `${id}.jsonl`), `${JSON.stringify(header)}\n${lines}`, "new")!;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST" && tries < 5) continue; // the same second, the same six digits
        throw error;
      }
      this.#id = id;
      return console.log(dim(`[session ${id}: each message is saved to ${SESSIONS}/${id}.jsonl as it comes; --continue resumes it]`));
    }
  }
}

/** A session's id: when it started (UTC, so ids sort by time) and six random hex digits: 20250601-142233-a1b2c3. */
export function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-");
  return `${stamp}-${randomBytes(3).toString("hex")}`;
}
const SESSION_ID = /^\d{8}-\d{6}-[0-9a-f]{6}$/;

/**
 * Append `text` (whole lines) with one write, then fsync, and return the file's new size; or
 * write nothing and return undefined when the file is gone or is not `size` bytes long, as this
 * program left it ("new": make it). O_APPEND puts every write at the end of the file;
 * O_NOFOLLOW refuses a link put in the file's place; 0o600: a session holds what the agent
 * read, so only its owner reads it. fsync: a program that is killed loses nothing written
 * anyway, but a machine that loses power keeps only what reached the disk.
 */
function appendLines(file: string, text: string, size: number | "new"): number | undefined {
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | (size === "new" ? constants.O_CREAT | constants.O_EXCL : 0);
  if (size !== "new" && !existsSync(file)) return undefined;
  const fd = openSync(file, flags, 0o600);
  try {
    if (size !== "new" && fstatSync(fd).size !== size) return undefined;
    writeFileSync(fd, text);
    fsyncSync(fd);
    return (size === "new" ? 0 : size) + Buffer.byteLength(text);
  } finally {
    closeSync(fd);
  }
}

/**
 * The workspace's sessions folder, checked at every use: a link, out of the workspace or to
 * another of its folders, would let the project choose where the sessions go, and is refused.
 * It gets a .gitignore of `*` (the agent's notes are not the project's files; "wx": never
 * through a link), and only .agent and .agent/sessions are made: never a workspace that is gone.
 */
function sessionsFolder(root: string, { create = false } = {}): string {
  const folder = path.join(root, SESSIONS);
  if (followLinks(folder, SESSIONS) !== folder) throw new Error(`${SESSIONS} is a symlink: sessions are kept only in the workspace's own ${SESSIONS}/`);
  if (create && !existsSync(path.dirname(folder))) mkdirSync(path.dirname(folder));
  if (create && !existsSync(folder)) mkdirSync(folder);
  const ignore = path.join(folder, ".gitignore");
  if (create && !lstatSync(ignore, { throwIfNoEntry: false })) writeFileSync(ignore, "*\n", { flag: "wx" });
  return folder;
}
// #endregion session-log

// #region resume
/** A session file as read: its header, its messages as logged, and a last line the program was writing when it ended. */
export interface SessionFile {
  header: { session: string; version: 1; started: string };
  logged: MessageParam[];
  /** The last line, cut short: its number and length. */
  cut?: { line: number; bytes: number };
  /** The bytes of the complete lines. */
  whole: number;
  /** s11: the line number of each logged message, and the last compaction: its summary stands for the first `cut` messages. */
  lines: number[];
  compaction?: { cut: number; summary: MessageParam };
}

// In a replay, the scenario's session flags (`sessionFlags`) stand for the command line's.
let replayFlags: string[] | undefined;

/** A replay starts a new session, or resumes one the scenario put in the workspace (fixtures/s16/resume.json). */
function useSessionFlags(scenario: Scenario & { sessionFlags?: string[] }): void {
  replayFlags = scenario.sessionFlags ?? [];
}

/**
 * The history a session starts from: a new session, or the one `--continue` (the newest) or
 * `--resume <id>` names, its file read and its history repaired. New messages go to its file.
 */
export function startHistory(args: string[] = []): SessionLog {
  const flags = replayFlags ?? args;
  replayFlags = undefined;
  const root = realpathSync(workspace());
  const named = optionValue(flags, "--resume");
  if (flags.includes("--continue") && named !== undefined) throw new Error("--continue resumes the newest session and --resume <id> a given one: give only one of them");
  const id = flags.includes("--continue") ? newestSession(root) : named;
  if (id === undefined) return new SessionLog(root);
  if (!SESSION_ID.test(id)) throw new Error(`"${visible(clip(id, 60, "head"))}" is not a session id (ids look like 20250601-142233-a1b2c3); --resume alone lists the sessions`);
  const given = `${SESSIONS}/${id}.jsonl`;
  const file = path.join(sessionsFolder(root), `${id}.jsonl`);
  const session = readSession(file, given);
  const { messages, notes } = repaired(session.logged, session.lines);
  console.log(`[resumed session ${id}: ${session.logged.length} messages; new ones are added to ${given}]`);
  if (session.cut) {
    // Those bytes never made a line; cut off, they cannot join the next line written.
    const fd = openSync(file, constants.O_WRONLY | constants.O_NOFOLLOW);
    try {
      ftruncateSync(fd, session.whole);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    console.log(`[warning] line ${session.cut.line} (${session.cut.bytes} bytes) was cut short when the program ended: it is left out`);
  }
  for (const note of notes.slice(0, NOTES_SHOWN)) console.log(`[repaired] ${note}`);
  if (notes.length > NOTES_SHOWN) console.log(`[repaired] ... and ${notes.length - NOTES_SHOWN} more like these`);
  const log = new SessionLog(root, { id, messages, size: session.whole });
  // s11: a session compacted before is sent as it was: the summary, then the messages after it.
  if (session.compaction) Object.assign(conversationOf(log), session.compaction);
  return log;
}

/**
 * A session file, every line checked. What is not a session is refused, naming the file: a link,
 * a FIFO, a device, a file over 10 MB (a history that large could not be sent to the model
 * anyway), a file whose first line is no session header or whose other lines are not messages.
 * Only the last line may be cut short: the program was writing it when it ended.
 */
export function readSession(file: string, given: string): SessionFile {
  const link = lstatSync(file, { throwIfNoEntry: false });
  if (!link) throw new Error(`${given} does not exist; --resume alone lists the sessions of this workspace`);
  if (link.isSymbolicLink()) throw new Error(`${given} is a symlink, not a session: it is not followed`);
  const text = readText(file, given, "a history that large could not be sent to the model anyway");
  const end = text.lastIndexOf("\n") + 1;
  const lines = text.slice(0, end).split("\n").slice(0, -1);
  const notSession = (why: string) => new Error(`${given} is not a session: ${why}`);
  const header = parsed(lines[0]) as SessionFile["header"] | undefined;
  if (typeof header?.session !== "string" || header.version !== 1) throw notSession("its first line is not a session header");
  const [logged, numbers]: [MessageParam[], number[]] = [[], []];
  let compaction: SessionFile["compaction"];
  lines.slice(1).forEach((line, i) => {
    const entry = parsed(line);
    // s11: a compaction line, after the messages its summary replaces.
    const { cut, summary } = (entry as { compaction?: { cut?: unknown; summary?: unknown } } | undefined)?.compaction ?? {};
    if (Number.isInteger(cut) && (cut as number) <= logged.length && isMessage(summary)) return void (compaction = { cut: cut as number, summary });
    if (!isMessage(entry)) throw notSession(`line ${i + 2} is not a message (a JSON object with a role and content) nor a compaction`);
    logged.push(entry);
    numbers.push(i + 2);
  });
  const cut = end < text.length ? { line: lines.length + 1, bytes: Buffer.byteLength(text.slice(end)) } : undefined;
  return { header, logged, cut, whole: Buffer.byteLength(text.slice(0, end)), lines: numbers, compaction };
}

function parsed(line: string | undefined): unknown {
  try {
    return line === undefined ? undefined : JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** A message as the API takes one; the tool blocks with the ids the repair matches by. */
function isMessage(value: unknown): value is MessageParam {
  const { role, content } = (value ?? {}) as { role?: unknown; content?: unknown };
  if (role !== "user" && role !== "assistant") return false;
  if (typeof content === "string") return true;
  if (!Array.isArray(content)) return false;
  // The fields the repair and the API rely on, so a hand-edited block is refused here, by line.
  return content.every((block) => {
    if (typeof block?.type !== "string") return false;
    if (block.type === "text") return typeof block.text === "string";
    if (block.type === "tool_use") return typeof block.id === "string" && typeof block.name === "string" && typeof block.input === "object" && block.input !== null;
    const results = block.content === undefined || typeof block.content === "string" || Array.isArray(block.content);
    return block.type !== "tool_result" || (typeof block.tool_use_id === "string" && results);
  });
}

/** The workspace's session files, the one written to last first. */
function sessionFiles(root: string): { id: string; written: Date }[] {
  const folder = sessionsFolder(root);
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((name) => SESSION_ID.test(name.replace(/\.jsonl$/, "")) && name.endsWith(".jsonl"))
    .map((name) => ({ id: name.slice(0, -6), written: lstatSync(path.join(folder, name)).mtime }))
    .sort((a, b) => b.written.getTime() - a.written.getTime() || b.id.localeCompare(a.id));
}

/** What --continue resumes: the session written to last (the one you just left), not the one started last. */
export function newestSession(root: string): string {
  const [newest] = sessionFiles(root);
  if (!newest) throw new Error(`there is no session to continue in this workspace (${SESSIONS}/ has none); start one without --continue`);
  return newest.id;
}

/** `--resume` alone: the newest sessions, one line each (id, last written, messages, first prompt). */
export async function listSessions(): Promise<number> {
  const root = realpathSync(workspace());
  let sessions: { id: string; written: Date }[];
  try {
    sessions = sessionFiles(root);
  } catch (error) {
    console.log(`[error] ${(error as Error).message}`);
    return 1;
  }
  if (sessions.length === 0) {
    console.log(`No sessions in this workspace yet (${SESSIONS}/ has none).`);
    return 0;
  }
  console.log(`Sessions in ${SESSIONS}/, the one written to last first (--resume <id> resumes one):`);
  for (const { id, written } of sessions.slice(0, LIST_LIMIT)) {
    let about: string;
    try {
      const { logged } = readSession(path.join(root, SESSIONS, `${id}.jsonl`), `${SESSIONS}/${id}.jsonl`);
      const first = logged.find((message) => message.role === "user" && textOf(message) !== "");
      about = `${logged.length} messages  ${first ? JSON.stringify(clip(textOf(first).replace(/\s+/g, " "), 60, "head")) : "(no prompt)"}`;
    } catch (error) {
      about = `(cannot be resumed: ${(error as Error).message})`;
    }
    console.log(`  ${id}  ${localTime(written)}  ${visible(about)}`);
  }
  if (sessions.length > LIST_LIMIT) console.log(`  ... and ${sessions.length - LIST_LIMIT} older (ls ${SESSIONS})`);
  return 0;
}

const textOf = (message: MessageParam): string =>
  typeof message.content === "string" ? message.content : message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join(" ");

const localTime = (date: Date): string => {
  const two = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}`;
};
// #endregion resume

// #region repair
export const INTERRUPTED =
  "Interrupted: the program ended before this call returned a result, and the session was resumed later. It may or may not have run: look before doing it again.";

/**
 * The history a session's logged messages give, in the shape the API accepts, and a note for
 * each repair. The logged messages are not changed, nor is the file: loading the same file
 * always gives the same history, so the repairs are made again at each load, the same way.
 * - An empty text block, or a message left with nothing, is left out: the API refuses both.
 * - A tool_use whose result is missing from the next message (the program ended during the
 *   call) gets an is_error result there, saying it was interrupted: the API refuses a call
 *   without its result.
 * - A result that answers no call in the message before it: the file was edited by hand, and
 *   guessing what was meant could mislead the model. The session is refused.
 * Two user messages in a row (a prompt whose reply never came, then the next prompt) stay: the
 * API takes consecutive turns of one role as one turn.
 */
export function repaired(logged: MessageParam[], lines = logged.map((_, i) => i + 2)): { messages: MessageParam[]; notes: string[] } {
  const notes: string[] = [];
  const kept: MessageParam[] = [];
  logged.forEach((message, i) => {
    const blocks = typeof message.content === "string" ? undefined : message.content.filter((block) => block.type !== "text" || block.text.trim() !== "");
    if (blocks ? blocks.length === 0 : String(message.content).trim() === "") return void notes.push(`line ${lines[i]} is an empty ${message.role} message: it is left out`);
    kept.push(blocks && blocks.length < message.content.length ? ({ role: message.role, content: blocks } as MessageParam) : message);
  });
  const messages: MessageParam[] = [];
  for (let i = 0; i < kept.length; i++) {
    const message = kept[i];
    const asked = callsOf(messages.at(-1)).map((call) => call.id);
    const stray = resultsOf(message).find((id) => !asked.includes(id));
    if (message.role === "user" && stray) throw new Error(`the result for ${stray} answers no call in the message before it (was the file edited?)`);
    messages.push(message);
    const next = kept[i + 1];
    const missing = callsOf(message).filter((call) => !resultsOf(next).includes(call.id));
    if (missing.length === 0) continue;
    for (const call of missing) notes.push(`the call ${call.id} (${call.name}) had no result, as the program ended during it: it gets one saying it was interrupted`);
    const results = missing.map((call): ToolResultBlockParam => ({ type: "tool_result", tool_use_id: call.id, is_error: true, content: INTERRUPTED }));
    // The results belong in the very next message, first: into the next user message's blocks, or in one of their own.
    if (next?.role === "user" && Array.isArray(next.content)) kept[i + 1] = { role: "user", content: [...results, ...next.content] };
    else messages.push({ role: "user", content: results });
  }
  if (messages.length > 0 && messages[0].role !== "user") throw new Error("its first message is not the person's, and the API takes only a history that starts with one");
  return { messages, notes };
}

const blocksIn = (message: MessageParam | undefined): ContentBlockParam[] => (message && Array.isArray(message.content) ? message.content : []);
const callsOf = (message: MessageParam | undefined) =>
  message?.role === "assistant" ? blocksIn(message).filter((block): block is ToolUseBlock => block.type === "tool_use") : [];
const resultsOf = (message: MessageParam | undefined) =>
  message?.role === "user" ? blocksIn(message).flatMap((block) => (block.type === "tool_result" ? [block.tool_use_id] : [])) : [];
// #endregion repair

// #region transcript
/**
 * What the harness knows of one conversation. The loop passes the same `messages` array to
 * every request of a session, so that array names the conversation (a WeakMap key). Its
 * transcript, where every message is on disk before anything is taken out of what the model
 * sees, is the session log (s16): the person's conversation is a SessionLog. A subagent's is a
 * plain array that ends with its run (s10): it is no session, and nothing of it is on disk.
 */
interface Conversation {
  /** The model is sent `summary` in place of messages[0 .. cut). */
  cut: number;
  summary?: MessageParam;
  /** The input tokens of the last request, from its reply's usage. */
  contextTokens: number;
  /** After a compaction failed: no automatic one until a request uses more input tokens than this. */
  retryAt: number;
}

const conversations = new WeakMap<MessageParam[], Conversation>();

function conversationOf(messages: MessageParam[]): Conversation {
  let conversation = conversations.get(messages);
  if (!conversation) conversations.set(messages, (conversation = { cut: 0, contextTokens: 0, retryAt: 0 }));
  return conversation;
}

/** The session log that keeps a conversation, if it has one (a subagent's has none). */
const logOf = (messages: MessageParam[]) => (messages instanceof SessionLog ? messages : undefined);
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
  const log = logOf(messages);
  const view = kept.map((message, i): MessageParam => {
    if (!old.has(i)) return message;
    // Only a message already in the session log can be pointed to there.
    const onDisk = log && conversation.cut + i < log.written ? log.file : undefined;
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
 * Replace what the model sees of `messages` with a summary the model writes. Every message is
 * in the session log already (s16), and the compaction is written there after them; when it
 * cannot be, or the summary request fails, nothing changes and the person is told. It runs
 * between two requests, at the end of the conversation, where every tool_use already has its
 * tool_result: a pair can never be split.
 */
async function compact(messages: MessageParam[], why: string, focus?: string): Promise<boolean> {
  const [conversation, log] = [conversationOf(messages), logOf(messages)];
  console.log(dim(`[compacting the context: ${why}]`));
  let summary: string;
  try {
    const instruction = focus ? `${SUMMARY_REQUEST} Keep in particular: ${focus}` : SUMMARY_REQUEST;
    // The loop's system prompt and tools (a request holding tool_use blocks must declare its
    // tools, and an unchanged start can come from the prompt cache), but no tool may be called.
    const request = { model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, tool_choice: { type: "none" as const } };
    // s14: it costs like any request (counted), and its start can be read from the cache (breakpoints).
    const reply = await provider.messages.create(withBreakpoints({ ...request, messages: withText(contextFor(conversation, messages), instruction) }));
    addUsage(reply.usage);
    summary = reply.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n").trim();
    if (reply.stop_reason === "max_tokens") throw new Error(`the summary was cut off at ${MAX_TOKENS} tokens`);
    if (reply.stop_reason !== "end_turn" || summary === "") throw new Error("the model wrote no summary");
  } catch (error) {
    return notCompacted(conversation, `the summary request failed (${describeProviderError(error).replace(/^\[error\] /, "").replace(/\.$/, "")})`);
  }
  const message = summaryMessage(summary, log?.file, messages);
  // s16: a line of its own, so a resumed session is sent the summary, not everything again.
  if (log && !log.compacted(message)) return notCompacted(conversation, "the compaction cannot be written to the session log");
  const replaced = messages.length - conversation.cut + (conversation.summary ? 1 : 0);
  Object.assign(conversation, { cut: messages.length, summary: message, contextTokens: 0, retryAt: 0 });
  console.log(dim(`[compacted: ${replaced} messages became a summary of ${summary.length} characters; ${log ? `; every message is in ${log.file}` : ""}]`));
  return true;
}

/** Nothing changed, in one warning; each try sends the whole conversation, so the next automatic one waits until the context has grown by a tenth of the threshold. */
function notCompacted(conversation: Conversation, why: string): false {
  conversation.retryAt = Math.max(conversation.contextTokens + Math.ceil(compactThreshold / 10), compactThreshold);
  console.log(`[warning] not compacted: ${why}; the conversation is sent as it is, and the next automatic try waits for a request past ${conversation.retryAt} input tokens`);
  return false;
}

/** The summary as the model will read it, with where the rest is and, mid-task, what to carry on with. */
function summaryMessage(summary: string, transcript: string | undefined, messages: MessageParam[]): MessageParam {
  const kept = transcript ? `; every message is kept, one JSON message per line, in ${transcript} (search it with grep for an exact detail)` : "";
  const parts = [
    `[The conversation so far was compacted to make room. This summary replaces it${kept}.]`,
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
    "Make room in your context: before your next request the conversation so far is replaced by a summary you write, and every message stays in .agent/sessions/. " +
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

// #region skills
// yaml loads when the first skill is read, not at start: a learner waits for every start.
const needed = createRequire(import.meta.url);
// A skill is knowledge the agent may need, kept out of the context until it does: a folder
// skills/<name>/ with a SKILL.md that starts with YAML frontmatter (name, description) and
// goes on with instructions. The system prompt lists each name and description (a line
// each); load_skill returns the instructions when the model decides it needs them.
const SKILLS_FOLDER = "skills";
// The Agent Skills format's rules for a name: what a folder and a tool argument can both be.
const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const MAX_NAME = 64;
const MAX_DESCRIPTION = 1024; // each one is in every request
const MAX_INSTRUCTIONS = 20_000; // about 5,000 tokens: a skill is loaded whole, into one result
// A name, a description and a few keys: yaml checks each key against all the ones before it,
// so 100,000 keys would take it a minute. Past this the frontmatter is not parsed at all.
const MAX_FRONTMATTER = 4_000;
// The system prompt's list of skills (every request carries it): past this, a note says how many more there are.
const SKILLS_BUDGET = 12_000;

/** `file` is where it is, as the model and the person read it: "skills/changelog/SKILL.md". */
type Skill = { name: string; description: string; file: string; instructions: string };

/**
 * The skills in the workspace now, in name order, and a sentence for each SKILL.md that was
 * skipped. Reading never throws: one bad skill must not hide the others, nor stop the agent.
 */
function readSkills(): { skills: Skill[]; skipped: string[] } {
  if (workspace() !== process.cwd()) return atHome(readSkills); // s20: the skills the session lists, for a teammate in a worktree too
  const skills: Skill[] = [];
  const skipped: string[] = [];
  let folders: string[] = [];
  try {
    const folder = safePath(SKILLS_FOLDER); // a skills folder that is a link out of the workspace is refused
    if (existsSync(folder) && !statSync(folder).isDirectory()) throw new Error("it is not a folder");
    // Each folder is a skill (a link to one too); loose files and hidden folders are not.
    if (existsSync(folder)) folders = readdirSync(folder, { withFileTypes: true }).filter((entry) => (entry.isDirectory() || entry.isSymbolicLink()) && !entry.name.startsWith(".")).map((entry) => entry.name).sort();
  } catch (error) {
    skipped.push(`${SKILLS_FOLDER}/: ${(error as Error).message}; no skill was read`);
  }
  for (const folder of folders) {
    const file = `${SKILLS_FOLDER}/${folder}/SKILL.md`;
    try {
      skills.push(parseSkill(folder, file));
    } catch (error) {
      skipped.push(`${file}: ${(error as Error).message}`);
    }
  }
  return { skills, skipped };
}

/** One skill from its SKILL.md, or an error saying what is wrong with the file. */
function parseSkill(folder: string, file: string): Skill {
  const real = safePath(file); // the sandbox's rules: a SKILL.md that links out of the workspace is refused
  if (!existsSync(real)) throw new Error("there is no SKILL.md in the folder");
  const text = readText(real, file).replace(/^\uFEFF/, "");
  if (!/^---[ \t]*\r?\n/.test(text)) throw new Error('it has no frontmatter: the file must start with a line "---", then "name:" and "description:", then "---"');
  // The frontmatter ends at the first line that is "---"; the instructions are the rest.
  const parts = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)([\s\S]*)$/.exec(text);
  if (!parts) throw new Error('its frontmatter is not closed: no line "---" after it');
  if ((parts[1] ?? "").length > MAX_FRONTMATTER) throw new Error(`its frontmatter is ${parts[1].length} characters; at most ${MAX_FRONTMATTER}, for a name, a description and a few keys`);
  let meta: unknown;
  try {
    meta = (needed("yaml") as typeof import("yaml")).parse(parts[1] ?? "");
  } catch (error) {
    const where = error instanceof (needed("yaml") as typeof import("yaml")).YAMLParseError && error.linePos ? ` (line ${error.linePos[0].line + 1} of the file)` : "";
    throw new Error(`its frontmatter is not valid YAML${where}: ${(error as Error).message.split(" at line")[0]}`);
  }
  if (meta === null || typeof meta !== "object" || Array.isArray(meta)) throw new Error('its frontmatter is not a set of "key: value" lines');
  const { name, description } = meta as Record<string, unknown>;
  if (typeof name !== "string" || name === "") throw new Error('its "name" is missing, or is not text');
  if (typeof description !== "string" || description.trim() === "") throw new Error('its "description" is missing, or is not text');
  if (!SKILL_NAME.test(name) || name.length > MAX_NAME) throw new Error(`its name "${name}" is not ${MAX_NAME} characters at most of a-z, 0-9 and single hyphens`);
  // The folder is how a skill is found, so the name must be the folder's: two files cannot
  // claim one name, and load_skill never builds a path from what the model sent.
  if (name !== folder) throw new Error(`its name "${name}" is not its folder's name "${folder}"; they must be the same`);
  if (description.length > MAX_DESCRIPTION) throw new Error(`its description is ${description.length} characters; at most ${MAX_DESCRIPTION}, since every request carries it`);
  const instructions = parts[2].trim();
  if (instructions === "") throw new Error("it has no instructions after its frontmatter");
  if (instructions.length > MAX_INSTRUCTIONS) {
    throw new Error(`its instructions are ${instructions.length} characters, over the ${MAX_INSTRUCTIONS} a skill loads at once; keep SKILL.md short and put the details in other files of its folder, which it names`);
  }
  return { name, description: description.replace(/\s+/g, " ").trim(), file, instructions };
}

const loadSkillTool = defineTool({
  name: "load_skill",
  displayName: "LoadSkill",
  // It only reads, so it never asks, plan mode allows it, and several run side by side.
  kind: "read",
  description: "Load a skill's instructions by its name, from the list of skills in your system prompt. Follow them for the task; paths in them are relative to the skill's folder.",
  parameterSchema: { type: "object", properties: { name: { type: "string", description: 'The skill\'s name, as listed: "changelog".' } }, required: ["name"], additionalProperties: false },
  getDescription: (params) => String(params.name),
  async execute(params) {
    // Read now, not from the session's list: the instructions on disk are the ones to follow.
    const { skills, skipped } = readSkills();
    const skill = skills.find((candidate) => candidate.name === params.name);
    if (!skill) {
      const there = skills.length > 0 ? `The skills are: ${skills.map((s) => s.name).join(", ")}.` : `There are no skills in ${SKILLS_FOLDER}/.`;
      const broken = skipped.length > 0 ? ` Skipped, as not valid: ${skipped.join("; ")}.` : "";
      throw new Error(`there is no skill named ${JSON.stringify(params.name)}. ${there}${broken}`);
    }
    return {
      llmContent: `<skill name="${skill.name}" folder="${path.dirname(skill.file)}/">\n${skill.instructions}\n</skill>`,
      returnDisplay: `${skill.file}: ${skill.instructions.split("\n").length} lines of instructions loaded`,
    };
  },
});
// #endregion skills

// #region memory
// Memory is a Markdown file of facts, one bullet each, under one heading: the workspace's
// .agent/MEMORY.md, or the same path in the person's home for what holds in every project.
// The person can read and edit it; the agent reads it at the start of each session (region
// `knowledge`) and adds to it with save_memory.
const MEMORY_FILE = ".agent/MEMORY.md";
const GLOBAL_MEMORY = `~/${MEMORY_FILE}`;
const MEMORY_HEADING = "## Saved facts";
const MEMORY_LIMIT = 4_000; // characters of each file: the system prompt carries it whole
const MAX_FACT = 500;
type Scope = "workspace" | "global";

/** Where a scope's memory is: the file, the name the person and the model read, the folder it must stay in. */
function memoryPlace(scope: Scope): { file: string; given: string; root: string } {
  if (scope === "workspace") return atHome(() => ({ file: safePath(MEMORY_FILE), given: MEMORY_FILE, root: realpathSync(workspace()) })); // s20: never a worktree's
  // The person's own file at a fixed place, never a path the model chose; a link is followed.
  const home = realpathSync(os.homedir());
  return { file: followLinks(path.join(home, MEMORY_FILE), GLOBAL_MEMORY), given: GLOBAL_MEMORY, root: home };
}

const readMemory = (place: { file: string; given: string }) => (existsSync(place.file) ? readText(place.file, place.given) : "");

/** One bullet's text: one line, without the marks that would make it a heading or a list of its own. */
const asFact = (text: string) => text.replace(/\s+/g, " ").trim().replace(/^(([-*+>#]+|\d+[.)])( |$))+/, "").trim();

/** Two facts are the same when they differ only in case, spacing or a full stop at the end. */
const factKey = (fact: string) => asFact(fact).toLowerCase().replace(/[.!]+$/, "");

/** The change to a memory file; `known` is the bullet already there that says the same (then nothing changes). */
type MemoryChange = FileChange & { before: string; root: string; known?: string };

/** The memory file with the fact added as a bullet at the end of MEMORY_HEADING's section (made if missing). */
function proposeMemory(params: Params): MemoryChange {
  const fact = asFact(String(params.fact));
  if (fact === "") throw new Error("the fact is empty: say in one sentence what to remember");
  if (fact.length > MAX_FACT) throw new Error(`the fact is ${fact.length} characters; a fact is one short sentence (at most ${MAX_FACT})`);
  const place = memoryPlace((params.scope as Scope | undefined) ?? "workspace");
  const before = readMemory(place);
  const lines = before === "" ? [] : before.replace(/\r?\n$/, "").split(/\r?\n/);
  const known = lines.map((line) => /^\s*[-*+]\s+(.*)$/.exec(line)?.[1]).find((bullet) => bullet !== undefined && factKey(bullet) === factKey(fact));
  if (known !== undefined) return { ...place, before, after: before, known };
  let heading = lines.findIndex((line) => line.trim() === MEMORY_HEADING);
  if (heading === -1) {
    if (lines.length === 0) lines.push("# Memory", "", "Facts the agent keeps with save_memory, read at the start of every session. Edit freely.");
    heading = lines.push("", MEMORY_HEADING) - 1;
  }
  // The section ends at the next heading; the fact goes after its last line that is not blank.
  let end = lines.findIndex((line, i) => i > heading && /^#{1,2} /.test(line));
  if (end === -1) end = lines.length;
  while (end - 1 > heading && lines[end - 1].trim() === "") end -= 1;
  lines.splice(end, 0, ...(end === heading + 1 ? ["", `- ${fact}`] : [`- ${fact}`]));
  const eol = before.includes("\r\n") ? "\r\n" : "\n";
  const after = `${lines.join(eol)}${eol}`;
  if (after.length <= MEMORY_LIMIT) return { ...place, before, after };
  throw new Error(
    `memory is full: with this fact ${place.given} would be ${after.length} characters, over the ${MEMORY_LIMIT} that keep the system prompt small. ` +
      `Nothing was saved. Tell the person, and ask which facts to remove (they can edit ${place.given}); meanwhile the fact stays in this conversation only`,
  );
}

const saveMemoryTool = defineTool({
  name: "save_memory",
  displayName: "SaveMemory",
  // It writes a file that every later session reads as part of its system prompt: the person
  // sees the change and agrees, as for any edit (and plan mode refuses it).
  kind: "edit",
  description:
    `Keep one short fact for later sessions: it is added as a bullet to ${MEMORY_FILE} in the workspace, which is read into your system prompt at the start of each session. ` +
    `Use scope "global" (${GLOBAL_MEMORY}, read in every workspace) only when the person asks for it. A fact already kept is not added twice; memory holds at most ${MEMORY_LIMIT} characters per file.`,
  parameterSchema: {
    type: "object",
    properties: {
      fact: { type: "string", description: "One self-contained sentence: what to remember, and why if it helps." },
      scope: { type: "string", enum: ["workspace", "global"], description: 'Where to keep it: "workspace" (default) or "global" (the person\'s home, every project).' },
    },
    required: ["fact"],
    additionalProperties: false,
  },
  getDescription: (params) => `${asFact(String(params.fact))}${params.scope === "global" ? ` (into ${GLOBAL_MEMORY})` : ""}`,
  // The global file is read into every session in every project: it asks even in auto-edit.
  changesTheAgent: (params) => params.scope === "global",
  async shouldConfirmExecute(params) {
    const change = proposeMemory(params);
    return change.known === undefined && { title: `Save to memory (${change.given})?`, details: diffOf(change.given, change.before, change.after) };
  },
  async execute(params) {
    // Worked out again from the file as it is now: a save just before this one is kept.
    const change = proposeMemory(params);
    const already = `Already in memory (${change.given}): "- ${change.known}". Nothing was added.`;
    if (change.known !== undefined) return { llmContent: already, returnDisplay: already };
    try {
      writeAtomically(change.file, change.after, change.given, { root: change.root, isInside }, { createFolders: true });
    } catch (error) {
      throw new Error(`the fact was not saved: ${(error as Error).message}`);
    }
    const saved = `Saved to ${change.given}: "- ${asFact(String(params.fact))}". It is in your system prompt from the next session on (in this one, you know it already).`;
    return { llmContent: saved, returnDisplay: diffOf(change.given, change.before, change.after) };
  },
});
// #endregion memory

// #region knowledge
// What the session starts knowing: the skills' list and the memory, read at the first request
// of a session and kept for all of it. Read when the stage loads, it would read the folder the
// program was started in before a replay or a test has made its workspace; read at every
// request, the system prompt would change in the middle of a conversation, which breaks the
// prompt cache and moves the ground under the model (a fact saved now is in the
// conversation already). A session is one workspace: the program never changes folder, while
// each test and each replay has its own, so a new folder means a new session.
let session: { workspace: string; text: string } | undefined;

function knowledge(): string {
  if (session?.workspace !== workspace()) session = { workspace: workspace(), text: readKnowledge() };
  return session.text;
}

function readKnowledge(): string {
  const { skills, skipped } = readSkills();
  for (const problem of skipped) console.log(dim(`[skills] skipped ${problem}`));
  const list = skillList(skills) || `(none: there is no ${SKILLS_FOLDER}/<name>/SKILL.md in the workspace)`;
  const memory = (["global", "workspace"] as const).map(memoryText).filter(Boolean).join("\n") || "(none saved yet)";
  return `\n\nSkills (load_skill gives the instructions):\n${list}\n\nMemory, facts kept with save_memory in earlier sessions:\n${memory}`;
}

/** A line for each skill, in name order, while they fit in SKILLS_BUDGET; then how many more there are, and how to find them. */
function skillList(skills: Skill[]): string {
  const lines = skills.map((skill) => `- ${skill.name}: ${skill.description}`);
  let size = 300; // kept for the note
  const fit = lines.findIndex((line) => (size += line.length + 1) > SKILLS_BUDGET);
  if (fit === -1) return lines.join("\n");
  const more = lines.length - fit;
  console.log(dim(`[skills] ${more} of ${lines.length} skills are not listed in the system prompt (its list of skills takes at most ${SKILLS_BUDGET} characters)`));
  return [...lines.slice(0, fit), `(${more} more skills are not listed here, to keep this prompt small. Each is a folder ${SKILLS_FOLDER}/<name>/ with a SKILL.md: list ${SKILLS_FOLDER}/ for their names, and load_skill loads one by its name.)`].join("\n");
}

/** A memory file for the prompt, at most MEMORY_LIMIT characters of it; a problem is a warning, not a stop. */
function memoryText(scope: Scope): string {
  const given = scope === "global" ? GLOBAL_MEMORY : MEMORY_FILE;
  try {
    let text = readMemory(memoryPlace(scope)).trim();
    if (text.length > MEMORY_LIMIT) {
      console.log(dim(`[memory] ${given} has ${text.length} characters; only the first ${MEMORY_LIMIT} are read`));
      text = `${text.slice(0, MEMORY_LIMIT)}\n[... cut: ${text.length - MEMORY_LIMIT} more characters in the file]`;
    }
    return text && `<memory file="${given}">\n${text}\n</memory>`;
  } catch (error) {
    console.log(dim(`[memory] ${given} was not read: ${(error as Error).message}`));
    return "";
  }
}

/** A new session: the offline replay calls this (through prepareReplay) before its first prompt. */
function newKnowledgeSession(): void {
  session = undefined;
}
// #endregion knowledge

// #region tools
// Every tool of every stage, in the order the stages brought them. The tools found outside
// (s08) join these when discovery runs, and TOOLS is refilled in place.
for (const tool of [
  ...[bashTool, readFileTool, writeFileTool, editFileTool].map(withWorktree), // s02, s03 (s06's registry entries, s07's paging read_file), each with s20's `worktree`
  grepTool, globTool, lsTool, webFetchTool, askUserTool, // s07's grep; Part I's glob, ls (s03), web_fetch (s04), ask_user (s05)
  todoWriteTool, taskTool, compactTool, loadSkillTool, saveMemoryTool, // s09, s10, s11, s12
  bashOutputTool, killTaskTool, // s18
  taskCreateTool, taskUpdateTool, taskListTool, taskGetTool, spawnTeammateTool, sendMessageTool, readInboxTool, // s19
  worktreeCreateTool, worktreeListTool, worktreeRemoveTool, // s20
]) registry.registerTool(tool);
/** What the model sees, from the registry; a teammate's requests leave out what isTeammateTool refuses (in `client`). */
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
  // A write to the agent's own settings chooses what it runs at its next start: never a silent yes.
  const changesTheAgent = APPROVAL_MODE !== "yolo" && (tool.changesTheAgent?.(params) ?? false);
  if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };
  const first = await tool.shouldConfirmExecute(params, signal);
  if (!first) return { run: true };
  const person = terminal();
  // Waiting for someone who is not there would hang the agent, and going ahead would be a
  // silent yes: refuse at once and say why.
  if (!person.hasPerson) {
    return { run: false, why: `Not run: ${tool.name} needs a person's approval (approval mode ${APPROVAL_MODE}) and no one is at the terminal.` };
  }
  // Subagents side by side, or teammates (s19), may want to ask at the same moment, and a person
  // answers one question at a time: each waits for the one before to be answered.
  const done = await turnToAsk();
  try {
    if (!changesTheAgent && alwaysAllowed.has(tool.name)) return { run: true }; // allowed for good while this one waited
    // Worked out again now that it is this question's turn: an answer before it may have changed the file the diff shows.
    const confirmation = (await tool.shouldConfirmExecute(params, signal)) || first;
    const child = childRun.getStore();
    const asker = child ? ` (asked by the subagent [${child.label}])` : member() ? ` (asked by the teammate ${member()!.name})` : "";
    // What the person approves is what runs: control characters in it are shown, never obeyed.
    const [title, details] = [forTerminal(confirmation.title), forTerminal(confirmation.details)];
    console.log(`\n${title}${asker}\n${indent(details)}\n  ${ANSWER_KEYS.replace("again", `again for ${tool.name}`)}`);
    while (true) {
      const line = await person.ask("allow? ", { fresh: true });
      if (line === null) return { run: false, why: "Not run: the person gave no answer (Ctrl-C or end of input)." };
      const answer = line.trim();
      if (/^(y|yes)$/i.test(answer)) return { run: true, shown: confirmation.details };
      if (/^(a|always)$/i.test(answer)) {
        if (!changesTheAgent) alwaysAllowed.add(tool.name); // the agent's own files ask every time
        return { run: true, shown: confirmation.details };
      }
      if (/^(n|no)$/i.test(answer)) return { run: false, why: "Not run: the person said no." };
      if (answer !== "") return { run: false, why: `Not run: the person said no, and said: ${JSON.stringify(answer)}` };
    }
  } finally {
    done();
  }
}

let lastQuestion: Promise<void> = Promise.resolve();

/** Wait until every question asked before this one is answered; call the result when done. */
async function turnToAsk(): Promise<() => void> {
  const before = lastQuestion;
  let done = () => {};
  lastQuestion = new Promise((resolve) => (done = resolve));
  await before;
  return done;
}

/** Reading never asks. default asks before edits and commands; auto-edit only before commands. */
function mustAsk(tool: AgentTool): boolean {
  if (tool.kind === "read" || APPROVAL_MODE === "yolo") return false;
  if (APPROVAL_MODE === "auto-edit") return tool.kind === "execute";
  return true;
}
// #endregion approval

// #region rules
// Permission rules, Claude Code's syntax with this workbook's tool names. A bare name matches
// every call of the tool; in parentheses, what the call must be:
//   bash(npm test)  that command       bash(git status:*)  a command starting with these words
//   read_file(secrets/**), edit_file(src/**), write_file(*.md)  a path, as a glob in the workspace
//   grep(src/**), glob(...), ls(...)  the folder searched or listed (its `path`, the workspace if none)
//   web_fetch(domain:example.com)  a URL on that host (the URL the model gives; a redirect is not checked)
// Every other tool (task, save_memory, an MCP server's tool, ...) takes a rule by its name alone.
// The capstone's searches read files too: read_file's deny and ask rules hold for grep, glob and ls
// at the folder they are given, and grep's walk leaves out the files a read_file deny rule matches.
// The lists are asked in order, deny, then ask, then allow; with no rule, the approval mode decides.
export type List = "deny" | "ask" | "allow";

/**
 * A rule as read: its text, where it is (`permissions.deny[0] in .agent/settings.json`), its
 * tool, and what it matches of a call (none: every call). `careful` is for deny and ask: then a
 * path's folders count too, and a program is known by its name alone (/bin/rm is rm).
 */
export type Rule = { text: string; at: string; tool: string; matches?: (subject: string[], careful: boolean) => boolean };

const PATH_TOOLS = new Set(["read_file", "write_file", "edit_file", "grep", "glob", "ls"]);
const SEARCHES = new Set(["grep", "glob", "ls"]); // read_file's deny and ask rules count for these too
// Where the file system ignores case (macOS, Windows), SECRETS/key is secrets/key: compare without it.
const fold = (text: string) => (process.platform === "darwin" || process.platform === "win32" ? text.toLowerCase() : text);

/** A rule from its text, or why it cannot be read. */
export function parseRule(text: string): Omit<Rule, "at"> | string {
  const parts = /^([\w-]+)(?:\((.*)\))?$/s.exec(text.trim());
  if (!parts) return "a rule is a tool's name, with what it matches in parentheses if you like: bash(npm test), read_file(secrets/**)";
  const [, tool, inside] = parts;
  const tools = registry.getAllTools().map((known) => known.name);
  if (!tools.includes(tool)) return `this agent has no tool "${tool}" (its tools: ${tools.join(", ")}; names are case-sensitive)`;
  if (inside === undefined || inside.trim() === "*") return { text, tool };
  if (tool === "bash") {
    const prefix = inside.endsWith(":*");
    const commands = plainCommands(prefix ? inside.slice(0, -2) : inside);
    if (commands?.length !== 1) return "a bash rule names one plain command, with :* at its end for every command that starts so: bash(npm test), bash(git status:*)";
    const [words] = commands;
    const fits = (part: string[]) => words.every((word, i) => part[i] === word) && (prefix || part.length === words.length);
    return { text, tool, matches: (part, careful) => fits(part) || (careful && fits([path.basename(part[0]), ...part.slice(1)])) };
  }
  if (PATH_TOOLS.has(tool)) {
    // gitignore's way: a glob with no / is a name at any depth; a leading / ties it to the workspace's top.
    const glob = inside.trim().replace(/^\.\//, "");
    if (glob.replace(/^\//, "") === "" || glob.split("/").includes("..")) return "a path rule is a glob inside the workspace: src/**, *.md, /README.md";
    let test: (relative: string) => boolean;
    try {
      test = globMatcher(fold(glob.replace(/^\//, ""))); // lib's glob: time grows with the path, it never backtracks
    } catch (error) {
      return (error as Error).message;
    }
    // The path, and for deny and ask each folder on its way: denying secrets denies what is in it.
    const candidates = (relative: string) => fold(relative).split("/").map((name, i, all) => (glob.includes("/") ? all.slice(0, i + 1).join("/") : name));
    return { text, tool, matches: ([relative], careful) => candidates(relative).slice(careful ? 0 : -1).some(test) };
  }
  const host = /^domain:([\w.-]+)$/.exec(inside.trim())?.[1]?.toLowerCase();
  if (tool === "web_fetch") return host ? { text, tool, matches: ([url]) => url === host } : "a web_fetch rule names a host: web_fetch(domain:example.com)";
  return `${tool} takes nothing in parentheses: a rule for it is its name alone`;
}

/**
 * The rule that decides a call. deny, then ask: the first rule that matches any part of it
 * (a command hidden in `a && b` or `$(b)` too). allow: only when every part matches an allow
 * rule, and only for a command line read whole. undefined: no rule decides.
 */
export function ruleFor(tool: string, params: Params): { list: List; rule: Rule } | undefined {
  // An edit reads its file first, and its errors tell whether a text is in it: what read_file may not read, edit_file may not edit.
  const readsToo = (rule: Rule, list: List) => rule.tool === "read_file" && ((list !== "allow" && SEARCHES.has(tool)) || (list === "deny" && tool === "edit_file"));
  const of = (list: List) => rules[list].filter((rule) => rule.tool === tool || readsToo(rule, list));
  const anyPart = subjectsOf(tool, params, true) ?? [];
  for (const list of ["deny", "ask"] as const) {
    const rule = of(list).find((rule) => !rule.matches || anyPart.some((subject) => rule.matches!(subject, true)));
    if (rule) return { list, rule };
  }
  const whole = of("allow").find((rule) => !rule.matches);
  if (whole) return { list: "allow", rule: whole };
  const everyPart = subjectsOf(tool, params, false);
  if (!everyPart || everyPart.length === 0) return undefined; // in doubt, no allow
  const by = everyPart.map((subject) => of("allow").find((rule) => rule.matches?.(subject, false)));
  return by.every((rule) => rule !== undefined) ? { list: "allow", rule: by[0]! } : undefined;
}

/**
 * What the rules look at in a call, as lists of words: each command of a bash command line;
 * for a file tool, its path as the sandbox resolves it (`./secrets/x`, `a/../secrets/x` and a
 * link into secrets/ are all secrets/x); a URL's host. undefined: it cannot be read whole.
 */
function subjectsOf(tool: string, params: Params, careful: boolean): string[][] | undefined {
  try {
    if (tool === "bash") return careful ? [...(plainCommands(String(params.command)) ?? []), ...roughCommands(String(params.command))] : plainCommands(String(params.command));
    // s20: with `worktree`, the path as the sandbox resolves it inside that worktree (its links, not the main checkout's).
    if (PATH_TOOLS.has(tool)) return [[inWorktree(params, () => path.relative(rootFor(String(params.path ?? ".")), safePath(String(params.path ?? ".")))).split(path.sep).join("/")]];
    if (tool === "web_fetch") return [[new URL(String(params.url)).hostname.toLowerCase().replace(/\.$/, "")]];
  } catch {
    return undefined; // a path the sandbox refuses, a URL that is none: the tool refuses it anyway
  }
  return [[]];
}

/** For grep's walk: a file (its path in the workspace) that a read_file deny rule matches is left out of a wider search. */
const deniedToRead = (relative: string) => rules.deny.some((rule) => rule.tool === "read_file" && rule.matches?.([relative], true) === true);

// A plain command line, piece by piece: blanks; an operator between commands (&& || ; | & and
// line breaks); or part of a word (plain characters, '…', or "…" without $ ` \ in it).
const PLAIN = /([ \t]+)|(&&|\|\||[;|&\n])|([\w.\/:=@%+,-]+|'[^']*'|"[^"$`\\]*")/y;

/**
 * The commands of a plain command line, each as its words (quotes taken off); undefined when
 * it holds anything else: $( ), backticks, $VAR, < >, ( ), a glob, an escape, an open quote.
 * Only such a line can be allowed: what is not read whole is not known.
 */
export function plainCommands(command: string): string[][] | undefined {
  const commands: string[][] = [[]];
  let word: string | undefined;
  const endWord = () => void (word !== undefined && commands.at(-1)!.push(word), (word = undefined));
  for (let at = 0; at < command.length; at = PLAIN.lastIndex) {
    PLAIN.lastIndex = at;
    const [, blank, operator, piece] = PLAIN.exec(command) ?? [];
    if (blank) endWord();
    else if (operator) endWord(), commands.push([]);
    else if (piece) word = (word ?? "") + piece.replace(/^(['"])([^]*)\1$/, "$2");
    else return undefined;
  }
  endWord();
  return commands.filter((words) => words.length > 0);
}

const KEYWORDS = new Set(["!", "if", "then", "elif", "else", "while", "until", "do", "time", "exec", "command"]);

/**
 * For deny and ask: the pieces between any of ; & | ( ) ` < > { } and line breaks, in quotes
 * too, with $VAR read as a blank (rm${IFS}x), quotes and escapes dropped and a keyword or
 * VAR=value in front skipped. More than bash would run, never less: a deny rule matches
 * `echo $(rm x)`, `FOO=1 rm x`, `"rm" x`.
 */
export function roughCommands(command: string): string[][] {
  const commands = command.replace(/\$\{?\w*\}?/g, " ").split(/[;&|\n()`<>{}]/).map((piece) => piece.replace(/\\(.)/g, "$1").replace(/['"]/g, "").split(/\s+/).filter(Boolean));
  for (const words of commands) while (words.length > 0 && (KEYWORDS.has(words[0]) || /^[A-Za-z_]\w*=/.test(words[0]))) words.shift();
  return commands.filter((words) => words.length > 0);
}
// #endregion rules

// #region hooks
const HOOK_TIMEOUT = 60; // seconds, unless the hook says `timeout`; then it ends with all it started
const MAX_HOOK_OUTPUT = 10_000; // characters kept of a hook's stdout, and of its stderr (both ends)
const MAX_STOP_RETURNS = 3; // times one turn's Stop hooks may send the model back to work

export type Hooked = { blocked?: string; added: string }; // the stderr of one that exited 2; the stdout of those that exited 0

/**
 * Run the hooks of `event` that match the call's tool (every one, for a prompt and Stop), one
 * after another, each with the event as JSON on stdin, in the workspace. Exit 0: its stdout
 * is kept. Exit 2: it blocks, and the rest do not run. Anything else (another code, its time
 * limit, no bash) is a warning to the person, and the call goes on. Ctrl-C (the signal) cancels.
 */
export async function runHooks(event: HookEvent, input: Record<string, unknown>, signal?: AbortSignal): Promise<Hooked> {
  const added: string[] = [];
  const tool = input.tool_name as string | undefined;
  const matches = (hook: Hook) => tool === undefined || !hook.matcher || hook.matcher === "*" || hook.matcher.split("|").includes(tool);
  for (const hook of hooks[event].filter(matches)) {
    const [stdout, stderr] = [new HeadAndTail(MAX_HOOK_OUTPUT), new HeadAndTail(MAX_HOOK_OUTPUT)];
    const stdin = JSON.stringify({ hook_event_name: event, cwd: workspace(), ...input });
    let ended: number | null | string;
    try {
      ended = await runCommand(hook.command, { cwd: workspace(), timeoutMs: (hook.timeout ?? HOOK_TIMEOUT) * 1000, output: stdout, errors: stderr, input: stdin, signal });
    } catch (error) {
      if (signal?.aborted) throw error;
      ended = (error as Error).message.replace(/(were ended)[^]*$/, "$1").replace("the command and", "the hook and"); // its time limit, no bash
    }
    if (ended === 2) return { blocked: stderr.text().trim() || "(the hook gave no reason on stderr)", added: added.join("\n") };
    if (ended === 0 && stdout.text().trim()) added.push(stdout.text().trim());
    if (ended === 0) continue;
    const said = clip(stderr.text().trim().split("\n")[0], 200, "head");
    console.log(`[hook warning] ${event} hook (${hook.at}) ${typeof ended === "string" ? ended : `exit code ${ended ?? "(killed)"}`}${said ? `: ${visible(said)}` : ""}; it goes on`);
  }
  return { added: added.join("\n") };
}

/** A turn's hooks (a prompt's, Stop's); Ctrl-C cancels them, and then none has its say. */
const turnHooks = (event: HookEvent, input: Record<string, unknown>, controller = new AbortController()): Promise<Hooked> =>
  cancellable(() => controller.abort(), () => runHooks(event, input, controller.signal)).catch(() => ({ added: "" }));

/**
 * The loop with the turn's hooks around it; the loop is unchanged. UserPromptSubmit runs before
 * the model sees the prompt: its stdout is added to the prompt, exit 2 takes the prompt back
 * unsent. Stop runs when the loop returns: its stdout is shown to the person, and exit 2 sends
 * its stderr to the model, which works on (at most MAX_STOP_RETURNS times in a turn).
 */
export function withTurnHooks(loop: (messages: MessageParam[]) => Promise<void>): (messages: MessageParam[]) => Promise<void> {
  return async (messages) => {
    const prompt = messages.at(-1);
    if (prompt?.role === "user" && typeof prompt.content === "string") {
      const hooked = await turnHooks("UserPromptSubmit", { prompt: prompt.content });
      if (hooked.blocked !== undefined) {
        messages.pop(); // never sent: the history (and s16's log) as it was before the prompt
        return void console.log(`[not sent: a UserPromptSubmit hook blocked the prompt: ${visible(clip(hooked.blocked, 2000, "head"))}]`);
      }
      if (hooked.added) console.log(dim(indent(`[added to your prompt by a hook]\n${firstLines(hooked.added, 5)}`)));
      // s16: a message in the history is never changed; the prompt is taken back (from the log too) and pushed again as it will be sent.
      if (hooked.added) messages.pop(), messages.push({ role: "user", content: `${prompt.content}\n\n<user-prompt-submit-hook>\n${hooked.added}\n</user-prompt-submit-hook>` });
    }
    for (let returns = 0; ; returns++) {
      await loop(messages);
      const stop = await turnHooks("Stop", { stop_hook_active: returns > 0 });
      if (stop.added) console.log(dim(indent(firstLines(stop.added, 12))));
      // Only after the model's reply: a turn cut off mid-call ends with results, and the model is not asked again.
      if (stop.blocked === undefined || messages.at(-1)?.role !== "assistant") return;
      const reason = visible(clip(stop.blocked, 200, "head"));
      if (returns === MAX_STOP_RETURNS) return void console.log(`[a Stop hook still objects after ${MAX_STOP_RETURNS} more rounds; the turn ends: ${reason}]`);
      console.log(dim(`[a Stop hook sends the model back to work: ${reason}]`));
      messages.push({ role: "user", content: `<stop-hook>\nA Stop hook did not let the turn end yet:\n${stop.blocked}\n</stop-hook>` });
    }
  };
}
// #endregion hooks

// #region run-tool
// s06's nine steps, with what later stages put in them: a large result in a file (s07), images
// (s08), the todo reminder (s09), a subagent's lines under its label (s10), no second line for a
// streamed call (s13), rules and hooks for every agent's calls (s17), a teammate's limits (s19).
/**
 * The calls of one reply. Calls that only read, side by side, run at the same time: reading
 * cannot conflict. Edits and commands run one at a time, in order, since each may depend on
 * the one before. The results go back in call order, each with its call's id.
 */
async function runTools(content: ContentBlock[]): Promise<ToolResultBlockParam[]> {
  const mate = member(); // s19: a teammate's replies are counted, and bounded per turn
  if (mate && ++mate.replies > TEAM_LIMITS.repliesPerTurn) fail(`it used ${TEAM_LIMITS.repliesPerTurn} replies in one turn without finishing`);
  const calls = content.filter((block): block is ToolUseBlock => block.type === "tool_use");
  const results: ToolResultBlockParam[] = [];
  for (const batch of batches(calls)) results.push(...(await Promise.all(batch.map(runTool))));
  // s09: the parent's reply is counted, and a due reminder rides in its last result; then s18's
  // notices of tasks that ended, after it. A subagent's and a teammate's calls come through here
  // too; their replies are not the parent's, the list is not theirs, and the notices are the lead's.
  return childRun.getStore() || mate ? results : withNotices(withReminder(calls, results));
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
    show(dim(indent(visible(clip(message, 2000, "head")))));
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: resultFor(call.id, message) };
  };
  // 3. Look the tool up: a teammate has only the tools its requests offer (s19).
  const mine = registry.getAllTools().filter((t) => !member() || isTeammateTool(t.name));
  const tool = mine.find((t) => t.name === call.name);
  if (!tool) show(dim(`> ${visible(call.name)}`));
  if (!tool) return failed(`Error: unknown tool "${call.name}". Tools: ${mine.map((t) => t.name).join(", ")}.`);
  // 4. Validate. s15: arguments that were not a JSON object (the adapter kept them under NOT_JSON) are the model's to send again.
  const unread = (call.input as Record<string, unknown> | null)?.[NOT_JSON];
  if (typeof unread === "string") return failed(`Error: ${call.name} was not run: its arguments are not a JSON object (${JSON.stringify(clip(unread, 200, "head"))}). Send the call again with valid JSON arguments.`);
  // Models send null for what they leave out: it means "not given", for every tool.
  const params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  const problem = tool.validateToolParams(params);
  if (problem) {
    show(dim(`> ${tool.displayName} ${visible(clip(JSON.stringify(params), 120, "head"))}`));
    return failed(`Error: ${call.name} was not run: ${problem}.`);
  }
  // 5. Describe, in one line, what is about to happen, unless the stream showed it when the call was whole (s13).
  if (!shownCalls.delete(call.id)) show(dim(`> ${tool.displayName} ${visible(clip(tool.getDescription(params).split("\n")[0], 120, "head"))}`));
  // s19: a background task's notice is the lead's (s18): a teammate runs its commands in the foreground.
  if (member() && params.run_in_background === true) return failed("Error: background tasks are the lead's: run the command in the foreground.");
  const controller = new AbortController();
  const hooksFor = (event: HookEvent, more: Record<string, unknown> = {}) =>
    cancellable(() => controller.abort(), () => runHooks(event, { tool_name: call.name, tool_input: params, ...more }, controller.signal));
  try {
    // 6a. A deny rule holds in every mode, yolo too (s17).
    const decided = ruleFor(call.name, params);
    if (decided?.list === "deny") return failed(`Not run: the rule deny ${decided.rule.text} (${decided.rule.at}) forbids it.`);
    // 6b. The PreToolUse hooks: exit 2 blocks, and the model reads the hook's stderr (s17).
    const pre = await hooksFor("PreToolUse");
    if (pre.blocked !== undefined) return failed(`Not run: a PreToolUse hook blocked it: ${pre.blocked}`);
    // 6c. Confirm: an ask or allow rule, else the approval mode, and the person when one asks.
    const verdict = await confirm(tool, params, decided, controller.signal);
    if (!verdict.run) return failed(verdict.why);
    // 7. Execute, with a signal: Ctrl-C cancels this tool, not the agent.
    const result = await cancellable(() => controller.abort(), () => tool.execute(params, controller.signal, call.id));
    // 8. llmContent goes to the model: whole when it is small, else kept in a file and previewed;
    // what the PostToolUse hooks print follows that (s17), so it reaches the model, never only the file...
    const content = forModel(call.id, result.llmContent);
    const response = typeof content === "string" ? content : content!.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
    const post = await hooksFor("PostToolUse", { tool_response: response });
    const said = [post.added, post.blocked ?? ""].filter(Boolean).join("\n"); // exit 2 blocks nothing now: its stderr is said too
    const note = `<post-tool-use-hook>\n${said}\n</post-tool-use-hook>`;
    const hooked = !said ? content : typeof content === "string" ? `${content}\n\n${note}` : [...content!, { type: "text" as const, text: note }];
    const toModel: ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: hooked };
    // 9. ...and returnDisplay to the person (unless they have just seen it, approving it).
    if (result.returnDisplay !== verdict.shown) show(dim(indent(firstLines(result.returnDisplay, 12))));
    if (said) show(dim(indent(`[for the model, from a PostToolUse hook]\n${firstLines(said, 5)}`)));
    return toModel;
  } catch (error) {
    // Errors go back as is_error, so the model knows the call failed and why.
    if (controller.signal.aborted) return failed("Error: cancelled by the user (Ctrl-C); the tool was stopped.");
    return failed(`Error: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** llmContent as the model gets it: its text through resultFor (s07), however many blocks it came in (s08); images as they are. */
function forModel(callId: string, content: ToolResult["llmContent"]): ToolResultBlockParam["content"] {
  if (typeof content === "string") return resultFor(callId, content);
  const texts = content.flatMap((block) => (block.type === "text" ? [block.text] : []));
  if (texts.join("\n").length <= RESULT_LIMIT) return content;
  // Too much text: kept whole in a file like any large result, and the images follow its preview.
  return [{ type: "text", text: resultFor(callId, texts.join("\n")) }, ...content.filter((block) => block.type === "image")];
}

/**
 * Step 6c (s17). An ask rule makes the person answer where the mode would not (every mode but
 * yolo, as the agent's own files do), and "a" never covers it. An allow rule spares the question
 * where the mode would ask, even with no one at the terminal; it never lifts plan mode's
 * refusal, nor the question before a write to the agent's own files.
 */
async function confirm(tool: AgentTool, params: Params, decided: ReturnType<typeof ruleFor>, signal: AbortSignal): Promise<Verdict> {
  if (decided?.list === "ask") {
    // s06's approval, with a question every time: as if the call changed the agent's own files.
    const shouldConfirmExecute = async (given: Params, stop: AbortSignal) => {
      const shown = (await tool.shouldConfirmExecute(given, stop)) || { title: `${tool.displayName} ${tool.getDescription(given)}?`, details: tool.getDescription(given) };
      return { ...shown, title: `${shown.title} (the rule ask ${decided.rule.text}, ${decided.rule.at})` };
    };
    return approve({ ...tool, changesTheAgent: () => true, shouldConfirmExecute }, params, signal);
  }
  const mayRun = tool.kind === "read" || APPROVAL_MODE !== "plan";
  if (decided?.list === "allow" && mayRun && !tool.changesTheAgent?.(params)) {
    show(dim(`  [allowed by ${visible(decided.rule.text)} (${decided.rule.at})]`));
    return { run: true };
  }
  return approve(tool, params, signal);
}

// #endregion run-tool

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

// #region stream
// The loop calls client.messages.create(request) and gets one whole Message, as in every stage.
// What changes is inside: the request goes out with stream: true, and the reply comes back as
// events. Each event is shown as it arrives and added to the message being built; when the
// stream ends, the loop gets that message, the same as the reply sent whole would have been.
// The client (region `client`) sends the parent's requests this way; a subagent's come whole,
// and so does every reply with PROVIDER=openai (s15): Chat Completions is not streamed here.

/** A reply while its events arrive. */
interface Building {
  /** From message_start on: the message so far. */
  message?: Message;
  /** A call's input as its JSON pieces arrived, by block index: parsed only when the block stops. */
  json: string[];
  /** Whether block i is complete: its content_block_stop came (and a call's input parsed). */
  complete: boolean[];
  /** message_stop came: the reply is whole. */
  ended: boolean;
  /** Text on the screen with no line break after it yet, and half a character held back. */
  openLine: boolean;
  held: string;
}

/** Send the request as a stream, show and build the reply as it comes; Ctrl-C stops it. */
async function streamReply(request: MessageCreateParamsNonStreaming): Promise<Message> {
  const reply: Building = { json: [], complete: [], ended: false, openLine: false, held: "" };
  const stop = new AbortController();
  try {
    // While the reply streams, Ctrl-C aborts the request (lib/runtime/terminal.ts), as s06's Ctrl-C cancels a tool.
    await cancellable(() => stop.abort(), async () => {
      for await (const event of await anthropic.messages.events(request, { signal: stop.signal })) {
        if (stop.signal.aborted) break; // not one event more after Ctrl-C, even one already received
        addEvent(reply, event);
        showEvent(reply, event);
      }
    });
  } catch (error) {
    if (!stop.signal.aborted) throw error; // the request failed: the turn ends with the error, as in every stage
  } finally {
    if (reply.openLine) process.stdout.write("\n");
  }
  return stop.signal.aborted ? whatWasComplete(reply) : wholeReply(reply);
}

/** One event, added to the reply being built: the whole of assembling a streamed reply. */
function addEvent(reply: Building, event: RawMessageStreamEvent): void {
  if (event.type === "message_start") reply.message = { ...event.message, content: [] };
  const message = reply.message;
  if (!message) return; // nothing comes before message_start
  if (event.type === "content_block_start") message.content[event.index] = { ...event.content_block };
  if (event.type === "content_block_delta") {
    const { delta, index } = event;
    const block = message.content[index];
    if (delta.type === "text_delta" && block?.type === "text") block.text += delta.text;
    if (delta.type === "input_json_delta") reply.json[index] = (reply.json[index] ?? "") + delta.partial_json;
    if (delta.type === "thinking_delta" && block?.type === "thinking") block.thinking += delta.thinking;
    if (delta.type === "signature_delta" && block?.type === "thinking") block.signature = delta.signature;
    if (delta.type === "citations_delta" && block?.type === "text") block.citations = [...(block.citations ?? []), delta.citation];
  }
  if (event.type === "content_block_stop") {
    const json = reply.json[event.index];
    // A call's input is whole only now. No pieces: the input is the one its start gave ({}).
    if (json) {
      try {
        (message.content[event.index] as ToolUseBlock).input = JSON.parse(json);
      } catch {
        return; // not whole JSON (a reply cut off inside a call): the block stays incomplete
      }
    }
    reply.complete[event.index] = true;
  }
  if (event.type === "message_delta") {
    // The message's last fields (stop_reason, stop_sequence) and its final usage; a null changes nothing.
    for (const [name, value] of Object.entries(event.delta)) if (value != null) Object.assign(message, { [name]: value });
    for (const [name, value] of Object.entries(event.usage)) if (value != null) Object.assign(message.usage, { [name]: value });
  }
  if (event.type === "message_stop") reply.ended = true;
}

/** What the person sees, as each event arrives: text at once, a call once its input is whole. */
function showEvent(reply: Building, event: RawMessageStreamEvent): void {
  if (event.type === "content_block_delta" && event.delta.type === "text_delta") {
    // A delta may end inside a character (half of an emoji's UTF-16 pair): that half waits for the next.
    const text = reply.held + event.delta.text;
    reply.held = /[\ud800-\udbff]$/.test(text) ? text.slice(-1) : "";
    process.stdout.write(visible(text.slice(0, text.length - reply.held.length))); // model text: escapes shown, never obeyed
    reply.openLine ||= text !== "";
  }
  if (event.type !== "content_block_stop") return;
  const block = reply.message?.content[event.index];
  if (block?.type === "text" && reply.openLine) {
    process.stdout.write(`${visible(reply.held)}\n`);
    Object.assign(reply, { openLine: false, held: "" });
  }
  if (block?.type === "tool_use" && reply.complete[event.index]) showCall(block);
}

/** The calls the stream showed: runTool's step 5 prints the others (a subagent's, which are not streamed). */
const shownCalls = new Set<string>();

/** The line s06's runTool printed at step 5, now printed the moment the call is whole. */
function showCall(call: ToolUseBlock): void {
  const tool = registry.getTool(call.name);
  const params: Params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  if (!tool || tool.validateToolParams(params)) return; // runTool shows a call it refuses, and why
  console.log(dim(`> ${tool.displayName} ${visible(clip(tool.getDescription(params).split("\n")[0], 120, "head"))}`));
  shownCalls.add(call.id);
}

/** The stream ended by itself: the whole reply, checked as every stage checks a reply (lib/runtime/model.ts). */
function wholeReply(reply: Building): Message {
  const { message } = reply;
  const cutOff = message?.stop_reason === "max_tokens" || message?.stop_reason === "model_context_window_exceeded";
  const missing = message?.content.findIndex((_, i) => !reply.complete[i]) ?? -1;
  if (!message || !reply.ended || (missing >= 0 && !cutOff)) {
    const what = !message ? "no message_start" : !reply.ended ? "no message_stop" : `block ${missing} (${message.content[missing]?.type}) incomplete`;
    throw new Error(`${BASE_URL || "the Anthropic API"} ended the stream before the reply was whole (${what}); nothing of it was kept`);
  }
  // A reply cut off (max_tokens) may end inside a call: that call is dropped, it could not run.
  // A stream that ended with no stop reason ended all the same: only Ctrl-C leaves it null.
  const content = message.content.filter((_, i) => reply.complete[i]);
  return checkedReply({ ...message, content, stop_reason: message.stop_reason ?? "end_turn" }, BASE_URL);
}

/**
 * Ctrl-C: keep what was complete. Text cut mid-sentence was shown, but the model never finished
 * it, so it is dropped; so is a call whose input was still arriving (it could not run, and a
 * call in the history must get a result). stop_reason null says the reply never ended: endTurn
 * then answers the complete calls kept with "not run".
 */
function whatWasComplete(reply: Building): Message {
  const kept = (reply.message?.content ?? []).filter((block, i) => reply.complete[i] && !(block.type === "text" && block.text.trim() === ""));
  if (!reply.message || kept.length === 0) throw new Error("the reply was interrupted (Ctrl-C) before any part of it was complete; nothing of it was kept");
  return { ...reply.message, content: kept, stop_reason: null };
}
// #endregion stream

// #region breakpoints
// Every request carries the one before it whole, plus a little: the system prompt, the tools,
// every message so far. The API can keep what it has read (a prompt cache) and read it again
// for a tenth of the price, but only up to a breakpoint: a block marked with cache_control.
// The API reads a request in this order: tools, system, messages. A request writes the prefix
// that ends at each of its breakpoints; a later request that starts with exactly the same
// blocks reads it back, looking up to 20 blocks before each of its own breakpoints for one.
const CACHED = { type: "ephemeral" } as const; // 5 minutes, renewed by every read
// The API takes at most 4 breakpoints in a request; this stage places 3:
// - the last tool: the tools alone, kept if the system prompt changes;
// - the system prompt: the tools and the system prompt;
// - the last block of the newest message: everything, so the next request reads it all.

/** Where a breakpoint may go: the API refuses one on a thinking block, and on an empty text block. */
const cacheable = (block: ContentBlockParam) =>
  block.type !== "thinking" && block.type !== "redacted_thinking" && !(block.type === "text" && block.text.trim() === "");

/**
 * The request with its breakpoints, as a copy: `messages` is the loop's own history, and a
 * marker left in it would stay there for good, one more with every request, until the API
 * refuses the fifth.
 */
export function withBreakpoints(request: MessageCreateParamsNonStreaming): MessageCreateParamsNonStreaming {
  const marked = { ...request };
  const { tools, system, messages } = request;
  if (tools && tools.length > 0) marked.tools = [...tools.slice(0, -1), { ...tools[tools.length - 1], cache_control: CACHED }];
  const systemBlocks = typeof system === "string" ? (system ? [{ type: "text" as const, text: system }] : []) : (system ?? []);
  if (systemBlocks.length > 0) marked.system = [...systemBlocks.slice(0, -1), { ...systemBlocks[systemBlocks.length - 1], cache_control: CACHED }];
  const newest = messages[messages.length - 1];
  if (!newest) return marked;
  const content: ContentBlockParam[] = typeof newest.content === "string" ? [{ type: "text", text: newest.content }] : newest.content;
  let at = content.length - 1;
  while (at >= 0 && !cacheable(content[at])) at--;
  if (at < 0) return marked;
  const withMark = content.map((block, i) => (i === at ? ({ ...block, cache_control: CACHED } as ContentBlockParam) : block));
  marked.messages = [...messages.slice(0, -1), { ...newest, content: withMark } as MessageParam];
  return marked;
}
// #endregion breakpoints

// #region prices
/** US dollars per million tokens. A cache write costs 1.25 times the input price, a read a tenth or less. */
export interface Price {
  input: number;
  output: number;
  cache_write: number;
  cache_read: number;
}

// Anthropic's prices (platform.claude.com/docs/en/about-claude/pricing), as listed on the
// date below; cache_write is the 5-minute write, the one this stage asks for. Prices change:
// check the page, and set MODEL_PRICES. Haiku 5.5 is left out, since its price depends on the
// prompt's length.
export const PRICES_DATE = "2026-10-24";
export const PRICES: Record<string, Price> = {
  "claude-fable-5-1": { input: 10, output: 50, cache_write: 12.5, cache_read: 0.25 },
  "claude-opus-5-5": { input: 4, output: 20, cache_write: 5, cache_read: 0.2 },
  "claude-sonnet-5-5": { input: 2, output: 10, cache_write: 2.5, cache_read: 0.1 },
  "claude-opus-4-6": { input: 5, output: 25, cache_write: 6.25, cache_read: 0.5 },
  "claude-sonnet-4-6": { input: 3, output: 15, cache_write: 3.75, cache_read: 0.3 },
  "claude-haiku-4-5": { input: 1, output: 5, cache_write: 1.25, cache_read: 0.1 },
};

const PRICE_KEYS = ["input", "output", "cache_write", "cache_read"] as const;
/** The most a price may be, in dollars per million tokens: far above any model's, and low enough that a cost stays a number. */
const MAX_PRICE = 10_000;
const PRICES_EXAMPLE = `{"my-model":{"input":3,"output":15,"cache_write":3.75,"cache_read":0.3}}`;

/**
 * MODEL_PRICES, as JSON: `{ "<model>": { input, output, cache_write, cache_read } }`, dollars
 * per million tokens. Its models are added to the table, or replace a row of it. Read once at
 * start: anything wrong is one line then, never a surprise mid-session.
 */
export function readModelPrices(text: string | undefined): { prices: Record<string, Price>; given: string[]; problem?: string } {
  if (!text?.trim()) return { prices: PRICES, given: [] };
  const wrong = (why: string) => ({ prices: PRICES, given: [], problem: `MODEL_PRICES ${why}; give JSON such as ${PRICES_EXAMPLE} (dollars per million tokens)` });
  let given: unknown;
  try {
    given = JSON.parse(text);
  } catch (error) {
    return wrong(`is not JSON (${(error as Error).message})`);
  }
  if (typeof given !== "object" || given === null || Array.isArray(given)) return wrong("is not a JSON object of models");
  // No prototype: a model named "__proto__" is a row like any other, not the table's prototype.
  const prices: Record<string, Price> = Object.assign(Object.create(null), PRICES);
  for (const [model, price] of Object.entries(given)) {
    if (typeof price !== "object" || price === null || Array.isArray(price)) return wrong(`gives ${JSON.stringify(model)} no object of prices`);
    const extra = Object.keys(price).find((key) => !(PRICE_KEYS as readonly string[]).includes(key));
    if (extra) return wrong(`gives ${JSON.stringify(model)} "${extra}", which is not one of ${PRICE_KEYS.join(", ")}`);
    const bad = PRICE_KEYS.find((key) => {
      const value = (price as Record<string, unknown>)[key];
      return typeof value !== "number" || !(value >= 0 && value <= MAX_PRICE);
    });
    if (bad) return wrong(`gives ${JSON.stringify(model)} no "${bad}" from 0 to ${MAX_PRICE.toLocaleString("en-US")}`);
    prices[model] = price as Price;
  }
  return { prices, given: Object.keys(given) };
}

const modelPrices = readModelPrices(process.env.MODEL_PRICES);
export const pricesProblem = modelPrices.problem;

/** The row of a model's price: its name, or its name without a date (claude-haiku-4-5-20251001). */
const rowOf = (model: string) => [model, /^(.+)-\d{8}$/.exec(model)?.[1]].find((name) => name !== undefined && Object.hasOwn(modelPrices.prices, name));

/** The price of a model; undefined when neither the table nor MODEL_PRICES knows it. */
export const priceOf = (model: string): Price | undefined => {
  const row = rowOf(model);
  return row === undefined ? undefined : modelPrices.prices[row];
};

/** Where a model's price comes from, in words. */
const priceSource = (model: string) => (modelPrices.given.includes(rowOf(model) ?? "") ? "from MODEL_PRICES" : `as of ${PRICES_DATE}`);
// #endregion prices

// #region accounting
/** Tokens as the API counts them in a reply's usage: input is what neither came from nor went to the cache. */
export interface Tally {
  requests: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

const noTokens = (): Tally => ({ requests: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
// Named for what they count: s12's `session` (region `knowledge`) is the skills and memory read.
let sessionTokens = noTokens();
let turnTokens = noTokens();

/** A count from a reply: a provider that leaves one out, or sends one that is no count, adds nothing. */
const tokens = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.round(value) : 0);

function addUsage(usage: Message["usage"] | undefined): void {
  for (const tally of [sessionTokens, turnTokens]) {
    tally.requests += 1;
    tally.input += tokens(usage?.input_tokens);
    tally.output += tokens(usage?.output_tokens);
    tally.cacheRead += tokens(usage?.cache_read_input_tokens);
    tally.cacheWrite += tokens(usage?.cache_creation_input_tokens);
  }
}

/** US dollars for a tally at a price; `cached: false` is what the same tokens cost with no cache at all. */
export function costOf(tally: Tally, price: Price, { cached = true } = {}): number {
  const read = cached ? price.cache_read : price.input;
  const write = cached ? price.cache_write : price.input;
  return (tally.input * price.input + tally.cacheRead * read + tally.cacheWrite * write + tally.output * price.output) / 1e6;
}

const count = (n: number) => n.toLocaleString("en-US");
const dollars = (amount: number) => `$${amount < 1 ? amount.toFixed(4) : amount.toFixed(2)}`;
const tokenLine = (tally: Tally) => `${count(tally.input)} in, ${count(tally.output)} out, ${count(tally.cacheRead)} cache read, ${count(tally.cacheWrite)} cache write`;

/** The line at the end of a turn: its tokens, and its cost when the model's price is known. */
function turnLine(): string {
  const price = priceOf(MODEL);
  return `[this turn: ${tokenLine(turnTokens)}${price ? `; ${dollars(costOf(turnTokens, price))}` : ""}]`;
}

/** `/cost` at the prompt: the session's totals, their cost, and what the cache saved. */
function costCommand(): void {
  const { requests } = sessionTokens;
  if (requests === 0) return console.log("[no requests yet in this session]");
  const price = priceOf(MODEL);
  console.log(`Session: ${requests} request${requests === 1 ? "" : "s"} to ${MODEL}; ${tokenLine(sessionTokens)}.`);
  if (!price) return console.log(`No price is known for ${MODEL}: set MODEL_PRICES, e.g. ${PRICES_EXAMPLE.replace("my-model", MODEL)}`);
  const [cached, uncached] = [costOf(sessionTokens, price), costOf(sessionTokens, price, { cached: false })];
  const saved = uncached > 0 ? Math.round((1 - cached / uncached) * 100) : 0;
  console.log(`Cost: ${dollars(cached)}; without the cache ${dollars(uncached)} (${saved >= 0 ? `${saved}% saved` : `${-saved}% more: writes not read back yet`}).`);
  console.log(dim(`Prices of ${MODEL} per million tokens (${priceSource(MODEL)}): input $${price.input}, output $${price.output}, cache write $${price.cache_write}, cache read $${price.cache_read}.`));
}

/** A new session starts at zero: the offline replay calls this (through prepareReplay) before its first prompt. */
function resetTokens(): void {
  sessionTokens = noTokens();
  turnTokens = noTokens();
}

/** The session's totals so far, for tests. */
export const sessionTally = (): Readonly<Tally> => ({ ...sessionTokens });
// #endregion accounting

// #region to-chat
// OpenAI's Chat Completions format: the parts this adapter writes and reads.
type ChatToolCall = { id: string; type: "function"; function: { name: string; arguments: string } };
type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };
export interface ChatRequest {
  model: string;
  /** OpenAI's current name for max_tokens, which its newer models refuse. */
  max_completion_tokens: number;
  messages: ChatMessage[];
  tools?: { type: "function"; function: { name: string; description: string; parameters: unknown } }[];
  tool_choice?: "auto" | "required" | "none" | { type: "function"; function: { name: string } };
}

// What the Chat Completions format has no place for: a note in its place, so the model knows something was there.
const leftOut = (type: string) => `[a ${type} block was left out: Chat Completions cannot carry it here]`;

/** The loop's request, as a Chat Completions request: the same conversation in the other format. */
export function toChatRequest(request: MessageCreateParamsNonStreaming): ChatRequest {
  const messages: ChatMessage[] = [];
  // The system prompt is a message of its own, the first.
  const system = typeof request.system === "string" ? request.system : (request.system ?? []).map((block) => block.text).join("\n\n");
  if (system) messages.push({ role: "system", content: system });
  for (const message of request.messages) messages.push(...toChatMessages(message));
  const tools = (request.tools ?? []).map(toChatTool);
  const choice = request.tool_choice; // s11's summary request sends "none": the same choices, other names
  const tool_choice = choice && (choice.type === "tool" ? { type: "function" as const, function: { name: choice.name } } : ({ auto: "auto", any: "required", none: "none" } as const)[choice.type]);
  return { model: request.model, max_completion_tokens: request.max_tokens, messages, ...(tools.length > 0 ? { tools } : {}), ...(tool_choice ? { tool_choice } : {}) };
}

/** A tool the harness runs: a function with a JSON Schema, as in the Messages API. */
function toChatTool(tool: ToolUnion): NonNullable<ChatRequest["tools"]>[number] {
  // A server tool (web search, code execution) runs at Anthropic's end: no Chat Completions server runs it.
  if (!("input_schema" in tool)) throw new Error(`${tool.type} is a server tool of the Messages API; Chat Completions has none, so PROVIDER=openai cannot offer it`);
  return { type: "function", function: { name: tool.name, description: tool.description ?? "", parameters: tool.input_schema } };
}

/** One message of the history as Chat Completions messages (one, or a tool message per result). */
function toChatMessages(message: MessageParam): ChatMessage[] {
  if (typeof message.content === "string") return [{ role: message.role, content: message.content }];
  const blocks: ContentBlockParam[] = message.content;
  if (message.role === "assistant") {
    // Text, then the calls. Thinking blocks stay behind: Chat Completions has no field to send them back in.
    const text = blocks.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n\n");
    const calls = blocks.flatMap((block): ChatToolCall[] =>
      block.type === "tool_use" ? [{ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } }] : [],
    );
    // With no text and no calls (only thinking), the note stands in: OpenAI refuses a null content there.
    const content = text || (calls.length > 0 ? null : blocks.map((block) => leftOut(block.type)).join("\n\n"));
    return [{ role: "assistant", content, ...(calls.length > 0 ? { tool_calls: calls } : {}) }];
  }
  // The results first, each a message of its own, in the order of the calls they answer (the
  // API wants them right after the assistant's tool_calls); then the person's text, if any.
  const results = blocks.flatMap((block): ChatMessage[] => (block.type === "tool_result" ? [{ role: "tool", tool_call_id: block.tool_use_id, content: toolMessageText(block) }] : []));
  const text = blocks.flatMap((block) => (block.type === "text" ? [block.text] : block.type === "tool_result" ? [] : [leftOut(block.type)])).join("\n\n");
  return text ? [...results, { role: "user", content: text }] : results;
}

/** A tool result's content as text. A tool message holds text only: an image becomes a note. */
function toolMessageText(result: ToolResultBlockParam): string {
  const parts = typeof result.content === "string" ? [result.content] : (result.content ?? []).map((part) => (part.type === "text" ? part.text : leftOut(part.type)));
  const text = parts.join("\n\n");
  // Chat Completions has no is_error: the text says it (runTool's errors already start so).
  return result.is_error && !/^(error|not run)\b/i.test(text) ? `Error: ${text}` : text;
}
// #endregion to-chat

// #region from-chat
export interface ChatReply {
  id: string;
  model: string;
  choices: { message: { content?: string | null; tool_calls?: ChatToolCall[] }; finish_reason: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } };
}

/** Why the reply ended, in the loop's words. Any other reason (or none) ends the turn. */
const STOP_REASONS: Record<string, StopReason> = { tool_calls: "tool_use", stop: "end_turn", length: "max_tokens", content_filter: "refusal" };

/** The key of the input the adapter gives a call whose arguments were not a JSON object: runTool refuses it. */
export const NOT_JSON = "arguments_not_json";

let unnamedCalls = 0;

/** A Chat Completions reply as the Messages API reply the loop expects. */
export function fromChatReply(reply: ChatReply): Message {
  const { message, finish_reason } = reply.choices[0];
  const content: ContentBlock[] = [];
  if (message.content) content.push({ type: "text", text: message.content } as ContentBlock);
  const ids = new Set<string>();
  for (const call of message.tool_calls ?? []) {
    // The provider's id, so the results answer what it asked; one of our own if it gave none, or
    // none that is text, or one already used: each result answers one call, and OpenAI wants ids as text.
    const id = typeof call.id === "string" && call.id !== "" && !ids.has(call.id) ? call.id : `call_unnamed_${++unnamedCalls}`;
    ids.add(id);
    content.push({ type: "tool_use", id, name: call.function?.name ?? "", input: argumentsOf(call) } as ContentBlock);
  }
  // OpenAI counts cached tokens inside prompt_tokens; the Messages API counts them apart.
  const cached = reply.usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    id: reply.id,
    type: "message",
    role: "assistant",
    model: reply.model,
    content,
    stop_reason: STOP_REASONS[finish_reason ?? ""] ?? "end_turn",
    stop_sequence: null,
    usage: { input_tokens: (reply.usage?.prompt_tokens ?? 0) - cached, output_tokens: reply.usage?.completion_tokens ?? 0, cache_read_input_tokens: cached, cache_creation_input_tokens: null },
  } as Message;
}

/**
 * A call's arguments, parsed from their JSON string. A model may write broken JSON (cut off,
 * a stray comma): that must not crash the turn, and the call still needs its result. So the
 * text is kept, under NOT_JSON, and runTool answers the call with an error the model can act on.
 */
function argumentsOf(call: ChatToolCall): Record<string, unknown> {
  const text: unknown = call.function?.arguments;
  if (text === undefined || (typeof text === "string" && text.trim() === "")) return {}; // no arguments: some servers send ""
  if (typeof text === "object" && text !== null && !Array.isArray(text)) return text as Record<string, unknown>; // sent as an object: taken as it is
  try {
    const input: unknown = JSON.parse(String(text));
    if (typeof input === "object" && input !== null && !Array.isArray(input)) return input as Record<string, unknown>;
  } catch {} // not JSON: kept below
  return { [NOT_JSON]: String(text) };
}
// #endregion from-chat

// #region client
/**
 * The client the loop calls: it gets the loop's own `messages` (the whole conversation) and
 * returns the model's reply, like the SDK's. In between, in this order: a compaction when one
 * is due, the request with the smaller view of the conversation and its breakpoints, the reply
 * (streamed for the parent, but whole from s15's adapter), and its usage counted. The transcript
 * needs no step here: the person's `messages` are the session log (s16), where each message is
 * on disk at its push. A subagent (s10) calls this client too, with a conversation of its own.
 */
const client: ModelClient = {
  messages: {
    async create(request, options) {
      const { messages } = request;
      const conversation = conversationOf(messages);
      const [child, mate] = [childRun.getStore(), member()];
      // Only the parent has compact: what it asked for applies to its own conversation, never to a
      // subagent's or a teammate's request that happens to come first (a task in the same reply).
      const asked = child || mate ? undefined : compactionAsked;
      if (asked) compactionAsked = undefined;
      const used = conversation.contextTokens;
      if (asked) await compact(messages, "the model asked for it", asked.focus);
      else if (used > Math.max(compactThreshold, conversation.retryAt)) await compact(messages, `the last request used ${used} input tokens, over COMPACT_THRESHOLD (${compactThreshold})`);
      // s14: breakpoints on what is sent, the view after micro-compaction, a copy. Put in `messages`,
      // they would stay in the history and pile up; put in before contextFor, they would be lost.
      // s19: a teammate's request offers its tools only, and its stop signal (Ctrl-C, a reset) ends it.
      const tools = mate ? request.tools?.filter((tool) => isTeammateTool((tool as { name: string }).name)) : request.tools;
      const sent = withBreakpoints({ ...request, tools, messages: contextFor(conversation, messages) });
      // s13: the parent's reply streams to the screen. A subagent's and a teammate's (s19) come whole:
      // several run at once, their lines shown labelled; Ctrl-C ends them (`options`, their signal).
      // s15: with PROVIDER=openai every reply comes whole (no stream; `showText` shows the text).
      const streamed = !child && !mate && PROVIDER !== "openai";
      const response = streamed ? await streamReply(sent) : await provider.messages.create(sent, mate ? { signal: mate.stop.signal } : options);
      addUsage(response.usage); // s14: the session's tally and the turn's
      conversation.contextTokens = inputTokens(response.usage);
      return response;
    },
  },
};

/**
 * s15: `provider` with PROVIDER=openai. One request through Chat Completions: translated, sent
 * (lib/runtime/chat-completions.ts), translated back, checked as lib checks any reply. The
 * summary request (`compact`) and a subagent's come through here too; a subagent's line is
 * shown under its label.
 */
async function viaChatCompletions(request: MessageCreateParamsNonStreaming, options?: { signal?: AbortSignal }): Promise<Message> {
  const chat = toChatRequest(request);
  const reply = (await postChatCompletion({ baseURL: OPENAI_BASE_URL, apiKey: OPENAI_API_KEY }, chat, options?.signal)) as ChatReply;
  const { finish_reason, message } = reply.choices[0];
  // The person sees the other format at work: what went out, and what came back.
  show(dim(`  [chat/completions: ${chat.messages.length} messages out; finish_reason ${finish_reason ?? "none"}, ${message.tool_calls?.length ?? 0} tool_calls back]`));
  return checkedReply(fromChatReply(reply), OPENAI_BASE_URL);
}
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
  // s13: the text is on the screen already, shown as it streamed (showEvent): nothing twice. With
  // PROVIDER=openai (s15) the reply came whole, not streamed: its text is shown here, as in s01;
  // so is a teammate's (s19), under its name, and its context line is its own business.
  if (PROVIDER === "openai" || member()) for (const block of response.content) if (block.type === "text") show(visible(block.text)); // model text: escapes shown, never obeyed
  if (!member()) showContext(response.usage); // s07: how full the context is, after every reply
}

/** The model stopped asking for tools, or was stopped. Say so when the reason is not a normal ending. */
function endTurn(response: Message, messages: MessageParam[]): void | Promise<void> {
  // A server tool (web search, code execution) still at work: the turn goes on when it is sent back as it is.
  if (response.stop_reason === "pause_turn") return agentLoop(messages);
  if (!member()) countReply(false); // s09: the lead's reply that ends the turn counts too (it ran no todo_write)
  if (response.stop_reason === "refusal") show("[the model declined to continue]");
  const cutOff = { max_tokens: `at ${MAX_TOKENS} tokens: ask for something smaller, or raise MAX_TOKENS`, model_context_window_exceeded: "because the context window is full: start a new session" };
  let why: string;
  if (response.stop_reason === null) {
    // s13: Ctrl-C stopped the reply, which never ended; what was complete is in the history.
    show("[the reply was interrupted (Ctrl-C); what was complete of it is kept]");
    why = "Not run: the person interrupted your reply (Ctrl-C) before this call could run.";
  } else if (response.stop_reason === "max_tokens" || response.stop_reason === "model_context_window_exceeded") {
    show(`[the reply was cut off ${cutOff[response.stop_reason]}]`);
    why = `Not run: your reply was cut off (${response.stop_reason}) before this call was complete.`;
  } else return;
  // A call that did not run still needs an answer, or the next request is refused.
  const calls = response.content.filter((block) => block.type === "tool_use");
  if (calls.length === 0) return;
  messages.push({ role: "user", content: calls.map((call) => ({ type: "tool_result" as const, tool_use_id: call.id, is_error: true, content: why })) });
}
// #endregion end-turn

// #region program
const modeProblem = APPROVAL_MODE ? undefined : `the approval mode "${requestedMode}" does not exist; choose one of ${APPROVAL_MODES.join(", ")}`;
const thresholdProblem = COMPACT_THRESHOLD ? undefined : `COMPACT_THRESHOLD "${requestedThreshold}" is not a number of tokens: give a whole number, at least 1000 (the default is ${DEFAULT_THRESHOLD})`;
// s15: a setting that cannot work, said in one line before anything runs; and the key is the provider's.
const providerProblem = !PROVIDERS.includes(PROVIDER)
  ? `PROVIDER "${PROVIDER}" is not one this stage speaks: anthropic (the default, the Messages API) or openai (Chat Completions)`
  : PROVIDER === "openai" && OPENAI_API_KEY && !process.env.MODEL_ID
    ? "PROVIDER=openai needs MODEL_ID: the model's name at OPENAI_BASE_URL, as that server lists it"
    : undefined;
const hasKey = PROVIDER === "openai" ? Boolean(OPENAI_API_KEY) : Boolean(API_KEY || AUTH_TOKEN);

/**
 * Before a replay, what each stage did before its own: names resolve from the scenario's
 * `hosts` (s04/s05), the plan is empty (s09), the threshold is the scenario's (s11), the
 * skills and memory are read afresh (s12), the token tallies start at zero (s14), the session
 * is new or the one the scenario's `sessionFlags` resume (s16), no task runs (s18), no teammate (s19), the tools in the scenario's
 * settings are discovered (s08; a scenario with no settings discovers none), and its rules and
 * hooks read (s17).
 */
export async function prepareReplay(scenario: Scenario & { compactThreshold?: number; sessionFlags?: string[] }): Promise<void> {
  useResolver(resolverFrom(scenario.hosts));
  resetTodos();
  const given = scenario.compactThreshold;
  const threshold = given === undefined ? (COMPACT_THRESHOLD ?? DEFAULT_THRESHOLD) : asThreshold(String(given));
  if (threshold === undefined) throw new Error(`the scenario's compactThreshold (${given}) is not a whole number of at least 1000`);
  compactThreshold = threshold;
  newKnowledgeSession();
  resetTokens();
  useSessionFlags(scenario);
  stopTeam(); // s19's prepareReplay, with s18's
  unreadFrom = new Set();
  resetTasks();
  await discoverTools();
  await loadSettings(); // s17: after discovery, so a rule may name a tool found outside
}

const PROVIDER_HELP = [
  "  PROVIDER=openai         speak Chat Completions instead of the Messages API (default: anthropic)",
  "  OPENAI_API_KEY          with PROVIDER=openai: the key, sent as a bearer token (a local server usually takes any)",
  "  OPENAI_BASE_URL         with PROVIDER=openai: the address before /chat/completions (default https://api.openai.com/v1)",
  "  MODEL_ID                with PROVIDER=openai: required, the model's name at that address",
];
const OPENAI_HOW_TO =
  "To use a real model with PROVIDER=openai: set OPENAI_API_KEY and MODEL_ID (and OPENAI_BASE_URL for a server other than OpenAI's), in your shell or in the workbook's .env.";

const SESSION_HELP = [
  `  --continue              resume the session of this workspace written to last (${SESSIONS}/)`,
  `  --resume <id>           resume that session; --resume alone lists the sessions`,
];

/** Resuming sends the session to a model: with no key there is none (the demo would replay instead). */
const resumeProblem = (args: string[]) => {
  const resuming = args.includes("--continue") || /^[^-]/.test(optionValue(args, "--resume") ?? "-");
  if (resuming && !hasKey) return `resuming a session needs a real model, and no key is set (see --help); without one, --replay resume shows a session resumed offline`;
};

/**
 * s18: notices of tasks that ended while the person was typing go in front of their prompt,
 * then the loop runs as in every stage. Every task ends when the program does:
 * lib/machinery/processes.ts ends every command at exit, background or not.
 * s19: then, while a teammate works, the lead waits (no model call; Ctrl-C stops the team, and
 * the wait). When none works, their notices (idle, stopped, a message) wake it, in a message of
 * the harness's own, pushed like any message (s16's log keeps it), and the loop runs again.
 */
async function turnWithTeam(messages: MessageParam[]): Promise<void> {
  addNoticesToPrompt(messages);
  await agentLoop(messages);
  for (let interrupted = false; !interrupted && team.size > 0; ) {
    await cancellable(() => (interrupted = true), async () => {
      // Bounded by the teammates' own limits: replies per turn, each call's and each command's time.
      while (!interrupted && onTeam().some((mate) => mate.state === "working")) await once(teamChanged, "changed", { signal: AbortSignal.timeout(TEAM_LIMITS.recheckMs) }).catch(() => {});
    });
    const wake: MessageParam[] = [{ role: "user", content: "" }];
    if (!interrupted) addNoticesToPrompt(wake); // s18's: the waiting notices, as the harness's words; after Ctrl-C, they wait for the next prompt
    const notices = String(wake[0].content).trim();
    if (!notices) return;
    messages.push({ role: "user", content: [{ type: "text", text: notices }] }); // a block, not a string: the harness's, not the person's prompt
    await agentLoop(messages);
  }
}

/**
 * A turn as the program runs it, and a replay too: s17's hooks around it (UserPromptSubmit on
 * the prompt as typed, Stop when the loop returns, which may send the model back to work), and
 * inside them s18's notices, the loop, and s19's wait for the team. s14's tally is the whole
 * turn's, a Stop hook's rounds, a subagent's requests, the wake-ups and the teammates' requests
 * meanwhile included: it starts here and its line comes once, at the end.
 */
export async function runTurn(messages: MessageParam[]): Promise<void> {
  turnTokens = noTokens();
  await withTurnHooks(turnWithTeam)(messages);
  if (turnTokens.requests > 0) console.log(dim(turnLine())); // s14: what this turn used, and cost
}

export async function main(args = process.argv.slice(2)): Promise<never> {
  // s18: lib's exit handler ends every task; the model may have said one runs on, so the person hears which did.
  process.once("exit", () => running().forEach((task) => console.log(`[${named(task)} was still running: it ends with the program]`)));
  try {
    return await runAsMain({
      stage: "full",
      title: "The Capstone",
      agentLoop: runTurn,
      startHistory: () => startHistory(args),
      hasKey,
      keyHelp: PROVIDER === "openai" ? { names: "OPENAI_API_KEY", howTo: OPENAI_HOW_TO } : undefined,
      args,
      options: ["--approval-mode", "--resume"],
      switches: ["--continue"],
      // s15: a recording keeps Messages API replies, which PROVIDER=openai gets from the adapter, not from the wire.
      settingsProblem: providerProblem ?? (PROVIDER === "openai" && args.includes("--record") ? "--record saves Messages API replies: record with PROVIDER=anthropic" : undefined) ?? modeProblem ?? thresholdProblem ?? pricesProblem ?? resumeProblem(args),
      help: [
        "  --approval-mode <mode>  default (ask before edits and commands), auto-edit (ask before commands), yolo (never ask), plan (read only); or APPROVAL_MODE",
        "  --list-tools            list the tools this folder's .agent/settings.json and .mcp.json bring, and where each comes from",
        `  COMPACT_THRESHOLD       input tokens after which the conversation is summarised (default ${DEFAULT_THRESHOLD})`,
        `  MODEL_PRICES            prices in dollars per million tokens, as JSON: ${PRICES_EXAMPLE}`,
        `                          (the table in agents/s_full.ts, as of ${PRICES_DATE}, knows ${Object.keys(PRICES).join(", ")})`,
        ...SESSION_HELP,
        ...PROVIDER_HELP,
        `  "permissions" and "hooks": in ${PERSONAL.name} (yours) and ${SETTINGS_FILE} (the project's: its deny and ask rules count,`,
        `                          its allow rules and hooks once you trust them). A deny rule holds in every mode, yolo too.`,
      ],
      prepareReplay,
      prepareSession: async () => void (await discoverTools(), await loadSettings()),
      commands: { "--list-tools": listTools, "--resume": listSessions },
      slashCommands: { "/compact": compactCommand, "/cost": costCommand },
    });
  } finally {
    // A program ends in process.exit, where the exit handlers end every server; a caller
    // that goes on running (a test calling main) gets them closed here.
    await dropDiscoveredTools();
  }
}

if (isMain(import.meta.url)) await main();
// #endregion program
