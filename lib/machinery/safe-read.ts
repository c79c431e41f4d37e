// Reading a file the model named, safely: the file tools (read_file, edit_file), the search
// and the skills all read through here.
//
// What `readFileSync(path, "utf8")` gets wrong, and what this does instead (docs: Under the
// hood, "Safe reads"):
// - a FIFO (named pipe) blocks the whole program until someone writes to it: timers, Ctrl-C,
//   everything. Here the file is opened with O_NONBLOCK and refused once it is seen to be one.
// - /dev/zero, or a symlink to it, is read until memory runs out. Here only regular files are
//   read, and never more than the size seen when the file was opened.
// - a symlink swapped in after the sandbox checked the path is followed. Here O_NOFOLLOW
//   refuses it.
// - a 2 GB log is read whole to show 50 lines. Here readPage keeps only the page's lines, and
//   reads at most LOOK_AHEAD past the page and PAGE_REACH in all: a 64 GB file answers at once.
// - a binary file becomes megabytes of replacement characters in the context. Here a NUL
//   byte in the first 8 KB refuses it.
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from "node:fs";

export const MAX_FILE_BYTES = 10 * 1024 * 1024; // files larger than this are not loaded whole
const MAX_LINE = 2000; // characters shown of one line of a page

/** A file that is there and regular, but is not text to show: binary, or over the size limit. */
export class NotText extends Error {}

/**
 * A page of a file: its lines as shown, the file's number of lines, and whether the page filled
 * up before `limit` lines. `exact`: the file was read to its end; if not, it has at least `total` lines.
 */
export type Page = { shown: string[]; total: number; full: boolean; exact: boolean };

// #region open-file
/**
 * A file opened for reading, or a clear error: missing, a directory, not a regular file. The
 * file is opened first and then looked at through what was opened, so what is checked is
 * what is read. O_NONBLOCK: opening a FIFO must not wait for a writer (it would block the
 * whole program, timers included); a FIFO or a device is refused once it is open.
 */
export function openFile(file: string, given: string): number {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new Error(`${given} does not exist`);
    if (code === "ENOTDIR") throw new Error(`${given} does not exist: a part of its path is a file, not a folder`);
    if (code === "ELOOP") throw new Error(`${given} became a symlink after it was checked; nothing was read`);
    // A socket cannot be opened at all: say what it is rather than "no such device".
    if (code === "ENXIO") throw new Error(`${given} is ${kindOf(statSync(file))}, not a regular file; only regular files are read`);
    throw error;
  }
  const stat = fstatSync(fd);
  if (stat.isFile()) return fd;
  closeSync(fd);
  if (stat.isDirectory()) throw new Error(`${given} is a directory; list it with bash (ls)`);
  throw new Error(`${given} is ${kindOf(stat)}, not a regular file; only regular files are read`);
}
// #endregion open-file

// #region read-text
/**
 * A file's whole text, or a clear error: missing, not a regular file, too large, or binary.
 * `whatInstead` ends the too-large message: what the model can do instead (page it, grep it).
 */
