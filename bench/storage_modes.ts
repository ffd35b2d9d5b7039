/**
 * Download modes and s3 upload memory, measured on this machine:
 *
 *   deno run -A bench/storage_modes.ts [download MiB] [upload MiB]
 *
 * - download throughput (curl, one client, median of 3) of one artifact:
 *   `stream` from fs, `stream` from s3, `redirect` (curl follows the 302 to
 *   radosgw), `x-accel` (nginx sends the file), and nginx serving the file
 *   directly as the baseline;
 * - the service's peak RSS (VmHWM) after an admin upload of [upload MiB] to
 *   s3 through curl, next to its RSS before.
 *
 * With 0 download MiB only the upload is measured. Starts its own radosgw (tools/start_rgw.sh) with a memstore large enough
 * for the upload, and nginx; needs Ceph, nginx and curl.
 */
import { join } from "node:path";
import {
  Cleanup,
  findServicePid,
  procStatusKiB,
  PROJECT_ROOT,
  run,
  startNginx,
  startService,
  which,
  xAccelServer,
} from "./process.ts";
import { createFsStore, publishRelease } from "../src/storage/mod.ts";
import { createS3Store } from "../src/storage/s3_store.ts";
import { createApiKey } from "../src/credentials/api_keys.ts";
import { createProject } from "../src/projects/projects.ts";
import { startRgw } from "../tests/rgw.ts";
import { AdminClient, httpSender } from "../tests/admin_helpers.ts";
import { fillerStream } from "./filler.ts";
import { median } from "./stats.ts";
import { createStore } from "../src/kv/store.ts";

const MiB = 1024 * 1024;
const downloadMiB = Number(Deno.args[0] ?? 256);
const uploadMiB = Number(Deno.args[1] ?? 1024);
const curl = which("curl")!;
const nginxBin = which("nginx");

async function curlRate(url: string, args: string[]): Promise<number> {
  const rates: number[] = [];
  for (let i = 0; i < 3; i++) {
    const out = await run(curl, [
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code} %{speed_download}",
      ...args,
      url,
    ]);
    const [code, speed] = out.stdout.trim().split(" ");
    if (code !== "200") throw new Error(`${url}: HTTP ${code}`);
    rates.push(Number(speed) / MiB);
  }
  return median(rates);
}

