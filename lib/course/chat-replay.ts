// The replay engine's Chat Completions side (s15 with PROVIDER=openai). A scenario's replies
// are recorded in the Messages API's shape; a request to `…/chat/completions` gets the next
// one translated into a Chat Completions reply, so every fixture replays through the adapter
// with no new fixture format. And the request is checked as OpenAI would check it: the
// message roles and their fields, arguments sent as a JSON string, and every tool_call of an
// assistant message answered by the tool messages right after it, each id once, in call order.
// That the calls answered are the ones the replay served is checked here too, as replay.ts
// checks it for the Messages API.
import { isDeepStrictEqual } from "node:util";
import type { Message } from "@anthropic-ai/sdk/resources/messages";

type ChatCall = { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };
type ChatMessage = { role?: unknown; content?: unknown; tool_calls?: unknown; tool_call_id?: unknown };
/** A Chat Completions request body as it came: nothing in it is trusted until checked. */
export type ChatRequestBody = { model?: unknown; messages?: unknown; tools?: unknown; stream?: unknown; [field: string]: unknown };

const ROLES = ["system", "developer", "user", "assistant", "tool"];

/**
 * What OpenAI would refuse in a request, in words close to its own, or a call answered that the
 * replay never served; undefined when the request is fine. `served`: the replies given so far
 * (left out, only what OpenAI would refuse is checked).
 */
