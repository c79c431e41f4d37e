// Checking what the model sent before a tool runs, and saying what is wrong in words the
// model can act on.
//
// (docs: Under the hood, "Validation") A model sends what its schema allows and, now and then,
// what it does not: a number as a string, null for "not given", a parameter that does not
// exist. A handler that trusts its input crashes with "Cannot read properties of undefined",
// which tells the model nothing. Part I's handlers check each argument by hand (requireString,
// optionalInteger); from s06 each tool's JSON Schema is checked with ajv, and ajv's findings
// are turned into sentences: `"path" must be a string`.
import { createRequire } from "node:module";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";

type Input = Record<string, unknown>;

export function requireString(input: Input, name: string): string {
  const value = input[name];
  if (typeof value !== "string") throw new Error(`"${name}" must be a string`);
  return value;
}

/** Left out or null: the default, as optionalInteger treats them. */
export const optionalString = (input: Input, name: string, fallback: string) =>
  input[name] === undefined || input[name] === null ? fallback : requireString(input, name);

/**
 * An optional whole number. Left out or null means "the default" (models send null for what
 * they leave out, so every tool treats null so); anything else must be a whole number in range.
 */
export function optionalInteger(input: Input, name: string, range: { min: number; max?: number }): number | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  const { min, max = Number.MAX_SAFE_INTEGER } = range;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    const bounds = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
    throw new Error(`"${name}" must be a whole number ${bounds}, not ${JSON.stringify(value)}`);
  }
  return value;
}

// ajv loads when first needed (a tool's first call), not at start: it costs a tenth of a
// second or so, and a learner waits for every start. The tools' own schemas are checked
// against JSON Schema's meta-schema by the tests, not here: compiling the meta-schema would
// take longer than compiling every tool's schema.
const needed = createRequire(import.meta.url);
let ajv: Ajv | undefined;
const validator = () => (ajv ??= new (needed("ajv") as typeof import("ajv")).Ajv({ allErrors: true, validateSchema: false }));

/** The validator the workbook's own schemas are compiled with (settings, declarations). */
export function jsonSchemaValidator(): Ajv {
  return validator();
}

// Schemas written by others (discovered tools, MCP servers): keywords and formats this
// validator does not know are let through rather than refused (the tool checks its own input too).
let outsideAjv: Ajv | undefined;
const outsideValidator = () => (outsideAjv ??= new (needed("ajv") as typeof import("ajv")).Ajv({ allErrors: true, strict: false, validateFormats: false, logger: false }));

/** A check of parameters against a schema someone else wrote; compiled at once, so a schema that is not valid throws here. */
export function outsideSchemaCheck(schema: object): (params: Input) => string | null {
  const validate = outsideValidator().compile(schema);
  return (params) => (validate(params) ? null : schemaErrors(validate.errors ?? []));
}

/** A check of parameters against a schema, compiled at its first use: null when they are valid, else what is wrong. */
export function schemaCheck(schema: object): (params: Input) => string | null {
  let validate: ValidateFunction | undefined;
  return (params) => {
    validate ??= validator().compile(schema);
    return validate(params) ? null : schemaErrors(validate.errors ?? []);
  };
}

/** ajv's findings as sentences the model can act on: `"path" must be a string`. */
export function schemaErrors(errors: ErrorObject[]): string {
  return errors
    .map((error) => {
      const field = error.instancePath ? `"${error.instancePath.slice(1).replaceAll("/", ".")}"` : "the input";
      const { params } = error;
      if (error.keyword === "required") return `"${params.missingProperty}" is required`;
      if (error.keyword === "additionalProperties") return `"${params.additionalProperty}" is not a parameter of this tool`;
      if (error.keyword === "type") return `${field} must be ${/^[aeiou]/.test(params.type) ? "an" : "a"} ${params.type}`;
      if (error.keyword === "minimum") return `${field} must be at least ${params.limit}`;
      if (error.keyword === "maximum") return `${field} must be at most ${params.limit}`;
      if (error.keyword === "enum") return `${field} must be one of ${params.allowedValues.join(", ")}`;
      return `${field} ${error.message}`;
    })
    .join("; ");
}
