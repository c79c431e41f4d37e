// Where the tests make their temporary folders: in memory (tmpfs) when the machine has one
// the tests can use, else the system's temporary folder.
//
// The suite makes and removes thousands of files and folders: a workspace per test, git
// repositories, copies of the docs to break, trees for the search tools. On this project's
// two-core machine the temporary folder is on a disk (ext4), where each costs the kernel about
// a millisecond: a copy of docs/ took 220 ms there and 7 ms in /dev/shm. Measured over
// `npm test`, the kernel's share of the processor fell from 12-17 s to about 10 s, and the
// run from 29-34 s to about 27 s. The tests do the same things either way; only the place
// changes, so a machine without a usable tmpfs runs exactly the same suite, a little slower.
import { chmodSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";

/** The file system type tmpfs reports through statfs (linux/magic.h). */
export const TMPFS_MAGIC = 0x01021994;
/** Room the suite needs, with a wide margin: its folders peak at about 60 MB. A container's
 * default /dev/shm (64 MB) is too small, and is passed over. */
export const ROOM_NEEDED = 1024 ** 3;

/** The first of the system's temporary folder and /dev/shm that is a usable tmpfs, or none. */
export function memoryTmpdir(): string | undefined {
  return [os.tmpdir(), "/dev/shm"].find(usableInMemory);
}

/** Whether `dir` is a tmpfs with room for the suite, where a script the tests write can run. */
export function usableInMemory(dir: string): boolean {
  try {
    const stats = statfsSync(dir);
    if (stats.type !== TMPFS_MAGIC || stats.bavail * stats.bsize < ROOM_NEEDED) return false;
    // Tests write scripts and run them (hooks, fixture commands, git's editor): a folder
    // mounted noexec would fail them, so the probe runs one.
    const probe = mkdtempSync(path.join(dir, "workbook-probe-"));
    try {
      const script = path.join(probe, "probe.sh");
      writeFileSync(script, "#!/bin/sh\necho ok\n");
      chmodSync(script, 0o755);
      return execFileSync(script, { encoding: "utf8", timeout: 5_000 }).trim() === "ok";
    } finally {
      rmSync(probe, { recursive: true, force: true });
    }
  } catch {
    return false; // no statfs, no such folder, not writable, not executable: the default
  }
}
