// A scenario is one recorded session: what the person typed and what the model replied, in
// the exact shape of the Anthropic Messages API. The offline demo, the tests and the
// exercises all read scenarios through this file, so they see the same thing.
import { existsSync, readdirSync, readFileSync } from "node:fs";
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
  /** The model's replies, in order: one per request the loop makes (per agent, when replies name one). */
  replies: ScenarioReply[];
  /** Files to put in the fresh workspace before the first prompt (path → text). */
  files?: Record<string, string>;
  /** What the person typed when the agent asked them something (s05's ask_user). */
  answers?: string[];
  /** Web pages by URL, served instead of the network (s04's web_fetch). */
  web?: Record<string, ScenarioPage>;
  /** The addresses those pages' host names resolve to (host → IP), for checks made before fetching. */
  hosts?: Record<string, string>;
  /**
   * How many replies end a conversation the agent holds beside the person's turns, rather than
   * a turn (s10: each subagent's last reply). The replies that end a turn or such a
   * conversation number prompts + sideTurns. Default 0.
   */
  sideTurns?: number;
  /** Make the fresh workspace a git repository, its files (if any) in one commit, before the first prompt (s20's worktrees need one). */
  git?: boolean;
}

/**
 * A recorded reply. `agent` (s19) names the agent whose request it answers, when agents run at
 * the same time and their requests interleave in no fixed order: a request is agent NAME's when
 * its system prompt says `Your name is NAME.` (agentOf), and each agent is served its own
 * replies, in their order in the file. A request that names no agent gets the next reply that
 * names none. The field is the scenario's, never sent to the stage.
 */
export type ScenarioReply = Message & { agent?: string };

/** The agent a request's system prompt names (`Your name is NAME.`), or undefined for the main agent. */
export function agentOf(system: unknown): string | undefined {
  const text = typeof system === "string" ? system : Array.isArray(system) ? system.map((block) => (typeof block?.text === "string" ? block.text : "")).join("\n") : "";
  return /\bYour name is ([A-Za-z0-9_-]+)\./.exec(text)?.[1];
}

export { REPO_ROOT };
export const FIXTURES_DIR = path.join(REPO_ROOT, "fixtures");

/**
 * Where a scenario lives: a path to a .json file, or a plain name under fixtures/<stage>/.
 * A name is only a name (`demo`, `my-session`): `../s01/demo` would quietly play another
 * stage's recording, so a name with a path in it is refused.
 */
export function scenarioPath(stage: string, nameOrPath = "demo"): string {
  if (nameOrPath.endsWith(".json")) return path.resolve(nameOrPath);
  if (!/^[\w][\w.-]*$/.test(nameOrPath)) {
    throw new Error(`"${nameOrPath}" is not a scenario name: use a name from fixtures/${stage}/ (letters, digits, - and _), or a path ending in .json`);
  }
  return path.join(FIXTURES_DIR, stage, `${nameOrPath}.json`);
}

/** The scenario names recorded for a stage: fixtures/<stage>/*.json without the extension. */
export function scenarioNames(stage: string): string[] {
  const dir = path.join(FIXTURES_DIR, stage);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((name) => name.endsWith(".json")).map((name) => name.slice(0, -5)).sort();
}

export function loadScenario(stage: string, nameOrPath = "demo"): Scenario {
  const file = scenarioPath(stage, nameOrPath);
  const shown = path.relative(process.cwd(), file) || file;
  if (!existsSync(file)) {
    const names = scenarioNames(stage);
    const there = names.length > 0 ? `the scenarios of ${stage} are: ${names.join(", ")}` : `${stage} has no recorded scenarios`;
    throw new Error(`No scenario at ${shown}; ${there}`);
  }
  const scenario = parseJson(readFileSync(file, "utf8"), shown) as Scenario;
  const problems = checkScenario(scenario);
  if (problems.length > 0) throw new Error(`${shown} is not a valid scenario:\n- ${problems.join("\n- ")}`);
  return scenario;
}

/** JSON.parse, with the file's name and the line and column of a syntax error. */
function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    const position = Number(/position (\d+)/.exec(message)?.[1]);
    if (!Number.isInteger(position)) throw new Error(`${file} is not valid JSON: ${message}`);
    const before = text.slice(0, position).split("\n");
    const where = `line ${before.length}, column ${before.at(-1)!.length + 1}`;
    throw new Error(`${file} is not valid JSON at ${where}: ${message.replace(/ in JSON at position \d+.*$/, "")}`);
  }
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
    } else if (reply.agent !== undefined && !(typeof reply.agent === "string" && /^[A-Za-z0-9_-]+$/.test(reply.agent))) {
      problems.push(`replies[${i}].agent must be a name (letters, digits, - and _), as the agent's system prompt says it`);
    }
  }
  const endings = (scenario.replies ?? []).filter((r) => r?.stop_reason && r.stop_reason !== "tool_use").length;
  const side = scenario.sideTurns ?? 0;
  if (scenario.git !== undefined && typeof scenario.git !== "boolean") problems.push("git must be true or false");
  if (!Number.isInteger(side) || side < 0) problems.push("sideTurns must be a whole number, 0 or more");
  else if (Array.isArray(scenario.prompts) && endings !== scenario.prompts.length + side) {
    const expected = side > 0 ? `${scenario.prompts.length} prompt(s) and ${side} side turn(s)` : `${scenario.prompts.length} prompt(s)`;
    problems.push(`${expected} but ${endings} reply/replies that end a turn`);
  }
  return problems;
}
