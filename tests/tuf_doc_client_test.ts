/**
 * docs/tuf.md "Clients": its `tuf-js` client block and the command below it
 * run as written, in an app's own directory outside the repository (no
 * import map of this project), against a running service, and verify the
 * project's metadata.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { seedKey, seedProject, seedRelease } from "./helpers.ts";
import { makeRootKey, publishRoot, serveApp } from "./tuf_fixtures.ts";

const doc = await Deno.readTextFile(new URL("../docs/tuf.md", import.meta.url));

/** The fenced blocks of `lang` in the section `heading` of the page. */
function blocksOf(heading: string, lang: string): string[] {
  const section = doc.split(/^## /m).find((part) => part.startsWith(`${heading}\n`)) ?? "";
  const fence = new RegExp("^```" + lang + "\\n([\\s\\S]*?)^```$", "gm");
  return [...section.matchAll(fence)].map((match) => match[1]);
}

Deno.test("docs/tuf.md's client runs as written in an app's own directory", async () => {
  await using served = await serveApp();
  const { t: app, baseUrl, dir } = served;
  const project = await seedProject(app, { slug: "app" });
  await seedRelease(app, project.id, "1.0.0", new TextEncoder().encode("the release"));
  const { secret } = await seedKey(app);
  const rootKey = await makeRootKey(dir, "root");
  const root = await publishRoot(app, {
    dir,
    version: 1,
    rootKeys: [rootKey],
    threshold: 1,
    signers: [rootKey],
  });

  const [client] = blocksOf("Clients", "ts");
  const [command] = blocksOf("Clients", "sh");
  assert.ok(client && command, "the Clients section has a ts and an sh block");
  const appDir = await Deno.makeTempDir({ prefix: "uds-tuf-app-" });
  try {
    await Deno.writeTextFile(
      join(appDir, "client.ts"),
      client.replaceAll("https://updates.example.com", baseUrl),
    );
    await Deno.mkdir(join(appDir, "tuf"));
    await Deno.mkdir(join(appDir, "downloads"));
    await Deno.writeTextFile(join(appDir, "tuf", "root.json"), root);
    // The command as written, with `deno` the one running the tests and the key given.
    const script = command.replace(/\\\n\s*/g, "").trim()
      .replace(/^UPDATE_API_KEY=<[^>]*>\s+deno /, "");
    assert.match(script, /^run .* client\.ts$/);
    const res = await new Deno.Command(Deno.execPath(), {
      args: script.split(/\s+/),
      cwd: appDir,
      env: { UPDATE_API_KEY: secret, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(res.stderr);
    assert.equal(res.code, 0, stderr);
    const timestamp = JSON.parse(await Deno.readTextFile(join(appDir, "tuf", "timestamp.json")));
    assert.equal(timestamp.signed._type, "timestamp");
    const targets = JSON.parse(await Deno.readTextFile(join(appDir, "tuf", "targets.json")));
    assert.match(Object.keys(targets.signed.targets)[0], /^app\/\d+\//);
  } finally {
    await Deno.remove(appDir, { recursive: true });
  }
});
