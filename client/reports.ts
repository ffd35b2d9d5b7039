/**
 * Install reports (docs/reports.md): the reference client tells the service
 * which version an install runs after an update, and at which step an update
 * failed, with the same key and install id as its checks. A report is sent
 * once per call; the service counts an install once per release and event.
 * `rememberDownload` / `reportIfUpdated` keep the downloaded version in the
 * state directory so that the first check after the update reports it.
 */
import { join } from "node:path";
import { type ClientOptions, send, withRetries } from "./http.ts";

/** What a report says (docs/reports.md "Events"). */
export const REPORT_EVENTS = [
  "installed",
  "download_failed",
  "verification_failed",
  "install_failed",
  "crashed",
] as const;

export type ReportEvent = typeof REPORT_EVENTS[number];

export interface InstallReport {
  project: string;
  event: ReportEvent;
  /** The version the install runs now (`installed`), or the version whose update failed. */
  version: string;
  /** `installed`: the version it ran before the update. */
  previousVersion?: string;
  /** A failure's short reason (at most 200 characters; longer is cut). */
  reason?: string;
}

/**
 * Sends one report (POST /reports/v1/projects/{slug}); false without an
 * install id (the service counts reports by install id). Throws an
 * UpdateClientError when the service refuses it.
 */
export async function sendReport(
  options: ClientOptions,
  report: InstallReport,
): Promise<boolean> {
  if (!options.installId) return false;
  const path = `/reports/v1/projects/${encodeURIComponent(report.project)}`;
  const body = JSON.stringify({
    event: report.event,
    version: report.version,
    ...(report.previousVersion === undefined ? {} : { previous_version: report.previousVersion }),
    ...(report.reason === undefined ? {} : { reason: report.reason.slice(0, 200) }),
  });
  await withRetries(options, async () => {
    const res = await send(options, path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    await res.body?.cancel();
  });
  return true;
}

/** The file in the state directory that remembers a downloaded, not yet reported update. */
export const PENDING_UPDATE_FILE = "pending-update.json";

interface PendingUpdate {
  project: string;
  version: string;
  previous_version?: string;
}

/** Remembers that `version` of `project` was downloaded to replace `previousVersion`. */
export async function rememberDownload(
  stateDir: string,
  update: { project: string; version: string; previousVersion?: string },
): Promise<void> {
  const pending: PendingUpdate = {
    project: update.project,
    version: update.version,
    ...(update.previousVersion ? { previous_version: update.previousVersion } : {}),
  };
  await Deno.mkdir(stateDir, { recursive: true, mode: 0o700 });
  await Deno.writeTextFile(join(stateDir, PENDING_UPDATE_FILE), JSON.stringify(pending) + "\n", {
    mode: 0o600,
  });
}

/**
 * Reports `installed` when the install now runs the version it downloaded
 * (the pending update in `stateDir`), then forgets it; true when it did.
 */
export async function reportIfUpdated(
  options: ClientOptions,
  { stateDir, project, currentVersion }: {
    stateDir: string;
    project: string;
    currentVersion: string;
  },
): Promise<boolean> {
  const path = join(stateDir, PENDING_UPDATE_FILE);
  let pending: PendingUpdate;
  try {
    pending = JSON.parse(await Deno.readTextFile(path));
  } catch {
    return false;
  }
  if (pending.project !== project || pending.version !== currentVersion.trim()) return false;
  await sendReport(options, {
    project,
    event: "installed",
    version: pending.version,
    previousVersion: pending.previous_version,
  });
  await Deno.remove(path).catch(() => {});
  return true;
}
