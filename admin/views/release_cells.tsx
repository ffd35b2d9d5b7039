/** The cells that describe a release, the same on the dashboard and on a project page. */
import type { Release } from "../../src/releases/types.ts";
import { humanBytes } from "../format.ts";
import { Breakable, StateBadge, Time } from "./components.tsx";

/**
 * What the project says about its releases beyond their state (docs/rollouts.md): each mark
 * is a badge beside the version wherever a release is listed.
 */
export interface ReleaseMarks {
  /** A staged rollout in force offers this release to some clients. */
  rolloutId: number | null;
  /** The rollback in force took this release back. */
  rolledBackId: number | null;
  criticalIds: readonly number[];
  /** The minimum supported version: a release with exactly this version is marked. */
  minimumVersion: string | null;
}

/** The badges of a release's marks, after "latest". */
export function ReleaseMarkBadges({ release, marks }: { release: Release; marks?: ReleaseMarks }) {
  if (marks === undefined) return null;
  const badges: ReadonlyArray<
    { on: boolean; kind: string; mark: string; label: string; title?: string }
  > = [
    {
      on: marks.rolloutId === release.id,
      kind: "rollout",
      mark: "rolling-out",
      label: "rolling out",
    },
    {
      on: marks.rolledBackId === release.id,
      kind: "rolled-back",
      mark: "rolled-back",
      label: "rolled back",
      title: "Rolled back: its clients are offered the release before it",
    },
    {
      on: marks.criticalIds.includes(release.id),
      kind: "critical",
      mark: "critical",
      label: "critical",
      title: "Critical update: clients are told to install it (X-Update-Critical)",
    },
    {
      on: marks.minimumVersion !== null && marks.minimumVersion === release.version,
      kind: "minimum",
      mark: "minimum",
      label: "minimum",
      title: "The minimum supported version: clients below it are told to update",
    },
  ];
  return (
    <>
      {badges.filter((badge) => badge.on).map(({ kind, mark, label, title }) => (
        <>
          {" "}
          <span
            class={`badge badge-${kind}`}
            data-mark={mark}
            {...(title === undefined ? {} : { title })}
          >
            {label}
          </span>
        </>
      ))}
    </>
  );
}

/** The column names of {@link ReleaseCells}, in order. */
export const RELEASE_COLUMNS = ["Version", "File", "Size", "Created", "State"];

export function ReleaseCells(
  { release, latest = false, notes = false, marks }: {
    release: Release;
    /** Rollout, rollback, critical and minimum-version badges (a project's own lists). */
    marks?: ReleaseMarks;
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
        <ReleaseMarkBadges release={release} marks={marks} />
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
      <CreatedAndStateCells release={release} />
    </>
  );
}

/** A release's Created and State cells, in every table of releases. */
export function CreatedAndStateCells({ release }: { release: Release }) {
  return (
    <>
      <td data-label="Created" class="nowrap">
        <Time iso={release.created_at} />
      </td>
      <td data-label="State">
        <StateBadge state={release.state} />
      </td>
    </>
  );
}
