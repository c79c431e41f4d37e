// Running a shell command for a tool, and making sure nothing it started outlives it.
//
// What `execSync(command)` or a plain `spawn` gets wrong, and what this does instead (docs:
// Under the hood, "Processes"):
// - a command that reads its input (`cat`, `read x`, a prompt) waits for ever. Here stdin is
//   /dev/null: it reads nothing and goes on.
// - killing the shell at the time limit leaves its children running: `sleep 1000 &`, a server
//   started by a test script, a daemon that left the process group with `setsid`. Here each
//   command runs in its own process group, and a mark in its environment follows everything
//   it starts, so a time limit, Ctrl-C or the end of the program ends all of it.
// - waiting for the pipes to close hangs when a background job keeps a copy of them; waiting
//   only for the shell's exit loses output still in the pipes. Here the call ends when the
//   pipes close, or 50 ms after the exit and one more turn of the event loop.
// - endless output fills memory: the caller hands in a sink that keeps what it can
//   (HeadAndTail, or s07's result file).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";

/** Where a command's output goes as it arrives (both streams, as a terminal shows them). */
export interface OutputSink {
  add(chunk: Buffer): void;
  /** What was kept so far, for an error that ends the command. */
  text(): string;
}

/** Whether the process table (/proc) is read to find what a command started. Tests turn it off, as on macOS. */
export const PROCESS_TABLE = { readable: process.platform === "linux" };

/** How to run a command: where, for how long, where its output goes. */
export interface CommandOptions {
  cwd: string;
  /** The time limit, in milliseconds. */
  timeoutMs: number;
  /** stdout, and stderr too unless `errors` is given. */
  output: OutputSink;
  /** stderr on its own (a discovery command's stdout is its answer, its stderr the reason it failed). */
  errors?: OutputSink;
  /** Words after the command, passed as "$@": a tool's name is never read as shell code. */
  args?: string[];
  /** What the command reads on stdin; without it, stdin is /dev/null. */
  input?: string;
  signal?: AbortSignal;
  /**
   * Called once the command has started, with a function that ends it and everything it
   * started, also after the shell has exited (s18's kill_task: what a finished task left
   * running ends too). Until then, the time limit, the signal or the program's end does it.
   */
  onStart?: (end: () => void) => void;
}

/**
 * Run a command with bash to its end, its time limit or the signal, and resolve to its exit
 * code (null: ended by a signal). It rejects at the time limit or on the signal, after ending
 * the command and everything it started, with the output so far in the message.
 */
export function runCommand(command: string, options: CommandOptions): Promise<number | null> {
  const { cwd, timeoutMs, output, errors = output, args = [], input, signal } = options;
  return new Promise((resolve, reject) => {
    // A signal given already fires no "abort" event: the command would run to its end.
    if (signal?.aborted) return reject(new Error("cancelled by the user; the command was not started"));
    // #region spawn
    // stdin is /dev/null unless there is input, so `cat` or `read x` ends at once. `detached`
    // puts the command in its own process group; the mark in its environment follows
    // whatever it starts. --norc: a bash whose stdin is a socket (as Node's pipes are) may
    // read ~/.bashrc as if it were run over ssh.
    const mark = newCommandMark();
    const script = args.length > 0 ? `${command} "$@"` : command;
    const child = spawn("bash", ["--norc", "-c", script, "bash", ...args], {
      cwd,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      detached: true,
      env: { ...withoutCredentials(process.env), [COMMAND_MARK]: mark },
    });
    if (child.pid) commandGroups.add(child.pid);
    if (child.pid) options.onStart?.(() => endProcesses(`${mark}\0`, [child.pid!]));
    if (child.stdin) {
      child.stdin.on("error", () => {}); // a command that never reads its input
      child.stdin.end(input);
    }
    // #endregion spawn
    // Bytes as they come. An event handler has no caller to throw to: a sink that fails (a
    // full disk) ends this command, not the program.
    const take = (sink: OutputSink) => (chunk: Buffer) => {
      try {
        sink.add(chunk);
      } catch (error) {
        clearTimeout(timer);
        endProcesses(`${mark}\0`, [child.pid!]);
        reject(error);
      }
    };
    child.stdout!.on("data", take(output));
    child.stderr!.on("data", take(errors));
    // #region time-limit
    const stop = (why: string) => {
      clearTimeout(timer);
      endProcesses(`${mark}\0`, [child.pid!]);
      const text = output.text();
      reject(new Error(`${why}; the command and everything it started were ended${text ? `. Output so far:\n${text}` : ", and it printed nothing"}`));
    };
    const timer = setTimeout(() => stop(`timed out after ${timeoutMs / 1000}s`), timeoutMs);
    const onAbort = () => stop("cancelled by the user");
    signal?.addEventListener("abort", onAbort, { once: true });
    // #endregion time-limit
    child.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      reject(error.code === "ENOENT" && error.syscall?.startsWith("spawn") ? bashMissing() : error);
    });
    // #region exit-close
    // "exit", then "close" or 50 ms: a background child (`sleep 30 &`) may hold the pipes open
    // for long after the shell is done. Output still in the pipes is read until they close, or
    // for 50 ms and then one more turn of the event loop (when the program is busy, the timer
    // can run before the loop reads what is waiting); the background child runs on, until its
    // command's time is up or the program ends.
    child.on("exit", (code) => {
      timer.unref(); // it still ends what the command left running, without keeping the program alive
      signal?.removeEventListener("abort", onAbort);
      let finished = false;
      const done = () => {
        if (finished) return;
        finished = true;
        clearTimeout(grace);
        child.stdout!.destroy();
        child.stderr!.destroy();
        child.unref();
        resolve(code);
      };
      const grace = setTimeout(() => setImmediate(done), 50);
      child.once("close", done);
    });
    // #endregion exit-close
  });
}

