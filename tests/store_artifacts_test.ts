/** Artifact store: streaming save, limits, and no release or stray file after any failure. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { openArtifact, removeArtifact, saveArtifact } from "../src/storage/artifacts.ts";
import { SPAWN_AFTER_BYTES } from "../src/storage/sha512_pass.ts";
import {
  createFsStore,
  EmptyUploadError,
  publishRelease,
  UploadTooLargeError,
} from "../src/storage/mod.ts";
import { ValidationError } from "../src/kv/errors.ts";
import { createProject } from "../src/projects/projects.ts";
import { listReleasesByProject } from "../src/releases/releases.ts";
import { faultyKv } from "./faults.ts";
import { dumpKv, listDir, sha256, withKv, withStore } from "./helpers.ts";
import { createStore } from "../src/kv/store.ts";

async function withDir(fn: (dir: string) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "uds-artifacts-" });
  try {
    await fn(join(root, "artifacts"));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

function chunks(...parts: string[]): ReadableStream<Uint8Array> {
  return ReadableStream.from(parts.map((part) => new TextEncoder().encode(part)));
}

/** A stream that yields `first`, then fails. */
function failingStream(first: string): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream({
    pull(controller) {
      if (sent) {
        controller.error(new Error("connection reset"));
        return;
      }
      sent = true;
      controller.enqueue(new TextEncoder().encode(first));
    },
  });
}

Deno.test("saveArtifact stores the bytes with their SHA-256 and size", () =>
  withDir(async (dir) => {
    const stored = await saveArtifact(dir, chunks("hello ", "wor", "ld"), { maxBytes: 100 });
    assert.equal(stored.size_bytes, 11);
    assert.equal(stored.checksum_sha256, sha256("hello world"));
    assert.match(stored.storage_key, /^[0-9a-f-]{36}$/);
    assert.equal(await Deno.readTextFile(join(dir, stored.storage_key)), "hello world");
    assert.deepEqual(await listDir(dir), [stored.storage_key], "no temp file left");
  }));

Deno.test("saveArtifact handles a large upload in many chunks", () =>
  withDir(async (dir) => {
    const chunk = new Uint8Array(64 * 1024).fill(7);
    const hash = createHash("sha256");
    for (let i = 0; i < 64; i++) hash.update(chunk);
    const stored = await saveArtifact(
      dir,
      ReadableStream.from(Array.from({ length: 64 }, () => chunk)),
      { maxBytes: 64 * chunk.byteLength },
    );
    assert.equal(stored.size_bytes, 4 * 1024 * 1024);
    assert.equal(stored.checksum_sha256, hash.digest("hex"));
    assert.equal((await Deno.stat(join(dir, stored.storage_key))).size, 4 * 1024 * 1024);
  }));

const MiB = 1024 * 1024;

/**
 * `total` bytes in pieces of the given sizes (repeating), every piece written
 * into the same buffer: like a reader that reuses its buffer, so bytes kept by
 * reference instead of copied would end up wrong in the file. `sha256` is of
 * the bytes as they were handed out. With `fail`, the stream errors or ends
 * there instead.
 */
function reusedBuffer(total: number, sizes: number[], fail?: { at: number; error: Error }) {
  const source = new Uint8Array(MiB + 7);
  crypto.getRandomValues(source.subarray(0, 65536));
  source.copyWithin(65536, 0);
  const buffer = new Uint8Array(Math.max(...sizes));
  const hash = createHash("sha256");
  const hash512 = createHash("sha512");
  async function* pieces() {
    let offset = 0;
    for (let i = 0; offset < total; i++) {
      if (fail && offset >= fail.at) throw fail.error;
      const size = Math.min(sizes[i % sizes.length], total - offset);
      for (let filled = 0; filled < size;) {
        const from = (offset + filled) % source.length;
        const take = Math.min(size - filled, source.length - from);
        buffer.set(source.subarray(from, from + take), filled);
        filled += take;
      }
      hash.update(buffer.subarray(0, size));
      hash512.update(buffer.subarray(0, size));
      yield buffer.subarray(0, size);
      offset += size;
    }
  }
  return {
    stream: pieces(),
    sha256: () => hash.digest("hex"),
    sha512: () => hash512.digest("base64"),
  };
}

/**
 * Paths under `dir` that this process still holds open (Linux), to see that
 * every file handle is closed. Listed by `ls`: the test task's permissions
 * keep /proc/self from Deno itself.
 */
