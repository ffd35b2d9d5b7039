/** Shared fixtures: an app on in-memory KVs and a temp data dir, plus seed helpers. */
import { join } from "node:path";
import { createApp } from "../src/app.ts";
import { publishRelease } from "../src/artifacts.ts";
import { type Config, testConfig } from "../src/config.ts";
import {
  type ApiKeyInput,
  createApiKey,
  createProject,
  type ProjectInput,
  type Release,
} from "../src/store/mod.ts";

export interface TestApp {
  app: ReturnType<typeof createApp>;
  kv: Deno.Kv;
  rateLimitKv: Deno.Kv;
  config: Config;
  /** GET (or other method) with an optional bearer key. */
  request: (path: string, key?: string, init?: RequestInit) => Promise<Response>;
  close: () => Promise<void>;
}

export async function createTestApp(overrides: Partial<Config> = {}): Promise<TestApp> {
  const kv = await Deno.openKv(":memory:");
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
  const app = createApp({ config, kv, rateLimitKv, recordKeyUse: () => {} });
  return {
    app,
    kv,
    rateLimitKv,
    config,
    request: (path, key, init = {}) => {
      const headers = new Headers(init.headers);
      if (key !== undefined) headers.set("authorization", `Bearer ${key}`);
      return Promise.resolve(app.request(path, { ...init, headers }));
    },
    close: async () => {
      kv.close();
      rateLimitKv.close();
      await Deno.remove(dataDir, { recursive: true });
    },
  };
}

export function seedProject(t: TestApp, input: Partial<ProjectInput> & { slug: string }) {
  return createProject(t.kv, { name: input.name ?? input.slug, ...input });
}

export function seedRelease(
  t: TestApp,
  projectId: number,
  version: string,
  bytes: Uint8Array = new TextEncoder().encode(`artifact ${version}`),
  extra: { filename?: string; build?: string; content_type?: string; release_notes?: string } = {},
): Promise<Release> {
  return publishRelease(
    t.kv,
    t.config.artifactsDir,
    { project_id: projectId, version, filename: extra.filename ?? `app-${version}.bin`, ...extra },
    ReadableStream.from([bytes]),
    t.config.maxUploadBytes,
  );
}

export async function seedKey(t: TestApp, input: Partial<ApiKeyInput> = {}) {
  const { apiKey, secret } = await createApiKey(t.kv, {
    name: "test key",
    can_download: true,
    scope_mode: "all_projects",
    ...input,
  });
  return { apiKey, secret };
}
