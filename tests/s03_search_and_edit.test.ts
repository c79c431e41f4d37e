// s03's demo, through the agent loop, in its own temporary workspace. The rules of its tools
// are tested against every stage that carries them: edit_file in edit.test.ts, grep, glob
// and ls in search.test.ts.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/scenario.ts";
import { resultText, toolResults, useReplay, useWorkspace, runTurns, usePrinted } from "./helpers.ts";

const stage = async () => await import("../agents/s03_search_and_edit.ts");

/** Write files (path → text or bytes) into the workspace, making folders as needed. */
function files(tree: Record<string, string | Buffer>) {
  for (const [name, content] of Object.entries(tree)) {
    mkdirSync(path.dirname(name), { recursive: true });
    writeFileSync(name, content);
  }
}

describe("s03 demo, through the agent loop", () => {
  const workspace = useWorkspace();
  const replay = useReplay();
  usePrinted();

  it("finds the setting, is refused a non-unique edit, succeeds with more context, then renames with replace_all", async () => {
    const { agentLoop } = await stage();
    const scenario = loadScenario("s03");
    files(scenario.files!);
    const session = replay(scenario);
    await runTurns(agentLoop, scenario.prompts);
    expect(session.verdict()).toEqual([]);
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
