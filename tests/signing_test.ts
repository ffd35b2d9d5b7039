/**
 * Signed answers (docs/signing.md): every client API answer, a download and
 * the key set verify with node:crypto's own Ed25519 `verify` against the
 * published key set; signing off adds nothing; rotation signs with two keys.
 */
import assert from "node:assert/strict";
import { createHash, createPrivateKey, createPublicKey, sign, verify } from "node:crypto";
import {
  type PublishedKey as ClientKey,
  verifyAnswer as verifyClientAnswer,
} from "../client/signatures.ts";
import { signedMessage } from "../src/signing/format.ts";
import { kidOf } from "../src/signing/key_files.ts";
import { setSigningKeyStatus } from "../src/signing/signing_keys.ts";
import { join } from "node:path";
import { AdminClient, createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import {
  addActiveSigningKey,
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  type TestApp,
} from "./helpers.ts";

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

  await t.step("the key set is signed too, its signature reused like an answer's", async () => {
    const res = await app.request("/.well-known/uds-keys.json");
    const body = new Uint8Array(await res.arrayBuffer());
    verifyAnswer(res, { method: "GET", path: "/.well-known/uds-keys.json", body, keys });
    assert.equal(res.headers.get("cache-control"), "no-store, private, max-age=0");
    assert.equal(res.headers.get("vary"), null, "the same for every caller");
    // A second later a new signature would carry a new date: a reused one keeps the first's.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const again = await app.request("/.well-known/uds-keys.json");
    await again.body?.cancel();
    assert.equal(again.headers.get("uds-signature-date"), res.headers.get("uds-signature-date"));
    assert.equal(again.headers.get("uds-signature"), res.headers.get("uds-signature"));
  });
});

