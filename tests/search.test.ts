// The search tools as the model calls them, once per implementation of each (a stage whose
// tool is the same code as another's is not run again), each test in its own temporary
// workspace: grep, glob and ls check their arguments, refuse a bad pattern before searching,
// answer in the words the model reads, and never leave the workspace. The machinery under
// them is tested once, against lib: the walk (globs, brace limits, ignore rules, links, FIFOs)
// in tests/machinery/walk.test.ts, the search (workers, time limit, fast paths, skipped files)
// in tests/machinery/search.test.ts.
import fs, { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { stagesWithTool, timed, toolOf, toolParameters, useOutside, useWorkspace, withoutRoot, writeFiles as files } from "./helpers.ts";

/** The stages whose grep is s03's, with its output modes, include and max_results. */
const grepStages = (
  await Promise.all(
    (await stagesWithTool("grep")).map(async (stage) => {
      const parameters = await toolParameters(stage[1], "grep");
      return ["output_mode", "include", "max_results"].every((name) => parameters.includes(name)) ? [stage] : [];
    }),
  )
).flat();

/** The stages whose grep pages its matches with head_limit and offset, as s07's does (s07's own file tests its paging in depth). */
const pagedGrepStages = (
  await Promise.all((await stagesWithTool("grep")).map(async (stage) => ((await toolParameters(stage[1], "grep")).includes("head_limit") ? [stage] : [])))
).flat();

/**
 * Every implementation of every search tool, as one stage file each, with the search tools
 * that file offers: a file stands for each group it is the first of, and is tried with all of
 * its search tools, so every group of grep, glob and ls is tried.
 */
const searchStages: [string, string, string[]][] = [];
for (const tool of ["grep", "glob", "ls"]) {
  for (const [label, file] of await stagesWithTool(tool)) {
    const known = searchStages.find(([, other]) => other === file);
    if (known) known[2].push(tool);
    else searchStages.push([label, file, [tool]]);
  }
}
const offers = (file: string, tool: string) => toolOf(file, tool).then(() => true, () => false);
for (const stage of searchStages) {
  for (const tool of ["grep", "glob", "ls"]) if (!stage[2].includes(tool) && (await offers(stage[1], tool))) stage[2].push(tool);
}

// Braces that stand for a million patterns, and a range of a hundred million.
const BOMBS = ["{a,b}".repeat(20), "{1..1000}{1..1000}", "x{1..100000000}"];

it("tests every implementation of grep, in s03's shape or in s07's paged one", async () => {
  expect([...grepStages, ...pagedGrepStages].map(([label]) => label).sort()).toEqual((await stagesWithTool("grep")).map(([label]) => label).sort());
});

describe.each(grepStages)("%s grep", (_stage, file) => {
  const workspace = useWorkspace();
  const grep = async (input: Record<string, unknown>) => (await toolOf(file, "grep"))(input);

  it("lists the files with matches by default, sorted, relative to the workspace; path narrows the search", async () => {
    files({ "src/b.ts": "needle\n", "src/a.ts": "no\nneedle here\n", "other.md": "hay\n", "Z.md": "needle\n" });
    expect(await grep({ pattern: "needle" })).toBe("Z.md\nsrc/a.ts\nsrc/b.ts");
    expect(await grep({ pattern: "needle", path: "src" })).toBe("src/a.ts\nsrc/b.ts");
  });

  it("shows path:line: text in content mode, and the matching lines per file in count mode", async () => {
    files({ "a.txt": "x\nx needle\ny\nneedle\n", "b.txt": "needle\n", "c.txt": "y\n" });
    expect(await grep({ pattern: "needle", output_mode: "content" })).toBe("a.txt:2: x needle\na.txt:4: needle\nb.txt:1: needle");
    expect(await grep({ pattern: "needle", output_mode: "count" })).toBe("a.txt: 2\nb.txt: 1");
    expect(await grep({ pattern: "needle", output_mode: "files_with_matches" })).toBe("a.txt\nb.txt");
  });

  it("refuses an unknown output_mode, and a max_results that is not a whole number, naming it", async () => {
    await expect(grep({ pattern: "x", output_mode: "lines" })).rejects.toThrow(/output_mode must be one of files_with_matches, content, count/);
    for (const wrong of [0, -1, 2.5, "10", {}]) {
      await expect(grep({ pattern: "x", max_results: wrong }), JSON.stringify(wrong)).rejects.toThrow(/"max_results" must be a whole number at least 1/);
    }
  });

  it("refuses a pattern that is missing or not text, naming it", async () => {
    await expect(grep({})).rejects.toThrow(/"pattern" must be a string/);
    await expect(grep({ pattern: 42 })).rejects.toThrow(/"pattern" must be a string/);
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

  it("searches a file named outright, and says when nothing matched", async () => {
    files({ "a.txt": "one\ntwo\n", "b.txt": "two\n" });
    expect(await grep({ pattern: "two", path: "a.txt", output_mode: "content" })).toBe("a.txt:2: two");
    expect(await grep({ pattern: "three" })).toBe("No matches for /three/ in . (2 files searched)");
    await expect(grep({ pattern: "two", path: "missing.txt" })).rejects.toThrow(/missing\.txt does not exist/);
  });

  it("says when there is no file to search, and what the walk leaves out", async () => {
    files({ ".gitignore": "gen/\n", "gen/x.txt": "hit\n" });
    mkdirSync("empty");
    const skipped = "(binary files, .git, node_modules and what .gitignore lists are skipped)";
    expect(await grep({ pattern: "hit", path: "gen" })).toBe(`No files to search in gen ${skipped}`);
    expect(await grep({ pattern: "hit", path: "empty" })).toBe(`No files to search in empty ${skipped}`);
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

  it("refuses an invalid regular expression, naming the problem, before searching anything", async () => {
    // The path does not exist: if a search had started, that would be the error.
    await expect(grep({ pattern: "(unclosed", path: "missing-folder" })).rejects.toThrow(
      /Invalid regular expression: \/\(unclosed\/: Unterminated group\. No search was run/,
    );
  });

  it("refuses an include whose braces stand for too many patterns, at once and before searching", async () => {
    files({ "a.txt": "needle\n" });
    for (const bomb of BOMBS) {
      const { ms, error } = await timed(() => grep({ pattern: "needle", include: bomb }));
      expect(error?.message, bomb).toMatch(/stands for more than 1000 patterns once its braces are expanded.*nothing was searched/);
      expect(ms, bomb).toBeLessThan(1000);
    }
  });

  it("skips a folder it cannot read, says so, and keeps the matches elsewhere", async () => {
    files({ "a.txt": "needle\n", "locked/x.txt": "needle\n" });
    chmodSync("locked", 0o000);
    try {
      const output = await withoutRoot(workspace.dir, () => grep({ pattern: "needle" }));
      expect(output).toBe("a.txt\n[could not read 1 folder(s), so it was skipped: locked]");
    } finally {
      chmodSync("locked", 0o755);
    }
  });
});

describe.each(pagedGrepStages)("%s grep, paged", (_stage, file) => {
  useWorkspace();
  const grep = async (input: Record<string, unknown>) => (await toolOf(file, "grep"))(input);

  it("lists the files with matches by default, sorted; content gives path:line: text; count the lines per file", async () => {
    files({ "src/b.ts": "needle\nhay\nneedle again\n", "src/a.ts": "hay\r\nneedle\r\n", "notes.md": "hay\n" });
    expect(await grep({ pattern: "needle" })).toBe("src/a.ts\nsrc/b.ts");
    expect(await grep({ pattern: "needle", output_mode: "content" })).toBe("src/a.ts:2: needle\nsrc/b.ts:1: needle\nsrc/b.ts:3: needle again");
    expect(await grep({ pattern: "needle", output_mode: "count", path: null })).toBe("src/a.ts: 1\nsrc/b.ts: 2");
    expect(await grep({ pattern: "nothing" })).toBe("No matches for /nothing/ in . (3 files searched)");
  });

  it("refuses what its schema does not allow, naming the parameter", async () => {
    const refused: [Record<string, unknown>, RegExp][] = [
      [{}, /"pattern" is required/],
      [{ pattern: 3 }, /"pattern" must be a string/],
      [{ pattern: "x", output_mode: "lines" }, /"output_mode" must be one of files_with_matches, content, count/],
      [{ pattern: "x", head_limit: -1 }, /"head_limit" must be at least 0/],
      [{ pattern: "x", offset: 1.5 }, /"offset" must be an integer/],
      [{ pattern: "x", include: "*.ts" }, /"include" is not a parameter of this tool/],
    ];
    for (const [input, why] of refused) await expect(grep(input), JSON.stringify(input)).rejects.toThrow(why);
  });

  it("refuses an invalid regular expression, and a glob of too many patterns, before searching anything", async () => {
    // The path does not exist: if a search had started, that would be the error.
    await expect(grep({ pattern: "(unclosed", path: "missing-folder" })).rejects.toThrow(/^Invalid regular expression: \/\(unclosed\/: Unterminated group; nothing was searched$/);
    files({ "a.txt": "needle\n" });
    for (const bomb of BOMBS) {
      const { ms, error } = await timed(() => grep({ pattern: "needle", glob: bomb }));
      expect(error?.message, bomb).toMatch(/stands for more than 1000 patterns once its braces are expanded.*nothing was searched/);
      expect(ms, bomb).toBeLessThan(1000);
    }
  });

  it("filters by glob, pages with head_limit and offset, names the next page, and refuses an offset past the end", async () => {
    files({ "src/a.ts": "hit\nhit\nhit\n", "src/b.md": "hit\n" });
    expect(await grep({ pattern: "hit", glob: "*.ts" })).toBe("src/a.ts");
    expect(await grep({ pattern: "hit", output_mode: "content", head_limit: 2 })).toBe("src/a.ts:1: hit\nsrc/a.ts:2: hit\n[matching lines 1-2 of 4. Next page: offset 2, head_limit 2]");
    expect(await grep({ pattern: "hit", output_mode: "content", head_limit: 2, offset: 2 })).toBe("src/a.ts:3: hit\nsrc/b.md:1: hit");
    await expect(grep({ pattern: "hit", output_mode: "content", offset: 4 })).rejects.toThrow(/^offset 4 is past the end: there are 4 matching lines$/);
  });

  it("leaves out the agent's own folder, unless path names it", async () => {
    files({ "a.txt": "hit\n", ".agent/tool-results/toolu_1.txt": "hit\n" });
    expect(await grep({ pattern: "hit" })).toBe("a.txt");
    expect(await grep({ pattern: "hit", path: ".agent" })).toBe(".agent/tool-results/toolu_1.txt");
  });
});

describe.each(await stagesWithTool("glob"))("%s glob", (_stage, file) => {
  const workspace = useWorkspace();
  const glob = async (input: Record<string, unknown>) => (await toolOf(file, "glob"))(input);
  const sorted = async (input: Record<string, unknown>) => (await glob(input)).split("\n").sort();

  it("matches ** across folders and {a,b} alternatives, relative to the workspace, under path", async () => {
    files({ "a.ts": "", "src/b.ts": "", "src/deep/c.ts": "", "src/d.js": "", "e.json": "", "f.md": "" });
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
  });

  it("refuses a character class that is not valid, with the reason", async () => {
    await expect(glob({ pattern: "[z-a].txt" })).rejects.toThrow(/\[z-a\]\.txt is not a valid glob: .*Range out of order/);
  });

  it("skips a folder it cannot read and says so", async () => {
    files({ "a.txt": "", "locked/b.txt": "" });
    chmodSync("locked", 0o000);
    try {
      const output = await withoutRoot(workspace.dir, () => glob({ pattern: "**/*.txt" }));
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

describe.each(searchStages)("%s search tools stay inside the workspace", (_stage, file, tools) => {
  const workspace = useWorkspace();
  const outside = useOutside();
  const call = async (name: string, input: Record<string, unknown>) => (await toolOf(file, name))(input);
  const secret = () => readFileSync(path.join(outside.dir, "secret.txt"), "utf8");
  /** What grep calls its filter of file names here: include (s03) or glob (s07). */
  const filter = async () => ((await toolParameters(file, "grep")).includes("include") ? "include" : "glob");

  const attempts = async (where: string) =>
    (
      [
        ["grep", { pattern: "secret", path: where }],
        ["grep", { pattern: "secret", [await filter()]: `${where}/*` }],
        ["glob", { pattern: "*", path: where }],
        ["glob", { pattern: `${where}/*` }],
        ["ls", { path: where }],
      ] as const
    ).filter(([name]) => tools.includes(name));

  it("offers at least one search tool", () => {
    expect(tools.length).toBeGreaterThan(0);
  });

  it("refuses ../ and .. for every search tool", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "secret = 1\n");
    for (const where of [path.relative(workspace.dir, outside.dir), ".."]) {
      for (const [name, input] of await attempts(where)) {
        await expect(call(name, input), `${name} ${JSON.stringify(input)}`).rejects.toThrow(/outside the workspace|must stay inside the folder searched/);
      }
    }
    expect(secret()).toBe("secret = 1\n");
  });

  it("refuses an absolute path outside for every search tool", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "secret = 1\n");
    for (const [name, input] of await attempts(outside.dir)) {
      await expect(call(name, input), `${name} ${JSON.stringify(input)}`).rejects.toThrow(/outside the workspace|must stay inside/);
    }
  });

  it("refuses a symlink that leads outside for every search tool", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "secret = 1\n");
    symlinkSync(outside.dir, "door");
    symlinkSync(path.join(outside.dir, "secret.txt"), "link.txt");
    const throughLinks = [...(await attempts("door")).filter(([, input]) => "path" in input), ...(tools.includes("grep") ? ([["grep", { pattern: "secret", path: "link.txt" }]] as const) : [])];
    expect(throughLinks.length).toBeGreaterThan(0);
    for (const [name, input] of throughLinks) {
      await expect(call(name, input), `${name} ${JSON.stringify(input)}`).rejects.toThrow(/through a symlink/);
    }
  });

  it("does not follow symlinks out while searching the workspace", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "secret = 1\n");
    symlinkSync(outside.dir, "door");
    symlinkSync(path.join(outside.dir, "secret.txt"), "link.txt");
    files({ "mine.txt": "secret = 0\n" });
    if (tools.includes("grep")) {
      expect(await call("grep", { pattern: "secret" })).toBe("mine.txt");
      expect(await call("grep", { pattern: "secret", output_mode: "content" })).toBe("mine.txt:1: secret = 0");
      expect(await call("grep", { pattern: "secret", [await filter()]: "door/*" })).toMatch(/^No (files to search|matches for \/secret\/) in \./);
    }
    if (tools.includes("glob")) {
      expect(await call("glob", { pattern: "**/*" })).toBe("mine.txt");
      expect(await call("glob", { pattern: "door/*" })).toBe("No files match door/* in .");
    }
    // ls names the links, as they are in the workspace, without looking through them.
    if (tools.includes("ls")) expect(await call("ls", {})).toBe("door\nlink.txt\nmine.txt");
  });
});
