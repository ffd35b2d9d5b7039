/**
 * Release safety in the publishing API (docs/rollouts.md "Health gates", "A
 * way back", "Critical updates and a minimum version"): a rollout's gates
 * (`GET`/`PUT`/`DELETE /projects/{slug}/rollout/gates`), roll back
 * (`POST /projects/{slug}/rollback`) and the release policy
 * (`GET`/`PUT /projects/{slug}/policy`). Changes need `release_state`, like
 * the rollout routes, and are audit-logged.
 */
import type { Context, Hono } from "hono";
import { ApiError } from "../../http/errors.ts";
import { jsonResponse } from "../../http/json.ts";
import type { AuditAction } from "../../kv/audit.ts";
import {
  getReleasePolicy,
  type ReleasePolicy,
  rollBack,
  setMinimumVersion,
  setReleaseCritical,
} from "../../releases/release_policy.ts";
import { getRelease } from "../../releases/releases.ts";
import {
  getRolloutGates,
  parseGates,
  type RolloutGateState,
  setRolloutGates,
} from "../../rollouts/gate_records.ts";
import { jsonLimit, jsonObject, refuseUnknownField } from "./json_body.ts";
import { onProject } from "./route_gates.ts";
import type { PublishEnv } from "./types.ts";

/** Audit-logs a change to the rollout of the route's project (src/publishing/api/mod.ts). */
type AuditRollout = (
  c: Context<PublishEnv>,
  action: AuditAction,
  details: string,
) => Promise<unknown>;

function gatesJson(state: RolloutGateState | null) {
  return state === null ? null : {
    release_id: state.release_id,
    ...state.gates,
    halt_reason: state.halt_reason,
    completed_at: state.completed_at,
    stage_history: state.stages,
  };
}

function policyJson(policy: ReleasePolicy) {
  return {
    critical_release_ids: policy.critical_ids,
    minimum_version: policy.minimum_version,
    rolled_back: policy.rolled_back,
  };
}

/** The JSON body of a gates change, checked by `parseGates`. */
const gatesBody = jsonObject(
  '{"stages": [10, 50, 100], "min_installs": 100, "min_hours": 4, "advance_below": 2, "halt_at": 5}',
  parseGates,
);

/** The fields of a policy change. */
const POLICY_FIELDS = ["critical_release_ids", "minimum_version"] as const;

/** The JSON body of a policy change: `critical_release_ids` and/or `minimum_version`. */
const policyBody = jsonObject('{"minimum_version": "1.2.0"}', (fields) => {
  for (const name of Object.keys(fields)) refuseUnknownField(name, POLICY_FIELDS);
  const ids = fields.critical_release_ids;
  if (ids !== undefined && (!Array.isArray(ids) || !ids.every(Number.isSafeInteger))) {
    throw new ApiError(400, "critical_release_ids must be a list of release ids");
  }
  const minimum = fields.minimum_version;
  if (minimum !== undefined && minimum !== null && typeof minimum !== "string") {
    throw new ApiError(400, "minimum_version must be a string or null");
  }
  return {
    criticalIds: ids as number[] | undefined,
    minimumVersion: minimum as string | null | undefined,
  };
});

export function addSafetyRoutes(api: Hono<PublishEnv>, audit: AuditRollout): void {
  api.get("/projects/:slug/rollout/gates", onProject(), async (c) => {
    const project = c.get("project");
    return jsonResponse({ gates: gatesJson(await getRolloutGates(c.var.store, project.id)) });
  });

  api.put(
    "/projects/:slug/rollout/gates",
    jsonLimit,
    onProject("release_state"),
    gatesBody,
    async (c) => {
      const project = c.get("project");
      const gates = c.req.valid("json");
      const state = await setRolloutGates(c.var.store, { projectId: project.id, gates });
      await audit(c, "rollout.gates", `gates ${JSON.stringify(gates)}`);
      return jsonResponse({ gates: gatesJson(state) });
    },
  );

  api.delete("/projects/:slug/rollout/gates", onProject("release_state"), async (c) => {
    const project = c.get("project");
    await setRolloutGates(c.var.store, { projectId: project.id, gates: null });
    await audit(c, "rollout.gates", "gates off");
    return jsonResponse({ gates: null });
  });

  api.post("/projects/:slug/rollback", onProject("release_state"), async (c) => {
    const project = c.get("project");
    const rollback = await rollBack(c.var.store, project.id);
    await audit(
      c,
      "rollout.rollback",
      `release ${rollback.release_id} rolled back to release ${rollback.to_id}`,
    );
    return jsonResponse({ rollback });
  });

  api.get("/projects/:slug/policy", onProject(), async (c) => {
    const project = c.get("project");
    return jsonResponse({ policy: policyJson(await getReleasePolicy(c.var.store, project.id)) });
  });

  api.put(
    "/projects/:slug/policy",
    jsonLimit,
    onProject("release_state"),
    policyBody,
    async (c) => {
      const project = c.get("project");
      const { criticalIds, minimumVersion } = c.req.valid("json");
      // The policy as it stands, or as the new minimum version leaves it.
      let policy = minimumVersion === undefined
        ? await getReleasePolicy(c.var.store, project.id)
        : await setMinimumVersion(c.var.store, { projectId: project.id, version: minimumVersion });
      if (criticalIds !== undefined) {
        const wanted = new Set(criticalIds);
        for (const id of new Set([...policy.critical_ids, ...wanted])) {
          const release = await getRelease(c.var.store, id);
          if (release?.project_id !== project.id) {
            throw new ApiError(404, `release ${id} is not a release of this project`);
          }
          policy = await setReleaseCritical(c.var.store, {
            releaseId: id,
            critical: wanted.has(id),
          });
        }
      }
      await audit(
        c,
        "rollout.policy",
        `minimum version ${policy.minimum_version ?? "none"}; critical releases ` +
          `${policy.critical_ids.join(", ") || "none"}`,
      );
      return jsonResponse({ policy: policyJson(policy) });
    },
  );
}
