/**
 * The Deno KV key layout, in one place. Every key the service writes is built
 * here; nothing else spells a key prefix.
 *
 * | key                                          | value                         |
 * | -------------------------------------------- | ----------------------------- |
 * | ["counters", kind]                           | last integer id of that kind  |
 * | ["projects", projectId]                      | Project                       |
 * | ["projects_by_slug", slug]                   | projectId                     |
 * | ["releases", releaseId]                      | Release                       |
 * | ["releases_by_project", projectId, releaseId]| releaseId                     |
 * | ["latest_release", projectId]                | releaseId or null             |
 * | ["release_downloads", releaseId]             | Deno.KvU64 download count     |
 * | ["downloads_by_day", "all", day]             | Deno.KvU64 downloads that UTC day (YYYY-MM-DD) |
 * | ["downloads_by_day", "project", id, day]     | Deno.KvU64, per project       |
 * | ["downloads_by_day", "release", id, day]     | Deno.KvU64, per release       |
 * | ["key_downloads", keyId]                     | Deno.KvU64 downloads with that key |
 * | ["api_keys", keyId]                          | ApiKey (never the secret)     |
 * | ["api_keys_by_hash", sha256Hex]              | keyId                         |
 * | ["api_key_last_used", keyId]                 | RFC 3339 time                 |
 * | ["health", "ping"]                           | never written; read by /healthz|
 * | ["health", "write_probe"]                    | written by /healthz (expireIn) |
 * | ["meta", "generation"]                       | Deno.KvU64 bumped by every write of a project, release or key (read cache) |
 * | ["rate_limit", bucketId]                     | token bucket state            |
 * | ["admin_users", username]                    | AdminUser (password hash)     |
 * | ["admin_sessions", sha256Hex(sessionId)]     | AdminSession (expireIn), with the provider's side (id token hint, tokens, groups check time) of a sign-in through one |
 * | ["login_failures", "pair"|"user"|"addr", subject] | sign-in counts (expireIn) |
 * | ["login_trusted", pair]                        | a (user, address) that signed in (expireIn) |
 * | ["cache_changes", atMs, id]                    | what a write changed, for read caches (expireIn) |
 * | ["audit_log", atMs, entryId]                 | AuditEntry                    |
 * | ["counts", kind, state]                      | Deno.KvU64 records of a kind in a state (aggregates.ts) |
 * | ["counts_by_project", projectId]             | Deno.KvU64 releases of the project, any state |
 * | ["releases_by_time", projectId, createdAt, releaseId] | releaseId ("latest" order)  |
 * | ["projects_by_name", 0 active / 1 archived, lowercased name, projectId] | projectId |
 * | ["project_tags", tag]                        | Deno.KvU64 projects carrying the tag |
 * | ["api_keys_by_expiry", expiresAt, keyId]     | whether the key is enabled    |
 * | ["meta", "aggregates"]                       | AggregatesMarker: built once (aggregates.ts) |
 * | ["meta", "top_keys"]                         | TopKeysSnapshot (downloads.ts) |
 * | ["bytes_by_project", projectId]              | Deno.KvU64 bytes of the project's artifacts (aggregates.ts) |
 * | ["retention_policies", projectId]            | RetentionPolicy (retention_records.ts) |
 * | ["retention_runs", projectId]                | RetentionRun: the last run of its policy (its lease: ["leases", "retention_run", projectId]) |
 *
 * Every write that creates, deletes or changes the state, name or tags of a
 * project, release or key keeps the `counts*`, `*_by_time`, `*_by_name`,
 * `project_tags` and `api_keys_by_expiry` entries in the same commit (see
 * aggregates.ts); the admin pages read them instead of every record.
 * | ["deleted_release_downloads", projectId]     | Deno.KvU64 downloads of deleted releases |
 * | ["deleted_api_keys", keyId]                  | DeletedApiKey (id, name, prefix) |
 * | ["latest_choice", projectId]                | releaseId an admin or token made latest |
 * | ["rollouts", projectId]                      | Rollout: a staged rollout of a newer release (rollouts.ts) |
 * | ["adoption_client", projectId, clientHash]   | AdoptionMarker: a client's last sighting (expireIn; adoption.ts) |
 * | ["adoption_count", projectId, releaseId, day] | Deno.KvU64 clients last seen on the release that day |
 * | ["adoption_sketch", projectId, releaseId, day] | Uint8Array HyperLogLog of clients past the new-id cap seen on the release that day |
 * | ["adoption_new_ids", address, day]           | number: install ids a client address (an IPv6 one: its /64) brought in as new clients that UTC day (expireIn) |
 * | ["publish_tokens", tokenId]                  | PublishToken (never the secret) |
 * | ["publish_tokens_by_hash", sha256Hex]        | tokenId                       |
 * | ["publish_token_last_used", tokenId]         | RFC 3339 time                 |
 * | ["meta", "sha512_backfill"]                  | true once every release has its SHA-512 |
 * | ["block_maps", releaseId]                    | BlockMapRecord: the release's block map, who made it (block_maps.ts) |
 * | ["block_map_pieces", releaseId, piecesId, i] | Uint8Array: a piece of the gzipped block map |
 * | ["sparkle_deltas", releaseId, index]         | SparkleDelta: a `.delta` file of the release (sparkle_deltas.ts) |
 * | ["squirrel_deltas", releaseId]               | SquirrelDelta: the release's Squirrel.Windows `-delta.nupkg` (squirrel_deltas.ts) |
 * | ["velopack_packages", releaseId]            | VelopackPackage: a Velopack release's id, version and SHA-1, or why it is none (velopack.ts) |
 * | ["velopack_deltas", releaseId, fromReleaseId] | VelopackDelta: a server-made delta package from an older release (velopack.ts) |
 * | ["velopack_settings", projectId]             | VelopackSettings: how many older releases get a delta to each new one |
 * | ["artifact_patches", releaseId, fromReleaseId] | ArtifactPatch: a server-made zstd patch from an older release's artifact (artifact_patches.ts) |
 * | ["delivery_bytes", releaseId, "served"/"full"] | Deno.KvU64 bytes answered / whole downloads' cost (src/stats/delivery.ts) |
 * | ["delivery_bytes_by_month", projectId, month, "served"/"full"] | Deno.KvU64, the same per UTC month |
 * | ["delivery_attempts", releaseId, client]     | ms until which a whole download by `client` is that differential attempt's fallback (expireIn; src/stats/delivery.ts) |
 * | ["leases", ...LeaseName]                     | Lease { holder, until } (expireIn): the one instance doing that work (leases.ts) |
 * | ["signing_keys", kid]                        | SigningKey (public key, status; docs/signing.md) |
 * | ["signing_root"]                             | SigningRoot: the uploaded offline-root document |
 * | ["webhook_endpoints", endpointId]            | WebhookEndpoint, its signing secret included (outbox.ts) |
 * | ["webhook_endpoint_health", endpointId]      | WebhookEndpointHealth: the endpoint's latest attempt, failed or not |
 * | ["webhook_events", eventId]                  | WebhookEventBody not yet fanned out to endpoints |
 * | ["webhook_outbox", dueMs, deliveryId]        | OutboxEntry: a delivery due then (or leased until then) |
 * | ["webhook_deliveries", endpointId, deliveryId] | WebhookDelivery: the delivery log (expireIn once done) |
 * | ["webhook_expiry_notices", keyId, expiresAt] | key.expiring was announced (expireIn) |
 * | ["webhook_download_marks", releaseId]        | Deno.KvU64: the release's download total last announced |
 * | ["webhook_download_baseline"]                | true once the marks were set to the totals (outbox.ts) |
 * | ["report_marker", releaseId, kind, clientHash] | 1: an install's report of that kind was counted (expireIn; reports.ts) |
 * | ["report_count", releaseId, kind]            | Deno.KvU64 installs that reported that kind for the release |
 * | ["report_hourly", releaseId, kind, hour]     | Deno.KvU64 those of them counted in that UTC hour |
 * | ["report_sketch", releaseId, kind, day]      | Uint8Array HyperLogLog of reports not counted (untrusted, or past an address's cap) |
 * | ["report_new_ids", address, day]             | number: report markers made from a client address (an IPv6 one: its /64) that UTC day (expireIn) |
 * | ["report_reasons", releaseId, kind]          | ReportReason[]: the latest failure reasons (at most 20) |
 * | ["rollout_gates", projectId]                 | RolloutGateState: a rollout's health gates and stage (gate_records.ts) |
 * | ["rollout_gate_changes", projectId, action]  | Deno.KvU64 stages advanced, halted or completed by the gates |
 * | ["release_policy", projectId]                | ReleasePolicy: critical releases, the minimum version, the last rollback |
 * | ["sso_pending", sha256Hex(state)]            | SsoPending: a sign-in on its way through the provider (expireIn; src/sso/records.ts) |
 * | ["sso_sessions", sha256Hex(sessionId)]       | legacy, never written: the provider's tokens (in clear) of sessions of an older layout that kept two records; deleted at start and with their session (legacySsoSessionKey; src/accounts/sessions.ts) |
 * | ["sso_accounts", username]                   | SsoAccount: the provider identity an account belongs to |
 * | ["tuf_roots", version]                       | TufRoot: one uploaded version of the TUF root (tuf.ts) |
 * | ["tuf_state", projectId]                     | TufState: versions and expiry of a project's TUF metadata |
 * | ["tuf_files", projectId, role, version, part] | string: part of a signed TUF metadata file |
 * | ["tuf_status"]                               | TufRefreshStatus: the last background refresh of TUF metadata |
 * | ["sparkle_feed_keys", projectId]             | SparkleFeedKey: the project's appcast key (public half; sparkle_keys.ts) |
 *
 * `latest_release` is rewritten on every release change of its project, so
 * that its versionstamp serializes concurrent release writes of one project.
 *
 * Backups (src/kv/entries.ts) copy every entry except those under
 * `BACKUP_SKIPPED_PREFIXES`; add the prefix of every new key written with
 * `expireIn` there (short-lived state that a restore must not resurrect).
 * Sessions are keyed by the hash of their id, so the KV never holds a usable
 * session id; `audit_log` keys sort by time, newest last.
 */

