// The workspace sandbox, read_file and write_file, run once per implementation of each tool
// (tests/helpers.ts stagesWithTool). The sandbox is each stage's own lesson, so every rule of it
// runs for every implementation: a clear error, nothing written outside the workspace, not even
// while another process swaps folders for links. What the tools read and write through is
// machinery, tested once in tests/machinery (safe-read, atomic-write, validation); here each
// tool keeps one case that proves it goes through it (a FIFO refused at once, a read-only file
// left alone), besides its own arguments and the messages the model reads.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { editFileOf, FIFO_RELEASE_MS, msOnFifo, stagesWithTool, toolOf, toolParameters, useOutside, useWorkspace } from "./helpers.ts";

const modeOf = (file: string) => statSync(file).mode & 0o777;
/** The names in the current folder other than `expected`: a temporary file left behind shows here. */
const leftOver = (...expected: string[]) => readdirSync(".").filter((name) => !expected.includes(name));

const readStages = await stagesWithTool("read_file");
const writeStages = await stagesWithTool("write_file");
const paged = await Promise.all(readStages.map(async (stage) => (await toolParameters(stage[1], "read_file")).includes("offset")));
/** Stages whose read_file returns the whole file as it is (s02 to s06). */
const wholeFileStages = readStages.filter((_, i) => !paged[i]);
/** Stages whose read_file reads a page at a time, with a footer (s07 and the capstone). */
const pagedStages = readStages.filter((_, i) => paged[i]);

describe.each(readStages)("%s sandbox", (_stage, file) => {
  const workspace = useWorkspace();
  const outside = useOutside();
  const tool = (name: string) => toolOf(file, name);

  it("refuses ../ escapes before any I/O", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "top secret");
    await expect((await tool("read_file"))({ path: path.join(path.relative(workspace.dir, outside.dir), "secret.txt") })).rejects.toThrow(/outside the workspace/);
    await expect((await tool("write_file"))({ path: "../../escaped.txt", content: "x" })).rejects.toThrow(/outside the workspace/);
    expect(existsSync(path.join(workspace.dir, "..", "..", "escaped.txt"))).toBe(false);
  });

  it("refuses .. alone (and spellings of it), for every tool that takes a path", async () => {
    const names = ((await import(file)).TOOLS as { name: string }[]).map((t) => t.name);
    const edit = await editFileOf(file);
    for (const given of ["..", "../", "a/../..", "./.."]) {
      const attempts: [string, () => Promise<string>][] = [
        ["read_file", async () => (await tool("read_file"))({ path: given })],
        ["write_file", async () => (await tool("write_file"))({ path: given, content: "x" })],
        ["edit_file", () => edit(given, "a", "b")],
        ["ls", async () => (await tool("ls"))({ path: given })],
        ["grep", async () => (await tool("grep"))({ pattern: "x", path: given })],
        ["glob", async () => (await tool("glob"))({ pattern: "*", path: given })],
      ];
      for (const [name, attempt] of attempts.filter(([name]) => names.includes(name))) {
        await expect(attempt(), `${name} ${given}`).rejects.toThrow(`${given} is outside the workspace`);
      }
    }
  });

  it("refuses absolute paths outside, and accepts absolute paths inside", async () => {
    const [read, write] = [await tool("read_file"), await tool("write_file")];
    writeFileSync(path.join(outside.dir, "secret.txt"), "top secret");
    await expect(read({ path: path.join(outside.dir, "secret.txt") })).rejects.toThrow(/outside the workspace/);
    await expect(read({ path: "/etc/passwd" })).rejects.toThrow(/outside the workspace/);
    await write({ path: path.join(workspace.dir, "inside.txt"), content: "ok" });
    expect(await read({ path: "inside.txt" })).toContain("ok");
  });

  it("refuses a path with a NUL byte", async () => {
    await expect((await tool("read_file"))({ path: "a\0b" })).rejects.toThrow(/NUL byte/);
    await expect((await tool("write_file"))({ path: "a.txt\0.png", content: "x" })).rejects.toThrow(/NUL byte/);
  });

  it("refuses a symlink whose target is outside, for reading and for writing", async () => {
    writeFileSync(path.join(outside.dir, "secret.txt"), "top secret");
    symlinkSync(path.join(outside.dir, "secret.txt"), "link.txt");
    await expect((await tool("read_file"))({ path: "link.txt" })).rejects.toThrow(/through a symlink/);
    await expect((await tool("write_file"))({ path: "link.txt", content: "overwritten" })).rejects.toThrow(/through a symlink/);
    expect(readFileSync(path.join(outside.dir, "secret.txt"), "utf8")).toBe("top secret");
  });

  it("refuses a new file under a symlinked directory that leads outside", async () => {
    symlinkSync(outside.dir, "out");
    await expect((await tool("write_file"))({ path: "out/new/planted.txt", content: "x" })).rejects.toThrow(/through a symlink/);
    expect(readdirSync(outside.dir)).toEqual([]);
  });

  it("refuses a dangling symlink rather than writing through it", async () => {
    symlinkSync(path.join(outside.dir, "not-yet.txt"), "dangling.txt");
    await expect((await tool("write_file"))({ path: "dangling.txt", content: "x" })).rejects.toThrow(/symlink/);
    expect(readdirSync(outside.dir)).toEqual([]);
  });

  it("follows a symlink that stays inside", async () => {
    writeFileSync("real.txt", "hello");
    symlinkSync("real.txt", "alias.txt");
    expect(await (await tool("read_file"))({ path: "alias.txt" })).toContain("hello");
  });

  it("never expands ~ to the home folder", async () => {
    await (await tool("write_file"))({ path: "~/note.txt", content: "x" });
    expect(readFileSync(path.join(workspace.dir, "~", "note.txt"), "utf8")).toBe("x");
  });

  it("allows names with two dots that are not a .. segment", async () => {
    const [read, write] = [await tool("read_file"), await tool("write_file")];
    await write({ path: "report..final.md", content: "r" });
    await write({ path: "..hidden/notes.md", content: "n" });
    expect(readFileSync("report..final.md", "utf8")).toBe("r");
    expect(readFileSync("..hidden/notes.md", "utf8")).toBe("n");
    expect(await read({ path: "report..final.md" })).toContain("r");
    expect(await read({ path: "..hidden/notes.md" })).toContain("n");
  });
});

