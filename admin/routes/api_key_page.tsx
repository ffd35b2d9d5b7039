/** One API key's page: edit its name, download right, scope and expiry; delete it. */
import type { Store } from "../../src/kv/store.ts";
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { ID_PATTERN } from "../../src/lib/limits.ts";
import { keyRolloutTags, keyState } from "../../src/credentials/access.ts";
import { listProjectTags } from "../../src/projects/aggregates.ts";
import { deleteApiKey, getKeyDownloads } from "../../src/lifecycle/delete_records.ts";
import { editApiKey, getApiKeyVersioned } from "../../src/edits/edits.ts";
import { NotFoundError } from "../../src/kv/errors.ts";
import { getProjectsByIds } from "../../src/projects/projects.ts";
import type { Project } from "../../src/projects/types.ts";
import type { ApiKey } from "../../src/credentials/types.ts";
import { describeChanges } from "../audit_changes.ts";
import { type AdminContext, audit, pageContext, redirectWithFlash } from "../context.ts";
import { reshowRefusedEdit } from "../edit_refusal.ts";
import { field } from "../forms.ts";
import {
  type ApiKeyFormValues,
  apiKeyFormValues,
  apiKeyInput,
  KNOWN_TAGS_SHOWN,
} from "../forms_api_key.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
import { ApiKeyPage } from "../views/api_key_page.tsx";

const EDITED_FIELDS = [
  "name",
  "can_download",
  "scope_mode",
  "project_ids",
  "tags",
  "rollout_tags",
  "expires_at",
] as const;

export function addApiKeyPageRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  async function load(store: Store, raw: string) {
    const found = ID_PATTERN.test(raw) ? await getApiKeyVersioned(store, Number(raw)) : null;
    if (found === null) throw new HTTPException(404, { message: `There is no API key ${raw}.` });
    return found;
  }

  async function render(
    c: AdminContext,
    found: { value: ApiKey; version: string },
    { status = 200, ...form }: {
      values?: ApiKeyFormValues;
      editError?: FormError;
      conflict?: ApiKey;
      status?: 200 | 400 | 409;
    } = {},
  ): Promise<Response> {
    // Only the projects the key (and a conflicting version of it) names, not every project.
    const ids = [...new Set([...found.value.project_ids, ...(form.conflict?.project_ids ?? [])])];
    const [projects, downloads, knownTags] = await Promise.all([
      getProjectsByIds(c.var.store, ids),
      getKeyDownloads(c.var.store, found.value.id),
      listProjectTags(c.var.store, KNOWN_TAGS_SHOWN),
    ]);
    return c.html(
      <ApiKeyPage
        ctx={pageContext(c, deps)}
        apiKey={found.value}
        state={keyState(found.value, Date.now())}
        downloads={downloads}
        version={found.version}
        knownTags={knownTags}
        values={form.values ?? valuesOf(found.value, projects)}
        error={form.editError}
        conflict={form.conflict
          ? { apiKey: form.conflict, slugs: slugsOf(form.conflict, projects) }
          : null}
      />,
      status,
    );
  }

  admin.get("/api-keys/:id", async (c) => render(c, await load(c.var.store, c.req.param("id"))));

  admin.post("/api-keys/:id", async (c) => {
    const found = await load(c.var.store, c.req.param("id"));
    const form = c.get("form");
    const values = apiKeyFormValues(form);
    try {
      const input = await apiKeyInput(c.var.store, values);
      // The form shows the expiry to the minute: an unchanged one keeps its seconds.
      const stored = found.value.expires_at;
      const expiresAt = stored !== null && values.expires_at === stored.slice(0, 16)
        ? stored
        : input.expires_at;
      const { before, after } = await editApiKey(c.var.store, found.value.id, {
        ...input,
        expires_at: expiresAt,
        expected: field(form, "expected_version"),
      });
      await audit(c, deps, {
        action: "api_key.update",
        target: `api key ${after.id}`,
        details: `name "${after.name}"; ${
          describeChanges(withRolloutTags(before), withRolloutTags(after), EDITED_FIELDS)
        }`,
      });
      return redirectWithFlash(c, deps, {
        location: "/admin/api-keys#key-list",
        kind: "success",
        text: `API key "${after.name}" was saved.`,
      });
    } catch (error) {
      return await reshowRefusedEdit<ApiKey>(
        error,
        (current, refusal) => render(c, current ?? found, { values, ...refusal }),
      );
    }
  });

  admin.post("/api-keys/:id/delete", async (c) => {
    const raw = c.req.param("id");
    let apiKey: ApiKey;
    try {
      apiKey = await deleteApiKey(c.var.store, ID_PATTERN.test(raw) ? Number(raw) : -1);
    } catch (error) {
      if (error instanceof NotFoundError) {
        throw new HTTPException(404, { message: `There is no API key ${raw}.` });
      }
      throw error;
    }
    await audit(c, deps, {
      action: "api_key.delete",
      target: `api key ${apiKey.id}`,
      details: `name "${apiKey.name}"; prefix ${apiKey.prefix}; scope ${apiKey.scope_mode}; ` +
        `was ${apiKey.active ? "enabled" : "disabled"}`,
    });
    return redirectWithFlash(c, deps, {
      location: "/admin/api-keys#key-list",
      kind: "success",
      text: `API key "${apiKey.name}" was deleted: clients using it are refused.`,
    });
  });
}

function slugsOf(apiKey: ApiKey, projects: readonly Project[]): string[] {
  const slugs = new Map(projects.map((project) => [project.id, project.slug]));
  return apiKey.project_ids.map((id) => slugs.get(id) ?? `#${id}`);
}

/** The edit form filled in from the stored key (the expiry as a datetime-local value, UTC). */
function valuesOf(apiKey: ApiKey, projects: readonly Project[]): ApiKeyFormValues {
  return {
    name: apiKey.name,
    can_download: apiKey.can_download,
    scope_mode: apiKey.scope_mode,
    project_slugs: slugsOf(apiKey, projects),
    tags: apiKey.tags,
    rollout_tags: [...keyRolloutTags(apiKey)],
    expires_at: apiKey.expires_at?.slice(0, 16) ?? "",
  };
}

/** The key with the rollout tags it acts on, so an audit entry compares what matters. */
function withRolloutTags(apiKey: ApiKey): ApiKey {
  return { ...apiKey, rollout_tags: [...keyRolloutTags(apiKey)] };
}
