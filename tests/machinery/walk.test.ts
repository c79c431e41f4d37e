// lib/machinery/walk.ts, tested once here rather than through every stage's grep and glob: the
// walk that finds the files to search and list. A glob means what a shell's means; a pattern
// whose braces stand for too many patterns is refused before its list grows; a long name is
// matched without backtracking; what .git, node_modules and .gitignore leave out is left out;
// and the walk never follows a link, never opens a FIFO, and says which folders it could not
// read. Each test works in its own temporary workspace. The stages' own use of the walk (the
// sandbox, the messages the model reads) is tested per stage in tests/search.test.ts.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { byName, findFiles, globMatcher, relativeName, unreadableNote, walkFiles, type FoundFile } from "../../lib/machinery/walk.ts";
import { FIFO_RELEASE_MS, msOnFifo, timed, useOutside, useWorkspace, withoutRoot, writeFiles } from "../helpers.ts";

/** Which of `names` the glob matches. */
const matching = (glob: string, names: string[]) => names.filter(globMatcher(glob));

// Products of braces, one huge range, and alternatives that add up: each stands for over 1,000 patterns.
const BOMBS = [
  "{1..1000}{1..1000}",
  "{a,b}".repeat(20),
  "x{1..100000000}",
  "{a,b,c,d,e,f,g,h,i,j}{a,b,c,d,e,f,g,h,i,j}{a,b,c,d,e,f,g,h,i,j,k}",
  // Ten thousand alternatives of 1,000 each: refused at the second, not listed (ten million) and then refused.
  `{${"{1..1000},".repeat(10_000)}x}`,
];

describe("globMatcher: a glob means what a shell's means", () => {
  it("* is any run of characters but /, and ? is one character", () => {
    const names = ["a.ts", "ab.ts", ".env", "src/a.ts", "a1.txt", "a12.txt"];
    expect(matching("*.ts", names)).toEqual(["a.ts", "ab.ts"]);
    expect(matching("a?.txt", names)).toEqual(["a1.txt"]);
    expect(matching("a??.txt", names)).toEqual(["a12.txt"]);
    expect(matching(".e*", names)).toEqual([".env"]);
    expect(matching("*/*.ts", names)).toEqual(["src/a.ts"]);
  });

  it("[a-c] is one of the class, [!a-c] one outside it, and a ] first in the class is a member", () => {
    const names = ["a1.txt", "b2.txt", "c3.txt", "d4.txt", "].txt", "x.txt"];
    expect(matching("[a-c]*.txt", names)).toEqual(["a1.txt", "b2.txt", "c3.txt"]);
    expect(matching("[!a-c]?.txt", names)).toEqual(["d4.txt"]);
    expect(matching("[]x].txt", names)).toEqual(["].txt", "x.txt"]);
    expect(globMatcher("[*]")("*")).toBe(true);
    expect(globMatcher("[*]")("x")).toBe(false);
  });

  it("** is any number of folders, none included", () => {
    const names = ["x.ts", "src/x.ts", "src/a/b/x.ts", "lib/x.ts", "src/x.js"];
    expect(matching("src/**/*.ts", names)).toEqual(["src/x.ts", "src/a/b/x.ts"]);
    expect(matching("**", names)).toEqual(names);
    expect(matching("**/b/*.ts", names)).toEqual(["src/a/b/x.ts"]);
    expect(matching("src/**", names)).toEqual(["src/x.ts", "src/a/b/x.ts", "src/x.js"]);
  });

  it("{a,b} is either, nested braces too, and {1..3}, {01..03}, {3..1}, {-1..1} and {a..c} are ranges", () => {
    expect(matching("*.{json,md}", ["e.json", "f.md", "g.ts"])).toEqual(["e.json", "f.md"]);
    expect(matching("{src,lib/{y.js,nothing}}/**/*", ["src/x.ts", "lib/y.js", "lib/y.js/z", "lib/q.ts"])).toEqual(["src/x.ts", "lib/y.js/z"]);
    expect(matching("{src/*,lib/y.{js,ts}}", ["src/x.ts", "lib/y.js", "lib/y.ts", "lib/y.md"])).toEqual(["src/x.ts", "lib/y.js", "lib/y.ts"]);
    expect(matching("?{1..3}.txt", ["a1.txt", "b2.txt", "c3.txt", "d4.txt"])).toEqual(["a1.txt", "b2.txt", "c3.txt"]);
    expect(matching("v{01..03}.log", ["v01.log", "v02.log", "v03.log", "v3.log", "v04.log"])).toEqual(["v01.log", "v02.log", "v03.log"]);
    expect(matching("{3..1}", ["1", "2", "3", "4", "0"])).toEqual(["1", "2", "3"]);
    expect(matching("{-1..1}", ["-1", "0", "1", "2", "-2"])).toEqual(["-1", "0", "1"]);
    expect(matching("{a..c}x", ["ax", "bx", "cx", "dx"])).toEqual(["ax", "bx", "cx"]);
  });

  it("braces with one alternative, or never closed, are plain characters", () => {
    expect(matching("{a}.txt", ["{a}.txt", "a.txt"])).toEqual(["{a}.txt"]);
    expect(matching("src/{a,b", ["src/{a,b", "src/a", "src/b"])).toEqual(["src/{a,b"]);
  });

  it("a \\ makes the next character plain: \\* \\? \\{ and \\[", () => {
    expect(matching("star\\*.md", ["star*.md", "stars.md"])).toEqual(["star*.md"]);
    expect(matching("a\\?", ["a?", "ab"])).toEqual(["a?"]);
    expect(matching("\\{a,b}.txt", ["{a,b}.txt", "a.txt", "b.txt"])).toEqual(["{a,b}.txt"]);
    expect(matching("\\[ab].txt", ["[ab].txt", "a.txt"])).toEqual(["[ab].txt"]);
  });

  it("treats what a regular expression would read as special as plain characters", () => {
    expect(matching("a+b(1).txt", ["a+b(1).txt", "aab1.txt", "a+b(1)xtxt"])).toEqual(["a+b(1).txt"]);
    expect(matching("*(1).$x", ["v(1).$x", "v1.$x"])).toEqual(["v(1).$x"]);
  });

  it("refuses a character class that is not valid, with the reason", () => {
    expect(() => globMatcher("[z-a].txt")).toThrow(/\[z-a\]\.txt is not a valid glob: .*Range out of order/);
  });
});

