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
 * and `reminder`, first after the config, and one line each in `run-tool` (runTools) and
 * `end-turn` (endTurn). s06's registry, tools and approval step are imported from
 * agents/s06_tool_registry.ts.
 *
 *   npx tsx agents/s09_todo_write.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s09_todo_write.ts --approval-mode auto-edit
 */
import type { ContentBlock, Message, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip } from "../lib/machinery/head-and-tail.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import { APPROVAL_HELP, approve, CORE_TOOLS, defineTool, MAX_OUTPUT, modeProblem, ToolRegistry, workspace } from "./s06_tool_registry.ts";

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
  `For work of three steps or more, write the plan first with todo_write; keep one item in_progress, and send the list again as soon as an item is done.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// #endregion config

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

/** A new session has no plan yet: the offline replay calls this before its first prompt. */
export function prepareReplay(): void {
  todos = [];
  repliesSinceUpdate = 0;
  reminderDue = false;
}
// #endregion reminder

// #region tools
/** s06's registry, with s06's core tools and todo_write. */
export const registry = new ToolRegistry();
for (const tool of [...CORE_TOOLS, todoWriteTool]) registry.registerTool(tool);
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
  countReply(false); // s09: a reply that ends the turn counts too (it ran no todo_write)
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
    stage: "s09",
    title: "Todo Write",
    agentLoop,
    prepareReplay,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
    help: [APPROVAL_HELP],
  });

if (isMain(import.meta.url)) await main();
// #endregion program
