/**
 * Signed answers (docs/signing.md): every client API answer, a download and
 * the key set verify with node:crypto's own Ed25519 `verify` against the
 * published key set; signing off adds nothing; rotation signs with two keys.
 */
import assert from "node:assert/strict";
import { createHash, createPublicKey, verify } from "node:crypto";
import { createKeyFiles } from "../src/signing/key_files.ts";
import { createSigningKey, setSigningKeyStatus } from "../src/store/mod.ts";
import { createTestApp, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";

interface PublishedKey {
  kid: string;
  public_key: string;
  status: string;
}

async function keySet(t: TestApp): Promise<PublishedKey[]> {
  const res = await t.request("/.well-known/uds-keys.json");
  assert.equal(res.status, 200);
  return (await res.json()).keys;
}

/** Verifies `res`'s signatures as a client would, written from docs/signing.md only. */
function verifyAnswer(
  res: Response,
  opts: { method: string; path: string; body: Uint8Array; keys: PublishedKey[]; sha256?: string },
): string[] {
  const date = res.headers.get("uds-signature-date");
  const expires = res.headers.get("uds-signature-expires");
  const header = res.headers.get("uds-signature");
  assert.ok(date && expires && header, `signature headers on ${opts.path} (${res.status})`);
  const sha256 = opts.sha256 ?? createHash("sha256").update(opts.body).digest("hex");
  assert.equal(res.headers.get("uds-content-sha256"), sha256);
  const verified: string[] = [];
  for (const part of header.split(",")) {
    const [, kid, sig] = /^\s*kid=([^;]+);sig=([A-Za-z0-9_-]+)\s*$/.exec(part)!;
    const key = opts.keys.find((k) => k.kid === kid);
    assert.ok(key, `key ${kid} in the set`);
    const message = [
      "uds-sig-v1",
      opts.method,
      opts.path,
      String(res.status),
      date,
      expires,
      kid,
      sha256,
    ].join("\n");
    const publicKey = createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: key.public_key },
      format: "jwk",
    });
    assert.ok(
      verify(null, new TextEncoder().encode(message), publicKey, Buffer.from(sig, "base64url")),
      `signature of ${kid} on ${opts.method} ${opts.path} (${res.status})`,
    );
    verified.push(kid);
  }
  return verified;
}

