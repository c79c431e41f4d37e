// s14: what a session costs, and how caching cuts it. Each rule is a test in its own
// workspace, driving the stage's real loop with recorded replies and reading what the model
// received: every request carries three breakpoints (the last tool, the system prompt, the
// newest message's last block) on a copy, never in the loop's history; a cache that follows
// the API's rule (lib/course/cache.ts) then reads back, at each request, all the one before
// sent. After each turn one line gives its tokens and, for a model with a known price, its
// cost; /cost gives the session's. A bad MODEL_PRICES is one line at start.
import { PassThrough } from "node:stream";
import { writeFileSync } from "node:fs";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Message, MessageCreateParams, MessageCreateParamsNonStreaming, MessageParam, Tool } from "@anthropic-ai/sdk/resources/messages";
import { promptCache, requestTokens } from "../lib/course/cache.ts";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { reply, runMain, runTurns, scenarioOf, stageFile, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s14");
type Price = { input: number; output: number; cache_write: number; cache_read: number };
type Stage = {
  agentLoop(messages: MessageParam[]): Promise<void>;
  prepareReplay(): void;
  withBreakpoints(request: MessageCreateParamsNonStreaming): MessageCreateParamsNonStreaming;
  priceOf(model: string): Price | undefined;
  readModelPrices(text: string | undefined): { prices: Record<string, Price>; problem?: string };
  sessionTally(): { requests: number; input: number; output: number; cacheRead: number; cacheWrite: number };
  PRICES: Record<string, Price>;
  TOOLS: { name: string }[];
};
// As the tests run: no MODEL_ID, so the default model, claude-sonnet-5-5, whose price is in the table.
const stage = (await import(FILE)) as Stage;

/** The stage loaded afresh with these settings (read at load), for one test. */
async function stageWith(settings: Record<string, string>): Promise<Stage> {
  for (const [name, value] of Object.entries(settings)) vi.stubEnv(name, value);
  vi.resetModules();
  try {
    return (await import(FILE)) as Stage;
  } finally {
    vi.unstubAllEnvs();
  }
}

/** Where a request's breakpoints are: "tool <name>", "system <i>", "messages.<i>.<j>" (".<k>" inside a tool result). */
function breakpointsOf(request: MessageCreateParams): string[] {
  type Block = { cache_control?: unknown; content?: unknown };
  const places: string[] = [];
  for (const tool of request.tools ?? []) if ((tool as Block).cache_control) places.push(`tool ${(tool as Tool).name}`);
  if (Array.isArray(request.system)) request.system.forEach((block, i) => (block as Block).cache_control && places.push(`system ${i}`));
  request.messages.forEach((message, i) => {
    if ((message as Block).cache_control) places.push(`message ${i}`);
    if (!Array.isArray(message.content)) return;
    (message.content as Block[]).forEach((block, j) => {
      if (block.cache_control) places.push(`messages.${i}.${j}`);
      if (Array.isArray(block.content)) (block.content as Block[]).forEach((inner, k) => inner.cache_control && places.push(`messages.${i}.${j}.${k}`));
    });
  });
  return places;
}

/** A reply whose usage is `usage` (the API's field names). */
const costing = (message: Message, usage: Record<string, unknown> | undefined): Message => ({ ...message, usage }) as unknown as Message;
const read = (path: string, id?: string) => ({ name: "read_file", input: { path }, id });
const turnLines = (printed: string[]) => printed.filter((line) => line.startsWith("[this turn:"));

describe("s14 breakpoints", () => {
  useWorkspace();
  const replay = useReplay();
  usePrinted();
  beforeEach(() => stage.prepareReplay());

  it("adds no tool: the model sees s06's", () => {
    expect(stage.TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file"]);
  });

  it("every request carries three: the last tool, the system prompt, the newest message's last block", async () => {
    writeFileSync("a.txt", "A");
    writeFileSync("b.txt", "B");
    const session = replay(scenarioOf([reply.tools([read("a.txt"), read("b.txt")]), reply.text("read both"), reply.text("second answer")]));
    await runTurns(stage.agentLoop, ["prompt 1", "prompt 2"]);
    expect(session.verdict()).toEqual([]);
    expect(session.requests.map(breakpointsOf)).toEqual([
      ["tool edit_file", "system 0", "messages.0.0"], // the person's words, as one text block
      ["tool edit_file", "system 0", "messages.2.1"], // the last of the two results
      ["tool edit_file", "system 0", "messages.4.0"],
    ]);
    const [first] = session.requests;
    expect(first.system).toEqual([{ type: "text", text: expect.stringMatching(/^You are a coding agent/), cache_control: { type: "ephemeral" } }]);
    expect(first.messages[0].content).toEqual([{ type: "text", text: "prompt 1", cache_control: { type: "ephemeral" } }]);
  });

  it("on a copy: the loop's history never holds a marker, so a long session never passes the API's four", async () => {
    writeFileSync("a.txt", "A");
    const calls = Array.from({ length: 8 }, () => reply.tools([read("a.txt")]));
    const session = replay(scenarioOf([...calls, reply.text("done"), reply.text("again")]));
    const messages = await runTurns(stage.agentLoop, ["prompt 1", "prompt 2"]);
    expect(session.verdict()).toEqual([]); // the replay refuses a fifth breakpoint, as the API does
    expect(session.requests.map((request) => breakpointsOf(request).length)).toEqual(Array(10).fill(3));
    expect(JSON.stringify(messages)).not.toContain("cache_control");
    expect(messages[0]).toEqual({ role: "user", content: "prompt 1" }); // as the person typed it
  });

  it("withBreakpoints changes nothing it is given", () => {
    const request: MessageCreateParamsNonStreaming = {
      model: "m",
      max_tokens: 10,
      system: "the system prompt",
      tools: [{ name: "one", input_schema: { type: "object" } }, { name: "two", input_schema: { type: "object" } }],
      messages: [{ role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }],
    };
    const before = structuredClone(request);
    const marked = stage.withBreakpoints(request);
    expect(request).toEqual(before);
    expect(breakpointsOf(marked)).toEqual(["tool two", "system 0", "messages.0.1"]);
    expect(marked.messages[0].content).toEqual([{ type: "text", text: "a" }, { type: "text", text: "b", cache_control: { type: "ephemeral" } }]);
  });

  it("never on a block that cannot take one: a thinking block or an empty text; no system prompt or tools, no marker there", () => {
    const thinking = { type: "thinking" as const, thinking: "hmm", signature: "sig" };
    const ask = (content: MessageParam["content"], extra: Partial<MessageCreateParamsNonStreaming> = {}) =>
      breakpointsOf(stage.withBreakpoints({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "go" }, { role: "assistant", content }], ...extra }));
    expect(ask([{ type: "text", text: "a" }, { type: "tool_use", id: "t1", name: "bash", input: {} }, thinking])).toEqual(["messages.1.1"]);
    expect(ask([{ type: "text", text: "a" }, { type: "text", text: " " }])).toEqual(["messages.1.0"]);
    expect(ask([thinking], { system: "" })).toEqual([]); // nothing to mark: the request goes as it is
    expect(ask("words", { system: [{ type: "text", text: "one" }, { type: "text", text: "two" }] })).toEqual(["system 1", "messages.1.0"]);
  });

  it("a cache that follows the API's rule reads back, at each request from the third on, everything the one before sent", async () => {
    // Long enough to be cached: the API caches nothing under 1,024 tokens.
    writeFileSync("big.txt", "word ".repeat(2000));
    writeFileSync("a.txt", "A");
    const session = replay(scenarioOf([reply.tools([read("big.txt")]), reply.tools([read("a.txt")]), reply.tools([read("a.txt")]), reply.text("done"), reply.text("more")]));
    await runTurns(stage.agentLoop, ["prompt 1", "prompt 2"]);
    const cache = promptCache();
    const usage = session.requests.map((request) => cache.send(request));
    expect(usage[0]).toEqual({ input_tokens: requestTokens(session.requests[0]), cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    for (let i = 2; i < usage.length; i++) expect(usage[i].cache_read_input_tokens, `request ${i + 1}`).toBe(requestTokens(session.requests[i - 1]));
  });
});

describe("s14 accounting", () => {
  useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();
  beforeEach(() => stage.prepareReplay());

  it("after each turn, one line: its input, output, cache read and cache write, and its cost at the model's price", async () => {
    writeFileSync("a.txt", "A");
    replay(
      scenarioOf([
        costing(reply.tools([read("a.txt")]), { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 1000, cache_creation_input_tokens: 500 }),
        costing(reply.text("first"), { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2000, cache_creation_input_tokens: 50 }),
        costing(reply.text("second"), { input_tokens: 3, output_tokens: 40_000, cache_read_input_tokens: 1_234_567, cache_creation_input_tokens: 0 }),
      ]),
    );
    await runTurns(stage.agentLoop, ["prompt 1", "prompt 2"]);
    // claude-sonnet-5-5: $2 in, $10 out, $2.50 a cache write, $0.10 a cache read, per million tokens.
    expect(turnLines(printed)).toEqual([
      "[this turn: 110 in, 25 out, 3,000 cache read, 550 cache write; $0.0021]", // 220 + 250 + 300 + 1,375 millionths
      "[this turn: 3 in, 40,000 out, 1,234,567 cache read, 0 cache write; $0.5235]",
    ]);
    expect(stage.sessionTally()).toEqual({ requests: 3, input: 113, output: 40_025, cacheRead: 1_237_567, cacheWrite: 550 });
    expect(printed.at(-1)).toBe(turnLines(printed)[1]); // after the reply's text
  });

  it("a usage that is missing or no count adds nothing, and the line has no NaN", async () => {
    replay(scenarioOf([costing(reply.text("one"), undefined), costing(reply.text("two"), { input_tokens: -5, output_tokens: "many", cache_read_input_tokens: Number.NaN, cache_creation_input_tokens: null })]));
    await runTurns(stage.agentLoop, ["prompt 1", "prompt 2"]);
    expect(turnLines(printed)).toEqual(Array(2).fill("[this turn: 0 in, 0 out, 0 cache read, 0 cache write; $0.0000]"));
    expect(stage.sessionTally()).toMatchObject({ requests: 2, input: 0, output: 0 });
  });

  it("a turn that ended with an error is not counted in the next turn's line", async () => {
    // One reply only: the turn's second request is refused, and the turn ends with the error.
    replay(scenarioOf([costing(reply.tools([read("missing.txt")]), { input_tokens: 7, output_tokens: 7 })]));
    const messages: MessageParam[] = [{ role: "user", content: "prompt 1" }];
    await expect(stage.agentLoop(messages)).rejects.toThrow(/came after the last recorded reply/);
    replay(scenarioOf([costing(reply.text("ok"), { input_tokens: 1, output_tokens: 2 })]));
    messages.push({ role: "assistant", content: "sorry" }, { role: "user", content: "prompt 2" });
    await stage.agentLoop(messages);
    expect(turnLines(printed)).toEqual(["[this turn: 1 in, 2 out, 0 cache read, 0 cache write; $0.0000]"]);
    expect(stage.sessionTally()).toMatchObject({ requests: 2, input: 8, output: 9 });
  });

  it("prices: the table's row, a dated name takes its model's row; MODEL_PRICES adds models and replaces rows", () => {
    expect(stage.priceOf("claude-sonnet-5-5")).toEqual({ input: 2, output: 10, cache_write: 2.5, cache_read: 0.1 });
    expect(stage.priceOf("claude-haiku-4-5-20251001")).toBe(stage.PRICES["claude-haiku-4-5"]);
    for (const unknown of ["claude-haiku-4-5-x", "my-model", "toString", "__proto__"]) expect(stage.priceOf(unknown), unknown).toBeUndefined();
    const given = stage.readModelPrices(`{"my-model":{"input":1,"output":2,"cache_write":1.25,"cache_read":0},"claude-sonnet-5-5":{"input":9,"output":9,"cache_write":9,"cache_read":9}}`);
    expect(given.problem).toBeUndefined();
    expect(given.prices["my-model"]).toEqual({ input: 1, output: 2, cache_write: 1.25, cache_read: 0 });
    expect(given.prices["claude-sonnet-5-5"].input).toBe(9);
    expect(given.prices["claude-opus-5-5"]).toBe(stage.PRICES["claude-opus-5-5"]); // the rest of the table stays
  });

  it("MODEL_PRICES may name a model __proto__: a row like any other, and the table keeps its rows", () => {
    const price = { input: 1, output: 2, cache_write: 1.25, cache_read: 0.1 };
    const given = stage.readModelPrices(`{"__proto__":${JSON.stringify(price)},"m":${JSON.stringify(price)}}`);
    expect(given.problem).toBeUndefined();
    expect(Object.hasOwn(given.prices, "__proto__")).toBe(true);
    expect(given.prices["__proto__"]).toEqual(price);
    expect(Object.keys(given.prices)).toEqual([...Object.keys(stage.PRICES), "__proto__", "m"]);
  });

  it("a price too large to make a cost (1e308 dollars per million) is refused at start; under the limit, a long session's cost is a number", async () => {
    expect(stage.readModelPrices(`{"m":{"input":1e308,"output":1,"cache_write":1,"cache_read":1}}`).problem).toContain(`gives "m" no "input" from 0 to 10,000`);
    const top = await stageWith({ MODEL_ID: "m", MODEL_PRICES: `{"m":{"input":10000,"output":10000,"cache_write":10000,"cache_read":10000}}` });
    top.prepareReplay();
    replay(scenarioOf([costing(reply.text("big"), { input_tokens: 2_000_000, output_tokens: 128_000, cache_read_input_tokens: 1_000_000, cache_creation_input_tokens: 1_000_000 })]));
    await runTurns(top.agentLoop, ["go"]);
    expect(turnLines(printed)).toEqual(["[this turn: 2,000,000 in, 128,000 out, 1,000,000 cache read, 1,000,000 cache write; $41280.00]"]);
  });

  it.each([
    ["[1, 2]", "is not a JSON object of models"],
    ["{not json", "is not JSON ("],
    [`{"m":3}`, `gives "m" no object of prices`],
    [`{"m":{"input":1,"output":2,"cache_write":1}}`, `gives "m" no "cache_read" from 0 to 10,000`],
    [`{"m":{"input":-1,"output":2,"cache_write":1,"cache_read":0}}`, `gives "m" no "input" from 0 to 10,000`],
    [`{"m":{"input":"1","output":2,"cache_write":1,"cache_read":0}}`, `gives "m" no "input" from 0 to 10,000`],
    [`{"m":{"input":3,"output":1e308,"cache_write":1,"cache_read":0}}`, `gives "m" no "output" from 0 to 10,000`],
    [`{"m":{"input":1,"output":2,"cache_write":1,"cache_read":0,"cache_write_1h":2}}`, `gives "m" "cache_write_1h", which is not one of input, output, cache_write, cache_read`],
  ])("MODEL_PRICES=%s is refused: it %s", (text, why) => {
    const { problem, prices } = stage.readModelPrices(text);
    expect(problem).toContain(`MODEL_PRICES ${why}`);
    expect(problem).toMatch(/; give JSON such as \{"my-model":\{"input":3,"output":15,"cache_write":3.75,"cache_read":0.3\}\} \(dollars per million tokens\)$/);
    expect(problem).not.toContain("\n");
    expect(prices).toBe(stage.readModelPrices(undefined).prices); // nothing of it is taken
  });
});

describe("s14 settings and /cost, as a person uses them", () => {
  useWorkspace();
  const replay = useReplay();

  it("a bad MODEL_PRICES: one line at start, exit 1, nothing runs", async () => {
    vi.stubEnv("MODEL_PRICES", `{"my-model":{"input":3}}`);
    vi.resetModules();
    try {
      const { code, output } = await runMain(FILE);
      expect(code).toBe(1);
      expect(output).toBe(`[error] MODEL_PRICES gives "my-model" no "output" from 0 to 10,000; give JSON such as {"my-model":{"input":3,"output":15,"cache_write":3.75,"cache_read":0.3}} (dollars per million tokens)\n`);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("/cost: nothing yet, then the session's tokens, their cost, and the cost without the cache", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef");
    vi.resetModules();
    try {
      const usage = { input_tokens: 20, output_tokens: 100, cache_read_input_tokens: 9000, cache_creation_input_tokens: 1000 };
      replay(scenarioOf([costing(reply.text("first answer"), usage)]));
      const { code, output } = await runMain(FILE, [], { input: "/cost\nfirst\n/cost\n" });
      expect(code, output).toBe(0);
      expect(output).toContain("s14: Cost. Type a request (or /cost); q, exit or an empty line leaves.");
      expect(output).toContain("[no requests yet in this session]");
      expect(output).toContain("[this turn: 20 in, 100 out, 9,000 cache read, 1,000 cache write; $0.0044]");
      expect(output).toContain("Session: 1 request to claude-sonnet-5-5; 20 in, 100 out, 9,000 cache read, 1,000 cache write.");
      // With the cache: 40 + 1,000 + 900 + 2,500 millionths; without: (20 + 9,000 + 1,000) x 2 + 1,000.
      expect(output).toContain("Cost: $0.0044; without the cache $0.0210 (79% saved).");
      expect(output).toContain("Prices of claude-sonnet-5-5 per million tokens (as of 2026-10-24): input $2, output $10, cache write $2.5, cache read $0.1.");
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("a model with no known price: tokens only, and /cost says how to give one", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef");
    vi.stubEnv("MODEL_ID", "my-local-model");
    vi.resetModules();
    try {
      replay(scenarioOf([costing(reply.text("answer"), { input_tokens: 5, output_tokens: 6 })]));
      const { code, output } = await runMain(FILE, [], { input: "hello\n/cost\n" });
      expect(code, output).toBe(0);
      expect(output).toContain("[this turn: 5 in, 6 out, 0 cache read, 0 cache write]\n");
      expect(output).toContain(`No price is known for my-local-model: set MODEL_PRICES, e.g. {"my-local-model":{"input":3,"output":15,"cache_write":3.75,"cache_read":0.3}}`);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe("s14's demo", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();

  it("fixes the invoice and tests it; each turn's line adds up the recorded usage, which is the API's rule on the requests s14 sends", async () => {
    stage.prepareReplay();
    const scenario = loadScenario("s14");
    const session = await replayScenario(stage, scenario, { workspace: workspace.dir, output: new PassThrough() });
    expectWholeSession("s14", session, scenario);
    expect(session.requests.map((request) => breakpointsOf(request).length)).toEqual(Array(scenario.replies.length).fill(3));
    // The demo's usage was written with lib/course/cache.ts from these requests: it must still
    // be what that rule gives them, within 10% (the tools' own text may have changed a little).
    const cache = promptCache();
    session.requests.forEach((request, i) => {
      const recorded = scenario.replies[i].usage;
      const rule = cache.send(request);
      const again = `fixtures/s14/demo.json, reply ${i + 1}: the rule now gives ${JSON.stringify(rule)}`;
      for (const field of ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"] as const) {
        expect(Math.abs((recorded[field] ?? 0) - rule[field]), `${again} (${field})`).toBeLessThanOrEqual(Math.max(20, rule[field] * 0.1));
        expect((recorded[field] ?? 0) > 0, `${again} (${field})`).toBe(rule[field] > 0);
      }
    });
    // The first request is too short to cache; every later one reads what the one before wrote.
    expect(scenario.replies.map((r) => (r.usage.cache_read_input_tokens ?? 0) > 0)).toEqual([false, false, true, true, true, true, true]);
    expect(turnLines(printed)).toEqual([
      "[this turn: 621 in, 300 out, 3,375 cache read, 1,896 cache write; $0.0093]",
      "[this turn: 0 in, 272 out, 6,072 cache read, 366 cache write; $0.0042]",
    ]);
    expect(printed.join("\n")).toContain("  { subtotal: 9780, discount: 978, tax: 1672, total: 10474 }");
    expect(printed.join("\n")).toContain("  invoice.test.js: 2 checks passed");
  });
});
