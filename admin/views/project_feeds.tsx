/**
 * A project's feeds page (docs/feeds.md): the addresses its updaters read (electron-updater,
 * Tauri v2, Sparkle) and whether its Sparkle appcast is signed, with where to change that.
 */
import { Time } from "./components.tsx";

export interface ProjectFeedsProps {
  slug: string;
  /** The service's public address (`APP_BASE_URL`). */
  baseUrl: string;
  /** The project's Sparkle appcast key, when its appcast is signed. */
  sparkle: { public_key: string; bundle_identifier: string; set_at: string } | null;
  /** Whether the signed-in account may change signing (admins: the signing keys page). */
  canSign: boolean;
}

export function ProjectFeeds({ slug, baseUrl, sparkle, canSign }: ProjectFeedsProps) {
  const feeds = [
    [
      "electron-updater",
      `${baseUrl}/feeds/electron/${slug}`,
      "the publish url; it reads latest.yml",
    ],
    [
      "Tauri v2",
      `${baseUrl}/feeds/tauri/${slug}/{{target}}/{{arch}}/{{current_version}}`,
      "the endpoint in tauri.conf.json",
    ],
    ["Sparkle", `${baseUrl}/feeds/sparkle/${slug}/appcast.xml`, "SUFeedURL in Info.plist"],
  ] as const;
  return (
    <>
      <section class="card" id="feeds" aria-labelledby="feeds-title">
        <h2 id="feeds-title">Updater feeds</h2>
        <p class="hint">
          Each updater reads the project's latest release from its own address, with an API key as
          {" "}
          <code>Authorization: Bearer</code> (docs/feeds.md).
        </p>
        <dl class="facts feed-list">
          {feeds.map(([name, url, where]) => (
            <>
              <dt>{name}</dt>
              <dd>
                <code class="break" data-feed-url={name}>{url}</code>
                <span class="muted">{where}</span>
              </dd>
            </>
          ))}
        </dl>
      </section>
      <section class="card" id="signing" aria-labelledby="signing-title">
        <h2 id="signing-title">Signing</h2>
        {sparkle === null
          ? (
            <p data-sparkle-signed="false">
              The Sparkle appcast is not signed. Apps that set <code>SURequireSignedFeed</code>{" "}
              refuse it until the project has its Sparkle key.
            </p>
          )
          : (
            <p data-sparkle-signed="true">
              The Sparkle appcast is signed with the public key{" "}
              <code class="break">{sparkle.public_key}</code>
              {sparkle.bundle_identifier && (
                <>
                  {" "}for <code class="break">{sparkle.bundle_identifier}</code>
                </>
              )}, set at <Time iso={sparkle.set_at} />.
            </p>
          )}
        <p class="hint">
          Tauri and Sparkle signatures of each file are given at upload (under "Updater signatures"
          in the upload form); the service's own signing keys and TUF root are the same for every
          project.
        </p>
        {canSign && (
          <p class="card-links">
            <a href="/admin/signing-keys#sparkle-keys">Signing keys and Sparkle feed keys</a>
          </p>
        )}
      </section>
    </>
  );
}
