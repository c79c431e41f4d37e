// The workspace sandbox, read_file and write_file, run against every stage that carries them.
// Each rule is one test in its own temporary workspace: a clear error, nothing lost, nothing
// written outside the workspace, not even while another process swaps folders for links.
import { execFileSync, spawn } from "node:child_process";
import {
  chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync,
} from "node:fs";
import net from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { editFileOf, FIFO_RELEASE_MS, msOnFifo, runProgram, stagesWithTool, toolOf, toolParameters, TSX_LOADER, useOutside, useWorkspace } from "./helpers.ts";

const isRoot = process.getuid?.() === 0;
const modeOf = (file: string) => statSync(file).mode & 0o777;
/** The names in the current folder other than `expected`: a temporary file left behind shows here. */
const leftOver = (...expected: string[]) => readdirSync(".").filter((name) => !expected.includes(name));

const readStages = await stagesWithTool("read_file");
/** Stages whose read_file returns the whole file as it is (s02 to s06); from s07 it reads pages. */
const wholeFileStages = (
  await Promise.all(readStages.map(async (stage) => ((await toolParameters(stage[1], "read_file")).includes("offset") ? [] : [stage])))
).flat();

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

  it("refuses a file over 10 MB", async () => {
    writeFileSync("huge.log", "");
    truncateSync("huge.log", 11 * 1024 * 1024);
    await expect(read({ path: "huge.log" })).rejects.toThrow(/over the 10 MB limit/);
  });
});

describe.each(readStages)("%s read_file", (_stage, file) => {
  const workspace = useWorkspace();
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

  it("refuses a FIFO at once, with the program not blocked", async () => {
    execFileSync("mkfifo", ["pipe"]);
    const took = await msOnFifo("pipe", () => expect(read({ path: "pipe" })).rejects.toThrow("pipe is a FIFO (named pipe), not a regular file; only regular files are read"));
    // A blocked read would wait for the release; the refusal comes well before it.
    expect(took).toBeLessThan(FIFO_RELEASE_MS / 2);
  });

  it("refuses a socket, saying what it is", async () => {
    const server = net.createServer().listen("sock");
    await new Promise((resolve) => server.once("listening", resolve));
    try {
      await expect(read({ path: "sock" })).rejects.toThrow("sock is a socket, not a regular file; only regular files are read");
    } finally {
      server.close();
    }
  });

  it("refuses character devices at once, even /dev/zero, which never ends", async () => {
    // The workspace is the root folder here, so dev/null and dev/zero are inside it. Nothing is written.
    process.chdir("/");
    try {
      const started = Date.now();
      // /dev/null first: were devices read, it would answer "" at once rather than read for ever.
      await expect(read({ path: "dev/null" })).rejects.toThrow("dev/null is a character device, not a regular file; only regular files are read");
      await expect(read({ path: "dev/zero" })).rejects.toThrow("dev/zero is a character device, not a regular file; only regular files are read");
      // Read for ever, it would never get here; refused, it takes milliseconds (2 s leaves room for a busy machine).
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      process.chdir(workspace.dir);
    }
  });

  it("refuses a binary file instead of sending bytes to the model", async () => {
    writeFileSync("image.png", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0x1a]));
    await expect(read({ path: "image.png" })).rejects.toThrow(/looks binary/);
  });

  it("refuses a missing path argument", async () => {
    await expect(read({})).rejects.toThrow(/"path" (must be a string|is required)/);
  });
});

