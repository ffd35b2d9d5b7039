/**
 * The layering rules of docs/architecture.md, checked on the import lines of
 * every source file: each import points down (or stays in its own layer), the
 * surfaces (`src/client_api/`, `src/publishing/api/`, `admin/`) never import each
 * other, nothing under `src/`
 * imports `admin/`, and the reference client imports nothing of the service.
 */
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { sourceFiles } from "./source_files.ts";

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");

/** Layers from the top; a file may import its own layer or any layer below it. */
const LAYERS: Array<{ name: string; rank: number; owns: (path: string) => boolean }> = [
  { name: "main.ts", rank: 7, owns: (p) => p === "main.ts" },
  { name: "app.ts", rank: 6, owns: (p) => p === "app.ts" },
  { name: "src/client_api", rank: 5, owns: (p) => p.startsWith("src/client_api/") },
  { name: "admin", rank: 5, owns: (p) => p.startsWith("admin/") },
  { name: "src/backup", rank: 5, owns: (p) => p.startsWith("src/backup/") },
  // The publishing API's routes: a surface, above the publishing rules beside it.
  { name: "src/publishing/api", rank: 5, owns: isPublishingApi },
  // HTTP pieces the surfaces share, and the parts an app is made of: above
  // the features they put together.
  { name: "src/http", rank: 4.5, owns: (p) => p.startsWith("src/http/") },
  // A feature (rollouts/, credentials/, reports/,
  // sso/, stats/ …) gets a folder of its own under src/: its records and
  // rules and background work, below the surfaces that route to it; it
  // reaches the KV through the ground floor (src/kv/)
  { name: "src/<capability>", rank: 4, owns: isCapability },
  { name: "src/storage", rank: 3, owns: (p) => p.startsWith("src/storage/") },
  // Releases' records and the one offer rule (which release a client gets
  // and why): what storage publishes into and every feature reads.
  { name: "src/releases", rank: 2.5, owns: (p) => p.startsWith("src/releases/") },
  // Webhooks: the outbox (endpoints, deliveries, the events a change commits
  // with) and its delivery; releases, rollouts and credentials commit their
  // events in their own commits, so it sits below them.
  { name: "src/webhooks", rank: 2.25, owns: (p) => p.startsWith("src/webhooks/") },
  // The records of the files that go with a release's artifact (block maps,
  // Sparkle, Squirrel and Velopack deltas, patches): storage makes them at
  // upload and the releases' deletes take them along.
  {
    name: "src/artifact_records",
    rank: 2.25,
    owns: (p) => p.startsWith("src/artifact_records/"),
  },
  // Projects (their record, Project), the counts kept with them
  // (aggregates) and the contract's field rules: the lowest floor of a rule.
  { name: "src/projects", rank: 2, owns: (p) => p.startsWith("src/projects/") },
  // The ground floor of the KV: its plumbing (key registry, checked atomic
  // writes, read cache, id blocks, paging, leases), with no rule of a feature.
  { name: "src/kv", rank: 1.5, owns: (p) => p.startsWith("src/kv/") },
  { name: "src/lib", rank: 1, owns: (p) => p.startsWith("src/lib/") },
];

/** The folders under src/ that are layers of their own; any other is a capability's. */
const LAYER_FOLDERS = [
  "client_api",
  "backup",
  "http",
  "storage",
  "releases",
  "webhooks",
  "artifact_records",
  "projects",
  "kv",
  "lib",
];

/**
 * Folder names that say no feature: a folder so named gathers the records
 * and rules of many features, where each belongs in its feature's folder or
 * on a floor of the table.
 */
const FEATURELESS_NAMES = [
  "store",
  "shared",
  "common",
  "utils",
  "helpers",
  "models",
  "types",
  "misc",
];

/** The folders of `folders` (under src/) named for no feature. */
export function featurelessFolders(folders: readonly string[]): string[] {
  return folders.filter((folder) => FEATURELESS_NAMES.includes(folder));
}

