// What every stage's recorded session must be, for the page that shows it: the stage's demo,
// replayed through its real loop and real tools (lib/course/session.ts, as the docs build does in
// .vitepress/sessions.ts). A stage's own test file checks this on the demo replay it makes
// anyway, so a demo is replayed once; tests/session.test.ts replays the demos whose test
// file does not.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import type { ReplayedSession } from "../lib/course/session.ts";
import type { Scenario } from "../lib/course/scenario.ts";
import { REPO_ROOT } from "../lib/course/stages.ts";
import { notesFile } from "../.vitepress/sessions.ts";
import { checkNotes, compareWithScenario, sessionSteps, stepsOf } from "../.vitepress/transcript.ts";

/**
 * The replay of stage `id`'s demo went as recorded: no problem, no failed turn, every reply
 * used; the capture holds the fixture's prompts, replies and tool calls, each call with its
 * one result; every request outside the conversation (a subagent's, a summary request) is
 * shown as steps; and every session note is attached to a step that exists.
 */
export function expectWholeSession(id: string, session: ReplayedSession, scenario: Scenario): void {
  const { problems, turnErrors, requests, messages } = session;
  expect(problems, `${id}: the replay's problems`).toEqual([]);
  expect(turnErrors, `${id}: turns that failed`).toEqual([]);
  expect(requests, `${id}: one request per recorded reply`).toHaveLength(scenario.replies.length);

  expect(compareWithScenario(messages, scenario)).toEqual([]);
  const steps = stepsOf(messages);
  const calls = steps.filter((s) => s.kind === "call");
  const recorded = scenario.replies.flatMap((r) => r.content.filter((b) => b.type === "tool_use").map((b) => (b as { id: string }).id));
  // The recorded calls, in order; a subagent's (s10) happen in its own conversation, not this one.
  const captured = calls.map((c) => c.id);
  expect(captured.length, `${id}: tool calls captured`).toBeGreaterThan(0);
  expect(captured).toEqual(recorded.filter((callId) => captured.includes(callId)));
  for (const call of calls) {
    expect(steps.filter((s) => s.kind === "result" && s.id === call.id), `the result of ${call.id}`).toHaveLength(1);
  }
  expect(steps.filter((s) => s.kind === "prompt").map((s) => (s as { text: string }).text)).toEqual(scenario.prompts);

  // The reply each request got: in file order, unless agents ran at once (s19) and the replay served each its own.
  const shown = sessionSteps(messages, requests, session.served ? session.served.map((i) => scenario.replies[i]) : scenario.replies);
  expect(shown.problems, `${id}: requests the page would not show`).toEqual([]);
  const notes = notesFile(REPO_ROOT, id);
  if (existsSync(notes)) expect(checkNotes(JSON.parse(readFileSync(notes, "utf8")), shown.steps, path.relative(REPO_ROOT, notes))).toEqual([]);
}

/**
 * Whether a test file other than session.test.ts checks stage `id`'s demo session whole (so
 * session.test.ts need not replay it). `files`: the test files' names and texts.
 */
export function checkedElsewhere(id: string, files: Map<string, string> = testFiles()): boolean {
  return [...files].some(([name, text]) => name !== "session.test.ts" && text.includes(`expectWholeSession("${id}",`));
}

function testFiles(): Map<string, string> {
  const dir = path.join(REPO_ROOT, "tests");
  return new Map(readdirSync(dir).filter((name) => name.endsWith(".test.ts")).map((name) => [name, readFileSync(path.join(dir, name), "utf8")]));
}
