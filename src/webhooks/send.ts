/**
 * One delivery attempt: the SSRF check, a signed POST with a timeout, no
 * redirects followed (a redirect could lead anywhere).
 */
import { checkTarget, RefusedTargetError, type Resolver } from "./address_guard.ts";
import { deliveryHeaders } from "./signature.ts";

export interface AttemptInput {
  url: string;
  secret: string;
  deliveryId: string;
  event: string;
  body: string;
  allowPrivate: boolean;
  timeoutMs: number;
  resolve?: Resolver;
}

export interface AttemptResult {
  ok: boolean;
  /** The receiver's status, or null when no answer came. */
  status: number | null;
  /** Why it failed, when it did. */
  error: string | null;
  /** A refused target is not retried: it will not become allowed by waiting. */
  permanent: boolean;
}

export async function attemptDelivery(input: AttemptInput): Promise<AttemptResult> {
  let target: URL;
  try {
    target = await checkTarget(input.url, {
      allowPrivate: input.allowPrivate,
      resolve: input.resolve,
    });
  } catch (error) {
    if (error instanceof RefusedTargetError) {
      return {
        ok: false,
        status: null,
        error: `refused target: ${error.message}`,
        permanent: true,
      };
    }
    throw error;
  }
  const timestamp = Math.floor(Date.now() / 1000);
  try {
    const response = await fetch(target, {
      method: "POST",
      redirect: "manual",
      headers: deliveryHeaders(input.secret, {
        deliveryId: input.deliveryId,
        timestamp,
        body: input.body,
        event: input.event,
      }),
      body: input.body,
      signal: AbortSignal.timeout(input.timeoutMs),
    });
    await response.body?.cancel();
    const ok = response.status >= 200 && response.status < 300;
    return {
      ok,
      status: response.status,
      error: ok ? null : `the receiver answered ${response.status}`,
      permanent: false,
    };
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === "TimeoutError";
    return {
      ok: false,
      status: null,
      error: timedOut ? `no answer in ${input.timeoutMs} ms` : String(error),
      permanent: false,
    };
  }
}
