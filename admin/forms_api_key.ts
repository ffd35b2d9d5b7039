/** Reading the API key form into store input, with the contract's field rules. */
import { isSlug } from "../src/lib/limits.ts";
import {
  type ApiKeyInput,
  getProjectIdsBySlugs,
  parseList,
  requireScopeMode,
  ValidationError,
} from "../src/store/mod.ts";
import { field, listField } from "./forms.ts";
import type { FormValues } from "./types.ts";
import type { ApiKeyFormValues } from "./views/api_keys.tsx";

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;
const DATETIME_LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?$/;

/**
 * `expires_at`: empty for none; an RFC 3339 time with offset, or an HTML
 * datetime-local value read as UTC. Returns an ISO time or null.
 */
export function parseExpiresAt(raw: string): string | null {
  const text = raw.trim();
  if (text === "") return null;
  const local = DATETIME_LOCAL.exec(text);
  const full = local ? null : RFC3339.exec(text);
  const parts = local ?? full;
  const invalid = new ValidationError(
    "expires_at",
    "expires_at must be a time like 2026-12-31T23:59:59Z or 2026-12-31T23:59 (UTC)",
  );
  if (parts === null) throw invalid;
  const [, year, month, day, hour, minute, second = "0"] = parts.map((part) => part ?? "");
  const calendar = new Date(Date.UTC(+year, +month - 1, +day, +hour, +minute, +(second || 0)));
  // Reject dates that Date would roll over (2026-02-30) and out-of-range times.
  if (
    calendar.getUTCFullYear() !== +year || calendar.getUTCMonth() !== +month - 1 ||
    calendar.getUTCDate() !== +day || +hour > 23 || +minute > 59 || +(second || 0) > 59
  ) {
    throw invalid;
  }
  const ms = Date.parse(local ? `${text}Z` : text.replace(" ", "T"));
  if (Number.isNaN(ms)) throw invalid;
  return new Date(ms).toISOString();
}

export function apiKeyFormValues(form: FormValues): ApiKeyFormValues {
  const canDownload = form["can_download"]?.[0];
  return {
    name: field(form, "name"),
    can_download: canDownload !== undefined &&
      !["", "off", "false", "0", "no"].includes(canDownload.trim().toLowerCase()),
    scope_mode: field(form, "scope_mode").trim(),
    project_slugs: parseList(listField(form, "project_slugs")),
    tags: parseList(listField(form, "tags")),
    expires_at: field(form, "expires_at").trim(),
  };
}

/** Checks the form and resolves project slugs; lists not used by the mode are dropped. */
export async function apiKeyInput(kv: Deno.Kv, values: ApiKeyFormValues): Promise<ApiKeyInput> {
  const mode = requireScopeMode(values.scope_mode);
  for (const slug of values.project_slugs) {
    if (!isSlug(slug)) {
      throw new ValidationError("project_slugs", `unknown project "${slug}"`);
    }
  }
  const projectIds = await getProjectIdsBySlugs(kv, values.project_slugs);
  const expiresAt = parseExpiresAt(values.expires_at);
  const projectMode = mode === "project_allow_list" || mode === "project_deny_list";
  const tagMode = mode === "tag_allow_list" || mode === "tag_deny_list";
  // An empty allow list would create a key that reaches nothing: surely not what was meant.
  if (mode === "project_allow_list" && projectIds.length === 0) {
    throw new ValidationError(
      "project_slugs",
      'choose at least one project for "Only these projects"',
    );
  }
  if (mode === "tag_allow_list" && values.tags.length === 0) {
    throw new ValidationError("tags", 'enter at least one tag for "Projects with these tags"');
  }
  return {
    name: values.name,
    can_download: values.can_download,
    scope_mode: mode,
    project_ids: projectMode ? projectIds : [],
    tags: tagMode ? values.tags : [],
    expires_at: expiresAt,
  };
}
