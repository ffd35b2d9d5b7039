/** The project page's retention card: the policy form and what it would delete now (dry run). */
import type { RetentionPlan } from "../../src/lifecycle/retention.ts";
import type { Project } from "../../src/projects/types.ts";
import { humanBytes } from "../format.ts";
import type { FormError } from "../types.ts";
import { can } from "../roles.ts";
import { DataTable, FormErrorSummary, InputField, StateBadge, Time } from "./components.tsx";
import { CsrfInput, type PageContext } from "./layout.tsx";

/** The form's values as entered (empty: that rule is off). */
export interface RetentionValues {
  keep_active: string;
  archived_max_days: string;
}

export interface RetentionCardProps {
  ctx: PageContext;
  project: Project;
  values: RetentionValues;
  /** What the policy in the form would delete now; null when the form has an error. */
  plan: RetentionPlan | null;
  /** True when `values` are a preview that is not saved yet. */
  preview: boolean;
  error?: FormError | null;
  /** Bytes of all the project's files (every state). */
  storedBytes: number;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

export function RetentionCard(
  { ctx, project, values, plan, preview, error, storedBytes }: RetentionCardProps,
) {
  const off = values.keep_active.trim() === "" && values.archived_max_days.trim() === "";
  const editable = can(ctx.role, "POST /admin/projects/:slug/retention");
  return (
    <section class="card" id="retention" aria-labelledby="retention-title">
      <h2 id="retention-title">Retention</h2>
      <p class="hint">
        The project's files take{" "}
        <strong data-project-bytes={storedBytes}>
          {humanBytes(storedBytes)}
        </strong>. A policy deletes releases and their files in the background (about once an hour);
        the latest release and drafts are never deleted.
        {editable && " Leave a field empty to turn that rule off."}
      </p>
      <FormErrorSummary error={error} />
      {!editable && (
        <p data-retention-policy>
          {off ? "No retention policy: nothing is deleted." : [
            values.keep_active.trim() !== "" &&
            `The newest ${values.keep_active} active releases are kept.`,
            values.archived_max_days.trim() !== "" &&
            `Archived releases older than ${values.archived_max_days} days are deleted.`,
          ].filter(Boolean).join(" ")}
        </p>
      )}
      {editable && (
        <form method="post" action={`/admin/projects/${project.slug}/retention`} class="stack">
          <CsrfInput token={ctx.csrfToken} />
          <InputField
            id="retention-keep-active"
            name="keep_active"
            label="Keep the newest active releases"
            type="number"
            min="1"
            inputmode="numeric"
            optional="optional"
            hint="Active releases beyond this many (newest first) are deleted."
            value={values.keep_active}
            error={error}
          />
          <InputField
            id="retention-archived-days"
            name="archived_max_days"
            label="Delete archived releases older than (days)"
            type="number"
            min="1"
            inputmode="numeric"
            optional="optional"
            hint="Counted from the release's upload."
            value={values.archived_max_days}
            error={error}
          />
          <div class="actions">
            <button type="submit" name="action" value="preview" class="button">
              Preview (dry run)
            </button>
            <button type="submit" name="action" value="save" class="button button-primary">
              Save policy
            </button>
          </div>
        </form>
      )}
      {plan !== null && (editable || !off) && (
        <div
          class="subsection"
          data-retention-plan
          data-count={plan.candidates.length}
          data-bytes={plan.bytes}
        >
          <h3>
            {preview ? "This policy would delete now" : "The saved policy deletes on its next run"}
          </h3>
          {off
            ? <p class="hint">No policy: nothing is deleted.</p>
            : plan.candidates.length === 0
            ? <p class="hint">Nothing: no release matches the policy now.</p>
            : (
              <>
                <p>
                  {plural(plan.candidates.length, "release", "releases")}, {humanBytes(plan.bytes)}.
                </p>
                <DataTable columns={["Version", "State", "Uploaded", "Size", "Why"]}>
                  {plan.candidates.map(({ release, reason }) => (
                    <tr data-retention-release-id={release.id}>
                      <td data-label="Version">
                        <a href={`/admin/releases/${release.id}`}>{release.version}</a>
                      </td>
                      <td data-label="State">
                        <StateBadge state={release.state} />
                      </td>
                      <td data-label="Uploaded">
                        <Time iso={release.created_at} />
                      </td>
                      <td data-label="Size">{humanBytes(release.size_bytes)}</td>
                      <td data-label="Why">{reason}</td>
                    </tr>
                  ))}
                </DataTable>
              </>
            )}
          {preview && <p class="hint">Not saved yet: "Save policy" to keep it.</p>}
        </div>
      )}
    </section>
  );
}
