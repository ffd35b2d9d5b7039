/**
 * The notice of private key files the records name but the data dir lacks
 * (src/signing/key_file_check.ts): on the dashboard and the Signing keys page,
 * each file with what does not work without it and how to bring it back.
 */
import type { MissingKeyNotice } from "../../src/signing/key_file_check.ts";

export function MissingKeyFilesNotice({ notices }: { notices: readonly MissingKeyNotice[] }) {
  if (notices.length === 0) return null;
  const one = notices.length === 1;
  return (
    <div class="flash flash-error" role="alert" data-missing-key-files>
      <strong>
        {one ? "A private key file is" : `${notices.length} private key files are`}{" "}
        missing from the data directory: this service does not sign with {one ? "it" : "them"}.
      </strong>
      <ul class="flash-list">{notices.map(NoticeItem)}</ul>
    </div>
  );
}

function NoticeItem({ subject, path, effect, fixes }: MissingKeyNotice) {
  return (
    <li>
      <strong>{subject}</strong>: <code>{path}</code> is missing. {effect}.
      <span class="flash-fix">Bring it back: {fixes.join("; or ")}.</span>
    </li>
  );
}
