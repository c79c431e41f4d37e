/**
 * s16_sessions.ts - Sessions
 *
 * "Nothing is lost when the program ends": each message is on disk before the loop holds it.
 *
 *   history.push(message)        the prompt, each reply, each set of results: all enter here
 *      |
 *      v   SessionLog: the history array, whose push writes first
 *   +--------------------------------------------------------------------+
 *   | 1 one line per message, appended, then fsync:                      |
 *   |     .agent/sessions/20250601-142233-a1b2c3.jsonl                    |
 *   |       {"session":"20250601-142233-a1b2c3","version":1,"started":..} |
 *   |       {"role":"user","content":"Add a --version flag ..."}         |
 *   |       {"role":"assistant","content":[..tool_use..]}  <- killed here |
 *   | 2 then into the array: what the loop holds is already on disk      |
 *   +--------------------------------------------------------------------+
 *   --continue (the newest) / --resume <id>: read the lines, repair a view
 *      a last line cut short --> left out, with a warning
 *      a tool_use with no result --> an is_error result: "Interrupted: ..."
 *      the lines are never rewritten: the history is a view of the log
 *
 * New since s06: regions `session-log`, `resume` and `repair`, first after the config; the
 * program hands the loop a SessionLog (lib/runtime/program.ts: startHistory). s06's registry,
 * tools and approval step are imported from agents/s06_tool_registry.ts; the loop is s06's.
 *
 *   npx tsx agents/s16_sessions.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s16_sessions.ts --continue     npx tsx agents/s16_sessions.ts --resume
 */
import { randomBytes } from "node:crypto";
import { closeSync, constants, existsSync, fstatSync, fsyncSync, ftruncateSync, lstatSync, mkdirSync, openSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ContentBlock, ContentBlockParam, Message, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip } from "../lib/machinery/head-and-tail.ts";
import { readText } from "../lib/machinery/safe-read.ts";
import type { Scenario } from "../lib/course/scenario.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, optionValue, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import { APPROVAL_HELP, approve, followLinks, MAX_OUTPUT, modeProblem, registry, TOOLS, workspace } from "./s06_tool_registry.ts";

// This stage adds no tool: the model sees s06's, from s06's registry.
export { registry, TOOLS };

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
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make. ` +
  `The conversation is saved as it goes and may be resumed later: a call whose result says it was interrupted may or may not have run, so look before doing it again.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// The sessions of a workspace, one file each, in the agent's own folder (which searches leave out).
const SESSIONS = ".agent/sessions";
const LIST_LIMIT = 20; // sessions `--resume` lists, newest first
const NOTES_SHOWN = 10; // repairs listed one by one when a session is resumed; the rest are counted
// #endregion config

