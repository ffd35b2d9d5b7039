/**
 * What a backup reads in the records of a KV snapshot (src/kv/entries.ts):
 * how many projects, releases and API keys they hold, the releases whose
 * artifacts it copies, and the webhook endpoints whose
 * secrets it leaves out unless asked to keep them.
 */
import {
  apiKeysPrefix,
  projectsPrefix,
  releasesPrefix,
  webhookEndpointsPrefix,
} from "../kv/keys.ts";
import type { KvRecord } from "../kv/entries.ts";
import type { Release } from "../releases/types.ts";
import { type WebhookEndpoint, withoutWebhookSecrets } from "../webhooks/outbox.ts";

/** How many projects, releases and API keys the records hold. */
export function countRecords(
  records: readonly KvRecord[],
): { projects: number; releases: number; api_keys: number } {
  const count = ([name]: Deno.KvKey) =>
    records.filter((record) => record.key.length === 2 && record.key[0] === name).length;
  return {
    projects: count(projectsPrefix()),
    releases: count(releasesPrefix()),
    api_keys: count(apiKeysPrefix()),
  };
}

/** The release records among exported entries (their artifacts belong in a backup). */
export function releasesIn(records: readonly KvRecord[]): Release[] {
  const [prefix] = releasesPrefix();
  return records
    .filter((record) => record.key.length === 2 && record.key[0] === prefix)
    .map((record) => record.value as Release);
}

/**
 * The records with every webhook endpoint's secrets left out (a backup made
 * without `--include-webhook-secrets`), and how many endpoints lost one.
 */
export function leaveOutWebhookSecrets(
  records: readonly KvRecord[],
): { records: KvRecord[]; endpoints: number } {
  const [prefix] = webhookEndpointsPrefix();
  let endpoints = 0;
  const kept = records.map((record) => {
    if (record.key.length !== 2 || record.key[0] !== prefix) return record;
    endpoints++;
    return { key: record.key, value: withoutWebhookSecrets(record.value as WebhookEndpoint) };
  });
  return { records: kept, endpoints };
}
