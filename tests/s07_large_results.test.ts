// s07: context is a budget, and nothing is lost. Each rule is a test in its own workspace: a
// result past 40,000 characters is kept whole in a file and the model gets its two ends, for
// every tool; bash writes its output to that file as it arrives, so 100 MB neither fills
// memory nor loses a byte; read_file pages with numbered lines and a footer whose next-page
// hint is exact; grep pages its matches the same way; the person sees the context after
// each reply; and the demo shows a 200 kB log costing the model a few thousand characters.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { regionsOf } from "../lib/course/regions.ts";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { GREP_LIMITS } from "../lib/machinery/search.ts";
import {
  eventually, reply, resultText, scenarioOf, stageFile, toolResults, useOutside, usePrinted, useReplay, useWorkspace,
} from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

// S07_STAGE_FILE: the same tests against a changed copy of the stage (to see each one fail when its rule is broken).
const FILE = stageFile(process.env.S07_STAGE_FILE ?? "s07");
type Tool = { name: string; execute(params: object, signal: AbortSignal, callId?: string): Promise<{ llmContent: string; returnDisplay: string }> };
type Stage = {
  registry: { registerTool(tool: object): void; getTool(name: string): Tool | undefined };
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  agentLoop(messages: unknown[]): Promise<void>;
  RESULT_FILE: { maxBytes: number };
};

// Loaded once in yolo mode: these tests are about results, not about who approves a call.
let stage: Stage;
beforeAll(async () => {
  vi.stubEnv("APPROVAL_MODE", "yolo");
  try {
    stage = (await import(FILE)) as Stage;
  } finally {
    vi.unstubAllEnvs();
  }
  stage.registry.registerTool(echoTool);
});

/**
 * A tool made in the test: it answers with the text it is given (or fails with it), so a
 * result of any size can be made exactly.
 */
const echoTool = {
  name: "echo_text",
  displayName: "Echo",
  description: "answers with its text",
  kind: "read",
  parameterSchema: { type: "object", properties: { text: { type: "string" }, fail: { type: "boolean" } } },
  validateToolParams: () => null,
  getDescription: () => "echo",
  shouldConfirmExecute: async () => false,
  execute: async (params: { text: string; fail?: boolean }) => {
    if (params.fail) throw new Error(params.text);
    return { llmContent: params.text, returnDisplay: "echoed" };
  },
};

let ids = 0;
const call = (name: string, input: Record<string, unknown>, id = `toolu_s07_${++ids}`): ToolUseBlock => ({ type: "tool_use", id, name, input }) as ToolUseBlock;
/** One call through the whole flow: the text the model receives, and whether it is an error. */
async function run(name: string, input: Record<string, unknown>, id?: string): Promise<{ text: string; error: boolean; id: string }> {
  const block = call(name, input, id);
  const result = await stage.runTool(block);
  return { text: resultText(result), error: result.is_error === true, id: block.id };
}
const read = async (input: Record<string, unknown>) => (await run("read_file", input)).text;
const grep = async (input: Record<string, unknown>) => (await run("grep", input)).text;

/** Exactly `size` characters of numbered lines: "line 1\nline 2\n…". */
function lines(size: number, from = 1): string {
  let text = "";
  for (let i = from; text.length < size; i++) text += `line ${i}\n`;
  return text.slice(0, size);
}
const savedFiles = () => (existsSync(".agent/tool-results") ? readdirSync(".agent/tool-results").filter((name) => name !== ".gitignore").sort() : []);

