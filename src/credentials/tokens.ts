/**
 * The rules of publish tokens (docs/publishing.md "Publish tokens"): when a
 * presented token is accepted, which projects it covers and what it may do.
 * The records live in src/credentials/publish_tokens.ts.
 */
import { API_KEY_PREFIX } from "./api_keys.ts";
import { PUBLISH_TOKEN_PREFIX } from "./publish_tokens.ts";
import type { PublishPermission, PublishToken } from "./publish_tokens.ts";
import type { Project } from "../projects/types.ts";
import { keyState } from "./access.ts";

/** Why a presented bearer token is not a usable publish token. */
export type TokenRefusal = "client_key" | "unknown" | "disabled" | "expired";

/** Whether `secret` looks like a client API key (never accepted by the publishing API). */
export function isClientKey(secret: string): boolean {
  return secret.startsWith(API_KEY_PREFIX);
}

/** Whether `secret` looks like a publish token at all (else it is not looked up). */
export function looksLikePublishToken(secret: string): boolean {
  return secret.startsWith(PUBLISH_TOKEN_PREFIX) && secret.length <= 128;
}

/** Null when `token` may be used at `nowMs`, else why not. */
export function judgePublishToken(token: PublishToken | null, nowMs: number): TokenRefusal | null {
  if (token === null) return "unknown";
  const state = keyState(token, nowMs);
  return state === "active" ? null : state;
}

/** Whether the token's scope covers `project` (archived projects included: the admin UI's are). */
export function tokenCovers(token: PublishToken, project: Project): boolean {
  return token.all_projects || token.project_ids.includes(project.id);
}

export function tokenMay(token: PublishToken, permission: PublishPermission): boolean {
  return token.permissions.includes(permission);
}