export type IdKind = "projects" | "releases" | "api_keys" | "publish_tokens";

export function counterKey(kind: IdKind): Deno.KvKey {
  return ["counters", kind];
}

export function projectKey(projectId: number): Deno.KvKey {
  return ["projects", projectId];
}

export function projectsPrefix(): Deno.KvKey {
  return ["projects"];
}

export function projectBySlugKey(slug: string): Deno.KvKey {
  return ["projects_by_slug", slug];
}

export function projectsBySlugPrefix(): Deno.KvKey {
  return ["projects_by_slug"];
}

export function releaseKey(releaseId: number): Deno.KvKey {
  return ["releases", releaseId];
}

export function releasesPrefix(): Deno.KvKey {
  return ["releases"];
}

/** Set once every release stored before uploads computed SHA-512 has it (src/feeds/backfill_records.ts). */
export function sha512BackfillDoneKey(): Deno.KvKey {
  return ["meta", "sha512_backfill"];
}

/**
 * What a lease (leases.ts) is for: the SHA-512 backfill (src/feeds/backfill.ts),
 * the block maps' build (src/blockmap/background.ts),
 * the aggregates build (aggregates.ts), the top-keys refresh (downloads.ts), a
 * project's retention run (retention.ts).
 */
export type LeaseName =
  | "sha512_backfill"
  | "block_map_build"
  | "aggregates_build"
  | "top_keys_refresh"
  | "rollout_gates"
  | "tuf_refresh"
  | "velopack_deltas"
  | readonly ["retention_run", number];

