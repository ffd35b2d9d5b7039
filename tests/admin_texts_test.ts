/**
 * What the admin pages say, checked in process: release notes keep `\n`
 * line breaks whichever way they come in.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AUDIT_KINDS, recordAudit } from "../src/kv/audit.ts";
import { topKeysKey } from "../src/kv/keys.ts";
import { claimLease } from "../src/kv/leases.ts";
import { getDownloadCounts, getRelease, makeReleaseLatest } from "../src/releases/releases.ts";
import { startRollout } from "../src/releases/rollouts.ts";
import { FIELD_LABELS } from "../admin/field_labels.ts";
import { PROJECT_ROOT } from "./server_process.ts";
import { sourceFiles } from "./source_files.ts";
import { seedKey, seedProject, seedRelease, sleep } from "./helpers.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";

Deno.test("release notes are stored with \\n line breaks, however they are sent", async (t) => {
  await using app = await createAdminTestApp();
  await seedProject(app, { slug: "app" });
  const client = await signedInClient(app);
  const { secret: key } = await seedKey(app);
  const { secret: token } = await seedPublishToken(app.store);
  const notesOf = async (id: number) => (await getRelease(app.store, id))!.release_notes;
  const latestId = async () =>
    (await (await app.request("/api/v1/projects/app/releases/latest", key)).json()).release.id;

  await t.step("typed in the upload form (\\r\\n): \\n in the API", async () => {
    const res = await client.upload("/admin/projects/app/releases", [
      ["csrf_token", client.csrfToken],
      ["version", "1.0.0"],
      ["release_notes", "Fixes:\r\n- a\r\n- b\rc"],
      ["file", new File(["bytes"], "app.bin")],
    ]);
    assert.equal(res.status, 303);
    const id = await latestId();
    assert.equal(await notesOf(id), "Fixes:\n- a\n- b\nc");
    const answer = await (await app.request(`/api/v1/releases/${id}`, key)).json();
    assert.equal(answer.release.release_notes, "Fixes:\n- a\n- b\nc");
  });

  await t.step("edited in the release form: \\n", async () => {
    const id = await latestId();
    const res = await client.post(`/admin/releases/${id}`, {
      version: "1.0.0",
      build: "",
      release_notes: "One\r\nTwo",
    });
    assert.equal(res.status, 303);
    assert.equal(await notesOf(id), "One\nTwo");
  });

  await t.step("through the publishing API, upload and edit: \\n", async () => {
    const res = await app.request(`${PUBLISH_PREFIX}/projects/app/releases`, token, {
      method: "POST",
      body: uploadForm({ version: "2.0.0", release_notes: "A\r\nB" }, {
        bytes: new Uint8Array([1]),
      }),
    });
    const body = await res.json();
    assert.equal(res.status, 201, JSON.stringify(body));
    assert.equal(body.release.release_notes, "A\nB");
    const patched = await app.request(`${PUBLISH_PREFIX}/releases/${body.release.id}`, token, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ release_notes: "C\r\nD" }),
    });
    assert.equal(patched.status, 200, await patched.clone().text());
    assert.equal((await patched.json()).release.release_notes, "C\nD");
    assert.equal(await notesOf(body.release.id), "C\nD");
  });
});

Deno.test("the audit filter offers every kind of audited action", async (t) => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);

  await t.step("one option per kind in the code, the new ones included", async () => {
    const { html } = await client.page("/admin/audit");
    const select = /<select id="audit-action"[^>]*>([\s\S]*?)<\/select>/.exec(html)![1];
    const offered = [...select.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]);
    assert.deepEqual(offered, ["", ...AUDIT_KINDS]);
    for (const kind of ["publish_token", "webhook", "account", "rollout"]) {
      assert.ok(offered.includes(kind), kind);
    }
  });

  await t.step("every action the code records is of a listed kind", async () => {
    const kinds = new Set<string>();
    const files = [...await sourceFiles("src"), ...await sourceFiles("admin")];
    for (const file of files) {
      const text = await Deno.readTextFile(join(PROJECT_ROOT, file));
      for (const m of text.matchAll(/action: [`"]([a-z_]+)\.[a-z_${}]+[`"]/g)) kinds.add(m[1]);
    }
    assert.ok(kinds.size >= 10, `found ${[...kinds]}`);
    assert.deepEqual([...kinds].filter((kind) => !isAuditKind(kind)), []);
  });

  await t.step("filtering by a new kind finds its entries", async () => {
    await recordAudit(app.store, {
      actor: "admin",
      action: "publish_token.create",
      target: "publish token 1",
      details: "",
      address: "-",
    });
    const { html } = await client.page("/admin/audit?action=publish_token");
    assert.match(html, /data-audit-action="publish_token\.create"/);
    assert.doesNotMatch(html, /data-audit-action="auth\.sign_in"/);
    assert.match(html, /<option value="publish_token" selected/);
  });
});

function isAuditKind(kind: string): boolean {
  return (AUDIT_KINDS as readonly string[]).includes(kind);
}

Deno.test("the dashboard's top keys agree with the chart beside them", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app" });
  const release = await seedRelease(app, project.id, "1.0.0");
  const { secret, apiKey } = await seedKey(app, { name: "first key" });
  const client = await signedInClient(app);
  const download = async () => {
    const res = await app.request(`/api/v1/releases/${release.id}/download`, secret);
    await res.arrayBuffer();
    // The count is written once the last byte is sent.
    for (
      let i = 0;
      i < 50 && !(await getDownloadCounts(app.store, [release.id])).get(release.id);
      i++
    ) {
      await sleep(10);
    }
  };
  const chartTotal = (html: string) => /data-downloads-total[^>]*>(\d+)</.exec(html)![1];

  await t.step("before any download: no downloads, and a chart of 0", async () => {
    const { html } = await client.page("/admin");
    assert.match(html, /data-top-keys="none">No downloads yet\./);
    assert.equal(chartTotal(html), "0");
  });

  await t.step(
    "right after the first download: the key is listed, not 'no downloads'",
    async () => {
      await download();
      const { html } = await client.page("/admin");
      assert.equal(chartTotal(html), "1");
      assert.doesNotMatch(html, /No downloads yet/);
      assert.match(html, new RegExp(`data-top-key-id="${apiKey.id}"`));
    },
  );

  await t.step(
    "a refresh held elsewhere: the card says the keys follow, never 'none'",
    async () => {
      await app.kv.delete(topKeysKey());
      await recordTopKeysSnapshot(app.kv);
      assert.ok(
        await claimLease(app.store, "top_keys_refresh", { holder: "other", ttlMs: 60_000 }),
      );
      const { html } = await client.page("/admin");
      assert.match(html, /data-top-keys="pending"/);
      assert.doesNotMatch(html, /No downloads yet/);
    },
  );
});

/** An empty top-keys snapshot taken now (as an instance that saw no download yet would store). */
async function recordTopKeysSnapshot(kv: Deno.Kv): Promise<void> {
  await kv.set(topKeysKey(), { at: new Date().toISOString(), top: [] });
}

