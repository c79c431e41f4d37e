/**
 * s15_providers.ts - Providers
 *
 * "One loop, any model": the loop speaks the Messages API; with PROVIDER=openai an adapter speaks Chat Completions for it.
 *
 *   agentLoop: client.messages.create({ system, tools, messages })    the loop, unchanged
 *      |
 *      v   PROVIDER=openai: the client is the adapter
 *   +-------------------------------------------------------------------------+
 *   | toChatRequest   system       --> { role: "system" }                     |
 *   |                 tools        --> { type: "function", function: {...} }  |
 *   |                 tool_use     --> tool_calls, arguments as a JSON string |
 *   |                 tool_result  --> { role: "tool" }, one each, call order |
 *   |   POST {OPENAI_BASE_URL}/chat/completions   (Bearer OPENAI_API_KEY)     |
 *   | fromChatReply   content      --> a text block                           |
 *   |                 tool_calls   --> tool_use (arguments parsed; not JSON:  |
 *   |                                  kept, marked, refused by runTool)      |
 *   |                 finish_reason tool_calls / stop / length                |
 *   |                          --> stop_reason tool_use / end_turn / max_tokens |
 *   +-------------------------------------------------------------------------+
 *      |   one Messages API reply, as lib's Anthropic client would give it
 *      v
 *   the loop goes on: runTools, results, the next request
 *
 * New since s06: regions `to-chat` and `from-chat` (the adapter's two translations), first
 * after the config, and `client` (which client the loop calls); one step more in `run-tool`
 * (arguments that were not JSON). Without PROVIDER, or with PROVIDER=anthropic, it is s06.
 * s06's registry, tools and approval step are imported from agents/s06_tool_registry.ts.
 * Machinery: lib/runtime/chat-completions.ts (the POST: time limit, size cap, retries said).
 *
 *   npx tsx agents/s15_providers.ts                    (no key: replays the recorded demo)
 *   PROVIDER=openai npx tsx agents/s15_providers.ts    (OPENAI_API_KEY, OPENAI_BASE_URL, MODEL_ID)
 */
import type {
  ContentBlock, ContentBlockParam, Message, MessageCreateParamsNonStreaming, MessageParam, StopReason, ToolResultBlockParam, ToolUnion, ToolUseBlock,
} from "@anthropic-ai/sdk/resources/messages";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip } from "../lib/machinery/head-and-tail.ts";
import { postChatCompletion } from "../lib/runtime/chat-completions.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { checkedReply, modelClient, type ModelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import { APPROVAL_HELP, approve, MAX_OUTPUT, modeProblem, registry, TOOLS, workspace } from "./s06_tool_registry.ts";

/** s06's registry and tools, as they are: the provider changes the wire, not what the model may call. */
export { registry, TOOLS };

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
// The workspace (s06's: the directory the program runs in) is read at each call; so is the system prompt.
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// #endregion config

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
 * The client the loop calls. Without PROVIDER, it is s06's: lib's client for the Messages API.
 * With PROVIDER=openai it is the adapter, which has the same create() and translates both ways.
 */
const client: ModelClient =
  PROVIDER === "openai"
    ? { messages: { create: viaChatCompletions } }
    : modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });

/** One request through Chat Completions: translated, sent (lib/runtime/chat-completions.ts), translated back, checked as lib checks any reply. */
async function viaChatCompletions(request: MessageCreateParamsNonStreaming, options?: { signal?: AbortSignal }): Promise<Message> {
  const chat = toChatRequest(request);
  const reply = (await postChatCompletion({ baseURL: OPENAI_BASE_URL, apiKey: OPENAI_API_KEY }, chat, options?.signal)) as ChatReply;
  const { finish_reason, message } = reply.choices[0];
  // The person sees the other format at work: what went out, and what came back.
  console.log(dim(`  [chat/completions: ${chat.messages.length} messages out; finish_reason ${finish_reason ?? "none"}, ${message.tool_calls?.length ?? 0} tool_calls back]`));
  return checkedReply(fromChatReply(reply), OPENAI_BASE_URL);
}

/** A setting that cannot work, said in one line before anything runs. */
const providerProblem = !PROVIDERS.includes(PROVIDER)
  ? `PROVIDER "${PROVIDER}" is not one this stage speaks: anthropic (the default, the Messages API) or openai (Chat Completions)`
  : PROVIDER === "openai" && OPENAI_API_KEY && !process.env.MODEL_ID
    ? "PROVIDER=openai needs MODEL_ID: the model's name at OPENAI_BASE_URL, as that server lists it"
    : undefined;
// #endregion client

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
  // 4. Validate. s15: arguments that were not a JSON object (the adapter kept them under NOT_JSON) are the model's to send again.
  const unread = (call.input as Record<string, unknown> | null)?.[NOT_JSON];
  if (typeof unread === "string") return failed(`Error: ${call.name} was not run: its arguments are not a JSON object (${JSON.stringify(clip(unread, 200, "head"))}). Send the call again with valid JSON arguments.`);
  // Models send null for what they leave out: it means "not given", for every tool.
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
const PROVIDER_HELP = [
  "  PROVIDER=openai         speak Chat Completions instead of the Messages API (default: anthropic)",
  "  OPENAI_API_KEY          with PROVIDER=openai: the key, sent as a bearer token (a local server usually takes any)",
  "  OPENAI_BASE_URL         with PROVIDER=openai: the address before /chat/completions (default https://api.openai.com/v1)",
  "  MODEL_ID                with PROVIDER=openai: required, the model's name at that address",
];
const OPENAI_HOW_TO =
  "To use a real model with PROVIDER=openai: set OPENAI_API_KEY and MODEL_ID (and OPENAI_BASE_URL for a server other than OpenAI's), in your shell or in the workbook's .env.";

export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s15",
    title: "Providers",
    agentLoop,
    hasKey: PROVIDER === "openai" ? Boolean(OPENAI_API_KEY) : Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    // A recording keeps Messages API replies, which this stage gets from the adapter, not from the wire.
    settingsProblem: providerProblem ?? (PROVIDER === "openai" && args.includes("--record") ? "--record saves Messages API replies: record with PROVIDER=anthropic" : modeProblem),
    help: [APPROVAL_HELP, ...PROVIDER_HELP],
    keyHelp: PROVIDER === "openai" ? { names: "OPENAI_API_KEY", howTo: OPENAI_HOW_TO } : undefined,
  });

if (isMain(import.meta.url)) await main();
// #endregion program
