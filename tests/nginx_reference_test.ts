/**
 * Differential downloads behind the reference nginx configurations
 * (deploy/nginx/instances.conf over HTTPS with HTTP/1.1 and HTTP/2,
 * deploy/nginx/compose.conf over HTTP), each run as shipped with only its
 * values marked `# CHANGE:` replaced (tests/nginx_reference.ts): a `Range`
 * header of electron-updater's 1,000 ranges, and of the service's bound of
 * MAX_RANGES, reaches the service and is answered part by part (nginx's
 * default header buffers answer 400 from about 390 such ranges).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Cleanup, freePort, which } from "../bench/process.ts";
import { MAX_RANGES } from "../src/client_api/byte_ranges.ts";
import { createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";
import { assertRangeParts } from "./multipart_ranges.ts";
import { makeTestCertificate, referenceConfig, startNginxWith } from "./nginx_reference.ts";

const nginx = which("nginx");
const openssl = which("openssl");
if (nginx === null || openssl === null) {
  console.warn("reference nginx test skipped: needs nginx and openssl (apt-get install nginx)");
}

/** `count` ranges spread over a file of `size` bytes, as an updater asks for changed blocks. */
function spreadRanges(count: number, size: number): [number, number][] {
  const step = Math.floor(size / count);
  return Array.from({ length: count }, (_, i) => [i * step + 7, i * step + 7 + 99]);
}

Deno.test({
  name: "many-range requests pass the reference nginx configs as shipped",
  ignore: nginx === null || openssl === null,
  sanitizeResources: false,
  async fn(t) {
    const cleanup = new Cleanup();
    await using app = await createTestApp();
    const served = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request, info) => app.app.fetch(request, { remoteAddr: info.remoteAddr }),
    );
    cleanup.add(() => served.shutdown());
    try {
      const project = await seedProject(app, { slug: "app" });
      // Large enough that the ranges' offsets have the digits of a real installer's.
      const bytes = crypto.getRandomValues(new Uint8Array(65536));
      const file = new Uint8Array(320 * bytes.length);
      for (let at = 0; at < file.length; at += bytes.length) file.set(bytes, at);
      const release = await seedRelease(app, project.id, "1.0.0", file, {
        filename: "App Setup.exe",
        content_type: "application/x-msdownload",
      });
      const { secret } = await seedKey(app);
      const path = `/api/v1/releases/${release.id}/download`;
      const upstream = `127.0.0.1:${served.addr.port}`;

      const start = async (
        name: string,
        conf: string,
        baseUrl: string,
        client?: Deno.HttpClient,
      ) => {
        const workDir = await Deno.makeTempDir({ prefix: "uds-nginx-ref-" });
        cleanup.add(() => Deno.remove(workDir, { recursive: true }));
        const proxy = await startNginxWith(nginx!, { workDir, conf, file: name });
        cleanup.add(async () => {
          proxy.kill("SIGQUIT");
          await proxy.status;
        });
        const deadline = Date.now() + 10_000;
        while (true) {
          const up = await fetch(`${baseUrl}/healthz`, { client }).then(
            (res) => res.body?.cancel().then(() => true),
            () => false,
          );
          if (up) return workDir;
          if (Date.now() > deadline) {
            throw new Error(
              `nginx did not start: ${await Deno.readTextFile(join(workDir, "error.log"))}`,
            );
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };

      const manyRanges = async (baseUrl: string, client?: Deno.HttpClient) => {
        for (const count of [1000, MAX_RANGES]) {
          const ranges = spreadRanges(count, file.length);
          const header = `bytes=${ranges.map(([a, b]) => `${a}-${b}`).join(",")}`;
          assert.ok(header.length > 8192, "longer than nginx's default header buffer");
          const res = await fetch(baseUrl + path, {
            client,
            headers: { authorization: `Bearer ${secret}`, range: header },
          });
          await assertRangeParts(res, {
            file,
            ranges,
            contentType: "application/x-msdownload",
          });
        }
      };

      await t.step("instances.conf over HTTPS, HTTP/1.1 and HTTP/2", async () => {
        const workDir = await Deno.makeTempDir({ prefix: "uds-nginx-cert-" });
        cleanup.add(() => Deno.remove(workDir, { recursive: true }));
        const { cert, key, ca } = await makeTestCertificate(openssl!, workDir);
        const port = freePort();
        const conf = await referenceConfig("instances.conf", [
          ["listen 443", `listen 127.0.0.1:${port}`],
          ["/etc/letsencrypt/live/updates.example.com/fullchain.pem", cert],
          ["/etc/letsencrypt/live/updates.example.com/privkey.pem", key],
          ["127.0.0.1:8001", upstream],
          ["127.0.0.1:8002", upstream],
          ["127.0.0.1:8003", upstream],
        ]);
        const caCerts = [await Deno.readTextFile(ca)];
        const http1 = Deno.createHttpClient({ caCerts, http1: true, http2: false });
        const http2 = Deno.createHttpClient({ caCerts, http1: false, http2: true });
        cleanup.add(() => http1.close());
        cleanup.add(() => http2.close());
        const baseUrl = `https://localhost:${port}`;
        await start("instances.conf", conf, baseUrl, http1);
        await manyRanges(baseUrl, http1);
        await manyRanges(baseUrl, http2);
      });

      await t.step("compose.conf over HTTP", async () => {
        const port = freePort();
        const conf = await referenceConfig("compose.conf", [
          ["listen 80", `listen 127.0.0.1:${port}`],
          ["app:8000", upstream],
        ]);
        const baseUrl = `http://127.0.0.1:${port}`;
        await start("compose.conf", conf, baseUrl);
        await manyRanges(baseUrl);
      });
    } finally {
      await cleanup.run();
    }
  },
});
