/** Fixtures for admin UI tests: an app with one admin, and a browser-like client with cookies. */
import { createTestApp, type TestApp, type TestAppOptions } from "./helpers.ts";
import { hashPassword } from "../src/lib/passwords.ts";
import { createAdminUser } from "../src/accounts/admin_users.ts";
import type { Config } from "../src/lib/config.ts";

export const ADMIN_USER = "admin";
export const ADMIN_PASSWORD = "correct horse battery staple";

// One hash for the whole test run: PBKDF2 at 600,000 rounds takes ~0.1 s.
let passwordHash: Promise<string> | undefined;

export async function createAdminTestApp(
  overrides: Partial<Config> = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const t = await createTestApp(overrides, options);
  passwordHash ??= hashPassword(ADMIN_PASSWORD);
  await createAdminUser(t.store, ADMIN_USER, await passwordHash);
  return t;
}

export type Fields = Record<string, string | string[]>;

/** Sends one request of an `AdminClient`, as if from `address`. */
export type Sender = (path: string, init: RequestInit, address: string) => Promise<Response>;

function appSender(t: TestApp): Sender {
  return async (path, init, address) => {
    const env = { remoteAddr: { transport: "tcp", hostname: address, port: 40000 } };
    return await t.app.request(path, init, env);
  };
}

/**
 * Sends each request to the next of `baseUrls` in turn (a round-robin
 * balancer), not following redirects, as `app.request` does not.
 */
export function httpSender(baseUrls: string[]): Sender {
  let next = 0;
  return (path, init) => {
    const baseUrl = baseUrls[next++ % baseUrls.length];
    return fetch(baseUrl + path, { ...init, redirect: "manual" });
  };
}

/** Sends requests like a browser would: keeps cookies, reads CSRF tokens from pages. */
export class AdminClient {
  readonly cookies = new Map<string, string>();
  csrfToken = "";
  address = "203.0.113.7";

  readonly send: Sender;

  /** Requests go to the in-process app of `t`, or through `send` (real servers: `httpSender`). */
  constructor(target: TestApp | Sender) {
    this.send = typeof target === "function" ? target : appSender(target);
  }

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) {
      headers.set("cookie", [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    }
    const res = await this.send(path, { ...init, headers }, this.address);
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      if (/max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(eq + 1).trim());
    }
    return res;
  }

  /** GETs a page and remembers its CSRF token. */
  async page(path: string): Promise<{ res: Response; html: string }> {
    const res = await this.fetch(path);
    const html = await res.text();
    const token = csrfTokenIn(html);
    if (token) this.csrfToken = token;
    return { res, html };
  }

  /** POSTs a urlencoded form; adds the current CSRF token unless `csrf_token` is given. */
  post(path: string, fields: Fields = {}, headers: HeadersInit = {}): Promise<Response> {
    const body = new URLSearchParams();
    const all: Fields = { csrf_token: this.csrfToken, ...fields };
    for (const [name, value] of Object.entries(all)) {
      for (const item of Array.isArray(value) ? value : [value]) body.append(name, item);
    }
    return this.fetch(path, { method: "POST", body, headers, redirect: "manual" });
  }

  /** POSTs a multipart form with parts in the given order. */
  upload(path: string, parts: Array<[string, string | File]>): Promise<Response> {
    const form = new FormData();
    for (const [name, value] of parts) form.append(name, value);
    return this.fetch(path, { method: "POST", body: form });
  }

  async signIn(username = ADMIN_USER, password = ADMIN_PASSWORD): Promise<Response> {
    await this.page("/admin/login");
    const res = await this.post("/admin/login", { username, password });
    if (res.status === 303) await this.page("/admin");
    return res;
  }
}

export function csrfTokenIn(html: string): string | undefined {
  return /name="csrf_token" value="([^"]*)"/.exec(html)?.[1];
}

export async function signedInClient(t: TestApp): Promise<AdminClient> {
  const client = new AdminClient(t);
  const res = await client.signIn();
  if (res.status !== 303) throw new Error(`sign-in failed with ${res.status}`);
  return client;
}

export async function listArtifactFiles(t: TestApp): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(t.config.artifactsDir)) names.push(entry.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names.sort();
}

/** `n` random bytes (getRandomValues gives at most 64 KiB at a time). */
export function randomBytes(n: number): Uint8Array {
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(bytes.subarray(i, i + 65536));
  return bytes;
}
