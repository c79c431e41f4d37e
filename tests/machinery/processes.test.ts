// lib/machinery/processes.ts, called directly: how a command runs (bash -c, stdin closed or
// given, words passed as words) and when the call returns (the shell's exit, then the pipes'
// close or 50 ms), and that nothing a command starts outlives it: its time limit, the signal
// (Ctrl-C) and the end of the program end its process group, what left the group (setsid) and
// what it left in the background. Every stage's bash runs this code, so it is tested once here;
// tests/bash.test.ts keeps what each stage's tool adds. Processes are checked by their ids, as
// the kernel knows them.
import childProcess from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import os from "node:os";
import path from "node:path";
import { setTimeout as realSleep } from "node:timers/promises";
import { describe, expect, it, vi } from "vitest";
import { HeadAndTail } from "../../lib/machinery/head-and-tail.ts";
import { endAllCommands, PROCESS_TABLE, runCommand, type CommandOptions } from "../../lib/machinery/processes.ts";
import { eventually, isRunning, killAll, REPO_ROOT, runProgram, TSX_LOADER, useWorkspace } from "../helpers.ts";

const workspace = useWorkspace();

/** Run `command` in the workspace; its output (both streams, head and tail) and its exit code, or the error it ended with. */
async function run(command: string, options: Partial<CommandOptions> = {}): Promise<{ code: number | null; text: string }> {
  const output = new HeadAndTail(30_000);
  const code = await runCommand(command, { cwd: workspace.dir, timeoutMs: 10_000, output, ...options });
  return { code, text: output.text() };
}

/** The rejection's message of a run that must fail. */
const failureOf = (command: string, options: Partial<CommandOptions> = {}) =>
  run(command, options).then(
    (result) => `returned ${JSON.stringify(result)}`,
    (error: Error) => error.message,
  );

/** The process ids a command wrote to `file`, once it has written `count` of them. */
async function pidsIn(file: string, count: number): Promise<number[]> {
  const read = () => (existsSync(file) ? readFileSync(file, "utf8").trim().split(/\s+/).filter(Boolean).map(Number) : []);
  await eventually(() => read().length >= count, 5000);
  return read();
}

