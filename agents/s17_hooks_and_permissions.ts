/**
 * s17_hooks_and_permissions.ts - Hooks and Permissions
 *
 * "The person sets the rules, the harness keeps them": rules decide before anyone is asked, hooks run the person's own commands.
 *
 *   ~/.agent/settings.json (the person's): all of it counts
 *   .agent/settings.json (the project's): deny and ask count; allow and hooks once trusted
 *     "permissions": { "deny": ["read_file(.env)"], "ask": [...], "allow": ["bash(npm test)"] }
 *     "hooks": { "PreToolUse": [{ "matcher": "bash", "command": "..." }], "Stop": [...], ... }
 *
 *   prompt --> UserPromptSubmit hooks: stdout added to the prompt; exit 2: not sent
 *   tool_use --> runTool, s06's nine steps; step 6 is now three:
 *   +------------------------------------------------------------------------+
 *   | 6a a deny rule matches (any part of a command)  --> is_error, any mode |
 *   | 6b PreToolUse hooks, JSON on stdin      exit 2 --> is_error: stderr    |
 *   | 6c an ask rule: the person answers      an allow rule (every part):    |
 *   |    no rule: the approval mode decides   runs without a question        |
 *   | 7 execute   8 PostToolUse hooks: stdout appended to the result         |
 *   +------------------------------------------------------------------------+
 *   the turn ends --> Stop hooks: stdout shown; exit 2: the model works on (at most 3 times)
 *   any other exit, or a time limit (60 s): a warning to the person, and the call goes on
 *
 * New since s06: regions `rules`, `settings` and `hooks`, first after the config; step 6 in
 * three and PostToolUse in `run-tool`; the turn's hooks around the loop in `program`. s06's
 * tools and approval step are imported from agents/s06_tool_registry.ts; lib/runtime/settings.ts
 * reads the settings files and keeps trust (as for s08); hooks run as bash does (processes.ts).
 *
 *   npx tsx agents/s17_hooks_and_permissions.ts       (no key: replays the recorded demo)
 *   npx tsx agents/s17_hooks_and_permissions.ts --approval-mode yolo   (deny rules still hold)
 */