describe.each(wholeFileStages)("%s read_file, the whole file", (_stage, file) => {
  useWorkspace();
  const read = (input: Record<string, unknown>) => toolOf(file, "read_file").then((tool) => tool(input));

  it("reads text, and with a limit says how many lines are left", async () => {
    writeFileSync("five.txt", "1\n2\n3\n4\n5");
    expect(await read({ path: "five.txt" })).toBe("1\n2\n3\n4\n5");
    expect(await read({ path: "five.txt", limit: 2 })).toBe("1\n2\n... (3 more lines)");
    expect(await read({ path: "five.txt", limit: 10 })).toBe("1\n2\n3\n4\n5");
  });
});

describe.each(pagedStages)("%s read_file, a page at a time", (_stage, file) => {
  useWorkspace();
  const read = (input: Record<string, unknown>) => toolOf(file, "read_file").then((tool) => tool(input));
  const numbered = (from: number, texts: string[]) => texts.map((text, i) => `${String(from + i).padStart(6)}\t${text}`).join("\n");

  it("numbers the lines, and ends a part of the file with a footer that gives the next call", async () => {
    writeFileSync("five.txt", "one\ntwo\nthree\nfour\nfive\n");
    expect(await read({ path: "five.txt" })).toBe(numbered(1, ["one", "two", "three", "four", "five"]));
    expect(await read({ path: "five.txt", limit: 2 })).toBe(`${numbered(1, ["one", "two"])}\n\n[lines 1-2 of 5. Next page: offset 3, limit 2]`);
    expect(await read({ path: "five.txt", offset: 3, limit: 2 })).toBe(`${numbered(3, ["three", "four"])}\n\n[lines 3-4 of 5. Next page: offset 5, limit 2]`);
    expect(await read({ path: "five.txt", offset: 5 })).toBe(`${numbered(5, ["five"])}\n\n[line 5 of 5: the end of the file]`);
  });

  it("stops a page before 40,000 characters, and says so in the footer", async () => {
    writeFileSync("wide.txt", `${"w".repeat(1000)}\n`.repeat(100));
    const page = await read({ path: "wide.txt" });
    const shown = page.split("\n").filter((line) => /^ *\d+\t/.test(line)).length;
    expect(page.length).toBeLessThanOrEqual(40_000);
    expect(page.endsWith(`[lines 1-${shown} of 100: a page stops before 40000 characters. Next page: offset ${shown + 1}]`)).toBe(true);
  });

  it("refuses an offset past the end, saying how many lines there are; an empty file says it is empty", async () => {
    writeFileSync("five.txt", "1\n2\n3\n4\n5\n");
    writeFileSync("empty.txt", "");
    await expect(read({ path: "five.txt", offset: 6 })).rejects.toThrow("offset 6 is past the end of five.txt, which has 5 lines");
    await expect(read({ path: "empty.txt", offset: 2 })).rejects.toThrow("offset 2 is past the end of empty.txt, which has 0 lines");
    expect(await read({ path: "empty.txt" })).toBe("(empty.txt is empty)");
  });

  it("takes an offset of null as not given, and refuses one that is not a whole number of at least 1, naming offset", async () => {
    writeFileSync("five.txt", "1\n2\n3\n4\n5\n");
    expect(await read({ path: "five.txt", offset: null })).toBe(await read({ path: "five.txt" }));
    for (const offset of [0, -3, 1.5, "2"]) {
      await expect(read({ path: "five.txt", offset }), JSON.stringify(offset)).rejects.toThrow(/"offset" must be/);
    }
  });
});

