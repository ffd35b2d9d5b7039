/** Order statistics of a benchmark's samples, for the figures its rows report. */

/**
 * The value below which `p` percent of the samples lie (nearest rank, rounded down; the largest
 * sample for p near 100). `values` need not be sorted.
 */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** The middle sample; of an even count, the upper of the two middle ones. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
