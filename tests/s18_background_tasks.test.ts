// s18: slow commands in the background, and a notice when they end. bash with
// run_in_background answers at once with a task id; bash_output reads what the task printed
// since the last read, and its status; kill_task ends it and everything it started. Each
// limit is a test: 8 running at once, the output capped with both ends kept, the time limit,
// the finished tasks kept. A notice rides inside the last tool result of a reply, or in front
// of the person's next prompt, once, and every request the model receives is one the API
// accepts. Processes are checked by their ids; one real program shows that its end ends them.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { PassThrough } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { MessageCreateParams, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { scriptedTerminal, useTerminal, nobody } from "../lib/runtime/terminal.ts";
import { eventually, isRunning, killAll, reply, resultText, runStage, scenarioOf, stageFile, startStandIn, toolResults, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s18");
type Stage = typeof import("../agents/s18_background_tasks.ts");
const stage = (await import(FILE)) as Stage;
const { alwaysAllowed } = await import("../agents/s06_tool_registry.ts");

let ids = 0;
const call = (name: string, input: Record<string, unknown>): ToolUseBlock => ({ type: "tool_use", id: `toolu_s18_${++ids}`, name, input }) as ToolUseBlock;
const run = async (name: string, input: Record<string, unknown>) => stage.runTool(call(name, input));
const background = (command: string, extra: Record<string, unknown> = {}) => run("bash", { command, run_in_background: true, ...extra });
const statusOf = (id: string) => stage.taskList().find((task) => task.id === id)?.status;
const ended = (id: string, ms = 3000) => eventually(() => statusOf(id) !== "running", ms);

/** The process ids a command wrote to `file`, once it has written `count`. */
async function pidsIn(file: string, count: number): Promise<number[]> {
  const read = () => (existsSync(file) ? readFileSync(file, "utf8").trim().split(/\s+/).filter(Boolean).map(Number) : []);
  await eventually(() => read().length >= count, 3000);
  return read();
}

type Block = { type: string; id?: string; tool_use_id?: string; content?: unknown };
const blocksOf = (message: MessageParam): Block[] => (typeof message.content === "string" ? [] : (message.content as Block[]));

/** What the API would refuse: roles out of turn, a tool_use not answered (in order) by the very next message, a block before the results. */
function apiProblems(messages: MessageParam[]): string[] {
  const problems: string[] = [];
  messages.forEach((message, i) => {
    if (message.role !== (i % 2 === 0 ? "user" : "assistant")) problems.push(`message ${i} is from ${message.role}`);
    const asked = i > 0 ? blocksOf(messages[i - 1]).filter((b) => b.type === "tool_use").map((b) => b.id) : [];
    const answered = blocksOf(message).filter((b) => b.type === "tool_result").map((b) => b.tool_use_id);
    if (asked.join(",") !== answered.join(",")) problems.push(`message ${i} answers [${answered}], the calls before it were [${asked}]`);
    if (answered.length > 0 && blocksOf(message).some((b) => b.type !== "tool_result")) problems.push(`message ${i} holds another block beside its results`);
  });
  return problems;
}

/** Where the notices are in the last request: the tool_use ids of the results holding one, and "prompt N" for a text message. */
function noticePlaces(requests: MessageCreateParams[]): string[] {
  const places: string[] = [];
  for (const [i, message] of (requests.at(-1)!.messages as MessageParam[]).entries()) {
    if (typeof message.content === "string") {
      if (message.content.includes("<notice>")) places.push(`prompt ${i}`);
      continue;
    }
    for (const block of message.content) {
      const text = block.type === "tool_result" ? resultText(block) : JSON.stringify(block);
      for (let n = 1; n < text.split("<notice>").length; n++) places.push(block.type === "tool_result" ? block.tool_use_id : `a ${block.type} block`);
    }
  }
  return places;
}

const everyRequestValid = (requests: MessageCreateParams[]) => requests.forEach((request, n) => expect(apiProblems(request.messages as MessageParam[]), `request ${n}`).toEqual([]));

describe("s18 background tasks: bash, bash_output, kill_task", () => {
  useWorkspace();
  const printed = usePrinted();
  const limits = { ...stage.TASK_LIMITS };
  beforeEach(() => {
    stage.prepareReplay();
    alwaysAllowed.add("bash"); // as if the person had answered "a": the approval itself is tested below
  });
  afterEach(() => {
    stage.prepareReplay(); // ends what a test left running
    Object.assign(stage.TASK_LIMITS, limits);
    alwaysAllowed.clear();
    useTerminal(nobody);
  });

  it("offers bash with run_in_background, bash_output and kill_task, next to s06's core tools", () => {
    expect(stage.TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file", "bash_output", "kill_task"]);
    const bash = stage.TOOLS[0].input_schema.properties as Record<string, { type: string; description: string }>;
    expect(Object.keys(bash)).toEqual(["command", "timeout", "run_in_background"]);
    expect(bash.run_in_background.type).toBe("boolean");
    expect(bash.timeout.description).toContain("in the background 600");
    expect(stage.TASK_LIMITS).toEqual({ running: 8, timeLimitMs: 600_000, finishedKept: 20, noticeLines: 5 });
  });

  it("returns at once with bg_1, bg_2, ... and how to read the output; the command runs on", async () => {
    // The command cannot end before the test lets it: bash has returned without waiting for it.
    const first = await background("while [ ! -e go ]; do sleep 0.02; done; echo done > done.txt");
    expect(first.is_error).toBeUndefined();
    expect(resultText(first)).toBe('Started bg_1 in the background. Read its output with bash_output ("bg_1"), end it with kill_task; you will be told when it ends.');
    expect(resultText(await background("true"))).toMatch(/^Started bg_2 /);
    expect(statusOf("bg_1")).toBe("running");
    writeFileSync("go", "");
    expect(await ended("bg_1")).toBe(true);
    expect(readFileSync("done.txt", "utf8")).toBe("done\n");
    expect(printed).toContain("  started bg_1 in the background");
  });

  it("without the flag, bash is s06's: it waits, and returns the output and the exit code", async () => {
    expect(resultText(await run("bash", { command: "echo hi; exit 3", run_in_background: false }))).toBe("hi\n[exit code 3]");
    expect(stage.taskList()).toEqual([]);
  });

  it("bash_output gives the output since the last read and the status: running, then exit code N", async () => {
    await background("echo one; while [ ! -e go ]; do sleep 0.02; done; echo two; exit 3");
    // Read until "one" has come: the task is still running, waiting for the file.
    let first = "";
    for (let tries = 0; tries < 100 && !first.endsWith("\none\n"); tries++) {
      first = resultText(await run("bash_output", { task_id: "bg_1" }));
      if (!first.endsWith("\none\n")) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(first).toMatch(/^bg_1 \(echo one; while .*\): running \(for \d+ s\)\.\nOutput since the last read:\none\n$/);
    writeFileSync("go", "");
    expect(await ended("bg_1")).toBe(true);
    expect(resultText(await run("bash_output", { task_id: "bg_1" }))).toMatch(/^bg_1 \(.*\): exit code 3\.\nOutput since the last read:\ntwo\n$/);
    expect(resultText(await run("bash_output", { task_id: "bg_1" }))).toMatch(/: exit code 3\.\nNo new output since the last read\.$/);
  });

  it("kill_task ends the task and everything it started, by process id, and says so", async () => {
    await background("echo $$ > pids; sleep 30 & echo $! >> pids; setsid sleep 30 > /dev/null 2>&1 & echo $! >> pids; echo started; wait");
    const pids = await pidsIn("pids", 3);
    try {
      expect(pids.every(isRunning)).toBe(true);
      const result = await run("kill_task", { task_id: "bg_1" });
      expect(resultText(result)).toMatch(/^Ended bg_1 and everything it started\.\nbg_1 \(.*\): ended by kill_task\.\nOutput since the last read:\nstarted\n$/);
      expect(await eventually(() => pids.every((pid) => !isRunning(pid)), 1500), `still running: ${pids.filter(isRunning)}`).toBe(true);
      expect(statusOf("bg_1")).toBe("ended by kill_task");
    } finally {
      killAll(pids);
    }
  });

  it("kill_task on a task that has ended ends what it left running, and says the task had ended", async () => {
    await background("sleep 30 > /dev/null 2>&1 & echo $! > pids");
    const [left] = await pidsIn("pids", 1);
    try {
      expect(await ended("bg_1")).toBe(true);
      expect(statusOf("bg_1")).toBe("exit code 0");
      expect(isRunning(left)).toBe(true);
      expect(resultText(await run("kill_task", { task_id: "bg_1" }))).toMatch(/^bg_1 had already ended; anything it left running has been ended too\.\nbg_1 \(.*\): exit code 0\./);
      expect(await eventually(() => !isRunning(left), 1500)).toBe(true);
    } finally {
      killAll([left]);
    }
  });

  it("runs at most 8 at once: the ninth is an error naming the eight, and starts once one has ended", async () => {
    for (let i = 1; i <= 8; i++) expect(resultText(await background(`sleep 30 # task ${i}`))).toMatch(new RegExp(`^Started bg_${i} `));
    const ninth = await background("echo nine");
    expect(ninth.is_error).toBe(true);
    expect(resultText(ninth)).toBe(
      `Error: 8 background tasks are running, the most at once: ${Array.from({ length: 8 }, (_, i) => `bg_${i + 1} (sleep 30 # task ${i + 1})`).join(", ")}. ` +
        "Read them with bash_output, wait for one to end, or end one with kill_task.",
    );
    await run("kill_task", { task_id: "bg_3" });
    expect(resultText(await background("echo nine"))).toMatch(/^Started bg_9 /);
  });

  it("keeps both ends of a task's output within 30,000 characters, with a marker saying what was cut", async () => {
    await background("echo FIRST; head -c 200000 /dev/zero | tr '\\0' a; echo; echo LAST");
    expect(await ended("bg_1")).toBe(true);
    const text = resultText(await run("bash_output", { task_id: "bg_1" }));
    expect(text.length).toBeLessThanOrEqual(30_000);
    const [head, tail] = text.split(/\n\.\.\. \[\d+ characters cut from the middle, 200012 in all\] \.\.\.\n/);
    expect(head.slice(0, 200)).toMatch(/: exit code 0\.\nOutput since the last read:\nFIRST\naaa/);
    expect(tail?.slice(-10)).toBe("aaaa\nLAST\n");
  });

  it("ends a task at its time limit, with everything it started, and the notice says so", async () => {
    stage.TASK_LIMITS.timeLimitMs = 150;
    await background("echo $$ > pids; sleep 30 & echo $! >> pids; echo waiting; wait");
    const pids = await pidsIn("pids", 2);
    try {
      expect(await ended("bg_1")).toBe(true);
      expect(statusOf("bg_1")).toBe("ended by the time limit (0.15 s)");
      expect(await eventually(() => pids.every((pid) => !isRunning(pid)), 1500)).toBe(true);
      const [result] = stage.withNotices([{ type: "tool_result", tool_use_id: "toolu_x", content: "ok" }]);
      expect(resultText(result)).toMatch(/^ok\n\n<notice>From the harness, not the tool:\nbg_1 \(.*\) ended: ended by the time limit \(0\.15 s\)\.\nIts last lines:\n {2}waiting\n/);
    } finally {
      killAll(pids);
    }
  });

  it("keeps the last finished tasks only; an older id, and an unknown one, are errors that say why", async () => {
    stage.TASK_LIMITS.finishedKept = 2;
    for (let i = 1; i <= 4; i++) await background(`echo ${i}`);
    expect(await eventually(() => stage.taskList().every((task) => task.status !== "running") && stage.taskList().length === 2)).toBe(true);
    expect(stage.taskList().map((task) => task.id)).toEqual(["bg_3", "bg_4"]);
    const old = await run("bash_output", { task_id: "bg_1" });
    expect(old.is_error).toBe(true);
    expect(resultText(old)).toBe("Error: bg_1 ended long ago and is forgotten: only the last 2 finished tasks are kept");
    expect(resultText(await run("kill_task", { task_id: "../bg_1" }))).toBe('Error: there is no task "../bg_1". The tasks: bg_3 (exit code 0), bg_4 (exit code 0).');
    // An id spelled otherwise is no id: bg_03 is not bg_3, and not a forgotten task either.
    for (const id of ["bg_03", "bg_0", "bg_01"]) expect(resultText(await run("bash_output", { task_id: id }))).toBe(`Error: there is no task "${id}". The tasks: bg_3 (exit code 0), bg_4 (exit code 0).`);
    stage.prepareReplay();
    expect(resultText(await run("bash_output", { task_id: "bg_1" }))).toBe('Error: there is no task "bg_1". No background task has been started.');
    expect(resultText(await run("bash_output", {}))).toBe('Error: bash_output was not run: "task_id" is required.');
  });

  it("a background command is refused by the denylist as bash's is, and nothing starts", async () => {
    expect(resultText(await background("sudo ls"))).toBe('Error: refused: the command contains "sudo", which this agent does not run');
    expect(stage.taskList()).toEqual([]);
  });

  it("asks like bash does, saying it runs in the background; a no starts nothing", async () => {
    alwaysAllowed.clear();
    const screen = new PassThrough();
    let shown = "";
    screen.on("data", (chunk) => (shown += chunk));
    useTerminal(scriptedTerminal(["n", "y"], screen as unknown as NodeJS.WriteStream));
    const refused = await background("touch built");
    expect(refused.is_error).toBe(true);
    expect(resultText(refused)).toBe("Not run: the person said no.");
    expect(printed.join("\n")).toContain("Run this command in the background?\n  touch built\n  (it runs on while the agent works, until it ends, kill_task ends it, 10 minutes pass, or the program ends)");
    expect(stage.taskList()).toEqual([]);
    expect(resultText(await background("touch built"))).toMatch(/^Started bg_1 /);
    expect(shown).toBe("allow? n\nallow? y\n");
  });
});

describe("s18 notices: inside the next tool result, or with the next prompt, once", () => {
  useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();
  beforeEach(() => {
    stage.prepareReplay();
    alwaysAllowed.add("bash");
  });
  afterEach(() => {
    stage.prepareReplay();
    alwaysAllowed.clear();
  });

  // The build ends while the model runs something else: that command waits until the build has ended.
  const build = { name: "bash", input: { command: "echo compiling; touch built; echo built app", run_in_background: true } };
  const meanwhile = (id?: string) => ({ id, name: "bash", input: { command: "while [ ! -e built ]; do sleep 0.02; done; sleep 0.1; echo tests ok" } });

  it("rides after what the last tool of the reply returned, its id and is_error kept, and comes once", async () => {
    const session = replay(
      scenarioOf([
        reply.tools([build]),
        reply.tools([meanwhile(), { id: "toolu_missing", name: "read_file", input: { path: "missing.txt" } }]),
        reply.tools([{ name: "read_file", input: { path: "built" } }]),
        reply.text("done"),
      ]),
    );
    const messages: MessageParam[] = [{ role: "user", content: "build, and test meanwhile" }];
    await stage.agentLoop(messages);
    everyRequestValid(session.requests);
    expect(noticePlaces(session.requests)).toEqual(["toolu_missing"]);
    const [tests, missing] = toolResults(session, 2);
    expect(resultText(tests)).toBe("tests ok\n");
    expect(missing.is_error).toBe(true);
    expect(resultText(missing)).toMatch(/^Error: .*missing\.txt.*\n\n<notice>From the harness, not the tool:\nbg_1 \(echo compiling; touch built; echo built app\) ended: exit code 0\.\nIts last lines:\n {2}compiling\n {2}built app\nbash_output\("bg_1"\) gives all it printed since your last read\.\n<\/notice>$/);
    expect(printed).toContain("  [notice for the model, added to this result: bg_1 (echo compiling; touch built; echo built app) ended: exit code 0.]");
  });

  it("is not given when the model has read the end itself with bash_output, nor after kill_task", async () => {
    const session = replay(
      scenarioOf([
        reply.tools([build]),
        reply.tools([meanwhile(), { name: "bash_output", input: { task_id: "bg_1" } }]),
        reply.tools([{ name: "bash", input: { command: "sleep 30", run_in_background: true } }]),
        reply.tools([{ name: "kill_task", input: { task_id: "bg_2" } }]),
        reply.tools([{ name: "read_file", input: { path: "built" } }]),
        reply.text("done"),
      ]),
    );
    await stage.agentLoop([{ role: "user", content: "go" }]);
    everyRequestValid(session.requests);
    expect(resultText(toolResults(session, 2)[1])).toMatch(/: exit code 0\.\nOutput since the last read:\ncompiling\nbuilt app\n$/);
    expect(noticePlaces(session.requests)).toEqual([]);
  });

  it("goes in front of the person's next prompt when the task ended after the turn, in the same message", async () => {
    const session = replay(scenarioOf([reply.tools([build]), reply.text("Building in the background."), reply.tools([meanwhile()]), reply.text("ok")]));
    const messages: MessageParam[] = [{ role: "user", content: "start the build" }];
    await stage.turnWithNotices(messages);
    expect(await ended("bg_1")).toBe(true);
    messages.push({ role: "user", content: "how did it go?" });
    await stage.turnWithNotices(messages);
    everyRequestValid(session.requests);
    const prompt = session.requests[2].messages[4];
    expect(prompt.role).toBe("user");
    expect(prompt.content).toMatch(/^<notice>From the harness, not the person:\nbg_1 \(.*\) ended: exit code 0\.\nIts last lines:\n {2}compiling\n {2}built app\n.*\n<\/notice>\n\nhow did it go\?$/);
    // Given once: the tool result of the same turn carries none.
    expect(noticePlaces(session.requests)).toEqual(["prompt 4"]);
    expect(printed.some((line) => line.startsWith("  [notice for the model, in front of the prompt: bg_1 "))).toBe(true);
  });

  it("the program runs each turn through turnWithNotices: a task that ended while the person typed is in their next prompt", async () => {
    const session = replay(scenarioOf([reply.tools([build]), reply.text("Started."), reply.text("It has built.")], { prompts: ["build", "done?"] }));
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789");
    vi.stubEnv("APPROVAL_MODE", "yolo");
    vi.resetModules();
    const fresh = (await import(FILE)) as Stage;
    vi.unstubAllEnvs();
    const input = new PassThrough();
    vi.spyOn(process, "stdin", "get").mockReturnValue(input as unknown as typeof process.stdin);
    vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    const exit = vi.spyOn(process, "exit").mockImplementation((() => {
      throw new Error("exit");
    }) as never);
    try {
      const program = fresh.main([]).catch(() => undefined);
      input.write("build\n");
      expect(await eventually(() => session.requests.length === 2 && fresh.taskList()[0]?.status === "exit code 0")).toBe(true);
      input.end("done?\n");
      await program;
      expect(exit).toHaveBeenCalledWith(0);
      expect(session.requests[2].messages[4].content).toMatch(/^<notice>From the harness, not the person:\nbg_1 [\s\S]*<\/notice>\n\ndone\?$/);
    } finally {
      fresh.prepareReplay();
    }
  });

  it("a replay starts a new session: no tasks, no notices, ids from bg_1 again", async () => {
    await background("echo old");
    expect(await ended("bg_1")).toBe(true);
    stage.prepareReplay();
    const [result] = stage.withNotices([{ type: "tool_result", tool_use_id: "toolu_x", content: "ok" }]);
    expect(result.content).toBe("ok");
    expect(resultText(await background("echo new"))).toMatch(/^Started bg_1 /);
  });
});

describe("s18 when the program ends", () => {
  const workspace = useWorkspace();

  it("ends every task and what it started, by process id (a real program)", async () => {
    const standIn = await startStandIn(
      scenarioOf([
        reply.tools([{ name: "bash", input: { command: "echo $$ > pids; sleep 30 & echo $! >> pids; setsid sleep 30 > /dev/null 2>&1 & echo $! >> pids; wait", run_in_background: true } }]),
        reply.tools([{ name: "bash", input: { command: "until [ -s pids ] && [ $(wc -l < pids) -ge 3 ]; do sleep 0.02; done; cat pids" } }]),
        reply.text("The server runs in the background."),
      ]),
    );
    let pids: number[] = [];
    try {
      const run = await runStage("s18", {
        cwd: workspace.dir,
        args: ["start the server"],
        env: { ANTHROPIC_API_KEY: "sk-ant-test-0123456789", ANTHROPIC_BASE_URL: standIn.url, APPROVAL_MODE: "yolo" },
      });
      expect(run.stdout).toContain("The server runs in the background.");
      // The person hears that it ends with the program: the model last said it runs on.
      expect(run.stdout).toMatch(/^\[bg_1 \(echo \$\$ > pids; sleep 30 .*\) was still running: it ends with the program\]$/m);
      expect(run.code).toBe(0);
      pids = readFileSync(`${workspace.dir}/pids`, "utf8").trim().split(/\s+/).map(Number);
      expect(pids).toHaveLength(3);
      // They were running when the model last heard of them (the foreground command read the file), and none is now.
      expect(resultText(toolResults(standIn.replay, 2)[0])).toBe(`${pids.join("\n")}\n`);
      expect(await eventually(() => pids.every((pid) => !isRunning(pid)), 1500), `still running: ${pids.filter(isRunning)}`).toBe(true);
    } finally {
      killAll(pids);
      await standIn.close();
    }
  });
});

describe("s18's demo", () => {
  const workspace = useWorkspace();
  usePrinted();
  afterEach(() => stage.prepareReplay());

  it("builds in the background while the model edits and tests; the notice rides in the tests' result; every request is valid", async () => {
    const scenario = loadScenario("s18");
    const session = await replayScenario(stage, scenario, { workspace: workspace.dir, output: new PassThrough() });
    expectWholeSession("s18", session, scenario);
    everyRequestValid(session.requests);
    expect(noticePlaces(session.requests)).toEqual(["toolu_s18_demo_03"]);
    const tests = toolResults(session, 3)[0] as ToolResultBlockParam;
    expect(resultText(tests)).toMatch(/^2 of 2 tests passed\n\n<notice>From the harness, not the tool:\nbg_1 \(sh build\.sh\) ended: exit code 0\.\nIts last lines:\n {2}compiling src\/greet\.js\n {2}built dist\/greet\.js\n/);
    expect(resultText(toolResults(session, 4)[0])).toBe("bg_1 (sh build.sh): exit code 0.\nOutput since the last read:\ncompiling src/greet.js\nbuilt dist/greet.js\n");
    expect(readFileSync("dist/greet.js", "utf8")).toContain("export function greet");
    expect(readFileSync("CHANGELOG.md", "utf8")).toMatch(/^# Changelog\n\n## 1\.1\.0\n/);
  });
});
