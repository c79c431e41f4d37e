// The one replay engine. It stands in for the model's HTTP endpoint with msw: each request
// the agent loop sends gets the scenario's next recorded reply. The tests, the offline demo
// and the exercises all use it, so what a newcomer sees is what the tests check.
//
// It is strict on purpose: a request past the end of the scenario, a request whose tool
// results do not answer the tool calls just before them, or replies left over at the end
// are all problems, because each means the loop did not do what the recording expects. And
// it refuses what the real API refuses (apiProblem): an empty text block or message, a tool
// call left without its result anywhere in the history, more than 4 cache breakpoints.
import { createRequire } from "node:module";
import { isDeepStrictEqual } from "node:util";
import type { HttpHandler } from "msw";
import type { Message, MessageCreateParams } from "@anthropic-ai/sdk/resources/messages";
import { agentOf, type Scenario } from "./scenario.ts";
import { chatCompletionOf, chatProblem, chatRefusal, type ChatRequestBody } from "./chat-replay.ts";

// Only the parts of msw a replay uses, loaded with require for the reason lib/runtime/model.ts gives
// for the SDK. msw's main entry would also load its GraphQL support: the graphql package,
// over a hundred modules no replay needs, in every stage that replays. The answers are the
// platform's own Response, which msw takes as they are.
const require = createRequire(import.meta.url);
const { http } = require("msw/core/http") as typeof import("msw/core/http");
const { setupServer } = require("msw/node") as typeof import("msw/node");

export interface Replay {
  /** The request bodies the model received, in order. */
  readonly requests: MessageCreateParams[];
  /** The Chat Completions request bodies, in order (s15 with PROVIDER=openai; lib/course/chat-replay.ts). */
  readonly chatRequests: ChatRequestBody[];
  /** What went wrong so far, in words a learner can act on. */
  readonly problems: string[];
  /** How many recorded replies have not been asked for yet. */
  remaining(): number;
  /** Which recorded reply each request got (its index in the scenario), in request order; not in file order when agents run at once (s19). */
  readonly served: number[];
  /** Every problem, plus any replies left over; empty when the session matched the recording. */
  verdict(): string[];
}

/** msw handlers that answer the model's endpoint (and any scenario web pages) from a scenario. */
export function replayHandlers(scenario: Scenario, options: { streamPauseMs?: number } = {}): { handlers: HttpHandler[]; replay: Replay } {
  const requests: MessageCreateParams[] = [];
  const chatRequests: ChatRequestBody[] = [];
  const problems: string[] = [];
  const served: number[] = [];

  const replay: Replay = {
    requests,
    chatRequests,
    problems,
    served,
    remaining: () => scenario.replies.length - served.length,
    verdict: () => {
      const left = scenario.replies.length - served.length;
      return left > 0 ? [...problems, `${left} recorded ${left === 1 ? "reply was" : "replies were"} never asked for`] : [...problems];
    },
  };

  // Any host: the learner's ANTHROPIC_BASE_URL may point anywhere, the path is the same.
  const model = http.post("*/v1/messages", async ({ request }) => {
    const body = (await request.json()) as MessageCreateParams;
    requests.push(body);
    const number = served.length + 1;
    const index = nextReply(agentOf(body.system));
    if (typeof index === "string") return refuse(problems, `request ${number} ${index}`);
    const mismatch = unansweredCalls(body, served.map((i) => scenario.replies[i]));
    if (mismatch) return refuse(problems, `request ${number}: ${mismatch}`);
    const refused = apiProblem(body);
    if (refused) return refuse(problems, `request ${number}: the API would refuse it: ${refused}`);
    served.push(index);
    const headers = { "request-id": `req_replay_${number}` };
    const { agent: _agent, ...recorded } = scenario.replies[index]; // the scenario's own field, not the API's
    // A request that asks for a stream gets the same reply as the API would stream it.
    if (body.stream === true) return new Response(eventStream(recorded, 12, options.streamPauseMs), { headers: { ...headers, "content-type": "text/event-stream" } });
    return Response.json(recorded, { headers });
  });

  // s15 with PROVIDER=openai: the same replies, served as Chat Completions, any host as above.
  const chat = http.post("*/chat/completions", async ({ request }) => {
    const body = (await request.json()) as ChatRequestBody;
    chatRequests.push(body);
    const number = served.length + 1;
    const refuseChat = (problem: string) => (problems.push(problem), chatRefusal(problem));
    const system = (body.messages as { role?: string; content?: unknown }[] | undefined)?.find((message) => message?.role === "system")?.content;
    const index = nextReply(agentOf(system));
    if (typeof index === "string") return refuseChat(`request ${number} ${index}`);
    const refused = chatProblem(body, served.map((i) => scenario.replies[i]));
    if (refused) return refuseChat(`request ${number}: ${refused}`);
    served.push(index);
    return Response.json(chatCompletionOf(scenario.replies[index], number - 1), { headers: { "x-request-id": `req_replay_${number}` } });
  });

  /**
   * The next reply for a request from `agent` (undefined: the main agent): the first not yet
   * served that names that agent, or none. A string when there is none left, saying so.
   */
  function nextReply(agent: string | undefined): number | string {
    const index = scenario.replies.findIndex((reply, i) => reply.agent === agent && !served.includes(i));
    if (index >= 0) return index;
    const named = scenario.replies.some((reply) => reply.agent !== undefined);
    if (!named) return `came after the last recorded reply (${scenario.replies.length})`;
    return agent === undefined ? "came after the last recorded reply of the main agent" : `came from ${agent}, after ${agent}'s last recorded reply (or the scenario has none for ${agent})`;
  }

  const pages = Object.entries(scenario.web ?? {}).map(([url, page]) =>
    http.get(url, () =>
      new Response(page.body, {
        status: page.status ?? 200,
        headers: { "content-type": page.contentType ?? "text/html; charset=utf-8", ...page.headers },
      }),
    ),
  );

  return { handlers: [model, chat, ...pages], replay };
}

