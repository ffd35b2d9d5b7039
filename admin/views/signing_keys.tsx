/** The signing keys page (docs/signing.md "Keys and rotation"): public halves only. */
import type { SigningKey } from "../../src/signing/signing_keys.ts";
import type { SparkleFeedKey } from "../../src/feeds/sparkle_keys.ts";
import {
  ActionsCell,
  DataTable,
  PostButton,
  StateBadge,
  TextAreaField,
  Time,
} from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";
import { SparkleKeysSection, TufSection, type TufSummary } from "./tuf.tsx";
import { MissingKeyFilesNotice } from "./missing_key_files.tsx";
import type { MissingKeyNotice } from "../../src/signing/key_file_check.ts";

export function SigningKeysPage(
  { ctx, keys, missingKeyFiles, signing, keySetUrl, root, rootUrl, tuf, sparkleKeys }: {
    ctx: PageContext;
    keys: readonly SigningKey[];
    /** Keys whose private file is missing, and the notice's lines (src/signing/key_file_check.ts). */
    missingKeyFiles: { kids: readonly string[]; notices: readonly MissingKeyNotice[] };
    signing: boolean;
    keySetUrl: string;
    root: RootSummary | null;
    rootUrl: string;
    tuf: TufSummary;
    sparkleKeys: ReadonlyArray<SparkleFeedKey & { slug: string }>;
  },
) {
  return (
    <Layout ctx={ctx} title="Signing keys" nav="signing-keys">
      <MissingKeyFilesNotice notices={missingKeyFiles.notices} />
      <h1>Signing keys</h1>
      <p class="hint">
        With <code>APP_SIGNING=true</code>{" "}
        every client API answer and download carries an Ed25519 signature of each active key
        (signing is <strong>{signing ? "on" : "off"}</strong>). Clients read the public halves from
        {" "}
        <a href={keySetUrl}>{keySetUrl}</a>. To rotate: create a key (pending: published, not
        signing), activate it (both keys sign), wait until clients have read the new set, then
        retire the old key. Private keys stay in the data directory and are never shown.
      </p>
      <p class="hint">
        To tell your own systems about releases and keys, see{" "}
        <a href="/admin/webhooks">Webhooks</a>.
      </p>
      <section class="card" id="signing-key-list">
        <h2>Keys ({keys.length})</h2>
        {keys.length === 0 ? <p>No signing keys yet.</p> : (
          <DataTable
            columns={["Key id", "Status", "Public key", "Created", "Activated", "Retired"]}
            actions
          >
            {keys.map((key) => (
              <tr data-signing-key-id={key.kid}>
                <td data-label="Key id">
                  <code>{key.kid}</code>
                </td>
                <td data-label="Status">
                  <StateBadge state={key.status} />
                  {missingKeyFiles.kids.includes(key.kid) && (
                    <span class="field-error status-note" data-key-file-missing>
                      private key file missing: not signing
                    </span>
                  )}
                </td>
                <td data-label="Public key">
                  <code>{key.public_key}</code>
                </td>
                <td data-label="Created">
                  <Time iso={key.created_at} />
                </td>
                <td data-label="Activated">
                  <Time iso={key.activated_at} />
                </td>
                <td data-label="Retired">
                  <Time iso={key.retired_at} />
                </td>
                <ActionsCell>
                  {key.status === "pending" && (
                    <PostButton
                      action={`/admin/signing-keys/${key.kid}/activate`}
                      csrfToken={ctx.csrfToken}
                      label="Activate"
                    />
                  )}
                  {key.status === "active" && (
                    <PostButton
                      action={`/admin/signing-keys/${key.kid}/retire`}
                      csrfToken={ctx.csrfToken}
                      label="Retire"
                    />
                  )}
                </ActionsCell>
              </tr>
            ))}
          </DataTable>
        )}
      </section>
      <section class="card">
        <h2>New key</h2>
        <form method="post" action="/admin/signing-keys">
          <CsrfInput token={ctx.csrfToken} />
          <button type="submit" class="button">Create a signing key</button>
        </form>
      </section>
      <RootSection ctx={ctx} root={root} rootUrl={rootUrl} />
      <TufSection ctx={ctx} tuf={tuf} />
      <SparkleKeysSection ctx={ctx} keys={sparkleKeys} />
    </Layout>
  );
}

/** The stored offline-root document, as the page shows it. */
export interface RootSummary {
  roots: string[];
  signedAt: string;
  expires: string;
  kids: string[];
  uploadedBy: string;
  uploadedAt: string;
}

/** The offline root's document: what it vouches for, and the form to replace it. */
function RootSection(
  { ctx, root, rootUrl }: { ctx: PageContext; root: RootSummary | null; rootUrl: string },
) {
  return (
    <section class="card" id="signing-root">
      <h2>Offline root</h2>
      <p class="hint">
        Optional: a root key kept off this server vouches for the signing keys, so that clients
        pinned to it accept keys they have never seen. Sign the key set on the machine that holds
        the root key with <code>deno task sign-key-set sign</code>{" "}
        after every key change and paste the document here; it is served at{" "}
        <a href={rootUrl}>{rootUrl}</a>.
      </p>
      {root
        ? (
          <p data-signing-root>
            Root {root.roots.map((kid) => <code key={kid}>{kid}</code>)} signed{" "}
            <Time iso={root.signedAt} />, expires <Time iso={root.expires} />, vouches for{" "}
            {root.kids.map((kid) => <code key={kid}>{kid}</code>)}; uploaded by {root.uploadedBy}
            {" "}
            <Time iso={root.uploadedAt} />.
          </p>
        )
        : <p>No root document yet.</p>}
      <form method="post" action="/admin/signing-root" class="stack">
        <CsrfInput token={ctx.csrfToken} />
        <TextAreaField
          id="root_document"
          name="root_document"
          label="Root document (JSON)"
          value=""
          rows={6}
          required
        />
        <button type="submit" class="button">Save the root document</button>
      </form>
    </section>
  );
}
