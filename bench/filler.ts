/** Filler bytes for the benchmarks; imports nothing, so a client bench can load it alone. */
const MiB = 1024 * 1024;

/**
 * `bytes` of incompressible data as a stream of 1 MiB chunks: one random
 * block repeated (the content does not matter, only that nothing compresses it).
 */
export function fillerStream(bytes: number): ReadableStream<Uint8Array> {
  const block = new Uint8Array(MiB);
  for (let i = 0; i < block.length; i += 65536) {
    crypto.getRandomValues(block.subarray(i, i + 65536));
  }
  let left = bytes;
  return new ReadableStream({
    pull(controller) {
      if (left <= 0) return controller.close();
      const n = Math.min(left, block.length);
      left -= n;
      // A copy: the consumer may keep or transfer the chunk.
      controller.enqueue(block.slice(0, n));
    },
  });
}
