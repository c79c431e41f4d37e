/**
 * s06_tool_registry.ts - Tool Registry
 *
 * "A tool describes, checks and confirms itself": the harness asks each tool, the loop stays.
 *
 *   tool_use { name, input }
 *      |
 *      v   runTool: the nine steps
 *   +----------------------------------------------------------------+
 *   | 1-2 the model's call arrives   3 registry.getTool(name)        |
 *   | 4 validateToolParams (JSON Schema, ajv)  --bad--> is_error     |
 *   | 5 getDescription: one line for the person                      |
 *   | 6 shouldConfirmExecute + approval mode:                        |
 *   |     default: ask before edit/execute    auto-edit: ask execute |
 *   |     yolo: never ask    plan: refuse edit/execute  --no--> why  |
 *   | 7 execute(params, AbortSignal)           Ctrl-C --> cancelled  |
 *   | 8 llmContent --> the model   9 returnDisplay --> the person    |
 *   +----------------------------------------------------------------+
 *   reads in one reply run together; edits and commands one at a time
 *
 * New since s03: each tool is an object in a registry; regions `tool`, `registry`,
 * `approval`, `run-tool`, first after the config. It starts from s03's core tools (bash,
 * read_file, write_file and edit_file), without its search tools. s07 to s12 import this
 * file's tools and approval step rather than copy them: each is s06 plus one mechanism.
 * Machinery (lib/machinery): validation.ts (ajv), display.ts (diffs), and the file and
 * process machinery of Part I.
 *
 *   npx tsx agents/s06_tool_registry.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s06_tool_registry.ts --approval-mode auto-edit
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { existsSync, lstatSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import type { ContentBlock, Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { writeAtomically, type WriteRoot } from "../lib/machinery/atomic-write.ts";
import { diffOf, dim, firstLines, forTerminal, indent, visible } from "../lib/machinery/display.ts";
import { clip, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { runCommand } from "../lib/machinery/processes.ts";
import { readText, textForDiff } from "../lib/machinery/safe-read.ts";
import { schemaCheck } from "../lib/machinery/validation.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, optionValue, runAsMain } from "../lib/runtime/program.ts";
import { cancellable, terminal } from "../lib/runtime/terminal.ts";

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
export const MAX_OUTPUT = 30_000; // characters the model sees from one tool call
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads the
// SDK at the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace, read at each call as the system prompt is: the replay and the tests run in a temporary folder, and s20 gives a call a git worktree as its root (agents share one process: no chdir).
export const workingRoot = new AsyncLocalStorage<() => string>();
export const workspace = () => workingRoot.getStore()?.() ?? process.cwd();
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make.`;
// How careful to be, from `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
export const APPROVAL_MODES = ["default", "auto-edit", "yolo", "plan"] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];
const requestedMode = optionValue(process.argv, "--approval-mode") ?? process.env.APPROVAL_MODE ?? "default";
export const APPROVAL_MODE = (APPROVAL_MODES as readonly string[]).includes(requestedMode) ? (requestedMode as ApprovalMode) : undefined;
// #endregion config

// #region tool
/** What a tool does, in the words the approval mode decides by: reading is always allowed. */
export type ToolKind = "read" | "edit" | "execute";

/** A tool's answer: what the model reads, and what the person sees (often not the same). */
export type ToolResult = { llmContent: string; returnDisplay: string };

/** What the person is shown before they say yes or no. */
export type Confirmation = { title: string; details: string };

export type Params = Record<string, unknown>;

/** A tool as an object: it describes, validates and confirms itself, then runs. */
export interface AgentTool {
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
  /** Do the work. A failure throws an Error whose message the model reads. */
  execute(params: Params, signal: AbortSignal): Promise<ToolResult>;
}

/** A tool from its parts; its parameters are checked against its schema, compiled at its first call. */
export function defineTool(spec: Omit<AgentTool, "validateToolParams" | "shouldConfirmExecute"> & Partial<Pick<AgentTool, "shouldConfirmExecute">>): AgentTool {
  // ajv checks the parameters against the schema; its findings come back as sentences the
  // model can act on (lib/machinery/validation.ts).
  return { shouldConfirmExecute: async () => false, ...spec, validateToolParams: schemaCheck(spec.parameterSchema) };
}
// #endregion tool

