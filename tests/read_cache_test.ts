/**
 * The in-process read cache (src/kv/cache.ts): every write through the
 * store is seen by the very next request; writes of another KV handle (another
 * process) within APP_CACHE_REFRESH_MS; a read that raced a write is not kept.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createApp } from "../app.ts";
import { createFsStore } from "../src/storage/mod.ts";
import {
  createApiKey,
  getApiKeyByHash,
  hashApiKeySecret,
  setApiKeyActive,
} from "../src/credentials/api_keys.ts";
import { followOtherWriters, setCacheRefreshMs } from "../src/kv/cache.ts";
import { deleteProjectRecords } from "../src/lifecycle/delete_records.ts";
import {
  createProject,
  getProject,
  getProjectBySlug,
  listProjects,
  setProjectState,
  updateProject,
} from "../src/projects/projects.ts";
import {
  createRelease,
  getLatestRelease,
  getRelease,
  setReleaseState,
} from "../src/releases/releases.ts";
import {
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  statusOf,
  testConfig,
} from "./helpers.ts";
import { createStore } from "../src/kv/store.ts";

async function latestVersion(res: Response | Promise<Response>): Promise<string | number> {
  const response = await res;
  if (response.status !== 200) {
    await response.body?.cancel();
    return response.status;
  }
  return (await response.json()).release.version;
}

/** Two handles on one KV file behave like two processes: neither sees the other's cache. */
async function twoHandles(): Promise<
  { dir: string; served: Deno.Kv; other: Deno.Kv } & AsyncDisposable
