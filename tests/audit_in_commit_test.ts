/**
 * Issue 19 item 5: the audit entry of a change is written in the same atomic
 * commit as the change, so a process that dies right after the commit leaves
 * the change with its entry; the route's own entry then completes that one
 * (one entry per request, not two).
 */
import assert from "node:assert/strict";
import { listAuditEntries } from "../src/kv/audit.ts";
import { listProjects } from "../src/projects/projects.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { captureErrors } from "./faults.ts";

/** `kv` whose plain `set` of audit entries fails (as if the process died after the commit). */
function auditSetsFail(kv: Deno.Kv, failing: { on: boolean }): Deno.Kv {
  return new Proxy(kv, {
    get(target, prop) {
      if (prop === "set") {
        return (key: Deno.KvKey, value: unknown, options?: { expireIn?: number }) =>
          failing.on && key[0] === "audit_log"
            ? Promise.reject(new Error("the process died (test fault)"))
            : target.set(key, value, options);
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

Deno.test("issue 19.5: a committed change has its audit entry, written in its commit", async (t) => {
  const failing = { on: false };
  await using app = await createAdminTestApp({}, { wrapKv: (kv) => auditSetsFail(kv, failing) });
  const client = await signedInClient(app);
  await client.page("/admin/projects");

  await t.step("the route's own entry completes the one its commit wrote: one entry", async () => {
    const before = (await listAuditEntries(app.store, { limit: 100 })).entries.length;
    const res = await client.post("/admin/projects", { name: "Desktop", slug: "desktop" });
    assert.equal(res.status, 303);
    const { entries } = await listAuditEntries(app.store, { limit: 100 });
    assert.equal(entries.length, before + 1);
    assert.equal(entries[0].action, "project.create");
    assert.equal(entries[0].target, "project desktop");
    assert.equal(entries[0].actor, "admin");
  });

  await t.step(
    "when the route's own write never happens, the commit's entry is there",
    async () => {
      failing.on = true;
      const { value: res } = await captureErrors(() =>
        client.post("/admin/projects", { name: "Mobile", slug: "mobile" })
      );
      failing.on = false;
      assert.equal(res.status, 303, "the change is done; a failed audit write is not shown");
      assert.ok((await listProjects(app.store)).some((project) => project.slug === "mobile"));
      const [entry] = (await listAuditEntries(app.store, { limit: 1 })).entries;
      assert.equal(entry.action, "change.committed");
      assert.equal(entry.actor, "admin");
      assert.equal(entry.target, "POST /admin/projects");
      assert.match(entry.details, /project_list/);
    },
  );
});