describe("s07 a result past 40,000 characters is kept whole in a file", () => {
  useWorkspace();
  const printed = usePrinted();
  const outside = useOutside();

  it("sends exactly 40,000 characters whole, with no file; 40,001 goes to a file with every character, and the model gets the two ends", async () => {
    const exact = lines(40_000);
    expect((await run("echo_text", { text: exact })).text).toBe(exact);
    expect(existsSync(".agent")).toBe(false);

    const over = lines(40_001);
    const { text, id } = await run("echo_text", { text: over });
    expect(readFileSync(`.agent/tool-results/${id}.txt`, "utf8")).toBe(over);
    expect(text.length).toBeLessThan(6000);
    expect(text.startsWith("line 1\nline 2\n")).toBe(true);
    expect(text.endsWith(over.slice(-100))).toBe(true);
    expect(text).toMatch(/\[\d+ characters cut from the middle, 40001 in all\]/);
    expect(text).toContain(`The whole result is in .agent/tool-results/${id}.txt`);
    // The agent's notes, not the project's: git never lists them.
    expect(readFileSync(".agent/tool-results/.gitignore", "utf8")).toBe("*\n");
    execFileSync("git", ["init", "-q"]);
    expect(execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], { encoding: "utf8" })).toBe("");
  });

  it("counts characters as the model's text does, not bytes: é and 😀 are 1 and 2", async () => {
    const unit = "é😀ab\n"; // 6 characters, 9 bytes of UTF-8
    const exact = unit.repeat(40_000 / unit.length + 1).slice(0, 40_000);
    expect((await run("echo_text", { text: exact })).text).toBe(exact);
    const over = `${exact}x`;
    const { text, id } = await run("echo_text", { text: over });
    expect(text).toMatch(/, 40001 in all\]/);
    expect(readFileSync(`.agent/tool-results/${id}.txt`, "utf8")).toBe(over);
    expect(text).not.toContain("\ufffd"); // no character cut in half at either end
  });

  it("says how many lines the whole has and where the tail starts, and read_file there gives the tail's lines", async () => {
    const whole = lines(100_000);
    const { text, id } = await run("echo_text", { text: whole });
    const [, count, first] = /(\d+) lines: read the lines you need with read_file \(the last ones below start at line (\d+)\)/.exec(text)!;
    expect(Number(count)).toBe(whole.split("\n").length); // the last line has no line break
    const tail = text.slice(text.indexOf(".]\n") + 3).trimEnd().split("\n");
    const page = await read({ path: `.agent/tool-results/${id}.txt`, offset: Number(first), limit: tail.length });
    expect(page.split("\n").slice(0, tail.length).map((line) => line.split("\t")[1])).toEqual(tail);
  });

  it("keeps every tool's large result, not only bash's: grep, an error, a tool of the test's own", async () => {
    const many = Array.from({ length: 3000 }, (_, i) => `match ${i} ${"-".repeat(20)}`).join("\n");
    writeFileSync("many.txt", many);
    const found = await run("grep", { pattern: "match", path: "many.txt", output_mode: "content", head_limit: 0 });
    expect(readFileSync(`.agent/tool-results/${found.id}.txt`, "utf8")).toBe(many.split("\n").map((line, i) => `many.txt:${i + 1}: ${line}`).join("\n"));
    expect(found.text.length).toBeLessThan(6000);

    const failed = await run("echo_text", { text: lines(50_000), fail: true });
    expect(failed.error).toBe(true);
    expect(readFileSync(`.agent/tool-results/${failed.id}.txt`, "utf8")).toBe(`Error: ${lines(50_000)}`);

    const command = await run("bash", { command: "seq 1 20000" });
    expect(readFileSync(`.agent/tool-results/${command.id}.txt`, "utf8")).toBe(`${Array.from({ length: 20000 }, (_, i) => i + 1).join("\n")}\n`);
    expect(savedFiles()).toEqual([found.id, failed.id, command.id].map((id) => `${id}.txt`).sort());
  });

  it("never needs to keep a read: read_file stops its page before 40,000 characters", async () => {
    writeFileSync("wide.txt", `${"w".repeat(1500)}\n`.repeat(3000));
    const page = await read({ path: "wide.txt" });
    expect(page.length).toBeLessThanOrEqual(40_000);
    expect(savedFiles()).toEqual([]);
  });

  it("names the file after the call, safely, whatever the id holds, and never outside the folder", async () => {
    const strange = ["../../escape", "/etc/passwd", "a/b\\c", "..", "", "x".repeat(300), "名前", "line\nbreak", "nul\0byte", "$(touch pwned)"];
    for (const id of strange) {
      const { text } = await run("echo_text", { text: lines(40_001) }, id);
      const [, name] = /The whole result is in \.agent\/tool-results\/([^,]+),/.exec(text)!;
      expect(name, JSON.stringify(id)).toMatch(/^[A-Za-z0-9_-]{1,100}\.txt$/);
      expect(readFileSync(`.agent/tool-results/${name}`, "utf8")).toBe(lines(40_001));
    }
    expect(readdirSync(".")).toEqual([".agent"]);
    expect(readdirSync(".agent")).toEqual(["tool-results"]);
    expect(savedFiles()).toHaveLength(strange.length);
  });

  it("never overwrites a result: the same id again gets -2, and a link planted at the name is not followed", async () => {
    const victim = path.join(outside.dir, "victim.txt");
    writeFileSync(victim, "untouched");
    mkdirSync(".agent/tool-results", { recursive: true });
    symlinkSync(victim, ".agent/tool-results/toolu_planted.txt");
    const first = await run("echo_text", { text: lines(40_001) }, "toolu_twice");
    const second = await run("echo_text", { text: lines(40_001, 7) }, "toolu_twice");
    expect(first.text).toContain(".agent/tool-results/toolu_twice.txt,");
    expect(second.text).toContain(".agent/tool-results/toolu_twice-2.txt,");
    expect(readFileSync(".agent/tool-results/toolu_twice.txt", "utf8")).toBe(lines(40_001));
    expect(readFileSync(".agent/tool-results/toolu_twice-2.txt", "utf8")).toBe(lines(40_001, 7));
    const planted = await run("echo_text", { text: lines(40_001) }, "toolu_planted");
    expect(planted.text).toContain(".agent/tool-results/toolu_planted-2.txt,");
    expect(readFileSync(victim, "utf8")).toBe("untouched");
  });

  it("tells the person how large the result was, where it went and how much the model got", async () => {
    const { id, text } = await run("echo_text", { text: lines(50_000) });
    expect(printed).toContain(`  [50,000 characters, saved whole in .agent/tool-results/${id}.txt; the model got ${text.length.toLocaleString("en-US")}]`);
  });
});

