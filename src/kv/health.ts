import { writeRefusalOf } from "./errors.ts";
import { healthPingKey, healthWriteProbeKey } from "./keys.ts";

/** True when the KV answers a read within `timeoutMs`. */
export async function pingKv(kv: Deno.Kv, timeoutMs = 2000): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([kv.get(healthPingKey()).then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether the KV accepts a write now: one small entry (kept a minute) is
 * written. "refused" when the KV said no for good (read-only, full disk) or
 * did not answer within `timeoutMs`.
 */
export async function probeKvWrite(kv: Deno.Kv, timeoutMs = 2000): Promise<"ok" | "refused"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"refused">((resolve) => {
    timer = setTimeout(() => resolve("refused"), timeoutMs);
  });
  try {
    const write = kv.set(healthWriteProbeKey(), Date.now(), { expireIn: 60_000 })
      .then(() => "ok" as const);
    return await Promise.race([write, timeout]);
  } catch (error) {
    // A write that lost a race with another process ("database is locked") is not refused.
    return writeRefusalOf(error) === null && /locked/i.test(String(error)) ? "ok" : "refused";
  } finally {
    clearTimeout(timer);
  }
}
