/**
 * s20_worktrees.ts - Worktrees
 *
 * "Each task in its own checkout": a git worktree per task, and the tools working inside it.
 *
 *   lead: task_create 1, 2   worktree_create a (task 1), b (task 2)   spawn_teammate alice, bob
 *   +--------------------------------------------------------------------------+
 *   | git worktree add .agent/worktrees/a -b wt/a    an argument list ("$@"),   |
 *   |   a time limit, no keys. Names: letters, digits, - and _, 40 at most,    |
 *   |   no "-" first. A workspace that is no repository: "git init" first.     |
 *   | .agent/worktrees/bindings.json   {"a": "1", "b": "2"}   worktree -> task  |
 *   | .agent/worktrees/events.jsonl    create, bind, remove: a line each        |
 *   +--------------------------------------------------------------------------+
 *      |                                         |
 *   the lead: bash, read_file, write_file,     a teammate whose in_progress task
 *   edit_file with { worktree: "a" }           has a worktree works in it: its
 *      |                                       root, its system prompt, its calls
 *      v   s06's workingRoot: this call's root is the worktree, the same sandbox
 *   .agent/worktrees/a/...   "../" out of it refused   the main checkout untouched
 *   worktree_list: name, branch, task, uncommitted changes.  worktree_remove: not
 *   with uncommitted changes unless force; an unmerged branch kept unless force
 *
 * New since s19: regions `worktrees`, `in-worktree` and `teammates` first, then `worktree-tools`;
 * the lead's `run-tool` and `program` (runTurn) are s19's, with this file's registry. s19's board
 * and team come from agents/s19_task_graph_and_team.ts; s06's registry, sandbox and approval step
 * from agents/s06_tool_registry.ts (its workingRoot is the seam). git runs through lib's
 * runCommand (lib/machinery/processes.ts), which ends a hung hook too.
 *
 *   npx tsx agents/s20_worktrees.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s20_worktrees.ts --approval-mode auto-edit
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ContentBlock, Message, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { writeAtomically } from "../lib/machinery/atomic-write.ts";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { runCommand } from "../lib/machinery/processes.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import { APPROVAL_HELP, approve, defineTool, followLinks, isInside, MAX_OUTPUT, modeProblem, ToolRegistry, workingRoot, workspace, type AgentTool, type Params } from "./s06_tool_registry.ts";
import { addNoticesToPrompt, withNotices } from "./s18_background_tasks.ts";
import { boardRoot, member, prepareReplay as endTeamAndTasks, readBoard, registry as s19Registry, roster, spawnTeammate, taskIn, teamList, type Teammate } from "./s19_task_graph_and_team.ts";

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
// The SDK's client (lib/runtime/model.ts). This file's loop is the lead's: its teammates run s19's
// loop, with s19's client and tools, and the root this file gives them (in `teammates`).
const client = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}, a git repository, and you lead a team. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make. For a slow command, set run_in_background on bash. ` +
  `For work that splits into parts, put the parts on the task board (task_create) and start teammates with spawn_teammate: they work at the same time as you and claim tasks. When your turn ends while they work, you wait, and are told when each is idle or fails; read_inbox gives what they sent you. ` +
  `To keep each task's changes apart, give the task a git worktree before a teammate takes it (worktree_create with its task_id): the teammate then works in that checkout, on its own branch. ` +
  `Your own bash, read_file, write_file and edit_file work inside a worktree when you set worktree. worktree_list shows them; worktree_remove removes one when its work is merged or no longer needed. ` +
  `When the work is done, stop the teammates (send_message with stop) and report. The team now: ${roster().join(", ")}.`;
// #endregion config

// #region worktrees
// A worktree is a second checkout of the same repository: its own folder and branch, sharing the
// history. Two agents editing one checkout step on each other's files; in two worktrees they
// cannot, and each task's work stays on its branch until someone merges it.
export const WORKTREE_LIMITS = { worktrees: 20, gitTimeoutMs: 30_000, gitOutputChars: 10_000, logBytes: 1_000_000 };
const WORKTREES = path.join(".agent", "worktrees");
export type Worktree = { name: string; path: string; branch?: string; task?: string; missing: boolean };

/** A name becomes a folder and a branch, and git reads "-b..." as an option: so letters, digits, - and _ only, and no "-" first. */
export function checkName(name: string): string {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}$/.test(name)) fail(`${JSON.stringify(name)} cannot be a worktree's name: letters, digits, - and _, at most 40 characters, not starting with -`);
  return name;
}

