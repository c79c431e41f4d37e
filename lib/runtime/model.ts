// The model's client: the official SDK, pointed at any Anthropic-compatible API, and careful
// about what comes back.
//
// Loading the SDK is the slowest thing a stage would do at start (hundreds of modules, most
// of a second under tsx), and a replay or a prompt should answer at once. So the SDK is
// loaded when the first request is made, not when the stage starts. The stage's loop calls
// `client.messages.create(...)` exactly as it would on the SDK's own client.
//
// It is loaded with `require`, the SDK's CommonJS build, not with `import`: on Node 20 each
// ES module a tsx program imports is handed to tsx's loader thread and back (about 3 ms
// each), and the SDK is some 300 modules with its one dependency. Required, they load in
// this thread as plain Node would: most of a second of processor less for every replay.
//
// Providers are not all the API. What this client smooths over, so the loop never has to
// (each seen from a real provider or gateway):
// - a reply that is not the API's JSON at all (a captive portal's HTML, a base URL that
//   answers with something else): one line that names ANTHROPIC_BASE_URL and what came;
// - an empty text block before a tool call, which the API refuses when it is sent back;
// - tool calls with stop_reason "end_turn" (a gateway's mapping): the calls still run, since
//   every tool_use in the history must get its result; calls in a refused reply (a provider's
//   content filter) never run, so they are dropped;
// - a reply with no content at all: an error for this turn, so nothing empty enters the
//   history and the next prompt still works;
// - retries (429, 529, 5xx) announced with how long the SDK waits, and a model that takes long
//   to answer said so every WAIT_NOTICE seconds, on a terminal or in a pipe.
//
// `events` (s13) sends the same request with `stream: true`, with the same settings, retries
// and notices, and gives the reply's raw events as they arrive: the stage assembles them. A
// stream that falls silent is said as a wait is, and one silent or large past STREAM_LIMITS
// is given up, so a provider that stalls or never stops cannot hold the program. What a stream
// may bring instead of the API's events is one line too: an answer that is no event stream,
// events out of the API's order or not JSON, an `error` event; a usage or delta left out is an
// empty one, and the stream ends at message_stop even when the provider keeps it open.
import { createRequire } from "node:module";
import type Anthropic from "@anthropic-ai/sdk";
import type { Message, MessageCreateParamsNonStreaming, RawMessageStreamEvent } from "@anthropic-ai/sdk/resources/messages";
import { visible } from "../machinery/display.ts";

export interface ModelClient {
  messages: {
    create(request: MessageCreateParamsNonStreaming, options?: { signal?: AbortSignal }): Promise<Message>;
  };
}

/** What modelClient gives: create, and (s13) the same request streamed, as the SDK's raw events. */
export interface ModelConnection {
  messages: ModelClient["messages"] & {
    /** Resolves when the stream opens (retries and notices as for create); the signal stops it at any time. */
    events(request: MessageCreateParamsNonStreaming, options?: { signal?: AbortSignal }): Promise<AsyncIterable<RawMessageStreamEvent>>;
  };
}

export interface ModelSettings {
  /** ANTHROPIC_API_KEY, sent as x-api-key. With no key and no token the program only replays: a placeholder is used and never sent. */
  apiKey: string | undefined;
  /** ANTHROPIC_AUTH_TOKEN, sent as a bearer token (OpenRouter, Ollama, LM Studio, Kimi and GLM ask for it). */
  authToken?: string | undefined;
  /** Another provider's address (ANTHROPIC_BASE_URL); undefined for Anthropic itself. */
  baseURL: string | undefined;
}

/** Retries of one request (after the first try), as the SDK does them. */
export const MAX_RETRIES = 2;
/** Seconds of waiting for a reply before the person is told, and then again every WAIT_NOTICE.every. */
export const WAIT_NOTICE = { first: 10, every: 30 };
/**
 * A streamed reply is given up after this many seconds without an event (the SDK's own limit for
 * a whole reply), or past this many bytes as they arrive, one endless line included (some 40
 * times what 8,000 tokens take, with the events' framing).
 */
