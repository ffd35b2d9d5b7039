import type { Context } from "hono";

/**
 * The client's address for rate limiting. With `APP_TRUST_PROXY=true` it is the
 * right-most `X-Forwarded-For` entry: the address our own reverse proxy saw
 * (entries further left are whatever the client chose to send).
 */
export function clientAddress(c: Context, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = c.req.header("x-forwarded-for");
    const last = forwarded?.split(",").map((part) => part.trim()).filter(Boolean).pop();
    if (last) return last;
  }
  const info = c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined;
  return info?.remoteAddr?.hostname ?? "unknown";
}

/** The client's address of a request, as the service's `APP_TRUST_PROXY` setting reads it. */
export function addressOf(c: Context, deps: { config: { trustProxy: boolean } }): string {
  return clientAddress(c, deps.config.trustProxy);
}