export function readText(file: string, given: string, whatInstead = "look at parts of it with bash (head, grep)"): string {
  const fd = openFile(file, given);
  try {
    const { size } = fstatSync(fd);
    if (size > MAX_FILE_BYTES) {
      throw new NotText(`${given} is ${(size / 1024 / 1024).toFixed(1)} MB, over the 10 MB limit; ${whatInstead}`);
    }
    // At most the size seen when it was opened: a file that keeps growing cannot fill memory.
    const bytes = Buffer.alloc(size);
    let length = 0;
    while (length < bytes.length) {
      const read = readSync(fd, bytes, length, bytes.length - length, null);
      if (read === 0) break; // the file shrank while it was read
      length += read;
    }
    if (bytes.subarray(0, Math.min(length, 8192)).includes(0)) throw new NotText(`${given} looks binary (it contains NUL bytes), so it is not shown as text`);
    return bytes.subarray(0, length).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
// #endregion read-text

// How far readPage reads. It is synchronous (readSync), so while it reads nothing else runs:
// not the timers, not Ctrl-C. Taking an AbortSignal would mean making it async and having
// every caller await it; a bound is cheaper and holds for every caller. 128 MB is read in a
// fraction of a second (a second or two if every line is one character), whatever the file's size.
export const PAGE_REACH = 128 * 1024 * 1024; // bytes of a file readPage reads at most, from its start
export const LOOK_AHEAD = MAX_FILE_BYTES; // bytes read past a page to count the lines after it

/**
 * The lines of a page, numbered as `cat -n` numbers them, and the file's number of lines. The
 * file is read 64 kB at a time and only the page's lines are kept, at most the bytes that can
 * hold MAX_LINE characters of each, so a file of any size can be paged (a command's saved
 * output too). A page also stops before `maxCharacters` (with room for a footer): a read is
 * never too large to send whole. Reading stops LOOK_AHEAD bytes past the page: a file that
 * goes on after that has at least `total` lines (`exact` is false). A page that does not
 * begin within PAGE_REACH bytes is refused, naming the limit; one that runs past it ends
 * there (a line it cuts is shown only when it is cut at MAX_LINE anyway).
 */
export function readPage(file: string, given: string, offset: number, limit: number, maxCharacters: number): Page {
  const fd = openFile(file, given);
  try {
    const piece = Buffer.alloc(64 * 1024);
    if (piece.subarray(0, readSync(fd, piece, 0, 8192, 0)).includes(0)) {
      throw new NotText(`${given} looks binary (it contains NUL bytes), so it is not shown as text`);
    }
    const page: Page = { shown: [], total: 0, full: false, exact: false };
    const inPage = (line: number) => !page.full && line >= offset && line < offset + limit;
    const most = 4 * MAX_LINE; // bytes enough for MAX_LINE characters: one is at most 4 bytes
    let line = 1; // the number of the line being read
    let kept: Buffer[] = []; // its bytes, when it is in the page
    let length = 0; // its length in bytes
    let size = 0; // the page's length in characters
    const keep = (bytes: Buffer) => {
      if (length < most) kept.push(Buffer.from(bytes.subarray(0, most - length)));
      length += bytes.length;
    };
    const endLine = () => {
      const text = `${String(line).padStart(6)}\t${cutLine(Buffer.concat(kept).toString("utf8").replace(/\r$/, ""), length > most)}`;
      if (size + text.length + 1 > maxCharacters - 500) page.full = true; // 500: room for the footer
      else {
        page.shown.push(text);
        size += text.length + 1;
      }
      [kept, length] = [[], 0];
    };
    let [read, last, position, pageRead] = [0, 10, 0, false];
    let stop = PAGE_REACH; // where reading ends: LOOK_AHEAD past the page, once the page is read
    while (position < stop) {
      read = readSync(fd, piece, 0, Math.min(piece.length, stop - position), null);
      if (read === 0) break;
      const bytes = piece.subarray(0, read);
      let start = 0;
      for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) {
        if (inPage(line)) {
          keep(bytes.subarray(start, i));
          endLine();
        }
        line += 1;
        start = i + 1;
        if (!pageRead && line > offset && !inPage(line)) [pageRead, stop] = [true, Math.min(stop, position + start + LOOK_AHEAD)];
      }
      if (inPage(line)) keep(bytes.subarray(start));
      position += read;
      last = bytes[read - 1];
    }
    page.exact = read === 0; // the end of the file was reached
    // A last line without a line break is a line too; one cut by PAGE_REACH only if it is cut anyway.
    if (last !== 10 && inPage(line) && (page.exact || length > most)) endLine();
    page.total = last === 10 ? line - 1 : line;
    if (!page.exact && page.shown.length === 0) {
      const reach = `${PAGE_REACH / 1024 / 1024} MB`;
      throw new Error(`line ${offset} of ${given} is not within its first ${reach}, and read_file reads no further into a file; use bash instead (tail, or sed -n '${offset},${offset + 99}p')`);
    }
    return page;
  } finally {
    closeSync(fd);
  }
}

/** A line cut at MAX_LINE characters, with a marker; `long`: there was more than was read. */
function cutLine(text: string, long = false): string {
  return long || text.length > MAX_LINE ? `${text.slice(0, MAX_LINE)} [line cut at ${MAX_LINE} characters]` : text;
}

/** What a path is when it is not a regular file, in words. */
export function kindOf(stat: Stats): string {
  if (stat.isFIFO()) return "a FIFO (named pipe)";
  if (stat.isCharacterDevice()) return "a character device";
  if (stat.isBlockDevice()) return "a block device";
  if (stat.isSocket()) return "a socket";
  if (stat.isSymbolicLink()) return "a symlink";
  return "not a regular file";
}

/** A file's text for a diff the person reads before it is replaced; a binary or very large one is named, not shown (it may still be replaced). */
export function textForDiff(file: string, given: string): string {
  try {
    return readText(file, given);
  } catch (error) {
    if (error instanceof NotText) return `(${statSync(file).size} bytes that are not shown: ${error.message})\n`;
    throw error;
  }
}
