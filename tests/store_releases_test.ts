/** Store layer: releases, the per-project index and the "latest" pointer. */
import assert from "node:assert/strict";
import { NotFoundError, ValidationError } from "../src/kv/errors.ts";
import { counterKey, latestReleaseKey, releaseByProjectKey } from "../src/kv/keys.ts";
import { createProject } from "../src/projects/projects.ts";
import {
  createRelease,
  getDownloadCounts,
  getLatestRelease,
  getRelease,
  listReleasesByProject,
  type ReleaseInput,
  setReleaseState,
} from "../src/releases/releases.ts";
import {
  countDownload,
  getDailyDownloads,
  getRecentDownloadCounts,
  getTopKeysByDownloads,
} from "../src/stats/downloads.ts";
import { dumpKv, withKv } from "./helpers.ts";
import { createStore, type Store } from "../src/kv/store.ts";

function withProject(fn: (store: Store, projectId: number, kv: Deno.Kv) => Promise<void>) {
  return withKv(async (kv, store) => {
    const project = await createProject(store, { name: "App", slug: "app" });
    await fn(store, project.id, kv);
  });
}

function input(projectId: number, extra: Partial<ReleaseInput> = {}): ReleaseInput {
  return {
    project_id: projectId,
    version: "1.0.0",
    filename: "app.bin",
    storage_key: crypto.randomUUID(),
    checksum_sha256: "0".repeat(64),
    size_bytes: 10,
    ...extra,
  };
}

async function latestId(store: Store, projectId: number) {
  return (await getLatestRelease(store, projectId))?.id ?? null;
}

Deno.test("release ids are integers from a KV counter", () =>
  withProject(async (store, projectId, kv) => {
    const a = await createRelease(store, input(projectId));
    const b = await createRelease(store, input(projectId));
    assert.deepEqual([a.id, b.id], [1, 2]);
    // The counter is ahead by the block of ids this process claimed (issue 19.1).
    assert.ok(((await kv.get<number>(counterKey("releases"))).value ?? 0) >= 2);
  }));

Deno.test("a release, its project index entry and the latest pointer are one commit", () =>
  withProject(async (store, projectId, kv) => {
    const release = await createRelease(store, input(projectId, { version: "2.0", build: "7" }));
    assert.equal(release.state, "active");
    assert.deepEqual(await getRelease(store, release.id), release);
    assert.equal((await kv.get(releaseByProjectKey(projectId, release.id))).value, release.id);
    assert.equal((await kv.get(latestReleaseKey(projectId))).value, release.id);
  }));

Deno.test("a release of an unknown project is refused and nothing is stored", () =>
  withKv(async (kv, store) => {
    await assert.rejects(
      createRelease(store, input(99)),
      (e) => e instanceof ValidationError && e.field === "project",
    );
    assert.deepEqual(await dumpKv(kv), []);
  }));

Deno.test("release fields are validated before anything is stored", () =>
  withProject(async (store, projectId, kv) => {
    const before = await dumpKv(kv);
    for (
      const [extra, field] of [
        [{ version: "" }, "version"],
        [{ version: "   " }, "version"],
        [{ version: "v".repeat(129) }, "version"],
        [{ build: "b".repeat(129) }, "build"],
        [{ created_at: "yesterday" }, "created_at"],
      ] as const
    ) {
      await assert.rejects(
        createRelease(store, input(projectId, extra)),
        (e) => e instanceof ValidationError && e.field === field,
        JSON.stringify(extra),
      );
    }
    assert.deepEqual(await dumpKv(kv), before);
  }));

Deno.test("the filename drops path parts; an unsafe content type becomes octet-stream", () =>
  withProject(async (store, projectId) => {
    const a = await createRelease(
      store,
      input(projectId, {
        filename: "C:\\build\\out/app\r\n.exe",
        content_type: "text/html\r\nX: y",
      }),
    );
    assert.equal(a.filename, "app.exe");
    assert.equal(a.content_type, "application/octet-stream");
    const b = await createRelease(store, input(projectId, { content_type: "application/zip" }));
    assert.equal(b.content_type, "application/zip");
    const c = await createRelease(store, input(projectId, { content_type: undefined }));
    assert.equal(c.content_type, "application/octet-stream");
  }));

