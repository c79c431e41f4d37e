// The agent loop, driven by recorded replies: what the model receives back, in what order,
// and what happens when the model does something odd. Every stage shares the loop's text
// (stages.test.ts proves it), so these run against each stage's own module.
import { readFileSync, writeFileSync } from "node:fs";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { reply, resultText, scenarioOf, stageFiles, stageId, stagesWithTool, toolParameters, toolResults, useReplay, useWorkspace, usePrinted } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

// The loop is what is tested here, not the approval step (tests/s06_tool_registry.test.ts has
// that): from s06, stages load in yolo mode, so their tools run without asking a person.
// (Each stage's demo, replayed through its loop, is checked whole by tests/whole-session.ts.)
vi.stubEnv("APPROVAL_MODE", "yolo");
const stages = stageFiles().map((file) => [stageId(file), file] as const);

describe.each(stages)("%s agent loop", (_stage, file) => {
  const workspace = useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();
  // The model's text on the screen: printed whole (console.log), or written as it streams (s13).
  let written = "";
  beforeEach(() => {
    written = "";
    vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => ((written += String(chunk)), true));
  });
  const shown = (text: string) => printed.includes(text) || written.split("\n").includes(text);

  it("answers every tool call of a reply in one user message, in order, each with its id", async () => {
    const { agentLoop } = await import(file);
    const session = replay(
      scenarioOf([
        reply.tools([
          { id: "toolu_a", name: "bash", input: { command: "printf first > a.txt; echo one" } },
          { id: "toolu_b", name: "bash", input: { command: "cat a.txt" } },
        ]),
        reply.text("done"),
      ]),
    );
    const messages: MessageParam[] = [{ role: "user", content: "go" }];
    await agentLoop(messages);

    const results = toolResults(session, 1);
    expect(results.map((r) => r.tool_use_id)).toEqual(["toolu_a", "toolu_b"]);
    expect(results.map(resultText)).toEqual(["one\n", "first"]);
    expect(results.every((r) => !r.is_error)).toBe(true);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(readFileSync(`${workspace.dir}/a.txt`, "utf8")).toBe("first");
    expect(session.verdict()).toEqual([]);
    expect(shown("done")).toBe(true);
  });

  it("stops when stop_reason is not tool_use, without calling the model again", async () => {
    const { agentLoop } = await import(file);
    const session = replay(scenarioOf([reply.text("nothing to do")]));
    await agentLoop([{ role: "user", content: "hi" }]);
    expect(session.requests).toHaveLength(1);
    expect(session.verdict()).toEqual([]);
  });

  it("turns an unknown tool into an is_error result and carries on", async () => {
    const { agentLoop } = await import(file);
    const session = replay(
      scenarioOf([reply.tools([{ id: "toolu_x", name: "teleport", input: {} }]), reply.text("sorry")]),
    );
    await agentLoop([{ role: "user", content: "go" }]);
    const [result] = toolResults(session, 1);
    expect(result.tool_use_id).toBe("toolu_x");
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toMatch(/unknown tool "teleport"/);
    expect(session.verdict()).toEqual([]);
  });

  it("turns a handler failure (bad input) into an is_error result and carries on", async () => {
    const { agentLoop } = await import(file);
    const session = replay(scenarioOf([reply.tools([{ id: "toolu_bad", name: "bash", input: { command: 42 } }]), reply.text("ok")]));
    await agentLoop([{ role: "user", content: "go" }]);
    const [result] = toolResults(session, 1);
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toMatch(/^Error: .*"command" must be a string/);
  });

  it("tells the person when the model declines to continue (stop_reason refusal)", async () => {
    const { agentLoop } = await import(file);
    replay(scenarioOf([reply.text("I will not help with that.", "refusal")]));
    await agentLoop([{ role: "user", content: "go" }]);
    expect(printed).toContain("[the model declined to continue]");
  });

  it("sends a paused turn (pause_turn: a server tool at work) back as it is, and the turn goes on", async () => {
    const { agentLoop } = await import(file);
    const session = replay(scenarioOf([reply.text("Searching the web…", "pause_turn"), reply.text("Found it.")]));
    const messages: MessageParam[] = [{ role: "user", content: "go" }];
    await agentLoop(messages);
    expect(session.requests).toHaveLength(2);
    expect(session.requests[1].messages.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: "Searching the web…" }] });
    expect(shown("Found it.")).toBe(true);
    expect(session.verdict()).toEqual([]);
  });

  it("says a reply was cut off because the context window is full, and answers the call cut off in it", async () => {
    const { agentLoop } = await import(file);
    const cut = { ...reply.tools([{ id: "toolu_cut", name: "bash", input: { command: "ec" } }]), stop_reason: "model_context_window_exceeded" as const };
    const session = replay(scenarioOf([cut, reply.text("after")]));
    const messages: MessageParam[] = [{ role: "user", content: "go" }];
    await agentLoop(messages);
    expect(printed).toContain("[the reply was cut off because the context window is full: start a new session]");
    expect(messages.at(-1)).toMatchObject({ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_cut", is_error: true }] });
    expect(session.requests).toHaveLength(1); // the turn is over: nothing ran
  });

  it("reports a reply cut off by max_tokens to the person", async () => {
    const { agentLoop } = await import(file);
    replay(scenarioOf([reply.text("The answer is", "max_tokens")]));
    await agentLoop([{ role: "user", content: "go" }]);
    expect(printed.join("\n")).toMatch(/cut off at \d+ tokens/);
  });

  it("answers a tool call cut off by max_tokens without running it, so the next request is valid", async () => {
    const { agentLoop } = await import(file);
    const cut = reply.tools([{ id: "toolu_cut", name: "bash", input: { command: "touch ran.txt" } }]);
    cut.stop_reason = "max_tokens";
    replay(scenarioOf([cut]));
    const messages: MessageParam[] = [{ role: "user", content: "go" }];
    await agentLoop(messages);
    const last = messages.at(-1)!;
    expect(last.role).toBe("user");
    expect(last.content).toEqual([expect.objectContaining({ tool_use_id: "toolu_cut", is_error: true })]);
    expect(() => readFileSync(`${workspace.dir}/ran.txt`)).toThrow();
  });
});

