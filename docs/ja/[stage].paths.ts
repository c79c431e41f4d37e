// The planned stages' pages in Japanese: one per stage with no docs/ja/<stage>.md yet.
import { plannedRoutes } from "../../.vitepress/site.ts";
import { REPO_ROOT } from "../../lib/course/stages.ts";

export default { paths: () => plannedRoutes(REPO_ROOT, "ja") };
