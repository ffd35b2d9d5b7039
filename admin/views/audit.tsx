import { AUDIT_KINDS, type AuditEntry, type AuditKind } from "../../src/kv/audit.ts";
import type { AuditFilter } from "../../src/kv/audit_search.ts";
import { DataTable, Pager, Time } from "./components.tsx";
import { Layout, type PageContext } from "./layout.tsx";

/** The filter's name for each kind of audited action (every kind in the code has one). */
const KIND_LABELS: Record<AuditKind, string> = {
  project: "projects (project.*)",
  release: "releases (release.*)",
  rollout: "rollouts (rollout.*)",
  api_key: "API keys (api_key.*)",
  publish_token: "publish tokens (publish_token.*)",
  webhook: "webhooks (webhook.*)",
  signing_key: "signing keys (signing_key.*)",
  tuf: "TUF root (tuf.*)",
  sparkle_key: "Sparkle feed keys (sparkle_key.*)",
  account: "accounts (account.*)",
  auth: "sign-ins and passwords (auth.*)",
  admin: "first admin (admin.*)",
  change: "changes without their details (change.*)",
};

/** The admin page of an audit target (`release 12`, `api key 3`, `project desktop`), if any. */
export function targetLink(target: string): string | null {
  const release = /^release (\d+)$/.exec(target);
  if (release) return `/admin/releases/${release[1]}`;
  const key = /^api key (\d+)$/.exec(target);
  if (key) return `/admin/api-keys/${key[1]}`;
  const project = /^project ([a-z0-9-]+)$/.exec(target);
  if (project) return `/admin/projects/${project[1]}`;
  return null;
}

function auditUrl(filter: AuditFilter, before?: string): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filter)) {
    if (typeof value === "string" && value.trim()) params.set(name, value.trim());
  }
  if (before) params.set("before", before);
  const search = params.toString();
  return `/admin/audit${search ? `?${search}` : ""}`;
}

export function AuditPage(
  { ctx, entries, next, first, filter = {} }: {
    ctx: PageContext;
    entries: AuditEntry[];
    next: string | null;
    first: boolean;
    filter?: AuditFilter;
  },
) {
  const filtered = Object.values(filter).some((value) => value?.trim());
  return (
    <Layout ctx={ctx} title="Audit log" nav="audit">
      <h1>Audit log</h1>
      <section class="card" id="audit-list">
        <p class="hint">
          Every admin action, newest first. Edits list each changed field as before → after.
        </p>
        <form method="get" action="/admin/audit" class="search audit-filter" role="search">
          <label for="audit-actor">Admin</label>
          <input id="audit-actor" name="actor" value={filter.actor ?? ""} autocapitalize="none" />
          <label for="audit-action">Kind of change</label>
          <select id="audit-action" name="action">
            <option value="">any</option>
            {AUDIT_KINDS.map((kind) => (
              <option value={kind} selected={filter.action === kind}>{KIND_LABELS[kind]}</option>
            ))}
            {filter.action && !(AUDIT_KINDS as readonly string[]).includes(filter.action) && (
              <option value={filter.action} selected>{filter.action}</option>
            )}
          </select>
          <label for="audit-target">Target</label>
          <input
            id="audit-target"
            name="target"
            value={filter.target ?? ""}
            placeholder="release 12, project desktop"
            autocapitalize="none"
          />
          <button type="submit" class="button">Filter</button>
          {filtered && <a href="/admin/audit" class="button">Clear</a>}
        </form>
        {entries.length === 0
          ? <p class="muted">{filtered ? "No entry matches." : "Nothing recorded yet."}</p>
          : (
            <DataTable columns={["When", "Who", "Action", "Target", "Details", "Address"]}>
              {entries.map((entry) => {
                const link = targetLink(entry.target);
                return (
                  <tr data-audit-action={entry.action}>
                    <td data-label="When">
                      <Time iso={entry.at} />
                    </td>
                    <td data-label="Who">{entry.actor}</td>
                    <td data-label="Action">
                      <code>{entry.action}</code>
                    </td>
                    <td data-label="Target" class="break">
                      {link
                        ? <a href={link} data-audit-target>{entry.target}</a>
                        : <span>{entry.target}</span>}
                    </td>
                    <td data-label="Details" class="break">{entry.details}</td>
                    <td data-label="Address">{entry.address}</td>
                  </tr>
                );
              })}
            </DataTable>
          )}
        <Pager
          newer={first ? null : auditUrl(filter)}
          newerLabel="Newest"
          older={next ? auditUrl(filter, next) : null}
          olderLabel="Older entries"
        />
      </section>
    </Layout>
  );
}
