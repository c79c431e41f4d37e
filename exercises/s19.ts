// Exercise s19: the claim and the blocker check. The board on disk (readBoard, the lock in
// changeBoard, createTask, checkBlockers, openBlockers), the inbox, the team and the loop are
// given; updateTask (a change under the lock: who may make it, a claim, the blocker check) and
// claimNext (what an idle teammate takes next) are taken out. The checks call them as agents
// do, one after another and at the same moment, with the board locked by "another process" for
// a moment, and read the task files they leave.
import { rmSync } from "node:fs";
import { defineExercise, quote, say, type CheckKit } from "../lib/course/exercises.ts";

type Task = { id: string; subject: string; description: string; status: string; owner: string | null; blocked_by: string[] };
type Change = { status: string; owner?: string; blocked_by?: string[] };
type Stage = {
  createTask(root: string, subject: string, description: string, blockedBy?: string[]): Promise<Task>;
  updateTask(root: string, id: string, by: string, change: Change): Promise<Task>;
  claimNext(root: string, name: string): Promise<Task | undefined>;
  readBoard(root: string): Task[];
  prepareReplay(): void;
};

function stageOf(t: CheckKit): Stage {
  const stage = t.stage as unknown as Stage;
  stage.prepareReplay();
  t.cleanup(() => stage.prepareReplay());
  return stage;
}

/** The task as its file says, or undefined. */
const onDisk = (t: CheckKit, id: string): Task | undefined => {
  const text = t.read(`.agent/tasks/${id}.json`);
  return text === undefined ? undefined : (JSON.parse(text) as Task);
};
/** What a call threw, or undefined when it did not. A TODO stub's error goes on (the kit names the function). */
async function refusal(work: Promise<unknown>): Promise<string | undefined> {
  try {
    await work;
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/TODO: \w+\(\) is not written yet/.test(message)) throw error;
    return message;
  }
}
/** A call that must work: its failure is the check's. */
async function mustWork<T>(t: CheckKit, what: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/TODO: \w+\(\) is not written yet/.test(message)) throw error;
    return t.fail(say(`${what} was refused: ${quote(message)}`, `${what} が拒否されました: ${quote(message)}`), say(`${what} works`, `${what} が通る`));
  }
}
const board = (t: CheckKit, ...tasks: Partial<Task>[]) =>
  tasks.forEach((task, i) => t.write(`.agent/tasks/${i + 1}.json`, JSON.stringify({ id: String(i + 1), subject: `task ${i + 1}`, description: "", status: "pending", owner: null, blocked_by: [], ...task })));

/** Hold the board's lock as another live process would, for `ms`, while `work` starts: whatever it reads before the lock is old by the time it writes. */
async function whileLocked<T>(t: CheckKit, ms: number, work: () => Promise<T>[]): Promise<PromiseSettledResult<T>[]> {
  const lock = `${t.workspace}/.agent/tasks/.lock`;
  t.write(".agent/tasks/.lock", `${process.pid} another-agent`);
  const running = work();
  await new Promise((resolve) => setTimeout(resolve, ms));
  rmSync(lock, { force: true });
  return Promise.all(running.map((promise) => promise.then((value) => ({ status: "fulfilled" as const, value }), (reason: unknown) => ({ status: "rejected" as const, reason }))));
}
const reason = (result: PromiseSettledResult<unknown>) => (result.status === "rejected" ? (result.reason instanceof Error ? result.reason.message : String(result.reason)) : "");
const rethrowStub = (results: PromiseSettledResult<unknown>[]) => {
  const stub = results.find((result) => /TODO: \w+\(\) is not written yet/.test(reason(result)));
  if (stub?.status === "rejected") throw stub.reason;
};

