// The bash tool's edge cases, run against every stage's own copy of it: the stages repeat the
// code on purpose, and each copy must behave the same. What takes waiting (a time limit, the
// end of a program) runs for every stage at once, so this file's time does not grow with the
// number of stages. Processes are checked by their ids, as the kernel knows them.
import childProcess from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { setTimeout as realSleep } from "node:timers/promises";
import { describe, expect, it, vi } from "vitest";
import { eventually, isRunning, killAll, runProgram, stagesWithTool, toolOf, TSX_LOADER, useWorkspace } from "./helpers.ts";

const stages = await stagesWithTool("bash");

/** Hold up the event loop for `ms` milliseconds, as long work would, without using the processor. */
function holdUpFor(ms: number) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe.each(stages)("%s bash", (_stage, file) => {
  const workspace = useWorkspace();
  const bash = (input: Record<string, unknown>) => toolOf(file, "bash").then((tool) => tool(input));

  it("runs in the workspace", async () => {
    expect((await bash({ command: "pwd" })).trim()).toBe(workspace.dir);
  });

  it("closes stdin, so cat and read return at once", async () => {
    const started = Date.now();
    expect(await bash({ command: "cat" })).toBe("(no output)");
    expect(await bash({ command: 'read x; echo "got:[$x]"' })).toBe("got:[]\n");
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("reports a non-zero exit code, and says (no output) when there is none", async () => {
    expect(await bash({ command: "exit 3" })).toBe("(no output)\n[exit code 3]");
    expect(await bash({ command: "echo oops >&2; exit 1" })).toBe("oops\n[exit code 1]");
  });

  it("returns when the shell exits, and the background job it left runs on", async () => {
    const started = Date.now();
    const pid = Number(await bash({ command: "sleep 1000 & echo $!" }));
    try {
      expect(Date.now() - started).toBeLessThan(3000);
      // Not ended early: it lives until its command's time limit or the program's end.
      expect(isRunning(pid)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(isRunning(pid)).toBe(true);
    } finally {
      killAll([pid]);
    }
  });

  it("returns once the output ends, without waiting out the 50 ms kept for a background job's pipes", async () => {
    // With the program's timers stopped, only the end of the output (the pipes' close) can end
    // the call; a real timer, which the fake ones do not touch, says if it did not.
    const deadline = new AbortController();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const late = realSleep(5000, "still waiting", { signal: deadline.signal }).catch(() => "");
      expect(await Promise.race([bash({ command: "echo one; (sleep 0.1; echo two) & wait" }), late])).toBe("one\ntwo\n");
    } finally {
      vi.useRealTimers();
      deadline.abort();
    }
  });

  it("keeps output waiting in the pipes when the 50 ms run out while the program is held up", async () => {
    // The program is held up for 400 ms from the moment the shell exits, so the 50 ms are over
    // before it can read again, and by then a background job's line waits in the pipe. (The
    // stages import spawn by name: syncBuiltinESMExports carries the stand-in over to that import.)
    const realSpawn = childProcess.spawn;
    const spawn = vi.spyOn(childProcess, "spawn").mockImplementation(((...args: Parameters<typeof childProcess.spawn>) => {
      const child = realSpawn(...args);
      // After the stage's own "exit" listener, which it adds as soon as spawn returns.
      process.nextTick(() => child.once("exit", () => holdUpFor(400)));
      return child;
    }) as typeof childProcess.spawn);
    syncBuiltinESMExports();
    try {
      expect(await bash({ command: "(sleep 0.1; echo late) &" })).toBe("late\n");
      expect(spawn).toHaveBeenCalled();
    } finally {
      spawn.mockRestore();
      syncBuiltinESMExports();
    }
  });

  it("takes a timeout from 1 to 600 seconds, and null or nothing as the default", async () => {
    for (const timeout of [1, 600, null, undefined]) expect(await bash({ command: "echo ok", timeout }), String(timeout)).toBe("ok\n");
  });

  it("refuses a timeout that is not a whole number from 1 to 600, naming timeout, and runs nothing", async () => {
    for (const timeout of [0, -1, 1.5, 601, 10_000, "abc", "5", {}, [], true]) {
      await expect(bash({ command: "touch ran", timeout }), JSON.stringify(timeout)).rejects.toThrow(/"timeout" must be/);
    }
    expect(existsSync("ran")).toBe(false);
  });

  it("sends the model at most 30,000 characters, head and tail, with a marker of what was cut", async () => {
    const output = await bash({ command: "yes | head -c 10000000; echo; echo THE-END" });
    expect(output.length).toBeLessThanOrEqual(30_000);
    expect(output.startsWith("y\ny\n")).toBe(true);
    expect(output).toMatch(/\[\d+ characters cut from the middle, 10000009 in all\]/);
    expect(output.trimEnd().endsWith("THE-END")).toBe(true);
  });

  it("refuses what the denylist names, with a clear message", async () => {
    // Harmless if the denylist ever broke: the list is matched anywhere in the command.
    await expect(bash({ command: "echo sudo ls" })).rejects.toThrow(/refused.*sudo/);
    await expect(bash({ command: "echo rm -rf /" })).rejects.toThrow(/refused/);
  });

  it("refuses a missing command", async () => {
    await expect(bash({})).rejects.toThrow(/"command" (must be a string|is required)/);
  });
});

describe("bash time limits, every stage at once", () => {
  useWorkspace();
  // A label may name several stages that share the code ("s06 s08"): one file name per label.
  const pidFile = (id: string) => `${id.replaceAll(" ", "-")}.pids`;
  const pidsIn = (file: string) => readFileSync(file, "utf8").trim().split(/\s+/).map(Number);

  it("at the time limit ends the command, its group and what left the group (setsid), and after it what ran in the background", async () => {
    const started: { id: string; job: string; pid: number }[] = [];
    try {
      const outcomes = await Promise.all(
        stages.map(async ([id, file]) => {
          const bash = await toolOf(file, "bash");
          // 1. A command that runs past its limit, with a child in its group and one that left it.
          const timedOut = bash({
            command: `echo before; setsid sleep 1000 > /dev/null 2>&1 & echo $! > ${pidFile(id)}; sleep 1000 & echo $! >> ${pidFile(id)}; wait`,
            timeout: 1,
          }).then(
            () => "returned",
            (error: Error) => error.message,
          );
          // 2. A command that returns at once, leaving a job in the background.
          const background = Number(await bash({ command: "sleep 1000 > /dev/null 2>&1 & echo $!", timeout: 1 }));
          started.push({ id, job: "background job", pid: background });
          const runsOn = isRunning(background);
          // 3. No timeout given: the default, far more than the second this one takes.
          const untimed = bash({ command: "sleep 1.2; echo slept", timeout: null }).catch((error: Error) => error.message);
          return { id, timedOut: await timedOut, background, runsOn, untimed: await untimed };
        }),
      );
      for (const { id } of outcomes) {
        const [detached, inGroup] = pidsIn(pidFile(id));
        started.push({ id, job: "setsid job", pid: detached }, { id, job: "child in the group", pid: inGroup });
      }
      // Soft: each stage's outcome is reported, not only the first that differs.
      for (const outcome of outcomes) {
        expect.soft(outcome.timedOut, outcome.id).toMatch(/^timed out after 1s; [\s\S]*Output so far:\nbefore\n/);
        expect.soft(outcome.runsOn, `${outcome.id}: the background job right after its command returned`).toBe(true);
        expect.soft(outcome.untimed, outcome.id).toBe("slept\n");
      }
      const alive = () => started.filter((job) => isRunning(job.pid));
      expect(await eventually(() => alive().length === 0, 1500), `still running: ${JSON.stringify(alive())}`).toBe(true);
    } finally {
      killAll(started.map((job) => job.pid));
    }
  });
});

describe("bash when the program ends", () => {
  const workspace = useWorkspace();

  // A program (every stage in one process, as a person would run one) that starts a background
  // job and a setsid job with each stage's bash, says their ids, and ends.
  const PROGRAM = `
    import { readFileSync } from "node:fs";
    // Every stage in one process: each adds its exit handler, more than Node's default warning limit.
    process.setMaxListeners(0);
    const running = (pid) => {
      try {
        const stat = readFileSync("/proc/" + pid + "/stat", "utf8");
        return !["Z", "X"].includes(stat[stat.lastIndexOf(")") + 2]);
      } catch {
        return false;
      }
    };
    const started = [];
    for (const file of JSON.parse(process.argv[1])) {
      const stage = await import(file);
      const bash = (input) =>
        stage.TOOL_HANDLERS ? stage.TOOL_HANDLERS.bash(input) : stage.registry.getTool("bash").execute(input, new AbortController().signal).then((r) => r.llmContent);
      for (const command of ["sleep 1000 > /dev/null 2>&1 & echo $!", "setsid sleep 1000 > /dev/null 2>&1 & echo $!"]) {
        const pid = Number(await bash({ command }));
        started.push({ file, command, pid, running: running(pid) });
      }
    }
    console.log(JSON.stringify(started));`;

  it("ends every process its commands started: background jobs and setsid jobs, by process id", async () => {
    let started: { file: string; command: string; pid: number; running: boolean }[] = [];
    try {
      const run = await runProgram(
        process.execPath,
        ["--import", TSX_LOADER, "--input-type=module", "-e", PROGRAM, JSON.stringify(stages.map(([, file]) => file))],
        { cwd: workspace.dir, timeoutMs: 20_000 },
      );
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      started = JSON.parse(run.stdout);
      expect(started).toHaveLength(2 * stages.length);
      // Each was running when the program ended, and none is now.
      expect(started.filter((job) => !job.running)).toEqual([]);
      const alive = () => started.filter((job) => isRunning(job.pid));
      expect(await eventually(() => alive().length === 0, 1500), JSON.stringify(alive())).toBe(true);
    } finally {
      killAll(started.map((job) => job.pid));
    }
  });
});
