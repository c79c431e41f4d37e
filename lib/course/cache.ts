// What a prompt cache would serve of a session's requests: the API's rule, simulated. The
// bench (scripts/bench.ts) runs it over every demo, and s14's tests check the demo's figures
// with it, so both use this one copy.
//
// The rule, as Anthropic's prompt-caching page states it
// (https://platform.claude.com/docs/en/build-with-claude/prompt-caching):
// - a request is read in this order: the tools, the system prompt, then the messages, block by
//   block; a prefix is everything up to the end of one block;
// - a request writes the prefix that ends at each of its breakpoints (a block with
//   `cache_control`), when that prefix is at least MIN_TOKENS long;
// - at each breakpoint it reads the longest prefix an earlier request wrote, looking back at most
//   LOOKBACK blocks from the breakpoint; what it read is cache_read, what it writes beyond that
//   (up to its last breakpoint) is cache_creation, and the rest is plain input; a request-level
//   `cache_control` is a breakpoint on the last block;
// - a prefix is the same only when every block in it is the same. `cache_control` itself is not
//   part of a block, and a message written as a string is its one text block. The model is part
//   of every prefix; `tool_choice` of the messages' (changing it keeps the tools and the system
//   prompt cached, as the page says).
// What it does not model: the cache's lifetime (5 minutes, renewed by each read: a replay sends
// its requests within a second), and real token counts: a block's tokens are estimated as the
// characters of its JSON divided by 4, so the figures are estimates, the shares close to real.
import { createHash } from "node:crypto";
import type { MessageCreateParams } from "@anthropic-ai/sdk/resources/messages";

export const CACHE_RULE = {
  /** The shortest prefix the API caches, in tokens (Claude Sonnet's; some models need more). */
  minTokens: 1024,
  /** How many blocks before a breakpoint the API looks for an earlier prefix. */
  lookback: 20,
  /** The estimate: characters of a block's JSON per token. */
  charsPerToken: 4,
};

/** What the API would count for one request, in estimated tokens. */
export interface CacheUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** A request as the cache sees it: its blocks in order, each prefix's identity, and where its breakpoints are. */
interface Prefixes {
  /** The identity of the prefix that ends with block i. */
  ids: string[];
  /** The tokens of the prefix that ends with block i. */
  tokens: number[];
  /** The blocks that carry cache_control. */
  breakpoints: number[];
}

type Json = Record<string, unknown>;

const withoutCacheControl = (block: Json): Json => {
  const { cache_control: _, ...rest } = block;
  // A tool result's own content blocks may carry a breakpoint too: it is not part of the content.
  if (Array.isArray(rest.content)) rest.content = (rest.content as Json[]).map((inner) => (typeof inner === "object" && inner !== null ? withoutCacheControl(inner) : inner));
  return rest;
};

const hasBreakpoint = (block: Json): boolean =>
  block.cache_control != null || (Array.isArray(block.content) && (block.content as Json[]).some((inner) => typeof inner === "object" && inner !== null && inner.cache_control != null));

/** The request's blocks in the order the cache reads them, with the identity of every prefix. */
function prefixesOf(request: MessageCreateParams): Prefixes {
  const blocks: { key: string; breakpoint: boolean }[] = [];
  const add = (part: string, block: Json) => blocks.push({ key: `${part} ${JSON.stringify(withoutCacheControl(block))}`, breakpoint: hasBreakpoint(block) });
  for (const tool of request.tools ?? []) add("tool", tool as unknown as Json);
  const system = typeof request.system === "string" ? [{ type: "text", text: request.system }] : (request.system ?? []);
  for (const block of system) add("system", block as unknown as Json);
  const choice = JSON.stringify(request.tool_choice ?? null);
  request.messages.forEach((message, i) => {
    const content = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
    content.forEach((block, j) => add(j === 0 ? `${i === 0 ? `tool_choice ${choice} ` : ""}${message.role}` : "+", block as unknown as Json));
  });
  // The request-level marker: the API puts it on the last block (the last that can take one; near enough).
  if ((request as { cache_control?: unknown }).cache_control != null && blocks.length > 0) blocks[blocks.length - 1].breakpoint = true;
  const ids: string[] = [];
  const tokens: number[] = [];
  let hash = createHash("sha256").update(`model ${request.model}`).digest("hex");
  let total = 0;
  for (const block of blocks) {
    hash = createHash("sha256").update(hash).update(block.key).digest("hex");
    total += block.key.length / CACHE_RULE.charsPerToken;
    ids.push(hash);
    tokens.push(Math.round(total));
  }
  return { ids, tokens, breakpoints: blocks.flatMap((block, i) => (block.breakpoint ? [i] : [])) };
}

