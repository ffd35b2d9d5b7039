/**
 * The SSRF guard of webhook deliveries (docs/webhooks.md "Where deliveries may
 * go"): a target whose host is, or resolves to, a loopback, link-local,
 * private, unspecified or otherwise non-public address is refused unless the
 * operator allows private targets (APP_WEBHOOKS_ALLOW_PRIVATE).
 */

export class RefusedTargetError extends Error {}

/** Resolves a host name to its addresses (Deno.resolveDns by default; tests give their own). */
export type Resolver = (host: string) => Promise<string[]>;

export async function resolveWithDns(host: string): Promise<string[]> {
  const found: string[] = [];
  for (const type of ["A", "AAAA"] as const) {
    try {
      found.push(...await Deno.resolveDns(host, type));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return found;
}

/** Checks a target URL; throws RefusedTargetError with the reason when it must not be called. */
export async function checkTarget(
  url: string,
  options: { allowPrivate: boolean; resolve?: Resolver },
): Promise<URL> {
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
  if (options.allowPrivate) return target;
  const host = target.hostname.replace(/^\[|\]$/g, "");
  if (host === "localhost" || host.endsWith(".localhost")) {
    throw new RefusedTargetError(`${host} is a loopback address`);
  }
  const addresses = isIpAddress(host)
    ? [host]
    : await (options.resolve ?? resolveWithDns)(host).catch((error) => {
      throw new RefusedTargetError(`${host} does not resolve: ${String(error)}`);
    });
  if (addresses.length === 0) throw new RefusedTargetError(`${host} does not resolve`);
  for (const address of addresses) {
    const reason = nonPublicReason(address);
    if (reason !== null) {
      throw new RefusedTargetError(`${host} resolves to ${address}, ${reason}`);
    }
  }
  return target;
}

function isIpAddress(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(":");
}

/** Why an address is not a public one, or null when it is. */
export function nonPublicReason(address: string): string | null {
  if (address.includes(":")) return ipv6Reason(address.toLowerCase());
  return ipv4Reason(address);
}

function ipv4Reason(address: string): string | null {
  const parts = address.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    return "not an address";
  }
  const [a, b] = parts;
  if (a === 127) return "a loopback address";
  if (a === 0) return "an unspecified address";
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) {
    return "a private address";
  }
  if (a === 169 && b === 254) return "a link-local address";
  if (a === 100 && b >= 64 && b <= 127) return "a shared (carrier-grade NAT) address";
  if (a >= 224) return "a multicast or reserved address";
  return null;
}

function ipv6Reason(address: string): string | null {
  const groups = expandIpv6(address);
  if (groups === null) return "not an address";
  if (groups.every((g) => g === 0)) return "an unspecified address";
  if (groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1) return "a loopback address";
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible addresses: judge the IPv4 address.
  if (groups.slice(0, 5).every((g) => g === 0) && (groups[5] === 0xffff || groups[5] === 0)) {
    const v4 = [groups[6] >> 8, groups[6] & 255, groups[7] >> 8, groups[7] & 255].join(".");
    return ipv4Reason(v4);
  }
  if ((groups[0] & 0xffc0) === 0xfe80) return "a link-local address";
  if ((groups[0] & 0xfe00) === 0xfc00) return "a private (unique local) address";
  if ((groups[0] & 0xff00) === 0xff00) return "a multicast address";
  return null;
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
