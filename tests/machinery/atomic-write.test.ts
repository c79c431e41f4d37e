// lib/machinery/atomic-write.ts, tested once: write_file and edit_file of every stage save
// through it, and so do s07's saved results and s12's memory. What a plain writeFileSync gets
// wrong is each a test here: half a file after a failure, a symlink planted at a temporary
// name, a folder swapped for a link to outside, a FIFO waited on, a device replaced, a script
// that loses its mode, hard links and owners broken. The stages' own tests keep one case per
// tool that proves the tool writes through here.
import { execFileSync } from "node:child_process";
import {
  chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, watch, writeFileSync,
} from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import net from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { inFolder, writeAtomically, type WriteRoot } from "../../lib/machinery/atomic-write.ts";
import { eventually, FIFO_RELEASE_MS, msOnFifo, REPO_ROOT, runProgram, TSX_LOADER, useOutside, useWorkspace } from "../helpers.ts";

const isRoot = process.getuid?.() === 0;
const modeOf = (file: string) => statSync(file).mode & 0o777;
/** The names in the current folder other than `expected`: a temporary file left behind shows here. */
const leftOver = (...expected: string[]) => readdirSync(".").filter((name) => !expected.includes(name));

/** The stages' rule for "inside" (their sandbox's isInside): only a `..` segment leaves the folder. */
function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

