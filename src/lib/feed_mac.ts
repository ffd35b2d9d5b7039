/**
 * The MAC part of a key's feed URL credential (src/feeds/url_credential.ts):
 * the first 32 hex digits of HMAC-SHA256 over `velopack-feed` keyed with the
 * key's secret. Only its SHA-256 is stored (`ApiKey.feed_mac_sha256`).
 */
import { createHmac } from "node:crypto";
import { sha256Hex } from "./secrets.ts";

const MAC_INPUT = "velopack-feed";

/** The MAC of the key whose secret is `secret`. */
export function feedMac(secret: string): string {
  return createHmac("sha256", secret).update(MAC_INPUT).digest("hex").slice(0, 32);
}

/** What a key record keeps of its credential: the SHA-256 hex of the MAC. */
export function feedMacHash(secret: string): string {
  return sha256Hex(feedMac(secret));
}
