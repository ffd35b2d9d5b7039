/** Artifact storage: one interface, the `fs` and `s3` backends behind it. */
export * from "./types.ts";
export { createFsStore, type FsArtifactStore } from "./fs_store.ts";
export { type PublishInput, publishRelease } from "./publish.ts";
