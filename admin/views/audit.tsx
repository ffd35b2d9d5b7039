import type { AuditEntry } from "../../src/store/mod.ts";
import { DataTable, Pager, Time } from "./components.tsx";
import { Layout, type PageContext } from "./layout.tsx";

export function AuditPage(
  { ctx, entries, next, first }: {
    ctx: PageContext;
    entries: AuditEntry[];
    next: string | null;
    first: boolean;
  },
) {
  return (
    <Layout ctx={ctx} title="Audit log" nav="audit">
      <h1>Audit log</h1>
      <section class="card">
        <p class="hint">Every admin action, newest first.</p>
        {entries.length === 0
          ? <p class="muted">Nothing recorded yet.</p>
          : (
            <DataTable columns={["When", "Who", "Action", "Target", "Details", "Address"]}>
              {entries.map((entry) => (
                <tr data-audit-action={entry.action}>
                  <td data-label="When">
                    <Time iso={entry.at} />
                  </td>
                  <td data-label="Who">{entry.actor}</td>
                  <td data-label="Action">
                    <code>{entry.action}</code>
                  </td>
                  <td data-label="Target" class="break">{entry.target}</td>
                  <td data-label="Details" class="break">{entry.details}</td>
                  <td data-label="Address">{entry.address}</td>
                </tr>
              ))}
            </DataTable>
          )}
        <Pager
          newer={first ? null : "/admin/audit"}
          newerLabel="Newest"
          older={next ? `/admin/audit?before=${encodeURIComponent(next)}` : null}
          olderLabel="Older entries"
        />
      </section>
    </Layout>
  );
}
