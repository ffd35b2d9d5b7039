import { healthPingKey } from "./mod.ts";

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