// #region registry
/**
 * Every tool the agent has, by name. The model is shown what the registry holds, nothing else.
 * (Generic so a later stage can hold tools of its own kind: s08's tools from outside answer
 * with images too.)
 */
export class ToolRegistry<T extends Pick<AgentTool, "name" | "description" | "parameterSchema"> = AgentTool> {
  private tools = new Map<string, T>();

  registerTool(tool: T): void {
    if (this.tools.has(tool.name)) throw new Error(`a tool named "${tool.name}" is registered already`);
    this.tools.set(tool.name, tool);
  }

  getTool(name: string): T | undefined {
    return this.tools.get(name);
  }

  /** Take a tool out again (s08: the tools found outside the program go when discovery runs again). */
  unregisterTool(name: string): void {
    this.tools.delete(name);
  }

  getAllTools(): T[] {
    return [...this.tools.values()];
  }

  /** What the model sees: each tool's name, description and parameter schema. */
  getFunctionDeclarations(): Tool[] {
    return this.getAllTools().map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameterSchema }));
  }
}

export const registry = new ToolRegistry();
// #endregion registry

// #region approval
// Tools the person allowed for the rest of the session ("a: yes, and do not ask again").
export const alwaysAllowed = new Set<string>();
const ANSWER_KEYS = "y: yes   a: yes, and do not ask again this session   n: no   or type what to do instead";

/** What the approval step asks of a tool (a later stage's own kind of tool has these too). */
type ApprovedTool = Pick<AgentTool, "name" | "kind" | "shouldConfirmExecute" | "changesTheAgent">;

// `shown`: what the person saw and approved, so it is not printed a second time.
export type Verdict = { run: true; shown?: string } | { run: false; why: string };

/**
 * Step 6: the tool says what it would do; the approval mode says whether a person must agree.
 * `asker` names who wants the call when it is not the agent itself (s10: a subagent).
 */
export async function approve(tool: ApprovedTool, params: Params, signal: AbortSignal, asker?: string): Promise<Verdict> {
  if (APPROVAL_MODE === "plan" && tool.kind !== "read") {
    return { run: false, why: `Not run: the agent is in plan mode, where it may read but not change files or run commands. Describe the change instead.` };
  }
  // A write to the agent's own settings chooses what it runs at its next start: never a silent yes.
  const changesTheAgent = APPROVAL_MODE !== "yolo" && (tool.changesTheAgent?.(params) ?? false);
  if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };
  const confirmation = await tool.shouldConfirmExecute(params, signal);
  if (!confirmation) return { run: true };
  const person = terminal();
  // Waiting for someone who is not there would hang the agent, and going ahead would be a
  // silent yes: refuse at once and say why.
  if (!person.hasPerson) {
    return { run: false, why: `Not run: ${tool.name} needs a person's approval (approval mode ${APPROVAL_MODE}) and no one is at the terminal.` };
  }
  // What the person approves is what runs: control characters in it are shown, never obeyed.
  console.log(`\n${forTerminal(confirmation.title)}${asker ? ` (asked by ${asker})` : ""}\n${indent(forTerminal(confirmation.details))}\n  ${ANSWER_KEYS.replace("again", `again for ${tool.name}`)}`);
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
}

/** Reading never asks. default asks before edits and commands; auto-edit only before commands. */
export function mustAsk(tool: ApprovedTool): boolean {
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

// #region bash
// A denylist is advice, not a boundary: `rm -r -f /` or a script file slips past it.
// The real answer is asking a person before running a command: the approval step above.
const DENYLIST = ["rm -rf /", "sudo ", "shutdown", "reboot", "> /dev/sd", "mkfs"];
export const DEFAULT_TIMEOUT = 120;

export function refuseDenied(command: string): void {
  const blocked = DENYLIST.find((pattern) => command.includes(pattern));
  if (blocked) throw new Error(`refused: the command contains "${blocked.trim()}", which this agent does not run`);
}
const MAX_TIMEOUT = 600;

export const bashTool = defineTool({
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
    refuseDenied(command);
    // Ctrl-C (the signal) or the time limit ends the command and all it started; endless
    // output keeps its two ends (lib/machinery/processes.ts, head-and-tail.ts).
    const output = new HeadAndTail(MAX_OUTPUT);
    const code = await runCommand(command, { cwd: workspace(), timeoutMs: Number(params.timeout ?? DEFAULT_TIMEOUT) * 1000, output, signal });
    const text = output.text() || "(no output)";
    return {
      llmContent: code === 0 ? text : `${text.replace(/\n$/, "")}\n[exit code ${code ?? "killed"}]`,
      returnDisplay: `${text.replace(/\n$/, "")}\n(exit code ${code ?? "killed"})`,
    };
  },
});
// #endregion bash

