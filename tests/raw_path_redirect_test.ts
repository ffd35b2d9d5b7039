/**
 * Issue 22 item 5, end to end on the real server: a raw request path whose
 * dot segments normalise to `//host/…` must never come back as a
 * `Location` that starts with `//` or a backslash (a network-path reference
 * to another site). Sent over a raw socket: fetch would normalise the path.
 */
import assert from "node:assert/strict";
import { sameSitePath } from "../src/http/location.ts";
import { rawRequest } from "./raw_http.ts";
import { makeDataTempDir, startServer } from "./server_process.ts";

const TARGETS = [
  "/admin/..//evil.example/",
  "/admin/..//evil.example/x/?q=1",
  "/admin/%2e%2e//evil.example/",
  "/admin/%2E%2E//evil.example/",
  "/admin/.%2e//evil.example/",
  "/admin/..\\/evil.example/",
  "/admin/..\\\\evil.example/",
  "/admin/../\\evil.example/",
  "/admin/..///evil.example/",
  "/admin/../../..//evil.example/",
  "/admin/projects/..//..//evil.example/",
  "/admin/../",
  "/admin/x/",
];

Deno.test({
  name: "issue 22.5: raw-path open redirect: no Location starts with // or a backslash",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("raw-redirect");
  await using server = await startServer(dataDir);
  try {
    for (const method of ["GET", "HEAD"]) {
      await t.step(`${method} of paths that normalise to //evil.example`, async () => {
        for (const target of TARGETS) {
          const answer = await rawRequest(server.port, target, { method });
          assert.ok(answer.status > 0, `${target}: ${answer.text}`);
          const location = answer.headers.get("location");
          if (location === undefined) continue;
          assert.doesNotMatch(location, /^[/\\]{2}|^\\/, `${method} ${target} -> ${location}`);
          // Resolved the way a browser does, it stays on this site.
          const resolved = new URL(location, server.baseUrl);
          assert.equal(resolved.origin, server.baseUrl, `${target} -> ${location}`);
        }
      });
    }

    await t.step("the trailing-slash redirect still works for an ordinary path", async () => {
      const answer = await rawRequest(server.port, "/admin/projects/?a=b");
      assert.equal(answer.status, 301);
      assert.equal(answer.headers.get("location"), "/admin/projects?a=b");
      const dotted = await rawRequest(server.port, "/admin/..//evil.example/");
      assert.equal(dotted.status, 301, dotted.text);
      assert.equal(dotted.headers.get("location"), "/evil.example");
    });
  } finally {
    await server.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("sameSitePath collapses leading slashes and backslashes to one /", () => {
  assert.equal(sameSitePath("//evil.example"), "/evil.example");
  assert.equal(sameSitePath("/\\evil.example"), "/evil.example");
  assert.equal(sameSitePath("\\\\evil.example"), "/evil.example");
  assert.equal(sameSitePath("/admin/x"), "/admin/x");
  assert.equal(sameSitePath(""), "/");
});
