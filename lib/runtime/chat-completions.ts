// The wire under s15's adapter: one OpenAI Chat Completions request, POSTed with plain `fetch`
// to {OPENAI_BASE_URL}/chat/completions, as lib/runtime/model.ts sends a Messages API request
// with the SDK. The translation both ways is the stage's lesson and lives in
// agents/s15_providers.ts; what is here is a lesson nowhere, the care any HTTP client needs:
// - a time limit for the whole request, the reply's body included (CHAT_LIMITS.seconds);
// - a cap on the reply's size, counted as the bytes arrive (CHAT_LIMITS.bytes), so a server
//   that never stops sending cannot fill the memory;
// - 408, 409, 429 and 5xx tried again, MAX_RETRIES times as the SDK does, after the time the
//   server asks for (retry-after) or a short backoff, and each retry said so; a model slow to
//   answer is said so every WAIT_NOTICE seconds;
// - every failure is one line that names OPENAI_BASE_URL and what came back, a reply whose
//   message is not text (or null) and a list of calls included.
// `fetch` is looked up at each request, so the replay (msw) can stand in for the server.
import { MAX_RETRIES, whileWaiting } from "./model.ts";

export interface ChatSettings {
  /** OPENAI_BASE_URL: the address before /chat/completions (OpenAI's is https://api.openai.com/v1). */
  baseURL: string;
  /** OPENAI_API_KEY, sent as a bearer token; none in a replay. */
  apiKey: string | undefined;
}

/** Seconds one request may take, its retries apart, and the bytes a reply may have. The SDK's own time limit is 10 minutes. */
export const CHAT_LIMITS = { seconds: 600, bytes: 10 * 1024 * 1024 };

/** POST `body`; resolves to the reply's JSON, checked to be a Chat Completions reply, or throws one line. */
export async function postChatCompletion(settings: ChatSettings, body: unknown, signal?: AbortSignal): Promise<unknown> {
  const url = `${settings.baseURL.replace(/\/+$/, "")}/chat/completions`;
  return whileWaiting(async () => {
    for (let attempt = 0; ; attempt++) {
      const { status, headers, text } = await post(url, settings, body, signal);
      const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
      if (retryable && attempt < MAX_RETRIES) {
        const seconds = retrySeconds(headers, attempt);
        const why = status === 429 ? "rate limited (429)" : `the provider answered ${status}`;
        console.log(`[${why}: trying again in ${inWords(seconds)}, attempt ${attempt + 2} of ${MAX_RETRIES + 1}]`);
        await sleep(seconds, signal);
        continue;
      }
      if (status < 200 || status > 299) throw new Error(`${status} from ${settings.baseURL}: ${errorMessage(text)}${HINTS[status] ?? (status >= 500 ? " (try again shortly)" : "")}.`);
      return chatReply(text, settings.baseURL);
    }
  });
}

const HINTS: Record<number, string> = {
  401: " (check OPENAI_API_KEY)",
  403: " (this key may not use that model)",
  404: " (check MODEL_ID, and OPENAI_BASE_URL: the address before /chat/completions)",
};

/** One attempt: the status, the headers and the whole body, within the time limit and the size cap. */
async function post(url: string, settings: ChatSettings, body: unknown, signal?: AbortSignal) {
  const timeout = AbortSignal.timeout(CHAT_LIMITS.seconds * 1000);
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (settings.apiKey) headers.authorization = `Bearer ${settings.apiKey}`;
  try {
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    return { status: response.status, headers: response.headers, text: await cappedText(response, url) };
  } catch (error) {
    if (signal?.aborted || error instanceof TooLarge) throw error;
    if (timeout.aborted) throw new Error(`${url} did not answer within ${CHAT_LIMITS.seconds} s: check OPENAI_BASE_URL, and whether the server is busy.`);
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`Could not reach ${url} (${cause?.code ?? cause?.message ?? (error as Error).message}): check OPENAI_BASE_URL, and that the server runs.`);
  }
}

class TooLarge extends Error {}

/** The body as text, read as it arrives and given up past CHAT_LIMITS.bytes. */
async function cappedText(response: Response, url: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > CHAT_LIMITS.bytes) {
      await reader.cancel();
      throw new TooLarge(`${url} sent more than ${CHAT_LIMITS.bytes / 1024 / 1024} MB, which is no Chat Completions reply: check OPENAI_BASE_URL.`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The reply's JSON when it is a Chat Completions reply (a first choice with a message); else one line saying what came. */
function chatReply(text: string, baseURL: string): unknown {
  let reply: { choices?: { message?: unknown }[] } | undefined;
  try {
    reply = JSON.parse(text);
  } catch {} // not JSON: said below
  const message = typeof reply === "object" && reply !== null && Array.isArray(reply.choices) ? reply.choices[0]?.message : undefined;
  const odd = typeof message === "object" && message !== null ? messageProblem(message) : "no message";
  if (!odd) return reply;
  const what = reply === undefined ? `text: ${JSON.stringify(text.trim().slice(0, 60))}` : odd !== "no message" ? odd : JSON.stringify(reply).slice(0, 60);
  throw new Error(`${baseURL} did not answer with a Chat Completions reply (it sent ${what}). Check OPENAI_BASE_URL: the address before /chat/completions.`);
}

/** What keeps a choice's message from being read (its content text or null, its tool_calls a list of calls, each naming its function), if anything. */
function messageProblem(message: { content?: unknown; tool_calls?: unknown }): string | undefined {
  const { content, tool_calls: calls } = message;
  if (content != null && typeof content !== "string") return `a message whose content is not text: ${JSON.stringify(content).slice(0, 60)}`;
  const isCall = (call: unknown) => typeof (call as { function?: { name?: unknown } } | null)?.function?.name === "string";
  if (calls != null && !(Array.isArray(calls) && calls.every(isCall))) return `a message whose tool_calls are not a list of calls: ${JSON.stringify(calls).slice(0, 60)}`;
  return undefined;
}

/** The server's own words from an error body ({"error": {"message": …}} in OpenAI's shape), or the start of the body. */
function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
    const message = typeof body.error === "string" ? body.error : (body.error?.message ?? body.message);
    if (message) return message.split("\n")[0].slice(0, 160);
  } catch {} // not JSON: the text itself
  return text.trim() ? JSON.stringify(text.trim().slice(0, 80)) : "an empty body";
}

/** The SDK's rule: retry-after-ms, or retry-after in seconds or as a date, when under a minute; else 0.5 s, 1 s, 2 s ... up to 8 s. */
function retrySeconds(headers: Headers, attempt: number): number {
  const ms = Number(headers.get("retry-after-ms"));
  const seconds = Number(headers.get("retry-after"));
  const date = Date.parse(headers.get("retry-after") ?? "");
  const asked = ms > 0 ? ms / 1000 : seconds > 0 ? seconds : date > Date.now() ? (date - Date.now()) / 1000 : undefined;
  return asked !== undefined && asked < 60 ? asked : Math.min(0.5 * 2 ** attempt, 8);
}

const inWords = (seconds: number) => (seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${Math.round(seconds * 10) / 10} s`);

/** Wait, unless the request is cancelled first (Ctrl-C). */
function sleep(seconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, seconds * 1000);
    signal?.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}
