/**
 * Downloads per day as an inline SVG bar chart, drawn on the server: no
 * script, no library, no CDN. The SVG scales to the width of the page (a phone
 * too); a table with the same numbers follows it for screen readers.
 */
import type { Child } from "hono/jsx";
import type { DailyDownloads } from "../../src/stats/downloads.ts";

/** The chart's ranges, in days. */
export const CHART_RANGES = [30, 90] as const;
export type ChartRange = typeof CHART_RANGES[number];

/** `?days=90` picks the long range; anything else is the first (30 days). */
export function chartRange(raw: string | undefined): ChartRange {
  return CHART_RANGES.find((days) => String(days) === raw) ?? CHART_RANGES[0];
}

const WIDTH = 600;
const HEIGHT = 160;
/** Longer series get a weekly chart for narrow screens. */
const WEEKLY_FROM = 60;

/** Sums of 7 days each, the newest week ending with the last day (labelled by its first day). */
function byWeek(series: DailyDownloads[]): DailyDownloads[] {
  const weeks: DailyDownloads[] = [];
  for (let end = series.length; end > 0; end -= 7) {
    const days = series.slice(Math.max(0, end - 7), end);
    weeks.unshift({
      day: days[0].day,
      downloads: days.reduce((sum, { downloads }) => sum + downloads, 0),
    });
  }
  return weeks;
}

/**
 * A bar chart's drawing area, hidden from assistive technology (a table beside
 * it carries the numbers), stretched to its box, with the axis line at the bottom.
 */
export function ChartSvg(
  { class: className, width, height, children }: {
    class: string;
    width: number;
    height: number;
    children?: Child;
  },
) {
  return (
    <svg
      class={className}
      viewBox={`0 0 ${width} ${height}`}
      preserveAspectRatio="none"
      role="presentation"
      aria-hidden="true"
      focusable="false"
    >
      <line x1="0" y1={height - 0.5} x2={width} y2={height - 0.5} class="chart-axis-line" />
      {children}
    </svg>
  );
}

function Bars({ series, class: className }: { series: DailyDownloads[]; class: string }) {
  const max = Math.max(1, ...series.map(({ downloads }) => downloads));
  const slot = WIDTH / series.length;
  const gap = series.length > 60 ? 1 : 2;
  return (
    <ChartSvg class={className} width={WIDTH} height={HEIGHT}>
      {series.map(({ day, downloads }, i) => {
        const height = downloads === 0 ? 0 : Math.max(2, (downloads / max) * (HEIGHT - 8));
        return (
          <rect
            x={(i * slot + gap / 2).toFixed(2)}
            y={(HEIGHT - height).toFixed(2)}
            width={(slot - gap).toFixed(2)}
            height={height.toFixed(2)}
            class="chart-bar"
            data-day={day}
            data-downloads={String(downloads)}
          >
            <title>{day}: {downloads}</title>
          </rect>
        );
      })}
    </ChartSvg>
  );
}

export function DownloadChart(
  { series, days, path, title }: {
    series: DailyDownloads[];
    days: ChartRange;
    /** The page's address, for the 30/90-day links. */
    path: string;
    title: string;
  },
) {
  const total = series.reduce((sum, { downloads }) => sum + downloads, 0);
  const max = Math.max(1, ...series.map(({ downloads }) => downloads));
  // A phone has no room for 90 daily bars: it shows weeks instead (CSS picks one).
  const weekly = series.length > WEEKLY_FROM ? byWeek(series) : [];
  const first = series[0]?.day ?? "";
  const last = series[series.length - 1]?.day ?? "";
  return (
    <section
      class={weekly.length > 0 ? "card chart chart-has-weekly" : "card chart"}
      id="downloads"
      data-chart="downloads"
      data-days={String(days)}
      aria-labelledby="chart-title"
    >
      <div class="chart-head">
        <h2 id="chart-title">{title}</h2>
        <nav class="chart-ranges" aria-label="Chart range">
          {CHART_RANGES.map((range) => (
            <a
              href={`${path}?days=${range}#downloads`}
              class="button button-small"
              aria-current={range === days ? "true" : undefined}
            >
              {range} days
            </a>
          ))}
        </nav>
      </div>
      <p class="muted">
        <strong data-downloads-total>{total}</strong> downloads in the last {days} days, at most
        {" "}
        {total === 0 ? 0 : max} on one day.
      </p>
      <Bars series={series} class="chart-svg chart-svg-daily" />
      {weekly.length > 0 && (
        <>
          <Bars series={weekly} class="chart-svg chart-svg-weekly" />
          <p class="muted chart-weekly-note">Per week on a narrow screen (7 days a bar).</p>
        </>
      )}
      <div class="chart-axis" aria-hidden="true">
        <span>{first}</span>
        <span>{last}</span>
      </div>
      <table class="visually-hidden">
        <caption>{title}, last {days} days</caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Downloads</th>
          </tr>
        </thead>
        <tbody>
          {series.map(({ day, downloads }) => (
            <tr>
              <td>{day}</td>
              <td>{downloads}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
