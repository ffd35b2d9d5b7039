/**
 * The JSON encoding of KV keys and values in a backup's `kv.jsonl`.
 *
 * KV values are structured-clone values, richer than JSON. Strings, booleans,
 * null, finite numbers and arrays are written as themselves; plain objects
 * too, unless they have a `"$"` member. Everything else is a tagged object
 * `{"$": <tag>, "v": <payload>}`:
 *
 * | tag         | value                         | payload                           |
 * | ----------- | ----------------------------- | --------------------------------- |
 * | `undefined` | undefined                     | (none)                            |
 * | `number`    | NaN, ±Infinity, -0            | `"NaN"`, `"Infinity"`, …, `"-0"`  |
 * | `bigint`    | bigint                        | decimal string                    |
 * | `kvu64`     | Deno.KvU64                    | decimal string                    |
 * | `date`      | Date                          | ISO 8601 string, null if invalid  |
 * | `bytes`     | Uint8Array                    | base64 string                     |
 * | `map`       | Map                           | array of [key, value] pairs       |
 * | `set`       | Set                           | array of members                  |
 * | `object`    | plain object with a `$` member | object with encoded members      |
 *
 * Other types (class instances, other typed arrays, RegExp, …) are refused
 * with an error rather than written lossily.
 */
import { Buffer } from "node:buffer";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export class CodecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CodecError";
  }
}

function tagged(tag: string, v?: Json): Json {
  return v === undefined ? { $: tag } : { $: tag, v };
}

export function encodeValue(value: unknown, path = "value"): Json {
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (value === undefined) return tagged("undefined");
  if (typeof value === "number") {
    return Number.isFinite(value) && !Object.is(value, -0)
      ? value
      : tagged("number", Object.is(value, -0) ? "-0" : String(value));
  }
  if (typeof value === "bigint") return tagged("bigint", value.toString());
  if (value instanceof Deno.KvU64) return tagged("kvu64", value.value.toString());
  if (value instanceof Date) {
    return tagged("date", Number.isNaN(value.getTime()) ? null : value.toISOString());
  }
  if (value instanceof Uint8Array && value.constructor === Uint8Array) {
    return tagged(
      "bytes",
      Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64"),
    );
  }
  if (Array.isArray(value)) return value.map((item, i) => encodeValue(item, `${path}[${i}]`));
  if (value instanceof Map) {
    return tagged(
      "map",
      [...value].map((
        [k, v],
        i,
      ) => [encodeValue(k, `${path}<key ${i}>`), encodeValue(v, `${path}<${i}>`)]),
    );
  }
  if (value instanceof Set) {
    return tagged("set", [...value].map((item, i) => encodeValue(item, `${path}<${i}>`)));
  }
  if (typeof value === "object") {
    const proto = Object.getPrototypeOf(value);
    if (proto === Object.prototype || proto === null) {
      const members = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, encodeValue(v, `${path}.${k}`)]),
      );
      return "$" in members ? tagged("object", members) : members;
    }
  }
  const kind = typeof value === "object" ? value.constructor?.name ?? "object" : typeof value;
  throw new CodecError(`cannot back up ${path}: unsupported type ${kind}`);
}

export function decodeValue(json: Json): unknown {
  if (json === null || typeof json !== "object") return json;
  if (Array.isArray(json)) return json.map(decodeValue);
  if (!("$" in json)) return decodeMembers(json);
  const { $: tag, v } = json;
  switch (tag) {
    case "undefined":
      return undefined;
    case "number":
      return v === "-0" ? -0 : Number(expectString(tag, v));
    case "bigint":
      return BigInt(expectString(tag, v));
    case "kvu64":
      return new Deno.KvU64(BigInt(expectString(tag, v)));
    case "date":
      return new Date(v === null ? NaN : expectString(tag, v));
    case "bytes":
      return new Uint8Array(Buffer.from(expectString(tag, v), "base64"));
    case "map":
      return new Map(
        expectArray(tag, v).map((pair) => {
          const [k, value] = expectArray(tag, pair);
          return [decodeValue(k), decodeValue(value)];
        }),
      );
    case "set":
      return new Set(expectArray(tag, v).map(decodeValue));
    case "object":
      if (v === null || typeof v !== "object" || Array.isArray(v)) throw badPayload(tag);
      return decodeMembers(v);
    default:
      throw new CodecError(`unknown type tag ${JSON.stringify(tag)}`);
  }
}

/** Object.fromEntries defines members, so a `__proto__` member stays a plain member. */
function decodeMembers(json: { [key: string]: Json }): Record<string, unknown> {
  return Object.fromEntries(Object.entries(json).map(([k, v]) => [k, decodeValue(v)]));
}

function expectString(tag: string, v: Json | undefined): string {
  if (typeof v !== "string") throw badPayload(tag);
  return v;
}

function expectArray(tag: string, v: Json | undefined): Json[] {
  if (!Array.isArray(v)) throw badPayload(tag);
  return v;
}

function badPayload(tag: string): CodecError {
  return new CodecError(`malformed payload for type tag "${tag}"`);
}

/** One `kv.jsonl` line (without the newline). */
export function encodeRecord(record: { key: Deno.KvKey; value: unknown }): string {
  const key = record.key.map((part, i) => encodeValue(part, `key part ${i}`));
  return JSON.stringify({ key, value: encodeValue(record.value, keyLabel(record.key)) });
}

export function decodeRecord(line: string): { key: Deno.KvKey; value: unknown } {
  const parsed = JSON.parse(line) as { key?: Json; value?: Json };
  if (!Array.isArray(parsed?.key) || !("value" in parsed)) {
    throw new CodecError("a line must be an object with key and value");
  }
  const key = parsed.key.map(decodeValue);
  for (const part of key) {
    const ok = ["string", "number", "bigint", "boolean"].includes(typeof part) ||
      part instanceof Uint8Array;
    if (!ok) throw new CodecError("a key part must be a string, number, bigint, boolean or bytes");
  }
  return { key: key as Deno.KvKey, value: decodeValue(parsed.value as Json) };
}

function keyLabel(key: Deno.KvKey): string {
  return `the value of key [${
    key.map((part) => typeof part === "string" ? `"${part}"` : String(part)).join(", ")
  }]`;
}
