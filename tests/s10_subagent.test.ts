// s10: a subagent runs its own small loop inside the task tool. Each rule is a test in its own
// workspace, driving the real loop with recorded replies: the child starts from nothing and
// only its answer (with one line of figures) comes back, proved on the request bodies; it has
// no task tool, and a forged call is refused; it stops at 30 model calls; a failure is an
// error result and the parent goes on; tasks in one reply run together and their results come
// back in call order; Ctrl-C cancels them; and a child's edits and commands go through the same
// approval as the parent's.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { http } from "msw/core/http";
import { setupServer } from "msw/node";
import type { Message, MessageCreateParams, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario, type Scenario } from "../lib/course/scenario.ts";
import {
  eventually, isRunning, onScreen, reply, resultText, scenarioOf, stageFile, toolResults, usePrinted, useReplay, useWorkspace,
} from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s10");
type Terminal = typeof import("../lib/runtime/terminal.ts");
type Stage = {
  term: Terminal;
  session: typeof import("../lib/course/session.ts");
  program: typeof import("../lib/runtime/program.ts");
  registry: { getTool(name: string): { name: string; kind: string } | undefined };
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  agentLoop(messages: MessageParam[]): Promise<void>;
  main(args?: string[]): Promise<never>;
  TOOLS: { name: string; input_schema: { properties?: Record<string, unknown> } }[];
};

let current: Stage | undefined;
const loaded = new Map<string, Stage>();

/**
 * The stage loaded with an approval mode (read when it loads), with the terminal module and the
 * session module of its own module graph. Loaded once per mode, unless `fresh` (a test that
 * changes what the stage remembers, such as a tool allowed for the rest of the session).
 */
async function stageIn(mode: string, options: { fresh?: boolean } = {}): Promise<Stage> {
  const known = loaded.get(mode);
  if (known && !options.fresh) return (current = known);
  vi.stubEnv("APPROVAL_MODE", mode);
  vi.resetModules();
  try {
    const stage = await import(FILE);
    current = { ...stage, term: await import("../lib/runtime/terminal.ts"), session: await import("../lib/course/session.ts"), program: await import("../lib/runtime/program.ts") } as Stage;
    if (!options.fresh) loaded.set(mode, current);
    return current;
  } finally {
    vi.unstubAllEnvs();
  }
}

/** A person at the stage's terminal who types these answers, then is gone. */
const person = (...answers: string[]) => current!.term.useTerminal(current!.term.scriptedTerminal(answers, new PassThrough() as unknown as NodeJS.WriteStream));
afterEach(() => current?.term.useTerminal(current.term.nobody));

const task = (id: string, description: string, prompt: string) => ({ id, name: "task", input: { description, prompt } });
/** Replies with token counts, so the figures line can be checked. */
const counted = (message: Message, input: number, output: number): Message => ({ ...message, usage: { input_tokens: input, output_tokens: output } }) as Message;
/** A scenario of one prompt whose replies include `side` subagent endings. */
const oneTurn = (replies: Message[], side: number, extra: Partial<Scenario> = {}): Scenario => ({ ...scenarioOf(replies), prompts: ["go"], sideTurns: side, ...extra });
const isChild = (body: MessageCreateParams) => String(body.system).includes("You are a subagent");
const go = (): MessageParam[] => [{ role: "user", content: "go" }];

/**
 * A model endpoint that answers by looking at each request, for what a replay in fixed order
 * cannot do: children running at the same time, delays, errors, a call that never answers.
 */
function useModel() {
  let server: ReturnType<typeof setupServer> | undefined;
  afterEach(() => {
    server?.close();
    server = undefined;
  });
  return (answer: (body: MessageCreateParams, request: Request) => Promise<Message | Response> | Message | Response) => {
    const requests: MessageCreateParams[] = [];
    server = setupServer(
      http.post("*/v1/messages", async ({ request }) => {
        const body = (await request.clone().json()) as MessageCreateParams;
        requests.push(body);
        const answered = await answer(body, request);
        return answered instanceof Response ? answered : Response.json(answered);
      }),
    );
    server.listen({ onUnhandledRequest: "error" });
    return requests;
  };
}

