/** The fields a project form has: name, slug (only when creating), description and tags. */
import { DESCRIPTION_MAX_LENGTH, NAME_MAX_LENGTH, SLUG_MAX_LENGTH } from "../../src/lib/limits.ts";
import type { FormError } from "../types.ts";
import { InputField, TextAreaField } from "./components.tsx";

export interface ProjectFieldValues {
  name: string;
  /** Only the create form has a slug: it never changes afterwards. */
  slug?: string;
  description: string;
  tags: string;
}

/** What the browser says about a wrong slug (the `title` of the field). */
export const SLUG_TITLE =
  "A slug is 1 to 64 lowercase letters, digits and hyphens, e.g. desktop-app.";

export function ProjectFields(
  { idPrefix, values, error, tagsHint }: {
    idPrefix: string;
    values: ProjectFieldValues;
    error?: FormError | null;
    tagsHint: string;
  },
) {
  return (
    <>
      <InputField
        id={`${idPrefix}-name`}
        name="name"
        label="Name"
        value={values.name}
        error={error}
        required
        maxlength={NAME_MAX_LENGTH}
      />
      {values.slug !== undefined && (
        <InputField
          id={`${idPrefix}-slug`}
          name="slug"
          label="Slug"
          value={values.slug}
          error={error}
          pattern="[a-z0-9\-]{1,64}"
          title={SLUG_TITLE}
          maxlength={SLUG_MAX_LENGTH}
          autocapitalize="none"
          spellcheck={false}
          hint="Lowercase letters, digits and -. Used in URLs and never changes. Leave empty to derive it from the name."
        />
      )}
      <TextAreaField
        id={`${idPrefix}-description`}
        name="description"
        label="Description"
        value={values.description}
        error={error}
        rows={3}
        maxlength={DESCRIPTION_MAX_LENGTH}
      />
      <InputField
        id={`${idPrefix}-tags`}
        name="tags"
        label="Tags"
        value={values.tags}
        error={error}
        autocapitalize="none"
        hint={
          <>
            Comma-separated, e.g. <code>desktop, stable</code>. {tagsHint}
          </>
        }
      />
    </>
  );
}
