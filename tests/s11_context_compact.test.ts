// s11: making room in the context, with nothing lost. Each rule is a test in its own workspace,
// driving the stage's real loop with recorded replies and reading what the model received:
// old tool results become placeholders that name the tool and how to get the content back;
// past COMPACT_THRESHOLD (or when asked, by the `compact` tool or /compact) the conversation
// is saved to .agent/transcripts/ and replaced by a summary the model writes; a pair of tool_use and
// tool_result is never split; a failed summary or an unwritable transcript changes nothing.
// Every request of every test is checked against the API's rules for tool calls and results.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { http } from "msw/core/http";
import { setupServer } from "msw/node";
import type { Message, MessageCreateParams, MessageParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import { runProgram, type StageProgram } from "../lib/runtime/program.ts";
import { replayHandlers } from "../lib/course/replay.ts";
import { loadScenario, type Scenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { nobody, scriptedTerminal, useTerminal } from "../lib/runtime/terminal.ts";
import { onScreen, REPO_ROOT, reply, resultText, runMain, scenarioOf, stageFile, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s11");
const TRANSCRIPTS = ".agent/transcripts";
type Stage = {
  agentLoop(messages: MessageParam[]): Promise<void>;
  prepareReplay(scenario: Partial<Scenario> & { compactThreshold?: number }): void;
  registry: { getTool(name: string): { kind: string } | undefined };
  TOOLS: { name: string }[];
};
// As the tests run: no APPROVAL_MODE, so "default": reading and `compact` never ask.
const stage = (await import(FILE)) as Stage;

/** The threshold in force for the next conversations (as a replay's scenario sets it). */
const threshold = (tokens: number) => stage.prepareReplay({ compactThreshold: tokens });
afterEach(() => stage.prepareReplay({})); // back to COMPACT_THRESHOLD's value
// Every conversation here runs in a temporary workspace: a transcript in the repository means
// one ran where it should not (it happened once; see "the working directory changes").
afterAll(() => expect(existsSync(path.join(REPO_ROOT, TRANSCRIPTS)), "a transcripts folder in the repository").toBe(false));

// ---------------------------------------------------------------------------------------
// Replies, requests and the rules every request must keep

/** A reply whose request used `tokens` input tokens: what the threshold is compared with. */
function used(tokens: number, message: Message): Message {
  message.usage = { ...message.usage, input_tokens: tokens };
  return message;
}
const read = (file: string, id?: string) => ({ id, name: "read_file", input: { path: file } });
const summaryReply = (text = "SUMMARY: the work so far, in short.") => reply.text(text);

type Block = { type: string; id?: string; tool_use_id?: string; text?: string; content?: unknown; is_error?: boolean };
const blocks = (message: MessageParam): Block[] => (typeof message.content === "string" ? [{ type: "text", text: message.content }] : (message.content as Block[]));
const textOf = (message: MessageParam) => blocks(message).map((block) => (block.type === "text" ? block.text : block.type === "tool_result" ? resultText(block as ToolResultBlockParam) : "")).join("\n");
const isSummaryRequest = (request: MessageCreateParams) => request.tool_choice?.type === "none";

/**
 * What the API would refuse: a first message not from the person, roles that do not alternate,
 * a tool_use not answered (each id, in order) by the very next message, or a tool_result whose
 * tool_use is not in the message just before it.
 */
function requestProblems(requests: MessageCreateParams[]): string[] {
  const problems: string[] = [];
  for (const [n, request] of requests.entries()) {
    const messages = request.messages as MessageParam[];
    messages.forEach((message, i) => {
      const where = `request ${n + 1}, message ${i + 1}`;
      if (message.role !== (i % 2 === 0 ? "user" : "assistant")) problems.push(`${where} is from ${message.role}: the roles must alternate, starting with the person`);
      const asked = i > 0 ? blocks(messages[i - 1]).flatMap((b) => (b.type === "tool_use" ? [b.id] : [])) : [];
      const answered = blocks(message).flatMap((b) => (b.type === "tool_result" ? [b.tool_use_id] : []));
      const last = i === messages.length - 1 && message.role === "assistant";
      if (!last && asked.join(",") !== answered.join(",")) problems.push(`${where} answers [${answered.join(", ")}]; the calls before it were [${asked.join(", ")}]`);
    });
  }
  return problems;
}

/** The transcript files of the workspace (not the folder's .gitignore), each as its messages, one per line. */
function transcripts(): Record<string, MessageParam[]> {
  if (!existsSync(TRANSCRIPTS)) return {};
  return Object.fromEntries(
    readdirSync(TRANSCRIPTS)
      .filter((name) => name !== ".gitignore")
      .map((name) => [name, readFileSync(path.join(TRANSCRIPTS, name), "utf8").trimEnd().split("\n").map((line) => JSON.parse(line) as MessageParam)]),
  );
}
const onlyTranscript = () => {
  const files = Object.entries(transcripts());
  expect(files).toHaveLength(1);
  return { name: files[0][0], messages: files[0][1] };
};
const isSummaryMessage = (message: MessageParam) => textOf(message).startsWith("[The conversation so far was compacted");

/** Files of `size` characters to read: a.txt, b.txt, ... each filled with its own letter. */
function bigFiles(names: string[], size = 1000): void {
  for (const name of names) writeFileSync(name, name[0].repeat(size));
}

/** Play `replies` for `prompts` through the stage's loop (a summary ends no turn); the conversation and the requests. */
async function play(replay: ReturnType<typeof useReplay>, replies: Message[], prompts = ["go"]) {
  const scenario = scenarioOf(replies, { prompts });
  const session = replay(scenario);
  const messages: MessageParam[] = [];
  for (const prompt of scenario.prompts) {
    messages.push({ role: "user", content: prompt });
    await stage.agentLoop(messages);
  }
  expect(requestProblems(session.requests)).toEqual([]);
  return { messages, requests: session.requests, verdict: session.verdict() };
}

// ---------------------------------------------------------------------------------------

describe("s11 micro-compaction: old tool results become placeholders in what is sent", () => {
  useWorkspace();
  const replay = useReplay();
  usePrinted();

  it("keeps the last three tool-result messages whole; older ones name the tool, its input, and how to get the content back", async () => {
    bigFiles(["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]);
    const { requests, messages, verdict } = await play(replay, [
      ...["a", "b", "c", "d", "e"].map((letter) => reply.tools([read(`${letter}.txt`, `toolu_${letter}`)])),
      reply.text("done"),
    ]);
    expect(verdict).toEqual([]);
    const sent = requests.at(-1)!.messages as MessageParam[];
    const results = sent.flatMap(blocks).filter((b) => b.type === "tool_result") as ToolResultBlockParam[];
    expect(results.map((r) => r.tool_use_id)).toEqual(["toolu_a", "toolu_b", "toolu_c", "toolu_d", "toolu_e"]);
    const { name } = onlyTranscript();
    expect(resultText(results[0])).toBe(
      `[Old result cleared to save context: read_file {"path":"a.txt"}, 1000 characters. Call read_file again for the current content, or see it as it was: grep -F 'toolu_a' .agent/transcripts/${name}.]`,
    );
    expect(resultText(results[1])).toMatch(/^\[Old result cleared to save context: read_file \{"path":"b\.txt"\}/);
    expect(results.slice(2).map(resultText)).toEqual(["c".repeat(1000), "d".repeat(1000), "e".repeat(1000)]);
    // The request before had four result messages: only the oldest was cleared.
    const before = (requests.at(-2)!.messages as MessageParam[]).flatMap(blocks).filter((b) => b.type === "tool_result") as ToolResultBlockParam[];
    expect(before.map((r) => resultText(r).startsWith("[Old result cleared"))).toEqual([true, false, false, false]);
    // The loop's own messages are the record: every result in them is whole.
    const kept = messages.flatMap(blocks).filter((b) => b.type === "tool_result") as ToolResultBlockParam[];
    expect(kept.map(resultText)).toEqual(["a", "b", "c", "d", "e"].map((letter) => letter.repeat(1000)));
  });

  it("the way back the placeholder gives works: the command it names finds the result as it was", async () => {
    bigFiles(["a.txt", "b.txt", "c.txt", "d.txt"]);
    const { requests } = await play(replay, [...["a", "b", "c", "d"].map((l) => reply.tools([read(`${l}.txt`, `toolu_way_${l}`)])), reply.text("done")]);
    const placeholder = resultText((requests.at(-1)!.messages as MessageParam[]).flatMap(blocks).find((b) => b.type === "tool_result") as ToolResultBlockParam);
    const command = /grep -F '([^']+)' (\S+)\.\]$/.exec(placeholder)!;
    const line = execFileSync("grep", ["-F", command[1], command[2]], { encoding: "utf8" }).trim().split("\n").at(-1)!;
    expect(resultText(blocks(JSON.parse(line)).find((b) => b.type === "tool_result") as ToolResultBlockParam)).toBe("a".repeat(1000));
  });

  it("a result shorter than its placeholder is sent as it is", async () => {
    writeFileSync("tiny.txt", "ok");
    bigFiles(["b.txt", "c.txt", "d.txt"]);
    const { requests } = await play(replay, [reply.tools([read("tiny.txt")]), ...["b", "c", "d"].map((l) => reply.tools([read(`${l}.txt`)])), reply.text("done")]);
    const first = (requests.at(-1)!.messages as MessageParam[]).flatMap(blocks).find((b) => b.type === "tool_result") as ToolResultBlockParam;
    expect(resultText(first)).toBe("ok");
  });

  it("parallel calls: one message of results counts once, each old result gets its own placeholder, ids and order kept", async () => {
    bigFiles(["a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "f.txt"]);
    const { requests } = await play(replay, [
      reply.tools([read("a.txt", "toolu_p1"), read("b.txt", "toolu_p2"), read("c.txt", "toolu_p3")]),
      ...["d", "e", "f"].map((l) => reply.tools([read(`${l}.txt`)])),
      reply.text("done"),
    ]);
    const sent = requests.at(-1)!.messages as MessageParam[];
    const parallel = blocks(sent[2]) as ToolResultBlockParam[];
    expect(parallel.map((r) => r.tool_use_id)).toEqual(["toolu_p1", "toolu_p2", "toolu_p3"]);
    expect(parallel.map((r) => /^\[Old result cleared to save context: read_file \{"path":"(\w)\.txt"\}/.exec(resultText(r))?.[1])).toEqual(["a", "b", "c"]);
    // In the request before, the parallel message was one of the last three: whole.
    expect((blocks((requests.at(-2)!.messages as MessageParam[])[2]) as ToolResultBlockParam[]).map(resultText)).toEqual(["a", "b", "c"].map((l) => l.repeat(1000)));
  });

  it("an error result stays an error with its id; a command's placeholder says to run it again only if that is safe", async () => {
    bigFiles(["b.txt", "c.txt", "d.txt"]);
    const missing = `missing-${"x".repeat(600)}.txt`;
    const { requests } = await play(replay, [
      reply.tools([{ id: "toolu_err", name: "read_file", input: { path: missing } }, { id: "toolu_sh", name: "bash", input: { command: "echo hi" } }]),
      ...["b", "c", "d"].map((l) => reply.tools([read(`${l}.txt`)])),
      reply.text("done"),
    ]);
    const [error, command] = blocks((requests.at(-1)!.messages as MessageParam[])[2]) as ToolResultBlockParam[];
    expect(error).toMatchObject({ tool_use_id: "toolu_err", is_error: true });
    expect(resultText(error)).toMatch(/^\[Old result cleared to save context: read_file \{"path":"missing-x+/);
    // bash was refused (no one to approve it): a short result, kept; its error flag too.
    expect(command).toMatchObject({ tool_use_id: "toolu_sh", is_error: true });
    expect(resultText(command)).toMatch(/^Not run: bash needs a person's approval/);
  });
});

describe("s11 the placeholder of a command", () => {
  useWorkspace();
  const replay = useReplay();
  usePrinted();

  it("tells the model to run it again only if that is safe", async () => {
    // A person at the stage's own terminal allows the command (no reload with another mode needed).
    useTerminal(scriptedTerminal(["y"], new PassThrough() as unknown as NodeJS.WriteStream));
    try {
      bigFiles(["b.txt", "c.txt", "d.txt"]);
      const scenario = scenarioOf([reply.tools([{ name: "bash", input: { command: "seq 1 400" } }]), ...["b", "c", "d"].map((l) => reply.tools([read(`${l}.txt`)])), reply.text("done")]);
      const session = replay(scenario);
      await stage.agentLoop([{ role: "user", content: "go" }]);
      const first = (session.requests.at(-1)!.messages as MessageParam[]).flatMap(blocks).find((b) => b.type === "tool_result") as ToolResultBlockParam;
      expect(resultText(first)).toMatch(/^\[Old result cleared to save context: bash \{"command":"seq 1 400"\}, \d+ characters\. Run it again only if that is safe, or see it as it was: grep -F/);
    } finally {
      useTerminal(nobody);
    }
  });
});

describe("s11 auto-compaction: past COMPACT_THRESHOLD, a summary replaces the conversation", () => {
  useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();

  it("at the threshold exactly nothing happens; one token over, the next request is preceded by a summary request", async () => {
    threshold(5000);
    bigFiles(["a.txt"]);
    const at = await play(replay, [used(5000, reply.tools([read("a.txt")])), reply.text("done")]);
    expect(at.requests.filter(isSummaryRequest)).toHaveLength(0);
    rmSync(TRANSCRIPTS, { recursive: true });
    const over = await play(replay, [used(5001, reply.tools([read("a.txt")])), summaryReply(), reply.text("done")]);
    expect(over.requests.map(isSummaryRequest)).toEqual([false, true, false]);
    expect(printed.join("\n")).toContain("[compacting the context: the last request used 5001 input tokens, over COMPACT_THRESHOLD (5000)]");
  });

  it("counts the cached part of the input too", async () => {
    threshold(5000);
    const cached = used(100, reply.tools([read("a.txt")]));
    cached.usage = { ...cached.usage, cache_read_input_tokens: 4000, cache_creation_input_tokens: 901 } as Message["usage"];
    bigFiles(["a.txt"]);
    const { requests } = await play(replay, [cached, summaryReply(), reply.text("done")]);
    expect(requests.map(isSummaryRequest)).toEqual([false, true, false]);
  });

  it("the summary request: the same system prompt and tools, none may be called, the conversation as the model saw it and the instruction last", async () => {
    threshold(5000);
    bigFiles(["a.txt"]);
    const { requests } = await play(replay, [used(6000, reply.tools([read("a.txt", "toolu_s")])), summaryReply(), reply.text("done")]);
    const [first, summary] = requests;
    expect(summary.system).toBe(first.system);
    expect(summary.tools).toEqual(first.tools);
    expect(summary.tool_choice).toEqual({ type: "none" });
    const messages = summary.messages as MessageParam[];
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    const last = blocks(messages[2]);
    expect(last.map((b) => b.type)).toEqual(["tool_result", "text"]);
    expect(last[0]).toMatchObject({ tool_use_id: "toolu_s" });
    expect(last[1].text).toMatch(/^Summarise the conversation so far: your summary will replace every message above/);
  });

  it("after it, the model is sent the summary, where the rest is, and the latest request word for word, and nothing of what it replaced", async () => {
    threshold(5000);
    bigFiles(["a.txt"]);
    const { requests, messages } = await play(
      replay,
      [used(6000, reply.tools([read("a.txt")])), summaryReply("SUMMARY: a.txt holds a's."), reply.tools([read("a.txt")]), reply.text("done")],
      ["count the a's in a.txt"],
    );
    const after = requests[2].messages as MessageParam[];
    expect(after).toHaveLength(1);
    const { name } = onlyTranscript();
    expect(textOf(after[0])).toBe(
      `[The conversation so far was compacted to make room. This summary replaces it; every message is kept, one JSON message per line, in .agent/transcripts/${name} (search it with grep for an exact detail).]\n\n` +
        "SUMMARY: a.txt holds a's.\n\nThe person's latest request, word for word:\ncount the a's in a.txt\n\nCarry on from where the work stopped.",
    );
    expect(textOf(after[0])).not.toContain("a".repeat(1000));
    // The conversation itself is the whole record, as the loop left it.
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
    expect(requests[3].messages).toHaveLength(3); // the summary, the reply after it, its result
  });

  it("a compaction right after a tool_use: it waits for the result, so the pair stays together (with calls side by side too)", async () => {
    threshold(5000);
    bigFiles(["a.txt", "b.txt"]);
    const { requests } = await play(replay, [
      used(9000, reply.tools([read("a.txt", "toolu_pair_a"), read("b.txt", "toolu_pair_b")])),
      summaryReply(),
      reply.text("done"),
    ]);
    const summary = requests[1].messages as MessageParam[];
    expect(blocks(summary[1]).filter((b) => b.type === "tool_use").map((b) => b.id)).toEqual(["toolu_pair_a", "toolu_pair_b"]);
    expect(blocks(summary[2]).filter((b) => b.type === "tool_result").map((b) => b.tool_use_id)).toEqual(["toolu_pair_a", "toolu_pair_b"]);
    const after = requests[2].messages as MessageParam[];
    expect(after.flatMap(blocks).filter((b) => b.type === "tool_use" || b.type === "tool_result")).toEqual([]);
  });

  it("two compactions in one session: one transcript, appended, never overwritten; it holds every message sent, in full", async () => {
    threshold(5000);
    bigFiles(["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]);
    const { messages, requests } = await play(
      replay,
      [
        reply.tools([read("a.txt")]),
        used(6000, reply.tools([read("b.txt")])),
        summaryReply("SUMMARY ONE"),
        reply.text("first done"),
        reply.tools([read("c.txt")]),
        reply.tools([read("d.txt")]),
        used(7000, reply.tools([read("e.txt")])),
        summaryReply("SUMMARY TWO"),
        reply.text("second done"),
      ],
      ["first", "second"],
    );
    expect(requests.filter(isSummaryRequest)).toHaveLength(2);
    const transcript = onlyTranscript().messages;
    // The conversation, in order and in full (the last reply too), with each summary where it took over.
    const summaries = transcript.filter(isSummaryMessage);
    expect(summaries.map(textOf).map((text) => /SUMMARY \w+/.exec(text)?.[0])).toEqual(["SUMMARY ONE", "SUMMARY TWO"]);
    expect(transcript.filter((m) => !isSummaryMessage(m))).toEqual(JSON.parse(JSON.stringify(messages)));
    expect(transcript.indexOf(summaries[0])).toBe(5);
    // The second summary was written from the first one and what came after it.
    expect(textOf((requests.filter(isSummaryRequest)[1].messages as MessageParam[])[0])).toContain("SUMMARY ONE");
    expect(textOf((requests.at(-1)!.messages as MessageParam[])[0])).toContain("SUMMARY TWO");
  });

  it("the summary request fails: a warning, nothing compacted, and the request goes out with the whole conversation", async () => {
    threshold(5000);
    bigFiles(["a.txt"]);
    const scenario = scenarioOf([used(6000, reply.tools([read("a.txt", "toolu_kept")])), reply.text("done")]);
    const { handlers, replay: served } = replayHandlers(scenario);
    const failing = http.post("*/v1/messages", async ({ request }) => {
      const body = (await request.clone().json()) as MessageCreateParams;
      if (isSummaryRequest(body)) return Response.json({ type: "error", error: { type: "api_error", message: "overloaded" } }, { status: 500, headers: { "x-should-retry": "false" } });
    });
    const server = setupServer(failing, ...handlers);
    server.listen({ onUnhandledRequest: "error" });
    try {
      const messages: MessageParam[] = [{ role: "user", content: "go" }];
      await stage.agentLoop(messages);
      expect(served.verdict()).toEqual([]);
      expect(printed.join("\n")).toMatch(/\[warning\] not compacted: the summary request failed \(500 the provider had a problem: try again shortly \(overloaded\)\); the conversation is sent as it is/);
      expect(served.requests).toHaveLength(2); // the failed summary request never reached the replay
      const sent = served.requests[1].messages as MessageParam[];
      expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
      expect(resultText(blocks(sent[2])[0] as ToolResultBlockParam)).toBe("a".repeat(1000));
      expect(messages).toHaveLength(4);
    } finally {
      server.close();
    }
  });

  it("a summary that keeps failing is not asked for before every request: once, then again only when the context has grown by a tenth of the threshold", async () => {
    threshold(5000);
    bigFiles(["a.txt"]);
    // Six steps over the threshold: 6,000 input tokens, then a little more at each, then past 6,500.
    const steps = [6000, 6100, 6200, 6300, 6400, 6600].map((tokens) => used(tokens, reply.tools([read("a.txt")])));
    const { handlers, replay: served } = replayHandlers(scenarioOf([...steps, reply.text("done")]));
    let summaryRequests = 0;
    const failing = http.post("*/v1/messages", async ({ request }) => {
      if (!isSummaryRequest((await request.clone().json()) as MessageCreateParams)) return;
      summaryRequests += 1;
      return Response.json({ type: "error", error: { type: "api_error", message: "overloaded" } }, { status: 500, headers: { "x-should-retry": "false" } });
    });
    const server = setupServer(failing, ...handlers);
    server.listen({ onUnhandledRequest: "error" });
    try {
      await stage.agentLoop([{ role: "user", content: "go" }]);
      expect(served.verdict()).toEqual([]);
      // Before the second request (6,000 used) and before the last (6,600: past 6,000 + 500); not in between.
      expect(summaryRequests).toBe(2);
      const warnings = printed.filter((line) => line.startsWith("[warning] not compacted"));
      expect(warnings).toEqual([
        expect.stringMatching(/the conversation is sent as it is, and the next automatic try waits for a request past 6500 input tokens$/),
        expect.stringMatching(/the next automatic try waits for a request past 7100 input tokens$/),
      ]);
    } finally {
      server.close();
    }
  });

  it("a summary cut off by max_tokens, or none at all, is a failure too: nothing compacted", async () => {
    threshold(5000);
    bigFiles(["a.txt"]);
    const cut = reply.text("SUMMARY that stops in the mid", "max_tokens");
    const { requests } = await play(replay, [used(6000, reply.tools([read("a.txt")])), cut, reply.text("done")]);
    expect(printed.join("\n")).toContain("[warning] not compacted: the summary request failed (the summary was cut off at 8000 tokens); the conversation is sent as it is");
    expect(requests[2].messages).toHaveLength(3);
    expect(transcripts()[onlyTranscript().name].some(isSummaryMessage)).toBe(false);
  });

  it("an unwritable transcripts folder: a clear warning, no summary request, and once it can be written, everything is in it", async () => {
    threshold(5000);
    bigFiles(["a.txt", "b.txt", "c.txt", "d.txt"]);
    mkdirSync(".agent");
    writeFileSync(TRANSCRIPTS, "a file where the folder should be");
    const scenario = scenarioOf([used(6000, reply.tools([read("a.txt")])), reply.tools([read("b.txt")]), reply.tools([read("c.txt")]), reply.tools([read("d.txt")]), reply.text("done")]);
    const session = replay(scenario);
    const messages: MessageParam[] = [{ role: "user", content: "go" }];
    await stage.agentLoop(messages);
    expect(session.verdict()).toEqual([]);
    expect(session.requests.filter(isSummaryRequest)).toEqual([]);
    const screen = printed.join("\n");
    expect(screen.match(/\[warning\] the transcript cannot be written \(.+\); nothing is compacted until it can be, so nothing is lost/g)).toHaveLength(1);
    expect(screen).toMatch(/\[warning\] not compacted: the transcript cannot be written \(.+\); the conversation is sent as it is/);
    // Placeholders cannot point at a transcript that is not there: they only say how to read it again.
    const cleared = resultText((session.requests.at(-1)!.messages as MessageParam[]).flatMap(blocks).find((b) => b.type === "tool_result") as ToolResultBlockParam);
    expect(cleared).toBe('[Old result cleared to save context: read_file {"path":"a.txt"}, 1000 characters. Call read_file again for the current content.]');
    rmSync(TRANSCRIPTS);
    replay(scenarioOf([reply.text("ok")]));
    messages.push({ role: "user", content: "again" });
    await stage.agentLoop(messages);
    expect(onlyTranscript().messages).toEqual(JSON.parse(JSON.stringify(messages)));
  });

  it("a transcripts folder that is a link to outside the workspace is not written through", async () => {
    const outside = path.join(process.cwd(), "..", `outside-${path.basename(process.cwd())}`);
    mkdirSync(outside);
    try {
      mkdirSync(".agent");
      execFileSync("ln", ["-s", outside, TRANSCRIPTS]);
      const { verdict } = await play(replay, [reply.text("done")]);
      expect(verdict).toEqual([]);
      expect(readdirSync(outside)).toEqual([]);
      expect(printed.join("\n")).toMatch(/\[warning\] the transcript cannot be written \(.*leads outside the workspace through a symlink\)/);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("the working directory changes under a running conversation: the transcript stays in its workspace, nothing lands in the new one", async () => {
    // What happened once: a test ended while its replay ran on, went back to the repository,
    // and the replay's last messages were appended to the repository's own transcripts folder.
    const workspace = process.cwd();
    const elsewhere = path.join(workspace, "..", `elsewhere-${path.basename(workspace)}`);
    mkdirSync(elsewhere);
    try {
      bigFiles(["a.txt"]);
      const scenario = scenarioOf([reply.tools([read("a.txt")]), reply.tools([read("a.txt")]), reply.text("done")]);
      const { handlers, replay: served } = replayHandlers(scenario);
      // The second request arrives: the working directory moves, as the test's cleanup moved it.
      const moving = http.post("*/v1/messages", () => void (served.requests.length === 1 && process.chdir(elsewhere)));
      const server = setupServer(moving, ...handlers);
      server.listen({ onUnhandledRequest: "error" });
      const messages: MessageParam[] = [{ role: "user", content: "go" }];
      try {
        await stage.agentLoop(messages);
      } finally {
        server.close();
        process.chdir(workspace);
      }
      expect(served.verdict()).toEqual([]);
      expect(readdirSync(elsewhere)).toEqual([]);
      expect(printed.join("\n")).toContain(`[warning] the transcript cannot be written (the working directory is ${realpathSync(elsewhere)}, not this conversation's workspace ${workspace})`);
      expect(onlyTranscript().messages).toHaveLength(3); // what the first two requests carried
      // Back in its workspace, the conversation's transcript gets every message it missed.
      replay(scenarioOf([reply.text("ok")]));
      messages.push({ role: "user", content: "again" });
      await stage.agentLoop(messages);
      expect(onlyTranscript().messages).toEqual(JSON.parse(JSON.stringify(messages)));
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});

describe("s11 every message on disk, in the agent's own folder", () => {
  const workspace = useWorkspace();
  const replay = useReplay();
  usePrinted();

  /** The stage's program with a key, so that it talks to the replay. */
  async function program(args: string[], input = "") {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef");
    vi.resetModules();
    try {
      const { code, output } = await runMain(FILE, args, { input });
      expect(code, output).toBe(0);
    } finally {
      vi.unstubAllEnvs();
    }
  }

  it("one-shot mode: the reply that ends the session is in the transcript when the program ends", async () => {
    writeFileSync("a.txt", "a");
    replay(scenarioOf([reply.tools([read("a.txt", "toolu_one")]), reply.text("REPORT: a.txt holds one a.")]));
    await program(["read a.txt"]);
    const { messages } = onlyTranscript();
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(textOf(messages[3])).toBe("REPORT: a.txt holds one a.");
  });

  it("at the prompt: each turn's last reply is on disk as the turn ends, each message once", async () => {
    replay(scenarioOf([reply.text("FIRST ANSWER"), reply.text("SECOND ANSWER")]));
    await program([], "first\nsecond\n");
    expect(onlyTranscript().messages.map(textOf)).toEqual(["first", "FIRST ANSWER", "second", "SECOND ANSWER"]);
  });

  it("a turn that ends with a cut-off tool call: the results that answer it are on disk too", async () => {
    const cut = reply.tools([read("a.txt", "toolu_cut")]);
    cut.stop_reason = "max_tokens";
    replay(scenarioOf([cut]));
    const messages: MessageParam[] = [{ role: "user", content: "go" }];
    await stage.agentLoop(messages);
    expect(messages).toHaveLength(3);
    expect(onlyTranscript().messages).toEqual(JSON.parse(JSON.stringify(messages)));
  });

  it("transcripts go to .agent/transcripts/, whose .gitignore keeps them out of git; the project's own files stay untracked-visible", async () => {
    execFileSync("git", ["init", "-q"]);
    writeFileSync("notes.md", "the project's own file");
    replay(scenarioOf([reply.text("done")]));
    await stage.agentLoop([{ role: "user", content: "go" }]);
    expect(readFileSync(path.join(TRANSCRIPTS, ".gitignore"), "utf8")).toBe("*\n");
    expect(Object.keys(transcripts())).toHaveLength(1);
    expect(existsSync(".transcripts")).toBe(false);
    const untracked = execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], { cwd: workspace.dir, encoding: "utf8" });
    expect(untracked.trim().split("\n")).toEqual(["?? notes.md"]);
  });
});

describe("s11 compaction asked for", () => {
  useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();

  it("the compact tool: a read (no approval needed), and the compaction happens before the next request, with the focus asked for", async () => {
    expect(stage.registry.getTool("compact")?.kind).toBe("read");
    expect(stage.TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file", "compact"]);
    bigFiles(["a.txt"]);
    const { requests } = await play(replay, [
      reply.tools([read("a.txt", "toolu_c_read"), { id: "toolu_c_compact", name: "compact", input: { focus: "the file names" } }]),
      summaryReply(),
      reply.text("done"),
    ]);
    expect(requests.map(isSummaryRequest)).toEqual([false, true, false]);
    const summary = requests[1].messages as MessageParam[];
    // The compact call is answered in the conversation the summary is made from: no pair is split.
    expect(blocks(summary[2]).filter((b) => b.type === "tool_result").map((b) => b.tool_use_id)).toEqual(["toolu_c_read", "toolu_c_compact"]);
    expect(textOf(summary[2])).toMatch(/Keep in particular: the file names$/);
    expect(requests[2].messages).toHaveLength(1);
    expect(printed.join("\n")).toContain("[compacting the context: the model asked for it]");
  });

  it("the compact tool when the summary fails: the model reads the tool's result, which says so", async () => {
    const cut = reply.text("", "end_turn");
    const { requests } = await play(replay, [reply.tools([{ id: "toolu_c2", name: "compact", input: {} }]), cut, reply.text("done")]);
    expect(printed.join("\n")).toContain("[warning] not compacted: the summary request failed (the model sent an empty reply (stop_reason end_turn))");
    expect(resultText(blocks((requests[2].messages as MessageParam[])[2])[0] as ToolResultBlockParam)).toMatch(/If you can still read this, the summary could not be made and nothing was compacted\.$/);
  });
});

describe("s11 /compact at the prompt", () => {
  const workspace = useWorkspace();
  const replay = useReplay();

  it("compacts between two turns with the focus given; the next prompt joins the summary; with nothing new, says so", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef");
    vi.resetModules();
    try {
      const file = stageFile("s11");
      const session = replay(scenarioOf([reply.text("first answer"), summaryReply("SUMMARY OF THE FIRST"), reply.text("second answer")]));
      const { code, output } = await runMain(file, [], { input: "first\n/compact the numbers\n/compact\nsecond\n" });
      expect(code, output).toBe(0);
      expect(output).toContain("s11: Context Compaction. Type a request (or /compact); q, exit or an empty line leaves.");
      expect(session.requests.map(isSummaryRequest)).toEqual([false, true, false]);
      expect(textOf((session.requests[1].messages as MessageParam[]).at(-1)!)).toMatch(/Keep in particular: the numbers$/);
      expect(output).toContain("[compacting the context: asked for with /compact]");
      expect(output).toContain("[nothing to compact: the conversation has nothing new since its last summary]");
      const last = session.requests[2].messages as MessageParam[];
      expect(last).toHaveLength(1);
      expect(blocks(last[0]).map((b) => b.text)).toEqual([expect.stringContaining("SUMMARY OF THE FIRST"), "second"]);
      expect(textOf(last[0])).not.toContain("The person's latest request"); // the first was answered
      expect(readdirSync(path.join(workspace.dir, TRANSCRIPTS)).filter((name) => name.endsWith(".jsonl"))).toHaveLength(1);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe("s11 settings", () => {
  useWorkspace();

  it.each(["abc", "999", "1.5", "160k"])("COMPACT_THRESHOLD=%s: one clear line at start, exit 1, nothing runs", async (value) => {
    vi.stubEnv("COMPACT_THRESHOLD", value);
    vi.resetModules();
    try {
      const { code, output } = await runMain(FILE);
      expect(code).toBe(1);
      expect(output).toBe(`[error] COMPACT_THRESHOLD "${value}" is not a number of tokens: give a whole number, at least 1000 (the default is 160000)\n`);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("a replay's compactThreshold that is not a number of tokens is refused, naming it", () => {
    expect(() => stage.prepareReplay({ compactThreshold: 12.5 })).toThrow("the scenario's compactThreshold (12.5) is not a whole number of at least 1000");
  });
});

describe("s11 COMPACT_THRESHOLD", () => {
  useWorkspace();
  const replay = useReplay();
  usePrinted();

  it.each([
    [undefined, 160_000],
    ["5000", 5000],
  ])("COMPACT_THRESHOLD=%s compacts past %i tokens, not at them", async (value, tokens) => {
    // The tests' own copy of the stage was loaded with no COMPACT_THRESHOLD: the default.
    if (value) vi.stubEnv("COMPACT_THRESHOLD", value);
    if (value) vi.resetModules();
    try {
      const fresh = value ? ((await import(FILE)) as Stage) : stage;
      const run = async (replies: Message[]) => {
        const session = replay(scenarioOf(replies));
        await fresh.agentLoop([{ role: "user", content: "go" }]);
        return session.requests.map(isSummaryRequest);
      };
      writeFileSync("a.txt", "a");
      expect(await run([used(tokens, reply.tools([read("a.txt")])), reply.text("done")])).toEqual([false, false]);
      expect(await run([used(tokens + 1, reply.tools([read("a.txt")])), summaryReply(), reply.text("done")])).toEqual([false, true, false]);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe("s11 the demo", () => {
  useWorkspace();
  usePrinted();

  it("compacts once, right after the fix, continues from the summary, and loses nothing: the transcript read back holds every message sent", async () => {
    const scenario = loadScenario("s11");
    const session = await replayScenario(stage, scenario, { workspace: process.cwd() });
    expectWholeSession("s11", session, scenario);
    expect(requestProblems(session.requests)).toEqual([]);
    const summaryAt = session.requests.findIndex(isSummaryRequest);
    expect(session.requests.filter(isSummaryRequest)).toHaveLength(1);
    // The request before the summary carried the conversation; the one after, the summary alone.
    const bytes = session.requests.map((request) => JSON.stringify(request).length);
    expect(session.requests[summaryAt + 1].messages).toHaveLength(1);
    expect(bytes[summaryAt + 1]).toBeLessThan(bytes[summaryAt - 1] / 2);
    // It went on correctly: the fix, the new test and the sorted report are all there.
    expect(readFileSync("src/report.js", "utf8")).toContain(".filter((item) => item.quantity < item.min)");
    expect(readFileSync("src/report.js", "utf8")).toContain(".sort((a, b) => b.min - b.quantity - (a.min - a.quantity))");
    const lastRun = session.messages.at(-2)!;
    expect(textOf(lastRun)).toMatch(/N-08 .*\n.*B-12 .*\n.*S-40 .*\n.*P-120 [\s\S]*report tests: 4 passed/);
    // Nothing lost: every message any request carried is in the transcript, whole.
    const transcript = onlyTranscript().messages;
    const onDisk = new Set(transcript.map((message) => JSON.stringify(message)));
    expect(transcript.filter((m) => !isSummaryMessage(m))).toEqual(JSON.parse(JSON.stringify(session.messages)));
    const fullResults = new Map(transcript.flatMap(blocks).filter((b) => b.type === "tool_result").map((b) => [b.tool_use_id, b]));
    for (const request of session.requests) {
      for (const message of request.messages as MessageParam[]) {
        if (onDisk.has(JSON.stringify(message))) continue;
        // Sent otherwise: a placeholder for a result kept whole on disk, the summary joined with a
        // prompt, or the harness's own instruction to summarise (not part of the conversation).
        for (const block of blocks(message)) {
          if (block.type === "text" && block.text!.startsWith("Summarise the conversation so far")) continue;
          if (block.type === "tool_result") expect(fullResults.get(block.tool_use_id!), block.tool_use_id).toBeDefined();
          else if (block.type === "text") expect(transcript.some((m) => textOf(m).includes(block.text!)), block.text).toBe(true);
          else expect(onDisk.has(JSON.stringify(message))).toBe(true);
        }
      }
    }
  });
});

describe("lib/runtime/program.ts: a stage's commands at the prompt (slashCommands)", () => {
  useWorkspace();

  const program = (commands?: StageProgram["slashCommands"]): StageProgram & { seen: MessageParam[][] } => {
    const seen: MessageParam[][] = [];
    return {
      stage: "s99",
      title: "Probe",
      hasKey: true,
      args: [],
      seen,
      slashCommands: commands,
      agentLoop: async (messages) => {
        seen.push(structuredClone(messages));
        messages.push({ role: "assistant", content: [{ type: "text", text: "answer" }] });
      },
    };
  };

  it("runs a command with the conversation and the rest of the line; the line never reaches the model; other words are requests", async () => {
    const calls: [number, string][] = [];
    const probe = program({ "/note": (history, rest) => void calls.push([history.length, rest]) });
    const { value } = await onScreen("hello\n/note  keep   this\n/other thing\n", () => runProgram(probe));
    expect(value).toBe(0);
    expect(calls).toEqual([[2, "keep this"]]);
    expect(probe.seen.map((messages) => messages.at(-1)!.content)).toEqual(["hello", "/other thing"]);
  });

  it("a stage without commands sends /compact to the model as a request, as before", async () => {
    const probe = program(undefined);
    const { value, output } = await onScreen("/compact\n", () => runProgram(probe));
    expect(value).toBe(0);
    expect(output).toContain("s99: Probe. Type a request; q, exit or an empty line leaves.");
    expect(probe.seen.map((messages) => messages.at(-1)!.content)).toEqual(["/compact"]);
  });

  it("a command that fails: one line, and the next prompt still comes", async () => {
    const probe = program({ "/boom": () => Promise.reject(new Error("it broke")) });
    const { value, output } = await onScreen("/boom\nhello\n", () => runProgram(probe));
    expect(output).toContain("[error] it broke");
    expect(probe.seen).toHaveLength(1);
    expect(value).toBe(0);
  });

  it("not while recording: a replay of the recording could not repeat it", async () => {
    const ran: string[] = [];
    const probe = { ...program({ "/note": () => void ran.push("ran") }), args: ["--record", path.join(process.cwd(), "rec.json")] };
    const { output } = await onScreen("/note\n", () => runProgram(probe));
    expect(output).toContain("[/note is not available while recording: a replay of the recording could not repeat it]");
    expect(ran).toEqual([]);
  });
});
