// lib/machinery/validation.ts, tested once: Part I's handlers check each argument by hand with
// it, and from s06 every tool's input is checked against its JSON Schema. A model sends null for
// what it leaves out, a number as a string, a parameter that does not exist; each must come back
// as a sentence the model can act on, naming the argument, never as "Cannot read properties of
// undefined". The stages' own tests keep the argument checks of each tool.
import { describe, expect, it } from "vitest";
import {
  dialectOf, jsonSchemaValidator, optionalInteger, optionalString, outsideSchemaCheck, requireString, schemaCheck, schemaErrors, schemaForModel, withoutPatterns,
} from "../../lib/machinery/validation.ts";

describe("the checks Part I's handlers make by hand", () => {
  it("requireString gives a string back, the empty one too, and refuses anything else, naming the argument", () => {
    expect(requireString({ path: "a.txt" }, "path")).toBe("a.txt");
    expect(requireString({ path: "" }, "path")).toBe("");
    for (const value of [undefined, null, 5, true, ["a.txt"], { path: "a.txt" }]) {
      expect(() => requireString({ path: value }, "path"), JSON.stringify(value)).toThrow(/^"path" must be a string$/);
    }
    expect(() => requireString({}, "content")).toThrow('"content" must be a string');
  });

  it("optionalString takes left out and null as the default, and refuses what is not a string", () => {
    expect(optionalString({}, "path", ".")).toBe(".");
    expect(optionalString({ path: null }, "path", ".")).toBe(".");
    expect(optionalString({ path: "src" }, "path", ".")).toBe("src");
    expect(optionalString({ path: "" }, "path", ".")).toBe("");
    for (const value of [0, false, ["src"], {}]) {
      expect(() => optionalString({ path: value }, "path", "."), JSON.stringify(value)).toThrow('"path" must be a string');
    }
  });

  it("optionalInteger takes left out and null as the default (undefined)", () => {
    expect(optionalInteger({}, "limit", { min: 1 })).toBeUndefined();
    expect(optionalInteger({ limit: null }, "limit", { min: 1 })).toBeUndefined();
  });

  it("optionalInteger gives a whole number in range back, the bounds included", () => {
    expect(optionalInteger({ limit: 1 }, "limit", { min: 1 })).toBe(1);
    expect(optionalInteger({ limit: 2 ** 40 }, "limit", { min: 1 })).toBe(2 ** 40);
    expect(optionalInteger({ timeout: 600 }, "timeout", { min: 1, max: 600 })).toBe(600);
    expect(optionalInteger({ offset: 0 }, "offset", { min: 0 })).toBe(0);
    expect(optionalInteger({ limit: 2.0 }, "limit", { min: 1 })).toBe(2); // 2.0 is 2 in JSON
  });

  it("optionalInteger refuses a number out of range, saying the range and what it got", () => {
    expect(() => optionalInteger({ limit: 0 }, "limit", { min: 1 })).toThrow('"limit" must be a whole number at least 1, not 0');
    expect(() => optionalInteger({ limit: -3 }, "limit", { min: 1 })).toThrow('"limit" must be a whole number at least 1, not -3');
    expect(() => optionalInteger({ timeout: 601 }, "timeout", { min: 1, max: 600 })).toThrow('"timeout" must be a whole number from 1 to 600, not 601');
    expect(() => optionalInteger({ timeout: 0 }, "timeout", { min: 1, max: 600 })).toThrow('"timeout" must be a whole number from 1 to 600, not 0');
  });

  it("optionalInteger refuses what is not a whole number: a fraction, a string of digits, a boolean, an object, infinity", () => {
    for (const [value, shown] of [[1.5, "1.5"], ["2", '"2"'], ["x", '"x"'], [true, "true"], [{}, "{}"], [[3], "[3]"]] as const) {
      expect(() => optionalInteger({ limit: value }, "limit", { min: 1 }), shown).toThrow(`"limit" must be a whole number at least 1, not ${shown}`);
    }
    expect(() => optionalInteger({ limit: Infinity }, "limit", { min: 1 })).toThrow(/"limit" must be a whole number at least 1/);
    expect(() => optionalInteger({ limit: NaN }, "limit", { min: 1 })).toThrow(/"limit" must be a whole number at least 1/);
  });
});