// Part I shows each call as name(arguments); from s06 a tool describes its own call
// (getDescription), which tests/s06_tool_registry.test.ts covers.
describe.each(stages.filter(([id]) => Number(id.slice(1)) <= 5))("%s: what the person sees of a tool call", (_stage, file) => {
  useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();

  it("shows the person each call with its arguments by name, the first lines of a result, and an error in full", async () => {
    const { agentLoop } = await import(file);
    const name = `tool_${"t".repeat(300)}`;
    replay(
      scenarioOf([
        reply.tools([
          { name: "bash", input: { command: "seq 1 20", timeout: 5 } },
          { name, input: {} },
        ]),
        reply.text("ok"),
      ]),
    );
    await agentLoop([{ role: "user", content: "go" }]);
    expect(printed).toContain('> bash(command: "seq 1 20", timeout: 5)');
    expect(printed).toContain("  1\n  2\n  3\n  4\n  5\n  6\n  … (14 more lines)");
    // An error says what went wrong and what to do: the person sees all of it, not its first 100 characters.
    expect(printed).toContain(`  Error: unknown tool "${name}". Tools: ${(await import(file)).TOOLS.map((t: { name: string }) => t.name).join(", ")}.`);
  });
});

// Stages whose read_file sends the file whole, clipped to 30,000 characters (s02 to s06). From s07
// read_file pages, and a larger result is kept in a file: tests/s07_large_results.test.ts.
const clippingStages = (
  await Promise.all((await stagesWithTool("read_file")).map(async (stage) => ((await toolParameters(stage[1], "read_file")).includes("offset") ? [] : [stage])))
).flat();

describe.each(clippingStages)("%s: what one tool call may send the model", (_stage, file) => {
  useWorkspace();
  const replay = useReplay();
  usePrinted();

  it("at most 30,000 characters, head and tail, with a marker saying how much was cut", async () => {
    const { agentLoop } = await import(file);
    writeFileSync("big.txt", `START${"a".repeat(100_000)}END`);
    const session = replay(scenarioOf([reply.tools([{ name: "read_file", input: { path: "big.txt" } }]), reply.text("ok")]));
    await agentLoop([{ role: "user", content: "read it" }]);
    const text = resultText(toolResults(session, 1)[0]);
    expect(text.length).toBeLessThanOrEqual(30_000);
    expect(text.startsWith("START")).toBe(true);
    expect(text.endsWith("END")).toBe(true);
    expect(text).toMatch(/\[\d+ characters cut from the middle, 100008 in all\]/);
  });
});

describe("s01's demo, in detail", () => {
  const workspace = useWorkspace();
  usePrinted();

  it("really runs bash: the file exists and the model received its byte count and the exit code", async () => {
    const scenario = loadScenario("s01");
    const session = await replayScenario(await import("../agents/s01_agent_loop.ts"), scenario, { workspace: workspace.dir });
    expectWholeSession("s01", session, scenario);
    expect(readFileSync(`${workspace.dir}/hello.txt`, "utf8")).toBe("Hello from s01\n");
    const [write, count] = toolResults(session, 1);
    expect([write.tool_use_id, count.tool_use_id]).toEqual(["toolu_s01_demo_01", "toolu_s01_demo_02"]);
    expect(resultText(write)).toBe("(no output)");
    expect(resultText(count).trim()).toBe("15");
    const [missing] = toolResults(session, 3);
    expect(resultText(missing)).toMatch(/notes\.md[\s\S]*\[exit code 2\]$/);
  });
});
