/**
 * Issue 19 item 8: the reference multi-instance nginx configuration
 * (deploy/nginx/instances.conf, run as shipped with only its marked values
 * replaced: ports and certificate) in front of three instances on one KV file holds
 * through a rolling restart: SIGTERM to A, B and C about 3.5 s apart, each
 * started again once it has exited (what a supervisor does), under mixed
 * GET/POST traffic over HTTPS and HTTP/2, answers every request without an
 * error, and never sends a POST twice.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { freePort, which } from "../bench/process.ts";
import { makeTestCertificate, referenceConfig, startNginxWith } from "./nginx_reference.ts";
import { AdminClient, randomBytes, type Sender } from "./admin_helpers.ts";
import { createClientKey } from "./data_dir_fixtures.ts";
import { makeDataTempDir, type ServerProcess, startServer } from "./server_process.ts";

const nginx = which("nginx");
const openssl = which("openssl");
if (nginx === null || openssl === null) {
  console.warn("rolling restart test skipped: needs nginx and openssl (apt-get install nginx)");
}

/** deploy/nginx/instances.conf with only its marked values replaced (tests/nginx_reference.ts). */
function instancesConf(
  { listenPort, instancePorts, cert, key }: {
    listenPort: number;
    instancePorts: number[];
    cert: string;
    key: string;
  },
): Promise<string> {
  return referenceConfig("instances.conf", [
    ["listen 443", `listen 127.0.0.1:${listenPort}`],
    ["/etc/letsencrypt/live/updates.example.com/fullchain.pem", cert],
    ["/etc/letsencrypt/live/updates.example.com/privkey.pem", key],
    ...instancePorts.map((port, i) => [`127.0.0.1:800${i + 1}`, `127.0.0.1:${port}`] as const),
  ]);
}

function startNginxOn(workDir: string, conf: string): Promise<Deno.ChildProcess> {
  return startNginxWith(nginx!, { workDir, conf, file: "instances.conf" });
}

interface Tally {
  ok: number;
  errors: string[];
}

