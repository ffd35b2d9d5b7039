/**
 * Rules of the house that no linter checks (docs/architecture.md, "House
 * rules"): no benchmark switch in production code, no mutable state at module
 * level (it lives in the factory that owns it), no function declaration
 * with more than three parameters (they take an options object), nothing
 * of Hono but its public API, one map from errors to HTTP statuses that
 * every surface answers from, no state kept per KV handle (it belongs to the
 * store object, src/kv/store.ts) and no ambient request context in the
 * store (an audit entry travels with the store a write goes through), and no
 * barrel of records (a consumer imports the records' module it uses), and admin
 * route handlers get no store but the request's (so an audited write cannot
 * be forgotten). That nothing
 * under `src/` imports `admin/` is checked by tests/layering_test.ts.
 */
import assert from "node:assert/strict";
import { dirname, join, resolve } from "node:path";
import { sourceFiles } from "./source_files.ts";

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");

async function production(): Promise<Array<{ file: string; source: string }>> {
  const files = ["main.ts", "app.ts", ...await sourceFiles("src"), ...await sourceFiles("admin")];
  return await Promise.all(
    files.map(async (file) => ({ file, source: await Deno.readTextFile(join(ROOT, file)) })),
  );
}

/**
 * The stored records (src/releases/types.ts, src/credentials/types.ts) that
 * are never changed in place: a changed one is a new object. A module-level
 * `WeakMap` or `WeakSet` keyed by one of them is a memo of what that record
 * determines.
 */
const IMMUTABLE_RECORDS: ReadonlySet<string> = new Set(["ApiKey", "Release"]);

/**
 * Top-level declarations that hold mutable state: `let`/`var`, a `Map` or
 * `Set` made at module level unless typed read-only (a constant table), and a
 * `WeakMap` or `WeakSet` made at module level unless keyed by an immutable
 * record (IMMUTABLE_RECORDS; an untyped one is state too).
 */
export function moduleState(source: string): string[] {
  const found: string[] = [];
  for (const line of source.split("\n")) {
    if (/^(export\s+)?(let|var)\s/.test(line)) found.push(line.trim());
    const made = /^(export\s+)?const\s+\w+\s*(:\s*([^=]+))?=\s*new\s+(Map|Set)\b/.exec(line);
    if (made && !/^Readonly(Map|Set)\b/.test((made[3] ?? "").trim())) found.push(line.trim());
    const weak =
      /^(export\s+)?const\s+\w+\s*(:\s*Weak(?:Map|Set)\s*<\s*([\w.]+))?[^=]*=\s*new\s+Weak(Map|Set)\b\s*(<\s*([\w.]+))?/
        .exec(line);
    if (weak && !IMMUTABLE_RECORDS.has(weak[6] ?? weak[3] ?? "")) found.push(line.trim());
  }
  return found;
}

/** `function` declarations with more than three parameters, by name. */
export function longParameterLists(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/\bfunction\*?\s+(\w+)\s*(<[^(]*>)?\s*\(/g)) {
    let depth = 1;
    let i = match.index! + match[0].length;
    let params = "";
    for (; i < source.length && depth > 0; i++) {
      const ch = source[i];
      if ("([{<".includes(ch)) depth++;
      else if (")]}>".includes(ch) && !(ch === ">" && source[i - 1] === "=")) depth--;
      if (depth > 0) params += ch;
    }
    const topLevel = params.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "").split(",")
      .filter((part) => part.trim() !== "");
    // Commas inside nested brackets were kept in `params`; count only depth-0 ones.
    let count = 0;
    let nested = 0;
    let sawParam = false;
    let previous = "";
    for (const ch of params.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "")) {
      if ("([{<".includes(ch)) nested++;
      // The `>` of an arrow (`(x: T) => U`) closes nothing.
      else if (")]}>".includes(ch) && !(ch === ">" && previous === "=")) nested--;
      else if (ch === "," && nested === 0) count++;
      if (!/\s/.test(ch)) sawParam = true;
      previous = ch;
    }
    const trailing = /,\s*$/.test(params.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ""));
    const parameters = sawParam ? count + 1 - (trailing ? 1 : 0) : 0;
    if (parameters > 3 && topLevel.length > 0) found.push(`${match[1]} (${parameters})`);
  }
  return found;
}