describe.each(readStages)("%s read_file", (_stage, file) => {
  useWorkspace();
  const read = (input: Record<string, unknown>) => toolOf(file, "read_file").then((tool) => tool(input));

  it("takes a limit of null as not given, as a model sends what it leaves out", async () => {
    writeFileSync("lines.txt", Array.from({ length: 3000 }, (_, i) => `line ${i + 1}`).join("\n"));
    expect(await read({ path: "lines.txt", limit: null })).toBe(await read({ path: "lines.txt" }));
  });

  it("refuses a limit that is not a whole number of at least 1, naming limit", async () => {
    writeFileSync("five.txt", "1\n2\n3\n4\n5");
    for (const limit of [0, -3, 1.5, "x", "2", {}, true]) {
      await expect(read({ path: "five.txt", limit }), JSON.stringify(limit)).rejects.toThrow(/"limit" must be/);
    }
  });

  it("gives a clear error for a missing file and for a directory", async () => {
    mkdirSync("src");
    await expect(read({ path: "nope.txt" })).rejects.toThrow("nope.txt does not exist");
    await expect(read({ path: "src" })).rejects.toThrow(/src is a directory/);
  });

  // One case for the safe read (tests/machinery/safe-read.test.ts has the devices, sockets, size and binary files).
  it("refuses a FIFO at once, with the program not blocked", async () => {
    execFileSync("mkfifo", ["pipe"]);
    const took = await msOnFifo("pipe", () => expect(read({ path: "pipe" })).rejects.toThrow("pipe is a FIFO (named pipe), not a regular file; only regular files are read"));
    // A blocked read would wait for the release; the refusal comes well before it.
    expect(took).toBeLessThan(FIFO_RELEASE_MS / 2);
  });

  it("refuses a missing path argument", async () => {
    await expect(read({})).rejects.toThrow(/"path" (must be a string|is required)/);
  });
});

describe.each(writeStages)("%s write_file", (_stage, file) => {
  useWorkspace();
  const write = (input: Record<string, unknown>) => toolOf(file, "write_file").then((tool) => tool(input));

  it("creates missing parent folders and says how many bytes it wrote, leaving no temporary file", async () => {
    expect(await write({ path: "a/b/c.txt", content: "héllo" })).toBe("Wrote 6 bytes to a/b/c.txt");
    const first = statSync("a/b/c.txt").ino;
    expect(await write({ path: "a/b/c.txt", content: "again" })).toBe("Wrote 5 bytes to a/b/c.txt");
    expect(readFileSync("a/b/c.txt", "utf8")).toBe("again");
    expect(readdirSync("a/b")).toEqual(["c.txt"]);
    // A new file renamed over the old one (the atomic write), not the old one truncated and written again.
    expect(statSync("a/b/c.txt").ino).not.toBe(first);
  });

  it("replaces a binary file with text, as asked (the old bytes are not text to show, but they may be replaced)", async () => {
    writeFileSync("logo.png", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1, 2]));
    expect(await write({ path: "logo.png", content: "not a picture any more\n" })).toBe("Wrote 23 bytes to logo.png");
    expect(readFileSync("logo.png", "utf8")).toBe("not a picture any more\n");
  });

  it("says plainly when a part of the path is a file, not a folder", async () => {
    writeFileSync("a.txt", "x");
    await expect(write({ path: "a.txt/b.txt", content: "y" })).rejects.toThrow(/a\.txt.*is a file, not a folder/);
    expect(readFileSync("a.txt", "utf8")).toBe("x");
  });

  it("refuses to overwrite a directory, and content that is not a string", async () => {
    mkdirSync("dir");
    await expect(write({ path: "dir", content: "x" })).rejects.toThrow(/is a directory/);
    await expect(write({ path: "x.txt", content: 5 })).rejects.toThrow('"content" must be a string');
    expect(existsSync("x.txt")).toBe(false);
  });

  // Two cases for the machinery it writes through (tests/machinery/atomic-write.test.ts has the
  // rest: the temporary name, the mode, hard links, owners, devices, a failure half-way).
  it("refuses a read-only file (mode 444), naming it, and leaves its content and mode", async () => {
    writeFileSync("locked.txt", "keep me");
    chmodSync("locked.txt", 0o444);
    await expect(write({ path: "locked.txt", content: "changed" })).rejects.toThrow(
      "locked.txt is read-only (mode 444), so it is left as it is; if it should change, make it writable first (chmod u+w)",
    );
    expect(readFileSync("locked.txt", "utf8")).toBe("keep me");
    expect(modeOf("locked.txt")).toBe(0o444);
    expect(leftOver("locked.txt")).toEqual([]);
  });

  it("refuses a FIFO at once, neither replacing it nor waiting on it", async () => {
    execFileSync("mkfifo", ["pipe"]);
    const took = await msOnFifo("pipe", () => expect(write({ path: "pipe", content: "x" })).rejects.toThrow("pipe is a FIFO (named pipe), not a regular file"));
    // A blocked open would wait for the release; the refusal comes well before it.
    expect(took).toBeLessThan(FIFO_RELEASE_MS / 2);
    expect(lstatSync("pipe").isFIFO()).toBe(true);
  });
});

