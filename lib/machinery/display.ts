// How a tool call and its result look to the person at the terminal: short, dim, coloured
// only at a terminal, and never more than a few lines of a long result.
//
// (docs: Under the hood, "Display") A result shown whole floods the terminal: the person
// sees the last screen of a 10,000-line log and not what the agent did. Colour codes written
// into a pipe or a file are noise there. So every line shown is cut, a result shows its first
// lines and how many more there were, an error is shown whole (it says what went wrong), and
// colour is used only when stdout is a terminal.
import { createRequire } from "node:module";
import type { ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { clip } from "./head-and-tail.ts";

const colour = (code: number) => (text: string) => (process.stdout.isTTY ? `\x1b[${code}m${text}\x1b[0m` : text);
export const dim = colour(2);
export const green = colour(32);
export const red = colour(31);

export const indent = (text: string) => text.replace(/^/gm, "  ");

/** The first lines of a display, each kept short, and how many more there were. */
export function firstLines(text: string, count: number): string {
  const lines = text.trimEnd().split("\n");
  const shown = lines.slice(0, count).map((line) => clip(line, 200, "head"));
  return lines.length > count ? [...shown, `… (${lines.length - count} more lines)`].join("\n") : shown.join("\n");
}

/** The call as a person reads it: each argument by name, strings quoted, so where one ends shows. */
export function describeCall(call: ToolUseBlock): string {
  const args = Object.entries((call.input ?? {}) as Record<string, unknown>);
  return `${call.name}(${args.map(([name, value]) => `${name}: ${clip(JSON.stringify(value) ?? "undefined", 120, "head")}`).join(", ")})`;
}

/** The result as a person reads it: its first lines; an error in full, since it says what went wrong. */
export function describeResult(result: ToolResultBlockParam): string {
  const text = String(result.content).trimEnd() || "(empty)";
  const lines = result.is_error ? clip(text, 2000, "head").split("\n") : text.split("\n");
  const shown = result.is_error ? lines : lines.slice(0, 6).map((line) => clip(line, 160, "head"));
  if (shown.length < lines.length) shown.push(`… (${lines.length - shown.length} more lines)`);
  return shown.map((line) => `  ${line}`).join("\n");
}

// The diff package loads at the first change shown, not at start: a learner waits for every start.
const needed = createRequire(import.meta.url);

/** A change to a file as a unified diff (the `diff` package), coloured at a terminal: what the person checks before saying yes. */
export function diffOf(given: string, before: string | undefined, after: string): string {
  const patch = (needed("diff") as typeof import("diff")).createTwoFilesPatch(given, given, before ?? "", after, "", "", { context: 2 });
  const lines = patch.split("\n").slice(2).filter((line) => line !== ""); // without "Index:" and "===="
  return lines.map((line) => (line.startsWith("+") && !line.startsWith("+++") ? green(line) : line.startsWith("-") && !line.startsWith("---") ? red(line) : line)).join("\n");
}
