// lib/machinery/safe-read.ts, tested once: every file tool of every stage reads through it
// (read_file, edit_file, the search, the skills). What a plain readFileSync gets wrong is each
// a test here: a FIFO that blocks the program, /dev/zero read until memory runs out, a symlink
// swapped in after the sandbox's check, a huge log read whole, a binary sent as text. The
// stages' own tests keep one case per tool that proves the tool reads through here.
import { execFileSync } from "node:child_process";
import {
  closeSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync, writeSync,
} from "node:fs";
import net from "node:net";
import { describe, expect, it, type TestContext } from "vitest";
import { kindOf, LOOK_AHEAD, MAX_FILE_BYTES, openFile, PAGE_REACH, readPage, readText } from "../../lib/machinery/safe-read.ts";
import { FIFO_RELEASE_MS, msOnFifo, useWorkspace } from "../helpers.ts";

/** What `file` is refused with by openFile, readText and readPage alike. */
function refusedByAll(file: string, message: string | RegExp): void {
  expect(() => closeSync(openFile(file, file)), "openFile").toThrow(message);
  expect(() => readText(file, file), "readText").toThrow(message);
  expect(() => readPage(file, file, 1, 10, 40_000), "readPage").toThrow(message);
}

/** What `file` is refused with by readText and readPage, which look at what they read (openFile looks at what it opens). */
function contentRefused(file: string, message: string | RegExp): void {
  expect(() => readText(file, file), "readText").toThrow(message);
  expect(() => readPage(file, file, 1, 10, 40_000), "readPage").toThrow(message);
}

