// Exercise s18: background tasks and their notices. The task record, TaskOutput (the output
// as it arrives, both ends kept), killTask, the task tools, the notice queue (notify,
// takeNotices) and the loop are given; startTask, taskEnded, readTask, withNotices and
// addNoticesToPrompt are taken out. The checks start real commands and look at them by
// process id, and read the requests the model received, as the API would.
import { existsSync, readFileSync } from "node:fs";
import type { Message, MessageCreateParams, MessageParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import { defineExercise, notWrittenIn, quote, reply, resultText, say, scenarioOf, type CheckKit } from "../lib/course/exercises.ts";

type Stage = {
  TASK_LIMITS: { running: number; timeLimitMs: number; finishedKept: number; noticeLines: number };
  taskList(): readonly { id: string; status: string }[];
  prepareReplay(): void;
  turnWithNotices(messages: MessageParam[]): Promise<void>;
};

/** The stage's own functions the checks use besides the tools; a fresh session, put back afterwards. */
function stageOf(t: CheckKit): Stage {
  const stage = t.stage as unknown as Stage;
  const limits = { ...stage.TASK_LIMITS };
  stage.prepareReplay();
  t.cleanup(() => {
    stage.prepareReplay(); // ends what the check left running
    Object.assign(stage.TASK_LIMITS, limits);
  });
  return stage;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Look every 20 ms until `check` holds, for at most `ms`; whether it held. */
async function until(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await sleep(20);
  }
  return true;
}

/** Whether a process runs (a zombie has ended: /proc says so on Linux). */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !["Z", "X"].includes(stat[stat.lastIndexOf(")") + 2]);
  } catch {
    if (process.platform === "linux") return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {} // ended already
  }
}

/** The process ids a command wrote to `file`, once it has written `count`. */
async function pidsIn(t: CheckKit, file: string, count: number): Promise<number[]> {
  const read = () => (t.read(file) ?? "").trim().split(/\s+/).filter(Boolean).map(Number);
  await until(() => read().length >= count);
  const pids = read();
  t.cleanup(() => killAll(pids));
  return pids;
}

const start = (t: CheckKit, command: string) => t.tool("bash")({ command, run_in_background: true });
const read = (t: CheckKit, id: string) => t.tool("bash_output")({ task_id: id });
const statusOf = (stage: Stage, id: string) => stage.taskList().find((task) => task.id === id)?.status;

/** Wait until task `id` has a final status; fail when it never gets one. */
async function ended(t: CheckKit, stage: Stage, id: string, ms = 3000): Promise<void> {
  if (await until(() => (statusOf(stage, id) ?? "running") !== "running", ms)) return;
  t.fail(
    say(`${id} still has the status ${quote(statusOf(stage, id))} after its command ended: taskEnded never set its final status`, `コマンドが終わったあとも ${id} の状態が ${quote(statusOf(stage, id))} のままです。taskEnded が最後の状態を入れていません`),
  );
}

// ---------------------------------------------------------------------------------------
// What the model received

type Block = { type: string; id?: string; name?: string; input?: Record<string, unknown>; tool_use_id?: string };
const blocksOf = (message: MessageParam): Block[] => (typeof message.content === "string" ? [] : (message.content as Block[]));

/**
 * What the API would refuse, or a notice done the wrong way: roles that do not alternate, a
 * tool_use not answered by the very next message (each id, in order), anything but tool
 * results in the message that answers them.
 */
function requestProblems(requests: MessageCreateParams[]): string[] {
  const problems: string[] = [];
  for (const [n, request] of requests.entries()) {
    const messages = request.messages as MessageParam[];
    messages.forEach((message, i) => {
      const where = `request ${n + 1}, message ${i + 1}`;
      if (message.role !== (i % 2 === 0 ? "user" : "assistant")) problems.push(`${where} is from ${message.role}, where the roles must alternate`);
      if (message.role !== "user") return;
      const asked = i > 0 ? blocksOf(messages[i - 1]).filter((b) => b.type === "tool_use").map((b) => b.id) : [];
      const blocks = blocksOf(message);
      const answered = blocks.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id);
      if (typeof message.content === "string" && asked.length > 0) problems.push(`${where} is text where the results of [${asked.join(", ")}] must be`);
      else if (asked.join(",") !== answered.join(",")) problems.push(`${where} answers [${answered.join(", ")}], the calls before it were [${asked.join(", ")}]`);
      const other = blocks.find((b) => b.type !== "tool_result");
      if (answered.length > 0 && other) problems.push(`${where} holds a ${other.type} block beside the tool results: a notice must ride inside a result`);
    });
  }
  return problems;
}

function mustBeValid(t: CheckKit, requests: MessageCreateParams[]): void {
  const problems = requestProblems(requests);
  if (problems.length > 0) t.fail(say(`a request the API would refuse, or a notice outside a result: ${problems[0]}`, `API が拒否するリクエストか、結果の外の知らせがあります: ${problems[0]}`));
}

