// The tests' shared helpers: a temporary workspace per test, scenarios written inline,
// the real stage program spawned as a learner would run it, and a loopback stand-in for
// the model's API that answers through the same replay engine as everything else.
import { spawn } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, vi } from "vitest";
import { getResponse } from "msw";
import type { ContentBlock, Message, MessageCreateParams, MessageParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import { replayHandlers, startReplay, type Replay, type RunningReplay } from "../lib/replay.ts";
import type { Scenario } from "../lib/scenario.ts";
import { AGENTS_DIR, existingStages, REPO_ROOT } from "../lib/stages.ts";

export { REPO_ROOT };

/** Every stage file, in order: agents/s01_agent_loop.ts, ... */
export function stageFiles(): string[] {
  return [...existingStages().values()].map((name) => path.join(AGENTS_DIR, name));
}

/** "s02" -> absolute path of agents/s02_*.ts */
export function stageFile(stage: string): string {
  const name = existingStages().get(stage);
  if (!name) throw new Error(`no stage file for ${stage}`);
  return path.join(AGENTS_DIR, name);
}

/** A tool as tests call it: input in, the text the model would receive out; a failure throws. */
export type ToolCall = (input: Record<string, unknown>) => Promise<string>;

/**
 * The stages whose model sees tool `name`, as [id, file] pairs in order. Each tool's tests
 * run against every stage listed here, so the copy of a tool in a new stage is tested the
 * day that stage lands.
 */
export async function stagesWithTool(name: string): Promise<[string, string][]> {
  const found: [string, string][] = [];
  for (const file of stageFiles()) {
    const stage = (await import(file)) as { TOOLS: { name: string }[] };
    if (stage.TOOLS.some((tool) => tool.name === name)) found.push([stageId(file), file]);
  }
  return found;
}

/** "…/agents/s03_search_and_edit.ts" -> "s03" */
export const stageId = (file: string) => path.basename(file).split("_")[0];

/**
 * Call a stage's tool the same way whatever the stage's shape: through the dispatch map of
 * s01 to s05 (a handler that throws on failure), or through the registry from s06 (the
 * tool's own validation, then execute; llmContent is what the model receives). The
 * registry's confirmation step is not part of a tool's behaviour, so it is not asked here;
 * s06's own tests cover it.
 */
export async function toolOf(file: string, name: string): Promise<ToolCall> {
  const stage = await import(file);
  if (stage.TOOL_HANDLERS) {
    const handler = stage.TOOL_HANDLERS[name];
    if (!handler) throw new Error(`${stageId(file)} has no tool ${name}`);
    return async (input) => String(await handler(input));
  }
  const tool = stage.registry.getTool(name);
  if (!tool) throw new Error(`${stageId(file)} has no tool ${name}`);
  return async (input) => {
    const problem = tool.validateToolParams(input);
    if (problem) throw new Error(problem);
    const result = await tool.execute(input, new AbortController().signal);
    const content = result.llmContent;
    return typeof content === "string" ? content : JSON.stringify(content);
  };
}

/**
 * Each test runs in a fresh temporary directory, which is also the process's working
 * directory: the stages treat the working directory as the workspace.
 */
export function useWorkspace(): { readonly dir: string } {
  const state = { dir: "" };
  let home = "";
  beforeEach(() => {
    home = process.cwd();
    state.dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-test-")));
    process.chdir(state.dir);
  });
  afterEach(() => {
    process.chdir(home);
    rmSync(state.dir, { recursive: true, force: true });
  });
  return state;
}

/** What the program printed with console.log in each test, a line per call; nothing reaches the screen. */
export function usePrinted(): string[] {
  const printed: string[] = [];
  beforeEach(() => {
    printed.length = 0;
    vi.spyOn(console, "log").mockImplementation((...args) => void printed.push(args.join(" ")));
  });
  afterEach(() => vi.restoreAllMocks());
  return printed;
}

/** Serve a scenario for the duration of one test, and close it afterwards. */
export function useReplay(): (scenario: Scenario, options?: { allowUnhandled?: boolean }) => RunningReplay {
  let running: RunningReplay | undefined;
  afterEach(() => {
    running?.close();
    running = undefined;
  });
  return (scenario, options) => {
    running?.close();
    running = startReplay(scenario, options);
    return running;
  };
}

let counter = 0;
const nextId = (prefix: string) => `${prefix}_test_${String(++counter).padStart(3, "0")}`;

type Call = { name: string; input: Record<string, unknown>; id?: string };

/** Model replies in the exact shape of the Messages API, written briefly. */
export const reply = {
  /** A reply that asks for tools (stop_reason "tool_use"), optionally with some text first. */
  tools(calls: Call[], text?: string): Message {
    const content: ContentBlock[] = [];
    if (text) content.push({ type: "text", text, citations: null } as ContentBlock);
    for (const call of calls) {
      content.push({ type: "tool_use", id: call.id ?? nextId("toolu"), name: call.name, input: call.input } as ContentBlock);
    }
    return message(content, "tool_use");
  },
  /** A reply that ends the turn with text. */
  text(text: string, stop: Message["stop_reason"] = "end_turn"): Message {
    return message([{ type: "text", text, citations: null } as ContentBlock], stop);
  },
};

function message(content: ContentBlock[], stop_reason: Message["stop_reason"]): Message {
  return {
    id: nextId("msg"),
    type: "message",
    role: "assistant",
    model: "claude-sonnet-5-5",
    content,
    stop_reason,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 10 },
  } as Message;
}

