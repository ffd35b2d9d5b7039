/** Store layer: bulk keys and releases write what createApiKey and createRelease write. */
import assert from "node:assert/strict";
import { createApiKey, getApiKeyByHash, hashApiKeySecret } from "../src/credentials/api_keys.ts";
import { createApiKeysBulk, createReleasesBulk } from "../src/seeding/bulk.ts";
import { ValidationError } from "../src/kv/errors.ts";
import { counterKey } from "../src/kv/keys.ts";
import { createProject } from "../src/projects/projects.ts";
import {
  createRelease,
  getLatestRelease,
  listReleasesByProject,
} from "../src/releases/releases.ts";
import { dumpKv, dumpKvText, withKv, withStore } from "./helpers.ts";

const artifact = {
  storage_key: crypto.randomUUID(),
  checksum_sha256: "ab".repeat(32),
  size_bytes: 1,
};

Deno.test("bulk keys: one record and one hash index entry each, ids from the counter", () =>
  withKv(async (kv, store) => {
    const first = await createApiKey(store, {
      name: "one",
      can_download: true,
      scope_mode: "all_projects",
    });
    const inputs = Array.from({ length: 25 }, (_, i) => ({
      name: `bulk ${i}`,
      can_download: i % 2 === 0,
      scope_mode: "project_allow_list",
      project_ids: [1, 1, 2],
    }));
    const created = await createApiKeysBulk(store, inputs, { batchSize: 10 });
    assert.deepEqual(created.map((c) => c.apiKey.id), inputs.map((_, i) => i + 2));
    for (const { apiKey, secret } of created) {
      assert.match(secret, /^uds_[A-Za-z0-9_-]{43}$/);
      assert.deepEqual(await getApiKeyByHash(store, hashApiKeySecret(secret)), apiKey);
      assert.deepEqual(apiKey.project_ids, [1, 2]);
    }
    // The counter is ahead by the block of ids this process claimed (issue 19.1).
    assert.ok(((await kv.get<number>(counterKey("api_keys"))).value ?? 0) >= 26);
    const next = await createApiKey(store, {
      name: "after",
      can_download: true,
      scope_mode: "all_projects",
    });
    assert.equal(next.apiKey.id, 27);
    const everything = await dumpKvText(kv);
    assert.ok(created.every((c) => !everything.includes(c.secret)), "no secret is stored");
    assert.ok(!everything.includes(first.secret));
  }));

Deno.test("bulk keys: invalid input is refused before anything is written", () =>
  withKv(async (kv, store) => {
    await assert.rejects(
      createApiKeysBulk(store, [
        { name: "ok", can_download: true, scope_mode: "all_projects" },
        { name: "bad", can_download: true, scope_mode: "everything" },
      ]),
      ValidationError,
    );
    await assert.rejects(
      createApiKeysBulk(store, [{ name: "x", can_download: true, scope_mode: "all_projects" }], {
        batchSize: 100,
      }),
      RangeError,
    );
    assert.deepEqual(await dumpKv(kv), []);
  }));

Deno.test("bulk releases: indexed under the project, latest pointer moved like createRelease", () =>
  withStore(async (store) => {
    const project = await createProject(store, { name: "App", slug: "app" });
    const single = await createRelease(store, {
      project_id: project.id,
      version: "0.1",
      filename: "a.bin",
      created_at: "2030-01-01T00:00:00Z",
      ...artifact,
    });
    const inputs = Array.from({ length: 30 }, (_, i) => ({
      version: `1.${i}`,
      filename: `dir/app-${i}.bin`,
      created_at: new Date(Date.UTC(2020, 0, 1, 0, 0, i)).toISOString(),
      ...artifact,
    }));
    const created = await createReleasesBulk(store, inputs, {
      projectId: project.id,
      batchSize: 7,
    });
    assert.equal(created.length, 30);
    assert.equal(created[0].id, single.id + 1);
    assert.equal(created[0].filename, "app-0.bin");
    assert.equal(
      (await getLatestRelease(store, project.id))?.id,
      single.id,
      "the newer single one",
    );
    assert.equal((await listReleasesByProject(store, project.id)).length, 31);

    const newer = await createReleasesBulk(store, [
      { version: "2.0", filename: "b.bin", created_at: "2031-01-01T00:00:00Z", ...artifact },
      { version: "1.9", filename: "c.bin", created_at: "2030-06-01T00:00:00Z", ...artifact },
    ], { projectId: project.id });
    assert.deepEqual(await getLatestRelease(store, project.id), newer[0]);
    await assert.rejects(
      createReleasesBulk(store, [inputs[0]], { projectId: 999 }),
      ValidationError,
    );
  }));
