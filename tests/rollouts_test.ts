/** Staged rollouts (docs/rollouts.md): membership, stability, halt, testers, the default unchanged. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { releaseEnvelopeBody } from "../src/client_api/serialize.ts";
import { clientIdentity, rolloutBucket } from "../src/releases/offer.ts";
import { createApiKey } from "../src/credentials/api_keys.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import { rolloutKey } from "../src/kv/keys.ts";
import { createProject } from "../src/projects/projects.ts";
import {
  createRelease,
  getLatestRelease,
  listReleasesByProject,
  makeReleaseLatest,
} from "../src/releases/releases.ts";
import {
  changeRollout,
  completeRollout,
  endRollout,
  getRollout,
  startRollout,
} from "../src/releases/rollouts.ts";
import { recordUpload } from "../src/storage/mod.ts";
import { createTestApp, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";
import { listArtifactFiles } from "./admin_helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";
import { makeDataTempDir, type ServerProcess, startInstances } from "./server_process.ts";
import { createStore } from "../src/kv/store.ts";

const IDS = Array.from({ length: 10_000 }, (_, i) => `install-${i}-${(i * 7919) % 10007}`);

async function latestFor(t: TestApp, key: string, installId?: string): Promise<string> {
  const res = await t.request(
    "/api/v1/projects/desktop/releases/latest",
    key,
    installId === undefined ? {} : { headers: { "x-install-id": installId } },
  );
  assert.equal(res.status, 200);
  return (await res.json()).release.version;
}

Deno.test("staged rollouts through the client API", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  await seedRelease(app, project.id, "1.0.0");
  const { secret } = await seedKey(app);

  let before = "";
  await t.step("without a rollout, the answer is today's, byte for byte", async () => {
    before = await (await app.request("/api/v1/projects/desktop/releases/latest", secret)).text();
    const withId = await app.request("/api/v1/projects/desktop/releases/latest", secret, {
      headers: { "x-install-id": "abc" },
    });
    assert.equal(await withId.text(), before);
    // What the route sent before rollouts existed: the envelope of the latest pointer's release.
    const latest = (await getLatestRelease(app.store, project.id))!;
    assert.equal(before, new TextDecoder().decode(releaseEnvelopeBody(project, latest)));
  });

  const v2 = await seedRelease(app, project.id, "2.0.0", undefined, {});
  // seedRelease makes it latest: roll back to 1.0.0 as latest, then stage 2.0.0.
  const v1b = await seedRelease(app, project.id, "1.0.1");
  await t.step("a rollout needs a release that is not the latest", async () => {
    await assert.rejects(startRollout(app.store, v1b.id, { percentage: 10 }), /already the latest/);
    await assert.rejects(startRollout(app.store, v2.id, { percentage: 101 }), /0 to 100/);
  });

  await t.step("a 10% rollout reaches 10% ± 1.5% of 10,000 install ids", async () => {
    await startRollout(app.store, v2.id, { percentage: 10 });
    let reached = 0;
    for (const id of IDS) if ((await latestFor(app, secret, id)) === "2.0.0") reached++;
    assert.ok(Math.abs(reached / IDS.length - 0.1) <= 0.015, `reached ${reached}`);
    // The same as the pure membership rule says.
    const expected = IDS.filter((id) =>
      rolloutBucket(v2.id, clientIdentity(id, { id: 0 } as never)) < 1000
    ).length;
    assert.equal(reached, expected);
  });

  await t.step("a client's answer is stable across requests; widening only adds", async () => {
    const first = await Promise.all(IDS.slice(0, 300).map((id) => latestFor(app, secret, id)));
    const again = await Promise.all(IDS.slice(0, 300).map((id) => latestFor(app, secret, id)));
    assert.deepEqual(again, first);
    await changeRollout(app.store, project.id, { percentage: 50 });
    const wider = await Promise.all(IDS.slice(0, 300).map((id) => latestFor(app, secret, id)));
    first.forEach((version, i) => {
      if (version === "2.0.0") assert.equal(wider[i], "2.0.0");
    });
    assert.ok(
      wider.filter((v) => v === "2.0.0").length > first.filter((v) => v === "2.0.0").length,
    );
  });

  await t.step("without an install id, the key is the identity", async () => {
    const answers = new Set(await Promise.all([1, 2, 3].map(() => latestFor(app, secret))));
    assert.equal(answers.size, 1);
  });

  await t.step("halt: everyone gets the previous latest; resume brings it back", async () => {
    await changeRollout(app.store, project.id, { halted: true });
    for (const id of IDS.slice(0, 500)) assert.equal(await latestFor(app, secret, id), "1.0.1");
    await changeRollout(app.store, project.id, { halted: false });
    const versions = await Promise.all(IDS.slice(0, 500).map((id) => latestFor(app, secret, id)));
    assert.ok(versions.includes("2.0.0"));
  });

  await t.step("testers first: a tagged key gets it at 0%", async () => {
    const tester = await seedKey(app, { rollout_tags: ["beta-testers"] });
    await changeRollout(app.store, project.id, { percentage: 0, tester_tag: "beta-testers" });
    assert.equal(await latestFor(app, tester.secret, "x"), "2.0.0");
    assert.equal(await latestFor(app, secret, IDS[0]), "1.0.1");
  });

  await t.step("a schedule raises the percentage at its times", async () => {
    await changeRollout(app.store, project.id, {
      schedule: [{ at: new Date(Date.now() - 1000).toISOString(), percentage: 100 }],
      tester_tag: null,
    });
    assert.equal(await latestFor(app, secret, IDS[1]), "2.0.0");
    await changeRollout(app.store, project.id, {
      schedule: [{ at: new Date(Date.now() + 3_600_000).toISOString(), percentage: 100 }],
    });
    assert.equal(await latestFor(app, secret, IDS[1]), "1.0.1");
  });

  await t.step("complete: the release is the latest for everyone, the rollout gone", async () => {
    await completeRollout(app.store, project.id);
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v2.id);
    for (const id of IDS.slice(0, 50)) assert.equal(await latestFor(app, secret, id), "2.0.0");
    assert.equal(await endRollout(app.store, project.id), null);
    const now = await (await app.request("/api/v1/projects/desktop/releases/latest", secret))
      .text();
    const latest = (await getLatestRelease(app.store, project.id))!;
    assert.equal(now, new TextDecoder().decode(releaseEnvelopeBody(project, latest)));
  });
});

/** The latest version `server` answers for `installId`. */
async function versionFrom(server: ServerProcess, secret: string, installId: string) {
  const res = await fetch(server.baseUrl + "/api/v1/projects/desktop/releases/latest", {
    headers: { authorization: `Bearer ${secret}`, "x-install-id": installId },
  });
  assert.equal(res.status, 200, server.output().slice(-2000));
  return (await res.json()).release.version as string;
}

