/**
 * Install reports under /reports/v1 (docs/reports.md): a client says, per
 * install id, which version it runs after an update or at which step an
 * update failed. Protected like the client API (src/client_api/surface.ts): the
 * bearer key, its permission and scope, the same rate limit and JSON errors.
 * The answer is 202 once the report is checked and queued; it is written in
 * batches off the request (src/reports/report_recorder.ts).
 */
import type { Context } from "hono";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import type { Observer } from "../http/observe.ts";
import { concatBytes } from "../lib/bytes.ts";
import { INSTALL_ID_HEADER } from "../releases/offer.ts";
import type { IncomingReport } from "../reports/report_recorder.ts";
import { VERSION_MAX_LENGTH } from "../lib/limits.ts";
import { createKeyRoutes, type SurfaceRoutes } from "./surface.ts";

/** Where the reports surface is mounted (app.ts). */
export const REPORTS_PREFIX = "/reports/v1";
/** The largest report body accepted, in bytes. */
const REPORT_BODY_MAX_BYTES = 2_048;
/** The longest failure reason accepted, in characters. */
const REPORT_REASON_MAX = 200;

/** The events a report may carry, and the kind each is counted as. */
export const REPORT_EVENTS = {
  installed: "installed",
  download_failed: "download",
  verification_failed: "verification",
  install_failed: "install",
  crashed: "crash",
} as const satisfies Record<string, IncomingReport["kind"]>;

const FIELDS: readonly string[] = ["event", "version", "previous_version", "reason"];
const INSTALL_ID = /^[\x21-\x7e]{1,128}$/;
const VERSION = /^[\x21-\x7e]+$/;
const encoder = new TextEncoder();

export function createReportRoutes(deps: ServiceDeps, observer: Observer): SurfaceRoutes {
  const { routes: reports, surface } = createKeyRoutes(deps, observer);
  const accepted = encoder.encode(JSON.stringify({ status: "accepted" }));

  reports.post(
    "/projects/:slug",
    surface.endpoint(async (c) => {
      const project = await surface.visibleProject(c);
      const installId = c.req.header(INSTALL_ID_HEADER);
      if (installId === undefined || !INSTALL_ID.test(installId)) {
        throw new ApiError(400, "X-Install-Id is required: 1 to 128 printable ASCII characters");
      }
      const report = parseReport(await readBody(c));
      deps.reports.record({
        ...report,
        projectId: project.id,
        installId,
        address: surface.askerOf(c).address(),
      });
      return surface.respond.json(c, accepted, 202);
    }),
  );
  reports.on(
    ["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"],
    "/projects/:slug",
    surface.endpoint(() => {
      throw new ApiError(405, API_ERRORS.methodNotAllowed, { allow: "POST" });
    }),
  );
  return { routes: reports, notFound: surface.notFound };
}

/** The body as JSON, at most REPORT_BODY_MAX_BYTES; else a 400 or 413 with the reason. */
async function readBody(c: Context<AppEnv>): Promise<unknown> {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new ApiError(415, "send the report as application/json");
  }
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > REPORT_BODY_MAX_BYTES) throw tooLarge();
  const reader = c.req.raw.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (reader !== undefined) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > REPORT_BODY_MAX_BYTES) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(concatBytes(chunks)));
  } catch {
    throw new ApiError(400, "the body is not valid JSON");
  }
}

function tooLarge(): ApiError {
  return new ApiError(413, `a report is at most ${REPORT_BODY_MAX_BYTES} bytes`);
}

/** The report a body describes; a 400 naming the field that is wrong. */
function parseReport(
  body: unknown,
): Pick<IncomingReport, "kind" | "version" | "previousVersion" | "reason"> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(400, "the body must be a JSON object");
  }
  const fields = body as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (!FIELDS.includes(name)) throw new ApiError(400, `unknown field "${name}"`);
  }
  const event = fields.event;
  if (typeof event !== "string" || !Object.hasOwn(REPORT_EVENTS, event)) {
    throw new ApiError(
      400,
      `event must be one of ${Object.keys(REPORT_EVENTS).join(", ")}`,
    );
  }
  const kind = REPORT_EVENTS[event as keyof typeof REPORT_EVENTS];
  const version = versionField("version", fields.version);
  if (version === undefined) throw new ApiError(400, "version is required");
  const previousVersion = versionField("previous_version", fields.previous_version);
  if (previousVersion !== undefined && kind !== "installed") {
    throw new ApiError(400, "previous_version goes only with the event installed");
  }
  let reason: string | undefined;
  if (fields.reason !== undefined && fields.reason !== null) {
    if (typeof fields.reason !== "string" || fields.reason.length > REPORT_REASON_MAX) {
      throw new ApiError(400, `reason must be a string of at most ${REPORT_REASON_MAX} characters`);
    }
    // One line of text: control characters become spaces.
    reason = fields.reason.replace(/[\u0000-\u001f\u007f]/g, " ").trim();
  }
  return { kind, version, previousVersion, reason };
}

function versionField(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.length > VERSION_MAX_LENGTH || !VERSION.test(value)) {
    throw new ApiError(
      400,
      `${name} must be 1 to ${VERSION_MAX_LENGTH} printable ASCII characters without spaces`,
    );
  }
  return value;
}
