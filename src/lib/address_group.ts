/**
 * The unit the caps of new install ids count by (docs/rollouts.md
 * "Adoption", docs/reports.md "Storage and bounds"): a client address as the
 * service reads it (src/http/client_address.ts), an IPv6 address taken as
 * its /64 network (one host usually holds a whole /64, so counting single
 * IPv6 addresses would let one host count as billions), and anything else
 * cut to a bounded length so a counter's key stays small.
 */

/** The longest group kept (an IPv4 address or a /64 prefix is far shorter). */
const GROUP_MAX_LENGTH = 64;

export function addressGroup(address: string): string {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  if (!bare.includes(":")) return bare.slice(0, GROUP_MAX_LENGTH);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped !== null) return mapped[1];
  const halves = bare.toLowerCase().split("::");
  if (halves.length > 2) return bare.slice(0, GROUP_MAX_LENGTH);
  const head = halves[0] === "" ? [] : halves[0].split(":");
  const tail = halves.length === 2 && halves[1] !== "" ? halves[1].split(":") : [];
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) {
    return bare.slice(0, GROUP_MAX_LENGTH);
  }
  const groups = [...head, ...Array(missing).fill("0"), ...tail];
  const prefix = groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, ""));
  if (prefix.some((group) => !/^[0-9a-f]{1,4}$/.test(group))) {
    return bare.slice(0, GROUP_MAX_LENGTH);
  }
  return `${prefix.join(":")}::/64`;
}
