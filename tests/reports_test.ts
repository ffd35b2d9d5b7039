/**
 * Install reports (docs/reports.md): the route's checks and errors, counting
 * once per install id, release and kind, the reference client's calls, and
 * a flood of invented install ids staying within the documented bound.
 */
import assert from "node:assert/strict";
import { sendReport } from "../client/update_client.ts";
import {
  getReportCounts,
  getReportEstimates,
  getReportReasons,
  getReportSeries,
} from "../src/store/reports.ts";
import { createTestApp, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";

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
    const res = await post(app, secret, { event: "installed", version: long });
    assert.equal(res.status, 202, JSON.stringify(await res.json()));
    await app.reports.flush();
    assert.equal((await getReportCounts(app.store, release.id)).installed, 1);
    const [status] = await errorOf(post(app, secret, { event: "installed", version: long + "0" }));
    assert.equal(status, 400);
  });

  await t.step("the reference client's report calls; coming back counts as returned", async () => {
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

Deno.test("a flood of 100,000 invented install ids stays within the documented bound", async () => {
  const cap = 200;
  await using app = await createTestApp({ reportsNewPerDay: cap });
  const project = await seedProject(app, { slug: "app" });
  const release = await seedRelease(app, project.id, "1.0.0");
  const { secret: shipped } = await seedKey(app);
  const { secret: flooder } = await seedKey(app);
  // Real installs on their own key.
  for (let i = 0; i < 50; i++) {
    await (await post(app, shipped, { event: "installed", version: "1.0.0" }, {
      "x-install-id": `real-${i}`,
    })).body?.cancel();
  }
  await app.reports.flush();
  const before = await getReportCounts(app.store, release.id);
  assert.equal(before.installed, 50);

  const flood = 100_000;
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
  // Real installs' figures unchanged; the flood counted exactly only up to the cap.
  assert.equal(after.installed, 50);
  assert.equal(after.crash, cap);
  // The bound: markers ≤ cap per key and day (+ the real ones), one sketch per release, kind, day.
  assert.equal(await countEntries(app.kv, "report_marker"), 50 + cap);
  assert.equal(await countEntries(app.kv, "report_sketch"), 1);
  const estimate = (await getReportEstimates(app.store, release.id)).crash;
  assert.ok(Math.abs(estimate - (flood - cap)) < 0.05 * flood, `estimate ${estimate}`);
});
