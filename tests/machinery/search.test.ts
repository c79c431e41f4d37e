// lib/machinery/search.ts, tested once here rather than through every stage's grep: the search
// that runs in worker threads. It answers line by line in three modes, in path order however
// many workers share it; it stops a catastrophic pattern at the time limit and says which
// files were not searched; its fast paths (the whole text at once, the bytes read as latin1,
// plain text found in the bytes) find exactly the lines a line-by-line search finds; it skips
// binary and oversized files, and is neither hung nor led out by a file swapped for a FIFO or
// a symlink after the walk. grepReport turns the answer into what the model reads. Each test
// works in its own temporary workspace; GREP_LIMITS is put back after each test.
import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it, vi } from "vitest";
import { GREP_LIMITS, grepReport, searchFiles, type Search } from "../../lib/machinery/search.ts";
import type { FoundFile } from "../../lib/machinery/walk.ts";
import { FIFO_RELEASE_MS, msOnFifo, useOutside, useWorkspace, withoutRoot, writeFiles } from "../helpers.ts";

const DEFAULT_LIMITS = { ...GREP_LIMITS };
afterEach(() => void Object.assign(GREP_LIMITS, DEFAULT_LIMITS));

/** How many workers the searches in `work` started: each worker is handed its search before any file. */
async function workersStarted(work: () => Promise<unknown>): Promise<number> {
  const post = vi.spyOn(Worker.prototype, "postMessage");
  try {
    await work();
    return post.mock.calls.filter(([message]) => (message as { type?: string } | undefined)?.type === "search").length;
  } finally {
    post.mockRestore();
  }
}

type Options = { path?: string; include?: string; mode?: string; maxResults?: number; leaveOut?: (file: FoundFile) => boolean };

