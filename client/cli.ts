/**
 * Command line front of the reference update client.
 *
 *   UPDATE_API_KEY=uds_… deno task client check --base-url URL --project SLUG --current VERSION
 *   UPDATE_API_KEY=uds_… deno task client download --base-url URL --project SLUG [--current VERSION] [--out FILE]
 *   UPDATE_API_KEY=uds_… deno task client download --base-url URL --release ID [--out FILE]
 *   (check and download take --allow-downgrade: act on an older release offered after a rollback)
 *   UPDATE_API_KEY=uds_… deno task client report --base-url URL --project SLUG --event E --version V
 *     [--previous-version V] [--reason TEXT]   (docs/reports.md)
 *   (check and download also take --pin-key-set FILE or --pin-root KEY: docs/signing.md)
 *   (every command takes --state-dir DIR: where the install id is kept, docs/client-api.md)
 *   UPDATE_PUBLISH_TOKEN=udp_… deno task client publish --base-url URL --project SLUG --version V --file PATH
 *     [--build B] [--notes-file F] [--draft] [--not-latest]
 *     [--rollout-percentage P [--rollout-schedule STEPS] [--rollout-tester-tag TAG]]
 *     [--tauri-signature-file F] [--sparkle-signature S]
 *
 * Installed as a command (docs/client-api.md), `uds-client` takes the same
 * arguments. `--help` prints the usage; `--version` the client's version.
 *
 * The key is read from UPDATE_API_KEY only (and the publish token from UPDATE_PUBLISH_TOKEN) (argv is visible to every user in
 * `ps`). `--base-url` defaults to UPDATE_BASE_URL. Exit codes: see EXIT below.
 */
