/** The cells that describe a release, the same on the dashboard and on a project page. */
import type { Release } from "../../src/store/types.ts";
import { humanBytes } from "../format.ts";
import { Breakable, StateBadge, Time } from "./components.tsx";

/** The column names of {@link ReleaseCells}, in order. */
export const RELEASE_COLUMNS = ["Version", "File", "Size", "Created", "State"];

export function ReleaseCells(
  { release, latest = false, notes = false }: {
    release: Release;
    /** This is the release clients are served: labelled "latest". */
    latest?: boolean;
    /** Show the release notes (folded) under the version. */
    notes?: boolean;
  },
) {
  return (
    <>
      <td data-label="Version">
        <strong>
          <Breakable text={release.version} />
        </strong>
        {latest && (
          <>
            {" "}
            <span
              class="badge badge-latest"
              title="Clients asking for the latest release get this one"
            >
              latest
            </span>
          </>
        )}
        {release.build && (
          <span class="muted">
            build <Breakable text={release.build} />
          </span>
        )}
        <span class="muted">id {release.id}</span>
        {notes && release.release_notes && (
          <details class="notes">
            <summary>Release notes</summary>
            <p class="pre">{release.release_notes}</p>
          </details>
        )}
      </td>
      <td data-label="File" class="break">
        <Breakable text={release.filename} />
        <span class="muted">{release.content_type}</span>
      </td>
      <td data-label="Size" class="nowrap" title={`${release.size_bytes} bytes`}>
        {humanBytes(release.size_bytes)}
      </td>
      <td data-label="Created" class="nowrap">
        <Time iso={release.created_at} />
      </td>
      <td data-label="State">
        <StateBadge state={release.state} />
      </td>
    </>
  );
}
