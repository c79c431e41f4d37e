// What every stage file promises: the loop is the same text everywhere, the header teaches,
// the exports are there, and importing a stage never starts its program.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { region, stageFiles } from "./helpers.ts";

const files = stageFiles();

describe("every stage", () => {
  it("exists for s01 and s02 at least, numbered without gaps", () => {
    const ids = files.map((f) => Number(path.basename(f).slice(1, 3)));
    expect(ids.slice(0, 2)).toEqual([1, 2]);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
  });

  it("has the agent loop, and it is the same text in every stage", () => {
    const loops = files.map((f) => region(readFileSync(f, "utf8"), "agent-loop"));
    for (const [i, loop] of loops.entries()) {
      expect(loop, `${path.basename(files[i])} has no agent-loop region`).toBeDefined();
      expect(loop, `${path.basename(files[i])}'s loop differs from s01's`).toBe(loops[0]);
    }
  });

  it.each(files.map((f) => [path.basename(f), f]))("%s has a header with its name, motto, diagram and run command", (name, file) => {
    const header = readFileSync(file, "utf8").split("*/")[0];
    expect(header).toContain(`${name} - `);
    expect(header).toMatch(/"[^"]+"/); // the motto, quoted
    expect(header).toMatch(/\+-{3,}/); // an ASCII diagram
    expect(header).toMatch(/New( since s\d\d)?:/);
    expect(header).toContain(`npx tsx agents/${name}`);
  });

  it.each(files.map((f) => [path.basename(f), f]))("%s exports the loop, the tool schemas and the handlers without running", async (_name, file) => {
    const stage = await import(file);
    expect(typeof stage.agentLoop).toBe("function");
    expect(typeof stage.main).toBe("function");
    const schemaNames = stage.TOOLS.map((t: { name: string }) => t.name).sort();
    expect(Object.keys(stage.TOOL_HANDLERS).sort()).toEqual(schemaNames);
  });
});

describe("region()", () => {
  it("finds a region's text and nothing for a missing one", () => {
    const source = "a\n// #region x\nbody\n// #endregion x\nb\n";
    expect(region(source, "x")).toBe("body\n");
    expect(region(source, "y")).toBeUndefined();
  });
});