const failure = (status: number, message: string) =>
  Response.json({ type: "error", error: { type: "api_error", message } }, { status, headers: { "x-should-retry": "false" } });
const waitMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The tool result a request's last message gives for one call. */
const resultFor = (body: MessageCreateParams, id: string) => {
  const last = body.messages.at(-1)!;
  return (last.content as ToolResultBlockParam[]).find((block) => block.tool_use_id === id)!;
};

describe("s10 the task tool", () => {
  useWorkspace();
  usePrinted();

  it("is in the registry as a read-kind tool taking a description and a prompt", async () => {
    const { TOOLS, registry } = await stageIn("default");
    expect(TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file", "task"]);
    expect(Object.keys(TOOLS.find((tool) => tool.name === "task")!.input_schema.properties!)).toEqual(["description", "prompt"]);
    expect(registry.getTool("task")?.kind).toBe("read");
  });

  it.each([
    [{ description: "look" }, 'Error: task was not run: "prompt" is required.'],
    [{ description: "look", prompt: 5 }, 'Error: task was not run: "prompt" must be a string.'],
    [{ description: "look", prompt: "   " }, "Error: the prompt is empty: say what the subagent should do"],
    [{ description: "", prompt: "survey src" }, "Error: the description is empty: say what the subagent should do"],
  ])("%j is refused before any subagent starts: %s", async (input, message) => {
    const { runTool } = await stageIn("default");
    const result = await runTool({ type: "tool_use", id: "toolu_bad", name: "task", input } as ToolUseBlock);
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toBe(message);
  });
});

describe("s10 a clean context: only the answer comes back", () => {
  useWorkspace();
  usePrinted();
  const replay = useReplay();

  it("the child starts fresh, with its own system prompt and no task tool; the parent's next request holds its answer and nothing else of it", async () => {
    const { agentLoop } = await stageIn("default");
    writeFileSync("notes.txt", "SECRET-CONTENT-OF-NOTES");
    const session = replay(
      oneTurn(
        [
          counted(reply.tools([task("toolu_task", "read notes", "Read notes.txt and tell me its first word.")], "Sending a subagent."), 900, 40),
          counted(reply.tools([{ id: "toolu_child_read", name: "read_file", input: { path: "notes.txt" } }], "CHILD-THINKING-ALOUD"), 300, 20),
          counted(reply.text("The first word is SECRET."), 410, 15),
          counted(reply.text("Your notes start with SECRET."), 1000, 12),
        ],
        1,
      ),
    );
    const messages = go();
    await agentLoop(messages);
    expect(session.verdict()).toEqual([]);
    const [parentFirst, childFirst, childSecond, parentSecond] = session.requests;

    // The child: a conversation of its own, from its prompt alone, with its own system prompt and tools.
    expect(childFirst.messages).toEqual([{ role: "user", content: "Read notes.txt and tell me its first word." }]);
    expect(childFirst.system).not.toEqual(parentFirst.system);
    expect(String(childFirst.system)).toContain("You are a subagent");
    const names = (request: MessageCreateParams) => (request.tools as { name: string }[]).map((tool) => tool.name);
    expect(names(childFirst)).toEqual(["bash", "read_file", "write_file", "edit_file"]);
    expect(names(parentFirst)).toContain("task");
    expect(resultText(resultFor(childSecond, "toolu_child_read"))).toBe("SECRET-CONTENT-OF-NOTES");

    // The parent: its own three messages, the last one the child's answer and one line of figures.
    expect(parentSecond.messages).toHaveLength(3);
    expect(parentSecond.messages.slice(0, 2)).toEqual(parentFirst.messages.concat(messages[1]));
    expect(toolResults(session, 3)).toEqual([
      {
        type: "tool_result",
        tool_use_id: "toolu_task",
        content: "The first word is SECRET.\n\n[subagent: 2 model calls, 1 tool call, 745 tokens (710 in, 35 out)]",
      },
    ]);
    const sent = JSON.stringify(parentSecond);
    for (const trace of ["SECRET-CONTENT-OF-NOTES", "toolu_child_read", "CHILD-THINKING-ALOUD", "You are a subagent"]) expect(sent).not.toContain(trace);
    expect(messages).toHaveLength(4); // the parent's history after the turn: nothing of the child's either
  });

  it("shows the person the child's steps indented and dimmed under its label, then the figures", async () => {
    const { agentLoop } = await stageIn("default");
    const printed: string[] = [];
    vi.spyOn(console, "log").mockImplementation((...args) => void printed.push(args.join(" ")));
    // At a terminal, dim is an escape code.
    const tty = Object.getOwnPropertyDescriptor(process.stdout, "isTTY");
    Object.defineProperty(process.stdout, "isTTY", { value: true, configurable: true });
    onTestFinished(() => {
      if (tty) Object.defineProperty(process.stdout, "isTTY", tty);
      else delete (process.stdout as { isTTY?: boolean }).isTTY;
    });
    writeFileSync("a.txt", "one\ntwo\n");
    replay(
      oneTurn(
        [
          reply.tools([task("toolu_t", "count lines", "How many lines has a.txt?")], "Asking a subagent."),
          reply.tools([{ name: "read_file", input: { path: "a.txt" } }], "Reading a.txt."),
          reply.text("a.txt has 2 lines."),
          reply.text("Two lines."),
        ],
        1,
      ),
    );
    await agentLoop(go());
    const plain = printed.map((line) => line.replace(/\x1b\[\d+m/g, ""));
    const child = plain.flatMap((line, i) => (line.includes("[count lines]") ? [printed[i]] : []));
    expect(plain.filter((line) => line.includes("[count lines]"))).toEqual([
      "  [count lines] Reading a.txt.",
      "  [count lines] > ReadFile a.txt",
      "  [count lines]   a.txt: 2 of 2 lines",
      "  [count lines] a.txt has 2 lines.",
    ]);
    expect(child.every((line) => line.startsWith("\x1b[2m  [count lines]"))).toBe(true); // dimmed
    expect(plain).toContain("Asking a subagent."); // the parent's own text stays as it is
    expect(plain).toContain("  subagent: 2 model calls, 1 tool call, 40 tokens (20 in, 20 out)");
  });
});

describe("s10 the child cannot start another child", () => {
  useWorkspace();
  usePrinted();
  const replay = useReplay();

  it("a forged task call from the child is refused, the other calls of its reply still run in order, and no grandchild asks the model", async () => {
    const { agentLoop } = await stageIn("default");
    writeFileSync("a.txt", "A");
    writeFileSync("b.txt", "B");
    const session = replay(
      oneTurn(
        [
          reply.tools([task("toolu_task", "nested", "Try to nest.")]),
          reply.tools([
            { id: "toolu_a", name: "read_file", input: { path: "a.txt" } },
            { id: "toolu_forged", name: "task", input: { description: "deeper", prompt: "Go deeper." } },
            { id: "toolu_b", name: "read_file", input: { path: "b.txt" } },
          ]),
          reply.text("I could not nest: read a and b."),
          reply.text("done"),
        ],
        1,
      ),
    );
    await agentLoop(go());
    expect(session.verdict()).toEqual([]); // four requests, no fifth from a grandchild
    const results = toolResults(session, 2);
    expect(results.map((result) => result.tool_use_id)).toEqual(["toolu_a", "toolu_forged", "toolu_b"]);
    expect(results.map(resultText)).toEqual(["A", "Error: a subagent cannot start another subagent. Your tools: bash, read_file, write_file, edit_file.", "B"]);
    expect(results[1].is_error).toBe(true);
  });
});

describe("s10 the limit and failures: a clear error, and the parent goes on", () => {
  useWorkspace();
  usePrinted();
  const replay = useReplay();
  const model = useModel();

  it("a child that never stops is ended at 30 model calls; the calls of its last reply never run", async () => {
    const { agentLoop } = await stageIn("yolo");
    const endless = Array.from({ length: 30 }, (_, i) => reply.tools([{ name: "write_file", input: { path: `call-${i + 1}.txt`, content: "x" } }]));
    const session = replay(oneTurn([reply.tools([task("toolu_task", "endless", "Never stop.")]), ...endless, reply.text("It ran out of calls; I will do it myself.")], 0));
    await agentLoop(go());
    expect(session.verdict()).toEqual([]);
    expect(session.requests.filter(isChild)).toHaveLength(30);
    const [result] = toolResults(session, 31);
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toBe(
      "Error: the subagent [endless] stopped: it reached its limit of 30 model calls without finishing; give it a smaller task. " +
        "Nothing it found came back. [subagent: 30 model calls, 29 tool calls, 600 tokens (300 in, 300 out)]",
    );
    expect(existsSync("call-29.txt")).toBe(true);
    expect(existsSync("call-30.txt")).toBe(false);
  });

  it.each([
    ["its model call fails", () => failure(500, "boom"), "its model call failed: 500 the provider had a problem: try again shortly (boom)"],
    ["its reply is cut off", () => reply.text("The modules are", "max_tokens"), "its last reply was cut off at 8000 tokens"],
    ["its context window is full", () => reply.text("The modules are", "model_context_window_exceeded"), "its last reply was cut off: its context window was full; give it a smaller task"],
    ["its model declines", () => reply.text("I will not do that.", "refusal"), "its model declined to continue"],
    // A reply of thinking alone: something came back, but no text to report.
    ["it ends without an answer", () => ({ ...reply.text("x"), content: [{ type: "thinking" as const, thinking: "Nothing to say.", signature: "sig" }] }), "it finished without writing an answer"],
  ])("a child whose %s gives an error result, and the parent goes on", async (_case, childAnswer, why) => {
    const { agentLoop } = await stageIn("default");
    const requests = model((body) => (isChild(body) ? childAnswer() : body.messages.length === 1 ? reply.tools([task("toolu_task", "fails", "Fail.")]) : reply.text("I will do it myself.")));
    const messages = go();
    await agentLoop(messages);
    expect(requests).toHaveLength(3);
    const result = resultFor(requests[2], "toolu_task");
    expect(result.is_error).toBe(true);
    const calls = why.startsWith("its model call failed") ? 0 : 1;
    expect(resultText(result)).toBe(`Error: the subagent [fails] stopped: ${why}. Nothing it found came back. [subagent: ${calls} model call${calls === 1 ? "" : "s"}, 0 tool calls, ${calls * 20} tokens (${calls * 10} in, ${calls * 10} out)]`);
    expect(messages.at(-1)).toMatchObject({ role: "assistant", content: [{ text: "I will do it myself." }] });
  });

  it("a last reply that stops at a stop sequence is a normal ending: its text is the answer", async () => {
    const { agentLoop } = await stageIn("default");
    const session = replay(oneTurn([reply.tools([task("toolu_task", "stops", "Stop at END.")]), reply.text("All three modules export one function.", "stop_sequence"), reply.text("ok")], 1));
    await agentLoop(go());
    expect(session.verdict()).toEqual([]);
    expect(toolResults(session, 2)).toEqual([
      { type: "tool_result", tool_use_id: "toolu_task", content: "All three modules export one function.\n\n[subagent: 1 model call, 0 tool calls, 20 tokens (10 in, 10 out)]" },
    ]);
  });

  it("a paused reply (pause_turn) is sent back as it is and the child goes on; the reply that ends it is the answer", async () => {
    const { agentLoop } = await stageIn("default");
    const paused = reply.text("Searching the web for the changelog.", "pause_turn");
    const session = replay(oneTurn([reply.tools([task("toolu_task", "search", "Find the changelog.")]), paused, reply.text("The changelog is at CHANGES.md."), reply.text("ok")], 2));
    await agentLoop(go());
    expect(session.verdict()).toEqual([]);
    expect(session.requests[2].messages).toEqual([{ role: "user", content: "Find the changelog." }, { role: "assistant", content: paused.content }]);
    expect(resultText(toolResults(session, 3)[0])).toBe("The changelog is at CHANGES.md.\n\n[subagent: 2 model calls, 0 tool calls, 40 tokens (20 in, 20 out)]");
  });

  it("a child still paused (pause_turn) at its 30th model call is ended by the limit: its half-done text is not taken as its answer", async () => {
    const { agentLoop } = await stageIn("yolo");
    const working = Array.from({ length: 29 }, (_, i) => reply.tools([{ name: "write_file", input: { path: `call-${i + 1}.txt`, content: "x" } }]));
    const paused = reply.text("Still searching; the first results say", "pause_turn");
    const session = replay(oneTurn([reply.tools([task("toolu_task", "paused", "Search.")]), ...working, paused, reply.text("It ran out of calls.")], 1));
    await agentLoop(go());
    expect(session.verdict()).toEqual([]);
    expect(session.requests.filter(isChild)).toHaveLength(30);
    const [result] = toolResults(session, 31);
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toBe(
      "Error: the subagent [paused] stopped: it reached its limit of 30 model calls without finishing; give it a smaller task. " +
        "Nothing it found came back. [subagent: 30 model calls, 29 tool calls, 600 tokens (300 in, 300 out)]",
    );
  });
});

describe("s10 tasks side by side", () => {
  useWorkspace();
  const printed = usePrinted();
  const model = useModel();

  it("run at the same time; the results go back in call order, even when the second finishes first", async () => {
    const { agentLoop } = await stageIn("default");
    const events: string[] = [];
    const delays: Record<string, number> = { "Survey alpha.": 300, "Survey beta.": 100 };
    const inFlight: [number, number][] = [];
    let started = 0;
    const requests = model(async (body) => {
      if (!isChild(body)) {
        return body.messages.length === 1 ? reply.tools([task("toolu_alpha", "alpha", "Survey alpha."), task("toolu_beta", "beta", "Survey beta.")]) : reply.text("Both done.");
      }
      const who = String(body.messages[0].content);
      if (body.messages.length === 1) {
        if (started++ === 0) events.push("first child asked");
        events.push(`${who} asked`);
        const asked = Date.now();
        await waitMs(delays[who]);
        inFlight.push([asked, Date.now()]);
        events.push(`${who} answered`);
        return reply.tools([{ name: "bash", input: { command: "true" } }], `${who} thinking`);
      }
      return reply.text(`${who} report`);
    });
    await agentLoop(go());
    // Both asked before either was answered: they ran together, not one after the other.
    expect(events.slice(0, 3)).toEqual(["first child asked", "Survey alpha. asked", "Survey beta. asked"]);
    expect(events.indexOf("Survey beta. answered")).toBeLessThan(events.indexOf("Survey alpha. answered"));
    // By time, as a ratio that a busy machine does not change: the time the two model calls were
    // under way, together, over the sum of each one's. One after the other: 1; side by side: 0.75.
    const [[aFrom, aTo], [bFrom, bTo]] = inFlight;
    const together = Math.max(aTo, bTo) - Math.min(aFrom, bFrom);
    expect(together / (aTo - aFrom + (bTo - bFrom))).toBeLessThan(0.9);
    const results = requests.at(-1)!.messages.at(-1)!.content as ToolResultBlockParam[];
    expect(results.map((result) => result.tool_use_id)).toEqual(["toolu_alpha", "toolu_beta"]);
    expect(results.map(resultText).map((text) => text.split("\n")[0])).toEqual(["Survey alpha. report", "Survey beta. report"]);
    // Their steps, interleaved on the screen, still say whose they are.
    const lines = printed.join("\n").split("\n");
    for (const [label, who] of [["alpha", "Survey alpha."], ["beta", "Survey beta."]]) {
      expect(lines.filter((line) => line.startsWith(`  [${label}] `))).toEqual([
        `  [${label}] ${who} thinking`,
        `  [${label}] > Shell true`,
        `  [${label}]   Not run: bash needs a person's approval (approval mode default) and no one is at the terminal.`,
        `  [${label}] ${who} report`,
      ]);
    }
  });

  it("at most 4 run at once: of 10 tasks in one reply, the others wait their turn, and the results still go back in call order", async () => {
    const { agentLoop } = await stageIn("default");
    const tasks = Array.from({ length: 10 }, (_, i) => task(`toolu_${i}`, `part ${i}`, `Survey part ${i}.`));
    const seen = { now: 0, most: 0 };
    const requests = model(async (body) => {
      if (!isChild(body)) return body.messages.length === 1 ? reply.tools(tasks) : reply.text("All surveyed.");
      seen.most = Math.max(seen.most, ++seen.now); // model requests of subagents under way at once
      await waitMs(60);
      seen.now -= 1;
      return reply.text(`${body.messages[0].content} done`);
    });
    await agentLoop(go());
    expect(seen.most).toBe(4);
    expect(requests.filter(isChild)).toHaveLength(10);
    const results = requests.at(-1)!.messages.at(-1)!.content as ToolResultBlockParam[];
    expect(results.map((result) => result.tool_use_id)).toEqual(tasks.map((call) => call.id));
    expect(results.map((result) => resultText(result).split("\n")[0])).toEqual(tasks.map((call) => `${call.input.prompt} done`));
  });
});

describe("s10 Ctrl-C", () => {
  const workspace = useWorkspace();
  usePrinted();
  const model = useModel();

  it("cancels every running child, in a command or waiting for its model, and the parent receives 'cancelled' and goes on", async () => {
    const { agentLoop, term } = await stageIn("yolo");
    let waiting = 0;
    const requests = model(async (body, request) => {
      if (!isChild(body)) {
        return body.messages.length === 1 ? reply.tools([task("toolu_cmd", "runs", "Run it."), task("toolu_wait", "waits", "Wait.")]) : reply.text("Stopped, as you asked.");
      }
      if (String(body.messages[0].content) === "Run it.") return reply.tools([{ name: "bash", input: { command: "echo $$ > pid.txt; exec sleep 30" } }]);
      waiting += 1; // this child's model call never answers: only the abort ends it
      await new Promise((resolve) => request.signal.addEventListener("abort", resolve));
      return failure(500, "aborted");
    });
    const pidFile = path.join(workspace.dir, "pid.txt");
    const pressCtrlC = setInterval(() => {
      if (waiting === 1 && existsSync(pidFile) && readFileSync(pidFile, "utf8").trim()) {
        clearInterval(pressCtrlC);
        term.interrupt();
      }
    }, 20);
    const begun = Date.now();
    await agentLoop(go());
    clearInterval(pressCtrlC);
    expect(Date.now() - begun).toBeLessThan(5000);
    const last = requests.at(-1)!;
    for (const id of ["toolu_cmd", "toolu_wait"]) {
      expect(resultFor(last, id).is_error).toBe(true);
      expect(resultText(resultFor(last, id))).toBe("Error: cancelled by the user (Ctrl-C); the tool was stopped.");
    }
    expect(requests.filter((body) => !isChild(body))).toHaveLength(2); // the parent went on
    const pid = Number(readFileSync(pidFile, "utf8"));
    expect(await eventually(() => !isRunning(pid))).toBe(true);
  });

  it("cancels the tasks still waiting for a place too: none of them starts, and each is answered 'cancelled'", async () => {
    const { agentLoop, term } = await stageIn("default");
    const ids = Array.from({ length: 6 }, (_, i) => `toolu_${i}`);
    let started = 0;
    const requests = model(async (body, request) => {
      if (!isChild(body)) return body.messages.length === 1 ? reply.tools(ids.map((id) => task(id, id, `Wait ${id}.`))) : reply.text("Stopped.");
      started += 1; // a running subagent's model call that only the abort ends
      await new Promise((resolve) => request.signal.addEventListener("abort", resolve));
      return failure(500, "aborted");
    });
    const pressCtrlC = setInterval(() => {
      if (started < 4) return;
      clearInterval(pressCtrlC);
      setTimeout(() => term.interrupt(), 50); // a moment for a fifth to start, were there no limit
    }, 10);
    await agentLoop(go());
    clearInterval(pressCtrlC);
    expect(started).toBe(4);
    const last = requests.at(-1)!;
    expect(ids.map((id) => resultText(resultFor(last, id)))).toEqual(ids.map(() => "Error: cancelled by the user (Ctrl-C); the tool was stopped."));
    expect(requests.filter((body) => !isChild(body))).toHaveLength(2);
  });
});

describe("s10 approval: a child is never a way around the approval mode", () => {
  useWorkspace();
  const printed = usePrinted();
  const replay = useReplay();

  /** The parent sends one child, which asks to write a file and then to run a command. */
  const writeAndRun = () =>
    oneTurn(
      [
        reply.tools([task("toolu_task", "change", "Write out.txt, then run echo ran.")]),
        reply.tools([{ id: "toolu_w", name: "write_file", input: { path: "out.txt", content: "from the child" } }]),
        reply.tools([{ id: "toolu_b", name: "bash", input: { command: "echo ran > ran.txt" } }]),
        reply.text("Tried both."),
        reply.text("done"),
      ],
      1,
    );

  it("default, no one at the terminal: the child's edit and command are refused, as the parent's would be", async () => {
    const { agentLoop } = await stageIn("default");
    const session = replay(writeAndRun());
    await agentLoop(go());
    expect(resultText(toolResults(session, 2)[0])).toBe("Not run: write_file needs a person's approval (approval mode default) and no one is at the terminal.");
    expect(resultText(toolResults(session, 3)[0])).toBe("Not run: bash needs a person's approval (approval mode default) and no one is at the terminal.");
    expect(existsSync("out.txt") || existsSync("ran.txt")).toBe(false);
  });

  it("default with a person: the child's calls ask them, naming the subagent; yes runs, no refuses", async () => {
    const { agentLoop } = await stageIn("default");
    person("y", "n");
    const session = replay(writeAndRun());
    await agentLoop(go());
    expect(readFileSync("out.txt", "utf8")).toBe("from the child");
    expect(resultText(toolResults(session, 3)[0])).toBe("Not run: the person said no.");
    expect(existsSync("ran.txt")).toBe(false);
    const screen = printed.join("\n");
    expect(screen).toContain("Create out.txt? (asked by the subagent [change])");
    expect(screen).toContain("Run this command? (asked by the subagent [change])");
  });

  it("plan: the task runs (it only reads), and the child's edit and command are refused as in plan mode", async () => {
    const { agentLoop } = await stageIn("plan");
    person("y", "y");
    const session = replay(writeAndRun());
    await agentLoop(go());
    for (const index of [2, 3]) expect(resultText(toolResults(session, index)[0])).toMatch(/^Not run: the agent is in plan mode/);
    expect(existsSync("out.txt") || existsSync("ran.txt")).toBe(false);
  });

  it("yolo: the child's calls run without asking, as the parent's do", async () => {
    const { agentLoop } = await stageIn("yolo");
    const session = replay(writeAndRun());
    await agentLoop(go());
    expect(session.verdict()).toEqual([]);
    expect(readFileSync("out.txt", "utf8")).toBe("from the child");
    expect(readFileSync("ran.txt", "utf8")).toBe("ran\n");
  });
});

describe("s10 questions from children side by side", () => {
  useWorkspace();
  usePrinted();
  const model = useModel();

  /** A person who answers each question after a moment, and notes how many were open at once. */
  function slowPerson(answer: string) {
    const seen = { open: 0, most: 0, asked: 0 };
    current!.term.useTerminal({
      hasPerson: true,
      close() {},
      async ask() {
        seen.asked += 1;
        seen.most = Math.max(seen.most, ++seen.open);
        await waitMs(80);
        seen.open -= 1;
        return answer;
      },
    });
    return seen;
  }

  const twoChildrenWriting = (body: MessageCreateParams) => {
    if (!isChild(body)) return body.messages.length === 1 ? reply.tools([task("toolu_1", "one", "Write one.txt."), task("toolu_2", "two", "Write two.txt.")]) : reply.text("ok");
    const name = String(body.messages[0].content).includes("one") ? "one" : "two";
    return body.messages.length === 1 ? reply.tools([{ name: "write_file", input: { path: `${name}.txt`, content: name } }]) : reply.text(`wrote ${name}.txt`);
  };

  it("wait their turn: the person is asked one question at a time", async () => {
    const { agentLoop } = await stageIn("default");
    model(twoChildrenWriting);
    const seen = slowPerson("y");
    await agentLoop(go());
    expect(seen.asked).toBe(2);
    expect(seen.most).toBe(1);
    expect([readFileSync("one.txt", "utf8"), readFileSync("two.txt", "utf8")]).toEqual(["one", "two"]);
  });

  it("'a' to the first child's question lets the second child's same tool run without asking", async () => {
    const { agentLoop } = await stageIn("default", { fresh: true });
    model(twoChildrenWriting);
    const seen = slowPerson("a");
    await agentLoop(go());
    expect(seen.asked).toBe(1);
    expect([existsSync("one.txt"), existsSync("two.txt")]).toEqual([true, true]);
  });
});

describe("s10 the demo", () => {
  useWorkspace();
  usePrinted();

  it("the parent sends a child to survey src/ and writes the page from its summary alone", async () => {
    const stage = await stageIn("default");
    const scenario = loadScenario("s10");
    const session = await stage.session.replayScenario(stage, scenario, { workspace: process.cwd() });
    expectWholeSession("s10", session, scenario);
    expect(readFileSync("docs/modules.md", "utf8")).toMatch(/^# Modules[\s\S]*## src\/receipt\.js/);
    // The parent's request after the task: the summary and the figures, none of the sources.
    const afterTask = session.requests[4];
    expect(isChild(afterTask)).toBe(false);
    expect(resultText(resultFor(afterTask, "toolu_s10_demo_01"))).toMatch(/^- `src\/prices\.js`[\s\S]*\n\n\[subagent: 3 model calls, 4 tool calls, 4135 tokens \(3769 in, 366 out\)\]$/);
    expect(JSON.stringify(afterTask)).not.toContain("Math.round(euros * 100)");
    expect(session.requests.filter(isChild)).toHaveLength(3);
  });
});

describe("s10 record mode", () => {
  useWorkspace();
  const model = useModel();

  it("records a session with a subagent as a scenario that loads and replays", async () => {
    const stage = await stageIn("default");
    const replies = [reply.tools([task("toolu_rec", "look", "Say hi.")]), reply.text("hi"), reply.text("The subagent said hi.")];
    const queue = [...replies];
    model(() => queue.shift()!);
    const file = path.join(process.cwd(), "recorded.json");
    const { value: code } = await onScreen("ask a subagent\n", () =>
      stage.program.runProgram({ stage: "s10", title: "Subagents", agentLoop: stage.agentLoop, hasKey: true, args: ["--record", file] }),
    );
    expect(code).toBe(0);
    const scenario = loadScenario("s10", file);
    expect(scenario.sideTurns).toBe(1);
    expect(scenario.replies).toHaveLength(3);
    const session = await stage.session.replayScenario(stage, scenario, { workspace: path.join(process.cwd(), "again") });
    expect(session.problems).toEqual([]);
  });
});
