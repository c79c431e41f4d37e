// s15: one loop, any model. With PROVIDER=openai the client the loop calls is an adapter: it
// writes each request as Chat Completions and reads each reply back as the Messages API. The
// translation is tested both ways on exact JSON; the wire (path, bearer key, errors, retries,
// limits) against a fake Chat Completions server on 127.0.0.1; and whole sessions through the
// replay engine, which serves recorded replies as Chat Completions and refuses what OpenAI
// refuses. Without PROVIDER the stage is s06: the same demo, over the Messages API.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Message, MessageCreateParamsNonStreaming, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { chatCompletionOf, chatProblem } from "../lib/course/chat-replay.ts";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { describeProviderError } from "../lib/runtime/program.ts";
import { compareWithScenario } from "../.vitepress/transcript.ts";
import { reply, resultText, runMain, runTurns, scenarioOf, stageFile, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s15");
type Stage = {
  agentLoop(messages: MessageParam[]): Promise<void>;
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  toChatRequest(request: MessageCreateParamsNonStreaming): ChatBody;
  fromChatReply(reply: unknown): Message;
  NOT_JSON: string;
  TOOLS: { name: string }[];
  main(args?: string[]): Promise<never>;
};
type ChatBody = { model: string; messages: Record<string, unknown>[]; tools?: unknown[]; [field: string]: unknown };

const stage = (await import(FILE)) as Stage;

/** The stage loaded afresh with these settings (it reads them when it loads). */
async function stageWith(settings: Record<string, string>): Promise<Stage> {
  for (const [name, value] of Object.entries(settings)) vi.stubEnv(name, value);
  vi.resetModules();
  try {
    return (await import(FILE)) as Stage;
  } finally {
    vi.unstubAllEnvs();
  }
}

/**
 * The stage with PROVIDER=openai, and the replay it runs with: both from the same fresh copy of
 * lib, so the replay's scripted person answers at the terminal this stage asks at.
 */
async function inOpenAIMode() {
  const openai = await stageWith({ PROVIDER: "openai" });
  const { replayScenario: replayIn } = await import("../lib/course/session.ts");
  return { openai, replayIn };
}

// ---------------------------------------------------------------------------------------
// The two translations

const use = (id: string, name: string, input: Record<string, unknown>) => ({ type: "tool_use" as const, id, name, input });
const result = (id: string, content: string, isError?: boolean): ToolResultBlockParam => ({ type: "tool_result", tool_use_id: id, content, ...(isError ? { is_error: true } : {}) });
const READ = { name: "read_file", description: "Read a file.", input_schema: { type: "object" as const, properties: { path: { type: "string" } }, required: ["path"] } };

describe("s15 toChatRequest: the loop's request as Chat Completions", () => {
  it("writes the system prompt as a message, the tools as functions, the calls as tool_calls and each result as a tool message, in call order", () => {
    const chat = stage.toChatRequest({
      model: "gpt-test",
      max_tokens: 8000,
      system: "You are a coding agent.",
      tools: [READ],
      messages: [
        { role: "user", content: "Read a.txt and b.txt" },
        { role: "assistant", content: [{ type: "text", text: "Both at once." }, use("call_a", "read_file", { path: "a.txt" }), use("call_b", "read_file", { path: "b.txt" })] },
        { role: "user", content: [result("call_a", "A"), result("call_b", "Error: b.txt does not exist", true)] },
        { role: "assistant", content: [{ type: "text", text: "a.txt says A; b.txt is missing." }] },
      ],
    });
    expect(chat).toEqual({
      model: "gpt-test",
      max_completion_tokens: 8000,
      messages: [
        { role: "system", content: "You are a coding agent." },
        { role: "user", content: "Read a.txt and b.txt" },
        {
          role: "assistant",
          content: "Both at once.",
          tool_calls: [
            { id: "call_a", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } },
            { id: "call_b", type: "function", function: { name: "read_file", arguments: '{"path":"b.txt"}' } },
          ],
        },
        { role: "tool", tool_call_id: "call_a", content: "A" },
        { role: "tool", tool_call_id: "call_b", content: "Error: b.txt does not exist" },
        { role: "assistant", content: "a.txt says A; b.txt is missing." },
      ],
      tools: [{ type: "function", function: { name: "read_file", description: "Read a file.", parameters: READ.input_schema } }],
    });
  });

  it("gives an assistant message with only calls a null content, and says an error that does not say so itself", () => {
    const chat = stage.toChatRequest({
      model: "m",
      max_tokens: 10,
      tools: [READ],
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [use("c1", "read_file", {})] },
        { role: "user", content: [result("c1", "the person said no", true)] },
      ],
    });
    expect(chat.messages[1]).toEqual({ role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: "{}" } }] });
    expect(chat.messages[2]).toEqual({ role: "tool", tool_call_id: "c1", content: "Error: the person said no" });
  });

  it("gives an assistant message of thinking alone (or a server tool's blocks) a note for content: OpenAI refuses a null one with no calls", () => {
    const chat = stage.toChatRequest({
      model: "m",
      max_tokens: 10,
      messages: [
        { role: "user", content: "a" },
        { role: "assistant", content: [{ type: "thinking", thinking: "hmm", signature: "sig" }] },
        { role: "user", content: "b" },
        { role: "assistant", content: [{ type: "redacted_thinking", data: "xyz" }, { type: "thinking", thinking: "more", signature: "sig" }, { type: "text", text: "Said." }] },
        { role: "user", content: "c" },
      ],
    });
    expect(chat.messages[1]).toEqual({ role: "assistant", content: "[a thinking block was left out: Chat Completions cannot carry it here]" });
    expect(chat.messages[3]).toEqual({ role: "assistant", content: "Said." });
    expect(chatProblem(chat)).toBeUndefined();
  });

  it("puts text sent beside results after the tool messages, and leaves out what Chat Completions cannot carry, with a note", () => {
    const chat = stage.toChatRequest({
      model: "m",
      max_tokens: 10,
      system: [{ type: "text", text: "one" }, { type: "text", text: "two" }],
      tools: [READ],
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "thinking", thinking: "hmm", signature: "sig" }, use("c1", "read_file", { path: "x.png" })] },
        {
          role: "user",
          content: [
            { type: "text", text: "and hurry" },
            { type: "tool_result", tool_use_id: "c1", content: [{ type: "text", text: "a picture:" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] },
          ],
        },
      ],
    } as MessageCreateParamsNonStreaming);
    expect(chat.messages).toEqual([
      { role: "system", content: "one\n\ntwo" },
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: '{"path":"x.png"}' } }] }, // no thinking
      { role: "tool", tool_call_id: "c1", content: "a picture:\n\n[a image block was left out: Chat Completions cannot carry it here]" },
      { role: "user", content: "and hurry" },
    ]);
  });

  it.each([
    [{ type: "none" }, "none"],
    [{ type: "any" }, "required"],
    [{ type: "auto" }, "auto"],
    [{ type: "tool", name: "read_file" }, { type: "function", function: { name: "read_file" } }],
  ])("writes tool_choice %j as %j (s11's summary request sends none)", (choice, chat) => {
    const request = { model: "m", max_tokens: 10, tools: [READ], tool_choice: choice, messages: [{ role: "user" as const, content: "x" }] } as MessageCreateParamsNonStreaming;
    expect(stage.toChatRequest(request).tool_choice).toEqual(chat);
  });

  it("refuses a server tool clearly: no Chat Completions server would run it", () => {
    const request = { model: "m", max_tokens: 10, messages: [{ role: "user" as const, content: "x" }], tools: [{ type: "web_search_20250305", name: "web_search" }] } as MessageCreateParamsNonStreaming;
    expect(() => stage.toChatRequest(request)).toThrow("web_search_20250305 is a server tool of the Messages API; Chat Completions has none, so PROVIDER=openai cannot offer it");
  });
});

