// The recorded sessions shown on the stage pages, captured at build time by replaying each
// stage's demo (scripts/capture-sessions.ts, in a child process: a replay changes the
// working directory and installs msw). The build fails when a replay disagrees with its
// fixture or a note points at a step that does not exist: a page must never show a session
// the code did not produce.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { Lang } from "./curriculum.ts";
import { TSX_LOADER } from "../lib/course/stages.ts";
import { presentStages } from "./regions.ts";
import { checkNotes, compareWithScenario, sessionSteps, showSteps, type Note, type SentRequest, type ShownStep } from "./transcript.ts";

export interface CapturedSession {
  id: string;
  file: string;
  /** Why there is no session (no fixture yet). */
  missing?: string;
  /** The replay could not run at all: the error. */
  failed?: string;
  messages?: MessageParam[];
  problems?: string[];
  turnErrors?: string[];
  requests?: number;
  replies?: number;
  /** What each request carried, in order: a subagent's and a summary request are shown from these. */
  sent?: SentRequest[];
  /** The recorded reply each request got (its index in the fixture): not in file order when agents ran at once (s19). */
  served?: number[];
  /** The temporary folder the tools worked in (shown as "the workspace"). */
  workspace?: string;
  milliseconds?: number;
}

/** What a stage page receives: the steps with their notes, or why there are none. */
export interface PageSession {
  stage: string;
  /** The scenario's description (English, as recorded). */
  description?: string;
  steps?: ShownStep[];
  missing?: string;
}

/** Where a stage's session notes live. */
export const notesFile = (root: string, id: string) => path.join(root, "docs", "sessions", `${id}.json`);

export function readNotes(root: string, id: string): Note[] {
  const file = notesFile(root, id);
  return existsSync(file) ? ((JSON.parse(readFileSync(file, "utf8")) as { notes?: Note[] }).notes ?? []) : [];
}

let captured: { key: string; sessions: Promise<Record<string, CapturedSession>> } | undefined;

/** The stages whose session a page shows: their file is present and their own page is written. */
export function shownStages(root: string): string[] {
  return [...presentStages(root).keys()].filter((id) =>
    ["", "ja/"].some((lang) => existsSync(path.join(root, "docs", `${lang}${id}.md`))),
  );
}

/** The captured sessions of the stages with a page; replayed once per build (again when a stage or fixture changes). */
export function capturedSessions(root: string): Promise<Record<string, CapturedSession>> {
  const key = [...presentStages(root)]
    .filter(([id]) => shownStages(root).includes(id))
    .flatMap(([id, file]) => [path.join(root, "agents", file), path.join(root, "fixtures", id, "demo.json")])
    .map((file) => `${file}:${existsSync(file) ? statSync(file).mtimeMs : 0}`)
    .join("|");
  if (captured?.key !== key) captured = { key, sessions: capture(root) };
  return captured.sessions;
}

async function capture(root: string): Promise<Record<string, CapturedSession>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "workbook-sessions-"));
  const out = path.join(dir, "sessions.json");
  // No key and no provider: the replay answers every request, and nothing may reach a network.
  const env = { ...process.env, ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: "", ANTHROPIC_BASE_URL: "", MODEL_ID: "" };
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(
        process.execPath,
        ["--import", TSX_LOADER, path.join(root, "scripts", "capture-sessions.ts"), out, ...shownStages(root)],
        { cwd: root, env, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
        (error, _stdout, stderr) => (error ? reject(new Error(`capturing the stage sessions failed: ${error.message}\n${stderr}`)) : resolve()),
      );
    });
    return JSON.parse(readFileSync(out, "utf8")) as Record<string, CapturedSession>;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What is wrong with a captured session: a replay problem, a turn that failed, a disagreement with the fixture. */
export function sessionProblems(session: CapturedSession, scenario: { prompts: string[]; replies: { content: unknown[] }[] }): string[] {
  if (session.missing) return [];
  return [
    ...(session.problems ?? []).map((p) => `the replay: ${p}`),
    ...(session.turnErrors ?? []).map((e) => `a turn ended with an error: ${e}`),
    ...(session.requests !== session.replies ? [`the loop made ${session.requests} requests for ${session.replies} recorded replies`] : []),
    ...compareWithScenario(session.messages ?? [], scenario),
  ];
}

/** The session a stage page shows, checked; throws when it is not the fixture's or a note is wrong. */
export async function pageSession(root: string, id: string): Promise<PageSession> {
  const session = (await capturedSessions(root))[id];
  if (!session) return { stage: id, missing: `agents/ has no file for ${id}` };
  return shownSession(root, id, session);
}

/** A captured session as its page shows it: steps with their notes, the workspace named; throws as pageSession does. */
export function shownSession(root: string, id: string, session: CapturedSession): PageSession {
  if (session.missing) return { stage: id, missing: session.missing };
  if (session.failed) throw new Error(`The demo of ${id} could not be replayed for its page:\n${session.failed}`);
  const scenario = JSON.parse(readFileSync(path.join(root, "fixtures", id, "demo.json"), "utf8"));
  const problems = sessionProblems(session, scenario);
  const replies = session.served ? session.served.map((i: number) => scenario.replies[i]) : scenario.replies;
  const { steps, problems: unshown } = sessionSteps(session.messages ?? [], session.sent ?? [], replies);
  problems.push(...unshown);
  const notesPath = notesFile(root, id);
  if (existsSync(notesPath)) problems.push(...checkNotes(JSON.parse(readFileSync(notesPath, "utf8")), steps, path.relative(root, notesPath)));
  if (problems.length > 0) throw new Error(`The session of ${id} cannot be shown:\n- ${problems.join("\n- ")}`);
  const workspace = session.workspace ?? "";
  // The temporary folder's name changes at every build; the page calls it what it is.
  const shown = showSteps(steps, readNotes(root, id)).map((step) =>
    (step.kind === "result" || step.kind === "summary") && workspace ? { ...step, text: step.text.split(workspace).join("<workspace>") } : step,
  );
  return { stage: id, description: scenario.description, steps: shown };
}

export type { Lang };
