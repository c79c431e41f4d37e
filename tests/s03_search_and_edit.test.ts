// s03's demo, through the agent loop, in its own temporary workspace. The rules of its tools
// are tested against every stage that carries them: edit_file in edit.test.ts, grep, glob
// and ls in search.test.ts.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { resultText, toolResults, useWorkspace, usePrinted } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const stage = async () => await import("../agents/s03_search_and_edit.ts");

describe("s03 demo, through the agent loop", () => {
  const workspace = useWorkspace();
  usePrinted();

  it("finds the setting, is refused a non-unique edit, succeeds with more context, then renames with replace_all", async () => {
    const scenario = loadScenario("s03");
    const session = await replayScenario(await stage(), scenario, { workspace: workspace.dir });
    expectWholeSession("s03", session, scenario);
    const texts = (index: number) => toolResults(session, index).map(resultText);

    // ls, glob and grep: dist/ (in .gitignore) is never searched.
    const [listing, scripts, timeouts] = texts(1);
    expect(listing).toBe(".gitignore\nREADME.md\ndist/\npackage.json\nsrc/");
    expect(scripts.split("\n").sort()).toEqual(["src/api.js", "src/config.js", "src/db.js"]);
    expect(timeouts).toContain('src/config.js:3:   api: { baseUrl: "https://api.example.com", timeout: 3000, retries: 2 },');
    expect(timeouts).toContain('src/config.js:4:   db: { host: "localhost", timeout: 3000, retries: 5 },');
    expect(timeouts).not.toContain("dist/");

    const [ambiguous] = toolResults(session, 2);
    expect(ambiguous.is_error).toBe(true);
    expect(resultText(ambiguous)).toMatch(/occurs 2 times in src\/config\.js.*replace_all/);
    expect(texts(3)).toEqual(["Edited src/config.js: replaced 1 occurrence"]);
    expect(texts(4)).toEqual(["api 10000 db 3000\n"]);

    expect(texts(6)).toEqual(["src/api.js: 1\nsrc/config.js: 2\nsrc/db.js: 1"]);
    expect(texts(7)).toEqual([
      "Edited src/config.js: replaced 2 occurrences",
      "Edited src/api.js: replaced 1 occurrence",
      "Edited src/db.js: replaced 1 occurrence",
    ]);
    expect(texts(8)).toEqual([
      "No matches for /\\bretries\\b/ in src (3 files searched)",
      "{ host: 'localhost', timeoutMs: 3000, attempts: 5 }\n",
    ]);
    expect(readFileSync(path.join(workspace.dir, "src/config.js"), "utf8")).toContain(
      'api: { baseUrl: "https://api.example.com", timeout: 10000, maxRetries: 2 }',
    );
    // The ignored build output was not touched.
    expect(readFileSync(path.join(workspace.dir, "dist/bundle.js"), "utf8")).toBe(scenario.files!["dist/bundle.js"]);
  });
});
