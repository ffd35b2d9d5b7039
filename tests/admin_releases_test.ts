import assert from "node:assert/strict";
import { listAuditEntries } from "../src/kv/audit.ts";
import { getLatestRelease, getRelease, listReleasesByProject } from "../src/releases/releases.ts";
import type { Project } from "../src/projects/types.ts";
import { seedKey, seedProject, seedRelease, sha256, type TestApp, testMetrics } from "./helpers.ts";
import {
  type AdminClient,
  createAdminTestApp,
  listArtifactFiles,
  randomBytes,
  signedInClient,
} from "./admin_helpers.ts";

const UPLOAD_PATH = "/admin/projects/app/releases";

/** A multipart body written by hand, for part orders and headers FormData cannot produce. */
function rawMultipart(
  parts: Array<{ name: string; filename?: string; type?: string; body: string | Uint8Array }>,
): { body: Uint8Array<ArrayBuffer>; contentType: string } {
  const boundary = "----rawboundary7MA4YWxkTrZu0gW";
  const chunks: Uint8Array[] = [];
  const text = (s: string) => chunks.push(new TextEncoder().encode(s));
  for (const part of parts) {
    text(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`);
    if (part.filename !== undefined) text(`; filename="${part.filename}"`);
    text("\r\n");
    if (part.type) text(`Content-Type: ${part.type}\r\n`);
    text("\r\n");
    if (typeof part.body === "string") text(part.body);
    else chunks.push(part.body);
    text("\r\n");
  }
  text(`--${boundary}--\r\n`);
  const body = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.length;
  }
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

function postRaw(client: AdminClient, raw: { body: Uint8Array; contentType: string }) {
  return client.fetch(UPLOAD_PATH, {
    method: "POST",
    body: raw.body as Uint8Array<ArrayBuffer>,
    headers: { "content-type": raw.contentType },
  });
}

/** Seeds the project "app" and signs a client in. */
async function setup(app: TestApp): Promise<{ client: AdminClient; project: Project }> {
  const project = await seedProject(app, { slug: "app", name: "App" });
  const client = await signedInClient(app);
  return { client, project };
}

Deno.test("admin release upload", async (t) => {
  await using app = await createAdminTestApp({ maxUploadBytes: 64 * 1024 });
  const { client, project } = await setup(app);

  await t.step(
    "upload: 303 to the project page; size and SHA-256 from the stored bytes",
    async () => {
      const bytes = randomBytes(50_000);
      const res = await client.upload(UPLOAD_PATH, [
        ["csrf_token", client.csrfToken],
        ["version", " 2.0.0 "],
        ["build", "1234"],
        ["release_notes", "Fixes <everything>"],
        [
          "file",
          new File([bytes as BlobPart], "App Setup;1.exe", { type: "application/x-msdownload" }),
        ],
      ]);
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), "/admin/projects/app");
      const [release] = await listReleasesByProject(app.store, project.id);
      assert.equal(release.version, "2.0.0");
      assert.equal(release.build, "1234");
      assert.equal(release.release_notes, "Fixes <everything>");
      assert.equal(release.filename, "App Setup;1.exe");
      assert.equal(release.content_type, "application/x-msdownload");
      assert.equal(release.size_bytes, bytes.length);
      assert.equal(release.checksum_sha256, sha256(bytes));
      assert.equal(release.state, "active");
      assert.equal((await listArtifactFiles(app)).length, 1);

      const { html } = await client.page("/admin/projects/app/releases");
      assert.match(html, new RegExp(`data-release-id="${release.id}"`));
      assert.match(html, new RegExp(release.checksum_sha256));
      assert.match(html, /48\.8 KiB/);
      assert.match(html, /Fixes &lt;everything&gt;/);
      assert.match(html, /was uploaded/);
    },
  );

  await t.step("the file part may come before the other fields", async () => {
    const raw = rawMultipart([
      { name: "file", filename: "first.bin", type: "application/octet-stream", body: "abc" },
      { name: "version", body: "3.0.0" },
      { name: "csrf_token", body: client.csrfToken },
    ]);
    const res = await postRaw(client, raw);
    assert.equal(res.status, 303);
    const latest = await getLatestRelease(app.store, project.id);
    assert.equal(latest?.version, "3.0.0");
    assert.equal(latest?.filename, "first.bin");
  });

  await t.step("path parts and odd characters: only the base name is kept", async () => {
    for (
      const [sent, kept] of [
        ["../../etc/passwd", "passwd"],
        ["C:\\Users\\me\\setup.exe", "setup.exe"],
        ["..", "artifact"],
        // Quoted-string escapes are undone; control characters dropped.
        ['we\\"ird\u0007 name.bin', 'we"ird name.bin'],
      ]
    ) {
      const raw = rawMultipart([
        { name: "csrf_token", body: client.csrfToken },
        { name: "version", body: `v-${kept}` },
        { name: "file", filename: sent, body: "data" },
      ]);
      assert.equal((await postRaw(client, raw)).status, 303, sent);
      const latest = await getLatestRelease(app.store, project.id);
      assert.equal(latest?.filename, kept, sent);
    }
    for (const name of await listArtifactFiles(app)) {
      assert.match(name, /^[0-9a-f-]{36}$/, "stored under a generated name only");
    }
  });

  await t.step("a part without Content-Type is application/octet-stream", async () => {
    const raw = rawMultipart([
      { name: "csrf_token", body: client.csrfToken },
      { name: "version", body: "4.0.0" },
      { name: "file", filename: "plain.bin", body: "xyz" },
    ]);
    assert.equal((await postRaw(client, raw)).status, 303);
    const latest = await getLatestRelease(app.store, project.id);
    assert.equal(latest?.content_type, "application/octet-stream");
  });
});

Deno.test("admin release upload of several MiB: the stored bytes are the sent bytes", async (t) => {
  await using app = await createAdminTestApp({ maxUploadBytes: 16 * 1024 * 1024 });
  const { client, project } = await setup(app);
  const boundary = "----rawboundary7MA4YWxkTrZu0gW";
  // Random bytes with near copies of the raw body's delimiter sprinkled in
  const bytes = randomBytes(5 * 1024 * 1024 + 3);
  // (one byte short, and the next byte is not the missing one: random bytes could complete it)
  const near = new TextEncoder().encode(`\r\n--${boundary.slice(0, -1)}_`);
  for (let at = 1000; at + near.length < bytes.length; at += 300_001) bytes.set(near, at);

  const assertStored = async (version: string) => {
    const release = await getLatestRelease(app.store, project.id);
    assert.equal(release?.version, version);
    assert.equal(release?.size_bytes, bytes.length);
    assert.equal(release?.checksum_sha256, sha256(bytes));
    const stored = await Deno.readFile(`${app.config.artifactsDir}/${release?.storage_key}`);
    assert.equal(sha256(stored), sha256(bytes));
  };

  await t.step("FormData body (a byte stream, read into a reused buffer)", async () => {
    const res = await client.upload(UPLOAD_PATH, [
      ["csrf_token", client.csrfToken],
      ["version", "6.0.0"],
      ["file", new File([bytes as BlobPart], "big.bin")],
    ]);
    assert.equal(res.status, 303);
    await assertStored("6.0.0");
  });

  await t.step("raw body (a plain stream of chunks)", async () => {
    const raw = rawMultipart([
      { name: "csrf_token", body: client.csrfToken },
      { name: "version", body: "6.0.1" },
      { name: "file", filename: "big.bin", body: bytes },
    ]);
    assert.equal(raw.contentType, `multipart/form-data; boundary=${boundary}`);
    assert.equal((await postRaw(client, raw)).status, 303);
    await assertStored("6.0.1");
  });
});

Deno.test("admin release upload refusals leave nothing behind", async (t) => {
  await using app = await createAdminTestApp({ maxUploadBytes: 64 * 1024 });
  const { client, project } = await setup(app);
  await seedRelease(app, project.id, "1.0.0");

  async function assertUnchanged(label: string) {
    assert.equal((await listReleasesByProject(app.store, project.id)).length, 1, label);
    assert.equal((await listArtifactFiles(app)).length, 1, `${label}: no stray file`);
  }

  for (
    const [label, parts, status, message] of [
      [
        "missing version after the file",
        [
          { name: "csrf_token", body: "TOKEN" },
          { name: "file", filename: "a.bin", body: "abc" },
          { name: "version", body: "" },
          { name: "build", body: "kept-build" },
        ],
        400,
        /Version is required/,
      ],
      [
        "version too long",
        [
          { name: "csrf_token", body: "TOKEN" },
          { name: "version", body: "v".repeat(129) },
          { name: "file", filename: "a.bin", body: "abc" },
        ],
        400,
        /Version must be at most 128/,
      ],
      [
        "empty file",
        [
          { name: "csrf_token", body: "TOKEN" },
          { name: "version", body: "5.0.0" },
          { name: "file", filename: "", type: "application/octet-stream", body: "" },
        ],
        400,
        /file is required/,
      ],
      [
        "no file part",
        [{ name: "csrf_token", body: "TOKEN" }, { name: "version", body: "5.0.0" }],
        400,
        /file is required/,
      ],
      [
        "token after the file and wrong",
        [
          { name: "version", body: "5.0.0" },
          { name: "file", filename: "a.bin", body: "abc" },
          { name: "csrf_token", body: "wrong" },
        ],
        403,
        /security token/,
      ],
      [
        "empty file and a wrong token after it",
        [
          { name: "version", body: "5.0.0" },
          { name: "file", filename: "", type: "application/octet-stream", body: "" },
          { name: "csrf_token", body: "wrong" },
        ],
        403,
        /security token/,
      ],
      [
        "no token at all",
        [{ name: "version", body: "5.0.0" }, { name: "file", filename: "a.bin", body: "abc" }],
        403,
        /security token/,
      ],
      [
        "file over APP_MAX_UPLOAD_BYTES",
        [
          { name: "csrf_token", body: "TOKEN" },
          { name: "version", body: "5.0.0" },
          { name: "file", filename: "big.bin", body: randomBytes(64 * 1024 + 1) },
        ],
        413,
        /larger than the upload limit of 64\.0 KiB/,
      ],
    ] as const
  ) {
    await t.step(`${label}: ${status}`, async () => {
      const raw = rawMultipart(parts.map((part) => ({
        ...part,
        body: part.body === "TOKEN" ? client.csrfToken : part.body,
      })));
      const res = await postRaw(client, raw);
      assert.equal(res.status, status);
      const html = await res.text();
      assert.match(html, message);
      if (status === 400) {
        assert.match(html, /data-form-error/);
        assert.match(html, /enctype="multipart\/form-data"/, "the upload form is shown again");
      }
      if (label.startsWith("missing version")) assert.match(html, /value="kept-build"/);
      await assertUnchanged(label);
    });
  }

  await t.step("a Content-Length far over the limit is refused before reading", async () => {
    const res = await client.fetch(UPLOAD_PATH, {
      method: "POST",
      body: new Uint8Array(10),
      headers: {
        "content-type": "multipart/form-data; boundary=x",
        "content-length": String(1024 * 1024 * 1024),
      },
    });
    assert.equal(res.status, 413);
    await assertUnchanged("content-length");
  });

  await t.step("not multipart or malformed: 400", async () => {
    const urlencoded = await client.post(UPLOAD_PATH, { version: "1" });
    assert.equal(urlencoded.status, 400);
    const broken = await client.fetch(UPLOAD_PATH, {
      method: "POST",
      body:
        `--x\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n${client.csrfToken}\r\n--x\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\ntruncated`,
      headers: { "content-type": "multipart/form-data; boundary=x" },
    });
    assert.equal(broken.status, 400);
    assert.match(await broken.text(), /could not be read/);
    await assertUnchanged("malformed");
  });
});

Deno.test("admin release list and state changes", async (t) => {
  await using app = await createAdminTestApp({ maxUploadBytes: 16 * 1024 * 1024 });
  const { client, project } = await setup(app);
  const older = await seedRelease(app, project.id, "1.0.0", new Uint8Array(1536));
  const newer = await seedRelease(app, project.id, "1.1.0", new Uint8Array(3 * 1024 * 1024), {
    build: "77",
    filename: "app-1.1.0.dmg",
  });
  const { secret } = await seedKey(app);

  await t.step("every release in every state with its facts and download count", async () => {
    // Downloads count once their last byte is sent (issue 9.9): read them whole.
    for (let i = 0; i < 2; i++) {
      await app.request(`/api/v1/releases/${newer.id}/download`, secret).then((r) =>
        r.arrayBuffer()
      );
    }
    await client.post(`/admin/releases/${older.id}/archive`);
    const { html } = await client.page("/admin/projects/app/releases");
    const row = (id: number) => html.split(`data-release-id="${id}"`)[1].split("</tr>")[0];
    assert.match(row(newer.id), /1\.1\.0/);
    assert.match(row(newer.id), /build 77/);
    assert.match(row(newer.id), /app-1\.1\.0\.dmg/);
    assert.match(row(newer.id), /3\.0 MiB/);
    assert.match(row(newer.id), new RegExp(newer.checksum_sha256));
    assert.match(row(newer.id), new RegExp(`datetime="${newer.created_at}"`));
    assert.match(row(newer.id), /data-downloads-total[^>]*>2</);
    assert.match(row(newer.id), /2 in 30 days/);
    assert.match(row(newer.id), /2 in 90 days/);
    assert.match(row(newer.id), /badge-active/);
    assert.match(row(older.id), /badge-archived/);
    assert.match(row(older.id), /1\.5 KiB/);
    assert.match(row(older.id), new RegExp(`action="/admin/releases/${older.id}/activate"`));
  });

  await t.step("archive and activate: 303, the API follows", async () => {
    const archived = await client.post(`/admin/releases/${newer.id}/archive`);
    assert.equal(archived.status, 303);
    assert.equal(archived.headers.get("location"), "/admin/projects/app/releases#releases");
    assert.equal((await getRelease(app.store, newer.id))?.state, "archived");
    const latest = await app.request("/api/v1/projects/app/releases/latest", secret);
    assert.equal(latest.status, 404);
    await latest.body?.cancel();
    const activated = await client.post(`/admin/releases/${older.id}/activate`);
    assert.equal(activated.status, 303);
    const again = await app.request("/api/v1/projects/app/releases/latest", secret);
    assert.equal((await again.json()).release.id, older.id);
  });

  await t.step("unknown release ids: 404", async () => {
    assert.equal((await client.post("/admin/releases/999/archive")).status, 404);
    assert.equal((await client.post("/admin/releases/abc/archive")).status, 404);
  });

  await t.step("release changes are audited", async () => {
    const { entries } = await listAuditEntries(app.store, { limit: 50 });
    const actions = entries.map((entry) => `${entry.action} ${entry.target}`);
    assert.ok(actions.includes(`release.archive release ${newer.id}`));
    assert.ok(actions.includes(`release.activate release ${older.id}`));
  });
});

/** `name{labels}` → value, from the text exposition format. */
async function scrapeMetrics(): Promise<Map<string, number>> {
  const series = new Map<string, number>();
  for (const line of (await testMetrics.render()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

const UPLOAD_SERIES = [
  "uds_uploads_total",
  "uds_upload_bytes_total",
  ...["too_large", "empty", "invalid", "storage_full", "error"].map((reason) =>
    `uds_upload_failures_total{reason="${reason}"}`
  ),
];

/** How the upload series moved while `action` ran; unmoved series are left out. */
async function uploadMetricsMoved(action: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await scrapeMetrics();
  await action();
  const after = await scrapeMetrics();
  const moved: Record<string, number> = {};
  for (const name of UPLOAD_SERIES) {
    assert.ok(after.has(name), `no series ${name}`);
    const change = after.get(name)! - (before.get(name) ?? 0);
    if (change !== 0) moved[name] = change;
  }
  return moved;
}

Deno.test("admin uploads move the upload metrics", async (t) => {
  await using app = await createAdminTestApp({ maxUploadBytes: 64 * 1024 });
  const { client } = await setup(app);
  const upload = (file: File, version = "1.0.0", csrf = client.csrfToken) =>
    client.upload(UPLOAD_PATH, [["csrf_token", csrf], ["version", version], ["file", file]]);
  const expectStatus = async (res: Promise<Response>, status: number) => {
    const answer = await res;
    await answer.body?.cancel();
    assert.equal(answer.status, status);
  };

  await t.step("a stored upload counts once with its bytes", async () => {
    const moved = await uploadMetricsMoved(() =>
      expectStatus(upload(new File([randomBytes(5000) as BlobPart], "a.bin")), 303)
    );
    assert.deepEqual(moved, { uds_uploads_total: 1, uds_upload_bytes_total: 5000 });
  });

  const refusals: Array<[string, () => Promise<Response>, number, string]> = [
    [
      "too large",
      () => upload(new File([randomBytes(70 * 1024) as BlobPart], "big.bin")),
      413,
      "too_large",
    ],
    ["empty file", () => upload(new File([], "empty.bin")), 400, "empty"],
    ["missing version", () => upload(new File(["x"], "x.bin"), ""), 400, "invalid"],
    ["wrong CSRF token", () => upload(new File(["x"], "x.bin"), "1.0.1", "wrong"), 403, "invalid"],
    [
      "not multipart (a urlencoded form with its token)",
      () => client.post(UPLOAD_PATH, { version: "1" }),
      400,
      "invalid",
    ],
  ];
  for (const [label, send, status, reason] of refusals) {
    await t.step(`${label}: one failure with reason ${reason}`, async () => {
      const moved = await uploadMetricsMoved(() => expectStatus(send(), status));
      assert.deepEqual(moved, { [`uds_upload_failures_total{reason="${reason}"}`]: 1 });
    });
  }

  await t.step("a failure on our side (artifacts dir unusable): reason error", async () => {
    await Deno.remove(app.config.artifactsDir, { recursive: true }).catch(() => {});
    await Deno.writeTextFile(app.config.artifactsDir, "not a directory");
    const quiet = console.error;
    console.error = () => {};
    try {
      const moved = await uploadMetricsMoved(() =>
        expectStatus(upload(new File(["x"], "x.bin"), "1.0.2"), 500)
      );
      assert.deepEqual(moved, { 'uds_upload_failures_total{reason="error"}': 1 });
    } finally {
      console.error = quiet;
      await Deno.remove(app.config.artifactsDir);
    }
  });
});