const chatReply = (message: Record<string, unknown>, finish_reason: string | null = "stop", usage?: Record<string, unknown>) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  model: "gpt-test",
  choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason }],
  ...(usage ? { usage } : {}),
});
const callOf = (id: string, name: string, args: unknown) => ({ id, type: "function", function: { name, arguments: args } });

describe("s15 fromChatReply: a Chat Completions reply as the Messages API", () => {
  it("reads the text and the calls, ids kept and arguments parsed, and maps the usage (cached tokens apart)", () => {
    const message = stage.fromChatReply(
      chatReply({ content: "Reading it.", tool_calls: [callOf("call_1", "read_file", '{"path":"a.txt"}')] }, "tool_calls", { prompt_tokens: 1200, completion_tokens: 30, prompt_tokens_details: { cached_tokens: 1000 } }),
    );
    expect(message).toEqual({
      id: "chatcmpl-1",
      type: "message",
      role: "assistant",
      model: "gpt-test",
      content: [{ type: "text", text: "Reading it." }, { type: "tool_use", id: "call_1", name: "read_file", input: { path: "a.txt" } }],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 200, output_tokens: 30, cache_read_input_tokens: 1000, cache_creation_input_tokens: null },
    });
  });

  it.each([
    ["tool_calls", "tool_use"],
    ["stop", "end_turn"],
    ["length", "max_tokens"],
    ["content_filter", "refusal"],
    [null, "end_turn"],
    ["eos", "end_turn"],
  ])("maps finish_reason %s to stop_reason %s", (finish, stop) => {
    expect(stage.fromChatReply(chatReply({ content: "x" }, finish)).stop_reason).toBe(stop);
  });

  it.each([
    ['{"path": "a.txt"', "cut off"],
    ["{path: 'a.txt'}", "not JSON"],
    ['["a.txt"]', "JSON, but not an object"],
    ["null", "JSON null"],
  ])("keeps arguments that are not a JSON object (%s, %s) under NOT_JSON, and never throws", (args) => {
    const [call] = stage.fromChatReply(chatReply({ tool_calls: [callOf("c", "read_file", args)] }, "tool_calls")).content;
    expect(call).toEqual({ type: "tool_use", id: "c", name: "read_file", input: { [stage.NOT_JSON]: args } });
  });

  it("gives a call the provider sent without an id one of its own, so its result can answer it", () => {
    const { content } = stage.fromChatReply(chatReply({ tool_calls: [{ type: "function", function: { name: "bash", arguments: '{"command":"ls"}' } }] }, "tool_calls"));
    expect((content[0] as ToolUseBlock).id).toMatch(/^call_unnamed_\d+$/);
  });

  it("takes empty arguments as no arguments, and arguments sent as an object as they are", () => {
    const { content } = stage.fromChatReply(chatReply({ tool_calls: [callOf("c1", "bash", ""), callOf("c2", "bash", { command: "ls" })] }, "tool_calls"));
    expect(content.map((block) => (block as ToolUseBlock).input)).toEqual([{}, { command: "ls" }]);
  });
});

