/** Reading the API key form into store input, with the contract's field rules. */
import { isSlug } from "../src/lib/limits.ts";
import { type ApiKeyInput, requireScopeMode } from "../src/credentials/api_keys.ts";
import { ValidationError } from "../src/kv/errors.ts";
import { getProjectIdsBySlugs } from "../src/projects/projects.ts";
import { parseList } from "../src/projects/validate.ts";
import { field, listField } from "./forms.ts";
import type { FormValues } from "./types.ts";
import type { Store } from "../src/kv/store.ts";

/** The API key form as entered: shown again with an error, read into store input otherwise. */
export interface ApiKeyFormValues {
  name: string;
  can_download: boolean;
  scope_mode: string;
  project_slugs: string[];
  tags: string[];
  /** Rollout tags, kept whatever the mode; null when the form did not send the field. */
  rollout_tags: string[] | null;
  expires_at: string;
}

export const EMPTY_KEY_FORM: ApiKeyFormValues = {
  name: "",
  can_download: true,
  scope_mode: "all_projects",
  project_slugs: [],
  tags: [],
  rollout_tags: [],
  expires_at: "",
};

export function apiKeyFormValues(form: FormValues): ApiKeyFormValues {
  const canDownload = form["can_download"]?.[0];
  return {
    name: field(form, "name"),
    can_download: canDownload !== undefined &&
      !["", "off", "false", "0", "no"].includes(canDownload.trim().toLowerCase()),
    scope_mode: field(form, "scope_mode").trim(),
    project_slugs: parseList(listField(form, "project_slugs")),
    tags: parseList(listField(form, "tags")),
    rollout_tags: form["rollout_tags"] === undefined
      ? null
      : parseList(listField(form, "rollout_tags")),
    expires_at: field(form, "expires_at").trim(),
  };
}

/**
 * Checks the scope mode, resolves project slugs and drops the list the mode
 * does not use (rollout tags are kept whatever the mode; not sent, a new key
 * has none and an edited key keeps its own); the store checks the rest
 * (`expires_at` included). An empty
 * allow list is valid input: the store's `keyReachesNothing` tells the page to warn.
 */
export async function apiKeyInput(store: Store, values: ApiKeyFormValues): Promise<ApiKeyInput> {
  const mode = requireScopeMode(values.scope_mode);
  for (const slug of values.project_slugs) {
    if (!isSlug(slug)) {
      throw new ValidationError("project_slugs", `unknown project "${slug}"`);
    }
  }
  const projectIds = await getProjectIdsBySlugs(store, values.project_slugs);
  const projectMode = mode === "project_allow_list" || mode === "project_deny_list";
  const tagMode = mode === "tag_allow_list" || mode === "tag_deny_list";
  return {
    name: values.name,
    can_download: values.can_download,
    scope_mode: mode,
    project_ids: projectMode ? projectIds : [],
    tags: tagMode ? values.tags : [],
    ...(values.rollout_tags === null ? {} : { rollout_tags: values.rollout_tags }),
    expires_at: values.expires_at,
  };
}

/** Tags offered as checkboxes on the key form. */
export const KNOWN_TAGS_SHOWN = 200;
