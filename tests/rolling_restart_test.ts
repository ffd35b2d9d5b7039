/**
 * Issue 19 item 8: the reference multi-instance nginx configuration
 * (deploy/nginx/instances.conf, run as shipped with only its ports and
 * certificate replaced) in front of three instances on one KV file holds
 * through a rolling restart: SIGTERM to A, B and C about 3.5 s apart, each
 * started again once it has exited (what a supervisor does), under mixed
 * GET/POST traffic over HTTPS and HTTP/2, answers every request without an
 * error, and never sends a POST twice.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { freePort, which } from "../bench/process.ts";
import { AdminClient, randomBytes, type Sender } from "./admin_helpers.ts";
import { createClientKey } from "./data_dir_fixtures.ts";
import {
  makeDataTempDir,
  PROJECT_ROOT,
  type ServerProcess,
  startServer,
} from "./server_process.ts";

const nginx = which("nginx");
const openssl = which("openssl");
if (nginx === null || openssl === null) {
  console.warn("rolling restart test skipped: needs nginx and openssl (apt-get install nginx)");
}

/** deploy/nginx/instances.conf with its ports and certificate replaced, nothing else. */
async function instancesConf(
  { listenPort, instancePorts, cert, key }: {
    listenPort: number;
    instancePorts: number[];
    cert: string;
    key: string;
  },
): Promise<string> {
  let conf = await Deno.readTextFile(join(PROJECT_ROOT, "deploy/nginx/instances.conf"));
  const replace = (from: string, to: string) => {
    assert.ok(conf.includes(from), `instances.conf has ${from}`);
    conf = conf.replace(from, to);
  };
  replace("listen 443 ssl http2;", `listen 127.0.0.1:${listenPort} ssl http2;`);
  replace("/etc/letsencrypt/live/updates.example.com/fullchain.pem", cert);
  replace("/etc/letsencrypt/live/updates.example.com/privkey.pem", key);
  instancePorts.forEach((port, i) => replace(`127.0.0.1:800${i + 1} `, `127.0.0.1:${port} `));
  return conf;
}

async function startNginxWith(workDir: string, conf: string): Promise<Deno.ChildProcess> {
  await Deno.writeTextFile(join(workDir, "instances.conf"), conf);
  const main = join(workDir, "nginx.conf");
  await Deno.writeTextFile(
    main,
    [
      Deno.uid() === 0 ? "user root;" : "",
      "daemon off;",
      "worker_processes 1;",
      `pid ${join(workDir, "nginx.pid")};`,
      `error_log ${join(workDir, "error.log")} warn;`,
      "events { worker_connections 1024; }",
      "http {",
      "  access_log off;",
      ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((kind) =>
        `  ${kind}_temp_path ${join(workDir, `${kind}_temp`)};`
      ),
      `  include ${join(workDir, "instances.conf")};`,
      "}",
    ].join("\n"),
  );
  return new Deno.Command(nginx!, {
    args: ["-p", `${workDir}/`, "-e", join(workDir, "error.log"), "-c", main],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
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
      // A test CA and a certificate for localhost signed by it (rustls refuses a self-signed leaf).
      const cert = join(workDir, "cert.pem");
      const key = join(workDir, "key.pem");
      const ca = join(workDir, "ca.pem");
      const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
      await Deno.writeTextFile(join(workDir, "san.ext"), "subjectAltName=DNS:localhost\n");
      for (
        const args of [
          ["req", "-x509", ...ec, "-days", "1", "-subj", "/CN=uds-test-ca", "-keyout"]
            .concat([join(workDir, "ca.key"), "-out", ca]),
          ["req", ...ec, "-subj", "/CN=localhost", "-keyout", key, "-out"]
            .concat([join(workDir, "leaf.csr")]),
          ["x509", "-req", "-in", join(workDir, "leaf.csr"), "-CA", ca, "-CAkey"]
            .concat([join(workDir, "ca.key"), "-CAcreateserial", "-days", "1"])
            .concat(["-extfile", join(workDir, "san.ext"), "-out", cert]),
        ]
      ) {
        const made = await new Deno.Command(openssl!, { args, stdout: "null", stderr: "piped" })
          .output();
        assert.ok(made.success, new TextDecoder().decode(made.stderr));
      }
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
      proxy = await startNginxWith(
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