/** The lease of the one instance doing `name`'s work. */
export function leaseKey(name: LeaseName): Deno.KvKey {
  return typeof name === "string" ? ["leases", name] : ["leases", ...name];
}

export function releaseByProjectKey(projectId: number, releaseId: number): Deno.KvKey {
  return ["releases_by_project", projectId, releaseId];
}

export function releasesByProjectPrefix(projectId: number): Deno.KvKey {
  return ["releases_by_project", projectId];
}

/** A project's staged rollout (src/releases/rollouts.ts), read with its latest pointer. */
export function rolloutKey(projectId: number): Deno.KvKey {
  return ["rollouts", projectId];
}

export function rolloutsPrefix(): Deno.KvKey {
  return ["rollouts"];
}

export function latestReleaseKey(projectId: number): Deno.KvKey {
  return ["latest_release", projectId];
}

export function releaseDownloadsKey(releaseId: number): Deno.KvKey {
  return ["release_downloads", releaseId];
}

/** Whose downloads a per-day counter counts: all of them, one project's or one release's. */
export type DownloadScope = ["all"] | ["project", number] | ["release", number];

export function downloadsByDayKey(scope: DownloadScope, day: string): Deno.KvKey {
  return ["downloads_by_day", ...scope, day];
}

export function downloadsByDayPrefix(scope: DownloadScope): Deno.KvKey {
  return ["downloads_by_day", ...scope];
}

