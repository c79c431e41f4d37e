// The bash tool as the model uses it, once per implementation group of the stages: where it
// runs, its arguments (the timeout's range and null), the denylist, and what the model reads
// back (the exit code, "(no output)", at most 30,000 characters). How a command runs and that
// nothing it starts outlives it is lib/machinery/processes.ts, tested once in
// tests/machinery/processes.test.ts; here one real-process test shows that each group's tool
// hands that code its time limit and, from s06, its signal, so a stage that dropped either fails.
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { eventually, isRunning, killAll, stagesWithTool, toolOf, useWorkspace } from "./helpers.ts";

const stages = await stagesWithTool("bash");

/** What `work` settles to, or a note that it was still running after `ms`: a tool that ignored its limit fails at once. */
function within<T>(work: Promise<T>, ms: number): Promise<T | string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`still running after ${ms / 1000}s`), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

describe.each(stages)("%s bash", (_stage, file) => {
  const workspace = useWorkspace();
  const bash = (input: Record<string, unknown>) => toolOf(file, "bash").then((tool) => tool(input));

  it("runs in the workspace", async () => {
    expect((await bash({ command: "pwd" })).trim()).toBe(workspace.dir);
  });

  it("reports a non-zero exit code, and says (no output) when there is none", async () => {
    expect(await bash({ command: "echo fine" })).toBe("fine\n");
    expect(await bash({ command: "exit 3" })).toBe("(no output)\n[exit code 3]");
    expect(await bash({ command: "echo oops >&2; exit 1" })).toBe("oops\n[exit code 1]");
    expect(await bash({ command: "echo last; kill -KILL $$" })).toBe("last\n[exit code killed]");
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

describe("bash hands runCommand its time limit and signal, every group at once", () => {
  useWorkspace();
  // A label may name several stages that share the code ("s06 s08"): one file name per label.
  const pidFile = (id: string, what: string) => `${id.replaceAll(" ", "-")}.${what}.pids`;
  const pidsIn = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split(/\s+/).filter(Boolean).map(Number) : []);
  // A command that runs on, with a child in its group and one that left it (setsid).
  const runsOn = (file: string) => `echo before; setsid sleep 1000 > /dev/null 2>&1 & echo $! > ${file}; sleep 1000 > /dev/null 2>&1 & echo $! >> ${file}; wait`;
  type Execute = (params: Record<string, unknown>, signal: AbortSignal) => Promise<unknown>;

  it("at the timeout given ends the command, its group and what left the group; null is the default; from s06 the signal (Ctrl-C) does the same", async () => {
    const started: { id: string; job: string; pid: number }[] = [];
    try {
      const outcomes = await Promise.all(
        stages.map(async ([id, file]) => {
          const bash = await toolOf(file, "bash");
          const failure = (running: Promise<unknown>) =>
            within(
              running.then(() => "returned", (error: Error) => error.message),
              5000,
            );
          // 1. Past its time limit of 1 s.
          const timedOut = failure(bash({ command: runsOn(pidFile(id, "timed-out")), timeout: 1 }));
          // 2. No timeout given: the default, far more than the second this one takes.
          const untimed = within(
            bash({ command: "sleep 1.2; echo slept", timeout: null }).catch((error: Error) => error.message),
            5000,
          );
          // 3. From s06 a tool's execute takes a signal: Ctrl-C, given once both jobs run. Its
          // own time limit is far away, so only the signal can end it in time.
          const execute = ((await import(file)) as { registry?: { getTool(name: string): { execute: Execute } | undefined } }).registry?.getTool("bash")?.execute;
          let cancelled: string | undefined;
          if (execute) {
            const controller = new AbortController();
            const running = failure(execute({ command: runsOn(pidFile(id, "cancelled")), timeout: 60 }, controller.signal));
            await eventually(() => pidsIn(pidFile(id, "cancelled")).length === 2, 5000);
            controller.abort();
            cancelled = await running;
          }
          return { id, timedOut: await timedOut, untimed: await untimed, cancelled, hasSignal: Boolean(execute) };
        }),
      );
      for (const { id, hasSignal } of outcomes) {
        for (const what of hasSignal ? ["timed-out", "cancelled"] : ["timed-out"]) {
          const [detached, inGroup] = pidsIn(pidFile(id, what));
          started.push({ id, job: `${what}: setsid job`, pid: detached }, { id, job: `${what}: child in the group`, pid: inGroup });
        }
      }
      // Soft: each group's outcome is reported, not only the first that differs.
      for (const outcome of outcomes) {
        expect.soft(outcome.timedOut, outcome.id).toMatch(/^timed out after 1s; the command and everything it started were ended\. Output so far:\nbefore\n/);
        expect.soft(outcome.untimed, outcome.id).toBe("slept\n");
        if (outcome.hasSignal) expect.soft(outcome.cancelled, outcome.id).toMatch(/^cancelled by the user; the command and everything it started were ended/);
      }
      // From s06 on, and the capstone: each has a signal to hand over.
      expect(outcomes.filter((outcome) => outcome.hasSignal).map((outcome) => outcome.id)).toEqual(stages.map(([id]) => id).filter((id) => !/^s0[1-5]\b/.test(id)));
      expect(started.every((job) => job.pid > 0), JSON.stringify(started)).toBe(true);
      const alive = () => started.filter((job) => isRunning(job.pid));
      expect(await eventually(() => alive().length === 0, 1500), `still running: ${JSON.stringify(alive())}`).toBe(true);
    } finally {
      killAll(started.map((job) => job.pid).filter((pid) => pid > 0));
    }
  });
});
