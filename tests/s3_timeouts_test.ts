/**
 * Issue 22 item 6 (S3 timeouts) and item 4 in redirect mode, end to end: the
 * real server on a real radosgw. With radosgw stopped (SIGSTOP: connections
 * are accepted by the kernel and never answered) a download answers 503 with
 * a JSON error and an upload shows the form again with 503, both within the
 * bound APP_S3_TIMEOUT_SECONDS sets; /healthz/details shows `storage: unavailable`
 * (status and code still follow the database, as the contract says) and
 * /metrics `uds_storage_up 0`; once radosgw runs again, all is back.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { releaseKey } from "../src/kv/keys.ts";
import type { Release } from "../src/releases/types.ts";
import { AdminClient, httpSender } from "./admin_helpers.ts";
import { createClientKey } from "./data_dir_fixtures.ts";
import { cephMissing, type Rgw, rgwOfFile } from "./rgw.ts";
import { makeDataTempDir, type ServerProcess, startServer } from "./server_process.ts";

const METRICS_TOKEN = "metrics-token-0123456789";
/** Both tests take buckets of one radosgw; the first stops and resumes it. */
const rgwOfThisFile = rgwOfFile();
/** APP_S3_TIMEOUT_SECONDS=1: three attempts and the SDK's backoff stay well under this. */
const BOUND_MS = 8_000;

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

async function setUp(server: ServerProcess, dataDir: string) {
  const admin = new AdminClient(httpSender([server.baseUrl]));
  assert.equal((await admin.signIn("admin", "test-password-123")).status, 303);
  const created = await admin.post("/admin/projects", { name: "App", slug: "app" });
  assert.equal(created.status, 303);
  await created.body?.cancel();
  await admin.page("/admin/projects/app");
  const uploaded = await admin.upload("/admin/projects/app/releases", [
    ["csrf_token", admin.csrfToken],
    ["version", "1.0.0"],
    ["file", new File(["artifact bytes"], "app.zip", { type: "application/zip" })],
  ]);
  assert.equal(uploaded.status, 303, await uploaded.text());
  const { secret } = await createClientKey(dataDir);
  return { admin, auth: { authorization: `Bearer ${secret}` } };
}

