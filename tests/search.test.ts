// The search tools' rules, one test each, run against every stage that carries the tool, each
// in its own temporary workspace: grep, glob and ls find things without leaving the
// workspace, without reading what a project ignores, without freezing on a bad pattern or a
// brace bomb, and without losing every match to one file they cannot read.
import { execFileSync } from "node:child_process";
import fs, { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { availableParallelism } from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { stagesWithTool, toolOf, toolParameters, useOutside, useWorkspace } from "./helpers.ts";

/**
 * The stages whose grep is s03's, with its output modes, include and max_results. (s07's
 * grep pages its matches instead, and is tested with s07.)
 */
const grepStages = (
  await Promise.all(
    (await stagesWithTool("grep")).map(async (stage) => {
      const parameters = await toolParameters(stage[1], "grep");
      return ["output_mode", "include", "max_results"].every((name) => parameters.includes(name)) ? [stage] : [];
    }),
  )
).flat();

/** Write files (path → text or bytes) into the workspace, making folders as needed. */
function files(tree: Record<string, string | Buffer>) {
  for (const [name, content] of Object.entries(tree)) {
    mkdirSync(path.dirname(name), { recursive: true });
    writeFileSync(name, content);
  }
}

/**
 * Run `work` as a user who may not read what has mode 000. Root reads everything, so when
 * the tests run as root the process takes the identity of `nobody` for the duration (the
 * workspace is opened to everyone first), and back: root's real id lets it return.
 */
async function withoutRoot<T>(workspace: string, work: () => Promise<T>): Promise<T> {
  if (process.getuid?.() !== 0) return work();
  chmodSync(workspace, 0o755);
  process.seteuid!(65534);
  try {
    return await work();
  } finally {
    process.seteuid!(0);
  }
}

/** Run `work` with a new search worker for every `files` files (as many as there are cores, at most 4). */
async function withWorkersEvery<T>(files: number, stageFile: string, work: () => Promise<T>): Promise<T> {
  const { GREP_LIMITS } = await import(stageFile);
  const before = GREP_LIMITS.filesPerWorker;
  GREP_LIMITS.filesPerWorker = files;
  try {
    return await work();
  } finally {
    GREP_LIMITS.filesPerWorker = before;
  }
}

/** How long `work` takes, in milliseconds, with its result or error. */
async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value?: T; error?: Error }> {
  const started = Date.now();
  try {
    const value = await work();
    return { ms: Date.now() - started, value };
  } catch (error) {
    return { ms: Date.now() - started, error: error as Error };
  }
}

// Products of braces, one huge range, and alternatives that add up: each stands for over 1,000 patterns.
const BOMBS = [
  "{1..1000}{1..1000}",
  "{a,b}".repeat(20),
  "x{1..100000000}",
  "{a,b,c,d,e,f,g,h,i,j}{a,b,c,d,e,f,g,h,i,j}{a,b,c,d,e,f,g,h,i,j,k}",
  `{${"{1..1000},".repeat(1000)}x}`,
];

