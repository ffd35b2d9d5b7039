/** Store layer: releases, the per-project index and the "latest" pointer. */
import assert from "node:assert/strict";
import {
  countDownload,
  counterKey,
  createProject,
  createRelease,
  getDailyDownloads,
  getDownloadCounts,
  getLatestRelease,
  getRecentDownloadCounts,
  getRelease,
  getTopKeysByDownloads,
  latestReleaseKey,
  listReleasesByProject,
  NotFoundError,
  releaseByProjectKey,
  type ReleaseInput,
  setReleaseState,
  ValidationError,
} from "../src/store/mod.ts";
import { dumpKv, withKv } from "./helpers.ts";

function withProject(fn: (kv: Deno.Kv, projectId: number) => Promise<void>) {
  return withKv(async (kv) => {
    const project = await createProject(kv, { name: "App", slug: "app" });
    await fn(kv, project.id);
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

async function latestId(kv: Deno.Kv, projectId: number) {
  return (await getLatestRelease(kv, projectId))?.id ?? null;
}

Deno.test("release ids are integers from a KV counter", () =>
  withProject(async (kv, projectId) => {
    const a = await createRelease(kv, input(projectId));
    const b = await createRelease(kv, input(projectId));
    assert.deepEqual([a.id, b.id], [1, 2]);
    // The counter is ahead by the block of ids this process claimed (issue 19.1).
    assert.ok(((await kv.get<number>(counterKey("releases"))).value ?? 0) >= 2);
  }));

Deno.test("a release, its project index entry and the latest pointer are one commit", () =>
  withProject(async (kv, projectId) => {
    const release = await createRelease(kv, input(projectId, { version: "2.0", build: "7" }));
    assert.equal(release.state, "active");
    assert.deepEqual(await getRelease(kv, release.id), release);
    assert.equal((await kv.get(releaseByProjectKey(projectId, release.id))).value, release.id);
    assert.equal((await kv.get(latestReleaseKey(projectId))).value, release.id);
  }));

Deno.test("a release of an unknown project is refused and nothing is stored", () =>
  withKv(async (kv) => {
    await assert.rejects(
      createRelease(kv, input(99)),
      (e) => e instanceof ValidationError && e.field === "project",
    );
    assert.deepEqual(await dumpKv(kv), []);
  }));

Deno.test("release fields are validated before anything is stored", () =>
  withProject(async (kv, projectId) => {
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
        createRelease(kv, input(projectId, extra)),
        (e) => e instanceof ValidationError && e.field === field,
        JSON.stringify(extra),
      );
    }
    assert.deepEqual(await dumpKv(kv), before);
  }));

Deno.test("the filename drops path parts; an unsafe content type becomes octet-stream", () =>
  withProject(async (kv, projectId) => {
    const a = await createRelease(
      kv,
      input(projectId, {
        filename: "C:\\build\\out/app\r\n.exe",
        content_type: "text/html\r\nX: y",
      }),
    );
    assert.equal(a.filename, "app.exe");
    assert.equal(a.content_type, "application/octet-stream");
    const b = await createRelease(kv, input(projectId, { content_type: "application/zip" }));
    assert.equal(b.content_type, "application/zip");
    const c = await createRelease(kv, input(projectId, { content_type: undefined }));
    assert.equal(c.content_type, "application/octet-stream");
  }));

Deno.test("created_at defaults to now and an override is stored as toISOString()", () =>
  withProject(async (kv, projectId) => {
    const before = Date.now();
    const a = await createRelease(kv, input(projectId));
    assert.ok(Date.parse(a.created_at) >= before && Date.parse(a.created_at) <= Date.now());
    assert.match(a.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const b = await createRelease(
      kv,
      input(projectId, { created_at: "2024-05-01T12:00:00+02:00" }),
    );
    assert.equal(b.created_at, "2024-05-01T10:00:00.000Z");
  }));

Deno.test("latest: the greatest created_at wins, not the greatest id", () =>
  withProject(async (kv, projectId) => {
    const newer = await createRelease(kv, input(projectId, { created_at: "2024-02-01T00:00:00Z" }));
    await createRelease(kv, input(projectId, { created_at: "2024-01-01T00:00:00Z" }));
    assert.equal(await latestId(kv, projectId), newer.id);
    const newest = await createRelease(
      kv,
      input(projectId, { created_at: "2024-03-01T00:00:00Z" }),
    );
    assert.equal(await latestId(kv, projectId), newest.id);
  }));

Deno.test("latest: equal created_at is broken by the greater id", () =>
  withProject(async (kv, projectId) => {
    const at = "2024-01-01T00:00:00.000Z";
    await createRelease(kv, input(projectId, { created_at: at }));
    const second = await createRelease(kv, input(projectId, { created_at: at }));
    assert.equal(await latestId(kv, projectId), second.id);
  }));

Deno.test("latest: a project without releases has none", () =>
  withProject(async (kv, projectId) => {
    assert.equal(await getLatestRelease(kv, projectId), null);
  }));

Deno.test("latest: archiving and re-activating releases keeps latest right", () =>
  withProject(async (kv, projectId) => {
    const tie = "2024-06-01T00:00:00.000Z";
    const old = await createRelease(kv, input(projectId, { created_at: "2024-01-01T00:00:00Z" }));
    const tieLow = await createRelease(kv, input(projectId, { created_at: tie }));
    const tieHigh = await createRelease(kv, input(projectId, { created_at: tie }));
    // Created last, but uploaded "earlier": never latest while the others are active.
    const backdated = await createRelease(
      kv,
      input(projectId, { created_at: "2023-01-01T00:00:00Z" }),
    );
    assert.equal(await latestId(kv, projectId), tieHigh.id);

    await setReleaseState(kv, tieHigh.id, "archived");
    assert.equal(await latestId(kv, projectId), tieLow.id, "tie partner takes over");
    await setReleaseState(kv, tieLow.id, "archived");
    assert.equal(await latestId(kv, projectId), old.id, "then the next greatest created_at");
    await setReleaseState(kv, old.id, "archived");
    assert.equal(await latestId(kv, projectId), backdated.id);
    await setReleaseState(kv, backdated.id, "archived");
    assert.equal(await latestId(kv, projectId), null, "no active release left");

    await setReleaseState(kv, old.id, "active");
    assert.equal(await latestId(kv, projectId), old.id);
    await setReleaseState(kv, tieLow.id, "active");
    assert.equal(await latestId(kv, projectId), tieLow.id);
    await setReleaseState(kv, tieHigh.id, "active");
    assert.equal(await latestId(kv, projectId), tieHigh.id);
    await setReleaseState(kv, backdated.id, "active");
    assert.equal(await latestId(kv, projectId), tieHigh.id, "an older activation changes nothing");
  }));

Deno.test("latest: archiving a release that is not latest leaves latest alone", () =>
  withProject(async (kv, projectId) => {
    const a = await createRelease(kv, input(projectId, { created_at: "2024-01-01T00:00:00Z" }));
    const b = await createRelease(kv, input(projectId, { created_at: "2024-02-01T00:00:00Z" }));
    await setReleaseState(kv, a.id, "archived");
    assert.equal(await latestId(kv, projectId), b.id);
    assert.equal((await getRelease(kv, a.id))?.state, "archived");
  }));

Deno.test("latest: a new release newer than an archived one becomes latest", () =>
  withProject(async (kv, projectId) => {
    const a = await createRelease(kv, input(projectId, { created_at: "2024-01-01T00:00:00Z" }));
    await setReleaseState(kv, a.id, "archived");
    const b = await createRelease(kv, input(projectId, { created_at: "2023-01-01T00:00:00Z" }));
    assert.equal(await latestId(kv, projectId), b.id, "archived releases never count");
  }));

Deno.test("latest: projects have independent pointers", () =>
  withProject(async (kv, projectId) => {
    const other = await createProject(kv, { name: "Other", slug: "other" });
    const mine = await createRelease(kv, input(projectId));
    const theirs = await createRelease(kv, input(other.id));
    assert.equal(await latestId(kv, projectId), mine.id);
    assert.equal(await latestId(kv, other.id), theirs.id);
  }));

Deno.test("latest: concurrent uploads and state changes of one project end consistent", () =>
  withProject(async (kv, projectId) => {
    const times = Array.from({ length: 10 }, (_, i) => `2024-01-${String(10 + i)}T00:00:00Z`);
    const created = await Promise.all(
      times.map((at) => createRelease(kv, input(projectId, { created_at: at }))),
    );
    const newest = created.find((r) => r.created_at.startsWith("2024-01-19"))!;
    assert.equal(await latestId(kv, projectId), newest.id);
    const second = created.find((r) => r.created_at.startsWith("2024-01-18"))!;
    const third = created.find((r) => r.created_at.startsWith("2024-01-17"))!;
    await Promise.all([
      setReleaseState(kv, newest.id, "archived"),
      setReleaseState(kv, second.id, "archived"),
      setReleaseState(kv, created[0].id, "archived"),
    ]);
    assert.equal(await latestId(kv, projectId), third.id);
  }));

Deno.test("changing the state of an unknown release is NotFound", () =>
  withProject(async (kv) => {
    await assert.rejects(setReleaseState(kv, 123, "archived"), NotFoundError);
  }));

Deno.test("listReleasesByProject returns every state, newest id first", () =>
  withProject(async (kv, projectId) => {
    const ids: number[] = [];
    for (let i = 0; i < 12; i++) ids.push((await createRelease(kv, input(projectId))).id);
    await setReleaseState(kv, ids[3], "archived");
    const listed = await listReleasesByProject(kv, projectId);
    assert.deepEqual(listed.map((r) => r.id), ids.toReversed());
    assert.equal(listed.find((r) => r.id === ids[3])?.state, "archived");
  }));

Deno.test("download counts add up without reads", () =>
  withProject(async (kv, projectId) => {
    const a = await createRelease(kv, input(projectId));
    const b = await createRelease(kv, input(projectId));
    const download = { releaseId: a.id, projectId, keyId: 1 };
    await Promise.all([
      countDownload(kv, download),
      countDownload(kv, download),
      countDownload(kv, download),
    ]);
    const counts = await getDownloadCounts(kv, [a.id, b.id]);
    assert.equal(counts.get(a.id), 3);
    assert.equal(counts.get(b.id), 0);
  }));

Deno.test("per-day download counters: per project, per release and in all; top keys", () =>
  withProject(async (kv, projectId) => {
    const a = await createRelease(kv, input(projectId));
    const b = await createRelease(kv, input(projectId));
    const today = new Date("2026-03-10T12:00:00Z");
    const at = (day: number) => new Date(Date.UTC(2026, 2, day, 8));
    const count = (releaseId: number, keyId: number, day: number) =>
      countDownload(kv, { releaseId, projectId, keyId, at: at(day) });
    await Promise.all([count(a.id, 7, 10), count(a.id, 7, 10), count(b.id, 8, 9)]);
    await count(a.id, 9, 1); // 10 days ago: inside 30 days, outside 7
    await count(b.id, 8, 10 - 40 + 28); // 2026-02-26 ... still inside 30 days
    await count(a.id, 7, 10 - 100); // 100 days ago: outside 90 days

    const week = await getDailyDownloads(kv, ["project", projectId], { days: 7, until: today });
    assert.equal(week.length, 7);
    assert.deepEqual(week.at(-1), { day: "2026-03-10", downloads: 2 });
    assert.deepEqual(week.at(-2), { day: "2026-03-09", downloads: 1 });
    assert.equal(week.reduce((sum, d) => sum + d.downloads, 0), 3);
    assert.equal(week[0].day, "2026-03-04");

    const all90 = await getDailyDownloads(kv, ["all"], { days: 90, until: today });
    assert.equal(all90.length, 90);
    assert.equal(all90.reduce((sum, d) => sum + d.downloads, 0), 5);
    const releaseA = await getDailyDownloads(kv, ["release", a.id], { days: 30, until: today });
    assert.equal(releaseA.reduce((sum, d) => sum + d.downloads, 0), 3);

    const recent = await getRecentDownloadCounts(kv, [a.id, b.id], { days: 30, until: today });
    assert.equal(recent.get(a.id), 3);
    assert.equal(recent.get(b.id), 2);
    // Totals count every download, whatever the day.
    assert.equal((await getDownloadCounts(kv, [a.id])).get(a.id), 4);
    assert.deepEqual(await getTopKeysByDownloads(kv, 2), [
      { keyId: 7, downloads: 3 },
      { keyId: 8, downloads: 2 },
    ]);
  }));

Deno.test("one download is one atomic commit: the counters move together", async () => {
  using kv = await Deno.openKv(":memory:");
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
  await countDownload(kv, { releaseId: 1, projectId: 2, keyId: 3 });
  assert.equal(commits, 1);
  assert.equal((await getDownloadCounts(kv, [1])).get(1), 1);
  assert.equal((await getDailyDownloads(kv, ["project", 2], { days: 1 }))[0].downloads, 1);
  assert.deepEqual(await getTopKeysByDownloads(kv, 5), [{ keyId: 3, downloads: 1 }]);
});
