/**
 * The JSON bodies of the publishing API (docs/publishing.md): one size limit
 * for every route that takes JSON, and Hono's JSON validator for a body that
 * must be a JSON object.
 */
import { bodyLimit } from "hono/body-limit";
import { validator } from "hono/validator";
import { ApiError } from "../../http/errors.ts";

/** Largest JSON body (edits of notes and build, rollout changes, gates, policy). */
const JSON_LIMIT_BYTES = 256 * 1024;

/** Hono's body limit on every route that takes JSON. */
export const jsonLimit = bodyLimit({
  maxSize: JSON_LIMIT_BYTES,
  onError: () => {
    throw new ApiError(413, `the JSON body is larger than ${JSON_LIMIT_BYTES} bytes`);
  },
});

/** The media types Hono's JSON validator reads (application/json, application/…+json). */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

/**
 * Hono's JSON validator for a body that must be a JSON object (`example`
 * shows one), sent as `application/json`, its fields checked by `read`.
 */
export function jsonObject<T>(example: string, read: (fields: Record<string, unknown>) => T) {
  return validator("json", (body: unknown, c) => {
    const hint = `send a JSON object such as ${example}`;
    if (!JSON_MEDIA_TYPE.test(c.req.header("content-type")?.split(";")[0].trim() ?? "")) {
      throw new ApiError(400, `${hint} with Content-Type: application/json`);
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new ApiError(400, hint);
    }
    return read(body as Record<string, unknown>);
  });
}