export const STREAM_LIMITS = { silentSeconds: 600, bytes: 4_000_000 };

const require = createRequire(import.meta.url);

/** The SDK's CommonJS build. Its error classes come from the same build (see lib/runtime/program.ts). */
export function sdkModule(): typeof import("@anthropic-ai/sdk") {
  return require("@anthropic-ai/sdk");
}

export function modelClient(settings: ModelSettings): ModelConnection {
  let sdk: Promise<Anthropic> | undefined;
  const connect = async () => {
    if (settings.apiKey && settings.authToken) {
      throw new Error("both ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are set; a provider takes one of them: unset the other (for a bearer token, unset ANTHROPIC_API_KEY)");
    }
    const { default: Anthropic } = sdkModule();
    const credentials = settings.apiKey || settings.authToken;
    return new Anthropic({
      // null, not undefined: the SDK would otherwise read ANTHROPIC_API_KEY itself.
      apiKey: credentials ? (settings.apiKey ?? null) : "no-key-replay-only",
      authToken: settings.authToken ?? null,
      baseURL: settings.baseURL,
      maxRetries: MAX_RETRIES,
      // The SDK's own log would print an event it cannot parse raw and whole: the error says it, in one line.
      logLevel: "off",
      // Looked up at each request, so the replay (msw) can stand in for the API: the SDK
      // would otherwise keep the `fetch` it found when the client was made.
      fetch: async (url, init) => capped(announceRetry(await fetch(url, init), init)),
    });
  };
  const connection = () =>
    (sdk ??= connect().catch((error) => {
      sdk = undefined; // said once per request, until the settings are right
      throw error;
    }));
  return {
    messages: {
      create: async (request, options) => {
        const client = await connection();
        const reply: unknown = await whileWaiting(() => client.messages.create(request, options));
        return checkedReply(reply, settings.baseURL);
      },
      events: async (request, options) => {
        const client = await connection();
        const { data, response } = await whileWaiting(() => client.messages.create({ ...request, stream: true }, options).withResponse());
        // A provider that does not stream may answer whole (JSON), a wrong address with a page (HTML).
        const type = response.headers.get("content-type") ?? "";
        if (/json|html/.test(type)) {
          data.controller.abort();
          throw new Error(`${settings.baseURL || "the Anthropic API"} did not answer with an event stream (it sent ${type.split(";")[0]}). Check ANTHROPIC_BASE_URL; a provider that does not stream needs a stage that does not (s14).`);
        }
        return withinLimits(data);
      },
    },
  };
}

/** A reply as the loop may take it, or an error that says what came instead. */
export function checkedReply(reply: unknown, baseURL: string | undefined): Message {
  const message = reply as Message;
  if (typeof reply !== "object" || reply === null || !Array.isArray(message.content)) {
    const what = typeof reply === "string" ? `text: ${JSON.stringify(reply.trim().slice(0, 80))}` : JSON.stringify(reply)?.slice(0, 80) ?? String(reply);
    throw new Error(
      `${baseURL || "the Anthropic API"} did not answer with a Messages API reply (it sent ${what}). ` +
        "Check ANTHROPIC_BASE_URL: it is the provider's Anthropic-compatible address, without /v1/messages.",
    );
  }
  // An empty text block (some providers send one before a tool call) is refused when sent back.
  // A refused reply's calls never run, and a call in the history needs a result: they are dropped too.
  const refused = message.stop_reason === "refusal";
  const content = message.content.filter((block) => (block.type !== "text" || block.text.trim() !== "") && !(refused && block.type === "tool_use"));
  if (content.length === 0) {
    throw new Error(refused ? "the model declined to answer" : `the model sent an empty reply (stop_reason ${message.stop_reason})`);
  }
  // Calls the model made must run, whatever stop reason a gateway put on them; a reply cut off
  // (max_tokens, a full context window) keeps its reason, since a call in it may be incomplete.
  const calls = content.some((block) => block.type === "tool_use");
  const ended = message.stop_reason === "end_turn" || message.stop_reason === "stop_sequence" || message.stop_reason === null;
  const stopReason = calls && ended ? "tool_use" : message.stop_reason;
  return { ...message, content, stop_reason: stopReason };
}