/** `spawn bash ENOENT` says nothing a learner can act on. */
function bashMissing(): Error {
  const where =
    process.platform === "win32"
      ? "On Windows, run the workbook inside WSL or Git Bash (see getting started), where bash is there."
      : "Install bash with your system's package manager.";
  return new Error(`bash was not found on PATH, so no command can run. ${where}`);
}

// #region marks
// Nothing a command starts may outlive it: not a background job (`sleep 1000 &`), not a
// process that leaves the command's process group (`setsid`, a daemon). Every process a
// command starts inherits its environment, so each command gets a mark there; at a timeout
// the command's marked processes end, and when the program ends, all of them do. Finding a
// mark reads /proc, which Linux has; elsewhere the command's process group is what ends.
const COMMAND_MARK = "AGENT_WORKBOOK_COMMAND";
const THIS_RUN = randomBytes(4).toString("hex");
const commandGroups = new Set<number>();
let commandsRun = 0;
const newCommandMark = () => `${THIS_RUN}-${++commandsRun}`;
process.on("exit", () => endAllCommands());
// #endregion marks

/**
 * The keys the agent talks to its model with are the agent's, not its commands': a command a
 * project suggests (or a hook it ships) must not be able to read them and send them elsewhere.
 */
export const CREDENTIALS = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"];

export function withoutCredentials(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !CREDENTIALS.includes(name)));
}

/**
 * A mark for a process the caller starts itself (s08's MCP servers): put `env` into its
 * environment, and endProcesses(`${mark}\0`, []) ends it and all it started. The program's
 * exit ends every marked process as it ends every command.
 */
export function newProcessMark(): { mark: string; env: Record<string, string> } {
  const mark = newCommandMark();
  return { mark, env: { [COMMAND_MARK]: mark } };
}

// #region end-processes
/** End these process groups, then every process whose mark starts with `mark`, until none is left. */
export function endProcesses(mark: string, groups: Iterable<number>): void {
  const kill = (pid: number) => {
    try {
      process.kill(pid, "SIGKILL");
    } catch {} // it has ended already
  };
  for (const group of groups) kill(-group);
  // A few rounds: a process may start another while the first ones are being ended.
  for (let round = 0; round < 5; round++) {
    const marked = markedProcesses(`\0${COMMAND_MARK}=${mark}`);
    if (marked.length === 0) return;
    marked.forEach(kill);
  }
}

/** End every process any command of this program started: the program is ending (or a test is done). */
export function endAllCommands(): void {
  if (commandsRun > 0) endProcesses(`${THIS_RUN}-`, commandGroups);
}

/** The processes whose environment holds `needle` (Linux /proc; nothing elsewhere). */
function markedProcesses(needle: string): number[] {
  if (!PROCESS_TABLE.readable) return [];
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)
    .filter((pid) => {
      try {
        return `\0${readFileSync(`/proc/${pid}/environ`, "latin1")}`.includes(needle);
      } catch {
        return false; // gone already, or another user's
      }
    })
    .map(Number);
}
// #endregion end-processes
