import assert from "node:assert/strict";
import { decodeRecord, decodeValue, encodeRecord, encodeValue } from "../src/backup/codec.ts";

function roundTrip(value: unknown): unknown {
  return decodeValue(JSON.parse(JSON.stringify(encodeValue(value))));
}

Deno.test("backup codec", async (t) => {
  await t.step("every structured-clone type the KV may hold survives a round trip", () => {
    const value = {
      text: "ü ✓ \u0000",
      int: 42,
      float: -1.5,
      big: 12345678901234567890n,
      nan: NaN,
      inf: -Infinity,
      negZero: -0,
      yes: true,
      none: null,
      missing: undefined,
      counter: new Deno.KvU64(18446744073709551615n),
      when: new Date("2026-01-02T03:04:05.678Z"),
      invalidDate: new Date(NaN),
      bytes: new Uint8Array([0, 1, 254, 255]),
      list: [1, "two", [3n], { four: 4 }],
      map: new Map<unknown, unknown>([["a", 1], [2, new Set(["b"])]]),
      set: new Set([1, "x"]),
      nested: { deeper: { deepest: [new Deno.KvU64(7n)] } },
      dollar: { $: "bigint", v: "not a tag" },
    };
    const back = roundTrip(value) as typeof value;
    assert.deepEqual(back, value);
    assert.ok(back.counter instanceof Deno.KvU64);
    assert.equal(back.counter.value, 18446744073709551615n);
    assert.ok(Object.is(back.negZero, -0));
    assert.equal(typeof back.big, "bigint");
    assert.deepEqual(back.dollar, { $: "bigint", v: "not a tag" });
  });

  await t.step("plain values stay readable JSON", () => {
    assert.equal(
      encodeRecord({ key: ["projects", 1], value: { id: 1, name: "Desktop", tags: ["a"] } }),
      '{"key":["projects",1],"value":{"id":1,"name":"Desktop","tags":["a"]}}',
    );
    assert.equal(
      encodeRecord({ key: ["release_downloads", 3], value: new Deno.KvU64(9n) }),
      '{"key":["release_downloads",3],"value":{"$":"kvu64","v":"9"}}',
    );
  });

  await t.step("key parts keep their types", () => {
    const key = ["s", 1, 2n, true, new Uint8Array([9])];
    assert.deepEqual(decodeRecord(encodeRecord({ key, value: 0 })).key, key);
  });

  await t.step("a __proto__ member stays data and never becomes a prototype", () => {
    const back = decodeValue(JSON.parse('{"__proto__":{"polluted":true},"a":1}')) as Record<
      string,
      unknown
    >;
    assert.equal(Object.getPrototypeOf(back), Object.prototype);
    assert.equal((back as { polluted?: boolean }).polluted, undefined);
    assert.deepEqual(Object.keys(back), ["__proto__", "a"]);
  });

  await t.step("unsupported values and malformed lines are refused, not guessed", () => {
    assert.throws(
      () => encodeRecord({ key: ["k"], value: { at: /x/ } }),
      /cannot back up the value of key \["k"\]\.at: unsupported type RegExp/,
    );
    assert.throws(() => encodeValue(new Int32Array(2)), /unsupported type Int32Array/);
    assert.throws(() => decodeValue({ $: "weird" }), /unknown type tag "weird"/);
    assert.throws(() => decodeValue({ $: "bigint", v: 5 }), /malformed payload/);
    assert.throws(() => decodeRecord('{"key":"x","value":1}'), /key and value/);
    assert.throws(() => decodeRecord('{"key":[null],"value":1}'), /key part/);
  });
});
