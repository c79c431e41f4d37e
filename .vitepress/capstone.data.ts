// Build-time data loader: the capstone page's size table, counted from the files (capstone-size.ts).
import { defineLoader } from "vitepress";
import { REPO_ROOT } from "../lib/course/stages.ts";
import { capstoneSize, type CapstoneSize } from "./capstone-size.ts";

declare const data: CapstoneSize;
export { data };

export default defineLoader({
  watch: ["../agents/*.ts"],
  load: (): CapstoneSize => capstoneSize(REPO_ROOT),
});
