/**
 * What the project page says about its latest release (docs/publishing.md
 * "Drafts and a chosen latest"): which release clients get and why (the
 * newest active upload, or chosen), and whether an active release with a
 * higher-looking version is not the latest. The service itself gives
 * versions no meaning (../shared/spec/client-api.md "1. What the service does"):
 * this is a hint for the admin only.
 */
import type { Release } from "../store/mod.ts";

const VERSION = /^v?(\d+(?:\.\d+)*)(?:[-+~_.]?(.*))?$/i;

/**
 * How `a` compares with `b` by looks: dotted numbers numerically (1.10 > 1.9,
 * 2.0 = 2.0.0), then a version without a suffix above one with it
 * (2.0.0 > 2.0.0-beta.1), then the suffixes with their numbers compared as
 * numbers. Null when either does not start with a number.
 */
export function compareVersionLooks(a: string, b: string): -1 | 0 | 1 | null {
  const x = VERSION.exec(a.trim()), y = VERSION.exec(b.trim());
  if (x === null || y === null) return null;
  const xs = x[1].split(".").map(Number), ys = y[1].split(".").map(Number);
  for (let i = 0; i < Math.max(xs.length, ys.length); i++) {
    const p = xs[i] ?? 0, q = ys[i] ?? 0;
    if (p !== q) return p > q ? 1 : -1;
  }
  const xSuffix = x[2] ?? "", ySuffix = y[2] ?? "";
  if (xSuffix === ySuffix) return 0;
  if (xSuffix === "" || ySuffix === "") return xSuffix === "" ? 1 : -1;
  const order = xSuffix.localeCompare(ySuffix, "en", { numeric: true });
  return order === 0 ? 0 : order > 0 ? 1 : -1;
}

export interface LatestNotes {
  /** The release clients get as latest, or null. */
  latest: Release | null;
  /** Why: the newest active upload, or chosen by an admin or a token; null without a latest. */
  reason: "newest" | "chosen" | null;
  /** The active release with the highest-looking version, when that is higher than the latest's. */
  higher: Release | null;
}

/** The latest release of `releases` (all of a project's), its reason, and a higher-looking one. */
export function latestNotes(
  releases: readonly Release[],
  { latestId, choice }: { latestId: number | null; choice: number | null },
): LatestNotes {
  const latest = releases.find((release) => release.id === latestId && release.state === "active");
  if (latest === undefined) return { latest: null, reason: null, higher: null };
  let higher: Release | null = null;
  for (const release of releases) {
    if (release.state !== "active" || release.id === latest.id) continue;
    if (compareVersionLooks(release.version, (higher ?? latest).version) === 1) higher = release;
  }
  return { latest, reason: choice === latest.id ? "chosen" : "newest", higher };
}
