/**
 * Operator settings, read once at start into one typed object.
 *
 * Every setting of `../shared/spec/admin-contract.md` lives here, plus a few of our own
 * (documented in the README). An invalid value throws a `ConfigError` that
 * names the setting, so the service never starts half-configured.
 */
import { join } from "node:path";
import { USERNAME_PATTERN } from "./limits.ts";

export type RateLimitStore = "memory" | "kv";
export type LogFormat = "json" | "text";
export type StorageKind = "fs" | "s3";
/** How artifact bytes reach a client once every check has passed. */
export type DownloadMode = "stream" | "redirect" | "x-accel";

/** An S3-compatible bucket (AWS S3, MinIO, Ceph RGW, R2) that holds the artifacts. */
export interface S3Config {
  /** Undefined means AWS for the region. */
  endpoint: string | undefined;
  region: string;
  bucket: string;
  /** Put before every object key; empty or ending in `/`. */
  prefix: string;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  forcePathStyle: boolean;
  /** Multipart uploads and unreferenced objects older than this are removed by the sweep. */
  sweepAfterSeconds: number;
  /**
   * How long one S3 call may wait to connect, for its answer to start, or
   * with nothing moving on its connection, before it fails (and is retried).
   */
  timeoutSeconds: number;
}

/** A listen address from a `host:port` setting. */
export interface ListenAddress {
  hostname: string;
  port: number;
}

export interface Config {
  port: number;
  host: string;
  /** Listen with SO_REUSEPORT, so that several processes share the port (`start:all-cores`). */
  reusePort: boolean;
  dataDir: string;
  kvPath: string;
  artifactsDir: string;
  baseUrl: string;
  /** True when `baseUrl` is `https://`: turns on HSTS and `Secure` cookies. */
  https: boolean;
  serviceName: string;
  serviceRealm: string;
  rateLimitPerMinute: number;
  rateLimitBurst: number;
  /** Where token buckets live: this process's memory, or the main KV (shared by instances). */
  rateLimitStore: RateLimitStore;
  /** How often the read cache looks for writes of other processes to the KV, in ms. */
  cacheRefreshMs: number;
  maxUploadBytes: number;
  /** Where artifacts live: files under `artifactsDir`, or the `s3` bucket. */
  storage: StorageKind;
  /** Set exactly when `storage` is `s3`. */
  s3: S3Config | undefined;
  downloadMode: DownloadMode;
  /** How long a presigned download URL (redirect mode) stays valid. */
  downloadUrlTtlSeconds: number;
  /** The nginx `internal` location that `X-Accel-Redirect` points into; starts and ends with `/`. */
  xAccelPrefix: string;
  /**
   * x-accel: the secret nginx sends in `X-Accel-Secret`; a request without it
   * did not come through nginx and is streamed (set exactly with `x-accel`).
   */
  xAccelSecret: string | undefined;
  /** fs: artifact files no release references are removed by the sweep once this old. */
  fsSweepAfterSeconds: number;
  /** Sign every client API answer and download (docs/signing.md); off keeps today's bytes. */
  signing: boolean;
  /** How long a signed answer stays valid: a verifying client refuses it after that. */
  signingTtlSeconds: number;
  /** Webhook deliveries may go to loopback, link-local and private addresses (docs/webhooks.md). */
  webhooksAllowPrivate: boolean;
  /** A webhook delivery attempt without an answer in this long fails (and is retried). */
  webhooksTimeoutSeconds: number;
  adminUsername: string;
  adminPassword: string | undefined;
  /** An admin session ends after this long without a request. */
  adminSessionIdleMinutes: number;
  /** An admin session ends this long after sign-in, however active. */
  adminSessionMaxHours: number;
  trustProxy: boolean;
  /** Bearer token that unlocks `GET /metrics`; without it (and without an address) metrics are off. */
  metricsToken: string | undefined;
  /** When set, `/metrics` is served only on this separate listener, never on the main one. */
  metricsAddress: ListenAddress | undefined;
  /** Access log and service log lines on stdout: one JSON object per line, or text for a terminal. */
  logFormat: LogFormat;
  /** How long a stop (SIGTERM/SIGINT) waits for in-flight requests and downloads. */
  shutdownTimeoutSeconds: number;
  /** The retention policy a new project starts with (null: that rule off; see docs/operators.md). */
  newProjectRetention: { keep_active: number | null; archived_max_days: number | null };
  /** How often each project's retention policy runs (across instances). */
  retentionIntervalMinutes: number;
  /** New install ids per client address and UTC day counted exactly in adoption; past it, estimated (docs/rollouts.md). */
  adoptionNewIdsPerDay: number;
  /** Install report markers per client address and UTC day counted exactly; past it, estimated (docs/reports.md). */
  reportsNewPerDay: number;
  /** Sign-in through an OpenID Connect provider (docs/sso.md); undefined when off. */
  oidc: OidcConfig | undefined;
}

