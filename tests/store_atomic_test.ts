/** Store layer atomicity: retries of contended commits, and all-or-nothing writes. */
import assert from "node:assert/strict";
import { createAdminUser } from "../src/accounts/admin_users.ts";
import { createApiKey } from "../src/credentials/api_keys.ts";
import { commitWithRetry } from "../src/kv/atomic.ts";
import { listAuditEntries, recordAudit } from "../src/kv/audit.ts";
import { ConflictError, ValidationError } from "../src/kv/errors.ts";
import { createProject, getProjectIdsBySlugs, updateProject } from "../src/projects/projects.ts";
import { createRelease, getDownloadCounts, setReleaseState } from "../src/releases/releases.ts";
import { countDownload } from "../src/stats/downloads.ts";
import type { Project } from "../src/projects/types.ts";
import { faultyKv } from "./faults.ts";
import { dumpKv, withKv, withStore } from "./helpers.ts";
import { createStore } from "../src/kv/store.ts";

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

Deno.test("the first admin and audit records are written even while another process holds the lock", () =>
  withKv(async (kv, store) => {
    // Instances starting together on one KV file: the first commits find it locked.
    let locked = 2;
    const busy = new Proxy(kv, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop !== "atomic" && prop !== "set") return value.bind?.(target) ?? value;
        return (...args: unknown[]) => {
          if (prop === "set") {
            if (locked-- > 0) return Promise.reject(new TypeError("database is locked"));
            return target.set(...(args as Parameters<Deno.Kv["set"]>));
          }
          const op = target.atomic();
          const commit = op.commit.bind(op);
          op.commit = () =>
            locked-- > 0 ? Promise.reject(new TypeError("database is locked")) : commit();
          return op;
        };
      },
    });
    const busyStore = createStore(busy);
    const user = await createAdminUser(busyStore, "admin", "hash");
    assert.equal(user?.username, "admin");
    assert.equal(await createAdminUser(busyStore, "admin", "other"), null, "a taken name is null");
    locked = 2;
    await recordAudit(busyStore, {
      actor: "system",
      action: "admin.x",
      target: "y",
      details: "",
      address: "-",
    });
    assert.equal((await listAuditEntries(store, { limit: 5 })).entries.length, 1);
  }));

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
  withKv(async (kv, store) => {
    const project = await createProject(store, { name: "App", slug: "app" });
    const release = await createRelease(store, {
      project_id: project.id,
      version: "1",
      filename: "a",
      storage_key: crypto.randomUUID(),
      checksum_sha256: "0".repeat(64),
      size_bytes: 1,
    });
    const before = await dumpKv(kv);
    const broken = faultyKv(kv, { failCommit: true });
    const brokenStore = createStore(broken);
    await assert.rejects(createProject(brokenStore, { name: "B", slug: "b" }), /commit failed/);
    await assert.rejects(updateProject(brokenStore, project.id, { name: "X" }), /commit failed/);
    await assert.rejects(
      createApiKey(brokenStore, { name: "k", can_download: true, scope_mode: "all_projects" }),
      /commit failed/,
    );
    await assert.rejects(setReleaseState(brokenStore, release.id, "archived"), /commit failed/);
    assert.deepEqual(await dumpKv(kv), before);
  }));

Deno.test("many-key reads past getMany's 10-key limit keep order and gaps", async (t) => {
  await withStore(async (store) => {
    const slugs = Array.from({ length: 23 }, (_, i) => `p-${i}`);
    const projects: Project[] = [];
    for (const slug of slugs) projects.push(await createProject(store, { slug, name: slug }));

    await t.step("ids of 23 slugs, in the order asked", async () => {
      const asked = [...slugs].reverse();
      const ids = await getProjectIdsBySlugs(store, asked);
      assert.deepEqual(ids, asked.map((slug) => projects.find((p) => p.slug === slug)!.id));
    });

    await t.step("an unknown slug in the third chunk is named", async () => {
      await assert.rejects(
        getProjectIdsBySlugs(store, [...slugs, "nope"]),
        (error: Error) =>
          error instanceof ValidationError && /unknown project "nope"/.test(error.message),
      );
    });

    await t.step("download counts of 23 releases, missing counters as 0", async () => {
      const release = await createRelease(store, {
        project_id: projects[0].id,
        version: "1.0.0",
        filename: "a.bin",
        storage_key: crypto.randomUUID(),
        size_bytes: 1,
        checksum_sha256: "0".repeat(64),
      });
      await countDownload(store, { releaseId: release.id, projectId: projects[0].id, keyId: 1 });
      const ids = [...Array.from({ length: 22 }, (_, i) => 1000 + i), release.id];
      const counts = await getDownloadCounts(store, ids);
      assert.deepEqual([...counts.keys()], ids);
      assert.equal(counts.get(release.id), 1);
      assert.equal(counts.get(1000), 0);
    });
  });
});
