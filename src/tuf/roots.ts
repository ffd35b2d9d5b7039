/**
 * Uploading a root version (docs/tuf.md "The root"): the operator signs it
 * off the server (tools/tuf_root.ts); the service checks here what a client
 * will check (the chain: version N+1 signed by the threshold of version N's
 * root keys and of its own) before it stores and serves it, so that a wrong
 * upload is refused at once rather than by every client.
 */
import { ValidationError } from "../kv/errors.ts";
import { listSigningKeys } from "../signing/signing_keys.ts";
import { createTufRoot, getLatestTufRoot, type TufRoot } from "./records.ts";
import { parseRoot, tufKeyOf } from "./metadata.ts";
import type { Store } from "../kv/store.ts";

/** The outcome of an upload: the stored root and what the operator should know, or why not. */
export type RootUpload =
  | { root: TufRoot; warnings: string[] }
  | { error: string };

export async function uploadTufRoot(
  store: Store,
  options: { text: string; uploadedBy: string; nowMs?: number },
): Promise<RootUpload> {
  let root;
  try {
    root = parseRoot(options.text);
  } catch (error) {
    return { error: (error as Error).message };
  }
  const { signed } = root;
  if (!signed.consistentSnapshot) {
    return { error: "consistent_snapshot must be true (the service serves versioned files)" };
  }
  if (signed.isExpired(new Date(options.nowMs ?? Date.now()))) {
    return { error: `it expired at ${signed.expires}` };
  }
  try {
    root.verifyDelegate("root", root);
  } catch (error) {
    return { error: `it is not signed by the threshold of its own root keys (${message(error)})` };
  }
  const latest = await getLatestTufRoot(store);
  const expected = (latest?.version ?? 0) + 1;
  if (signed.version !== expected) {
    return { error: `its version is ${signed.version}; the next version is ${expected}` };
  }
  if (latest !== null) {
    try {
      parseRoot(latest.json).verifyDelegate("root", root);
    } catch (error) {
      return {
        error: `it is not signed by the threshold of version ${latest.version}'s root keys (${
          message(error)
        })`,
      };
    }
  }
  let stored: TufRoot;
  try {
    stored = await createTufRoot(store, {
      version: signed.version,
      json: options.text.trim(),
      expires: signed.expires,
      uploaded_by: options.uploadedBy,
    });
  } catch (error) {
    if (error instanceof ValidationError) return { error: error.message };
    throw error;
  }
  const listed = new Set(signed.roles.timestamp.keyIDs);
  const active = (await listSigningKeys(store)).filter((key) => key.status === "active");
  const warnings = active.some((key) => listed.has(tufKeyOf(key.public_key).keyID)) ? [] : [
    "it lists no active signing key for the online roles: the metadata cannot be signed " +
    "until a key it lists is active",
  ];
  return { root: stored, warnings };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
