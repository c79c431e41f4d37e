// The streaming delay (s13): how long a text delta takes from the wire to the screen. A fake
// provider on 127.0.0.1 answers the stage's one request with the Messages API's event stream,
// writing its text deltas one at a time, a pause apart, each carrying a numbered marker. The
// stage runs as a learner runs it, with one prompt and no terminal (node_modules/.bin/tsx
// agents/sNN_*.ts "..."), pointed at the provider by ANTHROPIC_BASE_URL. The bench reads the
// stage's stdout: a delta's delay is the time from the provider's write of it to its marker's
// arrival on stdout, both taken in the bench's process, on one clock. So it holds the loopback
// connection, the SDK's parsing, the stage's assembling and printing, and the pipe back.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";

export interface StreamingRow {
  stage: string;
  /** Deltas timed (the first one's, which the process's first output may slow, included). */
  deltas: number;
  medianMs: number;
  worstMs: number;
  /** The stage's exit code; 0 when it printed the whole reply. */
  code: number | null;
}

/** Which stage files read a streamed reply: they ask the connection for a reply's events. */
export const streams = (text: string) => text.includes(".messages.events(");

const sse = (event: string, data: object) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const marker = (i: number) => `[d${String(i).padStart(2, "0")}]`;

/**
 * Run `file` once against a provider that streams `deltas` text deltas `gapMs` apart, each
 * with its marker and some words; resolve to each delta's delay from write to stdout.
 */
export async function timeStreaming(stage: string, file: string, { deltas = 30, gapMs = 25, tmp = "", timeoutMs = 60_000 } = {}): Promise<StreamingRow> {
  const sentAt: number[] = [];
  const server = http.createServer(async (req, res) => {
    for await (const _ of req); // the request body, read to its end
    res.writeHead(200, { "content-type": "text/event-stream" });
    const message = { id: "msg_bench", type: "message", role: "assistant", model: "claude-sonnet-5-5", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 0 } };
    res.write(sse("message_start", { type: "message_start", message }));
    res.write(sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "", citations: null } }));
    for (let i = 0; i < deltas; i++) {
      await new Promise((resolve) => setTimeout(resolve, gapMs));
      const text = `${marker(i)} a few words of the reply `;
      res.write(sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }));
      sentAt[i] = performance.now();
    }
    res.write(sse("content_block_stop", { type: "content_block_stop", index: 0 }));
    res.write(sse("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: deltas * 8 } }));
    res.end(sse("message_stop", { type: "message_stop" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const cwd = mkdtempSync(path.join(os.tmpdir(), "workbook-bench-stream-"));
  const env: Record<string, string | undefined> = { ...process.env, ANTHROPIC_API_KEY: "sk-ant-bench-0123456789", ANTHROPIC_BASE_URL: url, TMPDIR: tmp || cwd, NO_COLOR: "1" };
  for (const name of ["ANTHROPIC_AUTH_TOKEN", "MODEL_ID"]) delete env[name];
  const tsx = path.join(path.dirname(path.dirname(path.dirname(new URL(import.meta.url).pathname))), "node_modules", ".bin", "tsx");
  try {
    const arrivedAt: number[] = [];
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(tsx, [file, "Say a few words."], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
      let seen = "";
      child.stdout.on("data", (chunk: Buffer) => {
        const now = performance.now();
        seen += chunk.toString();
        for (let i = arrivedAt.length; i < deltas && seen.includes(marker(i)); i++) arrivedAt[i] = now;
      });
      child.stderr.resume();
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      child.on("error", reject);
      child.on("close", (exit) => {
        clearTimeout(timer);
        resolve(exit);
      });
    });
    const delays = arrivedAt.map((at, i) => at - sentAt[i]).filter((ms) => Number.isFinite(ms));
    const sorted = [...delays].sort((a, b) => a - b);
    return {
      stage,
      deltas: delays.length,
      medianMs: sorted.length > 0 ? sorted[Math.floor(sorted.length / 2)] : Number.NaN,
      worstMs: sorted.length > 0 ? sorted[sorted.length - 1] : Number.NaN,
      code,
    };
  } finally {
    server.close();
    rmSync(cwd, { recursive: true, force: true });
  }
}
