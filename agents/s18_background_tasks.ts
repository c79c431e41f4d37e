/**
 * s18_background_tasks.ts - Background Tasks
 *
 * "Keep thinking while a command runs": a slow command becomes a task, and the model hears when it ends.
 *
 *   bash({ command: "sh build.sh", run_in_background: true })    approved as bash is
 *      |   8 running already --> is_error naming them
 *      v
 *   "Started bg_1 ..." at once          the model works on: edits, tests, ...
 *   +--------------------------------------------------------------------+
 *   | bg_1  runCommand: its own process group, output kept as it comes   |
 *   |   bash_output("bg_1")  the output since the last read, the status: |
 *   |                        running | exit code N | ended by time limit |
 *   |   kill_task("bg_1")    the task and everything it started end      |
 *   |   ends by itself, at 10 minutes, or when the program ends          |
 *   +--------------------------------------------------------------------+
 *      |  it ended: one notice (id, status, last lines), given once
 *      v
 *   inside the next tool result:  [ tool_result("...\n\n<notice>bg_1 ...</notice>") ]
 *   or, when the turn is over, in front of the person's next prompt
 *   never a message of its own between a tool_use and its result (s09's rule)
 *
 * New since s06: regions `background` (the tasks) and `notices` (where a notice rides), first
 * after the config; `bash` (s06's, with run_in_background) and `task-tools` (bash_output,
 * kill_task); one line in `run-tool` (runTools) and the program's turnWithNotices. s06's
 * registry, tools and approval step are imported from agents/s06_tool_registry.ts; processes
 * and their cleanup are lib/machinery/processes.ts.
 *
 *   npx tsx agents/s18_background_tasks.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s18_background_tasks.ts --approval-mode auto-edit
 */
