// s03's rules, one test each, each in its own temporary workspace: edit_file changes one
// exact place or nothing at all; grep, glob and ls find things without leaving the
// workspace, without reading what a project ignores, and without freezing on a bad pattern.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/scenario.ts";
import { resultText, toolResults, useReplay, useWorkspace, runTurns, usePrinted } from "./helpers.ts";

type Handler = (input: Record<string, unknown>) => string | Promise<string>;
const stage = async () => await import("../agents/s03_search_and_edit.ts");
const tool = async (name: string): Promise<Handler> => (await stage()).TOOL_HANDLERS[name];
const call = async (name: string, input: Record<string, unknown>) => String(await (await tool(name))(input));

/** Write files (path → text or bytes) into the workspace, making folders as needed. */
function files(tree: Record<string, string | Buffer>) {
  for (const [name, content] of Object.entries(tree)) {
    mkdirSync(path.dirname(name), { recursive: true });
    writeFileSync(name, content);
  }
}

/** Expect a tool call to fail with `message`, and `file` to keep exactly the bytes it had. */
async function expectRefused(name: string, input: Record<string, unknown>, message: RegExp, file = String(input.path)) {
  const before = readFileSync(file);
  await expect(call(name, input)).rejects.toThrow(message);
  expect(readFileSync(file).equals(before)).toBe(true);
}

