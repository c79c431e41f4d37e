// s13: the reply streams. Each behaviour is a test: the text is on the screen while the reply
// is still arriving, a call is shown once its input is whole (never before), the loop gets the
// message a reply sent whole would have given (for every recorded reply of every fixture, and
// for the block kinds no fixture has), Ctrl-C stops a reply at once and leaves a history the
// API accepts, and a retry is announced. The replies that must arrive slowly, or stop half way,
// come from a provider on 127.0.0.1 that writes the API's event stream, piece by piece
// (lib/course/stream-provider.ts, which the exercise's checks use too).
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Message, MessageParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import { apiProblem } from "../lib/course/replay.ts";
import { eventData, eventsOf, splitAt, startStreamProvider, type StreamProvider } from "../lib/course/stream-provider.ts";
import { FIXTURES_DIR, loadScenario } from "../lib/course/scenario.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { onScreen, reply, resultText, runInTerminal, scenarioOf, stageFile, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s13");

// ---------------------------------------------------------------------------------------
// The stage, pointed at that provider (it reads its settings when it loads)

/** A reply while its events arrive (the stage's own record of it). */
type Building = { message?: Message; json: string[]; complete: boolean[]; ended: boolean; openLine: boolean; held: string };
type Stage = {
  agentLoop(messages: MessageParam[]): Promise<void>;
  client: { messages: { create(request: object): Promise<Message> } };
  addEvent(building: Building, event: object): void;
  term: typeof import("../lib/runtime/terminal.ts");
  /** The replay of the same copy of lib the stage uses (its terminal is the one the replay's person types at). */
  session: typeof import("../lib/course/session.ts");
  /** The stage's copy of the connection to the model, whose limits a test may lower. */
  model: typeof import("../lib/runtime/model.ts");
  program: typeof import("../lib/runtime/program.ts");
};
let stage: Stage;
let provider: StreamProvider;

beforeAll(async () => {
  provider = await startStreamProvider();
  vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789");
  vi.stubEnv("ANTHROPIC_BASE_URL", provider.url);
  vi.resetModules();
  try {
    stage = { ...(await import(FILE)), term: await import("../lib/runtime/terminal.ts"), session: await import("../lib/course/session.ts"), model: await import("../lib/runtime/model.ts"), program: await import("../lib/runtime/program.ts") } as Stage;
  } finally {
    vi.unstubAllEnvs();
  }
});
afterAll(() => provider.close());
afterEach(() => provider.reset());

/** What the person saw (console.log and every write to stdout) while `work` ran, as it grows. */
function watchScreen() {
  let output = "";
  const writes: string[] = [];
  const spies = [
    vi.spyOn(console, "log").mockImplementation((...parts) => void (output += `${parts.join(" ")}\n`)),
    vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => (writes.push(String(chunk)), (output += String(chunk)), true)),
  ];
  return { text: () => output, writes: () => writes, stop: () => spies.forEach((spy) => spy.mockRestore()) };
}