describe("globMatcher: braces are counted before they grow", () => {
  it("refuses a glob whose braces stand for more than 1,000 patterns, at once, and allows 1,000", async () => {
    for (const bomb of BOMBS) {
      const { ms, error } = await timed(() => globMatcher(bomb));
      expect(error?.message, bomb).toMatch(/^the pattern .* stands for more than 1000 patterns once its braces are expanded.*nothing was searched/);
      expect(ms, bomb).toBeLessThan(1000);
    }
    expect(globMatcher("f{1..10}-{1..10}-{1..10}.txt")("f5-5-5.txt")).toBe(true);
    expect(() => globMatcher("f{1..10}-{1..10}-{1..10}{,x}.txt")).toThrow(/more than 1000 patterns/);
    expect(globMatcher("{1..1000}")("1000")).toBe(true);
    expect(() => globMatcher("{1..1001}")).toThrow(/more than 1000 patterns/);
  });

  it("reads a pattern of unclosed braces in time proportional to its length", async () => {
    const glob = `${"{a,".repeat(2000)}*.txt`;
    const { ms, value } = await timed(() => globMatcher(glob));
    expect(value!(`${"{a,".repeat(2000)}x.txt`)).toBe(true);
    expect(value!("a.txt")).toBe(false);
    expect(ms).toBeLessThan(1000);
  });
});

describe("globMatcher: no backtracking", () => {
  // #region no-backtracking
  it("matches many stars against a long name at once, where a regular expression would backtrack for seconds", async () => {
    // /^.*a.*a.*a.*a.*a.*b$/ takes about 5 s on 90 a's, and five times that on 100.
    const { ms, value } = await timed(() => {
      const matches = globMatcher("*a*a*a*a*a*b");
      return [matches("a".repeat(90)), matches(`${"a".repeat(90)}b`), matches(`${"a".repeat(89)}ba`)];
    });
    expect(value).toEqual([false, true, false]);
    expect(ms).toBeLessThan(1000);
  });
  // #endregion no-backtracking

  it("matches many ** against a deep path at once", async () => {
    const deep = Array(90).fill("a").join("/");
    const { ms, value } = await timed(() => {
      const matches = globMatcher("**/a/**/a/**/a/**/a/**/a/**/b");
      return [matches(deep), matches(`${deep}/b`), matches(`${deep}/b/a`)];
    });
    expect(value).toEqual([false, true, false]);
    expect(ms).toBeLessThan(1000);
  });
});

