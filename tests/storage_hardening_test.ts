/**
 * Issue 9 items 4, 5 and 7: private file modes, upload parts left by a dead
 * writer, and a full disk during an upload.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createBackup } from "../src/backup/backup.ts";
import { makePrivateDir, openPrivateKv, openToOthersWarning } from "../src/lib/private_files.ts";
import { PART_GRACE_MS, saveArtifact, sweepAbandonedParts } from "../src/storage/artifacts.ts";
import { createFsStore, publishRelease } from "../src/storage/mod.ts";
import { createProject } from "../src/projects/projects.ts";
import { createAdminTestApp, listArtifactFiles, signedInClient } from "./admin_helpers.ts";
import { seedProject } from "./helpers.ts";
import { createStore } from "../src/kv/store.ts";

function modeOf(info: Deno.FileInfo): string {
  return ((info.mode ?? 0) & 0o777).toString(8);
}

async function modesUnder(dir: string): Promise<Map<string, string>> {
  const modes = new Map<string, string>();
  const walk = async (path: string, name: string) => {
    const info = await Deno.lstat(path);
    modes.set(name, modeOf(info));
    if (info.isDirectory) {
      for await (const entry of Deno.readDir(path)) {
        await walk(join(path, entry.name), join(name, entry.name));
      }
    }
  };
  await walk(dir, ".");
  return modes;
}

Deno.test("issue 9.4: KV files, artifacts and backups are 0600 in 0700 directories whatever the umask", async () => {
  const root = await Deno.makeTempDir({ prefix: "uds-modes-" });
  const previous = Deno.umask(0);
  try {
    const dataDir = join(root, "data", "nested");
    await makePrivateDir(dataDir);
    const kvPath = join(dataDir, "kv.sqlite3");
    const kv = await openPrivateKv(kvPath);
    const store = createStore(kv);
    try {
      const project = await createProject(store, { name: "App", slug: "app" });
      await publishRelease(store, createFsStore(join(dataDir, "artifacts")), {
        release: { project_id: project.id, version: "1.0.0", filename: "a.bin" },
        source: ReadableStream.from([new Uint8Array(1000)]),
        maxBytes: 1 << 20,
      });
      await createBackup({ kvPath, artifactsDir: join(dataDir, "artifacts") }, join(root, "bk"));
      // A second KV handle (the backup's) must not widen the files either.
      await kv.set(["x"], 1);
    } finally {
      kv.close();
    }
    const modes = await modesUnder(root);
    for (const [name, mode] of modes) {
      if (name === ".") continue;
      const info = await Deno.lstat(join(root, name));
      assert.equal(mode, info.isDirectory ? "700" : "600", name);
    }
    assert.ok(modes.has("data/nested/kv.sqlite3-wal") || modes.has("data/nested/kv.sqlite3"));
    assert.ok([...modes.keys()].some((name) => name.startsWith("data/nested/artifacts/")));
    assert.ok(modes.has("bk/manifest.json"));
  } finally {
    Deno.umask(previous);
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("issue 9.4: a data dir readable by others is named in a warning", async () => {
  const dir = await Deno.makeTempDir({ prefix: "uds-open-" });
  try {
    await Deno.chmod(dir, 0o755);
    assert.match(
      (await openToOthersWarning(dir))!,
      /can be read by other users \(mode 755\).*chmod 700/,
    );
    await Deno.chmod(dir, 0o700);
    assert.equal(await openToOthersWarning(dir), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** An upload that sends one chunk and then waits until `release` resolves. */
function stalledUpload(release: Promise<void>): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream({
    async pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new Uint8Array(2 * 1024 * 1024));
        return;
      }
      await release;
      controller.close();
    },
  });
}

async function partsIn(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.endsWith(".part")) names.push(entry.name);
  }
  return names.sort();
}