import { basename, dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { downloadDifferentially } from "./differential.ts";
import {
  checkForUpdate,
  CLIENT_VERSION,
  type ClientOptions,
  downloadRelease,
  type FailureKind,
  fetchKeySet,
  fetchRootKeySet,
  getRelease,
  isNewerVersion,
  type PublishedKey,
  type Release,
  rememberDownload,
  type ReportEvent,
  reportIfUpdated,
  type RetryNotice,
  sendReport,
  UpdateClientError,
} from "./update_client.ts";
import { publishRelease } from "./publish.ts";
import { REPORT_EVENTS } from "./reports.ts";
import { defaultStateDirectory, loadInstallId, readEnv } from "./install_id.ts";

export const EXIT = {
  ok: 0, // up to date, or downloaded and verified
  unexpected: 1,
  usage: 2,
  auth: 3, // 401/403
  not_found: 4, // 404
  rate_limited: 5, // 429 after the retries
  integrity: 6, // size or SHA-256 mismatch
  network: 7, // connection failed or lost after the retries
  server: 8, // 5xx or an answer the client does not understand
  file: 9, // cannot write the target
  update_available: 10, // `check` only
  refused: 11, // `publish`: the service refused the upload (400, 409, 413, 507)
  signature: 12, // an answer's signature is bad, missing or expired (with a pinned key set)
  downgrade_available: 13, // check, download: an older release is offered (a rollback)
  critical_update: 14, // check: the newer release offered is marked critical
  unsupported_version: 15, // check: the current version is below the project's minimum
} as const satisfies Record<FailureKind, number> & Record<string, number>;

const USAGE = `usage (or "uds-client" in place of "deno task client" once installed):
  deno task client check    --project SLUG --current VERSION [--base-url URL]
  deno task client download --project SLUG [--current VERSION] [--out FILE] [--base-url URL]
                            [--installed FILE] (with --current: the service's patch, else differential download)
  deno task client download --release ID [--out FILE] [--base-url URL]
  deno task client report   --project SLUG --event EVENT --version V [--previous-version V]
                            [--reason TEXT] [--base-url URL]
  deno task client publish  --project SLUG --version V --file PATH [--build B]
                            [--notes-file F] [--draft] [--not-latest] [--base-url URL]
                            [--tauri-signature-file F] [--sparkle-signature S]
                            [--rollout-percentage P] [--rollout-schedule TIME=P,…]
                            [--rollout-tester-tag TAG]
options:
  --retries N   retries after a 429 (honouring Retry-After) or a network failure; default 3
  --state-dir DIR  where the client keeps its install id (file install-id, made at the first
                run and sent as X-Install-Id); default UPDATE_STATE_DIR, else
                $XDG_STATE_HOME/uds-client or ~/.local/state/uds-client
  --pin-key-set FILE  (check, download) verify every answer's signature against the key set
                saved in FILE at install (from /.well-known/uds-keys.json); the service's
                current set is accepted when a pinned key signed it, and FILE is updated
  --pin-root KEY      (check, download) verify every answer against the keys that the
                offline root KEY (base64url public key) signed; may be repeated
  --allow-downgrade  (check, download) an older release offered after a rollback counts as the
                update (check exits 10, download fetches it); without it, exit 13
  --event E     (report) installed, download_failed, verification_failed, install_failed, crashed
  --help, -h    this text
  --version     the client's version
environment: UPDATE_API_KEY (check, download), UPDATE_PUBLISH_TOKEN (publish),
  UPDATE_BASE_URL (default for --base-url), UPDATE_STATE_DIR (default for --state-dir)
relative paths (--out, --file, --notes-file, --pin-key-set, …) are taken from the directory
  the command was run in
publish prints the new release as JSON; it streams the file and sends its SHA-256
exit codes: 0 ok or up to date, 10 update available (check), 2 usage, 3 key refused,
  4 not found, 5 rate limited, 6 integrity (publish: SHA-256 mismatch), 7 network,
  8 server, 9 file, 11 upload refused (publish), 12 bad, missing or expired signature
  (with --pin-key-set or --pin-root), 13 an older release is offered (a rollback; see
  --allow-downgrade), 14 critical update available (check), 15 the current version is below
  the project's minimum supported version (check), 1 unexpected
see docs/signing.md for signed answers and the pins`;

class UsageError extends Error {}

export async function main(args: string[]): Promise<number> {
  try {
    return await run(args);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n${USAGE}`);
      return EXIT.usage;
    }
    if (error instanceof UpdateClientError) {
      console.error(`error (${error.kind}): ${error.message}`);
      return EXIT[error.kind];
    }
    console.error("unexpected error:", error);
    return EXIT.unexpected;
  }
}

async function run(args: string[]): Promise<number> {
  // Asked for anywhere, help wins over every other argument (and needs no key).
  if (args.some((arg) => arg === "--help" || arg === "-h") || args[0] === "help") {
    console.log(USAGE);
    return EXIT.ok;
  }
  // `publish --version V` and `report --version V` name a release; elsewhere --version asks for
  // the client's.
  if (args.includes("--version") && !args.includes("publish") && !args.includes("report")) {
    console.log(`uds-update-client ${CLIENT_VERSION}`);
    return EXIT.ok;
  }
  const { command, flags } = parseCommandLine(args);
  if (command === "publish") return await publish(flags);
  const options = clientOptions(flags["base-url"], flags.retries);
  const state = await installIdOf(flags);
  options.installId = state?.installId;
  if (command === "report") return await report(options, flags);
  options.trustedKeys = await pinnedKeys(flags, options);
  const allowDowngrade = flags["allow-downgrade"] === true;

  if (command === "check") {
    if (!flags.project || !flags.current) {
      throw new UsageError("check needs --project and --current");
    }
    // The first check after an update says that it worked (docs/reports.md).
    if (state !== undefined) {
      await reportIfUpdated(options, {
        stateDir: state.stateDir,
        project: flags.project,
        currentVersion: flags.current,
      }).catch((error) => console.error(`warning: the install report was not sent: ${error}`));
    }
    const update = await checkForUpdate({
      ...options,
      project: flags.project,
      currentVersion: flags.current,
    });
    const latest = describe(update.release);
    if (update.unsupported) {
      console.log(
        `unsupported version: ${flags.current} is below the minimum supported version ` +
          `${update.minimumVersion}; update to ${latest}`,
      );
      return EXIT.unsupported_version;
    }
    if (update.downgrade) {
      console.log(`rollback: the service offers an older release: ${flags.current} -> ${latest}`);
      return allowDowngrade ? EXIT.update_available : EXIT.downgrade_available;
    }
    if (!update.available) {
      console.log(`up to date: ${flags.current} (latest is ${latest})`);
      return EXIT.ok;
    }
    if (update.critical) {
      console.log(`critical update available: ${flags.current} -> ${latest}`);
      return EXIT.critical_update;
    }
    console.log(`update available: ${flags.current} -> ${latest}`);
    return EXIT.update_available;
  }

  // download
  if (!flags.project === !flags.release) {
    throw new UsageError("download needs either --project or --release");
  }
  let release: Release;
  if (flags.release) {
    if (!/^\d+$/.test(flags.release)) throw new UsageError("--release must be a number");
    release = await getRelease(options, Number(flags.release));
  } else {
    const update = await checkForUpdate({
      ...options,
      project: flags.project!,
      currentVersion: flags.current ?? "",
    });
    release = update.release;
    if (update.downgrade && !allowDowngrade) {
      console.log(
        `rollback: the service offers an older release: ${flags.current} -> ` +
          `${describe(release)}; download it with --allow-downgrade`,
      );
      return EXIT.downgrade_available;
    }
    if (flags.current && !update.downgrade && !isNewerVersion(release.version, flags.current)) {
      console.log(`up to date: ${flags.current} (latest is ${describe(release)})`);
      return EXIT.ok;
    }
  }
  const target = resolve(userDirectory(), flags.out ?? safeFileName(release.filename));
  // A failed download or check is reported (docs/reports.md); the failure stands.
  const reportFailure = async (error: unknown): Promise<never> => {
    if (flags.project && error instanceof UpdateClientError) {
      const event = error.kind === "integrity" || error.kind === "signature"
        ? "verification_failed"
        : "download_failed";
      await sendReport(options, {
        project: flags.project,
        event,
        version: release.version,
        reason: error.message,
      }).catch(() => {});
    }
    throw error;
  };
  const remember = async () => {
    if (flags.project && state !== undefined) {
      await rememberDownload(state.stateDir, {
        project: flags.project,
        version: release.version,
        previousVersion: flags.current,
      }).catch((error) => console.error(`warning: the download was not remembered: ${error}`));
    }
  };
  if (flags.installed) {
    if (!flags.project || !flags.current) {
      throw new UsageError("--installed needs --project and --current (the installed version)");
    }
    const result = await downloadDifferentially({
      ...options,
      release,
      target,
      installedFile: resolve(userDirectory(), flags.installed),
      installedVersion: flags.current,
      project: flags.project,
    }).catch(reportFailure);
    await remember();
    console.log(
      `downloaded ${describe(release)} to ${target} (${release.size_bytes} bytes, sha256 ok, ${
        result.differential
          ? `differential: ${result.receivedBytes} bytes received, by ${result.method}`
          : `whole file: ${result.fallback}`
      })`,
    );
    return EXIT.ok;
  }
  const result = await downloadRelease({ ...options, release, target }).catch(reportFailure);
  await remember();
  console.log(
    `downloaded ${describe(release)} to ${target} (${release.size_bytes} bytes, sha256 ok${
      result.resumed ? ", resumed" : ""
    })`,
  );
  return EXIT.ok;
}

/** Every option of every command (docs/client-api.md "Options", docs/publishing.md). */
export const CLI_OPTIONS = {
  "base-url": { type: "string" },
  project: { type: "string" },
  current: { type: "string" },
  release: { type: "string" },
  out: { type: "string" },
  installed: { type: "string" },
  retries: { type: "string" },
  version: { type: "string" },
  file: { type: "string" },
  build: { type: "string" },
  "notes-file": { type: "string" },
  draft: { type: "boolean" },
  "not-latest": { type: "boolean" },
  "tauri-signature-file": { type: "string" },
  "sparkle-signature": { type: "string" },
  "rollout-percentage": { type: "string" },
  "rollout-schedule": { type: "string" },
  "rollout-tester-tag": { type: "string" },
  "pin-key-set": { type: "string" },
  "pin-root": { type: "string", multiple: true },
  "state-dir": { type: "string" },
  "allow-downgrade": { type: "boolean" },
  event: { type: "string" },
  "previous-version": { type: "string" },
  reason: { type: "string" },
} as const;

function parseCommandLine(args: string[]) {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: CLI_OPTIONS });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...extra] = parsed.positionals;
  if (
    command !== "check" && command !== "download" && command !== "publish" && command !== "report"
  ) {
    throw new UsageError(command ? `unknown command "${command}"` : "missing command");
  }
  if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`);
  return { command, flags: parsed.values };
}

type Flags = ReturnType<typeof parseCommandLine>["flags"];

/** `publish`: uploads one release with the publish token and prints the answer as JSON. */
async function publish(flags: Flags): Promise<number> {
  if (!flags.project || !flags.version || !flags.file) {
    throw new UsageError("publish needs --project, --version and --file");
  }
  const token = Deno.env.get("UPDATE_PUBLISH_TOKEN")?.trim();
  if (!token) {
    throw new UsageError("set the publish token in the environment variable UPDATE_PUBLISH_TOKEN");
  }
  const { apiKey: _, ...options } = clientOptions(flags["base-url"], flags.retries, token);
  options.installId = (await installIdOf(flags))?.installId;
  let releaseNotes: string | undefined;
  if (flags["notes-file"]) {
    try {
      releaseNotes = await Deno.readTextFile(resolve(userDirectory(), flags["notes-file"]));
    } catch (error) {
      throw new UpdateClientError(
        "file",
        `cannot read the notes file: ${(error as Error).message}`,
      );
    }
  }
  let tauriSignature: string | undefined;
  if (flags["tauri-signature-file"]) {
    try {
      tauriSignature = await Deno.readTextFile(
        resolve(userDirectory(), flags["tauri-signature-file"]),
      );
    } catch (error) {
      throw new UpdateClientError(
        "file",
        `cannot read the Tauri signature file: ${(error as Error).message}`,
      );
    }
  }
  const published = await publishRelease({
    ...options,
    token,
    project: flags.project,
    version: flags.version,
    file: resolve(userDirectory(), flags.file),
    build: flags.build,
    releaseNotes,
    draft: flags.draft,
    notLatest: flags["not-latest"],
    rollout: rolloutOf(flags),
    tauriSignature,
    sparkleSignature: flags["sparkle-signature"],
  });
  console.log(JSON.stringify(published, null, 2));
  // Published, but the rollout asked for did not start: said where a person sees it.
  if (published.rollout_error) console.error(`warning: ${published.rollout_error}`);
  return EXIT.ok;
}

/**
 * The keys every answer must be signed by, from `--pin-key-set FILE` (the set
 * pinned at install, moved on to the service's current set when a pinned key
 * signed it: a rotation) or `--pin-root KEY` (the keys the offline root
 * signed); undefined without either (answers are not checked).
 */
async function pinnedKeys(
  flags: Flags,
  options: ClientOptions,
): Promise<PublishedKey[] | undefined> {
  const file = flags["pin-key-set"];
  const roots = flags["pin-root"];
  if (file !== undefined && roots !== undefined) {
    throw new UsageError("give either --pin-key-set or --pin-root, not both");
  }
  if (roots !== undefined) {
    for (const root of roots) {
      if (!/^[A-Za-z0-9_-]{43}$/.test(root)) {
        throw new UsageError(`--pin-root must be a base64url Ed25519 public key, got "${root}"`);
      }
    }
    return (await fetchRootKeySet(options, roots)).keys;
  }
  if (file === undefined) return undefined;
  const path = resolve(userDirectory(), file);
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new UpdateClientError(
      "file",
      `cannot read the pinned key set: ${(error as Error).message}`,
    );
  }
  let pinned: PublishedKey[];
  try {
    pinned = JSON.parse(text).keys;
    if (!Array.isArray(pinned)) throw new Error();
  } catch {
    throw new UpdateClientError("file", `${path} is not a key set (a saved uds-keys.json)`);
  }
  const current = await fetchKeySet(options, pinned);
  const next = JSON.stringify(current, null, 2) + "\n";
  if (next !== text) {
    // Write beside it and rename: a crash never leaves half a pin.
    try {
      await Deno.writeTextFile(`${path}.new`, next);
      await Deno.rename(`${path}.new`, path);
    } catch (error) {
      console.error(`warning: the new key set could not be saved in ${path}: ${error}`);
    }
  }
  return current.keys;
}