describe("globMatcher: **/name asks about the name alone", () => {
  // The fast path is taken when every pattern is **/ and one part; a second pattern of another
  // shape turns it off, so the same glob is matched both ways and must agree.
  const paths = ["ab.ts", "x/ab.ts", "a/b.ts", "x/a/b.ts", "src/c.ts", "x/src/c.ts", "y/src", "lib/src/d.js", "a.tsx", "deep/er/a.tsx", ".hidden.ts"];
  const slowPath = (glob: string) => `{${glob},no/such/path/at/all}`;

  it("matches **/a*.ts by the file's name, whatever folders it is in; the * never takes a /", () => {
    expect(matching("**/a*.ts", paths)).toEqual(["ab.ts", "x/ab.ts"]);
    expect(matching("**/*.{ts,tsx}", paths)).toEqual(["ab.ts", "x/ab.ts", "a/b.ts", "x/a/b.ts", "src/c.ts", "x/src/c.ts", "a.tsx", "deep/er/a.tsx", ".hidden.ts"]);
    expect(matching("**/*", paths)).toEqual(paths);
    expect(matching("**/src", paths)).toEqual(["y/src"]);
  });

  it("answers as the part-by-part match does, for every path", () => {
    for (const glob of ["**/a*.ts", "**/*.{ts,tsx}", "**/*", "**/src", "**/[a-c]?.ts", "**/.h*"]) {
      expect(matching(glob, paths), glob).toEqual(matching(slowPath(glob), paths));
    }
  });

  it("matches a longer pattern part by part: **/src/*.ts is a file right inside a folder named src", () => {
    expect(matching("**/src/*.ts", paths)).toEqual(["src/c.ts", "x/src/c.ts"]);
  });
});

