/**
 * s12_skills_and_memory.ts - Skills and Memory
 *
 * "Load knowledge when it is needed, remember what matters": a short list in the prompt, the rest on demand.
 *
 *   the first request of a session: systemPrompt() reads the workspace, once
 *   +-------------------------------------------------------------------+
 *   | skills/<name>/SKILL.md      --- name + description --->  the list |
 *   |   ---                       (YAML frontmatter; a bad one is       |
 *   |   name: changelog            skipped, with a warning naming       |
 *   |   description: ...           the file and the problem)            |
 *   |   ---                                                             |
 *   | ~/.agent/MEMORY.md, .agent/MEMORY.md  --- the facts --->  memory  |
 *   +-------------------------------------------------------------------+
 *      |  the same system prompt for the whole session
 *      v
 *   load_skill("changelog")  --> the SKILL.md body, in the tool result
 *   save_memory(fact)        --> "- fact" under "## Saved facts", written atomically
 *                                (asks first, like an edit; the same fact twice: nothing
 *                                added; over 4,000 characters: refused, nothing lost)
 *      |
 *      v
 *   the next session: the fact is in its system prompt
 *
 * New since s06: regions `skills`, `memory` and `knowledge`, first after the config; the
 * system prompt in `config` ends with what `knowledge` read. s06's registry, tools and
 * approval step are imported from agents/s06_tool_registry.ts. Machinery (lib/machinery):
 * safe-read.ts reads a skill, atomic-write.ts saves the memory (under the home folder too).
 *
 *   npx tsx agents/s12_skills_and_memory.ts       (no key: replays the recorded demo)
 *   npm run replay -- s12 next-session            (the demo's next run, with its memory)
 */
