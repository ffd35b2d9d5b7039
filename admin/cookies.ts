/**
 * The admin UI's cookies. All are HttpOnly and scoped to /admin, and Secure
 * when the base URL is https://.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Config } from "../src/lib/config.ts";
import type { Flash } from "./types.ts";

export const SESSION_COOKIE = "uds_session";
/** Pre-session CSRF token of the sign-in form (double submit: cookie and form must match). */
export const LOGIN_CSRF_COOKIE = "uds_login_csrf";
const FLASH_COOKIE = "uds_flash";

const LOGIN_PATH = "/admin/login";

export function setSessionCookie(c: Context, config: Config, id: string): void {
  setCookie(c, SESSION_COOKIE, id, {
    path: "/admin",
    httpOnly: true,
    sameSite: "Lax",
    secure: config.https,
    maxAge: config.adminSessionMaxHours * 3600,
  });
}

export function clearSessionCookie(c: Context, config: Config): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/admin", secure: config.https });
}

export function getSessionCookie(c: Context): string | undefined {
  return getCookie(c, SESSION_COOKIE);
}

export function setLoginCsrfCookie(c: Context, config: Config, token: string): void {
  setCookie(c, LOGIN_CSRF_COOKIE, token, {
    path: LOGIN_PATH,
    httpOnly: true,
    sameSite: "Strict",
    secure: config.https,
    maxAge: 2 * 3600,
  });
}

export function getLoginCsrfCookie(c: Context): string | undefined {
  return getCookie(c, LOGIN_CSRF_COOKIE);
}

export function clearLoginCsrfCookie(c: Context, config: Config): void {
  deleteCookie(c, LOGIN_CSRF_COOKIE, { path: LOGIN_PATH, secure: config.https });
}

/** A message for the next page after a redirect (post/redirect/get). */
export function setFlash(c: Context, config: Config, flash: Flash): void {
  setCookie(c, FLASH_COOKIE, JSON.stringify(flash), {
    path: "/admin",
    httpOnly: true,
    sameSite: "Lax",
    secure: config.https,
    maxAge: 60,
  });
}

/** Reads and clears the flash message, if any. */
export function takeFlash(c: Context, config: Config): Flash | null {
  const raw = getCookie(c, FLASH_COOKIE);
  if (raw === undefined) return null;
  deleteCookie(c, FLASH_COOKIE, { path: "/admin", secure: config.https });
  try {
    const flash = JSON.parse(raw);
    if (
      (flash?.kind === "success" || flash?.kind === "error") && typeof flash.text === "string"
    ) {
      return { kind: flash.kind, text: flash.text.slice(0, 500) };
    }
  } catch {
    // A mangled cookie is ignored.
  }
  return null;
}
