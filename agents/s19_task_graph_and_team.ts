/**
 * s19_task_graph_and_team.ts - Task Graph and Team
 *
 * "Split the work, claim it, and say when it is done": a task board on disk, and teammates that claim from it.
 *
 *   lead: task_create x3 (2 blocked_by 1), spawn_teammate alice, bob; its turn ends, it waits
 *   +----------------------------------------------------------------------+
 *   | .agent/tasks/1.json 2.json 3.json   the board, shared by every agent |
 *   |   each change: take .lock ("wx": one process wins), read, check,     |
 *   |   write atomically, let go; a dead process's lock is taken over      |
 *   |   claim = owner set on an unowned task: one wins, the other is told  |
 *   | .agent/team/inbox/<to>.jsonl   send_message appends one whole line   |
 *   +----------------------------------------------------------------------+
 *      ^ claim, complete, message                  ^
 *   [alice] the same agentLoop, its own history   [bob] ...   (4 at most)
 *      between turns: its inbox, else its next free task, else it idles
 *      |  idle or failed: a notice for the lead (s18's rule)
 *      v
 *   no teammate working: the lead wakes with the notices, reads its inbox, reports
 *
 * New since s18: regions `board`, `inbox`, `team` first; `board-tools`, `team-tools`; `approval`
 * (s10's); a teammate's tools, lines and limits in `config`, `run-tool`, `end-turn`; runTurn in
 * `program`. s18's tools and notices come from agents/s18_background_tasks.ts, s06's registry
 * and approval step from agents/s06_tool_registry.ts; atomic writes are lib/machinery/atomic-write.ts.
 *
 *   npx tsx agents/s19_task_graph_and_team.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s19_task_graph_and_team.ts --approval-mode auto-edit
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { EventEmitter, once } from "node:events";
import { closeSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import type { ContentBlock, Message, MessageCreateParamsNonStreaming, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { writeAtomically } from "../lib/machinery/atomic-write.ts";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip } from "../lib/machinery/head-and-tail.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable, terminal } from "../lib/runtime/terminal.ts";
import { APPROVAL_HELP, approve, defineTool, isInside, MAX_OUTPUT, modeProblem, mustAsk, ToolRegistry, workspace, type AgentTool, type Params, type ToolKind, type Verdict } from "./s06_tool_registry.ts";
import { addNoticesToPrompt, forgetNotice, notify, prepareReplay as endBackgroundTasks, registry as s18Registry, withNotices } from "./s18_background_tasks.ts";

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
// The SDK's client (lib/runtime/model.ts). The loop is the same for the lead and its teammates;
// a teammate's request offers the teammate's tools, and carries its stop signal (Ctrl-C, a reset).
const model = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
const forTeammate = (request: MessageCreateParamsNonStreaming) => ({ ...request, tools: request.tools?.filter((tool) => isTeammateTool((tool as { name: string }).name)) });
const client = { messages: { create: (request: MessageCreateParamsNonStreaming) => (member() ? model.messages.create(forTeammate(request), { signal: member()!.stop.signal }) : model.messages.create(request)) } };
// Written at each request, for whoever asks: the lead here, a teammate its own (in `team`).
const systemPrompt = () =>
  member()
    ? teammatePrompt(member()!)
    : `You are a coding agent working in ${workspace()}, and you lead a team. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
      `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make. For a slow command, set run_in_background on bash. ` +
      `For work that splits into parts, put the parts on the task board (task_create; blocked_by names what must be completed first) and start teammates with spawn_teammate: they work at the same time as you, ` +
      `claim tasks by making themselves the owner, and take the next free task by themselves. When your turn ends while they work, you wait, and are told when each is idle or fails. ` +
      `read_inbox gives what they sent you. When the work is done, stop them (send_message with stop) and report. The team now: ${roster().join(", ")}.`;
// #endregion config

// #region board
// The task board: one JSON file per task in .agent/tasks/, seen by every agent, in any process, kept
// after the program ends. A change is a read, a check and a write: two agents doing that at once
// both read "task 3 has no owner", both write their name, and the later write wins while the other
// works on, sure the task is its own. So every change is made holding the board's lock.
export const BOARD_LIMITS = { tasks: 100, lockWaitMs: 5_000, lockStaleMs: 30_000 };
const STATUSES = ["pending", "in_progress", "completed"] as const;
type Status = (typeof STATUSES)[number];
export type Task = { id: string; subject: string; description: string; status: Status; owner: string | null; blocked_by: string[] };
const boardOf = (root: string) => path.join(root, ".agent", "tasks");
/** Every task, in id order. Each file is written whole, so one that does not read as a task was edited by hand: say which. */
export function readBoard(root: string): Task[] {
  const names = (attempt(() => readdirSync(boardOf(root))) ?? []).filter((name) => /^\d+\.json$/.test(name));
  const tasks = names.map((name) => [name, attempt(() => JSON.parse(readFileSync(path.join(boardOf(root), name), "utf8")) as Task)] as const);
  const whole = ([name, task]: readonly [string, Task | undefined]) => task && `${task.id}.json` === name && STATUSES.includes(task.status) && typeof task.subject === "string" && Array.isArray(task.blocked_by);
  const broken = tasks.find((entry) => !whole(entry));
  if (broken) fail(`.agent/tasks/${broken[0]} is not a task's JSON (edited by hand?): fix it or remove it; the other tasks are as they were`);
  return tasks.map(([, task]) => task!).sort((a, b) => Number(a.id) - Number(b.id));
}
/** Take the lock, read the board, let `change` check it and say what to write, write that whole, let the lock go. */
async function changeBoard(root: string, change: (tasks: Task[]) => Task | undefined): Promise<Task | undefined> {
  mkdirSync(boardOf(root), { recursive: true });
  const [lock, mine, started] = [path.join(boardOf(root), ".lock"), `${process.pid} ${randomUUID()}`, Date.now()];
  while (!attempt(() => writeFileSync(lock, mine, { flag: "wx" }) ?? true)) {
    if (takeOverIfStale(lock)) continue;
    if (Date.now() - started > BOARD_LIMITS.lockWaitMs) fail(`the task board stayed locked by process ${attempt(() => readFileSync(lock, "utf8").split(" ")[0])} for ${BOARD_LIMITS.lockWaitMs / 1000} s; try again`);
    await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 10)); // another process holds it, for a moment
  }
  try {
    // Nothing here awaits: no other agent of this process runs until the lock is let go.
    const task = change(readBoard(root));
    const where = { root: realpathSync(root), isInside };
    if (task) writeAtomically(path.join(boardOf(root), `${task.id}.json`), `${JSON.stringify(task, null, 2)}\n`, `.agent/tasks/${task.id}.json`, where);
    if (task && Number(task.id) > lastId(root)) writeAtomically(path.join(boardOf(root), ".last-id"), task.id, ".agent/tasks/.last-id", where);
    if (task) teamChanged.emit("changed");
    return task;
  } finally {
    if (attempt(() => readFileSync(lock, "utf8")) === mine) rmSync(lock, { force: true });
  }
}