/**
 * This install's id (client/install_id.ts), kept in `--state-dir`, else
 * UPDATE_STATE_DIR, else the user's state directory. A directory named by
 * the flag or the variable that cannot be used is an error (exit 9); without
 * either, the run goes on without an install id and says so.
 */
async function installIdOf(
  flags: Flags,
): Promise<{ installId: string; stateDir: string } | undefined> {
  const chosen = flags["state-dir"] ?? readEnv("UPDATE_STATE_DIR");
  if (chosen !== undefined) {
    const stateDir = resolve(userDirectory(), chosen);
    return { installId: await loadInstallId(stateDir), stateDir };
  }
  const fallback = defaultStateDirectory();
  try {
    if (fallback === undefined) throw new Error("HOME is not set; give --state-dir");
    return { installId: await loadInstallId(fallback), stateDir: fallback };
  } catch (error) {
    console.error(
      `warning: no install id, requests go without X-Install-Id: ${(error as Error).message}`,
    );
    return undefined;
  }
}

/** `report`: sends one install report (docs/reports.md), e.g. from an installer or at start-up. */
async function report(options: ClientOptions, flags: Flags): Promise<number> {
  if (!flags.project || !flags.event || !flags.version) {
    throw new UsageError("report needs --project, --event and --version");
  }
  const event = flags.event as ReportEvent;
  if (!REPORT_EVENTS.includes(event)) {
    throw new UsageError(`--event must be one of ${REPORT_EVENTS.join(", ")}`);
  }
  if (!options.installId) {
    throw new UpdateClientError("file", "no install id: reports need --state-dir (or HOME)");
  }
  await sendReport(options, {
    project: flags.project,
    event,
    version: flags.version,
    previousVersion: flags["previous-version"],
    reason: flags.reason,
  });
  console.log(`reported ${event} of ${flags.project} ${flags.version}`);
  return EXIT.ok;
}