// A folder swapped for a link between the tool's check and its write must not carry the write
// outside. One racing process against every stage's write_file at once, so the time this
// takes does not grow with the number of stages.

describe("write_file while another process swaps a folder for a symlink to outside", () => {
  const workspace = useWorkspace();
  const outside = useOutside();

  // Swap sub between a real folder and a link to outside, as fast as renames go, until a file
  // named stop appears (or 10 s have passed).
  const RACER = `
    const fs = require("node:fs");
    const outside = process.argv[1];
    const kind = (name) => { try { return fs.lstatSync(name).isSymbolicLink() ? "link" : "folder"; } catch { return "none"; } };
    const attempt = (work) => { try { work(); } catch {} };
    fs.mkdirSync("sub");
    fs.symlinkSync(outside, "link");
    console.log("ready");
    let swaps = 0;
    for (const end = Date.now() + 10000; Date.now() < end && !fs.existsSync("stop"); swaps++) {
      attempt(() => fs.renameSync("sub", "parked")); // the folder out of the way
      attempt(() => fs.renameSync("link", "sub"));   // the link in its place
      attempt(() => fs.renameSync("sub", "link"));   // the link out again
      attempt(() => fs.renameSync("parked", "sub")); // the folder back
      // The tool may make a new sub folder while there is none: move it aside so the swaps go on.
      if (kind("sub") === "link") attempt(() => fs.renameSync("sub", "link"));
      if (kind("parked") === "folder") {
        if (kind("sub") === "folder") attempt(() => fs.renameSync("sub", "made-" + swaps));
        attempt(() => fs.renameSync("parked", "sub"));
      }
    }
    console.log(swaps);`;

  it("creates nothing at all outside, whatever the timing", async () => {
    const writers = await Promise.all(writeStages.map(([, file]) => toolOf(file, "write_file")));
    const racer = spawn(process.execPath, ["-e", RACER, outside.dir], { cwd: workspace.dir, stdio: ["ignore", "pipe", "inherit"] });
    let printed = "";
    racer.stdout.on("data", (chunk: Buffer) => (printed += chunk.toString()));
    const finished = new Promise((resolve) => racer.on("close", resolve));
    await Promise.race([finished, new Promise<void>((resolve) => racer.stdout.on("data", () => printed.includes("ready") && resolve()))]);

    // About a second, and enough calls for the race to be won many times over (the code before
    // this test lost it about once in a hundred calls), even on a busy machine.
    let [written, refused, calls] = [0, 0, 0];
    const started = Date.now();
    const going = () => Date.now() - started < 5000 && (Date.now() - started < 1000 || calls < 800);
    while (going()) {
      for (const write of writers) {
        for (const given of ["sub/x.txt", "sub/new/deep.txt"]) {
          calls += 1;
          try {
            await write({ path: given, content: `call ${calls}` });
            written += 1;
          } catch {
            refused += 1; // the folder was away or was a link at that moment: fine, nothing written
          }
        }
      }
    }
    writeFileSync("stop", "");
    await finished;
    const swaps = Number(printed.split("\n")[1]);

    expect(readdirSync(outside.dir)).toEqual([]);
    // The race really ran: many swaps, and calls that got through and calls that were refused.
    expect(swaps).toBeGreaterThan(100);
    expect(written).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(10);
  });
});
