// `npm run verify -- s02` checks the learner's copy, workshop/s02.ts, against exercise s02:
// one line per requirement (✓ or ✗), then for the first failure what was expected, what
// happened and a hint.
//
//   npm run verify -- s02              check workshop/s02.ts
//   npm run verify -- s02 --hint       the next hint (a nudge, the idea, nearly the code)
//   npm run verify -- s02 --solution   the same checks against the reference (the stage file)
//   npm run verify -- s02 --watch      check again on every save
//   npm run verify -- s02 --lang ja    in Japanese (also when LANG starts with ja)
//   npm run verify -- s02 --dir workshop/pair2   the copy made with the same --dir
//   npm run verify:all                 CI: every exercise's starter fails, its solution passes
//
// The checks run in a child process (lib/course/exercises.ts), so a copy whose loop never returns
// fails its check after a time limit (--time-limit <seconds>; 20 by default, 30 for
// verify:all on a busy CI machine) instead of hanging.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, watch, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  DEFAULT_TIME_LIMIT_MS,
  dirOption,
  exerciseIds,
  folderProblem,
  GENEROUS_TIME_LIMIT_MS,
  loadExercise,
  runChecksApart,
  solvedCopy,
  stageFileOf,
  wrongText,
  starterOf,
  takenOutNames,
  typeCheck,
  WORKSHOP_DIR,
  type CheckResult,
  type Exercise,
  type Lang,
  type Text,
} from "../lib/course/exercises.ts";
import { CAPSTONE, existingStages, REPO_ROOT } from "../lib/course/stages.ts";

// ---------------------------------------------------------------------------------------
// The command line

export interface Options {
  stage?: string;
  lang: Lang;
  hint: boolean;
  solution: boolean;
  watch: boolean;
  all: boolean;
  force: boolean;
  dir: string;
  /** Given with --time-limit; otherwise 20 s for a learner, 30 s for verify:all (a busy CI machine). */
  timeLimitMs?: number;
  problems: string[];
}

/** The flags both commands share, and the stage id. */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): Options {
  const options: Options = {
    lang: languageOf(env),
    hint: false,
    solution: false,
    watch: false,
    all: false,
    force: false,
    dir: WORKSHOP_DIR,
    problems: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => argv[++i] ?? "";
    if (arg === "--hint") options.hint = true;
    else if (arg === "--solution") options.solution = true;
    else if (arg === "--watch") options.watch = true;
    else if (arg === "--all") options.all = true;
    else if (arg === "--force") options.force = true;
    else if (arg === "--lang") {
      const lang = value();
      if (lang === "en" || lang === "ja") options.lang = lang;
      else options.problems.push(`--lang takes en or ja, not "${lang}"`);
    } else if (arg === "--dir") options.dir = path.resolve(value());
    else if (arg === "--time-limit") {
      const seconds = Number(value());
      if (seconds > 0) options.timeLimitMs = seconds * 1000;
      else options.problems.push("--time-limit takes a number of seconds above 0");
    } else if (arg.startsWith("-")) options.problems.push(`unknown option ${arg}`);
    else if (options.stage === undefined) options.stage = arg;
    else options.problems.push(`one stage at a time (got ${options.stage} and ${arg})`);
  }
  return options;
}

/** Japanese when asked for, or when the shell's language is Japanese. */
export function languageOf(env: NodeJS.ProcessEnv): Lang {
  const locale = env.LC_ALL || env.LC_MESSAGES || env.LANG || env.LANGUAGE || "";
  return /^ja/i.test(locale) ? "ja" : "en";
}

/** A path as the learner would type it: relative to where they are, when that is shorter. */
export const shown = (file: string) => {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith("..") ? relative : file;
};