describe.each(await stagesWithTool("write_file"))("%s write_file", (_stage, file) => {
  useWorkspace();
  const outside = useOutside();
  const write = (input: Record<string, unknown>) => toolOf(file, "write_file").then((tool) => tool(input));

  it("creates missing parent folders and says how many bytes it wrote, leaving no temporary file", async () => {
    expect(await write({ path: "a/b/c.txt", content: "héllo" })).toBe("Wrote 6 bytes to a/b/c.txt");
    expect(await write({ path: "a/b/c.txt", content: "again" })).toBe("Wrote 5 bytes to a/b/c.txt");
    expect(readFileSync("a/b/c.txt", "utf8")).toBe("again");
    expect(readdirSync("a/b")).toEqual(["c.txt"]);
  });

  it("refuses to overwrite a directory, and content that is not a string", async () => {
    mkdirSync("dir");
    await expect(write({ path: "dir", content: "x" })).rejects.toThrow(/is a directory/);
    await expect(write({ path: "x.txt", content: 5 })).rejects.toThrow('"content" must be a string');
    expect(existsSync("x.txt")).toBe(false);
  });

  it("never follows a symlink planted at the temporary name of before (.name.<pid>.tmp)", async () => {
    const victim = path.join(outside.dir, "victim.txt");
    writeFileSync(victim, "outside, untouched");
    writeFileSync("target.txt", "old");
    const planted = [`.target.txt.${process.pid}.tmp`, `.fresh.txt.${process.pid}.tmp`];
    for (const name of planted) symlinkSync(victim, name);
    await write({ path: "target.txt", content: "new" });
    await write({ path: "fresh.txt", content: "fresh" });
    expect(readFileSync(victim, "utf8")).toBe("outside, untouched");
    expect(lstatSync("target.txt").isFile()).toBe(true);
    expect(lstatSync("fresh.txt").isFile()).toBe(true);
    expect(readFileSync("target.txt", "utf8")).toBe("new");
    expect(readFileSync("fresh.txt", "utf8")).toBe("fresh");
    expect(leftOver("target.txt", "fresh.txt", ...planted)).toEqual([]);
  });

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

  it("keeps the mode: a 755 script stays 755", async () => {
    writeFileSync("run.sh", "#!/bin/sh\necho 1\n");
    chmodSync("run.sh", 0o755);
    await write({ path: "run.sh", content: "#!/bin/sh\necho 2\n" });
    expect(readFileSync("run.sh", "utf8")).toBe("#!/bin/sh\necho 2\n");
    expect(modeOf("run.sh")).toBe(0o755);
  });

  it("writes a file with other hard links in place, so every name shows the new text", async () => {
    writeFileSync("one.txt", "old");
    linkSync("one.txt", "two.txt");
    await write({ path: "one.txt", content: "new" });
    expect(readFileSync("two.txt", "utf8")).toBe("new");
    expect(statSync("one.txt").ino).toBe(statSync("two.txt").ino);
    expect(leftOver("one.txt", "two.txt")).toEqual([]);
  });

  it.skipIf(!isRoot)("keeps the owner of a file that belongs to another user (run as root)", async () => {
    writeFileSync("theirs.txt", "old");
    chownSync("theirs.txt", 12345, 12345);
    await write({ path: "theirs.txt", content: "new" });
    expect(readFileSync("theirs.txt", "utf8")).toBe("new");
    expect([statSync("theirs.txt").uid, statSync("theirs.txt").gid]).toEqual([12345, 12345]);
  });

  it("refuses a FIFO or a socket rather than replacing it or waiting on it", async () => {
    execFileSync("mkfifo", ["pipe"]);
    const server = net.createServer().listen("sock");
    await new Promise((resolve) => server.once("listening", resolve));
    try {
      await expect(write({ path: "pipe", content: "x" })).rejects.toThrow("pipe is a FIFO (named pipe), not a regular file");
      await expect(write({ path: "sock", content: "x" })).rejects.toThrow("sock is a socket, not a regular file");
      expect(lstatSync("pipe").isFIFO()).toBe(true);
      expect(lstatSync("sock").isSocket()).toBe(true);
    } finally {
      server.close();
    }
  });

  it.skipIf(!isRoot)("refuses a FIFO that belongs to another user at once, with the program not blocked (run as root)", async () => {
    execFileSync("mkfifo", ["theirs.pipe"]);
    chownSync("theirs.pipe", 12345, 12345);
    const took = await msOnFifo("theirs.pipe", () => expect(write({ path: "theirs.pipe", content: "x" })).rejects.toThrow(/theirs\.pipe is a FIFO \(named pipe\), not a regular file/));
    // A blocked open would wait for the release; the refusal comes well before it.
    expect(took).toBeLessThan(FIFO_RELEASE_MS / 2);
  });
});