async function openFilesIn(dir: string): Promise<string[]> {
  const { stdout } = await new Deno.Command("ls", { args: ["-l", `/proc/${Deno.pid}/fd`] })
    .output();
  return new TextDecoder().decode(stdout).split("\n").filter((line) => line.includes(dir));
}

async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of (await Deno.open(path)).readable) hash.update(chunk);
  return hash.digest("hex");
}

Deno.test("saveArtifact: odd chunk sizes across block edges, from a buffer the caller reuses", () =>
  withDir(async (dir) => {
    const total = 6 * MiB + 3;
    const sizes = [1, MiB - 1, MiB + 1, 3, 2 * MiB, 65536, 7];
    const { stream, sha256 } = reusedBuffer(total, sizes);
    const stored = await saveArtifact(dir, stream, { maxBytes: total });
    const expected = sha256();
    assert.equal(stored.size_bytes, total);
    assert.equal(stored.checksum_sha256, expected);
    assert.equal(await fileSha256(join(dir, stored.storage_key)), expected, "the file's bytes");
    assert.deepEqual(await listDir(dir), [stored.storage_key]);
  }));

Deno.test("saveArtifact: past the early-sync mark (64 MiB) stored intact, or nothing left", () =>
  withDir(async (dir) => {
    const total = 65 * MiB + 1;
    const ok = reusedBuffer(total, [256 * 1024]);
    const stored = await saveArtifact(dir, ok.stream, { maxBytes: total });
    const expected = ok.sha256();
    assert.equal(stored.checksum_sha256, expected);
    assert.equal(await fileSha256(join(dir, stored.storage_key)), expected);
    await removeArtifact(dir, stored.storage_key);

    // Failing with writes and a background sync under way: all of it is waited for and removed.
    const failing = reusedBuffer(total, [256 * 1024], {
      at: 64 * MiB + 512 * 1024,
      error: new Error("connection reset"),
    });
    await assert.rejects(
      saveArtifact(dir, failing.stream, { maxBytes: total }),
      /connection reset/,
    );
    const tooLarge = reusedBuffer(total, [256 * 1024]);
    await assert.rejects(
      saveArtifact(dir, tooLarge.stream, { maxBytes: 64 * MiB + 1 }),
      UploadTooLargeError,
    );
    assert.deepEqual(await openFilesIn(dir), [], "both handles of every upload are closed");
    assert.deepEqual(await listDir(dir), []);
  }));

Deno.test("saveArtifact: SHA-512 beside SHA-256, on this thread or in the worker", () =>
  withDir(async (dir) => {
    // Below the worker's threshold, just past it (done before the worker answers), well past it.
    const sizes = [100, SPAWN_AFTER_BYTES, SPAWN_AFTER_BYTES + 1, 5 * MiB, 40 * MiB + 5];
    for (const total of sizes) {
      const upload = reusedBuffer(total, [MiB / 4 + 3, 65536]);
      const stored = await saveArtifact(dir, upload.stream, { maxBytes: total });
      assert.equal(stored.checksum_sha256, upload.sha256(), `${total} bytes`);
      assert.equal(stored.checksum_sha512, upload.sha512(), `${total} bytes`);
      await removeArtifact(dir, stored.storage_key);
    }
    // Refused and failed with the worker hashing: the worker is ended (the test's sanitizers).
    const tooLarge = reusedBuffer(40 * MiB, [256 * 1024]);
    await assert.rejects(
      saveArtifact(dir, tooLarge.stream, { maxBytes: 30 * MiB }),
      UploadTooLargeError,
    );
    const failing = reusedBuffer(40 * MiB, [256 * 1024], {
      at: 20 * MiB,
      error: new Error("connection reset"),
    });
    await assert.rejects(saveArtifact(dir, failing.stream, { maxBytes: 40 * MiB }), /reset/);
    assert.deepEqual(await openFilesIn(dir), []);
    assert.deepEqual(await listDir(dir), []);
  }));

Deno.test("APP_MAX_UPLOAD_BYTES: exactly the limit is accepted", () =>
  withDir(async (dir) => {
    const stored = await saveArtifact(dir, chunks("12345", "67890"), { maxBytes: 10 });
    assert.equal(stored.size_bytes, 10);
  }));

Deno.test("APP_MAX_UPLOAD_BYTES: one byte over is refused while streaming, no file left", () =>
  withDir(async (dir) => {
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(4));
      },
    });
    await assert.rejects(saveArtifact(dir, endless, { maxBytes: 10 }), UploadTooLargeError);
    assert.ok(pulled <= 4, "stops reading at the limit");
    await assert.rejects(
      saveArtifact(dir, chunks("12345", "678901"), { maxBytes: 10 }),
      UploadTooLargeError,
    );
    assert.deepEqual(await listDir(dir), []);
  }));

