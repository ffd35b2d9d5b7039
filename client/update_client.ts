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
import { compareVersions, isNewerVersion } from "./versions.ts";
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
export {
  type InstallReport,
  PENDING_UPDATE_FILE,
  rememberDownload,
  type ReportEvent,
  reportIfUpdated,
  sendReport,
} from "./reports.ts";

/** The headers of the latest-release answer that carry the project's release policy (docs/reports.md). */
export const CRITICAL_HEADER = "x-update-critical";
export const MINIMUM_VERSION_HEADER = "x-minimum-version";
/** On the offered release of a rollback: the version rolled back. */
export const ROLLED_BACK_HEADER = "x-rolled-back";

export interface UpdateCheck {
  /** The offered release is newer than the current version. */
  available: boolean;
  /**
   * The offered release is older than the current version, which a rollback
   * took back (`X-Rolled-Back` names a version at or above it; docs/rollouts.md).
   */
  downgrade: boolean;
  /** The offered release is marked critical (`X-Update-Critical: true`). */
  critical: boolean;
  /** The project's minimum supported version (`X-Minimum-Version`), if it has one. */
  minimumVersion?: string;
  /** The current version is below the minimum supported version. */
  unsupported: boolean;
  project: Project;
  release: Release;
}

export async function checkForUpdate(
  options: ClientOptions & { project: string; currentVersion: string },
): Promise<UpdateCheck> {
  const path = `/api/v1/projects/${encodeURIComponent(options.project)}/releases/latest`;
  const { project, release, headers } = await getEnvelope(options, path);
  const current = options.currentVersion;
  const minimumVersion = headers.get(MINIMUM_VERSION_HEADER) ?? undefined;
  return {
    available: isNewerVersion(release.version, current),
    downgrade: isRolledBack(current, {
      offered: release.version,
      rolledBack: headers.get(ROLLED_BACK_HEADER),
    }),
    critical: headers.get(CRITICAL_HEADER) === "true",
    minimumVersion,
    unsupported: minimumVersion !== undefined && current.trim() !== "" &&
      compareVersions(current, minimumVersion) === -1,
    project,
    release,
  };
}

/** Whether `current` was taken back by a rollback to `offered` (of `rolledBack`, if any). */
function isRolledBack(
  current: string,
  { offered, rolledBack }: { offered: string; rolledBack: string | null },
): boolean {
  if (rolledBack === null || current.trim() === "") return false;
  if (current.trim() === rolledBack.trim()) return true;
  const above = compareVersions(current, offered);
  const within = compareVersions(current, rolledBack);
  return above === 1 && within !== null && within <= 0;
}

/** Release metadata by id (`/api/v1/releases/{id}`). */
export async function getRelease(options: ClientOptions, releaseId: number): Promise<Release> {
  return (await getEnvelope(options, `/api/v1/releases/${releaseId}`)).release;
}

async function getEnvelope(
  options: ClientOptions,
  path: string,
): Promise<{ project: Project; release: Release; headers: Headers }> {
  let headers = new Headers();
  const envelope = await withRetries(options, async () => {
    const res = await send(options, path);
    const body = new Uint8Array(await res.arrayBuffer());
    headers = res.headers;
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
  return { ...envelope, headers };
}