describe("s15 runTool: arguments that were not JSON", () => {
  useWorkspace();
  const printed = usePrinted();

  it("are an is_error result that quotes them and asks for the call again; nothing runs", async () => {
    const [call] = stage.fromChatReply(chatReply({ tool_calls: [callOf("c_bad", "write_file", '{"path": "x.txt", "content": "hi}')] }, "tool_calls")).content;
    const answer = await stage.runTool(call as ToolUseBlock);
    expect(answer).toEqual({
      type: "tool_result",
      tool_use_id: "c_bad",
      is_error: true,
      content: 'Error: write_file was not run: its arguments are not a JSON object ("{\\"path\\": \\"x.txt\\", \\"content\\": \\"hi}"). Send the call again with valid JSON arguments.',
    });
    expect(printed.join("\n")).toContain("Error: write_file was not run");
  });
});

// ---------------------------------------------------------------------------------------
// The wire: a fake Chat Completions server on 127.0.0.1

type Answer = { status?: number; headers?: Record<string, string>; body: unknown; delayMs?: number };
type Received = { url: string; headers: http.IncomingHttpHeaders; body: ChatBody };

/** A Chat Completions server on loopback: each request gets the next answer, and is refused as OpenAI would refuse it. */
function useFakeServer() {
  let server: http.Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });
  return async (answers: Answer[]) => {
    const received: Received[] = [];
    server = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString()) as ChatBody;
      received.push({ url: req.url ?? "", headers: req.headers, body });
      const refused = chatProblem(body) ?? (req.url === "/v1/chat/completions" ? undefined : `no such path ${req.url}`);
      const answer: Answer = refused ? { status: 400, body: { error: { message: refused } } } : (answers.shift() ?? { status: 400, body: { error: { message: "no answer left" } } });
      if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
      res.writeHead(answer.status ?? 200, { "content-type": typeof answer.body === "string" ? "text/html" : "application/json", ...answer.headers });
      res.end(typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const openai = await stageWith({ PROVIDER: "openai", OPENAI_BASE_URL: url, OPENAI_API_KEY: "sk-test-123", MODEL_ID: "gpt-test", APPROVAL_MODE: "yolo" });
    return { url, received, openai };
  };
}

