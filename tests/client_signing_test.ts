/**
 * The reference client verifies signed answers (docs/signing.md) with
 * WebCrypto against a key set pinned at install: a flipped body byte, a
 * replayed expired answer and a checksum swapped by a proxy are refused with
 * the `signature` failure (exit code 12); a rotation is accepted through the
 * signed key set by a client installed before it.
 */
import assert from "node:assert/strict";
import { EXIT } from "../client/cli.ts";
import {
  checkForUpdate,
  fetchKeySet,
  type PublishedKey,
  UpdateClientError,
} from "../client/update_client.ts";
import { setSigningKeyStatus } from "../src/signing/signing_keys.ts";
import {
  addActiveSigningKey,
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  type TestApp,
} from "./helpers.ts";

/** A fetch into the in-process app, with `change` applied to each answer (a hostile proxy). */
function appFetch(
  t: TestApp,
  change: (res: Response) => Promise<Response> = (r) => Promise.resolve(r),
) {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    return await change(await t.app.request(url.pathname + url.search, init));
  }) as typeof fetch;
}

async function withBody(res: Response, edit: (text: string) => string): Promise<Response> {
  return new Response(edit(await res.text()), { status: res.status, headers: res.headers });
}

Deno.test("the reference client verifies answers against its pinned keys", async (t) => {
  await using app = await createTestApp({ signing: true });
  const project = await seedProject(app, { slug: "app" });
  await seedRelease(app, project.id, "2.0.0");
  const { secret } = await seedKey(app);
  const baseUrl = "http://uds.test";
  await app.signer.ready();
  // Pinned at install: the set as served then (trust on first use, or shipped with the app).
  const installed: PublishedKey[] =
    (await (await app.request("/.well-known/uds-keys.json")).json()).keys;
  const check = (opts: { fetch: typeof fetch; keys?: PublishedKey[]; now?: () => number }) =>
    checkForUpdate({
      baseUrl,
      apiKey: secret,
      project: "app",
      currentVersion: "1.0.0",
      trustedKeys: opts.keys ?? installed,
      fetch: opts.fetch,
      now: opts.now,
      retries: 0,
    });
  const refused = async (promise: Promise<unknown>, pattern: RegExp) => {
    const error = await promise.then(() => null, (e) => e);
    assert.ok(error instanceof UpdateClientError, String(error));
    assert.equal(error.kind, "signature");
    assert.equal(EXIT[error.kind], 12);
    assert.match(error.message, pattern);
  };

  await t.step("a genuine answer verifies", async () => {
    const result = await check({ fetch: appFetch(app) });
    assert.equal(result.release.version, "2.0.0");
  });

  await t.step("a flipped body byte is refused", async () => {
    await refused(
      check({
        fetch: appFetch(app, (res) => withBody(res, (text) => text.replace("2.0.0", "2.0.1"))),
      }),
      /body is not the one signed/,
    );
  });

  await t.step("a proxy that swaps the checksum and fixes the hash header is refused", async () => {
    await refused(
      check({
        fetch: appFetch(app, async (res) => {
          const text = (await res.text()).replace(
            /"checksum_sha256":"[0-9a-f]+"/,
            `"checksum_sha256":"${"0".repeat(64)}"`,
          );
          const headers = new Headers(res.headers);
          const digest = new Uint8Array(
            await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
          );
          headers.set(
            "uds-content-sha256",
            Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join(""),
          );
          return new Response(text, { status: res.status, headers });
        }),
      }),
      /no signature of a pinned key verifies/,
    );
  });

  await t.step("an expired answer replayed later is refused", async () => {
    const later = () => Date.now() + (app.config.signingTtlSeconds + 5) * 1000;
    await refused(check({ fetch: appFetch(app), now: later }), /expired/);
  });

  await t.step("an unsigned answer is refused", async () => {
    await refused(
      check({
        fetch: appFetch(app, (res) => {
          const headers = new Headers(res.headers);
          headers.delete("uds-signature");
          return Promise.resolve(new Response(res.body, { status: res.status, headers }));
        }),
      }),
      /not signed/,
    );
  });

  await t.step(
    "rotation: a client installed before it accepts the new set and keeps working",
    async () => {
      const nextKid = await addActiveSigningKey(app);
      await app.signer.reload();
      // While both sign, the installed client fetches the set (signed by its old key) and pins it.
      const rotated = await fetchKeySet({ baseUrl, fetch: appFetch(app) }, installed);
      assert.ok(rotated.keys.some((k) => k.kid === nextKid));
      for (const key of installed) {
        await setSigningKeyStatus(app.store, {
          kid: key.kid,
          status: "retired",
          keepOneActive: true,
        });
      }
      await app.signer.reload();
      // The old pin alone no longer verifies; the pin taken during the rotation does.
      await refused(check({ fetch: appFetch(app) }), /no signature of a pinned key/);
      const result = await check({ fetch: appFetch(app), keys: rotated.keys });
      assert.equal(result.release.version, "2.0.0");
      // A key set not signed by a pinned key is refused.
      await refused(fetchKeySet({ baseUrl, fetch: appFetch(app) }, installed), /no signature/);
    },
  );
});
