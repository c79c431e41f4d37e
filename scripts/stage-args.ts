// `npm run replay -- s02 [scenario]` and `npm run record -- s02 <name>` both start a stage's
// own program with a flag, so they behave exactly as `npx tsx agents/s02_tool_use.ts --replay`.
import { readdirSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { REPO_ROOT } from "../lib/scenario.ts";

export async function runStageWith(flag: "--replay" | "--record", argv: string[]): Promise<void> {
  const [stage, ...rest] = argv;
  const agents = path.join(REPO_ROOT, "agents");
  const file = stage && readdirSync(agents).find((name) => name.startsWith(`${stage}_`) && name.endsWith(".ts"));
  if (!file) {
    const known = readdirSync(agents).filter((n) => /^s\d\d_/.test(n)).map((n) => n.slice(0, 3));
    console.log(`Which stage? Usage: npm run ${flag.slice(2)} -- <stage> [scenario]. Stages: ${known.join(", ")}`);
    process.exit(1);
  }
  const module = await import(pathToFileURL(path.join(agents, file)).href);
  await module.main([flag, ...rest]);
}
