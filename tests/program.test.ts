// The real program, as a learner runs it: `npx tsx agents/sNN_*.ts`, spawned in a temporary
// folder. With no key it replays the stage's demo; with a key it talks to a provider, here a
// loopback stand-in reached through ANTHROPIC_BASE_URL, exactly as a real one would be.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runProgram } from "../lib/program.ts";
import { loadScenario } from "../lib/scenario.ts";
import { reply, runInTerminal, runStage, scenarioOf, stageFiles, startErrorServer, startStandIn, useWorkspace, type StandIn } from "./helpers.ts";

const stages = stageFiles().map((file) => file.match(/(s\d\d)_/)![1]);
const KEY = "sk-ant-test-0123456789abcdef";
/** The key a request carried: the SDK sends it as x-api-key or as a Bearer token. */
const keyIn = (headers: IncomingHttpHeaders) => headers["x-api-key"] ?? headers.authorization?.replace(/^Bearer /, "");
const noStackTrace = (text: string) => expect(text).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);

describe.each(stages)("%s with no key", (stage) => {
  const workspace = useWorkspace();

  it("says so in one line, replays its demo with the real tools in a fresh workspace, and exits 0", async () => {
    // The learner's folder and the system's temporary folder, apart, to see where files go.
    const home = path.join(workspace.dir, "home");
    const tmp = path.join(workspace.dir, "tmp");
    mkdirSync(home);
    mkdirSync(tmp);
    const run = await runStage(stage, { cwd: home, tmpdir: tmp });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const lines = run.stdout.split("\n");
    expect(lines[0]).toBe(`No ANTHROPIC_API_KEY set: replaying the recorded demo of ${stage} instead.`);
    for (const prompt of loadScenario(stage).prompts) expect(run.stdout).toContain(`${stage} >> ${prompt}`);
    expect(lines.filter(Boolean).at(-1)).toMatch(/^To use a real model: set ANTHROPIC_API_KEY/);
    noStackTrace(run.stdout + run.stderr);
    expect(readdirSync(home)).toEqual([]); // never the learner's folder
    expect(readdirSync(tmp).filter((name) => name.startsWith(`workbook-${stage}-`))).toHaveLength(1);
  });
});

describe("the offline demos really run the tools", () => {
  const workspace = useWorkspace();

  it("s02: the file the model wrote and edited exists, and node printed its greeting", async () => {
    const run = await runStage("s02", { cwd: workspace.dir });
    expect(run.stdout).toContain("Hello, World!");
    expect(run.stdout).toMatch(/Error: \.\.\/secrets\.txt is outside the workspace/);
    const [demo] = readdirSync(workspace.dir).filter((name) => name.startsWith("workbook-s02-")); // TMPDIR is the test folder
    expect(readFileSync(path.join(workspace.dir, demo, "greet.mjs"), "utf8")).toContain("return `Hello, ${name}!`;");
  });

  it("a prompt given with no key gets the demo instead, and an explicit --replay of a missing scenario fails clearly", async () => {
    const oneShot = await runStage("s01", { cwd: workspace.dir, args: ["Read package.json"] });
    expect(oneShot.stdout.split("\n")[0]).toBe("No ANTHROPIC_API_KEY set: your prompt needs a real model, so here is the recorded demo of s01 instead.");
    expect(oneShot.code).toBe(0);
    const missing = await runStage("s01", { cwd: workspace.dir, args: ["--replay", "no-such-scenario"] });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/\[error\] No scenario at .*no-such-scenario\.json/);
  });
});

