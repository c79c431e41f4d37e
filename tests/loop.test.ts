// The agent loop, driven by recorded replies: what the model receives back, in what order,
// and what happens when the model does something odd. Every stage shares the loop's text
// (stages.test.ts proves it), so these run against each stage's own module.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/scenario.ts";
import { nobody, scriptedTerminal, useTerminal } from "../lib/terminal.ts";
import { PassThrough } from "node:stream";
import { reply, resultText, scenarioOf, stageFiles, toolResults, useReplay, useWorkspace, runTurns, usePrinted } from "./helpers.ts";

const stages = stageFiles().map((file) => [file.match(/(s\d\d)_/)![1], file] as const);

describe.each(stages)("%s agent loop", (_stage, file) => {
  const workspace = useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();

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
    expect(printed).toContain("done");
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
    expect(resultText(result)).toBe('Error: "command" must be a string');
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

  it("replays the stage's demo fixture with the real tools, answering each recorded call", async () => {
    const { agentLoop } = await import(file);
    const stage = file.match(/(s\d\d)_/)![1];
    const scenario = loadScenario(stage);
    // What the program does before a replay (s04: host names resolve from the scenario).
    (await import(file)).prepareReplay?.(scenario);
    for (const [name, text] of Object.entries(scenario.files ?? {})) {
      mkdirSync(path.dirname(name), { recursive: true });
      writeFileSync(name, text);
    }
    // The person's recorded answers are typed as in the program's replay (s05's ask_user).
    useTerminal(scriptedTerminal(scenario.answers ?? [], new PassThrough() as unknown as NodeJS.WriteStream));
    const session = replay(scenario);
    await runTurns(agentLoop, scenario.prompts);
    useTerminal(nobody);
    expect(session.verdict()).toEqual([]);
    expect(session.requests).toHaveLength(scenario.replies.length);
  });
});

describe("s01's demo, in detail", () => {
  const workspace = useWorkspace();
  const replay = useReplay();
  usePrinted();

  it("really runs bash: the file exists and the model received its byte count and the exit code", async () => {
    const { agentLoop } = await import("../agents/s01_agent_loop.ts");
    const session = replay(loadScenario("s01"));
    await runTurns(agentLoop, loadScenario("s01").prompts);
    expect(readFileSync(`${workspace.dir}/hello.txt`, "utf8")).toBe("Hello from s01\n");
    const [write, count] = toolResults(session, 1);
    expect([write.tool_use_id, count.tool_use_id]).toEqual(["toolu_s01_demo_01", "toolu_s01_demo_02"]);
    expect(resultText(write)).toBe("(no output)");
    expect(resultText(count).trim()).toBe("15");
    const [missing] = toolResults(session, 3);
    expect(resultText(missing)).toMatch(/notes\.md[\s\S]*\[exit code 2\]$/);
    expect(session.verdict()).toEqual([]);
  });
});
