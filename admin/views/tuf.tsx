/**
 * The Signing keys page's sections for the TUF repositories (docs/tuf.md)
 * and the signed Sparkle appcasts (docs/feeds.md "Signed Sparkle feeds"):
 * what is stored and how fresh it is, and the forms that change it.
 */
import type { SparkleFeedKey } from "../../src/feeds/sparkle_keys.ts";
import type { TufRoot } from "../../src/tuf/records.ts";
import type { TufHealth } from "../../src/tuf/freshness.ts";
import {
  ActionsCell,
  DataTable,
  InputField,
  PostButton,
  TextAreaField,
  Time,
} from "./components.tsx";
import { CsrfInput, type PageContext } from "./layout.tsx";

export interface TufSummary {
  roots: readonly TufRoot[];
  health: TufHealth;
  /** Where a project's metadata is served, with `{slug}` for the project. */
  metadataUrl: string;
}

export function TufSection({ ctx, tuf }: { ctx: PageContext; tuf: TufSummary }) {
  const { health } = tuf;
  return (
    <section class="card" id="tuf">
      <h2>TUF repositories</h2>
      <p class="hint">
        Each project's releases as a TUF repository at <code>{tuf.metadataUrl}</code>{" "}
        for TUF clients (tuf-js, python-tuf, go-tuf). Its root is signed off this server with{" "}
        <code>deno task tuf-root</code>; paste each new version here. The active signing keys the
        root lists sign the targets, snapshot and timestamp.
      </p>
      {!health.configured ? <p>No TUF root yet: the repositories answer 404.</p> : (
        <>
          <p data-tuf-status={health.stuck ? "stuck" : "ok"}>
            {health.stuck
              ? (
                <strong>
                  Signing is stuck: the timestamp is not being signed again in time. Clients refuse
                  the repository once it expires.
                </strong>
              )
              : "Signing is up to date."} Last refresh: <Time iso={health.last_refresh?.ran_at} />.
          </p>
          {(health.last_refresh?.failures ?? []).map((failure) => (
            <p class="flash flash-error" data-tuf-failure={failure.project}>
              {failure.project}: {failure.error}
            </p>
          ))}
          {health.projects.length > 0 && (
            <DataTable columns={["Project", "Timestamp expires", "State"]}>
              {health.projects.map((project) => (
                <tr data-tuf-project={project.slug}>
                  <td data-label="Project">
                    <code>{project.slug}</code>
                  </td>
                  <td data-label="Timestamp expires">
                    <Time iso={project.timestamp_expires} />
                  </td>
                  <td data-label="State">{project.stuck ? "stuck" : "fresh"}</td>
                </tr>
              ))}
            </DataTable>
          )}
          <DataTable columns={["Root version", "Expires", "Uploaded"]}>
            {tuf.roots.map((root) => (
              <tr data-tuf-root={root.version}>
                <td data-label="Root version">{root.version}</td>
                <td data-label="Expires">
                  <Time iso={root.expires} />
                </td>
                <td data-label="Uploaded">
                  {root.uploaded_by} <Time iso={root.uploaded_at} />
                </td>
              </tr>
            ))}
          </DataTable>
        </>
      )}
      <form method="post" action="/admin/tuf-root" class="stack">
        <CsrfInput token={ctx.csrfToken} />
        <TextAreaField
          id="tuf_root"
          name="tuf_root"
          label="Next root version (JSON, signed)"
          value=""
          rows={6}
          required
        />
        <button type="submit" class="button">Upload the root version</button>
      </form>
    </section>
  );
}

export function SparkleKeysSection(
  { ctx, keys }: {
    ctx: PageContext;
    keys: ReadonlyArray<SparkleFeedKey & { slug: string }>;
  },
) {
  return (
    <section class="card" id="sparkle-keys">
      <h2>Signed Sparkle feeds</h2>
      <p class="hint">
        For apps that set <code>SURequireSignedFeed</code>{" "}
        (Sparkle 2.9+): give a project its Sparkle EdDSA private key (the base64 text of{" "}
        <code>generate_keys -x</code>) and its appcast is signed with it. The private key stays in
        the data directory and is never shown.
      </p>
      {keys.length > 0 && (
        <DataTable columns={["Project", "Public key (SUPublicEDKey)", "Bundle id", "Set"]} actions>
          {keys.map((key) => (
            <tr data-sparkle-key={key.slug}>
              <td data-label="Project">
                <code>{key.slug}</code>
              </td>
              <td data-label="Public key (SUPublicEDKey)">
                <code>{key.public_key}</code>
              </td>
              <td data-label="Bundle id">
                {key.bundle_identifier ? <code>{key.bundle_identifier}</code> : "none"}
              </td>
              <td data-label="Set">
                {key.set_by} <Time iso={key.set_at} />
              </td>
              <ActionsCell>
                <PostButton
                  action={`/admin/sparkle-keys/${key.slug}/remove`}
                  csrfToken={ctx.csrfToken}
                  label="Remove"
                />
              </ActionsCell>
            </tr>
          ))}
        </DataTable>
      )}
      <form method="post" action="/admin/sparkle-keys" class="stack">
        <CsrfInput token={ctx.csrfToken} />
        <InputField id="sparkle_project" name="project" label="Project (slug)" required />
        <TextAreaField
          id="sparkle_private_key"
          name="private_key"
          label="Sparkle private key (base64)"
          value=""
          rows={2}
          required
        />
        <InputField
          id="sparkle_bundle_id"
          name="bundle_identifier"
          label="Bundle identifier (sparkle:bundleIdentifier)"
          optional="optional"
        />
        <button type="submit" class="button">Sign this project's appcast</button>
      </form>
    </section>
  );
}
