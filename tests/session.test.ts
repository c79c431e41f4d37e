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
import { captureSession } from "../scripts/capture-sessions.ts";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario, type ReplayableStage } from "../lib/course/session.ts";
import { REPO_ROOT } from "../lib/course/stages.ts";
import { presentStages } from "../.vitepress/regions.ts";
import { sessionProblems, shownSession } from "../.vitepress/sessions.ts";
import { toolCount } from "../.vitepress/source.ts";
import { checkNotes, compareWithScenario, sessionSteps, showSteps, stepOfNote, stepsOf, type SentRequest, type Step } from "../.vitepress/transcript.ts";
import { usePrinted } from "./helpers.ts";
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

// What a stage does outside its conversation is part of the session a page shows: s11's
// summary request and the summary, s10's subagent. Captured as the docs build captures them.
describe("the steps a page shows outside the conversation", () => {
  usePrinted(); // what the stages print during the capture
  const pageOf = async (id: string) => {
    const session = await captureSession(id, presentStages(REPO_ROOT).get(id)!);
    return { steps: shownSession(REPO_ROOT, id, session).steps ?? [], conversation: stepsOf(session.messages ?? []) };
  };
  const named = (s: Step) => ("id" in s ? `${s.kind} ${s.id}` : s.kind);
  const at = (steps: Step[], kind: Step["kind"], id: string) => steps.findIndex((s) => s.kind === kind && "id" in s && s.id === id);

  it("s11: the summary request, then the summary the model wrote, between the fix's result and the next reply", async () => {
    try {
      const { steps, conversation } = await pageOf("s11");
      const fixed = at(steps, "result", "toolu_s11_demo_07");
      const [asked, summary, after] = steps.slice(fixed + 1, fixed + 4);
      expect(asked).toMatchObject({ kind: "summary-request", messages: 9, toolChoice: "none", instruction: expect.stringMatching(/^Summarise the conversation so far/) });
      const written = (loadScenario("s11").replies[4].content[0] as { text: string }).text;
      expect(summary).toMatchObject({ kind: "summary", text: written });
      expect(after).toMatchObject({ kind: "text", text: "Checking the fix with the report and the tests:" });
      expect(steps.filter((s) => s.kind === "summary-request")).toHaveLength(1);
      expect(steps.filter((s) => s.kind !== "summary-request" && s.kind !== "summary").map(named)).toEqual(conversation.map(named));
    } finally {
      // The replay set the demo's compaction threshold: back to the stage's own.
      const stage = (await import(pathToFileURL(path.join(REPO_ROOT, "agents", presentStages(REPO_ROOT).get("s11")!)).href)) as ReplayableStage;
      await stage.prepareReplay?.({ description: "", prompts: [], replies: [] });
    }
  });

  it("s10: the subagent's replies and the results it sent, under its task call, marked with its label", async () => {
    const { steps, conversation } = await pageOf("s10");
    const task = at(steps, "call", "toolu_s10_demo_01");
    const returned = at(steps, "result", "toolu_s10_demo_01");
    const child = steps.slice(task + 1, returned);
    expect(child.map((s) => [s.kind, "by" in s ? s.by : undefined, "id" in s ? s.id : undefined])).toEqual([
      ["text", "survey src/", undefined],
      ["call", "survey src/", "toolu_s10_demo_02"],
      ["result", "survey src/", "toolu_s10_demo_02"],
      ["text", "survey src/", undefined],
      ...[3, 4, 5].map((n) => ["call", "survey src/", `toolu_s10_demo_0${n}`]),
      ...[3, 4, 5].map((n) => ["result", "survey src/", `toolu_s10_demo_0${n}`]),
      ["text", "survey src/", undefined],
    ]);
    expect(child[2]).toMatchObject({ name: "bash", text: "cart.js\nprices.js\nreceipt.js\n" });
    // The parent's own steps carry no label.
    expect(steps.filter((s) => !("by" in s && s.by)).map(named)).toEqual(conversation.map(named));
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

describe("requests outside the conversation, as steps", () => {
  // A parent that starts a subagent, whose two requests come between the parent's; then a
  // summary request before the parent's last reply.
  const parent: MessageParam[] = [
    { role: "user", content: "survey" },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_t", name: "task", input: { description: "look\n around", prompt: " list files " } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_t", content: "a, b" }] },
    { role: "assistant", content: [{ type: "text", text: "Done." }] },
  ];
  const childAsks: MessageParam = { role: "assistant", content: [{ type: "tool_use", id: "toolu_c", name: "bash", input: { command: "ls" } }] };
  const childResult: MessageParam = { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_c", content: "a\nb" }] };
  const summarise: MessageParam = { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_t", content: "a, b" }, { type: "text", text: "Summarise." }] };
  const requests: SentRequest[] = [
    { messages: parent.slice(0, 1) },
    { messages: [{ role: "user", content: "list files" }] },
    { messages: [{ role: "user", content: "list files" }, childAsks, childResult] },
    { messages: [...parent.slice(0, 2), summarise], tool_choice: { type: "none" } },
    { messages: parent.slice(0, 3) },
  ];
  const replies = [parent[1], childAsks, { role: "assistant", content: [{ type: "text", text: "a, b" }] }, { content: [{ type: "text", text: "They listed files." }] }, parent[3]].map(
    (m) => ({ content: m.content as unknown[] }),
  );

  it("shows a subagent's steps under its call, with its label, and a summary request before the reply after it", () => {
    const { steps, problems } = sessionSteps(parent, requests, replies);
    expect(problems).toEqual([]);
    expect(steps).toEqual([
      { kind: "prompt", text: "survey" },
      { kind: "call", id: "toolu_t", name: "task", input: { description: "look\n around", prompt: " list files " } },
      { kind: "call", id: "toolu_c", name: "bash", input: { command: "ls" }, by: "look around" },
      { kind: "result", id: "toolu_c", name: "bash", text: "a\nb", isError: false, by: "look around" },
      { kind: "text", text: "a, b", by: "look around" },
      { kind: "result", id: "toolu_t", name: "task", text: "a, b", isError: false },
      { kind: "summary-request", messages: 3, instruction: "Summarise.", toolChoice: "none" },
      { kind: "summary", text: "They listed files." },
      { kind: "text", text: "Done." },
    ]);
    // A note may point at a subagent's call.
    expect(stepOfNote("toolu_c:result", steps)).toBe(4);
  });

  it("names a request it cannot place, rather than leave it out", () => {
    const title: SentRequest = { messages: [{ role: "user", content: "A title for this session?" }] };
    const { problems } = sessionSteps(parent, [...requests, title], [...replies, { content: [{ type: "text", text: "Survey" }] }]);
    expect(problems).toEqual(["request 6 is neither the conversation's, nor a subagent's, nor a summary request: the page would not show it"]);
  });

  it("tells two subagents with the same prompt apart by their requests", () => {
    const twice: MessageParam[] = [
      parent[0],
      { role: "assistant", content: (["toolu_1", "toolu_2"] as const).map((id) => ({ type: "tool_use" as const, id, name: "task", input: { description: id, prompt: "list files" } })) },
    ];
    const child = (id: string): SentRequest[] => [
      { messages: [{ role: "user", content: "list files" }] },
      { messages: [{ role: "user", content: "list files" }, { role: "assistant", content: [{ type: "tool_use", id, name: "bash", input: {} }] }, { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: id }] }] },
    ];
    const [a, b] = [child("toolu_a"), child("toolu_b")];
    const asks = (id: string) => ({ content: [{ type: "tool_use", id, name: "bash", input: {} }] });
    const ends = (text: string) => ({ content: [{ type: "text", text }] });
    // Side by side: both start, then each goes on.
    const { steps } = sessionSteps(twice, [{ messages: [parent[0]] }, a[0], b[0], a[1], b[1]], [{ content: twice[1].content as unknown[] }, asks("toolu_a"), asks("toolu_b"), ends("A"), ends("B")]);
    expect(steps.map((s) => `${s.kind}${"id" in s ? ` ${s.id}` : ""}${"by" in s && s.by ? ` [${s.by}]` : ""}`)).toEqual([
      "prompt",
      "call toolu_1",
      "call toolu_a [toolu_1]",
      "result toolu_a [toolu_1]",
      "text [toolu_1]",
      "call toolu_2",
      "call toolu_b [toolu_2]",
      "result toolu_b [toolu_2]",
      "text [toolu_2]",
    ]);
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