// #region sandbox
/**
 * Resolve a path the model gave to a place inside the workspace, or refuse it before any
 * file is touched. `..` and absolute paths that lead out are refused, and so are symlinks
 * whose target is outside. `~` is only a folder name here: nothing expands it to home.
 */
export function safePath(given: string): string {
  if (given.includes("\0")) throw new Error("the path contains a NUL byte");
  const root = realpathSync(workspace());
  const full = path.resolve(root, given);
  if (!isInside(root, full)) throw new Error(`${given} is outside the workspace (${root})`);
  // The path as the file system will follow it: a link inside may point anywhere.
  const real = followLinks(full, given);
  if (!isInside(root, real)) throw new Error(`${given} leads outside the workspace through a symlink`);
  return real;
}

export function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  // `..report.md` is a fine name; only a `..` segment leaves the folder.
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** Resolve symlinks on the part of the path that exists; a new file takes its parent's real place. */
export function followLinks(full: string, given: string): string {
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
export function isAgentFile(given: string): boolean {
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
export const inWorkspace = (): WriteRoot => ({ root: realpathSync(workspace()), isInside });
// #endregion sandbox

// #region read-file
export const readFileTool = defineTool({
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
    // A FIFO, a device, a binary or a file over 10 MB is refused (lib/machinery/safe-read.ts).
    const text = readText(safePath(given), given);
    // A final line break ends the last line; it does not start another.
    const lines = text === "" ? [] : text.replace(/\n$/, "").split("\n");
    const limit = params.limit === undefined ? lines.length : Number(params.limit);
    const shown = limit >= lines.length ? text : `${lines.slice(0, limit).join("\n")}\n... (${lines.length - limit} more line${lines.length - limit === 1 ? "" : "s"})`;
    // The model needs the text; the person only needs to know what was read.
    return { llmContent: shown, returnDisplay: `${given}: ${Math.min(limit, lines.length)} of ${lines.length} lines` };
  },
});
// #endregion read-file

// #region write-file
export const writeFileTool = defineTool({
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
  changesTheAgent: (params) => isAgentFile(String(params.path)),
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
export interface FileChange {
  given: string;
  file: string;
  /** The text before, or undefined for a new file. */
  before: string | undefined;
  after: string;
}

export function proposeWrite(params: Params): FileChange {
  const given = String(params.path);
  const file = safePath(given);
  const before = existsSync(file) && !statSync(file).isDirectory() ? textForDiff(file, given) : undefined;
  return { given, file, before, after: String(params.content) };
}

// #endregion write-file

// #region edit-file
export const editFileTool = defineTool({
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
  changesTheAgent: (params) => isAgentFile(String(params.path)),
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

// #region tools
/** The core tools, which every stage of Part II starts from. */
export const CORE_TOOLS = [bashTool, readFileTool, writeFileTool, editFileTool];
for (const tool of CORE_TOOLS) registry.registerTool(tool);
/** What the model sees, from the registry. */
export const TOOLS: Tool[] = registry.getFunctionDeclarations();
// #endregion tools

// #region program
/** What --help says of the approval mode (s07 to s12 say it too). */
export const APPROVAL_HELP = "  --approval-mode <mode>  default (ask before edits and commands), auto-edit (ask before commands), yolo (never ask), plan (read only); or APPROVAL_MODE";

export const modeProblem = APPROVAL_MODE ? undefined : `the approval mode "${requestedMode}" does not exist; choose one of ${APPROVAL_MODES.join(", ")}`;

export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s06",
    title: "Tool Registry",
    agentLoop,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
    help: [APPROVAL_HELP],
  });

if (isMain(import.meta.url)) await main();
// #endregion program