/** A socket listening at `file` for the length of `work`. */
async function withSocket(file: string, work: () => void | Promise<void>): Promise<void> {
  const server = net.createServer().listen(file);
  await new Promise((resolve) => server.once("listening", resolve));
  try {
    await work();
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

/** A file of `size` bytes that takes no room on disk: `head` at its start, `tail` at its end, nothing (zeros) between. */
function sparseFile(file: string, size: number, head = "", tail = ""): void {
  writeFileSync(file, head);
  truncateSync(file, size);
  const fd = openSync(file, "r+");
  try {
    writeSync(fd, tail, size - Buffer.byteLength(tail));
  } finally {
    closeSync(fd);
  }
}

/** A 64 GB sparse file of 2,000 lines of "text" and then zeros; a file system that refuses one skips the test, saying so. */
function hugeFile(context: TestContext, file: string): void {
  try {
    sparseFile(file, 64 * 1024 ** 3, "text\n".repeat(2000));
  } catch (error) {
    context.skip(`this file system refuses a 64 GB sparse file (${(error as Error).message})`);
  }
}

describe("openFile and readText refuse what is not a regular text file", () => {
  useWorkspace();

  // #region fifo
  it("refuses a FIFO at once, with the program not blocked", async () => {
    execFileSync("mkfifo", ["pipe"]);
    const message = "pipe is a FIFO (named pipe), not a regular file; only regular files are read";
    const took = await msOnFifo("pipe", async () => refusedByAll("pipe", message));
    // A blocked open or read would wait for the release; the refusals come well before it.
    expect(took).toBeLessThan(FIFO_RELEASE_MS / 2);
  });
  // #endregion fifo

  // #region devices
  it("refuses character devices at once, even /dev/zero, which never ends, and a symlink to it", () => {
    symlinkSync("/dev/zero", "zero");
    const started = Date.now();
    // /dev/null first: were devices read, it would answer "" at once rather than read for ever.
    refusedByAll("/dev/null", "/dev/null is a character device, not a regular file; only regular files are read");
    refusedByAll("/dev/zero", "/dev/zero is a character device, not a regular file; only regular files are read");
    // A link is never followed here: the sandbox has resolved the path it hands over, so a link
    // at that place now was put there since.
    refusedByAll("zero", "zero became a symlink after it was checked; nothing was read");
    // Read for ever, it would never get here; refused, it takes milliseconds (2 s leaves room for a busy machine).
    expect(Date.now() - started).toBeLessThan(2000);
  });
  // #endregion devices

  it("refuses a socket, saying what it is", async () => {
    await withSocket("sock", () => refusedByAll("sock", "sock is a socket, not a regular file; only regular files are read"));
  });

  it("refuses a folder, saying how to list it", () => {
    mkdirSync("src");
    refusedByAll("src", "src is a directory; list it with bash (ls)");
  });

  it("refuses a missing file, naming it as the model gave it", () => {
    expect(() => readText("/nowhere/nope.txt", "nope.txt")).toThrow(/^nope\.txt does not exist$/);
    expect(() => openFile("nope.txt", "nope.txt")).toThrow("nope.txt does not exist");
    expect(() => readPage("nope.txt", "nope.txt", 1, 10, 40_000)).toThrow("nope.txt does not exist");
  });

  it("refuses a symlink swapped in after the path was checked (O_NOFOLLOW), reading nothing through it", () => {
    writeFileSync("notes.txt", "checked text");
    writeFileSync("secret.txt", "never shown");
    // Checked as a regular file; then, before the read, another process puts a link there.
    symlinkSync("secret.txt", "link");
    renameSync("link", "notes.txt");
    refusedByAll("notes.txt", "notes.txt became a symlink after it was checked; nothing was read");
  });

  it("refuses a file over 10 MB without reading it, saying what to do instead; 10 MB itself is read", () => {
    sparseFile("huge.log", 11 * 1024 * 1024);
    sparseFile("enormous.log", 64 * 1024 ** 3); // 64 GB: read whole, this would never end
    try {
      expect(() => readText("huge.log", "huge.log")).toThrow("huge.log is 11.0 MB, over the 10 MB limit; look at parts of it with bash (head, grep)");
      expect(() => readText("huge.log", "huge.log", "page it with offset and limit")).toThrow(/over the 10 MB limit; page it with offset and limit$/);
      expect(() => readText("enormous.log", "enormous.log")).toThrow("enormous.log is 65536.0 MB, over the 10 MB limit");
      writeFileSync("limit.txt", "a".repeat(MAX_FILE_BYTES));
      expect(readText("limit.txt", "limit.txt").length).toBe(MAX_FILE_BYTES);
      writeFileSync("over.txt", "a".repeat(MAX_FILE_BYTES + 1));
      expect(() => readText("over.txt", "over.txt")).toThrow(/over the 10 MB limit/);
    } finally {
      for (const file of ["huge.log", "enormous.log", "limit.txt", "over.txt"]) rmSync(file, { force: true });
    }
  });

  it("refuses a binary file (a NUL byte in its first 8 KB) instead of sending bytes to the model", () => {
    writeFileSync("image.png", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0x1a]));
    writeFileSync("late.bin", Buffer.concat([Buffer.from("a".repeat(8191)), Buffer.from([0])]));
    contentRefused("image.png", "image.png looks binary (it contains NUL bytes), so it is not shown as text");
    contentRefused("late.bin", /late\.bin looks binary/);
    // Past the first 8 KB a NUL is not looked for: a text file with one stray byte is still text.
    writeFileSync("text.txt", Buffer.concat([Buffer.from("a".repeat(8192)), Buffer.from([0]), Buffer.from("\nend\n")]));
    expect(readText("text.txt", "text.txt")).toBe(`${"a".repeat(8192)}\0\nend\n`);
    expect(readPage("text.txt", "text.txt", 2, 1, 40_000).shown).toEqual(["     2\tend"]);
  });

  it("reads a text file whole, as UTF-8, and opens it for reading only", () => {
    writeFileSync("f.txt", "café\r\nnaïve ✓");
    expect(readText("f.txt", "f.txt")).toBe("café\r\nnaïve ✓");
    const fd = openFile("f.txt", "f.txt");
    try {
      expect(fstatSync(fd).isFile()).toBe(true);
      expect(() => writeSync(fd, "x")).toThrow(/EBADF/);
    } finally {
      closeSync(fd);
    }
  });

  it.skipIf(process.platform !== "linux")("never reads past the size seen when the file was opened", () => {
    // /proc/self/status says it is 0 bytes long, and yet gives text to a reader who reads on,
    // as a file that keeps growing would: readText reads what the size allowed, nothing more.
    expect(readFileSync("/proc/self/status", "utf8")).toContain("Name:");
    expect(statSync("/proc/self/status").size).toBe(0);
    expect(readText("/proc/self/status", "status")).toBe("");
  });

  it("names what a path is when it is not a regular file", async () => {
    execFileSync("mkfifo", ["pipe"]);
    symlinkSync("pipe", "link");
    expect(kindOf(lstatSync("pipe"))).toBe("a FIFO (named pipe)");
    expect(kindOf(lstatSync("link"))).toBe("a symlink");
    expect(kindOf(statSync("/dev/null"))).toBe("a character device");
    await withSocket("sock", () => expect(kindOf(lstatSync("sock"))).toBe("a socket"));
  });
});