export function keyDownloadsKey(keyId: number): Deno.KvKey {
  return ["key_downloads", keyId];
}

export function keyDownloadsPrefix(): Deno.KvKey {
  return ["key_downloads"];
}

export function apiKeyKey(keyId: number): Deno.KvKey {
  return ["api_keys", keyId];
}

export function apiKeysPrefix(): Deno.KvKey {
  return ["api_keys"];
}

export function apiKeyByHashKey(hash: string): Deno.KvKey {
  return ["api_keys_by_hash", hash];
}

export function apiKeyLastUsedKey(keyId: number): Deno.KvKey {
  return ["api_key_last_used", keyId];
}

export function healthPingKey(): Deno.KvKey {
  return ["health", "ping"];
}

/** Written by /healthz's write probe (expireIn), to tell a KV that refuses writes. */
export function healthWriteProbeKey(): Deno.KvKey {
  return ["health", "write_probe"];
}

/** Bumped by every project, release and key write; see cache.ts. */
export function cacheGenerationKey(): Deno.KvKey {
  return ["meta", "generation"];
}

/** What one write changed, for other processes' read caches (expireIn); see cache.ts. */
export function cacheChangeKey(atMs: number, id: string): Deno.KvKey {
  return ["cache_changes", atMs, id];
}

export function cacheChangesPrefix(): Deno.KvKey {
  return ["cache_changes"];
}

export function rateLimitKey(bucketId: string): Deno.KvKey {
  return ["rate_limit", bucketId];
}

/** Short-lived entries (written with `expireIn`) that backups leave out. */
export const BACKUP_SKIPPED_PREFIXES: readonly Deno.KvKey[] = [
  ["rate_limit"],
  ["health"],
  ["cache_changes"],
  ["admin_sessions"],
  ["admin_sessions_by_user"],
  ["login_failures"],
  ["webhook_events"],
  ["webhook_outbox"],
  ["webhook_deliveries"],
  ["webhook_endpoint_health"],
  ["webhook_expiry_notices"],
  ["webhook_download_marks"],
  ["delivery_attempts"],
  ["webhook_download_baseline"],
  ["leases"],
  ["adoption_new_ids"],
  ["report_new_ids"],
  ["sso_pending"],
  ["sso_sessions"],
  ["velopack_packages"],
  ["velopack_deltas"],
  ["artifact_patches"],
];

/**
 * Single-key bookkeeping entries that change on every download, key use or
 * adoption sketch merge, never as part of a multi-key commit. A backup takes whatever value each one
 * has when it is read instead of waiting for them to hold still.
 */
export const BACKUP_VOLATILE_PREFIXES: readonly Deno.KvKey[] = [
  ["release_downloads"],
  ["downloads_by_day"],
  ["key_downloads"],
  ["api_key_last_used"],
  ["publish_token_last_used"],
  ["adoption_sketch"],
  ["report_sketch"],
  ["delivery_bytes"],
  ["delivery_bytes_by_month"],
];
export function adminUserKey(username: string): Deno.KvKey {
  return ["admin_users", username];
}

export function adminUsersPrefix(): Deno.KvKey {
  return ["admin_users"];
}

export function adminSessionKey(idHash: string): Deno.KvKey {
  return ["admin_sessions", idHash];
}