/**
 * git with an argument list: runCommand passes them as "$@" (lib/machinery/processes.ts), so no
 * name is ever read as shell code. A time limit, or Ctrl-C (`signal`), ends git and all it started
 * (a hook of the repository's runs with git); it runs without the agent's keys. When it fails,
 * git's own words are passed on, whole up to gitOutputChars (both ends kept).
 */
export async function git(args: string[], cwd: string, signal?: AbortSignal): Promise<string> {
  const [output, errors] = [new HeadAndTail(1_000_000), new HeadAndTail(WORKTREE_LIMITS.gitOutputChars)];
  const code = await runCommand("git", { cwd, args, output, errors, timeoutMs: WORKTREE_LIMITS.gitTimeoutMs, signal }).catch((error: Error) => fail(`git ${args.join(" ")}: ${error.message}`));
  if (code !== 0) fail(`git ${args.join(" ")} failed (exit code ${code ?? "killed"}):\n${clip(`${errors.text()}${output.text()}`.trim(), WORKTREE_LIMITS.gitOutputChars)}`);
  return output.text();
}

/** Worktrees need a repository with a commit: say so, and how, rather than leave git's words alone. */
async function checkRepository(root: string): Promise<void> {
  const head = await git(["rev-parse", "--verify", "--quiet", "HEAD"], root).catch((error: Error) => error);
  if (!(head instanceof Error)) return;
  if (head.message.includes("(exit code 127)")) fail(`git could not be run: is it installed, and on PATH?\n${head.message}`);
  const isRepo = !((await git(["rev-parse", "--git-dir"], root).catch((error: Error) => error)) instanceof Error);
  if (isRepo) fail(`the repository at ${root} has no commit yet, and a worktree starts from one: commit first (git add -A && git commit -m start)`);
  fail(`${root} is not a git repository, so it can have no worktrees. Make it one with \`git init\`, then commit once (git add -A && git commit -m start), and try again.\n${head.message}`);
}

/** `relative` inside the workspace, symlinks followed: a .agent/worktrees that is a link to elsewhere is refused. */
function inside(root: string, relative: string): string {
  const top = realpathSync(root);
  const real = followLinks(path.join(top, relative), relative);
  if (!isInside(top, real)) fail(`${relative} leads outside the workspace (${top}) through a symlink; nothing was created. Remove the link and try again`);
  return real;
}

/** .agent/worktrees, created if missing, only ever inside the workspace; its .gitignore of `*`
 * keeps the worktrees out of the main checkout's `git add -A`. */
function worktreesFolder(root: string): string {
  const folder = inside(root, WORKTREES);
  mkdirSync(folder, { recursive: true });
  if (!existsSync(path.join(folder, ".gitignore"))) writeFileSync(path.join(folder, ".gitignore"), "*\n");
  return folder;
}

/** Which task each worktree is bound to (name -> task id), in .agent/worktrees/bindings.json. */
export function bindings(root: string): Record<string, string> {
  const file = path.join(inside(root, WORKTREES), "bindings.json");
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Record<string, string>;
  } catch {
    return fail(`.agent/worktrees/bindings.json is not JSON (edited by hand?): fix it or remove it`);
  }
}
function writeBindings(folder: string, bound: Record<string, string>): void {
  writeAtomically(path.join(folder, "bindings.json"), `${JSON.stringify(bound, null, 2)}\n`, ".agent/worktrees/bindings.json", { root: folder, isInside });
}