describe("s15 with PROVIDER=openai, against a Chat Completions server", () => {
  useWorkspace();
  const printed = usePrinted();
  const fake = useFakeServer();

  it("POSTs {OPENAI_BASE_URL}/chat/completions with the key as a bearer token and MODEL_ID, and runs the calls it gets back", async () => {
    const { received, openai } = await fake([
      { body: chatReply({ content: null, tool_calls: [callOf("call_1", "write_file", '{"path":"hi.txt","content":"hi"}')] }, "tool_calls") },
      { body: chatReply({ content: "Wrote hi.txt." }) },
    ]);
    const messages = await runTurns(openai.agentLoop, ["Write hi.txt"]);
    expect(received.map((r) => r.url)).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
    expect(received[0].headers.authorization).toBe("Bearer sk-test-123");
    expect(received[0].headers["content-type"]).toBe("application/json");
    const first = received[0].body;
    expect(first).toMatchObject({ model: "gpt-test", max_completion_tokens: 8000 });
    expect(first.messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect((first.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(["bash", "read_file", "write_file", "edit_file"]);
    expect(received[1].body.messages.slice(2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "write_file", arguments: '{"path":"hi.txt","content":"hi"}' } }] },
      { role: "tool", tool_call_id: "call_1", content: expect.stringMatching(/^Wrote 2 bytes to hi\.txt/) },
    ]);
    expect(messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "Wrote hi.txt." }] });
    expect(printed.filter((line) => line.includes("chat/completions"))).toEqual([
      "  [chat/completions: 2 messages out; finish_reason tool_calls, 1 tool_calls back]",
      "  [chat/completions: 4 messages out; finish_reason stop, 0 tool_calls back]",
    ]);
  });

  it("answers broken arguments with an error the model reads, and the corrected call runs: nothing crashes", async () => {
    const { received, openai } = await fake([
      { body: chatReply({ tool_calls: [callOf("call_bad", "write_file", '{"path": "a.txt", "content": "A')] }, "tool_calls") },
      { body: chatReply({ content: "Sorry, again:", tool_calls: [callOf("call_good", "write_file", '{"path":"a.txt","content":"A"}')] }, "tool_calls") },
      { body: chatReply({ content: "Done." }) },
    ]);
    await runTurns(openai.agentLoop, ["Write a.txt"]);
    const second = received[1].body.messages;
    expect(second.at(-2)).toEqual({ role: "assistant", content: null, tool_calls: [{ id: "call_bad", type: "function", function: { name: "write_file", arguments: JSON.stringify({ [stage.NOT_JSON]: '{"path": "a.txt", "content": "A' }) } }] });
    expect(second.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_bad", content: expect.stringMatching(/^Error: write_file was not run: its arguments are not a JSON object/) });
    expect(received[2].body.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_good", content: expect.stringMatching(/^Wrote 1 byte/) });
  });

  it("retries a 429 and a 500, saying so, as lib does for the Messages API", async () => {
    const { received, openai } = await fake([
      { status: 429, headers: { "retry-after-ms": "20" }, body: { error: { message: "slow down" } } },
      { status: 500, headers: { "retry-after": "0.05" }, body: { error: { message: "oops" } } },
      { body: chatReply({ content: "at last" }) },
    ]);
    await runTurns(openai.agentLoop, ["hi"]);
    expect(received).toHaveLength(3);
    expect(printed.slice(0, 2)).toEqual(["[rate limited (429): trying again in 20 ms, attempt 2 of 3]", "[the provider answered 500: trying again in 50 ms, attempt 3 of 3]"]);
  });

  it("gives up after the retries with one line naming the status and the server's words", async () => {
    const overloaded = { status: 503, headers: { "retry-after-ms": "5" }, body: { error: { message: "Service Unavailable" } } };
    const { url, received, openai } = await fake([overloaded, overloaded, overloaded]);
    const error = await runTurns(openai.agentLoop, ["hi"]).catch((e: Error) => e);
    expect(received).toHaveLength(3);
    expect(describeProviderError(error)).toBe(`[error] 503 from ${url}: Service Unavailable (try again shortly).`);
  });

  it.each([
    [401, { error: { message: "Incorrect API key provided" } }, "401 from URL: Incorrect API key provided (check OPENAI_API_KEY)."],
    [404, { error: { message: "The model `gpt-test` does not exist" } }, "404 from URL: The model `gpt-test` does not exist (check MODEL_ID, and OPENAI_BASE_URL: the address before /chat/completions)."],
    [200, "<!DOCTYPE html><title>Log in to the Wi-Fi</title>", 'URL did not answer with a Chat Completions reply (it sent text: "<!DOCTYPE html><title>Log in to the Wi-Fi</title>"). Check OPENAI_BASE_URL: the address before /chat/completions.'],
    [200, { type: "message", content: [] }, 'URL did not answer with a Chat Completions reply (it sent {"type":"message","content":[]}). Check OPENAI_BASE_URL: the address before /chat/completions.'],
  ])("says a %i answer in one line that names what to check", async (status, body, words) => {
    const { url, openai } = await fake([{ status, body }]);
    const error = await runTurns(openai.agentLoop, ["hi"]).catch((e: Error) => e);
    expect(describeProviderError(error)).toBe(`[error] ${words.replace("URL", url)}`);
  });

  it("makes an empty reply an error for the turn, so nothing empty enters the history", async () => {
    const { openai } = await fake([{ body: chatReply({ content: "" }) }]);
    const messages: MessageParam[] = [{ role: "user", content: "hi" }];
    await expect(openai.agentLoop(messages)).rejects.toThrow("the model sent an empty reply (stop_reason end_turn)");
    expect(messages).toHaveLength(1);
  });

  it("stops a request at the time limit, and a reply at the size cap, each with one line", async () => {
    // The limits of the copy of lib the stage loaded with (stageWith loads both afresh).
    const limits = async () => (await import("../lib/runtime/chat-completions.ts")).CHAT_LIMITS;
    const slow = await fake([{ body: chatReply({ content: "late" }), delayMs: 2000 }]);
    Object.assign(await limits(), { seconds: 0.1 });
    const late = await runTurns(slow.openai.agentLoop, ["hi"]).catch((e: Error) => e);
    expect(describeProviderError(late)).toBe(`[error] ${slow.url}/chat/completions did not answer within 0.1 s: check OPENAI_BASE_URL, and whether the server is busy.`);
    const big = await fake([{ body: chatReply({ content: "x".repeat(5000) }) }]);
    Object.assign(await limits(), { bytes: 1000 });
    const tooBig = await runTurns(big.openai.agentLoop, ["hi"]).catch((e: Error) => e);
    expect(describeProviderError(tooBig)).toBe(`[error] ${big.url}/chat/completions sent more than ${1000 / 1024 / 1024} MB, which is no Chat Completions reply: check OPENAI_BASE_URL.`);
  });

  it.each([
    ["content as a list of parts", { content: [{ type: "text", text: "hi" }] }, 'a message whose content is not text: [{"type":"text","text":"hi"}]'],
    ["content as a number", { content: 5 }, "a message whose content is not text: 5"],
    ["tool_calls as an object", { tool_calls: { id: "c1" } }, 'a message whose tool_calls are not a list of calls: {"id":"c1"}'],
    ["a tool call that is null", { tool_calls: [null] }, "a message whose tool_calls are not a list of calls: [null]"],
    ["a tool call whose function has no name", { tool_calls: [{ id: "c1", type: "function", function: { name: 7, arguments: "{}" } }] }, 'a message whose tool_calls are not a list of calls: [{"id":"c1","type":"function","function":{"name":7,"argument'],
  ])("says a reply whose message is not Chat Completions' (%s) in one line that names what came", async (_, message, what) => {
    const { url, openai } = await fake([{ body: chatReply(message, "tool_calls") }]);
    const messages: MessageParam[] = [{ role: "user", content: "hi" }];
    const error = await openai.agentLoop(messages).catch((e: Error) => e);
    expect((error as Error).message).toBe(`${url} did not answer with a Chat Completions reply (it sent ${what}). Check OPENAI_BASE_URL: the address before /chat/completions.`);
    expect(messages).toHaveLength(1);
  });

  it("gives a call whose id is no text, or an id already used in the reply, one of its own: the next request is one OpenAI takes", async () => {
    const { received, openai } = await fake([
      { body: chatReply({ tool_calls: [callOf("call_1", "bash", '{"command":"echo a"}'), callOf("call_1", "bash", '{"command":"echo b"}'), { ...callOf("x", "bash", '{"command":"echo c"}'), id: 7 }] }, "tool_calls") },
      { body: chatReply({ content: "Three." }) },
    ]);
    const messages = await runTurns(openai.agentLoop, ["echo three"]);
    expect(received).toHaveLength(2); // the second request was not refused
    const ids = (received[1].body.messages.at(-4)!.tool_calls as { id: string }[]).map((call) => call.id);
    expect(ids[0]).toBe("call_1");
    expect(new Set(ids).size).toBe(3);
    expect(received[1].body.messages.slice(-3).map((m) => [m.tool_call_id, m.content])).toEqual([[ids[0], "a\n"], [ids[1], "b\n"], [ids[2], "c\n"]]);
    expect(messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "Three." }] });
  });

  it("a reply a content filter stopped keeps its text and drops its calls (none runs): the next request is one OpenAI takes", async () => {
    const { received, openai } = await fake([
      { body: chatReply({ content: "Deleting", tool_calls: [callOf("call_x", "write_file", '{"path":"x.txt","content":"x"}')] }, "content_filter") },
      { body: chatReply({ content: "Something else, then." }) },
    ]);
    const messages = await runTurns(openai.agentLoop, ["do it", "something else"]);
    expect(printed).toContain("[the model declined to continue]");
    expect(messages[1]).toEqual({ role: "assistant", content: [{ type: "text", text: "Deleting" }] });
    expect(received).toHaveLength(2);
    expect(messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "Something else, then." }] });
  });

  it("names the address it could not reach", async () => {
    // A port that was open a moment ago, and is closed now.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const closed = await stageWith({ PROVIDER: "openai", OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_API_KEY: "k", MODEL_ID: "m" });
    const error = await runTurns(closed.agentLoop, ["hi"]).catch((e: Error) => e);
    expect(describeProviderError(error)).toBe(`[error] Could not reach http://127.0.0.1:${port}/v1/chat/completions (ECONNREFUSED): check OPENAI_BASE_URL, and that the server runs.`);
  });
});