/**
 * The tool calls of the assistant message just before a request's last message must be
 * answered there, each in order, and that assistant message must be a reply the replay
 * served. This is checked within the request, not against the reply served last, because an
 * agent may hold more than one conversation: a subagent's requests (s10) come between its
 * parent's, and the parent's next request answers the parent's own calls.
 */
function unansweredCalls(body: MessageCreateParams, served: Message[]): string | undefined {
  const { messages } = body;
  const last = messages.at(-1);
  // The calls to answer: in the message before a final user message, or in a final assistant message (then unanswered).
  const calling = last?.role === "assistant" ? last : messages.length > 1 && messages.at(-2)?.role === "assistant" ? messages.at(-2) : undefined;
  const asked = calling ? idsOf(calling.content, "tool_use") : [];
  const answered = last?.role === "user" ? idsOf(last.content, "tool_result") : [];
  if (asked.length === 0 && answered.length === 0) return undefined;
  if (!calling) return `tool results for [${answered.join(", ")}] with no assistant message before them`;
  // JSON both ways: a reply is compared as the loop received it, over HTTP.
  const wasServed = served.some((reply) => isDeepStrictEqual(JSON.parse(JSON.stringify(reply.content)), calling.content));
  if (!wasServed) return `the tool calls [${asked.join(", ")}] before the results are not in any reply the replay served`;
  if (asked.join(",") === answered.join(",")) return undefined;
  return `expected tool results for [${asked.join(", ")}] in that order, got [${answered.join(", ")}]`;
}

/**
 * What the Messages API refuses in a request's history, in its words: a conversation that
 * does not start with the person, tool blocks in a request that declares no tools, a message
 * with no content (but a final assistant one), an empty text block, and a tool call whose
 * result is not in the next message. A loop that lets
 * one of these into its history has every later request refused. And the cache breakpoints
 * (s14): at most 4, and none on a block that cannot take one.
 */
export function apiProblem(body: MessageCreateParams): string | undefined {
  const { messages } = body;
  if (messages.length === 0) return "messages: at least one message is required";
  const breakpoints = breakpointProblem(body);
  if (breakpoints) return breakpoints;
  if (messages[0].role !== "user") return "messages: the first message must use the user role";
  const usesTools = messages.some((message) => Array.isArray(message.content) && message.content.some((block) => block.type === "tool_use" || block.type === "tool_result"));
  if (usesTools && !(body.tools && body.tools.length > 0)) return "Requests which include `tool_use` or `tool_result` blocks must define tools.";
  for (const [i, message] of messages.entries()) {
    const content = typeof message.content === "string" ? [{ type: "text" as const, text: message.content }] : message.content;
    const last = i === messages.length - 1;
    if (content.length === 0 && !(last && message.role === "assistant")) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    const empty = content.findIndex((block) => block.type === "text" && block.text.trim() === "");
    if (empty >= 0 && !(last && message.role === "assistant")) return `messages.${i}.content.${empty}.text: text content blocks must contain non-whitespace text`;
    if (message.role !== "assistant") continue;
    const calls = idsOf(message.content, "tool_use");
    const next = messages[i + 1];
    if (calls.length === 0 || !next) continue;
    const answered = next.role === "user" ? idsOf(next.content, "tool_result") : [];
    const missing = calls.filter((id) => !answered.includes(id));
    if (missing.length > 0) {
      return `messages.${i + 1}: tool_use ids were found without tool_result blocks immediately after: ${missing.join(", ")}. Each tool_use block must have a corresponding tool_result block in the next message`;
    }
  }
  return undefined;
}

/**
 * The API's rules for `cache_control`: a breakpoint is a tool, a system block or a content
 * block (one inside a tool result's content too) that carries one, and the request-level
 * `cache_control` (which marks the last block for you) is one more; at most 4 in a request. A
 * thinking block cannot take one, nor can a message itself.
 */
