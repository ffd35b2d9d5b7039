import { recordApiKeyUse } from "./api_keys.ts";
import type { Store } from "../kv/store.ts";

const INTERVAL_MS = 60_000;

/**
 * Returns a function that notes a key's use. It writes `last_used_at` at most
 * once a minute per key, without awaiting the write, so the request path
 * never waits on a durable commit for bookkeeping.
 */
export function createKeyUsageRecorder(
  store: Store,
  onKvError: () => void = () => {},
): (keyId: number) => void {
  const lastWrite = new Map<number, number>();
  return (keyId) => {
    const now = Date.now();
    if (now - (lastWrite.get(keyId) ?? 0) < INTERVAL_MS) return;
    lastWrite.set(keyId, now);
    recordApiKeyUse(store, keyId, new Date(now).toISOString()).catch((error) => {
      lastWrite.delete(keyId);
      onKvError();
      console.error("could not record api key use:", error);
    });
  };
}
