/** The fields a project form has: name, slug (only when creating), description and tags. */
import { SLUG_CHARACTERS, SLUG_MAX_LENGTH } from "../../src/lib/limits.ts";
import type { ProjectFieldValues } from "../forms_project.ts";
import type { FormError } from "../types.ts";
import { InputField, TextAreaField } from "./components.tsx";
import { TEXT_FIELDS } from "./text_fields.ts";

/** What the browser says about a wrong slug (the `title` of the field). */
export const SLUG_TITLE =
  `A slug is 1 to ${SLUG_MAX_LENGTH} lowercase letters, digits and hyphens, e.g. desktop-app.`;

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
        {...TEXT_FIELDS.name}
        value={values.name}
        error={error}
      />
      {values.slug !== undefined && (
        <InputField
          id={`${idPrefix}-slug`}
          name="slug"
          label="Slug"
          value={values.slug}
          error={error}
          pattern={`[${SLUG_CHARACTERS}]{1,${SLUG_MAX_LENGTH}}`}
          title={SLUG_TITLE}
          maxlength={SLUG_MAX_LENGTH}
          autocapitalize="none"
          spellcheck={false}
          hint="Lowercase letters, digits and -. Used in URLs and never changes. Leave empty to derive it from the name."
        />
      )}
      <TextAreaField
        id={`${idPrefix}-description`}
        {...TEXT_FIELDS.description}
        value={values.description}
        error={error}
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
