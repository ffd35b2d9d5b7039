/**
 * APP_DOWNLOAD_MODE=x-accel behind a real nginx (the location of
 * docs/operators.md): the service checks the key and answers with
 * X-Accel-Redirect only; nginx sends the file with sendfile, with our ETag,
 * Content-Disposition, Range and If-Range; the internal location cannot be
 * reached from outside; a refused key never gets a path. A request that reaches
 * the instance directly (without nginx's X-Accel-Secret) gets the file streamed,
 * never an empty 200 counted as a download.
 */
import assert from "node:assert/strict";
import { Cleanup, startNginx, which, xAccelServer } from "../bench/process.ts";
import { MAX_RANGES } from "../src/client_api/byte_ranges.ts";
import { assertRangeParts } from "./multipart_ranges.ts";
import { getDownloadCounts } from "../src/releases/releases.ts";
import { createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";

const nginx = which("nginx");
if (nginx === null) {
  console.warn("x-accel test skipped: nginx is not installed (apt-get install nginx)");
}

// Signed answers on and off: nginx must pass the download's signature headers on too.
for (const signing of [false, true]) {
  Deno.test({
    name: `x-accel downloads through nginx${signing ? ", signed answers" : ""}`,
    ignore: nginx === null,
    async fn(t) {
      const secret = "test-x-accel-secret-0123456789";
      const app = await createTestApp({ downloadMode: "x-accel", xAccelSecret: secret, signing });
      const fromNginx = { headers: { "x-accel-secret": secret } };
      const cleanup = new Cleanup();
      const served = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen: () => {} },
        (request, info) => app.app.fetch(request, { remoteAddr: info.remoteAddr }),
      );
      try {
        const workDir = await Deno.makeTempDir({ prefix: "uds-nginx-" });
        cleanup.add(() => Deno.remove(workDir, { recursive: true }));
        const proxy = await startNginx(
          nginx!,
          workDir,
          workDir,
          cleanup,
          xAccelServer(served.addr.port, app.config.artifactsDir, secret),
        );
        const project = await seedProject(app, { slug: "app" });
        const bytes = crypto.getRandomValues(new Uint8Array(60_000));
        const release = await seedRelease(app, project.id, "1.0", bytes, {
          filename: "App Setup.exe",
          content_type: "application/x-msdownload",
        });
        const { secret: key } = await seedKey(app);
        const { secret: noDownload } = await seedKey(app, { can_download: false });
        const url = `${proxy.baseUrl}/api/v1/releases/${release.id}/download`;
        const auth = (extra: Record<string, string> = {}) => ({
          headers: { authorization: `Bearer ${key}`, ...extra },
        });
        const count = async () =>
          (await getDownloadCounts(app.store, [release.id])).get(release.id) ?? 0;
        const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

        await t.step("to nginx the service answers with X-Accel-Redirect only", async () => {
          const direct = await app.request(
            `/api/v1/releases/${release.id}/download`,
            key,
            fromNginx,
          );
          assert.equal(direct.status, 200);
          assert.equal(
            direct.headers.get("x-accel-redirect"),
            `/_uds_artifacts/${release.storage_key}`,
          );
          assert.equal(await direct.text(), "");
        });

        await t.step("nginx sends the file with the headers the service would send", async () => {
          const res = await fetch(url, auth());
          assert.equal(res.status, 200);
          assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes);
          // Every header of the service's own answer reaches the client (nginx adds a few).
          const direct = await app.request(
            `/api/v1/releases/${release.id}/download`,
            key,
            fromNginx,
          );
          await direct.body?.cancel();
          direct.headers.delete("x-accel-redirect");
          for (const [name, value] of direct.headers) {
            // A signature's date may be a second later than the other answer's.
            if (/^uds-signature(-date|-expires)?$/.test(name)) continue;
            assert.equal(res.headers.get(name), value, name);
          }
          if (signing) {
            for (const name of ["uds-signature-date", "uds-signature-expires", "uds-signature"]) {
              assert.ok(res.headers.get(name), `${name} through nginx`);
            }
            assert.equal(res.headers.get("uds-content-sha256"), release.checksum_sha256);
          }
          assert.equal(res.headers.get("etag"), `"${release.checksum_sha256}"`);
          assert.equal(res.headers.get("last-modified"), null);
          assert.equal(res.headers.get("content-security-policy"), "sandbox");
        });

        await t.step("Range and If-Range by nginx, judged by our ETag", async () => {
          const part = await fetch(url, auth({ range: "bytes=10-19" }));
          assert.equal(part.status, 206);
          assert.equal(part.headers.get("content-range"), `bytes 10-19/${bytes.length}`);
          assert.deepEqual(new Uint8Array(await part.arrayBuffer()), bytes.subarray(10, 20));
          const current = await fetch(
            url,
            auth({ range: "bytes=10-19", "if-range": `"${release.checksum_sha256}"` }),
          );
          assert.equal(current.status, 206);
          await current.body?.cancel();
          const stale = await fetch(url, auth({ range: "bytes=10-19", "if-range": '"older"' }));
          assert.equal(stale.status, 200);
          assert.deepEqual(new Uint8Array(await stale.arrayBuffer()), bytes);
          const beyond = await fetch(url, auth({ range: "bytes=999999-" }));
          assert.equal(beyond.status, 416);
          assert.deepEqual(await beyond.json(), { error: "range not satisfiable" });
          const head = await fetch(url, { method: "HEAD", ...auth() });
          assert.equal(head.status, 200);
          assert.equal(head.headers.get("content-length"), String(bytes.length));
          assert.equal(head.headers.get("x-accel-redirect"), null);
        });

        await t.step("several ranges: nginx answers multipart/byteranges, in order", async () => {
          const ranges: [number, number][] = [[0, 9], [10, 19], [15, 30], [50_000, 59_999], [5, 5]];
          const header = (list: [number, number][]) =>
            "bytes=" + list.map(([a, b]) => `${a}-${b}`).join(", ");
          const contentType = "application/x-msdownload";
          await assertRangeParts(await fetch(url, auth({ range: header(ranges) })), {
            file: bytes,
            ranges,
            contentType,
          });
          const many = Array.from({ length: 1000 }, (_, i) =>
            [i * 59, i * 59 + 9] as [
              number,
              number,
            ]);
          await assertRangeParts(await fetch(url, auth({ range: header(many) })), {
            file: bytes,
            ranges: many,
            contentType,
          });
          // Past max_ranges (= MAX_RANGES) nginx sends the whole file, as the service does.
          const over = Array.from({ length: MAX_RANGES + 1 }, (_, i) => [i, i] as [number, number]);
          const whole = await fetch(url, auth({ range: header(over) }));
          assert.equal(whole.status, 200);
          assert.deepEqual(new Uint8Array(await whole.arrayBuffer()), bytes);
        });

        await t.step("the internal location is closed; refused keys get no path", async () => {
          const inside = await fetch(`${proxy.baseUrl}/_uds_artifacts/${release.storage_key}`);
          assert.equal(inside.status, 404);
          await inside.body?.cancel();
          for (const [key, status] of [[noDownload, 403], ["uds_wrong", 401]] as const) {
            const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
            assert.equal(res.status, status);
            assert.equal(res.headers.get("x-accel-redirect"), null);
            assert.match(res.headers.get("content-type")!, /application\/json/);
            await res.body?.cancel();
          }
        });

        await t.step(
          "an instance reached directly streams the file, never an empty 200",
          async () => {
            const direct =
              `http://127.0.0.1:${served.addr.port}/api/v1/releases/${release.id}/download`;
            const before = await count();
            const wrong = { "x-accel-secret": "wrong-secret-0123456789" };
            for (const extra of [{}, wrong] as Record<string, string>[]) {
              const res = await fetch(direct, auth(extra));
              assert.equal(res.status, 200);
              assert.equal(res.headers.get("x-accel-redirect"), null);
              assert.equal(res.headers.get("content-length"), String(bytes.length));
              assert.equal(res.headers.get("etag"), `"${release.checksum_sha256}"`);
              assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes);
            }
            const part = await fetch(direct, auth({ range: "bytes=10-19" }));
            assert.equal(part.status, 206);
            assert.deepEqual(new Uint8Array(await part.arrayBuffer()), bytes.subarray(10, 20));
            await settled();
            assert.equal(await count() - before, 2, "the two whole files sent, nothing else");
            // The secret is what nginx sends: with it, the empty answer for nginx (counted there).
            const handed = await fetch(direct, auth(fromNginx.headers));
            assert.ok(handed.headers.get("x-accel-redirect"));
            await handed.body?.cancel();
          },
        );

        await t.step("whole-file answers count as downloads; ranges and HEAD do not", async () => {
          const before = await count();
          for (
            const extra of [{}, { range: "bytes=0-9" }, { range: "bytes=0-" }] as Record<
              string,
              string
            >[]
          ) {
            await (await fetch(url, auth(extra))).arrayBuffer();
          }
          await (await fetch(url, { method: "HEAD", ...auth() })).body?.cancel();
          await settled();
          const after = await count();
          assert.equal(after - before, 2, "the whole GET and bytes=0- count");
        });
      } finally {
        await cleanup.run();
        await served.shutdown();
        await app.close();
      }
    },
  });
}
