/**
 * The reference client's version rule: when both versions parse as semver (an
 * optional leading `v` is allowed), the release is newer when it has higher
 * semver precedence; otherwise any difference counts as an update (plain
 * inequality).
 */

const SEMVER =
  /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$/i;

export interface SemVer {
  core: [bigint, bigint, bigint];
  pre: string[];
}

export function parseSemver(text: string): SemVer | null {
  const m = SEMVER.exec(text.trim());
  if (!m) return null;
  return { core: [BigInt(m[1]), BigInt(m[2]), BigInt(m[3])], pre: m[4] ? m[4].split(".") : [] };
}

/**
 * Semver precedence of `a` against `b` (-1, 0 or 1; build metadata ignored),
 * or null when either is not a semantic version.
 */
export function compareVersions(a: string, b: string): -1 | 0 | 1 | null {
  const x = parseSemver(a), y = parseSemver(b);
  if (!x || !y) return null;
  for (let i = 0; i < 3; i++) {
    if (x.core[i] !== y.core[i]) return x.core[i] > y.core[i] ? 1 : -1;
  }
  // A version without pre-release identifiers ranks above one with them.
  if (!x.pre.length || !y.pre.length) {
    return x.pre.length === y.pre.length ? 0 : x.pre.length ? -1 : 1;
  }
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    if (i >= x.pre.length) return -1;
    if (i >= y.pre.length) return 1;
    const p = x.pre[i], q = y.pre[i];
    if (p === q) continue;
    const pNum = /^\d+$/.test(p), qNum = /^\d+$/.test(q);
    if (pNum && qNum) return BigInt(p) > BigInt(q) ? 1 : -1;
    if (pNum !== qNum) return pNum ? -1 : 1; // numeric identifiers rank lower
    return p > q ? 1 : -1;
  }
  return 0;
}

/** The version rule: semver precedence when both parse, otherwise plain inequality. */
export function isNewerVersion(candidate: string, current: string): boolean {
  const order = compareVersions(candidate, current);
  return order === null ? candidate.trim() !== current.trim() : order > 0;
}
