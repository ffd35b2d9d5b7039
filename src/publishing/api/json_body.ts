/**
 * The JSON bodies of the publishing API (docs/publishing.md): one size limit
 * for every route that takes JSON, Hono's JSON validator for a body that
 * must be a JSON object, and the refusal of a field the route does not know.
 */
import type { Context, Next } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
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

function declaresJson(c: Context): boolean {
  return JSON_MEDIA_TYPE.test(c.req.header("content-type")?.split(";")[0].trim() ?? "");
}

/**
 * Hono's JSON validator for a body that must be a JSON object (`example`
 * shows one), its fields checked by `read`. A body is read as JSON whatever
 * its `Content-Type` (CI scripts often send none); one that is no JSON
 * object, malformed JSON included, is a 400 that shows `example`.
 */
export function jsonObject<T>(
  example: string,
  read: (fields: Record<string, unknown>) => T,
) {
  const hint = `send a JSON object such as ${example}`;
  const validate = validator("json", async (body: unknown, c) => {
    // Hono's validator reads only a body declared as JSON and gives {} for any other.
    const value = declaresJson(c) ? body : await c.req.json().catch(() => undefined);
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new ApiError(400, hint);
    }
    return read(value as Record<string, unknown>);
  });
  return withHint(validate, hint);
}

/** Refuses a field `name` that is not one of `known`; the 400 lists them after `listed`. */
export function refuseUnknownField<T extends string>(
  name: string,
  known: readonly T[],
  listed = "allowed",
): asserts name is T {
  if (!(known as readonly string[]).includes(name)) {
    throw new ApiError(
      400,
      `unknown field ${JSON.stringify(name.slice(0, 64))}; ${listed}: ${known.join(", ")}`,
    );
  }
}

/**
 * `validate` with its own 400 for malformed JSON ("Malformed JSON in request
 * body") replaced by `hint`; errors after it, in the route, pass unchanged.
 */
function withHint<M extends (c: Context, next: Next) => Promise<unknown>>(
  validate: M,
  hint: string,
): M {
  const handler = async (c: Context, next: Next) => {
    let validated = false;
    try {
      return await validate(c, () => {
        validated = true;
        return next();
      });
    } catch (error) {
      if (validated || error instanceof ApiError || !(error instanceof HTTPException)) throw error;
      throw new ApiError(400, hint);
    }
  };
  // The validator's own type: routes read its output with c.req.valid("json").
  return handler as M;
}
