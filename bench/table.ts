/** Result rows: figures, ratio, target check; printed as a table and written as JSON. */

/**
 * What a row's target is compared with:
 * - `ratio`: the ratio (service ÷ baseline, or baseline ÷ service for a cost ratio);
 * - `service`: the service's own figure.
 */
export interface Target {
  of: "ratio" | "service";
  op: ">=" | "<=";
  value: number;
  unit?: string;
}

export interface Row {
  scenario: string;
  metric: string;
  unit: string;
  service: number | null;
  baseline: number | null;
  /** Name of the baseline, e.g. "Deno.serve" or "nginx sendfile". */
  baselineName: string;
  /** "service/baseline" (higher is better for the service) or "baseline/service" (a cost). */
  ratioOf: "service/baseline" | "baseline/service" | null;
  ratio: number | null;
  target: Target | null;
  /** null when there is no target or no figure to judge. */
  met: boolean | null;
  note?: string;
}

export interface RowInput {
  scenario: string;
  metric: string;
  unit: string;
  service: number | null;
  baseline?: number | null;
  baselineName?: string;
  ratioOf?: Row["ratioOf"];
  target?: Target | null;
  note?: string;
}

/** Builds a row: computes the ratio and judges the target. */
export function makeRow(input: RowInput): Row {
  const service = input.service ?? null;
  const baseline = input.baseline ?? null;
  const ratioOf = input.ratioOf ?? null;
  let ratio: number | null = null;
  if (ratioOf !== null && service !== null && baseline !== null) {
    const [top, bottom] = ratioOf === "service/baseline"
      ? [service, baseline]
      : [baseline, service];
    ratio = bottom === 0 ? null : top / bottom;
  }
  const target = input.target ?? null;
  let met: boolean | null = null;
  if (target !== null) {
    const figure = target.of === "ratio" ? ratio : service;
    if (figure !== null) met = target.op === ">=" ? figure >= target.value : figure <= target.value;
  }
  return {
    scenario: input.scenario,
    metric: input.metric,
    unit: input.unit,
    service,
    baseline,
    baselineName: input.baselineName ?? "",
    ratioOf,
    ratio,
    target,
    met,
    ...(input.note ? { note: input.note } : {}),
  };
}

/** Rows for a scenario that could not run: every figure empty, the reason in the note. */
export function skippedRows(rows: RowInput[], note: string): Row[] {
  return rows.map((row) => makeRow({ ...row, service: null, baseline: null, note }));
}

export function formatNumber(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return "-";
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString("en-US");
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

export function formatTarget(target: Target | null, row: Pick<Row, "unit" | "ratioOf">): string {
  if (target === null) return "";
  const op = target.op === ">=" ? "≥" : "≤";
  if (target.of === "ratio") {
    return `${row.ratioOf === "baseline/service" ? "cost" : "ratio"} ${op} ${target.value}`;
  }
  return `${op} ${target.value} ${target.unit ?? row.unit}`;
}

function formatMet(row: Row): string {
  if (row.target === null) return "";
  if (row.met === null) return "n/a";
  return row.met ? "yes" : "NO";
}

/** The table as aligned text, one row per line, notes below. */
export function formatTable(rows: Row[]): string {
  const header = ["scenario", "metric", "service", "baseline", "ratio", "target", "met?"];
  const notes: string[] = [];
  const lines = rows.map((row) => {
    let scenario = row.scenario;
    if (row.note) {
      // The same note (a skip reason) gets one number.
      if (!notes.includes(row.note)) notes.push(row.note);
      scenario += ` [${notes.indexOf(row.note) + 1}]`;
    }
    const baseline = row.baseline === null
      ? (row.baselineName ? "-" : "")
      : `${formatNumber(row.baseline)} (${row.baselineName})`;
    return [
      scenario,
      `${row.metric} (${row.unit})`,
      formatNumber(row.service),
      baseline,
      row.ratio === null ? "" : `${row.ratio.toFixed(2)}`,
      formatTarget(row.target, row),
      formatMet(row),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const numeric = new Set([2, 3, 4]);
  const render = (cells: string[]) =>
    cells.map((cell, i) => numeric.has(i) ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))
      .join("  ").trimEnd();
  return [
    render(header),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...lines.map(render),
    ...(notes.length > 0 ? ["", ...notes.map((note, i) => `[${i + 1}] ${note}`)] : []),
  ].join("\n");
}
