// Where the workbook is, and which stages exist: a stage exists when agents/ holds its file
// (agents/sNN_*.ts, and the capstone agents/s_full.ts, whose id is "full"). The program
// scripts, the tests and the docs site all ask here.
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CAPSTONE as CAPSTONE_PAGE } from "../../.vitepress/curriculum.ts";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const AGENTS_DIR = path.join(REPO_ROOT, "agents");
/**
 * tsx's loader, by its full address: `npx tsx` resolves tsx from the repository, but a child
 * process started in a temporary folder (a test, a check, the docs' capture) must be told.
 */
export const TSX_LOADER = pathToFileURL(path.join(REPO_ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;

/** The capstone (every mechanism together, after the numbered stages), as the curriculum names it. */
export const CAPSTONE = { id: CAPSTONE_PAGE.id, file: CAPSTONE_PAGE.file };

/** Stage id -> file name in agents/, for every stage file present, in order (the capstone last). */
export function existingStages(agentsDir = AGENTS_DIR): Map<string, string> {
  const names = readdirSync(agentsDir);
  const numbered = names.filter((name) => /^s\d\d_.*\.ts$/.test(name)).sort();
  const stages = new Map(numbered.map((name) => [name.slice(0, 3), name]));
  if (names.includes(CAPSTONE.file)) stages.set(CAPSTONE.id, CAPSTONE.file);
  return stages;
}

/** "…/agents/s03_search_and_edit.ts" -> "s03"; "…/agents/s_full.ts" -> "full" */
export function stageIdOf(file: string): string {
  const name = path.basename(file);
  return name === CAPSTONE.file ? CAPSTONE.id : name.split("_")[0];
}
