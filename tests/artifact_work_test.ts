/**
 * The checked read the background jobs share (src/storage/artifact_work.ts):
 * each artifact read once, its SHA-256 checked against the release's.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readRecordedArtifact } from "../src/storage/artifact_work.ts";
import { createTestApp } from "./helpers.ts";

async function count(chunks: AsyncIterable<Uint8Array>): Promise<number> {
  let bytes = 0;
  for await (const chunk of chunks) bytes += chunk.byteLength;
  return bytes;
}

Deno.test("a background job's read of a recorded artifact", async (t) => {
  await using app = await createTestApp();
  const bytes = new TextEncoder().encode("artifact bytes");
  const stored = await app.artifacts.save(ReadableStream.from([bytes]), 1 << 20);
  app.artifacts.settle?.(stored.storage_key);
  const sha256 = createHash("sha256").update(bytes).digest("hex");

  await t.step("the recorded artifact: every byte to the consumer, its result back", async () => {
    const read = await readRecordedArtifact(
      app.artifacts,
      { storage_key: stored.storage_key, checksum_sha256: sha256 },
      count,
    );
    assert.equal(read, bytes.byteLength);
  });

  await t.step("another SHA-256 than recorded, or no artifact: null", async () => {
    const other = { storage_key: stored.storage_key, checksum_sha256: "0".repeat(64) };
    assert.equal(await readRecordedArtifact(app.artifacts, other, count), null);
    const missing = { storage_key: "missing-key", checksum_sha256: sha256 };
    assert.equal(await readRecordedArtifact(app.artifacts, missing, count), null);
  });
});
