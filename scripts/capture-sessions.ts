// Replay each stage's demo through the stage's real loop and real tools, in a temporary
// workspace, and write down what happened: the conversation the loop left behind, and what
// the replay engine thought of it. The docs site shows these sessions on the stage pages.
//
//   npx tsx scripts/capture-sessions.ts <out.json> [stage ...]     (default: every stage present)
//
// It runs as a child process of the docs build, because a replay changes the working
// directory and installs msw for the whole process. What the stages print goes to stdout,
// which the build ignores; the result goes to the JSON file only.
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { agentOf, loadScenario, scenarioNames } from "../lib/course/scenario.ts";
import { replayScenario, type ReplayableStage } from "../lib/course/session.ts";
import { REPO_ROOT } from "../lib/course/stages.ts";
import { presentStages } from "../.vitepress/regions.ts";
import type { CapturedSession } from "../.vitepress/sessions.ts";

export async function captureSession(id: string, file: string): Promise<CapturedSession> {
  if (!scenarioNames(id).includes("demo")) return { id, file, missing: `fixtures/${id}/demo.json does not exist yet` };
  const started = Date.now();
  const scenario = loadScenario(id);
  const stage = (await import(pathToFileURL(path.join(REPO_ROOT, "agents", file)).href)) as ReplayableStage;
  const workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), `workbook-docs-${id}-`)));
  try {
    const session = await replayScenario(stage, scenario, { workspace });
    return {
      id,
      file,
      messages: session.messages,
      problems: session.problems,
      turnErrors: session.turnErrors.map((error) => (error instanceof Error ? error.message : String(error))),
      requests: session.requests.length,
      replies: scenario.replies.length,
      // Only what the page needs of each request: the system prompt and tools are the stage's.
      sent: session.requests.map(({ messages, tool_choice, system }) => ({ messages, tool_choice, agent: agentOf(system) })),
      served: session.served,
      workspace,
      milliseconds: Date.now() - started,
    };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const [out, ...wanted] = process.argv.slice(2);
  if (!out) {
    console.error("usage: tsx scripts/capture-sessions.ts <out.json> [stage ...]");
    process.exit(2);
  }
  const present = presentStages(REPO_ROOT);
  const ids = wanted.length > 0 ? wanted : [...present.keys()];
  const sessions: Record<string, CapturedSession> = {};
  for (const id of ids) {
    const file = present.get(id);
    try {
      sessions[id] = file ? await captureSession(id, file) : { id, file: "", missing: `agents/ has no file for ${id}` };
    } catch (error) {
      // One stage that cannot be replayed (being written, say) must not hide the others.
      sessions[id] = { id, file: file ?? "", failed: error instanceof Error ? (error.stack ?? error.message) : String(error) };
    }
  }
  writeFileSync(out, JSON.stringify(sessions));
  // A stage may leave timers or a background command behind; the capture is done.
  process.exit(0);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
