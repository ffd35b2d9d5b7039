/**
 * The container as operators run it (issue 25): the local base (tools/build_base_image.sh), the
 * image (Dockerfile), a container with --read-only and a named volume, and deploy/compose.yaml
 * behind its nginx proxy, all with podman as root and runc. The base and proxy images are built
 * once per version of their scripts (tagged with the script's hash) and reused.
 *
 * Skipped, with the reason printed, only where podman cannot run (not root, no podman, runc,
 * mmdebstrap, npm or podman-compose); under CI=true a missing tool fails instead (.ci/run
 * installs them).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { AdminClient, httpSender, randomBytes } from "./admin_helpers.ts";
import { PROJECT_ROOT } from "./server_process.ts";

const TOOLS = ["podman", "runc", "mmdebstrap", "npm", "podman-compose", "dpkg-deb", "curl"];
// The project's layers: its code and npm dependencies (the S3 SDK, Hono, openid-client for single
// sign-on, @tufjs/models for TUF, hash-wasm for block maps), 30.6 MB when last measured.
const PROJECT_MB = 34;
const IMAGE_MB = 150;
const IDLE_RSS_MIB = 120;
const ARTIFACT_BYTES = 24 * 1024 * 1024;

type Run = { code: number; stdout: string; stderr: string };

/** containers.conf for these tests: runc (crun refuses hybrid cgroups here) and the ulimits. */
async function containersConf(dir: string): Promise<string> {
  const path = join(dir, "containers.conf");
  await Deno.writeTextFile(
    path,
    [
      "[containers]",
      'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]',
      "[engine]",
      'runtime = "runc"',
      "",
    ].join("\n"),
  );
  return path;
}