/** `--rollout-*`: a staged rollout of the upload (docs/rollouts.md), or none. */
function rolloutOf(flags: Flags) {
  const raw = flags["rollout-percentage"];
  if (raw === undefined) {
    if (flags["rollout-schedule"] !== undefined || flags["rollout-tester-tag"] !== undefined) {
      throw new UsageError("--rollout-schedule and --rollout-tester-tag need --rollout-percentage");
    }
    return undefined;
  }
  const percentage = raw.trim() === "" ? NaN : Number(raw);
  if (!Number.isFinite(percentage) || percentage < 0 || percentage > 100) {
    throw new UsageError(`--rollout-percentage must be a number from 0 to 100, got "${raw}"`);
  }
  if (flags.draft || flags["not-latest"]) {
    throw new UsageError("--rollout-percentage cannot go with --draft or --not-latest");
  }
  return {
    percentage,
    schedule: flags["rollout-schedule"],
    testerTag: flags["rollout-tester-tag"],
  };
}

function clientOptions(
  baseUrlFlag: string | undefined,
  retriesFlag: string | undefined,
  publishToken?: string,
): ClientOptions {
  if (retriesFlag !== undefined && !/^\d{1,2}$/.test(retriesFlag)) {
    throw new UsageError("--retries must be a number from 0 to 99");
  }
  const apiKey = publishToken ?? Deno.env.get("UPDATE_API_KEY")?.trim();
  if (!apiKey) throw new UsageError("set the API key in the environment variable UPDATE_API_KEY");
  const baseUrl = baseUrlFlag ?? Deno.env.get("UPDATE_BASE_URL");
  if (!baseUrl) throw new UsageError("give --base-url or set UPDATE_BASE_URL");
  try {
    if (!/^https?:$/.test(new URL(baseUrl).protocol)) throw new Error();
  } catch {
    throw new UsageError(`--base-url must be an http:// or https:// URL, got "${baseUrl}"`);
  }
  return {
    baseUrl,
    apiKey,
    retries: retriesFlag === undefined ? 3 : Number(retriesFlag),
    onRetry: (retry) => console.error(retryMessage(retry)),
  };
}

