/**
 * The POST of one delivery attempt, connected to the addresses the target
 * check approved (address_guard.ts), never to a second resolution of the
 * name: node:http(s) with a `lookup` that answers with those addresses. For
 * https the TLS server name (SNI) and the certificate check stay those of the
 * URL's host, and the Host header is the URL's. A redirect is not followed.
 */
import { Buffer } from "node:buffer";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";

export interface PinnedPost {
  url: URL;
  /** The checked addresses of the URL's host. */
  addresses: readonly string[];
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Root certificates (PEM) that replace the default ones: for tests with their own CA. */
  caCerts?: string[];
}

/** Sends the POST; resolves with the answer's status, rejects when no answer came in time. */
export function postPinned(input: PinnedPost): Promise<number> {
  const send = input.url.protocol === "https:" ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const request = send(input.url, {
      method: "POST",
      headers: { ...input.headers, "content-length": String(Buffer.byteLength(input.body)) },
      lookup: pinnedLookup(input.addresses),
      signal: AbortSignal.timeout(input.timeoutMs),
      agent: false,
      ...(input.caCerts ? { ca: input.caCerts } : {}),
    }, (response) => {
      resolve(response.statusCode ?? 0);
      response.destroy();
    });
    request.on("error", reject);
    request.end(input.body);
  });
}

/** A `lookup` that answers every name with `addresses` (all of them when asked for all). */
function pinnedLookup(addresses: readonly string[]): LookupFunction {
  const entries = addresses.map((address) => ({
    address,
    family: address.includes(":") ? 6 : 4,
  }));
  return ((_host: string, options: { all?: boolean }, callback: LookupCallback) => {
    if (options.all) callback(null, entries);
    else callback(null, entries[0].address, entries[0].family);
  }) as unknown as LookupFunction;
}

type LookupCallback = (
  error: Error | null,
  address: string | { address: string; family: number }[],
  family?: number,
) => void;