// ---------------------------------------------------------------------------------------
// Settings

describe("s15 settings", () => {
  useWorkspace();

  it.each([
    [{ PROVIDER: "gemini" }, 'PROVIDER "gemini" is not one this stage speaks: anthropic (the default, the Messages API) or openai (Chat Completions)'],
    [{ PROVIDER: "openai", OPENAI_API_KEY: "k" }, "PROVIDER=openai needs MODEL_ID: the model's name at OPENAI_BASE_URL, as that server lists it"],
  ])("refuses %j at start, in one line, before anything runs", async (settings, words) => {
    const configured = await stageWith(settings);
    vi.stubEnv("PROVIDER", settings.PROVIDER); // runMain loads the file it is given: the same settings
    try {
      const { code, output } = await runMain(FILE, ["hello"]);
      expect({ code, output }).toEqual({ code: 1, output: `[error] ${words}\n` });
    } finally {
      vi.unstubAllEnvs();
    }
    expect(configured.TOOLS.length).toBe(4);
  });

  it("with PROVIDER=openai and no key, a prompt names OPENAI_API_KEY; --record is refused, since it saves Messages API replies", async () => {
    const openai = await stageWith({ PROVIDER: "openai" });
    const exit = vi.spyOn(process, "exit").mockImplementation(((code: number) => {
      throw Object.assign(new Error("exit"), { code });
    }) as never);
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((...args) => void lines.push(args.join(" ")));
    vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      await openai.main(["a prompt"]).catch((e: { code?: number }) => expect(e.code).toBe(1));
      expect(lines[0]).toMatch(/^\[error\] Your prompt needs a real model, and no key is set\. To use a real model with PROVIDER=openai: set OPENAI_API_KEY and MODEL_ID/);
      await openai.main(["--record", "x"]).catch((e: { code?: number }) => expect(e.code).toBe(1));
      expect(lines[1]).toBe("[error] --record saves Messages API replies: record with PROVIDER=anthropic");
    } finally {
      exit.mockRestore();
      vi.restoreAllMocks();
    }
  });
});