const WORDS = {
  en: {
    usage: (command: string) => `Usage: npm run ${command} -- <stage>   e.g. npm run ${command} -- s01`,
    exercises: (ids: string[]) => `The exercises: ${ids.join(", ")}.`,
    noExercise: (stage: string) => `There is no exercise ${stage}.`,
    notYet: (stage: string) => `Stage ${stage} has no exercise yet.`,
    noCopy: (file: string, stage: string) => `There is no working copy at ${file} yet. Make one with: npm run exercise -- ${stage}`,
    title: (exercise: Exercise) => `Exercise ${exercise.stage}: ${exercise.title.en}`,
    checking: (file: string, exercise: Exercise) => `Checking ${file} (you write: ${exercise.mechanism.en})`,
    checkingSolution: (file: string) => `Checking the reference solution, ${file}`,
    notFinished: (seconds: number) => `(did not finish within ${seconds} s)`,
    notRun: "(not checked: a check before it did not finish)",
    cannotLoad: "The checks could not run:",
    doesNotCompile: (problem: string, more: number) => `Your copy does not compile, so no check was run: ${problem}${more > 0 ? ` (${more} more after it)` : ""} Fix it, then verify again.`,
    firstFailure: "First failure:",
    expected: "expected:",
    actual: "actual:  ",
    hint: (level: number) => `hint ${level}/3`,
    nextHint: (stage: string) => `More help: npm run verify -- ${stage} --hint`,
    lastHint: (file: string, stage: string) => `That was the last hint. The stage file ${file} holds a full solution (npm run verify -- ${stage} --solution checks it).`,
    noHintNeeded: "Nothing to hint: every check passes.",
    passed: (n: number, total: number) => `${n} of ${total} checks pass.`,
    allPassed: (total: number, run: string) => `All ${total} checks pass. Run it: ${run}`,
    watching: (file: string) => `Watching ${file}: the checks run again on every save. Ctrl-C stops.`,
  },
  ja: {
    usage: (command: string) => `使い方: npm run ${command} -- <ステージ>   例: npm run ${command} -- s01`,
    exercises: (ids: string[]) => `演習: ${ids.join(", ")}`,
    noExercise: (stage: string) => `演習 ${stage} はありません。`,
    notYet: (stage: string) => `ステージ ${stage} にはまだ演習がありません。`,
    noCopy: (file: string, stage: string) => `${file} に作業用のコピーがまだありません。次のコマンドで作れます: npm run exercise -- ${stage}`,
    title: (exercise: Exercise) => `演習 ${exercise.stage}: ${exercise.title.ja}`,
    checking: (file: string, exercise: Exercise) => `${file} を確かめます（書くもの: ${exercise.mechanism.ja}）`,
    checkingSolution: (file: string) => `模範解答 ${file} を確かめます`,
    notFinished: (seconds: number) => `（${seconds} 秒以内に終わりませんでした）`,
    notRun: "（確かめていません: 前のチェックが終わりませんでした）",
    cannotLoad: "チェックを実行できませんでした:",
    doesNotCompile: (problem: string, more: number) => `コピーがコンパイルできないので、チェックは実行していません: ${problem}${more > 0 ? `（このあとに ${more} 件）` : ""} 直してから、もう一度確かめてください。`,
    firstFailure: "最初に失敗したチェック:",
    expected: "期待:",
    actual: "実際:",
    hint: (level: number) => `ヒント ${level}/3`,
    nextHint: (stage: string) => `次のヒント: npm run verify -- ${stage} --hint`,
    lastHint: (file: string, stage: string) => `これが最後のヒントです。ステージのファイル ${file} に完全な解答があります（npm run verify -- ${stage} --solution で確かめられます）。`,
    noHintNeeded: "ヒントは要りません。すべてのチェックが通っています。",
    passed: (n: number, total: number) => `${total} 件中 ${n} 件のチェックが通りました。`,
    allPassed: (total: number, run: string) => `${total} 件のチェックがすべて通りました。動かしてみましょう: ${run}`,
    watching: (file: string) => `${file} を見張っています。保存するたびにチェックし直します。Ctrl-C で止まります。`,
  },
} as const;

// ---------------------------------------------------------------------------------------
// Which exercise, and which file

