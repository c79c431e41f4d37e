// What a learner plugs in: providers that speak the Messages API in their own way. A fake
// provider on 127.0.0.1 answers with reply shapes seen from real providers and gateways, over
// a real connection, and refuses what the real API refuses (lib/course/replay.ts apiProblem):
// an empty text block, an empty message, a tool call left without its result. The client
// (lib/runtime/model.ts) is what smooths them over, so every stage gets the same care.
import { rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { MessageCreateParams } from "@anthropic-ai/sdk/resources/messages";
import { apiProblem } from "../lib/course/replay.ts";
import { modelClient, WAIT_NOTICE } from "../lib/runtime/model.ts";
import { reply, runMain, stageFile, useWorkspace } from "./helpers.ts";

type Answer = { status?: number; headers?: Record<string, string>; body: unknown; delayMs?: number };

/** A provider on loopback that answers each request with the next answer, and refuses a history the API would refuse. */
function useFakeProvider() {
  let server: http.Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });
  return async (answers: Answer[]) => {
    const requests: MessageCreateParams[] = [];
    const headers: http.IncomingHttpHeaders[] = [];
    server = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString()) as MessageCreateParams;
      requests.push(body);
      headers.push(req.headers);
      const refused = apiProblem(body);
      if (refused) {
        res.writeHead(400, { "content-type": "application/json", "x-should-retry": "false" });
        res.end(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: refused } }));
        return;
      }
      const answer = answers.shift() ?? { status: 500, headers: { "x-should-retry": "false" }, body: { type: "error", error: { type: "api_error", message: "no answer left" } } };
      if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
      const text = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body);
      res.writeHead(answer.status ?? 200, { "content-type": typeof answer.body === "string" ? "text/html" : "application/json", ...answer.headers });
      res.end(text);
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, headers };
  };
}

const REQUEST = { model: "claude-test", max_tokens: 100, messages: [{ role: "user" as const, content: "hi" }] };

describe("the client smooths over what providers send", () => {
  const provider = useFakeProvider();
  const printed: string[] = [];
  afterEach(() => {
    printed.length = 0;
    vi.restoreAllMocks();
  });
  const quiet = () => vi.spyOn(console, "log").mockImplementation((...args) => void printed.push(args.join(" ")));

  it("drops an empty text block before a tool call, so it is never sent back", async () => {
    const fake = await provider([{ body: { ...reply.tools([{ id: "toolu_1", name: "bash", input: { command: "ls" } }]), content: [{ type: "text", text: "" }, { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "ls" } }] } }]);
    const client = modelClient({ apiKey: "key", baseURL: fake.url });
    const answer = await client.messages.create(REQUEST);
    expect(answer.content.map((block) => block.type)).toEqual(["tool_use"]);
    expect(answer.stop_reason).toBe("tool_use");
  });

  it("runs tool calls a gateway sent with stop_reason end_turn (every call must get its result)", async () => {
    const fake = await provider([{ body: { ...reply.tools([{ id: "toolu_2", name: "bash", input: { command: "ls" } }]), stop_reason: "end_turn" } }]);
    const answer = await modelClient({ apiKey: "key", baseURL: fake.url }).messages.create(REQUEST);
    expect(answer.stop_reason).toBe("tool_use");
  });

  it("keeps a cut-off reply cut off: a call in it may be incomplete", async () => {
    const fake = await provider([{ body: { ...reply.tools([{ id: "toolu_3", name: "bash", input: {} }]), stop_reason: "model_context_window_exceeded" } }]);
    const answer = await modelClient({ apiKey: "key", baseURL: fake.url }).messages.create(REQUEST);
    expect(answer.stop_reason).toBe("model_context_window_exceeded");
  });

  it("makes an empty reply an error, so nothing empty enters the history", async () => {
    const fake = await provider([{ body: { ...reply.text("x", "tool_use"), content: [] } }, { body: reply.text("   ", "refusal") }]);
    const client = modelClient({ apiKey: "key", baseURL: fake.url });
    await expect(client.messages.create(REQUEST)).rejects.toThrow("the model sent an empty reply (stop_reason tool_use)");
    await expect(client.messages.create(REQUEST)).rejects.toThrow("the model declined to answer");
  });

  it("says in one line when the base URL answers with something that is not the API (a captive portal's page)", async () => {
    const fake = await provider([{ body: "<!DOCTYPE html><html><title>Log in to the Wi-Fi</title></html>" }]);
    const error = await modelClient({ apiKey: "key", baseURL: fake.url }).messages.create(REQUEST).catch((e: Error) => e);
    expect(String((error as Error).message)).toBe(
      `${fake.url} did not answer with a Messages API reply (it sent text: "<!DOCTYPE html><html><title>Log in to the Wi-Fi</title></html>"). ` +
        "Check ANTHROPIC_BASE_URL: it is the provider's Anthropic-compatible address, without /v1/messages.",
    );
  });

  it("announces a retry and how long it waits: a 429 with retry-after, then the answer", async () => {
    quiet();
    const limited = { status: 429, headers: { "retry-after": "1" }, body: { type: "error", error: { type: "rate_limit_error", message: "slow down" } } };
    const fake = await provider([limited, { body: reply.text("after the wait") }]);
    const started = Date.now();
    const answer = await modelClient({ apiKey: "key", baseURL: fake.url }).messages.create(REQUEST);
    expect(answer.content).toMatchObject([{ type: "text", text: "after the wait" }]);
    expect(printed).toEqual(["[rate limited (429): trying again in 1 s, attempt 2 of 3]"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900); // it did wait what the provider asked
  });

  it("says nothing more when the SDK gives up: the error says why", async () => {
    quiet();
    const overloaded = { status: 529, headers: { "retry-after-ms": "10" }, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } };
    const fake = await provider([overloaded, overloaded, overloaded]);
    await expect(modelClient({ apiKey: "key", baseURL: fake.url }).messages.create(REQUEST)).rejects.toThrow(/Overloaded/);
    expect(printed).toEqual(["[overloaded (529): trying again in 10 ms, attempt 2 of 3]", "[overloaded (529): trying again in 10 ms, attempt 3 of 3]"]);
  });

  it("tells the person, every so often, that it is still waiting for the model (in a pipe as at a terminal)", async () => {
    quiet();
    const saved = { ...WAIT_NOTICE };
    Object.assign(WAIT_NOTICE, { first: 0.1, every: 0.15 });
    try {
      const fake = await provider([{ body: reply.text("late"), delayMs: 400 }]);
      await modelClient({ apiKey: "key", baseURL: fake.url }).messages.create(REQUEST);
      expect(printed.length).toBeGreaterThanOrEqual(2);
      expect(printed.every((line) => /^\[waiting for the model: \d+ s so far; Ctrl-C stops\]$/.test(line))).toBe(true);
    } finally {
      Object.assign(WAIT_NOTICE, saved);
    }
  });

  it("says which to unset when both ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are set (the SDK takes one)", async () => {
    const fake = await provider([{ body: reply.text("never") }]);
    await expect(modelClient({ apiKey: "key", authToken: "token", baseURL: fake.url }).messages.create(REQUEST)).rejects.toThrow(
      "both ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are set; a provider takes one of them: unset the other (for a bearer token, unset ANTHROPIC_API_KEY)",
    );
    expect(fake.requests).toHaveLength(0);
  });

  it("sends ANTHROPIC_AUTH_TOKEN as a bearer token, and no x-api-key when no key is set", async () => {
    const fake = await provider([{ body: reply.text("hello") }]);
    await modelClient({ apiKey: undefined, authToken: "tok-123", baseURL: fake.url }).messages.create(REQUEST);
    expect(fake.headers[0].authorization).toBe("Bearer tok-123");
    expect(fake.headers[0]["x-api-key"]).toBeUndefined();
  });
});