// The lock is a file created with the flag "wx" (O_CREAT | O_EXCL): the system creates it only if no
// file has that name, so of processes trying at once one wins. It holds its process's id. One whose
// process has died, or older than lockStaleMs (a hung process, or an id now another program's), is
// taken over: renamed to a name of our own (a rename is atomic: of two processes, one moves it),
// then read again; if it was a fresh lock taken meanwhile, it is put back.
function takeOverIfStale(lock: string): boolean {
  const [seen, since] = [attempt(() => readFileSync(lock, "utf8")), attempt(() => statSync(lock).mtimeMs)];
  if (seen === undefined || since === undefined) return true; // let go meanwhile: try again at once
  const alive = seen === "" || attempt(() => process.kill(Number(seen.split(" ")[0]), 0)); // "": its id is being written; signal 0 only asks if the process is there
  if (alive && Date.now() - since < BOARD_LIMITS.lockStaleMs) return false;
  const aside = `${lock}.stale.${randomUUID()}`;
  if (!attempt(() => renameSync(lock, aside) ?? true)) return true; // another process took it over first
  if (readFileSync(aside, "utf8") !== seen) attempt(() => linkSync(aside, lock)); // not the stale one: back, unless the lock is held again
  rmSync(aside, { force: true });
  return true;
}
/** What `work` returns, or undefined when it throws: a file another process took away meanwhile, say. */
const attempt = <T>(work: () => T): T | undefined => { try { return work(); } catch { return undefined; } }; // prettier-ignore
/** An error for the model, from inside an expression. */
const fail = (message: string): never => { throw new Error(message); }; // prettier-ignore
/** The highest id ever given here: ids are never given twice, even if a task's file is removed. */
const lastId = (root: string) => Number(attempt(() => readFileSync(path.join(boardOf(root), ".last-id"), "utf8"))) || 0;
const theTasks = (tasks: Task[]) => (tasks.length > 0 ? `The tasks: ${tasks.map((task) => task.id).join(", ")}.` : "The board is empty.");
export const taskIn = (tasks: Task[], id: string) => tasks.find((task) => task.id === id) ?? fail(`there is no task ${JSON.stringify(id)}. ${theTasks(tasks)}`);
/** Its blockers that are not completed, as the errors name them. */
const openBlockers = (task: Task, tasks: Task[]) => tasks.filter((other) => task.blocked_by.includes(other.id) && other.status !== "completed").map((other) => `task ${other.id} (${other.subject}, ${other.status})`);
/** blocked_by must name tasks on the board, and must not lead back to the task itself. */
function checkBlockers(id: string, blockedBy: string[], tasks: Task[]): string[] {
  const unknown = blockedBy.filter((other) => other !== id && !tasks.some((task) => task.id === other));
  if (unknown.length > 0) fail(`blocked_by names ${unknown.map((other) => JSON.stringify(other)).join(", ")}, not on the board. ${theTasks(tasks)}`);
  const cycle = pathBack(id, blockedBy, tasks, new Set());
  if (cycle) fail(`blocked_by would make a cycle: ${[id, ...cycle].join(" -> ")}; no task could ever start`);
  return [...new Set(blockedBy)];
}
/** The way from these blockers back to `start`, following blocked_by, if there is one. */
function pathBack(start: string, next: string[], tasks: Task[], seen: Set<string>): string[] | undefined {
  for (const id of next.filter((other) => !seen.has(other))) {
    seen.add(id);
    const rest = id === start ? [] : pathBack(start, tasks.find((task) => task.id === id)?.blocked_by ?? [], tasks, seen);
    if (rest) return [id, ...rest];
  }
  return undefined;
}
/** A new task with the next id: under the lock, two agents creating at once get two ids. */
export async function createTask(root: string, subject: string, description: string, blockedBy: string[] = []): Promise<Task> {
  return (await changeBoard(root, (tasks) => {
    if (tasks.length >= BOARD_LIMITS.tasks) fail(`the board holds ${BOARD_LIMITS.tasks} tasks, the most it keeps`);
    const id = String(Math.max(lastId(root), ...tasks.map((task) => Number(task.id))) + 1);
    return { id, subject, description, status: "pending", owner: null, blocked_by: checkBlockers(id, blockedBy, tasks) };
  }))!;
}
/** A change by agent `by`. Claiming is setting an owner on an unowned task: under the lock, one wins, the others are told who. */
export async function updateTask(root: string, id: string, by: string, change: { status: Status; owner?: string; blocked_by?: string[] }): Promise<Task> {
  return (await changeBoard(root, (tasks) => {
    const task = { ...taskIn(tasks, id), status: change.status };
    if (task.owner && task.owner !== by && by !== LEAD) fail(`task ${id} is claimed by ${task.owner}: only ${task.owner} or the lead may change it`);
    if (change.owner !== undefined && change.owner !== (task.owner ?? "")) {
      if (task.owner && change.owner !== "") fail(`task ${id} is claimed by ${task.owner} already; it is given up with owner ""`);
      task.owner = change.owner || null; // "" gives it up
    }
    if (change.blocked_by) task.blocked_by = checkBlockers(id, change.blocked_by, tasks);
    const open = change.status === "in_progress" ? openBlockers(task, tasks) : [];
    if (open.length > 0) fail(`task ${id} cannot start: it is blocked by ${open.join(", ")}; it can start when that is completed`);
    if (change.status === "in_progress") task.owner ??= by; // whoever starts an unowned task claims it
    return task;
  }))!;
}
/** For an idle teammate: its own pending task that nothing blocks, else an unowned one; claimed and started under the lock. */
export async function claimNext(root: string, name: string): Promise<Task | undefined> {
  return changeBoard(root, (tasks) => {
    const free = (task: Task) => task.status === "pending" && openBlockers(task, tasks).length === 0;
    const task = tasks.find((t) => free(t) && t.owner === name) ?? tasks.find((t) => free(t) && !t.owner);
    return task && { ...task, owner: name, status: "in_progress" };
  });
}
// #endregion board

