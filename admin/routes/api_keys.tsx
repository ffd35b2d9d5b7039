/** API keys: list, create (shown once), disable and enable. */
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { ID_PATTERN } from "../../src/lib/limits.ts";
import { keyReachesNothing, keyState, scopeAllows } from "../../src/store/access.ts";
import {
  type ApiKey,
  createApiKey,
  listApiKeys,
  listProjects,
  NotFoundError,
  type Project,
  setApiKeyActive,
  ValidationError,
} from "../../src/store/mod.ts";
import { type AdminContext, audit, pageContext, redirectWithFlash } from "../context.ts";
import { formErrorOf } from "../forms.ts";
import {
  type ApiKeyFormValues,
  apiKeyFormValues,
  apiKeyInput,
  EMPTY_KEY_FORM,
} from "../forms_api_key.ts";
import { listPage } from "../listing.ts";
import type { AdminEnv, FormError, ServiceDeps } from "../types.ts";
import { ApiKeyCreatedPage, KEY_PLACEHOLDER } from "../views/api_key_created.tsx";
import { type ApiKeyRow, ApiKeysPage } from "../views/api_keys.tsx";

export function addApiKeyRoutes(admin: Hono<AdminEnv>, deps: ServiceDeps): void {
  const { kv } = deps;

  async function renderKeysPage(
    c: AdminContext,
    values: ApiKeyFormValues,
    error?: FormError,
  ) {
    const [keys, projects] = await Promise.all([listApiKeys(kv), listProjects(kv)]);
    const newestFirst = [...keys].reverse();
    const list = listPage(
      newestFirst,
      error ? {} : c.req.query(),
      (key) => [key.name, key.prefix, String(key.id)],
      "/admin/api-keys",
      "#key-list",
    );
    const knownTags = [...new Set(projects.flatMap((project) => project.tags))].sort();
    const nowMs = Date.now();
    const rows: ApiKeyRow[] = list.rows.map((key) => ({
      key,
      state: keyState(key, nowMs),
      reachesNothing: keyReachesNothing(key),
    }));
    return c.html(
      <ApiKeysPage
        ctx={pageContext(c, deps)}
        list={{ ...list, rows }}
        total={keys.length}
        openForm={c.req.query("new") !== undefined}
        projects={projects}
        knownTags={knownTags}
        values={values}
        error={error}
      />,
      error ? 400 : 200,
    );
  }

  admin.get("/api-keys", (c) => renderKeysPage(c, EMPTY_KEY_FORM));

  admin.post("/api-keys", async (c) => {
    const values = apiKeyFormValues(c.get("form"));
    let created: { apiKey: ApiKey; secret: string };
    try {
      created = await createApiKey(kv, await apiKeyInput(kv, values));
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return await renderKeysPage(c, values, formErrorOf(error));
    }
    const { apiKey, secret } = created;
    await audit(c, deps, {
      action: "api_key.create",
      target: `api key ${apiKey.id}`,
      details:
        `name "${apiKey.name}"; prefix ${apiKey.prefix}; scope ${apiKey.scope_mode}; download ${
          apiKey.can_download ? "yes" : "no"
        }; expires ${apiKey.expires_at ?? "never"}`,
    });
    const projects = await listProjects(kv);
    return c.html(
      <ApiKeyCreatedPage
        ctx={pageContext(c, deps)}
        apiKey={apiKey}
        secret={secret}
        reachesNothing={keyReachesNothing(apiKey)}
        curlExample={curlExample(deps.config.baseUrl, exampleProject(apiKey, projects))}
      />,
    );
  });

  for (const [action, active] of [["disable", false], ["enable", true]] as const) {
    admin.post(`/api-keys/:id/${action}`, async (c) => {
      const raw = c.req.param("id");
      const notFound = new HTTPException(404, { message: `There is no API key ${raw}.` });
      if (!ID_PATTERN.test(raw)) throw notFound;
      let apiKey: ApiKey;
      try {
        apiKey = await setApiKeyActive(kv, Number(raw), active);
      } catch (error) {
        throw error instanceof NotFoundError ? notFound : error;
      }
      await audit(c, deps, {
        action: `api_key.${action}`,
        target: `api key ${apiKey.id}`,
        details: `name "${apiKey.name}"`,
      });
      return redirectWithFlash(c, deps, "/admin/api-keys", {
        kind: "success",
        text: `API key "${apiKey.name}" was ${active ? "enabled" : "disabled"}.`,
      });
    });
  }
}

/** A project the new key can read, for the example command. */
function exampleProject(apiKey: ApiKey, projects: readonly Project[]): string {
  const visible = projects.find((project) =>
    project.state === "active" && scopeAllows(apiKey, project)
  );
  return visible?.slug ?? "PROJECT_SLUG";
}

/** The example command, with the shell variable where the key goes (the page shows the key once). */
function curlExample(baseUrl: string, slug: string): string {
  return `curl -fsS -H "Authorization: Bearer ${KEY_PLACEHOLDER}" \\\n  ${baseUrl}/api/v1/projects/${slug}/releases/latest`;
}
