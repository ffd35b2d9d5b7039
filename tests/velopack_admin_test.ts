/**
 * The project page's card of server-made deltas and patches (docs/admin-ui.md
 * "Server-made deltas and patches"): "deltas kept" shown, saved (audited), refused out of range with
 * the form shown again, and obeyed by the background builds.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { listAuditEntries } from "../src/kv/audit.ts";
import { listVelopackDeltas } from "../src/artifact_records/velopack.ts";
import { getVelopackSettings } from "../src/velopack/settings.ts";
import { buildDeltas, seedProject, seedRelease, writeNupkgTree } from "./helpers.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";

async function nupkg(work: string, version: string): Promise<Uint8Array> {
  const dir = await writeNupkgTree(work, version, 200);
  const out = join(work, `${version}.nupkg`);
  const zipped = await new Deno.Command("zip", { args: ["-q", "-r", "-X", out, "."], cwd: dir })
    .output();
  assert.ok(zipped.success);
  return await Deno.readFile(out);
}

Deno.test("the server-made deltas and patches card", async (t) => {
  await using app = await createAdminTestApp();
  const work = await Deno.makeTempDir({ prefix: "uds-velopack-admin-" });
  try {
    const project = await seedProject(app, { slug: "deskapp" });
    const client = await signedInClient(app);

    await t.step("the page shows 10 by default", async () => {
      const { html } = await client.page("/admin/projects/deskapp/feeds");
      assert.match(html, /id="velopack"/);
      assert.match(html, /<h2 id="velopack-title">Server-made deltas and patches<\/h2>/);
      assert.match(html, /name="deltas_kept"[^>]*value="10"/);
    });

    await t.step("out of range: 400, the form again with the message, nothing saved", async () => {
      for (const value of ["-1", "51", "two", ""]) {
        const res = await client.post("/admin/projects/deskapp/velopack", { deltas_kept: value });
        assert.equal(res.status, 400, value);
        assert.match(await res.text(), /must be a whole number from 0 to 50/);
      }
      assert.equal((await getVelopackSettings(app.store, project.id)).deltas_kept, 10);
    });

    await t.step("saved and audited; the builds keep that many", async () => {
      const res = await client.post("/admin/projects/deskapp/velopack", { deltas_kept: "1" });
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), "/admin/projects/deskapp/feeds#velopack");
      assert.equal((await getVelopackSettings(app.store, project.id)).deltas_kept, 1);
      const entry = (await listAuditEntries(app.store, { limit: 1 })).entries[0];
      assert.equal(entry.action, "project.velopack");
      assert.match(entry.details, /deltas_kept: 10 → 1/);
      const { html } = await client.page("/admin/projects/deskapp/feeds");
      assert.match(html, /name="deltas_kept"[^>]*value="1"/);

      let last;
      for (const version of ["1.0.0", "1.0.1", "1.0.2"]) {
        last = await seedRelease(app, project.id, version, await nupkg(work, version), {
          filename: `DeskApp-${version}-full.nupkg`,
        });
      }
      await buildDeltas(app, join(work, "deltas"));
      const deltas = await listVelopackDeltas(app.store, last!.id);
      assert.deepEqual(deltas.map((d) => d.from_version), ["1.0.1"]);
    });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});
