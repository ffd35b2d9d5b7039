/**
 * The round trip: a populated service is backed up while it serves downloads
 * (`deno task backup`), restored into a fresh data dir (`deno task restore`),
 * and a second service on the restored dir gives the same answer to every
 * client API request, byte for byte.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { recordApiKeyUse, setApiKeyActive } from "../src/credentials/api_keys.ts";
import { BACKUP_SKIPPED_PREFIXES, BACKUP_VOLATILE_PREFIXES } from "../src/kv/keys.ts";
import { runBlockMapBuild } from "../src/blockmap/background.ts";
import { createFsStore } from "../src/storage/mod.ts";
import { setProjectState } from "../src/projects/projects.ts";
import { setReleaseState } from "../src/releases/releases.ts";
import { countDownload } from "../src/stats/downloads.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { makeDataTempDir, runTask, type ServerProcess, startServer } from "./server_process.ts";

const text = (s: string) => new TextEncoder().encode(s);

function underAny(key: Deno.KvKey, prefixes: readonly Deno.KvKey[]): boolean {
  return prefixes.some((prefix) => prefix.every((part, i) => key[i] === part));
}

/**
 * Entries the service writes after its answers, batched (adoption's sightings of each client):
 * one may land after the backup's snapshot, so a copy holds what the source held at that moment.
 */
const TRAFFIC_PREFIXES: Deno.KvKey[] = [
  ["adoption_client"],
  ["adoption_count"],
  ["adoption_new_ids"],
];

/** Every KV entry as [key, value], and the download counters and traffic keys separately. */
async function dumpKv(dataDir: string) {
  const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
  const stable: [Deno.KvKey, unknown][] = [];
  const downloads = new Map<number, bigint>();
  const traffic = new Set<string>();
  for await (const entry of kv.list({ prefix: [] })) {
    if (underAny(entry.key, BACKUP_SKIPPED_PREFIXES)) continue;
    if (underAny(entry.key, TRAFFIC_PREFIXES)) {
      traffic.add(JSON.stringify(entry.key));
    } else if (entry.key[0] === "release_downloads") {
      downloads.set(entry.key[1] as number, (entry.value as Deno.KvU64).value);
    } else if (!underAny(entry.key, BACKUP_VOLATILE_PREFIXES)) {
      stable.push([entry.key, entry.value]);
    }
  }
  kv.close();
  return { stable, downloads, traffic };
}

const COMPARED_HEADERS = [
  "content-type",
  "content-length",
  "content-disposition",
  "www-authenticate",
  "retry-after",
  "cache-control",
  "etag",
];

