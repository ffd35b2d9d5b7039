/**
 * The project page's card of server-made deltas and patches: from how many older releases each
 * new one gets a Velopack delta (a `.nupkg`) or a patch (any other file).
 */
import type { Project } from "../../src/projects/types.ts";
import { MAX_DELTAS_KEPT } from "../../src/velopack/settings.ts";
import type { FormError } from "../types.ts";
import { FormErrorSummary, InputField } from "./components.tsx";
import { CsrfInput, type PageContext } from "./layout.tsx";

export interface VelopackCardProps {
  ctx: PageContext;
  project: Project;
  /** The "deltas kept" field as stored or as entered. */
  value: string;
  error?: FormError | null;
}

export function VelopackCard({ ctx, project, value, error }: VelopackCardProps) {
  return (
    <section class="card" id="velopack" aria-labelledby="velopack-title">
      <h2 id="velopack-title">Server-made deltas and patches</h2>
      <p class="hint">
        For each new release, the service builds a delta from each of this many older releases
        straight to it: a Velopack delta package for a{" "}
        <code>.nupkg</code>, a patch for the reference client for any other file. An app that many
        versions behind downloads one small delta; older versions download the whole file.
      </p>
      <FormErrorSummary error={error} />
      <form method="post" action={`/admin/projects/${project.slug}/velopack`} class="stack">
        <CsrfInput token={ctx.csrfToken} />
        <InputField
          id="velopack-deltas-kept"
          name="deltas_kept"
          label="Older releases to build from"
          type="number"
          min="0"
          max={String(MAX_DELTAS_KEPT)}
          inputmode="numeric"
          hint={`0 to ${MAX_DELTAS_KEPT}; 0 builds none. Applies to releases uploaded from now on.`}
          value={value}
          error={error}
        />
        <div class="actions">
          <button type="submit" class="button button-primary">Save</button>
        </div>
      </form>
    </section>
  );
}