/** The exercise for `stage`, or the message that says why there is none. */
export async function findExercise(stage: string | undefined, command: string, lang: Lang): Promise<{ exercise?: Exercise; message?: string }> {
  const words = WORDS[lang];
  const ids = exerciseIds();
  if (!stage) return { message: `${words.usage(command)}\n${words.exercises(ids)}` };
  if (!ids.includes(stage)) {
    const why = existingStages().has(stage) ? words.notYet(stage) : words.noExercise(stage);
    return { message: `${why} ${words.exercises(ids)}` };
  }
  return { exercise: await loadExercise(stage) };
}

// ---------------------------------------------------------------------------------------
// Hints: three levels per requirement; the level is remembered per stage

interface HintState {
  requirement: string;
  level: number;
}

const hintsFile = (dir: string) => path.join(dir, ".hints.json");

function readHints(dir: string): Record<string, HintState> {
  try {
    return JSON.parse(readFileSync(hintsFile(dir), "utf8")) as Record<string, HintState>;
  } catch {
    return {}; // none yet, or a file someone broke: start from the first hint
  }
}

/**
 * The hint level to show for the first failing requirement: 1 for a requirement not seen
 * before, the remembered level otherwise; `advance` (--hint) goes one further and remembers it.
 */
export function hintLevel(dir: string, stage: string, requirement: string, advance: boolean): number {
  const hints = readHints(dir);
  const known = hints[stage]?.requirement === requirement ? hints[stage].level : 1;
  const level = advance ? Math.min(known + 1, 3) : known;
  if (advance) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(hintsFile(dir), JSON.stringify({ ...hints, [stage]: { requirement, level } }, null, 2) + "\n");
  }
  return level;
}

/** Forget the hints of a stage (a fresh copy starts again from the first hint). */
export function forgetHints(dir: string, stage: string): void {
  const hints = readHints(dir);
  if (!(stage in hints)) return;
  delete hints[stage];
  writeFileSync(hintsFile(dir), JSON.stringify(hints, null, 2) + "\n");
}

// ---------------------------------------------------------------------------------------
// The report

const color = (code: number) => (text: string) => (process.stdout.isTTY ? `\x1b[${code}m${text}\x1b[0m` : text);
const green = color(32);
const red = color(31);
const dim = color(2);

/** The line of one requirement. */
export function resultLine(exercise: Exercise, result: CheckResult, index: number, lang: Lang, timeLimitMs: number): string {
  const title = `${index + 1}. ${exercise.requirements[index].title[lang]}`;
  const words = WORDS[lang];
  if (result.status === "passed") return `  ${green("✓")} ${title}`;
  if (result.status === "not-run") return `  ${dim("·")} ${title} ${dim(words.notRun)}`;
  if (result.status === "timed-out") return `  ${red("✗")} ${title} ${words.notFinished(timeLimitMs / 1000)}`;
  return `  ${red("✗")} ${title}`;
}

/** What follows the lines: the first failure in words, with a hint, and the count. */
export function reportEnd(exercise: Exercise, results: CheckResult[], options: { lang: Lang; hintLevel?: number; runCommand: string; dir?: string }): string[] {
  const words = WORDS[options.lang];
  const passed = results.filter((r) => r.status === "passed").length;
  const total = exercise.requirements.length;
  if (passed === total) return ["", green(words.allPassed(total, options.runCommand))];
  const index = results.findIndex((r) => r.status !== "passed");
  const first = results[index];
  const requirement = exercise.requirements[index];
  const level = options.hintLevel ?? 1;
  const lines = [
    "",
    `${words.firstFailure} ${index + 1}. ${requirement.title[options.lang]}`,
    // The requirement is the line above; "expected" only when the check says more than it.
    ...(first.expected && first.expected.en !== requirement.title.en ? [`  ${words.expected} ${first.expected[options.lang]}`] : []),
    `  ${words.actual} ${(first.actual ?? say0())[options.lang]}`,
    `  ${words.hint(level)}: ${requirement.hints[level - 1][options.lang]}`,
  ];
  lines.push(level < 3 ? `  ${dim(words.nextHint(exercise.stage + dirOption(options.dir ?? WORKSHOP_DIR)))}` : `  ${dim(words.lastHint(shown(stageFileOf(exercise)), exercise.stage))}`);
  lines.push("", words.passed(passed, total));
  return lines;
}