/** Whether a request places any breakpoint of its own. */
export function hasBreakpoints(request: MessageCreateParams): boolean {
  return prefixesOf(request).breakpoints.length > 0;
}

/** The estimated tokens of a whole request: what it would cost with no cache at all. */
export function requestTokens(request: MessageCreateParams): number {
  return prefixesOf(request).tokens.at(-1) ?? 0;
}

/**
 * A cache that requests go through in order, as the API's would: `send` gives what the API
 * would count for a request (and writes what it writes), `ideal` what a perfect cache would
 * serve: the longest prefix any earlier request sent, breakpoints or not.
 */
export function promptCache(rule = CACHE_RULE) {
  const written = new Set<string>();
  const seen = new Set<string>();
  return {
    send(request: MessageCreateParams): CacheUsage {
      const { ids, tokens, breakpoints } = prefixesOf(request);
      const total = tokens.at(-1) ?? 0;
      let read = -1;
      for (const breakpoint of breakpoints) {
        for (let i = breakpoint; i >= Math.max(0, breakpoint - rule.lookback); i--) {
          if (written.has(ids[i])) {
            read = Math.max(read, i);
            break;
          }
        }
      }
      const readTokens = read >= 0 ? tokens[read] : 0;
      const last = breakpoints.at(-1);
      const writeTokens = last !== undefined && last > read && tokens[last] >= rule.minTokens ? tokens[last] - readTokens : 0;
      for (const breakpoint of breakpoints) if (tokens[breakpoint] >= rule.minTokens) written.add(ids[breakpoint]);
      for (const id of ids) seen.add(id);
      return { input_tokens: total - readTokens - writeTokens, cache_creation_input_tokens: writeTokens, cache_read_input_tokens: readTokens };
    },
    /** Call before `send` for the same request. */
    ideal(request: MessageCreateParams): number {
      const { ids, tokens } = prefixesOf(request);
      for (let i = ids.length - 1; i >= 0; i--) if (seen.has(ids[i])) return tokens[i];
      return 0;
    },
  };
}

/** Prices in US dollars per million tokens. */
export interface Price {
  input: number;
  output: number;
  cache_write: number;
  cache_read: number;
}

export interface CacheShare {
  requests: number;
  /** Estimated input tokens of every request, whole. */
  inputTokens: number;
  /** Of those, what the cache served (read), and what was written to it. */
  cacheRead: number;
  cacheWrite: number;
  /** What a perfect cache would have served: all but each request's new part. */
  ideal: number;
  /** cacheRead / inputTokens, ideal / inputTokens, cacheRead / ideal. */
  share: number;
  idealShare: number;
  ofIdeal: number;
  /** US dollars of the input, with the cache and without it, at `price`; null without a price. */
  costWith: number | null;
  costWithout: number | null;
}

/**
 * The share of a session's input tokens a cache would serve. `place` puts breakpoints on a
 * request (s14's placement, for a stage that places none); the requests are never changed.
 */
export function cacheShare(requests: MessageCreateParams[], options: { place?: (request: MessageCreateParams) => MessageCreateParams; price?: Price; rule?: typeof CACHE_RULE } = {}): CacheShare {
  const cache = promptCache(options.rule);
  let inputTokens = 0;
  let cacheRead = 0;
  let cacheWrite = 0;
  let ideal = 0;
  for (const sent of requests) {
    const request = options.place ? options.place(sent) : sent;
    ideal += cache.ideal(request);
    const usage = cache.send(request);
    inputTokens += usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
    cacheRead += usage.cache_read_input_tokens;
    cacheWrite += usage.cache_creation_input_tokens;
  }
  const { price } = options;
  const perMillion = (tokens: number, dollars: number) => (tokens * dollars) / 1e6;
  return {
    requests: requests.length,
    inputTokens,
    cacheRead,
    cacheWrite,
    ideal,
    share: inputTokens > 0 ? cacheRead / inputTokens : 0,
    idealShare: inputTokens > 0 ? ideal / inputTokens : 0,
    ofIdeal: ideal > 0 ? cacheRead / ideal : 1,
    costWith: price ? perMillion(inputTokens - cacheRead - cacheWrite, price.input) + perMillion(cacheWrite, price.cache_write) + perMillion(cacheRead, price.cache_read) : null,
    costWithout: price ? perMillion(inputTokens, price.input) : null,
  };
}
