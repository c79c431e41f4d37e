// A stage file's `#region` blocks: what a docs page includes, what the docs tests compare
// from stage to stage, and how the tests and the bench tell which stages share a tool's code.
import { remembering } from "./recent.ts";

const REGION = /^\/\/ ?#?(region|endregion) ([\w*-]+)$/;

/**
 * The `// #region name` ... `// #endregion name` blocks of a file, by name, with the text
 * between the markers. The marker syntax is VitePress's, so what the tests see is what a
 * page includes with `<<< file#name`. A region opened and never closed is an error here,
 * because VitePress would silently include the whole file instead.
 */
export function regionsOf(text: string): Map<string, string> {
  return new Map(recentRegions(text));
}

// The docs checks and the tool grouping read the same few files many times over.
const recentRegions = remembering(64, (text: string) => text, readRegions);

function readRegions(text: string): Map<string, string> {
  const lines = text.split("\n");
  const regions = new Map<string, string>();
  const open = new Map<string, number>();
  lines.forEach((line, index) => {
    const match = REGION.exec(line.trim());
    if (!match) return;
    const [, kind, name] = match;
    if (kind === "region") {
      if (open.has(name) || regions.has(name)) throw new Error(`region "${name}" is opened twice`);
      open.set(name, index);
    } else {
      const start = open.get(name);
      if (start === undefined) throw new Error(`region "${name}" is closed but was never opened`);
      open.delete(name);
      regions.set(name, lines.slice(start + 1, index).join("\n"));
    }
  });
  for (const name of open.keys()) throw new Error(`region "${name}" is never closed`);
  return regions;
}
