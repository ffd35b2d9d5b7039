/** The admin audit log: who did what, when, from which address. Newest first when listed. */
import { ADDRESS_MAX_LENGTH } from "../lib/limits.ts";
import { retryWhileLocked } from "./atomic.ts";
import { auditKey, auditPrefix } from "./keys.ts";

export interface AuditEntry {
  id: string;
  /** RFC 3339 time. */
  at: string;
  /** The admin's user name; for a failed sign-in, the name that was tried. */
  actor: string;
  action: string;
  /** What was acted on, e.g. `project desktop` or `release 12`. */
  target: string;
  details: string;
  address: string;
}

export type AuditInput = Omit<AuditEntry, "id" | "at">;

export async function recordAudit(
  kv: Deno.Kv,
  input: AuditInput,
  nowMs: number = Date.now(),
): Promise<AuditEntry> {
  // The monotonic clock in µs (8 hex digits, 71 minutes around) keeps one
  // process's entries of the same millisecond in order without a counter;
  // 6 random hex digits keep two processes' entries of that millisecond apart.
  const tick = (Math.floor(performance.now() * 1000) % 2 ** 32).toString(16).padStart(8, "0");
  const random = crypto.getRandomValues(new Uint32Array(1))[0].toString(16).padStart(8, "0");
  const entry: AuditEntry = {
    id: `${tick}${random.slice(0, 6)}`,
    at: new Date(nowMs).toISOString(),
    actor: input.actor.slice(0, 200),
    action: input.action,
    target: input.target.slice(0, 500),
    details: input.details.slice(0, 2000),
    address: input.address.slice(0, ADDRESS_MAX_LENGTH),
  };
  await retryWhileLocked(() => kv.set(auditKey(nowMs, entry.id), entry));
  return entry;
}

const CURSOR_PATTERN = /^(\d{1,16})\.([0-9a-f]{14})$/;

/**
 * One page of entries, newest first. `before` is the `next` cursor of the
 * previous page (`<atMs>.<id>`); an unreadable cursor starts from the newest.
 */
export async function listAuditEntries(
  kv: Deno.Kv,
  { limit, before }: { limit: number; before?: string },
): Promise<{ entries: AuditEntry[]; next: string | null }> {
  const match = before === undefined ? null : CURSOR_PATTERN.exec(before);
  const selector: Deno.KvListSelector = match
    ? { prefix: auditPrefix(), end: auditKey(Number(match[1]), match[2]) }
    : { prefix: auditPrefix() };
  const entries: AuditEntry[] = [];
  for await (const entry of kv.list<AuditEntry>(selector, { reverse: true, limit: limit + 1 })) {
    entries.push(entry.value);
  }
  const more = entries.length > limit;
  const page = entries.slice(0, limit);
  const last = page[page.length - 1];
  return {
    entries: page,
    next: more && last ? `${Date.parse(last.at)}.${last.id}` : null,
  };
}
