/**
 * The real Velopack client core (tests/velopack_client.ts) against the
 * Velopack feed, through a proxy that counts the bytes it passes: a fresh
 * install downloads the full package, as does the client build before deltas
 * (0.0.1053, which sends no stagingId); an install 1 or 5 versions behind finds
 * exactly one server-made delta, downloads it (its size and SHA-1 checked by
 * the client) and has the stand-in Update binary apply it
 * (tests/fixtures/velopack_update_standin.sh), the result holding the new
 * version's files byte for byte; with a corrupt base package the client
 * falls back to the full package.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { listVelopackDeltas } from "../src/artifact_records/velopack.ts";
import { feedCredential } from "../src/feeds/url_credential.ts";
import type { Release } from "../src/releases/types.ts";
import { buildDeltas, createTestApp, noise, seedKey, seedProject, seedRelease } from "./helpers.ts";
import {
  installVelopack,
  runVelopackClient,
  VELOPACK_NPM_BEFORE_DELTAS,
} from "./velopack_client.ts";

const VERSIONS = ["1.0.0", "1.0.1", "1.0.2", "1.0.3", "1.0.4", "1.0.5", "1.0.6"];
const BINARY_BYTES = 3 * 1024 * 1024;
const STANDIN = new URL("./fixtures/velopack_update_standin.sh", import.meta.url).pathname;

function nuspec(version: string): string {
  return `<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://schemas.microsoft.com/packaging/2010/07/nuspec.xsd">
  <metadata>
    <id>DeskApp</id>
    <title>Desk App</title>
    <description>Desk App</description>
    <authors>Vendor</authors>
    <version>${version}</version>
    <channel>linux</channel>
    <mainExe>DeskApp</mainExe>
  </metadata>
</package>
`;
}

/** The files of version `index` of the app: what `vpk pack` puts in a full package. */
function appFiles(index: number): Record<string, Uint8Array | string> {
  const binary = noise(BINARY_BYTES, 7);
  // Each version changes a few KB of the binary, in a place of its own.
  binary.set(noise(4096, 100 + index), 200_000 * (index + 1));
  return {
    "DeskApp.nuspec": nuspec(VERSIONS[index]),
    "lib/app/DeskApp": binary,
    "lib/app/resources/app.js": `console.log("Desk App ${VERSIONS[index]}");\n`.repeat(2000),
    "lib/app/unchanged.dat": noise(100_000, 3),
    [`lib/app/only-in-${VERSIONS[index]}.txt`]: `version ${VERSIONS[index]}\n`,
  };
}

async function writeFiles(dir: string, files: Record<string, Uint8Array | string>) {
  for (const [name, content] of Object.entries(files)) {
    const path = join(dir, name);
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    if (typeof content === "string") await Deno.writeTextFile(path, content);
    else await Deno.writeFile(path, content);
  }
}

async function zipDir(dir: string, out: string) {
  const zipped = await new Deno.Command("zip", { args: ["-q", "-r", "-X", out, "."], cwd: dir })
    .output();
  assert(zipped.success, "zip failed");
}

async function unzipTo(file: string, dir: string) {
  const out = await new Deno.Command("unzip", { args: ["-q", file, "-d", dir] }).output();
  assert(out.success, `unzip ${file} failed`);
}

async function filesOf(dir: string, prefix = ""): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  for await (const entry of Deno.readDir(join(dir, prefix))) {
    const relative = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory) {
      for (const [k, v] of await filesOf(dir, relative)) files.set(k, v);
    } else files.set(relative, await Deno.readFile(join(dir, relative)));
  }
  return files;
}

