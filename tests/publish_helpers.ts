/** Fixtures for publishing API tests: publish tokens and multipart uploads, in process or over HTTP. */
import { createPublishToken, type PublishTokenInput } from "../src/credentials/publish_tokens.ts";
import type { Store } from "../src/kv/store.ts";
import assert from "node:assert/strict";
import { AdminClient, httpSender } from "./admin_helpers.ts";

export const PUBLISH_PREFIX = "/publish/v1";

export async function seedPublishToken(
  store: Store,
  input: Partial<PublishTokenInput> = {},
) {
  return await createPublishToken(store, {
    name: "ci",
    all_projects: true,
    permissions: ["upload", "release_state"],
    created_by: "admin",
    ...input,
  });
}

/** A multipart upload body: the text fields, then the file part. */
export function uploadForm(
  fields: Record<string, string>,
  file?: { bytes: Uint8Array | Blob; name?: string; type?: string },
): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (file !== undefined) {
    const blob = file.bytes instanceof Blob
      ? file.bytes
      : new Blob([file.bytes as Uint8Array<ArrayBuffer>], { type: file.type ?? "" });
    form.append("file", blob, file.name ?? "app.bin");
  }
  return form;
}

/** A form part: a text field, or a file part with its file name. */
export type FormPart = [name: string, value: string | Blob, filename?: string];

/** Appends `parts` to `form`, in order. */
export function appendParts(form: FormData, parts: readonly FormPart[]): void {
  for (const [name, value, filename] of parts) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, value, filename);
  }
}

export interface PublishPipeline {
  /** The publish token's secret. */
  token: string;
  /** A request to the publishing API (`path` after PUBLISH_PREFIX) with `bearer` (the token). */
  call: (path: string, init?: RequestInit, bearer?: string) => Promise<Response>;
}

/**
 * A pipeline's setup on a running server (tests/server_process.ts) as an admin does it in the
 * admin UI: signs in, creates the project `desktop` and a publish token named `tokenName` that
 * may upload to it and change its releases' state.
 */
export async function setUpPipeline(baseUrl: string, tokenName: string): Promise<PublishPipeline> {
  const admin = new AdminClient(httpSender([baseUrl]));
  assert.equal((await admin.signIn("admin", "test-password-123")).status, 303);
  assert.equal(
    (await admin.post("/admin/projects", { name: "Desktop", slug: "desktop" })).status,
    303,
  );
  await admin.page("/admin/publish-tokens");
  const created = await admin.post("/admin/publish-tokens", {
    name: tokenName,
    project_slugs: "desktop",
    can_upload: "on",
    can_change_state: "on",
  });
  assert.equal(created.status, 200);
  const token = /data-publish-token="([^"]+)"/.exec(await created.text())![1];
  const call = (path: string, init: RequestInit = {}, bearer = token) =>
    fetch(baseUrl + PUBLISH_PREFIX + path, {
      ...init,
      headers: { ...init.headers, authorization: `Bearer ${bearer}` },
    });
  return { token, call };
}
