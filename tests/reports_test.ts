/**
 * Install reports (docs/reports.md): the route's checks and errors, counting
 * once per install id, release and kind, the reference client's calls, a
 * flood of invented install ids counting nothing and staying within the
 * documented bound, and the cap of report markers per client address.
 */
import assert from "node:assert/strict";
import { sendReport } from "../client/update_client.ts";
import {
  getReportCounts,
  getReportEstimates,
  getReportReasons,
  getReportSeries,
} from "../src/reports/reports.ts";
import { setCacheRefreshMs } from "../src/kv/cache.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import {
  checkIn,
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  type TestApp,
} from "./helpers.ts";

function post(t: TestApp, secret: string | undefined, body: unknown, headers = {}) {
  return t.request("/reports/v1/projects/app", secret, {
    method: "POST",
    headers: { "content-type": "application/json", "x-install-id": "install-1", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function errorOf(res: Response | Promise<Response>): Promise<[number, string]> {
  const answer = await res;
  return [answer.status, (await answer.json()).error];
}

/** Client options whose requests go to the app in process. */
function clientOf(t: TestApp, secret: string, installId?: string) {
  return {
    baseUrl: "http://updates.test",
    apiKey: secret,
    installId,
    fetch:
      ((input: URL | Request | string, init?: RequestInit) =>
        Promise.resolve(t.app.request(String(input), init))) as typeof fetch,
    sleep: () => Promise.resolve(),
  };
}

async function countEntries(kv: Deno.Kv, first: string): Promise<number> {
  let count = 0;
  for await (const _ of kv.list({ prefix: [first] })) count++;
  return count;
}

Deno.test("install reports: checks, errors and counting", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "1.1.0");
  const { secret } = await seedKey(app);
  const { secret: other } = await seedKey(app);
  const { secret: noDownload } = await seedKey(app, { can_download: false });
  await seedProject(app, { slug: "hidden" });

  await t.step("a good report is accepted with 202 and the contract's headers", async () => {
    const res = await post(app, secret, { event: "installed", version: "1.1.0" });
    assert.equal(res.status, 202);
    assert.deepEqual(await res.json(), { status: "accepted" });
    assert.equal(res.headers.get("cache-control"), "no-store, private, max-age=0");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  });

  await t.step("bad input is a clear JSON error", async () => {
    assert.deepEqual(await errorOf(post(app, undefined, { event: "installed", version: "1" })), [
      401,
      "missing bearer api key",
    ]);
    assert.deepEqual(
      await errorOf(post(app, noDownload, { event: "installed", version: "1.0.0" })),
      [403, "api key permission denied"],
    );
    assert.deepEqual(
      await errorOf(post(app, secret, { event: "installed", version: "1.0.0" }, {
        "x-install-id": "",
      })),
      [400, "X-Install-Id is required: 1 to 128 printable ASCII characters"],
    );
    assert.deepEqual(await errorOf(post(app, secret, "{not json")), [
      400,
      "the body is not valid JSON",
    ]);
    assert.deepEqual(await errorOf(post(app, secret, { event: "exploded", version: "1" })), [
      400,
      "event must be one of installed, download_failed, verification_failed, install_failed, crashed",
    ]);
    assert.deepEqual(await errorOf(post(app, secret, { event: "installed" })), [
      400,
      "version is required",
    ]);
    assert.deepEqual(
      await errorOf(post(app, secret, { event: "installed", version: "1", extra: 1 })),
      [400, 'unknown field "extra"'],
    );
    assert.deepEqual(
      await errorOf(post(app, secret, { event: "crashed", version: "1", reason: "x".repeat(201) })),
      [400, "reason must be a string of at most 200 characters"],
    );
    assert.deepEqual(
      await errorOf(
        post(app, secret, { event: "crashed", version: "1", reason: "x".repeat(3000) }),
      ),
      [413, "a report is at most 2048 bytes"],
    );
    assert.deepEqual(
      await errorOf(post(app, secret, "{}", { "content-type": "text/plain" })),
      [415, "send the report as application/json"],
    );
    const hidden = await app.request("/reports/v1/projects/nope", secret, {
      method: "POST",
      headers: { "content-type": "application/json", "x-install-id": "i" },
      body: JSON.stringify({ event: "installed", version: "1" }),
    });
    assert.deepEqual(await errorOf(hidden), [404, "resource not found"]);
    const get = await app.request("/reports/v1/projects/app", secret);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "POST");
    await get.body?.cancel();
  });

  await t.step("an install counts once per release and kind, whoever sends it again", async () => {
    // Offered 1.1.0 (the latest) first: a report counts only from an install offered it.
    await checkIn(app, secret, { slug: "app", installIds: ["install-1"] });
    for (const key of [secret, other, secret]) {
      await (await post(app, key, { event: "installed", version: "1.1.0" })).body?.cancel();
    }
    await app.reports.flush();
    await (await post(app, secret, { event: "installed", version: "1.1.0" })).body?.cancel();
    await (await post(app, secret, { event: "crashed", version: "1.1.0", reason: "segv\nat 0" }))
      .body?.cancel();
    await (await post(app, secret, { event: "installed", version: "9.9.9" })).body?.cancel();
    await app.reports.flush();
    const counts = await getReportCounts(app.store, v2.id);
    assert.equal(counts.installed, 1);
    assert.equal(counts.crash, 1);
    assert.deepEqual(
      (await getReportReasons(app.store, v2.id)).get("crash")?.map((r) => r.reason),
      [
        "segv at 0",
      ],
    );
    const series = await getReportSeries(app.store, v2.id, 0);
    assert.equal(series.length, 1);
    assert.equal(series[0].installed, 1);
    assert.equal(series[0].failed, 1);
  });

  await t.step("a release's longest version can be reported", async () => {
    const long = "2.".padEnd(128, "0");
    const release = await seedRelease(app, project.id, long);
    await checkIn(app, secret, { slug: "app", installIds: ["install-1"] });
    const res = await post(app, secret, { event: "installed", version: long });
    assert.equal(res.status, 202, JSON.stringify(await res.json()));
    await app.reports.flush();
    assert.equal((await getReportCounts(app.store, release.id)).installed, 1);
    const [status] = await errorOf(post(app, secret, { event: "installed", version: long + "0" }));
    assert.equal(status, 400);
  });

  await t.step("the reference client's report calls; coming back counts as returned", async () => {
    // Offered 1.1.0, then 1.0.0 (as after a rollback).
    setCacheRefreshMs(app.store, 0);
    for (const release of [v2, v1]) {
      await makeReleaseLatest(app.store, release.id);
      await checkIn(app, secret, { slug: "app", installIds: ["install-2"] });
    }
    const client = clientOf(app, secret, "install-2");
    assert.equal(
      await sendReport(client, { project: "app", event: "installed", version: "1.1.0" }),
      true,
    );
    assert.equal(
      await sendReport(client, {
        project: "app",
        event: "installed",
        version: "1.0.0",
        previousVersion: "1.1.0",
      }),
      true,
    );
    // Without an install id nothing is sent.
    assert.equal(
      await sendReport(clientOf(app, secret), {
        project: "app",
        event: "installed",
        version: "1.1.0",
      }),
      false,
    );
    await assert.rejects(
      sendReport(clientOf(app, secret, "x"), {
        project: "hidden2",
        event: "crashed",
        version: "1",
      }),
      /404/,
    );
    await app.reports.flush();
    assert.equal((await getReportCounts(app.store, v2.id)).installed, 2);
    const back = await getReportCounts(app.store, v1.id);
    assert.equal(back.installed, 1);
    assert.equal(back.returned, 1);
  });
});

Deno.test("a flood of 20,000 invented install ids counts nothing and stays within the documented bound", async () => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const release = await seedRelease(app, project.id, "1.0.0");
  const { secret: shipped } = await seedKey(app);
  const { secret: flooder } = await seedKey(app);
  // Real installs, offered the release, each from its own address.
  for (let i = 0; i < 50; i++) {
    const address = `10.0.0.${i}`;
    const headers = { "x-install-id": `real-${i}` };
    const check = await app.requestFrom(address, "/api/v1/projects/app/releases/latest", shipped, {
      headers,
    });
    await check.body?.cancel();
    await app.adoption.flush();
    await (await app.requestFrom(address, "/reports/v1/projects/app", shipped, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ event: "installed", version: "1.0.0" }),
    })).body?.cancel();
  }
  await app.reports.flush();
  const before = await getReportCounts(app.store, release.id);
  assert.equal(before.installed, 50);

  const flood = 20_000;
  for (let i = 0; i < flood; i += 500) {
    await Promise.all(
      Array.from({ length: 500 }, async (_, j) => {
        const res = await post(app, flooder, { event: "crashed", version: "1.0.0" }, {
          "x-install-id": `fake-${i + j}`,
        });
        assert.equal(res.status, 202);
        await res.body?.cancel();
      }),
    );
  }
  await app.reports.flush();
  const after = await getReportCounts(app.store, release.id);
  // Never offered the release: not one of them counts.
  assert.equal(after.installed, 50);
  assert.equal(after.crash, 0);
  // The bound: no marker for the flood, one sketch per release, kind and day.
  assert.equal(await countEntries(app.kv, "report_marker"), 50);
  assert.equal(await countEntries(app.kv, "report_sketch"), 1);
  const estimate = (await getReportEstimates(app.store, release.id)).crash;
  assert.ok(Math.abs(estimate - flood) < 0.05 * flood, `estimate ${estimate}`);
});

Deno.test("report markers are capped per client address and day", async () => {
  const cap = 20;
  await using app = await createTestApp({ reportsNewPerDay: cap });
  const project = await seedProject(app, { slug: "app" });
  const release = await seedRelease(app, project.id, "1.0.0");
  const { secret } = await seedKey(app);
  const installIds = Array.from({ length: 50 }, (_, i) => `shared-${i}`);
  await checkIn(app, secret, { slug: "app", installIds });
  // 50 offered installs behind one address: the cap's worth count, the rest are estimated.
  for (const installId of installIds) {
    await (await post(app, secret, { event: "installed", version: "1.0.0" }, {
      "x-install-id": installId,
    })).body?.cancel();
  }
  await app.reports.flush();
  assert.equal((await getReportCounts(app.store, release.id)).installed, cap);
  // Another address has a cap of its own.
  const res = await app.requestFrom("192.0.2.7", "/reports/v1/projects/app", secret, {
    method: "POST",
    headers: { "content-type": "application/json", "x-install-id": "shared-49" },
    body: JSON.stringify({ event: "installed", version: "1.0.0" }),
  });
  await res.body?.cancel();
  await app.reports.flush();
  assert.equal((await getReportCounts(app.store, release.id)).installed, cap + 1);
});
