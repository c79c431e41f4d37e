// s05's ask_user: the loop waits for a person, and never for someone who is not there.
// Each rule runs through the real agent loop with recorded replies, so every test also
// shows what the model received back and that the loop carried on afterwards.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { agentLoop } from "../agents/s05_ask_user.ts";
import { loadScenario } from "../lib/course/scenario.ts";
import { lineTerminal, nobody, scriptedTerminal, useTerminal, type Terminal } from "../lib/runtime/terminal.ts";
import { reply, resultText, runMain, scenarioOf, stageFile, toolResults, useReplay, useWorkspace, runTurns, usePrinted } from "./helpers.ts";

const OPTIONS = ["Delete all 3 .log files", "Delete only the .log files older than a week", "Keep everything"];
const NO_ONE_THERE = "No one answered (no person at the terminal). Decide without them, choosing the safe option.";
const NO_ANSWER = "No one answered (the input ended or the person pressed Ctrl-C). Decide without them, choosing the safe option.";

/** A text stream standing in for stdout, keeping everything written to it. */
function screen() {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (chunk: Buffer) => (text += chunk.toString()));
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => text };
}

/** A person who types `lines`, one per question, and whose screen the test can read. */
function person(lines: string[]) {
  const shown = screen();
  return { terminal: scriptedTerminal(lines, shown.stream), screen: shown.text };
}