/**
 * The tool results a notice rode in, over the whole session (its last request holds it all),
 * by tool_use id: the results that speak of a task though their call was not about one (a
 * background bash, bash_output or kill_task name their task themselves).
 */
function noticed(requests: MessageCreateParams[]): string[] {
  const messages = (requests.at(-1)?.messages ?? []) as MessageParam[];
  const aboutTasks = new Set(
    messages.flatMap(blocksOf).flatMap((b) => (b.type === "tool_use" && (b.name === "bash_output" || b.name === "kill_task" || (b.name === "bash" && b.input?.run_in_background === true)) ? [b.id] : [])),
  );
  const ids: string[] = [];
  for (const message of messages) {
    if (message.role !== "user" || typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type === "tool_result" && !aboutTasks.has(block.tool_use_id) && /\bbg_\d/.test(resultText(block))) ids.push(block.tool_use_id);
    }
  }
  return ids;
}

function mustNoticeIn(t: CheckKit, requests: MessageCreateParams[], expected: string[], what: { en: string; ja: string }): void {
  const got = noticed(requests);
  if (got.join(",") !== expected.join(",")) {
    const list = (ids: string[]) => (ids.length === 0 ? "none" : ids.join(", "));
    t.fail(
      say(`${what.en}: a notice rode in the results of [${list(got)}]`, `${what.ja}: 知らせが入っていたのは [${list(got)}] の結果でした`),
      say(`a notice in the results of [${list(expected)}] only`, `知らせは [${list(expected)}] の結果にだけ入る`),
    );
  }
}

// The build ends while the model runs something else: that command waits until the build has ended.
const BUILD = { name: "bash", input: { command: "echo compiling; touch built; echo built app", run_in_background: true } };
const MEANWHILE = (id?: string) => ({ id, name: "bash", input: { command: "while [ ! -e built ]; do sleep 0.02; done; sleep 0.2; echo tests ok" } });

async function played(t: CheckKit, replies: Message[], answers: string[]) {
  const session = t.asRecorded(await t.replay(scenarioOf(replies, { answers })));
  for (const error of session.turnErrors) {
    const text = error instanceof Error ? error.message : String(error);
    t.fail(say(`a turn ended with an error: ${text}`, `ターンがエラーで終わりました: ${text}`));
  }
  mustBeValid(t, session.requests);
  return session;
}

const resultOf = (requests: MessageCreateParams[], id: string) =>
  ((requests.at(-1)?.messages ?? []) as MessageParam[]).flatMap(blocksOf).find((b) => b.type === "tool_result" && b.tool_use_id === id) as ToolResultBlockParam | undefined;

