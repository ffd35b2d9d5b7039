/**
 * The notice of private key files the records name but the data dir lacks
 * (src/signing/key_file_check.ts): on the dashboard and the Signing keys page,
 * each file with what does not work without it and how to bring it back.
 */
export function MissingKeyFilesNotice({ lines }: { lines: readonly string[] }) {
  if (lines.length === 0) return null;
  return (
    <div class="flash flash-error" role="alert" data-missing-key-files>
      <strong>
        {lines.length === 1 ? "A private key file is" : `${lines.length} private key files are`}
        {" "}
        missing from the data directory: this service does not sign what{" "}
        {lines.length === 1 ? "it signs" : "they sign"}.
      </strong>
      <ul class="flash-list">
        {lines.map(MissingLine)}
      </ul>
    </div>
  );
}

function MissingLine(line: string) {
  return <li>{line.charAt(0).toUpperCase() + line.slice(1)}</li>;
}
