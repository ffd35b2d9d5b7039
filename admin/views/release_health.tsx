/**
 * Release health on a project's rollout page, in the manner of the Play Console's staged
 * rollouts and Sentry's release health: the stages the rollout went through with their
 * installs, failure rate and why each ended (the gates or a person), the installs and the
 * failure rate over time against the gates' thresholds (an hourly axis for up to three days
 * of data, a daily one beyond), and the rollout's history from the audit log.
 */
import type { AuditEntry } from "../../src/kv/audit.ts";
import type { ReportHour } from "../../src/reports/reports.ts";
import type { GateStage } from "../../src/rollouts/gate_records.ts";
import { ChartSvg } from "./chart.tsx";
import { Breakable, DataTable, Time } from "./components.tsx";

/**
 * One stage of the gated rollout, as the page shows it: a running one's outcome is `running`;
 * `why` is who ended it and why (the gates' reason, or the person and what they did).
 */
export type StageRow = GateStage & { why: string | null };

/** One rollout change from the audit log, as the history table prints it. */
type HistoryRow = Pick<AuditEntry, "at" | "actor" | "action" | "details">;

export interface HealthProps {
  /** The release the charts are of: the rollout's, or the newest active one. */
  release: { id: number; version: string } | null;
  /** Its counted reports per hour, oldest first (the last 30 days). */
  hours: readonly ReportHour[];
  nowMs: number;
  /** The gates' failure thresholds (%), when gates run the rollout. */
  thresholds: { advance_below: number; halt_at: number } | null;
  stages: readonly StageRow[];
  history: readonly HistoryRow[];
}

const HOUR_MS = 3_600_000;
/** Up to this many hours of data the chart has a bar per hour; beyond, a bar per day. */
const HOURLY_UP_TO = 72;
/** The hourly chart spans a day at least, so one hour of data is one bar, not the width. */
const MIN_HOURS = 24;
const WIDTH = 600;
const HEIGHT = 110;

interface Bucket {
  /** Start of the bucket (ms). */
  start: number;
  installed: number;
  failed: number;
}

/** The report hours in equal buckets ending now: hours, or days past three days of data. */
function healthBuckets(
  hours: readonly ReportHour[],
  nowMs: number,
): { size: "hour" | "day"; buckets: Bucket[] } {
  const nowHour = Math.floor(nowMs / HOUR_MS);
  const first = hours[0]?.hour ?? nowHour;
  const span = nowHour - first + 1;
  const size = span <= HOURLY_UP_TO ? "hour" : "day";
  const width = size === "hour" ? 1 : 24;
  const count = size === "hour" ? Math.max(MIN_HOURS, span) : Math.ceil(span / 24);
  const lastStart = size === "hour" ? nowHour : Math.floor(nowHour / 24) * 24;
  const buckets: Bucket[] = Array.from({ length: count }, (_, i) => ({
    start: (lastStart - (count - 1 - i) * width) * HOUR_MS,
    installed: 0,
    failed: 0,
  }));
  const firstStart = buckets[0].start / HOUR_MS;
  for (const row of hours) {
    const index = Math.floor((row.hour - firstStart) / width);
    if (index < 0 || index >= count) continue;
    buckets[index].installed += row.installed;
    buckets[index].failed += row.failed;
  }
  return { size, buckets };
}

function rate(failed: number, installed: number): number {
  const all = failed + installed;
  return all === 0 ? 0 : (failed / all) * 100;
}

function percent(value: number): string {
  return `${Math.round(value * 10) / 10}%`;
}

function bucketLabel(start: number, size: "hour" | "day"): string {
  const iso = new Date(start).toISOString();
  return size === "hour" ? `${iso.slice(5, 10)} ${iso.slice(11, 13)}:00` : iso.slice(0, 10);
}

export function ReleaseHealth(props: HealthProps) {
  const { release, stages, history } = props;
  return (
    <section class="card" id="release-health" aria-labelledby="release-health-title">
      <h2 id="release-health-title">
        Release health{release !== null && (
          <>
            {" "}of <Breakable text={release.version} />
          </>
        )}
      </h2>
      {stages.length > 0 && <StagesTable stages={stages} />}
      {release === null
        ? <p class="muted">No active release yet.</p>
        : props.hours.length === 0
        ? <p class="muted" data-health="none">No install reports for {release.version} yet.</p>
        : <HealthCharts {...props} />}
      {history.length > 0 && <HistoryTable history={history} />}
    </section>
  );
}

function StagesTable({ stages }: { stages: readonly StageRow[] }) {
  return (
    <div data-gate-stages>
      <h3>Stages</h3>
      <DataTable columns={["Stage", "Started", "Ended", "Installs", "Failures", "Outcome"]}>
        {stages.map((row) => (
          <tr data-stage={String(row.percentage)}>
            <td data-label="Stage" class="nowrap">{row.percentage}%</td>
            <td data-label="Started" class="nowrap">
              <Time iso={row.started_at} />
            </td>
            <td data-label="Ended" class="nowrap">
              {row.ended_at === null
                ? <span class="muted">running</span>
                : <Time iso={row.ended_at} />}
            </td>
            <td data-label="Installs" class="num" data-stage-installs>{row.installed}</td>
            <td data-label="Failures" class="num nowrap">
              <span data-stage-failures>{row.failed}</span>{" "}
              <span class="muted">({percent(rate(row.failed, row.installed))})</span>
            </td>
            <td data-label="Outcome">
              <strong>{row.outcome ?? ""}</strong>
              {row.why !== null && <span class="muted" data-stage-why>{row.why}</span>}
            </td>
          </tr>
        ))}
      </DataTable>
    </div>
  );
}