export function adminSessionByUserKey(username: string, idHash: string): Deno.KvKey {
  return ["admin_sessions_by_user", username, idHash];
}

export function adminSessionsByUserPrefix(username: string): Deno.KvKey {
  return ["admin_sessions_by_user", username];
}

/**
 * Legacy: the provider's side of a session under an older layout that kept it apart from the
 * admin session. Never written; only deleted (src/accounts/sessions.ts).
 */
export function legacySsoSessionKey(idHash: string): Deno.KvKey {
  return ["sso_sessions", idHash];
}

/** Legacy: every entry of `legacySsoSessionKey`. */
export function legacySsoSessionsPrefix(): Deno.KvKey {
  return ["sso_sessions"];
}

export function loginFailuresKey(kind: "pair" | "user" | "addr", subject: string): Deno.KvKey {
  return ["login_failures", kind, subject];
}

/** Marks a (user name, address) pair that has signed in: the user name's spacing skips it. */
export function loginTrustedKey(pair: string): Deno.KvKey {
  return ["login_trusted", pair];
}

/** The kinds and states the dashboard counts (`["counts", kind, state]`). */
export type CountedKind = "projects" | "releases" | "api_keys";

export function countKey(kind: CountedKind, state: string): Deno.KvKey {
  return ["counts", kind, state];
}

export function countsPrefix(): Deno.KvKey {
  return ["counts"];
}

export function projectReleaseCountKey(projectId: number): Deno.KvKey {
  return ["counts_by_project", projectId];
}

export function projectReleaseCountsPrefix(): Deno.KvKey {
  return ["counts_by_project"];
}

/** Bytes of a project's artifacts, every state (`size_bytes` summed). */
export function projectBytesKey(projectId: number): Deno.KvKey {
  return ["bytes_by_project", projectId];
}

export function projectBytesPrefix(): Deno.KvKey {
  return ["bytes_by_project"];
}

/** A project's retention policy (absent: none). */
export function retentionPolicyKey(projectId: number): Deno.KvKey {
  return ["retention_policies", projectId];
}

export function retentionPoliciesPrefix(): Deno.KvKey {
  return ["retention_policies"];
}

/** Who runs a project's retention policy now, and when it last ran. */
export function retentionRunKey(projectId: number): Deno.KvKey {
  return ["retention_runs", projectId];
}

/** A project's releases in "latest" order: by `created_at`, then id. */
export function releaseByTimeKey(
  release: { project_id: number; created_at: string; id: number },
): Deno.KvKey {
  return ["releases_by_time", release.project_id, release.created_at, release.id];
}

export function releasesByTimePrefix(projectId: number): Deno.KvKey {
  return ["releases_by_time", projectId];
}

/** The projects page's order: active first, then by name (case-insensitive), then id. */
export function projectByNameKey(
  project: { state: string; name: string; id: number },
): Deno.KvKey {
  return [
    "projects_by_name",
    project.state === "active" ? 0 : 1,
    project.name.toLowerCase(),
    project.id,
  ];
}

export function projectsByNamePrefix(): Deno.KvKey {
  return ["projects_by_name"];
}

export function projectTagKey(tag: string): Deno.KvKey {
  return ["project_tags", tag];
}

export function projectTagsPrefix(): Deno.KvKey {
  return ["project_tags"];
}

export function apiKeyExpiryKey(expiresAt: string, keyId: number): Deno.KvKey {
  return ["api_keys_by_expiry", expiresAt, keyId];
}

export function apiKeyExpiryPrefix(): Deno.KvKey {
  return ["api_keys_by_expiry"];
}

export function aggregatesMarkerKey(): Deno.KvKey {
  return ["meta", "aggregates"];
}

export function topKeysKey(): Deno.KvKey {
  return ["meta", "top_keys"];
}

export function auditKey(atMs: number, entryId: string): Deno.KvKey {
  return ["audit_log", atMs, entryId];
}

export function auditPrefix(): Deno.KvKey {
  return ["audit_log"];
}

/**
 * Downloads of a project's deleted releases (Deno.KvU64): a deleted release's
 * count moves here in its delete commit, so the project's total keeps it.
 */
export function deletedDownloadsKey(projectId: number): Deno.KvKey {
  return ["deleted_release_downloads", projectId];
}