const say0 = (): Text => ({ en: "it was not checked", ja: "確かめていません" });

/** Run the checks once and print the report; resolves to the exit code. */
export async function checkOnce(exercise: Exercise, file: string, options: Options & { timeLimitMs: number }, print: (line: string) => void = console.log): Promise<number> {
  const words = WORDS[options.lang];
  print(words.title(exercise));
  print(options.solution ? words.checkingSolution(shown(file)) : words.checking(shown(file), exercise));
  print("");
  // The copy is type-checked while the checks run (each takes a second or more): a name that
  // does not exist, or a type that does not fit, is a problem of the copy, said with its place,
  // not a failed requirement (at run time it would be an is_error result, and a check about
  // something else would be the one to fail).
  const compiled = options.solution ? Promise.resolve([]) : typeCheck(new Map([[path.basename(file), readFileSync(file, "utf8")]]), path.dirname(file));
  const [[problem, ...more], run] = await Promise.all([compiled, runChecksApart(exercise, file, { timeLimitMs: options.timeLimitMs })]);
  if (problem) {
    print(`${red("✗")} ${words.doesNotCompile(/[.?!]$/.test(problem) ? problem : `${problem}.`, more.length)}`);
    return 1;
  }
  run.results.forEach((result, index) => print(resultLine(exercise, result, index, options.lang, options.timeLimitMs)));
  if (run.loadFailure) {
    print(`${red("✗")} ${words.cannotLoad} ${run.loadFailure.message[options.lang]}`);
    return 1;
  }
  const firstFailing = run.results.find((r) => r.status !== "passed");
  const level = firstFailing && !options.solution ? hintLevel(options.dir, exercise.stage, firstFailing.id, options.hint) : 1;
  if (options.hint && !firstFailing) print(words.noHintNeeded);
  const runCommand = `npx tsx ${shown(file)}`;
  for (const line of reportEnd(exercise, run.results, { lang: options.lang, hintLevel: level, runCommand, dir: options.dir })) print(line);
  return firstFailing ? 1 : 0;
}

/** Check on every save until Ctrl-C. */
async function watchAndCheck(exercise: Exercise, file: string, options: Options & { timeLimitMs: number }): Promise<number> {
  const words = WORDS[options.lang];
  let running = false;
  let again = false;
  const run = async () => {
    if (running) return void (again = true);
    running = true;
    try {
      console.log(dim(`\n──── ${new Date().toLocaleTimeString()} ────`));
      await checkOnce(exercise, file, { ...options, hint: false });
      console.log(dim(`\n${words.watching(shown(file))}`));
    } finally {
      running = false; // a run that failed must not stop the next save from being checked
    }
    if (again) {
      again = false;
      void run();
    }
  };
  await run();
  let timer: NodeJS.Timeout | undefined;
  // Editors save in several steps (write, rename): wait for the file to settle.
  watch(path.dirname(file), (_event, name) => {
    if (name !== path.basename(file)) return;
    clearTimeout(timer);
    timer = setTimeout(() => void (existsSync(file) && run()), 300);
  });
  return new Promise((resolve) => process.once("SIGINT", () => resolve(0)));
}

export async function main(argv: string[]): Promise<number> {
  const options = parseOptions(argv);
  if (options.problems.length > 0) {
    console.log(`${options.problems.join("; ")}. ${WORDS[options.lang].usage("verify")}`);
    return 1;
  }
  if (options.all) return verifyAll({ timeLimitMs: options.timeLimitMs ?? GENEROUS_TIME_LIMIT_MS, only: options.stage });
  const { exercise, message } = await findExercise(options.stage, "verify", options.lang);
  if (!exercise) {
    console.log(message);
    return 1;
  }
  const file = options.solution ? stageFileOf(exercise) : path.join(options.dir, `${exercise.stage}.ts`);
  if (!existsSync(file)) {
    console.log(WORDS[options.lang].noCopy(shown(file), exercise.stage + dirOption(options.dir)));
    return 1;
  }
  const folder = options.solution ? undefined : folderProblem(options.dir);
  if (folder) {
    console.log(`${red("✗")} ${folder[options.lang]}`);
    return 1;
  }
  const timed = { ...options, timeLimitMs: options.timeLimitMs ?? DEFAULT_TIME_LIMIT_MS };
  return options.watch ? watchAndCheck(exercise, file, timed) : checkOnce(exercise, file, timed);
}