describe("readPage", () => {
  useWorkspace();
  const numbered = (from: number, texts: string[]) => texts.map((text, i) => `${String(from + i).padStart(6)}\t${text}`);
  const page = (file: string, offset = 1, limit = 2000, maxCharacters = 40_000) => readPage(file, file, offset, limit, maxCharacters);

  it("numbers lines as cat -n does, six wide and then wider", () => {
    writeFileSync("three.txt", "one\ntwo\nthree\n");
    expect(page("three.txt")).toEqual({ shown: numbered(1, ["one", "two", "three"]), total: 3, full: false, exact: true });
    writeFileSync("long.txt", "x\n".repeat(1_000_001));
    expect(page("long.txt", 999_999, 3)).toEqual({ shown: ["999999\tx", "1000000\tx", "1000001\tx"], total: 1_000_001, full: false, exact: true });
  });

  it("shows `limit` lines from line `offset`, and counts every line of the file", () => {
    writeFileSync("ten.txt", Array.from({ length: 10 }, (_, i) => `line ${i + 1}\n`).join(""));
    expect(page("ten.txt", 3, 2)).toEqual({ shown: numbered(3, ["line 3", "line 4"]), total: 10, full: false, exact: true });
    expect(page("ten.txt", 9, 5)).toEqual({ shown: numbered(9, ["line 9", "line 10"]), total: 10, full: false, exact: true });
    expect(page("ten.txt", 11, 5)).toEqual({ shown: [], total: 10, full: false, exact: true });
  });

  it("cuts a line at 2,000 characters with a marker, even a 20 MB line, counting characters, not bytes", () => {
    writeFileSync("edge.txt", `${"a".repeat(2000)}\n${"b".repeat(2001)}\n`);
    expect(page("edge.txt").shown).toEqual(numbered(1, ["a".repeat(2000), `${"b".repeat(2000)} [line cut at 2000 characters]`]));
    writeFileSync("one-line.txt", `start${"y".repeat(20 * 1024 * 1024)}end\nsecond\n`);
    expect(page("one-line.txt")).toEqual({ shown: numbered(1, [`start${"y".repeat(1995)} [line cut at 2000 characters]`, "second"]), total: 2, full: false, exact: true });
    writeFileSync("wide.txt", `${"é".repeat(2000)}\n${"é".repeat(2001)}\n`); // 4,000 bytes, but 2,000 characters: not cut
    expect(page("wide.txt").shown).toEqual(numbered(1, ["é".repeat(2000), `${"é".repeat(2000)} [line cut at 2000 characters]`]));
  });

  it("keeps a character whole where a line crosses the 64 kB pieces the file is read in", () => {
    // Line 2 starts at byte 65,535: the two bytes of its é fall in the first piece and the second.
    writeFileSync("split.txt", `${"a".repeat(65_534)}\néclair\n`);
    expect(page("split.txt", 2)).toEqual({ shown: numbered(2, ["éclair"]), total: 2, full: false, exact: true });
  });

  it("stops a page before maxCharacters, leaving room for a footer, and says it is full", () => {
    writeFileSync("wide.txt", `${"w".repeat(1000)}\n`.repeat(100));
    const result = page("wide.txt", 11, 2000, 40_000);
    const characters = result.shown.reduce((sum, line) => sum + line.length + 1, 0);
    expect(result.full).toBe(true);
    expect(result.total).toBe(100);
    expect(characters).toBeLessThanOrEqual(40_000 - 500);
    // Full: one more line would not have fitted; and every line shown is whole.
    expect(characters + 1008).toBeGreaterThan(40_000 - 500);
    expect(result.shown).toEqual(numbered(11, Array(result.shown.length).fill("w".repeat(1000))));
    // A limit reached first is not a full page.
    expect(page("wide.txt", 1, 5, 40_000).full).toBe(false);
  });

  it("shows CRLF lines without their \\r, numbered the same", () => {
    writeFileSync("crlf.txt", "one\r\ntwo\r\n\r\nfour");
    expect(page("crlf.txt")).toEqual({ shown: numbered(1, ["one", "two", "", "four"]), total: 4, full: false, exact: true });
  });

  it("counts a last line without a line break, adds none after a final one, and keeps empty lines", () => {
    writeFileSync("open.txt", "a\nb");
    writeFileSync("closed.txt", "a\nb\n");
    writeFileSync("blank.txt", "\n\n");
    expect(page("open.txt")).toEqual({ shown: numbered(1, ["a", "b"]), total: 2, full: false, exact: true });
    expect(page("closed.txt")).toEqual({ shown: numbered(1, ["a", "b"]), total: 2, full: false, exact: true });
    expect(page("blank.txt")).toEqual({ shown: numbered(1, ["", ""]), total: 2, full: false, exact: true });
    expect(page("open.txt", 2)).toEqual({ shown: numbered(2, ["b"]), total: 2, full: false, exact: true });
  });

  it("gives an empty file no lines", () => {
    writeFileSync("empty.txt", "");
    expect(page("empty.txt")).toEqual({ shown: [], total: 0, full: false, exact: true });
  });

  it("pages a file of any size without loading it: 64 MB, past the limit of a whole read, with lines at both ends", () => {
    // Sparse: a file that takes no room on disk and no time to make. Its middle is zeros (one
    // line of them); the first 8 KB are text, so it is not taken for binary.
    const size = 64 * 1024 * 1024;
    sparseFile("huge.log", size, `first\nsecond\n${"text\n".repeat(2000)}`, "\nlast\n");
    try {
      expect(() => readText("huge.log", "huge.log")).toThrow(/over the 10 MB limit/);
      const before = process.memoryUsage().arrayBuffers;
      const first = page("huge.log", 1, 2);
      const end = page("huge.log", 2003, 2);
      // Only 64 kB pieces and the page's lines are held, never the file.
      expect((process.memoryUsage().arrayBuffers - before) / 1024 / 1024, "MB held").toBeLessThan(16);
      // The first page is 64 MB from the end: reading stops LOOK_AHEAD past it, so "at least" 2,003 lines.
      expect(first).toEqual({ shown: numbered(1, ["first", "second"]), total: 2003, full: false, exact: false });
      expect(end).toEqual({ shown: numbered(2003, [`${"\0".repeat(2000)} [line cut at 2000 characters]`, "last"]), total: 2004, full: false, exact: true });
    } finally {
      rmSync("huge.log", { force: true });
    }
  });

  // #region bounded
  it("reads a page of a 64 GB file at once: reading stops LOOK_AHEAD past the page, and the file has at least the lines seen", (context) => {
    hugeFile(context, "huge.log");
    try {
      const started = Date.now();
      const result = page("huge.log", 1, 5);
      // Read to its end to count its lines, the file would take minutes, and nothing could stop it.
      expect(Date.now() - started, "ms").toBeLessThan(2000);
      expect(result).toEqual({ shown: numbered(1, Array(5).fill("text")), total: 2001, full: false, exact: false });
      expect(LOOK_AHEAD).toBe(10 * 1024 * 1024);
    } finally {
      rmSync("huge.log", { force: true });
    }
  });

  it("refuses at once a page that does not begin in the first PAGE_REACH bytes, naming the limit and what to do instead", (context) => {
    hugeFile(context, "huge.log");
    try {
      const started = Date.now();
      expect(() => page("huge.log", 1_000_000_000, 5)).toThrow(
        "line 1000000000 of huge.log is not within its first 128 MB, and read_file reads no further into a file; use bash instead (tail, or sed -n '1000000000,1000000099p')",
      );
      // 128 MB read: tens of milliseconds alone, under a second with other tests at work.
      expect(Date.now() - started, "ms").toBeLessThan(3000);
      expect(PAGE_REACH).toBe(128 * 1024 * 1024);
    } finally {
      rmSync("huge.log", { force: true });
    }
  });
  // #endregion bounded

  it("ends a page at PAGE_REACH: a line running past it is shown cut, and the file has at least that many lines", (context) => {
    hugeFile(context, "huge.log");
    try {
      const started = Date.now();
      expect(page("huge.log", 1999, 10)).toEqual({
        shown: numbered(1999, ["text", "text", `${"\0".repeat(2000)} [line cut at 2000 characters]`]),
        total: 2001,
        full: false,
        exact: false,
      });
      expect(Date.now() - started, "ms").toBeLessThan(3000);
    } finally {
      rmSync("huge.log", { force: true });
    }
  });
});
