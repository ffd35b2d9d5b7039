/**
 * The SHA-512 of an upload (the updater feeds' checksum), computed in the same
 * pass as the write but off the JavaScript thread once the upload is large:
 * SHA-512 runs at about 550 MB/s here, slower than the rest of the upload
 * path together, so on the JavaScript thread it halved the upload rate
 * (docs/feeds.md "Upload throughput"). A worker hashes the writer's blocks
 * straight from their shared memory (no copy) while the JavaScript thread
 * reads, copies, hashes SHA-256 and writes the next ones.
 *
 * Starting a worker takes tens of milliseconds, so an upload starts one only
 * once it passes SPAWN_AFTER_BYTES; until the worker answers, its blocks wait
 * (the writer's pool bounds them). An upload that ends first, or a worker that
 * fails to start, is hashed on the JavaScript thread as before. The worker is
 * a blob module, so it needs no read permission (`deno task start` allows the
 * data directory only).
 */
import { createHash, type Hash } from "node:crypto";

/**
 * An upload larger than this gets a worker for its SHA-512. Its blocks wait
 * unhashed until then, so this must stay below the writer's pool of blocks
 * (BLOCKS × BLOCK_BYTES in artifacts.ts, 8 MiB).
 */
export const SPAWN_AFTER_BYTES = 4 * 1024 * 1024;

/** Hashes each `{ buffer, length }` it is sent, answers `true` per block, the digest when sent none. */
const WORKER_SOURCE = `import { createHash } from "node:crypto";
const hash = createHash("sha512");
self.onmessage = (event) => {
  const block = event.data;
  if (block === null) {
    self.postMessage(hash.digest("base64"));
  } else {
    hash.update(new Uint8Array(block.buffer, 0, block.length));
    self.postMessage(true);
  }
};
self.postMessage(true);
`;

interface PendingBlock {
  bytes: Uint8Array;
  hashed: () => void;
}

/** A block waiting for its hash: `hashed` resolves once the writer may reuse it. */
function pendingBlock(bytes: Uint8Array): { block: PendingBlock; hashed: Promise<void> } {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { block: { bytes, hashed: resolve }, hashed: promise };
}

/**
 * One upload's SHA-512. `add` takes a block (a view of a SharedArrayBuffer
 * when it may go to the worker) and resolves once the block has been hashed;
 * `digest` gives the base64 digest of every block added, `close` drops it all.
 */
export class Sha512Pass {
  /** Blocks added while the worker is not there yet, oldest first. */
  readonly #waiting: PendingBlock[] = [];
  /** Blocks sent to the worker, oldest first: each `true` it answers resolves one. */
  readonly #sent: PendingBlock[] = [];
  /** Hashing on this thread: a small upload, or the worker failed to start. */
  #local: Hash | null = null;
  #worker: Worker | null = null;
  #ready = false;
  #added = 0;
  #digest: PromiseWithResolvers<string> | null = null;
  #failure: { error: unknown } | null = null;

  add(bytes: Uint8Array): Promise<void> {
    if (this.#failure !== null) return Promise.reject(this.#failure.error);
    this.#added += bytes.byteLength;
    if (this.#local !== null) {
      this.#local.update(bytes);
      return Promise.resolve();
    }
    const { block, hashed } = pendingBlock(bytes);
    if (this.#ready) this.#send(block);
    else {
      this.#waiting.push(block);
      if (this.#worker === null && this.#added > SPAWN_AFTER_BYTES) this.#spawn(bytes);
    }
    return hashed;
  }

  /** The base64 SHA-512 of every block added; the worker (if any) is ended. */
  async digest(): Promise<string> {
    if (this.#failure !== null) throw this.#failure.error;
    if (!this.#ready) {
      // Ended before the worker answered (or never needed one): the rest is hashed here.
      this.#stopWorker();
      this.#hashLocally();
      return this.#local!.digest("base64");
    }
    this.#digest = Promise.withResolvers<string>();
    this.#worker!.postMessage(null);
    try {
      return await this.#digest.promise;
    } finally {
      this.#stopWorker();
    }
  }

  /** Ends the worker after a failure; blocks still waiting are let go. */
  close(): void {
    this.#stopWorker();
    for (const block of this.#waiting.splice(0)) block.hashed();
    for (const block of this.#sent.splice(0)) block.hashed();
  }

  #spawn(sample: Uint8Array): void {
    // Only blocks in shared memory can be hashed where they are.
    if (!(sample.buffer instanceof SharedArrayBuffer)) {
      this.#hashLocally();
      return;
    }
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
    try {
      this.#worker = new Worker(url, { type: "module" });
    } catch {
      this.#hashLocally();
      return;
    } finally {
      URL.revokeObjectURL(url);
    }
    this.#worker.onmessage = (event: MessageEvent<true | string>) => {
      if (typeof event.data === "string") this.#digest?.resolve(event.data);
      else if (!this.#ready) {
        this.#ready = true;
        for (const block of this.#waiting.splice(0)) this.#send(block);
      } else this.#sent.shift()?.hashed();
    };
    this.#worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      this.#workerFailed(event.error ?? new Error(event.message));
    };
  }

  #send(block: PendingBlock): void {
    this.#sent.push(block);
    this.#worker!.postMessage({ buffer: block.bytes.buffer, length: block.bytes.byteLength });
  }

  /** Before it answered: hash here instead. After: the blocks it hashed are lost, so the upload fails. */
  #workerFailed(error: unknown): void {
    this.#stopWorker();
    if (!this.#ready) {
      this.#hashLocally();
      return;
    }
    this.#failure = { error };
    this.#digest?.reject(error);
    this.close();
  }

  #hashLocally(): void {
    this.#local ??= createHash("sha512");
    for (const block of this.#waiting.splice(0)) {
      this.#local.update(block.bytes);
      block.hashed();
    }
  }

  #stopWorker(): void {
    this.#worker?.terminate();
    this.#worker = null;
  }
}
