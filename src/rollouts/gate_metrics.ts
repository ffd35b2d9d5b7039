/**
 * Prometheus series of the health gates (docs/rollouts.md "Prometheus"),
 * read from the KV at every scrape: how many stages the gates advanced,
 * halted or completed per project (one step per change, on any instance),
 * and the current stage's counted installs and failures of each gated
 * rollout. main.ts adds them as a scrape source.
 */
import type { ScrapedGauge } from "../lib/metrics.ts";
import { listProjects } from "../projects/projects.ts";
import { getReportCounts } from "../reports/reports.ts";
import { listGateChangeCounts, listRolloutGates, stageFigures } from "./gate_records.ts";
import type { Store } from "../kv/store.ts";

export async function gateGauges(store: Store): Promise<ScrapedGauge[]> {
  const projects = await listProjects(store);
  const slugs = new Map(projects.map((project) => [project.id, project.slug]));
  const slugOf = (id: number) => slugs.get(id) ?? String(id);
  const changes: ScrapedGauge = {
    name: "uds_rollout_gate_changes",
    help: "Stages the health gates advanced, halted or completed, by project and action " +
      "(a count that only grows).",
    samples: [],
  };
  for (const { projectId, action, count } of await listGateChangeCounts(store)) {
    changes.samples.push({ labels: { project: slugOf(projectId), action }, value: count });
  }
  const stage: ScrapedGauge = {
    name: "uds_rollout_stage_reports",
    help: "Counted install reports in the current stage of a gated rollout, by project, " +
      "release id and outcome (installed, failed).",
    samples: [],
  };
  for (const state of await listRolloutGates(store)) {
    if (state.completed_at !== null) continue;
    const figures = stageFigures(state, await getReportCounts(store, state.release_id));
    const labels = { project: slugOf(state.project_id), release_id: String(state.release_id) };
    stage.samples.push({ labels: { ...labels, outcome: "installed" }, value: figures.installed });
    stage.samples.push({ labels: { ...labels, outcome: "failed" }, value: figures.failed });
  }
  return [changes, stage];
}
