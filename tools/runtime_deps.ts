/**
 * Image build step (Dockerfile): trims deno.json and deno.lock to the npm packages that the given
 * entry points reach, and removes every other package from $DENO_DIR's npm cache.
 *
 *   deno run --allow-read --allow-write=deno.json,deno.lock,$DENO_DIR --allow-run=deno \
 *     --allow-env=DENO_DIR tools/runtime_deps.ts main.ts tools/backup.ts …
 *
 * Deno fetches every package of the lockfile at start, not only the imported ones, so test and
 * benchmark packages (playwright-core, ajv, yaml, …) would otherwise ship in the image. The
 * trimmed lockfile is the committed one minus entries, with the same versions and integrity
 * hashes: the `deno cache --frozen --cached-only` that follows still enforces it.
 * Run it after `deno cache --frozen` of the same entry points (it reads `deno info --json`).
 */
import { join } from "node:path";

type Info = {
  modules: { npmPackage?: string }[];
  npmPackages: Record<string, { name: string; version: string; dependencies?: string[] }>;
};
type Lock = {
  specifiers: Record<string, string>;
  npm: Record<string, unknown>;
  workspace?: { dependencies?: string[] };
};

/** `deno info --json` of each entry point (it takes one), merged. */
async function denoInfo(entries: string[]): Promise<Info> {
  const merged: Info = { modules: [], npmPackages: {} };
  for (const entry of entries) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--frozen", entry],
      stderr: "inherit",
    }).output();
    if (!output.success) throw new Error(`deno info ${entry} failed`);
    const info: Info = JSON.parse(new TextDecoder().decode(output.stdout));
    merged.modules.push(...info.modules);
    Object.assign(merged.npmPackages, info.npmPackages);
  }
  return merged;
}

/** Every npm package id (name@version…) the entry points import, with its dependencies. */
function reachable(info: Info): Set<string> {
  const keep = new Set<string>();
  const todo = info.modules.flatMap((m) => m.npmPackage ? [m.npmPackage] : []);
  while (todo.length > 0) {
    const id = todo.pop()!;
    if (keep.has(id)) continue;
    keep.add(id);
    todo.push(...(info.npmPackages[id]?.dependencies ?? []));
  }
  return keep;
}

/** "npm:@scope/name@1.2.3" -> "@scope/name" */
function specifierName(specifier: string): string {
  const bare = specifier.replace(/^npm:\/?/, "");
  return bare.slice(0, bare.indexOf("@", 1));
}

async function trimConfigAndLock(keep: Set<string>): Promise<string[]> {
  const lock: Lock = JSON.parse(await Deno.readTextFile("deno.lock"));
  const kept = Object.entries(lock.specifiers).filter(([specifier, version]) =>
    keep.has(`${specifierName(specifier)}@${version}`)
  ).map(([specifier]) => specifier);
  const keptNames = new Set(kept.map(specifierName));
  const dropped = Object.keys(lock.specifiers).filter((s) => !kept.includes(s));
  lock.specifiers = Object.fromEntries(kept.map((s) => [s, lock.specifiers[s]]));
  lock.npm = Object.fromEntries(Object.entries(lock.npm).filter(([id]) => keep.has(id)));
  if (lock.workspace?.dependencies) {
    lock.workspace.dependencies = lock.workspace.dependencies.filter((s) => kept.includes(s));
  }
  const config = JSON.parse(await Deno.readTextFile("deno.json"));
  config.imports = Object.fromEntries(
    Object.entries(config.imports as Record<string, string>).filter(([, target]) =>
      !target.startsWith("npm:") || keptNames.has(specifierName(target))
    ),
  );
  await Deno.writeTextFile("deno.json", JSON.stringify(config, null, 2) + "\n");
  await Deno.writeTextFile("deno.lock", JSON.stringify(lock, null, 2) + "\n");
  return dropped;
}

/** Removes $DENO_DIR/npm/<registry>/<name>/<version> of every package not kept. */
async function pruneCache(info: Info, keep: Set<string>): Promise<void> {
  const denoDir = Deno.env.get("DENO_DIR");
  if (!denoDir) throw new Error("DENO_DIR must be set");
  const registry = join(denoDir, "npm", "registry.npmjs.org");
  const keptNames = new Set([...keep].map((id) => info.npmPackages[id]?.name));
  for (const [id, pkg] of Object.entries(info.npmPackages)) {
    if (keep.has(id)) continue;
    const where = keptNames.has(pkg.name)
      ? join(registry, pkg.name, pkg.version)
      : join(registry, pkg.name);
    await Deno.remove(where, { recursive: true }).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }
}

async function main(entries: string[]): Promise<void> {
  if (entries.length === 0) throw new Error("usage: runtime_deps.ts ENTRY.ts…");
  const info = await denoInfo(entries);
  const keep = reachable(info);
  const dropped = await trimConfigAndLock(keep);
  await pruneCache(info, keep);
  console.log(
    `runtime npm packages: ${keep.size}; dropped imports: ${dropped.join(" ") || "none"}`,
  );
}

await main(Deno.args);
