/**
 * The admin forms' structure (issue 32 item 3), in process: the rollout
 * schedule as rows of a UTC time and a percentage (the old `schedule` text
 * still accepted), webhooks in the menu with a confirmation page before a
 * delete, the publish token form before the token list, and action cells
 * that are table cells like the others.
 */
import assert from "node:assert/strict";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { getRollout } from "../src/releases/rollouts.ts";
import { listWebhookEndpoints } from "../src/webhooks/outbox.ts";
import { scheduleRows } from "../admin/forms_rollout.ts";
import { seedProject, seedRelease } from "./helpers.ts";
import { AdminClient, createAdminTestApp, signedInClient } from "./admin_helpers.ts";

Deno.test("scheduleRows reads a schedule text back into form rows (UTC)", () => {
  assert.deepEqual(
    scheduleRows("2026-12-01T09:00:00.000Z=50, 2026-12-02T10:30:15+01:00=100,tomorrow=5"),
    [
      { at: "2026-12-01T09:00", percentage: "50" },
      { at: "2026-12-02T09:30:15", percentage: "100" },
      { at: "tomorrow", percentage: "5" },
    ],
  );
  assert.deepEqual(scheduleRows(""), []);
});

Deno.test("admin form structure", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app", name: "App" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  await makeReleaseLatest(app.store, v1.id);
  const admin = await signedInClient(app);

  await t.step("the rollout form offers time and percentage fields per step", async () => {
    const { html } = await admin.page("/admin/projects/app/rollout");
    assert.match(html, /<input[^>]*name="schedule_at"[^>]*type="datetime-local"/);
    assert.match(html, /<input[^>]*name="schedule_percentage"[^>]*type="number"/);
    assert.doesNotMatch(html, /name="schedule"/);
  });

  await t.step("the rows post a schedule the server stores (times read as UTC)", async () => {
    const res = await admin.post("/admin/projects/app/rollout", {
      release_id: String(v2.id),
      percentage: "10",
      schedule_at: ["2026-12-02T09:00", "", "2026-12-01T09:00"],
      schedule_percentage: ["100", "", "50"],
      tester_tag: "",
    });
    assert.equal(res.status, 303);
    const rollout = (await getRollout(app.store, project.id))!;
    assert.deepEqual(rollout.schedule, [
      { at: "2026-12-01T09:00:00.000Z", percentage: 50 },
      { at: "2026-12-02T09:00:00.000Z", percentage: 100 },
    ]);
    const { html } = await admin.page("/admin/projects/app/rollout");
    // The change form starts from the steps, and the card lists them with UTC beside the local time.
    assert.match(html, /name="schedule_at"[^>]*value="2026-12-01T09:00"/);
    assert.match(html, /data-local-time-of="2026-12-01T09:00:00.000Z"/);
    assert.match(
      html,
      /<span class="nowrap">2026-12-01<\/span> <span class="nowrap">09:00 UTC<\/span><\/time>: 50%/,
    );
  });

  await t.step("a half-filled row is refused and shown again", async () => {
    const res = await admin.post("/admin/projects/app/rollout/change", {
      percentage: "",
      schedule_at: ["2026-12-03T09:00"],
      schedule_percentage: [""],
      tester_tag: "",
    });
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /data-form-error/);
    assert.match(html, /both a time and a percentage/);
    assert.match(html, /name="schedule_at"[^>]*value="2026-12-03T09:00"/);
  });

  await t.step("the old schedule text is still accepted", async () => {
    const res = await admin.post("/admin/projects/app/rollout/change", {
      percentage: "",
      schedule: "2026-12-05T09:00:00.000Z=60",
      tester_tag: "",
    });
    assert.equal(res.status, 303);
    assert.deepEqual((await getRollout(app.store, project.id))!.schedule, [
      { at: "2026-12-05T09:00:00.000Z", percentage: 60 },
    ]);
  });

  await t.step("the rollout's buttons sit in one row, apart from the forms", async () => {
    const { html } = await admin.page("/admin/projects/app/rollout");
    assert.match(html, /class="actions rollout-actions"/);
    assert.match(
      html,
      /<details class="fold"[^>]*><summary>Change the percentage, schedule or tester tag<\/summary>/,
    );
  });

  let endpointId = "";
  await t.step("webhooks are in the menu of admins", async () => {
    await admin.page("/admin/webhooks");
    const res = await admin.post("/admin/webhooks", {
      url: "https://hooks.example.com/in",
      events: ["key.created"],
    });
    assert.equal(res.status, 200);
    endpointId = (await listWebhookEndpoints(app.store))[0].id;
    const { html } = await admin.page("/admin/webhooks");
    assert.match(html, /<a href="\/admin\/webhooks" aria-current="page">/);
    const viewer = new AdminClient(app);
    await admin.page("/admin/accounts");
    const password = "a long enough password 42";
    await admin.post("/admin/accounts", { username: "vera", password, role: "viewer" });
    await viewer.signIn("vera", password);
    const { html: dashboard } = await viewer.page("/admin");
    assert.doesNotMatch(dashboard, /href="\/admin\/webhooks"/);
    assert.equal((await viewer.fetch(`/admin/webhooks/${endpointId}/delete`)).status, 403);
  });

  await t.step("deleting an endpoint asks first, on a page of its own", async () => {
    const { html: list } = await admin.page("/admin/webhooks");
    // The list links to the confirmation; no form there deletes in one click.
    assert.match(list, new RegExp(`href="/admin/webhooks/${endpointId}/delete"`));
    assert.doesNotMatch(list, /action="\/admin\/webhooks\/[0-9a-z]+\/delete"/);
    const { res, html } = await admin.page(`/admin/webhooks/${endpointId}/delete`);
    assert.equal(res.status, 200);
    assert.match(
      html,
      new RegExp(`<form method="post" action="/admin/webhooks/${endpointId}/delete"`),
    );
    assert.match(html, /https:\/\/hooks\.example\.com\/in/);
    assert.equal((await admin.fetch("/admin/webhooks/000000000zzzzzzzz/delete")).status, 404);
    assert.equal((await listWebhookEndpoints(app.store)).length, 1, "asking deletes nothing");
    const done = await admin.post(`/admin/webhooks/${endpointId}/delete`);
    assert.equal(done.status, 303);
    assert.equal((await listWebhookEndpoints(app.store)).length, 0);
  });

  await t.step("the publish token form comes before the list, as on the key page", async () => {
    await admin.page("/admin/publish-tokens");
    const made = await admin.post("/admin/publish-tokens", {
      name: "ci",
      all_projects: "on",
      can_upload: "on",
    });
    assert.equal(made.status, 200);
    const { html } = await admin.page("/admin/publish-tokens");
    assert.ok(html.indexOf('id="new-token"') < html.indexOf('id="token-list"'));
    assert.match(html, /<details class="card create-card" id="new-token"\s*>/);
    const opened = (await admin.page("/admin/publish-tokens?new=1")).html;
    assert.match(opened, /<details class="card create-card" id="new-token"\s+open/);
  });

  await t.step("action cells are table cells, their buttons in a wrapper", async () => {
    for (const path of ["/admin/accounts", "/admin/publish-tokens", "/admin/webhooks"]) {
      const { html } = await admin.page(path);
      assert.doesNotMatch(html, /<td class="actions"/, path);
    }
  });
});
