/**
 * The bench's data sets, written through the store layer straight into the
 * KV file of a data dir before the service starts on it (so no two
 * processes ever hold the file at once).
 */
import { join } from "node:path";
import { fillerStream } from "./filler.ts";
import { saveArtifact } from "../src/storage/artifacts.ts";
import { createFsStore, publishRelease } from "../src/storage/mod.ts";
import { loadConfig } from "../src/lib/config.ts";
import { createApiKey } from "../src/credentials/api_keys.ts";
import { createApiKeysBulk, createReleasesBulk } from "../src/seeding/bulk.ts";
import { createProject } from "../src/projects/projects.ts";
import { startRollout } from "../src/releases/rollouts.ts";
import type { Release } from "../src/releases/types.ts";
import { createStore, type Store } from "../src/kv/store.ts";

/** Where the service keeps its KV file and artifacts for a data dir (src/lib/config.ts decides). */
export function storagePaths(dataDir: string): { kvPath: string; artifactsDir: string } {
  const config = loadConfig({ APP_DATA_DIR: dataDir });
  return { kvPath: config.kvPath, artifactsDir: config.artifactsDir };
}

export async function withStore<T>(dataDir: string, fn: (store: Store) => Promise<T>): Promise<T> {
  await Deno.mkdir(dataDir, { recursive: true });
  const kv = await Deno.openKv(storagePaths(dataDir).kvPath);
  const store = createStore(kv);
  try {
    return await fn(store);
  } finally {
    kv.close();
  }
}

/** Writes a file of `bytes` filler bytes. */
export async function writeFillerFile(path: string, bytes: number): Promise<void> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  await fillerStream(bytes).pipeTo(file.writable);
}

export interface BasicData {
  slug: string;
  key: string;
  release: Release;
  artifactPath: string;
}

/** One project `app`, one release with an artifact of `artifactBytes`, one key for all projects. */
export function seedBasic(dataDir: string, artifactBytes: number): Promise<BasicData> {
  return withStore(dataDir, async (store) => {
    const { artifactsDir } = storagePaths(dataDir);
    const project = await createProject(store, { name: "App", slug: "app" });
    const release = await publishRelease(store, createFsStore(artifactsDir), {
      release: { project_id: project.id, version: "1.0.0", filename: "app-1.0.0.bin" },
      source: fillerStream(artifactBytes),
      maxBytes: Number.MAX_SAFE_INTEGER,
    });
    const { secret } = await createApiKey(store, {
      name: "bench",
      can_download: true,
      scope_mode: "all_projects",
    });
    return {
      slug: project.slug,
      key: secret,
      release,
      artifactPath: join(artifactsDir, release.storage_key),
    };
  });
}

/** `total` projects and one key whose allow list holds `allowed` of them, spread evenly. */
export function seedProjects(
  dataDir: string,
  total: number,
  allowed: number,
): Promise<{ key: string }> {
  return withStore(dataDir, async (store) => {
    const ids: number[] = [];
    for (let i = 0; i < total; i++) {
      const project = await createProject(store, {
        name: `Project ${i + 1}`,
        slug: `project-${i + 1}`,
        description: `Bench project number ${i + 1}`,
        tags: i % 2 === 0 ? ["even"] : ["odd"],
      });
      ids.push(project.id);
    }
    const step = total / allowed;
    const allowList = Array.from({ length: allowed }, (_, i) => ids[Math.floor(i * step)]);
    const { secret } = await createApiKey(store, {
      name: "allow list",
      can_download: true,
      scope_mode: "project_allow_list",
      project_ids: allowList,
    });
    return { key: secret };
  });
}

/**
 * One project `app` with `releases` releases (one stored artifact, shared by
 * their records) and `keys` keys; returns the key in the middle of the range.
 */
export function seedLarge(
  dataDir: string,
  releases: number,
  keys: number,
): Promise<{ slug: string; key: string; latest: Release }> {
  return withStore(dataDir, async (store) => {
    const { artifactsDir } = storagePaths(dataDir);
    const project = await createProject(store, { name: "App", slug: "app" });
    const artifact = await saveArtifact(artifactsDir, fillerStream(4096), {
      maxBytes: Number.MAX_SAFE_INTEGER,
    });
    const start = Date.now() - releases * 60_000;
    const [created, apiKeys] = await Promise.all([
      createReleasesBulk(
        store,
        Array.from({ length: releases }, (_, i) => ({
          version: `1.${Math.floor(i / 100)}.${i % 100}`,
          build: String(i + 1),
          filename: `app-${i + 1}.bin`,
          release_notes: `Release ${i + 1} of the bench project.`,
          created_at: new Date(start + i * 60_000).toISOString(),
          ...artifact,
        })),
        { projectId: project.id },
      ),
      createApiKeysBulk(
        store,
        Array.from({ length: keys }, (_, i) => ({
          name: `bulk key ${i + 1}`,
          can_download: true,
          scope_mode: i % 3 === 0 ? "project_allow_list" : "all_projects",
          project_ids: i % 3 === 0 ? [project.id] : [],
        })),
      ),
    ]);
    // A key from the middle of the id range with the same scope as the small data set's key.
    let pick = Math.floor(apiKeys.length / 2);
    while (pick < apiKeys.length - 1 && apiKeys[pick].apiKey.scope_mode !== "all_projects") pick++;
    return { slug: project.slug, key: apiKeys[pick].secret, latest: created[created.length - 1] };
  });
}

/** One empty project `upload` to upload into. */
export function seedUpload(dataDir: string): Promise<{ slug: string }> {
  return withStore(dataDir, async (store) => {
    const project = await createProject(store, { name: "Upload", slug: "upload" });
    return { slug: project.slug };
  });
}

/** The rollout data set: project `rolling`, release 1.0.0 latest, 1.1.0 rolled out to `percentage` %. */
export interface RolloutData {
  slug: string;
  key: string;
  previous: Release;
  release: Release;
}

export function seedRollout(dataDir: string, percentage: number): Promise<RolloutData> {
  return withStore(dataDir, async (store) => {
    const artifacts = createFsStore(storagePaths(dataDir).artifactsDir);
    const project = await createProject(store, { name: "Rolling", slug: "rolling" });
    const publish = (version: string, latest: boolean) =>
      publishRelease(store, artifacts, {
        release: {
          project_id: project.id,
          version,
          filename: `rolling-${version}.bin`,
          make_latest: latest,
        },
        source: fillerStream(4096),
        maxBytes: Number.MAX_SAFE_INTEGER,
      });
    const previous = await publish("1.0.0", true);
    const release = await publish("1.1.0", false);
    await startRollout(store, release.id, { percentage });
    const { secret } = await createApiKey(store, {
      name: "rollout bench",
      can_download: true,
      scope_mode: "all_projects",
    });
    return { slug: project.slug, key: secret, previous, release };
  });
}
