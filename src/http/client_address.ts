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
  return peerAddress(c);
}

/**
 * The TCP peer's address, read from the connection once a request: Deno.serve's
 * `remoteAddr` is no plain field (each read builds it anew, 0.2 to 0.4 µs here),
 * and the rate limit, adoption and the access log each ask for the address.
 */
function peerAddress(c: Context): string {
  const known: string | undefined = c.get("peerAddress");
  if (known !== undefined) return known;
  const info = c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined;
  const address = info?.remoteAddr?.hostname ?? "unknown";
  c.set("peerAddress", address);
  return address;
}

/** The client's address of a request, as the service's `APP_TRUST_PROXY` setting reads it. */
export function addressOf(c: Context, deps: { config: { trustProxy: boolean } }): string {
  return clientAddress(c, deps.config.trustProxy);
}

/** A client address longer than this (only a proxy's odd `X-Forwarded-For` entry) is cut. */
const MAX_ADDRESS_LENGTH = 64;
const HEXTET = /^[0-9a-f]{1,4}$/;
const DOTTED = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * The unit the client API's rate limit counts `address` in: an IPv4 address
 * as it is (an IPv4-mapped IPv6 address as its IPv4 address), an IPv6 address
 * as its /64 prefix (`2001:db8:1:2::/64`), since one subscriber holds a whole
 * /64 and could otherwise start a fresh bucket with every address in it.
 * Anything else is kept, cut to 64 characters.
 */
export function rateLimitAddress(address: string): string {
  if (!address.includes(":")) {
    return address.length <= MAX_ADDRESS_LENGTH ? address : address.slice(0, MAX_ADDRESS_LENGTH);
  }
  let text = address.toLowerCase();
  const zone = text.indexOf("%");
  if (zone !== -1) text = text.slice(0, zone);
  const lastColon = text.lastIndexOf(":");
  const ipv4 = DOTTED.test(text.slice(lastColon + 1)) ? text.slice(lastColon + 1) : null;
  // The last 32 bits in dotted form: two groups (they are never part of the prefix).
  if (ipv4 !== null) text = text.slice(0, lastColon + 1) + "0:0";
  const halves = text.split("::");
  if (halves.length > 2) return address.slice(0, MAX_ADDRESS_LENGTH);
  const head = halves[0] === "" ? [] : halves[0].split(":");
  const tail = halves.length === 1 || halves[1] === "" ? [] : halves[1].split(":");
  const missing = 8 - head.length - tail.length;
  if (
    missing < 0 || (halves.length === 1 && missing !== 0) || (halves.length === 2 && missing < 1)
  ) {
    return address.slice(0, MAX_ADDRESS_LENGTH);
  }
  const groups = [...head, ...Array<string>(missing).fill("0"), ...tail];
  if (!groups.every((group) => HEXTET.test(group))) return address.slice(0, MAX_ADDRESS_LENGTH);
  const prefix = groups.map((group) => parseInt(group, 16));
  if (ipv4 !== null && prefix.slice(0, 6).join() === "0,0,0,0,0,65535") return ipv4;
  return `${prefix.slice(0, 4).map((group) => group.toString(16)).join(":")}::/64`;
}
