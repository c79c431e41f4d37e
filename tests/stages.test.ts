// What every stage file promises: the header teaches, the exports are there, and importing a
// stage never starts its program. (That the loop is the same text in every stage is one of
// the docs checks, tests/docs.test.ts, beside the other region checks.)
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { capstoneSize } from "../.vitepress/capstone-size.ts";
import { OVER_TARGET, PAGE_STAGES, sizeTarget } from "../.vitepress/curriculum.ts";
import { regionsOf } from "../lib/course/regions.ts";
import { REPO_ROOT, stageIdOf } from "../lib/course/stages.ts";
import { toolImplementations } from "../lib/course/tools.ts";
import { offersTool, stageFiles } from "./helpers.ts";

const files = stageFiles();
const metaSchema = new Ajv({ allErrors: true });

describe("every stage", () => {
  it("exists for s01 and s02 at least, numbered without gaps", () => {
    const ids = files.filter((f) => /^s\d\d_/.test(path.basename(f))).map((f) => Number(path.basename(f).slice(1, 3)));
    expect(ids.slice(0, 2)).toEqual([1, 2]);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
  });

  it.each(files.map((f) => [path.basename(f), f]))("%s has a header with its name, motto, diagram and run command", (name, file) => {
    const header = readFileSync(file, "utf8").split("*/")[0];
    expect(header).toContain(`${name} - `);
    expect(header).toMatch(/"[^"]+"/); // the motto, quoted
    expect(header).toMatch(/\+-{3,}/); // an ASCII diagram
    expect(header).toMatch(/New( since s\d\d)?:/);
    expect(header).toContain(`npx tsx agents/${name}`);
  });

  it.each(files.map((f) => [path.basename(f), f]))("%s exports the loop, the tool schemas and its tools without running", async (name, file) => {
    const stage = await import(file);
    expect(typeof stage.agentLoop).toBe("function");
    expect(typeof stage.main).toBe("function");
    const schemaNames = stage.TOOLS.map((t: { name: string }) => t.name).sort();
    if (Number(name.slice(1, 3)) <= 5) {
      // Part I: a dispatch map of handlers.
      expect(Object.keys(stage.TOOL_HANDLERS).sort()).toEqual(schemaNames);
    } else {
      // From s06: a registry of tool objects, and the one function every call goes through.
      expect(typeof stage.runTool).toBe("function");
      expect(stage.registry.getAllTools().map((t: { name: string }) => t.name).sort()).toEqual(schemaNames);
    }
    // Every schema is valid JSON Schema. This is where that is checked: a stage compiles its
    // tools' schemas without checking them against the meta-schema, which costs more to compile.
    for (const tool of stage.TOOLS as { name: string; input_schema: object }[]) {
      expect(metaSchema.validateSchema(tool.input_schema), `${name}: ${tool.name}: ${metaSchema.errorsText(metaSchema.errors)}`).toBe(true);
    }
    // The tool tests find the Part I stages that carry a tool by reading the files
    // (stagesWithTool): that reading must agree with what the stage gives the model.
    if (Number(name.slice(1, 3)) <= 5) {
      const text = readFileSync(file, "utf8");
      for (const tool of ["bash", "read_file", "write_file", "edit_file", "grep", "glob", "ls", "web_fetch", "ask_user", ...schemaNames]) {
        expect(offersTool(text, tool), `${name}: ${tool}`).toBe(schemaNames.includes(tool));
      }
    }
  });

  it.each(files.map((f) => [path.basename(f), f]))("%s imports ajv, diff and yaml for their types only: they load when first needed", (_name, file) => {
    // An import that is not `import type` loads the package before the stage prints a line.
    const eager = readFileSync(file, "utf8").match(/^import (?!type )[^;]*from "(ajv|diff|yaml)";$/gm) ?? [];
    expect(eager).toEqual([]);
  });
});

