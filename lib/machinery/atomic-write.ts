// Writing a file the model named, safely: write_file and edit_file save through here, and so
// do s07's saved results and s12's memory.
//
// What `writeFileSync(path, text)` gets wrong, and what this does instead (docs: Under the
// hood, "Atomic writes"):
// - it truncates first and writes after: a full disk or a killed process half-way leaves
//   half a file, and a reader at that moment sees it. Here the text goes to a temporary file
//   beside the target, which is renamed over it: a rename within a folder is atomic.
// - a temporary name that can be guessed (`file.tmp`) can be planted: a symlink there sends
//   the write anywhere. Here the name has random bytes and is created exclusively ("wx").
// - a folder on the way may be swapped for a symlink after the sandbox checked the path.
//   Here the process walks into the folder one step at a time and checks where it stands.
// - it writes into a FIFO (and waits for ever) or replaces a device. Here only regular files
//   are written; a read-only one is refused; the mode is kept; a file with other hard links,
//   or another owner, is written in place, so its other names see the new text.
import { randomBytes } from "node:crypto";
import { closeSync, constants, fchmodSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { kindOf } from "./safe-read.ts";

/**
 * Where a write may go: the folder it must stay in (the workspace, or for s12's global
 * memory the home folder), and the stage's own rule for "inside" (its sandbox's isInside).
 */
export interface WriteRoot {
  root: string;
  isInside: (root: string, target: string) => boolean;
}

// #region write-atomically
/**
 * Replace a file's content so that a failure half-way leaves the old content whole: the new
 * text goes to a temporary file beside it, which is then renamed over it. A careful editor
 * also keeps what the file was. A read-only file is refused: someone made it so on purpose.
 * The mode stays (a script stays executable). A file with other hard links, or that belongs
 * to someone else, is written in place instead, because a rename would give it a new
 * identity: the other links would keep the old text, and the owner would change.
 */
export function writeAtomically(file: string, content: string, given: string, where: WriteRoot, options: { createFolders?: boolean } = {}): void {
  const before = existing(file, given);
  if (before?.isDirectory()) throw new Error(`${given} is a directory`);
  // Replacing a FIFO, a socket or a device would destroy it, and writing into one can wait for ever.
  if (before && !before.isFile()) throw new Error(`${given} is ${kindOf(before)}, not a regular file; only regular files are written`);
  if (before && (before.mode & 0o200) === 0) {
    const mode = (before.mode & 0o777).toString(8);
    throw new Error(`${given} is read-only (mode ${mode}), so it is left as it is; if it should change, make it writable first (chmod u+w)`);
  }
  inFolder(where, path.dirname(file), given, options.createFolders ?? false, () => {
    const name = path.basename(file);
    if (before && (before.nlink > 1 || (process.getuid && before.uid !== process.getuid()))) return writeInPlace(name, content);
    // A name nobody can guess, created exclusively ("wx"): an existing file or a symlink
    // planted at that name is never reused or followed.
    const temporary = `.${name}.${randomBytes(6).toString("hex")}.tmp`;
    const fd = openSync(temporary, "wx");
    try {
      try {
        writeFileSync(fd, content);
        if (before) fchmodSync(fd, before.mode & 0o7777);
      } finally {
        closeSync(fd);
      }
      renameSync(temporary, name);
    } catch (error) {
      rmSync(temporary, { force: true });
      throw error;
    }
  });
}
// #endregion write-atomically

/** What is at `file` now, if anything; a path through a file (`a.txt/b`) is said in words. */
function existing(file: string, given: string) {
  try {
    return lstatSync(file, { throwIfNoEntry: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOTDIR") throw error;
    throw new Error(`${given}: a part of its path is a file, not a folder; nothing was written`);
  }
}

/** Overwrite the file's own bytes, so its other names and its owner stay (not atomic: only when needed). */
function writeInPlace(name: string, content: string): void {
  const fd = openSync(name, constants.O_WRONLY | constants.O_TRUNC | constants.O_NOFOLLOW);
  try {
    writeFileSync(fd, content);
  } finally {
    closeSync(fd);
  }
}

// #region in-folder
/**
 * Run `work` with the process standing in `folder`, entered one step at a time from the root
 * and checked at each step. The sandbox checked the path a moment ago, but another process
 * may swap a folder for a symlink since; once the process stands in a folder, the names
 * `work` uses are looked up there and cannot be redirected. Missing folders are created one
 * at a time, each inside the one just checked. (`work` is synchronous: nothing else runs
 * while the process stands elsewhere.)
 */
export function inFolder(where: WriteRoot, folder: string, given: string, createFolders: boolean, work: () => void): void {
  const { root, isInside } = where;
  const home = process.cwd();
  process.chdir(root);
  try {
    for (const part of path.relative(root, folder).split(path.sep).filter(Boolean)) {
      const found = lstatSync(part, { throwIfNoEntry: false });
      if (found && !found.isDirectory() && !found.isSymbolicLink()) throw new Error(`${given}: ${part} on its way is a file, not a folder; nothing was written`);
      if (createFolders && !found) mkdirSync(part);
      process.chdir(part);
      if (!isInside(root, process.cwd())) throw new Error(`${given}: a folder on its way became a link to outside the workspace while writing; nothing was written`);
    }
    work();
  } finally {
    process.chdir(home);
  }
}
// #endregion in-folder