describe("findFiles and walkFiles", () => {
  const workspace = useWorkspace();
  const outside = useOutside();
  const found = (pattern: string, folder = ".", options: { baseNameMatch?: boolean } = {}) =>
    findFiles(workspace.dir, pattern, path.resolve(folder), options).files.map((file) => file.shown).sort(byName);

  it("names each file relative to the workspace, and gives its full path", () => {
    writeFiles({ "a.ts": "", "src/b.ts": "", "src/deep/c.ts": "" });
    const walk = findFiles(workspace.dir, "**/*.ts", path.join(workspace.dir, "src"));
    expect(walk.files.sort((a, b) => byName(a.shown, b.shown))).toEqual([
      { shown: "src/b.ts", full: path.join(workspace.dir, "src/b.ts") },
      { shown: "src/deep/c.ts", full: path.join(workspace.dir, "src/deep/c.ts") },
    ]);
    expect(walk.unreadable).toEqual([]);
  });

  it("matches a pattern against the path under the folder walked; with baseNameMatch, a pattern without / against the name in every folder", () => {
    writeFiles({ "top.ts": "", "src/x.ts": "", "src/deep/y.ts": "", "src/deep/z.md": "" });
    expect(found("*.ts")).toEqual(["top.ts"]);
    expect(found("*.ts", ".", { baseNameMatch: true })).toEqual(["src/deep/y.ts", "src/x.ts", "top.ts"]);
    expect(found("*.ts", "src")).toEqual(["src/x.ts"]);
    expect(found("deep/*", "src")).toEqual(["src/deep/y.ts", "src/deep/z.md"]);
    // A pattern with a / is a path even with baseNameMatch.
    expect(found("deep/*.ts", "src", { baseNameMatch: true })).toEqual(["src/deep/y.ts"]);
    expect(found("./src/*.ts")).toEqual(["src/x.ts"]);
  });

  it("refuses a pattern that climbs out with .. or starts at the root, before walking", () => {
    for (const pattern of ["../*", "/etc/*", "src/../../*", ".."]) {
      expect(() => findFiles(workspace.dir, pattern, workspace.dir), pattern).toThrow(/must stay inside the folder searched: no absolute paths or "\.\." parts/);
    }
  });

  // #region brace-bomb
  it("refuses a brace bomb before walking", () => {
    writeFiles({ "a.txt": "" });
    let heard = 0;
    expect(() => findFiles(workspace.dir, "{a,b}".repeat(20), workspace.dir, { onFound: () => heard++ })).toThrow(/more than 1000 patterns/);
    expect(heard).toBe(0);
  });
  // #endregion brace-bomb

  it("tells onFound of each file as it is found, in the order of the list", () => {
    writeFiles({ "a.txt": "", "b/c.txt": "", "b/d.md": "" });
    const heard: FoundFile[] = [];
    const walk = findFiles(workspace.dir, "*.txt", workspace.dir, { baseNameMatch: true, onFound: (file) => heard.push(file) });
    expect(heard).toEqual(walk.files);
    expect(heard.map((file) => file.shown).sort(byName)).toEqual(["a.txt", "b/c.txt"]);
  });

  it("skips .git and node_modules at every depth", () => {
    writeFiles({ "kept.js": "", ".git/config.js": "", "node_modules/pkg/index.js": "", "sub/node_modules/x.js": "", "sub/.git/y.js": "", "sub/kept.js": "" });
    expect(found("**/*")).toEqual(["kept.js", "sub/kept.js"]);
    // Asked for by name, they are still left out.
    expect(found("node_modules/**/*")).toEqual([]);
    expect(found("**/*", "sub")).toEqual(["sub/kept.js"]);
  });

  it("obeys .gitignore at several depths: a deeper one has the last word, and ! brings a file back", () => {
    writeFiles({
      ".gitignore": "# build output\n\ndist/\n*.log\n",
      "kept.txt": "",
      "dist/out.js": "",
      "debug.log": "",
      "logs/.gitignore": "!keep.log\n",
      "logs/keep.log": "",
      "logs/drop.log": "",
      "logs/deep/.gitignore": "keep.log\n",
      "logs/deep/keep.log": "",
      "logs/deep/other.log": "",
      "logs/deep/note.txt": "",
      "crlf/.gitignore": "*.tmp\r\n!keep.tmp\r\n",
      "crlf/a.tmp": "",
      "crlf/keep.tmp": "",
    });
    expect(found("**/*")).toEqual([".gitignore", "crlf/.gitignore", "crlf/keep.tmp", "kept.txt", "logs/.gitignore", "logs/deep/.gitignore", "logs/deep/note.txt", "logs/keep.log"]);
  });

  it("reads a .gitignore rule with a / in it relative to the folder of its .gitignore", () => {
    writeFiles({
      ".gitignore": "/top.txt\nsrc/gen/\n",
      "top.txt": "",
      "deep/top.txt": "",
      "src/gen/x.txt": "",
      "src/keep.txt": "",
      "pkg/.gitignore": "out/*.txt\n",
      "pkg/out/a.txt": "",
      "pkg/out/a.md": "",
      "lib/.gitignore": "build/\n",
      "lib/build/b.txt": "",
    });
    expect(found("**/*.{txt,md}")).toEqual(["deep/top.txt", "pkg/out/a.md", "src/keep.txt"]);
  });

  it("obeys the .gitignore files above the folder walked, and finds nothing inside an ignored folder", () => {
    writeFiles({ ".gitignore": "*.log\nsrc/gen/\n", "logs/a.log": "", "logs/a.txt": "", "src/gen/x.txt": "", "lib/.gitignore": "build/\n", "lib/build/b.txt": "" });
    expect(found("**/*", "logs")).toEqual(["logs/a.txt"]);
    expect(findFiles(workspace.dir, "**/*", path.resolve("src/gen"))).toEqual({ files: [], unreadable: [] });
    expect(findFiles(workspace.dir, "**/*", path.resolve("lib/build"))).toEqual({ files: [], unreadable: [] });
  });

  it("does not enter an ignored folder, so ! cannot bring back a file inside it (as in git)", () => {
    writeFiles({ ".gitignore": "dist/\n!dist/keep.js\n", "dist/keep.js": "", "dist/other.js": "", "src/a.js": "" });
    expect(found("**/*.js")).toEqual(["src/a.js"]);
  });

  // #region symlinks
  it("neither follows nor lists a symlink, to a file or a folder, inside the workspace or out", () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "");
    mkdirSync(path.join(outside.dir, "more"));
    writeFileSync(path.join(outside.dir, "more/deep.txt"), "");
    writeFiles({ "mine.txt": "", "src/real.txt": "" });
    symlinkSync(outside.dir, "door");
    symlinkSync(path.join(outside.dir, "secret.txt"), "link.txt");
    symlinkSync(path.join(workspace.dir, "src"), "inner");
    symlinkSync(path.join(workspace.dir, "mine.txt"), "alias.txt");
    symlinkSync(path.join(workspace.dir, "nowhere"), "dangling.txt");
    const asked: string[] = [];
    const walk = walkFiles(workspace.dir, workspace.dir, (relative) => asked.push(relative) > 0);
    expect(walk.files.map((file) => file.shown).sort(byName)).toEqual(["mine.txt", "src/real.txt"]);
    expect(asked.sort(byName)).toEqual(["mine.txt", "src/real.txt"]);
    expect(found("door/*")).toEqual([]);
    expect(found("inner/*")).toEqual([]);
  });
  // #endregion symlinks

  it("never opens a FIFO: not listed, and not read when it is named .gitignore, in the folder walked or above it", async () => {
    // Each walk can reach one FIFO only, the one msOnFifo releases if the walk waits on it.
    writeFiles({ "p/a.txt": "", "g/b.txt": "", "h/sub/c.txt": "" });
    execFileSync("mkfifo", ["p/pipe", "g/.gitignore", "h/.gitignore"]);
    const names = (folder: string) => findFiles(workspace.dir, "**/*", path.resolve(folder)).files.map((file) => file.shown);
    const seen: Record<string, string[]> = {};
    expect(await msOnFifo("p/pipe", async () => void (seen.p = names("p")))).toBeLessThan(FIFO_RELEASE_MS);
    expect(await msOnFifo("g/.gitignore", async () => void (seen.g = names("g")))).toBeLessThan(FIFO_RELEASE_MS);
    expect(await msOnFifo("h/.gitignore", async () => void (seen.h = names("h/sub")))).toBeLessThan(FIFO_RELEASE_MS);
    expect(seen).toEqual({ p: ["p/a.txt"], g: ["g/b.txt"], h: ["h/sub/c.txt"] });
  });

  it("reports a folder it cannot read, and one whose .gitignore it cannot read, and lists none of their files", async () => {
    writeFiles({ "a.txt": "", "locked/x.txt": "", "deep/er/locked/y.txt": "", "hidden/.gitignore": "*.env\n", "hidden/z.txt": "", "start/w.txt": "" });
    const locked = ["locked", "deep/er/locked", "hidden/.gitignore", "start"];
    locked.forEach((name) => chmodSync(name, 0o000));
    try {
      const walk = await withoutRoot(workspace.dir, () => findFiles(workspace.dir, "**/*", workspace.dir));
      expect(walk.files.map((file) => file.shown)).toEqual(["a.txt"]);
      expect(walk.unreadable.sort(byName)).toEqual(["deep/er/locked", "hidden", "locked", "start"]);
      // The folder walked, when it cannot be read, is named too.
      expect(await withoutRoot(workspace.dir, () => findFiles(workspace.dir, "**/*", path.resolve("start")))).toEqual({ files: [], unreadable: ["start"] });
    } finally {
      locked.forEach((name) => chmodSync(name, 0o755));
    }
  });
});