export function chatProblem(body: ChatRequestBody, served?: Message[]): string | undefined {
  if (typeof body.model !== "string" || body.model === "") return "you must provide a model parameter";
  if (body.stream === true) return "the replay serves Chat Completions whole: stream is not supported here";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "'messages': the request needs at least one message";
  const messages = body.messages as ChatMessage[];
  const tools = body.tools === undefined ? [] : body.tools;
  if (!Array.isArray(tools)) return "Invalid type for 'tools': expected an array";
  for (const [i, tool] of (tools as { type?: unknown; function?: { name?: unknown } }[]).entries()) {
    if (tool?.type !== "function" || typeof tool.function?.name !== "string") return `Missing required parameter: 'tools[${i}].function.name' (each tool is {"type": "function", "function": {...}})`;
  }
  for (const [i, message] of messages.entries()) {
    const where = `messages[${i}]`;
    if (!ROLES.includes(message?.role as string)) return `Invalid value for '${where}.role': ${JSON.stringify(message?.role)}. Supported values are: ${ROLES.join(", ")}`;
    const content = contentProblem(message, where);
    if (content) return content;
    if (message.role === "tool") {
      const previous = messages.slice(0, i).reverse().find((m) => m.role !== "tool");
      if (previous?.role !== "assistant" || !Array.isArray(previous.tool_calls)) return `Invalid parameter: ${where}: messages with role 'tool' must be a response to a preceding message with 'tool_calls'`;
      if (typeof message.tool_call_id !== "string") return `Missing required parameter: '${where}.tool_call_id'`;
    }
    if (message.role !== "assistant" || message.tool_calls === undefined) continue;
    if (!Array.isArray(message.tool_calls)) return `Invalid type for '${where}.tool_calls': expected an array`;
    const calls = message.tool_calls as ChatCall[];
    for (const [j, call] of calls.entries()) {
      if (typeof call?.id !== "string" || call.type !== "function" || typeof call.function?.name !== "string") return `Missing required parameter: '${where}.tool_calls[${j}]' needs an id, "type": "function" and a function name`;
      if (typeof call.function.arguments !== "string") return `Invalid type for '${where}.tool_calls[${j}].function.arguments': expected a string (JSON), but got ${typeof call.function.arguments} instead`;
    }
    // Right after an assistant's tool_calls: one tool message per call, in call order.
    const answers: unknown[] = [];
    for (let k = i + 1; k < messages.length && messages[k].role === "tool"; k++) answers.push(messages[k].tool_call_id);
    const asked = calls.map((call) => call.id);
    const twice = answers.find((id, k) => answers.indexOf(id) !== k);
    if (twice !== undefined) return `Invalid parameter: Duplicate value for 'tool_call_id' of '${twice}' in the tool messages after ${where}`;
    const missing = asked.filter((id) => !answers.includes(id));
    if (missing.length > 0) return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(", ")}`;
    if (answers.join(",") !== asked.join(",")) return `${where}: the tool messages after it answer [${answers.join(", ")}], the calls were [${asked.join(", ")}] in that order`;
  }
  return served ? unservedCalls(messages, served) : undefined;
}

/** A message's content as OpenAI takes it: text, or an array of text parts (an assistant's may be null beside its calls). */
function contentProblem(message: ChatMessage, where: string): string | undefined {
  const { content } = message;
  if (typeof content === "string") return undefined;
  if (content === null || content === undefined) {
    return message.role === "assistant" && Array.isArray(message.tool_calls) ? undefined : `Invalid value for '${where}.content': expected a string, got ${content}`;
  }
  if (!Array.isArray(content)) return `Invalid type for '${where}.content': expected a string or an array of parts`;
  const odd = (content as { type?: unknown; text?: unknown }[]).findIndex((part) => !(part?.type === "text" && typeof part.text === "string") && !(message.role === "user" && part?.type === "image_url"));
  return odd >= 0 ? `Invalid value for '${where}.content[${odd}]': a ${message.role} message takes text parts` : undefined;
}

/**
 * The calls the request's last tool messages answer must be the calls of a reply the replay
 * served: the same ids, names and arguments. Checked within the request, as replay.ts does.
 */
function unservedCalls(messages: ChatMessage[], served: Message[]): string | undefined {
  const last = messages.at(-1);
  if (last?.role !== "tool") return undefined;
  const calling = messages.slice().reverse().find((m) => m.role !== "tool") as ChatMessage;
  const calls = (calling.tool_calls as ChatCall[]).map((call) => ({ id: call.id, name: call.function?.name, input: parsed(call.function?.arguments as string) }));
  const wasServed = served.some((reply) => {
    const recorded = reply.content.flatMap((block) => (block.type === "tool_use" ? [{ id: block.id, name: block.name, input: block.input ?? {} }] : []));
    return isDeepStrictEqual(JSON.parse(JSON.stringify(recorded)), calls);
  });
  return wasServed ? undefined : `the tool calls [${calls.map((call) => call.id).join(", ")}] before the results are not in any reply the replay served`;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // never equal to a recorded input, which is an object
  }
}

const FINISH_REASONS: Record<string, string> = { tool_use: "tool_calls", end_turn: "stop", stop_sequence: "stop", max_tokens: "length", refusal: "content_filter" };

/**
 * A recorded Messages API reply as a Chat Completions reply: its text as the message's content,
 * its tool_use blocks as tool_calls (ids kept, input as a JSON string), its stop_reason as a
 * finish_reason, its usage as OpenAI counts it (cached tokens inside prompt_tokens). Thinking
 * blocks are left out: Chat Completions has no field for them.
 */
export function chatCompletionOf(reply: Message, index: number): object {
  const text = reply.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n\n");
  const calls = reply.content.flatMap((block) =>
    block.type === "tool_use" ? [{ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } }] : [],
  );
  const { input_tokens = 0, output_tokens = 0, cache_read_input_tokens, cache_creation_input_tokens } = reply.usage ?? {};
  const cached = cache_read_input_tokens ?? 0;
  const prompt = input_tokens + cached + (cache_creation_input_tokens ?? 0);
  return {
    id: `chatcmpl-replay-${index + 1}`,
    object: "chat.completion",
    created: 0,
    model: reply.model,
    choices: [{ index: 0, message: { role: "assistant", content: text || null, ...(calls.length > 0 ? { tool_calls: calls } : {}) }, finish_reason: FINISH_REASONS[reply.stop_reason ?? ""] ?? "stop", logprobs: null }],
    usage: { prompt_tokens: prompt, completion_tokens: output_tokens, total_tokens: prompt + output_tokens, prompt_tokens_details: { cached_tokens: cached } },
  };
}

/** A refusal in OpenAI's shape: a 400 the client reports at once. */
export function chatRefusal(problem: string): Response {
  return Response.json({ error: { message: `Replay: ${problem}`, type: "invalid_request_error", param: null, code: null } }, { status: 400 });
}
