// The program around every stage: the prompt, the one-shot run, the offline replay and the
// record mode. None of this is a lesson of its own, so it lives here once; each stage file
// hands it the stage's agentLoop and keeps the loop, the tools and the mechanism in view.
//
//   npx tsx agents/s02_tool_use.ts                  a prompt: s02 >>  (needs a key)
//   npx tsx agents/s02_tool_use.ts "Read notes.md"  one prompt, then exit
//   ... --replay [scenario]                         replay fixtures/s02/<scenario>.json (default: demo)
//   ... --record <name>                             a real session, saved as fixtures/s02/<name>.json
// With no ANTHROPIC_API_KEY the program says so and replays the stage's demo.
//
// The replay engine and the recorder need msw, which takes a while to load, so they are
// imported only when a replay or a recording starts: the prompt appears at once.
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { APIError } from "@anthropic-ai/sdk/core/error";
import { envProblem } from "./env.ts";
import { sdkModule } from "./model.ts";
import { loadScenario, scenarioPath, REPO_ROOT, type Scenario } from "../course/scenario.ts";
import type { Recording } from "../course/record.ts";
import { lineTerminal, nobody, typeOut, useTerminal, type Terminal } from "./terminal.ts";

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
  prepareReplay?: (scenario: Scenario) => void | Promise<void>;
  /** Options with a value that the stage reads itself (s06: `--approval-mode`), so not part of a prompt. */
  options?: string[];
  /** A problem with the stage's settings, found when it loaded: said in one line, and nothing runs. */
  settingsProblem?: string;
  /**
   * Flags with no value that do one job instead of a session (s08: `--list-tools`); each resolves to the exit code.
   * An option of the same name given with no value after it is the command (s16: `--resume` alone lists the sessions).
   */
  commands?: Record<string, () => Promise<number>>;
  /** Flags with no value that the stage reads itself and that change the session, not replace it (s16: `--continue`), so not part of a prompt. */
  switches?: string[];
  /**
   * The history a session starts from, in place of an empty array (s16: a log on disk that each
   * message is appended to, or an earlier session's, chosen by the stage's own flags). Called
   * once, before the first prompt of a session or of a replay; an error it throws is said in one
   * line, and nothing runs.
   */
  startHistory?: () => MessageParam[] | Promise<MessageParam[]>;
  /** Lines `--help` adds for the stage's own options, commands and settings ("  --approval-mode <mode>  ..."). */
  help?: string[];
  /** Called before the first prompt of a live session (s08: the tools of the workspace are discovered). */
  prepareSession?: () => void | Promise<void>;
  /**
   * Commands typed at the interactive prompt in place of a request (s11: `/compact [focus]`), by
   * their first word. Each gets the conversation and the rest of the line; the line itself is not
   * sent to the model. A line starting with any other word is a request, as in every stage.
   */
  slashCommands?: Record<string, (history: MessageParam[], rest: string) => void | Promise<void>>;
  /** Which key a real model needs, and how to set it, when not the Anthropic one (s15: PROVIDER=openai needs OPENAI_API_KEY). */
  keyHelp?: { names: string; howTo: string };
}

const EXIT_WORDS = new Set(["q", "quit", "exit"]);
const HOW_TO_USE_A_MODEL =
  "To use a real model: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, for a provider that asks for a bearer token; and ANTHROPIC_BASE_URL, MODEL_ID for another provider), in your shell or in the workbook's .env.";

/** The flags every stage takes; a stage adds its own (`options`, `commands`). */
const FLAGS = ["--help", "-h", "--replay", "--record", "--"];
/** A word that looks like a flag rather than a prompt: `-h`, `--approval-mode=plan`. */
const looksLikeFlag = (word: string) => /^--?[A-Za-z][\w-]*(=.*)?$/.test(word);