Deno.test("three instances: stable answers, a halt seen everywhere within 100 ms", async (t) => {
  const dataDir = await makeDataTempDir("rollouts");
  const servers = await startInstances(3, dataDir);
  const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
  const store = createStore(kv);
  try {
    const project = await createProject(store, { name: "Desktop", slug: "desktop" });
    const release = (version: string) =>
      createRelease(store, {
        project_id: project.id,
        version,
        filename: `app-${version}.bin`,
        storage_key: crypto.randomUUID(),
        checksum_sha256: "0".repeat(64),
        size_bytes: 1,
      });
    await release("1.0.0");
    const v2 = await release("2.0.0");
    await release("1.0.1");
    const { secret } = await createApiKey(store, {
      name: "k",
      can_download: true,
      scope_mode: "all_projects",
    });
    await startRollout(store, v2.id, { percentage: 30 });
    await new Promise((resolve) => setTimeout(resolve, 250));
    const ids = IDS.slice(0, 60);

    await t.step("every instance gives each client the same answer", async () => {
      const answers = await Promise.all(
        servers.map((server) => Promise.all(ids.map((id) => versionFrom(server, secret, id)))),
      );
      assert.deepEqual(answers[1], answers[0]);
      assert.deepEqual(answers[2], answers[0]);
      assert.ok(answers[0].includes("2.0.0") && answers[0].includes("1.0.1"));
    });

    await t.step("after a halt, all three answer the previous latest within 100 ms", async () => {
      const member = ids.find((id) =>
        rolloutBucket(v2.id, clientIdentity(id, { id: 0 } as never)) < 3000
      )!;
      await changeRollout(store, project.id, { halted: true });
      const haltedAt = performance.now();
      const lastOld = await Promise.all(servers.map(async (server) => {
        let old = -Infinity;
        for (;;) {
          const sentAfter = performance.now() - haltedAt;
          if (await versionFrom(server, secret, member) === "1.0.1") return old;
          old = sentAfter;
          assert.ok(sentAfter < 2000, `${server.baseUrl} never saw the halt`);
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      }));
      for (const ms of lastOld) {
        assert.ok(ms < 100, `the rollout answered ${ms.toFixed(1)} ms after`);
      }
    });
  } finally {
    kv.close();
    await Promise.all(servers.map((server) => server.stop()));
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("the publishing API: upload with a rollout, halt, resume, widen, complete", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  await seedRelease(app, project.id, "1.0.0");
  const { secret } = await seedPublishToken(app.store);
  const { secret: key } = await seedKey(app);
  const call = (path: string, init: RequestInit = {}) =>
    app.request(PUBLISH_PREFIX + path, secret, init);
  const post = (path: string, body?: unknown) =>
    call(path, {
      method: "POST",
      ...(body === undefined ? {} : {
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      }),
    });
  const share = async () => {
    const versions = await Promise.all(IDS.slice(0, 400).map((id) => latestFor(app, key, id)));
    return versions.filter((v) => v === "2.0.0").length / versions.length;
  };

  await t.step("an upload with rollout_percentage starts a rollout", async () => {
    const res = await call(`/projects/desktop/releases`, {
      method: "POST",
      body: uploadForm({ version: "2.0.0", rollout_percentage: "25" }, {
        bytes: new TextEncoder().encode("v2"),
      }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    const rollout = (await (await call("/projects/desktop/rollout")).json()).rollout;
    assert.equal(rollout.percentage, 25);
    assert.equal(rollout.halted, false);
    const reached = await share();
    assert.ok(reached > 0.15 && reached < 0.35, `share ${reached}`);
  });

  await t.step("bad input is a clear 400", async () => {
    const res = await call("/projects/desktop/rollout", {
      method: "PATCH",
      body: JSON.stringify({ percentage: 150 }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error, /0 to 100/);
  });

  await t.step("halt, resume, widen and complete; each audit-logged", async () => {
    assert.equal((await post("/projects/desktop/rollout/halt")).status, 200);
    assert.equal(await share(), 0);
    assert.equal((await post("/projects/desktop/rollout/resume")).status, 200);
    assert.ok(await share() > 0);
    const widened = await call("/projects/desktop/rollout", {
      method: "PATCH",
      body: JSON.stringify({ percentage: 100 }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(widened.status, 200);
    assert.equal(await share(), 1);
    const done = await post("/projects/desktop/rollout/complete");
    assert.equal(done.status, 200);
    assert.equal((await done.json()).release.is_latest ?? true, true);
    assert.equal((await (await call("/projects/desktop/rollout")).json()).rollout, null);
    const actions = (await listAuditEntries(app.store, { limit: 100 })).entries
      .map((entry) => entry.action).filter((action) => action.startsWith("rollout."));
    assert.deepEqual(actions.sort(), [
      "rollout.change",
      "rollout.complete",
      "rollout.halt",
      "rollout.resume",
      "rollout.start",
    ]);
  });
});

/** A KV whose atomic commits that write `key` fail: the rollout's start, for one. */
function failingCommitsOf(key: Deno.KvKey) {
  const target = JSON.stringify(key);
  return (kv: Deno.Kv): Deno.Kv =>
    new Proxy(kv, {
      get(real, prop) {
        if (prop !== "atomic") {
          const value = Reflect.get(real, prop, real);
          return typeof value === "function" ? value.bind(real) : value;
        }
        return () => {
          const op = real.atomic();
          let writesKey = false;
          const proxy: Deno.AtomicOperation = new Proxy(op, {
            get(opReal, opProp) {
              if (opProp === "commit") {
                return () =>
                  writesKey
                    ? Promise.reject(new TypeError("kv commit failed (test fault)"))
                    : opReal.commit();
              }
              const value = Reflect.get(opReal, opProp, opReal);
              if (typeof value !== "function") return value;
              return (...args: unknown[]) => {
                if (opProp === "set" && JSON.stringify(args[0]) === target) writesKey = true;
                value.apply(opReal, args);
                return proxy;
              };
            },
          });
          return proxy;
        };
      },
    });
}

Deno.test("an upload whose rollout does not start is published, and the answer says why", async (t) => {
  // The project's id is 1: the first project of a fresh KV.
  await using app = await createTestApp({}, { wrapKv: failingCommitsOf(rolloutKey(1)) });
  const project = await seedProject(app, { slug: "desktop" });
  assert.equal(project.id, 1);
  const base = await seedRelease(app, project.id, "1.0.0");
  const { secret } = await seedPublishToken(app.store);
  const upload = (fields: Record<string, string>) =>
    app.request(`${PUBLISH_PREFIX}/projects/desktop/releases`, secret, {
      method: "POST",
      body: uploadForm(fields, { bytes: new TextEncoder().encode(fields.version) }),
    });

  await t.step("201 with the release, and rollout_error naming the cause", async () => {
    const res = await upload({ version: "2.0.0", rollout_percentage: "25" });
    assert.equal(res.status, 201);
    const body = await res.json();
    assert.equal(body.release.version, "2.0.0");
    assert.equal(body.release.state, "active");
    assert.equal(body.release.is_latest, false, "the latest stays");
    assert.equal(
      body.rollout_error,
      "the release was published (active, not the latest) but its rollout did not start: " +
        `the store did not answer; start it with POST /publish/v1/releases/${body.release.id}/rollout`,
    );
    assert.equal(await getRollout(app.store, project.id), null);
    assert.equal((await getLatestRelease(app.store, project.id))?.id, base.id);
    const actions = (await listAuditEntries(app.store, { limit: 100 })).entries
      .map((entry) => entry.action);
    assert.ok(actions.includes("release.upload"));
    assert.ok(!actions.includes("rollout.start"));
  });

  await t.step("without a rollout, no rollout_error", async () => {
    const res = await upload({ version: "2.1.0", not_latest: "true" });
    assert.equal(res.status, 201);
    assert.equal("rollout_error" in await res.json(), false);
  });

  await t.step("a tester tag longer than a tag may be: 400, nothing stored", async () => {
    const before = (await listReleasesByProject(app.store, project.id)).length;
    const res = await upload({
      version: "3.0.0",
      rollout_percentage: "10",
      rollout_tester_tag: "t".repeat(200),
    });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error, /^tester_tag: /);
    assert.equal((await listReleasesByProject(app.store, project.id)).length, before);
  });
});

Deno.test("an upload with a rollout sees, in its own commit, the latest made just before", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "race" });
  const upload = async (version: string, rollout: { percentage: number } | null) => {
    const stored = await app.artifacts.save(
      ReadableStream.from([new TextEncoder().encode(`artifact ${version}`)]),
      app.config.maxUploadBytes,
    );
    return () =>
      recordUpload(app.store, app.artifacts, {
        file: { stored, filename: undefined, contentType: undefined },
        build: () => ({
          release: { project_id: project.id, version, filename: `app-${version}.bin`, ...stored },
          rollout,
        }),
      });
  };
  const [plain, staged] = [await upload("1.0.0", null), await upload("2.0.0", { percentage: 10 })];

  await t.step("two uploads at once into a project without a latest", async () => {
    // The plain upload commits first (the project's writes run in order); the staged one must
    // roll out over it, although there was no latest when both started.
    const [first, second] = await Promise.all([plain(), staged()]);
    assert.equal(first.rollout, null);
    assert.ok(second.rollout !== null && "started" in second.rollout, "the rollout started");
    assert.equal(second.rollout.started.previous_id, first.release.id);
    assert.equal(second.rollout.started.release_id, second.release.id);
    assert.equal((await getLatestRelease(app.store, project.id))?.id, first.release.id);
  });

  await t.step("into a project without a latest, it is simply the latest", async () => {
    const other = await seedProject(app, { slug: "fresh" });
    const stored = await app.artifacts.save(
      ReadableStream.from([new TextEncoder().encode("fresh")]),
      app.config.maxUploadBytes,
    );
    const recorded = await recordUpload(app.store, app.artifacts, {
      file: { stored, filename: undefined, contentType: undefined },
      build: () => ({
        release: { project_id: other.id, version: "1.0.0", filename: "a.bin", ...stored },
        rollout: { percentage: 10 },
      }),
    });
    assert.equal(recorded.rollout, null);
    assert.equal((await getLatestRelease(app.store, other.id))?.id, recorded.release.id);
  });
});

Deno.test("the publishing API: rollouts need release_state, the upload's rollout fields too", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  await makeReleaseLatest(app.store, v1.id);
  const uploader = await seedPublishToken(app.store, {
    name: "upload only",
    permissions: ["upload"],
  });
  const stater = await seedPublishToken(app.store, {
    name: "state only",
    permissions: ["release_state"],
  });
  const send = (token: string, method: string, path: string, body?: unknown) =>
    app.request(PUBLISH_PREFIX + path, token, {
      method,
      ...(body === undefined ? {} : {
        body: body instanceof FormData ? body : JSON.stringify(body),
        headers: body instanceof FormData ? {} : { "content-type": "application/json" },
      }),
    });
  const stored = async () => ({
    releases: (await listReleasesByProject(app.store, project.id)).length,
    files: await listArtifactFiles(app),
    rollout: await getRollout(app.store, project.id),
  });
  const ROUTES: Array<[string, string, unknown?]> = [
    ["POST", `/releases/${v2.id}/rollout`, { percentage: 10 }],
    ["PATCH", "/projects/desktop/rollout", { percentage: 20 }],
    ["POST", "/projects/desktop/rollout/halt"],
    ["POST", "/projects/desktop/rollout/resume"],
    ["POST", "/projects/desktop/rollout/end"],
    ["POST", "/projects/desktop/rollout/complete"],
  ];

  await t.step(
    "an upload-only token starts no rollout: 403 on the upload, nothing stored",
    async () => {
      const before = await stored();
      const fieldsFirst = uploadForm({ version: "3.0.0", rollout_percentage: "10" }, {
        bytes: new TextEncoder().encode("v3"),
      });
      const fileFirst = new FormData();
      fileFirst.append("version", "3.0.0");
      fileFirst.append("file", new Blob(["v3"]), "app.bin");
      fileFirst.append("rollout_tester_tag", "beta-testers");
      for (const form of [fieldsFirst, fileFirst]) {
        const res = await send(uploader.secret, "POST", "/projects/desktop/releases", form);
        assert.equal(res.status, 403);
        assert.match((await res.json()).error, /lacks the permission release_state/);
        assert.deepEqual(await stored(), before);
      }
      const plain = await send(
        uploader.secret,
        "POST",
        "/projects/desktop/releases",
        uploadForm({ version: "3.0.0", rollout_percentage: "" }, { bytes: new Uint8Array([3]) }),
      );
      assert.equal(plain.status, 201, "an upload without a rollout is its permission");
      await makeReleaseLatest(app.store, v1.id);
    },
  );

  await t.step("an upload-only token: 403 on every rollout route; it may read", async () => {
    for (const [method, path, body] of ROUTES) {
      const res = await send(uploader.secret, method, path, body);
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.match((await res.json()).error, /lacks the permission release_state/);
    }
    assert.equal(await getRollout(app.store, project.id), null);
    const read = await send(uploader.secret, "GET", "/projects/desktop/rollout");
    assert.equal(read.status, 200);
    assert.deepEqual(await read.json(), { rollout: null });
  });

  await t.step("a release_state token runs one; its upload needs upload", async () => {
    for (const [method, path, body] of ROUTES) {
      const res = await send(stater.secret, method, path, body);
      assert.equal(res.status, 200, `${method} ${path}: ${await res.clone().text()}`);
      if (path.endsWith("/end")) {
        // Started again, for complete.
        const again = await send(stater.secret, "POST", `/releases/${v2.id}/rollout`, {
          percentage: 10,
        });
        assert.equal(again.status, 200);
      }
    }
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v2.id);
    const upload = await send(
      stater.secret,
      "POST",
      "/projects/desktop/releases",
      uploadForm({ version: "4.0.0", rollout_percentage: "10" }, { bytes: new Uint8Array([4]) }),
    );
    assert.equal(upload.status, 403);
    assert.match((await upload.json()).error, /lacks the permission upload/);
  });
});