export class ConfigError extends Error {
  constructor(readonly setting: string, message: string) {
    super(`invalid setting ${setting}: ${message}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

function readInteger(
  env: Env,
  name: string,
  { fallback, min, max }: { fallback: number; min: number; max: number },
): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) {
    throw new ConfigError(name, `expected a whole number, got "${raw}"`);
  }
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(
      name,
      `expected a number from ${min} to ${max}, got "${raw}"`,
    );
  }
  return value;
}

/** A whole number, or null when unset or empty (a rule that is off). */
function readOptionalInteger(
  env: Env,
  name: string,
  range: { min: number; max: number },
): number | null {
  return read(env, name) === undefined ? null : readInteger(env, name, { fallback: 0, ...range });
}

function readBoolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const lower = raw.toLowerCase();
  if (["true", "1", "yes", "on"].includes(lower)) return true;
  if (["false", "0", "no", "off"].includes(lower)) return false;
  throw new ConfigError(name, `expected true or false, got "${raw}"`);
}

function readUrl(env: Env, name: string, fallback: string): string {
  const raw = read(env, name) ?? fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `expected an absolute URL, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(name, `expected an http:// or https:// URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, "");
}

function readChoice<T extends string>(
  env: Env,
  name: string,
  { choices, fallback }: { choices: readonly T[]; fallback: T },
): T {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!choices.includes(raw as T)) {
    throw new ConfigError(name, `expected one of ${choices.join(", ")}, got "${raw}"`);
  }
  return raw as T;
}

/**
 * The process environment, read one name at a time, so that `deno task start`
 * needs only `--allow-env=APP_*` rather than access to every variable.
 */
function processEnv(): Env {
  return new Proxy({}, {
    get: (_target, name) => typeof name === "string" ? Deno.env.get(name) : undefined,
  });
}

/** Whether APP_KV_PATH names a remote database (KV Connect), not a file or `:memory:`. */
export function isRemoteKv(kvPath: string): boolean {
  return /^https?:\/\//i.test(kvPath);
}

export function loadConfig(env: Env = processEnv()): Config {
  const port = readInteger(env, "APP_PORT", { fallback: 8000, min: 0, max: 65535 });
  const dataDir = readPath(env, "APP_DATA_DIR") ?? "./data";
  const kvPath = readPath(env, "APP_KV_PATH") ?? join(dataDir, "kv.sqlite3");
  if (/^[a-z]+:\/\//i.test(kvPath) && !isRemoteKv(kvPath)) {
    throw new ConfigError(
      "APP_KV_PATH",
      `expected a file path or an http(s):// URL, got "${kvPath}"`,
    );
  }
  const baseUrl = readUrl(env, "APP_BASE_URL", `http://localhost:${port}`);
  const host = read(env, "APP_HOST") ?? "0.0.0.0";
  const rateLimitPerMinute = readInteger(env, "APP_CLIENT_RATE_LIMIT_PER_MINUTE", {
    fallback: 120,
    min: 1,
    max: 1_000_000_000,
  });
  const rateLimitBurst = readInteger(env, "APP_CLIENT_RATE_LIMIT_BURST", {
    fallback: 60,
    min: 1,
    max: 1_000_000_000,
  });
  const storage = readChoice(env, "APP_STORAGE", { choices: ["fs", "s3"], fallback: "fs" });
  const downloadMode = readChoice(env, "APP_DOWNLOAD_MODE", {
    choices: ["stream", "redirect", "x-accel"],
    fallback: "stream",
  });
  if (downloadMode === "redirect" && storage !== "s3") {
    throw new ConfigError("APP_DOWNLOAD_MODE", "redirect needs APP_STORAGE=s3");
  }
  if (downloadMode === "x-accel" && storage !== "fs") {
    throw new ConfigError("APP_DOWNLOAD_MODE", "x-accel needs APP_STORAGE=fs");
  }
  return {
    port,
    host,
    reusePort: readBoolean(env, "APP_REUSE_PORT", false),
    dataDir,
    kvPath,
    artifactsDir: join(dataDir, "artifacts"),
    baseUrl,
    https: baseUrl.startsWith("https://"),
    serviceName: read(env, "APP_SERVICE_NAME") ?? "Update Distribution Service",
    serviceRealm: readRealm(env),
    rateLimitPerMinute,
    rateLimitBurst,
    rateLimitStore: readChoice(env, "APP_RATE_LIMIT_STORE", {
      choices: ["memory", "kv"],
      fallback: "memory",
    }),
    cacheRefreshMs: readInteger(env, "APP_CACHE_REFRESH_MS", {
      fallback: 100,
      min: 0,
      max: 3_600_000,
    }),
    maxUploadBytes: readInteger(env, "APP_MAX_UPLOAD_BYTES", {
      fallback: 4 * 1024 ** 3,
      min: 1,
      max: Number.MAX_SAFE_INTEGER,
    }),
    storage,
    s3: storage === "s3" ? readS3(env) : undefined,
    downloadMode,
    downloadUrlTtlSeconds: readInteger(env, "APP_DOWNLOAD_URL_TTL_SECONDS", {
      fallback: 60,
      min: 1,
      max: 604_800, // the most SigV4 allows: 7 days
    }),
    xAccelPrefix: readXAccelPrefix(env),
    xAccelSecret: readXAccelSecret(env, downloadMode),
    fsSweepAfterSeconds: readInteger(env, "APP_FS_SWEEP_AFTER_SECONDS", {
      fallback: 600,
      min: 0,
      max: 30 * 86_400,
    }),
    signing: readBoolean(env, "APP_SIGNING", false),
    signingTtlSeconds: readInteger(env, "APP_SIGNING_TTL_SECONDS", {
      fallback: 3600,
      min: 60,
      max: 30 * 86_400,
    }),
    webhooksAllowPrivate: readBoolean(env, "APP_WEBHOOKS_ALLOW_PRIVATE", false),
    webhooksTimeoutSeconds: readInteger(env, "APP_WEBHOOKS_TIMEOUT_SECONDS", {
      fallback: 10,
      min: 1,
      max: 120,
    }),
    adminUsername: readAdminUsername(env),
    adminPassword: env["APP_ADMIN_PASSWORD"] || undefined,
    adminSessionIdleMinutes: readInteger(env, "APP_ADMIN_SESSION_IDLE_MINUTES", {
      fallback: 60,
      min: 1,
      max: 7 * 24 * 60,
    }),
    adminSessionMaxHours: readInteger(env, "APP_ADMIN_SESSION_MAX_HOURS", {
      fallback: 12,
      min: 1,
      max: 30 * 24,
    }),
    trustProxy: readBoolean(env, "APP_TRUST_PROXY", false),
    metricsToken: readMetricsToken(env),
    metricsAddress: readMetricsAddress(env, port),
    logFormat: readChoice(env, "APP_LOG_FORMAT", { choices: ["json", "text"], fallback: "json" }),
    shutdownTimeoutSeconds: readInteger(env, "APP_SHUTDOWN_TIMEOUT_SECONDS", {
      fallback: 30,
      min: 0,
      max: 86_400,
    }),
    newProjectRetention: {
      keep_active: readOptionalInteger(env, "APP_RETENTION_KEEP_ACTIVE", { min: 1, max: 100_000 }),
      archived_max_days: readOptionalInteger(env, "APP_RETENTION_ARCHIVED_DAYS", {
        min: 1,
        max: 100_000,
      }),
    },
    retentionIntervalMinutes: readInteger(env, "APP_RETENTION_INTERVAL_MINUTES", {
      fallback: 60,
      min: 1,
      max: 10_080,
    }),
    adoptionNewIdsPerDay: readInteger(env, "APP_ADOPTION_NEW_IDS_PER_DAY", {
      fallback: 10_000,
      min: 0,
      max: 10_000_000,
    }),
    reportsNewPerDay: readInteger(env, "APP_REPORTS_NEW_PER_DAY", {
      fallback: 100_000,
      min: 0,
      max: 10_000_000,
    }),
    oidc: readOidc(env, readAdminUsername(env)),
  };
}

/** A path setting; `deno task start` lists it in comma-separated permission flags. */
function readPath(env: Env, name: string): string | undefined {
  const path = read(env, name);
  if (path !== undefined && path.includes(",")) {
    throw new ConfigError(
      name,
      `must not contain a comma (Deno's permission lists are comma-separated), got "${path}"`,
    );
  }
  return path;
}

function readAdminUsername(env: Env): string {
  const username = read(env, "APP_ADMIN_USERNAME") ?? "admin";
  if (!USERNAME_PATTERN.test(username)) {
    throw new ConfigError(
      "APP_ADMIN_USERNAME",
      "expected 1 to 64 letters, digits, '.', '_', '@' or '-'",
    );
  }
  return username;
}

function readS3(env: Env): S3Config {
  const bucket = read(env, "APP_S3_BUCKET");
  if (bucket === undefined) throw new ConfigError("APP_S3_BUCKET", "required with APP_STORAGE=s3");
  const endpoint = read(env, "APP_S3_ENDPOINT");
  if (endpoint !== undefined) readUrl(env, "APP_S3_ENDPOINT", endpoint);
  const prefix = read(env, "APP_S3_PREFIX") ?? "";
  if (prefix.startsWith("/") || /[\x00-\x1f\x7f]/.test(prefix) || prefix.length > 512) {
    throw new ConfigError("APP_S3_PREFIX", "expected a key prefix without a leading / or controls");
  }
  const accessKeyId = read(env, "APP_S3_ACCESS_KEY_ID");
  const secretAccessKey = read(env, "APP_S3_SECRET_ACCESS_KEY");
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError(
      accessKeyId === undefined ? "APP_S3_ACCESS_KEY_ID" : "APP_S3_SECRET_ACCESS_KEY",
      "set both APP_S3_ACCESS_KEY_ID and APP_S3_SECRET_ACCESS_KEY, or neither",
    );
  }
  return {
    endpoint: endpoint?.replace(/\/+$/, ""),
    region: read(env, "APP_S3_REGION") ?? "us-east-1",
    bucket,
    prefix: prefix === "" || prefix.endsWith("/") ? prefix : `${prefix}/`,
    accessKeyId,
    secretAccessKey,
    forcePathStyle: readBoolean(env, "APP_S3_FORCE_PATH_STYLE", false),
    sweepAfterSeconds: readInteger(env, "APP_S3_SWEEP_AFTER_SECONDS", {
      fallback: 86_400,
      min: 1,
      max: 30 * 86_400,
    }),
    timeoutSeconds: readInteger(env, "APP_S3_TIMEOUT_SECONDS", { fallback: 10, min: 1, max: 600 }),
  };
}

