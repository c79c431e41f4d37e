// The recorded session each stage page shows: the stage's demo, replayed through the stage's
// real loop and real tools in a temporary workspace (lib/course/session.ts, as the docs build does
// in .vitepress/sessions.ts), must be the fixture's (tests/whole-session.ts). A stage whose
// own test file checks that on its demo replay is not replayed again here; every other
// stage's demo is replayed here, once, in this test's own process.
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario, type ReplayableStage } from "../lib/course/session.ts";
import { REPO_ROOT } from "../lib/course/stages.ts";
import { presentStages } from "../.vitepress/regions.ts";
import { sessionProblems } from "../.vitepress/sessions.ts";
import { toolCount } from "../.vitepress/source.ts";
import { checkNotes, compareWithScenario, showSteps, stepOfNote, stepsOf, type Step } from "../.vitepress/transcript.ts";
import { checkedElsewhere, expectWholeSession } from "./whole-session.ts";

const withDemo = [...presentStages(REPO_ROOT)].filter(([id]) => existsSync(path.join(REPO_ROOT, "fixtures", id, "demo.json")));

const workspaces: string[] = [];
afterAll(() => workspaces.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe.each(withDemo)("the %s session", (id, file) => {
  const stageModule = async () => (await import(pathToFileURL(path.join(REPO_ROOT, "agents", file)).href)) as ReplayableStage & { TOOLS?: unknown[] };

  // Not when the stage's own test file checks it on its demo replay: a demo is replayed once.
  if (!checkedElsewhere(id)) it("replays whole: as recorded, every call with its result, every note on a step", async () => {
    const scenario = loadScenario(id);
    const workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), `workbook-session-${id}-`)));
    workspaces.push(workspace);
    expectWholeSession(id, await replayScenario(await stageModule(), scenario, { workspace }), scenario);
  });

  // Here rather than in docs.test.ts: this file imports every stage anyway, and an import costs.
  // Only the stages whose page shows a tool figure: those with a TOOLS array literal (s01-s05).
  const counted = toolCount(readFileSync(path.join(REPO_ROOT, "agents", file), "utf8"));
  it.runIf(counted !== undefined)("gives the page the number of tools the stage really gives the model", async () => {
    const { TOOLS } = await stageModule();
    expect(counted, `${id}: the tool figure`).toBe(TOOLS?.length);
  });
});

describe("which file checks a stage's session", () => {
  it("finds a check of the stage by its id, in a test file other than session.test.ts", () => {
    const files = new Map([
      ["s07_large_results.test.ts", 'expectWholeSession("s07", session, scenario);'],
      ["session.test.ts", 'expectWholeSession("s06", session, scenario);'],
    ]);
    expect(checkedElsewhere("s07", files)).toBe(true);
    expect(checkedElsewhere("s06", files)).toBe(false);
    expect(checkedElsewhere("s0", files)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------
// The pieces, and that each check fails when it should

const conversation: MessageParam[] = [
  { role: "user", content: "make a file" },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Writing it." },
      { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "touch a" } },
      { type: "tool_use", id: "toolu_2", name: "bash", input: { command: "ls" } },
    ],
  },
  {
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "toolu_1", content: "(no output)" },
      { type: "tool_result", tool_use_id: "toolu_2", content: "a\n", is_error: false },
    ],
  },
  { role: "assistant", content: [{ type: "text", text: "Done." }] },
];
const scenarioOf = (messages: MessageParam[]) => ({
  prompts: messages.filter((m) => m.role === "user" && typeof m.content === "string").map((m) => m.content as string),
  replies: messages.filter((m) => m.role === "assistant").map((m) => ({ content: m.content as unknown[] })),
});

describe("a session as steps", () => {
  it("numbers the prompt, the text, each call and each result, in order", () => {
    const steps = stepsOf(conversation);
    expect(steps.map((s) => s.kind)).toEqual(["prompt", "text", "call", "call", "result", "result", "text"]);
    expect(steps[4]).toEqual({ kind: "result", id: "toolu_1", name: "bash", text: "(no output)", isError: false });
  });

  it("finds a note's step by tool_use id, by id:result, or by number, and nothing else", () => {
    const steps = stepsOf(conversation);
    expect(stepOfNote("toolu_2", steps)).toBe(4);
    expect(stepOfNote("toolu_2:result", steps)).toBe(6);
    expect(stepOfNote(7, steps)).toBe(7);
    for (const at of ["toolu_9", "toolu_2:input", 0, 8, 1.5]) expect(stepOfNote(at, steps)).toBeUndefined();
  });

  it("names a note that points at a step the session does not have, or lacks a language", () => {
    const steps: Step[] = stepsOf(conversation);
    const problems = checkNotes(
      { notes: [{ at: "toolu_9:result", en: "gone", ja: "なし" }, { at: 99, en: "far", ja: "遠い" }, { at: "toolu_1", en: "ok" }] },
      steps,
      "docs/sessions/s99.json",
    );
    expect(problems).toEqual([
      'docs/sessions/s99.json: notes[0] points at "toolu_9:result", which is not a step of the session (it has 7 steps)',
      "docs/sessions/s99.json: notes[1] points at 99, which is not a step of the session (it has 7 steps)",
      "docs/sessions/s99.json: notes[2] has no ja text",
    ]);
    expect(checkNotes({ note: [] }, steps, "x.json")).toEqual(['x.json: expected { "notes": [ … ] }']);
  });

  it("attaches notes to their steps for the page", () => {
    const shown = showSteps(stepsOf(conversation), [{ at: "toolu_1:result", en: "empty", ja: "空" }]);
    expect(shown[4].notes).toEqual([{ en: "empty", ja: "空" }]);
    expect(shown.filter((s) => s.notes.length > 0).map((s) => s.n)).toEqual([5]);
  });
});

describe("comparing a capture with its fixture", () => {
  it("agrees with itself", () => {
    expect(compareWithScenario(conversation, scenarioOf(conversation))).toEqual([]);
  });

  it("names a reply that is not the recorded one, a missing result and a changed prompt", () => {
    const changed = structuredClone(conversation);
    (changed[1].content as { type: string; input?: unknown }[])[1].input = { command: "rm a" };
    (changed[2].content as unknown[]).pop();
    changed[0].content = "make two files";
    const problems = compareWithScenario(changed, scenarioOf(conversation));
    expect(problems).toEqual([
      'the prompts differ: captured ["make two files"], recorded ["make a file"]',
      "reply 1 is not the recorded one",
      "the tool calls [toolu_1, toolu_2] got the results [toolu_1]",
    ]);
  });

  it("turns the replay's verdict, a failed turn and unused replies into problems for the build", () => {
    const captured = { id: "s99", file: "s99.ts", messages: conversation, problems: ["1 recorded reply was never asked for"], turnErrors: ["Replay: request 3"], requests: 2, replies: 3 };
    expect(sessionProblems(captured, scenarioOf(conversation))).toEqual([
      "the replay: 1 recorded reply was never asked for",
      "a turn ended with an error: Replay: request 3",
      "the loop made 2 requests for 3 recorded replies",
    ]);
  });
});