import { StringDecoder } from "node:string_decoder";
import type { ContentBlock, Message, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { runCommand, type OutputSink } from "../lib/machinery/processes.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import {
  APPROVAL_HELP, approve, bashTool as s06Bash, CORE_TOOLS, DEFAULT_TIMEOUT, defineTool, MAX_OUTPUT, modeProblem, refuseDenied,
  ToolRegistry, workspace,
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
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make. ` +
  `For a slow command (a build, a long test run, a server), set run_in_background on bash and go on with other work: you are told when it ends, so do not wait or poll for it.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// #endregion config

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

interface Task {
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

let tasks: Task[] = [];
let tasksStarted = 0;
const running = () => tasks.filter((task) => task.status === "running");
const named = (task: Task) => `${task.id} (${clip(task.command.replace(/\s+/g, " "), 60, "head")})`;

/** Start `command` as a task and return at once; the ninth while eight run is refused, naming them. */
export function startTask(command: string, timeLimitMs = TASK_LIMITS.timeLimitMs): Task {
  const busy = running();
  if (busy.length >= TASK_LIMITS.running) {
    throw new Error(`${busy.length} background tasks are running, the most at once: ${busy.map(named).join(", ")}. Read them with bash_output, wait for one to end, or end one with kill_task.`);
  }
  const task: Task = { id: `bg_${++tasksStarted}`, command, startedAt: Date.now(), status: "running", output: new TaskOutput(), end: () => {}, killed: false, ended: Promise.resolve() };
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
function taskEnded(task: Task, status: string): void {
  if (!tasks.includes(task)) return; // a task of a session that was reset (prepareReplay)
  task.status = status;
  task.output.finish();
  notify(task.id, endNotice(task));
  const finished = tasks.filter((other) => other.status !== "running");
  const forgotten = finished.slice(0, Math.max(0, finished.length - TASK_LIMITS.finishedKept));
  tasks = tasks.filter((other) => !forgotten.includes(other));
}

/** The task with this id, or an error that says which ids there are. */
function taskOf(id: string): Task {
  const task = tasks.find((candidate) => candidate.id === id);
  if (task) return task;
  const number = Number(/^bg_([1-9]\d*)$/.exec(id)?.[1]); // as bash wrote it: bg_03 is no id
  if (number >= 1 && number <= tasksStarted) throw new Error(`${id} ended long ago and is forgotten: only the last ${TASK_LIMITS.finishedKept} finished tasks are kept`);
  const known = tasks.map((other) => `${other.id} (${other.status})`).join(", ");
  throw new Error(`there is no task ${JSON.stringify(id)}. ${known ? `The tasks: ${known}.` : "No background task has been started."}`);
}

/** The status, then what the task printed since the last read; the next read starts after it. */
function readTask(task: Task): string {
  const fresh = task.output.takeUnread();
  if (task.status !== "running") forgetNotice(task.id); // the model sees the end here: no notice later
  const status = task.status === "running" ? `running (for ${Math.round((Date.now() - task.startedAt) / 1000)} s)` : task.status;
  return `${named(task)}: ${status}.\n${fresh ? `Output since the last read:\n${fresh}` : "No new output since the last read."}`;
}

/** End a task and everything it started; one that had ended may have left something running, which ends too. */
async function killTask(task: Task): Promise<string> {
  const wasRunning = task.status === "running";
  task.killed = wasRunning;
  task.end();
  await task.ended;
  return `${wasRunning ? `Ended ${task.id} and everything it started.` : `${task.id} had already ended; anything it left running has been ended too.`}\n${readTask(task)}`;
}

/** What the model reads when a task has ended: short, the end of the output being where errors usually are. */
function endNotice(task: Task): string {
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
  if (note) prompt.content = `${note}\n\n${prompt.content}`;
}

/** A new session has no tasks: the offline replay calls this before its first prompt (so do the tests). */
export function prepareReplay(): void {
  for (const task of running()) task.end();
  tasks = [];
  tasksStarted = 0;
  notices.clear();
}

/** The tasks as they stand, for tests and the exercise's checks (the model reads them with bash_output). */
export const taskList = (): readonly { id: string; status: string }[] => tasks.map(({ id, status }) => ({ id, status }));
// #endregion notices

// #region bash
// s06's bash with one flag more. Without it, s06's bash runs as it was; with it, the command
// becomes a task, approved the same way: the person sees that it will run on in the background.
const bashTool = defineTool({
  ...s06Bash,
  description:
    `${s06Bash.description} For a slow command (a build, a test suite, a server), set run_in_background: bash then returns at once with a task id (bg_1, bg_2, ...). ` +
    `Read its output with bash_output, end it with kill_task; you are told when it ends. At most ${TASK_LIMITS.running} run at once.`,
  parameterSchema: {
    type: "object",
    properties: {
      command: { type: "string", description: "The command, run with bash -c." },
      timeout: { type: "integer", minimum: 1, maximum: 600, description: `Seconds before the command is ended (default ${DEFAULT_TIMEOUT}; in the background ${TASK_LIMITS.timeLimitMs / 1000}).` },
      run_in_background: { type: "boolean", description: "Run it as a background task and return at once with its id (default false)." },
    },
    required: ["command"],
    additionalProperties: false,
  },
  getDescription: (params) => `${params.command}${params.run_in_background === true ? "   (in the background)" : ""}`,
  async shouldConfirmExecute(params, signal) {
    if (params.run_in_background !== true) return s06Bash.shouldConfirmExecute(params, signal);
    const limit = params.timeout === undefined ? `${TASK_LIMITS.timeLimitMs / 60_000} minutes` : `${params.timeout} s`;
    return { title: "Run this command in the background?", details: `${params.command}\n(it runs on while the agent works, until it ends, kill_task ends it, ${limit} pass, or the program ends)` };
  },
  async execute(params, signal) {
    if (params.run_in_background !== true) return s06Bash.execute(params, signal);
    const command = String(params.command);
    refuseDenied(command);
    const task = startTask(command, params.timeout === undefined ? undefined : Number(params.timeout) * 1000);
    return {
      llmContent: `Started ${task.id} in the background. Read its output with bash_output ("${task.id}"), end it with kill_task; you will be told when it ends.`,
      returnDisplay: `started ${task.id} in the background`,
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

// #region tools
/** s06's registry, holding s06's tools with this stage's bash, and the two task tools. */
export const registry = new ToolRegistry();
for (const tool of [bashTool, ...CORE_TOOLS.filter((core) => core.name !== "bash"), bashOutputTool, killTaskTool]) registry.registerTool(tool);
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
  return withNotices(results); // s18: a task that ended meanwhile rides in the last result
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
/**
 * A turn as the program runs it: notices of tasks that ended while the person was typing go
 * in front of their prompt, then the loop runs as in every stage. Every task ends when the
 * program does: lib/machinery/processes.ts ends every command at exit, background or not.
 */
export async function turnWithNotices(messages: MessageParam[]): Promise<void> {
  addNoticesToPrompt(messages);
  return agentLoop(messages);
}

export const main = (args = process.argv.slice(2)) => {
  // lib's exit handler ends every task; the model may have said one runs on, so the person hears which did.
  process.once("exit", () => running().forEach((task) => console.log(`[${named(task)} was still running: it ends with the program]`)));
  return runAsMain({
    stage: "s18",
    title: "Background Tasks",
    agentLoop: turnWithNotices,
    prepareReplay,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
    help: [APPROVAL_HELP],
  });
};

if (isMain(import.meta.url)) await main();
// #endregion program