describe("names, order and notes", () => {
  it("relativeName names a path from the workspace with /, and the workspace itself as .", () => {
    expect(relativeName("/w", "/w/src/a.ts")).toBe("src/a.ts");
    expect(relativeName("/w", "/w")).toBe(".");
  });

  it("byName orders by code unit, the same in every locale: capitals first, . before /", () => {
    expect(["b.txt", "a/b.txt", "a.txt", "A.txt", "a/a.txt", "z/9.txt", "é.txt"].sort(byName)).toEqual(["A.txt", "a.txt", "a/a.txt", "a/b.txt", "b.txt", "z/9.txt", "é.txt"]);
  });

  it("unreadableNote names what could not be read, sorted, ten at most, and nothing when all was read", () => {
    expect(unreadableNote("folder", [])).toEqual([]);
    expect(unreadableNote("folder", ["locked"])).toEqual(["[could not read 1 folder(s), so it was skipped: locked]"]);
    expect(unreadableNote("file", ["b.txt (EACCES)", "a.txt (EACCES)"])).toEqual(["[could not read 2 file(s), so they were skipped: a.txt (EACCES), b.txt (EACCES)]"]);
    const many = Array.from({ length: 12 }, (_, i) => `f${String(12 - i).padStart(2, "0")}`);
    expect(unreadableNote("folder", many)).toEqual([
      "[could not read 12 folder(s), so they were skipped: f01, f02, f03, f04, f05, f06, f07, f08, f09, f10 and 2 more]",
    ]);
  });
});

describe("the agent's own folder", () => {
  useWorkspace();

  it("is left out of a walk (a transcript holds every tool output of earlier sessions), unless the walk starts inside it", () => {
    writeFiles({ "src/a.ts": "x", ".agent/transcripts/t.jsonl": "secret output", ".agent/tool-results/r.txt": "big", "deep/.agent/x.txt": "x" });
    const root = process.cwd();
    expect(walkFiles(root, root, () => true).files.map((f) => f.shown).sort()).toEqual(["src/a.ts"]);
    expect(walkFiles(root, path.join(root, ".agent"), () => true).files.map((f) => f.shown).sort()).toEqual([".agent/tool-results/r.txt", ".agent/transcripts/t.jsonl"]);
  });
});