describe("schemaCheck and schemaErrors: a tool's JSON Schema, in sentences", () => {
  const schema = {
    type: "object",
    properties: {
      path: { type: "string" },
      limit: { type: "integer", minimum: 1, maximum: 100 },
      mode: { type: "string", enum: ["fast", "full"] },
      options: { type: "object", properties: { depth: { type: "integer" }, tags: { type: "array" } } },
      name: { type: "string", minLength: 2 },
    },
    required: ["path"],
    additionalProperties: false,
  };
  const check = schemaCheck(schema);

  it("passes valid input (null, not an error)", () => {
    expect(check({ path: "a.txt" })).toBeNull();
    expect(check({ path: "a.txt", limit: 100, mode: "full", options: { depth: 2, tags: [] } })).toBeNull();
  });

  // #region missing-and-unknown
  it("names a required parameter that is missing", () => {
    expect(check({})).toBe('"path" is required');
  });

  it("names a parameter the tool does not have", () => {
    expect(check({ path: "a.txt", file: "b.txt" })).toBe('"file" is not a parameter of this tool');
  });
  // #endregion missing-and-unknown

  it("says the type wanted, with a or an", () => {
    expect(check({ path: 5 })).toBe('"path" must be a string');
    expect(check({ path: "a", limit: "2" })).toBe('"limit" must be an integer');
    expect(check({ path: "a", options: [] })).toBe('"options" must be an object');
    expect(check({ path: "a", options: { tags: "x" } })).toBe('"options.tags" must be an array');
    expect(schemaCheck({ type: "object" })([] as unknown as Record<string, unknown>)).toBe("the input must be an object");
  });

  it("gives the bounds of a number and the values of an enum", () => {
    expect(check({ path: "a", limit: 0 })).toBe('"limit" must be at least 1');
    expect(check({ path: "a", limit: 101 })).toBe('"limit" must be at most 100');
    expect(check({ path: "a", mode: "slow" })).toBe('"mode" must be one of fast, full');
  });

  // #region every-problem
  it("says every problem at once, and ajv's own words for the rest", () => {
    expect(check({ limit: 1.5, extra: 1 })).toBe('"path" is required; "extra" is not a parameter of this tool; "limit" must be an integer');
    expect(check({ path: "a", name: "x" })).toBe('"name" must NOT have fewer than 2 characters');
  });
  // #endregion every-problem

  it("schemaErrors turns ajv's findings into sentences on its own (the same words as schemaCheck)", () => {
    const validate = jsonSchemaValidator().compile(schema);
    expect(validate({ path: 5, limit: 0 })).toBe(false);
    expect(schemaErrors(validate.errors ?? [])).toBe('"path" must be a string; "limit" must be at least 1');
    expect(schemaErrors([])).toBe("");
  });

  it("outsideSchemaCheck lets through keywords and formats it does not know, and refuses a schema that is not valid at once", () => {
    const outside = outsideSchemaCheck({ type: "object", properties: { when: { type: "string", format: "made-up", "x-note": 1 } }, required: ["when"] });
    expect(outside({ when: "whenever" })).toBeNull();
    expect(outside({})).toBe('"when" is required');
    expect(() => outsideSchemaCheck({ type: "object", properties: { a: { type: "no-such-type" } } })).toThrow();
  });
});

describe("schemas written by others: never a backtracking pattern on the main thread, the dialect they declare, a shape the API takes", () => {
  it("takes the patterns out before compiling: ^(a+)+$ on an unlucky argument costs nothing, and a property called pattern stays", () => {
    const evil = { type: "object", properties: { s: { type: "string", pattern: "^(a+)+$" }, pattern: { type: "string", minLength: 1 } }, required: ["s"] };
    const started = performance.now();
    expect(outsideSchemaCheck(evil)({ s: `${"a".repeat(40)}!`, pattern: "x" })).toBeNull();
    expect(performance.now() - started).toBeLessThan(2000); // with the pattern, this argument takes years
    expect(outsideSchemaCheck(evil)({ s: "a", pattern: "" })).toBe('"pattern" must NOT have fewer than 1 characters');
    const deep = { type: "object", properties: { list: { type: "array", items: { type: "string", pattern: "(x+x+)+y" } } }, patternProperties: { "^(a|a)*$": { type: "number" } } };
    expect(JSON.stringify(withoutPatterns(deep))).toBe('{"type":"object","properties":{"list":{"type":"array","items":{"type":"string"}}}}');
    // Data is data: an enum value with a key called pattern is not a schema.
    expect(withoutPatterns({ enum: [{ pattern: "x" }] })).toEqual({ enum: [{ pattern: "x" }] });
  });

  it("validates as JSON Schema 2020-12 (MCP's dialect) unless the schema declares draft-07", () => {
    const tuple = { type: "object", properties: { pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], items: false } } };
    expect(outsideSchemaCheck(tuple)({ pair: ["a", 1] })).toBeNull();
    expect(outsideSchemaCheck(tuple)({ pair: ["a", 1, "more"] })).not.toBeNull();
    expect(dialectOf({ $schema: "https://json-schema.org/draft/2020-12/schema" }, "draft-07")).toBe("2020-12");
    expect(dialectOf({ $schema: "http://json-schema.org/draft-07/schema#" }, "2020-12")).toBe("draft-07");
    expect(dialectOf({}, "2020-12")).toBe("2020-12");
  });

  it("sends a top-level oneOf, anyOf or allOf as one object schema, requiring what every shape requires", () => {
    const either = { oneOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a", "c"] }, { type: "object", properties: { b: { type: "number" }, c: { type: "string" } }, required: ["b", "c"] }] };
    const sent = schemaForModel(either)!;
    expect(sent).toMatchObject({ type: "object", properties: { a: { type: "string" }, b: { type: "number" }, c: { type: "string" } }, required: ["c"] });
    expect(sent).not.toHaveProperty("oneOf");
    expect(schemaForModel({ allOf: [{ required: ["a"] }, { required: ["b"] }] })).toMatchObject({ required: ["a", "b"] });
    expect(schemaForModel({ type: "object", properties: {} })).toBeUndefined();
    // A branch's $ref keeps what it points at.
    const referred = { $defs: { id: { type: "integer" } }, anyOf: [{ properties: { id: { $ref: "#/$defs/id" } }, required: ["id"] }] };
    expect(schemaForModel(referred)).toMatchObject({ properties: { id: { $ref: "#/$defs/id" } }, $defs: { id: { type: "integer" } } });
    // The shapes are still checked before a call runs.
    expect(outsideSchemaCheck(either)({ a: "x", c: "y" })).toBeNull();
    expect(outsideSchemaCheck(either)({ c: "y" })).not.toBeNull();
  });
});