/** Run a stage as a program; resolves to the exit code. */
export async function runProgram(program: StageProgram): Promise<number> {
  const asked = withoutOptions(program)[0];
  if (asked === "--help" || asked === "-h") {
    console.log(usage(program));
    return 0;
  }
  if (envProblem) {
    console.log(`[error] ${envProblem}`);
    return 1;
  }
  if (program.settingsProblem) {
    console.log(`[error] ${program.settingsProblem}`);
    return 1;
  }
  const words = withoutOptions(program);
  // A word that looks like a flag and is not one is a typo, never a prompt for the model.
  // `--` ends the flags: `-- "-n means what?"` is a prompt.
  const flags = words.slice(0, words.includes("--") ? words.indexOf("--") : undefined);
  const unknown = flags.find((word) => looksLikeFlag(word) && !FLAGS.includes(word) && !Object.hasOwn(program.commands ?? {}, word));
  if (unknown) {
    console.log(`[error] ${program.stage} has no option ${unknown}. See --help; to send a prompt that starts with -, put -- before it.`);
    return 2;
  }
  // A command is the first word after the stage's options; the same word later on is part of a prompt.
  const [first] = words;
  const command = program.commands && first !== undefined && Object.hasOwn(program.commands, first) ? program.commands[first] : undefined;
  if (command) return withTerminal(command);
  const { flag, value, rest } = parseArgs(words.filter((word, i) => word !== "--" || i !== words.indexOf("--")));
  if (flag === "--replay") return replayDemo(program, value);
  if (flag === "--record" && !program.hasKey) {
    console.log(`[error] Recording needs a real model, and no key is set. ${HOW_TO_USE_A_MODEL.replace("To use a real model: s", "S")}`);
    return 1;
  }
  if (!program.hasKey && rest.length > 0) {
    // Answering with the demo would look like an answer: say what is missing, and fail.
    console.log(`[error] Your prompt needs a real model, and no key is set. ${(program.keyHelp?.howTo ?? HOW_TO_USE_A_MODEL).replace("To use a real model: s", "S")} Without a prompt, ${program.stage} replays its recorded demo.`);
    return 1;
  }
  if (!program.hasKey) {
    console.log(`No key set (${program.keyHelp?.names ?? "ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"}): replaying the recorded demo of ${program.stage} instead.`);
    return replayDemo(program, undefined);
  }
  if (flag === "--record") return record(program, value, rest);
  return converse(program, rest);
}

/** What `--help` prints: how to run the stage, its own flags, and the settings it reads. */
function usage(program: StageProgram): string {
  const file = path.basename(process.argv[1] ?? "");
  const run =
    file === "workbook.mjs"
      ? `node ${path.relative(process.cwd(), process.argv[1])} ${program.stage}` // from any folder
      : `npx tsx agents/${/^s(\d\d_\w+|_full)\.ts$/.test(file) ? file : `${program.stage}_….ts`}`;
  return [
    `${program.stage}: ${program.title}`,
    ``,
    `Usage:`,
    `  ${run}                      a prompt: ${program.stage} >> (with no key: replays the recorded demo)`,
    `  ${run} "a request"          one request, then exit`,
    `  ${run} --replay [scenario]  replay fixtures/${program.stage}/<scenario>.json (default: demo), offline`,
    `  ${run} --record <name>      a real session, saved as fixtures/${program.stage}/<name>.json`,
    `  ${run} --help               this text`,
    ...(program.help && program.help.length > 0 ? [``, `Options of ${program.stage}:`, ...program.help] : []),
    ``,
    `Settings (the environment, or the workbook's .env; never the .env of the folder you work in):`,
    `  ANTHROPIC_API_KEY      your key, sent as x-api-key`,
    `  ANTHROPIC_AUTH_TOKEN   a bearer token instead, for providers that ask for one`,
    `  ANTHROPIC_BASE_URL     another provider's Anthropic-compatible address`,
    `  MODEL_ID               the model (default claude-sonnet-5-5)`,
    `  WORKBOOK_ENV_FILE      another settings file than the workbook's .env`,
    ``,
    `At the prompt, q, exit, an empty line, Ctrl-D or Ctrl-C leaves. The workspace is the folder you start in.`,
  ].join("\n");
}

/** The value given for `--name value` or `--name=value`, if any. */
export function optionValue(args: string[], name: string): string | undefined {
  for (const [i, arg] of args.entries()) {
    if (arg === name) return args[i + 1];
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
  }
  return undefined;
}

