/**
 * Reading the rollout forms (docs/rollouts.md "Admin UI"). The schedule comes
 * either as rows of `schedule_at` (a datetime-local value, read as UTC) and
 * `schedule_percentage` fields, as the page's form sends it, or as one
 * `schedule` text of `TIME=PERCENT` steps; both end up as that text, which
 * the store's parseSchedule reads.
 */
import { field } from "./forms.ts";
import type { FormValues } from "./types.ts";

/** The rollout form as entered (start or change). */
export interface RolloutValues {
  release_id: string;
  percentage: string;
  schedule: string;
  tester_tag: string;
}

export const EMPTY_ROLLOUT_FORM: RolloutValues = {
  release_id: "",
  percentage: "",
  schedule: "",
  tester_tag: "",
};

/** A schedule row of the form: its time as a datetime-local value (UTC) and its percentage. */
export interface ScheduleRow {
  at: string;
  percentage: string;
}

const DATETIME_LOCAL = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?$/;

export function rolloutFormValues(form: FormValues): RolloutValues {
  return {
    release_id: field(form, "release_id"),
    percentage: field(form, "percentage"),
    schedule: form["schedule_at"] === undefined
      ? field(form, "schedule")
      : scheduleFromRows(form["schedule_at"], form["schedule_percentage"] ?? []),
    tester_tag: field(form, "tester_tag"),
  };
}

/** Whether a schedule row of the form has a time or a percentage but not both. */
export function hasHalfFilledScheduleRow(form: FormValues): boolean {
  const times = form["schedule_at"] ?? [];
  const percentages = form["schedule_percentage"] ?? [];
  return times.some((at, i) => (at.trim() === "") !== ((percentages[i] ?? "").trim() === ""));
}

/** The rows as `TIME=PERCENT` steps; a row left empty is dropped, a half-filled one kept. */
function scheduleFromRows(times: readonly string[], percentages: readonly string[]): string {
  const steps: string[] = [];
  times.forEach((raw, i) => {
    const at = raw.trim();
    const percentage = (percentages[i] ?? "").trim();
    if (at === "" && percentage === "") return;
    steps.push(
      `${DATETIME_LOCAL.test(at) ? `${at}${at.length === 16 ? ":00" : ""}Z` : at}=${percentage}`,
    );
  });
  return steps.join(", ");
}

/** A `TIME=PERCENT` schedule text as form rows, times as datetime-local values in UTC. */
export function scheduleRows(schedule: string): ScheduleRow[] {
  return schedule.split(/[,\n]/).map((part) => part.trim()).filter((part) => part !== "").map(
    (part) => {
      const sign = part.lastIndexOf("=");
      const at = sign < 0 ? part : part.slice(0, sign).trim();
      const ms = /(z|[+-]\d\d:\d\d)$/i.test(at) ? Date.parse(at) : NaN;
      const iso = Number.isNaN(ms) ? null : new Date(ms).toISOString();
      const local = iso === null ? at : iso.slice(0, iso.slice(17, 19) === "00" ? 16 : 19);
      return { at: local, percentage: sign < 0 ? "" : part.slice(sign + 1).trim() };
    },
  );
}