describe("s05 ask_user", () => {
  const workspace = useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();
  afterEach(() => useTerminal(nobody));

  /** One turn where the model calls ask_user with `input`, then ends: what did the model get back? */
  async function ask(input: Record<string, unknown>, who: Terminal) {
    useTerminal(who);
    const session = replay(
      scenarioOf([reply.tools([{ id: "toolu_ask", name: "ask_user", input }]), reply.text("Carrying on.")]),
    );
    const messages: MessageParam[] = [{ role: "user", content: "clean up" }];
    await agentLoop(messages);
    // The loop carried on: the answer went back to the model, which replied and ended the turn.
    expect(session.verdict()).toEqual([]);
    expect(messages.at(-1)?.role).toBe("assistant");
    const [result] = toolResults(session, 1);
    expect(result.tool_use_id).toBe("toolu_ask");
    return result;
  }

  it("a number picks the option, and the model is told which one, by number and text", async () => {
    const you = person(["2"]);
    const result = await ask({ question: "Delete the logs?", options: OPTIONS }, you.terminal);
    expect(result.is_error).toBeFalsy();
    expect(resultText(result)).toBe('The person chose option 2: "Delete only the .log files older than a week"');
    // The person saw the question, every option numbered, the hint, then one prompt.
    const shown = printed.join("\n");
    expect(shown).toContain("Delete the logs?");
    expect(shown).toContain("  1. Delete all 3 .log files\n  2. Delete only the .log files older than a week\n  3. Keep everything");
    expect(shown).toContain("type a number or your own answer");
    expect(you.screen()).toBe("answer> 2\n");
  });

  it("shows the model's question and options with their escapes written out, never obeyed by the terminal", async () => {
    const you = person(["1"]);
    await ask({ question: "Delete the logs?\r\x1b[2KKeep the logs?", options: ["Yes\u202e", "No\x1b[8m"] }, you.terminal);
    const shown = printed.join("\n");
    expect(shown).toContain("Delete the logs?\\r\\e[2KKeep the logs?");
    expect(shown).toContain("  1. Yes\\u{202e}\n  2. No\\e[8m");
    expect(shown).not.toMatch(/\r|\x1b|\u202e/);
  });

  it("a free answer goes to the model as typed, quoted", async () => {
    const you = person(['  only the ones from "May"  ']);
    const result = await ask({ question: "Delete the logs?", options: OPTIONS }, you.terminal);
    expect(resultText(result)).toBe('The person answered: "only the ones from \\"May\\""');
  });

  it("an open question (no options) takes any answer, numbers included", async () => {
    const result = await ask({ question: "How many days of logs should I keep?" }, person(["7"]).terminal);
    expect(resultText(result)).toBe('The person answered: "7"');
    expect(printed.join("\n")).not.toMatch(/ 1\. /);
  });

  it("an empty options list is an open question too", async () => {
    const result = await ask({ question: "Which folder?", options: [] }, person(["build"]).terminal);
    expect(resultText(result)).toBe('The person answered: "build"');
  });

  it("a number out of range says so and asks again, then takes a valid number", async () => {
    const you = person(["7", "0", "3"]);
    const result = await ask({ question: "Delete the logs?", options: OPTIONS }, you.terminal);
    expect(resultText(result)).toBe('The person chose option 3: "Keep everything"');
    expect(printed.join("\n")).toContain("There is no option 7: type a number from 1 to 3, or your own answer.");
    expect(printed.join("\n")).toContain("There is no option 0");
    expect(you.screen()).toBe("answer> 7\nanswer> 0\nanswer> 3\n");
  });

  it("an empty line is not an answer: it asks again", async () => {
    const you = person(["", "1"]);
    const result = await ask({ question: "Delete the logs?", options: OPTIONS }, you.terminal);
    expect(resultText(result)).toBe('The person chose option 1: "Delete all 3 .log files"');
    expect(you.screen()).toBe("answer> \nanswer> 1\n");
  });

  it("with no person at the terminal, answers at once that no one answered, without asking", async () => {
    // A terminal that would never answer: if ask_user asked it, the test would time out.
    const asks = vi.fn(() => new Promise<string | null>(() => {}));
    const started = Date.now();
    const result = await ask({ question: "Delete the logs?", options: OPTIONS }, { hasPerson: false, ask: asks, close() {} });
    expect(resultText(result)).toBe(NO_ONE_THERE);
    expect(result.is_error).toBeFalsy();
    expect(asks).not.toHaveBeenCalled();
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("when the terminal gives no line (end of input, Ctrl-C), answers at once that no one answered", async () => {
    const you = person([]); // a person is there, but the input ends at the question
    const result = await ask({ question: "Delete the logs?", options: OPTIONS }, you.terminal);
    expect(resultText(result)).toBe(NO_ANSWER);
    expect(you.screen()).toBe("answer> \n");
  });

  it.each([
    ["an empty question", { question: "" }, /"question" is empty/],
    ["a blank question", { question: "  \n " }, /"question" is empty/],
    ["a missing question", { options: OPTIONS }, /"question" must be a string/],
    ["one option", { question: "Delete?", options: ["Yes"] }, /2 to 4 choices, not 1/],
    ["five options", { question: "Delete?", options: ["a", "b", "c", "d", "e"] }, /2 to 4 choices, not 5/],
    ["the same option twice", { question: "Delete?", options: ["Yes", "No", "yes "] }, /same choice twice/],
    ["an empty option", { question: "Delete?", options: ["Yes", " "] }, /empty choice/],
    ["options that are not strings", { question: "Delete?", options: [1, 2] }, /list of strings/],
    ["options given as one string", { question: "Delete?", options: "yes, no" }, /list of strings/],
  ])("refuses %s with a clear error, without asking the person", async (_name, input, message) => {
    const you = person(["1"]);
    const result = await ask(input, you.terminal);
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toMatch(/^Error: /);
    expect(resultText(result)).toMatch(message);
    expect(you.screen()).toBe("");
  });

  it("replays the demo: it asks before deleting, and deletes only after the typed answer", async () => {
    const scenario = loadScenario("s05");
    for (const [file, text] of Object.entries(scenario.files ?? {})) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, text);
    }
    const you = person(scenario.answers ?? []);
    useTerminal(you.terminal);
    const session = replay(scenario);
    await runTurns(agentLoop, scenario.prompts);
    expect(session.verdict()).toEqual([]);
    // The logs were all there when the model asked, and it got the person's choice back.
    expect(resultText(toolResults(session, 1)[0])).toMatch(/build-2024-05-01\.log[\s\S]*build-2024-05-03\.log/);
    const [answer] = toolResults(session, 2);
    expect(answer.tool_use_id).toBe("toolu_s05_demo_02");
    expect(resultText(answer)).toBe('The person chose option 1: "Delete all 3 .log files"');
    expect(you.screen()).toBe("answer> 1\n");
    expect(readdirSync(workspace.dir).filter((f) => f.endsWith(".log"))).toEqual([]);
    expect(existsSync(path.join(workspace.dir, "src/app.js"))).toBe(true);
  });
});

