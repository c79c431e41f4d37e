import { runStageWith } from "./stage-args.ts";

await runStageWith("--record", process.argv.slice(2));