/** The words of the command line without the stage's options (and their values) and switches. */
function withoutOptions({ args, options: names = [], commands = {}, switches = [] }: StageProgram): string[] {
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    // An option that is also a command, with no value after it, stays: it is the command.
    const bare = Object.hasOwn(commands, args[i]) && (i + 1 === args.length || looksLikeFlag(args[i + 1]));
    if (names.includes(args[i]) && !bare) i++; // and its value
    else if (!switches.includes(args[i]) && !names.some((name) => args[i].startsWith(`${name}=`))) rest.push(args[i]);
  }
  return rest;
}

/** `--replay [scenario]` or `--record <name>` first, then the prompt, if any. */
function parseArgs(args: string[]) {
  const [first, second, ...more] = args;
  if (first === "--replay" || first === "--record") return { flag: first, value: second, rest: more };
  return { flag: undefined, value: undefined, rest: args };
}

/**
 * The prompt loop, or a single turn when a prompt was given on the command line. The exit
 * code is 1 when the last turn ended with an error (a refused key, no connection): the
 * person has something to fix, and a script that ran the stage should know it.
 */
async function converse(program: StageProgram, rest: string[], recording?: Recording): Promise<number> {
  let history: MessageParam[];
  try {
    history = (await program.startHistory?.()) ?? [];
  } catch (error) {
    console.log(`[error] ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  // Tools that ask the person (s05) read from the same terminal as the prompt; so does what the
  // session prepares (s08 asks before starting a project's commands and servers).
  const toolsTerminal = (term: Terminal) => (recording ? recording.wrap(term) : term);
  if (rest.length > 0) {
    const prompt = rest.join(" ");
    const term = process.stdin.isTTY ? lineTerminal() : nobody;
    useTerminal(toolsTerminal(term));
    await program.prepareSession?.();
    recording?.prompt(prompt);
    const ok = await runTurn(program, history, prompt);
    if (ok) recording?.turnEnded();
    term.close();
    return ok ? 0 : 1;
  }
  const term = lineTerminal();
  useTerminal(toolsTerminal(term));
  await program.prepareSession?.();
  const commands = Object.keys(program.slashCommands ?? {});
  const orCommands = commands.length > 0 ? ` (or ${commands.join(", ")})` : "";
  console.log(`${program.stage}: ${program.title}. Type a request${orCommands}; q, exit or an empty line leaves.`);
  let lastTurnOk = true;
  while (true) {
    const line = await term.ask(`${program.stage} >> `);
    const prompt = line?.trim();
    if (!prompt || EXIT_WORDS.has(prompt.toLowerCase())) break;
    const [word, ...words] = prompt.split(/\s+/);
    const command = program.slashCommands?.[word];
    if (command) {
      lastTurnOk = await runSlashCommand(word, () => command(history, words.join(" ")), recording);
      continue;
    }
    recording?.prompt(prompt);
    lastTurnOk = await runTurn(program, history, prompt);
    if (lastTurnOk) recording?.turnEnded();
  }
  term.close();
  return lastTurnOk ? 0 : 1;
}

/** A stage's command (s08: `--list-tools`), with the terminal a person may answer at. */
async function withTerminal(command: () => Promise<number>): Promise<number> {
  const term = process.stdin.isTTY ? lineTerminal() : nobody;
  useTerminal(term);
  try {
    return await command();
  } finally {
    term.close();
    useTerminal(nobody);
  }
}

/** A stage's command at the prompt. Not while recording: a replay would send the line to the model instead. */
async function runSlashCommand(word: string, run: () => void | Promise<void>, recording?: Recording): Promise<boolean> {
  if (recording) {
    console.log(`[${word} is not available while recording: a replay of the recording could not repeat it]`);
    return true;
  }
  try {
    await run();
    return true;
  } catch (error) {
    console.log(describeProviderError(error));
    return false;
  }
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
  // The classes of the build that made the client: an error from one build is not an
  // instance of the other's.
  const { APIConnectionError, APIError } = sdkModule();
  if (error instanceof APIConnectionError) {
    return `[error] Could not reach ${base}: check the network connection or ANTHROPIC_BASE_URL.`;
  }
  if (error instanceof APIError) {
    const detail = firstLine(apiMessage(error));
    const hints: Record<number, string> = {
      400: "the request was refused",
      401: "the key was refused: check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)",
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
  const removed = removeEarlierDemos(program.stage);
  const workspace = mkdtempSync(path.join(os.tmpdir(), `workbook-${program.stage}-`));
  console.log(`Replaying ${file} in a fresh workspace: ${workspace}`);
  console.log(`(${scenario.description})\n`);

  const { replayScenario } = await import("../course/session.ts");
  const session = await replayScenario(program, scenario, {
    workspace,
    output: process.stdout,
    onPrompt: async (prompt) => {
      process.stdout.write(`${program.stage} >> `);
      await typeOut(prompt);
      process.stdout.write("\n");
    },
    onTurnError: (error) => console.log(describeProviderError(error)),
    onTurnEnd: () => console.log(),
    // A person watching sees a streamed reply (s13) arrive as a model writes it; a pipe gets it at once.
    streamPauseMs: process.stdout.isTTY ? 20 : 0,
  }).catch((error: Error) => void console.log(`[error] ${error.message}`)); // a demo that cannot start (s20's without git): one line, no stack
  useTerminal(nobody);
  if (!session) return 1;
  if (session.problems.length > 0) {
    console.log(`The session did not match the recording:\n- ${session.problems.join("\n- ")}`);
    return 1;
  }
  const cleaned = removed > 0 ? ` (the earlier replay's folder of ${program.stage} was removed)` : "";
  console.log(`The demo's files are in ${workspace}${cleaned}.`);
  console.log(program.keyHelp?.howTo ?? HOW_TO_USE_A_MODEL);
  return 0;
}

/**
 * Each replay gets a fresh folder, and a person may want to look at it afterwards; but they
 * must not pile up in the temporary folder, so an earlier replay's folder of the same stage
 * is removed when a new one starts. Only folders this program names so are touched.
 */
function removeEarlierDemos(stage: string): number {
  const prefix = `workbook-${stage}-`;
  let removed = 0;
  for (const name of readdirSync(os.tmpdir())) {
    if (!name.startsWith(prefix) || !/^[A-Za-z0-9]{6}$/.test(name.slice(prefix.length))) continue;
    rmSync(path.join(os.tmpdir(), name), { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}

/** A real session, saved as a scenario when it ends, with every turn that was complete. */
async function record(program: StageProgram, name: string | undefined, rest: string[]): Promise<number> {
  if (!name) {
    console.log("[error] --record needs a scenario name, e.g. --record my-session");
    return 1;
  }
  let file: string;
  try {
    file = scenarioPath(program.stage, name);
  } catch (error) {
    console.log(`[error] ${(error as Error).message}`);
    return 1;
  }
  if (existsSync(file)) {
    console.log(`[error] ${file} exists already; choose another name (nothing was overwritten).`);
    return 1;
  }
  const { startRecording } = await import("../course/record.ts");
  const recording = startRecording(process.env.ANTHROPIC_API_KEY ?? "");
  let code = 1;
  try {
    code = await converse(program, rest, recording);
  } finally {
    recording.close();
    const saved = recording.save(file, `Recorded with ${program.stage}.`);
    console.log(saved > 0 ? `Saved the session (${saved} complete turn${saved === 1 ? "" : "s"}) to ${file}.` : "Nothing to save: the session had no complete turn.");
  }
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
  endQuietlyWhenOutputCloses();
  exitOnTerminationSignals();
  const code = await runProgram(program);
  process.exit(code);
}

/**
 * `npx tsx agents/s01_agent_loop.ts | head` closes the pipe while the program still
 * writes: that is a reader who has seen enough, not a failure, so the program ends at once
 * and without a stack trace (and its exit handlers still stop any running command).
 */
function endQuietlyWhenOutputCloses(): void {
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
}

/**
 * Closing the terminal (SIGHUP) or `kill` (SIGTERM) would end Node at once, skipping the
 * exit handlers that end the commands the agent started. Exiting through process.exit
 * runs them, so nothing the agent started outlives it.
 */
function exitOnTerminationSignals(): void {
  for (const signal of ["SIGHUP", "SIGTERM"] as const) {
    process.on(signal, () => process.exit(128 + os.constants.signals[signal]));
  }
}
