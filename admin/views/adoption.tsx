/**
 * The adoption card of a project page (docs/rollouts.md "Adoption"): for
 * each release its distinct clients in the last 1, 7 and 30 days, the share
 * on the latest, stale clients, and an inline SVG drawn on the server (no
 * script) of the adoption share per day (the clients last seen that day, one
 * colour per release, each day 100%) with a date axis, and the table as its
 * fallback for screen readers and text.
 */
import type { AdoptionFigures } from "../../src/reports/adoption.ts";
import { DataTable } from "./components.tsx";

const WIDTH = 600;
const HEIGHT = 120;
const DAYS = 30;
const DAY_MS = 86_400_000;
/** Fills for the releases in the chart, newest first; more releases reuse the last. */
const FILLS = ["#2f6fdf", "#e0892b", "#3b9b5a", "#9a5bd1", "#8a8f98"];

export interface AdoptionCardProps {
  figures: AdoptionFigures;
  /** Today as a day number (UTC days since the epoch). */
  today: number;
  latestId: number | null;
  /** Versions of the releases in the figures, by id. */
  versions: ReadonlyMap<number, string>;
}

function percent(part: number, whole: number): string {
  return whole === 0 ? "–" : `${Math.round((part / whole) * 1000) / 10}%`;
}

export function AdoptionCard({ figures, today, latestId, versions }: AdoptionCardProps) {
  const ids = [...figures.releases.keys()].sort((a, b) => b - a);
  const onLatest = latestId === null ? 0 : figures.releases.get(latestId)?.d30 ?? 0;
  return (
    <section class="card" id="adoption" aria-labelledby="adoption-title">
      <h2 id="adoption-title">Adoption</h2>
      {figures.total.d30 === 0
        ? (
          <p class="muted" data-adoption-share="none">
            No client has checked for updates in the last 30 days
            {figures.stale > 0 && (
              <>
                ; <span data-adoption-stale={String(figures.stale)}>{figures.stale}</span>{" "}
                {figures.stale === 1 ? "was" : "were"} last seen 30 to 90 days ago (stale)
              </>
            )}.
          </p>
        )
        : (
          <p data-adoption-share={percent(onLatest, figures.total.d30)}>
            <strong>{percent(onLatest, figures.total.d30)}</strong> of the {figures.total.d30}{" "}
            {figures.total.d30 === 1
              ? "client seen in the last 30 days is"
              : "clients seen in the last 30 days are"} on the latest release;{" "}
            <span data-adoption-stale={String(figures.stale)}>{figures.stale}</span>{" "}
            more were last seen 30 to 90 days ago (stale).
          </p>
        )}
      {ids.length > 0 && (
        <>
          <Chart figures={figures} today={today} ids={ids} />
          <DataTable columns={["Release", "Today", "7 days", "30 days", "Share (30 days)"]}>
            {ids.map((id, index) => {
              const counts = figures.releases.get(id)!;
              return (
                <tr data-adoption-release-id={String(id)}>
                  <td data-label="Release">
                    <svg
                      class="adoption-swatch"
                      viewBox="0 0 10 10"
                      aria-hidden="true"
                      focusable="false"
                    >
                      <rect
                        width="10"
                        height="10"
                        fill={FILLS[Math.min(index, FILLS.length - 1)]}
                      />
                    </svg>{" "}
                    {versions.get(id) ?? `release ${id}`}
                    {id === latestId && (
                      <>
                        {" "}
                        <span class="badge badge-latest">latest</span>
                      </>
                    )}
                  </td>
                  <td data-label="Today" data-adoption-d1>{String(counts.d1)}</td>
                  <td data-label="7 days" data-adoption-d7>{String(counts.d7)}</td>
                  <td data-label="30 days" data-adoption-d30>{String(counts.d30)}</td>
                  <td data-label="Share (30 days)">{percent(counts.d30, figures.total.d30)}</td>
                </tr>
              );
            })}
          </DataTable>
        </>
      )}
    </section>
  );
}

/**
 * The adoption share over time: per day of the last 30, the clients last seen that day split
 * by release as a share of that day's (each bar is 100%), with a date axis.
 */
function Chart(
  { figures, today, ids }: { figures: AdoptionFigures; today: number; ids: number[] },
) {
  const days = Array.from({ length: DAYS }, (_, i) => today - DAYS + 1 + i);
  const totals = days.map((day) =>
    ids.reduce((sum, id) => sum + (figures.daily.get(id)?.get(day) ?? 0), 0)
  );
  const slot = WIDTH / DAYS;
  const date = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
  const ticks = [0, 10, 20, DAYS - 1].map((i) => days[i]);
  return (
    <figure class="chart" data-adoption-chart>
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        preserveAspectRatio="none"
        role="presentation"
        aria-hidden="true"
        focusable="false"
        class="adoption-chart"
      >
        <line x1="0" y1={HEIGHT - 0.5} x2={WIDTH} y2={HEIGHT - 0.5} class="chart-axis-line" />
        {days.flatMap((day, i) => {
          let top = HEIGHT;
          return ids.map((id, index) => {
            const count = figures.daily.get(id)?.get(day) ?? 0;
            const height = totals[i] === 0 ? 0 : (count / totals[i]) * HEIGHT;
            top -= height;
            return count === 0 ? null : (
              <rect
                x={(i * slot + 1).toFixed(1)}
                y={top.toFixed(1)}
                width={(slot - 2).toFixed(1)}
                height={height.toFixed(1)}
                fill={FILLS[Math.min(index, FILLS.length - 1)]}
              >
                <title>
                  {date(day)}: {count} of {totals[i]}
                </title>
              </rect>
            );
          });
        })}
      </svg>
      <div class="chart-axis chart-axis-ticks" aria-hidden="true">
        {ticks.map((day) => <span key={day}>{date(day)}</span>)}
      </div>
      <figcaption class="hint">
        Adoption share per day: the clients last seen each day (UTC) by release, each bar 100%; the
        table has the figures.
      </figcaption>
    </figure>
  );
}
