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

// #region colour
const colour = (code: number) => (text: string) => (process.stdout.isTTY ? `\x1b[${code}m${text}\x1b[0m` : text);
export const dim = colour(2);
export const green = colour(32);
export const red = colour(31);
// #endregion colour

// #region visible
// Characters that change what a terminal shows rather than show themselves: C0 controls but
// the line break and the tab, DEL, C1 controls (U+0080-U+009F), and the marks that reorder
// or hide text (bidi embeddings, overrides and isolates, zero-width characters, the BOM).
// A command `curl … | sh\r\x1b[2K ls -la` would otherwise show as `ls -la` in an approval
// prompt, and an RTL override turns `txt.exe` round.
// eslint-disable-next-line no-control-regex
const HIDDEN = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;
const escaped = (char: string) => {
  const named: Record<string, string> = { "\r": "\\r", "\x1b": "\\e", "\0": "\\0", "\b": "\\b", "\f": "\\f", "\v": "\\v" };
  return named[char] ?? `\\u{${char.codePointAt(0)!.toString(16).padStart(4, "0")}}`;
};
/** The colour codes this module itself writes: the only escapes a display may keep raw. */
const OWN_COLOURS = /\x1b\[(?:0|2|31|32)m/g;

/**
 * Text from the model, a tool or a project made visible as it is: every character in HIDDEN
 * is written out (`\r`, `\e`, `\u{202e}`), so what the person reads is what is there.
 */
export function visible(text: string): string {
  return text.replace(HIDDEN, escaped);
}

/** The same for a display this module may have coloured: its own colour codes stay, every other escape shows. */
export function forTerminal(text: string): string {
  const parts = text.split(OWN_COLOURS);
  const colours = text.match(OWN_COLOURS) ?? [];
  return parts.map((part, i) => visible(part) + (colours[i] ?? "")).join("");
}
// #endregion visible

export const indent = (text: string) => text.replace(/^/gm, "  ");

// #region first-lines
/** The first lines of a display, each kept short and made visible (forTerminal), and how many more there were. */
export function firstLines(text: string, count: number): string {
  const lines = forTerminal(text).trimEnd().split("\n");
  const shown = lines.slice(0, count).map((line) => clip(line, 200, "head"));
  return lines.length > count ? [...shown, `… (${lines.length - count} more lines)`].join("\n") : shown.join("\n");
}
// #endregion first-lines

// #region describe
/** The call as a person reads it: each argument by name, strings quoted, so where one ends shows. */
export function describeCall(call: ToolUseBlock): string {
  const args = Object.entries((call.input ?? {}) as Record<string, unknown>);
  return visible(`${call.name}(${args.map(([name, value]) => `${name}: ${clip(JSON.stringify(value) ?? "undefined", 120, "head")}`).join(", ")})`);
}

/** The result as a person reads it: its first lines; an error in full, since it says what went wrong. */
export function describeResult(result: ToolResultBlockParam): string {
  const text = visible(String(result.content)).trimEnd() || "(empty)";
  const lines = result.is_error ? clip(text, 2000, "head").split("\n") : text.split("\n");
  const shown = result.is_error ? lines : lines.slice(0, 6).map((line) => clip(line, 160, "head"));
  if (shown.length < lines.length) shown.push(`… (${lines.length - shown.length} more lines)`);
  return shown.map((line) => `  ${line}`).join("\n");
}
// #endregion describe

// The diff package loads at the first change shown, not at start: a learner waits for every start.
const needed = createRequire(import.meta.url);

/** A change to a file as a unified diff (the `diff` package), coloured at a terminal: what the person checks before saying yes. */
export function diffOf(given: string, before: string | undefined, after: string): string {
  const patch = (needed("diff") as typeof import("diff")).createTwoFilesPatch(given, given, before ?? "", after, "", "", { context: 2 });
  // Each line made visible before it is coloured: a write's content could otherwise erase lines of its own diff.
  const lines = patch.split("\n").slice(2).filter((line) => line !== "").map(visible); // without "Index:" and "===="
  return lines.map((line) => (line.startsWith("+") && !line.startsWith("+++") ? green(line) : line.startsWith("-") && !line.startsWith("---") ? red(line) : line)).join("\n");
}
