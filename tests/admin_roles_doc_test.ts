/**
 * docs/admin-ui.md "Accounts and roles" says what admin/roles.ts allows: the
 * viewer's row names every page a viewer may not read, and the publisher's
 * row every form a publisher may send (read from the routes the app
 * registered, so a new route needs its words in the table).
 */
import assert from "node:assert/strict";
import { rolesFor } from "../admin/roles.ts";
import { createAdminTestApp } from "./admin_helpers.ts";

const doc = await Deno.readTextFile(new URL("../docs/admin-ui.md", import.meta.url));

function row(role: string): string {
  const line = doc.split("\n").find((text) => text.startsWith(`| \`${role}\``));
  assert.ok(line, `the role table has a ${role} row`);
  return line.replace(/\s+/g, " ").toLowerCase();
}

/** What the publisher's row calls each form a publisher may send. */
const PUBLISHER_FORMS: Record<string, string> = {
  "POST /admin/projects/:slug/releases": "upload releases",
  "POST /admin/releases/:id": "edit a release's version, build and notes",
  "POST /admin/releases/:id/archive": "archive",
  "POST /admin/releases/:id/activate": "activate",
  "POST /admin/releases/:id/publish": "publish drafts",
  "POST /admin/releases/:id/make-latest": "make latest",
  "POST /admin/projects/:slug/rollout": "run staged rollouts (start",
  "POST /admin/projects/:slug/rollout/change": "change",
  "POST /admin/projects/:slug/rollout/halt": "halt",
  "POST /admin/projects/:slug/rollout/resume": "resume",
  "POST /admin/projects/:slug/rollout/complete": "complete",
  "POST /admin/projects/:slug/rollout/end": "end)",
  "POST /admin/projects/:slug/rollout/gates": "health gates",
  "POST /admin/projects/:slug/rollout/rollback": "roll back",
  "POST /admin/projects/:slug/rollout/policy": "release policy",
};

Deno.test("docs/admin-ui.md's role table says what admin/roles.ts allows", async (t) => {
  await using app = await createAdminTestApp();
  const routes = [
    ...new Set(
      app.app.routes
        .filter(({ method, path }) => method !== "ALL" && path.startsWith("/admin"))
        .map(({ method, path }) => `${method} ${path}`),
    ),
  ];
  const viewer = row("viewer");
  const publisher = row("publisher");

  await t.step("the viewer's row names every page a viewer may not read", () => {
    const closed = routes.filter((route) =>
      route.startsWith("GET /admin/") && !rolesFor(route).includes("viewer")
    );
    assert.ok(closed.length > 0);
    for (const route of closed) {
      const page = route.split("/")[2].replaceAll("-", " ");
      assert.match(viewer, new RegExp(`except [^;]*\\b${page}\\b`), `${route}: ${page}`);
    }
  });

  await t.step("the publisher's row names every form a publisher may send", () => {
    const open = routes.filter((route) =>
      !route.startsWith("GET ") && rolesFor(route).includes("publisher") &&
      !["POST /admin/logout", "POST /admin/account/password"].includes(route)
    );
    for (const route of open) {
      const words = PUBLISHER_FORMS[route];
      assert.ok(words, `${route} has its words in PUBLISHER_FORMS (and the publisher's row)`);
      assert.ok(publisher.includes(words), `the publisher's row says "${words}" (${route})`);
    }
  });
});