const cleanup = new Cleanup();
Deno.addSignalListener("SIGINT", () => cleanup.run().then(() => Deno.exit(130)));
try {
  Deno.env.set("RGW_MEMSTORE_BYTES", String((uploadMiB + downloadMiB + 512) * MiB));
  const rgw = await startRgw();
  cleanup.add(() => rgw.stop());
  const s3 = await rgw.bucket();
  const dataDir = join(PROJECT_ROOT, "data", `bench-storage-${crypto.randomUUID().slice(0, 8)}`);
  await Deno.mkdir(dataDir, { recursive: true });
  cleanup.add(() => Deno.remove(dataDir, { recursive: true }));

  // One release, the same bytes under the same key in the data dir and in the bucket.
  const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
  const store = createStore(kv);
  const fs = createFsStore(join(dataDir, "artifacts"));
  await Deno.mkdir(fs.dir, { recursive: true });
  const project = await createProject(store, { name: "App", slug: "app" });
  const release = await publishRelease(store, fs, {
    release: { project_id: project.id, version: "1", filename: "app.bin" },
    source: fillerStream(Math.max(downloadMiB, 1) * MiB),
    maxBytes: Number.MAX_SAFE_INTEGER,
  });
  const bucket = await createS3Store(s3, 8 * 1024 * MiB);
  const file = await Deno.open(join(fs.dir, release.storage_key));
  await bucket.put(release.storage_key, file.readable);
  const { secret } = await createApiKey(store, {
    name: "bench",
    can_download: true,
    scope_mode: "all_projects",
  });
  kv.close();
  const path = `/api/v1/releases/${release.id}/download`;
  const auth = ["-H", `authorization: Bearer ${secret}`];

  const rows: Array<[string, number]> = [];
  const modes: Array<[string, Record<string, string>, string[]]> = [
    ["stream (fs)", {}, []],
    ["stream (s3)", rgw.env(s3), []],
    ["redirect (s3, curl follows to radosgw)", { ...rgw.env(s3), APP_DOWNLOAD_MODE: "redirect" }, [
      "-L",
    ]],
  ];
  // With 0 MiB, only the upload is measured.
  if (downloadMiB === 0) modes.length = 0;
  for (const [name, env, args] of modes) {
    const service = await startService(dataDir, env, cleanup);
    rows.push([name, await curlRate(service.baseUrl + path, [...auth, ...args])]);
    await service.stop();
  }
  if (nginxBin !== null && downloadMiB > 0) {
    const secret = crypto.randomUUID();
    const service = await startService(
      dataDir,
      { APP_DOWNLOAD_MODE: "x-accel", APP_X_ACCEL_SECRET: secret },
      cleanup,
    );
    const workDir = join(dataDir, "nginx");
    const proxy = await startNginx(
      nginxBin,
      workDir,
      workDir,
      cleanup,
      xAccelServer(service.port, fs.dir, secret),
    );
    rows.push(["x-accel (nginx sendfile)", await curlRate(proxy.baseUrl + path, auth)]);
    await proxy.stop();
    const plain = await startNginx(nginxBin, fs.dir, join(dataDir, "nginx-plain"), cleanup);
    rows.push([
      "baseline: nginx serving the file",
      await curlRate(`${plain.baseUrl}/${release.storage_key}`, []),
    ]);
    await plain.stop();
    await service.stop();
  }
  if (rows.length > 0) {
    console.log(`\n| download of ${downloadMiB} MiB, one client | MiB/s |`);
    console.log("| --- | --- |");
    for (const [name, rate] of rows) console.log(`| ${name} | ${rate.toFixed(0)} |`);
  }

  // Upload memory: an admin upload of uploadMiB to s3 through curl.
  const service = await startService(dataDir, {
    ...rgw.env(s3),
    APP_MAX_UPLOAD_BYTES: String(8 * 1024 * MiB),
    APP_ADMIN_PASSWORD: "bench-password-123",
  }, cleanup);
  const pid = await findServicePid(service.pid);
  const admin = new AdminClient(httpSender([service.baseUrl]));
  await admin.signIn("admin", "bench-password-123");
  await admin.page("/admin/projects/app");
  const cookie = [...admin.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const bigFile = join(dataDir, "upload.bin");
  const big = await Deno.open(bigFile, { write: true, create: true });
  await fillerStream(uploadMiB * MiB).pipeTo(big.writable);
  const before = await procStatusKiB(pid, "VmRSS");
  const started = performance.now();
  const upload = await run(curl, [
    "-s",
    "-o",
    "/dev/null",
    "-w",
    "%{http_code}",
    "-H",
    `cookie: ${cookie}`,
    "-F",
    `csrf_token=${admin.csrfToken}`,
    "-F",
    "version=9.9.9",
    "-F",
    `file=@${bigFile};type=application/octet-stream`,
    `${service.baseUrl}/admin/projects/app/releases`,
  ]);
  const seconds = (performance.now() - started) / 1000;
  if (upload.stdout.trim() !== "303") throw new Error(`upload answered ${upload.stdout}`);
  const peak = await procStatusKiB(pid, "VmHWM");
  console.log(`\n| s3 upload of ${uploadMiB} MiB through the admin form | figure |`);
  console.log("| --- | --- |");
  console.log(`| service RSS before | ${(before / 1024).toFixed(0)} MiB |`);
  console.log(`| service peak RSS (VmHWM) after | ${(peak / 1024).toFixed(0)} MiB |`);
  console.log(`| upload rate | ${(uploadMiB / seconds).toFixed(0)} MiB/s |`);
  await service.stop();
} finally {
  await cleanup.run();
}
