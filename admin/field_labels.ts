/**
 * The label each admin form shows for a field, by the field's form name. A
 * store's message about a field starts with the name the publishing API
 * knows it by (`keep_active must be …`); on a form page that name becomes
 * the label (`Keep the newest active releases must be …`). A field on more
 * than one form has the same label on each; tests/admin_texts_test.ts checks
 * every label here against the pages that show its field.
 */
import { TEXT_FIELDS } from "./views/text_fields.ts";

export const FIELD_LABELS: Readonly<Record<string, string>> = {
  name: TEXT_FIELDS.name.label,
  description: TEXT_FIELDS.description.label,
  version: TEXT_FIELDS.version.label,
  build: TEXT_FIELDS.build.label,
  release_notes: TEXT_FIELDS.releaseNotes.label,
  slug: "Slug",
  tauri_signature: "Tauri signature",
  sparkle_signature: "Sparkle EdDSA signature",
  squirrel_delta: "Squirrel.Windows delta package",
  squirrel_delta_from: "Delta applies to version",
  expires_at: "Expires",
  scope_mode: "Scope",
  username: "User name",
  keep_active: "Keep the newest active releases",
  archived_max_days: "Delete archived releases older than (days)",
  percentage: "Percentage of clients",
  schedule: "Schedule",
  tester_tag: "Tester tag",
  stages: "Stages",
  min_installs: "Successful installs per stage",
  min_hours: "Hours per stage",
  advance_below: "Advance while failures are below (%)",
  halt_at: "Halt at failures of (%)",
  minimum_version: "Minimum supported version",
};

/** `message` about `field`, its leading form name (if it starts with one) replaced by the label. */
export function withLabel(field: string, message: string): string {
  const label = Object.hasOwn(FIELD_LABELS, field) ? FIELD_LABELS[field] : undefined;
  if (label === undefined || !message.startsWith(field)) return message;
  const rest = message.slice(field.length);
  return /^\w/.test(rest) ? message : `${label}${rest}`;
}
