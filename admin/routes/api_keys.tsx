/** API keys: list, create (shown once), disable and enable. */
import type { Hono } from "hono";
import { keyReachesNothing, keyState, scopeAllows } from "../../src/credentials/access.ts";
import { getCounts, listProjectTags } from "../../src/projects/aggregates.ts";
import {
  API_KEY_PREFIX,
  createApiKey,
  listApiKeysPage,
  setApiKeyActive,
} from "../../src/credentials/api_keys.ts";
import { ValidationError } from "../../src/kv/errors.ts";
import {
  getProjectsByIds,
  listProjectsPage,
  searchProjectsBySlug,
} from "../../src/projects/projects.ts";
import type { Store } from "../../src/kv/store.ts";
import type { Project } from "../../src/projects/types.ts";
import type { ApiKey } from "../../src/credentials/types.ts";
import { type AdminContext, audit, pageContext } from "../context.ts";
import { formErrorOf } from "../forms.ts";
import {
  type ApiKeyFormValues,
  apiKeyFormValues,
  apiKeyInput,
  EMPTY_KEY_FORM,
  KNOWN_TAGS_SHOWN,
} from "../forms_api_key.ts";
import { cursorListPage, PAGE_SIZE, SEARCH_SCAN, searchOf } from "../listing.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
import { addCredentialActions } from "./credential_actions.ts";
import { ApiKeyCreatedPage, KEY_PLACEHOLDER } from "../views/api_key_created.tsx";
import { type ApiKeyRow, ApiKeysPage } from "../views/api_keys.tsx";

export function addApiKeyRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  async function renderKeysPage(
    c: AdminContext,
    values: ApiKeyFormValues,
    error?: FormError,
  ) {
    const query = error ? {} : c.req.query();
    const search = searchOf(query, (key: ApiKey) => [key.name, String(key.id)]);
    const { q } = search;
    // A search that starts like a key ("uds_M35", as the list shows it, any case) finds by
    // prefix too: how a key that a secret scanner reported is looked up. Other words never
    // match inside a prefix (random letters would match almost anything short).
    const asPrefix = q.toLowerCase();
    const match = search.match && asPrefix.startsWith(API_KEY_PREFIX)
      ? (key: ApiKey) => key.prefix.toLowerCase().startsWith(asPrefix) || search.match!(key)
      : search.match;
    const [page, counts, knownTags] = await Promise.all([
      listApiKeysPage(c.var.store, {
        limit: PAGE_SIZE,
        cursor: query,
        maxScan: match ? SEARCH_SCAN : PAGE_SIZE + 1,
        match,
      }),
      getCounts(c.var.store),
      listProjectTags(c.var.store, KNOWN_TAGS_SHOWN),
    ]);
    const total = (counts.api_keys.enabled ?? 0) + (counts.api_keys.disabled ?? 0);
    const list = cursorListPage(page, {
      query,
      q,
      total,
      path: "/admin/api-keys",
      anchor: "#key-list",
    });
    // The slugs of the projects the shown keys name (not every project).
    const scopeIds = [...new Set(list.rows.flatMap((key) => key.project_ids))];
    const slugs = new Map(
      (await getProjectsByIds(c.var.store, scopeIds)).map((project) => [project.id, project.slug]),
    );
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
        total={total}
        openForm={c.req.query("new") !== undefined}
        slugs={slugs}
        knownTags={knownTags}
        values={values}
        error={error}
      />,
      error ? 400 : 200,
    );
  }

  admin.get("/api-keys", (c) => renderKeysPage(c, EMPTY_KEY_FORM));

  // Suggestions for the key form's project slugs field: projects whose slug starts with `q`.
  admin.get("/project-slugs", async (c) => {
    const start = (c.req.query("q") ?? "").trim().toLowerCase().slice(0, 64);
    const projects = start === ""
      ? []
      : await searchProjectsBySlug(c.var.store, { start, limit: SLUG_SUGGESTIONS });
    return c.json({
      projects: projects.map(({ slug, name, state }) => ({ slug, name, state })),
    });
  });

  admin.post("/api-keys", async (c) => {
    const values = apiKeyFormValues(c.get("form"));
    let created: { apiKey: ApiKey; secret: string };
    try {
      created = await createApiKey(c.var.store, await apiKeyInput(c.var.store, values));
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
        }; expires ${apiKey.expires_at ?? "never"}` +
        (apiKey.rollout_tags?.length ? `; rollout tags ${apiKey.rollout_tags.join(", ")}` : ""),
    });
    const projects = await getProjectsByIds(
      c.var.store,
      apiKey.project_ids.slice(0, EXAMPLE_CANDIDATES),
    );
    return c.html(
      <ApiKeyCreatedPage
        ctx={pageContext(c, deps)}
        apiKey={apiKey}
        secret={secret}
        reachesNothing={keyReachesNothing(apiKey)}
        curlExample={curlExample(
          deps.config.baseUrl,
          await exampleProject(c.var.store, apiKey, projects),
        )}
      />,
    );
  });

  addCredentialActions(admin, deps, {
    path: "api-keys",
    noun: "API key",
    auditKind: "api_key",
    location: "/admin/api-keys#key-list",
    actions: [
      ["disable", (store, id) => setApiKeyActive(store, id, false), "disabled"],
      ["enable", (store, id) => setApiKeyActive(store, id, true), "enabled"],
    ],
  });
}

/** Suggestions the project slugs field gets at most. */
const SLUG_SUGGESTIONS = 20;
/** Projects looked at for the example command (not every project). */
const EXAMPLE_CANDIDATES = 50;

/**
 * A project the new key can read, for the example command: one it names
 * (allow list), else one of the first page of projects.
 */
async function exampleProject(
  store: Store,
  apiKey: ApiKey,
  named: readonly Project[],
): Promise<string> {
  const candidates = apiKey.scope_mode === "project_allow_list" ? named : (await listProjectsPage(
    store,
    { limit: EXAMPLE_CANDIDATES, cursor: {}, maxScan: EXAMPLE_CANDIDATES },
  )).rows;
  const visible = candidates.find((project) =>
    project.state === "active" && scopeAllows(apiKey, project)
  );
  return visible?.slug ?? "PROJECT_SLUG";
}

/** The example command, with the shell variable where the key goes (the page shows the key once). */
function curlExample(baseUrl: string, slug: string): string {
  return `curl -fsS -H "Authorization: Bearer ${KEY_PLACEHOLDER}" \\\n  ${baseUrl}/api/v1/projects/${slug}/releases/latest`;
}
