/** Small pieces shared by the admin pages. */
import { shortTime } from "../format.ts";
import type { FormError } from "../types.ts";

/** The message at the top of a form that was sent back with an error. */
export function FormErrorSummary({ error }: { error?: FormError | null }) {
  if (!error) return null;
  return (
    <div class="flash flash-error" role="alert" data-form-error>
      {error.message}
    </div>
  );
}

/** Props that mark an input invalid and point it at its message. */
export function invalidProps(error: FormError | null | undefined, field: string, id: string) {
  return error?.field === field
    ? { "aria-invalid": "true", "aria-describedby": `${id}-error` }
    : {};
}

export function FieldError(
  { error, field, id }: { error?: FormError | null; field: string; id: string },
) {
  if (error?.field !== field) return null;
  return <p class="field-error" id={`${id}-error`}>{error.message}</p>;
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">never</span>;
  return <time datetime={iso}>{shortTime(iso)}</time>;
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge badge-${state}`}>{state}</span>;
}

export function TagList({ tags }: { tags: readonly string[] }) {
  if (tags.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="tag-list">
      {tags.map(TagItem)}
    </ul>
  );
}

function TagItem(tag: string) {
  return <li class="tag">{tag}</li>;
}
