/**
 * The container's HEALTHCHECK: exits 0 when GET /healthz on this service answers 200 within 4 s.
 *
 *   deno run --no-config --allow-net --allow-env=APP_HOST,APP_PORT tools/healthcheck.ts
 *
 * It asks the address the service listens on (APP_HOST, APP_PORT), so it works whatever APP_HOST
 * is: a wildcard (0.0.0.0, ::) is asked on loopback, a specific address on that address.
 */
function healthzUrl(host: string | undefined, port: string | undefined): string {
  let hostname = host?.trim() || "0.0.0.0";
  if (hostname === "0.0.0.0") hostname = "127.0.0.1";
  if (hostname === "::" || hostname === "[::]") hostname = "::1";
  if (hostname.includes(":") && !hostname.startsWith("[")) hostname = `[${hostname}]`;
  return `http://${hostname}:${port?.trim() || "8000"}/healthz`;
}

async function check(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(4000) });
    await response.body?.cancel();
    if (!response.ok) console.error(`${url}: ${response.status}`);
    return response.ok;
  } catch (error) {
    console.error(`${url}: ${error instanceof Error ? error.message : error}`);
    return false;
  }
}

const url = healthzUrl(Deno.env.get("APP_HOST"), Deno.env.get("APP_PORT"));
Deno.exit(await check(url) ? 0 : 1);