Deno.test("an empty project's adoption card says no client has checked", async (t) => {
  await using app = await createAdminTestApp();
  await seedProject(app, { slug: "empty" });
  const client = await signedInClient(app);

  await t.step("no '– of the 0 clients'", async () => {
    const { html } = await client.page("/admin/projects/empty/rollout");
    const card = /<section class="card" id="adoption"[\s\S]*?<\/section>/.exec(html)![0];
    assert.doesNotMatch(card, /of the 0/);
    assert.doesNotMatch(card, /–/);
    assert.match(card, /data-adoption-share="none"/);
    assert.match(card, /No client has checked for updates in the last 30 days\./);
  });
});

Deno.test("messages name a field by the label its form shows, never by its form name", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app", name: "App" });
  await seedRelease(app, project.id, "1.0.0");
  const candidate = await seedRelease(app, project.id, "2.0.0");
  await makeReleaseLatest(app.store, (await seedRelease(app, project.id, "1.5.0")).id);
  // A project with a rollout: its release safety card shows the gates form.
  const gated = await seedProject(app, { slug: "gated", name: "Gated" });
  const gatedOld = await seedRelease(app, gated.id, "1.0.0");
  const gatedNew = await seedRelease(app, gated.id, "2.0.0");
  await makeReleaseLatest(app.store, gatedOld.id);
  await startRollout(app.store, gatedNew.id, { percentage: 10 });
  const client = await signedInClient(app);

  await t.step("every label in the table is the one its form shows", async () => {
    const pages = [
      "/admin/projects",
      "/admin/projects/app/releases",
      "/admin/projects/app/settings",
      "/admin/projects/gated/rollout",
      "/admin/api-keys",
      "/admin/accounts",
      `/admin/releases/${candidate.id}`,
    ];
    const html = new Map<string, string>();
    for (const path of pages) html.set(path, (await client.page(path)).html);
    for (const [field, label] of Object.entries(FIELD_LABELS)) {
      // A field posted as rows of inputs (the rollout schedule's `schedule_at`,
      // `schedule_percentage`) is shown under its legend like a single input.
      const showing = pages.filter((path) =>
        html.get(path)!.includes(`name="${field}"`) || html.get(path)!.includes(`name="${field}_`)
      );
      assert.ok(showing.length > 0, `a page has the field ${field}`);
      for (const path of showing) {
        const page = html.get(path)!;
        const labelled = new RegExp(`<(label|legend)[^>]*>\\s*${escaped(label)}\\s*<`);
        assert.match(page, labelled, `${field} is labelled "${label}" on ${path}`);
      }
    }
  });

  const refusals: Array<[string, string, Record<string, string>, RegExp, RegExp]> = [
    [
      "retention",
      "/admin/projects/app/retention",
      { keep_active: "-1", archived_max_days: "", action: "save" },
      /Keep the newest active releases must be a whole number from 1 to/,
      /keep_active/,
    ],
    [
      "retention, the other rule",
      "/admin/projects/app/retention",
      { keep_active: "", archived_max_days: "0", action: "preview" },
      /Delete archived releases older than \(days\) must be a whole number/,
      /archived_max_days must/,
    ],
    [
      "rollout",
      "/admin/projects/app/rollout",
      { release_id: String(candidate.id), percentage: "150", schedule: "", tester_tag: "" },
      /Percentage of clients must be a number from 0 to 100/,
      /percentage must/,
    ],
    [
      "rollout gates",
      "/admin/projects/gated/rollout/gates",
      { stages: "10, 50", min_installs: "1.5", min_hours: "1", advance_below: "1", halt_at: "2" },
      /Successful installs per stage must be a whole number/,
      /min_installs must/,
    ],
    [
      "release policy",
      "/admin/projects/app/rollout/policy",
      { minimum_version: "1 0" },
      /Minimum supported version must be 1 to 100/,
      /minimum_version must/,
    ],
    [
      "API key",
      "/admin/api-keys",
      { name: "k", scope_mode: "all_projects", expires_at: "soon" },
      /Expires must be a time like/,
      /expires_at must/,
    ],
    [
      "project",
      "/admin/projects",
      { name: "P", slug: "Bad Slug!" },
      /Slug must be 1 to 64 characters/,
      /slug must/,
    ],
    [
      "account",
      "/admin/accounts",
      { username: "bad name", password: "a long enough password", role: "viewer" },
      /User name must be 1 to/,
      /username must/,
    ],
  ];
  for (const [name, path, fields, shown, hidden] of refusals) {
    await t.step(`${name}: the label, not the form name`, async () => {
      const res = await client.post(path, fields);
      assert.equal(res.status, 400, name);
      const html = await res.text();
      assert.match(html, shown, name);
      const errors = [...html.matchAll(/data-form-error[^>]*>([^<]*)</g)].map((m) => m[1]);
      assert.ok(errors.length > 0, `${name}: a message`);
      for (const message of errors) assert.doesNotMatch(message, hidden, name);
    });
  }
});

/** `text` as a literal in a regular expression. */
function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
