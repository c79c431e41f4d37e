// The program around every stage, as a learner meets it: `npx tsx agents/sNN_*.ts`. With no
// key it replays the stage's demo; with a key it talks to a provider. Most of it is tested
// in this process (runMain and runProgram: the model's endpoint is served by msw, stdin and
// the screen are the test's), because a process adds nothing there. What only a real process
// shows is spawned: the learner's exact command, a closed pipe, a signal, a real terminal's
// Ctrl-C, and .env read at start.
import { execFileSync, spawn } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { http as mswHttp } from "msw/core/http";
import { setupServer } from "msw/node";
import type { MessageCreateParams, MessageParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import { runProgram, type StageProgram } from "../lib/runtime/program.ts";
import { loadScenario } from "../lib/course/scenario.ts";
import { runStageWith } from "../scripts/stage-args.ts";
import {
  eventually, isRunning, TSX_LOADER, onScreen, REPO_ROOT, reply, resultText, runInTerminal, runMain, runProgram as runProgramProcess, runStage, scenarioOf, stageFile, stageFiles, stageId,
  startStandIn, usePrinted, useReplay, useWorkspace, withTmpdir,
} from "./helpers.ts";

const KEY = "sk-ant-test-0123456789abcdef";
const noStackTrace = (text: string) => expect(text).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
const s01 = stageFile("s01");
// Imported here, before any test sets a key: a stage reads its configuration when it loads.
const { agentLoop: s01Loop } = await import(s01);

/** s01's program with a key, run in this process; the model's replies come from useProvider. */
async function withKey(args: string[], input = ""): Promise<{ code: number; output: string }> {
  const program: StageProgram = { stage: "s01", title: "The Agent Loop", agentLoop: s01Loop, hasKey: true, args };
  const { value, output } = await onScreen(input, () => runProgram(program));
  return { code: value, output };
}

/** A provider that answers each request with the next of `answers`: a reply, or an HTTP error. */
function useProvider() {
  let server: ReturnType<typeof setupServer> | undefined;
  afterEach(() => {
    server?.close();
    server = undefined;
  });
  return (answers: (object | { status: number; body?: object; retry?: boolean } | "no network")[]) => {
    const requests: { body: MessageCreateParams; headers: Headers }[] = [];
    server = setupServer(
      mswHttp.post("*/v1/messages", async ({ request }) => {
        requests.push({ body: (await request.clone().json()) as MessageCreateParams, headers: request.headers });
        const answer = answers.shift();
        if (answer === undefined) return Response.json({ type: "error", error: { type: "invalid_request_error", message: "no more answers" } }, { status: 400 });
        if (answer === "no network") return Response.error();
        if ("status" in answer) {
          const body = answer.body ?? { type: "error", error: { type: "api_error", message: "invalid x-api-key" } };
          const headers = { "x-should-retry": answer.retry ? "true" : "false", "retry-after-ms": "1" };
          return Response.json(body, { status: answer.status, headers });
        }
        return Response.json(answer);
      }),
    );
    server.listen({ onUnhandledRequest: "error" });
    return requests;
  };
}

// Every stage's demo replays through its real loop and tools in its own test file or in
// tests/session.test.ts (and again when the docs are built); here the program around it. The whole no-key run is checked
// in full for s01 (and for s02 as a real process below); every other stage only for what is
// its own: the stage id it gives the program, and so the recordings it finds.
describe("s01 with no key", () => {
  const workspace = useWorkspace();

  it("says so in one line, replays its demo with the real tools in a temporary folder, and exits 0", async () => {
    const tmp = path.join(workspace.dir, "tmp");
    mkdirSync(tmp);
    vi.stubEnv("TMPDIR", tmp);
    try {
      const { code, output } = await runMain(s01);
      expect(code, output).toBe(0);
      const lines = output.split("\n");
      expect(lines[0]).toBe("No key set (ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN): replaying the recorded demo of s01 instead.");
      for (const prompt of loadScenario("s01").prompts) expect(output).toContain(`s01 >> ${prompt}`);
      expect(lines.filter(Boolean).at(-1)).toMatch(/^To use a real model: set ANTHROPIC_API_KEY/);
      expect(readdirSync(workspace.dir)).toEqual(["tmp"]); // never the learner's folder
      expect(readdirSync(tmp).filter((name) => name.startsWith("workbook-s01-"))).toHaveLength(1);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe.each(stageFiles().map((file) => [stageId(file), file]))("%s as a program", (stage, file) => {
  useWorkspace();

  it("names itself and finds its own recordings", async () => {
    const { code, output } = await runMain(file, ["--replay", "no-such-scenario"]);
    expect(code).toBe(1);
    expect(output).toMatch(new RegExp(`^\\[error\\] No scenario at .*fixtures/${stage}/no-such-scenario\\.json; the scenarios of ${stage} are: (.+, )?demo\\b`));
  });
});

describe("the offline demo, as a learner starts it", () => {
  const workspace = useWorkspace();

  it("s20's demo, which needs git, on a machine without it: one line saying so, no stack trace", async () => {
    vi.stubEnv("TMPDIR", workspace.dir);
    vi.stubEnv("PATH", path.join(workspace.dir, "no-programs-here"));
    try {
      const { code, output } = await runMain(stageFile("s20"));
      expect(code, output).toBe(1);
      expect(output.trim().split("\n").at(-1)).toBe("[error] This demo starts in a git repository, and git is not installed (or not on PATH): install it, then run the demo again");
      expect(output).not.toMatch(/\n\s+at /);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("s20's demo when git itself fails: git's own words, in one line", async () => {
    writeFileSync(path.join(workspace.dir, "a-file"), "");
    vi.stubEnv("TMPDIR", workspace.dir);
    vi.stubEnv("GIT_DIR", path.join(workspace.dir, "a-file", "repo")); // a repository inside a file: git init refuses
    try {
      const { code, output } = await runMain(stageFile("s20"));
      expect(code, output).toBe(1);
      expect(output.trim().split("\n").at(-1)).toMatch(/^\[error\] This demo starts in a git repository, and git init failed: fatal: .*Not a directory$/);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("npx tsx agents/s02_tool_use.ts in an empty folder: the real tools ran, nothing was written there, no stack trace", async () => {
    const home = path.join(workspace.dir, "home");
    mkdirSync(home);
    const run = await runStage("s02", { cwd: home, tmpdir: workspace.dir });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("Hello, World!");
    expect(run.stdout).toMatch(/Error: \.\.\/secrets\.txt is outside the workspace/);
    expect(run.stderr).toBe("");
    expect(readdirSync(home)).toEqual([]);
    const [demo] = readdirSync(workspace.dir).filter((name) => name.startsWith("workbook-s02-"));
    expect(readFileSync(path.join(workspace.dir, demo, "greet.mjs"), "utf8")).toContain("return `Hello, ${name}!`;");
  });

  it("replaying again removes the earlier replay's folder of the same stage, and only that", async () => {
    vi.stubEnv("TMPDIR", workspace.dir);
    try {
      mkdirSync("workbook-s02-abcdef"); // another stage's kind of name, another stage: kept
      mkdirSync("workbook-s01-keepme-too"); // not a name this program makes: kept
      const first = await runMain(s01);
      const second = await runMain(s01);
      expect([first.code, second.code]).toEqual([0, 0]);
      expect(second.output).toMatch(/the earlier replay's folder of s01 was removed/);
      const left = readdirSync(workspace.dir).sort();
      expect(left.filter((name) => /^workbook-s01-[A-Za-z0-9]{6}$/.test(name))).toHaveLength(1);
      expect(left).toContain("workbook-s02-abcdef");
      expect(left).toContain("workbook-s01-keepme-too");
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("a prompt given with no key is not answered with the demo: it says what to set, and exits 1", async () => {
    const { code, output } = await runMain(s01, ["Read package.json"]);
    expect(output).toBe(
      "[error] Your prompt needs a real model, and no key is set. Set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, for a provider that asks for a bearer token; " +
        "and ANTHROPIC_BASE_URL, MODEL_ID for another provider), in your shell or in the workbook's .env. Without a prompt, s01 replays its recorded demo.\n",
    );
    expect(code).toBe(1);
  });
});

describe("choosing a scenario to replay", () => {
  useWorkspace();

  it("a scenario that does not exist: exit 1, and the scenarios there are", async () => {
    const { code, output } = await runMain(s01, ["--replay", "no-such-scenario"]);
    expect(code).toBe(1);
    expect(output).toMatch(/\[error\] No scenario at .*fixtures\/s01\/no-such-scenario\.json; the scenarios of s01 are: demo/);
  });

  it("a name with a path in it is refused, so another stage's recording is not played by mistake", async () => {
    const { code, output } = await runMain(stageFile("s02"), ["--replay", "../s01/demo"]);
    expect(code).toBe(1);
    expect(output).toMatch(/\[error\] "\.\.\/s01\/demo" is not a scenario name/);
    expect(output).not.toContain("Replaying");
  });

  it("a broken scenario file names the file and the line", async () => {
    writeFileSync("broken.json", '{\n  "description": "x",\n  prompts: []\n}\n');
    const { code, output } = await runMain(s01, ["--replay", "broken.json"]);
    expect(code).toBe(1);
    expect(output).toMatch(/\[error\] broken\.json is not valid JSON at line 3, column 3: Expected double-quoted property name/);
  });

  it("npm run replay -- s99 names the stage that does not exist and lists those that do", async () => {
    const printed: string[] = [];
    vi.spyOn(console, "log").mockImplementation((...parts) => void printed.push(parts.join(" ")));
    vi.spyOn(process, "exit").mockImplementation((code) => {
      throw new Error(`exit ${code}`);
    });
    try {
      await expect(runStageWith("--replay", ["s99"])).rejects.toThrow("exit 1");
      expect(printed.join("\n")).toMatch(/^There is no stage s99\. Usage: npm run replay -- <stage> \[scenario\]\. Stages: s01, s02/);
    } finally {
      vi.restoreAllMocks();
    }
  });
});

describe("with a key, against a provider", () => {
  const workspace = useWorkspace();
  const provider = useProvider();

  it("takes a stage's command only as the first word: the same word later is part of the prompt", async () => {
    provider([reply.text("It lists the tools.")]);
    let ran = 0;
    const program: StageProgram = { stage: "s01", title: "The Agent Loop", agentLoop: s01Loop, hasKey: true, args: ["explain", "--list"], commands: { "--list": async () => (ran++, 0) } };
    const { value, output } = await onScreen("", () => runProgram(program));
    expect([value, ran, output]).toEqual([0, 0, "It lists the tools.\n"]);
    const { value: listed } = await onScreen("", () => runProgram({ ...program, args: ["--list"] }));
    expect([listed, ran]).toEqual([0, 1]);
  });

  it("a stage's startHistory is the history the loop gets; its switches are no prompt; an option that is also a command, with no value, is the command; a failure is one line", async () => {
    const requests = provider([reply.text("the earlier turn, then this one")]);
    const earlier: MessageParam[] = [{ role: "user", content: "earlier" }, { role: "assistant", content: [{ type: "text", text: "answered" }] }];
    let given: MessageParam[] | undefined;
    let listed = 0;
    const program = (args: string[], startHistory: () => MessageParam[]): StageProgram => ({
      stage: "s01", title: "The Agent Loop", hasKey: true, args, startHistory,
      agentLoop: (history) => ((given = history), s01Loop(history)),
      options: ["--resume"], switches: ["--continue"], commands: { "--resume": async () => (listed++, 0) },
    });
    const resumed = await onScreen("", () => runProgram(program(["--continue", "and", "now"], () => earlier)));
    expect([resumed.value, given === earlier]).toEqual([0, true]);
    expect(requests[0].body.messages).toEqual([...earlier.slice(0, 2), { role: "user", content: "and now" }]);
    const list = await onScreen("", () => runProgram(program(["--resume"], () => earlier)));
    expect([list.value, listed, requests.length]).toEqual([0, 1, 1]);
    const failed = await onScreen("", () => runProgram(program(["--resume", "abc", "hi"], () => { throw new Error("no session abc here"); })));
    expect([failed.value, failed.output, requests.length]).toEqual([1, "[error] no session abc here\n", 1]);
  });

  it("one-shot: runs the prompt, shows the call with its named arguments and the result, and exits 0", async () => {
    const requests = provider([
      reply.tools([{ name: "bash", input: { command: "echo made > out.txt; echo done", timeout: 30 } }]),
      reply.text("Made out.txt."),
    ]);
    const { code, output } = await withKey(["Make", "out.txt"]);
    expect(code, output).toBe(0);
    expect(output).toBe('> bash(command: "echo made > out.txt; echo done", timeout: 30)\n  done\nMade out.txt.\n');
    expect(readFileSync(path.join(workspace.dir, "out.txt"), "utf8")).toBe("made\n");
    expect(requests[0].body.messages[0]).toEqual({ role: "user", content: "Make out.txt" });
  });

  it("the prompt: runs each line as a turn, keeps the conversation, and ends at end of input", async () => {
    const requests = provider([reply.text("first answer"), reply.text("second answer")]);
    const { code, output } = await withKey([], "hello\nand again\n");
    expect(code).toBe(0);
    expect(output).toContain("s01 >> hello\nfirst answer\ns01 >> and again\nsecond answer\ns01 >> \n");
    expect(requests[1].body.messages.map((m: MessageParam) => m.role)).toEqual(["user", "assistant", "user"]);
  });

  it.each(["q", "exit", ""])("the prompt ends on %j without calling the model", async (word) => {
    const requests = provider([reply.text("never sent")]);
    const { code } = await withKey([], `${word}\nnot read\n`);
    expect(code).toBe(0);
    expect(requests).toHaveLength(0);
  });

  it.each([["--help"], ["-h"]])("%s prints the usage, calls no model and exits 0", async (flag) => {
    const requests = provider([reply.text("never sent")]);
    const { code, output } = await onScreen("", () =>
      runProgram({ stage: "s06", title: "Tool Registry", agentLoop: s01Loop, hasKey: true, args: [flag], options: ["--approval-mode"], help: ["  --approval-mode <mode>  how careful"] }),
    ).then(({ value, output }) => ({ code: value, output }));
    expect(code).toBe(0);
    expect(requests).toHaveLength(0);
    for (const part of ["s06: Tool Registry", "--replay [scenario]", "--record <name>", '"a request"', "--approval-mode <mode>  how careful", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "MODEL_ID"]) {
      expect(output).toContain(part);
    }
  });

  it("refuses an unknown flag with exit 2 and never sends it to the model; after -- a prompt may start with -", async () => {
    const requests = provider([reply.text("the prompt after --")]);
    const unknown = await withKey(["--verbose", "list", "the", "files"]);
    expect(unknown).toEqual({ code: 2, output: "[error] s01 has no option --verbose. See --help; to send a prompt that starts with -, put -- before it.\n" });
    expect(requests).toHaveLength(0);
    const dashed = await withKey(["--", "-n", "means what?"]);
    expect(dashed.code).toBe(0);
    expect(requests[0].body.messages[0]).toEqual({ role: "user", content: "-n means what?" });
  });

  it("uses claude-sonnet-5-5 when MODEL_ID is not set, and names the workspace in the system prompt", async () => {
    const requests = provider([reply.text("ok")]);
    await withKey(["hi"]);
    expect(requests[0].body.model).toBe("claude-sonnet-5-5");
    expect(requests[0].body.system).toContain(`working in ${workspace.dir}`);
  });
});

describe("provider errors end the turn with one line; the prompt comes back; the exit code says it", () => {
  useWorkspace();
  const provider = useProvider();

  it.each([
    [401, "authentication_error", /^\[error\] 401 the key was refused: check ANTHROPIC_API_KEY \(or ANTHROPIC_AUTH_TOKEN\) \(invalid x-api-key\)\.$/m],
    [429, "rate_limit_error", /^\[error\] 429 rate limited: wait a moment, then try again/m],
    [529, "overloaded_error", /^\[error\] 529 the provider is overloaded: try again shortly/m],
    [500, "api_error", /^\[error\] 500 the provider had a problem: try again shortly/m],
  ])("%i", async (status, type, expected) => {
    const body = { type: "error", error: { type, message: "invalid x-api-key" } };
    provider([{ status, body }, { status, body }]);
    const { code, output } = await withKey([], "first\nsecond\n");
    expect(output).toMatch(expected);
    expect(output.match(/^\[error\]/gm)).toHaveLength(2); // both prompts were tried
    expect(output).toContain("s01 >> second");
    expect(code).toBe(1); // the last turn failed: the person has something to fix
    noStackTrace(output);
  });

  it("a failed turn followed by one that works ends with 0", async () => {
    provider([{ status: 401 }, reply.text("fine now")]);
    const { code, output } = await withKey([], "first\nsecond\n");
    expect(output).toContain("fine now");
    expect(code).toBe(0);
  });

  it("no network: says it could not reach the provider, and a one-shot run exits 1", async () => {
    provider(["no network", "no network", "no network"]);
    const { code, output } = await withKey(["hi"]);
    expect(output).toBe("[error] Could not reach the Anthropic API: check the network connection or ANTHROPIC_BASE_URL.\n");
    expect(code).toBe(1);
  });
});

describe("record mode", () => {
  const workspace = useWorkspace();
  const provider = useProvider();
  beforeEach(() => vi.stubEnv("ANTHROPIC_API_KEY", KEY));
  afterEach(() => vi.unstubAllEnvs());

  it("writes a scenario without the key, and it replays offline", async () => {
    provider([
      reply.tools([{ id: "toolu_rec", name: "bash", input: { command: "echo recorded" } }]),
      reply.text(`Done. (The model repeated the key: ${KEY})`),
    ]);
    const file = path.join(workspace.dir, "my-session.json");
    const run = await withKey(["--record", file], "say something\n");
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain(`Saved the session (1 complete turn) to ${file}.`);
    const text = readFileSync(file, "utf8");
    expect(text).not.toContain(KEY);
    expect(text).not.toMatch(/x-api-key|authorization/i);
    const scenario = JSON.parse(text);
    expect(scenario.prompts).toEqual(["say something"]);
    expect(scenario.replies.map((r: { stop_reason: string }) => r.stop_reason)).toEqual(["tool_use", "end_turn"]);
    expect(scenario.replies[1].content[0].text).toContain("[redacted]");

    vi.unstubAllEnvs();
    vi.stubEnv("TMPDIR", workspace.dir); // the replay's own folder, kept after it ends
    const replayed = await runMain(s01, ["--replay", file]);
    expect(replayed.code, replayed.output).toBe(0);
    expect(replayed.output).toContain("s01 >> say something");
    expect(replayed.output).toContain("  recorded");
  });

  it("keeps the complete turns when a later one fails, and exits 1", async () => {
    provider([reply.text("the first went well"), { status: 401 }]);
    const file = path.join(workspace.dir, "partial.json");
    const run = await withKey(["--record", file], "one\ntwo\n");
    expect(run.code).toBe(1);
    expect(run.output).toContain(`Saved the session (1 complete turn) to ${file}.`);
    expect(JSON.parse(readFileSync(file, "utf8")).prompts).toEqual(["one"]);
  });

  it("never saves a turn that failed after a subagent's answer: the program says when a turn ended, not its last reply", async () => {
    provider([reply.text("the subagent's answer"), { status: 401 }]);
    const file = path.join(workspace.dir, "cut.json");
    // A turn that runs a conversation of its own first, as s10's task does, then fails.
    const agentLoop = async (history: MessageParam[]) => {
      await s01Loop([{ role: "user", content: "look into it" }]);
      await s01Loop(history);
    };
    const program: StageProgram = { stage: "s01", title: "The Agent Loop", agentLoop, hasKey: true, args: ["--record", file] };
    const { value, output } = await onScreen("one\n", () => runProgram(program));
    expect(value).toBe(1);
    expect(output).toContain("Nothing to save: the session had no complete turn.");
    expect(existsSync(file)).toBe(false);
  });

  it("never overwrites an existing scenario", async () => {
    const file = path.join(workspace.dir, "taken.json");
    writeFileSync(file, "precious");
    const run = await withKey(["--record", file]);
    expect(run.code).toBe(1);
    expect(run.output).toMatch(/exists already; choose another name \(nothing was overwritten\)/);
    expect(readFileSync(file, "utf8")).toBe("precious");
  });

  it("with no key it says recording needs one, plays nothing and saves nothing", async () => {
    vi.unstubAllEnvs();
    // A path in this test's workspace: were the refusal to break, nothing lands in fixtures/.
    const file = path.resolve("new-one.json");
    const { code, output } = await runMain(s01, ["--record", file]);
    expect(code).toBe(1);
    expect(output).toBe(
      "[error] Recording needs a real model, and no key is set. Set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, for a provider that asks for a bearer token; " +
        "and ANTHROPIC_BASE_URL, MODEL_ID for another provider), in your shell or in the workbook's .env.\n",
    );
    expect(existsSync(file)).toBe(false);
  });
});

describe("a replay that does not match the recording", () => {
  const workspace = useWorkspace();
  usePrinted();
  useReplay();
  afterEach(() => vi.unstubAllEnvs());

  it("fails with the reason when the loop never asks for the recorded replies", async () => {
    vi.stubEnv("TMPDIR", workspace.dir); // the replay's own folder, kept after it ends
    vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    const brokenLoop = async () => {}; // a learner's loop that forgot to call the model
    const printed: string[] = [];
    vi.mocked(console.log).mockImplementation((...args) => void printed.push(args.join(" ")));
    const code = await runProgram({ stage: "s01", title: "The Agent Loop", agentLoop: brokenLoop, hasKey: false, args: [] });
    expect(code).toBe(1);
    expect(printed.join("\n")).toMatch(/did not match the recording:\n- 4 recorded replies were never asked for/);
  });
});

// Start-up settings and a provider's retry need a fresh stage and a real server, not a
// process of their own: s01 is loaded afresh in this process, as a program start loads it.
describe("settings at start, and a retry, with s01 loaded afresh", () => {
  const workspace = useWorkspace();

  /** s01 loaded afresh with `env` (and the starting folder's .env), run with `args`; the environment is put back. */
  async function freshS01(args: string[], env: Record<string, string> = {}) {
    // Stubbed, so unstubAllEnvs puts back what .env sets too (a stubbed name comes back as it was).
    for (const name of ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "MODEL_ID", "APPROVAL_MODE", "WORKBOOK_ENV_FILE"]) vi.stubEnv(name, env[name]);
    vi.resetModules();
    try {
      return await runMain(s01, args);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  }

  it("reads the key, the provider and the model from the workbook's .env (here WORKBOOK_ENV_FILE), wherever it starts", async () => {
    const standIn = await startStandIn(scenarioOf([reply.text("from the workbook's .env")]));
    const envFile = path.join(workspace.dir, "..", `${path.basename(workspace.dir)}.env`);
    try {
      writeFileSync(envFile, `ANTHROPIC_API_KEY=${KEY}\nANTHROPIC_BASE_URL=${standIn.url}\nMODEL_ID=claude-test-model\n`);
      const run = await freshS01(["hi"], { WORKBOOK_ENV_FILE: envFile });
      expect(run.output).toBe("from the workbook's .env\n");
      expect(standIn.replay.requests[0].model).toBe("claude-test-model");
      expect(standIn.headers[0]["x-api-key"] ?? standIn.headers[0].authorization).toContain(KEY);
    } finally {
      rmSync(envFile, { force: true });
      await standIn.close();
    }
  });

  it("never reads the .env of the folder it works in: a project cannot choose the key's destination, the model or the approval mode", async () => {
    const standIn = await startStandIn(scenarioOf([reply.text("the project's provider answered")]));
    try {
      // A cloned project's .env, as an attacker would write it.
      writeFileSync(path.join(workspace.dir, ".env"), `ANTHROPIC_API_KEY=${KEY}\nANTHROPIC_BASE_URL=${standIn.url}\nAPPROVAL_MODE=yolo\n`);
      const ownSettings = path.join(workspace.dir, "..", `${path.basename(workspace.dir)}-empty.env`);
      writeFileSync(ownSettings, "# the learner's own settings: no key in them\n");
      const run = await freshS01(["hi"], { WORKBOOK_ENV_FILE: ownSettings });
      rmSync(ownSettings);
      // Not answered from the project's provider: no key is set, and the prompt is refused for want of one.
      expect(run.code).toBe(1);
      expect(run.output).toMatch(/^\[error\] Your prompt needs a real model, and no key is set/);
      expect(standIn.replay.requests).toHaveLength(0); // nothing was sent to the project's address
      expect(run.output).not.toContain("the project's provider answered");
      expect(process.env.APPROVAL_MODE).toBeUndefined();
    } finally {
      await standIn.close();
    }
  });

  it("says so when WORKBOOK_ENV_FILE names a file that does not exist (a typo must not look like \"no key set\")", async () => {
    const missing = path.join(workspace.dir, "no-such.env");
    const run = await freshS01(["hi"], { WORKBOOK_ENV_FILE: missing });
    expect(run).toEqual({ code: 1, output: `[error] WORKBOOK_ENV_FILE names ${missing}, which does not exist\n` });
  });

  it("refuses a .env that is a FIFO or a device, in one line, without waiting or reading it", async () => {
    const fifo = path.join(workspace.dir, "fifo.env");
    execFileSync("mkfifo", [fifo]);
    const started = Date.now();
    const run = await freshS01(["hi"], { WORKBOOK_ENV_FILE: fifo });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(run.code).toBe(1);
    expect(run.output).toBe(`[error] ${fifo} is not a regular file (a FIFO, a device or a folder), so it was not read\n`);
    const zero = await freshS01(["hi"], { WORKBOOK_ENV_FILE: "/dev/zero" });
    expect(zero.output).toBe("[error] /dev/zero is not a regular file (a FIFO, a device or a folder), so it was not read\n");
  });

  it("record mode survives an overloaded provider: the SDK's retry goes through, and the session is saved", async () => {
    // A real server, as a provider is: the retry must work over a real connection.
    const answers: [number, object][] = [
      [529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }],
      [200, reply.text("after a retry")],
    ];
    let hits = 0;
    const server = http.createServer((request, response) => {
      request.resume();
      const [status, body] = answers[Math.min(hits++, answers.length - 1)];
      response.writeHead(status, { "content-type": "application/json", "retry-after-ms": "10" }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const file = path.join(workspace.dir, "retried.json");
      const run = await freshS01(["--record", file, "hello"], { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: url });
      expect(hits).toBe(2);
      expect(run.code, run.output).toBe(0);
      expect(run.output).toContain("after a retry");
      expect(JSON.parse(readFileSync(file, "utf8")).replies.map((r: { content: { text: string }[] }) => r.content[0].text)).toEqual(["after a retry"]);
    } finally {
      server.close();
    }
  });
});

describe("what only a real process shows", () => {
  const workspace = useWorkspace();

  it("output piped into a reader that stops early (| head) ends the program quietly", async () => {
    const child = spawn(process.execPath, ["--import", TSX_LOADER, s01], {
      cwd: workspace.dir,
      env: withTmpdir({ ...process.env, ANTHROPIC_API_KEY: "" }, workspace.dir),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.stdout.once("data", () => child.stdout.destroy()); // the reader has seen enough
    const code = await new Promise((resolve) => child.on("close", resolve));
    expect(stderr).toBe("");
    expect(code).toBe(0);
  });

  it("runs from a folder outside the workbook with `node <workbook>/workbook.mjs s01`: that folder is the workspace, the workbook's settings file is read", async () => {
    const standIn = await startStandIn(scenarioOf([reply.tools([{ name: "bash", input: { command: "pwd" } }]), reply.text("ran where you stand")]));
    const envFile = path.join(workspace.dir, "learner.env"); // stands for the workbook's .env, which a test may not write
    writeFileSync(envFile, `ANTHROPIC_API_KEY=${KEY}\nANTHROPIC_BASE_URL=${standIn.url}\n`);
    try {
      const run = await runProgramProcess(process.execPath, [path.join(REPO_ROOT, "workbook.mjs"), "s01", "where am I?"], {
        cwd: workspace.dir,
        // Nothing in the environment: the key and the address come from the settings file.
        env: withTmpdir({ ANTHROPIC_API_KEY: undefined, ANTHROPIC_BASE_URL: undefined, ANTHROPIC_AUTH_TOKEN: undefined, WORKBOOK_ENV_FILE: envFile }, workspace.dir),
        timeoutMs: 20_000,
      });
      expect(run.stderr).toBe("");
      expect(run.code, run.stdout).toBe(0);
      expect(run.stdout).toContain("ran where you stand");
      expect(resultText(standIn.replay.requests[1].messages.at(-1)!.content[0] as ToolResultBlockParam).trim()).toBe(workspace.dir);
    } finally {
      await standIn.close();
    }
  });

  it("knows the workbook's own .env by its place, next to package.json, wherever it is started", async () => {
    vi.stubEnv("WORKBOOK_ENV_FILE", "");
    try {
      const { workbookEnvFile } = await import("../lib/runtime/env.ts");
      expect(workbookEnvFile()).toBe(path.join(REPO_ROOT, ".env"));
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("SIGTERM ends the program through its exit handlers: a background command it started ends too", async () => {
    const standIn = await startStandIn(
      scenarioOf([reply.tools([{ name: "bash", input: { command: "sleep 1000 & echo $! > pid.txt" } }]), reply.text("started")]),
    );
    const child = spawn(process.execPath, ["--import", TSX_LOADER, stageFile("s02")], {
      cwd: workspace.dir,
      env: withTmpdir({ ...process.env, ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: standIn.url }, workspace.dir),
      stdio: ["pipe", "pipe", "pipe"],
    });
    try {
      child.stdin.write("start something in the background\n"); // stdin stays open: the prompt waits
      const pidFile = path.join(workspace.dir, "pid.txt");
      expect(await eventually(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", 10_000)).toBe(true);
      expect(await eventually(() => standIn.replay.requests.length === 2, 10_000)).toBe(true);
      const pid = Number(readFileSync(pidFile, "utf8"));
      expect(isRunning(pid)).toBe(true); // it outlived its command, as a background job does
      child.kill("SIGTERM");
      const code = await new Promise((resolve) => child.on("close", resolve));
      expect(code).toBe(143);
      expect(await eventually(() => !isRunning(pid))).toBe(true);
    } finally {
      child.kill("SIGKILL");
      await standIn.close();
    }
  });

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
          { when: /> bash\(command: "exec -a/, keys: "\x03" },
        ],
      });
      expect(run.stdout).toContain("[exit 130]");
      await new Promise((r) => setTimeout(r, 300));
      const running = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").filter((l) => l.startsWith(marker));
      expect(running).toEqual([]);
    } finally {
      await standIn.close();
    }
  });
});



