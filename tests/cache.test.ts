// The prompt cache the bench and s14's tests simulate (lib/course/cache.ts): the API's rule as
// its page states it, case by case. A request writes the prefix that ends at each breakpoint
// (when it is long enough), and reads the longest prefix an earlier request wrote, looking back
// at most 20 blocks from each of its breakpoints; a prefix is the same only when every block in
// it is, whatever cache_control says.
import { describe, expect, it } from "vitest";
import type { MessageCreateParams, MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { CACHE_RULE, cacheShare, hasBreakpoints, promptCache, requestTokens } from "../lib/course/cache.ts";

const CACHED = { type: "ephemeral" } as const;
const anyLength = { ...CACHE_RULE, minTokens: 0 };
const SYSTEM = "You are a careful agent. ".repeat(40);
const TOOL = { name: "bash", description: "Run a command.", input_schema: { type: "object" as const } };

/** A request with a breakpoint on its tool, its system prompt and its last block; none with `marked: false`. */
function ask(messages: MessageParam[], { marked = true, system = SYSTEM, model = "m" } = {}): MessageCreateParams {
  const last = messages.at(-1)!;
  const blocks = typeof last.content === "string" ? [{ type: "text" as const, text: last.content }] : last.content;
  const newest = { ...last, content: blocks.map((block, i) => (i === blocks.length - 1 ? { ...block, cache_control: CACHED } : block)) } as MessageParam;
  return {
    model,
    max_tokens: 10,
    tools: [{ ...TOOL, ...(marked ? { cache_control: CACHED } : {}) }],
    system: [{ type: "text", text: system, ...(marked ? { cache_control: CACHED } : {}) }],
    messages: marked ? [...messages.slice(0, -1), newest] : messages,
  };
}
const user = (text: string): MessageParam => ({ role: "user", content: text });
const assistant = (text: string): MessageParam => ({ role: "assistant", content: text });

describe("the prompt cache (lib/course/cache.ts)", () => {
  it("writes a request up to its last breakpoint; the next request reads all of it and writes only what it adds", () => {
    const cache = promptCache(anyLength);
    const first = ask([user("one")]);
    const second = ask([user("one"), assistant("two"), user("three")]);
    expect(cache.send(first)).toEqual({ input_tokens: 0, cache_creation_input_tokens: requestTokens(first), cache_read_input_tokens: 0 });
    const usage = cache.send(second);
    expect(usage.cache_read_input_tokens).toBe(requestTokens(first));
    expect(usage.cache_creation_input_tokens).toBe(requestTokens(second) - requestTokens(first));
    expect(usage.input_tokens).toBe(0);
  });

  it("caches nothing under the shortest prefix (1,024 tokens by default): all of it is plain input", () => {
    const cache = promptCache();
    const short = ask([user("one")]);
    expect(requestTokens(short)).toBeLessThan(CACHE_RULE.minTokens);
    expect(cache.send(short)).toEqual({ input_tokens: requestTokens(short), cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    expect(cache.send(ask([user("one"), assistant("two"), user("three")])).cache_read_input_tokens).toBe(0);
  });

  it("reads only at a prefix an earlier request wrote, never mid-way: what follows the last breakpoint is plain input", () => {
    const cache = promptCache(anyLength);
    const unmarked = { ...ask([user("one")]), messages: [user("one")] }; // breakpoints on the tools and the system prompt only
    cache.send(unmarked);
    const usage = cache.send(ask([user("one"), assistant("two"), user("three")]));
    expect(usage.cache_read_input_tokens).toBe(requestTokens({ ...unmarked, messages: [] }));
  });

  it("a changed block ends the shared prefix: a different system prompt reads only the tools; another model reads nothing", () => {
    const cache = promptCache(anyLength);
    cache.send(ask([user("one")]));
    const tools = requestTokens({ model: "m", max_tokens: 10, tools: [TOOL], messages: [] });
    expect(cache.send(ask([user("one")], { system: "Another prompt. ".repeat(40) })).cache_read_input_tokens).toBe(tools);
    expect(cache.send(ask([user("one")], { model: "other" })).cache_read_input_tokens).toBe(0);
  });

  it("looks back at most 20 blocks from a breakpoint", () => {
    const results = (count: number): MessageParam => ({ role: "user", content: Array.from({ length: count }, (_, i) => ({ type: "text" as const, text: `result ${i}` })) });
    for (const [added, reads] of [[19, true], [21, false]] as const) {
      const cache = promptCache(anyLength);
      const first = ask([user("one")]);
      cache.send(first);
      const usage = cache.send(ask([user("one"), assistant("two"), results(added)]));
      expect(usage.cache_read_input_tokens > requestTokens({ ...first, messages: [] }), `${added} blocks added`).toBe(reads);
    }
  });

  it("a block is the same whatever cache_control says, and a message's string is its one text block", () => {
    const cache = promptCache(anyLength);
    const first = ask([user("one")]);
    cache.send(first);
    // The first message is a string now, and unmarked: the same prefix.
    expect(cache.send(ask([user("one"), assistant("two"), user("three")])).cache_read_input_tokens).toBe(requestTokens(first));
  });

  it("a request-level cache_control marks the last block", () => {
    const plain = { model: "m", max_tokens: 10, messages: [user("one")] };
    expect(hasBreakpoints(plain)).toBe(false);
    expect(hasBreakpoints({ ...plain, cache_control: CACHED } as MessageCreateParams)).toBe(true);
  });

  it("another tool_choice keeps the tools and the system prompt cached, not the messages", () => {
    const cache = promptCache(anyLength);
    const first = ask([user("one")]);
    cache.send(first);
    expect(cache.send({ ...ask([user("one")]), tool_choice: { type: "none" } }).cache_read_input_tokens).toBe(requestTokens({ ...first, messages: [] }));
  });

  it("the ideal is the longest prefix any earlier request sent, breakpoints or not; the share and the costs follow", () => {
    const noMarks = [ask([user("one")], { marked: false }), ask([user("one"), assistant("two"), user("three")], { marked: false })];
    const price = { input: 2, output: 10, cache_write: 2.5, cache_read: 0.1 };
    const share = cacheShare(noMarks, { price, rule: anyLength });
    expect(share).toMatchObject({ requests: 2, cacheRead: 0, cacheWrite: 0, ideal: requestTokens(noMarks[0]), share: 0, ofIdeal: 0 });
    expect(share.costWith).toBeCloseTo(share.costWithout!, 12);
    // With breakpoints placed on a copy of each request, the second reads all of the first.
    const placed = cacheShare(noMarks, { place: (request) => ask(request.messages), price, rule: anyLength });
    expect(placed).toMatchObject({ cacheRead: requestTokens(noMarks[0]), ofIdeal: 1 });
    expect(placed.costWith).toBeCloseTo((placed.cacheRead * 0.1 + placed.cacheWrite * 2.5) / 1e6, 12);
    expect(noMarks.some(hasBreakpoints)).toBe(false); // the requests themselves were not changed
  });
});
