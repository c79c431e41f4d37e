// A provider on 127.0.0.1 that streams a reply as the Messages API does, server-sent event by
// event, and can hold it half way: what s13's tests and exercise need to see a reply on the
// screen while it is still arriving, and a Ctrl-C that stops it. (The replay engine serves a
// stream too, but in this process through msw, where aborting a request does not end a body
// that has stalled; a real connection does, as it does with a real provider.)
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Message, MessageCreateParams } from "@anthropic-ai/sdk/resources/messages";
import { apiProblem, eventStream } from "./replay.ts";

/** One step of an answer: write an SSE chunk, wait until release() (or the client hangs up), or answer whole. */
export type Step = string | "wait" | { status: number; headers?: Record<string, string>; body: unknown };

export interface StreamProvider {
  /** The address to give as ANTHROPIC_BASE_URL. */
  readonly url: string;
  /** The answer to each request, in order: its steps. A request with none left is refused. */
  scripts: Step[][];
  /** Every request body, in order. */
  readonly requests: MessageCreateParams[];
  /** For each request: whether the client hung up before the answer was all written. */
  readonly hungUp: boolean[];
  /** Whether an answer is held at a "wait" now (everything before it written). */
  isWaiting(): boolean;
  /** Let the answer waiting at a "wait" go on. */
  release(): void;
  /** Forget the scripts and requests, and let any waiting answer go. */
  reset(): void;
  close(): Promise<void>;
}

export async function startStreamProvider(): Promise<StreamProvider> {
  let waiting: (() => void) | undefined;
  const state = {
    url: "",
    scripts: [] as Step[][],
    requests: [] as MessageCreateParams[],
    hungUp: [] as boolean[],
    isWaiting: () => waiting !== undefined,
    release: () => {
      const go = waiting;
      waiting = undefined;
      go?.();
    },
    reset: () => {
      state.scripts = [];
      state.requests.length = 0;
      state.hungUp.length = 0;
      state.release();
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString()) as MessageCreateParams;
    const n = state.requests.push(body) - 1;
    let done = false;
    state.hungUp[n] = false;
    res.on("close", () => (state.hungUp[n] = !done));
    // What the API refuses, it refuses here too; a request past the scripts is an error, never a hang.
    const refused = apiProblem(body) ?? (state.scripts.length === 0 ? `request ${n + 1} came after the last scripted answer` : undefined);
    const error = (message: string) => ({ status: 400, headers: { "x-should-retry": "false" }, body: { type: "error", error: { type: "invalid_request_error", message } } });
    for (const step of refused ? [error(refused)] : state.scripts.shift()!) {
      if (res.destroyed) return;
      if (step === "wait") {
        await new Promise<void>((resolve) => {
          waiting = resolve;
          res.on("close", resolve);
        });
        waiting = undefined;
      } else if (typeof step === "string") {
        if (!res.headersSent) res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(step);
      } else {
        done = true;
        res.writeHead(step.status, { "content-type": "application/json", ...step.headers });
        res.end(JSON.stringify(step.body));
        return;
      }
    }
    done = true;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

/** A reply as the API streams it, one SSE chunk per event: the replay engine's own stream (12-character pieces). */
export async function eventsOf(message: Message): Promise<string[]> {
  let text = "";
  for await (const chunk of eventStream(message) as unknown as AsyncIterable<Uint8Array>) text += Buffer.from(chunk).toString();
  return text.split(/(?<=\n\n)/);
}

/** The events up to the `count`-th that matches `what` (included), and the rest. */
export function splitAt(events: string[], what: RegExp, count = 1): [string[], string[]] {
  let seen = 0;
  const at = events.findIndex((event) => what.test(event) && ++seen === count);
  if (at < 0) throw new Error(`no event ${what}`);
  return [events.slice(0, at + 1), events.slice(at + 1)];
}

/** An event's data, parsed: what the SDK hands a client for each event. */
export const eventData = (event: string): unknown => JSON.parse(event.slice(event.indexOf("\ndata: ") + 7));