// ---------------------------------------------------------------------------------------
// Whole sessions, replayed: the same loop in both formats

describe("s15 replays", () => {
  const here = useWorkspace();
  usePrinted();
  const replay = useReplay();
  // A fresh folder for each replay, inside the test's own workspace (removed with it).
  const workspace = () => mkdtempSync(path.join(here.dir, "replay-"));

  it("without PROVIDER it is s06: the demo over the Messages API, whole", async () => {
    const scenario = loadScenario("s15");
    const session = await replayScenario(stage, scenario, { workspace: workspace() });
    expect(session.chatRequests).toEqual([]);
    expectWholeSession("s15", session, scenario);
  });

  it("with PROVIDER=openai the demo goes through the adapter: the loop gets the recorded replies, the wire is Chat Completions", async () => {
    const { openai, replayIn } = await inOpenAIMode();
    const scenario = loadScenario("s15");
    const session = await replayIn(openai, scenario, { workspace: workspace() });
    expect(session.problems).toEqual([]);
    expect(session.turnErrors).toEqual([]);
    expect(session.requests).toEqual([]); // nothing went to /v1/messages
    expect(session.chatRequests).toHaveLength(scenario.replies.length);
    expect(compareWithScenario(session.messages, scenario)).toEqual([]);
    // The second request: the two reads of the first reply, answered by two tool messages in call order.
    const second = session.chatRequests![1].messages as Record<string, unknown>[];
    expect(second.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool"]);
    expect(second.slice(3).map((m) => m.tool_call_id)).toEqual(["toolu_s15_demo_01", "toolu_s15_demo_02"]);
    expect((second[2].tool_calls as { function: { arguments: unknown } }[]).map((c) => c.function.arguments)).toEqual(['{"path":"greet.js"}', '{"path":"greet.test.js"}']);
    // The last: the test the model ran, passing, as a tool message.
    expect((session.chatRequests![3].messages as Record<string, unknown>[]).at(-1)).toMatchObject({ role: "tool", tool_call_id: "toolu_s15_demo_04", content: expect.stringContaining("# pass 1") });
  });

  it("every other stage's demo replays through the adapter as it does over the Messages API (a representative set)", async () => {
    const { openai, replayIn } = await inOpenAIMode();
    for (const id of ["s01", "s02", "s03", "s04", "s05", "s08", "s12"]) {
      const scenario = loadScenario(id);
      const session = await replayIn(openai, scenario, { workspace: workspace() });
      expect(session.problems, id).toEqual([]);
      expect(session.chatRequests, id).toHaveLength(scenario.replies.length);
      expect(compareWithScenario(session.messages, scenario), id).toEqual([]);
    }
  });

  it("a wrong adapter is refused by the replay as OpenAI would refuse it: results merged into one tool message", async () => {
    const openai = await stageWith({ PROVIDER: "openai" });
    const session = replay(scenarioOf([reply.tools([{ id: "c1", name: "read_file", input: { path: "a" } }, { id: "c2", name: "read_file", input: { path: "b" } }]), reply.text("ok")]));
    const merged = { model: "m", messages: [{ role: "user", content: "x" }, { role: "assistant", content: null, tool_calls: [callOf("c1", "read_file", '{"path":"a"}'), callOf("c2", "read_file", '{"path":"b"}')] }, { role: "tool", tool_call_id: "c1", content: "a\nb" }] };
    expect(chatProblem(merged, [])).toBe("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: c2");
    await runTurns(openai.agentLoop, ["prompt 1"]);
    expect(session.verdict()).toEqual([]); // the real adapter: one tool message per result
  });
});

describe("the replay engine's Chat Completions side (lib/course/chat-replay.ts)", () => {
  const calls = [callOf("c1", "read_file", '{"path":"a"}'), callOf("c2", "read_file", '{"path":"b"}')];
  const base = (tail: Record<string, unknown>[]) => ({ model: "m", messages: [{ role: "user", content: "x" }, { role: "assistant", content: null, tool_calls: calls }, ...tail] });
  const served = [reply.tools([{ id: "c1", name: "read_file", input: { path: "a" } }, { id: "c2", name: "read_file", input: { path: "b" } }])];

  it("takes tool messages that answer each call in order, for calls it served", () => {
    expect(chatProblem(base([{ role: "tool", tool_call_id: "c1", content: "A" }, { role: "tool", tool_call_id: "c2", content: "B" }]), served)).toBeUndefined();
  });

  it.each([
    ["results out of order", base([{ role: "tool", tool_call_id: "c2", content: "B" }, { role: "tool", tool_call_id: "c1", content: "A" }]), "messages[1]: the tool messages after it answer [c2, c1], the calls were [c1, c2] in that order"],
    ["a result left out", base([{ role: "tool", tool_call_id: "c1", content: "A" }]), "The following tool_call_ids did not have response messages: c2"],
    ["results as a user message", base([{ role: "user", content: "A B" }]), "The following tool_call_ids did not have response messages: c1, c2"],
    ["arguments as an object", { model: "m", messages: [{ role: "user", content: "x" }, { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: { path: "a" } } }] }, { role: "tool", tool_call_id: "c1", content: "A" }] }, "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string (JSON), but got object instead"],
    ["a tool message with no call before it", { model: "m", messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "c1", content: "A" }] }, "messages with role 'tool' must be a response to a preceding message with 'tool_calls'"],
    ["a role Chat Completions has not", { model: "m", messages: [{ role: "human", content: "x" }] }, "Invalid value for 'messages[0].role'"],
    ["an assistant message with nothing", { model: "m", messages: [{ role: "user", content: "x" }, { role: "assistant", content: null }] }, "Invalid value for 'messages[1].content': expected a string, got null"],
    ["a tool not written as a function", { model: "m", messages: [{ role: "user", content: "x" }], tools: [{ name: "bash", input_schema: {} }] }, "Missing required parameter: 'tools[0].function.name'"],
    ["a result given twice (duplicate ids)", { model: "m", messages: [{ role: "user", content: "x" }, { role: "assistant", content: null, tool_calls: [callOf("c1", "read_file", "{}"), callOf("c1", "read_file", "{}")] }, { role: "tool", tool_call_id: "c1", content: "A" }, { role: "tool", tool_call_id: "c1", content: "A" }] }, "Invalid parameter: Duplicate value for 'tool_call_id' of 'c1'"],
    ["calls the replay never served", base([{ role: "tool", tool_call_id: "c1", content: "A" }, { role: "tool", tool_call_id: "c2", content: "B" }]), "the tool calls [c1, c2] before the results are not in any reply the replay served"],
  ])("refuses %s", (_what, body, words) => {
    const problem = chatProblem(body, _what === "calls the replay never served" ? [] : served);
    expect(problem).toContain(words);
  });

  it("serves a recorded reply as a Chat Completions reply the adapter reads back to the recording", () => {
    const recorded = { ...reply.tools([{ id: "toolu_1", name: "bash", input: { command: "ls" } }], "Looking."), usage: { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 900 } } as Message;
    const served = chatCompletionOf(recorded, 0);
    expect(served).toMatchObject({ choices: [{ message: { content: "Looking.", tool_calls: [{ id: "toolu_1", function: { name: "bash", arguments: '{"command":"ls"}' } }] }, finish_reason: "tool_calls" }], usage: { prompt_tokens: 1000, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 900 } } });
    const back = stage.fromChatReply(served);
    expect(JSON.stringify(back.content)).toBe(JSON.stringify(recorded.content.map((b) => (b.type === "text" ? { type: "text", text: b.text } : b))));
    expect(back.usage).toMatchObject({ input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 900 });
    expect(resultText({ type: "tool_result", tool_use_id: "x", content: "ok" })).toBe("ok");
  });
});
