// edit_file, run once per implementation of it: s02's first-match edit, and from s03 on the
// edit that needs a unique match (or replace_all). One test per rule, each in its own temporary
// workspace: one exact place changes or nothing at all, and the model is told why. How the file
// is read and written (a FIFO refused, the mode, hard links and owner kept, a temporary name that
// cannot be planted) is machinery, tested once in tests/machinery (safe-read, atomic-write);
// here each implementation keeps one case for each that proves edit_file goes through it.
import { execFileSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { editFileOf, FIFO_RELEASE_MS, msOnFifo, stagesWithTool, toolOf, toolParameters, useWorkspace } from "./helpers.ts";

const withEdit = await stagesWithTool("edit_file");
const having = async (parameter: string) =>
  (await Promise.all(withEdit.map(async (stage) => ((await toolParameters(stage[1], "edit_file")).includes(parameter) ? [stage] : [])))).flat();
/** Stages whose edit_file needs a unique match, or replace_all: s03 on. */
const uniqueMatch = await having("replace_all");
/** Stages whose edit_file replaces the first match of old_text: s02. */
const firstMatch = await having("old_text");

const modeOf = (file: string) => statSync(file).mode & 0o777;

/** Write files (path → text or bytes) into the workspace, making folders as needed. */
function files(tree: Record<string, string | Buffer>) {
  for (const [name, content] of Object.entries(tree)) {
    mkdirSync(path.dirname(name), { recursive: true });
    writeFileSync(name, content);
  }
}

describe.each(uniqueMatch)("%s edit_file", (_stage, file) => {
  useWorkspace();
  const edit = (input: Record<string, unknown>) => toolOf(file, "edit_file").then((tool) => tool(input));

  /** Expect an edit to fail with `message`, and the file to keep exactly the bytes it had. */
  async function expectRefused(input: Record<string, unknown>, message: RegExp) {
    const before = readFileSync(String(input.path));
    await expect(edit(input)).rejects.toThrow(message);
    expect(readFileSync(String(input.path)).equals(before)).toBe(true);
  }

  it("replaces the one match and leaves every other byte as it was", async () => {
    // Tabs, non-ASCII text, a lone \r and no final newline: none of it may move.
    files({ "f.txt": "\tcafé = 1;\r\nnaïve\rvalue = 2;\n// fin ✓" });
    expect(await edit({ path: "f.txt", old_string: "value = 2", new_string: "value = 3" })).toBe("Edited f.txt: replaced 1 occurrence");
    expect(readFileSync("f.txt").equals(Buffer.from("\tcafé = 1;\r\nnaïve\rvalue = 3;\n// fin ✓"))).toBe(true);
  });

  it("refuses old_string that is not there, with a hint, and changes nothing", async () => {
    files({ "f.txt": "alpha\nbeta\n" });
    await expectRefused(
      { path: "f.txt", old_string: "gamma", new_string: "x" },
      /not found in f\.txt: read the file and copy the text exactly: whitespace, indentation and line endings \(this file uses LF\)\. The file is unchanged/,
    );
  });

  it("hints at a missing final newline", async () => {
    files({ "end.txt": "first\nlast line" });
    await expectRefused({ path: "end.txt", old_string: "last line\n", new_string: "x\n" }, /no newline at its end/);
  });

  it("hints at whitespace when the text matches with spaces and tabs ignored", async () => {
    files({ "tabs.py": "def f():\n\treturn 1\n" });
    await expectRefused({ path: "tabs.py", old_string: "    return 1", new_string: "    return 2" }, /spaces and tabs are ignored/);
  });

  it("refuses several matches, giving the count and asking for more context or replace_all", async () => {
    files({ "m.txt": "x = 1\ny = 1\nz = 1\n" });
    await expectRefused(
      { path: "m.txt", old_string: "= 1", new_string: "= 2" },
      /occurs 3 times in m\.txt\. Include more of the surrounding lines.*or set replace_all to true.*The file is unchanged/,
    );
  });

  it("takes replace_all of null as not given: several matches are still refused", async () => {
    files({ "m.txt": "x = 1\ny = 1\n" });
    await expectRefused({ path: "m.txt", old_string: "= 1", new_string: "= 2", replace_all: null }, /occurs 2 times in m\.txt/);
  });

  it("with replace_all, replaces every match and says how many", async () => {
    files({ "m.txt": "x = 1\ny = 1\nz = 1\n" });
    expect(await edit({ path: "m.txt", old_string: "= 1", new_string: "= 2", replace_all: true })).toBe("Edited m.txt: replaced 3 occurrences");
    expect(readFileSync("m.txt", "utf8")).toBe("x = 2\ny = 2\nz = 2\n");
  });

  it("refuses old_string equal to new_string, an empty old_string and a replace_all that is not a boolean", async () => {
    files({ "f.txt": "same\n" });
    await expectRefused({ path: "f.txt", old_string: "same", new_string: "same" }, /are the same/);
    await expectRefused({ path: "f.txt", old_string: "", new_string: "x" }, /old_string is empty/);
    await expectRefused({ path: "f.txt", old_string: "same", new_string: "x", replace_all: "yes" }, /"replace_all" must be/);
  });

  it("inserts new_string literally: $& and $1 are text, not replacement patterns", async () => {
    files({ "one.txt": "price: TBD\n", "all.txt": "a TBD, b TBD\n" });
    await edit({ path: "one.txt", old_string: "TBD", new_string: "$& or $1 or $$" });
    await edit({ path: "all.txt", old_string: "TBD", new_string: "$&$1", replace_all: true });
    expect(readFileSync("one.txt", "utf8")).toBe("price: $& or $1 or $$\n");
    expect(readFileSync("all.txt", "utf8")).toBe("a $&$1, b $&$1\n");
  });

  it("keeps a CRLF file CRLF when old_string and new_string use \\n", async () => {
    files({ "win.txt": "one\r\ntwo\r\nthree\r\n" });
    await edit({ path: "win.txt", old_string: "one\ntwo", new_string: "one\n2\ntwo" });
    expect(readFileSync("win.txt", "utf8")).toBe("one\r\n2\r\ntwo\r\nthree\r\n");
  });

  it("refuses a missing file and a file that is not UTF-8, changing nothing", async () => {
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]); // "café" in Latin-1
    files({ "latin1.txt": latin1 });
    await expect(edit({ path: "gone.txt", old_string: "a", new_string: "b" })).rejects.toThrow("gone.txt does not exist");
    await expectRefused({ path: "latin1.txt", old_string: "caf", new_string: "tea" }, /not valid UTF-8/);
  });
});