Deno.test("created_at defaults to now and an override is stored as toISOString()", () =>
  withProject(async (store, projectId) => {
    const before = Date.now();
    const a = await createRelease(store, input(projectId));
    assert.ok(Date.parse(a.created_at) >= before && Date.parse(a.created_at) <= Date.now());
    assert.match(a.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const b = await createRelease(
      store,
      input(projectId, { created_at: "2024-05-01T12:00:00+02:00" }),
    );
    assert.equal(b.created_at, "2024-05-01T10:00:00.000Z");
  }));

Deno.test("latest: the greatest created_at wins, not the greatest id", () =>
  withProject(async (store, projectId) => {
    const newer = await createRelease(
      store,
      input(projectId, { created_at: "2024-02-01T00:00:00Z" }),
    );
    await createRelease(store, input(projectId, { created_at: "2024-01-01T00:00:00Z" }));
    assert.equal(await latestId(store, projectId), newer.id);
    const newest = await createRelease(
      store,
      input(projectId, { created_at: "2024-03-01T00:00:00Z" }),
    );
    assert.equal(await latestId(store, projectId), newest.id);
  }));

Deno.test("latest: equal created_at is broken by the greater id", () =>
  withProject(async (store, projectId) => {
    const at = "2024-01-01T00:00:00.000Z";
    await createRelease(store, input(projectId, { created_at: at }));
    const second = await createRelease(store, input(projectId, { created_at: at }));
    assert.equal(await latestId(store, projectId), second.id);
  }));

Deno.test("latest: a project without releases has none", () =>
  withProject(async (store, projectId) => {
    assert.equal(await getLatestRelease(store, projectId), null);
  }));

Deno.test("latest: archiving and re-activating releases keeps latest right", () =>
  withProject(async (store, projectId) => {
    const tie = "2024-06-01T00:00:00.000Z";
    const old = await createRelease(
      store,
      input(projectId, { created_at: "2024-01-01T00:00:00Z" }),
    );
    const tieLow = await createRelease(store, input(projectId, { created_at: tie }));
    const tieHigh = await createRelease(store, input(projectId, { created_at: tie }));
    // Created last, but uploaded "earlier": never latest while the others are active.
    const backdated = await createRelease(
      store,
      input(projectId, { created_at: "2023-01-01T00:00:00Z" }),
    );
    assert.equal(await latestId(store, projectId), tieHigh.id);

    await setReleaseState(store, tieHigh.id, "archived");
    assert.equal(await latestId(store, projectId), tieLow.id, "tie partner takes over");
    await setReleaseState(store, tieLow.id, "archived");
    assert.equal(await latestId(store, projectId), old.id, "then the next greatest created_at");
    await setReleaseState(store, old.id, "archived");
    assert.equal(await latestId(store, projectId), backdated.id);
    await setReleaseState(store, backdated.id, "archived");
    assert.equal(await latestId(store, projectId), null, "no active release left");

    await setReleaseState(store, old.id, "active");
    assert.equal(await latestId(store, projectId), old.id);
    await setReleaseState(store, tieLow.id, "active");
    assert.equal(await latestId(store, projectId), tieLow.id);
    await setReleaseState(store, tieHigh.id, "active");
    assert.equal(await latestId(store, projectId), tieHigh.id);
    await setReleaseState(store, backdated.id, "active");
    assert.equal(
      await latestId(store, projectId),
      tieHigh.id,
      "an older activation changes nothing",
    );
  }));

Deno.test("latest: archiving a release that is not latest leaves latest alone", () =>
  withProject(async (store, projectId) => {
    const a = await createRelease(store, input(projectId, { created_at: "2024-01-01T00:00:00Z" }));
    const b = await createRelease(store, input(projectId, { created_at: "2024-02-01T00:00:00Z" }));
    await setReleaseState(store, a.id, "archived");
    assert.equal(await latestId(store, projectId), b.id);
    assert.equal((await getRelease(store, a.id))?.state, "archived");
  }));

Deno.test("latest: a new release newer than an archived one becomes latest", () =>
  withProject(async (store, projectId) => {
    const a = await createRelease(store, input(projectId, { created_at: "2024-01-01T00:00:00Z" }));
    await setReleaseState(store, a.id, "archived");
    const b = await createRelease(store, input(projectId, { created_at: "2023-01-01T00:00:00Z" }));
    assert.equal(await latestId(store, projectId), b.id, "archived releases never count");
  }));

Deno.test("latest: projects have independent pointers", () =>
  withProject(async (store, projectId) => {
    const other = await createProject(store, { name: "Other", slug: "other" });
    const mine = await createRelease(store, input(projectId));
    const theirs = await createRelease(store, input(other.id));
    assert.equal(await latestId(store, projectId), mine.id);
    assert.equal(await latestId(store, other.id), theirs.id);
  }));

Deno.test("latest: concurrent uploads and state changes of one project end consistent", () =>
  withProject(async (store, projectId) => {
    const times = Array.from({ length: 10 }, (_, i) => `2024-01-${String(10 + i)}T00:00:00Z`);
    const created = await Promise.all(
      times.map((at) => createRelease(store, input(projectId, { created_at: at }))),
    );
    const newest = created.find((r) => r.created_at.startsWith("2024-01-19"))!;
    assert.equal(await latestId(store, projectId), newest.id);
    const second = created.find((r) => r.created_at.startsWith("2024-01-18"))!;
    const third = created.find((r) => r.created_at.startsWith("2024-01-17"))!;
    await Promise.all([
      setReleaseState(store, newest.id, "archived"),
      setReleaseState(store, second.id, "archived"),
      setReleaseState(store, created[0].id, "archived"),
    ]);
    assert.equal(await latestId(store, projectId), third.id);
  }));

Deno.test("changing the state of an unknown release is NotFound", () =>
  withProject(async (store) => {
    await assert.rejects(setReleaseState(store, 123, "archived"), NotFoundError);
  }));

Deno.test("listReleasesByProject returns every state, newest id first", () =>
  withProject(async (store, projectId) => {
    const ids: number[] = [];
    for (let i = 0; i < 12; i++) ids.push((await createRelease(store, input(projectId))).id);
    await setReleaseState(store, ids[3], "archived");
    const listed = await listReleasesByProject(store, projectId);
    assert.deepEqual(listed.map((r) => r.id), ids.toReversed());
    assert.equal(listed.find((r) => r.id === ids[3])?.state, "archived");
  }));

Deno.test("download counts add up without reads", () =>
  withProject(async (store, projectId) => {
    const a = await createRelease(store, input(projectId));
    const b = await createRelease(store, input(projectId));
    const download = { releaseId: a.id, projectId, keyId: 1 };
    await Promise.all([
      countDownload(store, download),
      countDownload(store, download),
      countDownload(store, download),
    ]);
    const counts = await getDownloadCounts(store, [a.id, b.id]);
    assert.equal(counts.get(a.id), 3);
    assert.equal(counts.get(b.id), 0);
  }));

Deno.test("per-day download counters: per project, per release and in all; top keys", () =>
  withProject(async (store, projectId) => {
    const a = await createRelease(store, input(projectId));
    const b = await createRelease(store, input(projectId));
    const today = new Date("2026-03-10T12:00:00Z");
    const at = (day: number) => new Date(Date.UTC(2026, 2, day, 8));
    const count = (releaseId: number, keyId: number, day: number) =>
      countDownload(store, { releaseId, projectId, keyId, at: at(day) });
    await Promise.all([count(a.id, 7, 10), count(a.id, 7, 10), count(b.id, 8, 9)]);
    await count(a.id, 9, 1); // 10 days ago: inside 30 days, outside 7
    await count(b.id, 8, 10 - 40 + 28); // 2026-02-26 ... still inside 30 days
    await count(a.id, 7, 10 - 100); // 100 days ago: outside 90 days

    const week = await getDailyDownloads(store, ["project", projectId], { days: 7, until: today });
    assert.equal(week.length, 7);
    assert.deepEqual(week.at(-1), { day: "2026-03-10", downloads: 2 });
    assert.deepEqual(week.at(-2), { day: "2026-03-09", downloads: 1 });
    assert.equal(week.reduce((sum, d) => sum + d.downloads, 0), 3);
    assert.equal(week[0].day, "2026-03-04");

    const all90 = await getDailyDownloads(store, ["all"], { days: 90, until: today });
    assert.equal(all90.length, 90);
    assert.equal(all90.reduce((sum, d) => sum + d.downloads, 0), 5);
    const releaseA = await getDailyDownloads(store, ["release", a.id], { days: 30, until: today });
    assert.equal(releaseA.reduce((sum, d) => sum + d.downloads, 0), 3);

    const recent = await getRecentDownloadCounts(store, [a.id, b.id], { days: 30, until: today });
    assert.equal(recent.get(a.id), 3);
    assert.equal(recent.get(b.id), 2);
    // Totals count every download, whatever the day.
    assert.equal((await getDownloadCounts(store, [a.id])).get(a.id), 4);
    assert.deepEqual(await getTopKeysByDownloads(store, 2), [
      { keyId: 7, downloads: 3 },
      { keyId: 8, downloads: 2 },
    ]);
  }));

Deno.test("one download is one atomic commit: the counters move together", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = createStore(kv);
  let commits = 0;
  const realAtomic = kv.atomic.bind(kv);
  kv.atomic = () => {
    const op = realAtomic();
    const realCommit = op.commit.bind(op);
    op.commit = () => {
      commits++;
      return realCommit();
    };
    return op;
  };
  await countDownload(store, { releaseId: 1, projectId: 2, keyId: 3 });
  assert.equal(commits, 1);
  assert.equal((await getDownloadCounts(store, [1])).get(1), 1);
  assert.equal((await getDailyDownloads(store, ["project", 2], { days: 1 }))[0].downloads, 1);
  assert.deepEqual(await getTopKeysByDownloads(store, 5), [{ keyId: 3, downloads: 1 }]);
});
