/** An edit form shown again after its edit was refused (src/edits/edits.ts). */
import { StaleEditError, type Versioned } from "../src/edits/edits.ts";
import { ValidationError } from "../src/kv/errors.ts";
import { formErrorOf } from "./forms.ts";
import type { FormError } from "./types.ts";

/** Why the edit was refused, as the page's options say it. */
export type EditRefusal<T> =
  | { conflict: T; status: 409 }
  | { editError: FormError; status: 400 };

/**
 * Shows an edit form again after its edit was refused; any other error is thrown on. A stale edit
 * (the record changed after the form was shown) is shown over the record as it is now (`current`),
 * with its values beside what was entered (409); invalid input over the record the edit started
 * from (`current` null), with the refused field (400).
 */
export async function reshowRefusedEdit<T>(
  error: unknown,
  render: (current: Versioned<T> | null, refusal: EditRefusal<T>) => Promise<Response>,
): Promise<Response> {
  if (error instanceof StaleEditError) {
    const current = error.current as Versioned<T>;
    return await render(current, { conflict: current.value, status: 409 });
  }
  if (!(error instanceof ValidationError)) throw error;
  return await render(null, { editError: formErrorOf(error), status: 400 });
}
