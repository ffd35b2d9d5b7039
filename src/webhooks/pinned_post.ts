/**
 * The POST of one delivery attempt, connected to the addresses the target
 * check approved (address_guard.ts), never to a second resolution of the
 * name. The TCP connection goes to a checked address (`Deno.connect`); for
 * https, TLS runs over it with the URL's host as server name (SNI) and as the
 * name the certificate must hold (`Deno.startTls`, the roots `fetch` uses);
 * node:http speaks HTTP/1.1 over that connection with the URL's Host header.
 * A redirect is not followed.
 */
import { Buffer } from "node:buffer";
import http from "node:http";
import { Duplex } from "node:stream";

export interface PinnedPost {
  url: URL;
  /** The checked addresses of the URL's host, tried in turn. */
  addresses: readonly string[];
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Root certificates (PEM) trusted besides the default ones: for tests with their own CA. */
  caCerts?: string[];
}

/** The receiver's answer: its status and the start of its body (for the delivery log). */
export interface PinnedAnswer {
  status: number;
  /** At most ANSWER_KEPT_BYTES of the body, as text. */
  body: string;
}

/** How much of an answer's body is kept. */
const ANSWER_KEPT_BYTES = 1024;

/** Sends the POST; resolves with the answer, rejects when no answer came in time. */
export async function postPinned(input: PinnedPost): Promise<PinnedAnswer> {
  const signal = AbortSignal.timeout(input.timeoutMs);
  const conn = await connectPinned(input, signal);
  try {
    return await exchange(input, conn, signal);
  } finally {
    try {
      conn.close();
    } catch {
      // Closed already with its stream.
    }
  }
}

const DEFAULT_PORTS: Record<string, number> = { "http:": 80, "https:": 443 };

/** A connection to the first checked address that answers, TLS on top for https. */
async function connectPinned(input: PinnedPost, signal: AbortSignal): Promise<Deno.Conn> {
  const port = Number(input.url.port) || DEFAULT_PORTS[input.url.protocol];
  let lastError: unknown = new Error("no address to connect to");
  for (const address of input.addresses) {
    let tcp: Deno.TcpConn;
    try {
      tcp = await beforeAbort(
        Deno.connect({ hostname: address, port }),
        signal,
        (late) => late.close(),
      );
    } catch (error) {
      if (signal.aborted) throw error;
      lastError = error;
      continue;
    }
    if (input.url.protocol !== "https:") return tcp;
    const tls = await Deno.startTls(tcp, {
      hostname: input.url.hostname.replace(/^\[|\]$/g, ""),
      caCerts: input.caCerts,
    });
    try {
      await beforeAbort(tls.handshake(), signal);
      return tls;
    } catch (error) {
      tls.close();
      throw error;
    }
  }
  throw lastError;
}

/** `promise`, or the abort reason when `signal` fires first; `late` gets a value that came after. */
function beforeAbort<T>(
  promise: Promise<T>,
  signal: AbortSignal,
  late: (value: T) => void = () => {},
): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then((value) => {
      signal.removeEventListener("abort", onAbort);
      if (signal.aborted) late(value);
      else resolve(value);
    }, (error) => {
      signal.removeEventListener("abort", onAbort);
      reject(error);
    });
  });
}

/** The HTTP/1.1 request over `conn`; the answer's status and the start of its body. */
function exchange(input: PinnedPost, conn: Deno.Conn, signal: AbortSignal): Promise<PinnedAnswer> {
  const socket = Duplex.fromWeb({ readable: conn.readable, writable: conn.writable });
  const agent = new http.Agent();
  // The request goes over the connection made above, whatever host node:http would resolve.
  Object.assign(agent, { createConnection: () => socket });
  return new Promise((resolve, reject) => {
    const request = http.request({
      protocol: "http:",
      hostname: input.url.hostname,
      port: input.url.port,
      path: input.url.pathname + input.url.search,
      method: "POST",
      headers: {
        ...input.headers,
        host: input.url.host,
        "content-length": String(Buffer.byteLength(input.body)),
        connection: "close",
      },
      agent,
      signal,
    }, (response) => {
      const status = response.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let kept = 0;
      const done = () => {
        const body = Buffer.concat(chunks).subarray(0, ANSWER_KEPT_BYTES).toString("utf8");
        resolve({ status, body });
        response.destroy();
      };
      response.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        kept += chunk.length;
        if (kept >= ANSWER_KEPT_BYTES) done();
      });
      response.on("end", done);
      // An answer cut off after its status (or its body still coming at the timeout) counts as
      // the status with the part of the body that came.
      response.on("error", done);
      signal.addEventListener("abort", done, { once: true });
    });
    request.on("error", reject);
    request.end(input.body);
  });
}
