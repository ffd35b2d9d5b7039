/**
 * End to end: `deno task start` as a real process (tests/server_process.ts), data in a
 * temporary dir, fixtures written through the store layer into the same KV file, and the client
 * flow of ../shared/spec/client-api.md "1. What the service does" walked over HTTP.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { createFsStore, publishRelease } from "../src/storage/mod.ts";
import { createApiKey } from "../src/credentials/api_keys.ts";
import { createProject } from "../src/projects/projects.ts";
import { createStore } from "../src/kv/store.ts";
import { makeDataTempDir, startServer } from "./server_process.ts";

Deno.test("e2e: deno task start serves the client flow of spec section 1", async (t) => {
  const dataDir = await makeDataTempDir("e2e");
  await using server = await startServer(dataDir, { APP_SERVICE_NAME: "E2E Updates" });
  let kv: Deno.Kv | undefined;
  try {
    const get = (path: string, key?: string) =>
      fetch(server.baseUrl + path, {
        headers: key ? { authorization: `Bearer ${key}` } : {},
      });

    await t.step("/healthz answers 200 within a few seconds", async () => {
      const res = await get("/healthz");
      const body = await res.json();
      assert.equal(res.status, 200);
      assert.equal(body.status, "ok");
      assert.equal(body.database, "ok");
      assert.equal(body.service, "E2E Updates");
    });

    // 1. The administrator's part, through the store layer on the server's own KV file.
    kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
    const store = createStore(kv);
    const project = await createProject(store, { name: "Desktop", slug: "desktop" });
    const artifacts = createFsStore(join(dataDir, "artifacts"));
    const oldBytes = new TextEncoder().encode("old build");
    await publishRelease(store, artifacts, {
      release: { project_id: project.id, version: "1.0.0", filename: "desktop-1.0.0.zip" },
      source: ReadableStream.from([oldBytes]),
      maxBytes: 1024,
    });
    const newBytes = new TextEncoder().encode("new build ".repeat(1000));
    const release = await publishRelease(store, artifacts, {
      release: {
        project_id: project.id,
        version: "1.1.0",
        build: "77",
        filename: "desktop-1.1.0.zip",
        content_type: "application/zip",
      },
      source: ReadableStream.from([newBytes.subarray(0, 4000), newBytes.subarray(4000)]),
      maxBytes: 1024 * 1024,
    });
    const { secret } = await createApiKey(store, {
      name: "desktop client",
      can_download: true,
      scope_mode: "project_allow_list",
      project_ids: [project.id],
    });

    let latest: { release: { version: string; download_url: string; [k: string]: unknown } };
    await t.step("2. the client asks for the latest release", async () => {
      const res = await get("/api/v1/projects/desktop/releases/latest", secret);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
      assert.equal(res.headers.get("cache-control"), "no-store, private, max-age=0");
      latest = await res.json();
      assert.equal(latest.release.id, release.id);
    });

    await t.step("3. it compares release.version with its own", () => {
      assert.notEqual(latest.release.version, "1.0.0", "a newer version than the client's");
    });

    await t.step("4-5. it downloads download_url and verifies checksum and size", async () => {
      const res = await get(latest.release.download_url, secret);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/zip");
      assert.equal(
        res.headers.get("content-disposition"),
        "attachment; filename=desktop-1.1.0.zip",
      );
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      const bytes = new Uint8Array(await res.arrayBuffer());
      assert.equal(bytes.byteLength, latest.release.size_bytes);
      assert.equal(
        createHash("sha256").update(bytes).digest("hex"),
        latest.release.checksum_sha256,
      );
      assert.deepEqual(bytes, newBytes);
    });

    await t.step("the metadata_url and the project list agree", async () => {
      const meta = await (await get(`/api/v1/releases/${release.id}`, secret)).json();
      assert.deepEqual(meta, latest);
      const list = await (await get("/api/v1/projects", secret)).json();
      assert.deepEqual(list.projects.map((p: { slug: string }) => p.slug), ["desktop"]);
    });

    await t.step("without the key the download is refused", async () => {
      const res = await get(latest.release.download_url);
      assert.equal(res.status, 401);
      assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="update-distribution"');
      assert.deepEqual(await res.json(), { error: "missing bearer api key" });
    });
  } finally {
    kv?.close();
    const status = await server.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    assert.ok(status.success || status.signal === "SIGTERM", `server exit: ${server.output()}`);
  }
});
