/**
 * Three real server processes on one KV file and one radosgw bucket behave as
 * one service: an upload through A is downloaded through B (stream: 200,
 * Range) and C (redirect, followed; Range); a key disabled through A is
 * refused by B and C; kill -9 of A during an upload leaves no
 * release, and once A is back its start-up sweep leaves no part and no stray
 * object. (Sign-in, CSRF and the shared rate limit across instances:
 * multi_instance_test.ts.)
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ListMultipartUploadsCommand, ListPartsCommand } from "@aws-sdk/client-s3";
import { createClientKey } from "./data_dir_fixtures.ts";
import { AdminClient, httpSender, randomBytes } from "./admin_helpers.ts";
import { sha256, waitFor } from "./helpers.ts";
import { bucketContents, cephMissing, s3Client, startRgw } from "./rgw.ts";
import { makeDataTempDir, type ServerProcess, startServer } from "./server_process.ts";

const MiB = 1024 * 1024;

/** A client with `admin`'s session and CSRF token that talks to `server` only. */
function signedInAt(admin: AdminClient, server: ServerProcess): AdminClient {
  const client = new AdminClient(httpSender([server.baseUrl]));
  for (const [name, value] of admin.cookies) client.cookies.set(name, value);
  client.csrfToken = admin.csrfToken;
  return client;
}

