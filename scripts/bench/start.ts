// How soon a stage answers: each stage file run as a learner runs it (node_modules/.bin/tsx
// agents/sNN_*.ts) in an empty temporary folder, with no key and TMPDIR pointing at a
// temporary folder, so it replays its demo offline. Two times count: the first line on the
// screen, and the end of the replay. `tsx -e ''` and `node -e ''`, run the same way, are the
// floor: the time to start Node, and Node with the TypeScript loader.
//
// tsx keeps what it compiled in TMPDIR, so the runs of one command share a TMPDIR: the first
// run compiles the stage (a learner's first start), and the runs after it start as every
// later start does.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export interface StartTimes {
  /** Milliseconds until the first line was printed (undefined: nothing was printed). */
  firstLineMs?: number;
  /** Milliseconds until the process ended. */
  endMs: number;
  code: number | null;
}

/**
 * Run `command args` once in a fresh empty folder, timing its first line and its end. With
 * `untilFirstLine`, the run is ended at its first line (its end is then not a figure).
 */
export function timeStart(command: string, args: string[], { timeoutMs = 60_000, untilFirstLine = false, tmp = "" } = {}): Promise<StartTimes> {
  const cwd = mkdtempSync(path.join(os.tmpdir(), "workbook-bench-cwd-"));
  const ownTmp = tmp === "";
  if (ownTmp) tmp = mkdtempSync(path.join(os.tmpdir(), "workbook-bench-tmp-"));
  const env: Record<string, string | undefined> = { ...process.env, TMPDIR: tmp };
  for (const name of ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "MODEL_ID"]) delete env[name];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let firstLineMs: number | undefined;
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (chunk: Buffer) => {
      if (firstLineMs === undefined && chunk.includes(10)) {
        firstLineMs = performance.now() - started;
        // SIGTERM: the stage ends through its exit handlers, so what it started ends too.
        if (untilFirstLine) child.kill("SIGTERM");
      }
    });
    child.stderr.resume();
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      const endMs = performance.now() - started;
      clearTimeout(timer);
      rmSync(cwd, { recursive: true, force: true });
      if (ownTmp) rmSync(tmp, { recursive: true, force: true });
      resolve({ firstLineMs, endMs, code });
    });
  });
}
