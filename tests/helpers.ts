// The tests' shared helpers: a temporary workspace per test, scenarios written inline,
// the real stage program spawned as a learner would run it, and a loopback stand-in for
// the model's API that answers through the same replay engine as everything else.
import { randomUUID } from "node:crypto";
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { afterEach, beforeEach, vi } from "vitest";
import type { MessageCreateParams, MessageParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import type { HttpHandler } from "msw";
import { replayHandlers, startReplay, type Replay, type RunningReplay } from "../lib/course/replay.ts";
import type { Scenario } from "../lib/course/scenario.ts";
import { AGENTS_DIR, existingStages, REPO_ROOT, stageIdOf, TSX_LOADER } from "../lib/course/stages.ts";
import { reply, resultText, scenarioOf, toolResults as resultsOf } from "../lib/course/replies.ts";
import { toolCall, toolImplementations, type ToolCall, type ToolStage } from "../lib/course/tools.ts";
export { offersTool } from "../lib/course/tools.ts";

export { REPO_ROOT };

/** Every stage file, in order: agents/s01_agent_loop.ts, ... */
export function stageFiles(): string[] {
  return [...existingStages().values()].map((name) => path.join(AGENTS_DIR, name));
}

/** "s02" -> absolute path of agents/s02_*.ts */
export function stageFile(stage: string): string {
  if (stage.endsWith(".ts")) return stage; // a stage file given by its path
  const name = existingStages().get(stage);
  if (!name) throw new Error(`no stage file for ${stage}`);
  return path.join(AGENTS_DIR, name);
}

export type { ToolCall };

/**
 * The stages whose model sees tool `name`, as [label, file] pairs in order: one per distinct
 * implementation of the tool (lib/course/tools.ts toolImplementations), labelled with every stage
 * that carries that same code ("s06 s08 s09"). A new stage's copy of a tool is tested the day
 * the stage lands; a copy that is byte for byte one already tested is not run again, which
 * keeps the suite fast as stages are added.
 */
export async function stagesWithTool(name: string): Promise<[string, string][]> {
  return (await toolImplementations(name, stageFiles())).map(({ ids, file }) => [ids.join(" "), file]);
}

/** "…/agents/s03_search_and_edit.ts" -> "s03" */
export const stageId = stageIdOf;

/** A stage's tool as tests call it (lib/course/tools.ts): input in, the text the model would receive out. */
export async function toolOf(file: string, name: string): Promise<ToolCall> {
  const call = toolCall((await import(file)) as ToolStage, name);
  if (!call) throw new Error(`${stageId(file)} has no tool ${name}`);
  return call;
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
export function useReplay(): (scenario: Scenario, options?: Parameters<typeof startReplay>[1]) => RunningReplay {
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

// Replies and scenarios written briefly (lib/course/replies.ts, which the exercises' checks use too).
export { reply, resultText, scenarioOf };

/** The tool results carried by request `index` (the last user message), in order; a request never made fails the test. */
export function toolResults(replay: { requests: MessageCreateParams[] }, index: number): ToolResultBlockParam[] {
  if (!replay.requests[index]) throw new Error(`there is no request ${index}; the model received ${replay.requests.length}`);
  return resultsOf(replay.requests, index);
}

/**
 * Run `work` as a program would run at a terminal without a person: stdin gives `input` and
 * then ends, as a pipe does, and what is written to the screen is captured, not shown.
 */
export async function onScreen<T>(input: string, work: () => Promise<T>): Promise<{ value: T; output: string }> {
  let output = "";
  const spies = [
    vi.spyOn(console, "log").mockImplementation((...parts) => void (output += `${parts.join(" ")}\n`)),
    vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
      output += String(chunk);
      return true;
    }),
    vi.spyOn(process, "stdin", "get").mockReturnValue(Readable.from([input]) as unknown as typeof process.stdin),
  ];
  try {
    return { value: await work(), output };
  } finally {
    spies.forEach((spy) => spy.mockRestore());
  }
}

/** Thrown in place of process.exit while runMain runs a stage's program in-process. */
class ExitCalled {
  constructor(readonly code: number) {}
}

/**
 * Run a stage's program in this process, as `npx tsx agents/sNN.ts ...args` would, for what
 * needs no real process; process.exit becomes the code returned. For a real terminal,
 * signals or what happens at start-up, use runStage instead.
 */
export async function runMain(file: string, args: string[] = [], options: { input?: string } = {}): Promise<{ code: number; output: string }> {
  const stage = await import(file);
  const exit = vi.spyOn(process, "exit").mockImplementation((code) => {
    throw new ExitCalled(Number(code ?? 0));
  });
  try {
    const { value, output } = await onScreen(options.input ?? "", async () => {
      try {
        await stage.main(args);
      } catch (error) {
        if (error instanceof ExitCalled) return error.code;
        throw error;
      }
      throw new Error("the program returned without calling process.exit");
    });
    return { code: value, output };
  } finally {
    exit.mockRestore();
  }
}


export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

// tsx keeps what it compiles in TMPDIR/tsx-<uid>, and the tests give each program they start
// a TMPDIR of its own, so that nothing it makes lands outside the test's folder. The program
// would then compile the stage and everything it imports again, every time: about half a
// second of processor for each program a test starts. So that folder is a link to one cache
// that every test shares. (A cache file read half-written is compiled again, not trusted.)
const TSX_CACHE = `tsx-${process.geteuid?.() ?? os.userInfo().username}`; // tsx's own name for it
const COMPILED_CODE = path.join(os.tmpdir(), `workbook-tests-${TSX_CACHE}`);

/** `env` with TMPDIR set to `tmpdir`, whose tsx cache is the tests' shared one. */
export function withTmpdir(env: Record<string, string | undefined>, tmpdir: string): Record<string, string | undefined> {
  const link = path.join(tmpdir, TSX_CACHE);
  mkdirSync(COMPILED_CODE, { recursive: true });
  if (!existsSync(link)) symlinkSync(COMPILED_CODE, link);
  return { ...env, TMPDIR: tmpdir };
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
  const env = withTmpdir(process.env, options.tmpdir ?? options.cwd);
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
 * The answer of the first handler that has one, as msw tries them. (msw's getResponse does
 * this, but its package entry loads msw's GraphQL support too: half a second per test worker.)
 */
async function firstAnswer(handlers: HttpHandler[], request: Request): Promise<Response | undefined> {
  for (const handler of handlers) {
    const result = await handler.run({ request, requestId: randomUUID() });
    if (result?.response) return result.response;
  }
  return undefined;
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
    const response = await firstAnswer(handlers, request);
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

// ---- The web: a real HTTP server for what msw cannot play (slow, endless, compressed bodies) ----

/** A real HTTP server on 127.0.0.1 for each test; it notes the path and headers of every request. */
export function useLocalServer(handle: (req: http.IncomingMessage, res: http.ServerResponse) => void): {
  readonly url: string;
  readonly requests: string[];
  readonly headers: http.IncomingHttpHeaders[];
} {
  const state = { url: "", requests: [] as string[], headers: [] as http.IncomingHttpHeaders[] };
  let server: http.Server;
  beforeEach(async () => {
    state.requests.length = 0;
    state.headers.length = 0;
    server = http.createServer((req, res) => {
      state.requests.push(req.url ?? "");
      state.headers.push(req.headers);
      handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return state;
}

/** Write `chunk` again and again, as fast as the reader takes it, until the reader hangs up. */
export function pumpUntilClosed(res: http.ServerResponse, chunk: string | Buffer, onClose: () => void): void {
  const pump = () => {
    while (!res.destroyed && res.write(chunk));
  };
  res.on("drain", pump);
  res.on("close", onClose);
  pump();
}

/** Seconds of CPU this process spends in `work`: unlike the clock, a busy machine barely changes it. */
export async function cpuSeconds<T>(work: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const before = process.cpuUsage();
  const value = await work();
  const used = process.cpuUsage(before);
  return { value, seconds: (used.user + used.system) / 1e6 };
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
  const env = withTmpdir({ ...process.env, TERM: "dumb" }, options.cwd);
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

// ---- Files and processes: what the tests of the hardened tools need ----

export { TSX_LOADER };

/** A fresh folder outside the workspace for each test: where links point and nothing may land. */
export function useOutside(): { readonly dir: string } {
  const state = { dir: "" };
  beforeEach(() => void (state.dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-outside-")))));
  afterEach(() => rmSync(state.dir, { recursive: true, force: true }));
  return state;
}

/** The parameters of a stage's tool `name` in its schema, to tell versions of a tool apart. */
export async function toolParameters(file: string, name: string): Promise<string[]> {
  const stage = (await import(file)) as { TOOLS: { name: string; input_schema: { properties?: Record<string, unknown> } }[] };
  const tool = stage.TOOLS.find((candidate) => candidate.name === name);
  return tool ? Object.keys(tool.input_schema.properties ?? {}) : [];
}

/**
 * A stage's edit_file, called the same way whatever the stage names its parameters: s02
 * replaces the first `old_text`, s03 on need a unique `old_string`. `extra` is passed as is.
 */
export async function editFileOf(file: string): Promise<(path: string, before: string, after: string, extra?: Record<string, unknown>) => Promise<string>> {
  const edit = await toolOf(file, "edit_file");
  const [oldName, newName] = (await toolParameters(file, "edit_file")).includes("old_string") ? ["old_string", "new_string"] : ["old_text", "new_text"];
  return (given, before, after, extra = {}) => edit({ path: given, [oldName]: before, [newName]: after, ...extra });
}

/**
 * Whether process `pid` is running. A killed process that no one has reaped yet (a zombie:
 * PID 1 in a container may leave one for seconds) has ended, though kill(pid, 0) still
 * succeeds for it, so on Linux /proc says.
 */
export function isRunning(pid: number): boolean {
  if (process.platform === "linux") {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return !["Z", "X"].includes(stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3));
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Look every 20 ms until `check` holds or `ms` have passed; whether it held. */
export async function eventually(check: () => boolean, ms = 2000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/** End processes a test started, if they still run (clean-up after a failed check). */
export function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {} // ended already
  }
}

/**
 * Run a program to its end in `cwd` and collect what it printed: for a TypeScript script,
 * `process.execPath` with `["--import", TSX_LOADER, script]`. Killed after `timeoutMs`.
 */
export function runProgram(command: string, args: string[], options: { cwd: string; env?: Record<string, string | undefined>; timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    // A variable given as undefined is left out of the child's environment.
    const env = Object.fromEntries(Object.entries({ ...process.env, ...options.env }).filter(([, value]) => value !== undefined));
    const child = spawn(command, args, { cwd: options.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${command} did not finish in time.\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, options.timeoutMs ?? 10_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** When a tool that blocks on a FIFO is released (see msOnFifo). */
export const FIFO_RELEASE_MS = 2000;

/**
 * How long `attempt` on the FIFO `file` takes to settle. A tool that blocks on the FIFO (this
 * thread stuck in open, read or write, where no timer can fire) is released after
 * FIFO_RELEASE_MS, so such a test fails with a message instead of hanging the run. Only the
 * attempt is timed, not the release's own start and end: a refusal well under
 * FIFO_RELEASE_MS did not wait, even on a busy machine.
 */
export async function msOnFifo(file: string, attempt: () => Promise<unknown>): Promise<number> {
  const release = releaseFifoAfter(file, FIFO_RELEASE_MS);
  const started = Date.now();
  try {
    await attempt();
    return Date.now() - started;
  } finally {
    await release.stop();
  }
}

/**
 * After `ms`, open the FIFO `file` from a worker thread as the other end, write a line, wait a
 * moment and close it. Opening a FIFO for reading and writing never blocks (Linux). stop()
 * ends the worker, before it touches the FIFO when the tool did not block.
 */
function releaseFifoAfter(file: string, ms: number): { stop(): Promise<number> } {
  const worker = new Worker(
    `const { workerData } = require("node:worker_threads");
     const fs = require("node:fs");
     setTimeout(() => {
       try {
         const fd = fs.openSync(workerData.file, fs.constants.O_RDWR);
         fs.writeSync(fd, "released by the test\\n");
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200); // a blocked writer writes meanwhile
         fs.closeSync(fd);
       } catch {} // the FIFO is gone: nothing to release
     }, workerData.ms);`,
    { eval: true, workerData: { file: path.resolve(file), ms } },
  );
  worker.on("error", () => {});
  return { stop: () => worker.terminate() };
}

// ---- Search: what the tests of the walk, the search and the search tools share ----

/** Write files (path → text or bytes) under the working directory, making folders as needed. */
export function writeFiles(tree: Record<string, string | Buffer>): void {
  for (const [name, content] of Object.entries(tree)) {
    mkdirSync(path.dirname(name), { recursive: true });
    writeFileSync(name, content);
  }
}

/**
 * Run `work` as a user who may not read what has mode 000. Root reads everything, so when
 * the tests run as root the process takes the identity of `nobody` for the duration (the
 * workspace is opened to everyone first), and back: root's real id lets it return.
 */
export async function withoutRoot<T>(workspace: string, work: () => T | Promise<T>): Promise<T> {
  if (process.getuid?.() !== 0) return work();
  chmodSync(workspace, 0o755);
  process.seteuid!(65534);
  try {
    return await work();
  } finally {
    process.seteuid!(0);
  }
}

/** How long `work` takes, in milliseconds, with its result or error. */
export async function timed<T>(work: () => T | Promise<T>): Promise<{ ms: number; value?: T; error?: Error }> {
  const started = Date.now();
  try {
    const value = await work();
    return { ms: Date.now() - started, value };
  } catch (error) {
    return { ms: Date.now() - started, error: error as Error };
  }
}