describe("writeAtomically", () => {
  const workspace = useWorkspace();
  const outside = useOutside();
  const where = (): WriteRoot => ({ root: workspace.dir, isInside });
  /** Write `content` to `given` (relative to the workspace) as a file tool does. */
  const write = (given: string, content: string, options: { createFolders?: boolean } = {}) =>
    writeAtomically(path.join(workspace.dir, given), content, given, where(), options);

  it("writes the new text to a temporary file and renames it over the old one, leaving nothing beside it", () => {
    writeFileSync("target.txt", "old");
    const before = statSync("target.txt").ino;
    write("target.txt", "new ✓");
    write("fresh.txt", "fresh");
    expect(readFileSync("target.txt", "utf8")).toBe("new ✓");
    expect(readFileSync("fresh.txt", "utf8")).toBe("fresh");
    // A rename gives the name a new file; writing in place would have kept the old one.
    expect(statSync("target.txt").ino).not.toBe(before);
    expect(leftOver("target.txt", "fresh.txt")).toEqual([]);
  });

  // #region planted-symlink
  it("uses a temporary name nobody can guess, and never follows a symlink planted at a likely one", async () => {
    const victim = path.join(outside.dir, "victim.txt");
    writeFileSync(victim, "outside, untouched");
    writeFileSync("target.txt", "old");
    // The names a plain version would use: the process id (as this code once did), .tmp, ~, .swp.
    const planted = [".target.txt.tmp", "target.txt.tmp", "target.txt~", ".target.txt.swp", ".fresh.txt.tmp"];
    planted.push(`.target.txt.${process.pid}.tmp`, `.fresh.txt.${process.pid}.tmp`);
    for (const name of planted) symlinkSync(victim, name);
    const made: string[] = [];
    const watcher = watch(".", (_event, name) => name && !made.includes(name) && !planted.includes(name) && made.push(name));
    try {
      write("target.txt", "new");
      write("target.txt", "newer");
      write("fresh.txt", "fresh");
      // The names the writes used: random, and a new one each time.
      expect(await eventually(() => made.filter((name) => name.endsWith(".tmp")).length === 3)).toBe(true);
    } finally {
      watcher.close();
    }
    const temporary = made.filter((name) => name.endsWith(".tmp"));
    expect(temporary[0]).toMatch(/^\.target\.txt\.[0-9a-f]{12}\.tmp$/);
    expect(temporary[1]).toMatch(/^\.target\.txt\.[0-9a-f]{12}\.tmp$/);
    expect(temporary[2]).toMatch(/^\.fresh\.txt\.[0-9a-f]{12}\.tmp$/);
    expect(temporary[0]).not.toBe(temporary[1]);
    expect(readFileSync(victim, "utf8")).toBe("outside, untouched");
    expect(lstatSync("target.txt").isFile()).toBe(true);
    expect(lstatSync("fresh.txt").isFile()).toBe(true);
    expect(readFileSync("target.txt", "utf8")).toBe("newer");
    expect(readFileSync("fresh.txt", "utf8")).toBe("fresh");
    expect(leftOver("target.txt", "fresh.txt", ...planted)).toEqual([]);
  });
  // #endregion planted-symlink

  it("creates its temporary file exclusively: a symlink planted at the very name it picks is not followed", () => {
    // The name is random, so a planter must guess it; here the guess is made right, by fixing
    // the random bytes (node:crypto's own export, put back afterwards).
    const crypto = createRequire(import.meta.url)("node:crypto") as typeof import("node:crypto");
    const random = crypto.randomBytes;
    const victim = path.join(outside.dir, "victim.txt");
    writeFileSync(victim, "outside, untouched");
    writeFileSync("target.txt", "old");
    symlinkSync(victim, ".target.txt.abababababab.tmp");
    crypto.randomBytes = ((size: number) => Buffer.alloc(size, 0xab)) as typeof crypto.randomBytes;
    syncBuiltinESMExports();
    try {
      expect(() => write("target.txt", "new")).toThrow(/EEXIST/);
    } finally {
      crypto.randomBytes = random;
      syncBuiltinESMExports();
    }
    expect(readFileSync(victim, "utf8")).toBe("outside, untouched");
    expect(readFileSync("target.txt", "utf8")).toBe("old");
    expect(lstatSync(".target.txt.abababababab.tmp").isSymbolicLink()).toBe(true);
  });

  it("keeps the mode: a 755 script stays 755, a 640 file stays 640", () => {
    writeFileSync("run.sh", "#!/bin/sh\necho 1\n");
    writeFileSync("private.txt", "a");
    chmodSync("run.sh", 0o755);
    chmodSync("private.txt", 0o640);
    write("run.sh", "#!/bin/sh\necho 2\n");
    write("private.txt", "b");
    expect(readFileSync("run.sh", "utf8")).toBe("#!/bin/sh\necho 2\n");
    expect(modeOf("run.sh")).toBe(0o755);
    expect(modeOf("private.txt")).toBe(0o640);
  });

  it("refuses a read-only file (mode 444), naming it, and leaves its content and mode", () => {
    writeFileSync("locked.txt", "keep me");
    chmodSync("locked.txt", 0o444);
    // Even where the system would let the write through (root may write anything): someone made it read-only on purpose.
    expect(() => write("locked.txt", "changed")).toThrow(
      "locked.txt is read-only (mode 444), so it is left as it is; if it should change, make it writable first (chmod u+w)",
    );
    expect(readFileSync("locked.txt", "utf8")).toBe("keep me");
    expect(modeOf("locked.txt")).toBe(0o444);
    expect(leftOver("locked.txt")).toEqual([]);
  });

  it("refuses a FIFO at once, neither replacing it nor waiting on it", async () => {
    execFileSync("mkfifo", ["pipe"]);
    const took = await msOnFifo("pipe", async () =>
      expect(() => write("pipe", "x")).toThrow("pipe is a FIFO (named pipe), not a regular file; only regular files are written"),
    );
    // A blocked open would wait for the release; the refusal comes well before it.
    expect(took).toBeLessThan(FIFO_RELEASE_MS / 2);
    expect(lstatSync("pipe").isFIFO()).toBe(true);
    expect(leftOver("pipe")).toEqual([]);
  });

  it.skipIf(!isRoot)("refuses a FIFO that belongs to another user at once, though such a file is written in place (run as root)", async () => {
    execFileSync("mkfifo", ["theirs.pipe"]);
    chownSync("theirs.pipe", 12345, 12345);
    const took = await msOnFifo("theirs.pipe", async () =>
      expect(() => write("theirs.pipe", "x")).toThrow("theirs.pipe is a FIFO (named pipe), not a regular file; only regular files are written"),
    );
    expect(took).toBeLessThan(FIFO_RELEASE_MS / 2);
    expect(lstatSync("theirs.pipe").isFIFO()).toBe(true);
  });

  it("refuses a socket, a symlink and a folder, leaving each as it was", async () => {
    const server = net.createServer().listen("sock");
    await new Promise((resolve) => server.once("listening", resolve));
    try {
      expect(() => write("sock", "x")).toThrow("sock is a socket, not a regular file; only regular files are written");
      expect(lstatSync("sock").isSocket()).toBe(true);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    // The sandbox hands over a path with its links resolved: a link found there now was put there since.
    writeFileSync(path.join(outside.dir, "victim.txt"), "outside, untouched");
    symlinkSync(path.join(outside.dir, "victim.txt"), "link.txt");
    expect(() => write("link.txt", "x")).toThrow("link.txt is a symlink, not a regular file; only regular files are written");
    expect(readFileSync(path.join(outside.dir, "victim.txt"), "utf8")).toBe("outside, untouched");
    mkdirSync("dir");
    expect(() => write("dir", "x")).toThrow("dir is a directory");
    expect(lstatSync("dir").isDirectory()).toBe(true);
    expect(leftOver("link.txt", "dir")).toEqual([]);
  });

  it.skipIf(!isRoot)("refuses a character device rather than replacing it (run as root, to make one)", () => {
    execFileSync("mknod", ["null", "c", "1", "3"]); // a /dev/null of the test's own
    expect(() => write("null", "x")).toThrow("null is a character device, not a regular file; only regular files are written");
    expect(lstatSync("null").isCharacterDevice()).toBe(true);
    expect(leftOver("null")).toEqual([]);
  });

  it("writes a file with other hard links in place, so every name shows the new text", () => {
    writeFileSync("one.txt", "old");
    linkSync("one.txt", "two.txt");
    const before = statSync("one.txt").ino;
    write("one.txt", "new");
    expect(readFileSync("two.txt", "utf8")).toBe("new");
    expect(statSync("one.txt").ino).toBe(before);
    expect(statSync("two.txt").ino).toBe(before);
    expect(leftOver("one.txt", "two.txt")).toEqual([]);
  });

  it.skipIf(!isRoot)("writes a file that belongs to another user in place, keeping its owner (run as root)", () => {
    writeFileSync("theirs.txt", "old");
    chownSync("theirs.txt", 12345, 12345);
    const before = statSync("theirs.txt").ino;
    write("theirs.txt", "new");
    expect(readFileSync("theirs.txt", "utf8")).toBe("new");
    expect([statSync("theirs.txt").uid, statSync("theirs.txt").gid]).toEqual([12345, 12345]);
    expect(statSync("theirs.txt").ino).toBe(before);
    expect(leftOver("theirs.txt")).toEqual([]);
  });

  // #region half-way
  // A limit is a property of a process, so a process of its own writes under it.
  it("leaves the old content whole, and no temporary file, when the write fails half-way", async () => {
    const script = `
      import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
      import { writeAtomically } from ${JSON.stringify(pathToFileURL(path.join(REPO_ROOT, "lib/machinery/atomic-write.ts")).href)};
      const where = { root: process.cwd(), isInside: () => true };
      const big = "x".repeat(3 * 1024 * 1024);
      const outcome = (work) => { try { work(); return "written"; } catch (error) { return "error: " + error.message; } };
      writeFileSync("old.txt", "old content\\n");
      const old = outcome(() => writeAtomically(process.cwd() + "/old.txt", big, "old.txt", where));
      const fresh = outcome(() => writeAtomically(process.cwd() + "/new/fresh.txt", big, "new/fresh.txt", where, { createFolders: true }));
      console.log(JSON.stringify({ old, fresh, text: readFileSync("old.txt", "utf8"), entries: readdirSync(".").sort(), made: readdirSync("new") }));`;
    // ulimit -f 2048: no file may grow past 2 MB (far more than tsx's cached files, which must
    // be written whole); with SIGXFSZ ignored, a longer write fails with EFBIG.
    const run = await runProgram(
      "bash",
      ["-c", `ulimit -f 2048; trap '' XFSZ; exec "$0" --import "$1" --input-type=module -e "$2"`, process.execPath, TSX_LOADER, script],
      { cwd: workspace.dir, timeoutMs: 20_000 },
    );
    expect(run.stderr).toBe("");
    const result = JSON.parse(run.stdout);
    expect(result.old).toMatch(/^error: .*(EFBIG|too large)/);
    expect(result.fresh).toMatch(/^error: .*(EFBIG|too large)/);
    expect(result.text).toBe("old content\n");
    expect(result.entries).toEqual(["new", "old.txt"]);
    expect(result.made).toEqual([]);
  });
  // #endregion half-way
});

describe("inFolder: the folders on the way, entered one at a time", () => {
  const workspace = useWorkspace();
  const outside = useOutside();
  const where = (): WriteRoot => ({ root: workspace.dir, isInside });

  it("refuses a folder on the way that leads outside, writing nothing, whatever the sandbox saw a moment before", () => {
    // The sandbox checked sub/x.txt while sub was a folder; by the write, it is a link to outside.
    symlinkSync(outside.dir, "sub");
    for (const [given, createFolders] of [["sub/x.txt", false], ["sub/new/deep.txt", true]] as const) {
      expect(() => writeAtomically(path.join(workspace.dir, given), "x", given, where(), { createFolders })).toThrow(
        `${given}: a folder on its way became a link to outside the workspace while writing; nothing was written`,
      );
    }
    // Not even the folder "new": a missing folder is made only inside one already checked.
    expect(readdirSync(outside.dir)).toEqual([]);
    expect(process.cwd()).toBe(workspace.dir);
  });

  it("asks the stage's own rule at each step, and stops at the first folder it says is outside", () => {
    mkdirSync("a/b", { recursive: true });
    const asked: string[] = [];
    const outsideAtB = (root: string, target: string) => (asked.push(path.relative(root, target)), !target.endsWith(`${path.sep}b`));
    let worked = false;
    expect(() => inFolder({ root: workspace.dir, isInside: outsideAtB }, path.join(workspace.dir, "a/b"), "a/b/x.txt", false, () => (worked = true))).toThrow(
      "a/b/x.txt: a folder on its way became a link to outside the workspace while writing; nothing was written",
    );
    expect(asked).toEqual(["a", path.join("a", "b")]);
    expect(worked).toBe(false);
    expect(process.cwd()).toBe(workspace.dir);
  });

  it("makes missing folders one at a time, each checked before the next is made inside it", () => {
    mkdirSync("a");
    const asked: string[] = [];
    const recording = (root: string, target: string) => {
      asked.push(`${path.relative(root, target)}: ${readdirSync(target).join(",")}`);
      return isInside(root, target);
    };
    let stoodIn = "";
    inFolder({ root: workspace.dir, isInside: recording }, path.join(workspace.dir, "a/b/c"), "a/b/c/x.txt", true, () => (stoodIn = process.cwd()));
    // Each folder was checked while it was still empty: the next one was made after the check.
    expect(asked).toEqual(["a: ", `${path.join("a", "b")}: `, `${path.join("a", "b", "c")}: `]);
    expect(stoodIn).toBe(path.join(workspace.dir, "a/b/c"));
    expect(process.cwd()).toBe(workspace.dir);
    writeAtomically(path.join(workspace.dir, "d/e/x.txt"), "deep", "d/e/x.txt", where(), { createFolders: true });
    expect(readFileSync("d/e/x.txt", "utf8")).toBe("deep");
  });

  it("makes no folder unless asked to, and then the write fails", () => {
    expect(() => writeAtomically(path.join(workspace.dir, "missing/x.txt"), "x", "missing/x.txt", where())).toThrow(/ENOENT/);
    expect(existsSync("missing")).toBe(false);
    expect(process.cwd()).toBe(workspace.dir);
  });

  it("goes back to the folder it started in, whether the work ends or throws", () => {
    mkdirSync("sub");
    process.chdir(outside.dir); // the process may stand anywhere; the root is given
    inFolder(where(), path.join(workspace.dir, "sub"), "sub", false, () => writeFileSync("here.txt", "x"));
    expect(process.cwd()).toBe(outside.dir);
    expect(() => inFolder(where(), path.join(workspace.dir, "sub"), "sub", false, () => { throw new Error("failed"); })).toThrow("failed");
    expect(process.cwd()).toBe(outside.dir);
    process.chdir(workspace.dir);
    expect(readFileSync("sub/here.txt", "utf8")).toBe("x");
  });
});
