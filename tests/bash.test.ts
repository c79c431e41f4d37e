// The bash tool's edge cases, run against every stage's own copy of it: the stages repeat
// the code on purpose, and each copy must behave the same.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { stageFiles, useWorkspace } from "./helpers.ts";

const stages = stageFiles().map((file) => [file.match(/(s\d\d)_/)![1], file] as const);

describe.each(stages)("%s bash", (_stage, file) => {
  const workspace = useWorkspace();
  const bash = async (input: Record<string, unknown>) => (await import(file)).TOOL_HANDLERS.bash(input) as Promise<string>;

  it("runs in the workspace", async () => {
    expect((await bash({ command: "pwd" })).trim()).toBe(workspace.dir);
  });

  it("closes stdin, so cat and read return at once", async () => {
    const started = Date.now();
    expect(await bash({ command: "cat" })).toBe("(no output)");
    expect(await bash({ command: 'read x; echo "got:[$x]"' })).toBe("got:[]\n");
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("reports a non-zero exit code, and says (no output) when there is none", async () => {
    expect(await bash({ command: "exit 3" })).toBe("(no output)\n[exit code 3]");
    expect(await bash({ command: "echo oops >&2; exit 1" })).toBe("oops\n[exit code 1]");
  });

  it("returns when the shell exits, even if a background child holds the pipe", async () => {
    const started = Date.now();
    const output = await bash({ command: "sleep 30 & echo hi" });
    expect(output.trim()).toBe("hi");
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("on timeout kills the whole process group and keeps the output so far", async () => {
    const marker = `workbook-timeout-${process.pid}-${Date.now()}`;
    const started = Date.now();
    const run = bash({ command: `echo before; bash -c 'exec -a ${marker} sleep 60' & sleep 60`, timeout: 1 });
    await expect(run).rejects.toThrow(/timed out after 1s[\s\S]*before/);
    expect(Date.now() - started).toBeLessThan(5000);
    // The grandchild started with `&` was in the group too, so it is gone.
    await new Promise((r) => setTimeout(r, 200));
    const alive = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").filter((l) => l.startsWith(marker));
    expect(alive).toEqual([]);
  });

  it("caps the timeout at 600 seconds and ignores nonsense", async () => {
    // A huge or invalid timeout must not break the call; the command still runs.
    expect(await bash({ command: "echo ok", timeout: 10_000 })).toBe("ok\n");
    expect(await bash({ command: "echo ok", timeout: "soon" })).toBe("ok\n");
  });

  it("sends the model at most 30,000 characters, head and tail, with a marker of what was cut", async () => {
    const output = await bash({ command: "yes | head -c 10000000; echo; echo THE-END" });
    expect(output.length).toBeLessThanOrEqual(30_000);
    expect(output.startsWith("y\ny\n")).toBe(true);
    expect(output).toMatch(/\[\d+ characters cut from the middle, 10000009 in all\]/);
    expect(output.trimEnd().endsWith("THE-END")).toBe(true);
  });

  it("refuses what the denylist names, with a clear message", async () => {
    await expect(bash({ command: "sudo ls" })).rejects.toThrow(/refused.*sudo/);
    await expect(bash({ command: "rm -rf /" })).rejects.toThrow(/refused/);
  });

  it("refuses a missing command", async () => {
    await expect(bash({})).rejects.toThrow('"command" must be a string');
  });
});
