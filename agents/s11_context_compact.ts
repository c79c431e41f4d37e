/**
 * s11_context_compact.ts - Context Compaction
 *
 * "Make room in the context, keep the transcript on disk": old results shrink, a long talk becomes a summary.
 *
 *   agentLoop: client.messages.create({ ..., messages })   messages: the whole conversation
 *      |
 *      v   this stage's client, before each request goes out
 *   +-------------------------------------------------------------------+
 *   | 1 transcript: messages not yet on disk --> .agent/transcripts/    |
 *   | 2 auto: last usage.input_tokens > COMPACT_THRESHOLD, or `compact` |
 *   |   asked for (the tool, /compact)  --> a summary request           |
 *   |     [ m1 ... mN ]  ==>  [ summary + the latest request ]          |
 *   |     summary failed or transcript unwritable --> kept, a warning;  |
 *   |     the next automatic try waits until the context has grown      |
 *   | 3 micro: results before the last 3 tool-result messages  ==>      |
 *   |     "[Old result cleared ... read_file again, or grep toolu_..]"  |
 *   +-------------------------------------------------------------------+
 *      |   the model receives the smaller view; `messages` stays whole
 *      v
 *   reply --> into the transcript at once; usage.input_tokens kept for the next check
 *
 * New since s06: regions `transcript`, `micro-compact`, `auto-compact`, `compact-tool` and
 * `client`, first after the config, and one line in `end-turn`. s06's registry, tools and
 * approval step are imported from agents/s06_tool_registry.ts; the loop is s06's, word for word.
 *
 *   npx tsx agents/s11_context_compact.ts       (no key: replays the recorded demo)
 *   COMPACT_THRESHOLD=50000 npx tsx agents/s11_context_compact.ts
 */
