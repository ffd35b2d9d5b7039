/**
 * Sparkle's appcast: an RSS 2.0 document with one item, the latest release,
 * its enclosure signed with the vendor's EdDSA key. Every value is escaped.
 */
import type { Project } from "../projects/types.ts";
import type { Release } from "../releases/types.ts";

const SPARKLE_NS = "http://www.andymatuschak.org/xml-namespaces/sparkle";

/** Characters XML 1.0 does not allow at all (control characters but tab, LF, CR; lone surrogates; U+FFFE/F). */
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** `text` safe as XML character data and as an attribute value in double or single quotes. */
export function escapeXml(text: string): string {
  return text.replace(NOT_XML, "\uFFFD")
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&apos;");
}

/** RFC 822 date, as RSS wants (`Tue, 02 Jan 2025 03:04:05 +0000`). */
function rfc822(iso: string): string {
  return new Date(iso).toUTCString().replace("GMT", "+0000");
}

export interface AppcastOptions {
  project: Pick<Project, "name">;
  release: Pick<
    Release,
    | "version"
    | "build"
    | "release_notes"
    | "created_at"
    | "size_bytes"
    | "content_type"
    | "sparkle_signature"
  >;
  /** The absolute URL of the artifact. */
  url: string;
  /** The release is critical (docs/rollouts.md "Critical updates and a minimum version"). */
  critical?: boolean;
  /** The project's minimum supported version: the update is critical below it. */
  minimumVersion?: string | null;
  /**
   * The app's CFBundleIdentifier, written as `sparkle:bundleIdentifier` in
   * the item (signed appcasts, docs/feeds.md "Signed Sparkle feeds"); none when empty.
   */
  bundleIdentifier?: string;
  /** Sparkle deltas to this release (docs/feeds.md "Sparkle deltas"). */
  deltas?: AppcastDelta[];
}

export interface AppcastDelta {
  /** Absolute URL of the `.delta` file. */
  url: string;
  /** The bundle version it applies to (`sparkle:deltaFrom`). */
  from: string;
  length: number;
  signature: string;
}

/** The appcast of `release`, which must have its signature. */
export function sparkleAppcast(
  {
    project,
    release,
    url,
    critical = false,
    minimumVersion = null,
    bundleIdentifier,
    deltas = [],
  }: AppcastOptions,
): string {
  const signature = release.sparkle_signature;
  if (signature === undefined) throw new Error("appcast of an unsigned release");
  const e = escapeXml;
  // CFBundleVersion is what Sparkle compares: the build when there is one, else the version.
  const bundleVersion = release.build !== "" ? release.build : release.version;
  const notes = release.release_notes === ""
    ? ""
    : `\n      <description>${e(release.release_notes)}</description>`;
  const criticalTag = critical
    ? "\n      <sparkle:criticalUpdate/>"
    : minimumVersion !== null
    ? `\n      <sparkle:criticalUpdate sparkle:version="${e(minimumVersion)}"/>`
    : "";
  const bundle = bundleIdentifier
    ? `\n      <sparkle:bundleIdentifier>${e(bundleIdentifier)}</sparkle:bundleIdentifier>`
    : "";
  return `<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:sparkle="${SPARKLE_NS}">
  <channel>
    <title>${e(project.name)}</title>
    <item>
      <title>${e(`${project.name} ${release.version}`)}</title>
      <pubDate>${e(rfc822(release.created_at))}</pubDate>
      <sparkle:version>${e(bundleVersion)}</sparkle:version>
      <sparkle:shortVersionString>${
    e(release.version)
  }</sparkle:shortVersionString>${bundle}${criticalTag}${notes}
      <enclosure url="${e(url)}" length="${release.size_bytes}" type="${
    e(release.content_type || "application/octet-stream")
  }" sparkle:edSignature="${e(signature)}"/>${deltaList(deltas)}
    </item>
  </channel>
</rss>
`;
}

/** `<sparkle:deltas>` with one enclosure per delta, or nothing. */
function deltaList(deltas: AppcastDelta[]): string {
  if (deltas.length === 0) return "";
  const e = escapeXml;
  const items = deltas.map((delta) =>
    `\n        <enclosure url="${e(delta.url)}" sparkle:deltaFrom="${
      e(delta.from)
    }" length="${delta.length}" type="application/octet-stream" sparkle:edSignature="${
      e(delta.signature)
    }"/>`
  ).join("");
  return `\n      <sparkle:deltas>${items}\n      </sparkle:deltas>`;
}