import { existsSync, readdirSync, realpathSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import type { ContentBlock, Message, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { writeAtomically } from "../lib/machinery/atomic-write.ts";
import { diffOf, dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip } from "../lib/machinery/head-and-tail.ts";
import { readText } from "../lib/machinery/safe-read.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import {
  APPROVAL_HELP, approve, CORE_TOOLS, defineTool, followLinks, isInside, MAX_OUTPUT,
  modeProblem, safePath, ToolRegistry, workspace, type FileChange, type Params,
} from "./s06_tool_registry.ts";

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
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make. ` +
  `Before a task that one of the skills below covers, load it with load_skill and follow it. When the person tells you something worth knowing in later sessions ` +
  `(a command, a convention, a preference), keep it with save_memory, one short fact per call.` +
  knowledge();
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// #endregion config

// #region skills
// yaml loads when the first skill is read, not at start: a learner waits for every start.
const needed = createRequire(import.meta.url);
// A skill is knowledge the agent may need, kept out of the context until it does: a folder
// skills/<name>/ with a SKILL.md that starts with YAML frontmatter (name, description) and
// goes on with instructions. The system prompt lists each name and description (a line
// each); load_skill returns the instructions when the model decides it needs them.
const SKILLS_FOLDER = "skills";
// The Agent Skills format's rules for a name: what a folder and a tool argument can both be.
const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const MAX_NAME = 64;
const MAX_DESCRIPTION = 1024; // each one is in every request
const MAX_INSTRUCTIONS = 20_000; // about 5,000 tokens: a skill is loaded whole, into one result
// A name, a description and a few keys: yaml checks each key against all the ones before it,
// so 100,000 keys would take it a minute. Past this the frontmatter is not parsed at all.
const MAX_FRONTMATTER = 4_000;
// The system prompt's list of skills (every request carries it): past this, a note says how many more there are.
const SKILLS_BUDGET = 12_000;

/** `file` is where it is, as the model and the person read it: "skills/changelog/SKILL.md". */
type Skill = { name: string; description: string; file: string; instructions: string };

/**
 * The skills in the workspace now, in name order, and a sentence for each SKILL.md that was
 * skipped. Reading never throws: one bad skill must not hide the others, nor stop the agent.
 */
function readSkills(): { skills: Skill[]; skipped: string[] } {
  const skills: Skill[] = [];
  const skipped: string[] = [];
  let folders: string[] = [];
  try {
    const folder = safePath(SKILLS_FOLDER); // a skills folder that is a link out of the workspace is refused
    if (existsSync(folder) && !statSync(folder).isDirectory()) throw new Error("it is not a folder");
    // Each folder is a skill (a link to one too); loose files and hidden folders are not.
    if (existsSync(folder)) folders = readdirSync(folder, { withFileTypes: true }).filter((entry) => (entry.isDirectory() || entry.isSymbolicLink()) && !entry.name.startsWith(".")).map((entry) => entry.name).sort();
  } catch (error) {
    skipped.push(`${SKILLS_FOLDER}/: ${(error as Error).message}; no skill was read`);
  }
  for (const folder of folders) {
    const file = `${SKILLS_FOLDER}/${folder}/SKILL.md`;
    try {
      skills.push(parseSkill(folder, file));
    } catch (error) {
      skipped.push(`${file}: ${(error as Error).message}`);
    }
  }
  return { skills, skipped };
}

/** One skill from its SKILL.md, or an error saying what is wrong with the file. */
function parseSkill(folder: string, file: string): Skill {
  const real = safePath(file); // the sandbox's rules: a SKILL.md that links out of the workspace is refused
  if (!existsSync(real)) throw new Error("there is no SKILL.md in the folder");
  const text = readText(real, file).replace(/^\uFEFF/, "");
  if (!/^---[ \t]*\r?\n/.test(text)) throw new Error('it has no frontmatter: the file must start with a line "---", then "name:" and "description:", then "---"');
  // The frontmatter ends at the first line that is "---"; the instructions are the rest.
  const parts = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)([\s\S]*)$/.exec(text);
  if (!parts) throw new Error('its frontmatter is not closed: no line "---" after it');
  if ((parts[1] ?? "").length > MAX_FRONTMATTER) throw new Error(`its frontmatter is ${parts[1].length} characters; at most ${MAX_FRONTMATTER}, for a name, a description and a few keys`);
  let meta: unknown;
  try {
    meta = (needed("yaml") as typeof import("yaml")).parse(parts[1] ?? "");
  } catch (error) {
    const where = error instanceof (needed("yaml") as typeof import("yaml")).YAMLParseError && error.linePos ? ` (line ${error.linePos[0].line + 1} of the file)` : "";
    throw new Error(`its frontmatter is not valid YAML${where}: ${(error as Error).message.split(" at line")[0]}`);
  }
  if (meta === null || typeof meta !== "object" || Array.isArray(meta)) throw new Error('its frontmatter is not a set of "key: value" lines');
  const { name, description } = meta as Record<string, unknown>;
  if (typeof name !== "string" || name === "") throw new Error('its "name" is missing, or is not text');
  if (typeof description !== "string" || description.trim() === "") throw new Error('its "description" is missing, or is not text');
  if (!SKILL_NAME.test(name) || name.length > MAX_NAME) throw new Error(`its name "${name}" is not ${MAX_NAME} characters at most of a-z, 0-9 and single hyphens`);
  // The folder is how a skill is found, so the name must be the folder's: two files cannot
  // claim one name, and load_skill never builds a path from what the model sent.
  if (name !== folder) throw new Error(`its name "${name}" is not its folder's name "${folder}"; they must be the same`);
  if (description.length > MAX_DESCRIPTION) throw new Error(`its description is ${description.length} characters; at most ${MAX_DESCRIPTION}, since every request carries it`);
  const instructions = parts[2].trim();
  if (instructions === "") throw new Error("it has no instructions after its frontmatter");
  if (instructions.length > MAX_INSTRUCTIONS) {
    throw new Error(`its instructions are ${instructions.length} characters, over the ${MAX_INSTRUCTIONS} a skill loads at once; keep SKILL.md short and put the details in other files of its folder, which it names`);
  }
  return { name, description: description.replace(/\s+/g, " ").trim(), file, instructions };
}