async function metric(server: ServerProcess, name: string): Promise<number> {
  const res = await fetch(`${server.baseUrl}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  const text = await res.text();
  const value = new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1];
  assert.ok(value !== undefined, `${name} in\n${text}`);
  return Number(value);
}

/** The health details (docs/operators.md "Health details"), where `storage` is shown. */
async function health(server: ServerProcess) {
  const res = await fetch(`${server.baseUrl}/healthz/details`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return { status: res.status, body: await res.json() };
}

Deno.test({
  name: "issue 22.6: S3 timeouts: radosgw stopped gives 503 within the bound, healthz and metrics",
  ignore: cephMissing !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const rgw: Rgw = await rgwOfThisFile();
  const dataDir = await makeDataTempDir("s3-timeouts");
  let stopped = false;
  const resume = () => {
    if (stopped) Deno.kill(rgw.rgwPid, "SIGCONT");
    stopped = false;
  };
  let server: ServerProcess | undefined;
  try {
    const bucket = await rgw.bucket({ timeoutSeconds: 1 });
    server = await startServer(dataDir, { ...rgw.env(bucket), APP_METRICS_TOKEN: METRICS_TOKEN });
    const { admin, auth } = await setUp(server, dataDir);
    const latest = await (await fetch(`${server.baseUrl}/api/v1/projects/app/releases/latest`, {
      headers: auth,
    })).json();
    const download = `${server.baseUrl}/api/v1/releases/${latest.release.id}/download`;

    await t.step("with radosgw running: healthz storage ok, uds_storage_up 1", async () => {
      const { status, body } = await health(server!);
      assert.equal(status, 200);
      assert.equal(body.storage, "ok");
      assert.equal(await metric(server!, "uds_storage_up"), 1);
      const res = await fetch(download, { headers: auth });
      assert.equal(res.status, 200);
      assert.equal(await res.text(), "artifact bytes");
    });

    Deno.kill(rgw.rgwPid, "SIGSTOP");
    stopped = true;

    await t.step("a download answers 503 with a JSON error within the bound", async () => {
      for (const method of ["GET", "HEAD"]) {
        const { value: res, ms } = await timed(() => fetch(download, { method, headers: auth }));
        assert.equal(res.status, 503, method);
        assert.ok(ms < BOUND_MS, `${method} took ${Math.round(ms)} ms`);
        assert.equal(res.headers.get("retry-after"), "10");
        if (method === "GET") {
          assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
          assert.deepEqual(await res.json(), { error: "artifact storage unavailable" });
        } else await res.body?.cancel();
      }
    });

    await t.step("an upload shows the form again with 503 within the bound", async () => {
      const { value: res, ms } = await timed(() =>
        admin.upload("/admin/projects/app/releases", [
          ["csrf_token", admin.csrfToken],
          ["version", "2.0.0"],
          ["file", new File(["new bytes"], "app.zip", { type: "application/zip" })],
        ])
      );
      const html = await res.text();
      assert.equal(res.status, 503, html);
      assert.ok(ms < BOUND_MS, `upload took ${Math.round(ms)} ms`);
      assert.match(html, /The artifact storage did not answer, so nothing was stored/);
      assert.match(html, /value="2\.0\.0"/);
    });

    await t.step("healthz: storage unavailable, status and code still the database's", async () => {
      const { value, ms } = await timed(() => health(server!));
      assert.equal(value.status, 200);
      assert.equal(value.body.database, "ok");
      assert.equal(value.body.status, "ok");
      assert.equal(value.body.storage, "unavailable");
      assert.ok(ms < 3_000, `healthz took ${Math.round(ms)} ms`);
      assert.equal(await metric(server!, "uds_storage_up"), 0);
      assert.ok(await metric(server!, "uds_storage_unavailable_total") >= 1);
    });

    resume();

    await t.step("radosgw back: downloads, healthz and metrics recover", async () => {
      const deadline = Date.now() + 20_000;
      let storage = "";
      while (Date.now() < deadline) {
        storage = (await health(server!)).body.storage;
        if (storage === "ok") break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      assert.equal(storage, "ok");
      const res = await fetch(download, { headers: auth });
      assert.equal(res.status, 200);
      assert.equal(await res.text(), "artifact bytes");
      assert.equal(await metric(server!, "uds_storage_up"), 1);
      const now = await (await fetch(`${server!.baseUrl}/api/v1/projects/app/releases/latest`, {
        headers: auth,
      })).json();
      assert.equal(now.release.version, "1.0.0", "the refused upload recorded nothing");
    });

    await t.step("a stream download whose bytes stop coming is cut within the bound", async () => {
      const big = new Uint8Array(48 * 1024 * 1024).fill(7);
      const uploaded = await admin.upload("/admin/projects/app/releases", [
        ["csrf_token", admin.csrfToken],
        ["version", "3.0.0"],
        ["file", new File([big], "big.bin", { type: "application/octet-stream" })],
      ]);
      assert.equal(uploaded.status, 303, await uploaded.text());
      const release = (await (await fetch(
        `${server!.baseUrl}/api/v1/projects/app/releases/latest`,
        { headers: auth },
      )).json()).release;
      assert.equal(release.version, "3.0.0");
      const res = await fetch(`${server!.baseUrl}/api/v1/releases/${release.id}/download`, {
        headers: auth,
      });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      let received = (await reader.read()).value?.byteLength ?? 0;
      Deno.kill(rgw.rgwPid, "SIGSTOP");
      stopped = true;
      const { value: outcome, ms } = await timed(async () => {
        try {
          while (true) {
            const { done, value } = await reader.read();
            if (done) return "ended";
            received += value.byteLength;
          }
        } catch {
          return "cut";
        }
      });
      resume();
      assert.ok(received < big.byteLength, `received ${received} of ${big.byteLength}`);
      assert.equal(outcome, "cut", "a short body is never passed off as whole");
      assert.ok(ms < BOUND_MS, `cut after ${Math.round(ms)} ms`);
    });
  } finally {
    resume();
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test({
  name: "issue 22.4 (redirect mode): a stored record with a bad content type gets a valid answer",
  ignore: cephMissing !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const rgw = await rgwOfThisFile();
  const dataDir = await makeDataTempDir("s3-metadata");
  let server: ServerProcess | undefined;
  try {
    const bucket = await rgw.bucket();
    const env = { ...rgw.env(bucket), APP_DOWNLOAD_MODE: "redirect" };
    server = await startServer(dataDir, env);
    const { auth } = await setUp(server, dataDir);
    const latest = await (await fetch(`${server.baseUrl}/api/v1/projects/app/releases/latest`, {
      headers: auth,
    })).json();
    const id = latest.release.id;
    await server.stop();
    const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
    const entry = await kv.get<Release>(releaseKey(id));
    await kv.set(releaseKey(id), {
      ...entry.value!,
      filename: `${"a".repeat(254)}\uD83D`,
      content_type: 'text/plain\u2028; a="\u65e5"',
    });
    kv.close();
    server = await startServer(dataDir, env);
    const res = await fetch(`${server.baseUrl}/api/v1/releases/${id}/download`, {
      headers: auth,
      redirect: "manual",
    });
    assert.equal(res.status, 302);
    const location = res.headers.get("location")!;
    assert.ok(location.startsWith(rgw.endpoint), location);
    const object = await fetch(location);
    assert.equal(object.status, 200);
    assert.equal(object.headers.get("content-type"), "application/octet-stream");
    assert.equal(
      object.headers.get("content-disposition"),
      `attachment; filename="${"a".repeat(254)}_"; filename*=UTF-8''${"a".repeat(254)}%EF%BF%BD`,
    );
    assert.equal(await object.text(), "artifact bytes");
  } finally {
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