/** One JSON line per event; past logBytes the log becomes events.1.jsonl (one older file is kept), so it stays bounded. */
function logEvent(root: string, event: Record<string, string>): void {
  const file = inside(root, path.join(WORKTREES, "events.jsonl"));
  const line = `${JSON.stringify({ time: new Date().toISOString(), ...event })}\n`;
  if ((attempt(() => statSync(file).size) ?? 0) + line.length > WORKTREE_LIMITS.logBytes) renameSync(file, inside(root, path.join(WORKTREES, "events.1.jsonl")));
  appendFileSync(file, line);
}

/** The worktrees git knows in .agent/worktrees/, with their branch and task, in name order. */
export async function listWorktrees(root: string): Promise<Worktree[]> {
  const folder = inside(root, WORKTREES);
  const bound = bindings(root);
  const blocks = (await git(["worktree", "list", "--porcelain"], root)).split("\n\n").map((block) => block.split("\n"));
  const field = (lines: string[], key: string) => lines.find((line) => line.startsWith(`${key} `))?.slice(key.length + 1);
  return blocks
    .map((lines) => ({ where: field(lines, "worktree") ?? "", branch: field(lines, "branch")?.replace(/^refs\/heads\//, ""), gone: lines.some((line) => line.startsWith("prunable")) }))
    .filter(({ where }) => where && path.dirname(attempt(() => realpathSync(where)) ?? where) === folder)
    .map(({ where, branch, gone }) => ({ name: path.basename(where), path: path.join(folder, path.basename(where)), branch, task: bound[path.basename(where)], missing: gone || !existsSync(where) }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** `git status --porcelain` inside a worktree: one line per file changed and not committed. */
export async function uncommitted(worktree: Worktree): Promise<string[]> {
  return worktree.missing ? [] : (await git(["status", "--porcelain"], worktree.path)).split("\n").filter(Boolean);
}
const theWorktrees = (all: Worktree[]) => (all.length > 0 ? `The worktrees: ${all.map((w) => w.name).join(", ")}.` : "There are no worktrees (worktree_create makes one).");

export async function createWorktree(root: string, name: string, taskId?: string, signal?: AbortSignal): Promise<string> {
  checkName(name);
  if (taskId !== undefined) taskIn(readBoard(root), taskId); // the task must be on the board
  await checkRepository(root);
  const folder = worktreesFolder(root);
  const all = await listWorktrees(root);
  if (all.some((w) => w.name.toLowerCase() === name.toLowerCase()) || existsSync(path.join(folder, name))) fail(`the name ${name} is taken: a worktree or a folder in .agent/worktrees/ has it (in some letter case). ${theWorktrees(all)}`);
  if (all.length >= WORKTREE_LIMITS.worktrees) fail(`there are ${all.length} worktrees, the most this agent keeps: remove one first (worktree_remove). ${theWorktrees(all)}`);
  const bound = bindings(root);
  const taken = Object.keys(bound).find((other) => bound[other] === taskId);
  if (taskId !== undefined && taken) fail(`task ${taskId} has the worktree ${taken} already`);
  await git(["worktree", "add", path.join(WORKTREES, name), "-b", `wt/${name}`], root, signal).catch(async (error: Error) => {
    // Stopped half-way (Ctrl-C, the time limit, a failed hook): take back what git made, so nothing
    // is left unlogged. Its branch is new: git refuses -b for a branch that exists.
    if ((await listWorktrees(root)).some((w) => w.name === name)) await git(["worktree", "remove", "--force", path.join(WORKTREES, name)], root).then(() => git(["branch", "-D", `wt/${name}`], root)).catch(() => "");
    throw error;
  });
  logEvent(root, { event: "create", name, branch: `wt/${name}` });
  if (taskId !== undefined) writeBindings(folder, { ...bound, [name]: taskId });
  if (taskId !== undefined) logEvent(root, { event: "bind", name, task: taskId });
  const task = taskId === undefined ? "" : `, bound to task ${taskId}: a teammate working on task ${taskId} works in it`;
  return `Created the worktree ${name} at .agent/worktrees/${name}, on the new branch wt/${name}${task}. Set worktree: "${name}" on bash, read_file, write_file or edit_file to work in it.`;
}

export async function removeWorktree(root: string, name: string, options: { keepBranch?: boolean; force?: boolean; signal?: AbortSignal } = {}): Promise<string> {
  checkName(name);
  await checkRepository(root);
  const all = await listWorktrees(root);
  const worktree = all.find((w) => w.name === name) ?? fail(`there is no worktree ${JSON.stringify(name)}. ${theWorktrees(all)}`);
  const busy = readBoard(root).find((task) => task.id === worktree.task && task.status === "in_progress"); // its teammate works in it
  if (busy && !options.force) fail(`the worktree ${name} is task ${busy.id}'s, which ${busy.owner ?? "nobody"} has in_progress: removed, that work would go on in the main checkout. Remove it once the task is completed, or set force`);
  const changes = await uncommitted(worktree);
  const shown = `${changes.slice(0, 20).join("\n")}${changes.length > 20 ? `\n... and ${changes.length - 20} more` : ""}`;
  if (changes.length > 0 && !options.force) fail(`the worktree ${name} has uncommitted changes, so it was not removed:\n${shown}\nCommit them (bash with worktree "${name}"), or set force to throw them away`);
  await git(["worktree", "remove", ...(options.force ? ["--force"] : []), path.join(WORKTREES, name)], root, options.signal);
  const said = [`Removed the worktree ${name}${changes.length > 0 ? `, throwing away its uncommitted changes:\n${shown}` : "."}`];
  // Only the branch this tool made: a worktree switched to another branch leaves that branch alone.
  if (worktree.branch === `wt/${name}` && !options.keepBranch) said.push(await deleteBranch(root, worktree.branch, options.force === true));
  else if (worktree.branch) said.push(`The branch ${worktree.branch} is kept.`);
  const { [name]: task, ...rest } = bindings(root);
  if (task !== undefined) writeBindings(inside(root, WORKTREES), rest);
  logEvent(root, { event: "remove", name, ...(task === undefined ? {} : { task }) });
  return said.join("\n");
}

/** A branch with commits not merged into the current branch holds work found nowhere else: it is kept unless force. */
async function deleteBranch(root: string, branch: string, force: boolean): Promise<string> {
  const unmerged = Number((await git(["rev-list", "--count", `HEAD..${branch}`], root)).trim());
  if (unmerged > 0 && !force) return `The branch ${branch} is kept: it has ${unmerged} commit(s) not merged into your current branch. Merge it, or delete it with git branch -D ${branch}.`;
  const commit = (await git(["rev-parse", "--short", branch], root)).trim();
  await git(["branch", "-D", branch], root);
  const lost = unmerged > 0 ? `, and with it ${unmerged} commit(s) not merged anywhere (git branch ${branch} ${commit} brings them back while git keeps them)` : " (its commits are in your current branch)";
  return `Deleted the branch ${branch}, which was at ${commit}${lost}.`;
}
// #endregion worktrees

/** What `work` returns, or undefined when it throws. */
const attempt = <T>(work: () => T): T | undefined => { try { return work(); } catch { return undefined; } }; // prettier-ignore
/** An error for the model, from inside an expression. */
const fail = (message: string): never => { throw new Error(message); }; // prettier-ignore

// #region in-worktree
// s06's bash, read_file, write_file and edit_file read the workspace at each call (workspace()).
// With `worktree`, the call runs with that worktree as its root (s06's workingRoot, for this call
// alone: the other agents of this process keep theirs), so the sandbox's rules hold inside it.
const worktreeParam = { type: "string", description: "The name of a worktree (worktree_list): work inside it; paths are relative to it, and it is the root." };

/** The worktree's folder, by name; an unknown name is refused, naming the worktrees there are. */
function worktreeRoot(name: string): string {
  const folder = inside(boardRoot(), WORKTREES);
  const names = (attempt(() => readdirSync(folder)) ?? []).filter((entry) => existsSync(path.join(folder, entry, ".git"))).sort();
  if (!names.includes(name)) fail(`there is no worktree ${JSON.stringify(name)}. ${names.length > 0 ? `The worktrees: ${names.slice(0, WORKTREE_LIMITS.worktrees).join(", ")}.` : "There are none (worktree_create makes one)."}`);
  return inside(boardRoot(), path.join(WORKTREES, checkName(name)));
}

/** Run `work` with the worktree as the root of every path and command in it, or as it is without one. */
function inWorktree<T>(params: Params, work: () => T): T {
  if (params.worktree === undefined) return work();
  const root = worktreeRoot(String(params.worktree));
  return workingRoot.run(() => root, work);
}

/** A core tool with the optional `worktree`: the same tool, its checks, approval and work run inside it. */
function withWorktree(tool: AgentTool): AgentTool {
  const where = (params: Params) => (params.worktree === undefined ? "" : `   (in worktree ${params.worktree})`);
  return defineTool({
    ...tool,
    description: `${tool.description} Set worktree to work inside a git worktree.`,
    parameterSchema: { ...tool.parameterSchema, properties: { ...(tool.parameterSchema.properties as object), worktree: worktreeParam } },
    getDescription: (params) => `${tool.getDescription(params)}${where(params)}`,
    changesTheAgent: (params) => inWorktree(params, () => tool.changesTheAgent?.(params) ?? false),
    // What the person approves names the worktree: "Edit notes.md?" alone would not say which checkout.
    shouldConfirmExecute: (params, signal) =>
      inWorktree(params, async () => {
        const asked = await tool.shouldConfirmExecute(params, signal);
        return asked && { ...asked, title: `${asked.title}${where(params)}` };
      }),
    execute: (params, signal) => inWorktree(params, () => tool.execute(params, signal)),
  });
}
// #endregion in-worktree

// #region teammates
// s19's teammates run s19's loop and tools, which read workspace() at each call. A teammate started
// here runs with a root of its own (workingRoot, set for all it does), and its root is worked out
// at each read: the worktree bound to the task it has in_progress. Its system prompt (s19's) names
// root too, so the model is told where it works before its first call there.
function rootOf(mate: Teammate, was: string): string {
  try {
    const mine = readBoard(mate.home).filter((task) => task.owner === mate.name && task.status === "in_progress");
    if (mine.length === 0) return existsSync(was) ? was : mate.home; // between tasks: where it last worked
    const bound = bindings(mate.home);
    const name = Object.keys(bound).sort().find((wt) => mine.some((task) => task.id === bound[wt]));
    const root = name && inside(mate.home, path.join(WORKTREES, name));
    return root && existsSync(path.join(root, ".git")) ? root : mate.home;
  } catch {
    return mate.home; // a board or bindings file edited by hand: the main checkout, as in s19
  }
}

/**
 * s19's spawnTeammate, run where every workspace() of the teammate's own code (its prompt, its
 * calls) asks rootOf: the worktree of its task, worked out at that moment and kept in `root`.
 */
export function spawnInWorktrees(name: string, prompt: string): Teammate {
  let mate: Teammate | undefined; // known once spawnTeammate returns, before its first request
  const itsRoot = () => (mate ? (mate.root = rootOf(mate, mate.root)) : process.cwd());
  mate = workingRoot.run(itsRoot, () => spawnTeammate(name, prompt));
  return mate;
}

const s19Spawn = s19Registry.getTool("spawn_teammate")!;
const spawnTool = defineTool({
  ...s19Spawn,
  async execute(params) {
    const mate = spawnInWorktrees(String(params.name), String(params.prompt));
    const text = `${mate.name} has joined the team and works on your prompt now, at the same time as you. The team: ${roster().join(", ")}. When it works on a task that has a worktree, it works in that worktree. You will be told when ${mate.name} is idle or fails.`;
    return { llmContent: text, returnDisplay: text };
  },
});
// #endregion teammates

// #region worktree-tools
const said = (text: string) => ({ llmContent: text, returnDisplay: text });
const worktreeCreateTool = defineTool({
  name: "worktree_create",
  displayName: "WorktreeCreate",
  kind: "execute", // it runs git, and the repository's hooks with it
  description:
    `Create a git worktree: a checkout of its own at .agent/worktrees/<name>, on a new branch wt/<name> from the current commit. ` +
    `With task_id it is bound to that task: a teammate working on the task works in it. ${WORKTREE_LIMITS.worktrees} at most.`,
  parameterSchema: {
    type: "object",
    properties: { name: { type: "string", description: "Letters, digits, - and _, at most 40, e.g. task-1." }, task_id: { type: "string", description: 'A task on the board, e.g. "1".' } },
    required: ["name"],
    additionalProperties: false,
  },
  getDescription: (params) => `${params.name}${params.task_id === undefined ? "" : ` for task ${params.task_id}`}`,
  // A name that will be refused is refused before the person is asked about it.
  shouldConfirmExecute: async (params) => ({
    title: `Create the worktree ${checkName(String(params.name))}?`,
    details: `git worktree add .agent/worktrees/${params.name} -b wt/${params.name}${params.task_id === undefined ? "" : `\n(bound to task ${params.task_id})`}`,
  }),
  execute: async (params, signal) => said(await createWorktree(boardRoot(), String(params.name), params.task_id as string | undefined, signal)),
});

const worktreeListTool = defineTool({
  name: "worktree_list",
  displayName: "WorktreeList",
  kind: "read",
  description: `Every worktree in .agent/worktrees/: its name, branch, task, and whether it has uncommitted changes (${WORKTREE_LIMITS.worktrees} at most are shown).`,
  parameterSchema: { type: "object", properties: {}, additionalProperties: false },
  getDescription: () => ".agent/worktrees/",
  async execute() {
    await checkRepository(boardRoot());
    const all = await listWorktrees(boardRoot());
    const lines = await Promise.all(
      all.slice(0, WORKTREE_LIMITS.worktrees).map(async (w) => {
        const changes = await uncommitted(w);
        const state = w.missing ? "its folder is missing (git worktree prune forgets it)" : changes.length > 0 ? `${changes.length} uncommitted change(s): ${changes.slice(0, 5).map((c) => c.trim()).join(", ")}${changes.length > 5 ? ", ..." : ""}` : "clean";
        return `${w.name}  branch ${w.branch ?? "(detached)"}  ${w.task === undefined ? "no task" : `task ${w.task}`}  ${state}`;
      }),
    );
    const more = all.length > WORKTREE_LIMITS.worktrees ? `\n... and ${all.length - WORKTREE_LIMITS.worktrees} more (git worktree list shows them all)` : "";
    return said(lines.length > 0 ? lines.join("\n") + more : "There are no worktrees (worktree_create makes one).");
  },
});

const worktreeRemoveTool = defineTool({
  name: "worktree_remove",
  displayName: "WorktreeRemove",
  kind: "execute",
  description:
    "Remove a worktree and its folder. Refused while it has uncommitted changes, unless force. Its branch wt/<name> is deleted unless keep_branch; " +
    "a branch with commits not merged into the current branch is kept, unless force. The result says what was deleted.",
  parameterSchema: {
    type: "object",
    properties: {
      name: { type: "string", description: "The worktree's name." },
      keep_branch: { type: "boolean", description: "Keep the branch wt/<name> (default false)." },
      force: { type: "boolean", description: "Throw away uncommitted changes and unmerged commits (default false)." },
    },
    required: ["name"],
    additionalProperties: false,
  },
  getDescription: (params) => `${params.name}${params.force === true ? " (force)" : ""}${params.keep_branch === true ? " (keep the branch)" : ""}`,
  shouldConfirmExecute: async (params) => ({
    title: `Remove the worktree ${checkName(String(params.name))}?`,
    details: `git worktree remove${params.force === true ? " --force" : ""} .agent/worktrees/${params.name}${params.keep_branch === true ? "" : `\ngit branch -D wt/${params.name}${params.force === true ? "" : " (only if merged)"}`}`,
  }),
  execute: async (params, signal) => said(await removeWorktree(boardRoot(), String(params.name), { keepBranch: params.keep_branch === true, force: params.force === true, signal })),
});
// #endregion worktree-tools

// #region tools
/** s19's tools, its core four with `worktree` and its spawn_teammate with worktrees, then the worktree tools. */
export const registry = new ToolRegistry();
const IN_WORKTREE = ["bash", "read_file", "write_file", "edit_file"];
for (const tool of s19Registry.getAllTools()) registry.registerTool(IN_WORKTREE.includes(tool.name) ? withWorktree(tool) : tool.name === "spawn_teammate" ? spawnTool : tool);
for (const tool of [worktreeCreateTool, worktreeListTool, worktreeRemoveTool]) registry.registerTool(tool);
/** What the lead sees; a teammate sees s19's tools (its requests are s19's). */
export const TOOLS = registry.getFunctionDeclarations();
// #endregion tools

// #region run-tool
/** The calls of one reply: reads side by side, the rest one at a time, in order; results in call order. */
async function runTools(content: ContentBlock[]): Promise<ToolResultBlockParam[]> {
  const calls = content.filter((block): block is ToolUseBlock => block.type === "tool_use");
  const results: ToolResultBlockParam[] = [];
  for (const batch of batches(calls)) results.push(...(await Promise.all(batch.map(runTool))));
  return withNotices(results); // s18: a teammate's or a task's notice rides in the last result
}

/** Consecutive read-kind calls go in one batch; every other call is a batch of its own. */
function batches(calls: ToolUseBlock[]): ToolUseBlock[][] {
  const isRead = (call: ToolUseBlock) => registry.getTool(call.name)?.kind === "read";
  const batches: ToolUseBlock[][] = [];
  for (const call of calls) {
    const last = batches.at(-1);
    if (last && isRead(call) && last.every(isRead)) last.push(call);
    else batches.push([call]);
  }
  return batches;
}

/** One call through the nine steps. Never throws: every failure is a result the model can act on. */
export async function runTool(call: ToolUseBlock): Promise<ToolResultBlockParam> {
  // 1-2. The model asked for a tool by name; the loop hands the call over.
  const failed = (message: string): ToolResultBlockParam => {
    console.log(dim(indent(visible(clip(message, 2000, "head")))));
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(message, MAX_OUTPUT) };
  };
  // 3. Look the tool up.
  const tool = registry.getTool(call.name);
  if (!tool) console.log(dim(`> ${visible(call.name)}`));
  if (!tool) return failed(`Error: unknown tool "${call.name}". Tools: ${registry.getAllTools().map((t) => t.name).join(", ")}.`);
  // 4. Validate. Models send null for what they leave out: it means "not given", for every tool.
  const params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  const problem = tool.validateToolParams(params);
  if (problem) {
    console.log(dim(`> ${tool.displayName} ${visible(clip(JSON.stringify(params), 120, "head"))}`));
    return failed(`Error: ${call.name} was not run: ${problem}.`);
  }
  // 5. Describe, in one line, what is about to happen.
  console.log(dim(`> ${tool.displayName} ${visible(clip(tool.getDescription(params).split("\n")[0], 120, "head"))}`));
  const controller = new AbortController();
  try {
    // 6. Confirm: the approval mode, and the person when the mode asks for one.
    const verdict = await approve(tool, params, controller.signal);
    if (!verdict.run) return failed(verdict.why);
    // 7. Execute, with a signal: Ctrl-C cancels this tool, not the agent.
    const result = await cancellable(() => controller.abort(), () => tool.execute(params, controller.signal));
    // 8. llmContent goes to the model...
    const toModel: ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: clip(result.llmContent, MAX_OUTPUT) };
    // 9. ...and returnDisplay to the person (unless they have just seen it, approving it).
    if (result.returnDisplay !== verdict.shown) console.log(dim(indent(firstLines(result.returnDisplay, 12))));
    return toModel;
  } catch (error) {
    // Errors go back as is_error, so the model knows the call failed and why.
    if (controller.signal.aborted) return failed("Error: cancelled by the user (Ctrl-C); the tool was stopped.");
    return failed(`Error: ${error instanceof Error ? error.message : String(error)}`);
  }
}
// #endregion run-tool

// #region agent-loop
export async function agentLoop(messages: MessageParam[]): Promise<void> {
  while (true) {
    const response = await client.messages.create({
      model: MODEL,
      max_tokens: MAX_TOKENS,
      system: systemPrompt(),
      tools: TOOLS,
      messages,
    });
    messages.push({ role: "assistant", content: response.content });
    showText(response);
    if (response.stop_reason !== "tool_use") return endTurn(response, messages);

    const results = await runTools(response.content);
    messages.push({ role: "user", content: results });
  }
}
// #endregion agent-loop

// #region end-turn
function showText(response: Message): void {
  for (const block of response.content) if (block.type === "text") console.log(visible(block.text)); // model text: escapes shown, never obeyed
}

/** The model stopped asking for tools. Say so when the reason is not a normal ending. */
function endTurn(response: Message, messages: MessageParam[]): void | Promise<void> {
  // A server tool (web search, code execution) still at work: the turn goes on when it is sent back as it is.
  if (response.stop_reason === "pause_turn") return agentLoop(messages);
  if (response.stop_reason === "refusal") console.log("[the model declined to continue]");
  const cutOff = { max_tokens: `at ${MAX_TOKENS} tokens: ask for something smaller, or raise MAX_TOKENS`, model_context_window_exceeded: "because the context window is full: start a new session" };
  if (response.stop_reason !== "max_tokens" && response.stop_reason !== "model_context_window_exceeded") return;
  console.log(`[the reply was cut off ${cutOff[response.stop_reason]}]`);
  // A tool call cut off mid-way cannot run, but it needs an answer, or the next request is refused.
  const calls = response.content.filter((block) => block.type === "tool_use");
  if (calls.length === 0) return;
  const content = `Not run: your reply was cut off (${response.stop_reason}) before this call was complete.`;
  messages.push({ role: "user", content: calls.map((call) => ({ type: "tool_result" as const, tool_use_id: call.id, is_error: true, content })) });
}
// #endregion end-turn

// #region program
// s19's turn with this file's loop: s18's notices in front of the prompt, the loop; then, while a
// teammate works, the lead waits (Ctrl-C stops the wait), and the notices wake it when none works.
export async function runTurn(messages: MessageParam[]): Promise<void> {
  addNoticesToPrompt(messages);
  await agentLoop(messages);
  for (let interrupted = false; !interrupted && teamList().length > 0; ) {
    await cancellable(() => (interrupted = true), async () => {
      while (!interrupted && teamList().some((mate) => mate.state === "working")) await new Promise((resolve) => setTimeout(resolve, 20));
    });
    const wake: MessageParam[] = [{ role: "user", content: "" }];
    if (!interrupted) addNoticesToPrompt(wake); // after Ctrl-C, the notices wait for the next prompt
    const notices = String(wake[0].content).trim();
    if (!notices) return;
    messages.push({ role: "user", content: [{ type: "text", text: notices }] }); // a block, not a string: the harness's, not the person's prompt
    await agentLoop(messages);
  }
}

/** A new session: no teammates, no background tasks, no notices (s19's). The worktrees stay: they are the repository's. */
export const prepareReplay = (): void => endTeamAndTasks();

export const main = (args = process.argv.slice(2)) =>
  runAsMain({ stage: "s20", title: "Worktrees", agentLoop: runTurn, prepareReplay, hasKey: Boolean(API_KEY || AUTH_TOKEN), args, options: ["--approval-mode"], settingsProblem: modeProblem, help: [APPROVAL_HELP] });

if (isMain(import.meta.url)) await main();
// #endregion program
