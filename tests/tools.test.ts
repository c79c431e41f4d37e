// The workspace sandbox and the file tools of s02, run against every stage that carries
// them. Each rule is one test in its own temporary workspace: a clear error, nothing lost.
import { existsSync, mkdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { stageFiles, useWorkspace } from "./helpers.ts";

type Handlers = Record<string, (input: Record<string, unknown>) => string | Promise<string>>;
const withFiles = stageFiles()
  .slice(1)
  .map((file) => [file.match(/(s\d\d)_/)![1], file] as const);

/** A folder outside the workspace, for links and paths that must not be reached. */
function useOutside(): { readonly dir: string } {
  const state = { dir: "" };
  beforeEach(() => void (state.dir = mkdtempSync(path.join(os.tmpdir(), "workbook-outside-"))));
  afterEach(() => rmSync(state.dir, { recursive: true, force: true }));
  return state;
}

describe.each(withFiles)("%s sandbox", (_stage, file) => {
  const workspace = useWorkspace();
  const outside = useOutside();
  const tools = async (): Promise<Handlers> => (await import(file)).TOOL_HANDLERS;

  beforeEach(() => writeFileSync(path.join(outside.dir, "secret.txt"), "top secret"));

  it("refuses ../ escapes before any I/O", async () => {
    const { read_file, write_file } = await tools();
    await expect(async () => read_file({ path: "../secret.txt" })).rejects.toThrow(/outside the workspace/);
    await expect(async () => write_file({ path: "../../escaped.txt", content: "x" })).rejects.toThrow(/outside the workspace/);
    expect(existsSync(path.join(workspace.dir, "..", "..", "escaped.txt"))).toBe(false);
  });

  it("refuses absolute paths outside, and accepts absolute paths inside", async () => {
    const { read_file, write_file } = await tools();
    await expect(async () => read_file({ path: path.join(outside.dir, "secret.txt") })).rejects.toThrow(/outside the workspace/);
    await expect(async () => read_file({ path: "/etc/passwd" })).rejects.toThrow(/outside the workspace/);
    await write_file({ path: path.join(workspace.dir, "inside.txt"), content: "ok" });
    expect(await read_file({ path: "inside.txt" })).toBe("ok");
  });

  it("refuses a path with a NUL byte", async () => {
    const { read_file, write_file } = await tools();
    await expect(async () => read_file({ path: "a\0b" })).rejects.toThrow(/NUL byte/);
    await expect(async () => write_file({ path: "a.txt\0.png", content: "x" })).rejects.toThrow(/NUL byte/);
  });

  it("refuses a symlink whose target is outside, for reading and for writing", async () => {
    const { read_file, write_file } = await tools();
    symlinkSync(path.join(outside.dir, "secret.txt"), "link.txt");
    await expect(async () => read_file({ path: "link.txt" })).rejects.toThrow(/through a symlink/);
    await expect(async () => write_file({ path: "link.txt", content: "overwritten" })).rejects.toThrow(/through a symlink/);
    expect(readFileSync(path.join(outside.dir, "secret.txt"), "utf8")).toBe("top secret");
  });

  it("refuses a new file under a symlinked directory that leads outside", async () => {
    const { write_file } = await tools();
    symlinkSync(outside.dir, "out");
    await expect(async () => write_file({ path: "out/new/planted.txt", content: "x" })).rejects.toThrow(/through a symlink/);
    expect(existsSync(path.join(outside.dir, "new"))).toBe(false);
  });

  it("refuses a dangling symlink rather than writing through it", async () => {
    const { write_file } = await tools();
    symlinkSync(path.join(outside.dir, "not-yet.txt"), "dangling.txt");
    await expect(async () => write_file({ path: "dangling.txt", content: "x" })).rejects.toThrow(/symlink/);
    expect(existsSync(path.join(outside.dir, "not-yet.txt"))).toBe(false);
  });

  it("follows a symlink that stays inside", async () => {
    const { read_file } = await tools();
    writeFileSync("real.txt", "hello");
    symlinkSync("real.txt", "alias.txt");
    expect(await read_file({ path: "alias.txt" })).toBe("hello");
  });

  it("never expands ~ to the home folder", async () => {
    const { write_file } = await tools();
    await write_file({ path: "~/note.txt", content: "x" });
    expect(readFileSync(path.join(workspace.dir, "~", "note.txt"), "utf8")).toBe("x");
  });

  it("allows names with two dots that are not a .. segment", async () => {
    const { write_file, read_file } = await tools();
    await write_file({ path: "report..final.md", content: "r" });
    await write_file({ path: "..hidden/notes.md", content: "n" });
    expect(await read_file({ path: "report..final.md" })).toBe("r");
    expect(await read_file({ path: "..hidden/notes.md" })).toBe("n");
  });
});

describe.each(withFiles)("%s read_file", (_stage, file) => {
  useWorkspace();
  const tools = async (): Promise<Handlers> => (await import(file)).TOOL_HANDLERS;

  it("reads text, and with a limit says how many lines are left", async () => {
    const { read_file } = await tools();
    writeFileSync("five.txt", "1\n2\n3\n4\n5");
    expect(await read_file({ path: "five.txt" })).toBe("1\n2\n3\n4\n5");
    expect(await read_file({ path: "five.txt", limit: 2 })).toBe("1\n2\n... (3 more lines)");
    expect(await read_file({ path: "five.txt", limit: 10 })).toBe("1\n2\n3\n4\n5");
  });

  it("gives a clear error for a missing file and for a directory", async () => {
    const { read_file } = await tools();
    mkdirSync("src");
    await expect(async () => read_file({ path: "nope.txt" })).rejects.toThrow("nope.txt does not exist");
    await expect(async () => read_file({ path: "src" })).rejects.toThrow(/src is a directory/);
  });

  it("refuses a binary file instead of sending bytes to the model", async () => {
    const { read_file } = await tools();
    writeFileSync("image.png", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0x1a]));
    await expect(async () => read_file({ path: "image.png" })).rejects.toThrow(/looks binary/);
  });

  it("refuses a file over 10 MB", async () => {
    const { read_file } = await tools();
    writeFileSync("huge.log", "");
    truncateSync("huge.log", 11 * 1024 * 1024);
    await expect(async () => read_file({ path: "huge.log" })).rejects.toThrow(/over the 10 MB limit/);
  });

  it("refuses a missing path argument", async () => {
    const { read_file } = await tools();
    await expect(async () => read_file({})).rejects.toThrow('"path" must be a string');
  });
});

