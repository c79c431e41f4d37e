// The diff pages in Japanese: one per stage whose file and parent's file are present.
import { diffRoutes } from "../../../.vitepress/site.ts";
import { REPO_ROOT } from "../../../lib/course/stages.ts";

export default { paths: () => diffRoutes(REPO_ROOT, "ja") };