/** Hold up the event loop for `ms` milliseconds, as long work would, without using the processor. */
function holdUpFor(ms: number) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe("runCommand: how a command runs", () => {
  it("runs in the folder given", async () => {
    expect(await run("pwd")).toEqual({ code: 0, text: `${workspace.dir}\n` });
  });

  // #region stdin-closed
  it("closes stdin, so cat and read return at once", async () => {
    const started = Date.now();
    expect(await run("cat")).toEqual({ code: 0, text: "" });
    expect(await run('read x; echo "got:[$x]"')).toEqual({ code: 0, text: "got:[]\n" });
    expect(Date.now() - started).toBeLessThan(3000);
  });
  // #endregion stdin-closed

  it("keeps the agent's own keys from the command: a project's command cannot read and send them", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-secret");
    vi.stubEnv("ANTHROPIC_AUTH_TOKEN", "bearer-secret");
    vi.stubEnv("OPENAI_API_KEY", "sk-openai-secret");
    vi.stubEnv("WORKBOOK_OTHER", "kept");
    try {
      expect(await run('echo "[$ANTHROPIC_API_KEY][$ANTHROPIC_AUTH_TOKEN][$OPENAI_API_KEY][$WORKBOOK_OTHER]"')).toEqual({ code: 0, text: "[][][][kept]\n" });
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("resolves to the exit code, and to null for a shell ended by a signal", async () => {
    expect(await run("exit 3")).toEqual({ code: 3, text: "" });
    expect(await run("echo oops >&2; exit 1")).toEqual({ code: 1, text: "oops\n" });
    expect(await run("kill -KILL $$")).toEqual({ code: null, text: "" });
  });

  it("passes args as words after the command, never as shell code, and input on stdin", async () => {
    // The args follow the command as "$@": here they reach f, which reads stdin first.
    const args = ["a b", "$(echo x)", "'; touch pwned #"];
    expect(await run('f() { cat; printf "%s|" "$@"; }; f', { args, input: "in:" })).toEqual({ code: 0, text: "in:a b|$(echo x)|'; touch pwned #|" });
    expect(existsSync("pwned")).toBe(false);
  });

  it("sends stderr to its own sink when one is given, and with stdout otherwise", async () => {
    const [output, errors] = [new HeadAndTail(1000), new HeadAndTail(1000)];
    expect(await runCommand("echo out; echo err >&2", { cwd: workspace.dir, timeoutMs: 10_000, output, errors })).toBe(0);
    expect([output.text(), errors.text()]).toEqual(["out\n", "err\n"]);
    const both = (await run("echo out; echo err >&2")).text;
    expect(both.split("\n").sort()).toEqual(["", "err", "out"]);
  });

  it("says bash is missing in words a learner can act on, not 'spawn bash ENOENT'", async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), "workbook-no-bash-"));
    const before = process.env.PATH;
    process.env.PATH = empty;
    try {
      const message = await failureOf("echo hi");
      expect(message).toMatch(/^bash was not found on PATH, so no command can run\. (Install bash|On Windows)/);
      expect(message).not.toMatch(/ENOENT/);
    } finally {
      process.env.PATH = before;
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("ends the command when its output sink fails (a full disk), with the sink's error", async () => {
    const output = {
      add(): void {
        throw new Error("no space left on device");
      },
      text: () => "",
    };
    const failing = runCommand("sleep 1000 > /dev/null 2>&1 & echo $! > job.pid; echo x; wait", { cwd: workspace.dir, timeoutMs: 10_000, output });
    await expect(failing).rejects.toThrow("no space left on device");
    const [job] = await pidsIn("job.pid", 1);
    try {
      expect(await eventually(() => !isRunning(job), 1500)).toBe(true);
    } finally {
      killAll([job]);
    }
  });
});

describe("runCommand: when the call returns", () => {
  it("returns when the shell exits, and the background job it left runs on", async () => {
    const started = Date.now();
    const { text } = await run("sleep 1000 > /dev/null & echo $!");
    const pid = Number(text);
    try {
      expect(Date.now() - started).toBeLessThan(3000);
      // Not ended early: it lives until its command's time limit or the program's end.
      expect(isRunning(pid)).toBe(true);
      await realSleep(100);
      expect(isRunning(pid)).toBe(true);
    } finally {
      killAll([pid]);
    }
  });

  it("is not held by a helper left in the background that keeps the pipes open (a discovery command's `sleep 60 & echo done`)", async () => {
    const [output, errors] = [new HeadAndTail(1000), new HeadAndTail(1000)];
    const started = Date.now();
    // As s08 runs a discovery command: stdout apart from stderr, and an empty input.
    const code = await runCommand("sleep 60 & echo $! > sleep.pid; echo done", { cwd: workspace.dir, timeoutMs: 10_000, output, errors, input: "" });
    const took = Date.now() - started;
    const [sleep] = await pidsIn("sleep.pid", 1);
    try {
      expect({ code, output: output.text(), errors: errors.text() }).toEqual({ code: 0, output: "done\n", errors: "" });
      expect(took).toBeLessThan(1000);
      expect(isRunning(sleep)).toBe(true);
      endAllCommands();
      expect(await eventually(() => !isRunning(sleep), 1500)).toBe(true);
    } finally {
      killAll([sleep]);
    }
  });

  it("returns once the output ends, without waiting out the 50 ms kept for a background job's pipes", async () => {
    // With the program's timers stopped, only the end of the output (the pipes' close) can end
    // the call; a real timer, which the fake ones do not touch, says if it did not.
    const deadline = new AbortController();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const late = realSleep(5000, "still waiting", { signal: deadline.signal }).catch(() => "");
      const output = new HeadAndTail(1000);
      const call = runCommand("echo one; (sleep 0.1; echo two) & wait", { cwd: workspace.dir, timeoutMs: 10_000, output }).then(() => output.text());
      expect(await Promise.race([call, late])).toBe("one\ntwo\n");
    } finally {
      vi.useRealTimers();
      deadline.abort();
    }
  });

  it("keeps output waiting in the pipes when the 50 ms run out while the program is held up", async () => {
    // The program is held up for 400 ms from the moment the shell exits, so the 50 ms are over
    // before it can read again, and by then a background job's line waits in the pipe. (lib
    // imports spawn by name: syncBuiltinESMExports carries the stand-in over to that import.)
    const realSpawn = childProcess.spawn;
    const spawn = vi.spyOn(childProcess, "spawn").mockImplementation(((...args: Parameters<typeof childProcess.spawn>) => {
      const child = realSpawn(...args);
      // After runCommand's own "exit" listener, which it adds as soon as spawn returns.
      process.nextTick(() => child.once("exit", () => holdUpFor(400)));
      return child;
    }) as typeof childProcess.spawn);
    syncBuiltinESMExports();
    try {
      expect(await run("(sleep 0.1; echo late) &")).toEqual({ code: 0, text: "late\n" });
      expect(spawn).toHaveBeenCalled();
    } finally {
      spawn.mockRestore();
      syncBuiltinESMExports();
    }
  });
});