Deno.test("rotation: a second active key signs beside the first, then alone", async () => {
  await using app = await createTestApp({ signing: true });
  const first = (await keySet(app))[0];
  const nextKid = await addActiveSigningKey(app);
  await assert.rejects(
    setSigningKeyStatus(app.store, { kid: "knope", status: "active", keepOneActive: true }),
  );
  // The admin UI reloads its own instance at once; another instance within seconds.
  const signer = await reloadedSigner(app);
  assert.ok(signer);
  let keys = await keySet(app);
  let res = await app.request("/api/v1");
  let body = new Uint8Array(await res.arrayBuffer());
  assert.deepEqual(
    verifyAnswer(res, { method: "GET", path: "/api/v1", body, keys }).sort(),
    [first.kid, nextKid].sort(),
  );

  await setSigningKeyStatus(app.store, { kid: first.kid, status: "retired", keepOneActive: true });
  await assert.rejects(
    setSigningKeyStatus(app.store, { kid: nextKid, status: "retired", keepOneActive: true }),
    /only active key/,
  );
  await reloadedSigner(app);
  keys = await keySet(app);
  assert.equal(keys.find((k) => k.kid === first.kid)?.status, "retired");
  res = await app.request("/api/v1/projects");
  body = new Uint8Array(await res.arrayBuffer());
  assert.deepEqual(verifyAnswer(res, { method: "GET", path: "/api/v1/projects", body, keys }), [
    nextKid,
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

Deno.test("admin UI: admins create, activate and retire keys; private keys stay 0600 files", async (t) => {
  await using app = await createAdminTestApp({ signing: true });
  const admin = await signedInClient(app);
  await app.signer.ready();
  const [first] = await keySet(app);

  await t.step("create: a pending key, published, its private half a 0600 file", async () => {
    const res = await admin.post("/admin/signing-keys");
    assert.equal(res.status, 303);
    const { html } = await admin.page("/admin/signing-keys");
    const keys = await keySet(app);
    assert.equal(keys.length, 2);
    const next = keys.find((k) => k.kid !== first.kid)!;
    assert.equal(next.status, "pending");
    assert.ok(html.includes(`data-signing-key-id="${next.kid}"`));
    assert.ok(!html.includes("PRIVATE KEY"));
    const file = join(app.config.dataDir, "signing-keys", `${next.kid}.pem`);
    assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(join(app.config.dataDir, "signing-keys"))).mode! & 0o777, 0o700);
  });

  await t.step("activate the new key, retire the old one: answers follow at once", async () => {
    const next = (await keySet(app)).find((k) => k.kid !== first.kid)!;
    assert.equal((await admin.post(`/admin/signing-keys/${next.kid}/activate`)).status, 303);
    let res = await app.request("/api/v1");
    assert.equal(res.headers.get("uds-signature")!.split(",").length, 2);
    await res.body?.cancel();
    assert.equal((await admin.post(`/admin/signing-keys/${first.kid}/retire`)).status, 303);
    // The last active key is not retired while signing is on.
    await admin.post(`/admin/signing-keys/${next.kid}/retire`);
    const keys = await keySet(app);
    assert.deepEqual(
      keys.map((k) => [k.kid, k.status]).sort(),
      [
        [first.kid, "retired"],
        [next.kid, "active"],
      ].sort(),
    );
    res = await app.request("/api/v1");
    const body = new Uint8Array(await res.arrayBuffer());
    assert.deepEqual(verifyAnswer(res, { method: "GET", path: "/api/v1", body, keys }), [next.kid]);
    const log = await admin.page("/admin/audit");
    assert.ok(log.html.includes("signing_key.retire"));
  });

  await t.step("a viewer may not see or change the keys", async () => {
    await admin.page("/admin/accounts");
    const password = "a long enough password 42";
    const made = await admin.post("/admin/accounts", { username: "vic", password, role: "viewer" });
    assert.equal(made.status, 303);
    const viewer = new AdminClient(app);
    assert.equal((await viewer.signIn("vic", password)).status, 303);
    assert.equal((await viewer.fetch("/admin/signing-keys")).status, 403);
    assert.equal((await viewer.post("/admin/signing-keys")).status, 403);
  });
});

Deno.test("docs/signing.md's test vector is what the service's code signs", async () => {
  const doc = await Deno.readTextFile(new URL("../docs/signing.md", import.meta.url));
  const seed = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
  const der = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
  const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
  const x = createPublicKey(privateKey).export({ format: "jwk" }).x as string;
  const kid = kidOf(x);
  const body = '{"project":{"slug":"app"},"release":{"version":"1.2.3"}}';
  const sha256 = createHash("sha256").update(body).digest("hex");
  const message = signedMessage({
    method: "GET",
    path: "/api/v1/projects/app/releases/latest",
    status: 200,
    date: 1767225600,
    expires: 1767229200,
    kid,
    sha256,
  });
  const sig = sign(null, Buffer.from(message), privateKey).toString("base64url");
  for (const value of [x, kid, body, sha256, sig]) {
    assert.ok(doc.includes(`\`${value}\``), `docs/signing.md gives ${value}`);
  }
  const tampered = message.replace("1.2.3", "1.2.4").replace(sha256, "0".repeat(64));
  assert.ok(
    !verify(
      null,
      Buffer.from(tampered),
      createPublicKey(privateKey),
      Buffer.from(sig, "base64url"),
    ),
  );
});

Deno.test("a feed download of a file named with spaces and é is signed over the path as sent", async (t) => {
  await using app = await createTestApp({ signing: true });
  const project = await seedProject(app, { slug: "sig" });
  const artifact = new TextEncoder().encode("an installer");
  // electron-builder's default installer name: product name, "Setup", version.
  const release = await seedRelease(app, project.id, "1.0.0", artifact, {
    filename: "Sig App Setup 1.0.0 é.exe",
  });
  const { secret } = await seedKey(app);
  const keys = await keySet(app);
  const yml = await app.request("/feeds/electron/sig/latest.yml", secret);
  assert.equal(yml.status, 200);
  const feedPath = /^path: (.+)$/m.exec(await yml.text())![1].replace(/^'|'$/g, "");
  assert.equal(feedPath, "/feeds/electron/sig/files/1.0.0/Sig%20App%20Setup%201.0.0%20%C3%A9.exe");
  const variants = [
    feedPath,
    // The same file, spelled otherwise: each is signed as it was sent.
    `/feeds/files/${release.id}/Sig%20App%20Setup%201.0.0%20%C3%A9.%65xe`,
    `/api/v1/releases/${release.id}/download`,
  ];
  for (const path of variants) {
    await t.step(`GET ${path}`, async () => {
      const res = await app.request(`${path}?query=not-signed`, secret);
      assert.equal(res.status, 200);
      const body = new Uint8Array(await res.arrayBuffer());
      assert.deepEqual(body, artifact);
      verifyAnswer(res, { method: "GET", path, body, keys, sha256: release.checksum_sha256 });
      // The reference client's verifier agrees, and refuses the decoded path.
      const answer = {
        method: "GET",
        path,
        status: res.status,
        headers: res.headers,
        sha256: release.checksum_sha256,
      };
      assert.equal(await verifyClientAnswer(answer, keys as ClientKey[]), keys[0].kid);
      if (decodeURI(path) !== path) {
        await assert.rejects(
          verifyClientAnswer({ ...answer, path: decodeURI(path) }, keys as ClientKey[]),
          /no signature of a pinned key verifies/,
        );
      }
    });
  }
  await t.step("an error answer to an encoded path is signed over it too", async () => {
    const path = "/api/v1/projects/n%6Fne/releases/latest";
    const res = await app.request(path, secret);
    assert.equal(res.status, 404);
    const body = new Uint8Array(await res.arrayBuffer());
    verifyAnswer(res, { method: "GET", path, body, keys });
  });
});

Deno.test("docs/signing.md's vector with an encoded path verifies, and not over the decoded path", async () => {
  const doc = await Deno.readTextFile(new URL("../docs/signing.md", import.meta.url));
  const section = doc.slice(doc.indexOf("A download whose path is percent-encoded"));
  const cell = (item: string) => {
    const match = new RegExp(`^\\| ${item} +\\| \`([^\`]+)\``, "m").exec(section);
    assert.ok(match, `the encoded-path vector gives its ${item}`);
    return match[1];
  };
  const path = cell("path as sent");
  for (const encoded of ["%20", "%C3%A9", "%65nc", "%2B"]) {
    assert.ok(path.includes(encoded), `the vector's path holds ${encoded}`);
  }
  const publicKey = "A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg";
  const headers = new Headers({
    "uds-signature-date": cell("date"),
    "uds-signature-expires": cell("expires"),
    "uds-content-sha256": cell("SHA-256"),
    "uds-signature": `kid=${cell("kid")};sig=${cell("signature \\(b64u\\)")}`,
  });
  const keys: ClientKey[] = [{
    kid: cell("kid"),
    alg: "Ed25519",
    public_key: publicKey,
    status: "active",
  }];
  const answer = { method: "GET", path, status: 200, headers, sha256: cell("SHA-256") };
  const now = Number(cell("date")) * 1000;
  assert.equal(await verifyClientAnswer(answer, keys, now), cell("kid"));
  await assert.rejects(
    verifyClientAnswer({ ...answer, path: decodeURIComponent(path) }, keys, now),
    /no signature of a pinned key verifies/,
  );
  // And it is what the service's own code signs with the vector's key.
  const seed = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
  const der = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
  const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
  const message = signedMessage({
    method: "GET",
    path,
    status: 200,
    date: Number(cell("date")),
    expires: Number(cell("expires")),
    kid: cell("kid"),
    sha256: cell("SHA-256"),
  });
  assert.equal(
    sign(null, Buffer.from(message), privateKey).toString("base64url"),
    cell("signature \\(b64u\\)"),
  );
});

Deno.test("docs/signing.md's lists: which answers are signed and which not", async (t) => {
  await using app = await createTestApp({ signing: true });
  const project = await seedProject(app, { slug: "app" });
  const release = await seedRelease(app, project.id, "1.0.0");
  const { secret } = await seedKey(app);
  const download = `/api/v1/releases/${release.id}/download`;
  const signed: Array<[string, number, string | undefined, RequestInit?]> = [
    ["/api/v1/projects", 405, secret, { method: "OPTIONS" }],
    [download, 416, secret, { headers: { range: "bytes=99999-" } }],
    [download, 200, secret, { method: "HEAD" }],
    ["/feeds/electron/app/latest.yml", 200, secret],
    ["/feeds/electron/app/latest.yml", 401, undefined],
    ["/feeds/tauri/app/linux/x86_64/0.1", 409, secret],
    ["/feeds/sparkle/app/appcast.xml", 409, secret],
    ["/feeds/nothing", 404, secret],
    ["/.well-known/uds-keys.json", 200, undefined, { method: "HEAD" }],
    ["/tuf/app/metadata/root.json", 404, secret],
    ["/tuf/app/metadata/timestamp.json", 401, undefined],
    ["/tuf/app/metadata/root.json", 405, secret, { method: "POST" }],
    ["/tuf/nothing", 404, secret],
  ];
  const unsigned: Array<[string, number, string | undefined, RequestInit?]> = [
    ["/.well-known/uds-keys-root.json", 404, undefined],
    ["/.well-known/uds-keys-root.json", 404, undefined, { method: "HEAD" }],
    ["/healthz", 200, undefined],
    ["/publish/v1/projects", 401, undefined],
    ["/nothing-here", 404, undefined],
  ];
  for (const [list, expected] of [[signed, true], [unsigned, false]] as const) {
    for (const [path, status, key, init] of list) {
      await t.step(`${init?.method ?? "GET"} ${path} ${status}: signed ${expected}`, async () => {
        const res = await app.request(path, key, init);
        await res.body?.cancel();
        assert.equal(res.status, status);
        assert.equal(res.headers.has("uds-signature"), expected);
      });
    }
  }
});
