/**
 * The TUF repository of a project (docs/tuf.md), checked with the real
 * `tuf-js` client against the running service: a release is found and
 * verified, a new one appears, a replayed or expired timestamp, a changed
 * target and metadata of a key outside the root are refused, a key out of
 * scope gets 404, a client on an old root follows a 2-of-3 root rotation,
 * and an exported mirror on a plain static server passes the same checks.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { readPrivateKey } from "../src/signing/key_files.ts";
import { listSigningKeys, setSigningKeyStatus } from "../src/signing/signing_keys.ts";
import { getTufStateEntry } from "../src/tuf/records.ts";
import { buildTimestamp, metadataText, signWith, tufKeyOf } from "../src/tuf/metadata.ts";
import { exportRepository } from "../tools/tuf_export.ts";
import { run as tufRoot } from "../tools/tuf_root.ts";
import { seedKey, seedProject, seedRelease } from "./helpers.ts";
import {
  activeSigningKey,
  fetchNewest,
  installClient,
  KeyFetcher,
  makeRootKey,
  publishRoot,
  serveApp,
} from "./tuf_fixtures.ts";

const encoder = new TextEncoder();

Deno.test("tuf-js verifies a project's releases from the service, and refuses what it must", async (t) => {
  await using served = await serveApp();
  const { t: app, baseUrl, dir } = served;
  const project = await seedProject(app, { slug: "app" });
  const otherProject = await seedProject(app, { slug: "other" });
  const first = encoder.encode("the first release's bytes");
  await seedRelease(app, project.id, "1.0.0", first, { filename: "App Setup 1.0.0.exe" });
  const { secret } = await seedKey(app);
  const rootA = await makeRootKey(dir, "root-a");
  const root1 = await publishRoot(app, {
    dir,
    version: 1,
    rootKeys: [rootA],
    threshold: 1,
    signers: [rootA],
  });
  const fetcher = new KeyFetcher(secret);
  const client = await installClient({
    dir,
    name: "client",
    rootText: root1,
    metadataUrl: `${baseUrl}/tuf/app/metadata`,
    targetUrl: `${baseUrl}/tuf/app/targets`,
  }, fetcher);

  let firstTimestamp = new Uint8Array();
  await t.step("it fetches and verifies the release", async () => {
    const got = await fetchNewest(client);
    assert.equal(got.version, "1.0.0");
    assert.deepEqual(got.bytes, first);
    firstTimestamp = await Deno.readFile(join(client.metadataDir, "timestamp.json"));
    const targets = JSON.parse(await Deno.readTextFile(join(client.metadataDir, "targets.json")));
    const [path, target] = Object.entries(targets.signed.targets)[0] as [string, {
      hashes: Record<string, string>;
      custom: Record<string, unknown>;
    }];
    assert.match(path, /^app\/\d+\/App_Setup_1\.0\.0\.exe$/);
    assert.deepEqual(Object.keys(target.hashes), ["sha256", "sha512"]);
    assert.equal(target.custom.version, "1.0.0");
    assert.equal(typeof target.custom.release_id, "number");
  });

  await t.step("after a new release is published, it finds it", async () => {
    const second = encoder.encode("the second release, a bit longer");
    await seedRelease(app, project.id, "1.1.0", second);
    const got = await fetchNewest(client);
    assert.equal(got.version, "1.1.0");
    assert.deepEqual(got.bytes, second);
  });

  await t.step("a replayed older timestamp.json is refused", async () => {
    fetcher.overrides.set("/tuf/app/metadata/timestamp.json", firstTimestamp);
    await assert.rejects(() => client.updater().refresh(), /version|must be/i);
    fetcher.overrides.clear();
  });

  const state = (await getTufStateEntry(app.store, project.id)).value!;
  const [signingKey] = await listSigningKeys(app.store);
  const online = {
    keyId: tufKeyOf(signingKey.public_key).keyID,
    key: (await readPrivateKey(app.config.dataDir, signingKey.kid))!,
  };
  const snapshotText = await (await fetch(
    `${baseUrl}/tuf/app/metadata/${state.snapshot.version}.snapshot.json`,
    { headers: { authorization: `Bearer ${secret}` } },
  )).text();

  await t.step("an expired timestamp.json is refused, even of a newer version", async () => {
    const expired = signWith(
      buildTimestamp({
        version: state.timestamp.version + 1000,
        expiresMs: Date.now() - 60_000,
        snapshotVersion: state.snapshot.version,
        snapshotText,
      }),
      [online],
    );
    fetcher.overrides.set(
      "/tuf/app/metadata/timestamp.json",
      encoder.encode(metadataText(expired)),
    );
    await assert.rejects(() => client.updater().refresh(), /expired/i);
    fetcher.overrides.clear();
  });

  await t.step("metadata signed by a key outside the root is refused", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const rogue = signWith(
      buildTimestamp({
        version: state.timestamp.version + 2000,
        expiresMs: Date.now() + 3_600_000,
        snapshotVersion: state.snapshot.version,
        snapshotText,
      }),
      [{ keyId: tufKeyOf(publicKey.export({ format: "jwk" }).x as string).keyID, key: privateKey }],
    );
    fetcher.overrides.set("/tuf/app/metadata/timestamp.json", encoder.encode(metadataText(rogue)));
    await assert.rejects(() => client.updater().refresh(), /timestamp was signed by 0\/1 keys/);
    fetcher.overrides.clear();
  });

  await t.step("a target whose bytes do not match its hashes is refused", async () => {
    const updater = client.updater();
    await updater.refresh();
    const targets = JSON.parse(await Deno.readTextFile(join(client.metadataDir, "targets.json")));
    const [path, target] = Object.entries(targets.signed.targets).at(-1) as [string, {
      length: number;
      hashes: { sha256: string };
    }];
    const slash = path.lastIndexOf("/");
    const url = `/tuf/app/targets/${path.slice(0, slash + 1)}${target.hashes.sha256}.${
      path.slice(slash + 1)
    }`;
    fetcher.overrides.set(url, new Uint8Array(target.length).fill(0x41));
    const info = await updater.getTargetInfo(path);
    await assert.rejects(
      () => updater.downloadTarget(info!, join(client.targetDir, "tampered")),
      /hash|length/i,
    );
    fetcher.overrides.clear();
  });

  await t.step("a key that may not see the project gets 404, and the client fails", async () => {
    const other = (await seedKey(app, {
      scope_mode: "project_allow_list",
      project_ids: [otherProject.id],
    })).secret;
    for (
      const path of [
        "/tuf/app/metadata/timestamp.json",
        "/tuf/app/metadata/1.root.json",
        "/tuf/app/targets/app/1/x",
      ]
    ) {
      const res = await app.request(path, other);
      assert.equal(res.status, 404, path);
      assert.deepEqual(await res.json(), { error: "resource not found" });
    }
    const outsider = await installClient({
      dir,
      name: "outsider",
      rootText: root1,
      metadataUrl: `${baseUrl}/tuf/app/metadata`,
      targetUrl: `${baseUrl}/tuf/app/targets`,
    }, new KeyFetcher(other));
    await assert.rejects(() => outsider.updater().refresh(), /404/);
    const res = await app.request("/tuf/app/metadata/timestamp.json");
    assert.equal(res.status, 401);
    await res.body?.cancel();
  });

  await t.step("only GET and HEAD of known names; the answers are JSON", async () => {
    const post = await app.request("/tuf/app/metadata/timestamp.json", secret, { method: "POST" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "GET, HEAD");
    await post.body?.cancel();
    for (const name of ["5.timestamp.json", "x.json", "root.yaml", "1.root.json.bak"]) {
      const res = await app.request(`/tuf/app/metadata/${name}`, secret);
      assert.equal(res.status, 404, name);
      assert.deepEqual(await res.json(), { error: "resource not found" });
    }
    const head = await app.request("/tuf/app/metadata/timestamp.json", secret, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.match(head.headers.get("content-type") ?? "", /^application\/json/);
    await head.body?.cancel();
  });

  await t.step(
    "a client on root 1 follows rotations to a 2-of-3 root and a new online key",
    async () => {
      const old = await installClient({
        dir,
        name: "old-install",
        rootText: root1,
        metadataUrl: `${baseUrl}/tuf/app/metadata`,
        targetUrl: `${baseUrl}/tuf/app/targets`,
      }, new KeyFetcher(secret));
      const rootB = await makeRootKey(dir, "root-b");
      const rootC = await makeRootKey(dir, "root-c");
      // Version 2: three root keys, threshold 2; signed by version 1's key and two of its own.
      await publishRoot(app, {
        dir,
        version: 2,
        rootKeys: [rootA, rootB, rootC],
        threshold: 2,
        signers: [rootA, rootB],
      });
      // A version 3 signed by one root key only is refused at upload.
      await assert.rejects(
        () =>
          publishRoot(app, {
            dir,
            version: 3,
            rootKeys: [rootA, rootB, rootC],
            threshold: 2,
            signers: [rootC],
          }),
        /threshold/,
      );
      // Version 3 (the online key rotated): signed by B and C, A is not needed.
      const oldKid = (await listSigningKeys(app.store))[0].kid;
      await activeSigningKey(app);
      await publishRoot(app, {
        dir,
        version: 3,
        rootKeys: [rootA, rootB, rootC],
        threshold: 2,
        signers: [rootB, rootC],
      });
      await setSigningKeyStatus(app.store, {
        kid: oldKid,
        status: "retired",
        keepOneActive: false,
      });
      // Retiring the old key is a key write: the metadata is signed anew by the new key only.
      await seedRelease(app, project.id, "1.2.0", encoder.encode("after the rotation"));
      const got = await fetchNewest(old);
      assert.equal(got.version, "1.2.0");
      const trusted = JSON.parse(await Deno.readTextFile(join(old.metadataDir, "root.json")));
      assert.equal(trusted.signed.version, 3);
      assert.equal(trusted.signed.roles.root.threshold, 2);
      const verified = await tufRoot([
        "verify",
        "--in",
        join(dir, "3.root.json"),
        "--previous",
        join(dir, "2.root.json"),
      ]);
      assert.match(verified, /root version 3/);
    },
  );

  await t.step("an exported mirror on a static server passes the same client", async () => {
    const mirrorDir = join(dir, "mirror");
    const report = await exportRepository({
      url: baseUrl,
      project: "app",
      trustedRoot: root1,
      out: mirrorDir,
      key: secret,
    });
    assert.match(report, /verified from root version 1, root versions 1 to 3/);
    // From a later trusted root: the earlier versions are each checked against the next one.
    const fromThree = await exportRepository({
      url: baseUrl,
      project: "app",
      trustedRoot: await Deno.readTextFile(join(dir, "3.root.json")),
      out: join(dir, "mirror-from-3"),
      key: secret,
    });
    assert.match(fromThree, /verified from root version 3, root versions 1 to 3/);
    for (const version of [1, 2, 3]) {
      assert.deepEqual(
        await Deno.readFile(join(dir, "mirror-from-3", "metadata", `${version}.root.json`)),
        await Deno.readFile(join(mirrorDir, "metadata", `${version}.root.json`)),
      );
    }
    await using mirror = serveStatic(mirrorDir);
    const fresh = await installClient({
      dir,
      name: "mirror-client",
      rootText: root1,
      metadataUrl: `${mirror.url}/metadata`,
      targetUrl: `${mirror.url}/targets`,
    }, new KeyFetcher(null));
    const got = await fetchNewest(fresh);
    assert.equal(got.version, "1.2.0");
    assert.deepEqual(got.bytes, encoder.encode("after the rotation"));
  });
});

/** A plain static file server of `root` (no keys, no logic): what any web server does. */
function serveStatic(root: string): { url: string } & AsyncDisposable {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    if (path.includes("..")) return new Response("bad path", { status: 400 });
    try {
      return new Response(await Deno.readFile(join(root, path)));
    } catch {
      return new Response("not found", { status: 404 });
    }
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