async function run(
  env: Record<string, string>,
  command: string,
  args: string[],
): Promise<Run> {
  const output = await new Deno.Command(command, {
    args,
    env,
    cwd: PROJECT_ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

async function ok(env: Record<string, string>, command: string, args: string[]): Promise<string> {
  const result = await run(env, command, args);
  assert.equal(
    result.code,
    0,
    `${command} ${args.join(" ")} exited ${result.code}:\n${result.stderr}${result.stdout}`,
  );
  return result.stdout.trim();
}

/** Why podman cannot run here, or null when it can. */
async function whyNoPodman(): Promise<string | null> {
  if (Deno.build.os !== "linux") return "not Linux";
  if (Deno.uid() !== 0) return "not root (the tests run podman as root with runc)";
  for (const tool of TOOLS) {
    const found = await run({}, "sh", ["-c", `command -v ${tool}`]).catch(() => null);
    if (found?.code !== 0) return `${tool} is not installed (apt-get install ${tool})`;
  }
  const dir = await Deno.makeTempDir({ prefix: "uds_podman_probe_" });
  try {
    const env = { CONTAINERS_CONF: await containersConf(dir) };
    const info = await run(env, "podman", ["info", "--format", "{{.Host.OCIRuntime.Name}}"]);
    if (info.code !== 0) return `podman info failed: ${info.stderr.trim().split("\n")[0]}`;
    return null;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const NO_PODMAN = await whyNoPodman();
if (NO_PODMAN !== null && Deno.env.get("CI") !== "true") {
  console.warn(`container tests skipped: podman cannot run here: ${NO_PODMAN}`);
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

async function fileHash(path: string): Promise<string> {
  return sha256(await Deno.readFile(join(PROJECT_ROOT, path))).slice(0, 16);
}

/** Builds `script`'s image unless an image of this version of the script exists already. */
async function cachedImage(env: Record<string, string>, script: string, name: string) {
  const tag = `localhost/${name}:${await fileHash(script)}`;
  const exists = await run(env, "podman", ["image", "exists", tag]);
  if (exists.code !== 0) await ok(env, "bash", [script, tag]);
  return tag;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

async function waitForHealthz(url: string, timeoutMs: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      if (res.status === 200) return performance.now() - started;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${url}/healthz did not answer 200 within ${timeoutMs} ms`);
}

/** The server process (tini's child) of a running container, on the host: uid and RSS. */
async function serverProcess(env: Record<string, string>, name: string) {
  const tiniPid = await ok(env, "podman", ["inspect", "--format", "{{.State.Pid}}", name]);
  const read = (path: string) => ok({}, "cat", [path]);
  const children = await read(`/proc/${tiniPid}/task/${tiniPid}/children`);
  const pid = children.trim().split(/\s+/)[0];
  const status = await read(`/proc/${pid}/status`);
  const field = (key: string) => new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(status)?.[1];
  return {
    tiniCommand: await read(`/proc/${tiniPid}/comm`),
    uid: Number(field("Uid")),
    rssKiB: Number(field("VmRSS")),
  };
}

/** Creates a key through the admin form; returns its secret. */
async function createKey(client: AdminClient): Promise<string> {
  const res = await client.post("/admin/api-keys", {
    name: "container test",
    can_download: "on",
    scope_mode: "all_projects",
    expires_at: "",
  });
  const html = await res.text();
  assert.equal(res.status, 200, html);
  const secret = /data-api-key="([^"]+)"/.exec(html)?.[1];
  assert.ok(secret, "the created page shows the key");
  return secret;
}

Deno.test({
  name: "container: image built from the Dockerfile, run as operators run it, and compose",
  ignore: NO_PODMAN !== null && Deno.env.get("CI") !== "true",
}, async (t) => {
  if (NO_PODMAN !== null) throw new Error(`CI=true but podman cannot run: ${NO_PODMAN}`);
  const dir = await Deno.makeTempDir({ prefix: "uds_container_" });
  const env = { CONTAINERS_CONF: await containersConf(dir) };
  const id = crypto.randomUUID().slice(0, 8);
  const image = `localhost/uds-test-${id}:latest`;
  const volume = `uds-test-${id}-data`;
  const names = [`uds-test-${id}-a`, `uds-test-${id}-b`];
  const compose = { ...env, project: `udstest${id}` };
  const port = freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const podman = (...args: string[]) => ok(env, "podman", args);
  const startContainer = async (name: string) => {
    const started = performance.now();
    await podman(
      "run",
      "-d",
      "--name",
      name,
      "--read-only",
      "-p",
      `127.0.0.1:${port}:8000`,
      "-v",
      `${volume}:/app/data`,
      "-e",
      `APP_BASE_URL=${baseUrl}`,
      "-e",
      "APP_SHUTDOWN_TIMEOUT_SECONDS=25",
      image,
    );
    await waitForHealthz(baseUrl, 20_000);
    return performance.now() - started;
  };

  try {
    let base = "";
    await t.step("the local base builds from Debian and npm (cached by script hash)", async () => {
      base = await cachedImage(env, "tools/build_base_image.sh", "uds-deno-base");
      const version = await podman("run", "--rm", base);
      assert.match(version, /^deno 2\.9\.6 /);
      const uid = await podman(
        "run",
        "--rm",
        "--user",
        "deno",
        base,
        "deno",
        "eval",
        "--no-config",
        "console.log(Deno.uid())",
      );
      assert.equal(uid, "1993");
    });

    await t.step("the image builds on it; its own layers and size stay small", async () => {
      const started = performance.now();
      await podman(
        "build",
        "--format",
        "docker",
        "--build-arg",
        `DENO_IMAGE=${base}`,
        // Build time only: npm passes a TLS-inspecting proxy whose CA the host trusts.
        "--build-arg",
        "DENO_TLS_CA_STORE=mozilla,system",
        "-v",
        "/etc/ssl/certs:/etc/ssl/certs:ro",
        "-t",
        image,
        ".",
      );
      const buildSeconds = (performance.now() - started) / 1000;
      const size = async (ref: string) =>
        Number(await podman("image", "inspect", "--format", "{{.Size}}", ref)) / 1e6;
      const total = await size(image);
      const own = total - await size(base);
      console.log(
        `image: ${total.toFixed(1)} MB, project layers ${own.toFixed(1)} MB, ` +
          `built in ${buildSeconds.toFixed(1)} s`,
      );
      assert.ok(own <= PROJECT_MB, `project layers ${own.toFixed(1)} MB > ${PROJECT_MB} MB`);
      assert.ok(total <= IMAGE_MB, `image ${total.toFixed(1)} MB > ${IMAGE_MB} MB`);
      const layout = await podman(
        "run",
        "--rm",
        image,
        "deno",
        "eval",
        "--no-config",
        `const has = (p) => { try { Deno.statSync(p); return true; } catch { return false; } };
         const data = Deno.statSync("/app/data"), main = Deno.statSync("/app/main.ts");
         console.log(JSON.stringify({
           data: [data.uid, (data.mode & 0o777).toString(8)], main: main.uid,
           playwright: has("/app/.deno/npm/registry.npmjs.org/playwright-core"),
           hono: has("/app/.deno/npm/registry.npmjs.org/hono"),
           tests: has("/app/tests"), docs: has("/app/docs/operators.md"),
           tlsStore: Deno.env.get("DENO_TLS_CA_STORE") ?? null }));`,
      );
      assert.deepEqual(JSON.parse(layout), {
        data: [1993, "700"],
        main: 0,
        playwright: false,
        hono: true,
        tests: false,
        docs: false,
        tlsStore: null,
      });
      const inspect = (format: string) => podman("image", "inspect", "--format", format, image);
      const config = JSON.parse(await inspect("{{json .Config}}"));
      assert.deepEqual(config.Entrypoint, ["/tini", "--"]);
      assert.equal(config.Cmd[0], "deno", "the server runs directly, no resident `deno task`");
      assert.equal(config.Volumes ?? null, null, "no VOLUME: no anonymous volumes");
      const health = JSON.parse(await inspect("{{json .HealthCheck}}"));
      assert.ok(health?.Test?.includes("tools/healthcheck.ts"), "--format docker keeps it");
    });

    let secret = "";
    let uploaded: Uint8Array = new Uint8Array();
    let release: { id: number; version: string; checksum_sha256: string } | undefined;

    await t.step("it starts read-only to a healthy /healthz, as uid 1993, small", async () => {
      const ms = await startContainer(names[0]);
      const { rssKiB: firstRss } = await serverProcess(env, names[0]);
      await new Promise((resolve) => setTimeout(resolve, 2000)); // idle
      const proc = await serverProcess(env, names[0]);
      console.log(
        `start-up to healthy /healthz: ${Math.round(ms)} ms; server RSS: ${
          (firstRss / 1024).toFixed(1)
        } MiB at start, ${(proc.rssKiB / 1024).toFixed(1)} MiB idle`,
      );
      assert.equal(proc.tiniCommand.trim(), "tini", "PID 1 is tini");
      assert.equal(proc.uid, 1993);
      // Idle, the server holds the modules of every surface it serves (single sign-on, TUF,
      // block maps, reports, the Velopack and Squirrel feeds and the delta builders among them):
      // 109.3 to 111.1 MiB when last measured.
      assert.ok(proc.rssKiB < IDLE_RSS_MIB * 1024, `idle RSS ${proc.rssKiB} KiB`);
      assert.ok(ms < 5000, `start-up took ${Math.round(ms)} ms`);
      const readOnly = await podman(
        "inspect",
        "--format",
        "{{.HostConfig.ReadonlyRootfs}}",
        names[0],
      );
      assert.equal(readOnly, "true");
    });

    await t.step("podman healthcheck run passes", async () => {
      await podman("healthcheck", "run", names[0]);
    });

    await t.step("sign in with the generated password from the log, upload, download", async () => {
      const logs = await run(env, "podman", ["logs", names[0]]);
      const password = /generated password: ([^"\s]+)/.exec(logs.stdout + logs.stderr)?.[1];
      assert.ok(password, "the log shows the generated password");
      const admin = new AdminClient(httpSender([baseUrl]));
      const signedIn = await admin.signIn("admin", password);
      assert.equal(signedIn.status, 303);
      const created = await admin.post("/admin/projects", { name: "Desktop", slug: "desktop" });
      assert.equal(created.status, 303, await created.text());
      await admin.page("/admin/projects/desktop");
      uploaded = randomBytes(ARTIFACT_BYTES);
      const upload = await admin.upload("/admin/projects/desktop/releases", [
        ["csrf_token", admin.csrfToken],
        ["version", "1.0.0"],
        ["file", new File([uploaded as BlobPart], "desktop-1.0.0.zip")],
      ]);
      assert.equal(upload.status, 303, await upload.text());
      secret = await createKey(admin);
      const auth = { authorization: `Bearer ${secret}` };
      const latest = await fetch(`${baseUrl}/api/v1/projects/desktop/releases/latest`, {
        headers: auth,
      });
      assert.equal(latest.status, 200);
      release = (await latest.json()).release;
      assert.equal(release?.checksum_sha256, sha256(uploaded));
      const download = await fetch(`${baseUrl}/api/v1/releases/${release!.id}/download`, {
        headers: auth,
      });
      assert.equal(download.status, 200);
      assert.equal(sha256(new Uint8Array(await download.arrayBuffer())), sha256(uploaded));
    });

    // With a slow client (curl at 8 MB/s) the last bytes of the download wait in the
    // container's socket buffers when the server has sent them; main.ts lingers before it exits,
    // since the container's network goes with the process.
    await t.step({
      name: "SIGTERM during a download drains it, then the server exits 0",
      fn: async () => {
        // A slow client (curl at 8 MB/s: 3 s for the artifact); the stop comes 1 s into it.
        const target = join(dir, "download");
        const download = run(env, "curl", [
          "-sS",
          "--fail",
          "--limit-rate",
          "8M",
          "-H",
          `Authorization: Bearer ${secret}`,
          "-o",
          target,
          `${baseUrl}/api/v1/releases/${release!.id}/download`,
        ]);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        // `podman stop` sends SIGTERM (tini passes it on) and waits up to 40 s before SIGKILL.
        const stopping = run(env, "podman", ["stop", "-t", "40", names[0]]);
        const downloaded = await download;
        assert.equal(downloaded.code, 0, downloaded.stderr);
        const body = await Deno.readFile(target);
        assert.equal(body.length, uploaded.length);
        assert.equal(sha256(body), sha256(uploaded));
        assert.equal((await stopping).code, 0);
        const exit = await podman("inspect", "--format", "{{.State.ExitCode}}", names[0]);
        assert.equal(exit, "0");
        const logs = await run(env, "podman", ["logs", names[0]]);
        assert.match(logs.stdout, /"msg":"stopped"/);
      },
    });

    await t.step("a new container on the same volume (an upgrade) finds the release", async () => {
      await podman("stop", "-t", "40", names[0]);
      await podman("rm", names[0]);
      await startContainer(names[1]);
      const latest = await fetch(`${baseUrl}/api/v1/projects/desktop/releases/latest`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(latest.status, 200);
      const again = (await latest.json()).release;
      assert.equal(again.id, release!.id);
      assert.equal(again.checksum_sha256, sha256(uploaded));
      const logs = await run(env, "podman", ["logs", names[1]]);
      assert.doesNotMatch(
        logs.stdout + logs.stderr,
        /generated password|can be read by other users/,
      );
    });

    await t.step("a data volume it cannot write fails in one line naming the uid", async () => {
      const rootOwned = join(dir, "root-owned");
      await Deno.mkdir(rootOwned, { mode: 0o755 });
      const denied = await run(env, "podman", [
        "run",
        "--rm",
        "--read-only",
        "-v",
        `${rootOwned}:/app/data`,
        image,
      ]);
      assert.equal(denied.code, 1);
      assert.match(
        denied.stderr,
        /^cannot start: APP_DATA_DIR: cannot create \/app\/data\/artifacts \(permission denied\); create it for uid 1993, .*install -d -m 700 -o 1993 /m,
      );
      const noVolume = await run(env, "podman", ["run", "--rm", "--read-only", image]);
      assert.equal(noVolume.code, 1);
      assert.match(noVolume.stderr, /^cannot start: APP_DATA_DIR: .*read-only file system.*-v /m);
      assert.doesNotMatch(noVolume.stderr, /\n\s+at /, "no stack trace");
    });

    await t.step("compose brings up the service behind the nginx proxy", async () => {
      await podman("rm", "-f", names[1]);
      const proxy = await cachedImage(env, "tools/build_proxy_image.sh", "uds-nginx");
      const proxyPort = freePort();
      const composeEnv = {
        ...env,
        UDS_IMAGE: image,
        UDS_PROXY_IMAGE: proxy,
        UDS_HTTP_PORT: String(proxyPort),
        APP_BASE_URL: `http://127.0.0.1:${proxyPort}`,
        APP_ADMIN_PASSWORD: "compose-test-password-1",
      };
      const composeFile = ["-p", compose.project, "-f", "deploy/compose.yaml"];
      await ok(composeEnv, "podman-compose", [...composeFile, "up", "-d"]);
      try {
        const url = `http://127.0.0.1:${proxyPort}`;
        await waitForHealthz(url, 30_000);
        const res = await fetch(`${url}/api/v1`);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("server")?.startsWith("nginx"), true);
        await res.body?.cancel();
        const app = `${compose.project}_app_1`;
        const inspect = await podman(
          "inspect",
          "--format",
          "{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.RestartPolicy.Name}}",
          app,
        );
        assert.equal(inspect, "true unless-stopped");
        await podman("healthcheck", "run", app);
      } finally {
        await run(composeEnv, "podman-compose", [...composeFile, "down", "-v"]);
        await run(env, "podman", ["network", "rm", `${compose.project}_default`]);
      }
      const volumes = await podman("volume", "ls", "--format", "{{.Name}}");
      assert.doesNotMatch(volumes, new RegExp(compose.project), "down -v removes the volume");
    });
  } finally {
    await run(env, "podman", ["rm", "-f", ...names]);
    await run(env, "podman", ["volume", "rm", "-f", volume]);
    await run(env, "podman", ["rmi", "-f", image]);
    await Deno.remove(dir, { recursive: true });
  }
});
