/** Store layer atomicity: retries of contended commits, and all-or-nothing writes. */
import assert from "node:assert/strict";
import {
  commitWithRetry,
  ConflictError,
  createApiKey,
  createProject,
  createRelease,
  setReleaseState,
  updateProject,
} from "../src/store/mod.ts";
import { dumpKv, faultyKv, withKv } from "./helpers.ts";

const ok = { ok: true, versionstamp: "00000000000000010000" } as const;

Deno.test("commitWithRetry retries 'database is locked' and failed checks, then succeeds", async () => {
  let attempts = 0;
  const value = await commitWithRetry(() => {
    attempts++;
    if (attempts === 1) return Promise.reject(new Error("database is locked"));
    if (attempts === 2) return Promise.resolve({ commit: { ok: false } as const, value: "no" });
    return Promise.resolve({ commit: ok, value: "yes" });
  });
  assert.equal(value, "yes");
  assert.equal(attempts, 3);
});

Deno.test("commitWithRetry passes other errors through at once", async () => {
  let attempts = 0;
  await assert.rejects(
    commitWithRetry(() => {
      attempts++;
      return Promise.reject(new TypeError("boom"));
    }),
    TypeError,
  );
  assert.equal(attempts, 1);
});

Deno.test("commitWithRetry gives up with a ConflictError when checks keep failing", async () => {
  let attempts = 0;
  await assert.rejects(
    commitWithRetry(() => {
      attempts++;
      return Promise.resolve({ commit: { ok: false } as const, value: 0 });
    }),
    ConflictError,
  );
  assert.equal(attempts, 20);
});

Deno.test("a failed commit writes nothing: no record, no index entry, no counter bump", () =>
  withKv(async (kv) => {
    const project = await createProject(kv, { name: "App", slug: "app" });
    const release = await createRelease(kv, {
      project_id: project.id,
      version: "1",
      filename: "a",
      storage_key: crypto.randomUUID(),
      checksum_sha256: "0".repeat(64),
      size_bytes: 1,
    });
    const before = await dumpKv(kv);
    const broken = faultyKv(kv, { failCommit: true });
    await assert.rejects(createProject(broken, { name: "B", slug: "b" }), /commit failed/);
    await assert.rejects(updateProject(broken, project.id, { name: "X" }), /commit failed/);
    await assert.rejects(
      createApiKey(broken, { name: "k", can_download: true, scope_mode: "all_projects" }),
      /commit failed/,
    );
    await assert.rejects(setReleaseState(broken, release.id, "archived"), /commit failed/);
    assert.deepEqual(await dumpKv(kv), before);
  }));
