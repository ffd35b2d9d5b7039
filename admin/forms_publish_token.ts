/** Reading the publish token form into store input (docs/publishing.md "Publish tokens"). */
import { isSlug } from "../src/lib/limits.ts";
import { ValidationError } from "../src/kv/errors.ts";
import { getProjectIdsBySlugs } from "../src/projects/projects.ts";
import type { PublishTokenInput } from "../src/credentials/publish_tokens.ts";
import { parseList } from "../src/projects/validate.ts";
import { field, listField } from "./forms.ts";
import type { FormValues } from "./types.ts";
import type { Store } from "../src/kv/store.ts";

export interface PublishTokenFormValues {
  name: string;
  all_projects: boolean;
  project_slugs: string[];
  can_upload: boolean;
  can_change_state: boolean;
  expires_at: string;
}

export const EMPTY_TOKEN_FORM: PublishTokenFormValues = {
  name: "",
  all_projects: false,
  project_slugs: [],
  can_upload: true,
  can_change_state: false,
  expires_at: "",
};

function checked(form: FormValues, name: string): boolean {
  const value = form[name]?.[0];
  return value !== undefined &&
    !["", "off", "false", "0", "no"].includes(value.trim().toLowerCase());
}

export function publishTokenFormValues(form: FormValues): PublishTokenFormValues {
  return {
    name: field(form, "name"),
    all_projects: checked(form, "all_projects"),
    project_slugs: parseList(listField(form, "project_slugs")),
    can_upload: checked(form, "can_upload"),
    can_change_state: checked(form, "can_change_state"),
    expires_at: field(form, "expires_at").trim(),
  };
}

/** Resolves the project slugs; the store checks the rest. */
export async function publishTokenInput(
  store: Store,
  { values, createdBy }: { values: PublishTokenFormValues; createdBy: string },
): Promise<PublishTokenInput> {
  const slugs = values.all_projects ? [] : values.project_slugs;
  for (const slug of slugs) {
    if (!isSlug(slug)) throw new ValidationError("project_slugs", `unknown project "${slug}"`);
  }
  return {
    name: values.name,
    all_projects: values.all_projects,
    project_ids: await getProjectIdsBySlugs(store, slugs),
    permissions: [
      ...(values.can_upload ? ["upload"] : []),
      ...(values.can_change_state ? ["release_state"] : []),
    ],
    expires_at: values.expires_at,
    created_by: createdBy,
  };
}