/** Resolves once `check()` holds, polling; fails after five seconds (the first request loads the SDK). */
async function until(check: () => boolean, what: string): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > 5000) throw new Error(`waited in vain for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** One turn of the loop on `messages`, with the screen watched. */
function turn(messages: MessageParam[], prompt: string) {
  messages.push({ role: "user", content: prompt });
  const screen = watchScreen();
  const running = stage.agentLoop(messages).finally(screen.stop);
  return { running, screen };
}

const textReply = (...texts: string[]): Message => ({ ...reply.text(texts[0]), content: texts.map((text) => ({ type: "text", text, citations: null })) }) as Message;

// ---------------------------------------------------------------------------------------

describe("s13 shows the reply as it arrives", () => {
  useWorkspace();

  it("prints the text while the reply is still arriving, not when it ends", async () => {
    const [first, rest] = splitAt(await eventsOf(textReply("Reading the files now, then I will explain.")), /text_delta/);
    provider.scripts = [[...first, "wait", ...rest]];
    const { running, screen } = turn([], "explain");
    await until(() => screen.text().includes("Reading the "), "the first piece of text on the screen");
    expect(provider.requests[0].stream).toBe(true);
    provider.release();
    await running;
    expect(screen.text()).toBe("Reading the files now, then I will explain.\n"); // whole, and once
  });

  it("shows a call once its input is whole, before the reply ends, and never half of it", async () => {
    const calls = reply.tools([{ id: "toolu_ls", name: "bash", input: { command: "ls -la src" } }]);
    const events = await eventsOf({ ...calls, content: [{ type: "text", text: "Listing.", citations: null }, ...calls.content] } as Message);
    const [upToFirstPiece, afterFirstPiece] = splitAt(events, /input_json_delta/);
    const [toTheStop, toTheEnd] = splitAt(afterFirstPiece, /content_block_stop/);
    provider.scripts = [[...upToFirstPiece, "wait", ...toTheStop, "wait", ...toTheEnd], [...(await eventsOf(reply.text("done")))]];
    const { running, screen } = turn([], "list");
    await until(() => screen.text().includes("Listing."), "the text");
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(screen.text()).not.toContain("> Shell"); // a piece of JSON is not a call yet
    provider.release();
    await until(() => screen.text().includes("> Shell ls -la src"), "the call on the screen, while the provider still holds the reply's end");
    provider.release();
    await running;
    expect(screen.text().match(/> Shell ls -la src/g)).toHaveLength(1); // runTool does not print it again
    // The input the loop ran is the one assembled from the pieces, as the reply sent whole gives it.
    expect(provider.requests[1].messages[1].content).toEqual([{ type: "text", text: "Listing.", citations: null }, calls.content[0]]);
  });

  it("shows escapes in the model's text instead of obeying them, and never halves a character between deltas", async () => {
    const text = "clear\x1b[2J done, ok 1234🙂 end"; // in 12-character pieces, the emoji's two halves arrive apart
    expect(text.slice(12, 24)).toMatch(/\ud83d$/);
    provider.scripts = [await eventsOf(textReply(text))];
    const { running, screen } = turn([], "x");
    await running;
    expect(screen.text()).toBe("clear\\e[2J done, ok 1234🙂 end\n");
    // Each write is encoded on its own: half an emoji would reach the terminal as two replacement characters.
    const halves = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    expect(screen.writes().filter((chunk) => halves.test(chunk))).toEqual([]);
  });
});

describe("s13 gives the loop the reply a non-streamed request gives", () => {
  useWorkspace();
  const replay = useReplay();

  const odd: Message[] = [
    // The block kinds no fixture has: thinking (signed), redacted thinking, a server tool and its result, citations.
    {
      ...reply.text("x"),
      content: [
        { type: "thinking", thinking: "The person wants the version; package.json has it.", signature: "sig-0123456789abcdef" },
        { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP" },
        { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "semver 2.0.0" } },
        { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [{ type: "web_search_result", title: "Semantic Versioning", url: "https://semver.org/", encrypted_content: "abc", page_age: null }] },
        { type: "text", text: "Semantic versions have three numbers.", citations: [{ type: "web_search_result_location", url: "https://semver.org/", title: "Semantic Versioning", encrypted_index: "Eo8BCioIAhgBIiQ", cited_text: "MAJOR.MINOR.PATCH" }] },
      ],
      usage: { input_tokens: 2100, output_tokens: 310, cache_creation_input_tokens: 0, cache_read_input_tokens: 1800, server_tool_use: { web_search_requests: 1 } },
    } as unknown as Message,
    // A call with no input, and one whose input holds every kind of JSON value.
    reply.tools([{ id: "toolu_none", name: "bash", input: {} }, { id: "toolu_all", name: "bash", input: { a: [1, 2.5, -3e-7, null, true], b: { "ü \"q\"": "line\nbreak\t🙂" }, c: "" } }]),
    // What checkedReply changes, changed the same way: an empty text block, tool calls sent with end_turn.
    { ...reply.tools([{ id: "toolu_e", name: "bash", input: { command: "ls" } }]), content: [{ type: "text", text: "" }, { type: "tool_use", id: "toolu_e", name: "bash", input: { command: "ls" } }], stop_reason: "end_turn" } as Message,
  ];

  it("assembles every recorded reply of every fixture from its events: the reply as recorded, byte for byte", async () => {
    const recorded = readdirSync(FIXTURES_DIR).flatMap((id) =>
      readdirSync(path.join(FIXTURES_DIR, id))
        .filter((name) => name.endsWith(".json"))
        .flatMap((name) => {
          try {
            return loadScenario(id, name.replace(/\.json$/, "")).replies;
          } catch {
            return []; // a JSON file that is not a scenario (s08's settings)
          }
        }),
    );
    expect(recorded.length).toBeGreaterThan(50);
    const screen = watchScreen();
    try {
      for (const message of [...recorded, ...odd]) {
        const building: Building = { json: [], complete: [], ended: false, openLine: false, held: "" };
        for (const event of await eventsOf(message)) stage.addEvent(building, eventData(event) as object);
        expect(JSON.stringify(building.message), message.id).toBe(JSON.stringify(message));
      }
    } finally {
      screen.stop();
    }
  });

  it("through the provider's stream: what the loop gets equals what a request sent whole gets, block kinds no fixture has included", async () => {
    replay(scenarioOf(odd.flatMap((message) => [message, message])));
    const whole = modelClient({ apiKey: "sk-ant-test", baseURL: undefined });
    const request = { model: "m", max_tokens: 100, messages: [{ role: "user" as const, content: "go" }] };
    const screen = watchScreen();
    try {
      for (const message of odd) {
        const sentWhole = await whole.messages.create(request);
        const streamed = await stage.client.messages.create(request);
        expect(JSON.stringify(streamed), message.id).toBe(JSON.stringify(sentWhole));
      }
    } finally {
      screen.stop();
    }
  });

  it("replays the stage's demo: each call and each text shown once, the session as recorded", async () => {
    const scenario = loadScenario("s13");
    const { value: session, output } = await onScreen("", () => stage.session.replayScenario(stage, scenario, { workspace: process.cwd() }));
    expectWholeSession("s13", session, scenario);
    for (const shown of ["I'll read both files first", "> ReadFile cli.js", "> ReadFile package.json", "> Edit cli.js", "Three small things would make it sturdier"]) {
      expect(output.split(shown), shown).toHaveLength(2);
    }
    expect(session.requests.every((request) => request.stream === true)).toBe(true);
    expect(resultText(session.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((b) => b.type === "tool_result" && b.tool_use_id === "toolu_s13_demo_04") as ToolResultBlockParam)).toBe("1.4.2\nHello, Ada!\n");
  });
});

describe("s13 Ctrl-C during a reply", () => {
  useWorkspace();
  const replay = useReplay();

  it("stops the stream at once, keeps the text blocks that were complete, drops the one half written, and the next prompt works", async () => {
    const [upToHalf, rest] = splitAt(await eventsOf(textReply("First, the plan.", "Then a long explanation the person will not wait for.")), /"index":1,"delta"/, 2);
    provider.scripts = [[...upToHalf, "wait", ...rest], await eventsOf(reply.text("Shorter, then."))];
    const messages: MessageParam[] = [];
    const { running, screen } = turn(messages, "explain");
    await until(() => screen.text().includes("Then a long explana"), "the second block, half shown");
    const pressed = Date.now();
    stage.term.interrupt();
    await running;
    expect(Date.now() - pressed).toBeLessThan(500);
    await until(() => provider.hungUp[0] === true, "the request to be aborted");
    expect(screen.text()).toContain("[the reply was interrupted (Ctrl-C); what was complete of it is kept]");
    expect(messages).toEqual([{ role: "user", content: "explain" }, { role: "assistant", content: [{ type: "text", text: "First, the plan.", citations: null }] }]);
    const next = turn(messages, "keep it short");
    await next.running;
    expect(apiProblem(provider.requests[1])).toBeUndefined();
    expect(provider.requests[1].messages).toEqual(messages.slice(0, 3));
  });

  it("takes not one event more after Ctrl-C, even where aborting does not end the body (the offline demo at a terminal, paced)", async () => {
    replay(scenarioOf([textReply("The first block, whole.", "The second block, which keeps coming until the end of the reply.")]), { streamPauseMs: 15 });
    const messages: MessageParam[] = [];
    const { running, screen } = turn(messages, "explain");
    await until(() => screen.text().includes("The second bl"), "the second block, half shown");
    stage.term.interrupt();
    await running;
    expect(messages[1]).toEqual({ role: "assistant", content: [{ type: "text", text: "The first block, whole.", citations: null }] });
  });

  it("drops a call whose input was still arriving, answers a complete one as not run, and runs neither", async () => {
    const calls = reply.tools([
      { id: "toolu_whole", name: "write_file", input: { path: "whole.txt", content: "x" } },
      { id: "toolu_half", name: "write_file", input: { path: "half.txt", content: "a long content the model is still writing" } },
    ]);
    const [upToHalf, rest] = splitAt(await eventsOf(calls), /"index":1,"delta"/, 2);
    provider.scripts = [[...upToHalf, "wait", ...rest], await eventsOf(reply.text("As you wish."))];
    const messages: MessageParam[] = [];
    const { running, screen } = turn(messages, "write two files");
    await until(() => provider.requests.length === 1 && screen.text().includes("> WriteFile whole.txt"), "the first call on the screen");
    stage.term.interrupt();
    await running;
    expect(messages.slice(1)).toEqual([
      { role: "assistant", content: [calls.content[0]] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_whole", is_error: true, content: "Not run: the person interrupted your reply (Ctrl-C) before this call could run." }] },
    ]);
    expect(existsSync("whole.txt") || existsSync("half.txt")).toBe(false);
    await turn(messages, "never mind").running;
    expect(apiProblem(provider.requests[1])).toBeUndefined();
  });

  it("before any block is complete: the turn ends saying so, nothing enters the history, the next prompt works", async () => {
    const [upToHalf, rest] = splitAt(await eventsOf(textReply("A reply that is stopped in its first sentence.")), /text_delta/);
    provider.scripts = [[...upToHalf, "wait", ...rest], await eventsOf(reply.text("Yes?"))];
    const messages: MessageParam[] = [];
    const { running, screen } = turn(messages, "go");
    await until(() => screen.text().includes("A reply tha"), "the first piece");
    stage.term.interrupt();
    await expect(running).rejects.toThrow("the reply was interrupted (Ctrl-C) before any part of it was complete; nothing of it was kept");
    expect(messages).toEqual([{ role: "user", content: "go" }]);
    await turn(messages, "hello?").running;
    expect(apiProblem(provider.requests[1])).toBeUndefined();
  });

  it("while waiting for the first byte, too; and afterwards Ctrl-C at the prompt still leaves", async () => {
    provider.scripts = [["wait"]];
    const { running } = turn([], "go");
    await until(() => provider.requests.length === 1, "the request");
    stage.term.interrupt();
    await expect(running).rejects.toThrow(/interrupted \(Ctrl-C\)/);
    const exit = vi.spyOn(process, "exit").mockImplementation(() => undefined as never);
    try {
      stage.term.interrupt(); // nothing runs now: Ctrl-C ends the program, as at s06's prompt
      expect(exit).toHaveBeenCalledWith(130);
    } finally {
      exit.mockRestore();
    }
  });
});

describe("s13 when the provider fails", () => {
  useWorkspace();

  it("announces a retry of a streamed request (529), then streams the reply", async () => {
    const overloaded = { status: 529, headers: { "retry-after-ms": "10" }, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } };
    provider.scripts = [[overloaded], await eventsOf(reply.text("Here after all."))];
    const { running, screen } = turn([], "go");
    await running;
    expect(screen.text()).toBe("[overloaded (529): trying again in 10 ms, attempt 2 of 3]\nHere after all.\n");
    expect(provider.requests.map((request) => request.stream)).toEqual([true, true]);
  });

  it("Ctrl-C during a retry's wait stops it at once (a 429 asking for 30 s)", async () => {
    const limited = { status: 429, headers: { "retry-after": "30" }, body: { type: "error", error: { type: "rate_limit_error", message: "slow down" } } };
    provider.scripts = [[limited]];
    const { running, screen } = turn([], "go");
    await until(() => screen.text().includes("[rate limited (429): trying again in 30 s"), "the retry announced");
    const pressed = Date.now();
    stage.term.interrupt();
    await expect(running).rejects.toThrow(/interrupted \(Ctrl-C\)/);
    expect(Date.now() - pressed).toBeLessThan(500);
    expect(provider.requests).toHaveLength(1); // no second try
  });

  it("says so when the stream ends before the reply is whole, and keeps nothing of it", async () => {
    const [upToHalf] = splitAt(await eventsOf(textReply("Whole.", "Cut in the middle.")), /"index":1,"delta"/);
    provider.scripts = [upToHalf];
    const messages: MessageParam[] = [];
    await expect(turn(messages, "go").running).rejects.toThrow(`${provider.url} ended the stream before the reply was whole (no message_stop); nothing of it was kept`);
    expect(messages).toHaveLength(1);
  });

  it("a reply cut off (max_tokens) inside a call keeps its text, drops the call, and says it was cut off", async () => {
    const cut = { ...reply.tools([{ id: "toolu_cut", name: "write_file", input: { path: "a.txt", content: "x" } }]), stop_reason: "max_tokens" } as Message;
    const events = await eventsOf({ ...cut, content: [{ type: "text", text: "Writing it.", citations: null }, ...cut.content] } as Message);
    const lastPiece = events.map((event) => event.includes('"index":1,"delta":{"type":"input_json_delta"')).lastIndexOf(true);
    provider.scripts = [events.filter((_, i) => i !== lastPiece)]; // the call's JSON never closes
    const messages: MessageParam[] = [];
    const { running, screen } = turn(messages, "go");
    await running;
    expect(screen.text()).toContain("[the reply was cut off at 8000 tokens");
    expect(messages[1]).toEqual({ role: "assistant", content: [{ type: "text", text: "Writing it.", citations: null }] });
  });
});

describe("s13's stream has limits (lib/runtime/model.ts)", () => {
  useWorkspace();
  const lowered = (limits: Partial<typeof stage.model.STREAM_LIMITS>, notices?: typeof stage.model.WAIT_NOTICE) => {
    const saved = [{ ...stage.model.STREAM_LIMITS }, { ...stage.model.WAIT_NOTICE }] as const;
    Object.assign(stage.model.STREAM_LIMITS, limits);
    if (notices) Object.assign(stage.model.WAIT_NOTICE, notices);
    return () => {
      Object.assign(stage.model.STREAM_LIMITS, saved[0]);
      Object.assign(stage.model.WAIT_NOTICE, saved[1]);
    };
  };

  it("a stream that falls silent is said as a wait is, then given up: the request ends, nothing is kept", async () => {
    const restore = lowered({ silentSeconds: 0.25 }, { first: 0.06, every: 0.06 });
    try {
      const [start] = splitAt(await eventsOf(textReply("Never finished.")), /message_start/);
      provider.scripts = [[...start, "wait"]];
      const messages: MessageParam[] = [];
      const { running, screen } = turn(messages, "go");
      await expect(running).rejects.toThrow("the model's stream was silent for 0.25 s, so it was given up; nothing of the reply was kept");
      expect(screen.text()).toMatch(/^(\[waiting for the model: \d+ s so far; Ctrl-C stops\]\n){2,}$/);
      await until(() => provider.hungUp[0] === true, "the request to be aborted");
      expect(messages).toHaveLength(1);
    } finally {
      restore();
    }
  });

  it("a reply that never stops growing is given up past its size", async () => {
    const restore = lowered({ bytes: 3000 });
    try {
      provider.scripts = [[...(await eventsOf(textReply("x".repeat(5000)))), "wait"]];
      const messages: MessageParam[] = [];
      await expect(turn(messages, "go").running).rejects.toThrow("the model's reply grew past 3,000 bytes, so it was given up; nothing of it was kept");
      await until(() => provider.hungUp[0] === true, "the request to be aborted");
      expect(messages).toHaveLength(1);
    } finally {
      restore();
    }
  });
});

describe("s13's stream is the API's, or one line says what came instead (lib/runtime/model.ts)", () => {
  useWorkspace();
  /** One server-sent event, as a provider writes it. */
  const sse = (type: string, data: object = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const start = sse("message_start", { message: { ...reply.text(""), content: [] } });
  const text = (index: number, words: string) => [sse("content_block_start", { index, content_block: { type: "text", text: "" } }), sse("content_block_delta", { index, delta: { type: "text_delta", text: words } }), sse("content_block_stop", { index })];
  const end = [sse("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 2 } }), sse("message_stop")];
  /** A provider that misbehaves would otherwise hold the test until the stream's silence limit: one second here. */
  const quickly = async (work: () => Promise<void>) => {
    const saved = stage.model.STREAM_LIMITS.silentSeconds;
    stage.model.STREAM_LIMITS.silentSeconds = 1;
    try {
      await work();
    } finally {
      stage.model.STREAM_LIMITS.silentSeconds = saved;
    }
  };

  it("a line that never ends is given up past the size limit while it still arrives, not held whole", async () => {
    const saved = stage.model.STREAM_LIMITS.bytes;
    stage.model.STREAM_LIMITS.bytes = 50_000;
    try {
      await quickly(async () => {
        provider.scripts = [[start, `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"${"x".repeat(100_000)}`, "wait"]];
        const messages: MessageParam[] = [];
        await expect(turn(messages, "go").running).rejects.toThrow("the model's reply grew past 50,000 bytes, so it was given up; nothing of it was kept");
        await until(() => provider.hungUp[0] === true, "the request to be aborted");
        expect(messages).toHaveLength(1);
      });
    } finally {
      stage.model.STREAM_LIMITS.bytes = saved;
    }
  });

  it("a usage or a delta a provider leaves out (or sends as null) is an empty one: the reply is whole", async () => {
    const bare = sse("message_start", { message: { id: "msg_bare", type: "message", role: "assistant", model: "m", content: [], stop_reason: null } });
    provider.scripts = [
      [bare, ...text(0, "one"), sse("message_delta", { delta: { stop_reason: "end_turn" } }), sse("message_stop")],
      [start, ...text(0, "two"), sse("message_delta", { delta: null, usage: null }), sse("message_stop")],
    ];
    const messages: MessageParam[] = [];
    await turn(messages, "first").running;
    await turn(messages, "second").running;
    expect(messages.filter((message) => message.role === "assistant")).toEqual([
      { role: "assistant", content: [{ type: "text", text: "one" }] },
      { role: "assistant", content: [{ type: "text", text: "two" }] },
    ]);
  });

  it("a text's text or a call's input left out of its block's start is an empty one: the history holds what the API takes", async () => {
    const call = { type: "tool_use", id: "toolu_bare", name: "bash" }; // no input: the call has no pieces either
    provider.scripts = [
      [start, sse("content_block_start", { index: 0, content_block: { type: "text" } }), sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hello" } }), sse("content_block_stop", { index: 0 }), sse("content_block_start", { index: 1, content_block: call }), sse("content_block_stop", { index: 1 }), sse("message_delta", { delta: { stop_reason: "tool_use" }, usage: {} }), sse("message_stop")],
      await eventsOf(reply.text("ok")),
    ];
    const messages: MessageParam[] = [];
    await turn(messages, "go").running;
    expect(messages[1]).toEqual({ role: "assistant", content: [{ type: "text", text: "Hello" }, { ...call, input: {} }] });
    expect(apiProblem(provider.requests[1])).toBeUndefined();
  });

  it("ends the reply at message_stop, even when the provider keeps the stream open", async () => {
    await quickly(async () => {
      provider.scripts = [[start, ...text(0, "Whole."), ...end, "wait"]];
      const messages: MessageParam[] = [];
      const { running, screen } = turn(messages, "go");
      await running;
      expect(screen.text()).toBe("Whole.\n");
      expect(messages[1]).toEqual({ role: "assistant", content: [{ type: "text", text: "Whole." }] });
      await until(() => provider.hungUp[0] === true, "the connection to be closed");
    });
  });

  it.each([
    ["a piece of a block that never started", [start, sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "lost" } }), ...text(0, "kept"), ...end], "content_block_delta for block 0"],
    ["a block started past the next index", [start, ...text(0, "a"), ...text(300_000_000, "far"), ...end], "content_block_start for block 300000000"],
    ["a block stopped twice", [start, ...text(0, "a"), sse("content_block_stop", { index: 0 }), ...end], "content_block_stop for block 0"],
    ["a second message_start", [start, ...text(0, "a"), start, ...end], "message_start"],
  ])("events out of the API's order (%s) are one line that names the event; nothing is kept", async (_, events, named) => {
    provider.scripts = [events as string[]];
    const messages: MessageParam[] = [];
    await expect(turn(messages, "go").running).rejects.toThrow(`the model's stream sent ${named} out of the API's order, so it was given up; nothing of the reply was kept`);
    expect(messages).toHaveLength(1);
  });

  it("an error event mid-reply (overloaded) is one line with the provider's words, escapes shown; nothing is kept", async () => {
    provider.scripts = [[start, ...text(0, "Half"), sse("error", { error: { type: "overloaded_error", message: "Over\x1b[2Jloaded" } })]];
    const messages: MessageParam[] = [];
    const error = await turn(messages, "go").running.catch((e: Error) => e);
    expect(stage.program.describeProviderError(error)).toBe("[error] the model's stream ended with an error (overloaded_error: Over\\e[2Jloaded); nothing of the reply was kept");
    expect(messages).toHaveLength(1);
  });

  it("an event that is not JSON is one line, and nothing of it is printed raw", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      provider.scripts = [[start, `event: content_block_start\ndata: {oops \x1b]0;owned\x07\n\n`, "wait"]];
      const messages: MessageParam[] = [];
      await expect(turn(messages, "go").running).rejects.toThrow("the model's stream sent an event that is not JSON, so it was given up; nothing of the reply was kept");
      expect(logged).not.toHaveBeenCalled();
      expect(messages).toHaveLength(1);
    } finally {
      logged.mockRestore();
    }
  });

  it.each([
    ["a whole reply (JSON): a provider that does not stream", { "content-type": "application/json" }, reply.text("whole"), "application/json"],
    ["a page (HTML): a wrong address", { "content-type": "text/html; charset=utf-8" }, "<html>Log in to the Wi-Fi</html>", "text/html"],
  ])("an answer that is no event stream, %s, is said in one line", async (_, headers, body, type) => {
    provider.scripts = [[{ status: 200, headers, body }]];
    const messages: MessageParam[] = [];
    await expect(turn(messages, "go").running).rejects.toThrow(`${provider.url} did not answer with an event stream (it sent ${type}). Check ANTHROPIC_BASE_URL; a provider that does not stream needs a stage that does not (s14).`);
    expect(messages).toHaveLength(1);
  });
});