import { existsSync, realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import type { ContentBlock, Message, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { runCommand } from "../lib/machinery/processes.ts";
import { globMatcher } from "../lib/machinery/walk.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { PERSONAL, readJson, rememberTrusted, SETTINGS_FILE, trustedProject } from "../lib/runtime/settings.ts";
import { cancellable, terminal } from "../lib/runtime/terminal.ts";
import {
  APPROVAL_HELP, APPROVAL_MODE, approve, MAX_OUTPUT, modeProblem, registry, safePath, TOOLS, workspace,
  type AgentTool, type Params, type Verdict,
} from "./s06_tool_registry.ts";

export { registry, TOOLS }; // no tool of its own: the model sees s06's

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads the
// SDK at the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace (s06's: the directory the program runs in) is read at each call; so is the system prompt.
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// Nothing in the project chooses it: the settings files hold rules and hooks, not the mode.
// #endregion config

// #region rules
// Permission rules, Claude Code's syntax with this workbook's tool names. A bare name matches
// every call of the tool; in parentheses, what the call must be:
//   bash(npm test)  that command       bash(git status:*)  a command starting with these words
//   read_file(secrets/**), edit_file(src/**), write_file(*.md)  a path, as a glob in the workspace
//   web_fetch(domain:example.com)  a URL on that host
// The lists are asked in order, deny, then ask, then allow; with no rule, the approval mode decides.
export type List = "deny" | "ask" | "allow";

/**
 * A rule as read: its text, where it is (`permissions.deny[0] in .agent/settings.json`), its
 * tool, and what it matches of a call (none: every call). `careful` is for deny and ask: then a
 * path's folders count too, and a program is known by its name alone (/bin/rm is rm).
 */
export type Rule = { text: string; at: string; tool: string; matches?: (subject: string[], careful: boolean) => boolean };

const PATH_TOOLS = new Set(["read_file", "write_file", "edit_file"]);
// Where the file system ignores case (macOS, Windows), SECRETS/key is secrets/key: compare without it.
const fold = (text: string) => (process.platform === "darwin" || process.platform === "win32" ? text.toLowerCase() : text);

/** A rule from its text, or why it cannot be read. */
export function parseRule(text: string): Omit<Rule, "at"> | string {
  const parts = /^([\w-]+)(?:\((.*)\))?$/s.exec(text.trim());
  if (!parts) return "a rule is a tool's name, with what it matches in parentheses if you like: bash(npm test), read_file(secrets/**)";
  const [, tool, inside] = parts;
  const tools = registry.getAllTools().map((known) => known.name);
  if (!tools.includes(tool)) return `this agent has no tool "${tool}" (its tools: ${tools.join(", ")}; names are case-sensitive)`;
  if (inside === undefined || inside.trim() === "*") return { text, tool };
  if (tool === "bash") {
    const prefix = inside.endsWith(":*");
    const commands = plainCommands(prefix ? inside.slice(0, -2) : inside);
    if (commands?.length !== 1) return "a bash rule names one plain command, with :* at its end for every command that starts so: bash(npm test), bash(git status:*)";
    const [words] = commands;
    const fits = (part: string[]) => words.every((word, i) => part[i] === word) && (prefix || part.length === words.length);
    return { text, tool, matches: (part, careful) => fits(part) || (careful && fits([path.basename(part[0]), ...part.slice(1)])) };
  }
  if (PATH_TOOLS.has(tool)) {
    // gitignore's way: a glob with no / is a name at any depth; a leading / ties it to the workspace's top.
    const glob = inside.trim().replace(/^\.\//, "");
    if (glob.replace(/^\//, "") === "" || glob.split("/").includes("..")) return "a path rule is a glob inside the workspace: src/**, *.md, /README.md";
    let test: (relative: string) => boolean;
    try {
      test = globMatcher(fold(glob.replace(/^\//, ""))); // lib's glob: time grows with the path, it never backtracks
    } catch (error) {
      return (error as Error).message;
    }
    // The path, and for deny and ask each folder on its way: denying secrets denies what is in it.
    const candidates = (relative: string) => fold(relative).split("/").map((name, i, all) => (glob.includes("/") ? all.slice(0, i + 1).join("/") : name));
    return { text, tool, matches: ([relative], careful) => candidates(relative).slice(careful ? 0 : -1).some(test) };
  }
  const host = /^domain:([\w.-]+)$/.exec(inside.trim())?.[1]?.toLowerCase();
  if (tool === "web_fetch") return host ? { text, tool, matches: ([url]) => url === host } : "a web_fetch rule names a host: web_fetch(domain:example.com)";
  return `${tool} takes nothing in parentheses: a rule for it is its name alone`;
}

/**
 * The rule that decides a call. deny, then ask: the first rule that matches any part of it
 * (a command hidden in `a && b` or `$(b)` too). allow: only when every part matches an allow
 * rule, and only for a command line read whole. undefined: no rule decides.
 */
export function ruleFor(tool: string, params: Params): { list: List; rule: Rule } | undefined {
  // An edit reads its file first, and its errors tell whether a text is in it: what read_file may not read, edit_file may not edit.
  const of = (list: List) => rules[list].filter((rule) => rule.tool === tool || (list === "deny" && rule.tool === "read_file" && tool === "edit_file"));
  const anyPart = subjectsOf(tool, params, true) ?? [];
  for (const list of ["deny", "ask"] as const) {
    const rule = of(list).find((rule) => !rule.matches || anyPart.some((subject) => rule.matches!(subject, true)));
    if (rule) return { list, rule };
  }
  const whole = of("allow").find((rule) => !rule.matches);
  if (whole) return { list: "allow", rule: whole };
  const everyPart = subjectsOf(tool, params, false);
  if (!everyPart || everyPart.length === 0) return undefined; // in doubt, no allow
  const by = everyPart.map((subject) => of("allow").find((rule) => rule.matches?.(subject, false)));
  return by.every((rule) => rule !== undefined) ? { list: "allow", rule: by[0]! } : undefined;
}

/**
 * What the rules look at in a call, as lists of words: each command of a bash command line;
 * for a file tool, its path as the sandbox resolves it (`./secrets/x`, `a/../secrets/x` and a
 * link into secrets/ are all secrets/x); a URL's host. undefined: it cannot be read whole.
 */
function subjectsOf(tool: string, params: Params, careful: boolean): string[][] | undefined {
  try {
    if (tool === "bash") return careful ? [...(plainCommands(String(params.command)) ?? []), ...roughCommands(String(params.command))] : plainCommands(String(params.command));
    if (PATH_TOOLS.has(tool)) return [[path.relative(realpathSync(workspace()), safePath(String(params.path))).split(path.sep).join("/")]];
    if (tool === "web_fetch") return [[new URL(String(params.url)).hostname.toLowerCase().replace(/\.$/, "")]];
  } catch {
    return undefined; // a path the sandbox refuses, a URL that is none: the tool refuses it anyway
  }
  return [[]];
}

// A plain command line, piece by piece: blanks; an operator between commands (&& || ; | & and
// line breaks); or part of a word (plain characters, '…', or "…" without $ ` \ in it).
const PLAIN = /([ \t]+)|(&&|\|\||[;|&\n])|([\w.\/:=@%+,-]+|'[^']*'|"[^"$`\\]*")/y;

/**
 * The commands of a plain command line, each as its words (quotes taken off); undefined when
 * it holds anything else: $( ), backticks, $VAR, < >, ( ), a glob, an escape, an open quote.
 * Only such a line can be allowed: what is not read whole is not known.
 */
export function plainCommands(command: string): string[][] | undefined {
  const commands: string[][] = [[]];
  let word: string | undefined;
  const endWord = () => void (word !== undefined && commands.at(-1)!.push(word), (word = undefined));
  for (let at = 0; at < command.length; at = PLAIN.lastIndex) {
    PLAIN.lastIndex = at;
    const [, blank, operator, piece] = PLAIN.exec(command) ?? [];
    if (blank) endWord();
    else if (operator) endWord(), commands.push([]);
    else if (piece) word = (word ?? "") + piece.replace(/^(['"])([^]*)\1$/, "$2");
    else return undefined;
  }
  endWord();
  return commands.filter((words) => words.length > 0);
}

const KEYWORDS = new Set(["!", "if", "then", "elif", "else", "while", "until", "do", "time", "exec", "command"]);

/**
 * For deny and ask: the pieces between any of ; & | ( ) ` < > { } and line breaks, in quotes
 * too, with $VAR read as a blank (rm${IFS}x), quotes and escapes dropped and a keyword or
 * VAR=value in front skipped. More than bash would run, never less: a deny rule matches
 * `echo $(rm x)`, `FOO=1 rm x`, `"rm" x`.
 */
export function roughCommands(command: string): string[][] {
  const commands = command.replace(/\$\{?\w*\}?/g, " ").split(/[;&|\n()`<>{}]/).map((piece) => piece.replace(/\\(.)/g, "$1").replace(/['"]/g, "").split(/\s+/).filter(Boolean));
  for (const words of commands) while (words.length > 0 && (KEYWORDS.has(words[0]) || /^[A-Za-z_]\w*=/.test(words[0]))) words.shift();
  return commands.filter((words) => words.length > 0);
}
// #endregion rules

// #region settings
// The person's file counts whole. The project's deny and ask rules count as they are: they only
// make the agent more careful. Its allow rules would wave its own calls through, and its hooks
// run its own commands: those count once the person trusts them. Both files are read once, at
// the start: a settings file edited during the session (by the model, say) changes nothing yet.
export const HOOK_EVENTS = ["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop"] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];
/** A hook as written (`entry`) and where; `matcher`: tool names with | between (none, or *: every tool); `timeout` in seconds. */
export type Hook = { matcher?: string; command: string; timeout?: number; at: string; entry: unknown };
type Found = { rules: Record<List, Rule[]>; hooks: Record<HookEvent, Hook[]> };

const none = (): Found => ({ rules: { deny: [], ask: [], allow: [] }, hooks: { PreToolUse: [], PostToolUse: [], UserPromptSubmit: [], Stop: [] } });
/** What this session follows: nothing until loadSettings runs. */
let { rules, hooks } = none();
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const placeOf = (item: Rule | Hook) => item.at.slice(0, item.at.indexOf(" in ")); // `permissions.allow[0]`

/** One file's rules and hooks; what cannot be read is named with its file and place, and left out. */
function readSettingsOf(data: unknown, file: string, problems: string[]): Found {
  const found = none();
  const skip = (at: string, why: string) => problems.push(`${file}: ${at} ${why}; it is ignored`);
  if (data === undefined) return found;
  if (!isObject(data)) return skip("the file", "is not a JSON object"), found;
  if (data.permissions !== undefined && !isObject(data.permissions)) skip("permissions", "must be an object of allow, ask and deny lists");
  for (const [list, texts] of Object.entries(isObject(data.permissions) ? data.permissions : {})) {
    if (!["deny", "ask", "allow"].includes(list)) skip(`permissions.${list}`, "is not a list of rules (allow, ask, deny; the approval mode is chosen where the agent starts)");
    else if (!Array.isArray(texts)) skip(`permissions.${list}`, "must be a list of rules");
    else texts.forEach((text: unknown, i) => {
      const rule = typeof text === "string" ? parseRule(text) : "a rule is a string";
      if (typeof rule === "string") skip(`permissions.${list}[${i}] ${JSON.stringify(text)}`, `cannot be read: ${rule}`);
      else found.rules[list as List].push({ ...rule, at: `permissions.${list}[${i}] in ${file}` });
    });
  }
  const tools = registry.getAllTools().map((tool) => tool.name);
  if (data.hooks !== undefined && !isObject(data.hooks)) skip("hooks", "must be an object of events");
  for (const [event, entries] of Object.entries(isObject(data.hooks) ? data.hooks : {})) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) skip(`hooks.${event}`, `is not an event (${HOOK_EVENTS.join(", ")})`);
    else if (!Array.isArray(entries)) skip(`hooks.${event}`, "must be a list of hooks");
    else entries.forEach((entry: unknown, i) => {
      const { matcher, command, timeout, ...more } = isObject(entry) ? entry : { command: undefined };
      const why =
        typeof command !== "string" || command.trim() === "" ? 'has no "command"'
        : matcher !== undefined && typeof matcher !== "string" ? 'has a "matcher" that is not tool names, with | between them'
        : timeout !== undefined && !(typeof timeout === "number" && timeout > 0 && timeout <= 600) ? 'has a "timeout" that is not seconds, more than 0 and at most 600'
        : Object.keys(more).length > 0 ? `has "${Object.keys(more)[0]}", which is not a setting of a hook (matcher, command, timeout)` : undefined;
      if (why) return void skip(`hooks.${event}[${i}]`, why);
      const unknown = typeof matcher === "string" ? matcher.split("|").find((name) => name !== "*" && !tools.includes(name)) : undefined;
      if (unknown) problems.push(`${file}: hooks.${event}[${i}]: its matcher names no tool "${unknown}" (this agent's: ${tools.join(", ")})`);
      found.hooks[event as HookEvent].push({ ...(entry as Hook), at: `hooks.${event}[${i}] in ${file}`, entry });
    });
  }
  return found;
}

/** Read both files, ask the person about what the project brings that is new, keep what this session follows. Returns the problems, printed too. */
export async function loadSettings(): Promise<string[]> {
  const problems: string[] = [];
  const read = (file: string, name: string) => {
    const { data, problem } = readJson(file, name); // a regular file of at most 256 KB, or refused (lib/runtime/settings.ts)
    if (problem) problems.push(`${problem}; nothing of it is used`);
    return readSettingsOf(data, name, problems);
  };
  const person = read(PERSONAL.file(), PERSONAL.name);
  const root = workspace();
  // Working in the home folder, the project's file is the person's own: read once, as theirs.
  const inHome = existsSync(os.homedir()) && realpathSync(os.homedir()) === realpathSync(root);
  const project = inHome ? none() : read(path.join(root, SETTINGS_FILE), SETTINGS_FILE);
  const brings = project.rules.allow.length > 0 || HOOK_EVENTS.some((event) => project.hooks[event].length > 0);
  const trusted = brings ? await trustProject(root, project, problems) : project; // only allow rules and hooks need trust
  rules = { deny: [...person.rules.deny, ...project.rules.deny], ask: [...person.rules.ask, ...project.rules.ask], allow: [...person.rules.allow, ...trusted.rules.allow] };
  hooks = Object.fromEntries(HOOK_EVENTS.map((event) => [event, [...person.hooks[event], ...trusted.hooks[event]]])) as Found["hooks"];
  for (const problem of problems.slice(0, 20)) console.log(`[settings] ${visible(clip(problem, 1000, "head"))}`); // 256 KB hold 40,000 broken rules: 20 tell what is wrong
  if (problems.length > 20) console.log(`[settings] ... and ${problems.length - 20} more problems like these (all of them: in the settings files as written)`);
  return problems;
}

/**
 * The project's allow rules and hooks the person trusts. What they trusted before, as it is
 * now, at once (kept in their own file, as s08 keeps a project's servers); what is new after
 * one question: y (this session), a (and remember it), n. No one at the terminal: not used.
 */
async function trustProject(root: string, project: Found, problems: string[]): Promise<Found> {
  const before = trustedProject(root).entries as { permissions?: { allow?: unknown }; hooks?: Record<string, unknown> };
  const known = (entry: unknown, list: unknown) => Array.isArray(list) && list.some((old) => isDeepStrictEqual(old, entry));
  const fresh = new Set<Rule | Hook>([
    ...project.rules.allow.filter((rule) => !known(rule.text, before.permissions?.allow)),
    ...HOOK_EVENTS.flatMap((event) => project.hooks[event].filter((hook) => !known(hook.entry, before.hooks?.[event]))),
  ]);
  if (fresh.size === 0) return project;
  const answer = terminal().hasPerson ? await askToTrust([...fresh].map((item) => `${placeOf(item)}: ${"entry" in item ? JSON.stringify(item.entry) : item.text}`)) : undefined;
  try {
    const hooksAsWritten = Object.fromEntries(HOOK_EVENTS.map((event) => [event, project.hooks[event].map((hook) => hook.entry)]));
    if (answer === "a") rememberTrusted(root, { permissions: { allow: project.rules.allow.map((rule) => rule.text) }, hooks: hooksAsWritten });
  } catch (error) {
    problems.push(`not remembered: ${(error as Error).message}`);
  }
  if (answer === "y" || answer === "a") return project;
  const why = answer ? "the person said no" : `no one is at the terminal to trust them: start the agent at a terminal once, or list them under trustedProjects in ${PERSONAL.name}`;
  problems.push(`not used: ${[...fresh].map(placeOf).join(", ")} (${why})`);
  const old = <T extends Rule | Hook>(items: T[]) => items.filter((item) => !fresh.has(item)); // deny and ask rules stay
  return { rules: { ...project.rules, allow: old(project.rules.allow) }, hooks: Object.fromEntries(HOOK_EVENTS.map((event) => [event, old(project.hooks[event])])) as Found["hooks"] };
}

/** One question for everything new: "y", "a" or "n" (any other answer is a no). */
async function askToTrust(lines: string[]): Promise<string> {
  console.log(`\nThis project's settings let calls run without asking, or run commands of their own:`);
  console.log(`${indent(visible(lines.join("\n")))}\n  y: use them   a: yes, and remember it in ${PERSONAL.name}   n: no (its deny and ask rules count anyway)`);
  while (true) {
    const answer = (await terminal().ask("trust? ", { fresh: true }))?.trim().toLowerCase();
    if (answer === undefined || !/^(y|yes|a|always|)$/.test(answer)) return "n";
    if (answer) return answer[0];
  }
}
// #endregion settings

// #region hooks
const HOOK_TIMEOUT = 60; // seconds, unless the hook says `timeout`; then it ends with all it started
const MAX_HOOK_OUTPUT = 10_000; // characters kept of a hook's stdout, and of its stderr (both ends)
const MAX_STOP_RETURNS = 3; // times one turn's Stop hooks may send the model back to work

export type Hooked = { blocked?: string; added: string }; // the stderr of one that exited 2; the stdout of those that exited 0

/**
 * Run the hooks of `event` that match the call's tool (every one, for a prompt and Stop), one
 * after another, each with the event as JSON on stdin, in the workspace. Exit 0: its stdout
 * is kept. Exit 2: it blocks, and the rest do not run. Anything else (another code, its time
 * limit, no bash) is a warning to the person, and the call goes on. Ctrl-C (the signal) cancels.
 */
export async function runHooks(event: HookEvent, input: Record<string, unknown>, signal?: AbortSignal): Promise<Hooked> {
  const added: string[] = [];
  const tool = input.tool_name as string | undefined;
  const matches = (hook: Hook) => tool === undefined || !hook.matcher || hook.matcher === "*" || hook.matcher.split("|").includes(tool);
  for (const hook of hooks[event].filter(matches)) {
    const [stdout, stderr] = [new HeadAndTail(MAX_HOOK_OUTPUT), new HeadAndTail(MAX_HOOK_OUTPUT)];
    const stdin = JSON.stringify({ hook_event_name: event, cwd: workspace(), ...input });
    let ended: number | null | string;
    try {
      ended = await runCommand(hook.command, { cwd: workspace(), timeoutMs: (hook.timeout ?? HOOK_TIMEOUT) * 1000, output: stdout, errors: stderr, input: stdin, signal });
    } catch (error) {
      if (signal?.aborted) throw error;
      ended = (error as Error).message.replace(/(were ended)[^]*$/, "$1").replace("the command and", "the hook and"); // its time limit, no bash
    }
    if (ended === 2) return { blocked: stderr.text().trim() || "(the hook gave no reason on stderr)", added: added.join("\n") };
    if (ended === 0 && stdout.text().trim()) added.push(stdout.text().trim());
    if (ended === 0) continue;
    const said = clip(stderr.text().trim().split("\n")[0], 200, "head");
    console.log(`[hook warning] ${event} hook (${hook.at}) ${typeof ended === "string" ? ended : `exit code ${ended ?? "(killed)"}`}${said ? `: ${visible(said)}` : ""}; it goes on`);
  }
  return { added: added.join("\n") };
}

/** A turn's hooks (a prompt's, Stop's); Ctrl-C cancels them, and then none has its say. */
const turnHooks = (event: HookEvent, input: Record<string, unknown>, controller = new AbortController()): Promise<Hooked> =>
  cancellable(() => controller.abort(), () => runHooks(event, input, controller.signal)).catch(() => ({ added: "" }));

/**
 * The loop with the turn's hooks around it; the loop is unchanged. UserPromptSubmit runs before
 * the model sees the prompt: its stdout is added to the prompt, exit 2 takes the prompt back
 * unsent. Stop runs when the loop returns: its stdout is shown to the person, and exit 2 sends
 * its stderr to the model, which works on (at most MAX_STOP_RETURNS times in a turn).
 */
export function withTurnHooks(loop: (messages: MessageParam[]) => Promise<void>): (messages: MessageParam[]) => Promise<void> {
  return async (messages) => {
    const prompt = messages.at(-1);
    if (prompt?.role === "user" && typeof prompt.content === "string") {
      const hooked = await turnHooks("UserPromptSubmit", { prompt: prompt.content });
      if (hooked.blocked !== undefined) {
        messages.pop(); // never sent: the history is as it was before the prompt
        return void console.log(`[not sent: a UserPromptSubmit hook blocked the prompt: ${visible(clip(hooked.blocked, 2000, "head"))}]`);
      }
      if (hooked.added) console.log(dim(indent(`[added to your prompt by a hook]\n${firstLines(hooked.added, 5)}`)));
      if (hooked.added) prompt.content = `${prompt.content}\n\n<user-prompt-submit-hook>\n${hooked.added}\n</user-prompt-submit-hook>`;
    }
    for (let returns = 0; ; returns++) {
      await loop(messages);
      const stop = await turnHooks("Stop", { stop_hook_active: returns > 0 });
      if (stop.added) console.log(dim(indent(firstLines(stop.added, 12))));
      // Only after the model's reply: a turn cut off mid-call ends with results, and the model is not asked again.
      if (stop.blocked === undefined || messages.at(-1)?.role !== "assistant") return;
      const reason = visible(clip(stop.blocked, 200, "head"));
      if (returns === MAX_STOP_RETURNS) return void console.log(`[a Stop hook still objects after ${MAX_STOP_RETURNS} more rounds; the turn ends: ${reason}]`);
      console.log(dim(`[a Stop hook sends the model back to work: ${reason}]`));
      messages.push({ role: "user", content: `<stop-hook>\nA Stop hook did not let the turn end yet:\n${stop.blocked}\n</stop-hook>` });
    }
  };
}
// #endregion hooks

// #region run-tool
/**
 * The calls of one reply. Calls that only read, side by side, run at the same time: reading
 * cannot conflict. Edits and commands run one at a time, in order, since each may depend on
 * the one before. The results go back in call order, each with its call's id.
 */
async function runTools(content: ContentBlock[]): Promise<ToolResultBlockParam[]> {
  const calls = content.filter((block): block is ToolUseBlock => block.type === "tool_use");
  const results: ToolResultBlockParam[] = [];
  for (const batch of batches(calls)) results.push(...(await Promise.all(batch.map(runTool))));
  return results;
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
  const hooksFor = (event: HookEvent, more: Record<string, unknown> = {}) =>
    cancellable(() => controller.abort(), () => runHooks(event, { tool_name: call.name, tool_input: params, ...more }, controller.signal));
  try {
    // 6a. A deny rule holds in every mode, yolo too (s17).
    const decided = ruleFor(call.name, params);
    if (decided?.list === "deny") return failed(`Not run: the rule deny ${decided.rule.text} (${decided.rule.at}) forbids it.`);
    // 6b. The PreToolUse hooks: exit 2 blocks, and the model reads the hook's stderr (s17).
    const pre = await hooksFor("PreToolUse");
    if (pre.blocked !== undefined) return failed(`Not run: a PreToolUse hook blocked it: ${pre.blocked}`);
    // 6c. Confirm: an ask or allow rule, else the approval mode, and the person when one asks.
    const verdict = await confirm(tool, params, decided, controller.signal);
    if (!verdict.run) return failed(verdict.why);
    // 7. Execute, with a signal: Ctrl-C cancels this tool, not the agent.
    const result = await cancellable(() => controller.abort(), () => tool.execute(params, controller.signal));
    // 8. llmContent goes to the model, with what the PostToolUse hooks printed after it (s17)...
    const post = await hooksFor("PostToolUse", { tool_response: clip(result.llmContent, MAX_OUTPUT) });
    const said = [post.added, post.blocked ?? ""].filter(Boolean).join("\n"); // exit 2 blocks nothing now: its stderr is said too
    const note = said ? `\n\n<post-tool-use-hook>\n${said}\n</post-tool-use-hook>` : "";
    const toModel: ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: clip(result.llmContent + note, MAX_OUTPUT) };
    // 9. ...and returnDisplay to the person (unless they have just seen it, approving it).
    if (result.returnDisplay !== verdict.shown) console.log(dim(indent(firstLines(result.returnDisplay, 12))));
    if (said) console.log(dim(indent(`[for the model, from a PostToolUse hook]\n${firstLines(said, 5)}`)));
    return toModel;
  } catch (error) {
    // Errors go back as is_error, so the model knows the call failed and why.
    if (controller.signal.aborted) return failed("Error: cancelled by the user (Ctrl-C); the tool was stopped.");
    return failed(`Error: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Step 6c. An ask rule makes the person answer where the mode would not (every mode but yolo,
 * as s06's own files do), and "a" never covers it. An allow rule spares the question where the
 * mode would ask, even with no one at the terminal; it never lifts plan mode's refusal, nor
 * the question before a write to the agent's own files.
 */
async function confirm(tool: AgentTool, params: Params, decided: ReturnType<typeof ruleFor>, signal: AbortSignal): Promise<Verdict> {
  if (decided?.list === "ask") {
    // s06's approval, with a question every time: as if the call changed the agent's own files.
    const shouldConfirmExecute = async (given: Params, stop: AbortSignal) => {
      const shown = (await tool.shouldConfirmExecute(given, stop)) || { title: `${tool.displayName} ${tool.getDescription(given)}?`, details: tool.getDescription(given) };
      return { ...shown, title: `${shown.title} (the rule ask ${decided.rule.text}, ${decided.rule.at})` };
    };
    return approve({ ...tool, changesTheAgent: () => true, shouldConfirmExecute }, params, signal);
  }
  const mayRun = tool.kind === "read" || APPROVAL_MODE !== "plan";
  if (decided?.list === "allow" && mayRun && !tool.changesTheAgent?.(params)) {
    console.log(dim(`  [allowed by ${visible(decided.rule.text)} (${decided.rule.at})]`));
    return { run: true };
  }
  return approve(tool, params, signal);
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
  messages.push({
    role: "user",
    content: calls.map((call) => ({
      type: "tool_result" as const,
      tool_use_id: call.id,
      is_error: true,
      content: `Not run: your reply was cut off (${response.stop_reason}) before this call was complete.`,
    })),
  });
}
// #endregion end-turn

// #region program
/** A turn as the program runs it: the loop with the turn's hooks (a replay runs turns so too). */
export const runTurn = withTurnHooks(agentLoop);

/** Before a session or a replay: the settings are read, and the person asked about what is new. */
export const prepareReplay = async (): Promise<void> => void (await loadSettings());

export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s17",
    title: "Hooks and Permissions",
    agentLoop: runTurn,
    prepareReplay,
    prepareSession: prepareReplay,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
    help: [APPROVAL_HELP, `  "permissions" and "hooks": in ${PERSONAL.name} (yours) and ${SETTINGS_FILE} (the project's: its deny and ask rules count,\n  its allow rules and hooks once you trust them). A deny rule holds in every mode, yolo too.`],
  });

if (isMain(import.meta.url)) await main();
// #endregion program
