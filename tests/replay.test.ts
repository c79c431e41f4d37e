// The replay engine is strict: anything the recording does not expect is a problem, named
// in words a learner can act on. The demo, the tests and the exercises rely on that.
import { readdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { sdkModule } from "../lib/runtime/model.ts";
import { checkScenario, FIXTURES_DIR, loadScenario } from "../lib/course/scenario.ts";
import { reply, scenarioOf, useReplay } from "./helpers.ts";

// The SDK as the stages load it (lib/runtime/model.ts).
const client = new (sdkModule().default)({ apiKey: "test", baseURL: "http://model.test", maxRetries: 0, fetch: (u, i) => fetch(u, i) });
// A request that holds tool blocks must declare tools, as the API requires.
const TOOLS: Anthropic.Tool[] = [{ name: "bash", input_schema: { type: "object" } }];
const ask = (messages: Anthropic.MessageParam[]) =>
  client.messages.create({ model: "m", max_tokens: 10, messages, tools: TOOLS });

describe("the replay engine", () => {
  const replay = useReplay();

  it("refuses what the API refuses: tool blocks in a request that declares no tools, an empty text block, an unanswered call", async () => {
    replay(scenarioOf([reply.tools([{ id: "toolu_1", name: "bash", input: {} }]), reply.text("never")]));
    const served = await ask([{ role: "user", content: "a" }]);
    const call: Anthropic.MessageParam = { role: "assistant", content: served.content };
    const answer: Anthropic.MessageParam = { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok" }] };
    await expect(client.messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "a" }, call, answer] })).rejects.toThrow(/must define tools/);
    await expect(ask([{ role: "user", content: [{ type: "text", text: " " }] }])).rejects.toThrow(/text content blocks must contain non-whitespace text/);
    await expect(ask([{ role: "user", content: "a" }, call, { role: "user", content: "no result" }, { role: "assistant", content: "x" }, { role: "user", content: "y" }])).rejects.toThrow(/tool_use ids were found without tool_result blocks/);
  });

  it("refuses cache breakpoints as the API does: more than 4 in a request, one on a thinking block or on a message", async () => {
    const session = replay(scenarioOf([reply.text("four are allowed"), reply.text("never")]));
    const cached = { type: "ephemeral" } as const;
    const text = (words: string) => ({ type: "text" as const, text: words, cache_control: cached });
    const four = {
      model: "m",
      max_tokens: 10,
      tools: [{ ...TOOLS[0], cache_control: cached }],
      system: [text("system")],
      messages: [{ role: "user" as const, content: [text("a"), text("b")] }],
    };
    expect((await client.messages.create(four)).content[0]).toMatchObject({ text: "four are allowed" });
    // A fifth anywhere: the request-level marker, or one inside a tool result's content.
    await expect(client.messages.create({ ...four, cache_control: cached })).rejects.toThrow("A maximum of 4 blocks with cache_control may be provided. Found 5.");
    const call: Anthropic.MessageParam = { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "bash", input: {} }] };
    const result: Anthropic.MessageParam = { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [text("out"), text("more")] }] };
    const later = [four.messages[0], call, result, { role: "assistant" as const, content: "ok" }, { role: "user" as const, content: "go on" }];
    await expect(client.messages.create({ ...four, messages: later })).rejects.toThrow("Found 6.");
    const thinking: Anthropic.MessageParam = { role: "assistant", content: [{ type: "thinking", thinking: "hmm", signature: "s", cache_control: cached } as Anthropic.ContentBlockParam] };
    await expect(ask([{ role: "user", content: "a" }, thinking])).rejects.toThrow("messages.1.content.0.thinking.cache_control: Extra inputs are not permitted");
    await expect(ask([{ role: "user", content: "a", cache_control: cached } as Anthropic.MessageParam])).rejects.toThrow("messages.0.cache_control: Extra inputs are not permitted");
    expect(session.problems).toHaveLength(4);
  });

  it("streams any recorded reply when a request asks for a stream: what the SDK assembles is the reply as recorded, for every fixture", async () => {
    const replies = readdirSync(FIXTURES_DIR).flatMap((stage) =>
      readdirSync(path.join(FIXTURES_DIR, stage))
        .filter((name) => name.endsWith(".json"))
        .flatMap((name) => {
          try {
            return loadScenario(stage, name.replace(/\.json$/, "")).replies.map(({ agent: _agent, ...reply }) => reply); // one agent asks for all (s19's name theirs)
          } catch {
            return []; // a JSON file that is not a scenario (s08's settings)
          }
        }),
    );
    expect(replies.length).toBeGreaterThan(50);
    replay(scenarioOf(replies));
    for (const recorded of replies) {
      const stream = client.messages.stream({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "go" }] });
      const deltas: string[] = [];
      stream.on("text", (text) => deltas.push(text));
      const message = await stream.finalMessage();
      expect(message.content).toEqual(JSON.parse(JSON.stringify(recorded.content)));
      expect(message.stop_reason).toBe(recorded.stop_reason);
      const text = recorded.content.filter((block) => block.type === "text").map((block) => block.text).join("");
      expect(deltas.join("")).toBe(text);
      if (text.length > 24) expect(deltas.length).toBeGreaterThan(1); // in pieces, as a stream comes
    }
  });

  it("serves the replies in order and records each request", async () => {
    const session = replay(scenarioOf([reply.text("one"), reply.text("two")]));
    const first = await ask([{ role: "user", content: "a" }]);
    const second = await ask([{ role: "user", content: "b" }]);
    expect([first.content[0], second.content[0]]).toMatchObject([{ text: "one" }, { text: "two" }]);
    expect(session.requests.map((r) => r.messages[0].content)).toEqual(["a", "b"]);
    expect(session.verdict()).toEqual([]);
  });

  it("fails a request past the end of the scenario, without the SDK retrying it", async () => {
    const session = replay(scenarioOf([reply.text("only")]));
    await ask([{ role: "user", content: "a" }]);
    await expect(ask([{ role: "user", content: "b" }])).rejects.toThrow(/request 2 came after the last recorded reply/);
    expect(session.requests).toHaveLength(2);
    expect(session.verdict()).toEqual(["request 2 came after the last recorded reply (1)"]);
  });

  it("counts replies never asked for as a problem", () => {
    const session = replay(scenarioOf([reply.text("one"), reply.text("two")]));
    expect(session.verdict()).toEqual(["2 recorded replies were never asked for"]);
  });

  it("fails a request whose tool results do not answer the recorded calls, in order", async () => {
    const asked = reply.tools([
      { id: "toolu_1", name: "bash", input: { command: "a" } },
      { id: "toolu_2", name: "bash", input: { command: "b" } },
    ]);
    const session = replay(scenarioOf([asked, reply.text("done")]));
    await ask([{ role: "user", content: "go" }]);
    const swapped: Anthropic.MessageParam[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: asked.content },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_2", content: "b" },
          { type: "tool_result", tool_use_id: "toolu_1", content: "a" },
        ],
      },
    ];
    await expect(ask(swapped)).rejects.toThrow(/expected tool results for \[toolu_1, toolu_2\] in that order/);
    expect(session.remaining()).toBe(1);
  });

  it("refuses any other request instead of reaching the network", async () => {
    // A real server on loopback: if the request got through, it would be counted here.
    let reached = 0;
    const server = http.createServer((_request, response) => void (reached++, response.end("reached")));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      replay(scenarioOf([reply.text("x")]));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const failure = await fetch(url).then(() => undefined, (error: Error) => error);
      expect(String(failure?.cause ?? failure)).toMatch(/\[MSW\] Cannot bypass a request when using the "error" strategy/);
      expect(reached).toBe(0);
    } finally {
      server.close();
    }
  });
});

