/**
 * The Velopack feed's rules (docs/feeds.md "Velopack"): the credential in
 * the URL stands for its key (permission, scope, revocation), drafts are
 * never offered, the rollout's bucket is the client's `stagingId`, halt and
 * testers as everywhere, the one delta that fits `localVersion`, the
 * downloads, and the credential kept out of the access log.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { accessLogRecord, rawPath } from "../src/lib/log.ts";
import { redactUrlCredential } from "../src/lib/url_credential_path.ts";
import { setApiKeyActive } from "../src/credentials/api_keys.ts";
import { getReleaseDelivery } from "../src/stats/delivery.ts";
import { setReleaseState } from "../src/releases/releases.ts";
import { changeRollout, startRollout } from "../src/releases/rollouts.ts";
import { listVelopackDeltas } from "../src/artifact_records/velopack.ts";
import { feedCredential } from "../src/feeds/url_credential.ts";
import {
  buildDeltas,
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  type TestApp,
  waitFor,
  writeNupkgTree,
} from "./helpers.ts";

async function nupkg(work: string, version: string): Promise<Uint8Array> {
  const dir = await writeNupkgTree(work, version);
  const out = join(work, `DeskApp-${version}-full.nupkg`);
  const zipped = await new Deno.Command("zip", { args: ["-q", "-r", "-X", out, "."], cwd: dir })
    .output();
  assert.ok(zipped.success);
  return await Deno.readFile(out);
}

function credentialOf(key: { apiKey: { id: number }; secret: string }) {
  return feedCredential(key.apiKey.id, key.secret);
}

async function feed(app: TestApp, credential: string, query = "", slug = "deskapp") {
  return await app.request(`/feeds/c/${credential}/velopack/${slug}/releases.linux.json${query}`);
}

async function versions(res: Response): Promise<string[]> {
  assert.equal(res.status, 200);
  const body = await res.json();
  return body.Assets.map((a: { Version: string; Type: string }) => `${a.Type} ${a.Version}`);
}

Deno.test("the Velopack feed", async (t) => {
  await using app = await createTestApp();
  const work = await Deno.makeTempDir({ prefix: "uds-velopack-feed-" });
  try {
    const project = await seedProject(app, { slug: "deskapp" });
    const bytes = [await nupkg(work, "1.0.0"), await nupkg(work, "1.0.1")];
    const v1 = await seedRelease(app, project.id, "1.0.0", bytes[0], {
      filename: "DeskApp-1.0.0-full.nupkg",
      release_notes: "First <b>one</b>",
    });
    const seeded = await seedKey(app);
    const { apiKey } = seeded;
    const credential = credentialOf(seeded);

    await t.step("before the package is read: 503 with Retry-After", async () => {
      const res = await feed(app, credential);
      assert.equal(res.status, 503);
      assert.ok(res.headers.get("retry-after"));
      await res.body?.cancel();
    });

    await t.step(
      "without zstd, zip and unzip: the package is read, no delta is built",
      async () => {
        const path = Deno.env.get("PATH")!;
        Deno.env.set("PATH", work);
        try {
          const run = await buildDeltas(app, join(work, "deltas"));
          assert.equal(run.packages, 1);
        } finally {
          Deno.env.set("PATH", path);
        }
      },
    );

    await buildDeltas(app, join(work, "deltas"));

    await t.step("the feed: the latest release as Velopack's Full asset", async () => {
      const res = await feed(app, credential, "?localVersion=0.9.0&id=DeskApp&stagingId=a");
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /application\/json/);
      const body = await res.json();
      assert.deepEqual(body, {
        Assets: [{
          PackageId: "DeskApp",
          Version: "1.0.0",
          Type: "Full",
          FileName: `DeskApp-1.0.0-r${v1.id}-full.nupkg`,
          SHA1: createHash("sha1").update(bytes[0]).digest("hex").toUpperCase(),
          SHA256: v1.checksum_sha256.toUpperCase(),
          Size: bytes[0].byteLength,
          NotesMarkdown: "First <b>one</b>",
          NotesHtml: "<p>First &#60;b&#62;one&#60;/b&#62;</p>",
        }],
      });
      const file = await app.request(
        `/feeds/c/${credential}/velopack/deskapp/DeskApp-1.0.0-r${v1.id}-full.nupkg`,
      );
      assert.equal(file.status, 200);
      assert.deepEqual(new Uint8Array(await file.arrayBuffer()), bytes[0]);
    });

    await t.step("the credential: missing, made up or of another key is refused", async () => {
      for (const wrong of ["x", "vk_1_" + "0".repeat(32), `vk_${apiKey.id}_${"a".repeat(32)}`]) {
        const res = await feed(app, wrong);
        assert.equal(res.status, 401, wrong);
        assert.deepEqual(await res.json(), { error: "invalid api key" });
      }
      // A bearer key in the path is not a feed credential.
      const { secret } = await seedKey(app);
      assert.equal((await feed(app, secret)).status, 401);
    });

    await t.step(
      "a bearer key on /feeds/velopack/{app}/; the channel picks the platform's project",
      async () => {
        const { secret } = await seedKey(app);
        const res = await app.request("/feeds/velopack/deskapp/releases.linux.json", secret);
        assert.deepEqual(await versions(res), ["Full 1.0.0"]);
        const none = await app.request("/feeds/velopack/deskapp/releases.linux.json");
        assert.equal(none.status, 401);
        await none.body?.cancel();
        // One URL per app: "desk" answers from desk-linux for the linux channel, not for osx.
        const deskLinux = await seedProject(app, { slug: "desk-linux" });
        await seedRelease(app, deskLinux.id, "2.0.0"); // a plain file: no Velopack package
        const linux = await feed(app, credential, "", "desk");
        assert.equal(linux.status, 409);
        assert.deepEqual(await linux.json(), { error: "release is not a velopack package" });
        const mac = await app.request(`/feeds/c/${credential}/velopack/desk/releases.osx.json`);
        assert.equal(mac.status, 404);
        await mac.body?.cancel();
      },
    );

    await t.step("scope and permission: the key's own", async () => {
      const other = await seedProject(app, { slug: "other" });
      const scoped = await seedKey(app, {
        scope_mode: "project_allow_list",
        project_ids: [other.id],
      });
      const res = await feed(app, credentialOf(scoped));
      assert.equal(res.status, 404);
      await res.body?.cancel();
      const noDownload = await seedKey(app, { can_download: false });
      const refused = await feed(app, credentialOf(noDownload));
      assert.equal(refused.status, 403);
      await refused.body?.cancel();
    });

    const v2 = await seedRelease(app, project.id, "1.0.1", bytes[1], {
      filename: "DeskApp-1.0.1-full.nupkg",
    });
    await buildDeltas(app, join(work, "deltas"));

    await t.step("the one delta that fits localVersion, and its download", async () => {
      assert.deepEqual(await versions(await feed(app, credential, "?localVersion=1.0.0")), [
        "Full 1.0.1",
        "Delta 1.0.1",
      ]);
      assert.deepEqual(await versions(await feed(app, credential, "?localVersion=0.5.0")), [
        "Full 1.0.1",
      ]);
      const [delta] = await listVelopackDeltas(app.store, v2.id);
      const res = await app.request(
        `/feeds/c/${credential}/velopack/deskapp/DeskApp-1.0.1-r${v2.id}-from-r${v1.id}-delta.nupkg`,
      );
      assert.equal(res.status, 200);
      const body = new Uint8Array(await res.arrayBuffer());
      assert.equal(body.byteLength, delta.size_bytes);
      assert.equal(createHash("sha256").update(body).digest("hex"), delta.checksum_sha256);
      // The savings count the delta as a whole download of the release, as for block maps.
      await waitFor(
        "the delivery count",
        async () => (await getReleaseDelivery(app.store, v2.id)).full > 0,
      );
      assert.deepEqual(await getReleaseDelivery(app.store, v2.id), {
        served: delta.size_bytes,
        full: v2.size_bytes,
      });
      const missing = await app.request(
        `/feeds/c/${credential}/velopack/deskapp/DeskApp-1.0.1-r${v2.id}-from-r999-delta.nupkg`,
      );
      assert.equal(missing.status, 404);
      await missing.body?.cancel();
    });

    await t.step("rollout by stagingId, halt, testers", async () => {
      // 1.0.0 latest again, 1.0.1 staged to half the installs.
      const v1b = await seedRelease(app, project.id, "1.0.0", bytes[0], {
        filename: "DeskApp-1.0.0-full.nupkg",
      });
      await buildDeltas(app, join(work, "deltas"));
      await startRollout(app.store, v2.id, { percentage: 50 });
      const seen = new Set<string>();
      for (let i = 0; i < 40; i++) {
        const [full] = await versions(await feed(app, credential, `?stagingId=install-${i}`));
        seen.add(full);
        // The same install gets the same answer again.
        assert.deepEqual(
          (await versions(await feed(app, credential, `?stagingId=install-${i}`)))[0],
          full,
        );
      }
      assert.deepEqual([...seen].sort(), ["Full 1.0.0", "Full 1.0.1"]);
      await changeRollout(app.store, project.id, { halted: true });
      for (let i = 0; i < 10; i++) {
        assert.deepEqual(await versions(await feed(app, credential, `?stagingId=install-${i}`)), [
          "Full 1.0.0",
        ]);
      }
      const tester = await seedKey(app, { rollout_tags: ["beta"] });
      await changeRollout(app.store, project.id, {
        halted: false,
        percentage: 0,
        tester_tag: "beta",
      });
      assert.deepEqual(await versions(await feed(app, credentialOf(tester))), ["Full 1.0.1"]);
      assert.deepEqual(await versions(await feed(app, credential, "?stagingId=x")), [
        "Full 1.0.0",
      ]);
      assert.ok(v1b.id > v2.id);
    });

    await t.step("drafts and archived releases are never offered", async () => {
      await setReleaseState(app.store, v1.id, "archived");
      const res = await app.request(
        `/feeds/c/${credential}/velopack/deskapp/DeskApp-1.0.0-r${v1.id}-full.nupkg`,
      );
      assert.equal(res.status, 404);
      await res.body?.cancel();
    });

    await t.step("a revoked key's credential stops at once", async () => {
      assert.equal((await feed(app, credential)).status, 200);
      await setApiKeyActive(app.store, apiKey.id, false);
      const res = await feed(app, credential);
      assert.ok(res.status === 401 || res.status === 403, String(res.status));
      await res.body?.cancel();
    });

    await t.step("the access log never holds the credential", () => {
      const url =
        `http://x/feeds/c/${credential}/velopack/deskapp/releases.linux.json?localVersion=1`;
      assert.equal(
        redactUrlCredential(rawPath(url)),
        "/feeds/c/[redacted]/velopack/deskapp/releases.linux.json",
      );
      const record = accessLogRecord({
        startedMs: 0,
        method: "GET",
        url,
        status: 200,
        durationMs: 1,
        bytes: 1,
        client: "127.0.0.1",
        keyId: apiKey.id,
        releaseId: undefined,
        userAgent: undefined,
        aborted: false,
      });
      assert.ok(!JSON.stringify(record).includes(credential));
    });

    await t.step("writes are refused", async () => {
      const res = await app.request(
        `/feeds/c/${credential}/velopack/deskapp/releases.linux.json`,
        undefined,
        {
          method: "POST",
        },
      );
      assert.equal(res.status, 405);
      await res.body?.cancel();
    });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});
