// One terminal for the whole program. The stage's prompt and a tool that asks the person
// something (s05's ask_user) read lines from the same place, one question at a time, so
// they never both print a prompt and no typed line is swallowed.
import readline from "node:readline";

export interface Terminal {
  /** True when a person can answer: a real terminal, or a replay typing recorded answers. */
  readonly hasPerson: boolean;
  /**
   * Show `prompt`, then read one line. null means no one will answer (end of input, Ctrl-C).
   * `fresh`: at a real terminal, only a line typed after the prompt appears answers it; a
   * line typed earlier (while the agent worked) waits for the next ask, the stage's prompt.
   */
  ask(prompt: string, options?: { fresh?: boolean }): Promise<string | null>;
  close(): void;
}

/** Lines from stdin: a person at a terminal, or lines piped in (then hasPerson is false). */
export function lineTerminal(
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WriteStream = process.stdout,
): Terminal {
  const rl = readline.createInterface({ input, output, terminal: Boolean(input.isTTY && output.isTTY) });
  const queued: string[] = [];
  let waiting: ((line: string | null) => void) | undefined;
  let ended = false;

  // A terminal shows what the person types; piped lines are echoed so the transcript reads well.
  const echo = (line: string) => {
    if (!input.isTTY) output.write(`${line}\n`);
    return line;
  };
  const answer = (line: string | null) => {
    const resolve = waiting;
    waiting = undefined;
    resolve?.(line);
  };
  // Piped input arrives all at once; keep lines until someone asks, so none is lost.
  rl.on("line", (line) => (waiting ? answer(echo(line)) : queued.push(line)));
  rl.on("close", () => {
    ended = true;
    answer(null);
  });
  rl.on("SIGINT", () => {
    output.write("^C");
    // Forget what was typed before Ctrl-C, or it would turn up at the next prompt. clearLine
    // is readline's own (Node's REPL calls it on Ctrl-C); it also ends the line on screen.
    (rl as unknown as { clearLine(): void }).clearLine();
    // Ctrl-C while a question waits means "no answer"; otherwise it stops what is running
    // (s06 on) or, when nothing can be stopped, ends the program.
    if (waiting) answer(null);
    else interrupt();
  });

  return {
    hasPerson: Boolean(input.isTTY),
    ask(prompt, { fresh = false } = {}) {
      rl.setPrompt(prompt);
      rl.prompt();
      // A question must not be answered by what the person typed before seeing it.
      const typedAhead = fresh && input.isTTY ? [] : queued;
      if (typedAhead.length > 0) return Promise.resolve(echo(typedAhead.shift()!));
      if (ended) {
        output.write("\n");
        return Promise.resolve(null);
      }
      return new Promise((resolve) => (waiting = resolve));
    },
    close: () => rl.close(),
  };
}

/** A replay's person: types recorded lines as if at the keyboard; null once they run out. */
export function scriptedTerminal(lines: string[], output: NodeJS.WriteStream = process.stdout): Terminal {
  const left = [...lines];
  return {
    hasPerson: true,
    async ask(prompt) {
      output.write(prompt);
      const line = left.shift();
      if (line === undefined) {
        output.write("\n");
        return null;
      }
      await typeOut(line, output);
      output.write("\n");
      return line;
    },
    close() {},
  };
}

/** No one at all: every question is answered at once with null. */
export const nobody: Terminal = { hasPerson: false, ask: async () => null, close() {} };

/** Write text as if typed, when a person is watching; at once otherwise (tests, pipes). */
export async function typeOut(text: string, output: NodeJS.WriteStream = process.stdout): Promise<void> {
  if (!output.isTTY) {
    output.write(text);
    return;
  }
  const pause = Math.min(25, 1500 / Math.max(text.length, 1));
  for (const char of text) {
    output.write(char);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

let current: Terminal = nobody;

/** The terminal the running program uses; tools that ask the person go through it. */
export function terminal(): Terminal {
  return current;
}

/** Switch the program's terminal (the program does this at start; tests do it to script a person). */
export function useTerminal(next: Terminal): void {
  current = next;
}

const cancelOnInterrupt = new Set<() => void>();

/**
 * Run `work` so that Ctrl-C calls `cancel` instead of ending the program: from s06, Ctrl-C
 * while a tool runs cancels that tool and the agent goes on.
 */
export async function cancellable<T>(cancel: () => void, work: () => Promise<T>): Promise<T> {
  cancelOnInterrupt.add(cancel);
  try {
    return await work();
  } finally {
    cancelOnInterrupt.delete(cancel);
  }
}

/** What Ctrl-C does when no question waits: cancel the work that can be cancelled, or end the program. */
export function interrupt(): void {
  if (cancelOnInterrupt.size === 0) process.exit(130);
  for (const cancel of cancelOnInterrupt) cancel();
}