describe("runCommand: nothing a command starts outlives it", () => {
  // A command that runs on, with a child in its process group and one that left it (setsid).
  const RUNS_ON = "echo before; setsid sleep 1000 > /dev/null 2>&1 & echo $! > jobs.pid; sleep 1000 > /dev/null 2>&1 & echo $! >> jobs.pid; wait";

  it("at the time limit ends the command, its group and what left the group (setsid), with the output so far", async () => {
    const started = Date.now();
    const message = await failureOf(RUNS_ON, { timeoutMs: 500 });
    const jobs = await pidsIn("jobs.pid", 2);
    try {
      expect(message).toBe("timed out after 0.5s; the command and everything it started were ended. Output so far:\nbefore\n");
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await eventually(() => jobs.every((pid) => !isRunning(pid)), 1500), `still running: ${jobs.filter(isRunning)}`).toBe(true);
    } finally {
      killAll(jobs);
    }
  });

  it("at the time limit says when the command printed nothing", async () => {
    expect(await failureOf("sleep 1000", { timeoutMs: 300 })).toBe("timed out after 0.3s; the command and everything it started were ended, and it printed nothing");
  });

  it("at its time limit ends what a command that returned left in the background", async () => {
    const { code, text } = await run("sleep 1000 > /dev/null 2>&1 & echo $!", { timeoutMs: 500 });
    const job = Number(text);
    try {
      expect(code).toBe(0);
      expect(isRunning(job)).toBe(true);
      expect(await eventually(() => !isRunning(job), 2000)).toBe(true);
    } finally {
      killAll([job]);
    }
  });

  it("onStart's end() ends a running command with all it started, and what a command that returned left running", async () => {
    let end = () => {};
    const running = run(RUNS_ON, { onStart: (given) => (end = given) }).then((result) => result.code);
    const jobs = await pidsIn("jobs.pid", 2);
    // A command that has returned: the background job it left runs on until end() (or its time limit, 10 s away).
    let endReturned = () => {};
    const returned = await run("sleep 1000 > /dev/null 2>&1 & echo $!", { onStart: (given) => (endReturned = given) });
    const left = Number(returned.text);
    try {
      expect(jobs.every(isRunning)).toBe(true);
      end();
      expect(await running).toBeNull(); // the shell too, by a signal
      expect(await eventually(() => jobs.every((pid) => !isRunning(pid)), 1500), `still running: ${jobs.filter(isRunning)}`).toBe(true);
      expect(returned.code).toBe(0);
      expect(isRunning(left)).toBe(true);
      endReturned();
      expect(await eventually(() => !isRunning(left), 1500)).toBe(true);
    } finally {
      killAll([...jobs, left]);
    }
  });

  it("without the process table (as on macOS), the time limit still ends the command's process group", async () => {
    const readable = PROCESS_TABLE.readable;
    PROCESS_TABLE.readable = false;
    let job = 0;
    try {
      const message = await failureOf("sleep 1000 > /dev/null 2>&1 & echo $!; wait", { timeoutMs: 300 });
      expect(message).toMatch(/^timed out after 0\.3s; the command and everything it started were ended\. Output so far:\n\d+\n$/);
      job = Number(message.split("\n")[1]);
      expect(await eventually(() => !isRunning(job), 1500)).toBe(true);
    } finally {
      PROCESS_TABLE.readable = readable;
      killAll([job]);
    }
  });

  it("on the signal (Ctrl-C) ends the command, its group and what left the group, 'cancelled by the user'", async () => {
    const controller = new AbortController();
    const output = new HeadAndTail(1000);
    const failing = runCommand(RUNS_ON, { cwd: workspace.dir, timeoutMs: 10_000, output, signal: controller.signal }).then(
      (code) => `returned ${code}`,
      (error: Error) => error.message,
    );
    const jobs = await pidsIn("jobs.pid", 2);
    try {
      // Ctrl-C once both jobs run and the first line has been read.
      expect(await eventually(() => output.text() === "before\n", 5000)).toBe(true);
      expect(jobs.every(isRunning)).toBe(true);
      controller.abort();
      expect(await failing).toBe("cancelled by the user; the command and everything it started were ended. Output so far:\nbefore\n");
      expect(await eventually(() => jobs.every((pid) => !isRunning(pid)), 1500), `still running: ${jobs.filter(isRunning)}`).toBe(true);
    } finally {
      killAll(jobs);
    }
  });

  it("runs nothing when the signal has already been given", async () => {
    const controller = new AbortController();
    controller.abort();
    const started = Date.now();
    expect(await failureOf("touch ran; sleep 5", { signal: controller.signal })).toBe("cancelled by the user; the command was not started");
    expect(Date.now() - started).toBeLessThan(2000);
    await realSleep(100);
    expect(existsSync("ran")).toBe(false);
  });

  it("endAllCommands ends a command still running, with its group and what left it", async () => {
    const running = failureOf(RUNS_ON, { timeoutMs: 10_000 });
    const jobs = await pidsIn("jobs.pid", 2);
    try {
      expect(jobs.every(isRunning)).toBe(true);
      endAllCommands();
      expect(await eventually(() => jobs.every((pid) => !isRunning(pid)), 1500), `still running: ${jobs.filter(isRunning)}`).toBe(true);
      expect(await running).toBe(`returned ${JSON.stringify({ code: null, text: "before\n" })}`);
    } finally {
      killAll(jobs);
    }
  });
});