describe("every stage reads in one sitting", () => {
  it.each(files.map((f) => [stageIdOf(f), f]))("%s stays within its size target, or, while over it, does not grow", (id, file) => {
    const lines = readFileSync(file, "utf8").split("\n").length - 1;
    const held = OVER_TARGET[id];
    if (held === undefined) return void expect(lines).toBeLessThanOrEqual(sizeTarget(id));
    expect(lines, `${id} is over its target of ${sizeTarget(id)}: it may not grow past ${held}`).toBeLessThanOrEqual(held);
    expect(lines, `${id} is within its target now: take it out of OVER_TARGET`).toBeGreaterThan(sizeTarget(id));
  });

  it("says why, on its page in both languages, where a file is over its target", () => {
    for (const id of Object.keys(OVER_TARGET)) {
      for (const page of [`${id}.md`, `ja/${id}.md`]) {
        const section = readFileSync(path.join(REPO_ROOT, "docs", page), "utf8").split(/^###? .*\{#size\}$/m)[1]?.split(/^##? /m)[0];
        expect(section, `docs/${page} has no "### … {#size}" section`).toBeDefined();
        expect(section).toContain("<CapstoneSize />"); // the figures, counted from the file
      }
    }
  });

  it("counts where the capstone's lines come from: each line once, under the part where its region first appears", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "workbook-capstone-size-"));
    try {
      mkdirSync(path.join(root, "agents"));
      const region = (name: string, ...body: string[]) => [`// #region ${name}`, ...body, `// #endregion ${name}`];
      const file = (name: string, ...lines: string[][]) => writeFileSync(path.join(root, "agents", name), `${lines.flat().join("\n")}\n`);
      file("s01_agent_loop.ts", ["// s01"], region("agent-loop", "while (true) {}"), region("config", "const a = 1;"));
      file("s13_streaming.ts", region("stream", "stream();"));
      file("s_full.ts", ["/** the header */", 'import x from "y";'], region("config", "const a = 2;", "const b = 3;"), region("agent-loop", "while (true) {}"),
        region("stream", "// #region inner", "stream();", "// #endregion inner"), region("part-one", "glob();"));
      const size = capstoneSize(root);
      expect(size.lines).toBe(17);
      expect(size.outside).toBe(2);
      expect(size.shares).toEqual([
        { origin: 1, regions: ["config", "agent-loop"], lines: 7, sameLines: 3 }, // config changed; the loop word for word s01's
        { origin: 4, regions: ["stream"], lines: 5, sameLines: 0 }, // a region nested in it counts once, as its lines
        { origin: "capstone", regions: ["part-one"], lines: 3, sameLines: 0 },
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("counts the real capstone's lines, every one once", () => {
    const size = capstoneSize(REPO_ROOT);
    expect(size.lines).toBe(readFileSync(path.join(REPO_ROOT, "agents", "s_full.ts"), "utf8").split("\n").length - 1);
    expect(size.shares.reduce((sum, share) => sum + share.lines, 0) + size.outside).toBe(size.lines);
    const shareOf = (region: string) => size.shares.find((share) => share.regions.includes(region))?.origin;
    expect([shareOf("run-tool"), shareOf("registry"), shareOf("subagent"), shareOf("stream"), shareOf("board"), shareOf("part-one")]).toEqual([1, 2, 3, 4, 5, "capstone"]);
    expect(size.held).toBe(OVER_TARGET.full ?? null);
  });

  // From s02 on: after the header and config, the stage's own mechanism comes before what it carries.
  it.each(files.filter((f) => /^s(0[2-9]|[1-9]\d)_/.test(path.basename(f))).map((f) => [stageIdOf(f), f]))(
    "%s starts its first new region in the first third of the file",
    (id, file) => {
      const text = readFileSync(file, "utf8");
      const parent = PAGE_STAGES.find((stage) => stage.id === id)!.parent!;
      const parentRegions = regionsOf(readFileSync(files.find((f) => stageIdOf(f) === parent)!, "utf8"));
      const lines = text.split("\n");
      const firstNew = lines.findIndex((line) => {
        const name = /^\/\/ #region ([\w-]+)$/.exec(line)?.[1];
        return name !== undefined && !parentRegions.has(name);
      });
      expect(firstNew, `${id} has no region its parent ${parent} lacks`).toBeGreaterThan(0);
      expect(firstNew + 1).toBeLessThanOrEqual(Math.ceil(lines.length / 3));
    },
  );

  it("defines no machinery function again: what lib/machinery exports, no stage file declares", () => {
    const dir = path.join(REPO_ROOT, "lib", "machinery");
    const exported = readdirSync(dir).flatMap((name) =>
      [...readFileSync(path.join(dir, name), "utf8").matchAll(/^export (?:async )?(?:function|const|class) (\w+)/gm)].map((match) => match[1]),
    );
    const declared = (text: string) => new Set([...text.matchAll(/^(?:export )?(?:async )?(?:function|const|class|let) (\w+)/gm)].map((match) => match[1]));
    const twice = files.flatMap((file) => {
      const names = declared(readFileSync(file, "utf8"));
      return exported.filter((name) => names.has(name)).map((name) => `${path.basename(file)} declares ${name}, which lib/machinery exports`);
    });
    expect(twice).toEqual([]);
  });
});

describe("the curriculum", () => {
  it.each(files.map((f) => [path.basename(f), f]))("gives %s the motto its header gives", (name, file) => {
    const motto = readFileSync(file, "utf8").split("\n")[3].match(/^ \* "([^"]+)"/)?.[1];
    const stage = PAGE_STAGES.find((s) => s.file === name);
    expect(stage, `${name} is not in .vitepress/curriculum.ts`).toBeDefined();
    expect(motto).toBe(stage!.motto.en);
  });
});

describe("which stages share a tool's code (lib/course/tools.ts)", () => {
  // Copies of two stages in a temporary folder: the same grep, then one of them changed.
  const copies = (change: (text: string) => string, both = (text: string) => text) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "workbook-implementations-"));
    const [s03, s04] = ["s03", "s04"].map((id) => files.find((f) => path.basename(f).startsWith(`${id}_`))!);
    writeFileSync(path.join(dir, path.basename(s03)), both(readFileSync(s03, "utf8")));
    writeFileSync(path.join(dir, path.basename(s04)), change(both(readFileSync(s04, "utf8"))));
    return { dir, stageFiles: [s03, s04].map((f) => path.join(dir, path.basename(f))) };
  };

  it("groups stages whose tool regions are byte-identical, and parts them when one region changes", async () => {
    const same = copies((text) => text);
    const changed = copies((text) => text.replace("// #endregion grep", "const aChange = 1;\n// #endregion grep"));
    // A region the tool does not run (the end of a turn) changes nothing.
    const unrelated = copies((text) => text.replace("// #endregion end-turn", "const aChange = 1;\n// #endregion end-turn"));
    try {
      expect((await toolImplementations("grep", same.stageFiles)).map((group) => group.ids)).toEqual([["s03", "s04"]]);
      expect((await toolImplementations("grep", changed.stageFiles)).map((group) => group.ids)).toEqual([["s03"], ["s04"]]);
      expect((await toolImplementations("grep", unrelated.stageFiles)).map((group) => group.ids)).toEqual([["s03", "s04"]]);
    } finally {
      for (const { dir } of [same, changed, unrelated]) rmSync(dir, { recursive: true, force: true });
    }
  });

  it("counts of a shared region (config) only what the tool's code reaches, and what runs at load", async () => {
    const config = (text: string, change: (config: string) => string) => {
      const [start, end] = [text.indexOf("// #region config\n"), text.indexOf("// #endregion config")];
      return text.slice(0, start) + change(text.slice(start, end)) + text.slice(end);
    };
    // In both copies grep's workspace() calls startingFolder(), so startingFolder() is reached through another name.
    const viaStartingFolder = (text: string) => config(text, (c) => c.replace("const workspace = () => process.cwd();", "const workspace = () => startingFolder();\nconst startingFolder = () => process.cwd();"));
    const cases = {
      // A later stage's own setting, and a comment: the grep it runs is the same.
      unreached: copies((text) => config(text, (c) => `${c}// a note\nconst COMPACT_LIMIT = asLimit("5");\nconst asLimit = (text: string) => Number(text);\n`)),
      // What grep calls to find the workspace, changed: not the same grep any more.
      reached: copies((text) => config(text, (c) => c.replace("const workspace = () => process.cwd();", "const workspace = () => path.resolve(process.cwd());"))),
      sameFolder: copies((text) => text, viaStartingFolder),
      otherFolder: copies((text) => text.replace("const startingFolder = () => process.cwd();", "const startingFolder = () => path.resolve(process.cwd());"), viaStartingFolder),
      // A statement that declares nothing runs when the stage loads, whoever names it.
      atLoad: copies((text) => config(text, (c) => `${c}process.umask(0o077);\n`)),
    };
    try {
      const groups = async (name: keyof typeof cases) => (await toolImplementations("grep", cases[name].stageFiles)).map((group) => group.ids);
      expect(await groups("unreached")).toEqual([["s03", "s04"]]);
      expect(await groups("reached")).toEqual([["s03"], ["s04"]]);
      expect(await groups("sameFolder")).toEqual([["s03", "s04"]]);
      expect(await groups("otherFolder")).toEqual([["s03"], ["s04"]]);
      expect(await groups("atLoad")).toEqual([["s03"], ["s04"]]);
    } finally {
      for (const { dir } of Object.values(cases)) rmSync(dir, { recursive: true, force: true });
    }
  });

  it("counts a shared declaration the tool reaches wherever it is declared, and keeps what runs at load in its order", async () => {
    const region = (text: string, name: string, change: (body: string) => string) => {
      const [start, end] = [text.indexOf(`// #region ${name}\n`), text.indexOf(`// #endregion ${name}`)];
      return text.slice(0, start) + change(text.slice(start, end)) + text.slice(end);
    };
    const declaration = "const workspace = () => process.cwd();\n";
    const cases = {
      // grep reaches workspace() (in config): moved to another shared region (run-tool), it is the same code.
      moved: copies((text) => region(text.replace(declaration, ""), "run-tool", (r) => `${r}${declaration}`)),
      // Two statements that run at load, the other way round: not the same.
      reordered: copies(
        (text) => text.replace("process.umask(0o077);\nprocess.umask(0o022);", "process.umask(0o022);\nprocess.umask(0o077);"),
        (text) => region(text, "config", (c) => `${c}process.umask(0o077);\nprocess.umask(0o022);\n`),
      ),
    };
    try {
      const groups = async (name: keyof typeof cases) => (await toolImplementations("grep", cases[name].stageFiles)).map((group) => group.ids);
      expect(await groups("moved")).toEqual([["s03", "s04"]]);
      expect(await groups("reordered")).toEqual([["s03"], ["s04"]]);
    } finally {
      for (const { dir } of Object.values(cases)) rmSync(dir, { recursive: true, force: true });
    }
  });

  it("from s06, groups stages by the tool object they register: s06's own tool in the stages that import it, a stage's own tool apart", async () => {
    const stageFile = (id: string) => files.find((f) => path.basename(f).startsWith(`${id}_`))!;
    const partTwo = ["s06", "s07", "s08", "s09"].map(stageFile);
    const groups = async (tool: string) => (await toolImplementations(tool, partTwo)).map((group) => group.ids);
    // s07 changes bash and read_file; write_file is s06's in all four.
    expect(await groups("bash")).toEqual([["s06", "s08", "s09"], ["s07"]]);
    expect(await groups("read_file")).toEqual([["s06", "s08", "s09"], ["s07"]]);
    expect(await groups("write_file")).toEqual([["s06", "s07", "s08", "s09"]]);
    expect(await groups("todo_write")).toEqual([["s09"]]);
  });
});
