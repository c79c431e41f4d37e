// A recorded session as a learner reads it on a stage page: the conversation a replay left
// behind (prompts, the model's text, each tool call with its input, each tool result with
// its real content), cut into numbered steps, with short notes attached to some of them.
// The build, the session view and the tests all read sessions through this file.
//
// Notes live in docs/sessions/<stage>.json (see .vitepress/README.md):
//   { "notes": [ { "at": "toolu_s02_demo_04:result", "en": "…", "ja": "…" } ] }
// `at` names a step: a tool_use id (its call), a tool_use id + ":result" (its result), or a
// step number as the view shows it (1 is the first prompt).
//
// A stage may also make requests outside the conversation: a subagent's (s10) and a summary
// request (s11). The replay saw them, and sessionSteps shows them where they happened. A
// teammate's (s19) are shown as a subagent's are, under the call that started it.
import { agentOf } from "../lib/course/scenario.ts";
import type { ContentBlock, ContentBlockParam, MessageCreateParams, MessageParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import type { Lang } from "./curriculum.ts";

/** `by`: the label of the subagent (or the name of the teammate, s19) whose own conversation the step is in (not the parent's). */
type By = { by?: string; teammate?: boolean };
export type Step =
  | ({ kind: "prompt"; text: string } & By)
  // A message of the harness's own, not the person's: a teammate's next task, the lead woken by notices (s19).
  | ({ kind: "notice"; text: string } & By)
  | ({ kind: "text"; text: string } & By)
  | ({ kind: "call"; id: string; name: string; input: Record<string, unknown> } & By)
  | ({ kind: "result"; id: string; name: string; text: string; isError: boolean } & By)
  // A summary request (s11): how many messages it carried, the instruction that ends it, and
  // its tool_choice; then the summary the model wrote.
  | { kind: "summary-request"; messages: number; instruction: string; toolChoice: string }
  | { kind: "summary"; text: string };

export interface Note {
  at: string | number;
  en: string;
  ja: string;
}

export interface NotesFile {
  notes: Note[];
}

/** A step as the page receives it: its number, what it is, and the notes attached to it. */
export type ShownStep = Step & { n: number; notes: Record<Lang, string>[] };

type Block = ContentBlock | ContentBlockParam;

/** The conversation as numbered steps, in order. */
export function stepsOf(messages: MessageParam[]): Step[] {
  const names = new Map<string, string>();
  return messages.flatMap((message) => stepsOfMessage(message, names));
}

/** One message's steps; `names` maps the tool_use ids seen so far to their tools. */
function stepsOfMessage(message: MessageParam, names: Map<string, string>): Step[] {
  const steps: Step[] = [];
  for (const block of blocksOf(message)) {
    if (block.type === "text") {
      const notice = /^<notice>[^]*<\/notice>$/.test(block.text.trim()); // the whole message is the harness's
      if (message.role === "user") steps.push({ kind: notice ? "notice" : "prompt", text: block.text });
      else if (block.text.trim() !== "") steps.push({ kind: "text", text: block.text });
    } else if (block.type === "tool_use") {
      names.set(block.id, block.name);
      steps.push({ kind: "call", id: block.id, name: block.name, input: (block.input ?? {}) as Record<string, unknown> });
    } else if (block.type === "tool_result") {
      steps.push({ kind: "result", id: block.tool_use_id, name: names.get(block.tool_use_id) ?? "?", text: resultText(block), isError: block.is_error === true });
    }
  }
  return steps;
}

const blocksOf = (message: MessageParam): Block[] =>
  typeof message.content === "string" ? [{ type: "text", text: message.content }] : (message.content as Block[]);

/** What the page needs of a request the model received: what it carried, whether it let the model call tools, and which teammate sent it (s19: its system prompt, or `agent` as captured). */
export type SentRequest = Pick<MessageCreateParams, "messages" | "tool_choice"> & { system?: unknown; agent?: string };

/** A subagent the conversation started: the task call, the prompt it was given, its label, its steps. */
interface Child {
  call: string;
  prompt: string;
  label: string;
  /** How many messages its latest request carried (0: it has made none yet). */
  sent: number;
  /** A teammate (s19): its requests name it, and what the harness sends it between turns is shown too. */
  teammate?: boolean;
  names: Map<string, string>;
  steps: Step[];
}

/**
 * The steps a stage page shows: the conversation's, and the requests a stage made outside it,
 * each where it happened. `requests[i]` is the body of the replay's i-th request and
 * `replies[i]` what it got. A request whose reply is the conversation's next is the
 * conversation's. The others:
 * - a subagent's (s10): its first message is the prompt of a call in the conversation. Its
 *   replies and the results it sent are shown right after that call, marked with its label
 *   (what the stage prints on its lines: the description's first 30 characters);
 * - a summary request (s11): tool_choice none. It and the summary the model wrote are shown
 *   before the reply that came next, since the harness asks for it just before a request.
 * Any other is a problem: a page must not hide a request the stage made.
 */
export function sessionSteps(messages: MessageParam[], requests: SentRequest[], replies: { content: unknown[] }[]): { steps: Step[]; problems: string[] } {
  const own = messages.filter((m) => m.role === "assistant");
  const children: Child[] = stepsOf(messages).flatMap((step) =>
    step.kind === "call" && typeof step.input.prompt === "string"
      ? [{ call: step.id, prompt: step.input.prompt.trim(), label: String(step.input.description ?? step.input.name ?? step.name).replace(/\s+/g, " ").trim().slice(0, 30), sent: 0, names: new Map(), steps: [] }]
      : [],
  );
  const ahead = new Map<number, Step[]>(); // steps to show before the conversation's reply n
  const problems: string[] = [];
  let next = 0; // the conversation's next reply
  requests.forEach((request, i) => {
    const reply = replies[i];
    if (!reply) return; // a request the replay refused: the replay's verdict names it
    const agent = request.agent ?? agentOf(request.system);
    if (!agent && next < own.length && JSON.stringify(own[next].content) === JSON.stringify(reply.content)) return void next++;
    const before = childOf(request, children, agent);
    if (before) return void before.child.steps.push(...childSteps(before.child, before.sent, request, reply));
    if (request.tool_choice?.type === "none") {
      const last = request.messages.at(-1);
      const instruction = last?.role === "user" ? blocksOf(last).flatMap((b) => (b.type === "text" ? [b.text] : [])).at(-1) ?? "" : "";
      const text = (reply.content as Block[]).flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n").trim();
      const asked: Step = { kind: "summary-request", messages: request.messages.length, instruction, toolChoice: request.tool_choice.type };
      return void ahead.set(next, [...(ahead.get(next) ?? []), asked, { kind: "summary", text }]);
    }
    problems.push(`request ${i + 1} is neither the conversation's, nor a subagent's, nor a summary request: the page would not show it`);
  });
  const steps: Step[] = [];
  const names = new Map<string, string>();
  let reply = 0;
  for (const message of messages) {
    if (message.role === "assistant") steps.push(...(ahead.get(reply++) ?? []));
    for (const step of stepsOfMessage(message, names)) {
      steps.push(step);
      if (step.kind === "call") steps.push(...children.filter((c) => c.call === step.id).flatMap((c) => c.steps));
    }
  }
  steps.push(...(ahead.get(reply) ?? [])); // a summary after the last reply (the request after it failed)
  return { steps, problems };
}

/**
 * The subagent a request is from: one whose prompt is its first message. A first request
 * (one message) starts the first subagent with that prompt that has not started; a later one
 * continues the one whose last request was the longest shorter one. The prompt may be sent as
 * one text block (a cache breakpoint on it, s14 in the capstone). A teammate's request (s19)
 * names it (`agent`): only a call that started that name is a match. `sent`: what it had sent before.
 */
function childOf(request: SentRequest, children: Child[], agent?: string): { child: Child; sent: number } | undefined {
  const first = request.messages[0];
  const [block, more] = typeof first?.content === "string" ? [{ type: "text", text: first.content }] : (first?.content ?? []);
  if (first?.role !== "user" || more || block?.type !== "text") return undefined;
  const same = children.filter((c) => c.prompt === block.text && (agent === undefined || c.label === agent));
  const length = request.messages.length;
  const child = length === 1 ? same.find((c) => c.sent === 0) : same.filter((c) => c.sent > 0 && c.sent < length).sort((a, b) => b.sent - a.sent)[0];
  if (!child) return undefined;
  const sent = child.sent;
  [child.sent, child.teammate] = [length, agent !== undefined];
  return { child, sent };
}

/**
 * A subagent's request as steps: the results it sent since its last request (none in its first,
 * whose prompt is the call's), then the reply it got. A teammate's also show what the harness
 * sent it between its turns (its next task, its messages).
 */
function childSteps(child: Child, before: number, request: SentRequest, reply: { content: unknown[] }): Step[] {
  const fresh = request.messages.slice(Math.max(1, before)).filter((message) => message.role === "user");
  const sent = fresh.flatMap((message) => stepsOfMessage(message, child.names));
  const got = stepsOfMessage({ role: "assistant", content: reply.content as ContentBlock[] }, child.names);
  return [...sent, ...got].map((step) => ({ ...step, by: child.label, ...(child.teammate ? { teammate: true } : {}) }) as Step);
}

function resultText(block: ToolResultBlockParam): string {
  const { content } = block;
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => ("text" in part ? part.text : `[${part.type}]`)).join("");
}