/** A scenario from replies, with one prompt per reply that ends a turn. */
export function scenarioOf(replies: Message[], extra: Partial<Scenario> = {}): Scenario {
  const turns = replies.filter((r) => r.stop_reason !== "tool_use").length;
  return {
    description: "written in a test",
    prompts: Array.from({ length: turns }, (_, i) => `prompt ${i + 1}`),
    replies,
    ...extra,
  };
}

/** The tool results carried by request `index` (the last user message), in order. */
export function toolResults(replay: Replay, index: number): ToolResultBlockParam[] {
  const request: MessageCreateParams | undefined = replay.requests[index];
  if (!request) throw new Error(`there is no request ${index}; the model received ${replay.requests.length}`);
  const last = request.messages.at(-1);
  if (!last || last.role !== "user" || !Array.isArray(last.content)) return [];
  return last.content.filter((b): b is ToolResultBlockParam => b.type === "tool_result");
}

/** The text of a tool result's content. */
export function resultText(result: ToolResultBlockParam): string {
  const { content } = result;
  if (typeof content === "string") return content;
  return (content ?? []).map((b) => ("text" in b ? b.text : "")).join("");
}

// `npx tsx` in the repository resolves tsx from there; a child started in a temporary
// folder needs the loader's full address.
const TSX_LOADER = pathToFileURL(path.join(REPO_ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Run a stage as a learner would (`npx tsx agents/sNN.ts ...`), in `cwd`, with no key
 * unless `env` gives one, and `input` typed on stdin (then end of input). The system's
 * temporary folder is `tmpdir` (default: `cwd`), so nothing lands outside the test's folder.
 */
export function runStage(
  stage: string,
  options: { args?: string[]; input?: string; env?: Record<string, string>; cwd: string; tmpdir?: string; timeoutMs?: number },
): Promise<RunResult> {
  const env: Record<string, string | undefined> = { ...process.env, TMPDIR: options.tmpdir ?? options.cwd };
  for (const name of ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "MODEL_ID"]) delete env[name];
  Object.assign(env, options.env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", TSX_LOADER, stageFile(stage), ...(options.args ?? [])], {
      cwd: options.cwd,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`stage ${stage} did not finish in time.\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, options.timeoutMs ?? 25_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });
}

export interface StandIn {
  url: string;
  replay: Replay;
  /** The headers of each request the stand-in received. */
  headers: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}

/**
 * A local stand-in for an Anthropic-compatible provider, reached through ANTHROPIC_BASE_URL:
 * a real HTTP server on loopback that answers with a scenario's replies, through the same
 * replay engine the rest of the workbook uses.
 */
export async function startStandIn(scenario: Scenario): Promise<StandIn> {
  const { handlers, replay } = replayHandlers(scenario);
  const headers: http.IncomingHttpHeaders[] = [];
  const server = http.createServer(async (req, res) => {
    headers.push(req.headers);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers: req.headers as Record<string, string>,
      body: req.method === "GET" ? undefined : Buffer.concat(chunks),
    });
    const response = await getResponse(handlers, request);
    if (!response) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    replay,
    headers,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A raw HTTP server that answers every request with `status` and `body` (for provider errors). */
export async function startErrorServer(status: number, body: unknown): Promise<{ url: string; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits += 1;
    res.writeHead(status, { "content-type": "application/json", "retry-after": "0", "x-should-retry": "false" });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, hits: () => hits, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * Run a stage in a real pseudo-terminal (util-linux `script`), as a person at a keyboard:
 * each step waits until the screen shows `when`, then types `keys`. For what only a
 * terminal does: Ctrl-C, and a person who is there.
 */
export function runInTerminal(
  stage: string,
  options: { env?: Record<string, string>; cwd: string; steps: { when: RegExp; keys: string }[]; timeoutMs?: number },
): Promise<RunResult> {
  const env: Record<string, string | undefined> = { ...process.env, TMPDIR: options.cwd, TERM: "dumb" };
  for (const name of ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "MODEL_ID"]) delete env[name];
  Object.assign(env, options.env);
  const command = `node --import ${TSX_LOADER} ${stageFile(stage)}; echo "[exit $?]"`;
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qfec", command, "/dev/null"], { cwd: options.cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    const steps = [...options.steps];
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (steps.length > 0 && steps[0].when.test(stdout)) child.stdin.write(steps.shift()!.keys);
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the terminal session did not end in time:\n${stdout}`));
    }, options.timeoutMs ?? 20_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr: "" });
    });
  });
}

/** Each prompt as the person's turn, then the loop until it stops: the conversation after. */
export async function runTurns(
  agentLoop: (messages: MessageParam[]) => Promise<void>,
  prompts: string[],
): Promise<MessageParam[]> {
  const messages: MessageParam[] = [];
  for (const prompt of prompts) {
    messages.push({ role: "user", content: prompt });
    await agentLoop(messages);
  }
  return messages;
}
