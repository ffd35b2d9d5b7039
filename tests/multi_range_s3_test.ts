/**
 * Several byte ranges from the s3 backend (radosgw), in `stream` and
 * `redirect` mode: a bucket answers one range per GET, so the service streams
 * the multipart answer itself in both (never a redirect), reading close
 * ascending ranges together (src/storage/spans.ts).
 */
import { createS3Store } from "../src/storage/s3_store.ts";
import { createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";
import { rgwTest } from "./rgw.ts";
import { assertRangeParts } from "./multipart_ranges.ts";

rgwTest("multi-range downloads from s3", async (t, rgw) => {
  for (const downloadMode of ["stream", "redirect"] as const) {
    await t.step(`${downloadMode}: byte for byte, in the order asked`, async () => {
      const artifacts = await createS3Store(await rgw.bucket(), 64 * 1024 * 1024);
      await using app = await createTestApp({ storage: "s3", downloadMode }, { artifacts });
      const project = await seedProject(app, { slug: "app" });
      const file = Uint8Array.from(
        { length: 3_000_000 },
        (_, i) => (i * 131 + (i >> 10)) & 0xff,
      );
      const release = await seedRelease(app, project.id, "1.0.0", file, {
        filename: "App Setup 1.0.0.exe",
        content_type: "application/octet-stream",
      });
      const { secret } = await seedKey(app);
      const get = (range: string) =>
        app.request(`/api/v1/releases/${release.id}/download`, secret, {
          headers: { range },
        });
      const check = async (ranges: [number, number][]) =>
        await assertRangeParts(
          await get("bytes=" + ranges.map(([a, b]) => `${a}-${b}`).join(",")),
          { file, ranges, contentType: "application/octet-stream" },
        );
      // adjacent, overlapping, reversed, far apart (separate reads of the bucket)
      await check([[0, 9], [10, 19], [15, 30], [2_900_000, 2_999_999], [5, 5]]);
      // 1,000 ascending ranges, as electron-updater sends them
      await check(
        Array.from({ length: 1000 }, (_, i) => [i * 2900, i * 2900 + 99] as [number, number]),
      );
    });
  }
});