/**
 * The steps a scenario's replay will show, from the fixture alone: each prompt, then the
 * recorded replies of its turn, each tool call answered by a result (whose text only the real
 * replay knows). Every recorded reply is walked, even after the last prompt's turn seems to
 * end: a stage that makes requests of its own (a subagent's turns in s10, a summary in s11)
 * has replies that are not the conversation's, and only the replay knows which (sessionSteps
 * places them). So these are the steps of a replay that agrees with its fixture, perhaps in
 * another order: it checks notes without running anything, and tests/whole-session.ts checks
 * them exactly, against the real replay.
 */
export function stepsOfScenario(scenario: { prompts: string[]; replies: { content: unknown[]; stop_reason?: string | null }[] }): Step[] {
  const messages: MessageParam[] = [];
  const prompts = [...scenario.prompts];
  if (prompts.length > 0) messages.push({ role: "user", content: prompts.shift()! });
  for (const reply of scenario.replies) {
    const content = reply.content as ContentBlock[];
    messages.push({ role: "assistant", content });
    if (reply.stop_reason === "tool_use") {
      const calls = content.flatMap((b) => (b.type === "tool_use" ? [b.id] : []));
      messages.push({ role: "user", content: calls.map((id) => ({ type: "tool_result" as const, tool_use_id: id, content: "" })) });
    } else if (prompts.length > 0) {
      messages.push({ role: "user", content: prompts.shift()! });
    }
  }
  for (const prompt of prompts) messages.push({ role: "user", content: prompt });
  return stepsOf(messages);
}

