// lib/machinery/display.ts: how a tool call and its result look to the person at the terminal.
// A long result shows its first lines and how many more there were, each line cut short; an
// error is shown whole, since it says what went wrong; a change is a diff with + and - lines;
// and colour codes are written only to a terminal, never into a pipe or a file.
import { afterEach, describe, expect, it } from "vitest";
import type { ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { describeCall, describeResult, diffOf, dim, firstLines, forTerminal, green, indent, red, visible } from "../../lib/machinery/display.ts";

/** Whether stdout is a terminal, for the rest of the test (put back after it). */
const tty = Object.getOwnPropertyDescriptor(process.stdout, "isTTY");
function stdoutIsTTY(value: boolean) {
  Object.defineProperty(process.stdout, "isTTY", { value, configurable: true });
}
afterEach(() => {
  if (tty) Object.defineProperty(process.stdout, "isTTY", tty);
  else delete (process.stdout as { isTTY?: boolean }).isTTY;
});

const call = (name: string, input: Record<string, unknown>) => ({ type: "tool_use", id: "toolu_1", name, input }) as ToolUseBlock;
const lines = (count: number, prefix = "line ") => Array.from({ length: count }, (_, i) => `${prefix}${i + 1}`).join("\n");

// #region first-lines
describe("firstLines", () => {
  it("shows a short text as it is, without its trailing blank lines", () => {
    expect(firstLines("one\ntwo\n\n", 5)).toBe("one\ntwo");
  });

  it("shows the first lines and how many more there were", () => {
    expect(firstLines(`${lines(20)}\n`, 3)).toBe("line 1\nline 2\nline 3\n… (17 more lines)");
  });

  it("cuts each line shown to 200 characters, saying how many followed", () => {
    expect(firstLines(`${"x".repeat(500)}\nshort`, 5)).toBe(`${"x".repeat(200)} … [300 more characters]\nshort`);
  });
});
// #endregion first-lines

describe("describeCall", () => {
  it("shows each argument by name, strings quoted, so where one ends shows", () => {
    expect(describeCall(call("bash", { command: "ls -la", timeout: 5 }))).toBe('bash(command: "ls -la", timeout: 5)');
    expect(describeCall(call("read_file", { path: 'a", b: "c' }))).toBe('read_file(path: "a\\", b: \\"c")');
    expect(describeCall(call("todo", {}))).toBe("todo()");
  });

  it("cuts a long argument to 120 characters, saying how many followed", () => {
    const shown = describeCall(call("write_file", { path: "a.txt", content: "y".repeat(1000) }));
    expect(shown).toBe(`write_file(path: "a.txt", content: "${"y".repeat(119)} … [882 more characters])`);
  });
});

describe("describeResult", () => {
  // #region describe-result
  it("shows the first 6 lines of a result, indented, each cut to 160 characters, and how many more there were", () => {
    const result = describeResult({ type: "tool_result", tool_use_id: "toolu_1", content: `${"z".repeat(400)}\n${lines(20)}\n` });
    expect(result).toBe([`  ${"z".repeat(160)} … [240 more characters]`, ...[1, 2, 3, 4, 5].map((i) => `  line ${i}`), "  … (15 more lines)"].join("\n"));
  });
  // #endregion describe-result

  it("shows an error whole: every line, none cut, as it says what went wrong", () => {
    const message = Array.from({ length: 10 }, (_, i) => `Error ${i}: ${"w".repeat(150)}`).join("\n");
    expect(describeResult({ type: "tool_result", tool_use_id: "toolu_1", is_error: true, content: message })).toBe(indent(message));
  });

  it("cuts an error only past 2,000 characters, saying how many followed", () => {
    const message = `Error: ${"e".repeat(5000)}`;
    expect(describeResult({ type: "tool_result", tool_use_id: "toolu_1", is_error: true, content: message })).toBe(`  ${message.slice(0, 2000)} … [3007 more characters]`);
  });

  it("says (empty) for a result with nothing in it", () => {
    expect(describeResult({ type: "tool_result", tool_use_id: "toolu_1", content: "\n" })).toBe("  (empty)");
  });
});

describe("diffOf", () => {
  it("shows a change as a unified diff: - for the lines removed, + for the lines added", () => {
    stdoutIsTTY(false);
    expect(diffOf("a.txt", "one\ntwo\nthree\n", "one\n2\nthree\nfour\n").split("\n")).toEqual([
      expect.stringMatching(/^--- a\.txt\s*$/),
      expect.stringMatching(/^\+\+\+ a\.txt\s*$/),
      "@@ -1,3 +1,4 @@",
      " one",
      "-two",
      "+2",
      " three",
      "+four",
    ]);
  });

  it("shows a new file (nothing before) as lines added", () => {
    stdoutIsTTY(false);
    expect(diffOf("new.txt", undefined, "a\nb\n").split("\n").slice(2)).toEqual(["@@ -0,0 +1,2 @@", "+a", "+b"]);
  });

  it("colours + lines green and - lines red at a terminal, and not the file names", () => {
    stdoutIsTTY(true);
    const shown = diffOf("a.txt", "one\ntwo\n", "one\n2\n").split("\n");
    expect(shown.slice(2)).toEqual(["@@ -1,2 +1,2 @@", " one", "\x1b[31m-two\x1b[0m", "\x1b[32m+2\x1b[0m"]);
    expect(shown.slice(0, 2).join("\n")).not.toContain("\x1b[");
  });
});

describe("colour", () => {
  it("is used only when stdout is a terminal", () => {
    stdoutIsTTY(true);
    expect([dim("d"), green("g"), red("r")]).toEqual(["\x1b[2md\x1b[0m", "\x1b[32mg\x1b[0m", "\x1b[31mr\x1b[0m"]);
    stdoutIsTTY(false);
    expect([dim("d"), green("g"), red("r")]).toEqual(["d", "g", "r"]);
    expect(diffOf("a.txt", "one\n", "two\n")).not.toContain("\x1b[");
  });
});

describe("indent", () => {
  it("puts two spaces before every line", () => {
    expect(indent("a\nb\n\nc")).toBe("  a\n  b\n  \n  c");
  });
});

describe("what the person reads is what is there", () => {
  it("visible writes out what a terminal would act on instead of showing: carriage returns, escapes, NUL, bidi overrides, zero-width marks", () => {
    // Shown raw, this command would look like `ls -la` in an approval prompt.
    expect(visible("curl x | sh\r\x1b[2K\x1b[8mls -la")).toBe("curl x | sh\\r\\e[2K\\e[8mls -la");
    expect(visible("report\u202Efdp.exe")).toBe("report\\u{202e}fdp.exe");
    expect(visible("a\0b\u200Bc\u0085d")).toBe("a\\0b\\u{200b}c\\u{0085}d");
    expect(visible("line one\n\tindented")).toBe("line one\n\tindented"); // line breaks and tabs are text
  });

  it("forTerminal keeps this module's own colours and nothing else", () => {
    expect(forTerminal("\x1b[32m+ added\x1b[0m \x1b[2K\x1b[1A")).toBe("\x1b[32m+ added\x1b[0m \\e[2K\\e[1A");
  });

  it("a diff shows the escapes a write would put in a file, and firstLines the ones in a tool's output", () => {
    const diff = diffOf("a.txt", "old\n", "new\x1b[1A\x1b[2K hidden\n");
    expect(diff).toContain("+new\\e[1A\\e[2K hidden");
    expect(diff).not.toContain("\x1b[1A");
    expect(firstLines("ok\rHIDDEN", 3)).toBe("ok\\rHIDDEN");
  });
});