import { appendFileSync, existsSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ContentBlock, ContentBlockParam, Message, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip } from "../lib/machinery/head-and-tail.ts";
import type { Scenario } from "../lib/course/scenario.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient, type ModelClient } from "../lib/runtime/model.ts";
import { describeProviderError, isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import {
  APPROVAL_HELP, approve, CORE_TOOLS, defineTool, MAX_OUTPUT, modeProblem, safePath,
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
// recorded demo, and the placeholder key it then uses is never sent anywhere. The loop's
// `client` (region `client`) hands its requests to this one after compacting what they carry.
const provider = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace (s06's: the directory the program runs in) is read at each call; so is the system prompt.
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make. ` +
  `Old tool results are cleared from what you see, and a long conversation is replaced by a summary; every message stays in .agent/transcripts/. ` +
  `Call compact when a large piece of work is done and its details are no longer needed.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// Compact once a request used more input tokens than this (COMPACT_THRESHOLD). The default
// leaves a fifth of a 200,000-token window for the summary request and what comes next.
const DEFAULT_THRESHOLD = 160_000;
const asThreshold = (text: string) => (/^\d+$/.test(text) && Number(text) >= 1000 ? Number(text) : undefined);
const requestedThreshold = (process.env.COMPACT_THRESHOLD || String(DEFAULT_THRESHOLD)).trim();
const COMPACT_THRESHOLD = asThreshold(requestedThreshold);
// #endregion config

// #region transcript
/**
 * What the harness knows of one conversation. The loop passes the same `messages` array to
 * every request of a session, so that array names the conversation (a WeakMap key).
 */
interface Conversation {
  /** The transcript file, relative to the workspace: `.agent/transcripts/<time>.jsonl`. */
  transcript?: string;
  /** The workspace the transcript belongs to: where the conversation's first request was made. */
  home?: string;
  /** How many of the conversation's messages are in the transcript. */
  written: number;
  /** Why the transcript could not be written last time (the person is told once). */
  writeProblem?: string;
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
  if (!conversation) conversations.set(messages, (conversation = { written: 0, cut: 0, contextTokens: 0, retryAt: 0 }));
  return conversation;
}

/**
 * Append every message not yet in the transcript (and `extra`), one JSON message per line.
 * This runs before each request, so whatever the model is sent is on disk before anything is
 * taken out of what it sees, and with each reply. Only appended to. false, and a warning, if it fails.
 */
function saveTranscript(conversation: Conversation, messages: MessageParam[], extra: MessageParam[] = []): boolean {
  const lines = [...messages.slice(conversation.written), ...extra].map((message) => `${JSON.stringify(message)}\n`).join("");
  try {
    // The transcript's name is relative, so it is written only in the conversation's own
    // workspace: if the working directory changes under a running conversation (a test that
    // ends while its replay runs on goes back to where it started), the messages must not
    // follow it there. They wait, and are all written once the workspace is back.
    const here = realpathSync(workspace());
    conversation.home ??= here;
    if (here !== conversation.home) throw new Error(`the working directory is ${here}, not this conversation's workspace ${conversation.home}`);
    conversation.transcript ??= newTranscriptName();
    // Checked at every write: a transcripts folder that became a link to elsewhere is refused.
    const file = safePath(conversation.transcript);
    notesFolder(path.dirname(file));
    appendFileSync(file, lines);
    conversation.written = messages.length;
    conversation.writeProblem = undefined;
    return true;
  } catch (error) {
    const problem = error instanceof Error ? error.message : String(error);
    if (conversation.writeProblem === undefined) console.log(`[warning] the transcript cannot be written (${problem}); nothing is compacted until it can be, so nothing is lost`);
    conversation.writeProblem = problem;
    return false;
  }
}

const TRANSCRIPTS = ".agent/transcripts"; // in the agent's own folder, which grep and glob leave out

function newTranscriptName(): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  let name = `${TRANSCRIPTS}/${stamp}.jsonl`;
  for (let n = 2; existsSync(path.join(workspace(), name)); n++) name = `${TRANSCRIPTS}/${stamp}-${n}.jsonl`;
  return name;
}

/** A folder of the agent's notes, with a .gitignore of `*`: not the project's files, so git never lists them (skills and MEMORY.md get none). */
function notesFolder(folder: string): void {
  if (existsSync(folder)) return;
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, ".gitignore"), "*\n");
}
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
  const view = kept.map((message, i): MessageParam => {
    if (!old.has(i)) return message;
    // Only a message already in the transcript can be pointed to there.
    const onDisk = conversation.cut + i < conversation.written ? conversation.transcript : undefined;
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
 * Replace what the model sees of `messages` with a summary the model writes. Everything is in
 * the transcript first; when it cannot be, or the summary request fails, nothing changes and
 * the person is told. It runs between two requests, at the end of the conversation, where
 * every tool_use already has its tool_result: a pair can never be split.
 */
async function compact(messages: MessageParam[], why: string, focus?: string): Promise<boolean> {
  const conversation = conversationOf(messages);
  if (!saveTranscript(conversation, messages)) return notCompacted(conversation, `the transcript cannot be written (${conversation.writeProblem})`);
  console.log(dim(`[compacting the context: ${why}]`));
  let summary: string;
  try {
    const instruction = focus ? `${SUMMARY_REQUEST} Keep in particular: ${focus}` : SUMMARY_REQUEST;
    // The loop's system prompt and tools (a request holding tool_use blocks must declare its
    // tools, and an unchanged start can come from the prompt cache), but no tool may be called.
    const request = { model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, tool_choice: { type: "none" as const } };
    const reply = await provider.messages.create({ ...request, messages: withText(contextFor(conversation, messages), instruction) });
    summary = reply.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n").trim();
    if (reply.stop_reason === "max_tokens") throw new Error(`the summary was cut off at ${MAX_TOKENS} tokens`);
    if (reply.stop_reason !== "end_turn" || summary === "") throw new Error("the model wrote no summary");
  } catch (error) {
    return notCompacted(conversation, `the summary request failed (${describeProviderError(error).replace(/^\[error\] /, "").replace(/\.$/, "")})`);
  }
  const message = summaryMessage(summary, conversation.transcript!, messages);
  if (!saveTranscript(conversation, messages, [message])) return notCompacted(conversation, "the summary cannot be added to the transcript");
  const replaced = messages.length - conversation.cut + (conversation.summary ? 1 : 0);
  Object.assign(conversation, { cut: messages.length, summary: message, contextTokens: 0, retryAt: 0 });
  console.log(dim(`[compacted: ${replaced} messages became a summary of ${summary.length} characters; every message is in ${conversation.transcript}]`));
  return true;
}

/** Nothing changed, in one warning; each try sends the whole conversation, so the next automatic one waits until the context has grown by a tenth of the threshold. */
function notCompacted(conversation: Conversation, why: string): false {
  conversation.retryAt = Math.max(conversation.contextTokens + Math.ceil(compactThreshold / 10), compactThreshold);
  console.log(`[warning] not compacted: ${why}; the conversation is sent as it is, and the next automatic try waits for a request past ${conversation.retryAt} input tokens`);
  return false;
}

/** The summary as the model will read it, with where the rest is and, mid-task, what to carry on with. */
function summaryMessage(summary: string, transcript: string, messages: MessageParam[]): MessageParam {
  const parts = [
    `[The conversation so far was compacted to make room. This summary replaces it; every message is kept, one JSON message per line, in ${transcript} (search it with grep for an exact detail).]`,
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
    "Make room in your context: before your next request the conversation so far is replaced by a summary you write, and every message stays in .agent/transcripts/. " +
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

// #region client
/**
 * The client the loop calls: it gets the loop's own `messages` (the whole conversation) and
 * returns the model's reply, like the SDK's. In between, in this order: the transcript, a
 * compaction when one is due, the request with the smaller view of the conversation, and the
 * reply into the transcript.
 */
const client: ModelClient = {
  messages: {
    async create(request, options) {
      const { messages } = request;
      const conversation = conversationOf(messages);
      saveTranscript(conversation, messages);
      const asked = compactionAsked;
      compactionAsked = undefined;
      const used = conversation.contextTokens;
      if (asked) await compact(messages, "the model asked for it", asked.focus);
      else if (used > Math.max(compactThreshold, conversation.retryAt)) await compact(messages, `the last request used ${used} input tokens, over COMPACT_THRESHOLD (${compactThreshold})`);
      const response = await provider.messages.create({ ...request, messages: contextFor(conversation, messages) }, options);
      conversation.contextTokens = inputTokens(response.usage);
      // The reply, as the loop's next message: the one that ends a session goes out in no request.
      saveTranscript(conversation, [...messages, { role: "assistant", content: response.content }]);
      return response;
    },
  },
};
// #endregion client

// #region tools
/** s06's registry, with s06's core tools and compact. */
export const registry = new ToolRegistry();
for (const tool of [...CORE_TOOLS, compactTool]) registry.registerTool(tool);
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
  saveTranscript(conversationOf(messages), messages); // s11: the turn ends, so no request will carry these
}
// #endregion end-turn

// #region program
const thresholdProblem = COMPACT_THRESHOLD ? undefined : `COMPACT_THRESHOLD "${requestedThreshold}" is not a number of tokens: give a whole number, at least 1000 (the default is ${DEFAULT_THRESHOLD})`;

/** A replay compacts where its recording did: at the scenario's `compactThreshold`, if it has one. */
export function prepareReplay(scenario: Scenario & { compactThreshold?: number }): void {
  const given = scenario.compactThreshold;
  const threshold = given === undefined ? (COMPACT_THRESHOLD ?? DEFAULT_THRESHOLD) : asThreshold(String(given));
  if (threshold === undefined) throw new Error(`the scenario's compactThreshold (${given}) is not a whole number of at least 1000`);
  compactThreshold = threshold;
}

export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s11",
    title: "Context Compaction",
    agentLoop,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem ?? thresholdProblem,
    help: [APPROVAL_HELP, `  COMPACT_THRESHOLD       input tokens after which the conversation is summarised (default ${DEFAULT_THRESHOLD})`],
    prepareReplay,
    slashCommands: { "/compact": compactCommand },
  });

if (isMain(import.meta.url)) await main();
// #endregion program
