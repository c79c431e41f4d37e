// s19: a task board on disk, and teammates that claim from it. The board's rules are tests through
// its tools (ids, blockers, cycles, unknown ids, a corrupt file, a lock left by a dead process);
// three real processes race for the same tasks, create tasks and append to one inbox at once;
// the inbox gives what was not read, once, within its limits; a teammate runs this file's loop
// with its own history, tools and roster, idles, is stopped by the lead or Ctrl-C, and the lead
// hears of it; and the demo replays with each reply served to the agent that asked for it.
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { MessageParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { interrupt } from "../lib/runtime/terminal.ts";
import { sessionSteps } from "../.vitepress/transcript.ts";
import { eventually, reply, resultText, scenarioOf, stageFile, TSX_LOADER, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s19");
const stage = (await import(FILE)) as typeof import("../agents/s19_task_graph_and_team.ts");
const { alwaysAllowed } = await import("../agents/s06_tool_registry.ts");

let ids = 0;
const call = (name: string, input: Record<string, unknown>): ToolUseBlock => ({ type: "tool_use", id: `toolu_s19_${++ids}`, name, input }) as ToolUseBlock;
/** A tool call as the lead makes it: the text the model reads, "Error: ..." when it failed. */
async function run(name: string, input: Record<string, unknown> = {}): Promise<string> {
  const result = await stage.runTool(call(name, input));
  return (result.is_error ? "Error! " : "") + resultText(result);
}
const create = (subject: string, blocked_by?: string[]) => run("task_create", { subject, description: `${subject}, in full`, ...(blocked_by ? { blocked_by } : {}) });
const taskFile = (dir: string, id: string) => path.join(dir, ".agent", "tasks", `${id}.json`);

describe("s19 the task board", () => {
  const ws = useWorkspace();
  usePrinted();
  beforeEach(() => stage.prepareReplay());

  it("task_create gives ids 1, 2, 3, each task a JSON file; task_list and task_get show status, owner and blockers", async () => {
    expect(await create("Write the parser")).toBe("Created task 1: Write the parser.");
    expect(await create("Test the parser", ["1"])).toBe("Created task 2: Test the parser (blocked by 1).");
    expect(await create("Document it")).toBe("Created task 3: Document it.");
    const two = JSON.parse(readFileSync(taskFile(ws.dir, "2"), "utf8"));
    expect(two).toEqual({ id: "2", subject: "Test the parser", description: "Test the parser, in full", status: "pending", owner: null, blocked_by: ["1"] });
    expect(await run("task_list")).toBe(
      "1 [pending] Write the parser, no owner\n2 [pending] Test the parser, no owner, blocked by 1 (pending)\n3 [pending] Document it, no owner",
    );
    expect(await run("task_get", { task_id: "1" })).toBe("1 [pending] Write the parser, no owner\nWrite the parser, in full\nIt blocks: 2.");
  });

  it("ids are never given twice, even when a task's file is removed", async () => {
    for (const subject of ["a", "b", "c"]) await create(subject);
    rmSync(taskFile(ws.dir, "3"));
    expect(await create("d")).toBe("Created task 4: d.");
  });

  it("an unknown id is refused, naming the ids there are; so is a blocker not on the board", async () => {
    expect(await run("task_get", { task_id: "7" })).toBe('Error! Error: there is no task "7". The board is empty.');
    await create("a");
    await create("b");
    expect(await run("task_update", { task_id: "7", status: "completed" })).toBe('Error! Error: there is no task "7". The tasks: 1, 2.');
    expect(await create("c", ["9"])).toBe('Error! Error: blocked_by names "9", not on the board. The tasks: 1, 2.');
  });

  it("a cycle in blocked_by is refused, and the task is left as it was", async () => {
    await create("a");
    await create("b", ["1"]);
    await create("c", ["2"]);
    expect(await run("task_update", { task_id: "1", status: "pending", blocked_by: ["3"] })).toBe("Error! Error: blocked_by would make a cycle: 1 -> 3 -> 2 -> 1; no task could ever start");
    expect(await run("task_update", { task_id: "1", status: "pending", blocked_by: ["1"] })).toMatch(/cycle: 1 -> 1;/);
    expect(JSON.parse(readFileSync(taskFile(ws.dir, "1"), "utf8")).blocked_by).toEqual([]);
  });

  it("in_progress is refused while a blocker is not completed, naming it; once it is, the task starts and is claimed", async () => {
    await create("Write the parser");
    await create("Test the parser", ["1"]);
    expect(await run("task_update", { task_id: "2", status: "in_progress" })).toBe(
      "Error! Error: task 2 cannot start: it is blocked by task 1 (Write the parser, pending); it can start when that is completed",
    );
    await run("task_update", { task_id: "1", status: "completed" });
    expect(await run("task_update", { task_id: "2", status: "in_progress" })).toBe("Task 2 [in_progress] Test the parser, owner lead, blocked by 1 (completed).");
  });

  it("a claimed task is refused to another, who is told who has it", async () => {
    await create("a");
    await stage.updateTask(ws.dir, "1", "alice", { status: "in_progress", owner: "alice" });
    await expect(stage.updateTask(ws.dir, "1", "bob", { status: "in_progress", owner: "bob" })).rejects.toThrow("task 1 is claimed by alice: only alice or the lead may change it");
    await expect(stage.updateTask(ws.dir, "1", "bob", { status: "completed" })).rejects.toThrow("claimed by alice");
    expect(JSON.parse(readFileSync(taskFile(ws.dir, "1"), "utf8")).owner).toBe("alice");
  });

  it("a task file that is not a task's JSON: a clear error naming it, and every other file as it was", async () => {
    await create("a");
    await create("b");
    writeFileSync(taskFile(ws.dir, "2"), '{"id": "2", "subj');
    const one = readFileSync(taskFile(ws.dir, "1"), "utf8");
    expect(await run("task_list")).toMatch(/^Error! Error: \.agent\/tasks\/2\.json is not a task's JSON/);
    expect(await create("c")).toMatch(/2\.json is not a task's JSON/);
    expect(readFileSync(taskFile(ws.dir, "1"), "utf8")).toBe(one);
    expect(readFileSync(taskFile(ws.dir, "2"), "utf8")).toBe('{"id": "2", "subj');
    expect(existsSync(taskFile(ws.dir, "3"))).toBe(false);
  });

  it("a lock left by a dead process is taken over; a live one is waited for, lockWaitMs at most", async () => {
    const lock = path.join(ws.dir, ".agent", "tasks", ".lock");
    mkdirSync(path.dirname(lock), { recursive: true });
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    writeFileSync(lock, `${dead} left-behind`);
    expect(await create("a")).toBe("Created task 1: a.");
    expect(existsSync(lock)).toBe(false);
    const wait = stage.BOARD_LIMITS.lockWaitMs;
    stage.BOARD_LIMITS.lockWaitMs = 150;
    try {
      writeFileSync(lock, `${process.pid} held`);
      const started = Date.now();
      expect(await create("b")).toBe(`Error! Error: the task board stayed locked by process ${process.pid} for 0.15 s; try again`);
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      stage.BOARD_LIMITS.lockWaitMs = wait;
    }
  });
});

// Three real processes, started together: each claims tasks 1 to 5 in turn, creates four tasks, and appends 40 messages to one inbox.
describe("s19 across processes", () => {
  let dir = "";
  let results: { claims: string[]; ids: string[] }[] = [];
  const names = ["p1", "p2", "p3"];
  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-s19-")));
    for (let id = 1; id <= 5; id++) await stage.createTask(dir, `task ${id}`, "");
    const child = path.join(dir, "child.mts");
    writeFileSync(
      child,
      `const [file, root, name] = process.argv.slice(2);
const { existsSync, writeFileSync } = await import("node:fs");
const stage = await import(file);
writeFileSync(root + "/ready-" + name, "");
while (!existsSync(root + "/go")) await new Promise((resolve) => setTimeout(resolve, 1));
const claims = [];
for (const id of ["1", "2", "3", "4", "5"]) {
  try { await stage.updateTask(root, id, name, { status: "in_progress", owner: name }); claims.push("won"); } catch (error) { claims.push(error.message); }
}
const ids = [];
for (let i = 0; i < 4; i++) ids.push((await stage.createTask(root, name + " " + i, "")).id);
for (let i = 0; i < 40; i++) stage.appendMessage(root, "lead", { from: name, text: name + " " + i + " " + "x".repeat(3000) });
console.log(JSON.stringify({ claims, ids }));`,
    );
    const env = { ...process.env, ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: "" };
    const done = names.map(
      (name) => new Promise<string>((resolve, reject) => execFile(process.execPath, ["--import", TSX_LOADER, child, FILE, dir, name], { cwd: dir, env, timeout: 20_000 }, (error, stdout) => (error ? reject(error) : resolve(stdout)))),
    );
    expect(await eventually(() => names.every((name) => existsSync(path.join(dir, `ready-${name}`))), 15_000)).toBe(true);
    writeFileSync(path.join(dir, "go"), "");
    results = (await Promise.all(done)).map((out) => JSON.parse(out.trim().split("\n").at(-1)!));
  }, 30_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("a claim is race-free: for each task exactly one process wins, and the others are told who has it", () => {
    for (let i = 0; i < 5; i++) {
      const winners = names.filter((_, p) => results[p].claims[i] === "won");
      expect(winners, `task ${i + 1}`).toHaveLength(1);
      for (const [p, name] of names.entries()) if (name !== winners[0]) expect(results[p].claims[i]).toBe(`task ${i + 1} is claimed by ${winners[0]}: only ${winners[0]} or the lead may change it`);
      expect(JSON.parse(readFileSync(taskFile(dir, String(i + 1)), "utf8")).owner).toBe(winners[0]);
    }
  });

  it("tasks created at once get ids 6 to 17, each once", () => {
    expect(results.flatMap((r) => r.ids).map(Number).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 6));
    expect(stage.readBoard(dir)).toHaveLength(17);
  });

  it("messages appended at once: none lost, none cut or mixed with another", () => {
    const lines = readFileSync(path.join(dir, ".agent", "team", "inbox", "lead.jsonl"), "utf8").split("\n").filter(Boolean);
    expect(lines).toHaveLength(120);
    const texts = lines.map((line) => JSON.parse(line).text as string);
    for (const name of names) expect(texts.filter((text) => text.startsWith(`${name} `)).map((text) => Number(text.split(" ")[1]))).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(texts.every((text) => text.endsWith("x".repeat(3000)))).toBe(true);
  });
});

describe("s19 the inbox", () => {
  const ws = useWorkspace();
  usePrinted();
  beforeEach(() => stage.prepareReplay());

  it("read_inbox gives the messages not read yet, once; a damaged line is skipped and counted", async () => {
    stage.appendMessage(ws.dir, "lead", { from: "alice", text: "one" });
    stage.appendMessage(ws.dir, "lead", { from: "bob", text: "two\nlines" });
    expect(await run("read_inbox")).toBe("From alice:\n  one\nFrom bob:\n  two\n  lines");
    expect(await run("read_inbox")).toBe("No new messages.");
    writeFileSync(path.join(ws.dir, ".agent/team/inbox/lead.jsonl"), '{"from": "al\n', { flag: "a" });
    stage.appendMessage(ws.dir, "lead", { from: "alice", text: "three" });
    expect(await run("read_inbox")).toBe("From alice:\n  three\n(1 damaged line skipped: a write cut short)");
  });

  it("reading the inbox spends the lead's notice of new messages: it does not come again after the read", async () => {
    const s18 = (await import(stageFile("s18"))) as typeof import("../agents/s18_background_tasks.ts");
    s18.notify("inbox", "New messages in your inbox, from alice: read_inbox reads them.");
    stage.appendMessage(ws.dir, "lead", { from: "alice", text: "one" });
    expect(await run("read_inbox")).toBe("From alice:\n  one");
    const [next] = s18.withNotices([{ type: "tool_result", tool_use_id: "toolu_next", content: "done" }]);
    expect(next.content).toBe("done");
  });

  it(`reads at most ${stage.INBOX_LIMITS.perRead} at a time, and says more are waiting`, async () => {
    for (let i = 1; i <= 23; i++) stage.appendMessage(ws.dir, "lead", { from: "alice", text: `m${i}` });
    const first = await run("read_inbox");
    expect(first.match(/From alice/g)).toHaveLength(20);
    expect(first).toMatch(/m20\nMore are waiting: call read_inbox again\.$/);
    expect(await run("read_inbox")).toBe("From alice:\n  m21\nFrom alice:\n  m22\nFrom alice:\n  m23");
  });

  it("send_message: a recipient not on the team is refused naming the roster; a message over the cap is refused; a full inbox takes no more", async () => {
    expect(await run("send_message", { to: "carol", text: "hi" })).toBe('Error! Error: no one named "carol" is on the team. The team: lead');
    expect(await run("send_message", { to: "lead", text: "hi" })).toBe("Error! Error: that is you. The team: lead");
    expect(() => stage.appendMessage(ws.dir, "alice", { from: "lead", text: "x".repeat(stage.INBOX_LIMITS.messageChars + 1) })).toThrow(/more than 10000: put the rest in a file/);
    const cap = stage.INBOX_LIMITS.fileBytes;
    stage.INBOX_LIMITS.fileBytes = 200;
    try {
      stage.appendMessage(ws.dir, "alice", { from: "lead", text: "x".repeat(100) });
      expect(() => stage.appendMessage(ws.dir, "alice", { from: "lead", text: "x".repeat(100) })).toThrow(/alice's inbox is full \(\d+ bytes, at most 200\)/);
    } finally {
      stage.INBOX_LIMITS.fileBytes = cap;
    }
  });
});

describe("s19 the team", () => {
  useWorkspace();
  const printed = usePrinted();
  const serve = useReplay();
  beforeEach(() => {
    stage.prepareReplay();
    for (const name of ["write_file", "bash"]) alwaysAllowed.add(name);
  });
  afterEach(() => {
    stage.prepareReplay();
    alwaysAllowed.clear();
  });
  const spawn = (name: string, prompt = `You are ${name}: say hi.`) => run("spawn_teammate", { name, prompt });
  const stateOf = (name: string) => stage.teamList().find((mate) => mate.name === name)?.state;
  const alice = (message: ReturnType<typeof reply.text>) => ({ ...message, agent: "alice" });

  it("names are checked: letters, digits, - and _, at most 40; lead is reserved; one name once; 4 at most, the 5th refused naming them", async () => {
    serve(scenarioOf(["a", "b", "c", "d"].map((name) => ({ ...reply.text(`${name} here`), agent: name }))));
    expect(await spawn("al ice")).toMatch(/^Error! Error: "al ice" cannot be a teammate's name: letters, digits, - and _, at most 40, and not "lead"$/);
    expect(await spawn("x".repeat(41))).toMatch(/cannot be a teammate's name/);
    expect(await spawn("Lead")).toMatch(/cannot be a teammate's name/);
    for (const name of ["a", "b", "c", "d"]) expect(await spawn(name)).toMatch(new RegExp(`^${name} has joined the team`));
    expect(await spawn("A")).toBe("Error! Error: a is on the team already: send_message gives it more work");
    expect(await spawn("e")).toMatch(/^Error! Error: the team has 4 teammates, the most at once: a \((working|idle)\), b \(\w+\), c \(\w+\), d \(\w+\)\./);
  });

  it("a teammate runs the loop with its own history and system prompt naming the roster, without spawn_teammate; its lines carry its name; the lead hears when it is idle", async () => {
    const replay = serve(scenarioOf([alice(reply.tools([{ name: "task_list", input: {} }], "Looking.")), alice(reply.text("Nothing to do."))]));
    await run("spawn_teammate", { name: "bob", prompt: "Wait." }).catch(() => {});
    expect(await spawn("alice", "Check the board.")).toMatch(/The team: lead, bob, alice\./);
    expect(await eventually(() => stateOf("alice") === "idle")).toBe(true);
    const [first] = replay.requests.filter((request) => String(request.system).includes("Your name is alice."));
    expect(first.messages).toEqual([{ role: "user", content: "Check the board." }]);
    expect(String(first.system)).toMatch(/The team: lead \(who leads it\), bob, alice \(you\)\./);
    const tools = first.tools!.map((tool) => (tool as { name: string }).name);
    expect(tools).toEqual(expect.arrayContaining(["bash", "read_file", "task_create", "task_update", "task_list", "task_get", "send_message", "read_inbox"]));
    expect(tools).not.toContain("spawn_teammate");
    expect(printed).toEqual(expect.arrayContaining(["[alice] Looking.", "[alice] Nothing to do."]));
    const messages: MessageParam[] = [{ role: "user", content: "go on" }];
    stage.stopTeam();
    serve(scenarioOf([reply.text("Noted.")]));
    await stage.runTurn(messages);
    expect(messages[0].content).toMatch(/^<notice>From the harness, not the person:\n[^]*alice is idle: no task on the board is free for it\. Its last words: "Nothing to do\."/);
  });

  it("a teammate's call to spawn_teammate is refused, as a tool it does not have", async () => {
    const replay = serve(scenarioOf([alice(reply.tools([{ name: "spawn_teammate", input: { name: "eve", prompt: "x" } }])), alice(reply.text("Cannot."))]));
    await spawn("alice");
    expect(await eventually(() => stateOf("alice") === "idle")).toBe(true);
    expect(resultText(replay.requests[1].messages.at(-1)!.content[0] as never)).toMatch(/^Error: unknown tool "spawn_teammate"\. Tools: bash, read_file/);
    expect(stage.teamList().map((mate) => mate.name)).toEqual(["alice"]);
  });

  it("an idle teammate claims the next task when one frees up, and stops when the lead says so, with no notice", async () => {
    await create("first");
    await create("second", ["1"]);
    await run("task_update", { task_id: "1", status: "in_progress" }); // the lead's: alice has nothing free
    const replay = serve(scenarioOf([alice(reply.text("Waiting.")), alice(reply.text("Did task 2."))]));
    await spawn("alice");
    expect(await eventually(() => stateOf("alice") === "idle")).toBe(true);
    expect(await run("task_update", { task_id: "1", status: "completed" })).toMatch(/^Task 1 \[completed\]/);
    expect(await eventually(() => replay.requests.length === 2 && stateOf("alice") === "idle")).toBe(true);
    expect(replay.requests[1].messages.at(-1)).toEqual({ role: "user", content: expect.stringMatching(/^<notice>From the harness:\nTask 2 is yours, and in_progress: second\n/) });
    expect(stage.readBoard(process.cwd())[1]).toMatchObject({ owner: "alice", status: "in_progress" });
    expect(await run("send_message", { to: "alice", text: "Thanks, stop now.", stop: true })).toBe("Sent to alice; alice stops when it reads it.");
    expect(await eventually(() => stateOf("alice") === "stopped")).toBe(true);
    const messages: MessageParam[] = [{ role: "user", content: "next" }];
    serve(scenarioOf([reply.text("ok")]));
    await stage.runTurn(messages);
    expect(messages[0].content).toMatch(/alice is idle/);
    expect(messages[0].content).not.toMatch(/has stopped/); // the lead asked for it: nothing to tell
  });

  it("the lead is told when a teammate fails, and waits while one works", async () => {
    serve(scenarioOf([reply.tools([{ name: "spawn_teammate", input: { name: "alice", prompt: "Work." } }]), reply.text("Waiting for alice."), reply.text("alice failed; I will do it myself.")]));
    const messages: MessageParam[] = [{ role: "user", content: "go" }];
    await stage.runTurn(messages); // alice's request has no recorded reply: the replay refuses it, and alice fails
    const wake = messages.at(-2)!;
    expect(wake.role).toBe("user");
    expect(wake.content).toEqual([{ type: "text", text: expect.stringMatching(/^<notice>From the harness, not the person:\nalice has stopped: it failed: .*Replay: request \d/) }]);
    expect(messages.at(-1)).toMatchObject({ role: "assistant" });
  });

  it("Ctrl-C stops every teammate, and the lead hears it", async () => {
    serve(scenarioOf([alice(reply.text("Idle now.")), { ...reply.text("Idle too."), agent: "bob" }]));
    await spawn("alice");
    await spawn("bob");
    expect(await eventually(() => stateOf("alice") === "idle" && stateOf("bob") === "idle")).toBe(true);
    const exit = vi.spyOn(process, "exit").mockImplementation((() => undefined) as never);
    interrupt();
    expect(exit).not.toHaveBeenCalled();
    expect(await eventually(() => stateOf("alice") === "stopped" && stateOf("bob") === "stopped")).toBe(true);
    const messages: MessageParam[] = [{ role: "user", content: "what happened?" }];
    serve(scenarioOf([reply.text("They stopped.")]));
    await stage.runTurn(messages);
    expect(messages[0].content).toMatch(/alice has stopped: Ctrl-C stopped the team\.[^]*bob has stopped: Ctrl-C stopped the team\./);
  });
});

describe("s19 the demo", () => {
  const ws = useWorkspace();
  usePrinted();
  afterEach(() => stage.prepareReplay());

  it("replays with each reply served to the agent that asked: three tasks, two teammates, the lead's report; the page shows the teammates' steps", async () => {
    const scenario = loadScenario("s19");
    const session = await replayScenario(stage, scenario, { workspace: ws.dir });
    expectWholeSession("s19", session, scenario);
    expect(stage.readBoard(ws.dir).map((task) => `${task.id} ${task.status} ${task.owner}`)).toEqual(["1 completed alice", "2 completed alice", "3 completed bob"]);
    expect(readFileSync(path.join(ws.dir, "README.md"), "utf8")).toMatch(/## Usage/);
    expect(stage.teamList()).toEqual([{ name: "alice", state: "stopped" }, { name: "bob", state: "stopped" }]);
    const served = session.served!.map((i) => scenario.replies[i].agent ?? "lead");
    expect(served.filter((agent) => agent === "alice")).toHaveLength(6);
    const { steps } = sessionSteps(session.messages, session.requests, session.served!.map((i) => scenario.replies[i]));
    expect(steps.filter((step) => "by" in step && step.by === "bob" && step.teammate).length).toBeGreaterThan(4);
    expect(steps.some((step) => step.kind === "notice" && step.by === "alice" && /Task 2 is yours/.test(step.text))).toBe(true);
    expect(steps.some((step) => step.kind === "notice" && !step.by && /alice is idle/.test(step.text))).toBe(true);
  });
});