describe("with a key, against a provider", () => {
  const workspace = useWorkspace();
  let standIn: StandIn | undefined;
  afterEach(async () => {
    await standIn?.close();
    standIn = undefined;
  });
  const env = () => ({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: standIn!.url });

  it("one-shot: runs the prompt given as an argument, shows the tool call and the reply, and exits 0", async () => {
    standIn = await startStandIn(
      scenarioOf([reply.tools([{ name: "bash", input: { command: "echo made > out.txt" } }]), reply.text("Made out.txt.")]),
    );
    const run = await runStage("s01", { cwd: workspace.dir, args: ["Make", "out.txt"], env: env() });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toBe("> bash echo made > out.txt\n  (no output)\nMade out.txt.\n");
    expect(readFileSync(path.join(workspace.dir, "out.txt"), "utf8")).toBe("made\n");
    expect(standIn.replay.requests[0].messages[0]).toEqual({ role: "user", content: "Make out.txt" });
    expect(keyIn(standIn.headers[0])).toBe(KEY);
    expect(standIn.replay.verdict()).toEqual([]);
  });

  it("the prompt: runs each line as a turn, keeps the conversation, and ends at end of input", async () => {
    standIn = await startStandIn(scenarioOf([reply.text("first answer"), reply.text("second answer")]));
    const run = await runStage("s02", { cwd: workspace.dir, input: "hello\nand again\n", env: env() });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("s02 >> hello\nfirst answer\ns02 >> and again\nsecond answer\ns02 >> \n");
    const second = standIn.replay.requests[1].messages;
    expect(second.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(standIn.replay.verdict()).toEqual([]);
  });

  it.each(["q", "exit", ""])("the prompt ends on %j without calling the model", async (word) => {
    standIn = await startStandIn(scenarioOf([reply.text("never sent")]));
    const run = await runStage("s01", { cwd: workspace.dir, input: `${word}\nnot read\n`, env: env() });
    expect(run.code).toBe(0);
    expect(standIn.replay.requests).toHaveLength(0);
  });

  it("reads the key, the provider and the model from .env in the starting folder", async () => {
    standIn = await startStandIn(scenarioOf([reply.text("from .env")]));
    writeFileSync(path.join(workspace.dir, ".env"), `ANTHROPIC_API_KEY=${KEY}\nANTHROPIC_BASE_URL=${standIn.url}\nMODEL_ID=claude-test-model\n`);
    const run = await runStage("s01", { cwd: workspace.dir, args: ["hi"] });
    expect(run.stdout).toBe("from .env\n");
    expect(standIn.replay.requests[0].model).toBe("claude-test-model");
  });

  it("uses claude-sonnet-5-5 when MODEL_ID is not set", async () => {
    standIn = await startStandIn(scenarioOf([reply.text("ok")]));
    await runStage("s01", { cwd: workspace.dir, args: ["hi"], env: env() });
    expect(standIn.replay.requests[0].model).toBe("claude-sonnet-5-5");
  });
});

describe("provider errors end the turn with one line, and the prompt comes back", () => {
  const workspace = useWorkspace();

  it.each([
    [401, "authentication_error", /^\[error\] 401 the API key was refused: check ANTHROPIC_API_KEY \(invalid x-api-key\)\.$/m],
    [429, "rate_limit_error", /^\[error\] 429 rate limited: wait a moment, then try again/m],
    [529, "overloaded_error", /^\[error\] 529 the provider is overloaded: try again shortly/m],
    [500, "api_error", /^\[error\] 500 the provider had a problem: try again shortly/m],
  ])("%i", async (status, type, expected) => {
    const server = await startErrorServer(status, { type: "error", error: { type, message: "invalid x-api-key" } });
    try {
      const run = await runStage("s02", {
        cwd: workspace.dir,
        input: "first\nsecond\n",
        env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: server.url },
      });
      expect(run.code).toBe(1); // the last turn failed: the person has something to fix
      expect(run.stdout).toMatch(expected);
      expect(run.stdout.match(/^\[error\]/gm)).toHaveLength(2); // both prompts were tried
      expect(run.stdout).toContain("s02 >> second");
      noStackTrace(run.stdout + run.stderr);
    } finally {
      await server.close();
    }
  });

  it("no network: says it could not reach the provider", async () => {
    const server = await startErrorServer(200, {});
    const url = server.url;
    await server.close(); // nothing listens there any more
    const run = await runStage("s01", { cwd: workspace.dir, args: ["hi"], env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: url } });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(`[error] Could not reach ${url}: check the network connection or ANTHROPIC_BASE_URL.\n`);
    noStackTrace(run.stderr);
  });
});

