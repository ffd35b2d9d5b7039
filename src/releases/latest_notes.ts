/**
 * What the project page says about which release clients get (docs/publishing.md
 * "Drafts and a chosen latest", docs/rollouts.md): read off the same offer
 * the client API places each client by (src/releases/offer.ts
 * `offerAt`): the latest release and why it is latest (the newest active
 * upload, or chosen), and a staged rollout's split, running or halted; and
 * whether an active release with a higher-looking version is offered to no
 * one. The service itself gives versions no meaning
 * (../shared/spec/client-api.md "1. What the service does"): that is a hint
 * for the admin only.
 */
import type { Release } from "./types.ts";
import type { Rollback } from "./release_policy.ts";
import type { Offer } from "./offer.ts";

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
  /** The release clients get as latest (all of them without a running rollout), or null. */
  latest: Release | null;
  /** Why: the newest active upload, or chosen by an admin or a token; null without a latest. */
  reason: "newest" | "chosen" | null;
  /** A staged rollout in force: its release, its percentage now, its tester tag, whether halted. */
  rollout: {
    release: Release;
    percentage: number;
    testerTag: string | null;
    halted: boolean;
  } | null;
  /**
   * The active release with the highest-looking version, when that is higher
   * than the latest's and it is not the rollout's (which the rollout offers).
   */
  higher: Release | null;
  /**
   * The rollback in force: the latest is the release a rollback went back to and the release
   * rolled back is offered to no one (a halted rollout's, or no longer the latest).
   */
  rolledBack: Rollback | null;
}

/**
 * Who gets which release by `offer` (the client API's), why the latest is
 * latest (`choice`: the chosen latest's id, if any), a higher-looking
 * active release among `releases` that is offered to no one, and whether the
 * project's last rollback (`rolledBack`) is what clients get now.
 */
export function latestNotes(
  releases: readonly Release[],
  { offer, choice, rolledBack = null }: {
    offer: Offer;
    choice: number | null;
    rolledBack?: Rollback | null;
  },
): LatestNotes {
  const latest = offer.latest;
  if (latest === null || latest.state !== "active") {
    return { latest: null, reason: null, rollout: null, higher: null, rolledBack: null };
  }
  const rollout = offer.rollout === null ? null : {
    release: offer.rollout.release,
    percentage: offer.percentage,
    testerTag: offer.rollout.record.tester_tag,
    halted: offer.rollout.record.halted,
  };
  let higher: Release | null = null;
  for (const release of releases) {
    if (release.state !== "active" || release.id === latest.id) continue;
    if (release.id === rollout?.release.id) continue;
    if (compareVersionLooks(release.version, (higher ?? latest).version) === 1) higher = release;
  }
  const inForce = rolledBack !== null && rolledBack.to_id === latest.id &&
    (rollout === null || rollout.halted || rollout.release.id !== rolledBack.release_id);
  return {
    latest,
    reason: choice === latest.id ? "chosen" : "newest",
    rollout,
    higher,
    rolledBack: inForce ? rolledBack : null,
  };
}
