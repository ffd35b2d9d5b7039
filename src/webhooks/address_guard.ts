/**
 * The SSRF guard of webhook deliveries (docs/webhooks.md "Where deliveries may
 * go"): a target whose host is, or resolves to, a loopback, link-local,
 * private, unspecified or otherwise non-public address is refused unless the
 * operator allows private targets (APP_WEBHOOKS_ALLOW_PRIVATE). The addresses
 * it approves are the ones the delivery connects to (pinned_post.ts).
 */
import { lookup } from "node:dns/promises";

/** A target that must not be called: the delivery fails for good. */
export class RefusedTargetError extends Error {}

/** A host name that did not resolve: a DNS failure, retried like any failed attempt. */
export class UnresolvedTargetError extends Error {}

/** Resolves a host name to its addresses (the system resolver by default; tests give their own). */
export type Resolver = (host: string) => Promise<string[]>;

/**
 * The system resolver (getaddrinfo: /etc/hosts, then DNS), the one a plain
 * `fetch` would use.
 */
async function resolveWithSystem(host: string): Promise<string[]> {
  const found = await lookup(host, { all: true, verbatim: true });
  return found.map((entry) => entry.address);
}

export interface CheckedTarget {
  url: URL;
  /** The addresses the host stands for, each of them checked: connect to these only. */
  addresses: string[];
}

/**
 * Checks a target URL and resolves its host once. Throws RefusedTargetError
 * with the reason when it must not be called, UnresolvedTargetError when the
 * name does not resolve.
 */
export async function checkTarget(
  url: string,
  options: { allowPrivate: boolean; resolve?: Resolver },
): Promise<CheckedTarget> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new RefusedTargetError("not a URL");
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") {
    throw new RefusedTargetError("only http and https URLs");
  }
  if (target.username !== "" || target.password !== "") {
    throw new RefusedTargetError("no user name or password in the URL");
  }
  const host = target.hostname.replace(/^\[|\]$/g, "");
  if (!options.allowPrivate && (host === "localhost" || host.endsWith(".localhost"))) {
    throw new RefusedTargetError(`${host} is a loopback address`);
  }
  const addresses = isIpAddress(host)
    ? [host]
    : await (options.resolve ?? resolveWithSystem)(host).catch((error) => {
      throw new UnresolvedTargetError(`${host} does not resolve: ${String(error)}`);
    });
  if (addresses.length === 0) throw new UnresolvedTargetError(`${host} does not resolve`);
  if (options.allowPrivate) return { url: target, addresses };
  for (const address of addresses) {
    const reason = nonPublicReason(address);
    if (reason !== null) {
      throw new RefusedTargetError(`${host} resolves to ${address}, ${reason}`);
    }
  }
  return { url: target, addresses };
}

function isIpAddress(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(":");
}

/** Why an address is not a public one, or null when it is. */
export function nonPublicReason(address: string): string | null {
  if (address.includes(":")) return ipv6Reason(address.toLowerCase());
  return ipv4Reason(address);
}

/** IPv4 ranges that are not the public internet: first address, prefix length, reason. */
const IPV4_RANGES: readonly [string, number, string][] = [
  ["0.0.0.0", 8, "an unspecified address"],
  ["10.0.0.0", 8, "a private address"],
  ["100.64.0.0", 10, "a shared (carrier-grade NAT) address"],
  ["127.0.0.0", 8, "a loopback address"],
  ["169.254.0.0", 16, "a link-local address"],
  ["172.16.0.0", 12, "a private address"],
  ["192.0.0.0", 24, "an IETF protocol assignment (192.0.0.0/24)"],
  ["192.0.2.0", 24, "a documentation address (TEST-NET-1)"],
  ["192.168.0.0", 16, "a private address"],
  ["198.18.0.0", 15, "a benchmarking address (198.18.0.0/15)"],
  ["198.51.100.0", 24, "a documentation address (TEST-NET-2)"],
  ["203.0.113.0", 24, "a documentation address (TEST-NET-3)"],
  ["224.0.0.0", 3, "a multicast or reserved address"],
];

/** IPv6 ranges that are not the public internet (:: and ::1 are named on their own). */
const IPV6_RANGES: readonly [string, number, string][] = [
  ["::ffff:0:0", 96, "an IPv4-mapped address"],
  ["::ffff:0:0:0", 96, "an IPv4-translated address"],
  ["::", 96, "an IPv4-compatible address"],
  ["64:ff9b::", 96, "a NAT64 address"],
  ["64:ff9b:1::", 48, "a NAT64 address"],
  ["100::", 64, "a discard-only address"],
  ["2001::", 32, "a Teredo address"],
  ["2001:db8::", 32, "a documentation address"],
  ["2002::", 16, "a 6to4 address"],
  ["fc00::", 7, "a private (unique local) address"],
  ["fe80::", 10, "a link-local address"],
  ["fec0::", 10, "a site-local address"],
  ["ff00::", 8, "a multicast address"],
];

function ipv4Reason(address: string): string | null {
  const parts = address.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    return "not an address";
  }
  const value = ipv4Value(parts);
  for (const [first, bits, reason] of IPV4_RANGES) {
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    if (((value & mask) >>> 0) === ipv4Value(first.split(".").map(Number))) return reason;
  }
  return null;
}

function ipv4Value(parts: number[]): number {
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
}

function ipv6Reason(address: string): string | null {
  const groups = expandIpv6(address);
  if (groups === null) return "not an address";
  if (groups.every((g) => g === 0)) return "an unspecified address";
  if (groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1) return "a loopback address";
  for (const [first, bits, reason] of IPV6_RANGES) {
    if (inIpv6Range(groups, expandIpv6(first)!, bits)) return reason;
  }
  return null;
}

function inIpv6Range(groups: number[], first: number[], bits: number): boolean {
  for (let i = 0; i < 8 && bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((groups[i] & mask) !== (first[i] & mask)) return false;
  }
  return true;
}

/** The eight 16-bit groups of an IPv6 address, or null when it is not one. */
function expandIpv6(address: string): number[] | null {
  let text = address.split("%")[0];
  const v4 = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (v4) {
    const p = v4[1].split(".").map(Number);
    if (p.some((n) => n > 255)) return null;
    text = text.slice(0, -v4[1].length) +
      `${((p[0] << 8) | p[1]).toString(16)}:${((p[2] << 8) | p[3]).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] === "" ? [] : halves[0].split(":");
  const tail = halves.length === 2 && halves[1] !== "" ? halves[1].split(":") : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  const groups = all.map((g) => /^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN);
  return groups.some(Number.isNaN) ? null : groups;
}
