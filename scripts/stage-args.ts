// `npm run replay -- s02 [scenario]` and `npm run record -- s02 <name>` both start a stage's
// own program with a flag, so they behave exactly as `npx tsx agents/s02_tool_use.ts --replay`.
import path from "node:path";
import { pathToFileURL } from "node:url";
import { AGENTS_DIR, existingStages } from "../lib/course/stages.ts";

export async function runStageWith(flag: "--replay" | "--record", argv: string[]): Promise<void> {
  const [stage, ...rest] = argv;
  const stages = existingStages();
  const file = stage && stages.get(stage);
  if (!file) {
    const usage = `npm run ${flag.slice(2)} -- <stage> ${flag === "--record" ? "<name>" : "[scenario]"}`;
    const which = stage ? `There is no stage ${stage}.` : "Which stage?";
    console.log(`${which} Usage: ${usage}. Stages: ${[...stages.keys()].join(", ")}`);
    process.exit(1);
  }
  const module = await import(pathToFileURL(path.join(AGENTS_DIR, file)).href);
  await module.main([flag, ...rest]);
}