function breakpointProblem(body: MessageCreateParams): string | undefined {
  type Marked = { cache_control?: unknown; content?: unknown; type?: string };
  const marked = (item: unknown) => (item as Marked).cache_control != null;
  let count = marked(body) ? 1 : 0;
  for (const tool of body.tools ?? []) if (marked(tool)) count += 1;
  if (Array.isArray(body.system)) for (const block of body.system) if (marked(block)) count += 1;
  for (const [i, message] of body.messages.entries()) {
    if (marked(message)) return `messages.${i}.cache_control: Extra inputs are not permitted`;
    if (!Array.isArray(message.content)) continue;
    for (const [j, block] of (message.content as Marked[]).entries()) {
      if (marked(block) && (block.type === "thinking" || block.type === "redacted_thinking")) return `messages.${i}.content.${j}.${block.type}.cache_control: Extra inputs are not permitted`;
      if (marked(block)) count += 1;
      if (Array.isArray(block.content)) count += block.content.filter(marked).length;
    }
  }
  return count > 4 ? `A maximum of 4 blocks with cache_control may be provided. Found ${count}.` : undefined;
}

/** The ids of a message's tool_use blocks, or of its tool_result blocks. */
function idsOf(content: MessageCreateParams["messages"][number]["content"], type: "tool_use" | "tool_result"): string[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((b) => (b.type === "tool_use" && type === "tool_use" ? [b.id] : b.type === "tool_result" && type === "tool_result" ? [b.tool_use_id] : []));
}

function refuse(problems: string[], problem: string) {
  problems.push(problem);
  // A 400 with x-should-retry: false, so the SDK reports it at once instead of retrying.
  return Response.json(
    { type: "error", error: { type: "invalid_request_error", message: `Replay: ${problem}` } },
    { status: 400, headers: { "x-should-retry": "false" } },
  );
}

/**
 * A recorded reply as the Messages API streams it (server-sent events): message_start, then
 * each block's start, its deltas and its stop, then message_delta with the stop reason, and
 * message_stop. Text comes in pieces of a few words, a tool's input as pieces of its JSON: what
 * a client assembles from them is the reply as recorded, so every fixture serves a streaming
 * stage too.
 */
export function eventStream(reply: Message, pieceLength = 12, pauseMs = 0): ReadableStream<Uint8Array> {
  const events: [string, object][] = [];
  const { content, stop_reason, stop_sequence, usage } = reply;
  events.push(["message_start", { type: "message_start", message: { ...reply, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 0 } } }]);
  const pieces = (text: string) => (text.length === 0 ? [""] : Array.from({ length: Math.ceil(text.length / pieceLength) }, (_, i) => text.slice(i * pieceLength, (i + 1) * pieceLength)));
  content.forEach((block, index) => {
    const delta = (payload: object) => events.push(["content_block_delta", { type: "content_block_delta", index, delta: payload }]);
    if (block.type === "text") {
      events.push(["content_block_start", { type: "content_block_start", index, content_block: { ...block, text: "" } }]);
      for (const text of pieces(block.text)) delta({ type: "text_delta", text });
    } else if (block.type === "tool_use" || block.type === "server_tool_use") {
      events.push(["content_block_start", { type: "content_block_start", index, content_block: { ...block, input: {} } }]);
      for (const partial_json of pieces(JSON.stringify(block.input ?? {}))) delta({ type: "input_json_delta", partial_json });
    } else if (block.type === "thinking") {
      events.push(["content_block_start", { type: "content_block_start", index, content_block: { ...block, thinking: "", signature: "" } }]);
      for (const thinking of pieces(block.thinking)) delta({ type: "thinking_delta", thinking });
      delta({ type: "signature_delta", signature: block.signature });
    } else {
      events.push(["content_block_start", { type: "content_block_start", index, content_block: block }]); // whole, as the API sends it
    }
    events.push(["content_block_stop", { type: "content_block_stop", index }]);
  });
  events.push(["message_delta", { type: "message_delta", delta: { stop_reason, stop_sequence }, usage: { output_tokens: usage?.output_tokens ?? 0 } }]);
  events.push(["message_stop", { type: "message_stop" }]);
  const encoder = new TextEncoder();
  const encoded = events.map(([event, data]) => encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
  // `pauseMs` (the offline demo at a terminal): each delta a moment after the one before, as a model writes.
  if (pauseMs > 0) {
    return new ReadableStream({
      async pull(controller) {
        const [next, event] = [encoded.shift(), events.shift()];
        if (event?.[0] === "content_block_delta") await new Promise((resolve) => setTimeout(resolve, pauseMs));
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
  }
  return new ReadableStream({
    start(controller) {
      for (const chunk of encoded) controller.enqueue(chunk);
      controller.close();
    },
  });
}

export interface RunningReplay extends Replay {
  close(): void;
}

/**
 * Serve a scenario until close(). Requests the scenario does not cover fail instead of
 * reaching the network, unless `allowUnhandled` (a test that runs its own loopback server).
 */
export function startReplay(scenario: Scenario, options: { allowUnhandled?: boolean; streamPauseMs?: number } = {}): RunningReplay {
  const { handlers, replay } = replayHandlers(scenario, options);
  const server = setupServer(...handlers);
  server.listen({ onUnhandledRequest: options.allowUnhandled ? "bypass" : "error" });
  return { ...replay, close: () => server.close() };
}
