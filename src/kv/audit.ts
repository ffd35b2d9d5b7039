/** The admin audit log: who did what, when, from which address. Newest first when listed. */
import { ADDRESS_MAX_LENGTH } from "../lib/limits.ts";
import { retryWhileLocked } from "./atomic.ts";
import { auditKey, auditPrefix } from "./keys.ts";

/**
 * The kinds of audited action: the part of an action before its dot
 * (`release.delete` is of kind `release`). An action's type names its kind,
 * so a new kind is added here first, and the audit page's filter offers
 * every one of them.
 */
export const AUDIT_KINDS = [
  "project",
  "release",
  "rollout",
  "api_key",
  "publish_token",
  "webhook",
  "signing_key",
  "tuf",
  "sparkle_key",
  "account",
  "auth",
  "admin",
  "change",
] as const;

export type AuditKind = typeof AUDIT_KINDS[number];

/** An audited action: its kind, a dot, what was done (`project.create`). */
export type AuditAction = `${AuditKind}.${string}`;

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

export type AuditInput = Omit<AuditEntry, "id" | "at" | "action"> & { action: AuditAction };

/**
 * The admin request a change is made for (who, from where, what). The admin
 * UI makes each POST's writes through a store of that request
 * (`auditedStore`): every commit of a change through it writes a first audit
 * entry in the same commit (`changeOp` in cache.ts calls `auditInCommit`), so
 * a committed change is never without its entry, even when the process dies
 * right after the commit; the request's own `recordAudit` through that store
 * then completes that same entry with its details.
 */
export interface AuditedRequest {
  actor: string;
  address: string;
  /** E.g. `POST /admin/projects`, until the request records its own action. */
  what: string;
}

/** The audit entry of an audited request, until the request records its own. */
export interface PendingAudit extends AuditedRequest {
  atMs: number;
  id: string;
  /** True once the request recorded its own entry in the key (later entries get their own). */
  recorded: boolean;
}

/** What audit entries are written through: the KV and the audited request, if any (the store, store.ts). */
export interface AuditingKv {
  readonly kv: Deno.Kv;
  readonly audit: PendingAudit | undefined;
}

/**
 * `store` for the writes of `request`: the same cache and write queues, and
 * the changes committed through it carry the request's audit entry (see above).
 */
export function auditedStore<S extends AuditingKv>(store: S, request: AuditedRequest): S {
  const audit = { ...request, atMs: Date.now(), id: newAuditId(), recorded: false };
  return { ...store, audit };
}

/**
 * Adds the first audit entry of `pending`, the request a commit is made for
 * (if any), to `op`: who and from where, and which records the commit changed.
 */
export function auditInCommit(
  op: Deno.AtomicOperation,
  pending: PendingAudit | undefined,
  changed: string,
): void {
  if (pending === undefined || pending.recorded) return;
  const entry = auditEntry(pending.id, pending.atMs, {
    actor: pending.actor,
    action: "change.committed",
    target: pending.what,
    details: `changed: ${changed}`,
    address: pending.address,
  });
  op.set(auditKey(pending.atMs, entry.id), entry);
}

/**
 * Adds the audit entry `input` (at `atMs`) to `op`, for a change made by the
 * service itself (the health gates), so the change and its entry commit together.
 */
export function addAuditEntry(op: Deno.AtomicOperation, input: AuditInput, atMs: number): void {
  const entry = auditEntry(newAuditId(), atMs, input);
  op.set(auditKey(atMs, entry.id), entry);
}

/** A new entry id (see `auditEntry`). */
function newAuditId(): string {
  // The monotonic clock in µs (8 hex digits, 71 minutes around) keeps one
  // process's entries of the same millisecond in order without a counter;
  // 6 random hex digits keep two processes' entries of that millisecond apart.
  const tick = (Math.floor(performance.now() * 1000) % 2 ** 32).toString(16).padStart(8, "0");
  const random = crypto.getRandomValues(new Uint32Array(1))[0].toString(16).padStart(8, "0");
  return `${tick}${random.slice(0, 6)}`;
}

function auditEntry(id: string, atMs: number, input: AuditInput): AuditEntry {
  return {
    id,
    at: new Date(atMs).toISOString(),
    actor: input.actor.slice(0, 200),
    action: input.action,
    target: input.target.slice(0, 500),
    details: input.details.slice(0, 2000),
    address: input.address.slice(0, ADDRESS_MAX_LENGTH),
  };
}

/**
 * Writes an audit entry. Through the store of an audited request, its first
 * entry takes the key of the entry its changes committed (completing it); any
 * other is new.
 */
export async function recordAudit(
  store: AuditingKv,
  input: AuditInput,
  nowMs: number = Date.now(),
): Promise<AuditEntry> {
  const { kv, audit: pending } = store;
  const reuse = pending !== undefined && !pending.recorded;
  if (pending !== undefined) pending.recorded = true;
  const atMs = reuse ? pending.atMs : nowMs;
  const entry = auditEntry(reuse ? pending.id : newAuditId(), atMs, input);
  await retryWhileLocked(() => kv.set(auditKey(atMs, entry.id), entry));
  return entry;
}

/**
 * Writes an audit entry of an action that is done: a failed write is logged
 * and handed to `onFailure` (for the KV error count), never thrown, so the
 * action's answer stands.
 */
export async function recordAuditSafely(
  store: AuditingKv,
  input: AuditInput,
  onFailure: () => void = () => {},
): Promise<void> {
  try {
    await recordAudit(store, input);
  } catch (error) {
    onFailure();
    console.error(`audit record failed (${input.action} ${input.target}):`, error);
  }
}

/** How the audit log names a publish token: its name and id. */
export function tokenActor(token: { name: string; id: number }): string {
  return `token:${token.name} (#${token.id})`;
}

const CURSOR_PATTERN = /^(\d{1,16})\.([0-9a-f]{14})$/;

/**
 * One page of entries, newest first. `before` is the `next` cursor of the
 * previous page (`<atMs>.<id>`); an unreadable cursor starts from the newest.
 */
export async function listAuditEntries(
  { kv }: { readonly kv: Deno.Kv },
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