Deno.test({
  name: "rolling restart of three instances behind the reference nginx config: 0 errors",
  ignore: nginx === null || openssl === null,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dataDir = await makeDataTempDir("rolling");
    const workDir = await Deno.makeTempDir({ prefix: "uds-rolling-nginx-" });
    const servers: ServerProcess[] = [];
    let proxy: Deno.ChildProcess | undefined;
    let client: Deno.HttpClient | undefined;
    try {
      const { cert, key, ca } = await makeTestCertificate(openssl!, workDir);
      client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(ca)] });

      const listenPort = freePort();
      const instancePorts = [freePort(), freePort(), freePort()];
      const base = `https://localhost:${listenPort}`;
      const env = (port: number) => ({
        APP_PORT: String(port),
        APP_BASE_URL: base,
        APP_TRUST_PROXY: "true",
        APP_RATE_LIMIT_STORE: "kv",
        APP_SHUTDOWN_TIMEOUT_SECONDS: "10",
      });
      for (const port of instancePorts) servers.push(await startServer(dataDir, env(port)));
      proxy = await startNginxOn(
        workDir,
        await instancesConf({ listenPort, instancePorts, cert, key }),
      );
      const http = client;
      const get = (path: string, init: RequestInit = {}) =>
        fetch(base + path, { ...init, redirect: "manual", client: http });
      const deadline = Date.now() + 10_000;
      while (true) {
        const up = await get("/healthz").then(
          (res) => res.body?.cancel().then(() => true),
          () => false,
        );
        if (up) break;
        if (Date.now() > deadline) {
          throw new Error(
            `nginx did not start: ${await Deno.readTextFile(join(workDir, "error.log"))}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }

      // Through nginx: sign in, a project with one release; a key straight into the KV.
      const sender: Sender = (path, init) => get(path, init);
      const admin = new AdminClient(sender);
      assert.equal((await admin.signIn("admin", "test-password-123")).status, 303);
      const created = await admin.post("/admin/projects", { name: "App", slug: "app" });
      assert.equal(created.status, 303);
      await admin.page("/admin/projects/app");
      const uploaded = await admin.upload("/admin/projects/app/releases", [
        ["csrf_token", admin.csrfToken],
        ["version", "1.0.0"],
        ["file", new File([randomBytes(20_000) as BlobPart], "app.bin")],
      ]);
      assert.equal(uploaded.status, 303, await uploaded.text());
      const { secret } = await createClientKey(dataDir);
      const auth = { authorization: `Bearer ${secret}` };
      const latest = await get("/api/v1/projects/app/releases/latest", { headers: auth });
      const releaseId = (await latest.json()).release.id;

      // Mixed traffic: client API reads, downloads, admin pages and admin POSTs.
      const tally: Tally = { ok: 0, errors: [] };
      let stop = false;
      let posts = 0;
      const expect = async (what: string, status: number, send: () => Promise<Response>) => {
        try {
          const res = await send();
          await res.arrayBuffer();
          if (res.status === status) tally.ok++;
          else tally.errors.push(`${what}: ${res.status}`);
        } catch (error) {
          tally.errors.push(`${what}: ${error}`);
        }
      };
      const readers = Array.from({ length: 4 }, async (_, i) => {
        while (!stop) {
          if (i === 0) await expect("GET /healthz", 200, () => get("/healthz"));
          await expect(
            "GET latest",
            200,
            () => get("/api/v1/projects/app/releases/latest", { headers: auth }),
          );
          await expect(
            "GET download",
            200,
            () => get(`/api/v1/releases/${releaseId}/download`, { headers: auth }),
          );
          await expect("GET admin page", 200, () => admin.fetch("/admin/projects/app"));
        }
      });
      const writers = Array.from({ length: 2 }, async (_, i) => {
        let n = 0;
        while (!stop) {
          const slug = `p${i}-${n++}`;
          posts++;
          await expect(
            `POST create ${slug}`,
            303,
            () => admin.post("/admin/projects", { name: slug, slug }),
          );
        }
      });

      // The rolling restart as docs/operators.md gives it: take the instance out of the
      // upstream (marked `down`, nginx reloaded), SIGTERM, wait for the exit, start it again on
      // the same port, put it back. (Stopping an instance nginx still sends to can reset a
      // connection the kernel accepted just before the listener closed: a POST on it would fail.)
      const conf = await instancesConf({ listenPort, instancePorts, cert, key });
      const reloadWith = async (down: number | null) => {
        const port = down === null ? null : instancePorts[down];
        const text = port === null
          ? conf
          : conf.replace(`127.0.0.1:${port} max_fails=0;`, `127.0.0.1:${port} max_fails=0 down;`);
        await Deno.writeTextFile(join(workDir, "instances.conf"), text);
        proxy!.kill("SIGHUP");
        // The new workers take over; the old ones finish what they were sending.
        await new Promise((resolve) => setTimeout(resolve, 500));
      };
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const started = performance.now();
      for (let i = 0; i < servers.length; i++) {
        const at = started + i * 3500;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));
        await reloadWith(i);
        const status = await servers[i].stop();
        assert.equal(status.code, 0, servers[i].output().slice(-2000));
        servers[i] = await startServer(dataDir, env(instancePorts[i]));
        await reloadWith(null);
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
      stop = true;
      await Promise.all([...readers, ...writers]);

      // Every POST made exactly one project (none lost, none sent twice).
      const kvAfter = await Deno.openKv(join(dataDir, "kv.sqlite3"));
      let projects = 0;
      for await (const _ of kvAfter.list({ prefix: ["projects_by_slug"] })) projects++;
      kvAfter.close();
      console.log(
        `  ${tally.ok} requests (${posts} POSTs) during the rolling restart, ` +
          `${tally.errors.length} errors`,
      );
      assert.deepEqual(tally.errors.slice(0, 20), []);
      assert.ok(tally.ok > 200, `${tally.ok} requests answered`);
      assert.equal(projects, posts + 1, "one project per POST, plus the first");
    } finally {
      if (proxy !== undefined) {
        proxy.kill("SIGTERM");
        await proxy.status;
      }
      client?.close();
      await Promise.all(servers.map((server) => server.stop()));
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      await Deno.remove(workDir, { recursive: true }).catch(() => {});
    }
  },
});
