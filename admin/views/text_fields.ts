/**
 * The admin forms' text fields: form name, label and limits written once, so
 * every form that has a field (a project's name on two forms, a key's name,
 * a release's version, build and notes) asks for it the same way.
 */
import {
  DESCRIPTION_MAX_LENGTH,
  NAME_MAX_LENGTH,
  RELEASE_NOTES_MAX_LENGTH,
  VERSION_MAX_LENGTH,
} from "../../src/lib/limits.ts";

/** Identifiers such as versions: no automatic capitals, no spell check. */
const VERBATIM = { autocapitalize: "none", spellcheck: false } as const;

export const TEXT_FIELDS = {
  name: { name: "name", label: "Name", required: true, maxlength: NAME_MAX_LENGTH },
  description: {
    name: "description",
    label: "Description",
    rows: 3,
    maxlength: DESCRIPTION_MAX_LENGTH,
  },
  version: {
    name: "version",
    label: "Version",
    required: true,
    maxlength: VERSION_MAX_LENGTH,
    ...VERBATIM,
  },
  build: {
    name: "build",
    label: "Build",
    optional: "optional",
    maxlength: VERSION_MAX_LENGTH,
    ...VERBATIM,
  },
  releaseNotes: {
    name: "release_notes",
    label: "Release notes",
    optional: "optional",
    rows: 4,
    maxlength: RELEASE_NOTES_MAX_LENGTH,
  },
} as const;
