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

// #region by-hand
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
// #endregion by-hand

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

// Schemas written by others (discovered tools, MCP servers). Keywords and formats this
// validator does not know are let through rather than refused (the tool checks its own input
// too). Two things are not taken as they come:
// - `pattern` (and `patternProperties`): a pattern such as ^(a+)+$ runs for seconds or years
//   on an unlucky argument, on the main thread, before approval, with timers and Ctrl-C dead.
//   Patterns are the tool's own to check: they are taken out before compiling.
// - the dialect: MCP's schemas are JSON Schema 2020-12 unless they say otherwise, where
//   `items: false` after `prefixItems` means "no more items", not "no items at all".
type Dialect = "draft-07" | "2020-12";
const outsideValidators: Partial<Record<Dialect, Ajv>> = {};
const outsideValidator = (dialect: Dialect): Ajv => {
  const options = { allErrors: true, strict: false, validateFormats: false, logger: false } as const;
  if (dialect === "2020-12") return (outsideValidators[dialect] ??= new (needed("ajv/dist/2020") as typeof import("ajv/dist/2020.js")).Ajv2020(options));
  return (outsideValidators[dialect] ??= new (needed("ajv") as typeof import("ajv")).Ajv(options));
};

/** The dialect a schema declares with `$schema`, or `fallback` when it declares none. */
export function dialectOf(schema: object, fallback: Dialect): Dialect {
  const declared = (schema as { $schema?: unknown }).$schema;
  if (typeof declared !== "string") return fallback;
  return /2020-12|2019-09/.test(declared) ? "2020-12" : "draft-07";
}

/**
 * A check of parameters against a schema someone else wrote, without its patterns; compiled at
 * once, so a schema that is not valid throws here.
 */
export function outsideSchemaCheck(schema: object, dialect: Dialect = "2020-12"): (params: Input) => string | null {
  const { $schema: _declared, ...rest } = withoutPatterns(schema) as Record<string, unknown>;
  const validate = outsideValidator(dialect).compile(rest);
  return (params) => (validate(params) ? null : schemaErrors(validate.errors ?? []));
}

// Where a schema holds other schemas (JSON Schema's applicators): only there is `pattern` a keyword.
const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
const SCHEMA_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"];
const SCHEMA_ONES = ["additionalProperties", "items", "contains", "not", "if", "then", "else", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems"];

/** A copy of `schema` with every `pattern` keyword taken out (a property called "pattern" stays). */
export function withoutPatterns(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "pattern" && typeof value === "string") continue;
    if (key === "patternProperties") continue; // its keys are patterns too: what they admit, additionalProperties decides
    if (SCHEMA_MAPS.includes(key) && value && typeof value === "object") {
      copy[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, withoutPatterns(sub)]));
    } else if (SCHEMA_LISTS.includes(key) && Array.isArray(value)) copy[key] = value.map(withoutPatterns);
    else if (SCHEMA_ONES.includes(key)) copy[key] = Array.isArray(value) ? value.map(withoutPatterns) : withoutPatterns(value);
    else copy[key] = value; // data (enum, const, default, examples) and everything else, as it came
  }
  return copy;
}

/**
 * The schema as the Messages API takes it: an object schema. A top-level oneOf, anyOf or allOf
 * is refused by the API for every request of the session, so such a schema is sent as one
 * object with the properties of all its branches, requiring what every branch requires (allOf:
 * what any requires), and the branches are checked here, by outsideSchemaCheck, before a call
 * runs. Undefined when nothing needed changing.
 */
export function schemaForModel(schema: Record<string, unknown>): Record<string, unknown> | undefined {
  const key = (["oneOf", "anyOf", "allOf"] as const).find((name) => Array.isArray(schema[name]));
  if (!key) return undefined;
  const branches = (schema[key] as Record<string, unknown>[]).filter((branch) => typeof branch === "object" && branch !== null);
  const properties: Record<string, unknown> = { ...(schema.properties as Record<string, unknown> | undefined) };
  for (const branch of branches) for (const [name, sub] of Object.entries((branch.properties as Record<string, unknown>) ?? {})) properties[name] ??= sub;
  const requiredOf = (branch: Record<string, unknown>) => (Array.isArray(branch.required) ? (branch.required as string[]) : []);
  const fromBranches =
    key === "allOf" ? [...new Set(branches.flatMap(requiredOf))] : branches.length === 0 ? [] : requiredOf(branches[0]).filter((name) => branches.every((branch) => requiredOf(branch).includes(name)));
  const required = [...new Set([...requiredOf(schema), ...fromBranches])];
  const shapes = key === "allOf" ? "all of" : key === "oneOf" ? "exactly one of" : "at least one of";
  // What a branch's $ref points at goes along, or the reference would lead nowhere.
  const definitions = Object.fromEntries(["$defs", "definitions"].filter((name) => schema[name] !== undefined).map((name) => [name, schema[name]]));
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    ...definitions,
    description: `${typeof schema.description === "string" ? `${schema.description} ` : ""}(The input must match ${shapes} ${branches.length} shapes; a call that does not is refused with the reason.)`,
  };
}

// #region schema-check
/** A check of parameters against a schema, compiled at its first use: null when they are valid, else what is wrong. */
export function schemaCheck(schema: object): (params: Input) => string | null {
  let validate: ValidateFunction | undefined;
  return (params) => {
    validate ??= validator().compile(schema);
    return validate(params) ? null : schemaErrors(validate.errors ?? []);
  };
}
// #endregion schema-check

// #region schema-errors
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
// #endregion schema-errors