/**
 * The SDK retries a 429, a 529 or a 5xx by itself, after the time the provider asks for
 * (retry-after) or a short backoff. Say so, with how long, so a wait is never silent.
 */
function announceRetry(response: Response, init: RequestInit | undefined): Response {
  const retryable = response.status === 408 || response.status === 409 || response.status === 429 || response.status >= 500;
  if (response.ok || !retryable || response.headers.get("x-should-retry") === "false") return response;
  const attempt = Number(new Headers(init?.headers).get("x-stainless-retry-count") ?? 0);
  if (attempt >= MAX_RETRIES) return response; // the SDK gives up now, and the error says why
  const why = response.status === 429 ? "rate limited (429)" : response.status === 529 ? "overloaded (529)" : `the provider answered ${response.status}`;
  console.log(`[${why}: trying again in ${retryDelay(response.headers, attempt)}, attempt ${attempt + 2} of ${MAX_RETRIES + 1}]`);
  return response;
}

/** How long the SDK will wait before it tries again, in words (its own rule: retry-after-ms, retry-after, else a short backoff). */
function retryDelay(headers: Headers, attempt: number): string {
  const ms = Number(headers.get("retry-after-ms"));
  const seconds = Number(headers.get("retry-after"));
  const date = Date.parse(headers.get("retry-after") ?? "");
  const wait = ms > 0 ? ms / 1000 : seconds > 0 ? seconds : date > Date.now() ? (date - Date.now()) / 1000 : undefined;
  if (wait === undefined) return `about ${Math.min(0.5 * 2 ** attempt, 8)} s`;
  if (wait < 1) return `${Math.round(wait * 1000)} ms`;
  return wait < 10 ? `${Math.round(wait * 10) / 10} s` : `${Math.round(wait)} s (as the provider asks; Ctrl-C stops waiting)`;
}

/**
 * A streamed body, given up past STREAM_LIMITS.bytes as it arrives: the SDK holds a line until
 * it ends, and a line that never ends would fill the memory.
 */
function capped(response: Response): Response {
  if (!response.body || !response.headers.get("content-type")?.includes("text/event-stream")) return response;
  let bytes = 0;
  const limit = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      bytes += chunk.length;
      if (bytes <= STREAM_LIMITS.bytes) return controller.enqueue(chunk);
      controller.error(new Error(`the model's reply grew past ${STREAM_LIMITS.bytes.toLocaleString("en")} bytes, so it was given up; nothing of it was kept`));
    },
  });
  return new Response(response.body.pipeThrough(limit), response);
}

/**
 * A stream's events as they come. While it is silent, the wait is said as a request's is; silent
 * past STREAM_LIMITS.silentSeconds it is aborted with an error that says so. Each event is
 * checked to come in the API's order, and the stream ends at message_stop. A consumer that stops
 * reading (Ctrl-C) ends the request too.
 */
