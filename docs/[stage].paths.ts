// The planned stages' pages in English: one per stage with no docs/<stage>.md yet.
import { plannedRoutes } from "../.vitepress/site.ts";
import { REPO_ROOT } from "../lib/course/stages.ts";

export default { paths: () => plannedRoutes(REPO_ROOT, "en") };
