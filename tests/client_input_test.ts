/**
 * Issue 9 item 6: input a client can send never gets a 500. Also the limits of
 * src/lib/limits.ts: a record with every field at its limit fits in Deno KV.
 */
import assert from "node:assert/strict";
import { AdminClient, createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { captureErrors } from "./faults.ts";
import { createTestApp, seedProject } from "./helpers.ts";
import { createApiKey, getApiKey } from "../src/credentials/api_keys.ts";
import { createReleasesBulk } from "../src/seeding/bulk.ts";
import { ValidationError } from "../src/kv/errors.ts";
import { createProject, getProject, updateProject } from "../src/projects/projects.ts";
import { createRelease, getRelease } from "../src/releases/releases.ts";
import {
  CONTENT_TYPE_MAX_LENGTH,
  DESCRIPTION_MAX_LENGTH,
  FILENAME_MAX_LENGTH,
  NAME_MAX_LENGTH,
  RELEASE_NOTES_MAX_LENGTH,
  SCOPE_PROJECTS_MAX_COUNT,
  TAG_MAX_LENGTH,
  TAGS_MAX_COUNT,
  VERSION_MAX_LENGTH,
} from "../src/lib/limits.ts";

/** `n` UTF-16 units of a character KV stores in 2 bytes (worse than ASCII's 1). */
function wide(n: number, char = "€"): string {
  return char.repeat(n);
}

/** Sends a raw HTTP/1.1 request and returns the status code of the answer. */
async function rawStatus(port: number, request: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(new TextEncoder().encode(request));
  const head = await new Response(conn.readable).text();
  return head.split(" ")[1];
}

function tags(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${i}`.padEnd(TAG_MAX_LENGTH, "é"));
}

Deno.test("issue 9.6: release notes, description, tags and scope at their limits fit in KV", async (t) => {
  await using app = await createTestApp();
  await t.step("a release with every field full is stored and read back", async () => {
    const project = await seedProject(app, { slug: "full" });
    const release = await createRelease(app.store, {
      project_id: project.id,
      version: wide(VERSION_MAX_LENGTH),
      build: wide(VERSION_MAX_LENGTH),
      release_notes: wide(RELEASE_NOTES_MAX_LENGTH),
      filename: wide(FILENAME_MAX_LENGTH),
      content_type: `application/${"x".repeat(CONTENT_TYPE_MAX_LENGTH - 12)}`,
      storage_key: crypto.randomUUID(),
      checksum_sha256: "0".repeat(64),
      size_bytes: Number.MAX_SAFE_INTEGER,
    });
    const stored = await getRelease(app.store, release.id);
    assert.equal(stored?.release_notes.length, RELEASE_NOTES_MAX_LENGTH);
  });

  await t.step("release notes one character over the limit: a ValidationError", async () => {
    const project = await seedProject(app, { slug: "over" });
    await assert.rejects(
      createRelease(app.store, {
        project_id: project.id,
        version: "1",
        // ASCII: 65,001 characters used to reach KV and fail there with a 500.
        release_notes: "x".repeat(65_001),
        filename: "a.bin",
        storage_key: crypto.randomUUID(),
        checksum_sha256: "0".repeat(64),
        size_bytes: 1,
      }),
      (error) => error instanceof ValidationError && error.field === "release_notes",
    );
  });

  await t.step("a project with every field full is stored; one tag more is refused", async () => {
    const project = await createProject(app.store, {
      name: wide(NAME_MAX_LENGTH),
      slug: "wide-project",
      description: wide(DESCRIPTION_MAX_LENGTH),
      tags: tags(TAGS_MAX_COUNT),
    });
    assert.equal((await getProject(app.store, project.id))?.tags.length, TAGS_MAX_COUNT);
    await assert.rejects(
      updateProject(app.store, project.id, { name: "x", tags: tags(TAGS_MAX_COUNT + 1) }),
      (error) => error instanceof ValidationError && error.field === "tags",
    );
  });

  await t.step("a key with a full scope is stored; one project more is refused", async () => {
    const ids = Array.from({ length: SCOPE_PROJECTS_MAX_COUNT }, (_, i) => 2 ** 40 + i);
    const { apiKey } = await createApiKey(app.store, {
      name: wide(NAME_MAX_LENGTH),
      can_download: true,
      scope_mode: "project_allow_list",
      project_ids: ids,
      tags: tags(TAGS_MAX_COUNT),
    });
    assert.equal((await getApiKey(app.store, apiKey.id))?.project_ids.length, ids.length);
    await assert.rejects(
      createApiKey(app.store, {
        name: "too wide",
        can_download: true,
        scope_mode: "project_allow_list",
        project_ids: [...ids, 1],
      }),
      (error) => error instanceof ValidationError && error.field === "project_ids",
    );
  });
});

Deno.test("issue 9.6: 500s that a client can cause are clear 4xx answers", async (t) => {
  await using app = await createAdminTestApp({ maxUploadBytes: 1024 * 1024 });
  const client = await signedInClient(app);
  await seedProject(app, { slug: "app" });

  await t.step("form fields named constructor, __proto__ and toString", async () => {
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const { value: res, logged } = await captureErrors(() =>
        client.post("/admin/projects", { [name]: "x", name: `P ${name}`, slug: "" })
      );
      assert.ok(res.status < 500, `${name}: ${res.status}`);
      assert.equal(logged, "");
    }
    // The sign-in form reads the same way.
    const anonymous = new AdminClient(app);
    await anonymous.page("/admin/login");
    const res = await anonymous.post("/admin/login", {
      constructor: "x",
      __proto__: "y",
      username: "admin",
      password: "wrong password",
    });
    assert.equal(res.status, 401);
  });

  await t.step("an unparseable Host header on admin routes is a 400", async () => {
    // A Request with such a URL cannot be built in process: go through Deno.serve.
    const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, app.app.fetch);
    try {
      for (const path of ["/admin/login", "/admin/", "/admin"]) {
        for (const method of ["GET", "POST"]) {
          const { value: status, logged } = await captureErrors(() =>
            rawStatus(
              server.addr.port,
              `${method} ${path} HTTP/1.1\r\nHost: %zz\r\nOrigin: http://x\r\n` +
                "Content-Length: 0\r\nConnection: close\r\n\r\n",
            )
          );
          assert.equal(status, "400", `${method} ${path}`);
          assert.equal(logged, "");
        }
      }
    } finally {
      await server.shutdown();
    }
  });

  await t.step(
    "a client that drops the connection mid-body gets a 400, no error log",
    async () => {
      await client.page("/admin/projects");
      const cut = () =>
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(`csrf_token=${client.csrfToken}&na`));
          },
          pull(controller) {
            controller.error(
              new Deno.errors.BadResource(
                "Cannot read request body as underlying resource unavailable",
              ),
            );
          },
        });
      for (const path of ["/admin/login", "/admin/projects"]) {
        const { value: res, logged } = await captureErrors(() =>
          client.fetch(path, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: cut(),
            // @ts-ignore: Deno's RequestInit takes duplex for streamed bodies.
            duplex: "half",
          })
        );
        assert.equal(res.status, 400, path);
        assert.equal(logged, "", path);
        await res.body?.cancel();
      }
    },
  );

  await t.step("release notes over the limit are a 400 form error, not a 500", async () => {
    await client.page("/admin/projects/app");
    const { value: res, logged } = await captureErrors(() =>
      client.upload("/admin/projects/app/releases", [
        ["csrf_token", client.csrfToken],
        ["version", "1.0.0"],
        ["release_notes", "n".repeat(65_001)],
        ["file", new File(["bytes"], "app.bin")],
      ])
    );
    assert.equal(res.status, 400);
    assert.match(await res.text(), /Release notes must be at most 30000 characters/);
    assert.equal(logged, "");
  });

  await t.step("the form fields carry the limits as maxlength", async () => {
    const { html } = await client.page("/admin/projects/app");
    assert.match(
      html,
      new RegExp(`name="release_notes"[^>]*maxlength="${RELEASE_NOTES_MAX_LENGTH}"`),
    );
    assert.match(
      html,
      new RegExp(`name="description"[^>]*maxlength="${DESCRIPTION_MAX_LENGTH}"`),
    );
  });
});

Deno.test("issue 9.9: a trailing-slash redirect never copies the Host header", async () => {
  await using app = await createAdminTestApp();
  const res = await app.app.request("http://evil.example/admin/projects/?tab=1", {
    redirect: "manual",
  });
  assert.equal(res.status, 301);
  assert.equal(res.headers.get("location"), "/admin/projects?tab=1");
});

Deno.test("issue 9.6: bulk release commits stay within KV's commit size with full notes", async () => {
  const app = await createTestApp();
  try {
    const project = await seedProject(app, { slug: "bulk" });
    const inputs = Array.from({ length: 30 }, (_, i) => ({
      version: `1.0.${i}`,
      release_notes: wide(RELEASE_NOTES_MAX_LENGTH),
      filename: "a.bin",
      storage_key: crypto.randomUUID(),
      checksum_sha256: "0".repeat(64),
      size_bytes: 1,
    }));
    const created = await createReleasesBulk(app.store, inputs, { projectId: project.id });
    assert.equal(created.length, 30);
  } finally {
    await app.close();
  }
});