// #region inbox
// An inbox is a file of JSON lines, .agent/team/inbox/<name>.jsonl. A message is one line, written
// by one write() to a file opened with O_APPEND: the system puts each such write at the end, whole,
// whoever else appends at that moment. Reading moves a mark (<name>.read, in bytes) past what it read.
export const INBOX_LIMITS = { messageChars: 10_000, perRead: 20, fileBytes: 1_000_000 };
export type TeamMessage = { from: string; text: string; stop?: boolean };
const inboxOf = (root: string, name: string) => path.join(root, ".agent", "team", "inbox", `${name}.jsonl`);

export function appendMessage(root: string, to: string, message: TeamMessage): void {
  if (message.text.length > INBOX_LIMITS.messageChars) fail(`the message has ${message.text.length} characters, more than ${INBOX_LIMITS.messageChars}: put the rest in a file`);
  const [file, line] = [inboxOf(root, to), Buffer.from(`${JSON.stringify(message)}\n`)];
  mkdirSync(path.dirname(file), { recursive: true });
  const size = attempt(() => statSync(file).size) ?? 0;
  if (size + line.length > INBOX_LIMITS.fileBytes) fail(`${to}'s inbox is full (${size} bytes, at most ${INBOX_LIMITS.fileBytes})`);
  const fd = openSync(file, "a"); // O_APPEND: every write lands at the end
  const written = attempt(() => writeSync(fd, line));
  closeSync(fd);
  if (written !== line.length) fail(`${to}'s inbox took ${written ?? "none"} of the message's ${line.length} bytes (is the disk full?)`);
  teamChanged.emit("changed");
}
/** The messages not read yet, at most perRead, now marked read; a damaged line is skipped and counted. */
export function readInbox(root: string, name: string): { messages: TeamMessage[]; damaged: number; more: boolean } {
  const [file, mark] = [inboxOf(root, name), inboxOf(root, name).replace(/\.jsonl$/, ".read")];
  const bytes = attempt(() => readFileSync(file)) ?? Buffer.alloc(0); // at most fileBytes: appends stop there
  const marked = Number(attempt(() => readFileSync(mark, "utf8"))) || 0;
  const messages: TeamMessage[] = [];
  let [read, damaged] = [marked > bytes.length ? 0 : marked, 0]; // a mark past the end: the file was replaced
  // Whole lines only: one still being written (no newline yet) waits for the next read.
  for (let end = bytes.indexOf(0x0a, read); end >= 0 && messages.length < INBOX_LIMITS.perRead; end = bytes.indexOf(0x0a, read)) {
    const message = attempt(() => JSON.parse(bytes.subarray(read, end).toString("utf8")) as TeamMessage);
    if (typeof message?.from === "string" && typeof message.text === "string") messages.push(message);
    else damaged += 1;
    read = end + 1;
  }
  if (read !== marked) writeAtomically(mark, String(read), path.basename(mark), { root: realpathSync(root), isInside });
  return { messages, damaged, more: bytes.indexOf(0x0a, read) >= 0 };
}
// #endregion inbox