describe("s07 when .agent/ cannot be written", () => {
  useWorkspace();
  usePrinted();
  const outside = useOutside();

  it("still gives the model the two ends, and says the middle could not be kept", async () => {
    writeFileSync(".agent", "a file where the folder would be");
    for (const [name, input] of [["echo_text", { text: lines(60_000) }], ["bash", { command: "seq 1 20000" }]] as const) {
      const { text, error } = await run(name, input);
      expect(error, name).toBe(false);
      expect(text, name).toMatch(/\[\d+ characters cut from the middle, \d+ in all\] \.\.\.\n\[It could not be kept \(\.agent\/tool-results could not be written: .*\), so the middle is lost\.\]/);
      expect(text.length, name).toBeLessThan(6000);
    }
    expect(readFileSync(".agent", "utf8")).toBe("a file where the folder would be");
  });

  it("refuses a .agent that is a link to outside the workspace, and writes nothing there", async () => {
    symlinkSync(outside.dir, ".agent");
    const { text } = await run("echo_text", { text: lines(60_000) });
    expect(text).toMatch(/could not be kept \(\.agent\/tool-results could not be written: .*leads outside the workspace through a symlink\)/);
    expect(readdirSync(outside.dir)).toEqual([]);
  });
});

describe("s07 bash output goes to the file as it arrives", () => {
  useWorkspace();
  usePrinted();

  it("is in the file while the command still runs, and a cancelled command's output so far stays there", async () => {
    const controller = new AbortController();
    const bash = stage.registry.getTool("bash")!;
    const running = bash.execute({ command: "seq 1 30000; sleep 30" }, controller.signal, "toolu_streaming").catch((error: Error) => error.message);
    const file = ".agent/tool-results/toolu_streaming.txt";
    const expected = `${Array.from({ length: 30000 }, (_, i) => i + 1).join("\n")}\n`;
    expect(await eventually(() => existsSync(file) && readFileSync(file, "utf8") === expected, 5000)).toBe(true);
    controller.abort();
    const message = await running;
    expect(message).toMatch(/^cancelled by the user; the command and everything it started were ended\. Output so far:\n1\n2\n/);
    expect(message).toContain(`The whole result is in ${file}, 30000 lines`);
    expect(readFileSync(file, "utf8")).toBe(expected);
  });

  it("100 MB of output: memory stays small, and the file keeps its first RESULT_FILE.maxBytes and its end, with a note of the gap", async () => {
    // The memory in use, looked at every 10 ms while the command runs: its peak is what counts.
    const rss = () => process.memoryUsage.rss();
    global.gc?.();
    const before = rss();
    let peak = before;
    const watch = setInterval(() => (peak = Math.max(peak, rss())), 10);
    const bash = stage.registry.getTool("bash")!;
    const content = (await withFileLimit(1024 * 1024, () => bash.execute({ command: "yes | head -c 100000000; echo THE-END" }, new AbortController().signal, "toolu_huge")).finally(() => clearInterval(watch))).llmContent;
    // Kept in memory, the output alone would be 100 MB as bytes, 200 MB as text. What is seen
    // instead (about 35 MB on a first run) is the pieces in flight before the collector frees them.
    expect((peak - before) / 1024 / 1024, "MB more at the peak").toBeLessThan(64);
    // On disk: the first 1 MB as it came, a line that says what is left out, and the last bytes.
    expect(statSync(".agent/tool-results/toolu_huge.txt").size, "bytes on disk").toBeLessThan(1024 * 1024 + 13_000);
    const saved = readFileSync(".agent/tool-results/toolu_huge.txt", "latin1");
    expect(saved.slice(0, 1024 * 1024)).toBe("y\n".repeat(512 * 1024));
    const [note, left, lines] = /\n\[\.\.\. ([\d,]+) bytes \(([\d,]+) lines\) left out here: a saved result keeps its first 1 MB and its end \.\.\.\]\n/.exec(saved.slice(1024 * 1024))!;
    const end = saved.slice(1024 * 1024 + note.length);
    expect(end.endsWith("y\ny\nTHE-END\n")).toBe(true);
    const number = (text: string) => Number(text.replaceAll(",", ""));
    expect(1024 * 1024 + number(left) + end.length, "the bytes kept and left out").toBe(100_000_000 + "THE-END\n".length);
    expect(512 * 1024 + number(lines) + end.split("\n").length - 1, "the lines kept and left out").toBe(50_000_001);
    expect(content.length).toBeLessThan(6000);
    expect(content).toMatch(/\[\d+ characters cut from the middle, 100000008 in all\]/);
    expect(content).toContain(`The result, but for ${left} bytes (${lines} lines) in the middle, is in .agent/tool-results/toolu_huge.txt, ${saved.split("\n").length - 1} lines`);
    expect(content.trimEnd().endsWith("y\nTHE-END")).toBe(true);
  });

  it("past the limit the file is whole to read at any moment, and its line numbers are the ones the model is given", async () => {
    const controller = new AbortController();
    const bash = stage.registry.getTool("bash")!;
    const file = ".agent/tool-results/toolu_capped.txt";
    const message = String(await withFileLimit(64 * 1024, async () => {
      const running = bash.execute({ command: "seq 1 100000; sleep 30" }, controller.signal, "toolu_capped").catch((error: Error) => error.message);
      // While the command runs (it has printed 588,895 bytes): the first 64 kB, the note, the end.
      expect(await eventually(() => existsSync(file) && readFileSync(file, "utf8").endsWith("\n99999\n100000\n"), 5000)).toBe(true);
      controller.abort();
      return running; // cancelled: it rejects, with the output so far
    }));
    const saved = readFileSync(file, "utf8");
    expect(saved.startsWith("1\n2\n3\n")).toBe(true);
    expect(saved).toMatch(/\n\[\.\.\. [\d,]+ bytes \([\d,]+ lines\) left out here: a saved result keeps its first 0\.0625 MB and its end \.\.\.\]\n/);
    expect(saved.length).toBeLessThan(64 * 1024 + 13_000);
    // The model's preview names the line of the file where its tail starts: read_file there gives it.
    const [, count, first] = /, (\d+) lines: read the lines you need with read_file \(the last ones below start at line (\d+)\)/.exec(message)!;
    expect(Number(count)).toBe(saved.split("\n").length - 1);
    const tail = message.slice(message.indexOf(".]\n") + 3).trimEnd().split("\n");
    const page = await read({ path: file, offset: Number(first), limit: tail.length });
    expect(page.split("\n").slice(0, tail.length).map((line) => line.split("\t")[1])).toEqual(tail);
  });
});