const loadSkillTool = defineTool({
  name: "load_skill",
  displayName: "LoadSkill",
  // It only reads, so it never asks, plan mode allows it, and several run side by side.
  kind: "read",
  description: "Load a skill's instructions by its name, from the list of skills in your system prompt. Follow them for the task; paths in them are relative to the skill's folder.",
  parameterSchema: { type: "object", properties: { name: { type: "string", description: 'The skill\'s name, as listed: "changelog".' } }, required: ["name"], additionalProperties: false },
  getDescription: (params) => String(params.name),
  async execute(params) {
    // Read now, not from the session's list: the instructions on disk are the ones to follow.
    const { skills, skipped } = readSkills();
    const skill = skills.find((candidate) => candidate.name === params.name);
    if (!skill) {
      const there = skills.length > 0 ? `The skills are: ${skills.map((s) => s.name).join(", ")}.` : `There are no skills in ${SKILLS_FOLDER}/.`;
      const broken = skipped.length > 0 ? ` Skipped, as not valid: ${skipped.join("; ")}.` : "";
      throw new Error(`there is no skill named ${JSON.stringify(params.name)}. ${there}${broken}`);
    }
    return {
      llmContent: `<skill name="${skill.name}" folder="${path.dirname(skill.file)}/">\n${skill.instructions}\n</skill>`,
      returnDisplay: `${skill.file}: ${skill.instructions.split("\n").length} lines of instructions loaded`,
    };
  },
});
// #endregion skills

// #region memory
// Memory is a Markdown file of facts, one bullet each, under one heading: the workspace's
// .agent/MEMORY.md, or the same path in the person's home for what holds in every project.
// The person can read and edit it; the agent reads it at the start of each session (region
// `knowledge`) and adds to it with save_memory.
const MEMORY_FILE = ".agent/MEMORY.md";
const GLOBAL_MEMORY = `~/${MEMORY_FILE}`;
const MEMORY_HEADING = "## Saved facts";
const MEMORY_LIMIT = 4_000; // characters of each file: the system prompt carries it whole
const MAX_FACT = 500;
type Scope = "workspace" | "global";

/** Where a scope's memory is: the file, the name the person and the model read, the folder it must stay in. */
function memoryPlace(scope: Scope): { file: string; given: string; root: string } {
  if (scope === "workspace") return { file: safePath(MEMORY_FILE), given: MEMORY_FILE, root: realpathSync(workspace()) };
  // The person's own file at a fixed place, never a path the model chose; a link is followed.
  const home = realpathSync(os.homedir());
  return { file: followLinks(path.join(home, MEMORY_FILE), GLOBAL_MEMORY), given: GLOBAL_MEMORY, root: home };
}

const readMemory = (place: { file: string; given: string }) => (existsSync(place.file) ? readText(place.file, place.given) : "");

