/**
 * Release safety in the publishing API (docs/rollouts.md "Health gates", "A
 * way back", "Critical updates and a minimum version"): a rollout's gates
 * (`GET`/`PUT`/`DELETE /projects/{slug}/rollout/gates`), roll back
 * (`POST /projects/{slug}/rollback`) and the release policy
 * (`GET`/`PUT /projects/{slug}/policy`). Changes need `release_state`, like
 * the rollout routes, and are audit-logged.
 */
import type { Context, Hono } from "hono";
import { ApiError } from "../../src/http/errors.ts";
import {
  getRelease,
  getReleasePolicy,
  getRolloutGates,
  parseGates,
  type Project,
  type PublishPermission,
  type ReleasePolicy,
  rollBack,
  type RolloutGateState,
  setMinimumVersion,
  setReleaseCritical,
  setRolloutGates,
} from "../../src/store/mod.ts";
import type { ServiceDeps } from "../types.ts";
import type { PublishEnv } from "./types.ts";

type PublishContext = Context<PublishEnv>;

/** What the publishing API's routes share with these. */
export interface SafetyRouteParts {
  deps: ServiceDeps;
  projectFor: (c: PublishContext, permission?: PublishPermission) => Promise<Project>;
  json: (data: unknown) => Response;
  audit: (
    c: PublishContext,
    what: { action: `rollout.${string}`; project: Project; details: string },
  ) => Promise<unknown>;
}

const JSON_MAX_BYTES = 16 * 1024;

async function readJson(c: PublishContext): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.length > JSON_MAX_BYTES) throw new ApiError(413, "the JSON body is too large");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(400, "the body is not valid JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(400, "the body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

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

export function addSafetyRoutes(api: Hono<PublishEnv>, parts: SafetyRouteParts): void {
  const { deps: { kv }, projectFor, json, audit } = parts;

  api.get("/projects/:slug/rollout/gates", async (c) => {
    const project = await projectFor(c);
    return json({ gates: gatesJson(await getRolloutGates(kv, project.id)) });
  });

  api.put("/projects/:slug/rollout/gates", async (c) => {
    const project = await projectFor(c, "release_state");
    const gates = parseGates(await readJson(c));
    const state = await setRolloutGates(kv, { projectId: project.id, gates });
    await audit(c, {
      action: "rollout.gates",
      project,
      details: `gates ${JSON.stringify(gates)}`,
    });
    return json({ gates: gatesJson(state) });
  });

  api.delete("/projects/:slug/rollout/gates", async (c) => {
    const project = await projectFor(c, "release_state");
    await setRolloutGates(kv, { projectId: project.id, gates: null });
    await audit(c, { action: "rollout.gates", project, details: "gates off" });
    return json({ gates: null });
  });

  api.post("/projects/:slug/rollback", async (c) => {
    const project = await projectFor(c, "release_state");
    const rollback = await rollBack(kv, project.id);
    await audit(c, {
      action: "rollout.rollback",
      project,
      details: `release ${rollback.release_id} rolled back to release ${rollback.to_id}`,
    });
    return json({ rollback });
  });

  api.get("/projects/:slug/policy", async (c) => {
    const project = await projectFor(c);
    return json({ policy: policyJson(await getReleasePolicy(kv, project.id)) });
  });

  api.put("/projects/:slug/policy", async (c) => {
    const project = await projectFor(c, "release_state");
    const body = await readJson(c);
    for (const name of Object.keys(body)) {
      if (name !== "critical_release_ids" && name !== "minimum_version") {
        throw new ApiError(400, `unknown field "${name}"`);
      }
    }
    const ids = body.critical_release_ids;
    if (ids !== undefined && (!Array.isArray(ids) || !ids.every(Number.isSafeInteger))) {
      throw new ApiError(400, "critical_release_ids must be a list of release ids");
    }
    const minimum = body.minimum_version;
    if (minimum !== undefined && minimum !== null && typeof minimum !== "string") {
      throw new ApiError(400, "minimum_version must be a string or null");
    }
    let policy = await getReleasePolicy(kv, project.id);
    if (minimum !== undefined) {
      policy = await setMinimumVersion(kv, { projectId: project.id, version: minimum });
    }
    if (ids !== undefined) {
      const wanted = new Set(ids as number[]);
      for (const id of new Set([...policy.critical_ids, ...wanted])) {
        const release = await getRelease(kv, id);
        if (release?.project_id !== project.id) {
          throw new ApiError(404, `release ${id} is not a release of this project`);
        }
        policy = await setReleaseCritical(kv, { releaseId: id, critical: wanted.has(id) });
      }
    }
    await audit(c, {
      action: "rollout.policy",
      project,
      details: `minimum version ${policy.minimum_version ?? "none"}; critical releases ` +
        `${policy.critical_ids.join(", ") || "none"}`,
    });
    return json({ policy: policyJson(policy) });
  });
}