Deno.test({
  name: "three instances on one KV file and one bucket behave as one service",
  ignore: cephMissing !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const rgw = await startRgw();
    const dataDir = await makeDataTempDir("multi-s3");
    const servers: ServerProcess[] = [];
    try {
      const bucket = await rgw.bucket({ prefix: "uds/", sweepAfterSeconds: 2 });
      const env = { ...rgw.env(bucket), APP_CACHE_REFRESH_MS: "100" };
      const start = (extra: Record<string, string> = {}) =>
        startServer(dataDir, { ...env, ...extra });
      let a = await start();
      const b = await start();
      const c = await start({ APP_DOWNLOAD_MODE: "redirect" });
      servers.push(a, b, c);
      const client = s3Client(bucket);

      const admin = new AdminClient(httpSender([a.baseUrl]));
      assert.equal((await admin.signIn("admin", "test-password-123")).status, 303);
      const created = await admin.post("/admin/projects", { name: "Desktop", slug: "desktop" });
      assert.equal(created.status, 303);
      await created.body?.cancel();
      await admin.page("/admin/projects/desktop");

      const bytes = randomBytes(9 * MiB + 5);
      let releaseId = 0;
      let secret = "";
      let keyId = 0;

      await t.step("upload through A, download through B and C", async () => {
        const uploaded = await admin.upload("/admin/projects/desktop/releases", [
          ["csrf_token", admin.csrfToken],
          ["version", "1.0.0"],
          ["file", new File([bytes as BlobPart], "desktop.zip", { type: "application/zip" })],
        ]);
        assert.equal(uploaded.status, 303, await uploaded.text());
        const made = await createClientKey(dataDir);
        secret = made.secret;
        keyId = made.apiKey.id;
        const auth = { authorization: `Bearer ${secret}` };
        await waitFor("the key on every instance", async () => {
          const answers = await Promise.all(servers.map(async (server) => {
            const res = await fetch(`${server.baseUrl}/api/v1/projects`, { headers: auth });
            await res.body?.cancel();
            return res.status;
          }));
          return answers.every((status) => status === 200);
        });
        const latest = await fetch(`${b.baseUrl}/api/v1/projects/desktop/releases/latest`, {
          headers: auth,
        });
        const body = await latest.json();
        assert.equal(body.release.version, "1.0.0");
        assert.equal(body.release.checksum_sha256, sha256(bytes));
        releaseId = body.release.id;
        const path = `/api/v1/releases/${releaseId}/download`;

        for (const server of [b, c]) {
          const whole = await fetch(server.baseUrl + path, { headers: auth });
          assert.equal(whole.status, 200, server.baseUrl);
          assert.match(whole.headers.get("content-disposition")!, /desktop\.zip/);
          assert.equal(sha256(new Uint8Array(await whole.arrayBuffer())), sha256(bytes));
          const part = await fetch(server.baseUrl + path, {
            headers: { ...auth, range: "bytes=4194304-4194403" },
          });
          assert.equal(part.status, 206, server.baseUrl);
          assert.deepEqual(
            new Uint8Array(await part.arrayBuffer()),
            bytes.subarray(4194304, 4194404),
          );
        }
        const redirect = await fetch(c.baseUrl + path, { headers: auth, redirect: "manual" });
        assert.equal(redirect.status, 302);
        assert.ok(redirect.headers.get("location")!.startsWith(`${bucket.endpoint}/`));
        await redirect.body?.cancel();
        const direct = await fetch(b.baseUrl + path, { headers: auth, redirect: "manual" });
        assert.equal(direct.status, 200, "B streams: no redirect");
        await direct.body?.cancel();
      });

      // The 100 ms bound itself is measured in multi_instance_test.ts; here, with the bucket
      // in use and three servers polled over HTTP on a loaded machine, a looser 1 s.
      await t.step("a key disabled through A is refused by B and C", async () => {
        const res = await signedInAt(admin, a).post(`/admin/api-keys/${keyId}/disable`);
        assert.equal(res.status, 303);
        await res.body?.cancel();
        const disabledAt = performance.now();
        const path = `/api/v1/releases/${releaseId}/download`;
        await Promise.all([b, c].map(async (server) => {
          await waitFor(`${server.baseUrl} to refuse`, async () => {
            const answer = await fetch(server.baseUrl + path, {
              headers: { authorization: `Bearer ${secret}` },
              redirect: "manual",
            });
            await answer.body?.cancel();
            return answer.status === 401;
          }, 2000);
          const ms = performance.now() - disabledAt;
          assert.ok(ms <= 1000, `${server.baseUrl} refused after ${ms.toFixed(1)} ms`);
        }));
      });

      await t.step(
        "kill -9 of A during an upload: no release; A's sweep leaves nothing",
        async () => {
          const boundary = "----uds-crash-test";
          const head = new TextEncoder().encode(
            `--${boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n` +
              `${admin.csrfToken}\r\n--${boundary}\r\nContent-Disposition: form-data; ` +
              `name="version"\r\n\r\n2.0.0\r\n--${boundary}\r\nContent-Disposition: form-data; ` +
              `name="file"; filename="crash.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
          );
          // 12 MiB of the file, then nothing more: the upload hangs with one part sent.
          const chunks = [head, ...Array.from({ length: 12 }, () => randomBytes(MiB))];
          const body = new ReadableStream<Uint8Array>({
            pull(controller) {
              const next = chunks.shift();
              if (next !== undefined) controller.enqueue(next);
              else return new Promise(() => {}); // stall until the server is gone
            },
          });
          const cookie = [...admin.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
          const upload = fetch(`${a.baseUrl}/admin/projects/desktop/releases`, {
            method: "POST",
            headers: { "content-type": `multipart/form-data; boundary=${boundary}`, cookie },
            body,
            duplex: "half",
          } as RequestInit).catch((error) => error);

          let uploadId = "";
          let key = "";
          await waitFor("a multipart upload with a part stored", async () => {
            const { Uploads: uploads = [] } = await client.send(
              new ListMultipartUploadsCommand({ Bucket: bucket.bucket }),
            );
            if (uploads.length === 0) return false;
            [uploadId, key] = [uploads[0].UploadId!, uploads[0].Key!];
            const parts = await client.send(
              new ListPartsCommand({ Bucket: bucket.bucket, Key: key, UploadId: uploadId }),
            );
            return (parts.Parts ?? []).length > 0;
          });
          const crashedAt = Date.now();
          await a.crash().catch((error) => {
            throw new Error(`${error} (exit code ${a.exitCode()})\n${a.output().slice(-3000)}`);
          });
          assert.ok((await upload) instanceof Error, "the upload's connection was cut");

          const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
          try {
            const versions: string[] = [];
            for await (const entry of kv.list<{ version: string }>({ prefix: ["releases"] })) {
              versions.push(entry.value.version);
            }
            assert.deepEqual(versions, ["1.0.0"], "no release for the cut upload");
          } finally {
            kv.close();
          }
          const left = await bucketContents(bucket);
          assert.equal(left.uploads.length, 1, "the crash left the multipart upload");

          // A comes back after APP_S3_SWEEP_AFTER_SECONDS (2 s); its start-up sweep cleans up.
          await new Promise((resolve) =>
            setTimeout(resolve, Math.max(0, crashedAt + 2500 - Date.now()))
          );
          a = await start();
          servers[0] = a;
          await waitFor(
            "the sweep",
            async () => (await bucketContents(bucket)).uploads.length === 0,
          );
          const after = await bucketContents(bucket);
          assert.equal(after.objects.length, 1, `only the release's object: ${after.objects}`);
          // The sweep of A at its start, or the one of B or C 6 s after theirs, whichever came
          // first; its log line follows the removal (and the log's 25 ms batch).
          await waitFor(
            "the sweep's log line",
            () =>
              Promise.resolve(
                servers.some((server) =>
                  /storage sweep removed .*"removed_uploads":1/.test(server.output())
                ),
              ),
          );

          const healthy = await fetch(`${a.baseUrl}/healthz`);
          assert.equal(healthy.status, 200);
          await healthy.body?.cancel();
        },
      );
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      await rgw.stop();
    }
  },
});