async function answer(server: ServerProcess, path: string, key?: string) {
  const res = await fetch(server.baseUrl + path, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const headers = Object.fromEntries(
    COMPARED_HEADERS.flatMap((name) =>
      res.headers.has(name) ? [[name, res.headers.get(name)]] : []
    ),
  );
  const json = res.headers.get("content-type")?.startsWith("application/json");
  const body = json
    ? JSON.parse(new TextDecoder().decode(bytes))
    : { sha256: createHash("sha256").update(bytes).digest("hex"), size: bytes.length };
  if (path === "/healthz") delete body.timestamp;
  return { status: res.status, headers, body };
}

Deno.test("backup while serving, restore, and every API answer is the same", async (t) => {
  const root = await makeDataTempDir("test-round-trip");
  const sourceDir = join(root, "source");
  const restoredDir = join(root, "restored");
  const backupDir = join(root, "backup");

  // ---- a populated service: every state the API distinguishes
  const fx = await openDataDir(sourceDir);
  const desktop = await fx.project({ name: "Desktop", slug: "desktop", tags: ["apps"] });
  const mobile = await fx.project({
    name: "Mobile ✓",
    slug: "mobile",
    description: "phones & tablets",
    tags: ["apps", "beta"],
  });
  const legacy = await fx.project({ name: "Legacy", slug: "legacy" });
  await fx.project({ name: "Tools", slug: "tools", tags: ["internal"] });
  const internal = await fx.project({ name: "Internal", slug: "internal", tags: ["internal"] });
  const releases = [
    await fx.release(desktop.id, "1.0.0", text("desktop 1.0.0")),
    await fx.release(desktop.id, "1.1.0", new Uint8Array(150_000).fill(0xab), {
      build: "1100",
      release_notes: "Faster.\nSmaller.",
    }),
    await fx.release(desktop.id, "1.2.0-rc.1", text("desktop rc")),
    await fx.release(mobile.id, "3.0.0", text("mobile"), {
      filename: "mobile app.apk",
      content_type: "application/vnd.android.package-archive",
      release_notes: "Grüße 🚀",
    }),
    await fx.release(legacy.id, "0.9", text("legacy")),
    await fx.release(internal.id, "2024.05", text("internal")),
  ];
  await setReleaseState(fx.store, releases[2].id, "archived");
  await setProjectState(fx.store, legacy.id, "archived");
  const keys = {
    all: await fx.key({ name: "all" }),
    allowDesktop: await fx.key({ scope_mode: "project_allow_list", project_ids: [desktop.id] }),
    denyDesktop: await fx.key({ scope_mode: "project_deny_list", project_ids: [desktop.id] }),
    allowBeta: await fx.key({ scope_mode: "tag_allow_list", tags: ["beta"] }),
    denyInternal: await fx.key({ scope_mode: "tag_deny_list", tags: ["internal"] }),
    emptyAllow: await fx.key({ scope_mode: "project_allow_list", project_ids: [] }),
    noDownload: await fx.key({ can_download: false }),
    expired: await fx.key({ expires_at: "2020-01-01T00:00:00Z" }),
    disabled: await fx.key({ name: "disabled" }),
    future: await fx.key({ expires_at: "2999-01-01T00:00:00Z" }),
  };
  await setApiKeyActive(fx.store, keys.disabled.apiKey.id, false);
  for (let i = 0; i < 3; i++) {
    await countDownload(fx.store, {
      releaseId: releases[1].id,
      projectId: releases[1].project_id,
      keyId: keys.all.apiKey.id,
    });
  }
  await recordApiKeyUse(fx.store, keys.all.apiKey.id, "2026-01-01T00:00:00.000Z");
  // The block maps the service would build in the background, built now: it starts with none to
  // build, so its builder writes nothing while the backup and the compare run (a map it finished
  // after the backup's snapshot would be in the source and not in the copy).
  const blockMaps = await runBlockMapBuild({
    store: fx.store,
    artifacts: createFsStore(join(sourceDir, "artifacts")),
    report: () => {},
  });
  assert.equal(blockMaps.built, releases.length);
  fx.close();

  const source = await startServer(sourceDir);
  let restored: ServerProcess | null = null;
  try {
    const before = await dumpKv(sourceDir);

    await t.step("backup runs while the service serves downloads", async () => {
      let serving = true;
      let served = 0;
      const traffic = (async () => {
        while (serving) {
          const res = await fetch(`${source.baseUrl}/api/v1/releases/${releases[1].id}/download`, {
            headers: { authorization: `Bearer ${keys.all.secret}` },
          });
          await res.arrayBuffer();
          assert.equal(res.status, 200);
          served++;
        }
      })();
      const backup = await runTask(["backup", backupDir], { APP_DATA_DIR: sourceDir });
      serving = false;
      await traffic;
      assert.equal(backup.code, 0, backup.stderr);
      assert.match(backup.stdout, /5 projects, 6 releases, 10 API keys.*6 artifacts/);
      assert.ok(served > 0, "downloads ran during the backup");
    });

    await t.step("restore refuses the live data dir and fills a fresh one", async () => {
      const refused = await runTask(["restore", backupDir], { APP_DATA_DIR: sourceDir });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /exists: restore only into an empty data dir/);
      const restore = await runTask(["restore", backupDir], { APP_DATA_DIR: restoredDir });
      assert.equal(restore.code, 0, restore.stderr);
    });

    await t.step("the restored KV holds the same entries", async () => {
      const after = await dumpKv(sourceDir);
      const copy = await dumpKv(restoredDir);
      assert.deepEqual(copy.stable, after.stable);
      assert.ok(copy.stable.length > 40);
      for (const key of copy.traffic) assert.ok(after.traffic.has(key), key);
      // Counters kept changing during the backup: the copy holds a value from that window.
      for (const [id, count] of after.downloads) {
        const got = copy.downloads.get(id) ?? 0n;
        assert.ok(got >= (before.downloads.get(id) ?? 0n) && got <= count, `release ${id}: ${got}`);
      }
      assert.ok((copy.downloads.get(releases[1].id) ?? 0n) >= 3n);
    });

    restored = await startServer(restoredDir);

    await t.step("every client API answer and download is the same", async () => {
      const secrets: [string, string | undefined][] = [
        ...Object.entries(keys).map(([name, key]): [string, string] => [name, key.secret]),
        ["no key", undefined],
        ["unknown key", "uds_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"],
      ];
      const slugs = ["desktop", "mobile", "legacy", "tools", "internal", "nope"];
      const ids = [...releases.map((r) => String(r.id)), "999", "abc"];
      const paths = [
        "/api/v1/projects",
        ...slugs.map((slug) => `/api/v1/projects/${slug}/releases/latest`),
        ...ids.map((id) => `/api/v1/releases/${id}`),
        ...ids.map((id) => `/api/v1/releases/${id}/download`),
      ];
      const statuses = new Map<number, number>();
      for (const path of ["/healthz", "/api/v1"]) {
        assert.deepEqual(await answer(restored!, path), await answer(source, path), path);
      }
      for (const [name, secret] of secrets) {
        for (const path of paths) {
          const expected = await answer(source, path, secret);
          assert.deepEqual(
            await answer(restored!, path, secret),
            expected,
            `${path} (${name} key)`,
          );
          statuses.set(expected.status, (statuses.get(expected.status) ?? 0) + 1);
        }
      }
      // The comparison covered real answers, not only errors.
      assert.ok((statuses.get(200) ?? 0) >= 40, JSON.stringify([...statuses]));
      for (const status of [400, 401, 403, 404]) assert.ok(statuses.has(status), `no ${status}`);
      const latest = await answer(
        restored!,
        "/api/v1/projects/desktop/releases/latest",
        keys.all.secret,
      );
      assert.equal(latest.body.release.version, "1.1.0");
      const download = await answer(
        restored!,
        `/api/v1/releases/${releases[1].id}/download`,
        keys.all.secret,
      );
      assert.deepEqual(download.body, { sha256: releases[1].checksum_sha256, size: 150_000 });
    });
  } finally {
    await source.stop();
    await restored?.stop();
  }
  await Deno.remove(root, { recursive: true });
});