function readXAccelPrefix(env: Env): string {
  const prefix = read(env, "APP_X_ACCEL_PREFIX") ?? "/_uds_artifacts/";
  if (!/^\/[A-Za-z0-9._~\/-]*\/$/.test(prefix)) {
    throw new ConfigError(
      "APP_X_ACCEL_PREFIX",
      `expected a path that starts and ends with /, such as /_uds_artifacts/, got "${prefix}"`,
    );
  }
  return prefix;
}

const MIN_METRICS_TOKEN_LENGTH = 16;

/** Required with x-accel: without it, an answer meant for nginx could reach a client directly. */
function readXAccelSecret(env: Env, mode: DownloadMode): string | undefined {
  const secret = read(env, "APP_X_ACCEL_SECRET");
  if (mode !== "x-accel") return undefined;
  if (secret === undefined) {
    throw new ConfigError(
      "APP_X_ACCEL_SECRET",
      "required with APP_DOWNLOAD_MODE=x-accel: a random string that nginx sends as " +
        '`proxy_set_header X-Accel-Secret "…";` (e.g. openssl rand -hex 32)',
    );
  }
  if (secret.length < MIN_METRICS_TOKEN_LENGTH || /[^\x21-\x7e]/.test(secret)) {
    throw new ConfigError(
      "APP_X_ACCEL_SECRET",
      `expected at least ${MIN_METRICS_TOKEN_LENGTH} printable characters without spaces`,
    );
  }
  return secret;
}

