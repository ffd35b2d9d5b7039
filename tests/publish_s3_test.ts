/**
 * The publishing API end to end against s3: `deno task start` as a real process
 * (tests/server_process.ts) with `APP_STORAGE=s3` on a real radosgw (tests/rgw.ts). A pipeline
 * uploads through the API (a single-part and a multipart upload), the bytes land in the bucket and
 * are served to clients; a SHA-256 mismatch, a file over the limit and a refused token leave the
 * bucket as it was (no object, no unfinished multipart upload); a draft stays hidden.
 * Skipped, with one line, when Ceph is not installed.
 */
import assert from "node:assert/strict";
import { randomBytes } from "./admin_helpers.ts";
import { createClientKey } from "./data_dir_fixtures.ts";
import { sha256 } from "./helpers.ts";
import { setUpPipeline, uploadForm } from "./publish_helpers.ts";
import { bucketContents, cephMissing, startRgw } from "./rgw.ts";
import { makeDataTempDir, startServer } from "./server_process.ts";

const MiB = 1024 * 1024;

Deno.test({
  name: "e2e: a pipeline publishes through the publishing API (s3, radosgw)",
  ignore: cephMissing !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const rgw = await startRgw();
    const dataDir = await makeDataTempDir("publish-s3");
    try {
      const s3 = await rgw.bucket({ prefix: "uds/" });
      await using server = await startServer(dataDir, {
        ...rgw.env(s3),
        APP_MAX_UPLOAD_BYTES: String(64 * MiB),
      });
      const base = server.baseUrl;
      const { call, token } = await setUpPipeline(base, "s3 pipeline");
      const upload = (fields: Record<string, string>, bytes: Uint8Array, bearer = token) =>
        call("/projects/desktop/releases", {
          method: "POST",
          body: uploadForm(fields, { bytes, name: `desktop-${fields.version}.zip` }),
        }, bearer);
      const clientKey = (await createClientKey(dataDir)).secret;
      const client = (path: string) =>
        fetch(base + path, { headers: { authorization: `Bearer ${clientKey}` } });
      const versions = async () =>
        (await (await call("/projects/desktop/releases")).json()).releases.map((
          r: { version: string },
        ) => r.version);

      for (
        const [label, size, version] of [["single-part", 3 * MiB, "1.0.0"], [
          "multipart (3 parts)",
          20 * MiB + 5,
          "1.1.0",
        ]] as const
      ) {
        await t.step(`a ${label} upload: 201, one object in the bucket, served`, async () => {
          const before = await bucketContents(s3);
          const bytes = randomBytes(size);
          const res = await upload({ version, sha256: sha256(bytes) }, bytes);
          const body = await res.json();
          assert.equal(res.status, 201, JSON.stringify(body));
          assert.equal(body.release.checksum_sha256, sha256(bytes));
          assert.equal(body.release.size_bytes, size);
          assert.equal(body.release.is_latest, true);
          const after = await bucketContents(s3);
          assert.equal(after.objects.length, before.objects.length + 1);
          assert.deepEqual(after.uploads, []);
          const download = await client(body.release.download_url);
          assert.equal(download.status, 200);
          assert.equal(sha256(new Uint8Array(await download.arrayBuffer())), sha256(bytes));
        });
      }

      for (const [label, size] of [["single-part", MiB], ["multipart", 20 * MiB]] as const) {
        await t.step(`a SHA-256 mismatch (${label}): 422, nothing in the bucket`, async () => {
          const before = await bucketContents(s3);
          const res = await upload({ version: "9.9.9", sha256: "f".repeat(64) }, randomBytes(size));
          assert.equal(res.status, 422);
          assert.match((await res.json()).error, /sha256 mismatch/);
          assert.deepEqual(await bucketContents(s3), before);
          assert.deepEqual(await versions(), ["1.1.0", "1.0.0"]);
        });
      }

      await t.step("over APP_MAX_UPLOAD_BYTES: 413 JSON, nothing in the bucket", async () => {
        const before = await bucketContents(s3);
        const res = await upload({ version: "9.9.8" }, randomBytes(64 * MiB + 1));
        assert.equal(res.status, 413);
        assert.ok(typeof (await res.json()).error === "string");
        assert.deepEqual(await bucketContents(s3), before);
        assert.deepEqual(await versions(), ["1.1.0", "1.0.0"]);
      });

      await t.step("a client key: 401 JSON, nothing in the bucket", async () => {
        const before = await bucketContents(s3);
        const res = await upload({ version: "9.9.7" }, randomBytes(MiB), clientKey);
        assert.equal(res.status, 401);
        assert.match((await res.json()).error, /client API key/);
        assert.deepEqual(await bucketContents(s3), before);
      });

      await t.step("a draft is stored but hidden from /api/v1 until published", async () => {
        const bytes = randomBytes(MiB);
        const res = await upload({ version: "2.0.0", draft: "true" }, bytes);
        const draft = (await res.json()).release;
        assert.equal(res.status, 201);
        assert.equal(draft.state, "draft");
        const hidden = await client(`/api/v1/releases/${draft.id}`);
        assert.equal(hidden.status, 404);
        await hidden.body?.cancel();
        const published = await call(`/releases/${draft.id}/publish`, { method: "POST" });
        assert.equal((await published.json()).release.is_latest, true);
        const latest = await (await client("/api/v1/projects/desktop/releases/latest")).json();
        assert.equal(latest.release.id, draft.id);
        const download = await client(latest.release.download_url);
        assert.equal(sha256(new Uint8Array(await download.arrayBuffer())), sha256(bytes));
      });
      await server.stop();
    } finally {
      await rgw.stop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