describe("s13 --record", () => {
  useWorkspace();

  it("saves each streamed reply as the whole message it made, without holding it back, and the recording replays", async () => {
    const replies = [reply.tools([{ id: "toolu_rec_1", name: "read_file", input: { path: "package.json" } }], "Reading it."), reply.text("It is version 1.4.2.")];
    const [firstPiece, rest] = splitAt(await eventsOf(replies[0]), /text_delta/);
    provider.scripts = [[...firstPiece, "wait", ...rest], await eventsOf(replies[1])];
    writeFileSync("package.json", '{ "version": "1.4.2" }\n');
    const file = path.resolve("recorded.json");
    const run = onScreen("which version?\n", () => stage.program.runProgram({ stage: "s13", title: "Streaming", agentLoop: stage.agentLoop, hasKey: true, args: ["--record", file] }));
    await until(() => provider.isWaiting(), "the first reply held");
    await new Promise((resolve) => setTimeout(resolve, 50));
    provider.release();
    const { value, output } = await run;
    expect(value, output).toBe(0);
    expect(output).toContain("Reading it."); // on the screen as it came: the recorder held nothing back
    const scenario = JSON.parse(readFileSync(file, "utf8"));
    expect(scenario.prompts).toEqual(["which version?"]);
    expect(scenario.replies).toEqual(JSON.parse(JSON.stringify(replies)));
    const again = await stage.session.replayScenario(stage, scenario, { workspace: path.resolve("again") });
    expect(again.problems).toEqual([]);
  });

  it("does not save a turn whose reply was cut short by Ctrl-C: it was never whole", async () => {
    const [upToHalf, rest] = splitAt(await eventsOf(textReply("Done reading.", "A second block cut short")), /"index":1,"delta"/, 2);
    provider.scripts = [[...upToHalf, "wait", ...rest]];
    const file = path.resolve("cut.json");
    const run = onScreen("explain\n", () => stage.program.runProgram({ stage: "s13", title: "Streaming", agentLoop: stage.agentLoop, hasKey: true, args: ["--record", file] }));
    await until(() => provider.isWaiting(), "the reply held");
    await new Promise((resolve) => setTimeout(resolve, 50));
    stage.term.interrupt();
    const { output } = await run;
    expect(output).toContain("Nothing to save: the session had no complete turn.");
    expect(existsSync(file)).toBe(false);
  });
});

describe("s13 at a real terminal", () => {
  const workspace = useWorkspace();

  it("Ctrl-C during a reply stops it, the prompt comes back, and q leaves", async () => {
    const [upToHalf, rest] = splitAt(await eventsOf(textReply("Done reading.", "Now a long answer that never ends")), /"index":1,"delta"/, 2);
    provider.scripts = [[...upToHalf, "wait", ...rest]];
    const run = await runInTerminal("s13", {
      cwd: workspace.dir,
      env: { ANTHROPIC_API_KEY: "sk-ant-test-0123456789", ANTHROPIC_BASE_URL: provider.url },
      steps: [
        { when: /s13 >> /, keys: "explain\r" },
        { when: /Now a long answer/, keys: "\x03" },
        { when: /interrupted \(Ctrl-C\)[\s\S]*s13 >> /, keys: "q\r" },
      ],
    });
    expect(run.stdout).toContain("[the reply was interrupted (Ctrl-C); what was complete of it is kept]");
    expect(run.stdout).toContain("[exit 0]");
    expect(provider.hungUp).toEqual([true]);
  });
});