async function* withinLimits(stream: AsyncIterable<RawMessageStreamEvent> & { controller: AbortController }): AsyncGenerator<RawMessageStreamEvent> {
  const events = stream[Symbol.asyncIterator]();
  let open: boolean[] | undefined; // from message_start on: whether block i has started and not stopped
  let timer: NodeJS.Timeout | undefined;
  try {
    while (true) {
      const silence = new Promise<never>((_, reject) => {
        const seconds = STREAM_LIMITS.silentSeconds;
        timer = setTimeout(() => reject(new Error(`the model's stream was silent for ${seconds} s, so it was given up; nothing of the reply was kept`)), seconds * 1000);
      });
      const next = await whileWaiting(() => Promise.race([events.next(), silence]));
      clearTimeout(timer);
      if (next.done) return;
      const event = next.value;
      if (outOfOrder(event, open)) {
        const block = "index" in event ? ` for block ${JSON.stringify(event.index)}` : "";
        throw new Error(`the model's stream sent ${visible(String(event.type)).slice(0, 40)}${block} out of the API's order, so it was given up; nothing of the reply was kept`);
      }
      if (event.type === "message_start") open = [];
      if (event.type === "content_block_start") open?.push(true);
      if (event.type === "content_block_stop" && open) open[event.index] = false;
      yield withDefaults(event);
      if (event.type === "message_stop") return; // the reply is whole, whether or not the provider closes the stream
    }
  } catch (error) {
    throw streamError(error);
  } finally {
    clearTimeout(timer);
    stream.controller.abort(); // ended, stopped or given up: the connection is not left open
  }
}

/** The API's order: message_start, then each block started at the next index, its deltas and its stop, then the message's end. */
function outOfOrder(event: RawMessageStreamEvent, open: boolean[] | undefined): boolean {
  if (event.type === "message_start") return open !== undefined || typeof event.message !== "object" || event.message === null;
  if (!open) return true;
  if (event.type === "content_block_start") return event.index !== open.length || typeof event.content_block !== "object" || event.content_block === null;
  if (event.type === "content_block_delta" || event.type === "content_block_stop") return open[event.index] !== true;
  return false;
}

/**
 * The fields a stage reads, there even when a provider leaves them out: a usage or a delta left
 * out is an empty one, and so is a text's text or a call's input in its block's start.
 */
function withDefaults(event: RawMessageStreamEvent): RawMessageStreamEvent {
  const object = (value: unknown) => (typeof value === "object" && value !== null ? value : {});
  if (event.type === "message_start") return { ...event, message: { ...event.message, usage: object(event.message.usage) as Message["usage"] } };
  if (event.type === "message_delta") return { ...event, delta: object(event.delta) as typeof event.delta, usage: object(event.usage) as typeof event.usage };
  if (event.type !== "content_block_start") return event;
  const block = event.content_block;
  if (block.type === "text" && typeof block.text !== "string") return { ...event, content_block: { ...block, text: "" } };
  if (block.type === "tool_use" && (typeof block.input !== "object" || block.input === null)) return { ...event, content_block: { ...block, input: {} } };
  return event;
}

/** An error of the stream in one line: an `error` event (overloaded mid-reply), or an event that is not JSON. */
function streamError(error: unknown): unknown {
  const { APIError } = sdkModule();
  if (error instanceof SyntaxError) return new Error("the model's stream sent an event that is not JSON, so it was given up; nothing of the reply was kept");
  if (!(error instanceof APIError) || error.status !== undefined || error.error === undefined) return error;
  const body = error.error as { error?: { type?: unknown; message?: unknown } } | undefined;
  const what = [body?.error?.type, body?.error?.message].filter((part) => typeof part === "string").join(": ") || JSON.stringify(error.error);
  return new Error(`the model's stream ended with an error (${visible(what.slice(0, 200))}); nothing of the reply was kept`);
}

/** Run `request`; while it has not answered, say every so often how long it has been. */
export async function whileWaiting<T>(request: () => Promise<T>): Promise<T> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const notice = (delay: number) => {
    timer = setTimeout(() => {
      console.log(`[waiting for the model: ${Math.round((Date.now() - started) / 1000)} s so far; Ctrl-C stops]`);
      notice(WAIT_NOTICE.every);
    }, delay * 1000);
    timer.unref();
  };
  notice(WAIT_NOTICE.first);
  try {
    return await request();
  } finally {
    clearTimeout(timer);
  }
}