describe.each(withFiles)("%s write_file", (_stage, file) => {
  useWorkspace();
  const tools = async (): Promise<Handlers> => (await import(file)).TOOL_HANDLERS;

  it("creates missing parent folders and says how many bytes it wrote", async () => {
    const { write_file } = await tools();
    expect(await write_file({ path: "a/b/c.txt", content: "héllo" })).toBe("Wrote 6 bytes to a/b/c.txt");
    expect(readFileSync("a/b/c.txt", "utf8")).toBe("héllo");
  });

  it("keeps the old content whole when the write fails half-way", async () => {
    const { write_file } = await tools();
    writeFileSync("notes.txt", "old content");
    // Block the temporary file's name with a folder, so writing it fails.
    mkdirSync(`.notes.txt.${process.pid}.tmp`);
    await expect(async () => write_file({ path: "notes.txt", content: "new content" })).rejects.toThrow();
    expect(readFileSync("notes.txt", "utf8")).toBe("old content");
  });

  it("refuses to overwrite a directory, and content that is not a string", async () => {
    const { write_file } = await tools();
    mkdirSync("dir");
    await expect(async () => write_file({ path: "dir", content: "x" })).rejects.toThrow(/is a directory/);
    await expect(async () => write_file({ path: "x.txt", content: 5 })).rejects.toThrow('"content" must be a string');
    expect(existsSync("x.txt")).toBe(false);
  });
});

describe("s02 edit_file", () => {
  useWorkspace();
  const tools = async (): Promise<Handlers> => (await import("../agents/s02_tool_use.ts")).TOOL_HANDLERS;

  it("replaces the text literally: $& and $1 are inserted as typed", async () => {
    const { edit_file } = await tools();
    writeFileSync("price.txt", "cost: TBD\n");
    expect(await edit_file({ path: "price.txt", old_text: "TBD", new_text: "$& or $1 dollars" })).toMatch(/replaced 1 occurrence/);
    expect(readFileSync("price.txt", "utf8")).toBe("cost: $& or $1 dollars\n");
  });

  it("leaves the file's bytes as they were when the text is not found", async () => {
    const { edit_file } = await tools();
    const before = Buffer.from("line one\r\nline two\r\n\u00e9\n");
    writeFileSync("f.txt", before);
    await expect(async () => edit_file({ path: "f.txt", old_text: "line three", new_text: "x" })).rejects.toThrow(/not found.*unchanged/);
    expect(readFileSync("f.txt").equals(before)).toBe(true);
  });

  it("keeps a CRLF file CRLF when the model writes \\n", async () => {
    const { edit_file } = await tools();
    writeFileSync("win.txt", "a\r\nb\r\nc\r\n");
    await edit_file({ path: "win.txt", old_text: "a\nb", new_text: "a\nB\nb2" });
    const after = readFileSync("win.txt", "utf8");
    expect(after).toBe("a\r\nB\r\nb2\r\nc\r\n");
    expect(after.replace(/\r\n/g, "")).not.toContain("\n");
  });

  it("replaces the first match only, and says how many more are left", async () => {
    const { edit_file } = await tools();
    writeFileSync("x.txt", "x x x");
    expect(await edit_file({ path: "x.txt", old_text: "x", new_text: "y" })).toMatch(/2 more left/);
    expect(readFileSync("x.txt", "utf8")).toBe("y x x");
  });

  it("refuses empty old_text, a missing file, and a file that is not UTF-8", async () => {
    const { edit_file } = await tools();
    writeFileSync("a.txt", "abc");
    await expect(async () => edit_file({ path: "a.txt", old_text: "", new_text: "x" })).rejects.toThrow(/old_text is empty/);
    await expect(async () => edit_file({ path: "gone.txt", old_text: "a", new_text: "b" })).rejects.toThrow(/does not exist/);
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]); // "café" in Latin-1
    writeFileSync("latin1.txt", latin1);
    await expect(async () => edit_file({ path: "latin1.txt", old_text: "caf", new_text: "tea" })).rejects.toThrow(/not valid UTF-8/);
    expect(readFileSync("latin1.txt").equals(latin1)).toBe(true);
  });
});
