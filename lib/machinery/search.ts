// The search behind grep: the files the walk finds (walk.ts), searched in worker threads with
// a time limit while the walk is still finding more, and the report of what was found.
//
// What a plain search gets wrong, and what this one does instead (docs: Under the hood, "The search"):
// - `new RegExp(pattern).test(line)` on the main thread: a pattern with nested repetition,
//   `(a+)+$`, runs for years on one unlucky line, and nothing can interrupt it; timers and
//   Ctrl-C are dead. Here the search runs in workers, which can be terminated at the limit.
// - reading every file whole into a string: a 4 GB log fills memory. Here a file over 10 MB is
//   skipped and said so, and a binary one (a NUL byte early on) too.
// - line by line over decoded text: slow on a large tree. Here one pass over the bytes finds
//   the lines worth a look (see the long comment below).
import { existsSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { MAX_FILE_BYTES } from "./safe-read.ts";
import { byName, findFiles, relativeName, unreadableNote, type FoundFile } from "./walk.ts";

const MAX_LINE = 2000; // characters shown of one matching line


// #region limits
/**
 * How long one search may take in all (users get 10 s), and how many files make another
 * worker worth starting: a small search runs in one worker, a large one in one per core (at
 * most 4). Exported so tests can change them.
 */
export const GREP_LIMITS = { milliseconds: 10_000, filesPerWorker: 1000 };
const BATCH = 500; // files the walk hands to the workers at a time
// #endregion limits

/** What a worker found in one file; `lines` (content mode) are ready to show: path:line: text. */
export type FileResult = { skipped?: string; unreadable?: string; count?: number; lines?: string[] };
/**
 * A search's answer: the files searched, sorted by path so the same search always answers in
 * the same order; per file its result (undefined: no match) and whether it was searched; the
 * files the search was stuck in when time ran out; the folders the walk could not read.
 */
export type Search = { files: FoundFile[]; results: (FileResult | undefined)[]; searched: boolean[]; stuckIn: number[]; timedOut: boolean; unreadable: string[] };

/**
 * Search `target` (a path the sandbox has checked; `given` is how the model wrote it): a file
 * named outright, or the files under a folder whose name or path matches `include`.
 * `leaveOut`: files the walk finds that this search passes over.
 */
export async function searchFiles(
  root: string,
  target: string,
  given: string,
  include: string,
  pattern: string,
  options: { mode: string; maxResults: number; leaveOut?: (file: FoundFile) => boolean },
): Promise<Search> {
  if (!existsSync(target)) throw new Error(`${given} does not exist`);
  const stat = statSync(target);
  if (!stat.isFile() && !stat.isDirectory()) throw new Error(`${given} is neither a file nor a folder`);
  const search = startSearch(pattern, options.mode, options.maxResults);
  let files: FoundFile[] = [];
  let unreadable: string[] = [];
  if (stat.isFile()) {
    // A file named outright is searched even where a skip rule would have left it out.
    files = [{ shown: relativeName(root, target), full: target }];
    search.add(files);
  } else {
    // The workers start on the first files while the walk looks for the rest. "*.ts" matches
    // in every folder, as grep --include does; "src/**/*.ts" matches paths. The pattern is
    // checked before the walk starts, so a bad one throws before any worker is busy.
    let batch: FoundFile[] = [];
    const onFound = (file: FoundFile) => {
      if (options.leaveOut?.(file)) return;
      files.push(file);
      batch.push(file);
      if (batch.length === BATCH) {
        search.add(batch);
        batch = [];
      }
    };
    unreadable = findFiles(root, include, target, { baseNameMatch: true, onFound }).unreadable;
    search.add(batch);
  }
  const found = await search.finish();
  const order = files.map((_, i) => i).sort((a, b) => byName(files[a].shown, files[b].shown));
  return {
    files: order.map((i) => files[i]),
    results: order.map((i) => found.results[i]),
    searched: order.map((i) => found.searched[i]),
    stuckIn: found.stuckIn.map((i) => order.indexOf(i)),
    timedOut: found.timedOut,
    unreadable,
  };
}

// The search runs in worker threads because a pattern with nested repetition, like (a+)+$,
// can take years on one unlucky line, and a running RegExp cannot be interrupted on the main
// thread. A worker can be terminated. The walk hands the files over in batches as it finds
// them, and every worker gets every batch: the workers take the next file of a batch from a
// counter they share, so a large file does not hold up the others, and mark each file done in
// shared memory: that costs nothing, and when time runs out we know exactly which files were
// searched. Only a file with matches (or one skipped) sends a message. Starting a worker takes
// longer than many a search, so workers wait for the next search when they finish; one
// stopped at the time limit is gone, and a new one takes its place. Plain JavaScript in a
// string (eval: true) needs no TypeScript loader in the worker.
//
// Each file is searched whole, not line by line: one pass of the regular expression over the
// text finds the lines worth a look, and each of those is tested again on its own, so the
// answers are exactly those of a line-by-line search. That holds when no match can reach over
// a line break or look past its line, so the whole text is searched with a pattern that cannot
// (see wholeTextPattern); a pattern with a lookaround is searched line by line. And when a
// pattern can match only ASCII characters, the bytes are read as latin1, one character per
// byte, which is many times faster than decoding UTF-8 and finds
// the same lines; only the lines shown are decoded. Plain text that every match must hold
// (function in function\s+\w+) is looked for in the bytes first (Buffer.indexOf): a file
// without it is done without decoding at all. And a pattern that is nothing but plain text is
// searched in the bytes alone: UTF-8 text holds a word exactly where its bytes hold the word's
// bytes, so only the lines shown are ever decoded.
const SEARCH_WORKER = `
const { parentPort } = require("node:worker_threads");
const { isAscii } = require("node:buffer");
const { closeSync, constants, openSync, readSync } = require("node:fs");
let buffer = Buffer.alloc(65536);
let task, onLine, inWhole, needle;

parentPort.on("message", (message) => {
  if (message.type === "search") {
    task = message;
    onLine = new RegExp(task.pattern);
    inWhole = task.whole === undefined ? undefined : new RegExp(task.whole, "gm");
    needle = task.text === undefined ? undefined : Buffer.from(task.text);
  } else if (message.type === "batch") {
    const { files, names, next, done, number, offset } = message;
    for (let index = Atomics.add(next, 0, 1); index < files.length; index = Atomics.add(next, 0, 1)) {
      Atomics.store(task.current, 2 * task.slot, number);
      Atomics.store(task.current, 2 * task.slot + 1, index);
      const result = searchFile(files[index], names[index]);
      if (result) parentPort.postMessage([offset + index, result]);
      Atomics.store(done, index, 1);
    }
    Atomics.store(task.current, 2 * task.slot, -1);
  } else {
    // "end": there are no more files for this search.
    if (buffer.length > 1 << 20) buffer = Buffer.alloc(65536); // a waiting worker keeps little
    parentPort.postMessage("finished");
  }
});

function searchFile(file, name) {
  let bytes;
  try {
    bytes = readFile(file);
  } catch (error) {
    return { unreadable: error.code || error.message };
  }
  if (bytes === undefined) return { skipped: "over 10 MB" };
  const nul = bytes.indexOf(0);
  if (nul !== -1 && nul < 8192) return { skipped: "binary" };
  if (needle && bytes.indexOf(needle) === -1) return undefined;
  const found = task.plain ? searchBytes(bytes, name) : inWhole ? searchWhole(bytes, name) : searchLines(bytes.toString("utf8"), name);
  return found.count > 0 ? found : undefined;
}

// The walk lists only regular files, but one may have been replaced since. The file is opened
// without waiting (a FIFO there cannot hang the search) and without following a symlink put
// there, and read to its end but never past the size limit (a device there cannot fill memory).
// undefined: over the limit.
function readFile(file) {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  try {
    let length = 0;
    while (true) {
      if (length === buffer.length) {
        if (length > task.maxBytes) return undefined;
        const larger = Buffer.allocUnsafe(Math.min(buffer.length * 4, task.maxBytes + 1));
        buffer.copy(larger);
        buffer = larger;
      }
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) return buffer.subarray(0, length);
      length += read;
    }
  } finally {
    closeSync(fd);
  }
}

function searchWhole(bytes, name) {
  const text = bytes.toString(task.latin1 ? "latin1" : "utf8");
  const decodeLines = task.latin1 && !isAscii(bytes); // latin1 text of UTF-8 bytes: decode the lines shown
  const found = { count: 0, lines: [] };
  let lineNumber = 1;
  let counted = 0;
  inWhole.lastIndex = 0;
  for (let match = inWhole.exec(text); match; match = inWhole.exec(text)) {
    const start = match.index === 0 ? 0 : text.lastIndexOf("\\n", match.index - 1) + 1;
    if (start === text.length) break; // after the final line break: no line there
    let end = text.indexOf("\\n", match.index);
    if (end === -1) end = text.length;
    const line = withoutCR(decodeLines ? bytes.toString("utf8", start, end) : text.slice(start, end));
    if (onLine.test(line)) {
      found.count += 1;
      if (task.mode === "files_with_matches") break;
      if (task.mode === "content" && found.lines.length < task.maxResults) {
        for (let at = text.indexOf("\\n", counted); at !== -1 && at < start; at = text.indexOf("\\n", at + 1)) lineNumber += 1;
        counted = start;
        found.lines.push(shown(name, lineNumber, line));
      }
    }
    inWhole.lastIndex = end + 1;
  }
  return found;
}

function searchBytes(bytes, name) {
  const found = { count: 0, lines: [] };
  let lineNumber = 1;
  let counted = 0;
  for (let at = bytes.indexOf(needle); at !== -1; ) {
    const start = at === 0 ? 0 : bytes.lastIndexOf(10, at - 1) + 1;
    let end = bytes.indexOf(10, at);
    if (end === -1) end = bytes.length;
    found.count += 1;
    if (task.mode === "files_with_matches") break;
    if (task.mode === "content" && found.lines.length < task.maxResults) {
      for (let nl = bytes.indexOf(10, counted); nl !== -1 && nl < start; nl = bytes.indexOf(10, nl + 1)) lineNumber += 1;
      counted = start;
      found.lines.push(shown(name, lineNumber, withoutCR(bytes.toString("utf8", start, end))));
    }
    at = bytes.indexOf(needle, end + 1); // a line counts once, however often it holds the text
  }
  return found;
}

function searchLines(text, name) {
  const found = { count: 0, lines: [] };
  const lines = text.split("\\n");
  if (lines[lines.length - 1] === "") lines.pop(); // a final line break ends a line, it does not start one
  for (let index = 0; index < lines.length; index++) {
    const line = withoutCR(lines[index]);
    if (!onLine.test(line)) continue;
    found.count += 1;
    if (task.mode === "files_with_matches") break;
    if (task.mode === "content" && found.lines.length < task.maxResults) found.lines.push(shown(name, index + 1, line));
  }
  return found;
}

function withoutCR(line) {
  return line.endsWith("\\r") ? line.slice(0, -1) : line;
}

function shown(name, number, line) {
  const text = line.length > task.maxLine ? line.slice(0, task.maxLine) + " [line cut at " + task.maxLine + " characters]" : line;
  return name + ":" + number + ": " + text;
}`;

/** Workers waiting for the next search. */
const idleWorkers: Worker[] = [];

/**
 * A search in worker threads that takes its files a batch at a time: `add` hands a batch
 * over, `finish` says there are no more and waits for the answer, in the order the files were
 * added. The time limit counts from the first batch. One worker searches while the walk goes
 * on, since the walk keeps a core busy too; when it is done, another joins for every
 * filesPerWorker files, up to one per core, and they share what is left.
 */
function startSearch(pattern: string, mode: string, maxResults: number) {
  const most = Math.min(availableParallelism(), 4);
  // #region fast-paths
  const whole = wholeTextPattern(pattern);
  const latin1 = whole !== undefined && matchesOnlyAscii(pattern);
  const text = requiredText(pattern);
  const plain = text === pattern && !/[\x00-\x1f]/.test(pattern); // a line break in it could never match a line
  // #endregion fast-paths
  // Shared with the workers: the batch and the file each worker is in, -1 when none.
  const current = new Int32Array(new SharedArrayBuffer(8 * most)).fill(-1);
  const task = { type: "search", pattern, whole, latin1, text, plain, mode, maxResults, maxLine: MAX_LINE, maxBytes: MAX_FILE_BYTES, current };
  const batches: { offset: number; done: Uint8Array; message: object }[] = [];
  const results: (FileResult | undefined)[] = [];
  const workers: Worker[] = [];
  const busy = new Set<Worker>();
  let total = 0;
  let timedOut = false;
  let failure: Error | undefined;
  let whenThrough = () => {};
  let timer: NodeJS.Timeout | undefined;

  // #region worker
  const startWorker = () => {
    timer ??= setTimeout(() => {
      timedOut = true;
      busy.forEach((worker) => void worker.terminate());
    }, GREP_LIMITS.milliseconds);
    // execArgv: [] — the worker's code is plain CommonJS; a parent started with
    // --input-type=module (or a loader) would otherwise hand it flags that break it.
    const worker = idleWorkers.pop() ?? new Worker(SEARCH_WORKER, { eval: true, execArgv: [] });
    // A worker is through with this search when it says "finished", or when it has ended
    // ("exit" comes after every message it sent, whether it finished or was stopped).
    const through = (again: boolean) => {
      if (!busy.delete(worker)) return;
      worker.off("message", onMessage).off("exit", onExit).off("error", onError);
      if (again && !timedOut) {
        worker.unref(); // a waiting worker does not keep the program running
        idleWorkers.push(worker);
      }
      if (busy.size === 0) whenThrough();
    };
    const onMessage = (message: "finished" | [number, FileResult]) => {
      if (message === "finished") through(true);
      else results[message[0]] = message[1];
    };
    const onExit = () => through(false);
    const onError = (error: Error) => {
      failure = error;
      busy.forEach((other) => void other.terminate());
    };
    worker.on("message", onMessage).on("exit", onExit).on("error", onError);
    worker.ref();
    worker.postMessage({ ...task, slot: workers.length });
    workers.push(worker);
    busy.add(worker);
    for (const batch of batches) worker.postMessage(batch.message); // it helps with what is left
  };
  // #endregion worker

  return {
    add(files: FoundFile[]) {
      if (files.length === 0 || timedOut) return;
      const done = new Uint8Array(new SharedArrayBuffer(files.length));
      const message = {
        type: "batch", number: batches.length, offset: total, done, next: new Int32Array(new SharedArrayBuffer(4)),
        files: files.map((file) => file.full), names: files.map((file) => file.shown),
      };
      batches.push({ offset: total, done, message });
      total += files.length;
      for (const worker of busy) worker.postMessage(message);
      if (workers.length === 0) startWorker();
    },
    finish(): Promise<{ results: (FileResult | undefined)[]; searched: boolean[]; stuckIn: number[]; timedOut: boolean }> {
      return new Promise((resolve, reject) => {
        whenThrough = () => {
          clearTimeout(timer);
          if (failure) return reject(new Error(`the search failed: ${failure.message}`));
          const searched = batches.flatMap(({ offset, done }) => [...done].map((flag, i) => flag === 1 || results[offset + i] !== undefined));
          const stuckIn = workers.flatMap((_, slot) => {
            const [batch, index] = [current[2 * slot], current[2 * slot + 1]];
            return batch >= 0 && !searched[batches[batch].offset + index] ? [batches[batch].offset + index] : [];
          });
          resolve({ results: Array.from({ length: total }, (_, i) => results[i]), searched, stuckIn, timedOut });
        };
        if (busy.size === 0) return whenThrough(); // nothing was added, or every worker has stopped
        while (!timedOut && workers.length < most && total > GREP_LIMITS.filesPerWorker * workers.length) startWorker();
        for (const worker of busy) worker.postMessage({ type: "end" });
      });
    },
  };
}

/**
 * The pattern to search a whole text with, or undefined when only a line-by-line search can
 * be trusted. No match of it may reach over a line break, so what could match one is kept
 * from it: \s, \W and \D become [^\S\n], [^\w\n] and [^\d\n], and [^x] becomes [^x\n]. A line
 * has no line break, so it matches exactly as before. A lookaround (it may look past its line),
 * an escape that could stand for a line break (\n, \x0a, \u000a), and \s, \W or \D inside a
 * [...] leave the pattern to the line-by-line search.
 */
function wholeTextPattern(pattern: string): string | undefined {
  if (/[\x00-\x1f]|\(\?<?[=!]/.test(pattern)) return undefined;
  const withoutBreak: Record<string, string> = { "\\s": "[^\\S\\n]", "\\W": "[^\\w\\n]", "\\D": "[^\\d\\n]" };
  let whole = "";
  let inClass: "" | "[" | "[^" = "";
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === "\\") {
      const escape = pattern.slice(i, i + 2);
      i += 1;
      if (/^\\[bBdwStvf\\^$.*+?()[\]{}|/-]$/.test(escape)) whole += escape; // never a line break
      else if (escape in withoutBreak && inClass === "") whole += withoutBreak[escape];
      else if (escape in withoutBreak && inClass === "[^") whole += escape; // [^\s] is no break either
      else return undefined;
    } else if (inClass !== "" && pattern[i] === "]") {
      whole += inClass === "[^" ? "\\n]" : "]";
      inClass = "";
    } else if (inClass === "" && pattern[i] === "[") {
      inClass = pattern[i + 1] === "^" ? "[^" : "[";
      whole += inClass;
      i += inClass.length - 1;
    } else whole += pattern[i];
  }
  return whole;
}