function isCapability(path: string): boolean {
  const folder = /^src\/([^/]+)\//.exec(path)?.[1];
  return folder !== undefined && !LAYER_FOLDERS.includes(folder) && !isPublishingApi(path);
}

function isPublishingApi(path: string): boolean {
  return path.startsWith("src/publishing/api/");
}

/** The surfaces: they answer requests and call the features, never the KV. */
function isSurface(path: string): boolean {
  return ["main.ts", "app.ts"].includes(path) ||
    /^(admin|src\/(client_api|http|backup|publishing\/api))\//.test(path);
}

/**
 * KV access outside the ground floor: a key written as a literal (keys come
 * from the key registry, src/kv/keys.ts), or, in a surface, any KV call.
 */
export function kvAccessOutsideFloor(file: string, source: string): string[] {
  if (file.startsWith("src/kv/")) return [];
  const found: string[] = [];
  if (/\.(get|getMany|set|delete|list|sum|check)\(\s*(\{\s*prefix:\s*)?\[\s*["'`]/.test(source)) {
    found.push(`${file}: a literal KV key (keys come from src/kv/keys.ts)`);
  }
  if (isSurface(file) && /\.atomic\(\)|\bkv\.(get|getMany|set|list|delete|watch)\(/.test(source)) {
    found.push(`${file}: KV access in a surface (belongs in a feature)`);
  }
  return found;
}

/** The circles of a graph of local imports, each as its files in order, smallest first. */
export function circles(edges: Array<{ from: string; to: string; local: boolean }>): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to, local } of edges) {
    if (local) next.set(from, [...next.get(from) ?? [], to]);
  }
  const found: string[][] = [];
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const to of next.get(file) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(file, Math.min(low.get(file)!, index.get(to)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1) found.push(group.sort());
  };
  for (const file of next.keys()) if (!index.has(file)) visit(file);
  return found.sort((a, b) => a.length - b.length || a[0].localeCompare(b[0]));
}

/** Files that are data, not code: any layer may read them. */
function isData(path: string): boolean {
  return path.startsWith("docs/") && path.endsWith(".json");
}

function layerOf(path: string) {
  return LAYERS.find((layer) => layer.owns(path));
}

/** The specifiers of a file's static and dynamic imports and re-exports. */
export function importsOf(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;
  for (const match of source.matchAll(pattern)) found.push(match[1]);
  return found;
}

interface Edge {
  from: string;
  /** A relative import as a path from the repository root, a package as its specifier. */
  to: string;
  local: boolean;
}

async function importEdges(files: string[]): Promise<Edge[]> {
  const edges: Edge[] = [];
  for (const from of files) {
    for (const specifier of importsOf(await Deno.readTextFile(join(ROOT, from)))) {
      const local = specifier.startsWith(".");
      const to = local ? relative(ROOT, resolve(ROOT, dirname(from), specifier)) : specifier;
      edges.push({ from, to, local });
    }
  }
  return edges;
}

Deno.test("imports follow the layers of docs/architecture.md", async (t) => {
  const service = [
    "main.ts",
    "app.ts",
    ...await sourceFiles("src"),
    ...await sourceFiles("admin"),
  ];
  const edges = await importEdges(service);

  await t.step("the walk saw the service", () => {
    assert.ok(service.length > 60, `${service.length} files`);
    assert.ok(edges.some(({ from, to }) => from === "app.ts" && to === "admin/mod.ts"));
    assert.ok(
      edges.some(({ from, to }) => from === "app.ts" && to === "src/publishing/api/mod.ts"),
    );
    for (const file of service) assert.ok(layerOf(file), `${file} belongs to a layer`);
  });

  await t.step("every relative import points down or stays in its layer", () => {
    const wrong: string[] = [];
    for (const { from, to, local } of edges) {
      if (!local || isData(to)) continue;
      const source = layerOf(from)!;
      const target = layerOf(to);
      if (target === undefined) wrong.push(`${from} -> ${to} (outside the layers)`);
      else if (target.rank > source.rank) wrong.push(`${from} -> ${to} (up)`);
      else if (target.rank === source.rank && target !== source) {
        wrong.push(`${from} -> ${to} (across)`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  await t.step("KV access goes through the ground floor (src/kv/)", async () => {
    assert.ok(isCapability("src/credentials/tokens.ts") && !isCapability("src/kv/keys.ts"));
    assert.ok(!isCapability("src/publishing/api/mod.ts"));
    const wrong: string[] = [];
    for (const file of service) {
      const source = await Deno.readTextFile(join(ROOT, file));
      wrong.push(...kvAccessOutsideFloor(file, source));
      if (isCapability(file) && /\bnew Hono\b/.test(source)) {
        wrong.push(`${file}: routes (belong in a surface)`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  await t.step("no circle between modules of src/ and admin/", () => {
    assert.deepEqual(circles(edges), []);
  });

  await t.step("each folder of src/ is a floor or a feature's (no src/store/)", async () => {
    const folders: string[] = [];
    for await (const entry of Deno.readDir(join(ROOT, "src"))) {
      if (entry.isDirectory) folders.push(entry.name);
    }
    assert.deepEqual(featurelessFolders(folders), []);
    assert.deepEqual(LAYER_FOLDERS.filter((floor) => !folders.includes(floor)), []);
  });

  await t.step("nothing under src/ imports admin/", () => {
    const wrong = edges.filter(({ from, to }) =>
      from.startsWith("src/") && to.startsWith("admin/")
    );
    assert.deepEqual(wrong, []);
  });

  await t.step("packages come from npm: or node: (no JSR, no URLs)", () => {
    const wrong = edges.filter(({ to, local }) => !local && /^(jsr:|https?:|@std\/)/.test(to));
    assert.deepEqual(wrong, []);
  });
});

Deno.test("the reference client imports nothing of the service", async () => {
  const edges = await importEdges(await sourceFiles("client"));
  assert.ok(edges.length > 0);
  const wrong = edges.filter(({ to, local }) =>
    local ? !to.startsWith("client/") : !/^(node:|npm:)/.test(to)
  );
  assert.deepEqual(wrong, []);
});

Deno.test("importsOf reads every import form", () => {
  const source = [
    'import { a } from "./a.ts";',
    "import {",
    "  b,",
    '} from "../b.ts";',
    'import type { C } from "./c.ts";',
    'export { d } from "./d.ts";',
    'import "./e.ts";',
    'const f = await import("./f.ts");',
    '// "from" in a comment: "not an import"',
  ].join("\n");
  assert.deepEqual(importsOf(source), [
    "./a.ts",
    "../b.ts",
    "./c.ts",
    "./d.ts",
    "./e.ts",
    "./f.ts",
  ]);
});

Deno.test("the layering checks find what they look for", () => {
  const edge = (from: string, to: string) => ({ from, to, local: true });
  assert.deepEqual(
    circles([
      edge("src/a.ts", "src/b.ts"),
      edge("src/b.ts", "src/a.ts"),
      edge("src/c.ts", "src/d.ts"),
      edge("src/d.ts", "src/e.ts"),
      edge("src/e.ts", "src/c.ts"),
      edge("src/e.ts", "src/f.ts"),
    ]),
    [["src/a.ts", "src/b.ts"], ["src/c.ts", "src/d.ts", "src/e.ts"]],
  );
  assert.deepEqual(
    kvAccessOutsideFloor("src/reports/x.ts", 'await kv.get(["reports", 1]);'),
    ["src/reports/x.ts: a literal KV key (keys come from src/kv/keys.ts)"],
  );
  assert.deepEqual(
    kvAccessOutsideFloor("admin/routes/x.tsx", "await store.kv.get(projectKey(1));"),
    ["admin/routes/x.tsx: KV access in a surface (belongs in a feature)"],
  );
  assert.deepEqual(kvAccessOutsideFloor("src/kv/keys.ts", 'kv.get(["x"])'), []);
  assert.deepEqual(featurelessFolders(["kv", "store", "releases", "common"]), ["store", "common"]);
  assert.deepEqual(kvAccessOutsideFloor("src/reports/x.ts", "kv.get(reportKey(1))"), []);
});