Deno.test("an empty upload is refused, no file left", () =>
  withDir(async (dir) => {
    await assert.rejects(saveArtifact(dir, chunks(), { maxBytes: 10 }), EmptyUploadError);
    await assert.rejects(saveArtifact(dir, chunks("", ""), { maxBytes: 10 }), EmptyUploadError);
    assert.deepEqual(await listDir(dir), []);
  }));

Deno.test("a stream that fails mid-way leaves no file", () =>
  withDir(async (dir) => {
    await assert.rejects(
      saveArtifact(dir, failingStream("partial"), { maxBytes: 100 }),
      /connection reset/,
    );
    assert.deepEqual(await listDir(dir), []);
  }));

Deno.test("openArtifact streams a stored file; missing or malformed keys give null", () =>
  withDir(async (dir) => {
    const stored = await saveArtifact(dir, chunks("abc"), { maxBytes: 100 });
    const opened = await openArtifact(dir, stored.storage_key);
    assert.ok(opened);
    assert.equal(opened.size, 3);
    assert.equal(await new Response(opened.file.readable).text(), "abc");
    assert.equal(await openArtifact(dir, crypto.randomUUID()), null);
    assert.equal(await openArtifact(dir, "../../etc/passwd"), null);
    await removeArtifact(dir, stored.storage_key);
    assert.equal(await openArtifact(dir, stored.storage_key), null);
    await removeArtifact(dir, stored.storage_key); // removing twice is fine
  }));

Deno.test("publishRelease: stored bytes and the release record agree", () =>
  withDir((dir) =>
    withStore(async (store) => {
      const project = await createProject(store, { name: "App", slug: "app" });
      const release = await publishRelease(store, createFsStore(dir), {
        release: { project_id: project.id, version: "1.0", filename: "a.zip" },
        source: chunks("zip bytes"),
        maxBytes: 100,
      });
      assert.equal(release.size_bytes, 9);
      assert.equal(release.checksum_sha256, sha256("zip bytes"));
      assert.deepEqual(await listDir(dir), [release.storage_key]);
    })
  ));

Deno.test("publishRelease: a failed upload leaves no release and no file", () =>
  withDir((dir) =>
    withKv(async (kv, store) => {
      const project = await createProject(store, { name: "App", slug: "app" });
      const before = await dumpKv(kv);
      const fields = { project_id: project.id, version: "1.0", filename: "a.zip" };
      await assert.rejects(
        publishRelease(store, createFsStore(dir), {
          release: fields,
          source: chunks("x".repeat(11)),
          maxBytes: 10,
        }),
        UploadTooLargeError,
      );
      await assert.rejects(
        publishRelease(store, createFsStore(dir), {
          release: fields,
          source: chunks(),
          maxBytes: 10,
        }),
        EmptyUploadError,
      );
      await assert.rejects(
        publishRelease(store, createFsStore(dir), {
          release: fields,
          source: failingStream("x"),
          maxBytes: 10,
        }),
        /reset/,
      );
      assert.deepEqual(await dumpKv(kv), before);
      assert.deepEqual(await listDir(dir), []);
    })
  ));

Deno.test("publishRelease: a KV commit failure after the file was written removes the file", () =>
  withDir((dir) =>
    withKv(async (kv, store) => {
      const project = await createProject(store, { name: "App", slug: "app" });
      const before = await dumpKv(kv);
      const broken = faultyKv(kv, { failCommit: true });
      const brokenStore = createStore(broken);
      await assert.rejects(
        publishRelease(brokenStore, createFsStore(dir), {
          release: { project_id: project.id, version: "1.0", filename: "a.zip" },
          source: chunks("bytes"),
          maxBytes: 100,
        }),
        /kv commit failed/,
      );
      assert.deepEqual(await listDir(dir), [], "no file in artifacts/");
      assert.deepEqual(await listReleasesByProject(store, project.id), [], "no release");
      assert.deepEqual(await dumpKv(kv), before);
    })
  ));

Deno.test("publishRelease: a release refused by the store removes the file", () =>
  withDir((dir) =>
    withKv(async (kv, store) => {
      await assert.rejects(
        publishRelease(store, createFsStore(dir), {
          release: { project_id: 5, version: "1", filename: "a" },
          source: chunks("b"),
          maxBytes: 9,
        }),
        ValidationError,
      );
      assert.deepEqual(await listDir(dir), []);
      assert.deepEqual(await dumpKv(kv), []);
    })
  ));