/** What is kept of a deleted API key (id, name, prefix), for the audit log and download statistics. */
export function deletedApiKeyKey(keyId: number): Deno.KvKey {
  return ["deleted_api_keys", keyId];
}

export function publishTokenKey(tokenId: number): Deno.KvKey {
  return ["publish_tokens", tokenId];
}

export function publishTokensPrefix(): Deno.KvKey {
  return ["publish_tokens"];
}

export function publishTokenByHashKey(hash: string): Deno.KvKey {
  return ["publish_tokens_by_hash", hash];
}

export function publishTokenLastUsedKey(tokenId: number): Deno.KvKey {
  return ["publish_token_last_used", tokenId];
}

/** The release chosen as latest ("Make latest"); absent: the newest active release is latest. */
export function latestChoiceKey(projectId: number): Deno.KvKey {
  return ["latest_choice", projectId];
}

export function signingKeyKey(kid: string): Deno.KvKey {
  return ["signing_keys", kid];
}

export function signingKeysPrefix(): Deno.KvKey {
  return ["signing_keys"];
}

/** The key set's offline-root document (docs/signing.md "Offline root"), as last uploaded. */
export function signingRootKey(): Deno.KvKey {
  return ["signing_root"];
}

/** One client's last sighting in a project (src/reports/adoption.ts); expires after 90 days. */
export function adoptionClientKey(projectId: number, clientHash: string): Deno.KvKey {
  return ["adoption_client", projectId, clientHash];
}

export function adoptionClientPrefix(projectId: number): Deno.KvKey {
  return ["adoption_client", projectId];
}

/** How many of a project's clients were last seen on a release on a day (a KV `sum`). */
export function adoptionCountKey(projectId: number, releaseId: number, day: number): Deno.KvKey {
  return ["adoption_count", projectId, releaseId, day];
}

export function adoptionCountPrefix(projectId: number): Deno.KvKey {
  return ["adoption_count", projectId];
}

/** A sketch of a project's clients past the new-id cap seen on a release on a day. */
export function adoptionSketchKey(projectId: number, releaseId: number, day: number): Deno.KvKey {
  return ["adoption_sketch", projectId, releaseId, day];
}

export function adoptionSketchPrefix(projectId: number): Deno.KvKey {
  return ["adoption_sketch", projectId];
}

/** How many install ids a client address brought in as new clients on a UTC day (the new-id cap). */
export function adoptionNewIdsKey(address: string, day: number): Deno.KvKey {
  return ["adoption_new_ids", address, day];
}

export function webhookEndpointKey(endpointId: string): Deno.KvKey {
  return ["webhook_endpoints", endpointId];
}

export function webhookEndpointsPrefix(): Deno.KvKey {
  return ["webhook_endpoints"];
}

/** The outcome of an endpoint's latest delivery attempt (whether it is failing). */
export function webhookEndpointHealthKey(endpointId: string): Deno.KvKey {
  return ["webhook_endpoint_health", endpointId];
}

export function webhookEndpointHealthPrefix(): Deno.KvKey {
  return ["webhook_endpoint_health"];
}

export function webhookEventKey(eventId: string): Deno.KvKey {
  return ["webhook_events", eventId];
}

export function webhookEventsPrefix(): Deno.KvKey {
  return ["webhook_events"];
}

export function webhookOutboxKey(dueMs: number, deliveryId: string): Deno.KvKey {
  return ["webhook_outbox", dueMs, deliveryId];
}

export function webhookOutboxPrefix(): Deno.KvKey {
  return ["webhook_outbox"];
}

export function webhookDeliveryKey(endpointId: string, deliveryId: string): Deno.KvKey {
  return ["webhook_deliveries", endpointId, deliveryId];
}

export function webhookDeliveriesPrefix(endpointId: string): Deno.KvKey {
  return ["webhook_deliveries", endpointId];
}

export function releaseDownloadsPrefix(): Deno.KvKey {
  return ["release_downloads"];
}

/** The download total of a release that `download.completed` last announced. */
export function webhookDownloadMarkKey(releaseId: number): Deno.KvKey {
  return ["webhook_download_marks", releaseId];
}

