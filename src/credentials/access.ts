/**
 * The access rules of an API key: acceptance (../shared/spec/client-api.md "5. Authentication"),
 * state, and scope (../shared/spec/admin-contract.md "Scope modes").
 */
import type { Project } from "../projects/types.ts";
import type { ApiKey, Credential } from "./types.ts";

export type KeyVerdict = "ok" | "invalid" | "forbidden";

/** A credential's state: disabled by an admin, past its `expires_at`, or active. */
export type KeyState = "active" | "disabled" | "expired";

/**
 * The one state rule of a credential, an API key or a publish token
 * (tokens.ts `judgePublishToken`): it expires at its `expires_at` (that
 * instant included).
 */
export function keyState(
  key: Pick<Credential, "active" | "expires_at">,
  nowMs: number = Date.now(),
): KeyState {
  if (!key.active) return "disabled";
  if (key.expires_at !== null && Date.parse(key.expires_at) <= nowMs) return "expired";
  return "active";
}

/** An active, unexpired key with `can_download` is accepted (../shared/spec/client-api.md "5. Authentication"). */
export function judgeApiKey(key: ApiKey | null, nowMs: number = Date.now()): KeyVerdict {
  if (key === null || keyState(key, nowMs) !== "active") return "invalid";
  if (!key.can_download) return "forbidden";
  return "ok";
}

/**
 * Whether the key's scope can never reach a project: an allow list with
 * nothing on it grants nothing (../shared/spec/admin-contract.md "Scope modes"). Such a key is valid and
 * is created (outside tools make them); the admin UI warns about it.
 */
export function keyReachesNothing(
  key: Pick<ApiKey, "scope_mode" | "project_ids" | "tags">,
): boolean {
  return (key.scope_mode === "project_allow_list" && key.project_ids.length === 0) ||
    (key.scope_mode === "tag_allow_list" && key.tags.length === 0);
}

/** The rollout tags of a key: the offer rule's (src/releases/offer.ts). */
export { keyRolloutTags } from "../releases/offer.ts";

/**
 * A key's project ids as a set, made once per key record (records from the
 * read cache are shared until a write replaces them), so listing 1,000
 * projects for a 50-project allow list is 1,000 lookups, not 50,000 compares.
 */
const projectIdSets = new WeakMap<ApiKey, ReadonlySet<number>>();

function projectIdSet(key: ApiKey): ReadonlySet<number> {
  let ids = projectIdSets.get(key);
  if (ids === undefined) projectIdSets.set(key, ids = new Set(key.project_ids));
  return ids;
}

/** Whether the key's scope covers the project. Empty allow lists grant nothing; empty deny lists deny nothing. */
export function scopeAllows(key: ApiKey, project: Project): boolean {
  switch (key.scope_mode) {
    case "all_projects":
      return true;
    case "project_allow_list":
      return projectIdSet(key).has(project.id);
    case "project_deny_list":
      return !projectIdSet(key).has(project.id);
    case "tag_allow_list":
      return project.tags.some((tag) => key.tags.includes(tag));
    case "tag_deny_list":
      return !project.tags.some((tag) => key.tags.includes(tag));
    default:
      return false;
  }
}

/** A project is visible to a key when it is active and in the key's scope. */
export function projectVisible(key: ApiKey, project: Project | null): project is Project {
  return project !== null && project.state === "active" && scopeAllows(key, project);
}