/** One bullet's text: one line, without the marks that would make it a heading or a list of its own. */
const asFact = (text: string) => text.replace(/\s+/g, " ").trim().replace(/^(([-*+>#]+|\d+[.)])( |$))+/, "").trim();

/** Two facts are the same when they differ only in case, spacing or a full stop at the end. */
const factKey = (fact: string) => asFact(fact).toLowerCase().replace(/[.!]+$/, "");

/** The change to a memory file; `known` is the bullet already there that says the same (then nothing changes). */
type MemoryChange = FileChange & { before: string; root: string; known?: string };

/** The memory file with the fact added as a bullet at the end of MEMORY_HEADING's section (made if missing). */
function proposeMemory(params: Params): MemoryChange {
  const fact = asFact(String(params.fact));
  if (fact === "") throw new Error("the fact is empty: say in one sentence what to remember");
  if (fact.length > MAX_FACT) throw new Error(`the fact is ${fact.length} characters; a fact is one short sentence (at most ${MAX_FACT})`);
  const place = memoryPlace((params.scope as Scope | undefined) ?? "workspace");
  const before = readMemory(place);
  const lines = before === "" ? [] : before.replace(/\r?\n$/, "").split(/\r?\n/);
  const known = lines.map((line) => /^\s*[-*+]\s+(.*)$/.exec(line)?.[1]).find((bullet) => bullet !== undefined && factKey(bullet) === factKey(fact));
  if (known !== undefined) return { ...place, before, after: before, known };
  let heading = lines.findIndex((line) => line.trim() === MEMORY_HEADING);
  if (heading === -1) {
    if (lines.length === 0) lines.push("# Memory", "", "Facts the agent keeps with save_memory, read at the start of every session. Edit freely.");
    heading = lines.push("", MEMORY_HEADING) - 1;
  }
  // The section ends at the next heading; the fact goes after its last line that is not blank.
  let end = lines.findIndex((line, i) => i > heading && /^#{1,2} /.test(line));
  if (end === -1) end = lines.length;
  while (end - 1 > heading && lines[end - 1].trim() === "") end -= 1;
  lines.splice(end, 0, ...(end === heading + 1 ? ["", `- ${fact}`] : [`- ${fact}`]));
  const eol = before.includes("\r\n") ? "\r\n" : "\n";
  const after = `${lines.join(eol)}${eol}`;
  if (after.length <= MEMORY_LIMIT) return { ...place, before, after };
  throw new Error(
    `memory is full: with this fact ${place.given} would be ${after.length} characters, over the ${MEMORY_LIMIT} that keep the system prompt small. ` +
      `Nothing was saved. Tell the person, and ask which facts to remove (they can edit ${place.given}); meanwhile the fact stays in this conversation only`,
  );
}

const saveMemoryTool = defineTool({
  name: "save_memory",
  displayName: "SaveMemory",
  // It writes a file that every later session reads as part of its system prompt: the person
  // sees the change and agrees, as for any edit (and plan mode refuses it).
  kind: "edit",
  description:
    `Keep one short fact for later sessions: it is added as a bullet to ${MEMORY_FILE} in the workspace, which is read into your system prompt at the start of each session. ` +
    `Use scope "global" (${GLOBAL_MEMORY}, read in every workspace) only when the person asks for it. A fact already kept is not added twice; memory holds at most ${MEMORY_LIMIT} characters per file.`,
  parameterSchema: {
    type: "object",
    properties: {
      fact: { type: "string", description: "One self-contained sentence: what to remember, and why if it helps." },
      scope: { type: "string", enum: ["workspace", "global"], description: 'Where to keep it: "workspace" (default) or "global" (the person\'s home, every project).' },
    },
    required: ["fact"],
    additionalProperties: false,
  },
  getDescription: (params) => `${asFact(String(params.fact))}${params.scope === "global" ? ` (into ${GLOBAL_MEMORY})` : ""}`,
  // The global file is read into every session in every project: it asks even in auto-edit.
  changesTheAgent: (params) => params.scope === "global",
  async shouldConfirmExecute(params) {
    const change = proposeMemory(params);
    return change.known === undefined && { title: `Save to memory (${change.given})?`, details: diffOf(change.given, change.before, change.after) };
  },
  async execute(params) {
    // Worked out again from the file as it is now: a save just before this one is kept.
    const change = proposeMemory(params);
    const already = `Already in memory (${change.given}): "- ${change.known}". Nothing was added.`;
    if (change.known !== undefined) return { llmContent: already, returnDisplay: already };
    try {
      writeAtomically(change.file, change.after, change.given, { root: change.root, isInside }, { createFolders: true });
    } catch (error) {
      throw new Error(`the fact was not saved: ${(error as Error).message}`);
    }
    const saved = `Saved to ${change.given}: "- ${asFact(String(params.fact))}". It is in your system prompt from the next session on (in this one, you know it already).`;
    return { llmContent: saved, returnDisplay: diffOf(change.given, change.before, change.after) };
  },
});
// #endregion memory

// #region knowledge
// What the session starts knowing: the skills' list and the memory, read at the first request
// of a session and kept for all of it. Read when the stage loads, it would read the folder the
// program was started in before a replay or a test has made its workspace; read at every
// request, the system prompt would change in the middle of a conversation, which breaks the
// prompt cache and moves the ground under the model (a fact saved now is in the
// conversation already). A session is one workspace: the program never changes folder, while
// each test and each replay has its own, so a new folder means a new session.
let session: { workspace: string; text: string } | undefined;

function knowledge(): string {
  if (session?.workspace !== workspace()) session = { workspace: workspace(), text: readKnowledge() };
  return session.text;
}

function readKnowledge(): string {
  const { skills, skipped } = readSkills();
  for (const problem of skipped) console.log(dim(`[skills] skipped ${problem}`));
  const list = skillList(skills) || `(none: there is no ${SKILLS_FOLDER}/<name>/SKILL.md in the workspace)`;
  const memory = (["global", "workspace"] as const).map(memoryText).filter(Boolean).join("\n") || "(none saved yet)";
  return `\n\nSkills (load_skill gives the instructions):\n${list}\n\nMemory, facts kept with save_memory in earlier sessions:\n${memory}`;
}

/** A line for each skill, in name order, while they fit in SKILLS_BUDGET; then how many more there are, and how to find them. */
function skillList(skills: Skill[]): string {
  const lines = skills.map((skill) => `- ${skill.name}: ${skill.description}`);
  let size = 300; // kept for the note
  const fit = lines.findIndex((line) => (size += line.length + 1) > SKILLS_BUDGET);
  if (fit === -1) return lines.join("\n");
  const more = lines.length - fit;
  console.log(dim(`[skills] ${more} of ${lines.length} skills are not listed in the system prompt (its list of skills takes at most ${SKILLS_BUDGET} characters)`));
  return [...lines.slice(0, fit), `(${more} more skills are not listed here, to keep this prompt small. Each is a folder ${SKILLS_FOLDER}/<name>/ with a SKILL.md: list ${SKILLS_FOLDER}/ for their names, and load_skill loads one by its name.)`].join("\n");
}

/** A memory file for the prompt, at most MEMORY_LIMIT characters of it; a problem is a warning, not a stop. */
function memoryText(scope: Scope): string {
  const given = scope === "global" ? GLOBAL_MEMORY : MEMORY_FILE;
  try {
    let text = readMemory(memoryPlace(scope)).trim();
    if (text.length > MEMORY_LIMIT) {
      console.log(dim(`[memory] ${given} has ${text.length} characters; only the first ${MEMORY_LIMIT} are read`));
      text = `${text.slice(0, MEMORY_LIMIT)}\n[... cut: ${text.length - MEMORY_LIMIT} more characters in the file]`;
    }
    return text && `<memory file="${given}">\n${text}\n</memory>`;
  } catch (error) {
    console.log(dim(`[memory] ${given} was not read: ${(error as Error).message}`));
    return "";
  }
}

/** A new session: the offline replay calls this before its first prompt. */
export function prepareReplay(): void {
  session = undefined;
}
// #endregion knowledge

// #region tools
/** s06's registry, with s06's core tools, load_skill and save_memory. */
export const registry = new ToolRegistry();
for (const tool of [...CORE_TOOLS, loadSkillTool, saveMemoryTool]) registry.registerTool(tool);
/** What the model sees, from the registry. */
export const TOOLS = registry.getFunctionDeclarations();
// #endregion tools

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
export const main = (args = process.argv.slice(2)) =>
  runAsMain({
    stage: "s12",
    title: "Skills and Memory",
    agentLoop,
    prepareReplay,
    hasKey: Boolean(API_KEY || AUTH_TOKEN),
    args,
    options: ["--approval-mode"],
    settingsProblem: modeProblem,
    help: [APPROVAL_HELP],
  });

if (isMain(import.meta.url)) await main();
// #endregion program
