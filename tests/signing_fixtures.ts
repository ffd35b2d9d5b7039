/**
 * Fixtures of the pinned-client tests (docs/signing.md "The reference
 * client"): an in-process signing app served on a local port through a
 * switchable hostile proxy, and the CLI run against it.
 */
import { sign } from "node:crypto";
import { readPrivateKey } from "../src/signing/key_files.ts";
import { signedMessage } from "../src/signing/format.ts";
import {
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  sha256,
  type TestApp,
} from "./helpers.ts";
import { runTask } from "./server_process.ts";

/** What the proxy does to each answer: nothing, flip a body byte, or re-sign it as long expired. */
export type ProxyMode = "pass" | "flip" | "expired";

export interface PinnedService extends AsyncDisposable {
  app: TestApp;
  baseUrl: string;
  apiKey: string;
  mode: ProxyMode;
  /** `deno task client …` against the proxy, with the API key. */
  client(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** The key set as served now (what an installer saves). */
  keySetText(): Promise<string>;
}

export async function startPinnedService(): Promise<PinnedService> {
  const app = await createTestApp({ signing: true });
  const project = await seedProject(app, { slug: "app" });
  await seedRelease(app, project.id, "2.0.0");
  const { secret } = await seedKey(app);
  await app.signer.ready();
  const state = { mode: "pass" as ProxyMode };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const res = await app.app.request(url.pathname + url.search, {
      method: req.method,
      headers: req.headers,
    });
    return await tamper(app, { res, path: url.pathname, mode: state.mode });
  });
  const baseUrl = `http://127.0.0.1:${server.addr.port}`;
  const service: PinnedService = {
    app,
    baseUrl,
    apiKey: secret,
    get mode() {
      return state.mode;
    },
    set mode(mode: ProxyMode) {
      state.mode = mode;
    },
    client: (args) =>
      runTask(["client", ...args, "--base-url", baseUrl, "--retries", "0"], {
        UPDATE_API_KEY: secret,
      }),
    keySetText: async () => await (await app.request("/.well-known/uds-keys.json")).text(),
    [Symbol.asyncDispose]: async () => {
      await server.shutdown();
      await app.close();
    },
  };
  return service;
}

/** The proxy's change to one answer under /api/v1 (other paths pass as they are). */
async function tamper(
  app: TestApp,
  { res, path, mode }: { res: Response; path: string; mode: ProxyMode },
): Promise<Response> {
  if (mode === "pass" || !path.startsWith("/api/v1/projects/")) return res;
  // A copy: an in-process answer's bytes may be the app's cached body itself.
  const body = new Uint8Array(await res.arrayBuffer()).slice();
  const headers = new Headers(res.headers);
  if (mode === "flip") {
    body[body.length - 2] ^= 1;
    return new Response(body, { status: res.status, headers });
  }
  // A genuine signature of the active key, made two hours ago with a one-hour TTL: a replay.
  const kid = /kid=([^;]+);/.exec(headers.get("uds-signature")!)![1];
  const key = (await readPrivateKey(app.config.dataDir, kid))!;
  const date = Math.floor(Date.now() / 1000) - 7200;
  const fields = { method: "GET", path, status: res.status, date, expires: date + 3600, kid };
  const sig = sign(
    null,
    new TextEncoder().encode(signedMessage({ ...fields, sha256: sha256(body) })),
    key,
  );
  headers.set("uds-signature-date", String(date));
  headers.set("uds-signature-expires", String(date + 3600));
  headers.set("uds-signature", `kid=${kid};sig=${sig.toString("base64url")}`);
  return new Response(body, { status: res.status, headers });
}
