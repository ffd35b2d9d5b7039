/** Whether the bucket answers, as the S3 calls find it (/healthz, `uds_storage_up`). */
import type { S3Client } from "@aws-sdk/client-s3";
import { describe, isUnavailable } from "./s3_errors.ts";
import { StorageUnavailableError } from "./unavailable.ts";

/** How long a known storage state counts before `check` asks the bucket again. */
const HEALTH_FRESH_MS = 5_000;

/**
 * The bucket's state as the S3 calls find it: every call of a watched client
 * that gets an answer marks it up, every call that gets none (after the SDK's
 * retries) marks it down and fails with StorageUnavailableError, which the
 * API answers with 503. Shown by /healthz (`checkHealth`) and the
 * `uds_storage_up` metric.
 */
export function trackHealth(where: string, onStateChange: (up: boolean) => void) {
  let up = true;
  let at = Date.now();
  let probe: Promise<boolean> | undefined;
  const mark = (state: boolean) => {
    if (state !== up) onStateChange(state);
    up = state;
    at = Date.now();
  };
  return {
    /** Marks the bucket down: a read stalled (openedObject). */
    down: () => mark(false),
    watch(sdk: S3Client) {
      sdk.middlewareStack.add(
        (next) => async (args) => {
          try {
            const result = await next(args);
            mark(true);
            return result;
          } catch (error) {
            if (!isUnavailable(error)) {
              mark(true);
              throw error;
            }
            mark(false);
            if (error instanceof StorageUnavailableError) throw error;
            throw new StorageUnavailableError(`${where} did not answer: ${describe(error)}`);
          }
        },
        { step: "initialize", name: "udsStorageHealth", priority: "high" },
      );
    },
    async check(ask: () => Promise<unknown>): Promise<boolean> {
      if (Date.now() - at < HEALTH_FRESH_MS) return up;
      probe ??= ask().then(() => true, (error) => !isUnavailable(error))
        .finally(() => probe = undefined);
      return await probe;
    },
  };
}

export type BucketHealth = ReturnType<typeof trackHealth>;
