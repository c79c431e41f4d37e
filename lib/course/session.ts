// Replaying a scenario through a stage: the one way a recorded session is run. The offline
// demo, the tests, the docs' session view, the exercises' checks and the bench all call
// replayScenario, so each of them sees the stage's real loop drive its real tools in a
// workspace, with the model's replies (and any web pages) served by the replay engine.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { Writable } from "node:stream";
import path from "node:path";
import type { MessageCreateParams, MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { Scenario } from "./scenario.ts";
import { startReplay } from "./replay.ts";
import type { ChatRequestBody } from "./chat-replay.ts";
import { scriptedTerminal, terminal, useTerminal } from "../runtime/terminal.ts";

/** What a stage module offers a replay: its loop, and what it must know of the scenario first. */
export interface ReplayableStage {
  agentLoop(messages: MessageParam[]): Promise<void>;
  /** Called before the first prompt (s04: host names resolve from the scenario's `hosts`). */
  prepareReplay?(scenario: Scenario): void | Promise<void>;
  /** A turn as the stage's program runs it, when that is more than the loop (s17: hooks at the prompt and at the turn's end); default agentLoop. */
  runTurn?(messages: MessageParam[]): Promise<void>;
  /** The history the conversation starts from, after prepareReplay (s16: a session log in the workspace); default []. */
  startHistory?(): MessageParam[] | Promise<MessageParam[]>;
}

export interface ReplayOptions {
  /** The folder the tools work in: created if missing, seeded with the scenario's files. */
  workspace: string;
  /** Where the replay's person "types" the recorded answers (default: nowhere). */
  output?: NodeJS.WritableStream;
  /** Before each prompt is sent to the loop (the program types it out here). */
  onPrompt?(prompt: string): void | Promise<void>;
  /** A turn ended with an error (the replay refused a request, say); the next prompt still runs. */
  onTurnError?(error: unknown): void;
  /** After each turn, whether it ended normally or not. */
  onTurnEnd?(): void;
  /** Milliseconds between a streamed reply's deltas (s13's demo at a terminal); 0, at once. */
  streamPauseMs?: number;
}

export interface ReplayedSession {
  /** The conversation as the loop left it: prompts, replies and tool results, in order. */
  messages: MessageParam[];
  /** Every request body the model received, in order. */
  requests: MessageCreateParams[];
  /** The recorded reply each request got, by its index in the scenario (in file order unless agents ran at once, s19). */
  served?: number[];
  /** Every Chat Completions request body, in order (s15 with PROVIDER=openai). */
  chatRequests?: ChatRequestBody[];
  /** What did not match the recording; empty when the session replayed exactly. */
  problems: string[];
  /** The errors that ended turns, in order. */
  turnErrors: unknown[];
}

/** Write the scenario's files into the workspace. */
export function seedWorkspace(workspace: string, scenario: Scenario): void {
  mkdirSync(workspace, { recursive: true });
  for (const [relative, text] of Object.entries(scenario.files ?? {})) {
    const file = path.join(workspace, relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  if (scenario.git) commitAll(workspace);
}

/**
 * A scenario with `git: true` (s20) starts in a git repository whose files are in one commit. The
 * author is fixed and no user or system configuration is read, so the replay is the same anywhere.
 */
function commitAll(workspace: string): void {
  const git = (...args: string[]) => {
    try {
      execFileSync("git", ["-c", "commit.gpgsign=false", ...args], {
        cwd: workspace,
        stdio: ["ignore", "ignore", "pipe"],
        timeout: 30_000,
        env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z", GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z" },
      });
    } catch (error) {
      const { code, stderr } = error as NodeJS.ErrnoException & { stderr?: Buffer };
      const why = code === "ENOENT" ? "git is not installed (or not on PATH): install it, then run the demo again" : `git ${args[0]} failed: ${String(stderr ?? "").trim() || (error as Error).message}`;
      throw new Error(`This demo starts in a git repository, and ${why}`);
    }
  };
  git("init", "--quiet", "--initial-branch=main");
  // An author for the commits the session's agents make, in the repository's own config, which its worktrees share.
  git("config", "user.name", "Workbook");
  git("config", "user.email", "workbook@example.com");
  git("add", "--all");
  git("commit", "--quiet", "--allow-empty", "--message", "The scenario's files");
}

/**
 * Run every prompt of `scenario` through the stage's turn (`runTurn`, else `agentLoop`) in `options.workspace`, which
 * becomes the working directory (the stages' workspace) for the duration and is restored
 * afterwards, as are the terminal and the network.
 */
export async function replayScenario(stage: ReplayableStage, scenario: Scenario, options: ReplayOptions): Promise<ReplayedSession> {
  seedWorkspace(options.workspace, scenario);
  const home = process.cwd();
  const previousTerminal = terminal();
  process.chdir(options.workspace);
  const replay = startReplay(scenario, { streamPauseMs: options.streamPauseMs });
  useTerminal(scriptedTerminal(scenario.answers ?? [], (options.output ?? nowhere()) as NodeJS.WriteStream));
  let messages: MessageParam[] = [];
  const turnErrors: unknown[] = [];
  try {
    await stage.prepareReplay?.(scenario);
    messages = (await stage.startHistory?.()) ?? messages;
    for (const prompt of scenario.prompts) {
      await options.onPrompt?.(prompt);
      messages.push({ role: "user", content: prompt });
      try {
        await (stage.runTurn ?? stage.agentLoop)(messages);
      } catch (error) {
        turnErrors.push(error);
        options.onTurnError?.(error);
      }
      options.onTurnEnd?.();
    }
  } finally {
    replay.close();
    useTerminal(previousTerminal);
    process.chdir(home);
  }
  return { messages, requests: replay.requests, served: replay.served, chatRequests: replay.chatRequests, problems: replay.verdict(), turnErrors };
}

/** A stream that drops what is written to it. */
const nowhere = () => new Writable({ write: (_chunk, _encoding, done) => done() });