export default defineExercise({
  stage: "s19",
  title: say("The claim and the blocker check", "引き受け（claim）とブロッカーの確認"),
  mechanism: say(
    "change a task under the board's lock: a claim sets an owner on an unowned task only, one agent wins and the other is told who; a task cannot start while a blocker is not completed; an idle teammate takes its own free task, else an unowned one",
    "ボードのロックを持ってタスクを変える。claim は持ち主のいないタスクにだけ持ち主を入れ、勝つのは1人で、ほかの人には誰が持っているかを伝える。ブロッカーが completed でないうちは始められない。手の空いたチームメイトは自分の空いたタスクを、なければ持ち主のいないタスクを取る",
  ),
  minutes: 40,
  takeOut: [
    {
      function: "updateTask",
      task: say(
        "inside changeBoard: find the task (taskIn), refuse a change to another agent's task (the lead may), set or give up the owner (a claimed task is refused to another, naming the owner), check blocked_by (checkBlockers), refuse in_progress while openBlockers finds one (name it), and make whoever starts an unowned task its owner.",
        "changeBoard の中で、タスクを探し（taskIn）、ほかのエージェントのタスクへの変更を拒否し（リードは可）、持ち主を入れるか手放し（持ち主のいるタスクはほかの人には拒否し、持ち主の名前を出す）、blocked_by を確かめ（checkBlockers）、openBlockers が見つけている間は in_progress を拒否し（そのブロッカーを名指しする）、持ち主のいないタスクを始めた人を持ち主にします。",
      ),
    },
    {
      function: "claimNext",
      task: say(
        "inside changeBoard: the first pending task nothing blocks that the teammate owns, else the first unowned one; return it with the teammate as owner and status in_progress (changeBoard writes it), or undefined.",
        "changeBoard の中で、そのチームメイトが持つ pending のタスクのうち何にもブロックされていない最初のもの、なければ持ち主のいない最初のものを選び、持ち主をそのチームメイト、状態を in_progress にして返します（書くのは changeBoard です）。なければ undefined を返します。",
      ),
    },
  ],
  wrong: [
    {
      name: "a claim overwrites the owner: the later agent takes the task",
      change: [["      if (task.owner && change.owner !== \"\") fail(`task ${id} is claimed by ${task.owner} already;", "      if (false) fail(`task ${id} is claimed by ${task.owner} already;"], ["    if (task.owner && task.owner !== by && by !== LEAD) fail(`task ${id} is claimed by", "    if (false) fail(`task ${id} is claimed by"]],
      fails: "claim",
    },
    {
      name: "the owner claiming its own task again is refused",
      change: [["    if (change.owner !== undefined && change.owner !== (task.owner ?? \"\")) {", "    if (change.owner !== undefined) {"]],
      fails: "claim",
    },
    {
      name: "the refusal does not say who has the task",
      change: [["fail(`task ${id} is claimed by ${task.owner}: only ${task.owner} or the lead may change it`);", "fail(`task ${id} is taken`);"], ["fail(`task ${id} is claimed by ${task.owner} already; it is given up with owner \"\"`);", "fail(`task ${id} is taken`);"]],
      fails: "claim",
    },
    {
      name: "the board read before the lock is taken: two agents both see no owner",
      change: [
        ["export async function updateTask(root: string, id: string, by: string, change: { status: Status; owner?: string; blocked_by?: string[] }): Promise<Task> {\n  return (await changeBoard(root, (tasks) => {", "export async function updateTask(root: string, id: string, by: string, change: { status: Status; owner?: string; blocked_by?: string[] }): Promise<Task> {\n  const seen = readBoard(root);\n  return (await changeBoard(root, (now) => {\n    const tasks = seen.map((old) => (old.id === id ? old : now.find((t) => t.id === old.id) ?? old));"],
      ],
      fails: "claim-race",
    },
    {
      name: "claimNext picks its task before the lock is taken",
      change: [["export async function claimNext(root: string, name: string): Promise<Task | undefined> {\n  return changeBoard(root, (tasks) => {", "export async function claimNext(root: string, name: string): Promise<Task | undefined> {\n  const tasks = readBoard(root);\n  return changeBoard(root, () => {"]],
      fails: "claim-race",
    },
    {
      name: "the blocker check forgotten: a blocked task starts",
      change: [["    if (open.length > 0) fail(`task ${id} cannot start", "    if (false) fail(`task ${id} cannot start"]],
      fails: "blockers",
    },
    {
      name: "the refusal does not name the blocker",
      change: [["fail(`task ${id} cannot start: it is blocked by ${open.join(\", \")}; it can start when that is completed`);", "fail(`task ${id} cannot start yet: it is blocked`);"]],
      fails: "blockers",
    },
    {
      name: "a blocker in progress counts as done",
      change: [["    const open = change.status === \"in_progress\" ? openBlockers(task, tasks) : [];", "    const open = change.status === \"in_progress\" ? openBlockers(task, tasks.filter((other) => other.status !== \"in_progress\")) : [];"]],
      fails: "blockers",
    },
    {
      name: "a blocked task cannot even be claimed: the check applied to every change",
      change: [["    const open = change.status === \"in_progress\" ? openBlockers(task, tasks) : [];", "    const open = openBlockers(task, tasks);"]],
      fails: "blockers",
    },
    {
      name: "starting an unowned task does not claim it",
      change: [["    if (change.status === \"in_progress\") task.owner ??= by; // whoever starts an unowned task claims it\n", ""]],
      fails: "start-claims",
    },
    {
      name: "anyone may change another agent's task",
      change: [["    if (task.owner && task.owner !== by && by !== LEAD) fail(", "    if (task.owner && task.owner !== by && false) fail("]],
      fails: "owner-only",
    },
    {
      name: "the lead may not change a teammate's task either",
      change: [["    if (task.owner && task.owner !== by && by !== LEAD) fail(", "    if (task.owner && task.owner !== by) fail("]],
      fails: "owner-only",
    },
    {
      name: 'owner "" is taken as a name: a task cannot be given up',
      change: [["      task.owner = change.owner || null; // \"\" gives it up", "      task.owner = change.owner;"]],
      fails: "owner-only",
    },
    {
      name: "blocked_by set by task_update without a check: a cycle gets in",
      change: [["    if (change.blocked_by) task.blocked_by = checkBlockers(id, change.blocked_by, tasks);", "    if (change.blocked_by) task.blocked_by = change.blocked_by;"]],
      fails: "cycles",
    },
    {
      name: "claimNext takes a task that is still blocked",
      change: [["    const free = (task: Task) => task.status === \"pending\" && openBlockers(task, tasks).length === 0;", "    const free = (task: Task) => task.status === \"pending\";"]],
      fails: "claim-next",
    },
    {
      name: "claimNext takes another teammate's task",
      change: [["?? tasks.find((t) => free(t) && !t.owner);", "?? tasks.find((t) => free(t));"]],
      fails: "claim-next",
    },
    {
      name: "claimNext takes an unowned task before its own",
      change: [["    const task = tasks.find((t) => free(t) && t.owner === name) ?? tasks.find((t) => free(t) && !t.owner);", "    const task = tasks.find((t) => free(t) && (!t.owner || t.owner === name));"]],
      fails: "claim-next",
    },
    {
      name: "claimNext gives the task without starting it",
      change: [["    return task && { ...task, owner: name, status: \"in_progress\" };", "    return task && { ...task, owner: name };"]],
      fails: "claim-next",
    },
  ],
  requirements: [
    {
      id: "claim",
      title: say(
        "Setting an owner on an unowned task claims it; on a task someone has, it is refused, naming who has it; the owner may claim its own again",
        "持ち主のいないタスクに持ち主を入れると claim になる。誰かが持っているタスクでは拒否され、その人の名前が出る。持ち主が自分のタスクをもう1度 claim するのは通る",
      ),
      hints: [
        say("A claim is a change like any other, made inside changeBoard: look at the owner the file has now.", "claim もほかの変更と同じく changeBoard の中で行います。いまファイルにある持ち主を見ます。"),
        say("If change.owner is given and differs from the task's owner: a task with an owner is refused (say whose it is), an unowned one gets change.owner.", "change.owner が指定されていてタスクの持ち主と違うとき、持ち主のいるタスクなら拒否し（誰のものか言います）、いなければ change.owner を入れます。"),
        say('if (change.owner !== undefined && change.owner !== (task.owner ?? "")) { if (task.owner && change.owner !== "") fail(`task ${id} is claimed by ${task.owner} already`); task.owner = change.owner || null; }', 'if (change.owner !== undefined && change.owner !== (task.owner ?? "")) { if (task.owner && change.owner !== "") fail(`task ${id} is claimed by ${task.owner} already`); task.owner = change.owner || null; }'),
      ],
      async check(t) {
        const stage = stageOf(t);
        await stage.createTask(t.workspace, "Write the parser", "");
        await mustWork(t, "alice claiming the unowned task 1", stage.updateTask(t.workspace, "1", "alice", { status: "pending", owner: "alice" }));
        if (onDisk(t, "1")?.owner !== "alice") t.fail(say(`after alice's claim, .agent/tasks/1.json has the owner ${quote(onDisk(t, "1")?.owner)}`, `alice の claim のあと、.agent/tasks/1.json の持ち主が ${quote(onDisk(t, "1")?.owner)} です`), say("alice", "alice"));
        const refused = await refusal(stage.updateTask(t.workspace, "1", "bob", { status: "pending", owner: "bob" }));
        if (refused === undefined) t.fail(say(`bob's claim of alice's task 1 went through: the owner is now ${quote(onDisk(t, "1")?.owner)}`, `alice のタスク 1 を bob が claim できてしまいました。持ち主は ${quote(onDisk(t, "1")?.owner)} です`), say("bob refused", "bob は拒否される"));
        if (!(refused ?? "").includes("alice")) t.fail(say(`bob was refused with ${quote(refused)}, which does not say who has the task`, `bob は ${quote(refused)} で拒否されましたが、誰が持っているかが書かれていません`), say("a refusal naming alice", "alice を名指しする拒否"));
        if (onDisk(t, "1")?.owner !== "alice") t.fail(say(`after bob's refused claim, the owner is ${quote(onDisk(t, "1")?.owner)}`, `bob の claim が拒否されたあと、持ち主が ${quote(onDisk(t, "1")?.owner)} です`), say("alice still", "alice のまま"));
        await mustWork(t, "alice claiming her own task 1 again, and starting it", stage.updateTask(t.workspace, "1", "alice", { status: "in_progress", owner: "alice" }));
      },
    },
    {
      id: "claim-race",
      title: say(
        "Two agents claiming the same task at the same moment: one wins, the other is told who has it; two idle teammates never get the same task",
        "2人のエージェントが同じ瞬間に同じタスクを claim すると、勝つのは1人で、もう1人には誰が持っているかが伝わる。手の空いた2人のチームメイトが同じタスクを取ることはない",
      ),
      hints: [
        say("The check holds the board's lock for a moment, as another process would, while both claims start. What did each read, and when?", "このチェックは、ほかのプロセスのように少しの間ボードのロックを持ち、その間に2つの claim を始めます。それぞれが何をいつ読んだでしょう。"),
        say("Read the board only inside the function you give changeBoard: it runs holding the lock, with the board as it is now.", "ボードは changeBoard に渡す関数の中でだけ読みます。その関数はロックを持った状態で、いまのボードを受け取って動きます。"),
        say("return (await changeBoard(root, (tasks) => { const task = { ...taskIn(tasks, id), status: change.status }; ... return task; }))!;", "return (await changeBoard(root, (tasks) => { const task = { ...taskIn(tasks, id), status: change.status }; ... return task; }))!;"),
      ],
      async check(t) {
        const stage = stageOf(t);
        await stage.createTask(t.workspace, "Write the parser", "");
        const claims = await whileLocked(t, 80, () => ["alice", "bob"].map((name) => stage.updateTask(t.workspace, "1", name, { status: "in_progress", owner: name })));
        rethrowStub(claims);
        const won = claims.flatMap((result, i) => (result.status === "fulfilled" ? [["alice", "bob"][i]] : []));
        const owner = onDisk(t, "1")?.owner;
        if (won.length !== 1) t.fail(say(`alice and bob claimed task 1 at the same moment, and ${won.length === 0 ? "neither" : "both"} succeeded; the file says ${quote(owner)}`, `alice と bob が同じ瞬間にタスク 1 を claim し、${won.length === 0 ? "どちらも失敗しました" : "両方とも成功しました"}。ファイルの持ち主は ${quote(owner)} です`), say("exactly one claim succeeds", "成功する claim はちょうど1つ"));
        const loser = reason(claims.find((result) => result.status === "rejected")!);
        if (owner !== won[0] || !loser.includes(won[0])) t.fail(say(`${won[0]} won, the file says ${quote(owner)}, and the other was told ${quote(loser)}`, `${won[0]} が勝ち、ファイルの持ち主は ${quote(owner)}、もう1人への答えは ${quote(loser)} でした`), say(`the owner ${won[0]}, and the other told so`, `持ち主は ${won[0]} で、もう1人にはそう伝わる`));
        await stage.createTask(t.workspace, "Test the parser", "");
        const next = await whileLocked(t, 80, () => ["carol", "dave"].map((name) => stage.claimNext(t.workspace, name)));
        rethrowStub(next);
        const got = next.map((result) => (result.status === "fulfilled" ? result.value?.id : `refused: ${reason(result)}`));
        if (got.filter((id) => id === "2").length !== 1 || got.some((id) => id !== "2" && id !== undefined)) {
          t.fail(say(`two idle teammates looked for work at the same moment, with one task free (2): claimNext gave them ${quote(got)}`, `手の空いた2人が同じ瞬間に仕事を探し、空いているタスクは 2 だけでした。claimNext が返したのは ${quote(got)} です`), say("task 2 to one of them, nothing to the other", "1人にタスク 2、もう1人には何もなし"));
        }
      },
    },
    {
      id: "blockers",
      title: say(
        "A task cannot move to in_progress while a task it is blocked by is not completed; the error names the blocker; a blocked task can still be claimed",
        "ブロックしているタスクが completed でないうちは in_progress にできない。エラーはそのブロッカーを名指しする。ブロックされたタスクでも claim はできる",
      ),
      hints: [
        say("openBlockers(task, tasks) lists the blockers not completed, as an error names them.", "openBlockers(task, tasks) は、completed でないブロッカーをエラーで名指しする形で並べます。"),
        say("Only the move to in_progress is refused: claiming (owner) and pending stay allowed.", "拒否するのは in_progress への変更だけです。claim（owner）や pending はそのまま通します。"),
        say('const open = change.status === "in_progress" ? openBlockers(task, tasks) : []; if (open.length > 0) fail(`task ${id} cannot start: it is blocked by ${open.join(", ")}`);', 'const open = change.status === "in_progress" ? openBlockers(task, tasks) : []; if (open.length > 0) fail(`task ${id} cannot start: it is blocked by ${open.join(", ")}`);'),
      ],
      async check(t) {
        const stage = stageOf(t);
        await stage.createTask(t.workspace, "Write the parser", "");
        await stage.createTask(t.workspace, "Test the parser", "", ["1"]);
        await mustWork(t, "alice claiming the blocked task 2 (owner, status pending)", stage.updateTask(t.workspace, "2", "alice", { status: "pending", owner: "alice" }));
        for (const blocker of ["pending", "in_progress"]) {
          if (blocker === "in_progress") await mustWork(t, "bob starting task 1", stage.updateTask(t.workspace, "1", "bob", { status: "in_progress", owner: "bob" }));
          const refused = await refusal(stage.updateTask(t.workspace, "2", "alice", { status: "in_progress" }));
          if (refused === undefined) t.fail(say(`task 2 moved to in_progress while task 1, its blocker, was ${blocker}`, `ブロッカーのタスク 1 が ${blocker} のまま、タスク 2 が in_progress になりました`), say("refused until task 1 is completed", "タスク 1 が completed になるまでは拒否"));
          if (!/\b1\b/.test((refused ?? "").replace(/\btask 2\b/g, ""))) t.fail(say(`task 2 was refused with ${quote(refused)}, which does not name task 1`, `タスク 2 は ${quote(refused)} で拒否されましたが、タスク 1 を名指ししていません`), say("an error naming task 1", "タスク 1 を名指しするエラー"));
          if (onDisk(t, "2")?.status !== "pending") t.fail(say(`after the refusal, task 2's file says ${quote(onDisk(t, "2")?.status)}`, `拒否のあと、タスク 2 のファイルの状態が ${quote(onDisk(t, "2")?.status)} です`), say("pending", "pending"));
        }
        await mustWork(t, "bob completing task 1", stage.updateTask(t.workspace, "1", "bob", { status: "completed" }));
        await mustWork(t, "alice starting task 2 once task 1 is completed", stage.updateTask(t.workspace, "2", "alice", { status: "in_progress" }));
        if (onDisk(t, "2")?.status !== "in_progress") t.fail(say(`task 2's file says ${quote(onDisk(t, "2")?.status)} after it started`, `始めたあと、タスク 2 のファイルの状態が ${quote(onDisk(t, "2")?.status)} です`), say("in_progress", "in_progress"));
      },
    },
    {
      id: "start-claims",
      title: say("Whoever moves an unowned task to in_progress becomes its owner", "持ち主のいないタスクを in_progress にした人が持ち主になる"),
      hints: [
        say("Working on a task nobody owns is claiming it without saying so: make it say so.", "誰も持っていないタスクに取りかかるのは、黙って claim するのと同じです。それを記録します。"),
        say("The check comes after the blocker check: a task that may not start is not claimed by trying.", "ブロッカーの確認のあとに置きます。始められないタスクを、試しただけで claim してはいけません。"),
        say('if (change.status === "in_progress") task.owner ??= by;', 'if (change.status === "in_progress") task.owner ??= by;'),
      ],
      async check(t) {
        const stage = stageOf(t);
        await stage.createTask(t.workspace, "Write the parser", "");
        await mustWork(t, "alice starting the unowned task 1", stage.updateTask(t.workspace, "1", "alice", { status: "in_progress" }));
        if (onDisk(t, "1")?.owner !== "alice") t.fail(say(`alice started the unowned task 1, and its owner is ${quote(onDisk(t, "1")?.owner)}`, `alice が持ち主のいないタスク 1 を始めましたが、持ち主は ${quote(onDisk(t, "1")?.owner)} です`), say("alice", "alice"));
        const refused = await refusal(stage.updateTask(t.workspace, "1", "bob", { status: "in_progress" }));
        if (refused === undefined || !refused.includes("alice")) t.fail(say(`bob starting alice's task 1 got ${quote(refused ?? "no refusal")}`, `bob が alice のタスク 1 を始めようとした答えは ${quote(refused ?? "拒否なし")} でした`), say("a refusal naming alice", "alice を名指しする拒否"));
      },
    },
    {
      id: "owner-only",
      title: say(
        'Only a task\'s owner, or the lead, may change a claimed task; owner "" gives it up, and then another may claim it',
        'claim されたタスクを変えられるのは持ち主とリードだけ。owner "" で手放すと、ほかの人が claim できる',
      ),
      hints: [
        say("Before any change: if the task has an owner and it is neither `by` nor LEAD, refuse, naming the owner.", "どの変更の前にも、持ち主がいて、それが `by` でも LEAD でもなければ、持ち主を名指しして拒否します。"),
        say('An empty owner means "nobody": store null, as a task that was never claimed has.', '空の owner は「誰でもない」です。1度も claim されていないタスクと同じく null を入れます。'),
        say('if (task.owner && task.owner !== by && by !== LEAD) fail(`task ${id} is claimed by ${task.owner}`); ... task.owner = change.owner || null;', 'if (task.owner && task.owner !== by && by !== LEAD) fail(`task ${id} is claimed by ${task.owner}`); ... task.owner = change.owner || null;'),
      ],
      async check(t) {
        const stage = stageOf(t);
        await stage.createTask(t.workspace, "Write the parser", "");
        await stage.createTask(t.workspace, "Test the parser", "");
        await mustWork(t, "alice claiming task 1", stage.updateTask(t.workspace, "1", "alice", { status: "in_progress", owner: "alice" }));
        const refused = await refusal(stage.updateTask(t.workspace, "1", "bob", { status: "completed" }));
        if (refused === undefined || !refused.includes("alice")) t.fail(say(`bob completing alice's task 1 got ${quote(refused ?? "no refusal")}; the file says ${quote(onDisk(t, "1")?.status)}`, `bob が alice のタスク 1 を completed にしようとした答えは ${quote(refused ?? "拒否なし")}、ファイルの状態は ${quote(onDisk(t, "1")?.status)} でした`), say("a refusal naming alice, the task as it was", "alice を名指しする拒否で、タスクはそのまま"));
        await mustWork(t, "alice claiming task 2", stage.updateTask(t.workspace, "2", "alice", { status: "in_progress", owner: "alice" }));
        await mustWork(t, "the lead putting alice's task 2 back to pending", stage.updateTask(t.workspace, "2", "lead", { status: "pending" }));
        await mustWork(t, 'alice giving task 1 up (owner "")', stage.updateTask(t.workspace, "1", "alice", { status: "pending", owner: "" }));
        if (onDisk(t, "1")?.owner !== null) t.fail(say(`after alice gave task 1 up, its owner is ${quote(onDisk(t, "1")?.owner)}`, `alice がタスク 1 を手放したあと、持ち主が ${quote(onDisk(t, "1")?.owner)} です`), say("null: nobody", "null（誰でもない）"));
        await mustWork(t, "bob claiming task 1 once it was given up", stage.updateTask(t.workspace, "1", "bob", { status: "in_progress", owner: "bob" }));
      },
    },
    {
      id: "cycles",
      title: say("blocked_by changed by task_update is checked: ids on the board only, and no cycle", "task_update で変えた blocked_by も確かめる（ボードにある id だけ、循環はなし）"),
      hints: [
        say("createTask checks blocked_by with checkBlockers. A change of blocked_by needs the same check.", "createTask は blocked_by を checkBlockers で確かめます。blocked_by を変えるときも同じ確認が要ります。"),
        say("checkBlockers throws for an unknown id or a cycle, and returns the list without repeats: keep what it returns.", "checkBlockers は、知らない id や循環があれば例外を投げ、重複を除いたリストを返します。返ったものを入れます。"),
        say("if (change.blocked_by) task.blocked_by = checkBlockers(id, change.blocked_by, tasks);", "if (change.blocked_by) task.blocked_by = checkBlockers(id, change.blocked_by, tasks);"),
      ],
      async check(t) {
        const stage = stageOf(t);
        await stage.createTask(t.workspace, "Write the parser", "");
        await stage.createTask(t.workspace, "Test the parser", "", ["1"]);
        for (const [blockedBy, what] of [[["2"], "1 blocked by 2, which is blocked by 1"], [["1"], "1 blocked by itself"], [["7"], "1 blocked by task 7, not on the board"]] as const) {
          const refused = await refusal(stage.updateTask(t.workspace, "1", "lead", { status: "pending", blocked_by: [...blockedBy] }));
          const file = onDisk(t, "1")?.blocked_by;
          if (refused === undefined || JSON.stringify(file) !== "[]") t.fail(say(`${what}: ${refused === undefined ? "accepted, and" : "refused, yet"} the file says blocked_by ${quote(file)}`, `${what}: ${refused === undefined ? "受け付けられ" : "拒否されたのに"}、ファイルの blocked_by が ${quote(file)} です`), say("refused, blocked_by still []", "拒否され、blocked_by は [] のまま"));
        }
      },
    },
    {
      id: "claim-next",
      title: say(
        "claimNext gives an idle teammate its own free task first, else an unowned one, never a blocked one or another's, started (in_progress) and owned; none: nothing",
        "claimNext は手の空いたチームメイトに、まず自分の空いたタスク、なければ持ち主のいないタスクを、in_progress にして持ち主を入れて渡す。ブロックされたものやほかの人のものは渡さない。なければ何も渡さない",
      ),
      hints: [
        say("Free means pending, with no blocker left (openBlockers is empty).", "空いているとは、pending で、残っているブロッカーがない（openBlockers が空）ことです。"),
        say("Two finds: its own free task, ?? an unowned free one. Return a copy with owner and status set; changeBoard writes it.", "find を2回: 自分の空いたタスク ?? 持ち主のいない空いたタスク。owner と status を入れた写しを返せば、changeBoard が書きます。"),
        say('const free = (task) => task.status === "pending" && openBlockers(task, tasks).length === 0; const task = tasks.find((t) => free(t) && t.owner === name) ?? tasks.find((t) => free(t) && !t.owner); return task && { ...task, owner: name, status: "in_progress" };', 'const free = (task) => task.status === "pending" && openBlockers(task, tasks).length === 0; const task = tasks.find((t) => free(t) && t.owner === name) ?? tasks.find((t) => free(t) && !t.owner); return task && { ...task, owner: name, status: "in_progress" };'),
      ],
      async check(t) {
        const stage = stageOf(t);
        board(t, { status: "in_progress", owner: "bob" }, { owner: "bob" }, { blocked_by: ["1"] }, {}, { owner: "alice", blocked_by: ["6"] }, { status: "completed" }, { owner: "alice" });
        // 1 bob's, started; 2 bob's; 3 blocked by 1; 4 free; 5 alice's, blocked by 6, which is completed: free; 7 alice's, free
        const order: (string | undefined)[] = [];
        for (let i = 0; i < 4; i++) order.push((await stage.claimNext(t.workspace, "alice"))?.id);
        if (JSON.stringify(order) !== JSON.stringify(["5", "7", "4", undefined])) {
          t.fail(say(`alice, idle four times, got the tasks ${quote(order)} (1 and 2 are bob's, 3 is blocked by 1, 4 is free, 5 and 7 are hers)`, `手の空いた alice が4回で受け取ったのは ${quote(order)} でした（1 と 2 は bob のもの、3 は 1 にブロック、4 は空き、5 と 7 は alice のもの）`), say('["5", "7", "4", undefined]: her own first, then the unowned one, then nothing', '["5", "7", "4", undefined]: まず自分のもの、次に持ち主のないもの、そのあとは何もなし'));
        }
        for (const id of ["5", "7", "4"]) {
          const task = onDisk(t, id);
          if (task?.owner !== "alice" || task.status !== "in_progress") t.fail(say(`task ${id}, given to alice, has the owner ${quote(task?.owner)} and the status ${quote(task?.status)} in its file`, `alice に渡ったタスク ${id} のファイルは、持ち主 ${quote(task?.owner)}、状態 ${quote(task?.status)} です`), say("owner alice, in_progress", "持ち主 alice、in_progress"));
        }
      },
    },
  ],
});
