/**
 * Fixtures written straight into a real data dir (KV file + artifacts/)
 * through the store layer, for tests that run the service as a process.
 */
import { join } from "node:path";
import { createFsStore, publishRelease } from "../src/storage/mod.ts";
import { type ApiKeyInput, createApiKey } from "../src/credentials/api_keys.ts";
import { createProject, type ProjectInput } from "../src/projects/projects.ts";
import { createStore, type Store } from "../src/kv/store.ts";

export interface DataDirFixtures {
  kv: Deno.Kv;
  /** The store over `kv` the fixtures write through. */
  store: Store;
  project: (input: ProjectInput) => ReturnType<typeof createProject>;
  release: (
    projectId: number,
    version: string,
    bytes: Uint8Array,
    extra?: {
      filename?: string;
      build?: string;
      content_type?: string;
      release_notes?: string;
      /** The release's Sparkle signature (base64), for its appcast item. */
      sparkle_signature?: string;
      /** false: stored active, but the latest stays (publishing's "not latest"). */
      make_latest?: boolean;
    },
  ) => ReturnType<typeof publishRelease>;
  key: (input: Partial<ApiKeyInput>) => ReturnType<typeof createApiKey>;
  close: () => void;
}

export async function openDataDir(dataDir: string): Promise<DataDirFixtures> {
  await Deno.mkdir(dataDir, { recursive: true });
  const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
  const store = createStore(kv);
  const artifacts = createFsStore(join(dataDir, "artifacts"));
  return {
    kv,
    store,
    project: (input) => createProject(store, input),
    release: (projectId, version, bytes, extra = {}) =>
      publishRelease(store, artifacts, {
        release: { project_id: projectId, version, filename: `app-${version}.bin`, ...extra },
        source: ReadableStream.from([bytes]),
        maxBytes: Number.MAX_SAFE_INTEGER,
      }),
    key: (input) =>
      createApiKey(store, {
        name: "key",
        can_download: true,
        scope_mode: "all_projects",
        ...input,
      }),
    close: () => kv.close(),
  };
}

/** Where backup and restore find the KV file and the artifacts of `dataDir`. */
export function dataLocation(dataDir: string): { kvPath: string; artifactsDir: string } {
  return { kvPath: join(dataDir, "kv.sqlite3"), artifactsDir: join(dataDir, "artifacts") };
}

/**
 * An API key that downloads from every project, written into the data dir's KV (the service may
 * be running on it: its reads see the new key).
 */
export async function createClientKey(dataDir: string): ReturnType<typeof createApiKey> {
  const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
  const store = createStore(kv);
  try {
    return await createApiKey(store, {
      name: "client",
      can_download: true,
      scope_mode: "all_projects",
    });
  } finally {
    kv.close();
  }
}
