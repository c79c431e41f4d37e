// The program around every stage: the prompt, the one-shot run, the offline replay and the
// record mode. None of this is a lesson of its own, so it lives here once; each stage file
// hands it the stage's agentLoop and keeps the loop, the tools and the mechanism in view.
//
//   npx tsx agents/s02_tool_use.ts                  a prompt: s02 >>  (needs a key)
//   npx tsx agents/s02_tool_use.ts "Read notes.md"  one prompt, then exit
//   ... --replay [scenario]                         replay fixtures/s02/<scenario>.json (default: demo)
//   ... --record <name>                             a real session, saved as fixtures/s02/<name>.json
// With no ANTHROPIC_API_KEY the program says so and replays the stage's demo.
import { existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { APIConnectionError, APIError } from "@anthropic-ai/sdk";
import { loadScenario, scenarioPath, REPO_ROOT, type Scenario } from "./scenario.ts";
import { startReplay } from "./replay.ts";
import { startRecording, type Recording } from "./record.ts";
import { lineTerminal, nobody, scriptedTerminal, typeOut, useTerminal, type Terminal } from "./terminal.ts";

export interface StageProgram {
  /** "s02" */
  stage: string;
  /** "Tools" */
  title: string;
  agentLoop: (messages: MessageParam[]) => Promise<void>;
  /** Whether ANTHROPIC_API_KEY is set: without one, only a replay can answer. */
  hasKey: boolean;
  /** The command line after the file name. */
  args: string[];
  /** Called before a replay starts, for what a stage needs from the scenario (s04: its host names). */
  prepareReplay?: (scenario: Scenario) => void;
}

const EXIT_WORDS = new Set(["q", "quit", "exit"]);
const HOW_TO_USE_A_MODEL =
  "To use a real model: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL, MODEL_ID for another provider) or put them in .env.";

/** Run a stage as a program; resolves to the exit code. */
export async function runProgram(program: StageProgram): Promise<number> {
  const { flag, value, rest } = parseArgs(program.args);
  if (flag === "--replay") return replayDemo(program, value);
  if (!program.hasKey) {
    const why = rest.length > 0 ? "your prompt needs a real model, so here is" : "replaying";
    console.log(`No ANTHROPIC_API_KEY set: ${why} the recorded demo of ${program.stage} instead.`);
    return replayDemo(program, undefined);
  }
  if (flag === "--record") return record(program, value, rest);
  return converse(program, rest);
}

/** `--replay [scenario]` or `--record <name>` first, then the prompt, if any. */
function parseArgs(args: string[]) {
  const [first, second, ...more] = args;
  if (first === "--replay" || first === "--record") return { flag: first, value: second, rest: more };
  return { flag: undefined, value: undefined, rest: args };
}

/** The prompt loop, or a single turn when a prompt was given on the command line. */
async function converse(program: StageProgram, rest: string[], recording?: Recording): Promise<number> {
  const history: MessageParam[] = [];
  // Tools that ask the person (s05) read from the same terminal as the prompt.
  const toolsTerminal = (term: Terminal) => (recording ? recording.wrap(term) : term);
  if (rest.length > 0) {
    const prompt = rest.join(" ");
    recording?.prompt(prompt);
    const term = process.stdin.isTTY ? lineTerminal() : nobody;
    useTerminal(toolsTerminal(term));
    const ok = await runTurn(program, history, prompt);
    term.close();
    return ok ? 0 : 1;
  }
  const term = lineTerminal();
  useTerminal(toolsTerminal(term));
  console.log(`${program.stage}: ${program.title}. Type a request; q, exit or an empty line leaves.`);
  while (true) {
    const line = await term.ask(`${program.stage} >> `);
    const prompt = line?.trim();
    if (!prompt || EXIT_WORDS.has(prompt.toLowerCase())) break;
    recording?.prompt(prompt);
    await runTurn(program, history, prompt);
  }
  term.close();
  return 0;
}

/** One turn: the person's prompt, then the agent loop until the model stops asking for tools. */
async function runTurn(program: StageProgram, history: MessageParam[], prompt: string): Promise<boolean> {
  history.push({ role: "user", content: prompt });
  try {
    await program.agentLoop(history);
    return true;
  } catch (error) {
    // The turn ends, the conversation stays; the next prompt carries on from here.
    console.log(describeProviderError(error));
    return false;
  }
}

/** One line a learner can act on, never a stack trace. */
export function describeProviderError(error: unknown): string {
  const base = process.env.ANTHROPIC_BASE_URL || "the Anthropic API";
  if (error instanceof APIConnectionError) {
    return `[error] Could not reach ${base}: check the network connection or ANTHROPIC_BASE_URL.`;
  }
  if (error instanceof APIError) {
    const detail = firstLine(apiMessage(error));
    const hints: Record<number, string> = {
      400: "the request was refused",
      401: "the API key was refused: check ANTHROPIC_API_KEY",
      403: "this key may not use that model or endpoint",
      404: "not found: check MODEL_ID and ANTHROPIC_BASE_URL",
      429: "rate limited: wait a moment, then try again",
      529: "the provider is overloaded: try again shortly",
    };
    const status = error.status ?? 0;
    const hint = hints[status] ?? (status >= 500 ? "the provider had a problem: try again shortly" : "the request failed");
    return `[error] ${status} ${hint}${detail ? ` (${detail})` : ""}.`;
  }
  return `[error] ${firstLine(error instanceof Error ? error.message : String(error))}`;
}

function apiMessage(error: APIError): string {
  const body = error.error as { error?: { message?: string } } | undefined;
  return body?.error?.message ?? "";
}

function firstLine(text: string): string {
  return text.split("\n")[0].slice(0, 200);
}

/** The offline demo: the real loop and real tools in a fresh workspace, the model's replies from a fixture. */
async function replayDemo(program: StageProgram, name: string | undefined): Promise<number> {
  let scenario;
  try {
    scenario = loadScenario(program.stage, name);
  } catch (error) {
    console.log(`[error] ${(error as Error).message}`);
    return 1;
  }
  const file = path.relative(REPO_ROOT, scenarioPath(program.stage, name));
  const workspace = mkdtempSync(path.join(os.tmpdir(), `workbook-${program.stage}-`));
  for (const [relative, text] of Object.entries(scenario.files ?? {})) {
    mkdirSync(path.dirname(path.join(workspace, relative)), { recursive: true });
    writeFileSync(path.join(workspace, relative), text);
  }
  console.log(`Replaying ${file} in a fresh workspace: ${workspace}`);
  console.log(`(${scenario.description})\n`);

  const home = process.cwd();
  process.chdir(workspace); // the workspace is the directory the program runs in
  program.prepareReplay?.(scenario);
  const replay = startReplay(scenario);
  useTerminal(scriptedTerminal(scenario.answers ?? []));
  const history: MessageParam[] = [];
  try {
    for (const prompt of scenario.prompts) {
      process.stdout.write(`${program.stage} >> `);
      await typeOut(prompt);
      process.stdout.write("\n");
      await runTurn(program, history, prompt);
      console.log();
    }
  } finally {
    replay.close();
    useTerminal(nobody);
    process.chdir(home);
  }
  const problems = replay.verdict();
  if (problems.length > 0) {
    console.log(`The session did not match the recording:\n- ${problems.join("\n- ")}`);
    return 1;
  }
  console.log(`The demo's files are still in ${workspace}.`);
  console.log(HOW_TO_USE_A_MODEL);
  return 0;
}

/** A real session, saved as a scenario when it ends. */
async function record(program: StageProgram, name: string | undefined, rest: string[]): Promise<number> {
  if (!name) {
    console.log("[error] --record needs a scenario name, e.g. --record my-session");
    return 1;
  }
  const file = scenarioPath(program.stage, name);
  if (existsSync(file)) {
    console.log(`[error] ${file} exists already; choose another name (nothing was overwritten).`);
    return 1;
  }
  const recording = startRecording(process.env.ANTHROPIC_API_KEY ?? "");
  let code = 1;
  try {
    code = await converse(program, rest, recording);
  } finally {
    recording.close();
  }
  const saved = recording.save(file, `Recorded with ${program.stage}.`);
  console.log(saved ? `Saved the session to ${file}.` : "Nothing to save: the session had no complete turn.");
  return code;
}

/** True when this module is the file node was asked to run (not imported by a test). */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (!entry || !existsSync(entry)) return false;
  return realpathSync(entry) === realpathSync(fileURLToPath(moduleUrl));
}

/** Run the program and exit with its code, for the last line of a stage file. */
export async function runAsMain(program: StageProgram): Promise<never> {
  const code = await runProgram(program);
  process.exit(code);
}
