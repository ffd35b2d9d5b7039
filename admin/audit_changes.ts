/** The "before → after" details of an edit, for the audit log. */

type Shown = string | number | boolean | null | undefined | readonly (string | number)[];

function show(value: Shown): string {
  if (value === null || value === undefined || value === "") return "(none)";
  if (Array.isArray(value)) return value.length === 0 ? "(none)" : value.join(", ");
  return JSON.stringify(value);
}

/**
 * `field: "old" → "new"` for each of `fields` whose value differs, joined with
 * "; "; "no change" when none does. Long texts are cut by the audit record.
 */
export function describeChanges<T>(
  before: T,
  after: T,
  fields: ReadonlyArray<keyof T & string>,
): string {
  const changes = fields.flatMap((field) => {
    const [a, b] = [show(before[field] as Shown), show(after[field] as Shown)];
    return a === b ? [] : [`${field}: ${a} → ${b}`];
  });
  return changes.length === 0 ? "no change" : changes.join("; ");
}
