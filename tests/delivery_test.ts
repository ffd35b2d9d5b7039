/**
 * What differential downloads save (src/stats/delivery.ts): per release the
 * bytes answered for its file and block map and what whole downloads would
 * have cost (a whole download, or the latest release's block map, which
 * starts a differential update, stands for the file's size); the Prometheus
 * counters; the release page and the project page's line for the month.
 */
import assert from "node:assert/strict";
import { runBlockMapBuild } from "../src/blockmap/background.ts";
import { getProjectDeliveryMonth, getReleaseDelivery, utcMonth } from "../src/stats/delivery.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { seedKey, seedProject, seedRelease, testMetrics, waitFor } from "./helpers.ts";

/** The value of an unlabelled series in the metrics text. */
async function series(name: string): Promise<number> {
  const line = (await testMetrics.render()).split("\n").find((l) => l.startsWith(`${name} `));
  return Number(line?.split(" ")[1] ?? 0);
}

Deno.test("differential downloads: bytes sent against whole downloads, per release and month", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const size = 2_000_000;
  const file = (seed: number) =>
    Uint8Array.from({ length: size }, (_, i) => (i * seed) >> 3 & 0xff);
  const v1 = await seedRelease(app, project.id, "1.0.0", file(7), { filename: "App 1.0.0.exe" });
  const v2 = await seedRelease(app, project.id, "1.0.1", file(11), { filename: "App 1.0.1.exe" });
  await runBlockMapBuild({ store: app.store, artifacts: app.artifacts, report: () => {} });
  const { secret } = await seedKey(app);
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await app.request(path, secret, { headers });
    const bytes = (await res.arrayBuffer()).byteLength;
    assert.ok(res.status < 300, `${path}: ${res.status}`);
    return bytes;
  };
  const served = { before: await series("uds_delivered_bytes_total") };
  const full = { before: await series("uds_full_download_equivalent_bytes_total") };

  let sent = 0;
  await t.step("a whole download, and an update as electron-updater makes it", async () => {
    sent += await get(`/api/v1/releases/${v2.id}/download`);
    const base = "/feeds/electron/desktop/files";
    const newMap = await get(`${base}/1.0.1/App%201.0.1.exe.blockmap`);
    sent += newMap;
    const oldMap = await get(`${base}/1.0.0/App%201.0.0.exe.blockmap`);
    sent += await get(`${base}/1.0.1/App%201.0.1.exe`, { range: "bytes=0-99,1000-1999" });
    // The sums are written after the answer (src/stats/delivery.ts).
    await waitFor("the delivered bytes' sums", async () => {
      const [newer, older] = await Promise.all(
        [v2.id, v1.id].map((id) => getReleaseDelivery(app.store, id)),
      );
      return newer.served >= sent && newer.full >= 2 * size && older.served >= oldMap &&
        await series("uds_delivered_bytes_total") - served.before >= sent + oldMap &&
        await series("uds_full_download_equivalent_bytes_total") - full.before >= 2 * size;
    });
    assert.deepEqual(await getReleaseDelivery(app.store, v2.id), { served: sent, full: 2 * size });
    assert.deepEqual(await getReleaseDelivery(app.store, v1.id), { served: oldMap, full: 0 });
    assert.equal(await series("uds_delivered_bytes_total") - served.before, sent + oldMap);
    assert.equal(await series("uds_full_download_equivalent_bytes_total") - full.before, 2 * size);
  });

  await t.step(
    "a whole download after a differential attempt is its fallback: counted once",
    async () => {
      const before = await getReleaseDelivery(app.store, v2.id);
      const fullBefore = await series("uds_full_download_equivalent_bytes_total");
      const base = "/feeds/electron/desktop/files";
      const staging = { "x-user-staging-id": "3f0b5a7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b" };
      let sentV2 = await get(`${base}/1.0.1/App%201.0.1.exe.blockmap`, staging);
      await get(`${base}/1.0.0/App%201.0.0.exe.blockmap`, staging);
      // The differential update failed: electron-updater downloads the whole file.
      sentV2 += await get(`${base}/1.0.1/App%201.0.1.exe`, staging);
      await waitFor("the fallback's sums", async () => {
        const now = await getReleaseDelivery(app.store, v2.id);
        return now.full - before.full >= size && now.served - before.served >= sentV2 &&
          await series("uds_full_download_equivalent_bytes_total") - fullBefore >= size;
      });
      const after = await getReleaseDelivery(app.store, v2.id);
      assert.equal(after.full - before.full, size, "one update, one whole download's worth");
      assert.equal(after.served - before.served, sentV2, "the bytes sent all count");
      assert.equal(await series("uds_full_download_equivalent_bytes_total") - fullBefore, size);
      // Another install's whole download is an update of its own.
      await get(`/api/v1/releases/${v2.id}/download`, { "x-install-id": "another-install-0001" });
      await waitFor(
        "the other install's sums",
        async () => (await getReleaseDelivery(app.store, v2.id)).full - after.full >= size,
      );
      assert.equal((await getReleaseDelivery(app.store, v2.id)).full - after.full, size);
    },
  );

  await t.step("the release page and the project page's line for the month", async () => {
    const admin = await signedInClient(app);
    const release = (await admin.page(`/admin/releases/${v2.id}`)).html;
    assert.match(release, /data-delivery/);
    const { html } = await admin.page("/admin/projects/desktop/releases");
    // Sizes as everywhere in the admin (admin/format.ts): binary units, one decimal below 100.
    const month = await getProjectDeliveryMonth(app.store, project.id, utcMonth(new Date()));
    assert.equal(month.full, 4 * size);
    assert.match(
      html,
      /Differential downloads saved \d+\.\d MiB this month \(\d+\.\d MiB sent instead of 7\.6 MiB\)/,
    );
    assert.match(release, /\d+\.\d MiB \(whole downloads would have cost 7\.6 MiB\)/);
    assert.match(html, /data-differential-savings/);
    assert.doesNotMatch(html + release, /\d GB\b/);
  });
});