describe.each(firstMatch)("%s edit_file (first match)", (_stage, file) => {
  useWorkspace();
  const edit = (input: Record<string, unknown>) => toolOf(file, "edit_file").then((tool) => tool(input));

  it("replaces the text literally: $& and $1 are inserted as typed", async () => {
    writeFileSync("price.txt", "cost: TBD\n");
    expect(await edit({ path: "price.txt", old_text: "TBD", new_text: "$& or $1 dollars" })).toMatch(/replaced 1 occurrence/);
    expect(readFileSync("price.txt", "utf8")).toBe("cost: $& or $1 dollars\n");
  });

  it("leaves the file's bytes as they were when the text is not found", async () => {
    const before = Buffer.from("line one\r\nline two\r\n\u00e9\n");
    writeFileSync("f.txt", before);
    await expect(edit({ path: "f.txt", old_text: "line three", new_text: "x" })).rejects.toThrow(/not found.*unchanged/);
    expect(readFileSync("f.txt").equals(before)).toBe(true);
  });

  it("keeps a CRLF file CRLF when the model writes \\n", async () => {
    writeFileSync("win.txt", "a\r\nb\r\nc\r\n");
    await edit({ path: "win.txt", old_text: "a\nb", new_text: "a\nB\nb2" });
    const after = readFileSync("win.txt", "utf8");
    expect(after).toBe("a\r\nB\r\nb2\r\nc\r\n");
    expect(after.replace(/\r\n/g, "")).not.toContain("\n");
  });

  it("replaces the first match only, and says how many more are left", async () => {
    writeFileSync("x.txt", "x x x");
    expect(await edit({ path: "x.txt", old_text: "x", new_text: "y" })).toMatch(/2 more left/);
    expect(readFileSync("x.txt", "utf8")).toBe("y x x");
  });

  it("refuses empty old_text, a missing file, and a file that is not UTF-8", async () => {
    writeFileSync("a.txt", "abc");
    await expect(edit({ path: "a.txt", old_text: "", new_text: "x" })).rejects.toThrow(/old_text is empty/);
    await expect(edit({ path: "gone.txt", old_text: "a", new_text: "b" })).rejects.toThrow(/does not exist/);
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]); // "café" in Latin-1
    writeFileSync("latin1.txt", latin1);
    await expect(edit({ path: "latin1.txt", old_text: "caf", new_text: "tea" })).rejects.toThrow(/not valid UTF-8/);
    expect(readFileSync("latin1.txt").equals(latin1)).toBe(true);
  });
});

// What every version of edit_file shares with write_file: it reads through the safe read and
// writes through the atomic write. One case for each; the rest is in tests/machinery.
describe.each(withEdit)("%s edit_file reads and writes through the machinery", (_stage, file) => {
  useWorkspace();
  const edit = (...args: Parameters<Awaited<ReturnType<typeof editFileOf>>>) => editFileOf(file).then((tool) => tool(...args));

  it("refuses a FIFO at once, with the program not blocked", async () => {
    execFileSync("mkfifo", ["pipe"]);
    const took = await msOnFifo("pipe", () => expect(edit("pipe", "a", "b")).rejects.toThrow("pipe is a FIFO (named pipe), not a regular file; only regular files are read"));
    // A blocked read would wait for the release; the refusal comes well before it.
    expect(took).toBeLessThan(FIFO_RELEASE_MS / 2);
    expect(lstatSync("pipe").isFIFO()).toBe(true);
  });

  it("refuses a read-only file (mode 444), naming it, and leaves its content and mode", async () => {
    writeFileSync("locked.txt", "keep me\n");
    chmodSync("locked.txt", 0o444);
    await expect(edit("locked.txt", "keep", "change")).rejects.toThrow(
      "locked.txt is read-only (mode 444), so it is left as it is; if it should change, make it writable first (chmod u+w)",
    );
    expect(readFileSync("locked.txt", "utf8")).toBe("keep me\n");
    expect(modeOf("locked.txt")).toBe(0o444);
    expect(readdirSync(".")).toEqual(["locked.txt"]);
  });

  it("renames a new file over the old one, leaving nothing beside it", async () => {
    writeFileSync("target.txt", "old text\n");
    const before = statSync("target.txt").ino;
    await edit("target.txt", "old", "new");
    expect(readFileSync("target.txt", "utf8")).toBe("new text\n");
    // A new file renamed over the old one (the atomic write), not the old one truncated and written again.
    expect(statSync("target.txt").ino).not.toBe(before);
    expect(readdirSync(".")).toEqual(["target.txt"]);
  });
});