function readMetricsToken(env: Env): string | undefined {
  const token = read(env, "APP_METRICS_TOKEN");
  if (token === undefined) return undefined;
  if (token.length < MIN_METRICS_TOKEN_LENGTH || /[^\x21-\x7e]/.test(token)) {
    throw new ConfigError(
      "APP_METRICS_TOKEN",
      `expected at least ${MIN_METRICS_TOKEN_LENGTH} printable characters without spaces`,
    );
  }
  return token;
}

/** `host:port`, `[ipv6]:port` or `:port` (all interfaces). */
function readMetricsAddress(env: Env, mainPort: number): ListenAddress | undefined {
  const raw = read(env, "APP_METRICS_ADDRESS");
  if (raw === undefined) return undefined;
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:\[\]]*)):(\d{1,5})$/.exec(raw);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535) {
    throw new ConfigError(
      "APP_METRICS_ADDRESS",
      `expected host:port such as 127.0.0.1:9464, got "${raw}"`,
    );
  }
  if (port !== 0 && port === mainPort) {
    throw new ConfigError("APP_METRICS_ADDRESS", `port ${port} is already APP_PORT`);
  }
  return { hostname: match[1] ?? (match[2] || "0.0.0.0"), port };
}

function readRealm(env: Env): string {
  const realm = read(env, "APP_SERVICE_REALM") ?? "update-distribution";
  // The realm is written inside a quoted header parameter.
  if (/["\\\x00-\x1f\x7f]/.test(realm)) {
    throw new ConfigError(
      "APP_SERVICE_REALM",
      "must not contain quotes, backslashes or control characters",
    );
  }
  return realm;
}

/** Sign-in through an OpenID Connect provider (docs/sso.md), from the `APP_OIDC_*` settings. */
export interface OidcConfig {
  /** The issuer URL exactly as the provider names itself (discovery reads its metadata). */
  issuer: string;
  clientId: string;
  /** Undefined for a public client (PKCE alone). */
  clientSecret: string | undefined;
  /** Space-separated, `openid` among them. */
  scopes: string;
  /** Where the admin's user name is read from. */
  usernameClaim: string;
  /** Where the groups (a list, or one string) are read from. */
  groupsClaim: string;
  /** The groups that give each role; the highest role of the user's groups wins. */
  roleGroups: { admin: string[]; publisher: string[]; viewer: string[] };
  /** Local passwords signing in beside the provider; off leaves only `breakGlassUsers`. */
  localPasswords: boolean;
  /** Local accounts that sign in with a password when local passwords are off. */
  breakGlassUsers: string[];
  /** A signed-in SSO session's groups are read again from the provider this often. */
  checkIntervalSeconds: number;
  /** The provider's name on the sign-in button and in the audit log. */
  providerName: string;
}

const OIDC_SETTINGS = [
  "APP_OIDC_CLIENT_ID",
  "APP_OIDC_CLIENT_SECRET",
  "APP_OIDC_SCOPES",
  "APP_OIDC_USERNAME_CLAIM",
  "APP_OIDC_GROUPS_CLAIM",
  "APP_OIDC_ADMIN_GROUPS",
  "APP_OIDC_PUBLISHER_GROUPS",
  "APP_OIDC_VIEWER_GROUPS",
  "APP_OIDC_LOCAL_PASSWORDS",
  "APP_OIDC_BREAK_GLASS_USERS",
  "APP_OIDC_CHECK_INTERVAL_SECONDS",
  "APP_OIDC_PROVIDER_NAME",
] as const;

/** Loopback hosts, where an `http://` issuer is accepted (local development and tests). */
function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** A comma-separated list, each item trimmed, empty items dropped. */
function readList(env: Env, name: string): string[] {
  return (read(env, name) ?? "").split(",").map((item) => item.trim()).filter((item) => item);
}

function readOidc(env: Env, adminUsername: string): OidcConfig | undefined {
  const issuer = read(env, "APP_OIDC_ISSUER");
  if (issuer === undefined) {
    const stray = OIDC_SETTINGS.find((name) => read(env, name) !== undefined);
    if (stray !== undefined) {
      throw new ConfigError("APP_OIDC_ISSUER", `required with ${stray} (or unset ${stray})`);
    }
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new ConfigError("APP_OIDC_ISSUER", `expected an absolute URL, got "${issuer}"`);
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
    throw new ConfigError(
      "APP_OIDC_ISSUER",
      `expected an https:// URL (http:// only on localhost), got "${issuer}"`,
    );
  }
  if (url.search !== "" || url.hash !== "") {
    throw new ConfigError("APP_OIDC_ISSUER", `expected a URL without ? or #, got "${issuer}"`);
  }
  const clientId = read(env, "APP_OIDC_CLIENT_ID");
  if (clientId === undefined) {
    throw new ConfigError("APP_OIDC_CLIENT_ID", "required with APP_OIDC_ISSUER");
  }
  const scopes = (read(env, "APP_OIDC_SCOPES") ?? "openid profile email").split(/[\s,]+/)
    .filter((scope) => scope);
  if (!scopes.includes("openid")) {
    throw new ConfigError("APP_OIDC_SCOPES", `must include openid, got "${scopes.join(" ")}"`);
  }
  const roleGroups = {
    admin: readList(env, "APP_OIDC_ADMIN_GROUPS"),
    publisher: readList(env, "APP_OIDC_PUBLISHER_GROUPS"),
    viewer: readList(env, "APP_OIDC_VIEWER_GROUPS"),
  };
  if (Object.values(roleGroups).every((groups) => groups.length === 0)) {
    throw new ConfigError(
      "APP_OIDC_ADMIN_GROUPS",
      "set at least one of APP_OIDC_ADMIN_GROUPS, APP_OIDC_PUBLISHER_GROUPS, " +
        "APP_OIDC_VIEWER_GROUPS: without a group no one gets a role",
    );
  }
  const breakGlassUsers = read(env, "APP_OIDC_BREAK_GLASS_USERS") === undefined
    ? [adminUsername]
    : readList(env, "APP_OIDC_BREAK_GLASS_USERS");
  const badUser = breakGlassUsers.find((name) => !USERNAME_PATTERN.test(name));
  if (badUser !== undefined) {
    throw new ConfigError("APP_OIDC_BREAK_GLASS_USERS", `"${badUser}" is not a valid user name`);
  }
  const localPasswords = readBoolean(env, "APP_OIDC_LOCAL_PASSWORDS", true);
  if (!localPasswords && breakGlassUsers.length === 0) {
    throw new ConfigError(
      "APP_OIDC_BREAK_GLASS_USERS",
      "name at least one local account with APP_OIDC_LOCAL_PASSWORDS=false, " +
        "or no one can sign in while the provider is down",
    );
  }
  const claimName = (name: string, fallback: string) => {
    const claim = read(env, name) ?? fallback;
    if (!/^[\x21-\x7e]{1,128}$/.test(claim)) {
      throw new ConfigError(name, `expected a claim name without spaces, got "${claim}"`);
    }
    return claim;
  };
  return {
    issuer,
    clientId,
    clientSecret: read(env, "APP_OIDC_CLIENT_SECRET"),
    scopes: scopes.join(" "),
    usernameClaim: claimName("APP_OIDC_USERNAME_CLAIM", "preferred_username"),
    groupsClaim: claimName("APP_OIDC_GROUPS_CLAIM", "groups"),
    roleGroups,
    localPasswords,
    breakGlassUsers,
    checkIntervalSeconds: readInteger(env, "APP_OIDC_CHECK_INTERVAL_SECONDS", {
      fallback: 300,
      min: 0,
      max: 86_400,
    }),
    providerName: read(env, "APP_OIDC_PROVIDER_NAME") ?? url.host,
  };
}
