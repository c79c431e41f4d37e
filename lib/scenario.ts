// A scenario is one recorded session: what the person typed and what the model replied, in
// the exact shape of the Anthropic Messages API. The offline demo, the tests and the
// exercises all read scenarios through this file, so they see the same thing.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Message } from "@anthropic-ai/sdk/resources/messages";
import { REPO_ROOT } from "./stages.ts";

/** A web page the replay serves in place of the network (s04's web_fetch reads these). */
export interface ScenarioPage {
  status?: number;
  contentType?: string;
  body: string;
  /** Extra response headers, e.g. a `location` for a redirect. */
  headers?: Record<string, string>;
}

export interface Scenario {
  /** One or two sentences on what the session shows. */
  description: string;
  /** What the person typed at the stage's prompt, in order. */
  prompts: string[];
  /** The model's replies, in order: one per request the loop makes. */
  replies: Message[];
  /** Files to put in the fresh workspace before the first prompt (path → text). */
  files?: Record<string, string>;
  /** What the person typed when the agent asked them something (s05's ask_user). */
  answers?: string[];
  /** Web pages by URL, served instead of the network (s04's web_fetch). */
  web?: Record<string, ScenarioPage>;
  /** The addresses those pages' host names resolve to (host → IP), for checks made before fetching. */
  hosts?: Record<string, string>;
}

export { REPO_ROOT };
export const FIXTURES_DIR = path.join(REPO_ROOT, "fixtures");

/** Where a scenario lives: a path to a .json file, or a name under fixtures/<stage>/. */
export function scenarioPath(stage: string, nameOrPath = "demo"): string {
  if (nameOrPath.endsWith(".json")) return path.resolve(nameOrPath);
  return path.join(FIXTURES_DIR, stage, `${nameOrPath}.json`);
}

export function loadScenario(stage: string, nameOrPath = "demo"): Scenario {
  const file = scenarioPath(stage, nameOrPath);
  if (!existsSync(file)) throw new Error(`No scenario at ${path.relative(process.cwd(), file) || file}`);
  const scenario = JSON.parse(readFileSync(file, "utf8")) as Scenario;
  const problems = checkScenario(scenario);
  if (problems.length > 0) throw new Error(`${file} is not a valid scenario:\n- ${problems.join("\n- ")}`);
  return scenario;
}

/** What is wrong with a scenario's shape, so a hand-edited fixture fails with a clear reason. */
export function checkScenario(scenario: Scenario): string[] {
  const problems: string[] = [];
  if (typeof scenario.description !== "string") problems.push("description must be a string");
  if (!Array.isArray(scenario.prompts) || scenario.prompts.length === 0) problems.push("prompts must be a non-empty list");
  if (!Array.isArray(scenario.replies) || scenario.replies.length === 0) problems.push("replies must be a non-empty list");
  for (const [i, reply] of (scenario.replies ?? []).entries()) {
    if (reply?.type !== "message" || reply.role !== "assistant" || !Array.isArray(reply.content)) {
      problems.push(`replies[${i}] is not an assistant message`);
    } else if (!reply.stop_reason) {
      problems.push(`replies[${i}] has no stop_reason`);
    }
  }
  const endings = (scenario.replies ?? []).filter((r) => r?.stop_reason && r.stop_reason !== "tool_use").length;
  if (Array.isArray(scenario.prompts) && endings !== scenario.prompts.length) {
    problems.push(`${scenario.prompts.length} prompt(s) but ${endings} reply/replies that end a turn`);
  }
  return problems;
}