// #region team
// A teammate is this file's agent loop run once more, in this process, with a history of its own, at
// the same time as the lead. An AsyncLocalStorage knows whose code runs, so the system prompt, the
// tools offered, the lines shown and the approval questions are its own. Between turns it idles.
export const TEAM_LIMITS = { teammates: 4, repliesPerTurn: 30, recheckMs: 5_000, idleMs: 10 * 60_000 };
export const LEAD = "lead";
// `home`: where the board and the inboxes are (the lead's workspace); `root`: where it works (the same here; s20 may give it a checkout).
export type Teammate = { name: string; home: string; root: string; state: "working" | "idle" | "stopped"; messages: MessageParam[]; stop: AbortController; stopAsked: boolean; replies: number };
let team = new Map<string, Teammate>();
const teammateRun = new AsyncLocalStorage<Teammate>();
/** The teammate whose code runs now; undefined for the lead. */
export const member = () => teammateRun.getStore();
/** The board, an inbox or the team changed: idle teammates and a waiting lead look again. */
const teamChanged = new EventEmitter().setMaxListeners(0);
const onTeam = () => [...team.values()].filter((mate) => mate.state !== "stopped");
export const roster = () => [LEAD, ...onTeam().map((mate) => mate.name)];
export const teamList = () => [...team.values()].map(({ name, state }) => ({ name, state }));
/** A teammate's tools: the core tools, the board's, send_message and read_inbox; not spawn_teammate, nor s18's task tools (its commands run in the foreground). */
const isTeammateTool = (name: string) => !["spawn_teammate", "bash_output", "kill_task"].includes(name);
const teammatePrompt = (me: Teammate) =>
  `You are a teammate on a coding team, working in ${workspace()}. Your name is ${me.name}. The team: ${roster().map((name) => (name === me.name ? `${name} (you)` : name === LEAD ? `${name} (who leads it)` : name)).join(", ")}. ` +
  `read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. The task board is shared: claim a task by making yourself its owner with task_update, ` +
  `set it completed when it is done, then end your turn with a short report. The harness then gives you your next task, or the messages sent to you; when there is none, you wait. ` +
  `send_message tells a teammate or the lead what they need to know. Edits and commands may need a person's approval; if one is refused, say so.`;