Deno.test("signing on: every route's answer and a download verify with node:crypto", async (t) => {
  await using app = await createTestApp({ signing: true });
  const project = await seedProject(app, { slug: "app" });
  const artifact = new TextEncoder().encode("the artifact bytes");
  const release = await seedRelease(app, project.id, "1.0", artifact);
  const { secret } = await seedKey(app);
  const { secret: noDownload } = await seedKey(app, { can_download: false });
  const keys = await keySet(app);
  assert.equal(keys.length, 1, "signing on makes a first key");
  assert.equal(keys[0].status, "active");

  const cases: Array<[string, string | undefined, RequestInit?]> = [
    ["/api/v1", undefined],
    ["/api/v1/openapi.json", undefined],
    ["/api/v1/projects", secret],
    ["/api/v1/projects/app/releases/latest", secret],
    [`/api/v1/releases/${release.id}`, secret],
    ["/api/v1/releases/x", secret],
    ["/api/v1/projects", undefined],
    ["/api/v1/projects", noDownload],
    ["/api/v1/projects/none/releases/latest", secret],
    ["/api/v1/nothing-here", undefined],
    ["/api/v1/projects", secret, { method: "POST" }],
    ["/api/v1/projects/app/releases/latest", secret, { method: "HEAD" }],
  ];
  for (const [path, key, init] of cases) {
    await t.step(`${init?.method ?? "GET"} ${path} ${key ? "" : "(no key)"}`, async () => {
      const method = init?.method ?? "GET";
      const res = await app.request(path, key, init);
      const body = new Uint8Array(await res.arrayBuffer());
      // HEAD has no body: its signature covers the GET body's hash, given in the header.
      const sha256 = method === "HEAD" ? res.headers.get("uds-content-sha256")! : undefined;
      assert.deepEqual(verifyAnswer(res, { method, path, body, keys, sha256 }), [keys[0].kid]);
    });
  }

  await t.step("a cached answer's signature is reused, and still verifies", async () => {
    const path = "/api/v1/projects/app/releases/latest";
    const first = await app.request(path, secret);
    const second = await app.request(path, secret);
    assert.equal(second.headers.get("uds-signature"), first.headers.get("uds-signature"));
    const body = new Uint8Array(await second.arrayBuffer());
    await first.body?.cancel();
    verifyAnswer(second, { method: "GET", path, body, keys });
  });

  await t.step("a download is signed over the artifact's SHA-256", async () => {
    const path = `/api/v1/releases/${release.id}/download`;
    const res = await app.request(path, secret);
    const body = new Uint8Array(await res.arrayBuffer());
    assert.deepEqual(body, artifact);
    verifyAnswer(res, { method: "GET", path, body, keys, sha256: release.checksum_sha256 });
    const ranged = await app.request(path, secret, { headers: { range: "bytes=0-3" } });
    assert.equal(ranged.status, 206);
    await ranged.body?.cancel();
    verifyAnswer(ranged, {
      method: "GET",
      path,
      body: artifact,
      keys,
      sha256: release.checksum_sha256,
    });
  });

  await t.step("a flipped body byte no longer verifies", async () => {
    const path = "/api/v1/projects/app/releases/latest";
    const res = await app.request(path, secret);
    const body = new Uint8Array(await res.arrayBuffer());
    body[10] ^= 1;
    assert.throws(() => verifyAnswer(res, { method: "GET", path, body, keys }));
  });

  await t.step("the expiry is the date plus the TTL", async () => {
    const res = await app.request("/api/v1", undefined);
    await res.body?.cancel();
    const date = Number(res.headers.get("uds-signature-date"));
    assert.equal(
      Number(res.headers.get("uds-signature-expires")),
      date + app.config.signingTtlSeconds,
    );
    assert.ok(Math.abs(date - Date.now() / 1000) < 5);
  });

  await t.step("the key set is signed too", async () => {
    const res = await app.request("/.well-known/uds-keys.json");
    const body = new Uint8Array(await res.arrayBuffer());
    verifyAnswer(res, { method: "GET", path: "/.well-known/uds-keys.json", body, keys });
  });
});

Deno.test("rotation: a second active key signs beside the first, then alone", async () => {
  await using app = await createTestApp({ signing: true });
  const first = (await keySet(app))[0];
  const next = await createKeyFiles(app.config.dataDir);
  await createSigningKey(app.kv, { kid: next.kid, public_key: next.publicKey, created_by: "t" });
  await setSigningKeyStatus(app.kv, { kid: next.kid, status: "active", keepOneActive: true });
  await assert.rejects(
    setSigningKeyStatus(app.kv, { kid: "knope", status: "active", keepOneActive: true }),
  );
  // The admin UI reloads its own instance at once; another instance within seconds.
  const signer = await reloadedSigner(app);
  assert.ok(signer);
  let keys = await keySet(app);
  let res = await app.request("/api/v1");
  let body = new Uint8Array(await res.arrayBuffer());
  assert.deepEqual(
    verifyAnswer(res, { method: "GET", path: "/api/v1", body, keys }).sort(),
    [first.kid, next.kid].sort(),
  );

  await setSigningKeyStatus(app.kv, { kid: first.kid, status: "retired", keepOneActive: true });
  await assert.rejects(
    setSigningKeyStatus(app.kv, { kid: next.kid, status: "retired", keepOneActive: true }),
    /only active key/,
  );
  await reloadedSigner(app);
  keys = await keySet(app);
  assert.equal(keys.find((k) => k.kid === first.kid)?.status, "retired");
  res = await app.request("/api/v1/projects");
  body = new Uint8Array(await res.arrayBuffer());
  assert.deepEqual(verifyAnswer(res, { method: "GET", path: "/api/v1/projects", body, keys }), [
    next.kid,
  ]);
});

/** Makes the app read its keys again, as the admin UI does after a change. */
async function reloadedSigner(app: TestApp): Promise<true> {
  await app.signer.reload();
  return true;
}

Deno.test("signing off (the default): no signature headers, no key made", async () => {
  await using app = await createTestApp({ signing: false });
  const res = await app.request("/api/v1");
  await res.body?.cancel();
  for (const name of ["uds-signature", "uds-signature-date", "uds-content-sha256"]) {
    assert.equal(res.headers.get(name), null);
  }
  assert.deepEqual(await keySet(app), []);
});