/** The step number (1-based) a note's `at` names, or undefined when there is no such step. */
export function stepOfNote(at: Note["at"], steps: Step[]): number | undefined {
  if (typeof at === "number") return Number.isInteger(at) && at >= 1 && at <= steps.length ? at : undefined;
  const [id, part] = at.split(":");
  if (part !== undefined && part !== "result") return undefined;
  const kind = part === "result" ? "result" : "call";
  const index = steps.findIndex((step) => step.kind === kind && step.id === id);
  return index >= 0 ? index + 1 : undefined;
}

/** What is wrong with a notes file for these steps: unknown steps, missing or empty text. */
export function checkNotes(notes: unknown, steps: Step[], name: string): string[] {
  const list = (notes as NotesFile | undefined)?.notes;
  if (!Array.isArray(list)) return [`${name}: expected { "notes": [ … ] }`];
  const problems: string[] = [];
  list.forEach((note: Partial<Note>, i) => {
    const where = `${name}: notes[${i}]`;
    if (typeof note?.at !== "string" && typeof note?.at !== "number") problems.push(`${where} has no "at" (a tool_use id, id:result, or a step number)`);
    else if (stepOfNote(note.at, steps) === undefined) {
      problems.push(`${where} points at ${JSON.stringify(note.at)}, which is not a step of the session (it has ${steps.length} steps)`);
    }
    for (const lang of ["en", "ja"] as const) {
      if (typeof note?.[lang] !== "string" || note[lang]!.trim() === "") problems.push(`${where} has no ${lang} text`);
    }
  });
  return problems;
}

/** The steps with their numbers and notes, as the session view shows them. */
export function showSteps(steps: Step[], notes: Note[]): ShownStep[] {
  return steps.map((step, index) => ({
    ...step,
    n: index + 1,
    notes: notes.filter((note) => stepOfNote(note.at, steps) === index + 1).map((note) => ({ en: note.en, ja: note.ja })),
  }));
}

/**
 * How a captured session disagrees with the scenario it replayed: the model's replies must be
 * recorded ones, in the recorded order, the prompts the recorded prompts, and every tool call
 * must have exactly one result, in the next message. Empty when they agree.
 */
export function compareWithScenario(messages: MessageParam[], scenario: { prompts: string[]; replies: { content: unknown[] }[] }): string[] {
  const problems: string[] = [];
  const assistant = messages.filter((m) => m.role === "assistant");
  const prompts = messages.filter((m) => m.role === "user" && typeof m.content === "string").map((m) => m.content);
  if (JSON.stringify(prompts) !== JSON.stringify(scenario.prompts)) {
    problems.push(`the prompts differ: captured ${JSON.stringify(prompts)}, recorded ${JSON.stringify(scenario.prompts)}`);
  }
  // The conversation holds the replies of its own turns, in the recorded order. A stage with
  // a subagent (s10) spends some recorded replies inside the subagent's own conversation, so
  // the captured replies are the recorded ones in order, with the subagent's left out; that
  // every recorded reply was asked for is the replay's verdict, checked apart from this.
  let next = 0;
  assistant.forEach((message, i) => {
    const content = JSON.stringify(message.content);
    let found = next;
    while (found < scenario.replies.length && JSON.stringify(scenario.replies[found].content) !== content) found++;
    if (found === scenario.replies.length) problems.push(`reply ${i + 1} is not the recorded one`);
    else next = found + 1;
  });
  messages.forEach((message, i) => {
    if (message.role !== "assistant" || typeof message.content === "string") return;
    const asked = (message.content as Block[]).flatMap((b) => (b.type === "tool_use" ? [b.id] : []));
    if (asked.length === 0) return;
    const next = messages[i + 1];
    const answered = next && Array.isArray(next.content) ? (next.content as Block[]).flatMap((b) => (b.type === "tool_result" ? [b.tool_use_id] : [])) : [];
    if (asked.join(",") !== answered.join(",")) {
      problems.push(`the tool calls [${asked.join(", ")}] got the results [${answered.join(", ")}]`);
    }
  });
  return problems;
}
