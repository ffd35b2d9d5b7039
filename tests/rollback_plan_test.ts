/**
 * The way back as the project pages offer it (docs/admin-ui.md "A project's pages"):
 * `planRollBack` names both versions and is offered only for the newest release that is not
 * rolled back already; `latestNotes` says when a rollback is in force, and stops saying so once
 * the release rolled back is latest again.
 */
import assert from "node:assert/strict";
import { latestNotes } from "../src/releases/latest_notes.ts";
import { offerAt } from "../src/releases/offer.ts";
import { getLatestView } from "../src/releases/latest_view.ts";
import { getReleasePolicy, planRollBack, rollBack } from "../src/releases/release_policy.ts";
import {
  getLatestChoice,
  listReleasesByProject,
  makeReleaseLatest,
} from "../src/releases/releases.ts";
import { startRollout } from "../src/releases/rollouts.ts";
import { createTestApp, seedProject, seedRelease, type TestApp } from "./helpers.ts";

async function notesOf(app: TestApp, projectId: number) {
  const view = await getLatestView(app.store, projectId);
  return latestNotes(await listReleasesByProject(app.store, projectId), {
    offer: offerAt(view, Date.now()),
    choice: await getLatestChoice(app.store, projectId),
    rolledBack: (await getReleasePolicy(app.store, projectId)).rolled_back,
  });
}

Deno.test("the way back: both versions, offered for the newest only, undone by Make latest", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  await seedRelease(app, project.id, "1.0.0");
  const v11 = await seedRelease(app, project.id, "1.1.0");
  const v12 = await seedRelease(app, project.id, "1.2.0");

  await t.step("the latest, newest release: 1.2.0 → 1.1.0, offered", async () => {
    const plan = await planRollBack(app.store, project.id);
    assert.deepEqual([plan?.from.version, plan?.to.version, plan?.offered], [
      "1.2.0",
      "1.1.0",
      true,
    ]);
    assert.equal((await notesOf(app, project.id)).rolledBack, null);
  });

  await t.step("rolled back: in force, and no way back offered again", async () => {
    await rollBack(app.store, project.id);
    const notes = await notesOf(app, project.id);
    assert.equal(notes.latest?.id, v11.id);
    assert.equal(notes.rolledBack?.release_id, v12.id);
    assert.equal(notes.higher?.id, v12.id);
    const plan = await planRollBack(app.store, project.id);
    assert.equal(plan?.from.id, v11.id, "1.1.0 would be next");
    assert.equal(plan?.offered, false, "1.1.0 is not the newest release");
  });

  await t.step("Make latest on the rolled-back release undoes it", async () => {
    await makeReleaseLatest(app.store, v12.id);
    assert.equal((await notesOf(app, project.id)).rolledBack, null);
    assert.equal((await planRollBack(app.store, project.id))?.offered, true);
  });

  await t.step(
    "a rollout's release: rolled back while halted, offered again once resumed",
    async () => {
      const v13 = await seedRelease(app, project.id, "1.3.0");
      await makeReleaseLatest(app.store, v12.id);
      await startRollout(app.store, v13.id, { percentage: 10 });
      const plan = await planRollBack(app.store, project.id);
      assert.deepEqual([plan?.from.version, plan?.to.version, plan?.offered], [
        "1.3.0",
        "1.2.0",
        true,
      ]);
      await rollBack(app.store, project.id);
      assert.equal((await notesOf(app, project.id)).rolledBack?.release_id, v13.id);
      assert.equal((await planRollBack(app.store, project.id))?.offered, false);
    },
  );
});
