/**
 * Prometheus gauges of rollouts and adoption (docs/rollouts.md
 * "Prometheus"), read from the KV at every scrape: the percentage each
 * rollout is at now, and per project and release the distinct clients of
 * the last 1/7/30 days, plus stale clients. main.ts adds them as a scrape source.
 */
import type { ScrapedGauge } from "../lib/metrics.ts";
import { adoptionDay, getAdoption } from "../reports/adoption.ts";
import { getLatestView } from "../releases/latest_view.ts";
import { listProjects } from "../projects/projects.ts";
import { listRollouts } from "../releases/rollouts.ts";
import { rolloutPercentage } from "../releases/offer.ts";
import type { Store } from "../kv/store.ts";

export async function rolloutGauges(store: Store, nowMs: number): Promise<ScrapedGauge[]> {
  const projects = await listProjects(store);
  const slugs = new Map(projects.map((project) => [project.id, project.slug]));
  const percentage: ScrapedGauge = {
    name: "uds_rollout_percentage",
    help: "Share of clients a project's staged rollout offers its release now (0 when halted " +
      "or inert), by project and release id.",
    samples: [],
  };
  for (const rollout of await listRollouts(store)) {
    const view = await getLatestView(store, rollout.project_id);
    const live = view.rollout !== null && view.rollout.record.release_id === rollout.release_id;
    percentage.samples.push({
      labels: {
        project: slugs.get(rollout.project_id) ?? String(rollout.project_id),
        release_id: String(rollout.release_id),
      },
      value: live ? rolloutPercentage(view.rollout!, nowMs) : 0,
    });
  }
  const clients: ScrapedGauge = {
    name: "uds_adoption_clients",
    help: "Distinct clients (install ids, or keys) whose latest check or download in the " +
      "window was of the release, by project, release id and window (1d, 7d, 30d).",
    samples: [],
  };
  const stale: ScrapedGauge = {
    name: "uds_adoption_stale_clients",
    help: "Clients of a project last seen 30 to 90 days ago.",
    samples: [],
  };
  const today = adoptionDay(nowMs);
  for (const project of projects) {
    const figures = await getAdoption(store, project.id, today);
    for (const [releaseId, counts] of figures.releases) {
      for (const [window, value] of [["1d", counts.d1], ["7d", counts.d7], ["30d", counts.d30]]) {
        clients.samples.push({
          labels: { project: project.slug, release_id: String(releaseId), window: String(window) },
          value: Number(value),
        });
      }
    }
    if (figures.total.d30 > 0 || figures.stale > 0) {
      stale.samples.push({ labels: { project: project.slug }, value: figures.stale });
    }
  }
  return [percentage, clients, stale];
}
