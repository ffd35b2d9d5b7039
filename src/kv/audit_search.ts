/** Filtering the audit log by admin, kind of change and target, newest first. */
import { type AuditEntry, listAuditEntries } from "./audit.ts";
import type { Store } from "./store.ts";

export interface AuditFilter {
  /** The admin's user name, exactly (any case). */
  actor?: string;
  /** A kind of change: `release` matches every `release.*` action, `release.delete` only itself. */
  action?: string;
  /** Text the target contains, e.g. `release 12` or `project desktop` (any case). */
  target?: string;
}

/** How many entries one page of a filtered search reads at most before it stops. */
const SCAN_LIMIT = 5_000;
const BATCH = 200;

export function auditMatches(entry: AuditEntry, filter: AuditFilter): boolean {
  const actor = filter.actor?.trim().toLowerCase();
  const action = filter.action?.trim().toLowerCase();
  const target = filter.target?.trim().toLowerCase();
  if (actor && entry.actor.toLowerCase() !== actor) return false;
  if (action && entry.action !== action && !entry.action.startsWith(`${action}.`)) return false;
  if (target) {
    // "release 1" does not match "release 12": the match may not run on into a letter or digit.
    const text = entry.target.toLowerCase();
    const at = text.indexOf(target);
    if (at < 0 || /[a-z0-9]/.test(text[at + target.length] ?? "")) return false;
  }
  return true;
}

/**
 * One page of entries that match `filter`, newest first, reading at most
 * SCAN_LIMIT entries: `next` continues the scan where it stopped (also when
 * the page is not full yet), null at the end of the log.
 */
export async function searchAuditEntries(
  store: Store,
  { limit, before, filter }: { limit: number; before?: string; filter: AuditFilter },
): Promise<{ entries: AuditEntry[]; next: string | null }> {
  const found: AuditEntry[] = [];
  let cursor = before;
  let scanned = 0;
  while (scanned < SCAN_LIMIT) {
    const page = await listAuditEntries(store, { limit: BATCH, before: cursor });
    for (const [i, entry] of page.entries.entries()) {
      scanned++;
      if (!auditMatches(entry, filter)) continue;
      found.push(entry);
      if (found.length === limit) {
        const more = i < page.entries.length - 1 || page.next !== null;
        return { entries: found, next: more ? `${Date.parse(entry.at)}.${entry.id}` : null };
      }
    }
    if (page.next === null) return { entries: found, next: null };
    cursor = page.next;
  }
  return { entries: found, next: cursor ?? null };
}
