// Record mode: a real session passes through to the real model, and what the model replied
// is kept, so an instructor can turn a good session into a scenario that replays offline.
// Only request and reply bodies are kept, never headers; the key is also scrubbed from the
// text in case a reply repeats it.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { bypass, http, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import type { Message } from "@anthropic-ai/sdk/resources/messages";
import type { Scenario } from "./scenario.ts";
import type { Terminal } from "./terminal.ts";

export interface Recording {
  /** Note a prompt the person typed at the stage's prompt. */
  prompt(text: string): void;
  /** A terminal that notes each answer the person gives to a tool's question. */
  wrap(term: Terminal): Terminal;
  close(): void;
  /** Write the scenario; false when there is no complete turn to save. */
  save(file: string, description: string): boolean;
}

export function startRecording(apiKey: string): Recording {
  const prompts: { text: string; firstReply: number }[] = [];
  const answers: string[] = [];
  const replies: Message[] = [];

  const server = setupServer(
    http.post("*/v1/messages", async ({ request }) => {
      const response = await fetch(bypass(request));
      const text = await response.text();
      if (response.ok) replies.push(JSON.parse(text) as Message);
      // Pass the reply on as it came, with only the headers the SDK reads.
      return new HttpResponse(text, {
        status: response.status,
        headers: pick(response.headers, ["content-type", "request-id", "retry-after", "x-should-retry"]),
      });
    }),
  );
  server.listen({ onUnhandledRequest: "bypass" });

  return {
    prompt: (text) => prompts.push({ text, firstReply: replies.length }),
    wrap: (term) => ({
      hasPerson: term.hasPerson,
      close: () => term.close(),
      async ask(question, options) {
        const line = await term.ask(question, options);
        if (line !== null) answers.push(line);
        return line;
      },
    }),
    close: () => server.close(),
    save(file, description) {
      const complete = completeTurns(prompts, replies);
      if (complete.prompts.length === 0) return false;
      const scenario: Scenario = { description, ...complete };
      if (answers.length > 0) scenario.answers = answers;
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, scrub(JSON.stringify(scenario, null, 2), apiKey) + "\n");
      return true;
    },
  };
}

/** Keep the turns up to the first one cut short (by an error, or Ctrl-C): it would not replay. */
function completeTurns(
  prompts: { text: string; firstReply: number }[],
  replies: Message[],
): Pick<Scenario, "prompts" | "replies"> {
  let kept = 0;
  for (const [i, { firstReply }] of prompts.entries()) {
    const end = prompts[i + 1]?.firstReply ?? replies.length;
    const turn = replies.slice(firstReply, end);
    const whole = turn.length > 0 && turn.every((r, j) => (r.stop_reason === "tool_use") === (j < turn.length - 1));
    if (!whole) break;
    kept = i + 1;
  }
  const lastReply = prompts[kept]?.firstReply ?? replies.length;
  return { prompts: prompts.slice(0, kept).map((p) => p.text), replies: replies.slice(0, lastReply) };
}

function pick(headers: Headers, names: string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => (headers.has(name) ? [[name, headers.get(name)!]] : [])));
}

function scrub(text: string, secret: string): string {
  return secret.length >= 8 ? text.split(secret).join("[redacted]") : text;
}