describe("searchFiles and grepReport", () => {
  const workspace = useWorkspace();
  const outside = useOutside();

  /** A search as s03's grep makes it: `path` under the workspace (default: all of it), every file (or `include`). */
  const search = (pattern: string, options: Options = {}): Promise<Search> => {
    const given = options.path ?? ".";
    return searchFiles(workspace.dir, path.resolve(workspace.dir, given), given, options.include ?? "**/*", pattern, {
      mode: options.mode ?? "files_with_matches",
      maxResults: options.maxResults ?? 100,
      leaveOut: options.leaveOut,
    });
  };
  /** What the model reads: the search's report. */
  const grep = async (pattern: string, options: Options = {}): Promise<string> => {
    const found = await search(pattern, options);
    const mode = options.mode ?? "files_with_matches";
    return grepReport(found.files, found, mode, options.maxResults ?? 100, `/${pattern}/ in ${options.path ?? "."}`);
  };

  describe("answers", () => {
    it("lists the files with matches, sorted by path, relative to the workspace", async () => {
      writeFiles({ "src/b.ts": "needle\n", "src/a.ts": "no\nneedle here\n", "other.md": "hay\n", "Z.md": "needle\n" });
      expect(await grep("needle")).toBe("Z.md\nsrc/a.ts\nsrc/b.ts");
      expect(await grep("needle", { path: "src" })).toBe("src/a.ts\nsrc/b.ts");
      const found = await search("needle");
      expect(found.files.map((file) => file.shown)).toEqual(["Z.md", "other.md", "src/a.ts", "src/b.ts"]);
      expect(found.results.map((result) => result?.count)).toEqual([1, undefined, 1, 1]);
      expect(found.searched).toEqual([true, true, true, true]);
      expect([found.timedOut, found.stuckIn, found.unreadable]).toEqual([false, [], []]);
    });

    it("in content mode shows path:line: text, without the \\r of CRLF lines", async () => {
      writeFiles({ "a.txt": "one\r\ntwo needle\r\nthree\r\nneedle\r\n" });
      expect(await grep("needle$", { mode: "content" })).toBe("a.txt:2: two needle\na.txt:4: needle");
    });

    it("in count mode shows the number of matching lines per file", async () => {
      writeFiles({ "a.txt": "x\nx\ny\n", "b.txt": "x\n", "c.txt": "y\n" });
      expect(await grep("x", { mode: "count" })).toBe("a.txt: 2\nb.txt: 1");
    });

    it("counts and shows a line once, however often it holds the text, in ASCII and in Japanese", async () => {
      writeFiles({ "a.txt": "hit hit\nmiss\nhit\n", "ja.txt": "設定と設定\n設定\n" });
      expect(await grep("hit", { mode: "count" })).toBe("a.txt: 2");
      expect(await grep("hit", { mode: "content" })).toBe("a.txt:1: hit hit\na.txt:3: hit");
      expect(await grep("設定", { mode: "content" })).toBe("ja.txt:1: 設定と設定\nja.txt:2: 設定");
      expect(await grep("h.t", { mode: "count" })).toBe("a.txt: 2");
    });

    it("keeps at most maxResults lines of a file, and counts them all", async () => {
      writeFiles({ "many.txt": "hit\n".repeat(5) });
      const [result] = (await search("hit", { mode: "content", maxResults: 2 })).results;
      expect(result).toEqual({ count: 5, lines: ["many.txt:1: hit", "many.txt:2: hit"] });
    });

    it("cuts a long matching line at 2,000 characters and says so", async () => {
      writeFiles({ "long.txt": `needle${"x".repeat(5000)}\n` });
      expect(await grep("needle", { mode: "content" })).toBe(`long.txt:1: needle${"x".repeat(1994)} [line cut at 2000 characters]`);
    });

    it("searches a file named outright, even one the walk would skip, and refuses what is missing or neither file nor folder", async () => {
      writeFiles({ "a.txt": "one\ntwo\n", "b.txt": "two\n", ".gitignore": "ignored.txt\n", "ignored.txt": "two\n" });
      expect(await grep("two", { path: "a.txt", mode: "content" })).toBe("a.txt:2: two");
      expect(await grep("two", { path: "ignored.txt" })).toBe("ignored.txt");
      expect(await grep("three")).toBe("No matches for /three/ in . (3 files searched)");
      await expect(search("x", { path: "missing" })).rejects.toThrow(/^missing does not exist$/);
      execFileSync("mkfifo", ["pipe"]);
      const ms = await msOnFifo("pipe", () => expect(search("x", { path: "pipe" })).rejects.toThrow(/^pipe is neither a file nor a folder$/));
      expect(ms).toBeLessThan(FIFO_RELEASE_MS);
    });

    it("filters with include: a bare name pattern in every folder, a path pattern with ** and {a,b}", async () => {
      writeFiles({ "top.ts": "hit\n", "src/deep/x.ts": "hit\n", "src/view.tsx": "hit\n", "src/notes.md": "hit\n", "lib/y.ts": "hit\n" });
      expect(await grep("hit", { include: "*.ts" })).toBe("lib/y.ts\nsrc/deep/x.ts\ntop.ts");
      expect(await grep("hit", { include: "src/**/*.{ts,tsx}" })).toBe("src/deep/x.ts\nsrc/view.tsx");
      expect(await grep("hit", { include: "*.{ts,tsx}", path: "src" })).toBe("src/deep/x.ts\nsrc/view.tsx");
    });

    it("passes over what leaveOut names, as if the walk had not found it", async () => {
      writeFiles({ "a.txt": "hit\n", ".agent/saved.txt": "hit\n" });
      const found = await search("hit", { leaveOut: (file) => file.shown.startsWith(".agent/") });
      expect(found.files.map((file) => file.shown)).toEqual(["a.txt"]);
    });

    it("searches nothing, and starts no worker, when there is no file", async () => {
      expect(await search("x")).toEqual({ files: [], results: [], searched: [], stuckIn: [], timedOut: false, unreadable: [] });
    });

    it("answers in the same order every time, whatever order the files were made in", async () => {
      for (const name of ["z/9.txt", "b.txt", "a/b.txt", "a.txt", "A.txt", "a/a.txt"]) writeFiles({ [name]: "hit\n" });
      const first = await grep("hit");
      expect(first).toBe("A.txt\na.txt\na/a.txt\na/b.txt\nb.txt\nz/9.txt");
      expect(await grep("hit")).toBe(first);
    });

    it("names the folders the walk could not read", async () => {
      writeFiles({ "a.txt": "needle\n", "locked/x.txt": "needle\n" });
      chmodSync("locked", 0o000);
      try {
        const found = await withoutRoot(workspace.dir, () => search("needle"));
        expect([found.files.map((file) => file.shown), found.unreadable]).toEqual([["a.txt"], ["locked"]]);
      } finally {
        chmodSync("locked", 0o755);
      }
    });
  });

  describe("line by line, and fast", () => {
    it("matches line by line, whatever the pattern: never across a line break, never past a line's end", async () => {
      // Each file is searched whole first; these patterns would find other lines if that were the answer.
      writeFiles({
        "break.txt": "a\nb\n", // a\sb and [^x]b would match across the break
        "ahead.txt": "xa\nb\n", // a(?!\s) matches at the end of line 1, where nothing follows
        "separator.txt": "a\u2028b\n", // ^b: U+2028 ends a line for ^ with the m flag, not for grep
        "cr.txt": "a\rb\n", // ^b: so does a lone \r
        "empty.txt": "",
        "ends.txt": "one\n\nthree\n", // one empty line (2), and none after the final line break
      });
      expect(await grep("a\\sb", { path: "break.txt" })).toBe("No matches for /a\\sb/ in break.txt (1 files searched)");
      expect(await grep("[^x]b", { path: "break.txt" })).toBe("No matches for /[^x]b/ in break.txt (1 files searched)");
      // Within a line, \s is any space: a lone \r and U+2028 too.
      expect(await grep("a\\sb", { mode: "content" })).toBe("cr.txt:1: a\rb\nseparator.txt:1: a\u2028b");
      expect(await grep("a(?!\\s)", { path: "ahead.txt", mode: "content" })).toBe("ahead.txt:1: xa");
      expect(await grep("^b", { path: "separator.txt" })).toBe("No matches for /^b/ in separator.txt (1 files searched)");
      expect(await grep("^b", { path: "cr.txt" })).toBe("No matches for /^b/ in cr.txt (1 files searched)");
      // The other way round: a lookaround that a line break inside the line would fool.
      expect(await grep("a(?!$)", { path: "cr.txt", mode: "content" })).toBe("cr.txt:1: a\rb");
      expect(await grep("(?<!^)b", { mode: "content" })).toBe("cr.txt:1: a\rb\nseparator.txt:1: a\u2028b");
      expect(await grep("^$", { mode: "content" })).toBe("ends.txt:2: ");
      expect(await grep("e$", { mode: "count" })).toBe("ends.txt: 2");
    });

    it("keeps a pattern that could reach across lines on its line, so it stays fast on a large file", async () => {
      // Over the whole text, [^;]*; and \s*; would scan to the ; on the last line from every
      // line: a search of 100,000 lines would take 100,000 times the file's length.
      GREP_LIMITS.milliseconds = 3000;
      writeFiles({ "many.txt": `${"let a = 1\n".repeat(100_000)}end;\n`, "blank.txt": `${" \n".repeat(100_000)};\n` });
      for (const pattern of ["[^;]*;", "\\s*;", "[^\\S]*;"]) {
        expect(await grep(pattern, { mode: "content" }), pattern).toBe("blank.txt:100001: ;\nmany.txt:100001: end;");
      }
    });

    it("looks for the plain text a pattern needs before decoding, and never for text it may do without", async () => {
      // Each file holds a match only if the optional part is left out, or repeated.
      writeFiles({ "color.txt": "color\n", "ac.txt": "ac\n", "xxy.txt": "xxy\n", "def.txt": "def\n", "dot.txt": "a.b\n", "none.txt": "colour-less\n" });
      const found = async (pattern: string) => (await grep(pattern)).split("\n");
      expect(await found("colou?r")).toEqual(["color.txt", "none.txt"]);
      expect(await found("ab*c")).toEqual(["ac.txt"]);
      expect(await found("x+y")).toEqual(["xxy.txt"]);
      expect(await found("[abc]?def")).toEqual(["def.txt"]);
      expect(await found("a\\.b")).toEqual(["dot.txt"]);
      expect(await found("colou?r-less$")).toEqual(["none.txt"]);
    });

    it("finds and shows non-ASCII text whole, with the right line numbers", async () => {
      writeFiles({ "ja.md": "# 設定\n\n設定を読み込む config\ncafé au lait\n", "plain.txt": "config\n" });
      expect(await grep("config", { mode: "content" })).toBe("ja.md:3: 設定を読み込む config\nplain.txt:1: config");
      expect(await grep("設定", { mode: "content" })).toBe("ja.md:1: # 設定\nja.md:3: 設定を読み込む config");
      // "." is one character, é included: the search may not treat the file as one byte per character.
      expect(await grep("caf. au", { mode: "content" })).toBe("ja.md:4: café au lait");
      expect(await grep("\\w+ au", { mode: "content" })).toBe("No matches for /\\w+ au/ in . (2 files searched)");
    });

    // #region fast-paths
    it("finds, with every fast path, exactly the lines a line-by-line search finds", async () => {
      // Text of every kind, in a file larger than the worker's first buffer (64 kB).
      const sample = [
        "config = 1", "reconfig(x)", "設定 config", "café au lait", "CAFÉ", "naïve résumé", "emoji 🎉 config", "a b", "ab", "abe cde",
        "tab\there", "  indented config  ", "", "x", "xx", "xxx", "Config", "123 456", "a\rb", "a\u2028b", "end;", "let a = 1;",
        "\u00e9\u00e9", "mixed 設定と config と café", "crlf line config\r", "[bracket] (paren) {brace} $dollar ^caret", "back\\slash",
      ].join("\n");
      const bytes = Buffer.concat([Buffer.from(`${sample}\n`.repeat(250)), Buffer.from([0xff, 0xfe, 0x41, 0x0a]), Buffer.from("last config")]);
      writeFileSync("mixed.txt", bytes);
      expect(bytes.length).toBeGreaterThan(65536);
      const text = readFileSync("mixed.txt", "utf8");
      const lines = text.split("\n").map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line));
      const patterns = [
        // plain text, found in the bytes alone
        "config", "設定", "a b", "é", "🎉", "$dollar",
        // ASCII only: the whole text read as latin1
        "co[nm]fig", "\\bconfig\\b", "^\\w+$", "x{2,3}", "(ab|cd)e", "[A-Z][a-z]+", "\\d+ \\d+", "^$", "e$", "", "\\[bracket\\]", "back\\\\slash",
        // the whole text decoded as UTF-8
        "caf.", "設.", "[^a-z]+$", "\\s+config", "\\W", "é+", "^.{2}$", "\\S+é",
        // line by line: a lookaround, or an escape that may stand for a line break
        "a(?=b)", "(?<!re)config", "a\\u2028b", "\\x0a", "\\n",
        // escapes of one character written with letters and digits: none of them is text to look for
        "\\x41", "\\u0043onfig", "\\cIhere", "\\103onfig", "caf\\xe9",
      ];
      for (const pattern of patterns) {
        const regex = new RegExp(pattern);
        const expected = lines.flatMap((line, i) => (regex.test(line) ? [`mixed.txt:${i + 1}: ${line}`] : []));
        const [content] = (await search(pattern, { mode: "content", maxResults: 100_000 })).results;
        expect(content?.lines ?? [], pattern).toEqual(expected);
        const [count] = (await search(pattern, { mode: "count" })).results;
        expect(count?.count ?? 0, pattern).toBe(expected.length);
      }
    });
    // #endregion fast-paths
  });

  describe("what is skipped", () => {
    it("skips a binary file (a NUL byte in its first 8 kB), and searches one whose NUL comes later", async () => {
      writeFiles({ "image.bin": Buffer.from("secret\0\x01\x02"), "late.bin": Buffer.concat([Buffer.from("secret\n"), Buffer.alloc(9000, "x"), Buffer.from([0])]) });
      expect(await grep("secret")).toBe("late.bin\n[skipped 1 file(s): binary]");
    });

    it("skips files over 10 MB, and searches one of exactly 10 MB", async () => {
      writeFiles({ "big.txt": Buffer.alloc(10 * 1024 * 1024 + 1, "needle\n"), "limit.txt": Buffer.alloc(10 * 1024 * 1024, "needle\n"), "small.txt": "needle\n" });
      expect(await grep("needle")).toBe("limit.txt\nsmall.txt\n[skipped 1 file(s): over 10 MB]");
    });

    it("skips a file it cannot read, says how many, and keeps the matches in the others", async () => {
      writeFiles({ "a.txt": "needle\n", "b.txt": "needle\n", "c.txt": "needle\n" });
      chmodSync("b.txt", 0o000);
      const output = await withoutRoot(workspace.dir, () => grep("needle"));
      expect(output).toBe("a.txt\nc.txt\n[could not read 1 file(s), so it was skipped: b.txt (EACCES)]");
    });

    it("is not hung by a file swapped for a FIFO after the walk, nor led out by one swapped for a symlink", async () => {
      writeFileSync(path.join(outside.dir, "secret.txt"), "needle outside\n");
      writeFiles({ "a.txt": "needle\n", "fifo.txt": "needle\n", "link.txt": "needle\n" });
      // The walk found three regular files; before a worker opens them, two are swapped.
      const swap = (file: FoundFile) => {
        if (file.shown === "fifo.txt") {
          rmSync(file.full);
          execFileSync("mkfifo", [file.full]);
        } else if (file.shown === "link.txt") {
          rmSync(file.full);
          symlinkSync(path.join(outside.dir, "secret.txt"), file.full);
        }
        return false;
      };
      let output = "";
      const ms = await msOnFifo("fifo.txt", async () => void (output = await grep("needle", { mode: "content", leaveOut: swap })));
      expect(ms).toBeLessThan(FIFO_RELEASE_MS);
      expect(output).toBe("a.txt:1: needle\n[could not read 1 file(s), so it was skipped: link.txt (ELOOP)]");
    });
  });

  describe("workers and the time limit", () => {
    it("gives users a 10 second limit, and a second worker from 1,000 files", () => {
      expect(GREP_LIMITS).toEqual({ milliseconds: 10_000, filesPerWorker: 1000 });
    });

    it("keeps the path order when several workers share a search", async () => {
      // The workers take files as they go and finish in any order; the answer is in path order.
      GREP_LIMITS.filesPerWorker = 10;
      const names = Array.from({ length: 300 }, (_, i) => `d${i % 7}/f${String(300 - i).padStart(3, "0")}.txt`);
      names.forEach((name, i) => writeFiles({ [name]: i % 3 === 0 ? "hit\n" : "miss\n" }));
      const expected = names.filter((_, i) => i % 3 === 0).sort();
      expect((await grep("hit", { maxResults: 5000 })).split("\n")).toEqual(expected);
      expect(await grep("hit", { mode: "count", maxResults: 3 })).toBe(
        `${expected.slice(0, 3).map((name) => `${name}: 1`).join("\n")}\n[showing the first 3 of ${expected.length} files; narrow path, include or the pattern, or raise max_results]`,
      );
    });

    // #region time-limit
    it("stops a catastrophic pattern at the time limit and says which files were not searched", async () => {
      GREP_LIMITS.milliseconds = 500;
      // (a+)+$ backtracks exponentially on a long run of a's that ends in b.
      writeFiles({ "a.txt": "aaa\n", "slow.txt": `${"a".repeat(40)}b\n`, "z.txt": "aa\n" });
      const started = Date.now();
      const found = await search("(a+)+$");
      expect(Date.now() - started).toBeLessThan(5000);
      expect([found.timedOut, found.searched, found.stuckIn]).toEqual([true, [true, false, false], [1]]);
      const output = grepReport(found.files, found, "files_with_matches", 100, "/(a+)+$/ in .");
      expect(output).toBe(
        "a.txt\n[stopped after 0.5 s: searched 1 of 3 files. Not searched: slow.txt, z.txt. The search was still in slow.txt; " +
          "a pattern with nested repetition such as (a+)+ can run for ever on some lines, so simplify it or narrow path or include]",
      );
      // The stopped worker is gone; the next search gets a working one.
      expect(await grep("^a+$", { path: "z.txt" })).toBe("z.txt");
    });
    // #endregion time-limit

    it.skipIf(availableParallelism() < 2)("when workers share a search, stops at the time limit with what the others found", async () => {
      GREP_LIMITS.milliseconds = 500;
      GREP_LIMITS.filesPerWorker = 10;
      // One worker is stuck in the slow file while another searches the rest.
      for (let i = 0; i < 100; i++) writeFiles({ [`f${String(i).padStart(3, "0")}.txt`]: "aaa\n" });
      writeFiles({ "0-slow.txt": `${"a".repeat(40)}b\n` });
      // A first search starts the workers, so all of them are ready when the timed one begins.
      await search("not there");
      const lines = (await grep("(a+)+$", { mode: "count", maxResults: 2000 })).split("\n");
      expect(lines).toHaveLength(101);
      expect(lines[99]).toBe("f099.txt: 1");
      expect(lines[100]).toMatch(/^\[stopped after 0\.5 s: searched 100 of 101 files\. Not searched: 0-slow\.txt\. The search was still in 0-slow\.txt;/);
    });

    it("starts a second worker for more than filesPerWorker files, and one per core, up to four, for more still", async () => {
      // With the users' 1,000 (above) the same rule needs a thousand files; ten show it faster.
      GREP_LIMITS.filesPerWorker = 10;
      for (let i = 0; i < 10; i++) writeFiles({ [`f${String(i).padStart(2, "0")}.txt`]: "x\n" });
      expect(await workersStarted(() => search("x"))).toBe(1);
      writeFiles({ "f10.txt": "x\n" });
      expect(await workersStarted(() => search("x"))).toBe(Math.min(availableParallelism(), 4, 2));
      for (let i = 11; i < 41; i++) writeFiles({ [`f${i}.txt`]: "x\n" });
      expect(await workersStarted(() => search("x"))).toBe(Math.min(availableParallelism(), 4));
    });
  });

  describe("grepReport", () => {
    const file = (shown: string): FoundFile => ({ shown, full: `/w/${shown}` });
    const answer = (found: Partial<Search> & { files: FoundFile[] }): Search => ({
      results: [], searched: found.files.map(() => true), stuckIn: [], timedOut: false, unreadable: [], ...found,
    });

    it("shows at most max entries, then how many there were, in lines or files", () => {
      const files = ["a.txt", "b.txt"].map(file);
      const found = answer({ files, results: [{ count: 3, lines: ["a.txt:1: x", "a.txt:2: x", "a.txt:3: x"] }, { count: 1, lines: ["b.txt:1: x"] }] });
      expect(grepReport(files, found, "content", 2, "/x/ in .")).toBe(
        "a.txt:1: x\na.txt:2: x\n[showing the first 2 of 4 matching lines; narrow path, include or the pattern, or raise max_results]",
      );
      expect(grepReport(files, found, "files_with_matches", 1, "/x/ in .")).toBe(
        "a.txt\n[showing the first 1 of 2 files; narrow path, include or the pattern, or raise max_results]",
      );
      expect(grepReport(files, found, "count", 5, "/x/ in .")).toBe("a.txt: 3\nb.txt: 1");
    });

    it("says when nothing matched, counting only the files really searched, then what was skipped or unreadable", () => {
      const files = ["a.bin", "b.bin", "big.txt", "c.txt", "d.txt", "e.txt"].map(file);
      const found = answer({ files, results: [{ skipped: "binary" }, { skipped: "binary" }, { skipped: "over 10 MB" }, { unreadable: "EACCES" }, undefined, undefined] });
      expect(grepReport(files, found, "files_with_matches", 100, "/x/ in .")).toBe(
        "No matches for /x/ in . (2 files searched)\n[skipped 3 file(s): binary, over 10 MB]\n[could not read 1 file(s), so it was skipped: c.txt (EACCES)]",
      );
    });

    it("after a timeout names at most ten files not searched, and the first of them when no worker was inside one", () => {
      GREP_LIMITS.milliseconds = 2000;
      const files = Array.from({ length: 13 }, (_, i) => file(`f${String(i).padStart(2, "0")}.txt`));
      const found = answer({ files, results: [{ count: 1, lines: [] }], searched: files.map((_, i) => i === 0), timedOut: true });
      expect(grepReport(files, found, "files_with_matches", 100, "/x/ in .")).toBe(
        "f00.txt\n[stopped after 2 s: searched 1 of 13 files. Not searched: f01.txt, f02.txt, f03.txt, f04.txt, f05.txt, f06.txt, f07.txt, f08.txt, f09.txt, f10.txt and 2 more. " +
          "The search was still in f01.txt; a pattern with nested repetition such as (a+)+ can run for ever on some lines, so simplify it or narrow path or include]",
      );
      expect(grepReport(files, { ...found, stuckIn: [3, 7] }, "files_with_matches", 100, "/x/ in .")).toContain("The search was still in f03.txt and f07.txt;");
    });
  });
});