Deno.test("issue 9.5: upload parts of a killed writer are swept, live parts are kept", async () => {
  const dir = await Deno.makeTempDir({ prefix: "uds-parts-" });
  const artifactsModule = new URL("../src/storage/artifacts.ts", import.meta.url).href;
  try {
    // Another process (as another instance would) starts an upload and is killed with -9.
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { saveArtifact } from "${artifactsModule}";
         setInterval(() => {}, 1000);
         const stream = new ReadableStream({
           start(c) { c.enqueue(new Uint8Array(2 * 1024 * 1024)); },
           pull() { return new Promise(() => {}); },
         });
         await saveArtifact(${JSON.stringify(dir)}, stream, { maxBytes: 1 << 30 });`,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    let dead: string[] = [];
    for (let i = 0; i < 200 && dead.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      dead = await partsIn(dir);
    }
    assert.equal(dead.length, 1, "the child's part appears");
    await new Promise((resolve) => setTimeout(resolve, 300));
    child.kill("SIGKILL");
    await child.status;

    // A live upload in this process.
    const release = Promise.withResolvers<void>();
    const live = saveArtifact(dir, stalledUpload(release.promise), { maxBytes: 1 << 30 });
    let parts: string[] = [];
    for (let i = 0; i < 100 && parts.length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      parts = await partsIn(dir);
    }
    assert.equal(parts.length, 2);

    // Within the grace period nothing is removed; after it, only the dead part.
    assert.equal(await sweepAbandonedParts(dir), 0);
    assert.equal(await sweepAbandonedParts(dir, Date.now() + PART_GRACE_MS + 1000), 1);
    const left = await partsIn(dir);
    assert.equal(left.length, 1);
    assert.notEqual(left[0], dead[0]);

    release.resolve();
    const stored = await live;
    assert.equal(stored.size_bytes, 2 * 1024 * 1024);
    assert.deepEqual(await partsIn(dir), []);
    assert.equal((await Deno.stat(join(dir, stored.storage_key))).size, 2 * 1024 * 1024);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Mounts a tmpfs of `size` at a new directory, or returns null when this user cannot. */
async function smallDisk(
  size: string,
): Promise<{ dir: string; unmount: () => Promise<void> } | null> {
  const dir = await Deno.makeTempDir({ prefix: "uds-full-" });
  const mounted = await new Deno.Command("mount", {
    args: ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir],
    stdout: "null",
    stderr: "null",
  }).output().catch(() => ({ success: false }));
  if (!mounted.success) {
    await Deno.remove(dir);
    return null;
  }
  return {
    dir,
    unmount: async () => {
      await new Deno.Command("umount", { args: [dir] }).output();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("issue 9.7: a full disk during an upload answers 507 and stores nothing", async (t) => {
  const disk = await smallDisk("3m");
  if (disk === null) {
    console.warn("skipped: mounting a small tmpfs needs root (mount -t tmpfs)");
    return;
  }
  const artifactsDir = join(disk.dir, "artifacts");
  const app = await createAdminTestApp({ artifactsDir, maxUploadBytes: 64 * 1024 * 1024 });
  try {
    await seedProject(app, { slug: "app" });
    const client = await signedInClient(app);

    await t.step("the upload that does not fit: 507, the storage named, no file left", async () => {
      await client.page("/admin/projects/app");
      const res = await client.upload("/admin/projects/app/releases", [
        ["csrf_token", client.csrfToken],
        ["version", "1.0.0"],
        ["file", new File([new Uint8Array(8 * 1024 * 1024)], "big.bin")],
      ]);
      assert.equal(res.status, 507);
      assert.match(await res.text(), /storage ran out of space/);
      assert.deepEqual(await listArtifactFiles(app), []);
    });

    await t.step("the space comes back: an upload that fits is stored", async () => {
      await client.page("/admin/projects/app");
      const res = await client.upload("/admin/projects/app/releases", [
        ["csrf_token", client.csrfToken],
        ["version", "1.0.1"],
        ["file", new File([new Uint8Array(2 * 1024 * 1024)], "fits.bin")],
      ]);
      assert.equal(res.status, 303);
      assert.equal((await listArtifactFiles(app)).length, 1);
    });
  } finally {
    await app.close();
    await disk.unmount();
  }
});