export function spawnTeammate(name: string, prompt: string): Teammate {
  if (member()) fail("only the lead starts teammates");
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(name) || name.toLowerCase() === LEAD) fail(`${JSON.stringify(name)} cannot be a teammate's name: letters, digits, - and _, at most 40, and not "${LEAD}"`);
  const taken = onTeam().find((mate) => mate.name.toLowerCase() === name.toLowerCase()); // alice and Alice would share an inbox on some disks
  if (taken) fail(`${taken.name} is on the team already: send_message gives it more work`);
  if (onTeam().length >= TEAM_LIMITS.teammates) fail(`the team has ${TEAM_LIMITS.teammates} teammates, the most at once: ${onTeam().map((m) => `${m.name} (${m.state})`).join(", ")}. Stop one first (send_message with stop).`);
  const me: Teammate = { name, home: workspace(), root: workspace(), state: "working", messages: [], stop: new AbortController(), stopAsked: false, replies: 0 };
  team.set(name, me);
  // Not awaited: it works while the lead does. Ctrl-C stops it wherever it is.
  void teammateRun.run(me, () => cancellable(() => me.stop.abort(), () => runTeammate(me, prompt)));
  return me;
}
/** A turn per prompt, task or message, idling between them, until it is stopped; then the lead hears why. */
async function runTeammate(me: Teammate, prompt: string): Promise<void> {
  let [next, why]: [string | undefined, string] = [prompt, `it was idle for ${TEAM_LIMITS.idleMs / 60_000} minutes`];
  try {
    while (next !== undefined) {
      me.messages.push({ role: "user", content: next });
      me.replies = 0;
      await agentLoop(me.messages); // this file's loop, with the teammate's own history
      next = await nextWork(me);
    }
    if (me.stop.signal.aborted) why = "Ctrl-C stopped the team";
  } catch (error) {
    why = me.stop.signal.aborted ? "Ctrl-C stopped it in the middle of its work" : `it failed: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    me.state = "stopped";
    const left = attempt(() => readBoard(me.home).filter((task) => task.owner === me.name && task.status === "in_progress").map((task) => task.id)) ?? [];
    const tasks = left.length > 0 ? ` Its tasks still in_progress: ${left.join(", ")} (task_update with owner "" gives one up).` : "";
    if (team.get(me.name) === me && !me.stopAsked) notify(me.name, `${me.name} has stopped: ${why}.${tasks}`); // not when the lead asked, nor after a reset
    teamChanged.emit("changed");
  }
}
/** Between turns: its messages, else its next free task, else wait for a change (here, or recheckMs for another process's). */
async function nextWork(me: Teammate): Promise<string | undefined> {
  for (let [since, told] = [Date.now(), false]; !me.stop.signal.aborted && Date.now() - since < TEAM_LIMITS.idleMs; told = true) {
    const inbox = readInbox(me.home, me.name);
    if (inbox.messages.some((message) => message.stop && message.from === LEAD)) me.stopAsked = true;
    if (me.stopAsked) return undefined;
    const task = inbox.messages.length > 0 ? undefined : await claimNext(me.home, me.name);
    const work = inbox.messages.length > 0 ? inboxText(inbox) : task && `Task ${task.id} is yours, and in_progress: ${task.subject}\n${task.description}\nWhen it is done, set it completed with task_update, then end your turn with a short report.`;
    me.state = work ? "working" : "idle"; // "working" until now: the lead does not wake between two tasks
    if (work) forgetNotice(me.name); // "idle" is old news
    if (work) return `<notice>From the harness:\n${work}\n</notice>`;
    if (!told) notify(me.name, `${me.name} is idle: no task on the board is free for it. Its last words: ${JSON.stringify(clip(lastWords(me), 300, "head"))}`);
    if (!told) teamChanged.emit("changed"); // a waiting lead looks again
    await once(teamChanged, "changed", { signal: AbortSignal.any([me.stop.signal, AbortSignal.timeout(TEAM_LIMITS.recheckMs)]) }).catch(() => {});
  }
  return undefined;
}
/** The text of its last reply: what the lead reads in the idle notice. */
const lastWords = (me: Teammate) =>
  ((me.messages.filter((message) => message.role === "assistant").at(-1)?.content ?? []) as ContentBlock[]).flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
const inboxText = ({ messages, damaged, more }: ReturnType<typeof readInbox>) =>
  (messages.length > 0 ? messages.map((m) => `From ${m.from}${m.stop ? " (asking you to stop)" : ""}:\n${indent(m.text)}`).join("\n") : "No new messages.") +
  (damaged > 0 ? `\n(${damaged} damaged line${damaged === 1 ? "" : "s"} skipped: a write cut short)` : "") + (more ? "\nMore are waiting: call read_inbox again." : "");
/** Stop every teammate where it stands (a new session; the tests). */
export function stopTeam(): void {
  for (const mate of team.values()) mate.stop.abort();
  team = new Map();
}
/** Print for the person: each line of a teammate's carries its name, as s10's subagent's carry its label. */
const show = (text: string, me = member()) => console.log(me ? text.replace(/^/gm, `[${visible(me.name)}] `) : text);
// #endregion team

// #region board-tools
// The seven tools share one shape: parameters in, one text out. A change to the board is kind "edit":
// such calls run one at a time, in call order (three task_create in a reply get 1, 2, 3 as written); none asks.
function teamTool(name: string, kind: ToolKind, description: string, properties: Record<string, object>, required: string[], run: (params: Params) => Promise<string>): AgentTool {
  const displayName = name.replace(/(?:^|_)(\w)/g, (_, letter: string) => letter.toUpperCase()); // task_create: TaskCreate
  const parameterSchema = { type: "object" as const, properties, required, additionalProperties: false };
  const getDescription = (params: Params) => Object.entries(params).map(([key, value]) => (typeof value === "string" ? value : `${key}=${JSON.stringify(value)}`)).join(" ").replace(/\s+/g, " ");
  const execute = async (params: Params) => ((text) => ({ llmContent: text, returnDisplay: text }))(await run(params));
  return defineTool({ name, displayName, kind, description, parameterSchema, getDescription, execute });
}
const taskId = { type: "string", description: 'A task id, e.g. "1".' };
const blockedBy = { type: "array", items: { type: "string" }, maxItems: 20, description: "Ids of the tasks that must be completed before this one can start." };
const showTask = (task: Task, tasks: Task[]) =>
  `${task.id} [${task.status}] ${task.subject}, ${task.owner ? `owner ${task.owner}` : "no owner"}` +
  (task.blocked_by.length > 0 ? `, blocked by ${task.blocked_by.map((other) => `${other} (${tasks.find((t) => t.id === other)?.status ?? "gone"})`).join(", ")}` : "");
/** The board is the lead's workspace's, whoever asks. */
export const boardRoot = () => member()?.home ?? workspace();
const me = () => member()?.name ?? LEAD;

const taskCreateTool = teamTool(
  "task_create", "edit", "Put a task on the team's board (.agent/tasks/); returns its id (1, 2, ...). blocked_by: ids of tasks that must be completed before it can start.",
  { subject: { type: "string", minLength: 1, maxLength: 200 }, description: { type: "string", maxLength: 10_000 }, blocked_by: blockedBy }, ["subject", "description"],
  async (params) => {
    const task = await createTask(boardRoot(), String(params.subject), String(params.description), (params.blocked_by as string[] | undefined) ?? []);
    return `Created task ${task.id}: ${task.subject}${task.blocked_by.length > 0 ? ` (blocked by ${task.blocked_by.join(", ")})` : ""}.`;
  },
);
const taskUpdateTool = teamTool(
  "task_update", "edit",
  'Change a task\'s status, owner or blockers. Claim a task by setting owner to your name; if someone has it already, you are told who. in_progress is refused while a blocker is not completed; owner "" gives a task up.',
  { task_id: taskId, status: { type: "string", enum: [...STATUSES] }, owner: { type: "string", maxLength: 40 }, blocked_by: blockedBy }, ["task_id", "status"],
  async (params) => {
    const owner = params.owner as string | undefined;
    if (owner && owner !== me() && (me() !== LEAD || !roster().includes(owner))) fail(`${me() === LEAD ? `${owner} is not on the team` : "a teammate claims tasks for itself only"}. The team: ${roster().join(", ")}`);
    const task = await updateTask(boardRoot(), String(params.task_id), me(), { status: params.status as Status, owner, blocked_by: params.blocked_by as string[] | undefined });
    return `Task ${showTask(task, readBoard(boardRoot()))}.`;
  },
);
const taskListTool = teamTool("task_list", "read", "Every task on the board: id, status, subject, owner, and what blocks it.", {}, [], async () => {
  const tasks = readBoard(boardRoot());
  return tasks.length > 0 ? tasks.map((task) => showTask(task, tasks)).join("\n") : "The board is empty.";
});
const taskGetTool = teamTool("task_get", "read", "One task whole: its description too, and what it blocks.", { task_id: taskId }, ["task_id"], async (params) => {
  const tasks = readBoard(boardRoot());
  const task = taskIn(tasks, String(params.task_id));
  return `${showTask(task, tasks)}\n${task.description}\nIt blocks: ${tasks.filter((other) => other.blocked_by.includes(task.id)).map((other) => other.id).join(", ") || "nothing"}.`;
});
// #endregion board-tools

// #region team-tools
// kind "execute": a teammate does work, so not in plan mode; each of its own calls is approved as the lead's are.
const spawnTeammateTool = teamTool(
  "spawn_teammate", "execute",
  `Start a teammate: an agent with its own context and your tools (but spawn_teammate), working at the same time as you, ${TEAM_LIMITS.teammates} at most. ` +
    "It begins with your prompt, which must say all it needs; then it takes tasks from the board by itself, and reads its inbox.",
  { name: { type: "string", description: "Letters, digits, - and _, at most 40, e.g. alice." }, prompt: { type: "string", minLength: 1 } }, ["name", "prompt"],
  async (params) => {
    const { name } = spawnTeammate(String(params.name), String(params.prompt));
    return `${name} has joined the team and works on your prompt now, at the same time as you. The team: ${roster().join(", ")}. You will be told when ${name} is idle or fails.`;
  },
);
// Who has sent the lead messages it has not read: its notice names them, in one line.
let unreadFrom = new Set<string>();
const sendMessageTool = teamTool(
  "send_message", "edit",
  `Send a message (at most ${INBOX_LIMITS.messageChars} characters) to a teammate or the lead: it is appended to their inbox. The lead may set stop: the teammate stops when the message reaches it.`,
  { to: { type: "string" }, text: { type: "string", minLength: 1 }, stop: { type: "boolean", description: "Lead only: the teammate stops when this reaches it." } }, ["to", "text"],
  async (params) => {
    const [from, to, stop] = [me(), String(params.to), params.stop === true];
    if (!roster().includes(to) || to === from) fail(`${to === from ? "that is you" : `no one named ${JSON.stringify(to)} is on the team`}. The team: ${roster().join(", ")}`);
    if (stop && from !== LEAD) fail("only the lead stops a teammate");
    appendMessage(boardRoot(), to, { from, text: String(params.text), ...(stop ? { stop } : {}) });
    if (to === LEAD) notify("inbox", `New messages in your inbox, from ${[...unreadFrom.add(from)].join(", ")}: read_inbox reads them.`);
    return `Sent to ${to}${stop ? `; ${to} stops when it reads it` : ""}.`;
  },
);
const readInboxTool = teamTool("read_inbox", "read", `The messages sent to you that you have not read, ${INBOX_LIMITS.perRead} at most; they are then marked read.`, {}, [], async () => {
  const inbox = readInbox(boardRoot(), me());
  if (member() && inbox.messages.some((message) => message.stop && message.from === LEAD)) member()!.stopAsked = true;
  if (!member()) unreadFrom = new Set(); // the lead has read its inbox: the notice of new messages is spent
  if (!member()) forgetNotice("inbox");
  return inboxText(inbox);
});
// #endregion team-tools

// #region approval
// s06's approval step, one question at a time (s10's rule): the lead and its teammates may ask at
// the same moment. A question waits until the one before it is answered, and names the teammate.
let lastQuestion: Promise<void> = Promise.resolve();
async function approveInTurn(tool: AgentTool, params: Params, signal: AbortSignal): Promise<Verdict> {
  if (!mustAsk(tool) || !terminal().hasPerson) return approve(tool, params, signal);
  const before = lastQuestion;
  let done = () => {};
  lastQuestion = new Promise((resolve) => (done = resolve));
  await before; // "a" may have been answered meanwhile: approve looks again
  return approve(tool, params, signal, member() && `the teammate ${member()!.name}`).finally(done);
}
// #endregion approval

// #region tools
/** s06's registry: s18's tools (s06's, bash with run_in_background, bash_output, kill_task), then the board's and the team's. */
export const registry = new ToolRegistry();
for (const tool of [...s18Registry.getAllTools(), taskCreateTool, taskUpdateTool, taskListTool, taskGetTool, spawnTeammateTool, sendMessageTool, readInboxTool]) registry.registerTool(tool);
/** What the lead sees; a teammate's requests leave out what isTeammateTool refuses (in `config`). */
export const TOOLS = registry.getFunctionDeclarations();
// #endregion tools

// #region run-tool
/** The calls of one reply: reads side by side, the rest one at a time, in order; results in call order. */
async function runTools(content: ContentBlock[]): Promise<ToolResultBlockParam[]> {
  const mate = member();
  if (mate && ++mate.replies > TEAM_LIMITS.repliesPerTurn) fail(`it used ${TEAM_LIMITS.repliesPerTurn} replies in one turn without finishing`);
  const calls = content.filter((block): block is ToolUseBlock => block.type === "tool_use");
  const results: ToolResultBlockParam[] = [];
  for (const batch of batches(calls)) results.push(...(await Promise.all(batch.map(runTool))));
  return mate ? results : withNotices(results); // s18: the notices are the lead's
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
    show(dim(indent(visible(clip(message, 2000, "head")))));
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(message, MAX_OUTPUT) };
  };
  // 3. Look the tool up: a teammate has only the tools its requests offer.
  const mine = registry.getAllTools().filter((t) => !member() || isTeammateTool(t.name));
  const tool = mine.find((t) => t.name === call.name);
  if (!tool) show(dim(`> ${visible(call.name)}`));
  if (!tool) return failed(`Error: unknown tool "${call.name}". Tools: ${mine.map((t) => t.name).join(", ")}.`);
  // 4. Validate. Models send null for what they leave out: it means "not given", for every tool.
  const params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  const problem = tool.validateToolParams(params);
  if (problem) {
    show(dim(`> ${tool.displayName} ${visible(clip(JSON.stringify(params), 120, "head"))}`));
    return failed(`Error: ${call.name} was not run: ${problem}.`);
  }
  // 5. Describe, in one line, what is about to happen.
  show(dim(`> ${tool.displayName} ${visible(clip(tool.getDescription(params).split("\n")[0], 120, "head"))}`));
  // A background task's notice is the lead's (s18): a teammate runs its commands in the foreground.
  if (member() && params.run_in_background === true) return failed("Error: background tasks are the lead's: run the command in the foreground.");
  const controller = new AbortController();
  try {
    // 6. Confirm: the approval mode, and the person when the mode asks for one, one question at a time.
    const verdict = await approveInTurn(tool, params, controller.signal);
    if (!verdict.run) return failed(verdict.why);
    // 7. Execute, with a signal: Ctrl-C cancels this tool, not the agent.
    const result = await cancellable(() => controller.abort(), () => tool.execute(params, controller.signal));
    // 8. llmContent goes to the model...
    const toModel: ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: clip(result.llmContent, MAX_OUTPUT) };
    // 9. ...and returnDisplay to the person (unless they have just seen it, approving it).
    if (result.returnDisplay !== verdict.shown) show(dim(indent(firstLines(result.returnDisplay, 12))));
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
  for (const block of response.content) if (block.type === "text") show(visible(block.text)); // model text: escapes shown, never obeyed
}

/** The model stopped asking for tools. Say so when the reason is not a normal ending. */
function endTurn(response: Message, messages: MessageParam[]): void | Promise<void> {
  // A server tool (web search, code execution) still at work: the turn goes on when it is sent back as it is.
  if (response.stop_reason === "pause_turn") return agentLoop(messages);
  if (response.stop_reason === "refusal") show("[the model declined to continue]");
  const cutOff = { max_tokens: `at ${MAX_TOKENS} tokens: ask for something smaller, or raise MAX_TOKENS`, model_context_window_exceeded: "because the context window is full: start a new session" };
  if (response.stop_reason !== "max_tokens" && response.stop_reason !== "model_context_window_exceeded") return;
  show(`[the reply was cut off ${cutOff[response.stop_reason]}]`);
  // A tool call cut off mid-way cannot run, but it needs an answer, or the next request is refused.
  const calls = response.content.filter((block) => block.type === "tool_use");
  if (calls.length === 0) return;
  const content = `Not run: your reply was cut off (${response.stop_reason}) before this call was complete.`;
  messages.push({ role: "user", content: calls.map((call) => ({ type: "tool_result" as const, tool_use_id: call.id, is_error: true, content })) });
}
// #endregion end-turn

// #region program
// A turn as the program runs it: s18's notices in front of the prompt, the loop; then, while a
// teammate works, the lead waits (no model call; Ctrl-C stops the team, and the wait). When none
// works, their notices (idle, stopped, a message) wake it, in a message of the harness's own.
export async function runTurn(messages: MessageParam[]): Promise<void> {
  addNoticesToPrompt(messages);
  await agentLoop(messages);
  for (let interrupted = false; !interrupted && team.size > 0; ) {
    await cancellable(() => (interrupted = true), async () => {
      // Bounded by the teammates' own limits: replies per turn, each call's and each command's time.
      while (!interrupted && onTeam().some((mate) => mate.state === "working")) await once(teamChanged, "changed", { signal: AbortSignal.timeout(TEAM_LIMITS.recheckMs) }).catch(() => {});
    });
    const wake: MessageParam[] = [{ role: "user", content: "" }];
    if (!interrupted) addNoticesToPrompt(wake); // s18's: the waiting notices, as the harness's words; after Ctrl-C, they wait for the next prompt
    const notices = String(wake[0].content).trim();
    if (!notices) return;
    messages.push({ role: "user", content: [{ type: "text", text: notices }] }); // a block, not a string: the harness's, not the person's prompt
    await agentLoop(messages);
  }
}

/** A new session: no teammates, no background tasks, no notices (the replay and the tests call this first). */
export function prepareReplay(): void {
  stopTeam();
  endBackgroundTasks();
  unreadFrom = new Set();
}

export const main = (args = process.argv.slice(2)) =>
  runAsMain({ stage: "s19", title: "Task Graph and Team", agentLoop: runTurn, prepareReplay, hasKey: Boolean(API_KEY || AUTH_TOKEN), args, options: ["--approval-mode"], settingsProblem: modeProblem, help: [APPROVAL_HELP] });

if (isMain(import.meta.url)) await main();
// #endregion program