export default defineExercise({
  stage: "s18",
  title: say("Background tasks and their notices", "バックグラウンドタスクと終了の知らせ"),
  mechanism: say(
    "start a command as a task without waiting, read what it printed since the last read, and tell the model when it ends: inside a tool result, or with the next prompt",
    "コマンドを待たずにタスクとして始め、前回から後の出力を読み、終わったらモデルに知らせる（ツール結果の中か、次のプロンプトと一緒に）",
  ),
  minutes: 45,
  takeOut: [
    {
      function: "startTask",
      task: say(
        "refuse a task while TASK_LIMITS.running run, naming them; otherwise record a Task (id bg_N) and start runCommand without awaiting it: its output into task.output, its time limit, onStart giving task.end; when the promise settles, call taskEnded with the status.",
        "TASK_LIMITS.running 個が動いている間は、それらを名指しして拒否します。そうでなければ Task（id は bg_N）を記録し、runCommand を await せずに始めます。出力は task.output へ、時間制限を渡し、onStart で task.end を受け取ります。Promise が決着したら状態を添えて taskEnded を呼びます。",
      ),
    },
    {
      function: "taskEnded",
      task: say(
        "set the final status (exit code N, ended by the time limit, ended by kill_task), finish the output, queue a notice with notify, and forget the oldest finished tasks beyond TASK_LIMITS.finishedKept.",
        "最後の状態（exit code N、時間制限で終了、kill_task で終了）を入れ、出力を締めくくり、notify で知らせを予約し、TASK_LIMITS.finishedKept を超えた古い終了済みタスクを忘れます。",
      ),
    },
    {
      function: "readTask",
      task: say(
        "the task's id and status, then what it printed since the last read (takeUnread); a read that shows the end makes its notice unnecessary (forgetNotice).",
        "タスクの id と状態、そして前回読んだあとに出力された分（takeUnread）を返します。終わりを見せた読み取りのあとでは、知らせは要りません（forgetNotice）。",
      ),
    },
    {
      function: "withNotices",
      task: say("put the waiting notices (takeNotices) after the text of the last tool result; keep its tool_use_id and is_error, and the other results as they were.", "待っている知らせ（takeNotices）を最後のツール結果のテキストのあとに入れます。tool_use_id と is_error、ほかの結果はそのままにします。"),
    },
    {
      function: "addNoticesToPrompt",
      task: say("when the last message is the person's prompt (text), put the waiting notices in front of it, in the same message.", "最後のメッセージが人のプロンプト（テキスト）なら、待っている知らせをその前に、同じメッセージの中に入れます。"),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "bash waits for the background task to end before it answers",
      change: [["    const task = startTask(command, params.timeout === undefined ? undefined : Number(params.timeout) * 1000);\n", "    const task = startTask(command, params.timeout === undefined ? undefined : Number(params.timeout) * 1000);\n    await task.ended;\n"]],
      fails: "at-once",
    },
    {
      name: "off by one: a ninth task starts while eight run",
      change: [["if (busy.length >= TASK_LIMITS.running) {", "if (busy.length > TASK_LIMITS.running) {"]],
      fails: "limits",
    },
    {
      name: "the refusal of the ninth does not say which tasks are running",
      change: [["the most at once: ${busy.map(named).join(\", \")}. Read them", "the most at once. Read them"]],
      fails: "limits",
    },
    {
      name: "the time limit ignored: every task gets ten minutes",
      change: [["task.ended = runCommand(command, { cwd: workspace(), timeoutMs: timeLimitMs,", "task.ended = runCommand(command, { cwd: workspace(), timeoutMs: 10 * 60_000,"]],
      fails: "limits",
    },
    {
      name: "a task ended by its time limit reported as a failure",
      change: [["/^timed out/.test(error.message) ? `ended by the time limit (${timeLimitMs / 1000} s)` : ", ""]],
      fails: "limits",
    },
    {
      name: "finished tasks kept for ever",
      change: [["  tasks = tasks.filter((other) => !forgotten.includes(other));\n", ""]],
      fails: "limits",
    },
    {
      name: "bash_output gives everything the task printed, each time",
      change: [["  const fresh = task.output.takeUnread();", "  const fresh = task.output.text();"]],
      fails: "read-since",
    },
    {
      name: "the exit code lost: a finished task only says it ended",
      change: [[": code === null ? \"ended by a signal\" : `exit code ${code}`),", ": \"ended\"),"]],
      fails: "read-since",
    },
    {
      name: "kill_task cannot end the task: task.end is never given",
      change: [["output: task.output, onStart: (end) => (task.end = end) }", "output: task.output }"]],
      fails: "kill",
    },
    {
      name: "a task the model killed is reported as ended by a signal",
      change: [["taskEnded(task, task.killed ? \"ended by kill_task\" : code === null", "taskEnded(task, code === null"]],
      fails: "kill",
    },
    {
      name: "the notice as a message of its own, between the tool_use and its results",
      change: [
        ["const notices = new Map<string, string>();", "let noticeMessage: string | undefined;\nconst notices = new Map<string, string>();"],
        ["  if (!last || !note) return results;\n", "  if (!last || !note) return results;\n  noticeMessage = note;\n  return results;\n"],
        ["    messages.push({ role: \"user\", content: results });", "    if (noticeMessage) messages.push({ role: \"user\", content: noticeMessage });\n    noticeMessage = undefined;\n    messages.push({ role: \"user\", content: results });"],
      ],
      fails: "notice-in-result",
    },
    {
      name: "the notice as a text block of its own in front of the results",
      change: [["  if (!last || !note) return results;\n", "  if (!last || !note) return results;\n  return [{ type: \"text\", text: note } as unknown as ToolResultBlockParam, ...results];\n"]],
      fails: "notice-in-result",
    },
    {
      name: "the notice in place of what the tool returned",
      change: [["  return [...results.slice(0, -1), { ...last, content }];\n}", "  return [...results.slice(0, -1), { ...last, content: note }];\n}"]],
      fails: "notice-in-result",
    },
    {
      name: "the result that carries the notice loses its is_error",
      change: [["  return [...results.slice(0, -1), { ...last, content }];\n}", "  return [...results.slice(0, -1), { type: \"tool_result\", tool_use_id: last.tool_use_id, content }];\n}"]],
      fails: "notice-in-result",
    },
    {
      name: "the notices read without being taken: the same notice in every result after",
      change: [["  const note = last && takeNotices(\"the tool\", \"added to this result\");", "  const note = last && notices.size > 0 ? `<notice>${[...notices.values()].join(\"\\n\")}</notice>` : undefined;"]],
      fails: "notice-in-result",
    },
    {
      name: "bash_output shows the end, and the notice comes anyway",
      change: [["  if (task.status !== \"running\") forgetNotice(task.id); // the model sees the end here: no notice later\n", ""]],
      fails: "no-double-notice",
    },
    {
      name: "a notice waiting when the turn ended is dropped: nothing goes with the prompt",
      change: [["  if (note) prompt.content = `${note}\\n\\n${prompt.content}`;", "  void note;"]],
      fails: "notice-with-prompt",
    },
    {
      name: "the notice in place of the person's prompt",
      change: [["  if (note) prompt.content = `${note}\\n\\n${prompt.content}`;", "  if (note) prompt.content = note;"]],
      fails: "notice-with-prompt",
    },
    {
      name: "the notice as a second user message after the prompt",
      change: [["  if (note) prompt.content = `${note}\\n\\n${prompt.content}`;", "  if (note) messages.push({ role: \"user\", content: note });"]],
      fails: "notice-with-prompt",
    },
  ],
  requirements: [
    {
      id: "at-once",
      title: say(
        "bash with run_in_background returns at once with a task id (bg_1, bg_2, ...) and how to read it; the command runs on; without the flag, bash waits as before",
        "run_in_background を付けた bash は、タスクの id（bg_1、bg_2、…）と読み方をすぐに返し、コマンドは動き続ける。付けなければ bash はこれまでどおり待つ",
      ),
      hints: [
        say("Whatever awaits the command's end holds the agent. Start it, and let the promise settle on its own.", "コマンドの終わりを await すると、エージェントも止まります。始めたら、Promise は放っておきます。"),
        say("startTask: push a Task with id `bg_${++tasksStarted}`, then task.ended = runCommand(...).then(...) without await, and return the task.", "startTask では、id を `bg_${++tasksStarted}` にした Task を push し、task.ended = runCommand(...).then(...) を await せずに代入して、タスクを返します。"),
        say(
          "task.ended = runCommand(command, { cwd: workspace(), timeoutMs: timeLimitMs, output: task.output, onStart: (end) => (task.end = end) }).then((code) => taskEnded(task, `exit code ${code}`), (error) => taskEnded(task, ...));",
          "task.ended = runCommand(command, { cwd: workspace(), timeoutMs: timeLimitMs, output: task.output, onStart: (end) => (task.end = end) }).then((code) => taskEnded(task, `exit code ${code}`), (error) => taskEnded(task, ...));",
        ),
      ],
      async check(t) {
        const stage = stageOf(t);
        // The command waits for a file only the check writes: bash cannot have waited for its end.
        const first = await t.within(3000, start(t, "while [ ! -e go ]; do sleep 0.02; done; echo done > done.txt"), say("bash with run_in_background did not return while its command ran", "run_in_background を付けた bash が、コマンドの実行中に戻りませんでした"));
        if (first.isError || !/\bbg_1\b/.test(first.text) || !/bash_output/.test(first.text)) {
          t.fail(say(`the first background bash answered ${quote(first.text)}`, `最初のバックグラウンドの bash の答えが ${quote(first.text)} でした`), say("an answer naming bg_1 and bash_output", "bg_1 と bash_output を名指しする答え"));
        }
        const second = await start(t, "true");
        if (!/\bbg_2\b/.test(second.text)) t.fail(say(`the second background bash answered ${quote(second.text)}`, `2つ目のバックグラウンドの bash の答えが ${quote(second.text)} でした`), say("bg_2", "bg_2"));
        t.write("go", "");
        await ended(t, stage, "bg_1");
        if (t.read("done.txt") !== "done\n") t.fail(say("the command did not run on to its end in the background", "コマンドがバックグラウンドで最後まで動きませんでした"));
        const waited = await t.tool("bash")({ command: "echo hi; exit 3" });
        if (!/hi[\s\S]*3/.test(waited.text) || stage.taskList().length !== 2) t.fail(say(`bash without the flag answered ${quote(waited.text)}`, `フラグなしの bash の答えが ${quote(waited.text)} でした`), say("its output and exit code, as s06's bash", "s06 の bash と同じく、出力と終了コード"));
      },
    },
    {
      id: "read-since",
      title: say(
        "bash_output returns what the task printed since the last read, and its status: running, then exit code N",
        "bash_output は前回読んだあとにタスクが出力した分と、状態（running、そのあと exit code N）を返す",
      ),
      hints: [
        say("A second read must not repeat the first. Where does the output that has been read go?", "2回目の読み取りで1回目の分を繰り返してはいけません。読んだ出力はどこへ行くべきでしょう。"),
        say("readTask: task.output.takeUnread() gives the unread part and starts afresh. Put the status first; once it is final, forgetNotice(task.id).", "readTask では task.output.takeUnread() が未読の分を返し、新しく数え直します。状態を先に書き、最後の状態になっていれば forgetNotice(task.id) を呼びます。"),
        say("const fresh = task.output.takeUnread(); if (task.status !== \"running\") forgetNotice(task.id); return `${task.id}: ${task.status}.\\n${fresh || \"No new output.\"}`;", "const fresh = task.output.takeUnread(); if (task.status !== \"running\") forgetNotice(task.id); return `${task.id}: ${task.status}.\\n${fresh || \"No new output.\"}`;"),
      ],
      async check(t) {
        const stage = stageOf(t);
        await start(t, "echo ONE; while [ ! -e go ]; do sleep 0.02; done; echo TWO; exit 3");
        let first = "";
        // The command is in the answer's first line too: a line of its own is the output.
        for (let tries = 0; tries < 150 && !/^ONE$/m.test(first); tries++) {
          first = (await read(t, "bg_1")).text;
          if (!/^ONE$/m.test(first)) await sleep(20);
        }
        if (!/^ONE$/m.test(first) || !/running/.test(first)) t.fail(say(`while the task ran, bash_output said ${quote(first)}`, `タスクの実行中に bash_output の答えが ${quote(first)} でした`), say("its first line, ONE, and the status running", "最初の行 ONE と、状態 running"));
        t.write("go", "");
        await ended(t, stage, "bg_1");
        const second = (await read(t, "bg_1")).text;
        if (!/^TWO$/m.test(second) || /^ONE$/m.test(second) || !/exit code 3/.test(second)) {
          t.fail(say(`after the task ended, bash_output said ${quote(second)}`, `タスクが終わったあと、bash_output の答えが ${quote(second)} でした`), say("TWO only (ONE was read already), and exit code 3", "TWO だけ（ONE は読み終えている）と exit code 3"));
        }
        const third = (await read(t, "bg_1")).text;
        if (/^TWO$/m.test(third)) t.fail(say(`a third read repeated the output: ${quote(third)}`, `3回目の読み取りで出力が繰り返されました: ${quote(third)}`));
        const unknown = await read(t, "bg_9");
        if (!unknown.isError) t.fail(say(`bash_output of a task that does not exist answered ${quote(unknown.text)}`, `存在しないタスクの bash_output の答えが ${quote(unknown.text)} でした`), say("an error", "エラー"));
      },
    },
    {
      id: "kill",
      title: say("kill_task ends the task and everything it started (checked by process id), and the status says it was ended by kill_task", "kill_task はタスクとそれが始めたものすべてを終わらせ（プロセス ID で確かめる）、状態は kill_task で終わったと言う"),
      hints: [
        say("killTask calls task.end(). Where does that function come from?", "killTask は task.end() を呼びます。その関数はどこから来るのでしょう。"),
        say("runCommand's onStart hands you a function that ends the command's process group and whatever left it: keep it as task.end. taskEnded then says who ended it (task.killed).", "runCommand の onStart は、コマンドのプロセスグループとそこから抜けたものまで終わらせる関数を渡します。それを task.end に取っておきます。taskEnded では、誰が終わらせたか（task.killed）を状態に書きます。"),
        say("onStart: (end) => (task.end = end) ... (code) => taskEnded(task, task.killed ? \"ended by kill_task\" : `exit code ${code}`)", "onStart: (end) => (task.end = end) ... (code) => taskEnded(task, task.killed ? \"ended by kill_task\" : `exit code ${code}`)"),
      ],
      async check(t) {
        const stage = stageOf(t);
        await start(t, "echo $$ > pids; sleep 30 & echo $! >> pids; setsid sleep 30 > /dev/null 2>&1 & echo $! >> pids; wait");
        const pids = await pidsIn(t, "pids", 3);
        if (!pids.every(isRunning)) t.fail(say("the task's processes were not running", "タスクのプロセスが動いていませんでした"));
        const answer = await t.within(3000, t.tool("kill_task")({ task_id: "bg_1" }), say("kill_task did not return: the task never ended (task.end was not set?)", "kill_task が戻りません。タスクが終わっていません（task.end が設定されていない？）"));
        const left = (await until(() => pids.every((pid) => !isRunning(pid)), 1500)) ? [] : pids.filter(isRunning);
        if (left.length > 0) t.fail(say(`after kill_task, processes ${left.join(", ")} of the task still run`, `kill_task のあとも、タスクのプロセス ${left.join(", ")} が動いています`));
        if (!/kill_task/.test(statusOf(stage, "bg_1") ?? "") || !/kill_task/.test(answer.text)) {
          t.fail(say(`after kill_task, the status is ${quote(statusOf(stage, "bg_1"))} and kill_task answered ${quote(answer.text)}`, `kill_task のあと、状態が ${quote(statusOf(stage, "bg_1"))}、kill_task の答えが ${quote(answer.text)} でした`), say("a status that says kill_task ended it", "kill_task で終わったと言う状態"));
        }
      },
    },
    {
      id: "limits",
      title: say(
        "At most 8 run at once (the ninth is an error naming the running ones); a task ends at its time limit and says so; only the last finished tasks are kept; the output keeps both ends within 30,000 characters",
        "同時に動くのは 8 個まで（9 個目は動いているものを名指しするエラー）。タスクは時間制限で終わり、そう言う。終了済みタスクは最近のものだけ残す。出力は 30,000 文字以内で両端を残す",
      ),
      hints: [
        say("Each limit bounds something the agent holds or leaves running: processes, time, records, memory.", "どの上限も、エージェントが抱えるものや動かし続けるもの（プロセス、時間、記録、メモリ）を抑えます。"),
        say(
          "startTask counts running() first and throws with their ids; passes timeLimitMs to runCommand, whose rejection starts with \"timed out\"; taskEnded drops the oldest finished tasks beyond TASK_LIMITS.finishedKept.",
          "startTask はまず running() を数え、その id を添えて throw します。timeLimitMs を runCommand に渡し、その拒否のメッセージは \"timed out\" で始まります。taskEnded は TASK_LIMITS.finishedKept を超えた古い終了済みタスクを捨てます。",
        ),
        say(
          "const finished = tasks.filter((task) => task.status !== \"running\"); const forgotten = finished.slice(0, Math.max(0, finished.length - TASK_LIMITS.finishedKept)); tasks = tasks.filter((task) => !forgotten.includes(task));",
          "const finished = tasks.filter((task) => task.status !== \"running\"); const forgotten = finished.slice(0, Math.max(0, finished.length - TASK_LIMITS.finishedKept)); tasks = tasks.filter((task) => !forgotten.includes(task));",
        ),
      ],
      async check(t) {
        const stage = stageOf(t);
        for (let i = 1; i <= 8; i++) {
          const answer = await start(t, `sleep 30 # task ${i}`);
          if (answer.isError) t.fail(say(`background task ${i} of 8 was refused: ${quote(answer.text)}`, `8個のうち ${i} 個目のバックグラウンドタスクが拒否されました: ${quote(answer.text)}`));
        }
        const ninth = await start(t, "echo nine > nine.txt");
        const named = Array.from({ length: 8 }, (_, i) => `bg_${i + 1}`).filter((id) => !new RegExp(`\\b${id}\\b`).test(ninth.text));
        if (!ninth.isError || named.length > 0) t.fail(say(`the ninth background bash answered ${quote(ninth.text)}`, `9個目のバックグラウンドの bash の答えが ${quote(ninth.text)} でした`), say("an error naming bg_1 to bg_8", "bg_1 から bg_8 を名指しするエラー"));
        await sleep(100);
        if (t.read("nine.txt") !== undefined) t.fail(say("the ninth command ran anyway", "9個目のコマンドが動いてしまいました"));
        stage.prepareReplay();
        // The time limit, made short for the check.
        stage.TASK_LIMITS.timeLimitMs = 200;
        await start(t, "echo $$ > pid; exec sleep 30");
        const [pid] = await pidsIn(t, "pid", 1);
        await ended(t, stage, "bg_1", 5000);
        const limited = (await read(t, "bg_1")).text;
        if (!/time limit/.test(limited)) t.fail(say(`a task past its time limit: bash_output said ${quote(limited)}`, `時間制限を過ぎたタスクについて、bash_output の答えが ${quote(limited)} でした`), say("a status that names the time limit", "時間制限を名指しする状態"));
        if (!(await until(() => !isRunning(pid), 1500))) t.fail(say("the command still runs after its time limit", "時間制限のあともコマンドが動いています"));
        stage.prepareReplay();
        stage.TASK_LIMITS.timeLimitMs = 600_000;
        stage.TASK_LIMITS.finishedKept = 2;
        for (let i = 1; i <= 4; i++) await start(t, `echo ${i}`);
        await until(() => stage.taskList().every((task) => task.status !== "running") && stage.taskList().length <= 2);
        const oldest = await read(t, "bg_1");
        const kept = stage.taskList().map((task) => task.id);
        if (!oldest.isError || kept.join(",") !== "bg_3,bg_4") {
          t.fail(say(`with 2 finished tasks kept, after 4 ended the tasks are [${kept.join(", ")}] and bash_output of bg_1 said ${quote(oldest.text)}`, `終了済みタスクを2つまで残す設定で4つが終わったあと、タスクは [${kept.join(", ")}]、bg_1 の bash_output は ${quote(oldest.text)} でした`), say("bg_3 and bg_4 kept; bg_1 forgotten, an error", "bg_3 と bg_4 が残り、bg_1 は忘れられてエラーになる"));
        }
        await start(t, "echo FIRST; head -c 100000 /dev/zero | tr '\\0' a; echo; echo LAST");
        await ended(t, stage, "bg_5");
        const long = (await read(t, "bg_5")).text;
        if (long.length > 30_000 || !/^FIRST$/m.test(long) || !/^LAST$/m.test(long)) t.fail(say(`the output of a task that printed 100,000 characters came back as ${long.length} characters${/^LAST$/m.test(long) ? "" : ", without its end"}`, `100,000 文字を出力したタスクの出力が ${long.length} 文字で返りました${/^LAST$/m.test(long) ? "" : "（終わりがありません）"}`));
      },
    },
    {
      id: "notice-in-result",
      title: say(
        "When a task ends, a notice (its id, status, last lines) rides inside the last tool result of the next reply, after what the tool returned (an error stays an error), once; every request is one the API accepts",
        "タスクが終わると、知らせ（id、状態、最後の数行）が次の返答の最後のツール結果の中、ツールが返した内容のあとに入る（エラーはエラーのまま）。知らせは1度だけ。どのリクエストも API が受け付ける形になる",
      ),
      hints: [
        say("The API refuses a request where a tool_use is not answered by the very next message. Where can a notice go, then?", "API は、tool_use の直後のメッセージがその結果になっていないリクエストを拒否します。では、知らせはどこに入れられるでしょう。"),
        say("In withNotices, take the waiting notices with takeNotices (which also clears them) and add them to the end of the last result's content; keep tool_use_id and is_error.", "withNotices では、takeNotices（知らせを消すところまでします）で待っている知らせを取り、最後の結果の content の末尾に足します。tool_use_id と is_error はそのままです。"),
        say("const last = results.at(-1); const note = last && takeNotices(\"the tool\", \"added to this result\"); if (!last || !note) return results; return [...results.slice(0, -1), { ...last, content: `${last.content}\\n\\n${note}` }];", "const last = results.at(-1); const note = last && takeNotices(\"the tool\", \"added to this result\"); if (!last || !note) return results; return [...results.slice(0, -1), { ...last, content: `${last.content}\\n\\n${note}` }];"),
      ],
      async check(t) {
        stageOf(t);
        const session = await played(
          t,
          [
            reply.tools([BUILD]),
            reply.tools([MEANWHILE("toolu_tests"), { id: "toolu_missing", name: "read_file", input: { path: "missing.txt" } }]),
            reply.tools([{ id: "toolu_after", name: "read_file", input: { path: "built" } }]),
            reply.text("done"),
          ],
          ["y", "y"],
        );
        mustNoticeIn(t, session.requests, ["toolu_missing"], say("a build that ended while the tests ran, then a read", "テストの実行中に終わったビルドと、そのあとの読み込み"));
        const tests = resultOf(session.requests, "toolu_tests");
        if (!tests || resultText(tests) !== "tests ok\n") t.fail(say(`the result before the last one changed: ${quote(tests && resultText(tests))}`, `最後より前の結果が変わっていました: ${quote(tests && resultText(tests))}`));
        const missing = resultOf(session.requests, "toolu_missing");
        const text = missing ? resultText(missing) : "";
        if (missing?.is_error !== true || !text.includes("missing.txt")) t.fail(say(`the error result with the notice is no longer the error: ${quote(missing)}`, `知らせを入れたエラーの結果が、元のエラーではなくなっていました: ${quote(missing)}`));
        if (!/exit code 0/.test(text) || !text.includes("built app")) t.fail(say(`the notice does not give the status and the last lines: ${quote(text)}`, `知らせに状態と最後の数行がありません: ${quote(text)}`), say("exit code 0 and the task's last line, built app", "exit code 0 と、タスクの最後の行 built app"));
      },
    },
    {
      id: "no-double-notice",
      title: say("No notice for a task whose end the model has seen already: read with bash_output, or ended with kill_task", "モデルがすでに終わりを見たタスク（bash_output で読んだもの、kill_task で止めたもの）については知らせない"),
      hints: [
        say("A notice tells the model something it does not know yet.", "知らせは、モデルがまだ知らないことを伝えるものです。"),
        say("bash_output and kill_task both answer with readTask: there, once the status is final, the model sees the end.", "bash_output も kill_task も readTask で答えます。状態が最後のものなら、モデルはそこで終わりを見ています。"),
        say("if (task.status !== \"running\") forgetNotice(task.id);", "if (task.status !== \"running\") forgetNotice(task.id);"),
      ],
      async check(t) {
        stageOf(t);
        const session = await played(
          t,
          [
            reply.tools([BUILD]),
            // The reads after bash_output and kill_task are the last results of their replies: where a notice would go.
            reply.tools([MEANWHILE(), { name: "bash_output", input: { task_id: "bg_1" } }, { name: "read_file", input: { path: "built" } }]),
            reply.tools([{ name: "bash", input: { command: "sleep 30", run_in_background: true } }]),
            reply.tools([{ name: "kill_task", input: { task_id: "bg_2" } }, { name: "read_file", input: { path: "built" } }]),
            reply.tools([{ name: "read_file", input: { path: "built" } }]),
            reply.text("done"),
          ],
          ["y", "y", "y"],
        );
        mustNoticeIn(t, session.requests, [], say("a build read with bash_output after it ended, and a task ended with kill_task", "終わったあと bash_output で読んだビルドと、kill_task で止めたタスク"));
      },
    },
    {
      id: "notice-with-prompt",
      title: say(
        "A task that ends after the turn is over is told with the person's next prompt, in front of it in the same message, once",
        "ターンが終わったあとに終わったタスクは、人の次のプロンプトの前に、同じメッセージの中で1度だけ知らされる",
      ),
      hints: [
        say("When the turn is over there is no tool result to carry the notice. What does the next request start with?", "ターンが終わっていれば、知らせを運ぶツール結果はありません。次のリクエストは何から始まるでしょう。"),
        say("turnWithNotices calls addNoticesToPrompt before the loop: if the last message is the person's text, put the notices (takeNotices) in front of it.", "turnWithNotices はループの前に addNoticesToPrompt を呼びます。最後のメッセージが人のテキストなら、その前に知らせ（takeNotices）を入れます。"),
        say("const prompt = messages.at(-1); if (prompt?.role !== \"user\" || typeof prompt.content !== \"string\") return; const note = takeNotices(...); if (note) prompt.content = `${note}\\n\\n${prompt.content}`;", "const prompt = messages.at(-1); if (prompt?.role !== \"user\" || typeof prompt.content !== \"string\") return; const note = takeNotices(...); if (note) prompt.content = `${note}\\n\\n${prompt.content}`;"),
      ],
      async check(t) {
        const stage = stageOf(t);
        const { replayScenario } = await import("../lib/course/session.ts");
        const prompts = ["start the build", "how did it go?"];
        const scenario = scenarioOf([reply.tools([BUILD]), reply.text("Building in the background."), reply.tools([{ id: "toolu_later", name: "read_file", input: { path: "built" } }]), reply.text("It built.")], { prompts, answers: ["y"] });
        // The person types the second prompt after the build has ended.
        const session = await replayScenario({ agentLoop: stage.turnWithNotices, prepareReplay: stage.prepareReplay }, scenario, {
          workspace: t.workspace,
          onPrompt: async (prompt) => {
            if (prompt === prompts[1]) await ended(t, stage, "bg_1");
          },
        });
        for (const error of session.turnErrors) {
          const text = error instanceof Error ? error.message : String(error);
          if (notWrittenIn(text)) throw error;
          t.fail(say(`a turn ended with an error: ${text}`, `ターンがエラーで終わりました: ${text}`));
        }
        t.asRecorded(session);
        mustBeValid(t, session.requests);
        const messages = (session.requests.at(-1)?.messages ?? []) as MessageParam[];
        const second = messages[4];
        const text = typeof second?.content === "string" ? second.content : JSON.stringify(second?.content);
        if (second?.role !== "user" || !text.includes(prompts[1]) || !/\bbg_1\b/.test(text) || !/exit code 0/.test(text)) {
          t.fail(say(`the second prompt reached the model as ${quote(second)}`, `2つ目のプロンプトが ${quote(second)} としてモデルに届きました`), say("one user message: the notice of bg_1 (exit code 0), then the prompt", "1つのユーザーメッセージ: bg_1 の知らせ（exit code 0）、そのあとにプロンプト"));
        }
        if (text.indexOf("bg_1") > text.indexOf(prompts[1])) t.fail(say(`the notice comes after the prompt: ${quote(text)}`, `知らせがプロンプトのあとにあります: ${quote(text)}`), say("the notice in front of the prompt", "プロンプトの前の知らせ"));
        mustNoticeIn(t, session.requests, [], say("a notice given with the prompt, then a read", "プロンプトと一緒に知らせたあとの読み込み"));
      },
    },
    {
      id: "demo",
      title: say(
        "Plays the stage's recorded demo: the build's notice rides in the tests' result, and the build and the changelog are done",
        "ステージの記録済みデモを再生できる（ビルドの知らせはテストの結果に入り、ビルドと変更履歴ができている）",
      ),
      hints: [
        say("Run your copy: npx tsx workshop/s18.ts, and watch for the line that says a notice was added.", "コピーを動かして、知らせを足したという行を探します: npx tsx workshop/s18.ts"),
        say("The build (bg_1) sleeps 0.1 s, the tests 0.4 s: the build ends while the tests run, so the notice belongs in the tests' result.", "ビルド（bg_1）は 0.1 秒、テストは 0.4 秒眠ります。ビルドはテストの実行中に終わるので、知らせはテストの結果に入ります。"),
        say("If the checks above pass and this one fails, compare the message with the demo's description in fixtures/s18/demo.json.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージを fixtures/s18/demo.json のデモの説明と比べてみてください。"),
      ],
      async check(t) {
        stageOf(t);
        const session = t.asRecorded(await t.demo());
        mustBeValid(t, session.requests);
        mustNoticeIn(t, session.requests, ["toolu_s18_demo_03"], say("the demo", "デモ"));
        if (!existsSync("dist/greet.js")) t.fail(say("dist/greet.js was not built", "dist/greet.js がビルドされていません"));
        if (!(t.read("CHANGELOG.md") ?? "").includes("1.1.0")) t.fail(say("CHANGELOG.md has no 1.1.0 entry", "CHANGELOG.md に 1.1.0 の項目がありません"));
      },
    },
  ],
});
