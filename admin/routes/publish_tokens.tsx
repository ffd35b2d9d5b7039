/** Publish tokens (docs/publishing.md "Publish tokens"): list, create (shown once), disable, enable, delete. */
import type { Hono } from "hono";
import { judgePublishToken } from "../../src/credentials/tokens.ts";
import { ValidationError } from "../../src/kv/errors.ts";
import { listProjects } from "../../src/projects/projects.ts";
import {
  createPublishToken,
  deletePublishToken,
  listPublishTokens,
  type PublishToken,
  setPublishTokenActive,
} from "../../src/credentials/publish_tokens.ts";
import { type AdminContext, audit, pageContext } from "../context.ts";
import { formErrorOf } from "../forms.ts";
import {
  EMPTY_TOKEN_FORM,
  type PublishTokenFormValues,
  publishTokenFormValues,
  publishTokenInput,
} from "../forms_publish_token.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
import { addCredentialActions } from "./credential_actions.ts";
import {
  PublishTokenCreatedPage,
  type PublishTokenRow,
  PublishTokensPage,
} from "../views/publish_tokens.tsx";

export function addPublishTokenRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  async function renderTokensPage(
    c: AdminContext,
    values: PublishTokenFormValues,
    error?: FormError,
  ) {
    const [tokens, projects] = await Promise.all([
      listPublishTokens(c.var.store),
      listProjects(c.var.store),
    ]);
    const nowMs = Date.now();
    const rows: PublishTokenRow[] = [...tokens].reverse().map((token) => ({
      token,
      state: judgePublishToken(token, nowMs) ?? "active",
      slugs: projects.filter((p) => token.project_ids.includes(p.id)).map((p) => p.slug),
    }));
    return c.html(
      <PublishTokensPage
        ctx={pageContext(c, deps)}
        rows={rows}
        projects={projects}
        values={values}
        error={error}
        openForm={c.req.query("new") !== undefined}
      />,
      error ? 400 : 200,
    );
  }

  admin.get("/publish-tokens", (c) => renderTokensPage(c, EMPTY_TOKEN_FORM));

  admin.post("/publish-tokens", async (c) => {
    const values = publishTokenFormValues(c.get("form"));
    let created: { token: PublishToken; secret: string };
    try {
      const input = await publishTokenInput(c.var.store, {
        values,
        createdBy: c.get("session").username,
      });
      created = await createPublishToken(c.var.store, input);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return await renderTokensPage(c, values, formErrorOf(error));
    }
    const { token, secret } = created;
    await audit(c, deps, {
      action: "publish_token.create",
      target: `publish token ${token.id}`,
      details: `name "${token.name}"; prefix ${token.prefix}; projects ${
        token.all_projects ? "all" : token.project_ids.join(",")
      }; may ${token.permissions.join(",")}; expires ${token.expires_at ?? "never"}`,
    });
    return c.html(
      <PublishTokenCreatedPage
        ctx={pageContext(c, deps)}
        token={token}
        secret={secret}
        baseUrl={deps.config.baseUrl}
      />,
    );
  });

  addCredentialActions(admin, deps, {
    path: "publish-tokens",
    noun: "publish token",
    auditKind: "publish_token",
    location: "/admin/publish-tokens",
    actions: [
      ["disable", (store, id) => setPublishTokenActive(store, id, false), "disabled"],
      ["enable", (store, id) => setPublishTokenActive(store, id, true), "enabled"],
      ["delete", (store, id) => deletePublishToken(store, id), "deleted"],
    ],
  });
}
