/**
 * s14_cost.ts - Cost
 *
 * "Know what a session costs, and cache what repeats": every request repeats the one before, so mark where the repeat ends.
 *
 *   agentLoop: client.messages.create({ system, tools, messages })      the loop, unchanged
 *      |
 *      v   this stage's client, around each request
 *   +----------------------------------------------------------------------+
 *   | 1 withBreakpoints: a copy of the request, with cache_control on      |
 *   |     [ tool ... last tool* ] [ system* ] [ m1 ... mN: last block* ]   |
 *   |     three breakpoints (the API takes four); `messages` untouched     |
 *   | 2 the API reads the longest prefix an earlier request wrote, and     |
 *   |   writes the rest up to the last breakpoint: the next one reads it   |
 *   | 3 the reply's usage --> this turn's tally and the session's          |
 *   +----------------------------------------------------------------------+
 *      |   when the turn ends (endTurn), one line:
 *      v
 *   [this turn: 12 in, 412 out, 9,870 cache read, 1,204 cache write; $0.0071]
 *   /cost at the prompt: the session's tokens, their cost, and the cost without the cache
 *
 * New since s06: regions `breakpoints`, `prices`, `accounting` and `client`, first after the
 * config, and one line in `end-turn`. s06's registry, tools and approval step are imported
 * from agents/s06_tool_registry.ts; the loop is s06's, word for word.
 *
 *   npx tsx agents/s14_cost.ts       (no key: replays the recorded demo)
 *   MODEL_PRICES='{"my-model":{"input":3,"output":15,"cache_write":3.75,"cache_read":0.3}}' npx tsx agents/s14_cost.ts
 */
import type {
  ContentBlock, ContentBlockParam, Message, MessageCreateParamsNonStreaming, MessageParam, ToolResultBlockParam, ToolUseBlock,
} from "@anthropic-ai/sdk/resources/messages";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip } from "../lib/machinery/head-and-tail.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient, type ModelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import { APPROVAL_HELP, approve, MAX_OUTPUT, modeProblem, registry, TOOLS, workspace } from "./s06_tool_registry.ts";

