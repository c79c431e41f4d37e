import { runStageWith } from "./stage-args.ts";

await runStageWith("--replay", process.argv.slice(2));
