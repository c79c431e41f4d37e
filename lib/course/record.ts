// Record mode: a real session passes through to the real model, and what the model replied
// is kept, so an instructor can turn a good session into a scenario that replays offline.
//
// The recorder watches `fetch`, which the stages' client looks up at each request
// (lib/runtime/model.ts): every attempt the SDK makes, retries included, goes through it untouched,
// and each successful reply of the model is noted. A 529 or a dropped connection is simply
// not noted, so the SDK's retry and the recording both go on. Only reply bodies are kept,
// never headers; the key is also scrubbed from the text in case a reply repeats it. A reply
// streamed as events (s13) is noted as it passes, never held back, and saved as the whole
// message it makes; one cut short (Ctrl-C) was never whole, so its turn is not saved.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Message } from "@anthropic-ai/sdk/resources/messages";
import type { Scenario } from "./scenario.ts";
import type { Terminal } from "../runtime/terminal.ts";

export interface Recording {
  /** Note a prompt the person typed at the stage's prompt. */
  prompt(text: string): void;
  /** Note that the turn of the last prompt ended as it should (no error, no Ctrl-C). */
  turnEnded(): void;
  /** A terminal that notes each answer the person gives to a tool's question. */
  wrap(term: Terminal): Terminal;
  /** Stop watching the model's requests. */
  close(): void;
  /** Write the scenario with every complete turn; returns how many turns, 0 when there is none to save. */
  save(file: string, description: string): number;
}

export function startRecording(apiKey: string): Recording {
  const prompts: { text: string; firstReply: number; ended: boolean }[] = [];
  const answers: { text: string; afterReply: number }[] = [];
  const replies: (Message | undefined)[] = [];
  const realFetch = globalThis.fetch;

  globalThis.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    const url = input instanceof Request ? input.url : String(input);
    if (response.ok && new URL(url).pathname.endsWith("/v1/messages")) {
      if (!response.headers.get("content-type")?.includes("text/event-stream") || !response.body) {
        replies.push((await response.clone().json()) as Message);
        return response;
      }
      const slot = replies.push(undefined) - 1; // whole once its message_stop has passed
      const events = eventsOf((message) => (replies[slot] = message));
      const body = response.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ transform: (chunk, out) => (events(chunk), out.enqueue(chunk)) }));
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    }
    return response;
  };

  return {
    prompt: (text) => prompts.push({ text, firstReply: replies.length, ended: false }),
    turnEnded() {
      prompts[prompts.length - 1].ended = true;
    },
    wrap: (term) => ({
      hasPerson: term.hasPerson,
      close: () => term.close(),
      async ask(question, options) {
        const line = await term.ask(question, options);
        if (line !== null) answers.push({ text: line, afterReply: replies.length });
        return line;
      },
    }),
    close: () => {
      globalThis.fetch = realFetch;
    },
    save(file, description) {
      const complete = completeTurns(prompts, replies);
      if (complete.prompts.length === 0) return 0;
      const scenario: Scenario = { description, ...complete };
      // An answer belongs to the saved part when the reply that asked the question was saved.
      const kept = answers.filter((answer) => answer.afterReply <= complete.replies.length).map((answer) => answer.text);
      if (kept.length > 0) scenario.answers = kept;
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, scrub(JSON.stringify(scenario, null, 2), apiKey) + "\n");
      return complete.prompts.length;
    },
  };
}

/**
 * Keep the turns up to the first one cut short (by an error, or Ctrl-C): it would not replay.
 * The program says which turns ended; the replies cannot tell, since a reply that asks for no
 * tool may end a conversation of its own inside the turn (s10: a subagent's last answer), and
 * the turn may fail after it. Those replies are counted as sideTurns.
 */
function completeTurns(
  prompts: { text: string; firstReply: number; ended: boolean }[],
  recorded: (Message | undefined)[],
): Pick<Scenario, "prompts" | "replies" | "sideTurns"> {
  // A streamed reply cut short is no reply to replay: the turns from its own on are not saved.
  const cut = recorded.indexOf(undefined);
  const replies = (cut < 0 ? recorded : recorded.slice(0, cut)) as Message[];
  let kept = 0;
  while (kept < prompts.length && prompts[kept].ended && (prompts[kept + 1]?.firstReply ?? recorded.length) <= replies.length) kept += 1;
  const lastReply = prompts[kept]?.firstReply ?? replies.length;
  const saved = replies.slice(0, lastReply);
  const sideTurns = saved.filter((r) => r.stop_reason !== "tool_use").length - kept;
  return { prompts: prompts.slice(0, kept).map((p) => p.text), replies: saved, ...(sideTurns > 0 ? { sideTurns } : {}) };
}

/**
 * Reads a streamed reply's bytes as they pass (server-sent events) and calls `whole` with the
 * message they make at message_stop: each block as its start gave it, its deltas added, a
 * call's input parsed from its JSON pieces, the last fields and usage of message_delta.
 */
function eventsOf(whole: (message: Message) => void): (chunk: Uint8Array) => void {
  const decoder = new TextDecoder();
  let text = "";
  let message: Message | undefined;
  const json: string[] = [];
  return (chunk) => {
    text += decoder.decode(chunk, { stream: true });
    const events = text.split(/\r?\n\r?\n/);
    text = events.pop() ?? "";
    // The recorder must never break the session it watches: a reply it cannot read is not saved.
    for (const raw of events) {
      try {
        note(raw);
      } catch {
        message = undefined;
      }
    }
  };
  function note(raw: string): void {
    const data = raw.split(/\r?\n/).find((line) => line.startsWith("data:"))?.slice(5).trim();
    const event = data ? (JSON.parse(data) as { type: string; index: number; message: Message; content_block: never; delta: Record<string, never>; usage: object }) : undefined;
    if (event?.type === "message_start") message = { ...event.message, content: [] };
    if (!event || !message) return;
    const block = message.content[event.index] as unknown as Record<string, unknown>;
    if (event.type === "content_block_start") message.content[event.index] = { ...(event.content_block as object) } as never;
    if (event.type === "content_block_delta") {
      const { type, text: piece, partial_json, thinking, signature, citation } = event.delta;
      if (type === "text_delta") block.text += piece;
      if (type === "input_json_delta") json[event.index] = (json[event.index] ?? "") + partial_json;
      if (type === "thinking_delta") block.thinking += thinking;
      if (type === "signature_delta") block.signature = signature;
      if (type === "citations_delta") block.citations = [...((block.citations as unknown[]) ?? []), citation];
    }
    if (event.type === "content_block_stop" && json[event.index]) block.input = JSON.parse(json[event.index]);
    if (event.type === "message_delta") {
      for (const [name, value] of Object.entries(event.delta)) if (value != null) Object.assign(message, { [name]: value });
      for (const [name, value] of Object.entries(event.usage)) if (value != null) Object.assign(message.usage, { [name]: value });
    }
    if (event.type === "message_stop") whole(message);
  }
}

function scrub(text: string, secret: string): string {
  return secret.length >= 8 ? text.split(secret).join("[redacted]") : text;
}