// #region program-end
describe("runCommand when the program ends", () => {
  // A program, as a person would run one, that runs two commands through lib: each leaves a job
  // in the background (one in the command's group, one that left it with setsid) and returns.
  // It says the jobs' ids, and ends of itself: what the commands left running must not keep it
  // alive, and its end ends them. (A command still running is ended the same way: the program's
  // exit calls endAllCommands, tested above.)
  const PROGRAM = `
    import { readFileSync } from "node:fs";
    const { runCommand } = await import(process.argv[1]);
    const { HeadAndTail } = await import(process.argv[2]);
    const running = (pid) => {
      try {
        const stat = readFileSync("/proc/" + pid + "/stat", "utf8");
        return !["Z", "X"].includes(stat[stat.lastIndexOf(")") + 2]);
      } catch {
        return false;
      }
    };
    const started = [];
    for (const command of ["sleep 1000 > /dev/null 2>&1 & echo $!", "setsid sleep 1000 > /dev/null 2>&1 & echo $!"]) {
      const output = new HeadAndTail(1000);
      await runCommand(command, { cwd: process.cwd(), timeoutMs: 60000, output });
      const pid = Number(output.text());
      started.push({ command, pid, running: running(pid) });
    }
    console.log(JSON.stringify(started));`;
  const lib = (name: string) => path.join(REPO_ROOT, "lib", "machinery", name);

  it("ends every process its commands started: background jobs and setsid jobs, by process id", async () => {
    let started: { command: string; pid: number; running: boolean }[] = [];
    try {
      const program = await runProgram(
        process.execPath,
        ["--import", TSX_LOADER, "--input-type=module", "-e", PROGRAM, lib("processes.ts"), lib("head-and-tail.ts")],
        { cwd: workspace.dir, timeoutMs: 20_000 },
      );
      expect(program.stderr).toBe("");
      expect(program.code).toBe(0);
      started = JSON.parse(program.stdout);
      expect(started).toHaveLength(2);
      // Each was running when the program ended, and none is now.
      expect(started.filter((job) => !job.running)).toEqual([]);
      const alive = () => started.filter((job) => isRunning(job.pid));
      expect(await eventually(() => alive().length === 0, 1500), JSON.stringify(alive())).toBe(true);
    } finally {
      killAll(started.map((job) => job.pid));
    }
  });
});
// #endregion program-end
