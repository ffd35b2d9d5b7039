/**
 * docs/openapi.yaml is the contract of the client API. These tests keep it
 * honest: the served JSON equals the YAML, and real responses of every route
 * and every documented status validate against the document's schemas and
 * carry its required headers. Every documented (route, status) pair must be
 * exercised, so neither the document nor the code can drift alone.
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020";
import document from "../docs/openapi.json" with { type: "json" };
import { openApiFromYaml } from "../scripts/build_openapi.ts";
import { createApp } from "../app.ts";
import type { Config } from "../src/lib/config.ts";
import { setApiKeyActive } from "../src/credentials/api_keys.ts";
import { createStore, type Store } from "../src/kv/store.ts";
import { createTestApp, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";

type Json = Record<string, unknown>;
const doc = document as unknown as Json;
type Method = "get" | "head";
const paths = doc.paths as Record<
  string,
  Partial<Record<Method, { responses: Record<string, Json> }>>
>;

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addFormat("date-time", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
ajv.addSchema(doc, "openapi.json");
const validators = new Map<string, ReturnType<typeof ajv.compile>>();

function validatorAt(pointer: string) {
  let validate = validators.get(pointer);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `openapi.json#${pointer}` });
    validators.set(pointer, validate);
  }
  return validate;
}

const escape = (part: string) => part.replaceAll("~", "~0").replaceAll("/", "~1");

function resolve(pointer: string): Json {
  let node: unknown = doc;
  for (const part of pointer.split("/").slice(1)) {
    node = (node as Json)[part.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return node as Json;
}

/** Follows a `$ref` (if any): the object and its JSON pointer. */
function deref(node: Json, pointer: string): { node: Json; pointer: string } {
  if (typeof node.$ref === "string") {
    const target = node.$ref.slice(1);
    return { node: resolve(target), pointer: target };
  }
  return { node, pointer };
}

const covered = new Set<string>();

/**
 * Checks one real response against the document: status, headers, body
 * schema. A HEAD answer must have no body; a status its operation does not
 * list is checked against the operation's `default` response.
 */
async function conforms(route: string, res: Response, method: Method = "get"): Promise<void> {
  const operation = paths[route]?.[method];
  assert.ok(operation, `${method} ${route} is not documented`);
  const status = operation.responses[String(res.status)] ? String(res.status) : "default";
  assert.ok(
    operation.responses[status],
    `${method} ${route} answered ${res.status}, which is not documented`,
  );
  const response = deref(
    operation.responses[status],
    `/paths/${escape(route)}/${method}/responses/${status}`,
  );

  const headers = (response.node.headers ?? {}) as Record<string, Json>;
  for (const [name, raw] of Object.entries(headers)) {
    const header = deref(raw, `${response.pointer}/headers/${escape(name)}`);
    const value = res.headers.get(name);
    if (value === null) {
      assert.ok(!header.node.required, `${route} ${status}: missing header ${name}`);
      continue;
    }
    const validate = validatorAt(`${header.pointer}/schema`);
    assert.ok(validate(value), `${route} ${status}: header ${name}: ${value}`);
  }

  const content = response.node.content as Record<string, unknown> | undefined;
  if (method === "head") {
    assert.equal(content, undefined, `${route} ${status}: a HEAD answer has no content`);
    assert.equal((await res.arrayBuffer()).byteLength, 0, `HEAD ${route} ${status}: a body`);
  } else if (content?.["application/json"]) {
    assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
    const body = await res.json();
    const validate = validatorAt(`${response.pointer}/content/application~1json/schema`);
    assert.ok(
      validate(body),
      `${route} ${status}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(body)}`,
    );
  } else {
    assert.ok(content?.["*/*"], `${route} ${status}: no content documented`);
    await res.arrayBuffer();
  }
  covered.add(method === "get" ? `${route} ${status}` : `${method} ${route} ${status}`);
}

