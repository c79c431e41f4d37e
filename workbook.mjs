#!/usr/bin/env node
// Run a stage from any folder: the folder you stand in is the agent's workspace, and the
// workbook's own packages, TypeScript loader and .env are used wherever you are.
//
//   node ~/agent-workbook/workbook.mjs s02                    a prompt: s02 >>
//   node ~/agent-workbook/workbook.mjs s02 "Read notes.md"    one request, then exit
//   node ~/agent-workbook/workbook.mjs s02 --help             everything a stage takes
//
// (`npx tsx agents/s02_tool_use.ts` needs the workbook's folder: npx looks for tsx there.)
// Plain JavaScript on purpose: it must run before any TypeScript loader is registered.
import { readdirSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const agents = path.join(import.meta.dirname, "agents");
const stages = readdirSync(agents).filter((name) => /^s(\d\d_\w+|_full)\.ts$/.test(name)).sort();
const [id, ...args] = process.argv.slice(2);
const file = stages.find((name) => name.startsWith(`${id}_`) || (id === "full" && name === "s_full.ts"));

if (!file) {
  console.log(`Usage: node ${path.relative(process.cwd(), import.meta.filename) || "workbook.mjs"} <stage> [prompt or options]`);
  console.log(`Stages: ${stages.map((name) => (name === "s_full.ts" ? "full" : name.slice(0, 3))).join(", ")}`);
  process.exit(id === undefined || id === "--help" || id === "-h" ? 0 : 2);
}

// tsx's loader, from the workbook's own node_modules, then the stage as its program.
const tsx = await import(pathToFileURL(path.join(import.meta.dirname, "node_modules", "tsx", "dist", "esm", "api", "index.mjs")).href);
tsx.register();
const stage = await import(pathToFileURL(path.join(agents, file)).href);
await stage.main(args);
