/** Store layer: API keys: randomness, prefix, hash-only storage, lookup by hash. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  API_KEY_PREFIX,
  createApiKey,
  generateApiKeySecret,
  getApiKey,
  getApiKeyByHash,
  hashApiKeySecret,
  listApiKeys,
  recordApiKeyUse,
  setApiKeyActive,
} from "../src/credentials/api_keys.ts";
import { NotFoundError, ValidationError } from "../src/kv/errors.ts";
import { apiKeyByHashKey, counterKey } from "../src/kv/keys.ts";
import { judgeApiKey, keyReachesNothing, keyState } from "../src/credentials/access.ts";
import { dumpKv, dumpKvText, withKv, withStore } from "./helpers.ts";

const base = { name: "ci", can_download: true, scope_mode: "all_projects" };

Deno.test("a key is uds_ followed by 256 random bits in base64url", () => {
  const secrets = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const secret = generateApiKeySecret();
    assert.equal(API_KEY_PREFIX, "uds_");
    assert.match(secret, /^uds_[A-Za-z0-9_-]{43}$/);
    const b64 = secret.slice(4).replace(/-/g, "+").replace(/_/g, "/") + "=";
    assert.equal(atob(b64).length, 32, "32 bytes = 256 bits");
    secrets.add(secret);
  }
  assert.equal(secrets.size, 200, "no repeats");
});

Deno.test("the key hash is the hex SHA-256 of the full key", () => {
  const secret = "uds_example";
  assert.equal(hashApiKeySecret(secret), createHash("sha256").update(secret).digest("hex"));
});

Deno.test("only the hash of a key is stored, never the key", () =>
  withKv(async (kv, store) => {
    const { apiKey, secret } = await createApiKey(store, base);
    assert.equal(apiKey.hash, hashApiKeySecret(secret));
    const everything = await dumpKvText(kv);
    assert.ok(!everything.includes(secret), "the full key is nowhere in KV");
    assert.ok(!everything.includes(secret.slice(10)), "nor its secret part");
    assert.equal(apiKey.prefix, secret.slice(0, 10), "a short prefix is kept to tell keys apart");
  }));

Deno.test("a key is found by the hash of what the client presents", () =>
  withKv(async (kv, store) => {
    const { apiKey, secret } = await createApiKey(store, base);
    assert.equal((await kv.get(apiKeyByHashKey(apiKey.hash))).value, apiKey.id);
    assert.deepEqual(await getApiKeyByHash(store, hashApiKeySecret(secret)), apiKey);
    assert.equal(await getApiKeyByHash(store, hashApiKeySecret(secret + "x")), null);
  }));

Deno.test("key ids are integers from a KV counter", () =>
  withKv(async (kv, store) => {
    const a = await createApiKey(store, base);
    const b = await createApiKey(store, base);
    assert.deepEqual([a.apiKey.id, b.apiKey.id], [1, 2]);
    // The counter is ahead by the block of ids this process claimed (issue 19.1).
    assert.ok(((await kv.get<number>(counterKey("api_keys"))).value ?? 0) >= 2);
  }));

Deno.test("a new key is active and keeps its scope, lists and expiry", () =>
  withStore(async (store) => {
    const { apiKey } = await createApiKey(store, {
      name: " deploy ",
      can_download: false,
      scope_mode: "tag_allow_list",
      project_ids: [3, 1, 3],
      tags: ["Beta", " beta", "win"],
      expires_at: "2030-01-01T00:00:00+01:00",
    });
    assert.equal(apiKey.active, true);
    assert.equal(apiKey.name, "deploy");
    assert.equal(apiKey.can_download, false);
    assert.equal(apiKey.scope_mode, "tag_allow_list");
    assert.deepEqual(apiKey.project_ids, [3, 1]);
    assert.deepEqual(apiKey.tags, ["beta", "win"]);
    assert.equal(apiKey.expires_at, "2029-12-31T23:00:00.000Z");
    assert.deepEqual(await getApiKey(store, apiKey.id), apiKey);
  }));

Deno.test("invalid key input is refused and nothing is stored", () =>
  withKv(async (kv, store) => {
    for (
      const [extra, field] of [
        [{ scope_mode: "everything" }, "scope_mode"],
        [{ name: "" }, "name"],
        [{ expires_at: "soon" }, "expires_at"],
      ] as const
    ) {
      await assert.rejects(
        createApiKey(store, { ...base, ...extra }),
        (e) => e instanceof ValidationError && e.field === field,
      );
    }
    assert.deepEqual(await dumpKv(kv), []);
  }));

Deno.test("disabling and enabling a key flips active", () =>
  withStore(async (store) => {
    const { apiKey } = await createApiKey(store, base);
    assert.equal((await setApiKeyActive(store, apiKey.id, false)).active, false);
    assert.equal((await getApiKeyByHash(store, apiKey.hash))?.active, false);
    assert.equal((await setApiKeyActive(store, apiKey.id, true)).active, true);
    await assert.rejects(setApiKeyActive(store, 77, false), NotFoundError);
  }));

Deno.test("last use is kept apart from the key and shown when listing", () =>
  withStore(async (store) => {
    const keys = [];
    for (let i = 0; i < 12; i++) keys.push((await createApiKey(store, base)).apiKey);
    await recordApiKeyUse(store, keys[11].id, "2025-01-01T00:00:00.000Z");
    const listed = await listApiKeys(store);
    assert.deepEqual(listed.map((k) => k.id), keys.map((k) => k.id));
    assert.equal(listed[11].last_used_at, "2025-01-01T00:00:00.000Z");
    assert.equal(listed[0].last_used_at, null);
    assert.equal((await getApiKey(store, keys[11].id))?.last_used_at, undefined);
  }));

Deno.test("expires_at is parsed once, by the store: RFC 3339 or datetime-local (UTC)", () =>
  withKv(async (kv, store) => {
    const local = await createApiKey(store, { ...base, expires_at: "2031-01-02T03:04" });
    assert.equal(local.apiKey.expires_at, "2031-01-02T03:04:00.000Z");
    const none = await createApiKey(store, { ...base, expires_at: " " });
    assert.equal(none.apiKey.expires_at, null);
    const before = await dumpKv(kv);
    for (const bad of ["2026-02-30T10:00", "2026-12-31", "Tue, 01 Dec 2026 10:00:00 GMT"]) {
      await assert.rejects(
        createApiKey(store, { ...base, expires_at: bad }),
        (e) => e instanceof ValidationError && e.field === "expires_at",
        bad,
      );
    }
    assert.deepEqual(await dumpKv(kv), before);
  }));

Deno.test("key state: one expiry rule for the API's verdict and the admin's state", () =>
  withStore(async (store) => {
    const at = Date.parse("2030-01-01T00:00:00Z");
    const { apiKey } = await createApiKey(store, { ...base, expires_at: "2030-01-01T00:00:00Z" });
    assert.equal(keyState(apiKey, at - 1), "active");
    assert.equal(judgeApiKey(apiKey, at - 1), "ok");
    assert.equal(keyState(apiKey, at), "expired", "expired from the instant itself");
    assert.equal(judgeApiKey(apiKey, at), "invalid");
    const disabled = await setApiKeyActive(store, apiKey.id, false);
    assert.equal(keyState(disabled, at - 1), "disabled");
    assert.equal(judgeApiKey(disabled, at - 1), "invalid");
  }));

Deno.test("an empty allow list is stored, and the store says the key reaches nothing", () =>
  withStore(async (store) => {
    const cases = [
      [{ scope_mode: "project_allow_list", project_ids: [] }, true],
      [{ scope_mode: "tag_allow_list", tags: [" ", ""] }, true],
      [{ scope_mode: "project_allow_list", project_ids: [1] }, false],
      [{ scope_mode: "tag_allow_list", tags: ["beta"] }, false],
      [{ scope_mode: "project_deny_list", project_ids: [] }, false],
      [{ scope_mode: "tag_deny_list", tags: [] }, false],
      [{ scope_mode: "all_projects" }, false],
    ] as const;
    for (const [scope, nothing] of cases) {
      const { apiKey } = await createApiKey(store, { ...base, ...scope });
      assert.equal(keyReachesNothing(apiKey), nothing, JSON.stringify(scope));
      assert.deepEqual(await getApiKey(store, apiKey.id), apiKey);
    }
  }));
