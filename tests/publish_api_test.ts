/** The publishing API in process (docs/publishing.md): tokens, uploads, reads, edits, state changes. */
import assert from "node:assert/strict";
import { releaseJson } from "../src/client_api/serialize.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import { listPublishTokens, setPublishTokenActive } from "../src/credentials/publish_tokens.ts";
import { getRelease, listReleasesByProject } from "../src/releases/releases.ts";
import type { Release } from "../src/releases/types.ts";
import {
  createTestApp,
  dumpKvText,
  seedKey,
  seedProject,
  seedRelease,
  sha256,
  type TestApp,
} from "./helpers.ts";
import {
  createAdminTestApp,
  listArtifactFiles,
  randomBytes,
  signedInClient,
} from "./admin_helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";

function call(t: TestApp, token: string | undefined, path: string, init: RequestInit = {}) {
  return t.request(PUBLISH_PREFIX + path, token, init);
}

async function jsonOf(res: Response): Promise<{ status: number; body: Record<string, unknown> }> {
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/, "always JSON");
  return { status: res.status, body: await res.json() };
}

Deno.test("publishing API: tokens", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const release = await seedRelease(app, project.id, "1.0.0");
  const { secret } = await seedPublishToken(app.store);
  const { secret: clientKey } = await seedKey(app);

  await t.step("no token: 401 JSON with a challenge, never a redirect", async () => {
    const res = await call(app, undefined, "/projects/desktop/releases");
    assert.equal(res.status, 401);
    assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer realm=/);
    assert.deepEqual((await jsonOf(res)).body, { error: "missing bearer publish token" });
    const post = await call(app, undefined, "/projects/desktop/releases", {
      method: "POST",
      body: uploadForm({ version: "2.0.0" }, { bytes: new Uint8Array([1]) }),
    });
    assert.equal(post.status, 401);
    await post.body?.cancel();
  });

  await t.step("a client API key is refused here, a publish token on /api/v1", async () => {
    const res = await call(app, clientKey, "/projects/desktop/releases");
    const { status, body } = await jsonOf(res);
    assert.equal(status, 401);
    assert.match(String(body.error), /client API key/);
    const api = await app.request(`/api/v1/releases/${release.id}`, secret);
    assert.equal(api.status, 401);
    assert.deepEqual(await api.json(), { error: "invalid api key" });
  });

  await t.step("a made-up or malformed token is refused", async () => {
    const res = await call(app, "udp_" + "A".repeat(43), "/token");
    assert.deepEqual(await jsonOf(res), { status: 401, body: { error: "invalid publish token" } });
    const bad = await app.request(`${PUBLISH_PREFIX}/token`, undefined, {
      headers: { authorization: "Basic abc" },
    });
    assert.equal((await jsonOf(bad)).status, 400);
  });

  await t.step("the token describes itself", async () => {
    const { status, body } = await jsonOf(await call(app, secret, "/token"));
    assert.equal(status, 200);
    const token = body.token as Record<string, unknown>;
    assert.equal(token.name, "ci");
    assert.deepEqual(token.permissions, ["upload", "release_state"]);
    assert.equal(String(token.prefix).length, 10);
  });

  await t.step("disabled and expired tokens are refused, and the refusal is audited", async () => {
    const disabled = await seedPublishToken(app.store, { name: "old pipeline" });
    await setPublishTokenActive(app.store, disabled.token.id, false);
    const expired = await seedPublishToken(app.store, {
      name: "expired",
      expires_at: "2001-01-01T00:00:00Z",
    });
    for (const token of [disabled.secret, expired.secret]) {
      const res = await call(app, token, "/token");
      assert.deepEqual(await jsonOf(res), {
        status: 401,
        body: { error: "invalid publish token" },
      });
    }
    const { entries } = await listAuditEntries(app.store, { limit: 10 });
    const refused = entries.filter((entry) => entry.action === "publish_token.refused");
    assert.deepEqual(refused.map((entry) => entry.actor).sort(), [
      `token:expired (#${expired.token.id})`,
      `token:old pipeline (#${disabled.token.id})`,
    ]);
  });

  await t.step("failed attempts from one address are throttled like passwords", async () => {
    const guess = "udp_" + "B".repeat(43);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await app.requestFrom("198.51.100.9", `${PUBLISH_PREFIX}/token`, guess);
      statuses.push(res.status);
      if (res.status === 429) assert.match(res.headers.get("retry-after") ?? "", /^\d+$/);
      await res.body?.cancel();
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    // Even the right token waits out the lock from that address; other addresses are not held.
    const locked = await app.requestFrom("198.51.100.9", `${PUBLISH_PREFIX}/token`, secret);
    assert.equal(locked.status, 429);
    await locked.body?.cancel();
    const other = await app.requestFrom("198.51.100.10", `${PUBLISH_PREFIX}/token`, secret);
    assert.equal(other.status, 200);
    await other.body?.cancel();
  });

  await t.step("an unknown route under the prefix is a JSON 404", async () => {
    const res = await call(app, secret, "/nope");
    assert.equal((await jsonOf(res)).status, 404);
    const root = await call(app, secret, "");
    assert.equal((await jsonOf(root)).status, 404);
    const anonymous = await call(app, undefined, "/nope");
    assert.equal((await jsonOf(anonymous)).status, 401);
  });
});

