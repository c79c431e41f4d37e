// Where the workbook is, and which stages exist: a stage exists when agents/ holds its file
// (agents/sNN_*.ts). The program scripts, the tests and the docs site all ask here.
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const AGENTS_DIR = path.join(REPO_ROOT, "agents");

/** Stage id -> file name in agents/, for every stage file present, in order. */
export function existingStages(agentsDir = AGENTS_DIR): Map<string, string> {
  const names = readdirSync(agentsDir)
    .filter((name) => /^s\d\d_.*\.ts$/.test(name))
    .sort();
  return new Map(names.map((name) => [name.slice(0, 3), name]));
}