describe("scenarios", () => {
  it("every fixture in the repository is a valid scenario", () => {
    const stages = readdirSync(FIXTURES_DIR).filter((d) => /^s\d\d$/.test(d));
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) {
      for (const file of readdirSync(path.join(FIXTURES_DIR, stage)).filter((f) => f.endsWith(".json"))) {
        expect(() => loadScenario(stage, file.replace(/\.json$/, "")), `${stage}/${file}`).not.toThrow();
      }
    }
  });

  it("names what is wrong with a malformed scenario", () => {
    const good = scenarioOf([reply.text("x")]);
    expect(checkScenario(good)).toEqual([]);
    expect(checkScenario({ ...good, prompts: [] })).toContain("prompts must be a non-empty list");
    expect(checkScenario({ ...good, prompts: ["a", "b"] })).toContain("2 prompt(s) but 1 reply/replies that end a turn");
    const broken = { ...good, replies: [{ ...good.replies[0], role: "user" }] } as never;
    expect(checkScenario(broken)).toContain("replies[0] is not an assistant message");
  });

  it("gives a clear error for a scenario that does not exist", () => {
    expect(() => loadScenario("s01", "no-such-scenario")).toThrow(/No scenario at .*no-such-scenario\.json/);
  });
});

// A subagent (s10) holds a conversation of its own: its requests come between its parent's.
// Each request is checked within itself: its last message answers the calls of the assistant
// message just before it, and that message is a reply the replay served.
describe("the replay engine with a conversation inside another", () => {
  const replay = useReplay();
  const parentAsks = reply.tools([{ id: "toolu_parent", name: "task", input: { description: "survey", prompt: "Survey src/." } }]);
  const childAsks = reply.tools([{ id: "toolu_child", name: "read_file", input: { path: "a.txt" } }]);
  const childEnds = reply.text("src/ has one file.");
  const parentEnds = reply.text("Done.");
  const nested = () => ({ ...scenarioOf([parentAsks, childAsks, childEnds, parentEnds]), prompts: ["go"], sideTurns: 1 });
  const results = (...ids: string[]): Anthropic.MessageParam => ({ role: "user", content: ids.map((id) => ({ type: "tool_result" as const, tool_use_id: id, content: "…" })) });
  const parentFirst: Anthropic.MessageParam[] = [{ role: "user", content: "go" }];
  const parentAgain = (...ids: string[]): Anthropic.MessageParam[] => [...parentFirst, { role: "assistant", content: parentAsks.content }, results(...ids)];
  const childFirst: Anthropic.MessageParam[] = [{ role: "user", content: "Survey src/." }];
  const childAgain = (...ids: string[]): Anthropic.MessageParam[] => [...childFirst, { role: "assistant", content: childAsks.content }, results(...ids)];

  it("accepts a child's requests between the parent's, each answering the calls just before its results", async () => {
    const session = replay(nested());
    await ask(parentFirst);
    await ask(childFirst); // right after the parent's tool call, with no result: a new conversation
    await ask(childAgain("toolu_child"));
    await ask(parentAgain("toolu_parent")); // answers the parent's call, served two replies earlier
    expect(session.verdict()).toEqual([]);
  });

  it("fails the parent's request when it answers the child's calls instead of its own", async () => {
    const session = replay(nested());
    await ask(parentFirst);
    await ask(childFirst);
    await ask(childAgain("toolu_child"));
    await expect(ask(parentAgain("toolu_child"))).rejects.toThrow(/request 4: expected tool results for \[toolu_parent\] in that order, got \[toolu_child\]/);
    expect(session.problems).toEqual([expect.stringMatching(/^request 4: expected tool results for \[toolu_parent\] in that order, got \[toolu_child\]/)]);
  });

  it("fails results that follow an assistant message the replay never served", async () => {
    const session = replay(nested());
    await ask(parentFirst);
    await ask(childFirst);
    const invented = reply.tools([{ id: "toolu_invented", name: "read_file", input: { path: "b.txt" } }]);
    const request = [...childFirst, { role: "assistant" as const, content: invented.content }, results("toolu_invented")];
    await expect(ask(request)).rejects.toThrow(/the tool calls \[toolu_invented\] before the results are not in any reply the replay served/);
    expect(session.remaining()).toBe(2);
  });

  it("fails results with no assistant message before them, and calls left unanswered", async () => {
    const session = replay(nested());
    await ask(parentFirst);
    await expect(ask([...parentFirst, results("toolu_parent")])).rejects.toThrow(/tool results for \[toolu_parent\] with no assistant message before them/);
    await expect(ask([...parentFirst, { role: "assistant", content: parentAsks.content }, { role: "user", content: "never mind" }])).rejects.toThrow(
      /expected tool results for \[toolu_parent\] in that order, got \[\]/,
    );
    await expect(ask([...parentFirst, { role: "assistant", content: parentAsks.content }])).rejects.toThrow(/expected tool results for \[toolu_parent\] in that order, got \[\]/);
    expect(session.problems).toHaveLength(3);
  });

  it("counts a child's last reply as a side turn of the scenario, not a prompt's", () => {
    expect(checkScenario(nested())).toEqual([]);
    expect(checkScenario({ ...nested(), sideTurns: 0 })).toContain("1 prompt(s) but 2 reply/replies that end a turn");
    expect(checkScenario({ ...nested(), sideTurns: 2 })).toContain("1 prompt(s) and 2 side turn(s) but 2 reply/replies that end a turn");
    expect(checkScenario({ ...nested(), sideTurns: -1 })).toContain("sideTurns must be a whole number, 0 or more");
    expect(checkScenario({ ...nested(), git: "yes" } as never)).toContain("git must be true or false");
  });
});
