// The TypeScript compiler (its parser), for the exercises and the docs, loaded with require.
// typescript.js is one 9 MB CommonJS file whose package.json names no module type. Imported
// as an ES module, Node would first parse all of it to see whether it is one, then scan it
// for the names it exports: more than a second of processor on top of loading it, in every
// process that does (the test workers, `npm run verify`).
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

export function typescript(): typeof import("typescript") {
  return require("typescript");
}