describe("s03 edit_file", () => {
  useWorkspace();

  it("replaces the one match and leaves every other byte as it was", async () => {
    // Tabs, non-ASCII text, a lone \r and no final newline: none of it may move.
    files({ "f.txt": "\tcafé = 1;\r\nnaïve\rvalue = 2;\n// fin ✓" });
    expect(await call("edit_file", { path: "f.txt", old_string: "value = 2", new_string: "value = 3" })).toBe(
      "Edited f.txt: replaced 1 occurrence",
    );
    expect(readFileSync("f.txt").equals(Buffer.from("\tcafé = 1;\r\nnaïve\rvalue = 3;\n// fin ✓"))).toBe(true);
  });

  it("refuses old_string that is not there, with a hint, and changes nothing", async () => {
    files({ "f.txt": "alpha\nbeta\n" });
    await expectRefused("edit_file", { path: "f.txt", old_string: "gamma", new_string: "x" }, /not found in f\.txt: read the file and copy the text exactly: whitespace, indentation and line endings \(this file uses LF\)\. The file is unchanged/);
  });

  it("hints at a missing final newline", async () => {
    files({ "end.txt": "first\nlast line" });
    await expectRefused("edit_file", { path: "end.txt", old_string: "last line\n", new_string: "x\n" }, /no newline at its end/);
  });

  it("hints at whitespace when the text matches with spaces and tabs ignored", async () => {
    files({ "tabs.py": "def f():\n\treturn 1\n" });
    await expectRefused("edit_file", { path: "tabs.py", old_string: "    return 1", new_string: "    return 2" }, /spaces and tabs are ignored/);
  });

  it("refuses several matches, giving the count and asking for more context or replace_all", async () => {
    files({ "m.txt": "x = 1\ny = 1\nz = 1\n" });
    await expectRefused("edit_file", { path: "m.txt", old_string: "= 1", new_string: "= 2" }, /occurs 3 times in m\.txt\. Include more of the surrounding lines.*or set replace_all to true.*The file is unchanged/);
  });

  it("with replace_all, replaces every match and says how many", async () => {
    files({ "m.txt": "x = 1\ny = 1\nz = 1\n" });
    expect(await call("edit_file", { path: "m.txt", old_string: "= 1", new_string: "= 2", replace_all: true })).toBe(
      "Edited m.txt: replaced 3 occurrences",
    );
    expect(readFileSync("m.txt", "utf8")).toBe("x = 2\ny = 2\nz = 2\n");
  });

  it("refuses old_string equal to new_string, an empty old_string and a replace_all that is not a boolean", async () => {
    files({ "f.txt": "same\n" });
    await expectRefused("edit_file", { path: "f.txt", old_string: "same", new_string: "same" }, /are the same/);
    await expectRefused("edit_file", { path: "f.txt", old_string: "", new_string: "x" }, /old_string is empty/);
    await expectRefused("edit_file", { path: "f.txt", old_string: "same", new_string: "x", replace_all: "yes" }, /replace_all" must be true or false/);
  });

  it("inserts new_string literally: $& and $1 are text, not replacement patterns", async () => {
    files({ "one.txt": "price: TBD\n", "all.txt": "a TBD, b TBD\n" });
    await call("edit_file", { path: "one.txt", old_string: "TBD", new_string: "$& or $1 or $$" });
    await call("edit_file", { path: "all.txt", old_string: "TBD", new_string: "$&$1", replace_all: true });
    expect(readFileSync("one.txt", "utf8")).toBe("price: $& or $1 or $$\n");
    expect(readFileSync("all.txt", "utf8")).toBe("a $&$1, b $&$1\n");
  });

  it("keeps a CRLF file CRLF when old_string and new_string use \\n", async () => {
    files({ "win.txt": "one\r\ntwo\r\nthree\r\n" });
    await call("edit_file", { path: "win.txt", old_string: "one\ntwo", new_string: "one\n2\ntwo" });
    expect(readFileSync("win.txt", "utf8")).toBe("one\r\n2\r\ntwo\r\nthree\r\n");
  });
});

describe("s03 grep", () => {
  useWorkspace();

  it("lists the files with matches by default, sorted, relative to the workspace", async () => {
    files({ "src/b.ts": "needle\n", "src/a.ts": "no\nneedle here\n", "other.md": "hay\n", "Z.md": "needle\n" });
    expect(await call("grep", { pattern: "needle" })).toBe("Z.md\nsrc/a.ts\nsrc/b.ts");
    expect(await call("grep", { pattern: "needle", path: "src" })).toBe("src/a.ts\nsrc/b.ts");
  });

  it("in content mode shows path:line: text, without the \\r of CRLF lines", async () => {
    files({ "a.txt": "one\r\ntwo needle\r\nthree\r\nneedle\r\n" });
    expect(await call("grep", { pattern: "needle$", output_mode: "content" })).toBe("a.txt:2: two needle\na.txt:4: needle");
  });

  it("in count mode shows the number of matching lines per file", async () => {
    files({ "a.txt": "x\nx\ny\n", "b.txt": "x\n", "c.txt": "y\n" });
    expect(await call("grep", { pattern: "x", output_mode: "count" })).toBe("a.txt: 2\nb.txt: 1");
  });

  it("refuses an unknown output_mode", async () => {
    await expect(call("grep", { pattern: "x", output_mode: "lines" })).rejects.toThrow(/output_mode must be one of files_with_matches, content, count/);
  });

  it("filters with include: a bare name pattern in every folder, a path pattern with ** and {a,b}", async () => {
    files({ "top.ts": "hit\n", "src/deep/x.ts": "hit\n", "src/view.tsx": "hit\n", "src/notes.md": "hit\n", "lib/y.ts": "hit\n" });
    expect(await call("grep", { pattern: "hit", include: "*.ts" })).toBe("lib/y.ts\nsrc/deep/x.ts\ntop.ts");
    expect(await call("grep", { pattern: "hit", include: "src/**/*.{ts,tsx}" })).toBe("src/deep/x.ts\nsrc/view.tsx");
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
    expect(await call("grep", { pattern: "secret" })).toBe("kept.txt\nlogs/keep.log\n[skipped 1 file(s): binary]");
  });

  it("skips files over 10 MB", async () => {
    files({ "big.txt": Buffer.alloc(10 * 1024 * 1024 + 1, "needle\n"), "small.txt": "needle\n" });
    expect(await call("grep", { pattern: "needle" })).toBe("small.txt\n[skipped 1 file(s): over 10 MB]");
  });

  it("searches a file named outright, and says when nothing matched", async () => {
    files({ "a.txt": "one\ntwo\n", "b.txt": "two\n" });
    expect(await call("grep", { pattern: "two", path: "a.txt", output_mode: "content" })).toBe("a.txt:2: two");
    expect(await call("grep", { pattern: "three" })).toBe("No matches for /three/ in . (2 files searched)");
  });

  it("answers in the same order every time, whatever order the files were made in", async () => {
    for (const name of ["z/9.txt", "b.txt", "a/b.txt", "a.txt", "A.txt", "a/a.txt"]) files({ [name]: "hit\n" });
    const first = await call("grep", { pattern: "hit" });
    expect(first).toBe("A.txt\na.txt\na/a.txt\na/b.txt\nb.txt\nz/9.txt");
    expect(await call("grep", { pattern: "hit" })).toBe(first);
  });

  it("stops at max_results (default 100) and says how many there were", async () => {
    files({ "many.txt": "hit\n".repeat(150), "x1.txt": "hit\n", "x2.txt": "hit\n", "x3.txt": "hit\n" });
    const lines = (await call("grep", { pattern: "hit", output_mode: "content", path: "many.txt" })).split("\n");
    expect(lines).toHaveLength(101);
    expect(lines[99]).toBe("many.txt:100: hit");
    expect(lines[100]).toBe("[showing the first 100 of 150 matching lines; narrow path, include or the pattern, or raise max_results]");
    expect(await call("grep", { pattern: "hit", max_results: 2 })).toBe(
      "many.txt\nx1.txt\n[showing the first 2 of 4 files; narrow path, include or the pattern, or raise max_results]",
    );
  });

  it("cuts a long matching line at 2,000 characters and says so", async () => {
    files({ "long.txt": `needle${"x".repeat(5000)}\n` });
    const output = await call("grep", { pattern: "needle", output_mode: "content" });
    expect(output).toBe(`long.txt:1: needle${"x".repeat(1994)} [line cut at 2000 characters]`);
  });

  it("refuses an invalid regular expression, naming the problem, before searching anything", async () => {
    // The path does not exist: if a search had started, that would be the error.
    await expect(call("grep", { pattern: "(unclosed", path: "missing-folder" })).rejects.toThrow(
      /Invalid regular expression: \/\(unclosed\/: Unterminated group\. No search was run/,
    );
  });

  it("stops a catastrophic pattern at the time limit and says which files were not searched", async () => {
    const { GREP_LIMITS } = await stage();
    const limit = GREP_LIMITS.milliseconds;
    GREP_LIMITS.milliseconds = 500;
    try {
      // (a+)+$ backtracks exponentially on a long run of a's that ends in b.
      files({ "a.txt": "aaa\n", "slow.txt": `${"a".repeat(40)}b\n`, "z.txt": "aa\n" });
      const started = Date.now();
      const output = await call("grep", { pattern: "(a+)+$" });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(output.split("\n")[0]).toBe("a.txt");
      expect(output).toContain("[stopped after 0.5 s: searched 1 of 3 files. Not searched: slow.txt, z.txt. The search was still in slow.txt;");
    } finally {
      GREP_LIMITS.milliseconds = limit;
    }
  });

  it("gives users a 10 second limit", async () => {
    expect((await stage()).GREP_LIMITS.milliseconds).toBe(10_000);
  });
});

describe("s03 glob", () => {
  useWorkspace();

  it("matches ** across folders and {a,b} alternatives, relative to the workspace", async () => {
    files({ "a.ts": "", "src/b.ts": "", "src/deep/c.ts": "", "src/d.js": "", "e.json": "", "f.md": "" });
    const sorted = async (input: Record<string, unknown>) => (await call("glob", input)).split("\n").sort();
    expect(await sorted({ pattern: "**/*.ts" })).toEqual(["a.ts", "src/b.ts", "src/deep/c.ts"]);
    expect(await sorted({ pattern: "*.{json,md}" })).toEqual(["e.json", "f.md"]);
    expect(await sorted({ pattern: "**/*.{js,ts}", path: "src" })).toEqual(["src/b.ts", "src/d.js", "src/deep/c.ts"]);
  });

  it("lists the newest first, and files of the same age by path", async () => {
    files({ "old.txt": "", "new.txt": "", "mid.txt": "", "b-same.txt": "", "a-same.txt": "" });
    const at = (name: string, seconds: number) => utimesSync(name, seconds, seconds);
    at("old.txt", 1_000_000);
    at("mid.txt", 2_000_000);
    at("new.txt", 3_000_000);
    at("a-same.txt", 1_500_000);
    at("b-same.txt", 1_500_000);
    expect(await call("glob", { pattern: "*.txt" })).toBe("new.txt\nmid.txt\na-same.txt\nb-same.txt\nold.txt");
  });

  it("shows at most 100 paths, then how many more there are", async () => {
    for (let i = 0; i < 105; i++) files({ [`f${String(i).padStart(3, "0")}.txt`]: "" });
    const lines = (await call("glob", { pattern: "*.txt" })).split("\n");
    expect(lines).toHaveLength(101);
    expect(lines[100]).toBe("… and 5 more");
  });

  it("skips .git, node_modules and what .gitignore lists, as grep does", async () => {
    files({ ".gitignore": "build/\n", "src/a.js": "", ".git/hooks/x.js": "", "node_modules/p/i.js": "", "build/out.js": "" });
    expect(await call("glob", { pattern: "**/*.js" })).toBe("src/a.js");
  });

  it("refuses a pattern that climbs out with .. or starts at the root", async () => {
    await expect(call("glob", { pattern: "../*" })).rejects.toThrow(/must stay inside the folder searched/);
    await expect(call("glob", { pattern: "/etc/*" })).rejects.toThrow(/must stay inside the folder searched/);
    await expect(call("glob", { pattern: "src/../../*" })).rejects.toThrow(/must stay inside the folder searched/);
  });

  it("says so when nothing matches", async () => {
    expect(await call("glob", { pattern: "**/*.rs" })).toBe("No files match **/*.rs in .");
  });
});

describe("s03 ls", () => {
  useWorkspace();

  it("lists entries sorted, folders with a trailing /", async () => {
    files({ "b.txt": "", "a/x.txt": "", "C.md": "", ".hidden": "", "a.txt": "" });
    expect(await call("ls", {})).toBe(".hidden\nC.md\na/\na.txt\nb.txt");
    expect(await call("ls", { path: "a" })).toBe("x.txt");
  });

  it("shows at most 100 entries, then how many more there are", async () => {
    for (let i = 0; i < 130; i++) files({ [`f${String(i).padStart(3, "0")}.txt`]: "" });
    const lines = (await call("ls", {})).split("\n");
    expect(lines).toHaveLength(101);
    expect(lines[99]).toBe("f099.txt");
    expect(lines[100]).toBe("… and 30 more");
  });

  it("says when a folder is empty, missing or a file", async () => {
    mkdirSync("empty");
    files({ "f.txt": "" });
    expect(await call("ls", { path: "empty" })).toBe("empty is empty");
    await expect(call("ls", { path: "nope" })).rejects.toThrow(/nope does not exist/);
    await expect(call("ls", { path: "f.txt" })).rejects.toThrow(/f\.txt is a file, not a folder/);
  });
});

describe("s03 tools stay inside the workspace", () => {
  const workspace = useWorkspace();
  let outside = "";
  beforeEach(() => {
    outside = mkdtempSync(path.join(os.tmpdir(), "workbook-outside-"));
    writeFileSync(path.join(outside, "secret.txt"), "secret = 1\n");
  });
  afterEach(() => rmSync(outside, { recursive: true, force: true }));

  const attempts = (where: string) => [
    ["grep", { pattern: "secret", path: where }],
    ["glob", { pattern: "*", path: where }],
    ["ls", { path: where }],
    ["edit_file", { path: path.join(where, "secret.txt"), old_string: "1", new_string: "2" }],
  ] as const;

  it("refuses ../ for every tool", async () => {
    const escape = path.relative(workspace.dir, outside);
    for (const [name, input] of attempts(escape)) await expect(call(name, input), name).rejects.toThrow(/outside the workspace/);
    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("secret = 1\n");
  });

  it("refuses an absolute path outside for every tool", async () => {
    for (const [name, input] of attempts(outside)) await expect(call(name, input), name).rejects.toThrow(/outside the workspace/);
    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("secret = 1\n");
  });

  it("refuses a symlink that leads outside for every tool", async () => {
    symlinkSync(outside, "door");
    for (const [name, input] of attempts("door")) await expect(call(name, input), name).rejects.toThrow(/through a symlink/);
    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("secret = 1\n");
  });

  it("does not follow symlinks out while searching the workspace", async () => {
    symlinkSync(outside, "door");
    symlinkSync(path.join(outside, "secret.txt"), "link.txt");
    files({ "mine.txt": "secret = 0\n" });
    expect(await call("grep", { pattern: "secret" })).toBe("mine.txt");
    expect(await call("glob", { pattern: "**/*" })).toBe("mine.txt");
    // ls names the links, as they are in the workspace, without looking through them.
    expect(await call("ls", {})).toBe("door\nlink.txt\nmine.txt");
  });
});

describe("s03 demo, through the agent loop", () => {
  const workspace = useWorkspace();
  const replay = useReplay();
  usePrinted();

  it("finds the setting, is refused a non-unique edit, succeeds with more context, then renames with replace_all", async () => {
    const { agentLoop } = await stage();
    const scenario = loadScenario("s03");
    files(scenario.files!);
    const session = replay(scenario);
    await runTurns(agentLoop, scenario.prompts);
    expect(session.verdict()).toEqual([]);
    const texts = (index: number) => toolResults(session, index).map(resultText);

    // ls, glob and grep: dist/ (in .gitignore) is never searched.
    const [listing, scripts, timeouts] = texts(1);
    expect(listing).toBe(".gitignore\nREADME.md\ndist/\npackage.json\nsrc/");
    expect(scripts.split("\n").sort()).toEqual(["src/api.js", "src/config.js", "src/db.js"]);
    expect(timeouts).toContain('src/config.js:3:   api: { baseUrl: "https://api.example.com", timeout: 3000, retries: 2 },');
    expect(timeouts).toContain('src/config.js:4:   db: { host: "localhost", timeout: 3000, retries: 5 },');
    expect(timeouts).not.toContain("dist/");

    const [ambiguous] = toolResults(session, 2);
    expect(ambiguous.is_error).toBe(true);
    expect(resultText(ambiguous)).toMatch(/occurs 2 times in src\/config\.js.*replace_all/);
    expect(texts(3)).toEqual(["Edited src/config.js: replaced 1 occurrence"]);
    expect(texts(4)).toEqual(["api 10000 db 3000\n"]);

    expect(texts(6)).toEqual(["src/api.js: 1\nsrc/config.js: 2\nsrc/db.js: 1"]);
    expect(texts(7)).toEqual([
      "Edited src/config.js: replaced 2 occurrences",
      "Edited src/api.js: replaced 1 occurrence",
      "Edited src/db.js: replaced 1 occurrence",
    ]);
    expect(texts(8)).toEqual([
      "No matches for /\\bretries\\b/ in src (3 files searched)",
      "{ host: 'localhost', timeoutMs: 3000, attempts: 5 }\n",
    ]);
    expect(readFileSync(path.join(workspace.dir, "src/config.js"), "utf8")).toContain(
      'api: { baseUrl: "https://api.example.com", timeout: 10000, maxRetries: 2 }',
    );
    // The ignored build output was not touched.
    expect(readFileSync(path.join(workspace.dir, "dist/bundle.js"), "utf8")).toBe(scenario.files!["dist/bundle.js"]);
  });
});