// This stage adds no tool: the model sees s06's, from s06's registry.
export { registry, TOOLS };

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads the
// SDK at the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere. The loop's
// `client` (region `client`) hands its requests to this one with breakpoints placed.
const provider = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace (s06's: the directory the program runs in) is read at each call; so is the system prompt.
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// #endregion config

// #region breakpoints
// Every request carries the one before it whole, plus a little: the system prompt, the tools,
// every message so far. The API can keep what it has read (a prompt cache) and read it again
// for a tenth of the price, but only up to a breakpoint: a block marked with cache_control.
// The API reads a request in this order: tools, system, messages. A request writes the prefix
// that ends at each of its breakpoints; a later request that starts with exactly the same
// blocks reads it back, looking up to 20 blocks before each of its own breakpoints for one.
const CACHED = { type: "ephemeral" } as const; // 5 minutes, renewed by every read
// The API takes at most 4 breakpoints in a request; this stage places 3:
// - the last tool: the tools alone, kept if the system prompt changes;
// - the system prompt: the tools and the system prompt;
// - the last block of the newest message: everything, so the next request reads it all.

/** Where a breakpoint may go: the API refuses one on a thinking block, and on an empty text block. */
const cacheable = (block: ContentBlockParam) =>
  block.type !== "thinking" && block.type !== "redacted_thinking" && !(block.type === "text" && block.text.trim() === "");

/**
 * The request with its breakpoints, as a copy: `messages` is the loop's own history, and a
 * marker left in it would stay there for good, one more with every request, until the API
 * refuses the fifth.
 */
export function withBreakpoints(request: MessageCreateParamsNonStreaming): MessageCreateParamsNonStreaming {
  const marked = { ...request };
  const { tools, system, messages } = request;
  if (tools && tools.length > 0) marked.tools = [...tools.slice(0, -1), { ...tools[tools.length - 1], cache_control: CACHED }];
  const systemBlocks = typeof system === "string" ? (system ? [{ type: "text" as const, text: system }] : []) : (system ?? []);
  if (systemBlocks.length > 0) marked.system = [...systemBlocks.slice(0, -1), { ...systemBlocks[systemBlocks.length - 1], cache_control: CACHED }];
  const newest = messages[messages.length - 1];
  if (!newest) return marked;
  const content: ContentBlockParam[] = typeof newest.content === "string" ? [{ type: "text", text: newest.content }] : newest.content;
  let at = content.length - 1;
  while (at >= 0 && !cacheable(content[at])) at--;
  if (at < 0) return marked;
  const withMark = content.map((block, i) => (i === at ? ({ ...block, cache_control: CACHED } as ContentBlockParam) : block));
  marked.messages = [...messages.slice(0, -1), { ...newest, content: withMark } as MessageParam];
  return marked;
}
// #endregion breakpoints

// #region prices
/** US dollars per million tokens. A cache write costs 1.25 times the input price, a read a tenth or less. */
export interface Price {
  input: number;
  output: number;
  cache_write: number;
  cache_read: number;
}

// Anthropic's prices (platform.claude.com/docs/en/about-claude/pricing), as listed on the
// date below; cache_write is the 5-minute write, the one this stage asks for. Prices change:
// check the page, and set MODEL_PRICES. Haiku 5.5 is left out, since its price depends on the
// prompt's length.
export const PRICES_DATE = "2026-10-24";
export const PRICES: Record<string, Price> = {
  "claude-fable-5-1": { input: 10, output: 50, cache_write: 12.5, cache_read: 0.25 },
  "claude-opus-5-5": { input: 4, output: 20, cache_write: 5, cache_read: 0.2 },
  "claude-sonnet-5-5": { input: 2, output: 10, cache_write: 2.5, cache_read: 0.1 },
  "claude-opus-4-6": { input: 5, output: 25, cache_write: 6.25, cache_read: 0.5 },
  "claude-sonnet-4-6": { input: 3, output: 15, cache_write: 3.75, cache_read: 0.3 },
  "claude-haiku-4-5": { input: 1, output: 5, cache_write: 1.25, cache_read: 0.1 },
};

const PRICE_KEYS = ["input", "output", "cache_write", "cache_read"] as const;
/** The most a price may be, in dollars per million tokens: far above any model's, and low enough that a cost stays a number. */
const MAX_PRICE = 10_000;
const PRICES_EXAMPLE = `{"my-model":{"input":3,"output":15,"cache_write":3.75,"cache_read":0.3}}`;

/**
 * MODEL_PRICES, as JSON: `{ "<model>": { input, output, cache_write, cache_read } }`, dollars
 * per million tokens. Its models are added to the table, or replace a row of it. Read once at
 * start: anything wrong is one line then, never a surprise mid-session.
 */
export function readModelPrices(text: string | undefined): { prices: Record<string, Price>; given: string[]; problem?: string } {
  if (!text?.trim()) return { prices: PRICES, given: [] };
  const wrong = (why: string) => ({ prices: PRICES, given: [], problem: `MODEL_PRICES ${why}; give JSON such as ${PRICES_EXAMPLE} (dollars per million tokens)` });
  let given: unknown;
  try {
    given = JSON.parse(text);
  } catch (error) {
    return wrong(`is not JSON (${(error as Error).message})`);
  }
  if (typeof given !== "object" || given === null || Array.isArray(given)) return wrong("is not a JSON object of models");
  // No prototype: a model named "__proto__" is a row like any other, not the table's prototype.
  const prices: Record<string, Price> = Object.assign(Object.create(null), PRICES);
  for (const [model, price] of Object.entries(given)) {
    if (typeof price !== "object" || price === null || Array.isArray(price)) return wrong(`gives ${JSON.stringify(model)} no object of prices`);
    const extra = Object.keys(price).find((key) => !(PRICE_KEYS as readonly string[]).includes(key));
    if (extra) return wrong(`gives ${JSON.stringify(model)} "${extra}", which is not one of ${PRICE_KEYS.join(", ")}`);
    const bad = PRICE_KEYS.find((key) => {
      const value = (price as Record<string, unknown>)[key];
      return typeof value !== "number" || !(value >= 0 && value <= MAX_PRICE);
    });
    if (bad) return wrong(`gives ${JSON.stringify(model)} no "${bad}" from 0 to ${MAX_PRICE.toLocaleString("en-US")}`);
    prices[model] = price as Price;
  }
  return { prices, given: Object.keys(given) };
}

const modelPrices = readModelPrices(process.env.MODEL_PRICES);
export const pricesProblem = modelPrices.problem;

/** The row of a model's price: its name, or its name without a date (claude-haiku-4-5-20251001). */
const rowOf = (model: string) => [model, /^(.+)-\d{8}$/.exec(model)?.[1]].find((name) => name !== undefined && Object.hasOwn(modelPrices.prices, name));

/** The price of a model; undefined when neither the table nor MODEL_PRICES knows it. */
export const priceOf = (model: string): Price | undefined => {
  const row = rowOf(model);
  return row === undefined ? undefined : modelPrices.prices[row];
};

/** Where a model's price comes from, in words. */
const priceSource = (model: string) => (modelPrices.given.includes(rowOf(model) ?? "") ? "from MODEL_PRICES" : `as of ${PRICES_DATE}`);
// #endregion prices

// #region accounting
/** Tokens as the API counts them in a reply's usage: input is what neither came from nor went to the cache. */
export interface Tally {
  requests: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

const noTokens = (): Tally => ({ requests: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
let session = noTokens();
let turn = noTokens();

/** A count from a reply: a provider that leaves one out, or sends one that is no count, adds nothing. */
const tokens = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.round(value) : 0);

function addUsage(usage: Message["usage"] | undefined): void {
  for (const tally of [session, turn]) {
    tally.requests += 1;
    tally.input += tokens(usage?.input_tokens);
    tally.output += tokens(usage?.output_tokens);
    tally.cacheRead += tokens(usage?.cache_read_input_tokens);
    tally.cacheWrite += tokens(usage?.cache_creation_input_tokens);
  }
}

/** US dollars for a tally at a price; `cached: false` is what the same tokens cost with no cache at all. */
export function costOf(tally: Tally, price: Price, { cached = true } = {}): number {
  const read = cached ? price.cache_read : price.input;
  const write = cached ? price.cache_write : price.input;
  return (tally.input * price.input + tally.cacheRead * read + tally.cacheWrite * write + tally.output * price.output) / 1e6;
}

const count = (n: number) => n.toLocaleString("en-US");
const dollars = (amount: number) => `$${amount < 1 ? amount.toFixed(4) : amount.toFixed(2)}`;
const tokenLine = (tally: Tally) => `${count(tally.input)} in, ${count(tally.output)} out, ${count(tally.cacheRead)} cache read, ${count(tally.cacheWrite)} cache write`;

/** The line at the end of a turn: its tokens, and its cost when the model's price is known. */
function turnLine(): string {
  const price = priceOf(MODEL);
  return `[this turn: ${tokenLine(turn)}${price ? `; ${dollars(costOf(turn, price))}` : ""}]`;
}

/** `/cost` at the prompt: the session's totals, their cost, and what the cache saved. */
function costCommand(): void {
  if (session.requests === 0) return console.log("[no requests yet in this session]");
  const price = priceOf(MODEL);
  console.log(`Session: ${session.requests} request${session.requests === 1 ? "" : "s"} to ${MODEL}; ${tokenLine(session)}.`);
  if (!price) return console.log(`No price is known for ${MODEL}: set MODEL_PRICES, e.g. ${PRICES_EXAMPLE.replace("my-model", MODEL)}`);
  const [cached, uncached] = [costOf(session, price), costOf(session, price, { cached: false })];
  const saved = uncached > 0 ? Math.round((1 - cached / uncached) * 100) : 0;
  console.log(`Cost: ${dollars(cached)}; without the cache ${dollars(uncached)} (${saved >= 0 ? `${saved}% saved` : `${-saved}% more: writes not read back yet`}).`);
  console.log(dim(`Prices of ${MODEL} per million tokens (${priceSource(MODEL)}): input $${price.input}, output $${price.output}, cache write $${price.cache_write}, cache read $${price.cache_read}.`));
}

/** A new session starts at zero: the offline replay calls this before its first prompt. */
export function prepareReplay(): void {
  session = noTokens();
  turn = noTokens();
}

/** The session's totals so far, for tests and the exercise's checks. */
export const sessionTally = (): Readonly<Tally> => ({ ...session });
// #endregion accounting

// #region client
/**
 * The client the loop calls: it gets the loop's own request and returns the model's reply,
 * like the SDK's. In between: the breakpoints (on a copy), and the reply's usage counted.
 */
const client: ModelClient = {
  messages: {
    async create(request, options) {
      // A turn starts with the person's words; tool results (or a paused turn) carry one on.
      const newest = request.messages[request.messages.length - 1];
      const carriesOn = newest?.role === "assistant" || (Array.isArray(newest?.content) && newest.content.some((block) => block.type === "tool_result"));
      if (!carriesOn) turn = noTokens();
      const response = await provider.messages.create(withBreakpoints(request), options);
      addUsage(response.usage);
      return response;
    },
  },
};
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
  console.log(dim(turnLine())); // s14: what this turn used, and cost
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
export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s14",
    title: "Cost",
    agentLoop,
    prepareReplay,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem ?? pricesProblem,
    help: [
      APPROVAL_HELP,
      `  MODEL_PRICES            prices in dollars per million tokens, as JSON: ${PRICES_EXAMPLE}`,
      `                          (the table in agents/s14_cost.ts, as of ${PRICES_DATE}, knows ${Object.keys(PRICES).join(", ")})`,
    ],
    slashCommands: { "/cost": costCommand },
  });

if (isMain(import.meta.url)) await main();
// #endregion program
