/**
 * s13_streaming.ts - Streaming
 *
 * "Show the reply as it is written": the person reads each word as it comes, the loop still gets one message.
 *
 *   agentLoop: await client.messages.create({ ... })          (the loop, unchanged)
 *      |
 *      v   client = this stage's: the request goes out with stream: true
 *   +--------------------------------------------------------------------+
 *   | message_start           a Message with no content yet              |
 *   | content_block_start i   block i begins: text "", a call's input {} |
 *   | content_block_delta i   text_delta ------> on the screen at once   |
 *   |                         input_json_delta -> the call's JSON, joined |
 *   | content_block_stop  i   block i complete: a call's input parsed,   |
 *   |                         the call shown (> Shell ls)               |
 *   | message_delta           stop_reason, usage                         |
 *   | message_stop            the whole Message --> checkedReply --> loop |
 *   +--------------------------------------------------------------------+
 *   Ctrl-C mid-reply: the request is aborted; complete blocks are kept, the
 *   rest dropped; stop_reason null --> endTurn answers kept calls "not run"
 *
 * New since s06: the client the loop calls streams (region `stream`, first after the config):
 * text printed as its deltas arrive, a call shown once its input is whole, one whole Message
 * assembled for the loop, Ctrl-C that stops a reply. runTool no longer prints the call line
 * (the stream did); endTurn prints no text (the stream did) and answers an interrupted reply's
 * calls. s06's registry, tools and approval step are imported from agents/s06_tool_registry.ts.
 * Machinery: lib/runtime/model.ts (the SDK's connection, its events, retries announced).
 *
 *   npx tsx agents/s13_streaming.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s13_streaming.ts --approval-mode auto-edit
 */
import type {
  ContentBlock, Message, MessageCreateParamsNonStreaming, MessageParam, RawMessageStreamEvent, ToolResultBlockParam, ToolUseBlock,
} from "@anthropic-ai/sdk/resources/messages";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip } from "../lib/machinery/head-and-tail.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { checkedReply, modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import { APPROVAL_HELP, approve, MAX_OUTPUT, modeProblem, registry, TOOLS, workspace, type Params } from "./s06_tool_registry.ts";

/** s06's registry and tools, as they are: streaming changes how a reply arrives, not what the model may call. */
export { registry, TOOLS };

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
const BASE_URL = process.env.ANTHROPIC_BASE_URL || undefined;
// The official SDK's connection to any Anthropic-compatible API (lib/runtime/model.ts): it loads
// the SDK at the first request, retries a 429, 529 or 5xx and says so, and here gives a streamed
// reply's events as they arrive (api.messages.events). The client the loop calls is this
// stage's own, in `stream`. With no key the program replays a recorded demo.
const api = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: BASE_URL });
// The workspace (s06's: the directory the program runs in) is read at each call; so is the system prompt.
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// #endregion config

// #region stream
// The loop calls client.messages.create(request) and gets one whole Message, as in every stage.
// What changes is inside: the request goes out with stream: true, and the reply comes back as
// events. Each event is shown as it arrives and added to the message being built; when the
// stream ends, the loop gets that message, the same as the reply sent whole would have been.

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

/** The client the loop calls: the SDK's shape, one whole reply out, shown while it arrived. */
export const client = {
  messages: { create: (request: MessageCreateParamsNonStreaming) => streamReply(request) },
};

/** Send the request as a stream, show and build the reply as it comes; Ctrl-C stops it. */
export async function streamReply(request: MessageCreateParamsNonStreaming): Promise<Message> {
  const reply: Building = { json: [], complete: [], ended: false, openLine: false, held: "" };
  const stop = new AbortController();
  try {
    // While the reply streams, Ctrl-C aborts the request (lib/runtime/terminal.ts), as s06's Ctrl-C cancels a tool.
    await cancellable(() => stop.abort(), async () => {
      for await (const event of await api.messages.events(request, { signal: stop.signal })) {
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
export function addEvent(reply: Building, event: RawMessageStreamEvent): void {
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
export function showEvent(reply: Building, event: RawMessageStreamEvent): void {
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

/** The line s06's runTool printed at step 5, now printed the moment the call is whole. */
function showCall(call: ToolUseBlock): void {
  const tool = registry.getTool(call.name);
  const params: Params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  if (!tool || tool.validateToolParams(params)) return; // runTool shows a call it refuses, and why
  console.log(dim(`> ${tool.displayName} ${visible(clip(tool.getDescription(params).split("\n")[0], 120, "head"))}`));
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
  // 5. Describe, in one line, what is about to happen: s13's stream showed it when the call was whole (showCall).
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
function showText(_response: Message): void {
  // s13: the text is on the screen already, shown as it streamed (showEvent): nothing twice.
}

/** The model stopped asking for tools, or was stopped. Say so when the reason is not a normal ending. */
function endTurn(response: Message, messages: MessageParam[]): void | Promise<void> {
  // A server tool (web search, code execution) still at work: the turn goes on when it is sent back as it is.
  if (response.stop_reason === "pause_turn") return agentLoop(messages);
  if (response.stop_reason === "refusal") console.log("[the model declined to continue]");
  const cutOff = { max_tokens: `at ${MAX_TOKENS} tokens: ask for something smaller, or raise MAX_TOKENS`, model_context_window_exceeded: "because the context window is full: start a new session" };
  let why: string;
  if (response.stop_reason === null) {
    // s13: Ctrl-C stopped the reply, which never ended; what was complete is in the history.
    console.log("[the reply was interrupted (Ctrl-C); what was complete of it is kept]");
    why = "Not run: the person interrupted your reply (Ctrl-C) before this call could run.";
  } else if (response.stop_reason === "max_tokens" || response.stop_reason === "model_context_window_exceeded") {
    console.log(`[the reply was cut off ${cutOff[response.stop_reason]}]`);
    why = `Not run: your reply was cut off (${response.stop_reason}) before this call was complete.`;
  } else return;
  // A call that did not run still needs an answer, or the next request is refused.
  const calls = response.content.filter((block) => block.type === "tool_use");
  if (calls.length === 0) return;
  messages.push({ role: "user", content: calls.map((call) => ({ type: "tool_result" as const, tool_use_id: call.id, is_error: true, content: why })) });
}
// #endregion end-turn

// #region program
export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s13",
    title: "Streaming",
    agentLoop,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
    help: [APPROVAL_HELP],
  });

if (isMain(import.meta.url)) await main();
// #endregion program
