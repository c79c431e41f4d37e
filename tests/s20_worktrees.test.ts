// s20: a git worktree per task. Real git in temporary repositories: worktree_create runs `git
// worktree add`, binds the task and logs; worktree_list and worktree_remove say what is there and
// what was deleted; names, a folder that is no repository, git's own errors, a symlink out of the
// workspace, the agent's keys and a hung hook are guarded. The core tools' `worktree` makes the
// worktree the root, with the sandbox's rules; a teammate of s19 works in its task's worktree; and
// the demo replays with each teammate's edit in its own checkout.
import { execFileSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { nobody, scriptedTerminal, useTerminal } from "../lib/runtime/terminal.ts";
import { eventually, reply, resultText, scenarioOf, stageFile, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const stage = (await import(stageFile("s20"))) as typeof import("../agents/s20_worktrees.ts");
const team = await import("../agents/s19_task_graph_and_team.ts");
const { alwaysAllowed } = await import("../agents/s06_tool_registry.ts");

let ids = 0;
const call = (name: string, input: Record<string, unknown>): ToolUseBlock => ({ type: "tool_use", id: `toolu_s20_${++ids}`, name, input }) as ToolUseBlock;
/** A tool call as the lead makes it: the text the model reads, "Error! ..." when it failed. */
async function run(name: string, input: Record<string, unknown> = {}): Promise<string> {
  const result = await stage.runTool(call(name, input));
  return (result.is_error ? "Error! " : "") + resultText(result);
}
/** git as the test runs it, reading no one's configuration. */
const gitIn = (dir: string, ...args: string[]) =>
  execFileSync("git", args, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" } }).trim();
/** A repository with one commit (hello.txt), made once and copied into each test's workspace: git init costs more than a copy. */
let template = "";
beforeAll(() => {
  template = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-s20-repo-")));
  gitIn(template, "init", "-q", "--initial-branch=main");
  gitIn(template, "config", "user.name", "Test");
  gitIn(template, "config", "user.email", "test@example.com");
  writeFileSync(path.join(template, "hello.txt"), "hello\n");
  gitIn(template, "add", "-A");
  gitIn(template, "commit", "-q", "-m", "start");
});
afterAll(() => rmSync(template, { recursive: true, force: true }));
const makeRepo = (dir: string) => cpSync(template, dir, { recursive: true });
const branches = (dir: string) => gitIn(dir, "branch", "--format=%(refname:short)").split("\n");
const events = (dir: string) => {
  const log = path.join(dir, ".agent/worktrees/events.jsonl");
  return existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line)) : [];
};
const wt = (dir: string, name: string) => path.join(dir, ".agent", "worktrees", name);
const task = (subject: string) => run("task_create", { subject, description: subject });

function useRepo() {
  const ws = useWorkspace();
  usePrinted();
  beforeEach(() => {
    makeRepo(ws.dir);
    stage.prepareReplay();
    for (const name of ["worktree_create", "worktree_remove", "bash", "write_file", "edit_file"]) alwaysAllowed.add(name);
  });
  afterEach(() => {
    stage.prepareReplay();
    alwaysAllowed.clear();
    useTerminal(nobody);
  });
  return ws;
}

describe("s20 worktree_create, worktree_list, worktree_remove", () => {
  const ws = useRepo();

  it("worktree_create runs git worktree add .agent/worktrees/<name> -b wt/<name>, binds the task and logs create and bind", async () => {
    await task("Greet by name");
    expect(await run("worktree_create", { name: "greet", task_id: "1" })).toMatch(/^Created the worktree greet at \.agent\/worktrees\/greet, on the new branch wt\/greet, bound to task 1/);
    expect(gitIn(wt(ws.dir, "greet"), "branch", "--show-current")).toBe("wt/greet");
    expect(readFileSync(path.join(wt(ws.dir, "greet"), "hello.txt"), "utf8")).toBe("hello\n");
    expect(gitIn(ws.dir, "worktree", "list")).toContain(wt(ws.dir, "greet"));
    expect(JSON.parse(readFileSync(path.join(ws.dir, ".agent/worktrees/bindings.json"), "utf8"))).toEqual({ greet: "1" });
    // The main checkout's `git add -A` leaves the worktrees out: they are checkouts, not the project's files.
    expect(gitIn(ws.dir, "status", "--porcelain", "--untracked-files=all")).not.toContain(".agent/worktrees");
    expect(events(ws.dir)).toEqual([
      { time: expect.stringMatching(/^\d{4}-/), event: "create", name: "greet", branch: "wt/greet" },
      { time: expect.stringMatching(/^\d{4}-/), event: "bind", name: "greet", task: "1" },
    ]);
    // The task must be on the board, bound once; a name once.
    expect(await run("worktree_create", { name: "other", task_id: "7" })).toBe('Error! Error: there is no task "7". The tasks: 1.');
    expect(await run("worktree_create", { name: "again", task_id: "1" })).toBe("Error! Error: task 1 has the worktree greet already");
    expect(await run("worktree_create", { name: "greet" })).toBe("Error! Error: the name greet is taken: a worktree or a folder in .agent/worktrees/ has it (in some letter case). The worktrees: greet.");
    // Greet and greet are one folder on some disks; a plain folder there is no worktree, but its name is taken too.
    expect(await run("worktree_create", { name: "Greet" })).toMatch(/^Error! Error: the name Greet is taken/);
    mkdirSync(wt(ws.dir, "plain"));
    expect(await run("worktree_create", { name: "plain" })).toMatch(/^Error! Error: the name plain is taken: a worktree or a folder in \.agent\/worktrees\/ has it/);
    expect(branches(ws.dir)).toEqual(["main", "wt/greet"]);
    expect(events(ws.dir)).toHaveLength(2);
  });

  it("names: letters, digits, - and _, at most 40, no - first; anything else is refused before git runs", async () => {
    for (const name of ["../x", "a/b", "-b", "--force", "x".repeat(41), "a b", "", "..", "a.b"]) {
      expect(await run("worktree_create", { name }), name).toBe(`Error! Error: ${JSON.stringify(name)} cannot be a worktree's name: letters, digits, - and _, at most 40 characters, not starting with -`);
    }
    expect(branches(ws.dir)).toEqual(["main"]);
    expect(existsSync(path.join(ws.dir, ".agent"))).toBe(false);
    expect(await run("worktree_create", { name: `a-_${"x".repeat(37)}` })).toMatch(/^Created/);
  });

  it("a workspace that is no repository, or has no commit, gets a clear error and what to do", async () => {
    rmSync(path.join(ws.dir, ".git"), { recursive: true });
    const notRepo = await run("worktree_create", { name: "a" });
    expect(notRepo).toMatch(/^Error! Error: \S+ is not a git repository, so it can have no worktrees\. Make it one with `git init`, then commit once/);
    expect(notRepo).toMatch(/git rev-parse --verify --quiet HEAD failed \(exit code 128\):\nfatal: not a git repository/); // git's words too
    expect(await run("worktree_list")).toMatch(/is not a git repository[^]*git init/);
    gitIn(ws.dir, "init", "-q");
    expect(await run("worktree_create", { name: "a" })).toMatch(/has no commit yet, and a worktree starts from one: commit first/);
  });

  it("git's own errors are passed on in full", async () => {
    gitIn(ws.dir, "branch", "wt/taken");
    expect(await run("worktree_create", { name: "taken" })).toBe(
      "Error! Error: git worktree add .agent/worktrees/taken -b wt/taken failed (exit code 255):\nPreparing worktree (new branch 'wt/taken')\nfatal: a branch named 'wt/taken' already exists",
    );
    expect(events(ws.dir)).toEqual([]); // nothing happened, nothing logged
  });

  it("nothing is created outside the workspace: a .agent/worktrees that links elsewhere is refused", async () => {
    const outside = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-outside-")));
    try {
      mkdirSync(path.join(ws.dir, ".agent"));
      symlinkSync(outside, path.join(ws.dir, ".agent", "worktrees"));
      expect(await run("worktree_create", { name: "a" })).toMatch(/^Error! Error: \.agent\/worktrees leads outside the workspace \(.*\) through a symlink; nothing was created/);
      expect(readdirSync(outside)).toEqual([]);
      expect(branches(ws.dir)).toEqual(["main"]);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("git runs without the agent's keys, and within its time limit, which ends a hung hook too", async () => {
    const hook = path.join(ws.dir, ".git", "hooks", "post-checkout");
    writeFileSync(hook, `#!/bin/sh\nenv > "${ws.dir}/hook-env.txt"\n`);
    chmodSync(hook, 0o755);
    const key = process.env.ANTHROPIC_API_KEY;
    process.env.ANTHROPIC_API_KEY = "sk-ant-secret-of-the-agent";
    const limit = stage.WORKTREE_LIMITS.gitTimeoutMs;
    try {
      expect(await run("worktree_create", { name: "a" })).toMatch(/^Created/);
      const env = readFileSync(path.join(ws.dir, "hook-env.txt"), "utf8");
      expect(env).toMatch(/^PWD=.*\/\.agent\/worktrees\/a$/m); // the hook ran, in the new worktree
      expect(env).not.toContain("sk-ant-secret");
      writeFileSync(hook, "#!/bin/sh\nsleep 30\n");
      stage.WORKTREE_LIMITS.gitTimeoutMs = 200;
      const started = Date.now();
      expect(await run("worktree_create", { name: "b" })).toMatch(/^Error! Error: git worktree add \.agent\/worktrees\/b -b wt\/b: timed out after 0\.2s; the command and everything it started were ended/);
      expect(Date.now() - started).toBeLessThan(3000);
      // Ctrl-C ends git the same way, through the tool's signal.
      stage.WORKTREE_LIMITS.gitTimeoutMs = limit;
      const ctrlC = new AbortController();
      setTimeout(() => ctrlC.abort(), 200);
      const create = stage.registry.getTool("worktree_create")!;
      await expect(create.execute({ name: "c" }, ctrlC.signal)).rejects.toThrow(/^git worktree add \.agent\/worktrees\/c -b wt\/c: cancelled by the user/);
      expect(Date.now() - started).toBeLessThan(6000);
      // What git had made when it was stopped is taken back: no worktree, no branch, nothing in the log but a's create.
      expect(gitIn(ws.dir, "worktree", "list")).not.toMatch(/worktrees\/[bc]\b/);
      expect(branches(ws.dir)).toEqual(["main", "wt/a"]);
      expect(events(ws.dir).map((e) => `${e.event} ${e.name}`)).toEqual(["create a"]);
    } finally {
      stage.WORKTREE_LIMITS.gitTimeoutMs = limit;
      if (key === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = key;
    }
  });

  it("worktree_list: name, branch, task, and uncommitted changes; at most WORKTREE_LIMITS.worktrees, and it says so", async () => {
    expect(await run("worktree_list")).toBe("There are no worktrees (worktree_create makes one).");
    await task("one");
    await run("worktree_create", { name: "b", task_id: "1" });
    await run("worktree_create", { name: "a" });
    writeFileSync(path.join(wt(ws.dir, "b"), "new.txt"), "x");
    writeFileSync(path.join(wt(ws.dir, "b"), "hello.txt"), "changed\n");
    expect(await run("worktree_list")).toBe("a  branch wt/a  no task  clean\nb  branch wt/b  task 1  2 uncommitted change(s): M hello.txt, ?? new.txt");
    const most = stage.WORKTREE_LIMITS.worktrees;
    stage.WORKTREE_LIMITS.worktrees = 1;
    try {
      expect(await run("worktree_list")).toBe("a  branch wt/a  no task  clean\n... and 1 more (git worktree list shows them all)");
      expect(await run("worktree_create", { name: "c" })).toBe("Error! Error: there are 2 worktrees, the most this agent keeps: remove one first (worktree_remove). The worktrees: a, b.");
    } finally {
      stage.WORKTREE_LIMITS.worktrees = most;
    }
  });

  it("worktree_remove refuses uncommitted changes unless force, deletes a merged branch, keeps an unmerged one unless force, and says what was deleted", async () => {
    await task("one");
    for (const name of ["a", "b", "c", "d"]) await run("worktree_create", { name, ...(name === "a" ? { task_id: "1" } : {}) });
    writeFileSync(path.join(wt(ws.dir, "a"), "new.txt"), "x");
    expect(await run("worktree_remove", { name: "a" })).toBe(
      'Error! Error: the worktree a has uncommitted changes, so it was not removed:\n?? new.txt\nCommit them (bash with worktree "a"), or set force to throw them away',
    );
    expect(existsSync(path.join(wt(ws.dir, "a"), "new.txt"))).toBe(true);
    const a = gitIn(ws.dir, "rev-parse", "--short", "wt/a");
    expect(await run("worktree_remove", { name: "a", force: true })).toBe(
      `Removed the worktree a, throwing away its uncommitted changes:\n?? new.txt\nDeleted the branch wt/a, which was at ${a} (its commits are in your current branch).`,
    );
    expect(existsSync(wt(ws.dir, "a"))).toBe(false);
    expect(JSON.parse(readFileSync(path.join(ws.dir, ".agent/worktrees/bindings.json"), "utf8"))).toEqual({});
    // b and c: a commit each that main does not have.
    for (const name of ["b", "c"]) {
      writeFileSync(path.join(wt(ws.dir, name), `${name}.txt`), name);
      gitIn(wt(ws.dir, name), "add", "-A");
      gitIn(wt(ws.dir, name), "commit", "-q", "-m", name);
    }
    expect(await run("worktree_remove", { name: "b" })).toBe(
      "Removed the worktree b.\nThe branch wt/b is kept: it has 1 commit(s) not merged into your current branch. Merge it, or delete it with git branch -D wt/b.",
    );
    const c = gitIn(ws.dir, "rev-parse", "--short", "wt/c");
    expect(await run("worktree_remove", { name: "c", force: true })).toBe(
      `Removed the worktree c.\nDeleted the branch wt/c, which was at ${c}, and with it 1 commit(s) not merged anywhere (git branch wt/c ${c} brings them back while git keeps them).`,
    );
    expect(await run("worktree_remove", { name: "d", keep_branch: true })).toBe("Removed the worktree d.\nThe branch wt/d is kept.");
    expect(branches(ws.dir)).toEqual(["main", "wt/b", "wt/d"]);
    expect(await run("worktree_remove", { name: "zz" })).toBe('Error! Error: there is no worktree "zz". There are no worktrees (worktree_create makes one).');
    expect(events(ws.dir).filter((e) => e.event === "remove").map((e) => [e.name, e.task])).toEqual([["a", "1"], ["b", undefined], ["c", undefined], ["d", undefined]]);
  });

  it("worktree_remove refuses the worktree of a task in progress, unless force: its teammate's next call would land in the main checkout", async () => {
    await task("one");
    await run("worktree_create", { name: "a", task_id: "1" });
    await team.updateTask(ws.dir, "1", "alice", { status: "in_progress", owner: "alice" }); // as alice's task_update does
    expect(await run("worktree_remove", { name: "a" })).toBe(
      "Error! Error: the worktree a is task 1's, which alice has in_progress: removed, that work would go on in the main checkout. Remove it once the task is completed, or set force",
    );
    expect(existsSync(wt(ws.dir, "a"))).toBe(true);
    expect(await run("worktree_remove", { name: "a", force: true })).toMatch(/^Removed the worktree a\./);
  });

  it("a machine without git: the error says git could not be run", async () => {
    const programs = path.join(ws.dir, "only-bash");
    mkdirSync(programs);
    symlinkSync(execFileSync("bash", ["-c", "command -v bash"], { encoding: "utf8" }).trim(), path.join(programs, "bash"));
    const saved = process.env.PATH;
    process.env.PATH = programs;
    try {
      expect(await run("worktree_create", { name: "a" })).toMatch(/^Error! Error: git could not be run: is it installed, and on PATH\?\ngit rev-parse .*exit code 127/);
    } finally {
      process.env.PATH = saved;
    }
  });

  it("the log stays bounded: past logBytes it starts again, keeping one older file", async () => {
    const most = stage.WORKTREE_LIMITS.logBytes;
    stage.WORKTREE_LIMITS.logBytes = 150;
    try {
      await run("worktree_create", { name: "a" });
      await run("worktree_create", { name: "b" });
      expect(events(ws.dir).map((e) => e.name)).toEqual(["b"]);
      expect(readFileSync(path.join(ws.dir, ".agent/worktrees/events.1.jsonl"), "utf8")).toMatch(/"name":"a"/);
    } finally {
      stage.WORKTREE_LIMITS.logBytes = most;
    }
  });
});

describe("s20 the core tools with worktree", () => {
  const ws = useRepo();
  beforeEach(async () => {
    await run("worktree_create", { name: "a" });
  });

  it("bash, read_file, write_file and edit_file work inside the worktree given; without one, in the main checkout", async () => {
    expect(await run("write_file", { path: "notes.md", content: "in a\n", worktree: "a" })).toBe("Wrote 5 bytes to notes.md");
    expect(await run("edit_file", { path: "hello.txt", old_string: "hello", new_string: "hello from a", worktree: "a" })).toBe("Edited hello.txt: replaced 1 occurrence");
    expect(await run("read_file", { path: "hello.txt", worktree: "a" })).toBe("hello from a\n");
    expect(await run("bash", { command: "pwd; git branch --show-current; git status --short", worktree: "a" })).toBe(`${wt(ws.dir, "a")}\nwt/a\n M hello.txt\n?? notes.md\n`);
    expect(readFileSync(path.join(ws.dir, "hello.txt"), "utf8")).toBe("hello\n");
    expect(existsSync(path.join(ws.dir, "notes.md"))).toBe(false);
    expect(await run("bash", { command: "pwd; git branch --show-current" })).toBe(`${ws.dir}\nmain\n`);
    // Two reads at once, each in its own root: the root is the call's, not the process's.
    const [inA, inMain] = await Promise.all([run("read_file", { path: "hello.txt", worktree: "a" }), run("read_file", { path: "hello.txt" })]);
    expect([inA, inMain]).toEqual(["hello from a\n", "hello\n"]);
  });

  it("a worktree's folder that is a link to a repository outside the workspace is refused: nothing runs or is written there", async () => {
    const outside = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-outside-")));
    try {
      makeRepo(outside);
      symlinkSync(outside, wt(ws.dir, "evil"));
      for (const [tool, input] of [["write_file", { path: "x.md", content: "x" }], ["bash", { command: "touch y" }], ["read_file", { path: "hello.txt" }]] as const) {
        expect(await run(tool, { ...input, worktree: "evil" }), tool).toMatch(/^Error! Error: \.agent\/worktrees\/evil leads outside the workspace \(.*\) through a symlink/);
      }
      expect(readdirSync(outside).sort()).toEqual([".git", "hello.txt"]);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("an unknown worktree is refused, naming the ones there are; inside one, ../ out of it is refused as the sandbox does", async () => {
    expect(await run("write_file", { path: "x.md", content: "x", worktree: "nope" })).toBe('Error! Error: there is no worktree "nope". The worktrees: a.');
    expect(await run("bash", { command: "touch x", worktree: "../.." })).toBe('Error! Error: there is no worktree "../..". The worktrees: a.');
    expect(await run("read_file", { path: "../../../hello.txt", worktree: "a" })).toBe(`Error! Error: ../../../hello.txt is outside the workspace (${wt(ws.dir, "a")})`);
    expect(await run("write_file", { path: `${ws.dir}/escape.txt`, content: "x", worktree: "a" })).toMatch(/is outside the workspace \(.*\.agent\/worktrees\/a\)$/);
    expect(readdirSync(ws.dir).sort()).toEqual([".agent", ".git", "hello.txt"]);
  });

  it("the person's approval prompt names the worktree", async () => {
    alwaysAllowed.clear();
    const screen = new PassThrough();
    let shown = "";
    screen.on("data", (chunk) => (shown += chunk));
    const printed: string[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => void printed.push(args.join(" "));
    try {
      useTerminal(scriptedTerminal(["y"], screen as unknown as NodeJS.WriteStream));
      expect(await run("write_file", { path: "notes.md", content: "x", worktree: "a" })).toBe("Wrote 1 bytes to notes.md");
    } finally {
      console.log = log;
    }
    expect(printed.join("\n")).toContain("Create notes.md?   (in worktree a)");
    expect(printed.join("\n")).toContain("> WriteFile notes.md   (in worktree a)");
    // A name that will be refused is refused before the person is asked about it.
    printed.length = 0;
    console.log = (...args: unknown[]) => void printed.push(args.join(" "));
    try {
      useTerminal(scriptedTerminal(["y", "y"], screen as unknown as NodeJS.WriteStream));
      expect(await run("worktree_create", { name: "../x" })).toMatch(/^Error! Error: "\.\.\/x" cannot be a worktree's name/);
      expect(await run("worktree_remove", { name: "-f" })).toMatch(/^Error! Error: "-f" cannot be a worktree's name/);
    } finally {
      console.log = log;
    }
    expect(printed.join("\n")).not.toMatch(/(Create|Remove) the worktree/);
  });
});

describe("s20 teammates in worktrees", () => {
  const ws = useRepo();
  const serve = useReplay();
  const stateOf = (name: string) => team.teamList().find((mate) => mate.name === name)?.state;
  const as = (agent: string, message: ReturnType<typeof reply.text>) => ({ ...message, agent });

  it("a teammate whose in_progress task has a worktree works in it: its root, its system prompt, its core tool calls", async () => {
    await task("In a worktree");
    await task("In the main checkout");
    await run("worktree_create", { name: "w", task_id: "1" });
    const replay = serve(
      scenarioOf([
        as("alice", reply.tools([{ name: "task_update", input: { task_id: "1", status: "in_progress", owner: "alice" } }])),
        as("alice", reply.tools([{ name: "write_file", input: { path: "done.txt", content: "alice" } }, { name: "bash", input: { command: "pwd" } }])),
        as("alice", reply.text("Done.")),
        as("bob", reply.tools([{ name: "task_update", input: { task_id: "2", status: "in_progress", owner: "bob" } }])),
        as("bob", reply.tools([{ name: "write_file", input: { path: "bob.txt", content: "bob" } }])),
        as("bob", reply.text("Done.")),
      ]),
    );
    expect(await run("spawn_teammate", { name: "alice", prompt: "Take task 1." })).toMatch(/^alice has joined the team/);
    expect(await run("spawn_teammate", { name: "bob", prompt: "Take task 2." })).toMatch(/^bob has joined the team/);
    expect(await eventually(() => stateOf("alice") === "idle" && stateOf("bob") === "idle")).toBe(true);
    expect(readFileSync(path.join(wt(ws.dir, "w"), "done.txt"), "utf8")).toBe("alice");
    expect(existsSync(path.join(ws.dir, "done.txt"))).toBe(false);
    expect(readFileSync(path.join(ws.dir, "bob.txt"), "utf8")).toBe("bob");
    const alices = replay.requests.filter((request) => String(request.system).includes("Your name is alice."));
    expect(String(alices[0].system)).toContain(`working in ${ws.dir}.`); // no task yet: the main checkout
    expect(String(alices[1].system)).toContain(`working in ${wt(ws.dir, "w")}.`);
    expect(resultText(alices[2].messages.at(-1)!.content.at(-1) as never)).toBe(`${wt(ws.dir, "w")}\n`);
  });
});

describe("s20 the demo", () => {
  const ws = useWorkspace();
  usePrinted();
  afterEach(() => stage.prepareReplay());

  it("replays: two tasks, a worktree each, two teammates editing each in its own; the main checkout untouched; the worktrees removed, their branches kept", async () => {
    const scenario = loadScenario("s20");
    const session = await replayScenario(stage, scenario, { workspace: ws.dir });
    expectWholeSession("s20", session, scenario);
    expect(readFileSync(path.join(ws.dir, "hello.py"), "utf8")).toBe(scenario.files!["hello.py"]);
    expect(existsSync(path.join(ws.dir, "NOTES.md"))).toBe(false);
    expect(gitIn(ws.dir, "show", "wt/greet:hello.py")).toContain('def greet(name="world"):');
    expect(gitIn(ws.dir, "show", "wt/notes:NOTES.md")).toContain("# Notes");
    expect(gitIn(ws.dir, "worktree", "list").split("\n")).toHaveLength(1);
    expect(events(ws.dir).map((e) => `${e.event} ${e.name}`)).toEqual(["create greet", "bind greet", "create notes", "bind notes", "remove greet", "remove notes"]);
    expect(team.readBoard(ws.dir).map((t) => `${t.id} ${t.status} ${t.owner}`)).toEqual(["1 completed alice", "2 completed bob"]);
  });
});
