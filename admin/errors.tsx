/** Error pages under /admin: errors are thrown once in the routes and mapped here. */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { isClientGone } from "../src/http/errors.ts";
import {
  ConflictError,
  KvWriteRefusedError,
  NotFoundError,
  ValidationError,
} from "../src/store/mod.ts";
import { ADMIN_RESPONSE_HEADERS } from "./headers.ts";
import { withLabel } from "./field_labels.ts";
import type { AdminSession } from "../src/store/mod.ts";
import type { ServiceDeps } from "./types.ts";
import { ErrorPage } from "./views/error.tsx";

const TITLES: Record<number, string> = {
  400: "Bad request",
  403: "Request refused",
  404: "Not found",
  405: "Method not allowed",
  409: "Please try again",
  413: "Too large",
  503: "Not available",
  507: "Out of space",
  500: "Something went wrong",
};

export function renderAdminError(c: Context, deps: ServiceDeps, error: unknown): Promise<Response> {
  let status: ContentfulStatusCode = 500;
  let message = "The server could not complete the request. The error was logged.";
  // HTTPExceptions include CsrfError (403) and the body limit's 413.
  if (error instanceof HTTPException && error.status < 500) {
    status = error.status as ContentfulStatusCode;
    message = error.message ||
      (status === 413 ? "The form is too large." : "The request was refused.");
  } else if (error instanceof NotFoundError) {
    status = 404;
    message = `${error.message[0].toUpperCase()}${error.message.slice(1)}.`;
  } else if (error instanceof ValidationError) {
    status = 400;
    message = withLabel(error.field, error.message);
  } else if (error instanceof ConflictError) {
    status = 409;
    message = "The change collided with another one at the same moment. Please try again.";
  } else if (error instanceof KvWriteRefusedError) {
    // Nothing was changed; an operator has to act (docs/operators.md, "Operations").
    console.error("admin write refused by the database:", error.cause);
    status = error.reason === "full" ? 507 : 503;
    message = error.reason === "full"
      ? "The database's disk is full: nothing was changed. Ask the operator to free space."
      : "The database does not accept changes (its file or disk is read-only): nothing was " +
        "changed. Ask the operator to check the data directory.";
  } else if (isClientGone(error)) {
    status = 400;
    message = "The request was cut off before its end.";
  } else {
    console.error("admin error:", error);
  }
  return renderErrorPage(c, deps, { status, message });
}

/** The message of the 404 page; a route throws `pageNotFound()` for a page it does not have. */
const NO_SUCH_PAGE = "There is no such page.";

export function renderAdminNotFound(c: Context, deps: ServiceDeps): Promise<Response> {
  return renderErrorPage(c, deps, { status: 404, message: NO_SUCH_PAGE });
}

/** The error a route throws for a path it does not have: the 404 page. */
export function pageNotFound(): HTTPException {
  return new HTTPException(404, { message: NO_SUCH_PAGE });
}

async function renderErrorPage(
  c: Context,
  deps: ServiceDeps,
  { status, message }: { status: ContentfulStatusCode; message: string },
): Promise<Response> {
  const session = c.get("session") as AdminSession | undefined;
  const page = (
    <ErrorPage
      ctx={{
        serviceName: deps.config.serviceName,
        username: session?.username,
        role: c.get("role"),
        csrfToken: session?.csrf_token,
      }}
      status={status}
      title={TITLES[status] ?? "Error"}
      message={message}
    />
  );
  const html = await page.toString();
  return new Response(html, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", ...ADMIN_RESPONSE_HEADERS },
  });
}
