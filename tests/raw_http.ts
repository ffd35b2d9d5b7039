/**
 * One HTTP/1.1 request sent as raw bytes over a TCP socket, for paths that
 * `fetch` would normalise before sending (`/admin/..//x`, `%2e%2e`, `\`).
 */

export interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  /** The whole answer as read (head and body). */
  text: string;
}

/** Sends `GET <target>` (or `method`) with `Connection: close` and reads the answer to its end. */
export async function rawRequest(
  port: number,
  target: string,
  { method = "GET", timeoutMs = 5000 }: { method?: string; timeoutMs?: number } = {},
): Promise<RawAnswer> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const timer = setTimeout(() => conn.close(), timeoutMs);
  try {
    await conn.write(
      new TextEncoder().encode(
        `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
      ),
    );
    const chunks: Uint8Array[] = [];
    const buffer = new Uint8Array(16 * 1024);
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(buffer.slice(0, n));
    }
    const text = new TextDecoder().decode(
      chunks.reduce((all, chunk) => new Uint8Array([...all, ...chunk]), new Uint8Array()),
    );
    const [head] = text.split("\r\n\r\n", 1);
    const [statusLine, ...lines] = head.split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? NaN);
    const headers = new Map<string, string>();
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon > 0) headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
    }
    return { status, headers, text };
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed by the timer */ }
  }
}
