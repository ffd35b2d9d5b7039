/**
 * `deno task tuf-export` (docs/tuf.md "Offline mirrors") against a service that answers what a
 * thief of its online key could sign: nothing is written before the metadata verifies from the
 * trusted root, a version that is not a whole number and a target path with `..` are refused,
 * and the task may write in its output folder only (tools/tuf_export_task.ts).
 */
import assert from "node:assert/strict";
import { createHash, generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { readPrivateKey } from "../src/signing/key_files.ts";
import { listSigningKeys } from "../src/signing/signing_keys.ts";
import { getTufStateEntry } from "../src/tuf/records.ts";
import {
  buildSnapshot,
  buildTargets,
  buildTimestamp,
  metadataText,
  signWith,
  tufKeyOf,
} from "../src/tuf/metadata.ts";
import { exportRepository } from "../tools/tuf_export.ts";
import { exportCommand } from "../tools/tuf_export_task.ts";
import { seedKey, seedProject, seedRelease } from "./helpers.ts";
import { PROJECT_ROOT, runTask } from "./server_process.ts";
import { makeRootKey, publishRoot, serveApp } from "./tuf_fixtures.ts";

const encoder = new TextEncoder();

/** Every file under `dir` (relative paths, sorted); [] when it does not exist. */
async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (at: string, prefix: string) => {
    try {
      for await (const entry of Deno.readDir(at)) {
        if (entry.isDirectory) await walk(join(at, entry.name), `${prefix}${entry.name}/`);
        else found.push(`${prefix}${entry.name}`);
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  };
  await walk(dir, "");
  return found.sort();
}

Deno.test("tuf-export verifies before it writes, and writes only inside --out", async (t) => {
  await using served = await serveApp();
  const { t: app, baseUrl, dir } = served;
  const project = await seedProject(app, { slug: "app" });
  await seedRelease(app, project.id, "1.0.0", encoder.encode("a release"), {
    filename: "App Setup 1.0.0.exe",
  });
  const { secret } = await seedKey(app);
  const rootA = await makeRootKey(dir, "root-a");
  const root1 = await publishRoot(app, {
    dir,
    version: 1,
    rootKeys: [rootA],
    threshold: 1,
    signers: [rootA],
  });
  const fetchText = async (path: string) =>
    await (await fetch(`${baseUrl}/tuf/app/${path}`, {
      headers: { authorization: `Bearer ${secret}` },
    })).text();
  await fetchText("metadata/timestamp.json"); // the repository is signed at its first read
  const state = (await getTufStateEntry(app.store, project.id)).value!;
  const [signingKey] = await listSigningKeys(app.store);
  // What a thief of the online key signs: accepted by the root's rules, not by the exporter's.
  const online = {
    keyId: tufKeyOf(signingKey.public_key).keyID,
    key: (await readPrivateKey(app.config.dataDir, signingKey.kid))!,
  };
  const snapshotText = await fetchText(`metadata/${state.snapshot.version}.snapshot.json`);

  // The compromised service: the real one, but for the answers a test puts in `forged`.
  const forged = new Map<RegExp, Uint8Array<ArrayBuffer>>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    for (const [pattern, body] of forged) if (pattern.test(path)) return new Response(body);
    return await fetch(`${baseUrl}${path}`, { headers: req.headers });
  });
  await using _server = { [Symbol.asyncDispose]: () => server.shutdown() };
  const compromised = `http://127.0.0.1:${server.addr.port}`;
  const work = join(dir, "work");
  const out = join(work, "mirror");
  const escaped = join(work, "escaped");
  const exportFrom = (url: string) =>
    exportRepository({ url, project: "app", trustedRoot: root1, out, key: secret });
  const refusedWithNothingWritten = async (pattern: RegExp) => {
    try {
      await assert.rejects(exportFrom(compromised), pattern);
      assert.deepEqual(await filesUnder(work), [], "nothing written, inside --out or beside it");
    } finally {
      forged.clear();
    }
  };

  const timestampNaming = (snapshotVersion: number, text = snapshotText) =>
    encoder.encode(metadataText(signWith(
      buildTimestamp({
        version: state.timestamp.version + 100,
        expiresMs: Date.now() + 3_600_000,
        snapshotVersion,
        snapshotText: text,
      }),
      [online],
    )));

  await t.step("a snapshot version that is a path is refused", async () => {
    forged.set(/timestamp\.json$/, timestampNaming("../../escaped/snap" as unknown as number));
    forged.set(/snap\.snapshot\.json$/, encoder.encode(snapshotText));
    await refusedWithNothingWritten(/does not verify.*version must be a number.*nothing written/);
  });

  await t.step("a version that is not a safe whole number is refused", async () => {
    // Canonical JSON, which signatures cover, has no fractions: 2^60 is what can be signed.
    forged.set(/timestamp\.json$/, timestampNaming(2 ** 60));
    forged.set(/\d{19}\.snapshot\.json$/, encoder.encode(snapshotText));
    await refusedWithNothingWritten(/the snapshot version is 1152921504606847000, not a version/);
  });

  await t.step("a target path that leaves --out is refused", async () => {
    const body = encoder.encode("planted");
    const sha256 = createHash("sha256").update(body).digest("hex");
    const targets = metadataText(signWith(
      buildTargets({
        version: 5000,
        expiresMs: Date.now() + 3_600_000,
        entries: [{
          path: "../../escaped/planted.exe",
          length: body.length,
          sha256,
          sha512: createHash("sha512").update(body).digest("hex"),
          custom: { version: "9.9.9", build: "", release_id: 9999, created_at: "" },
        }],
      }),
      [online],
    ));
    const snapshot = metadataText(signWith(
      buildSnapshot({ version: 5000, expiresMs: Date.now() + 3_600_000, targetsVersion: 5000 }),
      [online],
    ));
    forged.set(/timestamp\.json$/, timestampNaming(5000, snapshot));
    forged.set(/5000\.snapshot\.json$/, encoder.encode(snapshot));
    forged.set(/5000\.targets\.json$/, encoder.encode(targets));
    forged.set(/planted\.exe$/, body);
    await refusedWithNothingWritten(/target "targets\/\.\.\/\.\.\/escaped\/.*" would leave/);
    assert.deepEqual(await filesUnder(escaped), []);
  });

  await t.step("metadata not signed by the trusted root's keys: nothing written", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const rogue = {
      keyId: tufKeyOf(publicKey.export({ format: "jwk" }).x as string).keyID,
      key: privateKey,
    };
    forged.set(
      /timestamp\.json$/,
      encoder.encode(metadataText(signWith(
        buildTimestamp({
          version: state.timestamp.version + 100,
          expiresMs: Date.now() + 3_600_000,
          snapshotVersion: state.snapshot.version,
          snapshotText,
        }),
        [rogue],
      ))),
    );
    await refusedWithNothingWritten(/does not verify: timestamp was signed by 0\/1 keys/);
  });

  await t.step("deno task tuf-export writes the verified mirror into --out", async () => {
    await Deno.writeTextFile(join(dir, "trusted.root.json"), root1);
    const done = await runTask([
      "tuf-export",
      "--url",
      baseUrl,
      "--project",
      "app",
      "--root",
      "trusted.root.json",
      "--out",
      "work/mirror",
    ], { UPDATE_API_KEY: secret, INIT_CWD: dir });
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /verified from root version 1/);
    const files = await filesUnder(out);
    assert.ok(files.includes("metadata/timestamp.json"), files.join());
    assert.ok(files.some((file) => file.startsWith("targets/")), files.join());
    assert.deepEqual(await filesUnder(escaped), []);
  });

  await t.step("the task's process may write in --out only", async () => {
    const tasks = JSON.parse(await Deno.readTextFile(join(PROJECT_ROOT, "deno.json"))).tasks;
    assert.match(tasks["tuf-export"], /tools\/tuf_export_task\.ts$/);
    assert.doesNotMatch(tasks["tuf-export"], /--allow-write|--allow-all|-A\b/);
    const args = exportCommand(["--url", baseUrl, "--out", out, "--root", "r.json"]);
    const writes = args.filter((arg) => /^--allow-(write|all)|^-A$/.test(arg));
    assert.deepEqual(writes, [`--allow-write=${out}`]);
    assert.throws(() => exportCommand(["--out", "/tmp/a,b"]), /comma/);
  });
});