function HealthCharts({ release, hours, nowMs, thresholds }: HealthProps) {
  const { size, buckets } = healthBuckets(hours, nowMs);
  const installs = buckets.reduce((sum, bucket) => sum + bucket.installed, 0);
  const failed = buckets.reduce((sum, bucket) => sum + bucket.failed, 0);
  const maxCount = Math.max(1, ...buckets.map((bucket) => bucket.installed + bucket.failed));
  const rates = buckets.map((bucket) => rate(bucket.failed, bucket.installed));
  const top = Math.max(
    1,
    ...rates,
    ...(thresholds === null ? [] : [thresholds.halt_at * 1.25]),
  );
  const slot = WIDTH / buckets.length;
  const gap = Math.min(2, slot / 4);
  const y = (value: number, max: number) => HEIGHT - (value / max) * (HEIGHT - 6);
  const ticks = [0, 1, 2, 3, 4].map((i) =>
    buckets[Math.round((i * (buckets.length - 1)) / 4)].start
  );
  const axis = (
    <div class="chart-axis chart-axis-ticks" aria-hidden="true">
      {ticks.map((start, i) => <span key={i}>{bucketLabel(start, size)}</span>)}
    </div>
  );
  const unit = size === "hour" ? "hour" : "day";
  return (
    <div class="health-charts" data-report-chart data-bucket={size}>
      <figure class="chart">
        <figcaption>
          <strong>Installs per {unit}</strong>{" "}
          <span class="muted">
            {installs} installed, {failed} failed{" "}
            <span class="nowrap">({percent(rate(failed, installs))})</span> in the last{" "}
            {size === "hour" ? `${buckets.length} hours` : `${buckets.length} days`} (UTC)
          </span>
        </figcaption>
        <ChartSvg class="chart-svg health-svg" width={WIDTH} height={HEIGHT}>
          {buckets.map((bucket, i) => {
            const x = (i * slot + gap / 2).toFixed(2);
            const w = Math.max(0.5, slot - gap).toFixed(2);
            const total = bucket.installed + bucket.failed;
            if (total === 0) return null;
            return (
              <g data-bucket-start={String(bucket.start)}>
                <rect
                  x={x}
                  y={y(total, maxCount).toFixed(2)}
                  width={w}
                  height={(HEIGHT - y(bucket.installed, maxCount)).toFixed(2)}
                  class="chart-bar"
                />
                <rect
                  x={x}
                  y={y(bucket.failed, maxCount).toFixed(2)}
                  width={w}
                  height={(HEIGHT - y(bucket.failed, maxCount)).toFixed(2)}
                  class="chart-bar chart-bar-failed"
                />
              </g>
            );
          })}
        </ChartSvg>
        {axis}
      </figure>
      <figure class="chart">
        <figcaption>
          <strong>Failure rate per {unit}</strong> {thresholds !== null && (
            <span class="muted">
              against the gates: advance below{" "}
              <span class="nowrap">{thresholds.advance_below}%</span>, halt at{" "}
              <span class="nowrap">{thresholds.halt_at}%</span> (dashed)
            </span>
          )}
        </figcaption>
        <ChartSvg class="chart-svg health-svg" width={WIDTH} height={HEIGHT}>
          {thresholds !== null && (
            <>
              <ThresholdLine kind="advance" y={y(thresholds.advance_below, top)} />
              <ThresholdLine kind="halt" y={y(thresholds.halt_at, top)} />
            </>
          )}
          {buckets.map((bucket, i) =>
            bucket.installed + bucket.failed === 0 ? null : (
              <rect
                x={(i * slot + gap / 2).toFixed(2)}
                y={y(Math.max(rates[i], top / 100), top).toFixed(2)}
                width={Math.max(0.5, slot - gap).toFixed(2)}
                height={(HEIGHT - y(Math.max(rates[i], top / 100), top)).toFixed(2)}
                class={thresholds !== null && rates[i] >= thresholds.halt_at
                  ? "chart-bar chart-bar-failed"
                  : "chart-bar chart-bar-rate"}
              />
            )
          )}
        </ChartSvg>
        {axis}
      </figure>
      <div class="visually-hidden">
        <table class="data-table" data-report-hours>
          <caption>Installs and failures of {release?.version} per {unit} (UTC)</caption>
          <thead>
            <tr>
              <th scope="col">{size === "hour" ? "Hour (UTC)" : "Day (UTC)"}</th>
              <th scope="col">Installs</th>
              <th scope="col">Failures</th>
            </tr>
          </thead>
          <tbody>
            {buckets.filter((bucket) => bucket.installed + bucket.failed > 0).map((bucket) => (
              <tr>
                <td>{bucketLabel(bucket.start, size)}</td>
                <td>{bucket.installed}</td>
                <td>{bucket.failed}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

/** Who did what to the rollout, newest first: the gates (with their reason) or a person. */
function HistoryTable({ history }: { history: readonly HistoryRow[] }) {
  return (
    <div data-rollout-history>
      <h3>What changed, and why</h3>
      <DataTable columns={["When", "Who", "Change", "Why"]}>
        {history.map((row) => (
          <tr>
            <td data-label="When" class="nowrap">
              <Time iso={row.at} />
            </td>
            <td data-label="Who">{row.actor}</td>
            <td data-label="Change" class="nowrap">{row.action}</td>
            <td data-label="Why" class="wrap">{row.details}</td>
          </tr>
        ))}
      </DataTable>
    </div>
  );
}

/** A gate's threshold across the failure-rate chart, dashed (style.css `.chart-threshold`). */
function ThresholdLine({ kind, y }: { kind: "advance" | "halt"; y: number }) {
  return (
    <line
      x1="0"
      x2={WIDTH}
      y1={y.toFixed(2)}
      y2={y.toFixed(2)}
      class={`chart-threshold chart-threshold-${kind}`}
      data-threshold={kind}
    />
  );
}
