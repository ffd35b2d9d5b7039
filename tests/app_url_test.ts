/**
 * One URL per app (docs/feeds.md "One URL per app"): each feed picks the platform's project from
 * what its client sends, `{app}` itself first, then `{app}-{platform}`, the key's scope applying
 * to the project picked.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { publishRelease } from "../src/storage/publish.ts";
import { velopackPlatforms } from "../src/feeds/platforms.ts";
import { assertError } from "./asserts.ts";
import { createTestApp, seedKey, seedProject, type TestApp } from "./helpers.ts";

const TAURI_SIGNATURE = btoa("untrusted comment: x\nRWQ=\ntrusted comment: y\nAA==\n");

function release(t: TestApp, projectId: number, version: string, filename: string) {
  return publishRelease(t.store, t.artifacts, {
    release: { project_id: projectId, version, filename, tauri_signature: TAURI_SIGNATURE },
    source: ReadableStream.from([new TextEncoder().encode(`bytes of ${filename}`)]),
    maxBytes: t.config.maxUploadBytes,
  });
}

Deno.test("one URL per app", async (t) => {
  await using app = await createTestApp();
  const projects = {
    win: await seedProject(app, { slug: "desk-win" }),
    mac: await seedProject(app, { slug: "desk-mac" }),
    macArm: await seedProject(app, { slug: "desk-mac-arm64" }),
    linux: await seedProject(app, { slug: "desk-linux" }),
  };
  await release(app, projects.win.id, "1.1.0", "Desk Setup 1.1.0.exe");
  await release(app, projects.mac.id, "1.2.0", "Desk-1.2.0.zip");
  await release(app, projects.macArm.id, "1.3.0", "Desk-1.3.0-arm64.zip");
  await release(app, projects.linux.id, "1.4.0", "Desk-1.4.0.AppImage");
  const { secret } = await seedKey(app);

  await t.step("electron-updater: the file name picks the project", async () => {
    const cases = [
      ["latest.yml", "1.1.0"],
      ["latest-mac.yml", "1.2.0"],
      ["latest-linux.yml", "1.4.0"],
      ["latest-linux-arm64.yml", "1.4.0"],
      ["beta-mac.yml", "1.2.0"],
    ];
    for (const [file, version] of cases) {
      const res = await app.request(`/feeds/electron/desk/${file}`, secret);
      assert.equal(res.status, 200, file);
      assert.equal(parse(await res.text()).version, version, file);
    }
    // The file URL names the project picked.
    const mac = parse(
      await (await app.request("/feeds/electron/desk/latest-mac.yml", secret)).text(),
    );
    assert.equal(mac.path, "/feeds/electron/desk-mac/files/1.2.0/Desk-1.2.0.zip");
  });

  await t.step("Tauri: {{target}} and {{arch}} pick the project, most specific first", async () => {
    const cases = [
      ["windows/x86_64", "1.1.0"],
      ["darwin/x86_64", "1.2.0"],
      ["darwin/aarch64", "1.3.0"],
      ["linux/x86_64", "1.4.0"],
    ];
    for (const [platform, version] of cases) {
      const res = await app.request(`/feeds/tauri/desk/${platform}/1.0.0`, secret);
      assert.equal(res.status, 200, platform);
      assert.equal((await res.json()).version, version, platform);
    }
  });

  await t.step("Squirrel: the platform path picks the project", async () => {
    const cases = [
      ["darwin", "1.2.0"],
      ["darwin-x64", "1.2.0"],
      ["darwin-arm64", "1.3.0"],
    ];
    for (const [platform, version] of cases) {
      const res = await app.request(`/feeds/squirrel/desk/${platform}/1.0.0`, secret);
      assert.equal(res.status, 200, platform);
      assert.equal((await res.json()).name, version, platform);
    }
  });

  await t.step("a project named like the app answers for every platform", async () => {
    const whole = await seedProject(app, { slug: "desk" });
    await release(app, whole.id, "9.0.0", "Desk-9.0.0.zip");
    const res = await app.request("/feeds/electron/desk/latest-mac.yml", secret);
    assert.equal(parse(await res.text()).version, "9.0.0");
  });

  await t.step("the key's scope applies to the project picked", async () => {
    const winOnly = await seedKey(app, {
      scope_mode: "project_allow_list",
      project_ids: [projects.win.id],
    });
    assert.equal(
      (await app.request("/feeds/electron/desk-/latest.yml", winOnly.secret)).status,
      404,
    );
    const onApp = await app.request("/feeds/tauri/desk/windows/x86_64/1.0.0", winOnly.secret);
    assert.equal((await onApp.json()).version, "1.1.0");
    await assertError(
      await app.request("/feeds/tauri/desk/darwin/aarch64/1.0.0", winOnly.secret),
      404,
      "resource not found",
    );
  });

  await t.step("Velopack's channels name the platform (for its feed)", () => {
    assert.deepEqual(velopackPlatforms("win"), ["win"]);
    assert.deepEqual(velopackPlatforms("osx"), ["mac"]);
    assert.deepEqual(velopackPlatforms("linux-arm64"), ["linux-arm64", "linux"]);
    assert.deepEqual(velopackPlatforms("beta"), ["beta"]);
  });
});