/** `work` done with RESULT_FILE.maxBytes lowered to `bytes`, so a test writes little; the limit is restored after. */
async function withFileLimit<T>(bytes: number, work: () => Promise<T>): Promise<T> {
  const limit = stage.RESULT_FILE.maxBytes;
  stage.RESULT_FILE.maxBytes = bytes;
  try {
    return await work();
  } finally {
    stage.RESULT_FILE.maxBytes = limit;
  }
}

describe("s07 read_file pages", () => {
  useWorkspace();
  usePrinted();
  const numbered = (from: number, texts: string[]) => texts.map((text, i) => `${String(from + i).padStart(6)}\t${text}`).join("\n");

  it("numbers lines as cat -n does, six wide and then wider, and shows a small file whole without a footer", async () => {
    writeFileSync("three.txt", "one\ntwo\nthree\n");
    expect(await read({ path: "three.txt" })).toBe(numbered(1, ["one", "two", "three"]));
    writeFileSync("long.txt", "x\n".repeat(1_000_001));
    expect(await read({ path: "long.txt", offset: 999_999, limit: 3 })).toBe(
      `999999\tx\n1000000\tx\n1000001\tx\n\n[lines 999999-1000001 of 1000001: the end of the file]`,
    );
  });

  it("reads 2,000 lines by default and says where the next page starts", async () => {
    writeFileSync("big.txt", Array.from({ length: 5000 }, (_, i) => `${i + 1}`).join("\n"));
    const page = await read({ path: "big.txt" });
    expect(page.split("\n").slice(0, 2000)).toEqual(Array.from({ length: 2000 }, (_, i) => `${String(i + 1).padStart(6)}\t${i + 1}`));
    expect(page.endsWith("\n\n[lines 1-2000 of 5000. Next page: offset 2001]")).toBe(true);
  });

  it("gives a next-page hint that is exactly right: following it reads every line once, in order", async () => {
    const text = Array.from({ length: 1234 }, (_, i) => (i % 7 === 0 ? "w".repeat(1900) : `line ${i + 1}`)).join("\n");
    writeFileSync("mixed.txt", text);
    for (const limit of [undefined, 100, 500]) {
      const seen: string[] = [];
      let next: Record<string, unknown> | undefined = { path: "mixed.txt", ...(limit ? { limit } : {}) };
      for (let pages = 0; next; pages++) {
        expect(pages, "pages read").toBeLessThan(100);
        const page = await read(next);
        seen.push(...page.split("\n").filter((line) => /^ *\d+\t/.test(line)));
        const hint = /Next page: offset (\d+)(?:, limit (\d+))?\]$/.exec(page);
        expect(hint?.[2] === undefined ? undefined : Number(hint[2]), `limit ${limit}`).toBe(hint ? limit : undefined);
        next = hint ? { path: "mixed.txt", offset: Number(hint[1]), ...(hint[2] ? { limit: Number(hint[2]) } : {}) } : undefined;
      }
      expect(seen.map((line) => line.split("\t")[1]), `limit ${limit}`).toEqual(text.split("\n"));
      expect(seen.map((line) => Number(line.split("\t")[0])), `limit ${limit}`).toEqual(text.split("\n").map((_, i) => i + 1));
    }
  });

  it("stops a page before 40,000 characters, and says so", async () => {
    writeFileSync("wide.txt", `${"w".repeat(1000)}\n`.repeat(100));
    const page = await read({ path: "wide.txt", offset: 11 });
    const shown = page.split("\n").filter((line) => /^ *\d+\t/.test(line));
    expect(page.length).toBeLessThanOrEqual(40_000);
    expect(shown.length).toBeGreaterThan(30);
    expect(page.endsWith(`[lines 11-${10 + shown.length} of 100: a page stops before 40000 characters. Next page: offset ${11 + shown.length}]`)).toBe(true);
  });

  it("cuts a line at 2,000 characters with a marker, even a 20 MB line, and pages a file of any size", async () => {
    writeFileSync("one-line.txt", `start${"y".repeat(20 * 1024 * 1024)}end\nsecond\n`);
    expect(await read({ path: "one-line.txt" })).toBe(numbered(1, [`start${"y".repeat(1995)} [line cut at 2000 characters]`, "second"]));
  });

  it("keeps a character whole where a line crosses the 64 kB pieces the file is read in", async () => {
    // Line 2 starts at byte 65,535: the two bytes of its é fall in the first piece and the second.
    writeFileSync("split.txt", `${"a".repeat(65_534)}\néclair\n`);
    expect(await read({ path: "split.txt", offset: 2 })).toBe("     2\téclair\n\n[line 2 of 2: the end of the file]");
    writeFileSync("wide.txt", `${"é".repeat(2000)}\n`); // 4,000 bytes but 2,000 characters: not cut
    expect(await read({ path: "wide.txt" })).toBe(`     1\t${"é".repeat(2000)}`);
  });

  it("counts a last line without a line break, adds none after a final one, and keeps empty lines", async () => {
    writeFileSync("open.txt", "a\nb");
    writeFileSync("closed.txt", "a\nb\n");
    writeFileSync("blank.txt", "\n\n");
    expect(await read({ path: "open.txt" })).toBe(numbered(1, ["a", "b"]));
    expect(await read({ path: "closed.txt" })).toBe(numbered(1, ["a", "b"]));
    expect(await read({ path: "blank.txt" })).toBe(numbered(1, ["", ""]));
    expect(await read({ path: "open.txt", offset: 2 })).toBe(`${numbered(2, ["b"])}\n\n[line 2 of 2: the end of the file]`);
  });

  it("shows CRLF lines without their \\r, numbered the same", async () => {
    writeFileSync("crlf.txt", "one\r\ntwo\r\n\r\nfour");
    expect(await read({ path: "crlf.txt" })).toBe(numbered(1, ["one", "two", "", "four"]));
  });

  it("refuses an offset past the end, saying how many lines there are; an empty file says it is empty", async () => {
    writeFileSync("five.txt", "1\n2\n3\n4\n5\n");
    writeFileSync("empty.txt", "");
    expect(await read({ path: "five.txt", offset: 5 })).toBe(`${numbered(5, ["5"])}\n\n[line 5 of 5: the end of the file]`);
    for (const [file, offset, lines] of [["five.txt", 6, "5 lines"], ["five.txt", 1000, "5 lines"], ["empty.txt", 2, "0 lines"]] as const) {
      const result = await run("read_file", { path: file, offset });
      expect(result.error).toBe(true);
      expect(result.text).toBe(`Error: offset ${offset} is past the end of ${file}, which has ${lines}`);
    }
    expect(await read({ path: "empty.txt" })).toBe("(empty.txt is empty)");
  });

  it("pages a 64 GB file at once: the footer says \"at least\" and names the next page; a page past 128 MB in is refused", async (context) => {
    // Sparse: 2,000 lines of text and then 64 GB of zeros that take no room on disk.
    writeFileSync("huge.log", "text\n".repeat(2000));
    try {
      truncateSync("huge.log", 64 * 1024 ** 3);
    } catch (error) {
      context.skip(`this file system refuses a 64 GB sparse file (${(error as Error).message})`);
    }
    const started = Date.now();
    expect(await read({ path: "huge.log", limit: 5 })).toBe(`${numbered(1, Array(5).fill("text"))}\n\n[lines 1-5 of at least 2001. Next page: offset 6, limit 5]`);
    const cut = await read({ path: "huge.log", offset: 2000, limit: 10 });
    expect(cut.endsWith(` [line cut at 2000 characters]\n\n[lines 2000-2001 of at least 2001. Next page: offset 2002, limit 10]`)).toBe(true);
    const past = await run("read_file", { path: "huge.log", offset: 2002 });
    expect([past.error, past.text]).toEqual([true, "Error: line 2002 of huge.log is not within its first 128 MB, and read_file reads no further into a file; use bash instead (tail, or sed -n '2002,2101p')"]);
    expect(Date.now() - started, "ms for the three reads").toBeLessThan(3000);
  });

  it("takes null for offset and limit as not given, and refuses 0, negative and non-whole values, naming them", async () => {
    writeFileSync("five.txt", "1\n2\n3\n4\n5\n");
    expect(await read({ path: "five.txt", offset: null, limit: null })).toBe(await read({ path: "five.txt" }));
    for (const [name, value] of [["limit", 0], ["limit", -1], ["offset", 0], ["offset", -3], ["offset", 1.5], ["limit", "2"]] as const) {
      const result = await run("read_file", { path: "five.txt", [name]: value });
      expect(result.error, `${name} ${value}`).toBe(true);
      expect(result.text, `${name} ${value}`).toMatch(new RegExp(`^Error: read_file was not run: "${name}" must be`));
    }
  });
});

