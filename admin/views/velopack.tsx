/** The project page's Velopack card: how many older releases get a server-made delta. */
import type { Project } from "../../src/store/types.ts";
import { MAX_DELTAS_KEPT } from "../../src/store/velopack.ts";
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
      <h2 id="velopack-title">Velopack deltas</h2>
      <p class="hint">
        For each new Velopack release (a{" "}
        <code>.nupkg</code>), the service builds a delta package from each of this many older
        releases straight to it, so an app that many versions behind downloads one small delta.
        Older versions download the full package. Every other file gets a patch from as many older
        releases for the reference client.
      </p>
      <FormErrorSummary error={error} />
      <form method="post" action={`/admin/projects/${project.slug}/velopack`} class="stack">
        <CsrfInput token={ctx.csrfToken} />
        <InputField
          id="velopack-deltas-kept"
          name="deltas_kept"
          label="Deltas kept"
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
