/** Shared fixtures: an app on in-memory KVs and a temp data dir, seed helpers, KV utilities. */
import { createMetrics } from "../src/lib/metrics.ts";
import { createHash, type Hash } from "node:crypto";
import { join } from "node:path";
import { createApp } from "../app.ts";
import type { SsoService } from "../src/sso/mod.ts";
import { type ArtifactStore, createFsStore, publishRelease } from "../src/storage/mod.ts";
import { type Config, loadConfig } from "../src/lib/config.ts";
import { createSigner, type Signer } from "../src/signing/signer.ts";
import { type AdoptionRecorder, createAdoptionRecorder } from "../src/reports/adoption_recorder.ts";
import { buildAggregates } from "../src/projects/aggregates.ts";
import { type ApiKeyInput, createApiKey } from "../src/credentials/api_keys.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import { createProject, type ProjectInput } from "../src/projects/projects.ts";
import { getDownloadCounts } from "../src/releases/releases.ts";
import { createReportRecorder, type ReportRecorder } from "../src/reports/report_recorder.ts";
import { createSigningKey, setSigningKeyStatus } from "../src/signing/signing_keys.ts";
import type { Release } from "../src/releases/types.ts";
import { createStore, type Store } from "../src/kv/store.ts";
import { createKeyFiles } from "../src/signing/key_files.ts";
import { rolloutBucket } from "../src/releases/offer.ts";
import { runVelopackDeltas } from "../src/deltas/background.ts";
import { createLogger } from "../src/lib/log.ts";

/**
 * A config for tests: the defaults, with a data dir under ./data/test, and
 * `overrides`. `UDS_TEST_SIGNING=1` in the environment runs the tests with
 * signed answers (docs/signing.md; `UDS_TEST_SIGNING=1 deno task test`).
 */
export function testConfig(overrides: Partial<Config> = {}): Config {
  const signing = Deno.env.get("UDS_TEST_SIGNING") === "1" ? "true" : "false";
  return { ...loadConfig({ APP_DATA_DIR: "./data/test", APP_SIGNING: signing }), ...overrides };
}

/** An app under test; `await using t = await createTestApp()` closes it at the end of the scope. */
/**
 * The metrics every test app records into (one registry for the test
 * process, as main.ts has one for the service): tests read what moved.
 */
export const testMetrics = createMetrics();

export interface TestApp extends AsyncDisposable {
  app: ReturnType<typeof createApp>;
  kv: Deno.Kv;
  /** The store over `kv` that seeds and reads go through (the app's own, unless `wrapKv` is given). */
  store: Store;
  rateLimitKv: Deno.Kv;
  artifacts: ArtifactStore;
  config: Config;
  /** The app's answer signer (docs/signing.md): tests reload its keys after changing them. */
  signer: Signer;
  /** The app's adoption recorder (docs/rollouts.md "Adoption"): `flush` before reading counts. */
  adoption: AdoptionRecorder;
  /** The app's install report recorder (docs/reports.md): `flush` before reading counts. */
  reports: ReportRecorder;
  /** GET (or other method) with an optional bearer key. */
  request: (path: string, key?: string, init?: RequestInit) => Promise<Response>;
  /** Like `request`, as if sent from the TCP peer `address`. */
  requestFrom: (
    address: string,
    path: string,
    key?: string,
    init?: RequestInit,
  ) => Promise<Response>;
  /** Closes the KVs and removes the data dir; a second call does nothing. */
  close: () => Promise<void>;
}

export interface TestAppOptions {
  /** Wraps the main KV the app sees (the seed helpers keep the plain one). */
  wrapKv?: (kv: Deno.Kv) => Deno.Kv;
  /** Another artifact backend (an s3 bucket); by default files under the temp data dir. */
  artifacts?: ArtifactStore;
  /** A KV file to open instead of an in-memory KV (several apps on one file are instances). */
  kvPath?: string;
  /** Sign-in through an OpenID Connect provider, made by the test (tests/oidc_provider.ts). */
  sso?: (store: Store, config: Config) => SsoService;
}