/** A proxy in front of `upstream` that counts the response bytes it passes, per path. */
function countingProxy(upstream: string) {
  const bytes = new Map<string, number>();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const answer = await fetch(`${upstream}${url.pathname}${url.search}`, {
      method: req.method,
      headers: req.headers,
    });
    const body = new Uint8Array(await answer.arrayBuffer());
    const file = url.pathname.slice(url.pathname.lastIndexOf("/") + 1);
    bytes.set(file, (bytes.get(file) ?? 0) + body.byteLength);
    return new Response(req.method === "HEAD" ? null : body, {
      status: answer.status,
      headers: answer.headers,
    });
  });
  return { bytes, server, origin: `http://127.0.0.1:${server.addr.port}` };
}

Deno.test("the real Velopack client takes full packages and one-hop server-made deltas", async (t) => {
  const moduleDir = await installVelopack();
  await using app = await createTestApp();
  const work = await Deno.makeTempDir({ prefix: "uds-velopack-" });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (req, info) => app.app.fetch(req, { remoteAddr: info.remoteAddr }),
  );
  const proxy = countingProxy(`http://127.0.0.1:${server.addr.port}`);
  try {
    const project = await seedProject(app, { slug: "deskapp" });
    const packages: Uint8Array[] = [];
    const releases: Release[] = [];
    for (let i = 0; i < VERSIONS.length; i++) {
      const dir = join(work, `src-${i}`);
      await writeFiles(dir, appFiles(i));
      const file = join(work, `DeskApp-${VERSIONS[i]}-full.nupkg`);
      await zipDir(dir, file);
      packages.push(await Deno.readFile(file));
      releases.push(
        await seedRelease(app, project.id, VERSIONS[i], packages[i], {
          filename: `DeskApp-${VERSIONS[i]}-full.nupkg`,
        }),
      );
    }
    const latest = releases.at(-1)!;
    const run = await buildDeltas(app, join(work, "deltas"));
    assert.deepEqual(run.failed, 0);
    const deltas = await listVelopackDeltas(app.store, latest.id);
    // One delta to the latest from each of the 6 older releases (10 kept by default).
    assert.deepEqual(deltas.length, 6);

    const { apiKey, secret } = await seedKey(app);
    const feedUrl = `${proxy.origin}/feeds/c/${feedCredential(apiKey.id, secret)}/velopack/deskapp`;
    const expected = await filesOf(join(work, `src-${VERSIONS.length - 1}`));

    /** A stand-in installed app at version `index`, its full package in `packages/` or not. */
    const install = async (name: string, index: number, withPackage: boolean) => {
      const root = join(work, name);
      await writeFiles(join(root, "current"), { "sq.version": nuspec(VERSIONS[index]) });
      await Deno.mkdir(join(root, "packages"), { recursive: true });
      if (withPackage) {
        await Deno.writeFile(
          join(root, "packages", `DeskApp-${VERSIONS[index]}-full.nupkg`),
          packages[index],
        );
      }
      await Deno.writeTextFile(join(root, "packages", ".betaId"), `install-${name}`);
      return {
        root,
        locator: {
          RootAppDir: root,
          UpdateExePath: STANDIN,
          PackagesDir: join(root, "packages"),
          ManifestPath: join(root, "current", "sq.version"),
          CurrentBinaryDir: join(root, "current"),
          IsPortable: true,
        },
      };
    };
    /** The files of the package the client left for `latest` in `root`'s packages. */
    const downloaded = async (root: string) => {
      const names = [];
      for await (const entry of Deno.readDir(join(root, "packages"))) names.push(entry.name);
      const full = names.filter((n) => n.endsWith("-full.nupkg"));
      assert.deepEqual(full, [`DeskApp-1.0.6-r${latest.id}-full.nupkg`]);
      const out = join(root, "unpacked");
      await unzipTo(join(root, "packages", full[0]), out);
      return await filesOf(out);
    };
    const assertSameFiles = (actual: Map<string, Uint8Array>) => {
      assert.deepEqual([...actual.keys()].sort(), [...expected.keys()].sort());
      for (const [name, bytes] of expected) assert.deepEqual(actual.get(name), bytes, name);
    };

    await t.step("a fresh install (no local package) downloads the full package", async () => {
      proxy.bytes.clear();
      const app0 = await install("fresh", 0, false);
      const result = await runVelopackClient(moduleDir, { url: feedUrl, locator: app0.locator });
      assert.deepEqual(result.error, undefined, result.log.join("\n"));
      assert.deepEqual((result.update?.TargetFullRelease as { Version: string }).Version, "1.0.6");
      assert.ok(result.log.join("\n").includes("no local/base package"), result.log.join("\n"));
      assert.deepEqual(
        proxy.bytes.get(`DeskApp-1.0.6-r${latest.id}-full.nupkg`),
        latest.size_bytes,
      );
      assertSameFiles(await downloaded(app0.root));
    });

    await t.step("the client before deltas (0.0.1053) takes the full package too", async () => {
      proxy.bytes.clear();
      const old = await installVelopack(VELOPACK_NPM_BEFORE_DELTAS);
      const installed = await install("before-deltas", VERSIONS.length - 2, true);
      const result = await runVelopackClient(old, { url: feedUrl, locator: installed.locator });
      assert.deepEqual(result.error, undefined, result.log.join("\n"));
      assert.equal(proxy.bytes.get(`DeskApp-1.0.6-r${latest.id}-full.nupkg`), latest.size_bytes);
      assertSameFiles(await downloaded(installed.root));
    });

    for (const behind of [1, 5]) {
      await t.step(`${behind} version(s) behind: one delta, applied byte for byte`, async () => {
        proxy.bytes.clear();
        const index = VERSIONS.length - 1 - behind;
        const installed = await install(`behind-${behind}`, index, true);
        const result = await runVelopackClient(moduleDir, {
          url: feedUrl,
          locator: installed.locator,
        });
        const log = result.log.join("\n");
        assert.deepEqual(result.error, undefined, log);
        assert.ok(log.includes(`Found 1 delta updates between ${VERSIONS[index]} and 1.0.6.`), log);
        assert.ok(log.includes("Successfully applied delta updates."), log);
        const delta = deltas.find((d) => d.from_release_id === releases[index].id)!;
        const deltaName = `DeskApp-1.0.6-r${latest.id}-from-r${releases[index].id}-delta.nupkg`;
        assert.deepEqual(proxy.bytes.get(deltaName), delta.size_bytes);
        // Only the feed and the delta went over the wire: no full package.
        assert.deepEqual(proxy.bytes.get(`DeskApp-1.0.6-r${latest.id}-full.nupkg`), undefined);
        assert(delta.size_bytes < latest.size_bytes / 20, `delta ${delta.size_bytes} bytes`);
        assertSameFiles(await downloaded(installed.root));
      });
    }

    await t.step("a corrupt base package: the client falls back to the full package", async () => {
      proxy.bytes.clear();
      const index = VERSIONS.length - 2;
      const installed = await install("corrupt", index, true);
      // The base's binary changed under the same name and size: its manifest still reads.
      const dir = join(work, "corrupt-src");
      const files = appFiles(index);
      files["lib/app/DeskApp"] = noise(BINARY_BYTES, 99);
      await writeFiles(dir, files);
      const base = join(installed.root, "packages", `DeskApp-${VERSIONS[index]}-full.nupkg`);
      await Deno.remove(base);
      await zipDir(dir, base);
      const result = await runVelopackClient(moduleDir, {
        url: feedUrl,
        locator: installed.locator,
      });
      const log = result.log.join("\n");
      assert.deepEqual(result.error, undefined, log);
      assert.ok(log.includes("Found 1 delta updates"), log);
      assert.ok(log.includes("Falling back to full update..."), log);
      assert.deepEqual(
        proxy.bytes.get(`DeskApp-1.0.6-r${latest.id}-full.nupkg`),
        latest.size_bytes,
      );
      assertSameFiles(await downloaded(installed.root));
    });
  } finally {
    await proxy.server.shutdown();
    await server.shutdown();
    await Deno.remove(work, { recursive: true });
  }
});