// #region session-log
/**
 * The history the loop is handed: an array whose push appends each message to the session's
 * file, one JSON line, before the message enters the array. The loop, the program and endTurn
 * only ever push, so every message passes through here, and nothing they hold is missing from
 * the disk. (A Proxy could catch every kind of change; push is the only one that happens, and a
 * subclass says so in five plain lines.) Nothing changes a message once it is pushed (s06's
 * runTools builds new results; it never edits the reply it reads), so the line stays true.
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

  push(...messages: MessageParam[]): number {
    // The lines first, then the array. Messages an earlier push could not write go with these,
    // in order, so the file never has a gap: it only ever lacks its newest messages.
    const unwritten = [...this.slice(this.#written), ...messages];
    try {
      this.#append(unwritten.map((message) => `${JSON.stringify(message)}\n`).join(""));
      this.#written = this.length + messages.length;
      this.#problem = undefined;
    } catch (error) {
      const problem = error instanceof Error ? error.message : String(error);
      if (this.#problem === undefined) console.log(`[warning] the session cannot be saved (${problem}); it goes on, and what is not saved is tried again with the next message`);
      this.#problem = problem;
    }
    return super.push(...messages);
  }

  /** Append whole lines to the session's file; a new session's file is made at its first message. */
  #append(lines: string): void {
    const old = this.#id;
    const size = old === undefined ? undefined : appendLines(path.join(sessionsFolder(this.#root, { create: true }), `${old}.jsonl`), lines, this.#size);
    if (size !== undefined) return void (this.#size = size);
    // Not as this program left it: lines appended now would tangle with another program's (the
    // same session resumed twice) or with half a line. A new file takes the whole history.
    this.#newFile(this.slice(0, this.#written).map((message) => `${JSON.stringify(message)}\n`).join("") + lines);
    if (old) console.log(`[warning] ${SESSIONS}/${old}.jsonl is not as this program left it (another program wrote to it, a write was cut short, or it was removed): the session goes on in ${SESSIONS}/${this.#id}.jsonl, whole`);
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
}

// In a replay, the scenario's session flags (`sessionFlags`) stand for the command line's.
let replayFlags: string[] | undefined;

/** A replay starts a new session, or resumes one the scenario put in the workspace (fixtures/s16/resume.json). */
export function prepareReplay(scenario: Scenario & { sessionFlags?: string[] }): void {
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
  const { messages, notes } = repaired(session.logged);
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
  return new SessionLog(root, { id, messages, size: session.whole });
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
  const logged = lines.slice(1).map((line, i) => {
    const message = parsed(line);
    if (!isMessage(message)) throw notSession(`line ${i + 2} is not a message (a JSON object with a role and content)`);
    return message;
  });
  const cut = end < text.length ? { line: lines.length + 1, bytes: Buffer.byteLength(text.slice(end)) } : undefined;
  return { header, logged, cut, whole: Buffer.byteLength(text.slice(0, end)) };
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
export function repaired(logged: MessageParam[]): { messages: MessageParam[]; notes: string[] } {
  const notes: string[] = [];
  const kept: MessageParam[] = [];
  logged.forEach((message, i) => {
    const blocks = typeof message.content === "string" ? undefined : message.content.filter((block) => block.type !== "text" || block.text.trim() !== "");
    if (blocks ? blocks.length === 0 : String(message.content).trim() === "") return void notes.push(`line ${i + 2} is an empty ${message.role} message: it is left out`);
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

const blocksOf = (message: MessageParam | undefined): ContentBlockParam[] => (message && Array.isArray(message.content) ? message.content : []);
const callsOf = (message: MessageParam | undefined) =>
  message?.role === "assistant" ? blocksOf(message).filter((block): block is ToolUseBlock => block.type === "tool_use") : [];
const resultsOf = (message: MessageParam | undefined) =>
  message?.role === "user" ? blocksOf(message).flatMap((block) => (block.type === "tool_result" ? [block.tool_use_id] : [])) : [];
// #endregion repair

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
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(message, MAX_OUTPUT) };
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
const SESSION_HELP = [
  `  --continue              resume the session of this workspace written to last (${SESSIONS}/)`,
  `  --resume <id>           resume that session; --resume alone lists the sessions`,
];

/** Resuming sends the session to a model: with no key there is none (the demo would replay instead). */
const resumeProblem = (args: string[]) => {
  const resuming = args.includes("--continue") || /^[^-]/.test(optionValue(args, "--resume") ?? "-");
  if (resuming && !API_KEY && !AUTH_TOKEN) return `resuming a session needs a real model, and no key is set (see --help); without one, --replay resume shows a session resumed offline`;
};

export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s16",
    title: "Sessions",
    agentLoop,
    prepareReplay,
    startHistory: () => startHistory(args),
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode", "--resume"],
    switches: ["--continue"],
    commands: { "--resume": listSessions },
    settingsProblem: modeProblem ?? resumeProblem(args),
    help: [APPROVAL_HELP, ...SESSION_HELP],
  });

if (isMain(import.meta.url)) await main();
// #endregion program