export async function createTestApp(
  overrides: Partial<Config> = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const kv = await Deno.openKv(options.kvPath ?? ":memory:");
  const store = createStore(kv);
  // As main.ts does at start: a fresh KV gets its aggregates marked built.
  await buildAggregates(store);
  const rateLimitKv = await Deno.openKv(":memory:");
  const dataDir = await Deno.makeTempDir({ prefix: "uds-test-" });
  const config = testConfig({
    dataDir,
    kvPath: ":memory:",
    artifactsDir: join(dataDir, "artifacts"),
    rateLimitBurst: 1_000_000,
    rateLimitPerMinute: 1_000_000,
    ...overrides,
  });
  // Seeds written through the plain KV's store are another process to the
  // store of a wrapped KV: have it look for their writes on every request.
  const appStore = options.wrapKv ? createStore(options.wrapKv(kv), { cacheRefreshMs: 0 }) : store;
  const artifacts = options.artifacts ?? createFsStore(config.artifactsDir);
  // On the plain KV, as the seeds: a first key made at the first request is not a write a test
  // of the app's KV should count, and a faulty KV leaves the keys readable.
  const signer = createSigner({
    store,
    dataDir,
    ttlSeconds: config.signingTtlSeconds,
    enabled: config.signing,
  });
  // On the plain KV too; close() waits for its writes.
  const adoption = createAdoptionRecorder(store, { newIdsPerDay: config.adoptionNewIdsPerDay });
  const reports = createReportRecorder(store, {
    newIdsPerDay: config.reportsNewPerDay,
    settle: adoption.settle,
  });
  const app = createApp({
    signer,
    adoption,
    reports,
    config,
    store: appStore,
    artifacts,
    // Buckets in process memory (the default store) unless the test asks for the KV store.
    rateLimitKv: config.rateLimitStore === "kv" ? rateLimitKv : undefined,
    recordKeyUse: () => {},
    metrics: testMetrics,
    sso: options.sso?.(appStore, config),
  });
  let closed: Promise<void> | undefined;
  const close = () =>
    closed ??= (async () => {
      // Let fire-and-forget bookkeeping (download counts) finish before KV closes.
      await new Promise((resolve) => setTimeout(resolve, 5));
      await adoption.flush();
      await reports.flush();
      kv.close();
      rateLimitKv.close();
      await Deno.remove(dataDir, { recursive: true });
    })();
  const send = (path: string, key?: string, init: RequestInit = {}, address?: string) => {
    const headers = new Headers(init.headers);
    if (key !== undefined) headers.set("authorization", `Bearer ${key}`);
    const env = address === undefined
      ? undefined
      : { remoteAddr: { transport: "tcp", hostname: address, port: 40000 } };
    return Promise.resolve(app.request(path, { ...init, headers }, env));
  };
  return {
    app,
    kv,
    store,
    artifacts,
    rateLimitKv,
    config,
    signer,
    adoption,
    reports,
    request: (path, key, init) => send(path, key, init),
    requestFrom: (address, path, key, init) => send(path, key, init, address),
    close,
    [Symbol.asyncDispose]: close,
  };
}

export function seedProject(t: TestApp, input: Partial<ProjectInput> & { slug: string }) {
  return createProject(t.store, { name: input.name ?? input.slug, ...input });
}

export function seedRelease(
  t: TestApp,
  projectId: number,
  version: string,
  bytes: Uint8Array = new TextEncoder().encode(`artifact ${version}`),
  extra: {
    filename?: string;
    build?: string;
    content_type?: string;
    release_notes?: string;
    created_at?: string;
  } = {},
): Promise<Release> {
  return publishRelease(t.store, t.artifacts, {
    release: {
      project_id: projectId,
      version,
      filename: extra.filename ?? `app-${version}.bin`,
      ...extra,
    },
    source: ReadableStream.from([bytes]),
    maxBytes: t.config.maxUploadBytes,
  });
}

export async function seedKey(t: TestApp, input: Partial<ApiKeyInput> = {}) {
  const { apiKey, secret } = await createApiKey(t.store, {
    name: "test key",
    can_download: true,
    scope_mode: "all_projects",
    ...input,
  });
  return { apiKey, secret };
}

/** Runs `fn` with a fresh in-memory KV and a store over it; closes the KV afterwards, also when `fn` throws. */
export async function withKv<T>(fn: (kv: Deno.Kv, store: Store) => Promise<T>): Promise<T> {
  const kv = await Deno.openKv(":memory:");
  try {
    return await fn(kv, createStore(kv));
  } finally {
    kv.close();
  }
}

/** `withKv` for a test that goes through the store only. */
export function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  return withKv((_, store) => fn(store));
}

/** Every entry of a KV as [key, value] pairs, in key order. */
export async function dumpKv(kv: Deno.Kv): Promise<[Deno.KvKey, unknown][]> {
  const entries: [Deno.KvKey, unknown][] = [];
  for await (const entry of kv.list({ prefix: [] })) entries.push([entry.key, entry.value]);
  return entries;
}

/** Every KV entry as one JSON text (KvU64 counters as decimal strings), to search for secrets. */
export async function dumpKvText(kv: Deno.Kv): Promise<string> {
  return JSON.stringify(
    await dumpKv(kv),
    (_name, value) => typeof value === "bigint" ? String(value) : value,
  );
}

/** The names in a directory, or [] when it does not exist. */
export async function listDir(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names.sort();
}

