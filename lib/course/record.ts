// Record mode: a real session passes through to the real model, and what the model replied
// is kept, so an instructor can turn a good session into a scenario that replays offline.
//
// The recorder watches `fetch`, which the stages' client looks up at each request
// (lib/runtime/model.ts): every attempt the SDK makes, retries included, goes through it untouched,
// and each successful reply of the model is noted. A 529 or a dropped connection is simply
// not noted, so the SDK's retry and the recording both go on. Only reply bodies are kept,
// never headers; the key is also scrubbed from the text in case a reply repeats it.
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
  const replies: Message[] = [];
  const realFetch = globalThis.fetch;

  globalThis.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    const url = input instanceof Request ? input.url : String(input);
    if (response.ok && new URL(url).pathname.endsWith("/v1/messages")) {
      replies.push((await response.clone().json()) as Message);
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
  replies: Message[],
): Pick<Scenario, "prompts" | "replies" | "sideTurns"> {
  let kept = 0;
  while (kept < prompts.length && prompts[kept].ended) kept += 1;
  const lastReply = prompts[kept]?.firstReply ?? replies.length;
  const saved = replies.slice(0, lastReply);
  const sideTurns = saved.filter((r) => r.stop_reason !== "tool_use").length - kept;
  return { prompts: prompts.slice(0, kept).map((p) => p.text), replies: saved, ...(sideTurns > 0 ? { sideTurns } : {}) };
}

function scrub(text: string, secret: string): string {
  return secret.length >= 8 ? text.split(secret).join("[redacted]") : text;
}