describe("a session with an odd provider goes on", () => {
  useWorkspace();
  const provider = useFakeProvider();
  const s01 = stageFile("s01");

  /** s01 loaded afresh with `env`, run with `args` and `input` on stdin; the environment is put back. */
  async function run(env: Record<string, string | undefined>, args: string[], input = "") {
    for (const name of ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "MODEL_ID", "WORKBOOK_ENV_FILE"]) vi.stubEnv(name, env[name] ?? "");
    // The learner's own settings file, empty: nothing but `env` decides.
    const settings = path.join(process.cwd(), "..", `${path.basename(process.cwd())}.env`);
    writeFileSync(settings, "");
    vi.stubEnv("WORKBOOK_ENV_FILE", settings);
    vi.resetModules();
    try {
      return await runMain(s01, args, { input });
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
      rmSync(settings, { force: true });
    }
  }

  it("answers a prompt with ANTHROPIC_AUTH_TOKEN alone and ANTHROPIC_API_KEY empty, as OpenRouter and Ollama ask (not the demo)", async () => {
    const fake = await provider([{ body: reply.text("hello from the provider") }]);
    const { code, output } = await run({ ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: "or-token", ANTHROPIC_BASE_URL: fake.url }, ["hi"]);
    expect(output).toBe("hello from the provider\n");
    expect(code).toBe(0);
    expect(fake.headers[0].authorization).toBe("Bearer or-token");
  });

  it("after an empty reply and after calls sent with end_turn, the next prompts still work: the history stays valid", async () => {
    const fake = await provider([
      { body: { ...reply.text("x"), content: [] } },
      { body: { ...reply.tools([{ id: "toolu_e", name: "bash", input: { command: "echo ran" } }]), content: [{ type: "text", text: "" }, { type: "tool_use", id: "toolu_e", name: "bash", input: { command: "echo ran" } }], stop_reason: "end_turn" } },
      { body: reply.text("done") },
      { body: reply.text("third prompt answered") },
    ]);
    const { output } = await run({ ANTHROPIC_API_KEY: "key", ANTHROPIC_BASE_URL: fake.url }, [], "first\nsecond\nthird\n");
    expect(output).toContain("[error] the model sent an empty reply (stop_reason end_turn)");
    expect(output).toContain("third prompt answered");
    // The strict provider refused nothing: every request was answered from the list.
    expect(fake.requests).toHaveLength(4);
    expect(JSON.stringify(fake.requests[2].messages)).toContain('"tool_use_id":"toolu_e"');
  });
});