describe("s07 grep", () => {
  useWorkspace();
  usePrinted();
  const outside = useOutside();
  const files = (tree: Record<string, string | Buffer>) => {
    for (const [name, content] of Object.entries(tree)) {
      mkdirSync(path.dirname(name), { recursive: true });
      writeFileSync(name, content);
    }
  };

  it("lists the files with matches by default, sorted; content gives path:line: text; count the lines per file", async () => {
    files({ "src/b.ts": "needle\nhay\nneedle again\n", "src/a.ts": "hay\r\nneedle\r\n", "notes.md": "hay\n" });
    expect(await grep({ pattern: "needle" })).toBe("src/a.ts\nsrc/b.ts");
    expect(await grep({ pattern: "needle", output_mode: "content" })).toBe("src/a.ts:2: needle\nsrc/b.ts:1: needle\nsrc/b.ts:3: needle again");
    expect(await grep({ pattern: "needle", output_mode: "count" })).toBe("src/a.ts: 1\nsrc/b.ts: 2");
    expect(await grep({ pattern: "nothing" })).toBe("No matches for /nothing/ in . (3 files searched)");
  });

  it("pages: 100 entries by default, head_limit and offset choose the page, and the next-page hint is exact", async () => {
    files({ "many.txt": Array.from({ length: 250 }, (_, i) => `hit ${i + 1}`).join("\n") });
    const first = (await grep({ pattern: "hit", output_mode: "content" })).split("\n");
    expect(first).toHaveLength(101);
    expect(first[100]).toBe("[matching lines 1-100 of 250. Next page: offset 100]");
    const seen: string[] = [];
    let input: Record<string, unknown> | undefined = { pattern: "hit", output_mode: "content", head_limit: 60 };
    for (let pages = 0; input; pages++) {
      expect(pages, "pages read").toBeLessThan(10);
      const page = (await grep(input)).split("\n");
      const hint = /^\[matching lines \d+-\d+ of 250\. Next page: offset (\d+), head_limit 60\]$/.exec(page.at(-1)!);
      seen.push(...(hint ? page.slice(0, -1) : page));
      input = hint ? { ...input, offset: Number(hint[1]) } : undefined;
    }
    expect(seen).toEqual(Array.from({ length: 250 }, (_, i) => `many.txt:${i + 1}: hit ${i + 1}`));
    expect((await grep({ pattern: "hit", output_mode: "content", head_limit: 0 })).split("\n")).toHaveLength(250);
    const past = await run("grep", { pattern: "hit", output_mode: "content", offset: 250 });
    expect([past.error, past.text]).toEqual([true, "Error: offset 250 is past the end: there are 250 matching lines"]);
  });

  it("filters by glob: a name pattern in every folder, a path pattern with ** and {a,b}", async () => {
    files({ "top.ts": "hit\n", "src/deep/x.ts": "hit\n", "src/view.tsx": "hit\n", "src/notes.md": "hit\n", "lib/y.ts": "hit\n", "src/{a,b": "hit\n" });
    expect(await grep({ pattern: "hit", glob: "*.ts" })).toBe("lib/y.ts\nsrc/deep/x.ts\ntop.ts");
    expect(await grep({ pattern: "hit", glob: "src/**/*.{ts,tsx}" })).toBe("src/deep/x.ts\nsrc/view.tsx");
    expect(await grep({ pattern: "hit", glob: "*.{ts,tsx}", path: "src" })).toBe("src/deep/x.ts\nsrc/view.tsx");
    // A { that is never closed is a plain character, as in a shell: the file so named is found.
    expect(await grep({ pattern: "hit", glob: "src/{a,b" })).toBe("src/{a,b");
    expect(await grep({ pattern: "hit", glob: "src/{c,d" })).toBe("No matches for /hit/ in . (0 files searched)");
  });

  it("skips .git, node_modules, .agent, what .gitignore lists and binary files, but searches a file named in path", async () => {
    files({
      "kept.txt": "secret\n",
      ".git/config": "secret\n",
      "node_modules/p/i.js": "secret\n",
      ".agent/tool-results/toolu_1.txt": "secret\n",
      ".gitignore": "dist/\n*.log\n",
      "dist/out.js": "secret\n",
      "debug.log": "secret\n",
      "sub/.gitignore": "local.txt\n",
      "sub/local.txt": "secret\n",
      "sub/other.txt": "secret\n",
      "image.bin": Buffer.from("secret\0\x01"),
    });
    expect(await grep({ pattern: "secret" })).toBe("kept.txt\nsub/other.txt\n[skipped 1 file(s): image.bin (binary)]");
    expect(await grep({ pattern: "secret", path: "sub" })).toBe("sub/other.txt");
    expect(await grep({ pattern: "secret", path: ".agent/tool-results/toolu_1.txt", output_mode: "content" })).toBe(".agent/tool-results/toolu_1.txt:1: secret");
  });

  it("refuses a bad pattern before searching, and stops a catastrophic one at the time limit", async () => {
    expect((await run("grep", { pattern: "(unclosed", path: "missing" })).text).toMatch(/^Error: Invalid regular expression: .*; nothing was searched$/);
    files({ "a.txt": "aaa\n", "slow.txt": `${"a".repeat(40)}b\n` });
    const limit = GREP_LIMITS.milliseconds;
    GREP_LIMITS.milliseconds = 500; // the pattern keeps a processor busy until then
    try {
      const started = Date.now();
      const output = await grep({ pattern: "(a+)+$" });
      expect(Date.now() - started).toBeLessThan(5000);
      // a.txt is searched first, unless a busy machine takes the whole half second to start the worker.
      expect(output).toMatch(/^(a\.txt|No matches for \/\(a\+\)\+\$\/ in \. \(0 files searched\))\n\[stopped after 0\.5 s with [01] of 2 files searched: a pattern with nested repetition/);
    } finally {
      GREP_LIMITS.milliseconds = limit;
    }
  });

  it("stays inside the workspace: no path outside, no link followed out", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "secret\n");
    symlinkSync(outside.dir, "door");
    symlinkSync(path.join(outside.dir, "secret.txt"), "link.txt");
    files({ "mine.txt": "secret\n" });
    expect(await grep({ pattern: "secret" })).toBe("mine.txt");
    for (const where of ["..", outside.dir, "door"]) expect((await run("grep", { pattern: "secret", path: where })).text).toMatch(/outside the workspace/);
  });
});

