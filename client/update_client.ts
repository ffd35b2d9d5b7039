/**
 * Reference update client for the Update Distribution Service (client API v1).
 *
 * Copy this folder's modules into your app (this face, `versions.ts`,
 * `http.ts`, `download.ts`, `signatures.ts`, `install_id.ts`). They need only
 * Web APIs, `Deno` file APIs and `node:crypto`/`node:path`. The whole flow:
 *
 * ```ts
 * const installId = await loadInstallId(stateDir); // made once, kept in stateDir/install-id
 * const options = { baseUrl: "https://updates.example.com", apiKey: Deno.env.get("UPDATE_API_KEY")!, installId };
 * const update = await checkForUpdate({ ...options, project: "desktop", currentVersion: "1.4.2" });
 * if (update.available) {
 *   await downloadRelease({ ...options, release: update.release, target: "./desktop-new.bin" });
 * }
 * ```
 *
 * - Version rule: when both versions parse as semver (an optional leading `v`
 *   is allowed), the release is newer when it has higher semver precedence;
 *   otherwise any difference counts as an update (plain inequality).
 * - Downloads go to `<target>.part`; `<target>.part.json` remembers which
 *   release and which ETag the part belongs to. A later call resumes with
 *   `Range` + `If-Range`, and accepts a `200` instead (restarts from zero).
 * - Size and SHA-256 are checked while streaming; the file is renamed onto
 *   `target` only when both match the release metadata.
 * - `429` (after `Retry-After`) and network failures are retried (`onRetry`
 *   hears about each wait); every other failure throws an `UpdateClientError`
 *   whose `kind` says what went wrong. A network failure names the host and
 *   path it was reaching.
 */
import {
  type ClientOptions,
  type Project,
  type Release,
  send,
  UpdateClientError,
  withRetries,
} from "./http.ts";
import { isNewerVersion } from "./versions.ts";
import { sha256Hex, verifyAnswer } from "./signatures.ts";

export { downloadRelease } from "./download.ts";
export {
  fetchKeySet,
  fetchRootKeySet,
  type KeySet,
  type PublishedKey,
  verifyAnswer,
} from "./signatures.ts";
export type { DownloadOptions, DownloadResult } from "./download.ts";
export { defaultStateDirectory, INSTALL_ID_FILE, loadInstallId } from "./install_id.ts";
export { CLIENT_VERSION, UpdateClientError, USER_AGENT } from "./http.ts";
export type { ClientOptions, FailureKind, Project, Release, RetryNotice } from "./http.ts";
export { compareVersions, isNewerVersion, parseSemver } from "./versions.ts";

export interface UpdateCheck {
  available: boolean;
  project: Project;
  release: Release;
}

export async function checkForUpdate(
  options: ClientOptions & { project: string; currentVersion: string },
): Promise<UpdateCheck> {
  const path = `/api/v1/projects/${encodeURIComponent(options.project)}/releases/latest`;
  const { project, release } = await getEnvelope(options, path);
  return { available: isNewerVersion(release.version, options.currentVersion), project, release };
}

/** Release metadata by id (`/api/v1/releases/{id}`). */
export async function getRelease(options: ClientOptions, releaseId: number): Promise<Release> {
  return (await getEnvelope(options, `/api/v1/releases/${releaseId}`)).release;
}

async function getEnvelope(
  options: ClientOptions,
  path: string,
): Promise<{ project: Project; release: Release }> {
  const envelope = await withRetries(options, async () => {
    const res = await send(options, path, {});
    const body = new Uint8Array(await res.arrayBuffer());
    if (options.trustedKeys !== undefined) {
      await verifyAnswer(
        {
          method: "GET",
          path: new URL(path, options.baseUrl).pathname,
          status: res.status,
          headers: res.headers,
          sha256: await sha256Hex(body),
        },
        options.trustedKeys,
        options.now?.(),
      );
    }
    try {
      return JSON.parse(new TextDecoder().decode(body));
    } catch (error) {
      if (error instanceof SyntaxError) return null; // not JSON: reported below
      throw error;
    }
  });
  const release = envelope?.release;
  if (typeof release?.version !== "string" || typeof release.download_url !== "string") {
    throw new UpdateClientError("server", `the service answered ${path} without release metadata`);
  }
  return envelope;
}