/**
 * The `hono/…` subpaths under `utils/` that are public: Hono's package exports
 * `./utils/*` as a whole, but names only these: `./utils/jwt` as an export of
 * its own, and the status code types its documentation imports. The rest are
 * its internals.
 */
const PUBLIC_HONO_UTILS: ReadonlySet<string> = new Set(["utils/http-status", "utils/jwt"]);

/**
 * Uses of Hono's internals: an import of its build output (`hono/dist/…`), of
 * a `utils/` module outside PUBLIC_HONO_UTILS, or the `COMPOSED_HANDLER`
 * marker it puts on the handlers it wraps. An upgrade may change any of them
 * without notice.
 */
export function honoInternals(source: string): string[] {
  const found: string[] = [];
  const imports = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;
  for (const [, specifier] of source.matchAll(imports)) {
    const subpath = /^(?:npm:\/?)?hono(?:@[^/]+)?\/(.+)$/.exec(specifier)?.[1];
    if (subpath === undefined) continue;
    const internal = subpath.startsWith("dist/") ||
      (subpath.startsWith("utils/") && !PUBLIC_HONO_UTILS.has(subpath));
    if (internal) found.push(specifier);
  }
  if (/\bCOMPOSED_HANDLER\b/.test(source)) found.push("COMPOSED_HANDLER");
  return found;
}

/**
 * State kept per KV handle: a `WeakMap` or `WeakSet` keyed by `Deno.Kv`.
 * What a process keeps beside its KV lives in the store object (store.ts).
 */
export function kvKeyedState(source: string): string[] {
  return [...source.matchAll(/\bWeak(?:Map|Set)\s*<\s*(?:Deno\.)?Kv\b[^>]*>/g)].map(([use]) => use);
}

/**
 * An ambient request context: `AsyncLocalStorage` (or its module). In the
 * store, what a write carries (its audit entry) is passed with it.
 */
