/** Reading the project forms (create and edit): the values as entered, shown again with an error. */
import type { Project } from "../src/projects/types.ts";
import { field, listField } from "./forms.ts";
import type { FormValues } from "./types.ts";

/** The fields a project form has; only the create form has a slug (it never changes afterwards). */
export interface ProjectFieldValues {
  name: string;
  slug?: string;
  description: string;
  /** Comma-separated, as typed; the store's `parseList` splits it. */
  tags: string;
}

/** The create form. */
export interface ProjectFormValues extends ProjectFieldValues {
  slug: string;
}

/** The edit form: everything but the slug. */
export type ProjectEditValues = Omit<ProjectFieldValues, "slug">;

export const EMPTY_PROJECT_FORM: ProjectFormValues = {
  name: "",
  slug: "",
  description: "",
  tags: "",
};

export function projectFormValues(form: FormValues): ProjectFormValues {
  return { slug: field(form, "slug"), ...projectEditValues(form) };
}

export function projectEditValues(form: FormValues): ProjectEditValues {
  return {
    name: field(form, "name"),
    description: field(form, "description"),
    tags: listField(form, "tags"),
  };
}

/** The edit form filled in from the stored project. */
export function editValuesOf(project: Project): ProjectEditValues {
  return { name: project.name, description: project.description, tags: project.tags.join(", ") };
}
