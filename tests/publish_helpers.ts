/** Fixtures for publishing API tests: publish tokens and multipart uploads, in process or over HTTP. */
import { createPublishToken, type PublishTokenInput } from "../src/store/mod.ts";

export const PUBLISH_PREFIX = "/publish/v1";

export async function seedPublishToken(
  kv: Deno.Kv,
  input: Partial<PublishTokenInput> = {},
) {
  return await createPublishToken(kv, {
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
