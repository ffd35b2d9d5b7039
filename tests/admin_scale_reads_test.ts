/**
 * Issue 19 item 4: admin pages and archive/activate read what they show, not
 * what is stored. A counting KV proxy measures the entries each request reads
 * (not its time); the maintained counts and their one-time build are checked
 * against the records.
 */
import assert from "node:assert/strict";
import { buildAggregates, getCounts } from "../src/projects/aggregates.ts";
import { createApiKeysBulk, createReleasesBulk } from "../src/seeding/bulk.ts";
import {
  aggregatesMarkerKey,
  apiKeyExpiryPrefix,
  countsPrefix,
  projectReleaseCountsPrefix,
  projectsByNamePrefix,
  projectTagsPrefix,
} from "../src/kv/keys.ts";
import { createProject } from "../src/projects/projects.ts";
import { setReleaseState } from "../src/releases/releases.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";

/**
 * `kv` with a count of the entries read (`get`: 1, `getMany`: its keys, `list`: what it yields),
 * and by first key part.
 */
function countingEntries(
  kv: Deno.Kv,
): { kv: Deno.Kv; read: { entries: number; by: Map<unknown, number> } } {
  const read = { entries: 0, by: new Map<unknown, number>() };
  const note = (key: Deno.KvKey) => {
    // The read cache's follower of other writers (the seeds' handle; tests/helpers.ts) is not the page's.
    if (key[0] === "cache_changes") return;
    read.entries++;
    read.by.set(key[0], (read.by.get(key[0]) ?? 0) + 1);
  };
  const counted = new Proxy(kv, {
    get(target, prop) {
      if (prop === "get") {
        return (key: Deno.KvKey) => {
          note(key);
          return target.get(key);
        };
      }
      if (prop === "getMany") {
        return (keys: Deno.KvKey[]) => {
          keys.forEach(note);
          return target.getMany(keys);
        };
      }
      if (prop === "list") {
        return async function* (selector: Deno.KvListSelector, options?: Deno.KvListOptions) {
          for await (const entry of target.list(selector, options)) {
            note(entry.key);
            yield entry;
          }
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: counted, read };
}

const PROJECTS = 300;
const RELEASES = 1_200;
const KEYS = 600;

function releaseInput(i: number) {
  return {
    version: `1.${Math.floor(i / 100)}.${i % 100}`,
    filename: `big-${i}.bin`,
    storage_key: `k-${i}`,
    checksum_sha256: "0".repeat(64),
    size_bytes: 1,
    created_at: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(),
  };
}

Deno.test("issue 19.4: admin pages read one page, however much is stored", async (t) => {
  let counter: ReturnType<typeof countingEntries> | undefined;
  await using app = await createAdminTestApp({}, {
    wrapKv: (kv) => (counter = countingEntries(kv)).kv,
  });
  const read = counter!.read;
  const reset = () => {
    read.entries = 0;
    read.by.clear();
  };
  const client = await signedInClient(app);
  for (let i = 0; i < PROJECTS - 1; i++) {
    await createProject(app.store, { name: `Project ${i}`, slug: `p-${i}`, tags: [`t${i % 3}`] });
  }
  const big = await createProject(app.store, { name: "Big", slug: "big" });
  const releases = await createReleasesBulk(
    app.store,
    Array.from({ length: RELEASES }, (_, i) => releaseInput(i)),
    { projectId: big.id },
  );
  await createApiKeysBulk(
    app.store,
    Array.from({ length: KEYS }, (_, i) => ({
      name: `updater ${i}`,
      can_download: true,
      scope_mode: "all_projects",
    })),
  );
  // Far below a scan of any of the lists (each holds 300 to 1,200 records).
  const BOUND = 260;

  const pages: Array<[string, RegExp]> = [
    ["/admin", /data-count="releases">1200</],
    ["/admin/projects", /data-project-slug="big"/],
    ["/admin/projects/big", new RegExp(`data-release-id="${releases.at(-1)!.id}"`)],
    ["/admin/api-keys", /updater 599/],
    ["/admin/audit", /auth\.sign_in/],
  ];
  for (const [path, shows] of pages) {
    await t.step(`${path}: bounded reads`, async () => {
      await client.page(path); // first view: caches and the top-keys snapshot
      reset();
      const { res, html } = await client.page(path);
      assert.equal(res.status, 200);
      assert.match(html, shows);
      assert.ok(read.entries <= BOUND, `${path} read ${read.entries} entries`);
    });
  }

  await t.step("following the next links reads one page each and keeps the order", async () => {
    let path: string | null = "/admin/projects/big/releases";
    const seen: number[] = [];
    let pagesRead = 0;
    while (path !== null) {
      reset();
      const { html }: { html: string } = await client.page(path);
      assert.ok(read.entries <= BOUND, `${path} read ${read.entries} entries`);
      seen.push(...[...html.matchAll(/data-release-id="(\d+)"/g)].map((m) => Number(m[1])));
      path = /<a href="([^"]*)" rel="next"/.exec(html)?.[1].replaceAll("&amp;", "&") ?? null;
      if (++pagesRead === 3) {
        // The previous page from page 3 is page 2 again.
        const back = /<a href="([^"]*)" rel="prev"/.exec(html)![1].replaceAll("&amp;", "&");
        assert.match(back, /page=2/);
        const again = (await client.page(back)).html;
        const ids = [...again.matchAll(/data-release-id="(\d+)"/g)].map((m) => Number(m[1]));
        assert.deepEqual(ids, seen.slice(50, 100));
      }
    }
    const newestFirst = releases.map((release) => release.id).reverse();
    assert.deepEqual(seen, newestFirst);
  });

  await t.step("a search reads at most its scan limit, and says where to search on", async () => {
    reset();
    const { html } = await client.page("/admin/api-keys?q=updater+5");
    assert.ok(read.entries <= BOUND, `search read ${read.entries}`);
    assert.match(html, /updater 599/);
    assert.match(html, /rel="next"/);
    const slugs = await client.fetch("/admin/project-slugs?q=p-1");
    assert.equal((await slugs.json()).projects.length, 20);
  });

  await t.step("archive and activate read what the latest pointer needs", async () => {
    const newest = releases.at(-1)!;
    const older = releases.at(-2)!;
    for (const [action, latest] of [["archive", older], ["activate", newest]] as const) {
      reset();
      const res = await client.post(`/admin/releases/${newest.id}/${action}`);
      assert.equal(res.status, 303);
      assert.ok(
        read.entries <= 60,
        `${action} read ${read.entries} entries ${JSON.stringify([...read.by])}`,
      );
      const body = await app.request("/admin/projects/big", undefined, {
        headers: { cookie: [...client.cookies].map(([k, v]) => `${k}=${v}`).join("; ") },
      });
      const html = await body.text();
      assert.match(html, new RegExp(`data-release-id="${latest.id}"[^>]*data-latest="true"`));
    }
    // Archiving releases that are not the latest leaves the pointer without a search.
    for (const release of releases.slice(0, 10)) {
      await setReleaseState(app.store, release.id, "archived");
    }
    reset();
    await client.post(`/admin/releases/${releases[10].id}/archive`);
    assert.ok(read.entries <= 60, `archive of an old release read ${read.entries}`);
  });

  await t.step("the counts match the records", async () => {
    const counts = await getCounts(app.store);
    assert.deepEqual(counts.projects, { active: PROJECTS });
    assert.deepEqual(counts.releases, { active: RELEASES - 11, archived: 11 });
    assert.deepEqual(counts.api_keys, { enabled: KEYS });
  });

  await t.step("data without aggregates gets them once, the same as maintained", async () => {
    const maintained = await aggregateEntries(app.kv);
    for (const prefix of aggregatePrefixes) {
      for await (const entry of app.kv.list({ prefix })) await app.kv.delete(entry.key);
    }
    await app.kv.delete(aggregatesMarkerKey());
    assert.equal(await buildAggregates(app.store), "built");
    assert.equal(await buildAggregates(app.store), "ready");
    assert.deepEqual(await aggregateEntries(app.kv), maintained);
  });

  await t.step(
    "a project search looks through the cached list: every match, in order",
    async () => {
      // Project 1, 4, 7 … (tag t1), archived ones last, then by name case-insensitively.
      const archived = await client.page("/admin/projects/p-4");
      assert.equal(archived.res.status, 200);
      const res = await client.post("/admin/projects/p-4/archive");
      assert.equal(res.status, 303);
      await client.page("/admin/projects?q=t1"); // loads the list once
      const expected = Array.from({ length: PROJECTS - 1 }, (_, i) => i)
        .filter((i) => i % 3 === 1)
        .map((i) => ({ slug: `p-${i}`, name: `project ${i}`, archived: i === 4 }))
        .sort((a, b) =>
          Number(a.archived) - Number(b.archived) ||
          (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
        )
        .map((project) => project.slug);
      const seen: string[] = [];
      let path: string | null = "/admin/projects?q=t1";
      while (path !== null) {
        reset();
        const { html }: { html: string } = await client.page(path);
        assert.equal(read.by.get("projects") ?? 0, 0, `${path} read project records`);
        assert.match(html, /of 300 projects match &quot;t1&quot;|of 300 projects match "t1"/);
        seen.push(...[...html.matchAll(/data-project-slug="([^"]+)"/g)].map((m) => m[1]));
        path = /<a href="([^"]*)" rel="next"/.exec(html)?.[1].replaceAll("&amp;", "&") ?? null;
      }
      assert.deepEqual(seen, expected);
    },
  );
});

const aggregatePrefixes: Deno.KvKey[] = [
  countsPrefix(),
  projectReleaseCountsPrefix(),
  ["releases_by_time"],
  projectsByNamePrefix(),
  projectTagsPrefix(),
  apiKeyExpiryPrefix(),
];

async function aggregateEntries(kv: Deno.Kv): Promise<Array<[string, unknown]>> {
  const entries: Array<[string, unknown]> = [];
  for (const prefix of aggregatePrefixes) {
    for await (const entry of kv.list({ prefix })) {
      const value = entry.value instanceof Deno.KvU64 ? entry.value.value : entry.value;
      entries.push([JSON.stringify(entry.key), value]);
    }
  }
  return entries;
}