describe("s07 the context, after each reply", () => {
  useWorkspace();
  const printed = usePrinted();
  const replay = useReplay();

  it("shows the person the tokens the model read and wrote, from the API's usage", async () => {
    const first = reply.tools([{ name: "read_file", input: { path: "a.txt" } }]);
    first.usage = { input_tokens: 1200, cache_read_input_tokens: 300, cache_creation_input_tokens: 0, output_tokens: 34 } as typeof first.usage;
    const last = reply.text("done");
    last.usage = { input_tokens: 151_000, output_tokens: 1000 } as typeof last.usage;
    writeFileSync("a.txt", "a\n");
    replay(scenarioOf([first, last]));
    await stage.agentLoop([{ role: "user", content: "go" }]);
    expect(printed).toContain("[context: 1,534 of 200,000 tokens, 0.8%]");
    expect(printed).toContain("[context: 152,000 of 200,000 tokens, 76.0%]");
  });
});

describe("s07 the demo", () => {
  const workspace = useWorkspace();
  usePrinted();

  it("keeps two 190 kB test logs in files, and every request to the model stays small", async () => {
    const scenario = loadScenario("s07");
    const session = await replayScenario(stage, scenario, { workspace: workspace.dir });
    expectWholeSession("s07", session, scenario);
    const log = readFileSync(".agent/tool-results/toolu_s07_demo_01.txt", "utf8");
    expect(log.length).toBeGreaterThan(190_000);
    expect(log.match(/^not ok/gm)).toHaveLength(45);
    expect(log.endsWith("# fail 45\n")).toBe(true);
    expect(readFileSync(".agent/tool-results/toolu_s07_demo_06.txt", "utf8").endsWith("# fail 0\n")).toBe(true);
    // What the model read of the first log: its two ends, 45 grep lines, and 7 lines of it.
    const sizes = session.requests.map((request) => JSON.stringify(request).length);
    expect(Math.max(...sizes)).toBeLessThan(30_000);
    const replayed = { requests: session.requests, problems: [], remaining: () => 0, verdict: () => [] };
    expect(resultText(toolResults(replayed, 2)[0]).split("\n")).toHaveLength(45);
    expect(resultText(toolResults(replayed, 3)[0])).toContain("    86\tnot ok 85 - issued 2023-01-29, due in 1 month(s)\n    87\t  ---\n    88\t  expected: '2023-02-28'");
    expect(readFileSync("src/dates.js", "utf8")).toContain("Math.min(day, lastDay)");
  });
});