Deno.test("publishing API: upload", async (t) => {
  await using app = await createTestApp({ maxUploadBytes: 1024 * 1024 });
  const project = await seedProject(app, { slug: "desktop", name: "Desktop" });
  const other = await seedProject(app, { slug: "other" });
  const { secret } = await seedPublishToken(app.store);
  const bytes = randomBytes(300_000);

  await t.step("201 with the client API's release shape, state and is_latest", async () => {
    const res = await call(app, secret, "/projects/desktop/releases", {
      method: "POST",
      body: uploadForm(
        {
          version: "2.0.0",
          build: "77",
          release_notes: "Fixes",
          sha256: sha256(bytes),
          size_bytes: String(bytes.byteLength),
        },
        { bytes, name: "dir/desktop-2.0.0.zip", type: "application/zip" },
      ),
    });
    const { status, body } = await jsonOf(res);
    assert.equal(status, 201, JSON.stringify(body));
    const release = body.release as Record<string, unknown>;
    assert.equal(res.headers.get("location"), `${PUBLISH_PREFIX}/releases/${release.id}`);
    const stored = (await getRelease(app.store, Number(release.id)))!;
    assert.deepEqual(release, { ...releaseJson(stored), state: "active", is_latest: true });
    assert.equal(stored.filename, "desktop-2.0.0.zip");
    assert.equal(stored.content_type, "application/zip");
    assert.equal(stored.checksum_sha256, sha256(bytes));
    assert.equal(stored.size_bytes, bytes.byteLength);
    assert.deepEqual((body.project as Record<string, unknown>).slug, "desktop");
    // The client API serves it as latest at once.
    const { secret: key } = await seedKey(app);
    const latest = await app.request("/api/v1/projects/desktop/releases/latest", key);
    assert.equal((await latest.json()).release.id, release.id);
    const { entries } = await listAuditEntries(app.store, { limit: 5 });
    const upload = entries.find((entry) => entry.action === "release.upload")!;
    assert.match(upload.actor, /^token:ci \(#\d+\)$/);
    assert.match(upload.details, /project desktop; version 2.0.0/);
  });

  await t.step(
    "filename and content_type fields name the file; uppercase sha256 is fine",
    async () => {
      const small = new TextEncoder().encode("hello");
      const res = await call(app, secret, "/projects/desktop/releases", {
        method: "POST",
        body: uploadForm({
          version: "2.0.1",
          filename: "app.tar.gz",
          content_type: "application/gzip",
          sha256: sha256(small).toUpperCase(),
        }, { bytes: small }),
      });
      const { status, body } = await jsonOf(res);
      assert.equal(status, 201, JSON.stringify(body));
      const release = body.release as Record<string, unknown>;
      assert.equal(release.filename, "app.tar.gz");
      assert.equal(release.content_type, "application/gzip");
    },
  );

  await t.step(
    "release notes: surrounding white space goes, a final newline included",
    async () => {
      const small = new TextEncoder().encode("notes");
      const res = await call(app, secret, "/projects/desktop/releases", {
        method: "POST",
        body: uploadForm({ version: "2.0.2", release_notes: "  Fixes a crash.\n" }, {
          bytes: small,
        }),
      });
      const { status, body } = await jsonOf(res);
      assert.equal(status, 201, JSON.stringify(body));
      assert.equal((body.release as Record<string, unknown>).release_notes, "Fixes a crash.");
    },
  );

  const refusals: Array<[string, number, RegExp, () => BodyInit | null, Record<string, string>?]> =
    [
      [
        "a SHA-256 mismatch",
        422,
        /sha256 mismatch/,
        () => uploadForm({ version: "3.0.0", sha256: "0".repeat(64) }, { bytes }),
      ],
      [
        "a declared size_bytes other than the file's",
        422,
        /size mismatch: you sent size_bytes 300001, the service received 300000 bytes/,
        () => uploadForm({ version: "3.0.0", size_bytes: "300001" }, { bytes }),
      ],
      [
        "a malformed size_bytes",
        400,
        /size_bytes must be a whole number of bytes/,
        () => uploadForm({ version: "3.0.0", size_bytes: "300 KB" }, { bytes }),
      ],
      [
        "a malformed SHA-256",
        400,
        /64 hexadecimal/,
        () => uploadForm({ version: "3.0.0", sha256: "abc" }, { bytes }),
      ],
      ["no version", 400, /version/, () => uploadForm({}, { bytes })],
      ["no file", 400, /file is required/, () => uploadForm({ version: "3.0.0" })],
      [
        "an empty file",
        400,
        /file is required/,
        () => uploadForm({ version: "3.0.0" }, { bytes: new Uint8Array(0) }),
      ],
      [
        "an unknown field",
        400,
        /unknown field "notes"/,
        () => uploadForm({ version: "3.0.0", notes: "x" }, { bytes }),
      ],
      [
        "a file over the limit",
        413,
        /upload limit/,
        () => uploadForm({ version: "3.0.0" }, { bytes: randomBytes(1024 * 1024 + 1) }),
      ],
      ["a body that is not multipart", 400, /multipart/, () => "version=1", {
        "content-type": "application/x-www-form-urlencoded",
      }],
      [
        "a broken multipart body",
        400,
        /could not be read/,
        () => '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc',
        { "content-type": "multipart/form-data; boundary=x" },
      ],
    ];
  for (const [label, status, message, body, headers] of refusals) {
    await t.step(`${label}: ${status}, JSON, nothing stored`, async () => {
      const before = await listArtifactFiles(app);
      const releases = (await listReleasesByProject(app.store, project.id)).length;
      const res = await call(app, secret, "/projects/desktop/releases", {
        method: "POST",
        body: body(),
        headers,
      });
      const answer = await jsonOf(res);
      assert.equal(answer.status, status, JSON.stringify(answer.body));
      assert.match(String(answer.body.error), message);
      assert.deepEqual(await listArtifactFiles(app), before);
      assert.equal((await listReleasesByProject(app.store, project.id)).length, releases);
    });
  }

  await t.step("scope and permissions: 403; unknown project 404", async () => {
    const scoped = await seedPublishToken(app.store, {
      name: "other only",
      all_projects: false,
      project_ids: [other.id],
    });
    const readOnly = await seedPublishToken(app.store, {
      name: "state only",
      permissions: ["release_state"],
    });
    const upload = (token: string, slug: string) =>
      call(app, token, `/projects/${slug}/releases`, {
        method: "POST",
        body: uploadForm({ version: "4.0.0" }, { bytes: new Uint8Array([1, 2, 3]) }),
      });
    const outOfScope = await jsonOf(await upload(scoped.secret, "desktop"));
    assert.equal(outOfScope.status, 403);
    assert.match(String(outOfScope.body.error), /may not publish to project desktop/);
    const noPermission = await jsonOf(await upload(readOnly.secret, "desktop"));
    assert.equal(noPermission.status, 403);
    assert.match(String(noPermission.body.error), /lacks the permission upload/);
    assert.equal((await jsonOf(await upload(secret, "nope"))).status, 404);
    assert.equal((await jsonOf(await upload(scoped.secret, "other"))).status, 201);
    const list = await jsonOf(await call(app, scoped.secret, "/projects/desktop/releases"));
    assert.equal(list.status, 403);
  });

  await t.step("another project's release id: 404 exactly as a missing one", async () => {
    const scoped = await seedPublishToken(app.store, {
      name: "other only, reads",
      all_projects: false,
      project_ids: [other.id],
    });
    const release = await seedRelease(app, project.id, "5.0.0", undefined, { build: "b1" });
    const missing = await call(app, scoped.secret, "/releases/999999");
    const missingBody = await missing.text();
    assert.equal(missing.status, 404);
    const requests: Array<[string, string, string?]> = [
      ["GET", ""],
      ["PATCH", "", JSON.stringify({ build: "9" })],
      ["POST", "/archive"],
      ["POST", "/activate"],
      ["POST", "/publish"],
      ["POST", "/make-latest"],
      ["POST", "/rollout", JSON.stringify({ percentage: 10 })],
    ];
    for (const [method, suffix, body] of requests) {
      const init = body === undefined
        ? { method }
        : { method, body, headers: { "content-type": "application/json" } };
      const theirs = await call(app, scoped.secret, `/releases/${release.id}${suffix}`, init);
      const gone = await call(app, scoped.secret, `/releases/999999${suffix}`, init);
      const text = await theirs.text();
      assert.equal(theirs.status, 404, `${method} ${suffix}: ${text}`);
      assert.equal(text, await gone.text(), `${method} ${suffix}`);
      assert.doesNotMatch(text, /desktop/);
    }
    assert.equal(missingBody, JSON.stringify({ error: "release not found" }));
    assert.equal(
      (await getRelease(app.store, release.id))?.build,
      release.build,
      "nothing changed",
    );
  });
});

Deno.test("publishing API: list, read, edit, archive and activate", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const releases: Release[] = [];
  for (let i = 1; i <= 5; i++) releases.push(await seedRelease(app, project.id, `1.${i}.0`));
  const { secret } = await seedPublishToken(app.store);
  const uploader = await seedPublishToken(app.store, { name: "uploader", permissions: ["upload"] });

  await t.step("pages newest first, with a cursor", async () => {
    const first = await jsonOf(await call(app, secret, "/projects/desktop/releases?limit=2"));
    assert.equal(first.status, 200);
    const ids = (body: Record<string, unknown>) =>
      (body.releases as Array<{ id: number }>).map((r) => r.id);
    assert.deepEqual(ids(first.body), [releases[4].id, releases[3].id]);
    assert.equal((first.body.releases as Array<{ is_latest: boolean }>)[0].is_latest, true);
    const second = await jsonOf(
      await call(
        app,
        secret,
        `/projects/desktop/releases?limit=2&cursor=${first.body.next_cursor}`,
      ),
    );
    assert.deepEqual(ids(second.body), [releases[2].id, releases[1].id]);
    const last = await jsonOf(
      await call(
        app,
        secret,
        `/projects/desktop/releases?limit=2&cursor=${second.body.next_cursor}`,
      ),
    );
    assert.deepEqual(ids(last.body), [releases[0].id]);
    assert.equal(last.body.next_cursor, null);
    for (const query of ["?limit=0", "?limit=101", "?limit=x", "?cursor=abc"]) {
      const bad = await jsonOf(await call(app, secret, `/projects/desktop/releases${query}`));
      assert.equal(bad.status, 400, query);
    }
  });

  await t.step("read one; bad and unknown ids", async () => {
    const one = await jsonOf(await call(app, secret, `/releases/${releases[0].id}`));
    assert.equal(one.status, 200);
    assert.equal((one.body.release as Record<string, unknown>).is_latest, false);
    assert.equal((await jsonOf(await call(app, secret, "/releases/abc"))).status, 400);
    assert.equal((await jsonOf(await call(app, secret, "/releases/99999"))).status, 404);
  });

  await t.step("edit notes and build", async () => {
    const res = await call(app, secret, `/releases/${releases[4].id}`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ release_notes: "New notes", build: "b42" }),
    });
    const { status, body } = await jsonOf(res);
    assert.equal(status, 200, JSON.stringify(body));
    const stored = (await getRelease(app.store, releases[4].id))!;
    assert.equal(stored.release_notes, "New notes");
    assert.equal(stored.build, "b42");
    assert.equal(stored.checksum_sha256, releases[4].checksum_sha256);
    // The client API sees the edit of its latest release at once.
    const { secret: key } = await seedKey(app);
    const latest = await (await app.request("/api/v1/projects/desktop/releases/latest", key))
      .json();
    assert.equal(latest.release.release_notes, "New notes");
    for (
      const bad of [
        "[]",
        "{}",
        '{"version":"9"}',
        '{"build":1}',
        "not json",
        JSON.stringify({
          release_notes: "x".repeat(30_001),
        }),
      ]
    ) {
      const refused = await call(app, secret, `/releases/${releases[4].id}`, {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: bad,
      });
      assert.equal((await jsonOf(refused)).status, 400, bad.slice(0, 20));
    }
  });

  await t.step("archive and activate move latest; permission release_state", async () => {
    const refused = await call(app, uploader.secret, `/releases/${releases[4].id}/archive`, {
      method: "POST",
    });
    assert.equal((await jsonOf(refused)).status, 403);
    const archived = await jsonOf(
      await call(app, secret, `/releases/${releases[4].id}/archive`, { method: "POST" }),
    );
    assert.equal(archived.status, 200);
    assert.deepEqual(
      [
        (archived.body.release as Record<string, unknown>).state,
        (archived.body.release as Record<string, unknown>).is_latest,
      ],
      ["archived", false],
    );
    const now = await jsonOf(await call(app, secret, `/releases/${releases[3].id}`));
    assert.equal((now.body.release as Record<string, unknown>).is_latest, true);
    const activated = await jsonOf(
      await call(app, secret, `/releases/${releases[4].id}/activate`, { method: "POST" }),
    );
    assert.equal((activated.body.release as Record<string, unknown>).is_latest, true);
    const { entries } = await listAuditEntries(app.store, { limit: 5 });
    assert.deepEqual(entries.slice(0, 2).map((e) => [e.action, e.actor]), [
      ["release.activate", entries[0].actor],
      ["release.archive", entries[0].actor],
    ]);
    assert.match(entries[0].actor, /^token:ci /);
  });
});