describe("record mode", () => {
  const workspace = useWorkspace();

  it("writes a scenario from a real session without the key, and it replays offline", async () => {
    const standIn = await startStandIn(
      scenarioOf([
        reply.tools([{ id: "toolu_rec", name: "bash", input: { command: "echo recorded" } }]),
        reply.text(`Done. (The model repeated the key: ${KEY})`),
      ]),
    );
    const file = path.join(workspace.dir, "my-session.json");
    try {
      const run = await runStage("s01", {
        cwd: workspace.dir,
        args: ["--record", file],
        input: "say something\n",
        env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: standIn.url },
      });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain(`Saved the session (1 complete turn) to ${file}.`);
      expect(standIn.headers.map(keyIn)).toEqual([KEY, KEY]);
    } finally {
      await standIn.close();
    }
    const text = readFileSync(file, "utf8");
    expect(text).not.toContain(KEY);
    expect(text).not.toMatch(/x-api-key|authorization/i);
    const scenario = JSON.parse(text);
    expect(scenario.prompts).toEqual(["say something"]);
    expect(scenario.replies.map((r: { stop_reason: string }) => r.stop_reason)).toEqual(["tool_use", "end_turn"]);
    expect(scenario.replies[1].content[0].text).toContain("[redacted]");

    const replayed = await runStage("s01", { cwd: workspace.dir, args: ["--replay", file] });
    expect(replayed.code, replayed.stdout).toBe(0);
    expect(replayed.stdout).toContain("s01 >> say something");
    expect(replayed.stdout).toContain("  recorded");
  });

  it("never overwrites an existing scenario", async () => {
    const file = path.join(workspace.dir, "taken.json");
    writeFileSync(file, "precious");
    const run = await runStage("s01", { cwd: workspace.dir, args: ["--record", file], env: { ANTHROPIC_API_KEY: KEY } });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/exists already; choose another name \(nothing was overwritten\)/);
    expect(readFileSync(file, "utf8")).toBe("precious");
    expect(existsSync(path.join(workspace.dir, "workbook-s01"))).toBe(false);
  });
});

describe("a replay that does not match the recording", () => {
  useWorkspace();
  afterEach(() => vi.restoreAllMocks());

  it("fails with the reason when the loop never asks for the recorded replies", async () => {
    const printed: string[] = [];
    vi.spyOn(console, "log").mockImplementation((...args) => void printed.push(args.join(" ")));
    vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    const brokenLoop = async () => {}; // a learner's loop that forgot to call the model
    const code = await runProgram({ stage: "s01", title: "The Agent Loop", agentLoop: brokenLoop, hasKey: false, args: [] });
    expect(code).toBe(1);
    expect(printed.join("\n")).toMatch(/did not match the recording:\n- 4 recorded reply\/replies were never asked for/);
  });
});

describe("at a real terminal", () => {
  const workspace = useWorkspace();

  it("Ctrl-C at the prompt leaves cleanly", async () => {
    const run = await runInTerminal("s01", {
      cwd: workspace.dir,
      env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: "http://127.0.0.1:9" },
      steps: [{ when: /s01 >> /, keys: "\x03" }],
    });
    expect(run.stdout).toContain("^C");
    expect(run.stdout).toContain("[exit 0]");
  });

  it("Ctrl-C while a command runs ends the program and the command with it", async () => {
    const marker = `workbook-ctrlc-${process.pid}-${Date.now()}`;
    const standIn = await startStandIn(
      scenarioOf([reply.tools([{ name: "bash", input: { command: `exec -a ${marker} sleep 300` } }]), reply.text("never")]),
    );
    try {
      const run = await runInTerminal("s02", {
        cwd: workspace.dir,
        env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: standIn.url },
        steps: [
          { when: /s02 >> /, keys: "wait a while\r" },
          { when: /> bash exec -a/, keys: "\x03" },
        ],
      });
      expect(run.stdout).toContain("[exit 130]");
      await new Promise((r) => setTimeout(r, 300));
      const alive = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").filter((l) => l.startsWith(marker));
      expect(alive).toEqual([]);
    } finally {
      await standIn.close();
    }
  });
});