// ---------------------------------------------------------------------------------------
// verify:all, for CI: for every exercise, the starter fails every check and the report names
// what was taken out; the starter with the stage's code put back passes; the stage file
// passes; and every starter and solved copy type-checks as a file of workshop/.

export async function verifyAll(options: { timeLimitMs: number; only?: string }): Promise<number> {
  const problems: string[] = [];
  // `npm run verify:all -- s05`: that exercise alone, the three ways and its catalogue (an author's check before CI's whole run).
  if (options.only !== undefined && !exerciseIds().includes(options.only)) {
    console.log(`There is no exercise ${options.only}. The exercises: ${exerciseIds().join(", ")}.`);
    return 1;
  }
  const ids = options.only === undefined ? exerciseIds() : [options.only];
  for (const stage of options.only === undefined ? existingStages().keys() : []) {
    // The capstone has no exercise: it brings no new mechanism of its own.
    if (stage !== CAPSTONE.id && !ids.includes(stage)) problems.push(`stage ${stage} has no exercise: add exercises/${stage}.ts (see exercises/README.md)`);
  }
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-verify-all-")));
  const copies = new Map<string, string>();
  try {
    // A folder outside the repository laid out like the workbook around workshop/: ESM, the
    // packages, and the recordings (a stage may find its fixtures beside it, as s08 does).
    writeFileSync(path.join(root, "package.json"), '{ "type": "module" }\n');
    symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(root, "node_modules"));
    symlinkSync(path.join(REPO_ROOT, "fixtures"), path.join(root, "fixtures"));
    const dir = path.join(root, "workshop");
    mkdirSync(dir);
    for (const id of ids) {
      const exercise = await loadExercise(id);
      const stageFile = stageFileOf(exercise);
      const stageText = readFileSync(stageFile, "utf8");
      let starter: string;
      try {
        starter = await starterOf(exercise, stageText, { destDir: dir });
      } catch (error) {
        problems.push(`${id}: the starter cannot be made: ${(error as Error).message}`);
        continue;
      }
      const solved = await solvedCopy(exercise, starter, stageText);
      writeFileSync(path.join(dir, `${id}.ts`), starter);
      writeFileSync(path.join(dir, `${id}.solved.ts`), solved);
      const inWorkshop = await starterOf(exercise, stageText, { destDir: WORKSHOP_DIR });
      copies.set(`${id}.ts`, inWorkshop).set(`${id}.solved.ts`, await solvedCopy(exercise, inWorkshop, stageText));

      const started = Date.now();
      const line: string[] = [];
      for (const [label, file] of [["starter", path.join(dir, `${id}.ts`)], ["solved copy", path.join(dir, `${id}.solved.ts`)], ["stage file", stageFile]] as const) {
        const run = await runChecksApart(exercise, file, { timeLimitMs: options.timeLimitMs });
        const found = label === "starter" ? starterProblems(exercise, run.results, run.loadFailure?.message.en) : solutionProblems(exercise, run.results, run.loadFailure?.message.en);
        problems.push(...found.map((problem) => `${id} ${label}: ${problem}`));
        const passing = run.results.filter((r) => r.status === "passed").length;
        line.push(`${label} ${passing}/${exercise.requirements.length} pass${found.length > 0 ? " ✗" : " ✓"}`);
      }
      line.push(await checkCatalogue(exercise, stageText, dir, options.timeLimitMs, problems));
      console.log(`${id}: ${line.join(", ")}  (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    }
    const typeProblems = await typeCheck(copies);
    console.log(`type check of ${copies.size} starters and solved copies as files of workshop/: ${typeProblems.length === 0 ? "clean ✓" : `${typeProblems.length} problem(s) ✗`}`);
    problems.push(...typeProblems);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  if (problems.length > 0) {
    console.log(`\n${problems.length} problem(s):\n- ${problems.join("\n- ")}`);
    return 1;
  }
  console.log(`\n${ids.length === 1 ? `Exercise ${ids[0]}` : "Every exercise"}: the starter fails each check and names what is missing; the solution passes them all.`);
  return 0;
}

/** Wrong solutions an exercise must have at least: each a mistake learners really make. */
export const MIN_WRONG_SOLUTIONS = 6;

/**
 * Every wrong solution of the exercise's catalogue, made from the stage file, run against the
 * requirement it names: each must fail it (two at a time: each runs in a child process).
 */
async function checkCatalogue(exercise: Exercise, stageText: string, dir: string, timeLimitMs: number, problems: string[]): Promise<string> {
  const id = exercise.stage;
  const wrongs = exercise.wrong ?? [];
  if (wrongs.length < MIN_WRONG_SOLUTIONS) problems.push(`${id}: its catalogue has ${wrongs.length} wrong solution(s); it needs at least ${MIN_WRONG_SOLUTIONS}`);
  let refused = 0;
  const one = async (wrong: (typeof wrongs)[number], n: number) => {
    let copy: string;
    try {
      // The stage made wrong, its imports re-aimed as a copy's are (nothing taken out).
      copy = await starterOf({ ...exercise, takeOut: [] }, wrongText(exercise, wrong, stageText), { destDir: dir });
    } catch (error) {
      return void problems.push(`${id} wrong solution "${wrong.name}": ${(error as Error).message}`);
    }
    const file = path.join(dir, `${id}.wrong-${n + 1}.ts`);
    writeFileSync(file, copy);
    const run = await runChecksApart(exercise, file, { timeLimitMs, only: wrong.fails });
    const result = run.results[0];
    if (run.loadFailure) problems.push(`${id} wrong solution "${wrong.name}" could not be checked: ${run.loadFailure.message.en}`);
    else if (result?.status === "passed") problems.push(`${id} wrong solution "${wrong.name}" passes ${wrong.fails}: that check cannot tell it from a right one`);
    else refused += 1;
  };
  for (let i = 0; i < wrongs.length; i += 2) await Promise.all(wrongs.slice(i, i + 2).map((wrong, k) => one(wrong, i + k)));
  return `wrong solutions ${refused}/${wrongs.length} refused${refused === wrongs.length && wrongs.length >= MIN_WRONG_SOLUTIONS ? " ✓" : " ✗"}`;
}

/** A starter must fail every check, and its report must name something the starter took out. */
export function starterProblems(exercise: Exercise, results: CheckResult[], loadFailure?: string): string[] {
  if (loadFailure) return [`could not be checked: ${loadFailure}`];
  const problems = results.flatMap((result, i) =>
    result.status === "passed" ? [`check ${i + 1} (${result.id}) passes on the untouched starter: it does not test what was taken out`] : [],
  );
  const names = takenOutNames(exercise);
  const first = results.find((r) => r.status !== "passed");
  if (first && !(first.missing && names.includes(first.missing)) && !names.some((name) => first.actual?.en.includes(name))) {
    problems.push(`the first failure (${first.id}) does not name what is missing (${names.join(", ")}): "${first.actual?.en}"`);
  }
  return problems;
}

/** A solution must pass every check. */
export function solutionProblems(exercise: Exercise, results: CheckResult[], loadFailure?: string): string[] {
  if (loadFailure) return [`could not be checked: ${loadFailure}`];
  return results.flatMap((result, i) => (result.status === "passed" ? [] : [`check ${i + 1} (${result.id}) ${result.status}: ${result.actual?.en ?? ""}`]));
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(await main(process.argv.slice(2)));
}