Deno.test("publish tokens page: create (shown once), disable, enable, delete", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  await seedProject(app, { slug: "other" });
  const client = await signedInClient(app);
  let secret = "";
  let id = "";

  await t.step(
    "linked from the header; invalid input re-shows the form, nothing stored",
    async () => {
      const { html } = await client.page("/admin");
      assert.match(html, /href="\/admin\/publish-tokens"/);
      const res = await client.post("/admin/publish-tokens", {
        name: "ci",
        project_slugs: "nope",
        can_upload: "on",
      });
      assert.equal(res.status, 400);
      const page = await res.text();
      assert.match(page, /unknown project &quot;nope&quot;|unknown project "nope"/);
      assert.match(page, /value="ci"/);
      const none = await client.post("/admin/publish-tokens", { name: "ci", all_projects: "on" });
      assert.equal(none.status, 400);
      assert.match(await none.text(), /at least one permission/);
      assert.deepEqual(await listPublishTokens(app.store), []);
    },
  );

  await t.step("created: the token shown once, stored only as a hash", async () => {
    const res = await client.post("/admin/publish-tokens", {
      name: "github desktop",
      project_slugs: "desktop",
      can_upload: "on",
      expires_at: "2099-01-01T00:00",
    });
    assert.equal(res.status, 200);
    const html = await res.text();
    secret = /data-publish-token="([^"]+)"/.exec(html)![1];
    id = /data-publish-token-id="(\d+)"/.exec(html)![1];
    assert.match(secret, /^udp_[A-Za-z0-9_-]{43}$/);
    assert.ok(!(await dumpKvText(app.kv)).includes(secret), "never stored in the clear");
    const [token] = await listPublishTokens(app.store);
    assert.deepEqual(token.project_ids, [project.id]);
    assert.deepEqual(token.permissions, ["upload"]);
    assert.equal(token.expires_at, "2099-01-01T00:00:00.000Z");
    const list = (await client.page("/admin/publish-tokens")).html;
    assert.match(list, new RegExp(`data-publish-token-id="${id}"`));
    assert.ok(!list.includes(secret), "the list never shows it again");
    const ok = await call(app, secret, "/projects/desktop/releases");
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  });

  await t.step("disable, enable and delete take effect on the next request", async () => {
    const status = async () => {
      const res = await call(app, secret, "/token");
      await res.body?.cancel();
      return res.status;
    };
    assert.equal((await client.post(`/admin/publish-tokens/${id}/disable`)).status, 303);
    assert.equal(await status(), 401);
    assert.equal((await client.post(`/admin/publish-tokens/${id}/enable`)).status, 303);
    assert.equal(await status(), 200);
    assert.equal((await client.post(`/admin/publish-tokens/${id}/delete`)).status, 303);
    assert.equal(await status(), 401);
    assert.equal((await client.post(`/admin/publish-tokens/${id}/delete`)).status, 404);
    const { entries } = await listAuditEntries(app.store, { limit: 10 });
    const actions = entries.map((entry) => entry.action).filter((a) => a.startsWith("publish_"));
    assert.deepEqual(actions.slice(0, 4), [
      "publish_token.delete",
      "publish_token.enable",
      "publish_token.refused",
      "publish_token.disable",
    ]);
  });
});
