/**
 * s10_subagent.ts - Subagents
 *
 * "A clean context for the side task; only the answer comes back": the child reads, the parent keeps its answer.
 *
 *   parent: [ prompt, ..., tool_use task({ description, prompt }) ]
 *      |
 *      v   runTool -> task.execute: a small loop of its own, inside a tool
 *   +------------------------------------------------------------------+
 *   | child: [ prompt ]       fresh messages, its own system prompt    |
 *   |   model -> tool_use -> runTools -> tool_result -> model -> ...   |
 *   |   tools: bash, read_file, write_file, edit_file   (no task)      |
 *   |   the same runTool: approval, Ctrl-C; steps shown indented, dim  |
 *   |   at most 30 model calls  --over / cut off / failed--> is_error  |
 *   +------------------------------------------------------------------+
 *      |   only its last answer, and one line of figures
 *      v
 *   parent: tool_result "- src/cart.js: ... [subagent: 3 model calls, ...]"
 *   tasks in one reply run at the same time, 4 at most (the rest wait their turn);
 *   results go back in call order
 *
 * New since s06: a `task` tool that runs a subagent (region `subagent`, first after the
 * config); each line a tool prints goes through `show`, which indents a subagent's (in
 * `run-tool`); questions wait their turn and name the subagent that asks (in `approval`,
 * around s06's approval step). s06's registry, tools and approval step are imported from
 * agents/s06_tool_registry.ts.
 *
 *   npx tsx agents/s10_subagent.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s10_subagent.ts --approval-mode auto-edit
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { EventEmitter, once } from "node:events";
import type { ContentBlock, Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip } from "../lib/machinery/head-and-tail.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { describeProviderError, isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable, terminal } from "../lib/runtime/terminal.ts";
import {
  APPROVAL_HELP, approve, CORE_TOOLS, defineTool, MAX_OUTPUT, modeProblem, mustAsk,
  ToolRegistry, workspace, type AgentTool, type Params, type Verdict,
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
  `For a side task that takes much reading (surveying a folder, finding where something is done), call task: a subagent does it in a fresh context and only its answer comes back. ` +
  `Tasks in one reply run at the same time, so give each its own part of the work.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// #endregion config

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

/** The parent's tools but task: a subagent cannot start another, so there is no recursion. */
const childTools = (): Tool[] => TOOLS.filter((tool) => tool.name !== taskTool.name);

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
        spent.input += response.usage?.input_tokens ?? 0;
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

/** Print for the person. A subagent's lines are indented, dimmed, and carry its label. */
function show(text: string): void {
  const child = childRun.getStore();
  console.log(child ? text.split("\n").map((line) => dim(`  [${child.label}] ${line}`)).join("\n") : text);
}
// #endregion subagent

// #region approval
// s06's approval step, one question at a time. Subagents side by side may want to ask at the
// same moment, and a person answers one question at a time: a question waits until the one
// before it is answered, and names the subagent that asks. What needs no person (a read, a
// mode that does not ask, nobody at the terminal) is decided at once, as in s06.
let lastQuestion: Promise<void> = Promise.resolve();

async function approveInTurn(tool: AgentTool, params: Params, signal: AbortSignal): Promise<Verdict> {
  if (!mustAsk(tool) || !terminal().hasPerson) return approve(tool, params, signal);
  const done = await turnToAsk();
  try {
    const child = childRun.getStore();
    return await approve(tool, params, signal, child && `the subagent [${child.label}]`); // "a" may have been answered while it waited
  } finally {
    done();
  }
}

/** Wait until every question asked before this one is answered; call the result when done. */
async function turnToAsk(): Promise<() => void> {
  const before = lastQuestion;
  let done = () => {};
  lastQuestion = new Promise((resolve) => (done = resolve));
  await before;
  return done;
}
// #endregion approval

// #region tools
/** s06's registry, with s06's core tools and task. */
export const registry = new ToolRegistry();
for (const tool of [...CORE_TOOLS, taskTool]) registry.registerTool(tool);
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
    show(dim(indent(visible(clip(message, 2000, "head")))));
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(message, MAX_OUTPUT) };
  };
  // 3. Look the tool up.
  const tool = registry.getTool(call.name);
  if (!tool) show(dim(`> ${visible(call.name)}`));
  if (!tool) return failed(`Error: unknown tool "${call.name}". Tools: ${registry.getAllTools().map((t) => t.name).join(", ")}.`);
  // 4. Validate. Models send null for what they leave out: it means "not given", for every tool.
  const params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  const problem = tool.validateToolParams(params);
  if (problem) {
    show(dim(`> ${tool.displayName} ${visible(clip(JSON.stringify(params), 120, "head"))}`));
    return failed(`Error: ${call.name} was not run: ${problem}.`);
  }
  // 5. Describe, in one line, what is about to happen.
  show(dim(`> ${tool.displayName} ${visible(clip(tool.getDescription(params).split("\n")[0], 120, "head"))}`));
  const controller = new AbortController();
  try {
    // 6. Confirm: the approval mode, and the person when the mode asks for one.
    const verdict = await approveInTurn(tool, params, controller.signal);
    if (!verdict.run) return failed(verdict.why);
    // 7. Execute, with a signal: Ctrl-C cancels this tool, not the agent.
    const result = await cancellable(() => controller.abort(), () => tool.execute(params, controller.signal));
    // 8. llmContent goes to the model...
    const toModel: ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: clip(result.llmContent, MAX_OUTPUT) };
    // 9. ...and returnDisplay to the person (unless they have just seen it, approving it).
    if (result.returnDisplay !== verdict.shown) show(dim(indent(firstLines(result.returnDisplay, 12))));
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
export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s10",
    title: "Subagents",
    agentLoop,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
    help: [APPROVAL_HELP],
  });

if (isMain(import.meta.url)) await main();
// #endregion program
