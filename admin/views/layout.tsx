/** The page frame shared by every admin page. */
import type { Child } from "hono/jsx";
import { raw } from "hono/html";
import { assetUrl } from "../static.ts";
import type { AdminRole } from "../../src/accounts/admin_users.ts";
import type { Flash } from "../types.ts";

export interface PageContext {
  serviceName: string;
  /** Signed-in admin; absent on the sign-in page. */
  username?: string;
  /** The signed-in account's role: the header links only to pages it may use. */
  role?: AdminRole;
  csrfToken?: string;
  flash?: Flash | null;
}

export type NavItem =
  | "dashboard"
  | "projects"
  | "api-keys"
  | "publish-tokens"
  | "webhooks"
  | "audit"
  | "accounts"
  | "signing-keys"
  | "account";

/** The header's links, and the roles shown each (as admin/roles.ts allows the page). */
/** The menu: item, path, label, the roles that see it, and a shorter label for phones. */
const NAV: Array<[NavItem, string, string, readonly AdminRole[], string?]> = [
  ["dashboard", "/admin", "Dashboard", ["admin", "publisher", "viewer"], "Home"],
  ["projects", "/admin/projects", "Projects", ["admin", "publisher", "viewer"]],
  ["api-keys", "/admin/api-keys", "API keys", ["admin", "viewer"], "Keys"],
  ["publish-tokens", "/admin/publish-tokens", "Publish tokens", ["admin", "viewer"], "Tokens"],
  ["webhooks", "/admin/webhooks", "Webhooks", ["admin"], "Hooks"],
  ["audit", "/admin/audit", "Audit log", ["admin", "publisher", "viewer"], "Audit"],
  ["accounts", "/admin/accounts", "Accounts", ["admin"], "Users"],
  ["signing-keys", "/admin/signing-keys", "Signing keys", ["admin"], "Signing"],
];

export function Layout(
  { ctx, title, nav, children }: {
    ctx: PageContext;
    title: string;
    nav?: NavItem;
    children?: Child;
  },
) {
  return (
    <>
      {raw("<!DOCTYPE html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <meta name="robots" content="noindex, nofollow" />
          <title>{title} · {ctx.serviceName}</title>
          <link rel="icon" type="image/svg+xml" href={assetUrl("favicon.svg")} />
          <link rel="stylesheet" href={assetUrl("style.css")} />
          <script src={assetUrl("admin.js")} defer></script>
        </head>
        <body>
          <a class="skip-link" href="#main">Skip to content</a>
          <header class="site-header">
            <div class="container header-inner">
              <a class="brand" href="/admin">{ctx.serviceName}</a>
              {ctx.username !== undefined && (
                <nav class="main-nav" aria-label="Main">
                  <ul>
                    {NAV.filter(([, , , roles]) => roles.includes(ctx.role ?? "admin")).map((
                      [id, href, label, , short],
                    ) => (
                      <li>
                        <a href={href} aria-current={nav === id ? "page" : undefined}>
                          {short === undefined ? label : (
                            <>
                              {/* On a phone the short label shows; the full one is still read out. */}
                              <span class="nav-long">{label}</span>
                              <span class="nav-short" aria-hidden="true">{short}</span>
                            </>
                          )}
                        </a>
                      </li>
                    ))}
                  </ul>
                </nav>
              )}
              {ctx.username !== undefined && (
                <div class="user-menu">
                  <a
                    href="/admin/account/password"
                    aria-current={nav === "account" ? "page" : undefined}
                    title={`Signed in as ${ctx.username} (${ctx.role ?? "admin"}): change password`}
                    class="user-name"
                    data-signed-in={ctx.username}
                  >
                    <span class="visually-hidden">Signed in as</span> {ctx.username}
                  </a>
                  <span class="badge role-badge" data-role={ctx.role ?? "admin"}>
                    {ctx.role ?? "admin"}
                  </span>
                  <form method="post" action="/admin/logout" class="inline-form">
                    <CsrfInput token={ctx.csrfToken} />
                    <button type="submit" class="button button-small button-quiet">Sign out</button>
                  </form>
                </div>
              )}
            </div>
          </header>
          <main id="main" class="container">
            <div id="flash">{ctx.flash && <FlashMessage flash={ctx.flash} />}</div>
            {children}
          </main>
        </body>
      </html>
    </>
  );
}

export function CsrfInput({ token }: { token?: string }) {
  return <input type="hidden" name="csrf_token" value={token ?? ""} />;
}

export function FlashMessage({ flash }: { flash: Flash }) {
  return (
    <div
      class={`flash flash-${flash.kind}`}
      role={flash.kind === "error" ? "alert" : "status"}
    >
      {flash.text}
    </div>
  );
}