> {
  const dir = await Deno.makeTempDir({ prefix: "uds-cache-" });
  const path = join(dir, "kv.sqlite3");
  const served = await Deno.openKv(path);
  const other = await Deno.openKv(path);
  return {
    dir,
    served,
    other,
    async [Symbol.asyncDispose]() {
      served.close();
      other.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("read cache: writes in this process are seen by the very next request", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop", tags: ["stable"] });
  await seedRelease(app, project.id, "1.0.0");
  const { apiKey, secret } = await seedKey(app);
  const latest = () => app.request("/api/v1/projects/desktop/releases/latest", secret);

  await t.step("a disabled key is refused at once, an enabled one accepted at once", async () => {
    assert.equal(await statusOf(latest()), 200);
    assert.equal(await statusOf(latest()), 200, "served from the cache");
    await setApiKeyActive(app.store, apiKey.id, false);
    assert.equal(await statusOf(latest()), 401);
    await setApiKeyActive(app.store, apiKey.id, true);
    assert.equal(await statusOf(latest()), 200);
  });

  await t.step("a new release, an archived one, and a re-activated one move latest", async () => {
    assert.equal(await latestVersion(latest()), "1.0.0");
    const newer = await seedRelease(app, project.id, "1.1.0");
    assert.equal(await latestVersion(latest()), "1.1.0");
    await setReleaseState(app.store, newer.id, "archived");
    assert.equal(await latestVersion(latest()), "1.0.0");
    await setReleaseState(app.store, newer.id, "active");
    assert.equal(await latestVersion(latest()), "1.1.0");
  });

  await t.step("an edited project shows its new name; an archived one is gone", async () => {
    await updateProject(app.store, project.id, { name: "Desktop Two", tags: ["stable"] });
    const res = await latest();
    assert.equal((await res.json()).project.name, "Desktop Two");
    const listed = async () => (await (await app.request("/api/v1/projects", secret)).json());
    assert.equal((await listed()).projects.length, 1);
    await setProjectState(app.store, project.id, "archived");
    assert.equal(await statusOf(latest()), 404);
    assert.deepEqual((await listed()).projects, []);
  });

  await t.step("a key scoped by tags loses a project whose tags change", async () => {
    await setProjectState(app.store, project.id, "active");
    const tagged = await seedKey(app, { scope_mode: "tag_allow_list", tags: ["stable"] });
    const byTag = () => app.request("/api/v1/projects/desktop/releases/latest", tagged.secret);
    assert.equal(await statusOf(byTag()), 200);
    await updateProject(app.store, project.id, { name: "Desktop Two", tags: ["beta"] });
    assert.equal(await statusOf(byTag()), 404);
  });
});

Deno.test("read cache: every kind of store write reaches another handle's cached reads", async (t) => {
  await using handles = await twoHandles();
  const { served, other } = handles;
  const servedStore = createStore(served);
  const otherStore = createStore(other);
  setCacheRefreshMs(servedStore, 0);
  // Every read below is asked once before the write, so a stale cached answer would show.
  await t.step("projects: create, edit, archive", async () => {
    assert.deepEqual(await listProjects(servedStore), []);
    assert.equal(await getProjectBySlug(servedStore, "app"), null);
    const project = await createProject(otherStore, { name: "App", slug: "app" });
    assert.deepEqual((await listProjects(servedStore)).map((p) => p.slug), ["app"]);
    assert.equal((await getProjectBySlug(servedStore, "app"))?.id, project.id);
    assert.equal((await getProject(servedStore, project.id))?.name, "App");
    await updateProject(otherStore, project.id, { name: "App 2" });
    assert.equal((await getProject(servedStore, project.id))?.name, "App 2");
    assert.equal((await getProjectBySlug(servedStore, "app"))?.name, "App 2");
    await setProjectState(otherStore, project.id, "archived");
    assert.equal((await getProject(servedStore, project.id))?.state, "archived");
    await setProjectState(otherStore, project.id, "active");
  });

  await t.step("keys: disable, enable", async () => {
    const { apiKey, secret } = await createApiKey(otherStore, {
      name: "k",
      can_download: true,
      scope_mode: "all_projects",
    });
    const hash = hashApiKeySecret(secret);
    assert.equal((await getApiKeyByHash(servedStore, hash))?.active, true);
    await setApiKeyActive(otherStore, apiKey.id, false);
    assert.equal((await getApiKeyByHash(servedStore, hash))?.active, false);
    await setApiKeyActive(otherStore, apiKey.id, true);
    assert.equal((await getApiKeyByHash(servedStore, hash))?.active, true);
  });

  await t.step("releases: create, archive", async () => {
    const project = (await getProjectBySlug(servedStore, "app"))!;
    assert.equal(await getLatestRelease(servedStore, project.id), null);
    const release = await createRelease(otherStore, {
      project_id: project.id,
      version: "1.0.0",
      filename: "a.bin",
      storage_key: crypto.randomUUID(),
      checksum_sha256: "0".repeat(64),
      size_bytes: 1,
    });
    assert.equal((await getLatestRelease(servedStore, project.id))?.id, release.id);
    assert.equal((await getRelease(servedStore, release.id))?.state, "active");
    await setReleaseState(otherStore, release.id, "archived");
    assert.equal((await getRelease(servedStore, release.id))?.state, "archived");
    assert.equal(await getLatestRelease(servedStore, project.id), null);
  });
});

Deno.test("read cache: another process's writes are seen within APP_CACHE_REFRESH_MS", async () => {
  await using handles = await twoHandles();
  const { dir, served, other } = handles;
  const servedStore = createStore(served);
  const otherStore = createStore(other);
  setCacheRefreshMs(servedStore, 300);
  await createProject(otherStore, { name: "App", slug: "app" });
  const { apiKey, secret } = await createApiKey(otherStore, {
    name: "k",
    can_download: true,
    scope_mode: "all_projects",
  });
  const app = createApp({
    config: testConfig({ dataDir: dir, artifactsDir: join(dir, "artifacts") }),
    store: servedStore,
    artifacts: createFsStore(join(dir, "artifacts")),
    recordKeyUse: () => {},
  });
  const projects = () =>
    app.request("/api/v1/projects", { headers: { authorization: `Bearer ${secret}` } });
  assert.equal(await statusOf(projects()), 200);
  await setApiKeyActive(otherStore, apiKey.id, false);
  assert.equal(await statusOf(projects()), 200, "still cached within the refresh interval");
  await new Promise((resolve) => setTimeout(resolve, 350));
  assert.equal(await statusOf(projects()), 401, "seen once the interval has passed");

  setCacheRefreshMs(servedStore, 0);
  await setApiKeyActive(otherStore, apiKey.id, true);
  assert.equal(await statusOf(projects()), 200, "with 0, seen on the next request");
});

Deno.test("read cache: followOtherWriters sees another process's write within the bound, polling in the background", async () => {
  const dir = await Deno.makeTempDir({ prefix: "uds-cache-" });
  const path = join(dir, "kv.sqlite3");
  const served = await Deno.openKv(path);
  const other = await Deno.openKv(path);
  const otherStore = createStore(other);
  let generationReads = 0;
  const counted = new Proxy(served, {
    get(target, prop) {
      if (prop === "get") {
        return (key: Deno.KvKey) => {
          if (key[0] === "meta") generationReads++;
          return target.get(key);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const countedStore = createStore(counted);
  const stop = followOtherWriters(countedStore, 100);
  try {
    const { apiKey, secret } = await createApiKey(otherStore, {
      name: "k",
      can_download: true,
      scope_mode: "all_projects",
    });
    const hash = hashApiKeySecret(secret);
    await new Promise((resolve) => setTimeout(resolve, 120));
    assert.equal((await getApiKeyByHash(countedStore, hash))?.active, true);

    const readsBefore = generationReads;
    const started = performance.now();
    let lookups = 0;
    while (performance.now() - started < 300) {
      assert.equal((await getApiKeyByHash(countedStore, hash))?.active, true);
      lookups++;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const reads = generationReads - readsBefore;
    assert.ok(lookups > 50, `${lookups} lookups`);
    assert.ok(reads >= 3 && reads <= 10, `${reads} generation reads in 300 ms: polled every 50 ms`);

    await setApiKeyActive(otherStore, apiKey.id, false);
    const disabledAt = performance.now();
    // The bound: a lookup that starts 100 ms or more after the write sees it.
    let lastActive = -Infinity;
    for (;;) {
      const startedAfter = performance.now() - disabledAt;
      if ((await getApiKeyByHash(countedStore, hash))?.active === false) break;
      lastActive = startedAfter;
      assert.ok(startedAfter < 1000, "not seen within a second");
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    assert.ok(lastActive < 100, `a lookup ${lastActive.toFixed(1)} ms after the write missed it`);
  } finally {
    stop();
    served.close();
    other.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("read cache: a read that raced a write is not kept", async () => {
  const kv = await Deno.openKv(":memory:");
  const store = createStore(kv);
  try {
    const { apiKey, secret } = await createApiKey(store, {
      name: "k",
      can_download: true,
      scope_mode: "all_projects",
    });
    // Hold the first read of the key record until the key has been disabled.
    let release!: () => void;
    const held = new Promise<void>((resolve) => release = resolve);
    let reached!: () => void;
    const holding = new Promise<void>((resolve) => reached = resolve);
    let holdNext = true;
    const slow = new Proxy(kv, {
      get(target, prop) {
        if (prop === "get") {
          return async (key: Deno.KvKey) => {
            const entry = await target.get(key);
            if (holdNext && key[0] === "api_keys") {
              holdNext = false;
              reached();
              await held;
            }
            return entry;
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const slowStore = createStore(slow);
    const hash = hashApiKeySecret(secret);
    const racing = getApiKeyByHash(slowStore, hash);
    await holding; // not a fixed sleep: on a loaded machine the read may take longer

    await setApiKeyActive(slowStore, apiKey.id, false);
    release();
    assert.equal((await racing)?.active, true, "the racing read got the old record");
    assert.equal((await getApiKeyByHash(slowStore, hash))?.active, false, "but did not cache it");
  } finally {
    kv.close();
  }
});

/** `kv` with a count of the reads (`get`, `getMany`, `list`) whose key starts with each first part. */
function countingReads(kv: Deno.Kv): { kv: Deno.Kv; reads: Map<unknown, number> } {
  const reads = new Map<unknown, number>();
  const note = (key: Deno.KvKey | undefined) => reads.set(key?.[0], (reads.get(key?.[0]) ?? 0) + 1);
  const counted = new Proxy(kv, {
    get(target, prop) {
      if (prop === "get") {
        return (key: Deno.KvKey) => {
          note(key);
          return target.get(key);
        };
      }
      if (prop === "list") {
        return (selector: Deno.KvListSelector, options?: Deno.KvListOptions) => {
          note("prefix" in selector ? selector.prefix : selector.start);
          return target.list(selector, options);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: counted, reads };
}

Deno.test("issue 19.2: a write forgets only the entries it changes, here and on another handle", async (t) => {
  await using handles = await twoHandles();
  const { served: servedKv, other } = handles;
  const otherStore = createStore(other);
  const { kv: served, reads } = countingReads(servedKv);
  const servedStore = createStore(served);
  setCacheRefreshMs(servedStore, 0);
  const a = await createProject(otherStore, { name: "A", slug: "a" });
  const b = await createProject(otherStore, { name: "B", slug: "b" });
  const { apiKey, secret } = await createApiKey(otherStore, {
    name: "k",
    can_download: true,
    scope_mode: "all_projects",
  });
  const hash = hashApiKeySecret(secret);
  const warm = async () => {
    await getProjectBySlug(servedStore, "a");
    await getProjectBySlug(servedStore, "b");
    await getApiKeyByHash(servedStore, hash);
  };
  await warm();

  await t.step("another handle's edit of A: A is read again, B and the key are not", async () => {
    await updateProject(otherStore, a.id, { name: "A2" });
    reads.clear();
    assert.equal((await getProjectBySlug(servedStore, "a"))?.name, "A2");
    assert.equal((await getProjectBySlug(servedStore, "b"))?.name, "B");
    assert.equal((await getApiKeyByHash(servedStore, hash))?.active, true);
    assert.equal(reads.get("projects_by_slug"), 1, "only A's slug was read again");
    assert.equal(reads.get("api_keys_by_hash") ?? 0, 0, "the key stayed cached");
  });

  await t.step("this handle's own write: the same", async () => {
    await warm();
    await setApiKeyActive(servedStore, apiKey.id, false);
    reads.clear();
    assert.equal((await getApiKeyByHash(servedStore, hash))?.active, false);
    assert.equal((await getProjectBySlug(servedStore, "b"))?.name, "B");
    assert.equal(reads.get("projects_by_slug") ?? 0, 0, "the projects stayed cached");
    assert.equal(reads.get("api_keys_by_hash"), 1);
  });

  await t.step(
    "a change older than the kept records forgets everything (never a stale read)",
    async () => {
      await warm();
      // A write whose change record is gone (as after a long pause): only the generation moved.
      await other.atomic().sum(["meta", "generation"], 1n).commit();
      await updateProject(otherStore, b.id, { name: "B2" });
      await other.delete(["cache_changes"]);
      for await (const entry of other.list({ prefix: ["cache_changes"] })) {
        await other.delete(entry.key);
      }
      assert.equal((await getProjectBySlug(servedStore, "b"))?.name, "B2");
    },
  );

  await t.step(
    "a project write here updates the cached project list in place; another handle reloads it",
    async () => {
      setCacheRefreshMs(otherStore, 0);
      const before = await listProjects(servedStore);
      await listProjects(otherStore);
      await updateProject(servedStore, a.id, { name: "A3" });
      await createProject(servedStore, { name: "C", slug: "c" });
      await setProjectState(servedStore, b.id, "archived");
      reads.clear();
      const after = await listProjects(servedStore);
      assert.notEqual(after, before, "a new array: bodies made from the old one are not reused");
      assert.deepEqual(after.map((project) => [project.name, project.state]), [
        ["A3", "active"],
        ["B2", "archived"],
        ["C", "active"],
      ]);
      assert.equal(reads.get("projects") ?? 0, 0, "no project was read again");
      assert.deepEqual(await listProjects(otherStore), after);
    },
  );
});

Deno.test("issue 19.2: a look at other writers' changes reads what changed since the last look, not every record kept", async () => {
  await using handles = await twoHandles();
  const { served: servedKv, other } = handles;
  const otherStore = createStore(other);
  let changeRecordsRead = 0;
  const served = new Proxy(servedKv, {
    get(target, prop) {
      if (prop === "list") {
        return (selector: Deno.KvListSelector, options?: Deno.KvListOptions) => {
          const entries = target.list(selector, options);
          return (async function* () {
            for await (const entry of entries) {
              if (entry.key[0] === "cache_changes") changeRecordsRead++;
              yield entry;
            }
          })();
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const servedStore = createStore(served);
  setCacheRefreshMs(servedStore, 0);
  const project = await createProject(otherStore, { name: "A", slug: "a" });
  await getProject(servedStore, project.id);
  // A burst of another instance's writes, all within the window a look reads back.
  for (let n = 0; n < 300; n++) await updateProject(otherStore, project.id, { name: `A${n}` });
  assert.equal((await getProject(servedStore, project.id))?.name, "A299");
  changeRecordsRead = 0;
  await updateProject(otherStore, project.id, { name: "last" });
  assert.equal((await getProject(servedStore, project.id))?.name, "last");
  assert.ok(changeRecordsRead <= 20, `one change cost ${changeRecordsRead} change records read`);
});

Deno.test("issue 19.2: another handle's project writes refresh the cached project list, reading only those projects", async () => {
  await using handles = await twoHandles();
  const { served: servedKv, other } = handles;
  const otherStore = createStore(other);
  const { kv: served, reads } = countingReads(servedKv);
  const servedStore = createStore(served);
  setCacheRefreshMs(servedStore, 0);
  const a = await createProject(otherStore, { name: "A", slug: "a" });
  const b = await createProject(otherStore, { name: "B", slug: "b" });
  const gone = await createProject(otherStore, { name: "Gone", slug: "gone" });
  const before = await listProjects(servedStore);
  assert.equal(before.length, 3);

  await updateProject(otherStore, a.id, { name: "A2", tags: ["beta"] });
  await createProject(otherStore, { name: "C", slug: "c" });
  await setProjectState(otherStore, b.id, "archived");
  await deleteProjectRecords(otherStore, gone.id);
  reads.clear();
  const after = await listProjects(servedStore);
  assert.deepEqual(after.map((project) => [project.slug, project.name, project.state]), [
    ["a", "A2", "active"],
    ["b", "B", "archived"],
    ["c", "C", "active"],
  ]);
  assert.deepEqual(after.find((project) => project.slug === "a")?.tags, ["beta"]);
  assert.equal(reads.get("projects") ?? 0, 0, "the list was not read again");
  assert.deepEqual(after, await listProjects(otherStore), "the same as a fresh read");
});

Deno.test("issue 19.2: concurrent misses of one entry share one load", async () => {
  const plain = await Deno.openKv(":memory:");
  const plainStore = createStore(plain);
  try {
    await createProject(plainStore, { name: "Desktop", slug: "desktop" });
    const { kv, reads } = countingReads(plain);
    const store = createStore(kv);
    const found = await Promise.all(
      Array.from({ length: 16 }, () => getProjectBySlug(store, "desktop")),
    );
    assert.ok(found.every((project) => project?.slug === "desktop"));
    assert.equal(reads.get("projects_by_slug"), 1);
  } finally {
    plain.close();
  }
});
