/** Reading posted admin forms. */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ValidationError } from "../src/kv/errors.ts";
import type { FormError, FormValues } from "./types.ts";
import { withLabel } from "./field_labels.ts";

/** Reads a urlencoded (or small multipart) form; file parts are ignored. */
export async function readForm(c: Context): Promise<FormValues> {
  const type = (c.req.header("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded" && type !== "multipart/form-data") {
    return {};
  }
  let data: FormData;
  try {
    data = await c.req.raw.formData();
  } catch {
    throw new HTTPException(400, { message: "the form could not be read" });
  }
  // No prototype: fields named `constructor`, `__proto__` or `toString` are plain fields.
  const values: FormValues = Object.create(null);
  for (const [name, value] of data) {
    if (typeof value === "string") (values[name] ??= []).push(value);
  }
  return values;
}

/** The first value of a field, or "". */
export function field(form: FormValues, name: string): string {
  return form[name]?.[0] ?? "";
}

/** All values of a field joined with commas: a comma-separated text box and checkboxes both work. */
export function listField(form: FormValues, name: string): string {
  return (form[name] ?? []).join(",");
}

/** A store's refusal of a field, as the message shown beside it (naming the field by its label). */
export function formErrorOf(error: ValidationError): FormError {
  return { field: error.field, message: withLabel(error.field, error.message) };
}