describe.each(grepStages)("%s grep", (_stage, file) => {
  const workspace = useWorkspace();
  const grep = async (input: Record<string, unknown>) => (await toolOf(file, "grep"))(input);

  it("lists the files with matches by default, sorted, relative to the workspace", async () => {
    files({ "src/b.ts": "needle\n", "src/a.ts": "no\nneedle here\n", "other.md": "hay\n", "Z.md": "needle\n" });
    expect(await grep({ pattern: "needle" })).toBe("Z.md\nsrc/a.ts\nsrc/b.ts");
    expect(await grep({ pattern: "needle", path: "src" })).toBe("src/a.ts\nsrc/b.ts");
  });

  it("in content mode shows path:line: text, without the \\r of CRLF lines", async () => {
    files({ "a.txt": "one\r\ntwo needle\r\nthree\r\nneedle\r\n" });
    expect(await grep({ pattern: "needle$", output_mode: "content" })).toBe("a.txt:2: two needle\na.txt:4: needle");
  });

  it("in count mode shows the number of matching lines per file", async () => {
    files({ "a.txt": "x\nx\ny\n", "b.txt": "x\n", "c.txt": "y\n" });
    expect(await grep({ pattern: "x", output_mode: "count" })).toBe("a.txt: 2\nb.txt: 1");
  });

  it("counts and shows a line once, however often it holds the text, in ASCII and in Japanese", async () => {
    files({ "a.txt": "hit hit\nmiss\nhit\n", "ja.txt": "設定と設定\n設定\n" });
    expect(await grep({ pattern: "hit", output_mode: "count" })).toBe("a.txt: 2");
    expect(await grep({ pattern: "hit", output_mode: "content" })).toBe("a.txt:1: hit hit\na.txt:3: hit");
    expect(await grep({ pattern: "設定", output_mode: "content" })).toBe("ja.txt:1: 設定と設定\nja.txt:2: 設定");
  });

  it("refuses an unknown output_mode, and a max_results that is not a whole number, naming it", async () => {
    await expect(grep({ pattern: "x", output_mode: "lines" })).rejects.toThrow(/output_mode must be one of files_with_matches, content, count/);
    for (const wrong of [0, -1, 2.5, "10", {}]) {
      await expect(grep({ pattern: "x", max_results: wrong }), JSON.stringify(wrong)).rejects.toThrow(/"max_results" must be a whole number at least 1/);
    }
  });

  it("takes null for an optional parameter as left out", async () => {
    files({ "a.txt": "x\n" });
    expect(await grep({ pattern: "x", path: null, include: null, output_mode: null, max_results: null })).toBe("a.txt");
  });

  it("filters with include: a bare name pattern in every folder, a path pattern with ** and {a,b}", async () => {
    files({ "top.ts": "hit\n", "src/deep/x.ts": "hit\n", "src/view.tsx": "hit\n", "src/notes.md": "hit\n", "lib/y.ts": "hit\n" });
    expect(await grep({ pattern: "hit", include: "*.ts" })).toBe("lib/y.ts\nsrc/deep/x.ts\ntop.ts");
    expect(await grep({ pattern: "hit", include: "src/**/*.{ts,tsx}" })).toBe("src/deep/x.ts\nsrc/view.tsx");
  });

  it("skips .git, node_modules, what .gitignore lists (nested ones too) and binary files", async () => {
    files({
      "kept.txt": "secret\n",
      ".git/config": "secret\n",
      "node_modules/pkg/index.js": "secret\n",
      "sub/node_modules/x.js": "secret\n",
      ".gitignore": "dist/\n*.log\n",
      "dist/out.js": "secret\n",
      "debug.log": "secret\n",
      "logs/.gitignore": "!keep.log\n",
      "logs/keep.log": "secret\n",
      "logs/drop.log": "secret\n",
      "image.bin": Buffer.from("secret\0\x01\x02"),
    });
    expect(await grep({ pattern: "secret" })).toBe("kept.txt\nlogs/keep.log\n[skipped 1 file(s): binary]");
  });

  it("obeys .gitignore rules with a path in them, relative to the folder of their .gitignore", async () => {
    files({
      ".gitignore": "/top.txt\nsrc/gen/\n",
      "top.txt": "hit\n",
      "deep/top.txt": "hit\n",
      "src/gen/x.txt": "hit\n",
      "src/keep.txt": "hit\n",
      "pkg/.gitignore": "out/*.txt\n",
      "pkg/out/a.txt": "hit\n",
      "pkg/out/a.md": "hit\n",
      "lib/.gitignore": "build/\n",
      "lib/build/b.txt": "hit\n",
    });
    expect(await grep({ pattern: "hit" })).toBe("deep/top.txt\npkg/out/a.md\nsrc/keep.txt");
    // Searching inside an ignored folder finds nothing there, as from the top.
    expect(await grep({ pattern: "hit", path: "src/gen" })).toMatch(/^No files to search in src\/gen/);
    expect(await grep({ pattern: "hit", path: "lib/build" })).toMatch(/^No files to search in lib\/build/);
  });

  it("skips files over 10 MB, and searches one of exactly 10 MB", async () => {
    files({ "big.txt": Buffer.alloc(10 * 1024 * 1024 + 1, "needle\n"), "limit.txt": Buffer.alloc(10 * 1024 * 1024, "needle\n"), "small.txt": "needle\n" });
    expect(await grep({ pattern: "needle" })).toBe("limit.txt\nsmall.txt\n[skipped 1 file(s): over 10 MB]");
  });

  it("searches a file named outright, and says when nothing matched", async () => {
    files({ "a.txt": "one\ntwo\n", "b.txt": "two\n" });
    expect(await grep({ pattern: "two", path: "a.txt", output_mode: "content" })).toBe("a.txt:2: two");
    expect(await grep({ pattern: "three" })).toBe("No matches for /three/ in . (2 files searched)");
  });

  it("answers in the same order every time, whatever order the files were made in", async () => {
    for (const name of ["z/9.txt", "b.txt", "a/b.txt", "a.txt", "A.txt", "a/a.txt"]) files({ [name]: "hit\n" });
    const first = await grep({ pattern: "hit" });
    expect(first).toBe("A.txt\na.txt\na/a.txt\na/b.txt\nb.txt\nz/9.txt");
    expect(await grep({ pattern: "hit" })).toBe(first);
  });

  it("keeps that order when several workers share a search", async () => {
    // The workers take files as they go and finish in any order; the answer is in path order.
    const names = Array.from({ length: 300 }, (_, i) => `d${i % 7}/f${String(300 - i).padStart(3, "0")}.txt`);
    names.forEach((name, i) => files({ [name]: i % 3 === 0 ? "hit\n" : "miss\n" }));
    const expected = names.filter((_, i) => i % 3 === 0).sort();
    const output = await withWorkersEvery(10, file, () => grep({ pattern: "hit", max_results: 5000 }));
    expect(output.split("\n")).toEqual(expected);
    expect(await withWorkersEvery(10, file, () => grep({ pattern: "hit", output_mode: "count", max_results: 3 }))).toBe(
      `${expected.slice(0, 3).map((name) => `${name}: 1`).join("\n")}\n[showing the first 3 of ${expected.length} files; narrow path, include or the pattern, or raise max_results]`,
    );
  });

  it("stops at max_results (default 100) and says how many there were", async () => {
    files({ "many.txt": "hit\n".repeat(150), "x1.txt": "hit\n", "x2.txt": "hit\n", "x3.txt": "hit\n" });
    const lines = (await grep({ pattern: "hit", output_mode: "content", path: "many.txt" })).split("\n");
    expect(lines).toHaveLength(101);
    expect(lines[99]).toBe("many.txt:100: hit");
    expect(lines[100]).toBe("[showing the first 100 of 150 matching lines; narrow path, include or the pattern, or raise max_results]");
    expect(await grep({ pattern: "hit", max_results: 2 })).toBe(
      "many.txt\nx1.txt\n[showing the first 2 of 4 files; narrow path, include or the pattern, or raise max_results]",
    );
  });

  it("cuts a long matching line at 2,000 characters and says so", async () => {
    files({ "long.txt": `needle${"x".repeat(5000)}\n` });
    const output = await grep({ pattern: "needle", output_mode: "content" });
    expect(output).toBe(`long.txt:1: needle${"x".repeat(1994)} [line cut at 2000 characters]`);
  });

  it("refuses an invalid regular expression, naming the problem, before searching anything", async () => {
    // The path does not exist: if a search had started, that would be the error.
    await expect(grep({ pattern: "(unclosed", path: "missing-folder" })).rejects.toThrow(
      /Invalid regular expression: \/\(unclosed\/: Unterminated group\. No search was run/,
    );
  });

  it("matches line by line, whatever the pattern: never across a line break, never past a line's end", async () => {
    // Each file is searched whole first; these patterns would find other lines if that were the answer.
    files({
      "break.txt": "a\nb\n", // a\sb and [^x]b would match across the break
      "ahead.txt": "xa\nb\n", // a(?!\s) matches at the end of line 1, where nothing follows
      "separator.txt": "a\u2028b\n", // ^b: U+2028 ends a line for ^ with the m flag, not for grep
      "cr.txt": "a\rb\n", // ^b: so does a lone \r
      "empty.txt": "",
      "ends.txt": "one\n\nthree\n", // one empty line (2), and none after the final line break
    });
    expect(await grep({ pattern: "a\\sb", path: "break.txt" })).toBe("No matches for /a\\sb/ in break.txt (1 files searched)");
    expect(await grep({ pattern: "[^x]b", path: "break.txt" })).toBe("No matches for /[^x]b/ in break.txt (1 files searched)");
    // Within a line, \s is any space: a lone \r and U+2028 too.
    expect(await grep({ pattern: "a\\sb", output_mode: "content" })).toBe("cr.txt:1: a\rb\nseparator.txt:1: a\u2028b");
    expect(await grep({ pattern: "a(?!\\s)", path: "ahead.txt", output_mode: "content" })).toBe("ahead.txt:1: xa");
    expect(await grep({ pattern: "^b", path: "separator.txt" })).toBe("No matches for /^b/ in separator.txt (1 files searched)");
    expect(await grep({ pattern: "^b", path: "cr.txt" })).toBe("No matches for /^b/ in cr.txt (1 files searched)");
    expect(await grep({ pattern: "^$", output_mode: "content" })).toBe("ends.txt:2: ");
    expect(await grep({ pattern: "e$", output_mode: "count" })).toBe("ends.txt: 2");
  });

  it("keeps a pattern that could reach across lines on its line, so it stays fast on a large file", async () => {
    // Over the whole text, [^;]*; and \s*; would scan to the end of the file from every position.
    const { GREP_LIMITS } = await import(file);
    const limit = GREP_LIMITS.milliseconds;
    GREP_LIMITS.milliseconds = 3000;
    try {
      files({ "many.txt": "let a = 1\n".repeat(50_000), "blank.txt": " \n".repeat(50_000) });
      expect(await grep({ pattern: "[^;]*;" })).toBe("No matches for /[^;]*;/ in . (2 files searched)");
      expect(await grep({ pattern: "\\s*;" })).toBe("No matches for /\\s*;/ in . (2 files searched)");
      expect(await grep({ pattern: "[^\\S]*;" })).toBe("No matches for /[^\\S]*;/ in . (2 files searched)");
    } finally {
      GREP_LIMITS.milliseconds = limit;
    }
  });

  it("looks for the plain text a pattern needs before decoding, and never for text it may do without", async () => {
    // Each file holds a match only if the optional part is left out, or repeated.
    files({ "color.txt": "color\n", "ac.txt": "ac\n", "xxy.txt": "xxy\n", "def.txt": "def\n", "dot.txt": "a.b\n", "none.txt": "colour-less\n" });
    const found = async (pattern: string) => (await grep({ pattern })).split("\n");
    expect(await found("colou?r")).toEqual(["color.txt", "none.txt"]);
    expect(await found("ab*c")).toEqual(["ac.txt"]);
    expect(await found("x+y")).toEqual(["xxy.txt"]);
    expect(await found("[abc]?def")).toEqual(["def.txt"]);
    expect(await found("a\\.b")).toEqual(["dot.txt"]);
    expect(await found("colou?r-less$")).toEqual(["none.txt"]);
  });

  it("finds and shows non-ASCII text whole, with the right line numbers", async () => {
    files({ "ja.md": "# 設定\n\n設定を読み込む config\ncafé au lait\n", "plain.txt": "config\n" });
    expect(await grep({ pattern: "config", output_mode: "content" })).toBe("ja.md:3: 設定を読み込む config\nplain.txt:1: config");
    expect(await grep({ pattern: "設定", output_mode: "content" })).toBe("ja.md:1: # 設定\nja.md:3: 設定を読み込む config");
    // "." is one character, é included: the search may not treat the file as one byte per character.
    expect(await grep({ pattern: "caf. au", output_mode: "content" })).toBe("ja.md:4: café au lait");
    expect(await grep({ pattern: "\\w+ au", output_mode: "content" })).toBe("No matches for /\\w+ au/ in . (2 files searched)");
  });

  it("skips a file it cannot read, says how many, and keeps the matches in the others", async () => {
    files({ "a.txt": "needle\n", "b.txt": "needle\n", "c.txt": "needle\n" });
    chmodSync("b.txt", 0o000);
    const output = await withoutRoot(workspace.dir, () => grep({ pattern: "needle" }));
    expect(output).toBe("a.txt\nc.txt\n[could not read 1 file(s), so it was skipped: b.txt (EACCES)]");
  });

  it("skips a folder it cannot read, and one whose .gitignore it cannot read, and says so", async () => {
    files({ "a.txt": "needle\n", "locked/x.txt": "needle\n", "hidden/.gitignore": "*.env\n", "hidden/y.txt": "needle\n" });
    chmodSync("locked", 0o000);
    chmodSync("hidden/.gitignore", 0o000);
    try {
      const output = await withoutRoot(workspace.dir, () => grep({ pattern: "needle" }));
      expect(output).toBe("a.txt\n[could not read 2 folder(s), so they were skipped: hidden, locked]");
    } finally {
      chmodSync("locked", 0o755);
    }
  });

  it("does not wait on a FIFO in the workspace, nor list it", async () => {
    files({ "a.txt": "needle\n" });
    execFileSync("mkfifo", ["pipe"]);
    expect(await grep({ pattern: "needle" })).toBe("a.txt");
    expect(await (await toolOf(file, "glob"))({ pattern: "*" })).toBe("a.txt");
    await expect(grep({ pattern: "needle", path: "pipe" })).rejects.toThrow(/pipe is neither a file nor a folder/);
  });

  it("refuses an include whose braces stand for too many patterns, at once and before searching", async () => {
    files({ "a.txt": "needle\n" });
    for (const bomb of BOMBS) {
      const { ms, error } = await timed(() => grep({ pattern: "needle", include: bomb }));
      expect(error?.message, bomb).toMatch(/stands for more than 1000 patterns once its braces are expanded.*nothing was searched/);
      expect(ms, bomb).toBeLessThan(1000);
    }
  });

  it("stops a catastrophic pattern at the time limit and says which files were not searched", async () => {
    const { GREP_LIMITS } = await import(file);
    const limit = GREP_LIMITS.milliseconds;
    GREP_LIMITS.milliseconds = 500;
    try {
      // (a+)+$ backtracks exponentially on a long run of a's that ends in b.
      files({ "a.txt": "aaa\n", "slow.txt": `${"a".repeat(40)}b\n`, "z.txt": "aa\n" });
      const started = Date.now();
      const output = await grep({ pattern: "(a+)+$" });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(output.split("\n")[0]).toBe("a.txt");
      expect(output).toContain("[stopped after 0.5 s: searched 1 of 3 files. Not searched: slow.txt, z.txt. The search was still in slow.txt;");
      // The stopped worker is gone; the next search gets a working one.
      expect(await grep({ pattern: "^a+$", path: "z.txt" })).toBe("z.txt");
    } finally {
      GREP_LIMITS.milliseconds = limit;
    }
  });

  it.skipIf(availableParallelism() < 2)("when workers share a search, stops at the time limit with what the others found", async () => {
    const { GREP_LIMITS } = await import(file);
    const limit = GREP_LIMITS.milliseconds;
    GREP_LIMITS.milliseconds = 500;
    try {
      // One worker is stuck in the slow file while another searches the rest.
      for (let i = 0; i < 100; i++) files({ [`f${String(i).padStart(3, "0")}.txt`]: "aaa\n" });
      files({ "0-slow.txt": `${"a".repeat(40)}b\n` });
      // A first search starts the workers, so all of them are ready when the timed one begins.
      await withWorkersEvery(10, file, () => grep({ pattern: "not there" }));
      const output = await withWorkersEvery(10, file, () => grep({ pattern: "(a+)+$", output_mode: "count", max_results: 2000 }));
      const lines = output.split("\n");
      expect(lines).toHaveLength(101);
      expect(lines[99]).toBe("f099.txt: 1");
      expect(lines[100]).toMatch(/^\[stopped after 0\.5 s: searched 100 of 101 files\. Not searched: 0-slow\.txt\. The search was still in 0-slow\.txt;/);
    } finally {
      GREP_LIMITS.milliseconds = limit;
    }
  });

  it("gives users a 10 second limit, and a second worker from 1,000 files", async () => {
    expect((await import(file)).GREP_LIMITS).toEqual({ milliseconds: 10_000, filesPerWorker: 1000 });
  });
});

describe.each(await stagesWithTool("glob"))("%s glob", (_stage, file) => {
  useWorkspace();
  const glob = async (input: Record<string, unknown>) => (await toolOf(file, "glob"))(input);
  const sorted = async (input: Record<string, unknown>) => (await glob(input)).split("\n").sort();

  it("matches ** across folders and {a,b} alternatives, relative to the workspace", async () => {
    files({ "a.ts": "", "src/b.ts": "", "src/deep/c.ts": "", "src/d.js": "", "e.json": "", "f.md": "" });
    expect(await sorted({ pattern: "**/*.ts" })).toEqual(["a.ts", "src/b.ts", "src/deep/c.ts"]);
    expect(await sorted({ pattern: "*.{json,md}" })).toEqual(["e.json", "f.md"]);
    expect(await sorted({ pattern: "**/*.{js,ts}", path: "src" })).toEqual(["src/b.ts", "src/d.js", "src/deep/c.ts"]);
  });

  it("matches **/name against the name alone, and a longer pattern part by part", async () => {
    files({ "ab.ts": "", "x/ab.ts": "", "a/b.ts": "", "x/a/b.ts": "", "src/c.ts": "", "x/src/c.ts": "", "y/src": "", "lib/src/d.js": "" });
    // The * of a*.ts never takes a /: b.ts in a folder named a is no match.
    expect(await sorted({ pattern: "**/a*.ts" })).toEqual(["ab.ts", "x/ab.ts"]);
    expect(await sorted({ pattern: "**/*" })).toEqual(["a/b.ts", "ab.ts", "lib/src/d.js", "src/c.ts", "x/a/b.ts", "x/ab.ts", "x/src/c.ts", "y/src"]);
    // Three parts: the file must be right inside a folder named src, at any depth.
    expect(await sorted({ pattern: "**/src/*.ts" })).toEqual(["src/c.ts", "x/src/c.ts"]);
    expect(await sorted({ pattern: "**/src" })).toEqual(["y/src"]);
  });

  it("knows ?, [a-c], [!a], ranges {1..3} and {01..03}, nested braces, dotfiles and \\ escapes", async () => {
    files({
      "a1.txt": "", "b2.txt": "", "c3.txt": "", "d4.txt": "", "v01.log": "", "v03.log": "", "v3.log": "",
      "src/x.ts": "", "lib/y.js": "", "lib/y.ts": "", ".env": "", "star*.md": "", "stars.md": "", "{a}.txt": "",
    });
    expect(await sorted({ pattern: "?1.txt" })).toEqual(["a1.txt"]);
    expect(await sorted({ pattern: "[a-c]*.txt" })).toEqual(["a1.txt", "b2.txt", "c3.txt"]);
    expect(await sorted({ pattern: "[!a-c]?.txt" })).toEqual(["d4.txt"]);
    expect(await sorted({ pattern: "?{1..3}.txt" })).toEqual(["a1.txt", "b2.txt", "c3.txt"]);
    expect(await sorted({ pattern: "v{01..03}.log" })).toEqual(["v01.log", "v03.log"]);
    expect(await sorted({ pattern: "{src,lib/{y.js,nothing}}/**/*" })).toEqual(["src/x.ts"]);
    expect(await sorted({ pattern: "{src/*,lib/y.{js,ts}}" })).toEqual(["lib/y.js", "lib/y.ts", "src/x.ts"]);
    expect(await sorted({ pattern: ".e*" })).toEqual([".env"]);
    expect(await sorted({ pattern: "star\\*.md" })).toEqual(["star*.md"]);
    expect(await sorted({ pattern: "{a}.txt" })).toEqual(["{a}.txt"]); // one alternative: plain braces
  });

  it("lists the newest first, and files of the same age by path", async () => {
    files({ "old.txt": "", "new.txt": "", "mid.txt": "", "b-same.txt": "", "a-same.txt": "" });
    const at = (name: string, seconds: number) => utimesSync(name, seconds, seconds);
    at("old.txt", 1_000_000);
    at("mid.txt", 2_000_000);
    at("new.txt", 3_000_000);
    at("a-same.txt", 1_500_000);
    at("b-same.txt", 1_500_000);
    expect(await glob({ pattern: "*.txt" })).toBe("new.txt\nmid.txt\na-same.txt\nb-same.txt\nold.txt");
  });

  it("shows at most 100 paths, then how many more there are", async () => {
    for (let i = 0; i < 105; i++) files({ [`f${String(i).padStart(3, "0")}.txt`]: "" });
    const lines = (await glob({ pattern: "*.txt" })).split("\n");
    expect(lines).toHaveLength(101);
    expect(lines[100]).toBe("… and 5 more");
  });

  it("shows the newest 100 of many, in order, whatever their names, and counts the older ones", async () => {
    // 150 files whose age has nothing to do with their name (67 and 150 share no factor).
    const name = (i: number) => `f${String(i).padStart(3, "0")}.txt`;
    const ages = Array.from({ length: 150 }, (_, i) => (i * 67) % 150);
    ages.forEach((_, i) => files({ [name(i)]: "" }));
    ages.forEach((age, i) => utimesSync(name(i), 1_000_000 + age, 1_000_000 + age));
    const newest = ages.map((age, i) => ({ age, name: name(i) })).sort((a, b) => b.age - a.age);
    const lines = (await glob({ pattern: "*.txt" })).split("\n");
    expect(lines.slice(0, 100)).toEqual(newest.slice(0, 100).map((file) => file.name));
    expect(lines[100]).toBe("… and 50 more");
  });

  it("leaves out a file removed between the walk and the look at its time, and does not count it", async () => {
    files({ "kept.txt": "", "gone.txt": "" });
    // Another process deletes gone.txt just as glob asks for its time. (The stages import
    // statSync by name: syncBuiltinESMExports carries the stand-in over to that import.)
    const realStat = fs.statSync;
    const stat = vi.spyOn(fs, "statSync").mockImplementation(((file: string, options?: object) => {
      if (path.basename(String(file)) === "gone.txt") rmSync(file, { force: true });
      return realStat(file, options);
    }) as typeof fs.statSync);
    syncBuiltinESMExports();
    try {
      expect(await glob({ pattern: "*.txt" })).toBe("kept.txt");
      expect(stat.mock.calls.map(([file]) => path.basename(String(file)))).toContain("gone.txt");
      files({ "gone.txt": "" });
      expect(await glob({ pattern: "gone*" })).toBe("No files match gone* in .");
    } finally {
      stat.mockRestore();
      syncBuiltinESMExports();
    }
  });

  it("skips .git, node_modules and what .gitignore lists, as grep does", async () => {
    files({ ".gitignore": "build/\n", "src/a.js": "", ".git/hooks/x.js": "", "node_modules/p/i.js": "", "build/out.js": "" });
    expect(await glob({ pattern: "**/*.js" })).toBe("src/a.js");
  });

  it("refuses a pattern that climbs out with .. or starts at the root", async () => {
    await expect(glob({ pattern: "../*" })).rejects.toThrow(/must stay inside the folder searched/);
    await expect(glob({ pattern: "/etc/*" })).rejects.toThrow(/must stay inside the folder searched/);
    await expect(glob({ pattern: "src/../../*" })).rejects.toThrow(/must stay inside the folder searched/);
  });

  it("refuses a pattern whose braces stand for more than 1,000 patterns, at once, and allows 1,000", async () => {
    files({ "f5-5-5.txt": "" });
    for (const bomb of BOMBS) {
      const { ms, error } = await timed(() => glob({ pattern: bomb }));
      expect(error?.message, bomb).toMatch(/the pattern .* stands for more than 1000 patterns once its braces are expanded.*nothing was searched/);
      expect(ms, bomb).toBeLessThan(1000);
    }
    expect(await glob({ pattern: "f{1..10}-{1..10}-{1..10}.txt" })).toBe("f5-5-5.txt");
    await expect(glob({ pattern: "f{1..10}-{1..10}-{1..10}{,x}.txt" })).rejects.toThrow(/more than 1000 patterns/);
  });

  it("matches many stars against a long name at once, where a regular expression would backtrack for seconds", async () => {
    files({ [`${"a".repeat(80)}.txt`]: "", [`${"a".repeat(79)}b.txt`]: "" });
    const { ms, value } = await timed(() => glob({ pattern: "*a*a*a*a*a*b.txt" }));
    expect(value).toBe(`${"a".repeat(79)}b.txt`);
    expect(ms).toBeLessThan(1000);
  });

  it("reads a pattern of unclosed braces in time proportional to its length", async () => {
    files({ "a.txt": "" });
    const { ms, value } = await timed(() => glob({ pattern: `${"{a,".repeat(2000)}*.txt` }));
    expect(value).toBe(`No files match ${"{a,".repeat(2000)}*.txt in .`);
    expect(ms).toBeLessThan(1000);
  });

  it("refuses a character class that is not valid, with the reason", async () => {
    await expect(glob({ pattern: "[z-a].txt" })).rejects.toThrow(/\[z-a\]\.txt is not a valid glob: .*Range out of order/);
  });

  it("skips a folder it cannot read and says so", async () => {
    files({ "a.txt": "", "locked/b.txt": "" });
    chmodSync("locked", 0o000);
    try {
      const output = await withoutRoot(process.cwd(), () => glob({ pattern: "**/*.txt" }));
      expect(output).toBe("a.txt\n[could not read 1 folder(s), so it was skipped: locked]");
    } finally {
      chmodSync("locked", 0o755);
    }
  });

  it("says so when nothing matches, and takes a null path as left out", async () => {
    expect(await glob({ pattern: "**/*.rs" })).toBe("No files match **/*.rs in .");
    expect(await glob({ pattern: "**/*.rs", path: null })).toBe("No files match **/*.rs in .");
  });
});

describe.each(await stagesWithTool("ls"))("%s ls", (_stage, file) => {
  useWorkspace();
  const ls = async (input: Record<string, unknown>) => (await toolOf(file, "ls"))(input);

  it("lists entries sorted, folders with a trailing /", async () => {
    files({ "b.txt": "", "a/x.txt": "", "C.md": "", ".hidden": "", "a.txt": "" });
    expect(await ls({})).toBe(".hidden\nC.md\na/\na.txt\nb.txt");
    expect(await ls({ path: "a" })).toBe("x.txt");
  });

  it("shows at most 100 entries, then how many more there are", async () => {
    for (let i = 0; i < 130; i++) files({ [`f${String(i).padStart(3, "0")}.txt`]: "" });
    const lines = (await ls({})).split("\n");
    expect(lines).toHaveLength(101);
    expect(lines[99]).toBe("f099.txt");
    expect(lines[100]).toBe("… and 30 more");
  });

  it("takes a null path as left out", async () => {
    files({ "a.txt": "" });
    expect(await ls({ path: null })).toBe("a.txt");
  });

  it("says when a folder is empty, missing or a file", async () => {
    mkdirSync("empty");
    files({ "f.txt": "" });
    expect(await ls({ path: "empty" })).toBe("empty is empty");
    await expect(ls({ path: "nope" })).rejects.toThrow(/nope does not exist/);
    await expect(ls({ path: "f.txt" })).rejects.toThrow(/f\.txt is a file, not a folder/);
  });
});

describe.each(grepStages)("%s search tools stay inside the workspace", (_stage, file) => {
  const workspace = useWorkspace();
  const outside = useOutside();
  const call = async (name: string, input: Record<string, unknown>) => (await toolOf(file, name))(input);
  const secret = () => readFileSync(path.join(outside.dir, "secret.txt"), "utf8");

  const attempts = (where: string) => [
    ["grep", { pattern: "secret", path: where }],
    ["grep", { pattern: "secret", include: `${where}/*` }],
    ["glob", { pattern: "*", path: where }],
    ["ls", { path: where }],
  ] as const;

  it("refuses ../ and .. for every search tool", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "secret = 1\n");
    for (const where of [path.relative(workspace.dir, outside.dir), ".."]) {
      for (const [name, input] of attempts(where)) {
        await expect(call(name, input), `${name} ${JSON.stringify(input)}`).rejects.toThrow(/outside the workspace|must stay inside the folder searched/);
      }
    }
    expect(secret()).toBe("secret = 1\n");
  });

  it("refuses an absolute path outside for every search tool", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "secret = 1\n");
    for (const [name, input] of attempts(outside.dir)) await expect(call(name, input), name).rejects.toThrow(/outside the workspace|must stay inside/);
  });

  it("refuses a symlink that leads outside for every search tool", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "secret = 1\n");
    symlinkSync(outside.dir, "door");
    for (const [name, input] of attempts("door").filter(([, input]) => !("include" in input))) {
      await expect(call(name, input), name).rejects.toThrow(/through a symlink/);
    }
  });

  it("does not follow symlinks out while searching the workspace", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "secret = 1\n");
    symlinkSync(outside.dir, "door");
    symlinkSync(path.join(outside.dir, "secret.txt"), "link.txt");
    files({ "mine.txt": "secret = 0\n" });
    expect(await call("grep", { pattern: "secret" })).toBe("mine.txt");
    expect(await call("grep", { pattern: "secret", include: "door/*" })).toMatch(/^No files to search in \./);
    expect(await call("glob", { pattern: "**/*" })).toBe("mine.txt");
    expect(await call("glob", { pattern: "door/*" })).toBe("No files match door/* in .");
    // ls names the links, as they are in the workspace, without looking through them.
    expect(await call("ls", {})).toBe("door\nlink.txt\nmine.txt");
  });
});