// A folder swapped for a link between the tool's check and its write must not carry the write
// outside. One racing process against every stage's write_file at once, so the time this
// takes does not grow with the number of stages.
const writeStages = await stagesWithTool("write_file");

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

// A write that fails half-way (here the file-size limit stops it at 2 MB) leaves the old
// content whole and no temporary file. A limit is a property of a process, so one process
// runs every stage's write_file and edit_file under it.
const fillStages = await Promise.all(
  writeStages.map(async ([id, file]) => {
    const parameters = await toolParameters(file, "edit_file");
    const edit = parameters.length === 0 ? [] : parameters.includes("old_string") ? ["old_string", "new_string"] : ["old_text", "new_text"];
    return { id, file, edit };
  }),
);

describe("write_file and edit_file when the write fails half-way", () => {
  const workspace = useWorkspace();

  const SCRIPT = `
    import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
    // Every stage in one process: each adds its exit handler, more than Node's default warning limit.
    process.setMaxListeners(0);
    const stages = JSON.parse(process.argv[1]);
    const big = "x".repeat(3 * 1024 * 1024);
    const home = process.cwd();
    const outcome = (promise) => promise.then((text) => "returned: " + text, (error) => "error: " + error.message);
    const results = {};
    for (const { id, file, edit } of stages) {
      const stage = await import(file);
      const call = (name, input) => Promise.resolve().then(() =>
        stage.TOOL_HANDLERS ? stage.TOOL_HANDLERS[name](input) : stage.registry.getTool(name).execute(input, new AbortController().signal).then((r) => r.llmContent));
      mkdirSync(id);
      process.chdir(id);
      writeFileSync("written.txt", "old content\\n");
      writeFileSync("edited.txt", "old content\\n");
      const write = await outcome(call("write_file", { path: "written.txt", content: big }));
      const edited = edit.length === 2 ? await outcome(call("edit_file", { path: "edited.txt", [edit[0]]: "old", [edit[1]]: big })) : "no edit_file";
      results[id] = { write, edited, written: readFileSync("written.txt", "utf8"), editedText: readFileSync("edited.txt", "utf8"), entries: readdirSync(".").sort() };
      process.chdir(home);
    }
    console.log(JSON.stringify(results));`;

  it("fails with a clear error, keeps the old content whole and leaves no temporary file", async () => {
    // ulimit -f 2048: no file may grow past 2 MB (far more than tsx's cached files, which must
    // be written whole); with SIGXFSZ ignored, a longer write fails with EFBIG.
    const run = await runProgram(
      "bash",
      ["-c", `ulimit -f 2048; trap '' XFSZ; exec "$0" --import "$1" --input-type=module -e "$2" "$3"`, process.execPath, TSX_LOADER, SCRIPT, JSON.stringify(fillStages)],
      { cwd: workspace.dir, timeoutMs: 20_000 },
    );
    expect(run.stderr).toBe("");
    const results = JSON.parse(run.stdout);
    for (const { id, edit } of fillStages) {
      expect(results[id].write, id).toMatch(/^error: .*(EFBIG|too large)/);
      expect(results[id].written, id).toBe("old content\n");
      if (edit.length === 2) {
        expect(results[id].edited, id).toMatch(/^error: .*(EFBIG|too large)/);
        expect(results[id].editedText, id).toBe("old content\n");
      }
      expect(results[id].entries, id).toEqual(["edited.txt", "written.txt"]);
    }
  });
});
