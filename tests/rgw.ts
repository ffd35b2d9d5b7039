/**
 * A real S3 for tests: a one-host Ceph radosgw (tools/start_rgw.sh) on free
 * loopback ports, started detached (setsid, stdio to a log file, never
 * inherited), with one fresh bucket per call of `bucket()`. Tests that need it
 * are skipped, with one line saying why, when Ceph is not installed.
 */
import { join } from "node:path";
import {
  CreateBucketCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from "@aws-sdk/client-s3";
import type { S3Config } from "../src/lib/config.ts";
import { PROJECT_ROOT } from "./server_process.ts";

const CEPH_BINARIES = ["ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "ceph"];

function onPath(name: string): boolean {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(join(dir, name)).isFile) return true;
    } catch { /* not here */ }
  }
  return false;
}

/** Why S3 tests cannot run here, or undefined when they can. */
export const cephMissing: string | undefined = (() => {
  const missing = CEPH_BINARIES.filter((name) => !onPath(name));
  if (missing.length === 0) return undefined;
  const reason = `S3 tests skipped: Ceph is not installed (missing ${missing.join(", ")}); ` +
    "apt-get install -y ceph-mon ceph-osd radosgw ceph-common";
  console.warn(reason);
  return reason;
})();

/** An SDK client of the bucket's store, for tests that look at what is stored. */
export function s3Client(
  s3: Pick<S3Config, "endpoint" | "region" | "accessKeyId" | "secretAccessKey">,
): S3Client {
  return new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId!, secretAccessKey: s3.secretAccessKey! },
  });
}

/** What a bucket holds: its objects' keys and its unfinished multipart uploads' keys, sorted. */
export interface BucketContents {
  objects: string[];
  uploads: string[];
}

/** Everything in the bucket, under any prefix (strays included). */
export async function bucketContents(s3: S3Config): Promise<BucketContents> {
  const client = s3Client(s3);
  const objects = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
  const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
  return {
    objects: (objects.Contents ?? []).map((o) => o.Key!).sort(),
    uploads: (uploads.Uploads ?? []).map((u) => u.Key!).sort(),
  };
}

/** The keys of the objects under the bucket's prefix, without that prefix, sorted. */
export async function objectsUnderPrefix(s3: S3Config): Promise<string[]> {
  const listed = await s3Client(s3).send(
    new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: s3.prefix }),
  );
  return (listed.Contents ?? []).map((o) => o.Key!.slice(s3.prefix.length)).sort();
}

export interface Rgw {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The radosgw daemon's pid (to SIGSTOP it: a store that does not answer). */
  rgwPid: number;
  /** Creates a new empty bucket and returns the S3 settings that point at it. */
  bucket: (overrides?: Partial<S3Config>) => Promise<S3Config>;
  /** The APP_S3_* environment for a bucket. */
  env: (s3: S3Config) => Record<string, string>;
  stop: () => Promise<void>;
  /** The same, blocking (for the module's unload, which does not wait for promises). */
  stopSync: () => void;
}

function freePorts(count: number): number[] {
  const listeners = Array.from(
    { length: count },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((l) => (l.addr as Deno.NetAddr).port);
  for (const l of listeners) l.close();
  return ports;
}

export async function startRgw(): Promise<Rgw> {
  const dir = await Deno.makeTempDir({ prefix: "uds-rgw-" });
  const clusterDir = join(dir, "cluster");
  const logPath = join(dir, "start.log");
  const [port, monPort, monV2Port] = freePorts(3);
  // Detached: its own session, stdio to a file, nothing inherited. The daemons
  // fork and outlive the script, which exits once the endpoint answers.
  const output = await new Deno.Command("setsid", {
    args: [
      "bash",
      "-c",
      'exec "$0" "$@" >"$LOG" 2>&1 </dev/null',
      join(PROJECT_ROOT, "tools/start_rgw.sh"),
      clusterDir,
      String(port),
      String(monPort),
      String(monV2Port),
    ],
    env: { LOG: logPath },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  const stdout = await Deno.readTextFile(logPath).catch(() => "");
  const ready = /READY endpoint=(\S+) key=(\S+) secret=(\S+) pids: \d+ \d+ (\d+)/.exec(stdout);
  const stopCommand = new Deno.Command(join(PROJECT_ROOT, "tools/stop_rgw.sh"), {
    args: [clusterDir],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  });
  const stop = async () => {
    await stopCommand.output();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const stopSync = () => {
    stopCommand.outputSync();
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone */ }
  };
  if (!output.success || ready === null) {
    await stop();
    throw new Error(`radosgw did not start (exit ${output.code}):\n${stdout.slice(-2000)}`);
  }
  const [, endpoint, accessKeyId, secretAccessKey, rgwPid] = ready;
  const admin = s3Client({ endpoint, region: "us-east-1", accessKeyId, secretAccessKey });
  return {
    endpoint,
    accessKeyId,
    secretAccessKey,
    rgwPid: Number(rgwPid),
    async bucket(overrides = {}) {
      const bucket = `uds-${crypto.randomUUID().slice(0, 8)}`;
      await admin.send(new CreateBucketCommand({ Bucket: bucket }));
      return {
        endpoint,
        region: "us-east-1",
        bucket,
        prefix: "",
        accessKeyId,
        secretAccessKey,
        forcePathStyle: true,
        sweepAfterSeconds: 86_400,
        timeoutSeconds: 10,
        ...overrides,
      };
    },
    env: (s3) => ({
      APP_STORAGE: "s3",
      APP_S3_ENDPOINT: s3.endpoint ?? "",
      APP_S3_REGION: s3.region,
      APP_S3_BUCKET: s3.bucket,
      APP_S3_PREFIX: s3.prefix,
      APP_S3_ACCESS_KEY_ID: s3.accessKeyId ?? "",
      APP_S3_SECRET_ACCESS_KEY: s3.secretAccessKey ?? "",
      APP_S3_FORCE_PATH_STYLE: String(s3.forcePathStyle),
      APP_S3_SWEEP_AFTER_SECONDS: String(s3.sweepAfterSeconds),
      APP_S3_TIMEOUT_SECONDS: String(s3.timeoutSeconds),
    }),
    stop,
    stopSync,
  };
}

/**
 * One radosgw for the tests of a file: the first call starts it, later calls get the same one,
 * and it stops when the file's tests are done (the module unloads), failed ones included. Each
 * test takes a fresh bucket of it (`rgw.bucket()`), so they share the daemons, not the data.
 */
export function rgwOfFile(): () => Promise<Rgw> {
  let started: Promise<Rgw> | undefined;
  let running: Rgw | undefined;
  return () => {
    if (started === undefined) {
      started = startRgw().then((rgw) => running = rgw);
      globalThis.addEventListener("unload", () => running?.stopSync());
    }
    return started;
  };
}

/**
 * A test with a radosgw of its own, started before `fn` and stopped after it (pass or fail), or
 * with the file's shared one; skipped when Ceph is not installed.
 */
export function rgwTest(
  name: string,
  fn: (t: Deno.TestContext, rgw: Rgw) => Promise<void>,
  /** A radosgw shared with the file's other tests (`rgwOfFile()`) instead of one of its own. */
  shared?: () => Promise<Rgw>,
): void {
  Deno.test({
    name,
    ignore: cephMissing !== undefined,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn(t) {
      if (shared !== undefined) return await fn(t, await shared());
      const rgw = await startRgw();
      try {
        await fn(t, rgw);
      } finally {
        await rgw.stop();
      }
    },
  });
}
