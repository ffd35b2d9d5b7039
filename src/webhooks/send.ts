/**
 * One delivery attempt: the SSRF check (which resolves the host once), a
 * signed POST to the checked addresses with a timeout, no redirects followed
 * (a redirect could lead anywhere).
 */
import {
  type CheckedTarget,
  checkTarget,
  RefusedTargetError,
  type Resolver,
  UnresolvedTargetError,
} from "./address_guard.ts";
import { postPinned } from "./pinned_post.ts";
import { isSigningSecret } from "../lib/webhook_secret.ts";
import { deliveryHeaders } from "./signature.ts";

export interface AttemptInput {
  url: string;
  /** The endpoint's secrets that sign now, its current one first. */
  secrets: readonly string[];
  deliveryId: string;
  event: string;
  body: string;
  allowPrivate: boolean;
  timeoutMs: number;
  resolve?: Resolver;
  /** Root certificates that replace the default ones (tests with their own CA). */
  caCerts?: string[];
}

export interface AttemptResult {
  ok: boolean;
  /** The receiver's status, or null when no answer came. */
  status: number | null;
  /** Why it failed, when it did. */
  error: string | null;
  /** The start of the receiver's answer body, when one came. */
  answer: string | null;
  /** A refused target is not retried: it will not become allowed by waiting. */
  permanent: boolean;
}

function failed(error: string, permanent = false): AttemptResult {
  return { ok: false, status: null, error, permanent, answer: null };
}

export async function attemptDelivery(input: AttemptInput): Promise<AttemptResult> {
  if (!input.secrets.some(isSigningSecret)) {
    return failed("the endpoint has no signing secret: set a new secret on its page");
  }
  let target: CheckedTarget;
  try {
    target = await checkTarget(input.url, {
      allowPrivate: input.allowPrivate,
      resolve: input.resolve,
    });
  } catch (error) {
    if (error instanceof RefusedTargetError) {
      return failed(`refused target: ${error.message}`, true);
    }
    if (error instanceof UnresolvedTargetError) return failed(error.message);
    throw error;
  }
  const timestamp = Math.floor(Date.now() / 1000);
  try {
    const { status, body: answer } = await postPinned({
      url: target.url,
      addresses: target.addresses,
      headers: deliveryHeaders(input.secrets, {
        deliveryId: input.deliveryId,
        timestamp,
        body: input.body,
        event: input.event,
      }),
      body: input.body,
      timeoutMs: input.timeoutMs,
      caCerts: input.caCerts,
    });
    const ok = status >= 200 && status < 300;
    return {
      ok,
      status,
      error: ok ? null : `the receiver answered ${status}`,
      permanent: false,
      answer,
    };
  } catch (error) {
    const timedOut = error instanceof Error && error.name === "AbortError";
    return failed(timedOut ? `no answer in ${input.timeoutMs} ms` : String(error));
  }
}
