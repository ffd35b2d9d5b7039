/** Error pages under /admin: errors are thrown once in the routes and mapped here. */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { mapDomainError, type MappedError } from "../src/http/errors.ts";
import { ADMIN_RESPONSE_HEADERS } from "./headers.ts";
import { withLabel } from "./field_labels.ts";
import type { ValidationError } from "../src/kv/errors.ts";
import type { AdminSession } from "../src/accounts/sessions.ts";
import type { RouteDeps } from "./types.ts";
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

/** The error page of `error`: the status of the service's one map (src/http/errors.ts). */
export function renderAdminError(c: Context, deps: RouteDeps, error: unknown): Promise<Response> {
  const mapped = mapDomainError(error);
  if (mapped === null) {
    console.error("admin error:", error);
    return renderErrorPage(c, deps, {
      status: 500,
      message: "The server could not complete the request. The error was logged.",
    });
  }
  if (mapped.kind === "kv_full" || mapped.kind === "kv_read_only") {
    // Nothing was changed; an operator has to act (docs/operators.md, "Operations").
    console.error("admin write refused by the database:", (error as Error).cause);
  }
  return renderErrorPage(c, deps, { status: mapped.status, message: pageMessage(mapped, error) });
}

/** What the page says: the admin's own words where a person can act on them. */
function pageMessage(mapped: MappedError, error: unknown): string {
  const raw = (error as Error).message;
  switch (mapped.kind) {
    // HTTPExceptions include CsrfError (403) and the body limit's 413.
    case "http":
      return raw || (mapped.status === 413 ? "The form is too large." : "The request was refused.");
    case "invalid":
      return withLabel((error as ValidationError).field, raw);
    case "conflict":
      return "The change collided with another one at the same moment. Please try again.";
    case "kv_full":
      return "The database's disk is full: nothing was changed. Ask the operator to free space.";
    case "kv_read_only":
      return "The database does not accept changes (its file or disk is read-only): nothing " +
        "was changed. Ask the operator to check the data directory.";
    case "client_gone":
      return "The request was cut off before its end.";
    case "not_found":
      return sentence(raw);
    default:
      return sentence(mapped.message);
  }
}

/** `text` as a sentence: capitalised, with a full stop. */
function sentence(text: string): string {
  return `${text[0].toUpperCase()}${text.slice(1)}.`;
}

/** The message of the 404 page; a route throws `pageNotFound()` for a page it does not have. */
const NO_SUCH_PAGE = "There is no such page.";

export function renderAdminNotFound(c: Context, deps: RouteDeps): Promise<Response> {
  return renderErrorPage(c, deps, { status: 404, message: NO_SUCH_PAGE });
}

/** The error a route throws for a path it does not have: the 404 page. */
export function pageNotFound(): HTTPException {
  return new HTTPException(404, { message: NO_SUCH_PAGE });
}

async function renderErrorPage(
  c: Context,
  deps: RouteDeps,
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