/** "rate limited (429 … on /api/v1/…): waiting 20 s before retry 1 of 3" */
function retryMessage(retry: RetryNotice): string {
  const seconds = Math.ceil(retry.waitMs / 1000);
  const what = retry.kind === "rate_limited" ? "rate limited by the service" : "connection failed";
  return `${what} (${retry.message}): waiting ${seconds} s before retry ${retry.attempt} of ${retry.retries}`;
}

/**
 * Where relative paths (--out or the default file name, --file, --notes-file,
 * --pin-key-set, --state-dir) are taken from: the directory the user ran the
 * command in. `deno task client` runs the script in the checkout (the folder
 * above client/) and passes the caller's directory as INIT_CWD; run any other
 * way (`deno run`, an installed command), the process's own directory is the
 * caller's, and an INIT_CWD inherited from an outer `npm run` or `deno task`
 * is not taken.
 */
function userDirectory(): string {
  const cwd = Deno.cwd();
  const caller = readEnv("INIT_CWD");
  return caller !== undefined && isCheckout(cwd) ? caller : cwd;
}

/** Whether `dir` is the folder this client/ sits in (where `deno task client` runs it). */
function isCheckout(dir: string): boolean {
  if (import.meta.dirname === undefined) return false; // run from a URL
  try {
    return Deno.realPathSync(dir) === Deno.realPathSync(dirname(import.meta.dirname));
  } catch {
    return false;
  }
}

/** The server's file name, reduced to a plain name in the current directory. */
function safeFileName(name: string): string {
  const base = basename(name.replaceAll("\\", "/"));
  return base && base !== "." && base !== ".." ? base : "download.bin";
}

function describe(release: Release): string {
  return `${release.version}${
    release.build ? ` (build ${release.build})` : ""
  } [release ${release.id}]`;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