/**
 * Plain text that every match of `pattern` holds, or undefined. With a | or a group, which
 * may leave any part out, or {n,m}, none is sought. Otherwise it is the longest run of plain
 * characters: [...] and escapes stand for one of several characters, so they end a run; so
 * do . ^ $ and +, and a ? or * takes away the character before it. (U+FFFD may stand for
 * bytes that are not UTF-8, so a pattern with it has none.)
 */
function requiredText(pattern: string): string | undefined {
  if (/[|(){}\uFFFD]/.test(pattern)) return undefined;
  // [...], or an escape: \ and the character after it, or all of \x41, \u0041, \cJ and \101,
  // which stand for one character each (their digits and letters are not text to look for).
  const oneOfSeveral = /\[(?:\\.|[^\]\\])*\]|\\(?:x[\da-fA-F]{2}|u[\da-fA-F]{4}|c[a-zA-Z]|[0-7]{1,3}|[\s\S])/;
  const notPlain = /[\s\S]?[?*]|[.^$+]/; // a character with ? or * after it; . ^ $ +
  let longest = "";
  for (const piece of pattern.split(oneOfSeveral)) {
    for (const run of piece.split(notPlain)) if (run.length > longest.length) longest = run;
  }
  return longest || undefined;
}

/** Whether `pattern` can match only ASCII characters: then every match is the same in the bytes read as latin1. */
function matchesOnlyAscii(pattern: string): boolean {
  const rest = pattern.replace(/\\[bBdwtvfnr\\^$.*+?()[\]{}|/-]/g, "");
  return /^[\x20-\x7e]*$/.test(pattern) && !/[.\\]|\[\^/.test(rest);
}

/** The results in the chosen mode, then notes on what was cut, skipped, unreadable or not searched. */
export function grepReport(files: FoundFile[], search: Search, mode: string, max: number, what: string): string {
  const { results } = search;
  const entries: string[] = [];
  let total = 0; // matching lines in content mode, files otherwise
  files.forEach((file, i) => {
    const count = results[i]?.count;
    if (!count) return;
    total += mode === "content" ? count : 1;
    if (entries.length >= max) return;
    if (mode === "content") for (const line of results[i]!.lines!) entries.push(line);
    else entries.push(mode === "count" ? `${file.shown}: ${count}` : file.shown);
  });
  const skipped = results.flatMap((result) => (result?.skipped ? [result.skipped] : []));
  const unreadable = files.flatMap((file, i) => (results[i]?.unreadable ? [`${file.shown} (${results[i]!.unreadable})`] : []));
  const searched = search.searched.filter(Boolean).length - skipped.length - unreadable.length;
  const report = entries.length > 0 ? [entries.slice(0, max).join("\n")] : [`No matches for ${what} (${searched} files searched)`];
  const unit = mode === "content" ? "matching lines" : "files";
  if (total > max) report.push(`[showing the first ${max} of ${total} ${unit}; narrow path, include or the pattern, or raise max_results]`);
  if (skipped.length > 0) report.push(`[skipped ${skipped.length} file(s): ${[...new Set(skipped)].join(", ")}]`);
  report.push(...unreadableNote("file", unreadable));
  if (search.timedOut) {
    const left = files.filter((_, i) => !search.searched[i]).map((file) => file.shown);
    const stuck = search.stuckIn.length > 0 ? search.stuckIn.map((i) => files[i].shown) : left.slice(0, 1);
    report.push(
      `[stopped after ${GREP_LIMITS.milliseconds / 1000} s: searched ${files.length - left.length} of ${files.length} files. ` +
        `Not searched: ${left.slice(0, 10).join(", ")}${left.length > 10 ? ` and ${left.length - 10} more` : ""}. ` +
        `The search was still in ${stuck.join(" and ")}; a pattern with nested repetition such as (a+)+ can run for ever on some lines, so simplify it or narrow path or include]`,
    );
  }
  return report.join("\n");
}
