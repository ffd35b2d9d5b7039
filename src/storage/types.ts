/**
 * The one interface every artifact backend implements (`fs`, `s3`), and the
 * errors an upload can end with. Callers never see which backend they use,
 * except for the download modes that hand the bytes to someone else
 * (`presignGet` for redirect, `xAccelPath` for nginx).
 */

import type { Span } from "./spans.ts";

/** What a finished upload gives the release record. */
export interface StoredArtifact {
  storage_key: string;
  checksum_sha256: string;
  /** SHA-512 of the bytes, base64 (the updater feeds' checksum); computed in the same pass. */
  checksum_sha512?: string;
  size_bytes: number;
}

/** The bytes of an upload, as a web stream or any async iterable of chunks. */
export type ByteSource = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** A stored artifact opened for reading: its size, and its bytes from any offset. */
export interface OpenedArtifact {
  size: number;
  /**
   * The backend's own strong ETag of these bytes, when it has one (s3: the
   * object's, `"<md5>-<parts>"` for a multipart upload). A client that followed
   * a redirect to the store resumes with it in `If-Range`.
   */
  storeEtag?: string;
  /**
   * `length` bytes from `start`. Takes over the artifact: the stream closes it
   * at its end, on cancel and on error. Fails if the artifact ends early.
   */
  read(start: number, length: number): Promise<ReadableStream<Uint8Array>>;
  /**
   * The bytes of several spans back to back, in the order given (a
   * multi-range download, src/storage/spans.ts). Takes over the artifact like
   * `read`; null, leaving the artifact open, when the backend would read the
   * spans in more reads than it allows (s3: the caller sends the whole file).
   */
  readSpans(spans: Span[]): ReadableStream<Uint8Array> | null;
  /** Releases the artifact without reading it. */
  close(): void;
}

/** How a presigned download URL presents the file. */
export interface PresignOptions {
  /** The whole Content-Disposition value the URL answers with. */
  contentDisposition: string;
  contentType: string;
  ttlSeconds: number;
}

export interface ArtifactStore {
  readonly kind: "fs" | "s3";
  /**
   * Stores the bytes under a new key while SHA-256 and size are computed, in
   * bounded memory. Throws `UploadTooLargeError` as soon as more than
   * `maxBytes` arrive and `EmptyUploadError` for no bytes; on any failure
   * nothing is left behind. Resolves only once the artifact is complete.
   */
  save(source: ByteSource, maxBytes: number): Promise<StoredArtifact>;
  /** The artifact, or null when it is missing. */
  open(storageKey: string): Promise<OpenedArtifact | null>;
  /** Removes an artifact; a missing one is fine. */
  remove(storageKey: string): Promise<void>;
  /**
   * Stores bytes under a given key (restore, migration between backends):
   * complete or not at all, like `save`. Refuses a key that already exists.
   * Returns SHA-256 and size of the bytes stored, for the caller to check.
   */
  put(storageKey: string, source: ByteSource): Promise<Omit<StoredArtifact, "storage_key">>;
  /** Where an artifact lives, for messages: a file path or an s3:// URL. */
  where(storageKey: string): string;
  /** The name of something already stored (an artifact or any other file), or null when empty. */
  findAny(): Promise<string | null>;
  /** s3 only: a GET URL valid for `ttlSeconds` (redirect downloads). */
  presignGet?(storageKey: string, options: PresignOptions): Promise<string>;
  /**
   * The caller is done with an artifact `save` returned: its release is
   * committed, or it was removed. Until then the fs store keeps the file
   * locked, so that no sweep (of any instance) takes it for an orphan however
   * long the commit takes. Calling it twice, or for another key, does nothing.
   */
  settle?(storageKey: string): void;
  /** s3 only: whether the bucket answers (see src/storage/health.ts). */
  checkHealth?(): Promise<boolean>;
  /** What the storage sweep (sweep.ts) needs of this backend. */
  readonly sweeping?: Sweepable;
}

/** A backend as the storage sweep sees it (sweep.ts). */
export interface Sweepable {
  /** Artifacts no release references are removed only once older than this. */
  readonly afterMs: number;
  /** How often the sweep runs after the first runs at start. */
  readonly everyMs: number;
  /**
   * Removes what uploads cut short left before their artifact was complete
   * (fs: upload parts no writer holds; s3: old unfinished multipart uploads);
   * the count removed.
   */
  removeAbandonedUploads(): Promise<number>;
  /** Every complete artifact, with when it was last written. */
  listArtifacts(): AsyncIterable<{ storageKey: string; at: Date }>;
  /**
   * Holds an artifact against its writer while the sweep decides: null when a
   * live upload (of any process) still holds it (fs: the file's lock); s3 has
   * no such hold and relies on `afterMs` alone.
   */
  claim(storageKey: string): Promise<{ release(): void } | null>;
}

/** The upload is larger than `APP_MAX_UPLOAD_BYTES`. */
export class UploadTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the file is larger than the upload limit of ${maxBytes} bytes`);
    this.name = "UploadTooLargeError";
  }
}

/** The storage ran out of space (or quota) while the upload was written; nothing was kept. */
export class StorageFullError extends Error {
  constructor(cause?: unknown) {
    super("the storage has no space left for this file", { cause });
    this.name = "StorageFullError";
  }
}

/** The upload carried no bytes. */
export class EmptyUploadError extends Error {
  constructor() {
    super("the file is empty");
    this.name = "EmptyUploadError";
  }
}

/** The stored file is not the one its sender described (declared SHA-256 or size). */
export class UploadMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UploadMismatchError";
  }
}

/** A part of a multipart upload, as the reader gives it (src/http/multipart.ts). */
export interface UploadPart {
  name: string;
  filename: string | undefined;
  contentType: string | undefined;
  body: ByteSource;
}
