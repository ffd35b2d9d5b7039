/** Publish tokens (docs/publishing.md "Publish tokens"): list, create (shown once), disable, enable, delete. */
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { ID_PATTERN } from "../../src/lib/limits.ts";
import { judgePublishToken } from "../../src/credentials/tokens.ts";
import { NotFoundError, ValidationError } from "../../src/kv/errors.ts";
import { listProjects } from "../../src/store/projects.ts";
import {
  createPublishToken,
  deletePublishToken,
  listPublishTokens,
  type PublishToken,
  setPublishTokenActive,
} from "../../src/credentials/publish_tokens.ts";
import { type AdminContext, audit, pageContext, redirectWithFlash } from "../context.ts";
import { formErrorOf } from "../forms.ts";
import {
  EMPTY_TOKEN_FORM,
  type PublishTokenFormValues,
  publishTokenFormValues,
  publishTokenInput,
} from "../forms_publish_token.ts";
import type { Store } from "../../src/kv/store.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
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

  const actions = [
    ["disable", (store: Store, id: number) => setPublishTokenActive(store, id, false), "disabled"],
    ["enable", (store: Store, id: number) => setPublishTokenActive(store, id, true), "enabled"],
    ["delete", (store: Store, id: number) => deletePublishToken(store, id), "deleted"],
  ] as const;
  for (const [action, change, done] of actions) {
    admin.post(`/publish-tokens/:id/${action}`, async (c) => {
      const raw = c.req.param("id");
      const notFound = new HTTPException(404, { message: `There is no publish token ${raw}.` });
      if (!ID_PATTERN.test(raw)) throw notFound;
      let token: PublishToken;
      try {
        token = await change(c.var.store, Number(raw));
      } catch (error) {
        throw error instanceof NotFoundError ? notFound : error;
      }
      await audit(c, deps, {
        action: `publish_token.${action}`,
        target: `publish token ${token.id}`,
        details: `name "${token.name}"`,
      });
      return redirectWithFlash(c, deps, {
        location: "/admin/publish-tokens",
        kind: "success",
        text: `Publish token "${token.name}" was ${done}.`,
      });
    });
  }
}
