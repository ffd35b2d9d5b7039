/**
 * The route tables of the docs list the routes the service mounts: the
 * publishing API's table in docs/publishing.md ("The API") has exactly its
 * routes, and every admin route is in the admin contract
 * (../shared/spec/admin-contract.md "Admin routes"), in docs/admin-ui.md
 * ("Route and field reference") or in docs/rollouts.md ("Admin UI"), and
 * none of those tables lists a route that is not mounted.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createTestApp } from "./helpers.ts";
import { PROJECT_ROOT } from "./server_process.ts";

const SPEC_DIR = join(PROJECT_ROOT, "..", "shared", "spec");

/** `METHOD /path/:param` of every table row in `markdown` that starts with a method and a path. */
export function tableRoutes(markdown: string, prefix: string): string[] {
  const rows = markdown.matchAll(/^\|\s*(GET|POST|PUT|PATCH|DELETE)\s*\|\s*`([^`]+)`/gm);
  return [...rows]
    .filter(([, , path]) => path === prefix || path.startsWith(`${prefix}/`))
    .map(([, method, path]) => `${method} ${path.split("?")[0].replace(/\{(\w+)\}/g, ":param")}`);
}

function read(path: string): Promise<string> {
  return Deno.readTextFile(path);
}

Deno.test("the docs' route tables list the mounted routes", async (t) => {
  await using app = await createTestApp();
  const mounted = (prefix: string) =>
    [
      ...new Set(
        app.app.routes
          .filter((r) =>
            r.method !== "ALL" && (r.path === prefix || r.path.startsWith(`${prefix}/`))
          )
          .map((r) => `${r.method} ${r.path.replace(/:\w+/g, ":param")}`),
      ),
    ].sort();

  await t.step("publishing.md's API table: every publishing API route, no other", async () => {
    const documented = tableRoutes(
      await read(join(PROJECT_ROOT, "docs", "publishing.md")),
      "/publish/v1",
    );
    assert.deepEqual([...new Set(documented)].sort(), mounted("/publish/v1"));
  });

  await t.step("every admin route is in the contract, admin-ui.md or rollouts.md", async () => {
    const contract = tableRoutes(await read(join(SPEC_DIR, "admin-contract.md")), "/admin");
    const pages = [
      ...tableRoutes(await read(join(PROJECT_ROOT, "docs", "admin-ui.md")), "/admin"),
      ...tableRoutes(await read(join(PROJECT_ROOT, "docs", "rollouts.md")), "/admin"),
    ];
    const documented = new Set([...contract, ...pages]);
    const missing = mounted("/admin").filter((route) => !documented.has(route));
    assert.deepEqual(missing, [], "admin routes in no table");
    const stale = pages.filter((route) => !mounted("/admin").includes(route));
    assert.deepEqual(stale, [], "table rows for routes the service does not mount");
  });
});