/**
 * The real lineTerminal on a stand-in for a terminal: keys go in, the screen comes out.
 * console.log writes to the same screen, as it does in the program.
 */
describe("s05 at a real terminal: the stage's prompt and the question share it", () => {
  useWorkspace();
  const replay = useReplay();
  let keyboard: PassThrough & { isTTY?: boolean };
  let shown: ReturnType<typeof screen>;
  let term: Terminal;
  let exits: ReturnType<typeof vi.fn>;

  beforeEach(() => {
    keyboard = Object.assign(new PassThrough(), { isTTY: true });
    shown = screen();
    Object.assign(shown.stream, { isTTY: true, columns: 200 });
    vi.spyOn(console, "log").mockImplementation((...args) => void shown.stream.write(`${args.join(" ")}\n`));
    exits = vi.fn();
    vi.spyOn(process, "exit").mockImplementation(exits as never);
    term = lineTerminal(keyboard as unknown as NodeJS.ReadStream, shown.stream);
    useTerminal(term);
  });
  afterEach(() => {
    term.close();
    vi.restoreAllMocks();
    useTerminal(nobody);
  });

  // What the person sees, without the cursor movements readline sends.
  const plain = () => shown.text().replace(/\x1b\[[0-9;]*[A-Za-z]/g, "").replace(/\r\n/g, "\n");
  const count = (text: string) => plain().split(text).length - 1;
  async function until(done: () => boolean) {
    for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(done()).toBe(true);
  }
  /** Type `keys` once the `nth` `prompt` is on screen, as a person would. */
  async function typeAt(prompt: string, nth: number, keys: string) {
    await until(() => count(prompt) >= nth);
    keyboard.write(keys);
  }

  function cleanUpSession() {
    return replay(
      scenarioOf([
        reply.tools([{ id: "toolu_ask", name: "ask_user", input: { question: "Delete the logs?", options: OPTIONS } }]),
        reply.text("Carrying on."),
        reply.text("Next turn."),
      ]),
    );
  }

  it("prompt, then question, then prompt: each line arrives where it belongs, each prompt shown once per ask", async () => {
    const session = cleanUpSession();
    const messages: MessageParam[] = [];

    const first = term.ask("s05 >> ");
    await typeAt("s05 >> ", 1, "clean up\r");
    messages.push({ role: "user", content: (await first)! });
    const turn = agentLoop(messages);
    await typeAt("answer> ", 1, "7\r"); // out of range: asked again
    await typeAt("answer> ", 2, "2\r");
    await turn;
    const second = term.ask("s05 >> ");
    await typeAt("s05 >> ", 2, "list them\r");
    expect(await second).toBe("list them");
    messages.push({ role: "user", content: "list them" });
    await agentLoop(messages);

    expect(messages[0].content).toBe("clean up");
    expect(resultText(toolResults(session, 1)[0])).toBe('The person chose option 2: "Delete only the .log files older than a week"');
    expect(session.verdict()).toEqual([]);
    expect(count("s05 >> ")).toBe(2);
    expect(count("answer> ")).toBe(2);
    expect(count("Delete the logs?\n")).toBe(1);
    const screenText = plain();
    const order = [
      "s05 >> clean up\n",
      "Delete the logs?\n",
      "  1. Delete all 3 .log files\n",
      "answer> 7\n",
      "There is no option 7",
      "answer> 2\n",
      "Carrying on.\n",
      "s05 >> list them\n",
    ].map((text) => screenText.indexOf(text));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it("a line typed while the agent works is kept for the next prompt, not taken as the answer to a question", async () => {
    const session = cleanUpSession();
    const messages: MessageParam[] = [{ role: "user", content: "clean up" }];
    const turn = agentLoop(messages);
    keyboard.write("list them\r"); // typed ahead, before the question is on screen
    await typeAt("answer> ", 1, "3\r");
    await turn;
    expect(resultText(toolResults(session, 1)[0])).toBe('The person chose option 3: "Keep everything"');
    expect(await term.ask("s05 >> ")).toBe("list them");
  });

  it("Ctrl-C at the question means no answer: the agent carries on, the program stays, and what was typed does not reach the next prompt", async () => {
    const session = cleanUpSession();
    const turn = agentLoop([{ role: "user", content: "clean up" }]);
    await typeAt("answer> ", 1, "del");
    keyboard.write("\x03"); // Ctrl-C
    await turn;
    expect(resultText(toolResults(session, 1)[0])).toBe(NO_ANSWER);
    expect(exits).not.toHaveBeenCalled();

    const next = term.ask("s05 >> ");
    await typeAt("s05 >> ", 1, "next\r");
    expect(await next).toBe("next");
    expect(plain()).toContain("answer> del^C\n");
    expect(plain()).toContain("s05 >> next\n");
  });

  it("end of input (Ctrl-D) at the question means no answer, and the prompt after it ends at once", async () => {
    const session = cleanUpSession();
    const turn = agentLoop([{ role: "user", content: "clean up" }]);
    await until(() => count("answer> ") === 1);
    keyboard.end();
    await turn;
    expect(resultText(toolResults(session, 1)[0])).toBe(NO_ANSWER);
    expect(await term.ask("s05 >> ")).toBeNull();
  });
});

describe("s05 as a program", () => {
  const workspace = useWorkspace();
  const replay = useReplay();

  it("with piped input (no person) it never waits: the model hears no one answered, and the next piped line is the next prompt", async () => {
    // In this process, as a pipe gives it: stdin is not a terminal, holds two lines, then ends.
    const session = replay(
      scenarioOf(
        [
          reply.tools([{ id: "toolu_ask", name: "ask_user", input: { question: "Delete the logs?", options: OPTIONS } }]),
          reply.text("No answer, so I kept everything."),
          reply.text("Here they are."),
        ],
        { prompts: ["clean up", "list the logs"] },
      ),
    );
    vi.stubEnv("ANTHROPIC_API_KEY", "test-key");
    vi.resetModules();
    // Loaded afresh with the key, and afresh again afterwards, without it.
    const run = await runMain(stageFile("s05"), [], { input: "clean up\nlist the logs\n" }).finally(() => {
      vi.unstubAllEnvs();
      vi.resetModules();
    });
    expect(run.code, run.output).toBe(0);
    expect(session.verdict()).toEqual([]);
    const [answer] = toolResults(session, 1);
    expect(answer.tool_use_id).toBe("toolu_ask");
    expect(resultText(answer)).toBe(NO_ONE_THERE);
    // The second piped line reached the stage's prompt, not the question.
    expect(session.requests[2].messages.at(-1)).toEqual({ role: "user", content: "list the logs" });
    expect(run.output).toContain("s05 >> list the logs");
    expect(run.output).not.toContain("answer> ");
  });

  it("with no key, replays the demo: the recorded answer is typed, and the logs are gone afterwards", async () => {
    vi.stubEnv("TMPDIR", workspace.dir);
    const run = await runMain(stageFile("s05")).finally(() => vi.unstubAllEnvs());
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain("Which build logs should I delete?");
    expect(run.output).toContain("answer> 1\n");
    expect(run.output).toContain('The person chose option 1: "Delete all 3 .log files"');
    // The replay's workspace is made under TMPDIR, which this test points at its own folder.
    const [demo] = readdirSync(workspace.dir).filter((name) => name.startsWith("workbook-s05-"));
    expect(demo).toBeDefined();
    expect(readdirSync(path.join(workspace.dir, demo)).sort()).toEqual(["src"]);
    expect(existsSync(path.join(workspace.dir, demo, "src/app.js"))).toBe(true);
  });
});