export function ambientContext(source: string): string[] {
  return [...source.matchAll(/\bAsyncLocalStorage\b|["'](?:node:)?async_hooks["']/g)]
    .map(([use]) => use);
}

/** The classes (and `isClientGone`) `source` tells errors apart by, in order of first use. */
export function errorTests(source: string): string[] {
  const found = [...source.matchAll(/\binstanceof\s+(\w+)|\b(isClientGone)\(/g)]
    .map((match) => match[1] ?? match[2]);
  return [...new Set(found)];
}

/**
 * Where an admin route handler could reach a store other than the request's
 * (`c.var.store`, whose commits carry the request's audit entry): a route or
 * view module that names `ServiceDeps` (the deps with their store) instead of
 * `RouteDeps`, or admin/mod.ts handing a route module the whole `deps`.
 */
export function storeBesideRequest(file: string, source: string): string[] {
  if (/^admin\/(routes|views)\//.test(file)) {
    return [...source.matchAll(/\bServiceDeps\b/g)].map(() => `${file}: ServiceDeps`);
  }
  if (file === "admin/mod.ts") {
    return [...source.matchAll(/\b(add\w+Routes)\(\w+, deps\b/g)].map(([, name]) =>
      `${file}: ${name} gets deps`
    );
  }
  return [];
}

/** The files that answer HTTP requests: there an error gets its status. */
function answersHttp(file: string): boolean {
  return file === "app.ts" || /^(src\/(client_api|http|publishing\/api)|admin)\//.test(file);
}

/** The one domain-error → status map, and the error handlers of the surfaces that answer from it. */
const ERROR_MAP = "src/http/errors.ts";
const ERROR_HANDLERS = [
  "src/client_api/surface.ts",
  "src/publishing/api/errors.ts",
  "admin/errors.tsx",
  "admin/routes/upload.tsx",
];

Deno.test("house rules of production code", async (t) => {
  const files = await production();

  await t.step("no production module names a benchmark switch", () => {
    const wrong = files.filter(({ source }) =>
      /\bbenchOff\b|APP_BENCH_OFF|BENCH_LAYERS/.test(source)
    )
      .map(({ file }) => file);
    assert.deepEqual(wrong, []);
  });

  await t.step("no mutable state at module level in src/ and admin/", () => {
    const wrong = files.filter(({ file }) => file.startsWith("src/") || file.startsWith("admin/"))
      .flatMap(({ file, source }) => moduleState(source).map((line) => `${file}: ${line}`));
    assert.deepEqual(wrong, []);
  });

  await t.step(
    "one map gives errors their status (src/http/errors.ts), every surface uses it",
    () => {
      const map = files.find(({ file }) => file === ERROR_MAP)!;
      const mapped = errorTests(map.source);
      assert.ok(mapped.length > 10, mapped.join(", "));
      // Telling three of the mapped errors apart in one file is a second map.
      const wrong = files.filter(({ file }) => file !== ERROR_MAP && answersHttp(file))
        .map(({ file, source }) => ({
          file,
          told: errorTests(source).filter((name) => mapped.includes(name)),
        }))
        .filter(({ told }) => told.length >= 3)
        .map(({ file, told }) => `${file}: ${told.join(", ")}`);
      assert.deepEqual(wrong, []);
      for (const handler of ERROR_HANDLERS) {
        const source = files.find(({ file }) => file === handler)?.source ?? "";
        assert.match(source, /\bmapDomainError\(/, `${handler} answers from the map`);
      }
    },
  );

  await t.step("functions take at most three parameters (then an options object)", () => {
    const wrong = files.flatMap(({ file, source }) =>
      longParameterLists(source).map((name) => `${file}: ${name}`)
    );
    assert.deepEqual(wrong, []);
  });

  await t.step("only Hono's public API: no import of its internals, no internal marker", () => {
    const wrong = files.flatMap(({ file, source }) =>
      honoInternals(source).map((use) => `${file}: ${use}`)
    );
    assert.deepEqual(wrong, []);
  });

  await t.step("no state kept per KV handle: no WeakMap keyed by Deno.Kv", () => {
    const wrong = files.flatMap(({ file, source }) =>
      kvKeyedState(source).map((use) => `${file}: ${use}`)
    );
    assert.deepEqual(wrong, []);
  });

  await t.step("no barrel of records: each import names the module it uses", async () => {
    const floors = "kv|projects|artifact_records|webhooks|releases";
    const barrel = new RegExp(`["'][./]*(?:src\\/)?(?:${floors})\\/mod\\.ts["']`);
    const wrong = files.filter(({ source }) => barrel.test(source)).map(({ file }) => file);
    assert.deepEqual(wrong, []);
    for (const floor of floors.split("|")) {
      const path = join(ROOT, "src", floor, "mod.ts");
      assert.equal(await Deno.stat(path).then(() => true, () => false), false, path);
    }
  });

  await t.step("admin handlers get only the request's store (RouteDeps, c.var.store)", () => {
    const wrong = files.flatMap(({ file, source }) => storeBesideRequest(file, source));
    assert.deepEqual(wrong, []);
  });

  await t.step("no AsyncLocalStorage in the floors of records", () => {
    const floors = /^src\/(kv|projects|artifact_records|webhooks|releases)\//;
    const wrong = files.filter(({ file }) => floors.test(file))
      .flatMap(({ file, source }) => ambientContext(source).map((use) => `${file}: ${use}`));
    assert.deepEqual(wrong, []);
  });
});

Deno.test("the house-rule checks find what they look for", () => {
  assert.deepEqual(
    errorTests(
      "if (e instanceof A) x;\nif (e instanceof B || isClientGone(e)) y;\nif (f instanceof A) z;\n",
    ),
    ["A", "B", "isClientGone"],
  );
  assert.deepEqual(moduleState("let n = 0;\nconst m = new Map<string, number>();\n"), [
    "let n = 0;",
    "const m = new Map<string, number>();",
  ]);
  assert.deepEqual(
    moduleState(
      "const T: ReadonlySet<string> = new Set([]);\nfunction f() {\n  let x = 1;\n}\n" +
        "const w = new WeakMap<Release, string>();\nconst k: WeakMap<ApiKey, string> = new WeakMap();\n" +
        "function g() {\n  const local = new WeakMap<object, string>();\n}\n",
    ),
    [],
  );
  assert.deepEqual(
    moduleState(
      "const a = new WeakMap<ReadableStream<Uint8Array>, () => boolean>();\n" +
        "const b: WeakMap<object, string> = new WeakMap();\nconst c = new WeakSet();\n",
    ),
    [
      "const a = new WeakMap<ReadableStream<Uint8Array>, () => boolean>();",
      "const b: WeakMap<object, string> = new WeakMap();",
      "const c = new WeakSet();",
    ],
  );
  assert.deepEqual(
    longParameterLists(
      "function a(x: number, y: Map<string, number>, z = () => 1) {}\n" +
        "export async function b(\n  c: Context,\n  d: { e: string; f: number },\n  g: string,\n  h = 2,\n): Promise<void> {}\n" +
        "function k(opts: { a: number; b: number; c: number; d: number }) {}\n" +
        'function m<T>(a: T[], f: (x: T) => string, g: string, h = "") {}\n',
    ),
    ["b (4)", "m (4)"],
  );
  assert.deepEqual(
    honoInternals(
      'import { Hono } from "hono";\nimport type { ContentfulStatusCode } from "hono/utils/http-status";\n' +
        'import { COMPOSED_HANDLER } from "hono/utils/constants";\n' +
        'const m = await import("hono/dist/hono-base.js");\n' +
        'import { x } from "npm:hono@4.13.19/dist/utils/url.js";\nimport { csrf } from "hono/csrf";\n',
    ),
    [
      "hono/utils/constants",
      "hono/dist/hono-base.js",
      "npm:hono@4.13.19/dist/utils/url.js",
      "COMPOSED_HANDLER",
    ],
  );
  assert.deepEqual(
    kvKeyedState(
      "const caches = new WeakMap<Deno.Kv, ReadCache>();\n" +
        "const handles: WeakMap<Kv, State> = new WeakMap();\n" +
        "const memo = new WeakMap<ApiKey, string>();\n",
    ),
    ["WeakMap<Deno.Kv, ReadCache>", "WeakMap<Kv, State>"],
  );
  assert.deepEqual(
    ambientContext(
      'import { AsyncLocalStorage } from "node:async_hooks";\n' +
        "const requests = new AsyncLocalStorage<Pending>();\nconst store = createStore(kv);\n",
    ),
    ["AsyncLocalStorage", '"node:async_hooks"', "AsyncLocalStorage"],
  );
  assert.deepEqual(
    storeBesideRequest(
      "admin/routes/x.tsx",
      'import type { ServiceDeps } from "../types.ts";\nfunction f(deps: ServiceDeps) {}\n',
    ),
    ["admin/routes/x.tsx: ServiceDeps", "admin/routes/x.tsx: ServiceDeps"],
  );
  assert.deepEqual(
    storeBesideRequest(
      "admin/mod.ts",
      "addProjectRoutes(gated, deps);\naddTufRoutes(gated, routes);\n",
    ),
    ["admin/mod.ts: addProjectRoutes gets deps"],
  );
  assert.deepEqual(storeBesideRequest("admin/guards.ts", "function g(deps: ServiceDeps) {}"), []);
});