export function webhookDownloadMarksPrefix(): Deno.KvKey {
  return ["webhook_download_marks"];
}

/** Set once the marks start from the totals (so that history is never announced). */
export function webhookDownloadBaselineKey(): Deno.KvKey {
  return ["webhook_download_baseline"];
}

export function webhookExpiryNoticeKey(keyId: number, expiresAt: string): Deno.KvKey {
  return ["webhook_expiry_notices", keyId, expiresAt];
}

/** That an install's report of `kind` on a release was counted (src/reports/reports.ts). */
export function reportMarkerKey(releaseId: number, kind: string, clientHash: string): Deno.KvKey {
  return ["report_marker", releaseId, kind, clientHash];
}

/** How many installs reported `kind` for a release (a KV `sum`). */
export function reportCountKey(releaseId: number, kind: string): Deno.KvKey {
  return ["report_count", releaseId, kind];
}

/** Those of them counted in a UTC hour (hours since the epoch). */
export function reportHourlyKey(releaseId: number, kind: string, hour: number): Deno.KvKey {
  return ["report_hourly", releaseId, kind, hour];
}

export function reportHourlyPrefix(releaseId: number): Deno.KvKey {
  return ["report_hourly", releaseId];
}

/** A sketch of reports not counted (untrusted, or past an address's cap), per release, kind and UTC day. */
export function reportSketchKey(releaseId: number, kind: string, day: number): Deno.KvKey {
  return ["report_sketch", releaseId, kind, day];
}

export function reportSketchPrefix(releaseId: number): Deno.KvKey {
  return ["report_sketch", releaseId];
}

/** Report markers made from a client address on a UTC day (the report cap). */
export function reportNewIdsKey(address: string, day: number): Deno.KvKey {
  return ["report_new_ids", address, day];
}

/** The latest failure reasons of a release and kind. */
export function reportReasonsKey(releaseId: number, kind: string): Deno.KvKey {
  return ["report_reasons", releaseId, kind];
}

/** A project's rollout health gates and the stage they are at (src/rollouts/gate_records.ts). */
export function rolloutGatesKey(projectId: number): Deno.KvKey {
  return ["rollout_gates", projectId];
}

export function rolloutGatesPrefix(): Deno.KvKey {
  return ["rollout_gates"];
}

/** Changes the gates made to a project's rollouts, per action (a KV `sum`). */
export function rolloutGateChangeKey(projectId: number, action: string): Deno.KvKey {
  return ["rollout_gate_changes", projectId, action];
}

/** Every project's gate changes, or one project's. */
export function rolloutGateChangesPrefix(projectId?: number): Deno.KvKey {
  return projectId === undefined ? ["rollout_gate_changes"] : ["rollout_gate_changes", projectId];
}

/** A project's critical releases and minimum supported version. */
export function releasePolicyKey(projectId: number): Deno.KvKey {
  return ["release_policy", projectId];
}

export function releasePoliciesPrefix(): Deno.KvKey {
  return ["release_policy"];
}

/** A sign-in through the OpenID Connect provider, by the hash of its `state`. */
export function ssoPendingKey(stateHash: string): Deno.KvKey {
  return ["sso_pending", stateHash];
}

/** The provider identity (issuer and subject) that an admin account was made for. */
export function ssoAccountKey(username: string): Deno.KvKey {
  return ["sso_accounts", username];
}

/** One version of the TUF root (docs/tuf.md). */
export function tufRootKey(version: number): Deno.KvKey {
  return ["tuf_roots", version];
}

export function tufRootsPrefix(): Deno.KvKey {
  return ["tuf_roots"];
}

/** The versions and expiry of a project's TUF metadata. */
export function tufStateKey(projectId: number): Deno.KvKey {
  return ["tuf_state", projectId];
}

export function tufStatesPrefix(): Deno.KvKey {
  return ["tuf_state"];
}

/** One part of a signed TUF metadata file (a file may be larger than one KV value). */
export function tufFilePartKey(
  projectId: number,
  file: { role: string; version: number },
  part: number,
): Deno.KvKey {
  return ["tuf_files", projectId, file.role, file.version, part];
}

