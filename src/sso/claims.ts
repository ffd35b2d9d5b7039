/** The user name and the role an OpenID Connect provider's claims give (docs/sso.md). */
import type { OidcConfig } from "../lib/config.ts";
import { USERNAME_PATTERN } from "../lib/limits.ts";
import type { AdminRole } from "../accounts/admin_users.ts";
import type { Claims } from "./provider.ts";

/**
 * The claim's value: a top-level claim, or one inside objects with a dotted name
 * (`realm_access.roles`) when no top-level claim has the whole name.
 */
function claimValue(claims: Claims, name: string): unknown {
  if (name in claims) return claims[name];
  let value: unknown = claims;
  for (const part of name.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** The groups in the claim: a list of strings, or one string; anything else is none. */
export function groupsOf(claims: Claims, claimName: string): string[] {
  const value = claimValue(claims, claimName);
  if (typeof value === "string") return [value];
  if (!Array.isArray(value)) return [];
  return value.filter((group): group is string => typeof group === "string");
}

const ROLES_HIGHEST_FIRST: readonly AdminRole[] = ["admin", "publisher", "viewer"];

/** The highest role any of the groups gives, or null when none gives one. */
export function roleForGroups(
  groups: readonly string[],
  roleGroups: OidcConfig["roleGroups"],
): AdminRole | null {
  return ROLES_HIGHEST_FIRST.find((role) => roleGroups[role].some((g) => groups.includes(g))) ??
    null;
}

/** The user name the claim gives, or null when it is missing or not a valid user name here. */
export function usernameOf(claims: Claims, claimName: string): string | null {
  const value = claimValue(claims, claimName);
  return typeof value === "string" && USERNAME_PATTERN.test(value) ? value : null;
}