/** A KV whose reads fail for keys that `fails` picks (storage outage). */
function faultyKv(kv: Deno.Kv, fails: (key: Deno.KvKey) => boolean): Deno.Kv {
  const boom = () => {
    throw new Error("injected KV failure");
  };
  return new Proxy(kv, {
    get(target, property) {
      if (property === "get") {
        return (key: Deno.KvKey, ...rest: []) => fails(key) ? boom() : target.get(key, ...rest);
      }
      if (property === "getMany") {
        return (keys: Deno.KvKey[], ...rest: []) =>
          keys.some(fails) ? boom() : target.getMany(keys, ...rest);
      }
      if (property === "list") {
        return (selector: { prefix: Deno.KvKey }, ...rest: []) =>
          fails(selector.prefix) ? boom() : target.list(selector, ...rest);
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function appOn(t: TestApp, store: Store, overrides: Partial<Config> = {}) {
  const app = createApp({
    config: { ...t.config, ...overrides },
    store,
    artifacts: t.artifacts,
    rateLimitKv: t.rateLimitKv,
    recordKeyUse: () => {},
  });
  return (path: string, key?: string) =>
    Promise.resolve(app.request(path, key ? { headers: { authorization: `Bearer ${key}` } } : {}));
}

const LATEST = "/api/v1/projects/{projectSlug}/releases/latest";
const RELEASE = "/api/v1/releases/{releaseID}";
const DOWNLOAD = "/api/v1/releases/{releaseID}/download";

Deno.test("docs/openapi.json is docs/openapi.yaml (run `deno task openapi`)", async () => {
  const yaml = await Deno.readTextFile(new URL("../docs/openapi.yaml", import.meta.url));
  assert.deepEqual(openApiFromYaml(yaml), document);
});

Deno.test("the OpenAPI document", async (t) => {
  await using app = await createTestApp({ baseUrl: "https://updates.example.com" });
  const project = await seedProject(app, { slug: "desktop" });
  await seedProject(app, { slug: "empty" });
  const release = await seedRelease(app, project.id, "1.0.0", new Uint8Array(5000).fill(3), {
    build: "77",
    release_notes: "notes",
    content_type: "application/zip",
  });
  const missing = await seedRelease(app, project.id, "0.9.0");
  await Deno.remove(`${app.config.artifactsDir}/${missing.storage_key}`);
  const { secret } = await seedKey(app);
  const { secret: noDownload } = await seedKey(app, { can_download: false });
  const { apiKey: off, secret: disabled } = await seedKey(app);
  await setApiKeyActive(app.store, off.id, false);

  await t.step("served at /api/v1/openapi.json without a key, with this base URL", async () => {
    const res = await app.request("/api/v1/openapi.json");
    assert.equal(res.status, 200);
    const served = await res.clone().json();
    assert.deepEqual(served.servers, [
      { url: "https://updates.example.com", description: "this service (APP_BASE_URL)" },
    ]);
    assert.deepEqual({ ...served, servers: document.servers }, document);
    await conforms("/api/v1/openapi.json", res);
  });

  await t.step("it is a 3.1 document with the bearer scheme", () => {
    assert.equal(document.openapi, "3.1.0");
    assert.deepEqual(document.components.securitySchemes.apiKey, {
      ...document.components.securitySchemes.apiKey,
      type: "http",
      scheme: "bearer",
    });
  });

  await t.step("the index still lists exactly the four key routes", async () => {
    const res = await app.request("/api/v1");
    const index = await res.clone().json();
    assert.deepEqual(index.routes.map((r: { path: string }) => r.path), [
      "/api/v1/projects",
      LATEST,
      RELEASE,
      DOWNLOAD,
    ]);
    await conforms("/api/v1", res);
  });

  await t.step("public routes", async () => {
    await conforms("/healthz", await app.request("/healthz"));
  });

  await t.step("successes", async () => {
    await conforms("/api/v1/projects", await app.request("/api/v1/projects", secret));
    await conforms(LATEST, await app.request("/api/v1/projects/desktop/releases/latest", secret));
    await conforms(RELEASE, await app.request(`/api/v1/releases/${missing.id}`, secret));
    const res = await app.request(`/api/v1/releases/${release.id}/download`, secret);
    assert.equal(res.headers.get("content-length"), "5000");
    await conforms(DOWNLOAD, res);
  });

  await t.step("client errors of every route", async () => {
    const routes = {
      "/api/v1/projects": "/api/v1/projects",
      [LATEST]: "/api/v1/projects/desktop/releases/latest",
      [RELEASE]: `/api/v1/releases/${release.id}`,
      [DOWNLOAD]: `/api/v1/releases/${release.id}/download`,
    };
    for (const [route, path] of Object.entries(routes)) {
      await conforms(route, await app.request(path));
      await conforms(route, await app.request(path, "uds_unknown"));
      await conforms(route, await app.request(path, disabled));
      await conforms(route, await app.request(path, noDownload));
    }
    await conforms(LATEST, await app.request("/api/v1/projects/nope/releases/latest", secret));
    await conforms(LATEST, await app.request("/api/v1/projects/empty/releases/latest", secret));
    await conforms(RELEASE, await app.request("/api/v1/releases/abc", secret));
    await conforms(RELEASE, await app.request("/api/v1/releases/999999", secret));
    await conforms(DOWNLOAD, await app.request("/api/v1/releases/abc/download", secret));
    await conforms(DOWNLOAD, await app.request("/api/v1/releases/999999/download", secret));
    await conforms(DOWNLOAD, await app.request(`/api/v1/releases/${missing.id}/download`, secret));
  });

  await t.step("download extension: 206, 416 and HEAD", async () => {
    const path = `/api/v1/releases/${release.id}/download`;
    const ranged = (range: string, method = "GET", extra: Record<string, string> = {}) =>
      app.request(path, secret, { method, headers: { range, ...extra } });
    const etag = `"${release.checksum_sha256}"`;

    const partial = await ranged("bytes=100-", "GET", { "if-range": etag });
    assert.equal(partial.status, 206);
    assert.equal(partial.headers.get("content-range"), "bytes 100-4999/5000");
    assert.equal(partial.headers.get("content-length"), "4900");
    await conforms(DOWNLOAD, partial);

    const unsatisfiable = await ranged("bytes=5000-");
    assert.equal(unsatisfiable.status, 416);
    await conforms(DOWNLOAD, unsatisfiable);

    await conforms(DOWNLOAD, await app.request(path, secret, { method: "HEAD" }), "head");
    const headRanged = await ranged("bytes=-10", "HEAD");
    assert.equal(headRanged.status, 200, "HEAD ignores Range");
    await conforms(DOWNLOAD, headRanged, "head");
    const headMissing = await app.request(`/api/v1/releases/${missing.id}/download`, secret, {
      method: "HEAD",
    });
    assert.equal(headMissing.status, 404);
    await conforms(DOWNLOAD, headMissing, "head");
  });

  await t.step("429 on every key route", async () => {
    const limited = appOn(app, app.store, { rateLimitBurst: 1, rateLimitPerMinute: 1 });
    const { secret: once } = await seedKey(app);
    await (await limited("/api/v1/projects", once)).arrayBuffer();
    await conforms("/api/v1/projects", await limited("/api/v1/projects", once));
    await conforms(LATEST, await limited("/api/v1/projects/desktop/releases/latest", once));
    await conforms(RELEASE, await limited(`/api/v1/releases/${release.id}`, once));
    await conforms(DOWNLOAD, await limited(`/api/v1/releases/${release.id}/download`, once));
  });

  await t.step("storage failures: 500, 503", async () => {
    const quiet = console.error;
    console.error = () => {};
    try {
      const isKeyRecord = (key: Deno.KvKey) => String(key[0]).startsWith("api_key");
      const dataDown = appOn(app, createStore(faultyKv(app.kv, (key) => !isKeyRecord(key))));
      await conforms("/api/v1/projects", await dataDown("/api/v1/projects", secret));
      await conforms(LATEST, await dataDown("/api/v1/projects/desktop/releases/latest", secret));
      await conforms(RELEASE, await dataDown(`/api/v1/releases/${release.id}`, secret));
      await conforms(DOWNLOAD, await dataDown(`/api/v1/releases/${release.id}/download`, secret));

      const keysDown = appOn(app, createStore(faultyKv(app.kv, isKeyRecord)));
      await conforms("/api/v1/projects", await keysDown("/api/v1/projects", secret));
      await conforms(LATEST, await keysDown("/api/v1/projects/desktop/releases/latest", secret));
      await conforms(RELEASE, await keysDown(`/api/v1/releases/${release.id}`, secret));
      await conforms(DOWNLOAD, await keysDown(`/api/v1/releases/${release.id}/download`, secret));

      const allDown = appOn(app, createStore(faultyKv(app.kv, () => true)));
      await conforms("/healthz", await allDown("/healthz"));
    } finally {
      console.error = quiet;
    }
  });

  await t.step("every documented route and status was exercised", () => {
    const documented = Object.entries(paths).flatMap(([route, item]) => [
      ...Object.keys(item.get?.responses ?? {}).map((status) => `${route} ${status}`),
      ...Object.keys(item.head?.responses ?? {}).map((status) => `head ${route} ${status}`),
    ]);
    assert.deepEqual([...covered].sort(), documented.sort());
  });
});