export function tufFilePrefix(
  projectId: number,
  file: { role: string; version: number },
): Deno.KvKey {
  return ["tuf_files", projectId, file.role, file.version];
}

/** The last background refresh of every project's TUF metadata. */
export function tufStatusKey(): Deno.KvKey {
  return ["tuf_status"];
}

/** The Sparkle appcast key of a project (its public half; the private key is a file). */
export function sparkleFeedKeyKey(projectId: number): Deno.KvKey {
  return ["sparkle_feed_keys", projectId];
}

export function sparkleFeedKeysPrefix(): Deno.KvKey {
  return ["sparkle_feed_keys"];
}

/** `["block_maps", releaseId]`: the release's BlockMapRecord. */
export function blockMapKey(releaseId: number): Deno.KvKey {
  return ["block_maps", releaseId];
}

export function blockMapsPrefix(): Deno.KvKey {
  return ["block_maps"];
}

/** `["block_map_pieces", releaseId, piecesId, index]`: bytes of one block map. */
export function blockMapPieceKey(releaseId: number, piecesId: string, index: number): Deno.KvKey {
  return ["block_map_pieces", releaseId, piecesId, index];
}

/** The pieces of one release's block maps, or of every release's without `releaseId`. */
export function blockMapPiecesPrefix(releaseId?: number): Deno.KvKey {
  return releaseId === undefined ? ["block_map_pieces"] : ["block_map_pieces", releaseId];
}

/** `["sparkle_deltas", releaseId, index]`: SparkleDelta. */
export function sparkleDeltaKey(releaseId: number, index: number): Deno.KvKey {
  return ["sparkle_deltas", releaseId, index];
}

/** `["squirrel_deltas", releaseId]`: SquirrelDelta. */
export function squirrelDeltaKey(releaseId: number): Deno.KvKey {
  return ["squirrel_deltas", releaseId];
}

export function squirrelDeltasPrefix(): Deno.KvKey {
  return ["squirrel_deltas"];
}

export function velopackPackageKey(releaseId: number): Deno.KvKey {
  return ["velopack_packages", releaseId];
}

export function velopackPackagesPrefix(): Deno.KvKey {
  return ["velopack_packages"];
}

export function velopackDeltaKey(releaseId: number, fromReleaseId: number): Deno.KvKey {
  return ["velopack_deltas", releaseId, fromReleaseId];
}

export function velopackDeltasPrefix(releaseId?: number): Deno.KvKey {
  return releaseId === undefined ? ["velopack_deltas"] : ["velopack_deltas", releaseId];
}

export function artifactPatchKey(releaseId: number, fromReleaseId: number): Deno.KvKey {
  return ["artifact_patches", releaseId, fromReleaseId];
}

export function artifactPatchesPrefix(releaseId?: number): Deno.KvKey {
  return releaseId === undefined ? ["artifact_patches"] : ["artifact_patches", releaseId];
}

export function velopackSettingsKey(projectId: number): Deno.KvKey {
  return ["velopack_settings", projectId];
}

export function sparkleDeltasPrefix(releaseId?: number): Deno.KvKey {
  return releaseId === undefined ? ["sparkle_deltas"] : ["sparkle_deltas", releaseId];
}

/** Which sum: bytes answered, or bytes whole downloads would have cost. */
export type DeliverySum = "served" | "full";

/** `["delivery_bytes", releaseId, sum]`: Deno.KvU64. */
export function releaseDeliveryKey(releaseId: number, sum: DeliverySum): Deno.KvKey {
  return ["delivery_bytes", releaseId, sum];
}

/** `["delivery_attempts", releaseId, client]`: a differential update attempt of a client (src/stats/delivery.ts). */
export function deliveryAttemptKey(releaseId: number, client: string): Deno.KvKey {
  return ["delivery_attempts", releaseId, client];
}

/** `["delivery_bytes_by_month", projectId, "YYYY-MM", sum]`: Deno.KvU64. */
export function projectDeliveryMonthKey(
  projectId: number,
  month: string,
  sum: DeliverySum,
): Deno.KvKey {
  return ["delivery_bytes_by_month", projectId, month, sum];
}