/** Joins byte arrays (strings are UTF-8 encoded) into one. */
export function concatBytes(...parts: Array<string | Uint8Array>): Uint8Array {
  const encoded = parts.map((part) =>
    typeof part === "string" ? new TextEncoder().encode(part) : part
  );
  const out = new Uint8Array(encoded.reduce((n, part) => n + part.length, 0));
  let offset = 0;
  for (const part of encoded) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** The SHA-256 of bytes (or of a string's UTF-8), as 64 hex digits. */
export function sha256(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Whether anything exists at `path`. */
export async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A response's status, its body dropped. */
export async function statusOf(res: Response | Promise<Response>): Promise<number> {
  const response = await res;
  await response.body?.cancel();
  return response.status;
}

/** A release's download count, once the count of a download just served has landed. */
export async function downloadCount(store: Store, releaseId: number): Promise<number> {
  // Counting runs after the body's end, off the request: give it a moment.
  await sleep(50);
  return (await getDownloadCounts(store, [releaseId])).get(releaseId) ?? 0;
}

/** A new signing key (its files in the app's data dir), activated beside the others: its kid. */
export async function addActiveSigningKey(t: TestApp): Promise<string> {
  const next = await createKeyFiles(t.config.dataDir);
  await createSigningKey(t.store, { kid: next.kid, public_key: next.publicKey, created_by: "t" });
  await setSigningKeyStatus(t.store, { kid: next.kid, status: "active", keepOneActive: true });
  return next.kid;
}

/** Waits until `check` holds, polling every 50 ms; fails naming `what` after `ms`. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 15_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The newest audit entry. */
export async function lastAudit(t: TestApp) {
  return (await listAuditEntries(t.store, { limit: 1 })).entries[0];
}

/**
 * Reads the rest of a download into `hash`: how many bytes came, and whether the stream failed
 * (was cut) instead of ending.
 */
export async function readRest(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  hash: Hash,
): Promise<{ bytes: number; failed: boolean }> {
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes, failed: false };
      hash.update(value);
      bytes += value.length;
    }
  } catch {
    return { bytes, failed: true };
  }
}

/** Bytes that differ at every offset that matters, so a wrong slice is noticed. */
export function patternBytes(length: number): Uint8Array<ArrayBuffer> {
  return Uint8Array.from({ length }, (_, i) => (i * 7919 + (i >> 8)) & 0xff);
}

/**
 * The range tests' release: 1,000,000 pattern bytes as `desktop-2.0.0.zip` of
 * project `desktop`, with its ETag and a key that may download it.
 */
export async function seedRangeDownload(app: TestApp) {
  const project = await seedProject(app, { slug: "desktop" });
  const bytes = patternBytes(1_000_000);
  const release = await seedRelease(app, project.id, "2.0.0", bytes, {
    filename: "desktop-2.0.0.zip",
    content_type: "application/zip",
  });
  const { secret } = await seedKey(app);
  return { project, bytes, release, etag: `"${release.checksum_sha256}"`, secret };
}

/**
 * `count` install ids `${prefix}N` that the rollout of `release` at
 * `percentage` reaches (their bucket is inside it: src/releases/offer.ts).
 */
export function idsInRollout(
  release: Release,
  { percentage, count, prefix = "i-" }: { percentage: number; count: number; prefix?: string },
): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) {
    if (rolloutBucket(release.id, `install:${prefix}${i}`) < percentage * 100) {
      ids.push(`${prefix}${i}`);
    }
  }
  return ids;
}

/**
 * Each of `installIds` checks for the latest release of project `slug` once
 * and the sightings are written: the service has then offered each the
 * release it answered, and their reports of it count (docs/reports.md
 * "What the gates trust").
 */
export async function checkIn(
  t: TestApp,
  secret: string,
  { slug, installIds }: { slug: string; installIds: readonly string[] },
): Promise<void> {
  for (const installId of installIds) {
    const res = await t.request(`/api/v1/projects/${slug}/releases/latest`, secret, {
      headers: { "x-install-id": installId },
    });
    await res.body?.cancel();
  }
  await t.adoption.flush();
}

/** Pseudo-random bytes from `seed` (the same bytes for the same seed). */
export function noise(length: number, seed: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  return bytes;
}

/**
 * Another app over `t`'s config, store, artifacts and rate limits, whose access log goes (as JSON
 * lines) into `lines` and whose metrics into `metrics`.
 */
export function createLoggingApp(
  t: TestApp,
  lines: string[],
  metrics = testMetrics,
): ReturnType<typeof createApp> {
  return createApp({
    config: t.config,
    store: t.store,
    artifacts: t.artifacts,
    rateLimitKv: t.rateLimitKv,
    recordKeyUse: () => {},
    logger: createLogger("json", (line) => lines.push(line)),
    metrics,
  });
}

/** One run of the delta builder (src/deltas/background.ts) over `t`'s releases, working in `workDir`. */
export function buildDeltas(t: TestApp, workDir: string): ReturnType<typeof runVelopackDeltas> {
  return runVelopackDeltas({
    store: t.store,
    artifacts: t.artifacts,
    report: () => {},
    workDir,
  });
}

/**
 * The files of a Velopack package `DeskApp` at `version` (its nuspec, and an app script of `lines`
 * lines under lib, app), written into `pkg-{version}` under `work`: that directory, to zip.
 */
export async function writeNupkgTree(work: string, version: string, lines = 500): Promise<string> {
  const dir = join(work, `pkg-${version}`);
  await Deno.mkdir(join(dir, "lib", "app"), { recursive: true });
  await Deno.writeTextFile(
    join(dir, "DeskApp.nuspec"),
    `<package><metadata><id>DeskApp</id><version>${version}</version></metadata></package>`,
  );
  await Deno.writeTextFile(join(dir, "lib", "app", "main.js"), `// ${version}\n`.repeat(lines));
  return dir;
}
